//! The solver: the cheapest layout that obeys the hard rule (DESIGN.md §5).
//!
//! Objective, lexicographic: struct size → soft costs → lines touched by
//! read-mostly fields → movement from the original order (the [`Preset`]
//! changes the order of the last three). Every returned layout has passed
//! [`crate::verify`].
//!
//! # Formulation
//!
//! Fields get a *colour* ([`problem`]): read-mostly fields one, each lockless
//! writer group its own, everything else none (locked fields join the
//! read-mostly colour under `separate_soft`). The hard rule says no line holds
//! bytes of two colours, at every phase the placement allows ([`geometry`]).
//!
//! For a fixed order of the fields, placing each as early as it may go is
//! optimal ([`place`]), so a layout is an order. The solver
//!
//! 1. bounds the size from below ([`bound`]): bytes, lines per colour, and
//!    the gap every colour change costs when the phase is unknown;
//! 2. tries the declaration order and a padding-free one — with no conflicts
//!    at all that usually settles it;
//! 3. searches all orders exactly for small structs ([`exact`]: branch and
//!    bound on the whole key);
//! 4. otherwise builds layouts from runs of one class or colour with the
//!    gaps between runs filled by free fields ([`construct`], [`fill`]),
//!    re-balances the gap fills with an integer program when the size is
//!    above the bound ([`ilp`]), and polishes by local search ([`improve`]).
//!
//! In aligned mode every struct alignment from the natural one up to the
//! line size is a candidate geometry; at equal size the smaller alignment
//! wins (it costs embedding structs nothing).
//!
//! `optimal` is claimed when the exact search finished, or when the size
//! equals the bound and every later goal equals its own bound (soft cost 0,
//! read lines `ceil(read bytes / L)`, movement 0), except that movement, when
//! it is the last goal of the preset, is only minimised by local search.

mod bound;
mod check;
mod construct;
mod driver;
mod eval;
mod exact;
mod fill;
mod geometry;
mod ilp;
mod improve;
mod place;
mod problem;

use crate::cost::{Cost, SoftWeights};
use crate::model::{Placement, Struct};

use crate::verify::VerifiedLayout;
use std::fmt;
use std::time::Duration;

/// Which secondary goals come first after size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Preset {
    /// size → soft costs → read-mostly lines → movement.
    #[default]
    Balanced,
    /// size → movement → soft costs → read-mostly lines: the smallest diff.
    MinDiff,
    /// size → read-mostly lines → soft costs → movement: hot data packed tight.
    CompactHot,
    /// lines touched by the hot paths (summed) → size → soft costs → movement.
    HotLines,
}

impl std::str::FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "balanced" => Ok(Preset::Balanced),
            "min-diff" => Ok(Preset::MinDiff),
            "compact-hot" => Ok(Preset::CompactHot),
            "hot-lines" => Ok(Preset::HotLines),
            _ => Err(format!(
                "unknown objective preset `{s}`: use balanced, min-diff, compact-hot or hot-lines"
            )),
        }
    }
}

/// The default [`SolveOptions::work_limit`].
pub const DEFAULT_WORK_LIMIT: u64 = 1_000_000;

#[derive(Clone, Debug)]
pub struct SolveOptions {
    pub line: u64,
    /// `Aligned`: hold at every placement (the solver may raise the struct's
    /// alignment to the line size when that is cheaper). `Offset(o)`: exploit
    /// the known phase `o % line`; the struct's alignment is kept.
    pub placement: Placement,
    /// A safety stop only: the result must not depend on it unless it fires,
    /// and then [`Solution::stopped_by_time`] says so.
    pub time_limit: Duration,
    /// The deterministic search budget, in units of work (nodes, evaluations,
    /// pivots): the same input and options give the same layout on any
    /// machine under any load.
    pub work_limit: u64,
    pub preset: Preset,
    pub weights: SoftWeights,
    /// Treat the soft pairs (lockless next to locked) as hard as well: used to
    /// price "no soft cost at all" against the cheapest layout.
    pub separate_soft: bool,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            line: 64,
            placement: Placement::Aligned,
            time_limit: Duration::from_secs(10),
            work_limit: DEFAULT_WORK_LIMIT,
            preset: Preset::Balanced,
            weights: SoftWeights::default(),
            separate_soft: false,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Solution {
    pub layout: VerifiedLayout,
    pub cost: Cost,
    /// A proven lower bound on the size of any layout obeying the hard rule.
    pub lower_bound: u64,
    /// True when the size is proven minimal and the secondary goals are
    /// optimal among layouts of that size within the model searched: the
    /// exact search finished, or every goal meets its bound (movement, when
    /// it is the preset's last goal, is minimised by local search only).
    pub optimal: bool,
    pub solve_ms: u64,
    /// True when the wall-clock safety stop ([`SolveOptions::time_limit`])
    /// ended the search: a larger limit may give a different answer.
    pub stopped_by_time: bool,
    /// How it was found: "no-conflict", "exact", "ilp", "heuristic".
    pub method: &'static str,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SolveError {
    /// No layout can obey the rules (pinned fields in the way); says why.
    Infeasible(String),
    /// A field has size or alignment the solver cannot take (alignment not a
    /// power of two, or above the line size with a conflict).
    BadField(String),
}

impl fmt::Display for SolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SolveError::Infeasible(m) => write!(f, "no layout obeys the rules: {m}"),
            SolveError::BadField(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for SolveError {}

/// Find the best layout of `s` under `opts`.
pub fn solve(s: &Struct, opts: &SolveOptions) -> Result<Solution, SolveError> {
    driver::solve(s, opts)
}

/// The best order found so far, with the geometry it was placed in.
#[derive(Clone, Debug)]
pub(crate) struct Incumbent {
    pub key: eval::Key,
    pub geom: geometry::Geometry,
    /// Order of the unpinned fields.
    pub order: Vec<usize>,
    pub method: &'static str,
}
