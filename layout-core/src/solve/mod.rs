//! The solver: the cheapest layout that obeys the hard rule (DESIGN.md §5).
//!
//! Objective, lexicographic: struct size → soft costs → lines touched by
//! read-mostly fields → movement from the original order (the [`Preset`]
//! changes the order of the last three). Every returned layout has passed
//! [`crate::verify`].

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
}

impl std::str::FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "balanced" => Ok(Preset::Balanced),
            "min-diff" => Ok(Preset::MinDiff),
            "compact-hot" => Ok(Preset::CompactHot),
            _ => Err(format!("unknown objective preset `{s}`: use balanced, min-diff or compact-hot")),
        }
    }
}

#[derive(Clone, Debug)]
pub struct SolveOptions {
    pub line: u64,
    /// `Aligned`: hold at every placement (the solver may raise the struct's
    /// alignment to the line size when that is cheaper). `Offset(o)`: exploit
    /// the known phase `o % line`; the struct's alignment is kept.
    pub placement: Placement,
    pub time_limit: Duration,
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
    /// optimal among layouts of that size within the model searched.
    pub optimal: bool,
    pub solve_ms: u64,
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
    let _ = (s, opts);
    todo!("solver: being written")
}
