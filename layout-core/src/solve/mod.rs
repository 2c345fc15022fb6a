//! The solver: the cheapest layout that obeys the hard rule.
//!
//! Objective, lexicographic, in the order of [`Preset::goals`]: struct size,
//! soft costs, lines touched by the hot paths, lines touched by read-mostly
//! fields, members moved (churn: `n` minus the longest subsequence of the
//! layout's order that keeps declaration order, see [`crate::cost`]) and
//! pairs swapped (movement). Every returned layout has passed
//! [`crate::verify`].
//!
//! # Determinism
//!
//! Every method charges its work (nodes, orders evaluated, nodes of the
//! integer program) to one counter ([`budget`]); the budget is
//! [`SolveOptions::work_limit`], so the answer depends only on the input and
//! the options. [`SolveOptions::time_limit`] is a safety stop that only
//! matters when it fires, and then [`Solution::stopped_by_time`] says so.
//!
//! # Minimal churn
//!
//! [`Preset::MinDiff`] first finds the smallest size it can (the declaration
//! order alone when it keeps the rule), caps the size at the larger of that
//! and the declared size, and then minimises the churn under the cap: the
//! exact search bounds the churn of any completion of a prefix (see
//! [`exact`]), local search starts from the declaration order.
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
//! 1. bounds the size from below ([`bound`]): bytes, lines per colour, the
//!    gap every colour change costs when the phase is unknown (filled by
//!    whole free fields or padding), the lines the colours touch summed over
//!    every phase, the last line, the cells the colours, the gaps and
//!    the large free fields need, and those cells with the colour change a
//!    flexible array member forces ([`runs`], also at every node of the
//!    exact search); a struct cut by line-aligned walls is a
//!    row of independent parts, each solved alone: their bounds add up, and
//!    their layouts, walls between, seed the search ([`walls`]); a
//!    `CACHELINE_PADDING()` is no wall (members cross it as the tree
//!    allows): a struct with paddings is also solved without them, and the
//!    paddings put back where the next member starts a line seed the
//!    search ([`unbroken`]), and that layout's lines, given parts between
//!    the breaks, seed it too ([`parts`]);
//! 2. tries the declaration order and a padding-free one — with no conflicts
//!    at all that usually settles it;
//! 3. searches all orders exactly for small structs ([`exact`]: branch and
//!    bound on the whole key);
//! 4. otherwise builds layouts from runs of one class or colour with the
//!    gaps between runs filled by free fields ([`construct`], [`fill`]),
//!    re-balances the gap fills with an integer program when the size is
//!    above the bound ([`ilp`]), packs small structs (up to 40 unpinned
//!    fields; with pinned ones, laid first, from 15, below which the exact
//!    search of step 3 does better) cell by cell — lines at one phase, `a`-byte cells at every
//!    phase, each colour on cells of its own, free fields around, some
//!    across a boundary ([`lines`]; with line breaks, their lines given
//!    parts between the breaks, [`parts`]) — and polishes by local search
//!    ([`improve`]), after filling the holes pinned fields leave
//!    ([`holes`]);
//! 5. when the size is still above the bound, proves it with line packing:
//!    the packing is a relaxation, so a complete search that finds none
//!    below the best size raises each geometry's bound to it ([`lines`]).
//!
//! Members keep the author's order constraints, the struct's tree
//! ([`crate::segments`]: segments, line breaks, `#if` blocks): the exact
//! search branches only on the lowest segment with members left and on the
//! members the tree lets follow the prefix, constructions and the integer
//! program's orders are repaired (a stable sort on the segment, then the
//! tree's repair, else the declaration order), local search never tries a
//! move that breaks them, and no order that breaks them is ever kept. A
//! trailing flexible array member is laid last, on a line clear of
//! conflicting members ([`problem`]).
//!
//! In aligned mode every struct alignment from the natural one up to the
//! line size is a candidate geometry; at equal size the smaller alignment
//! wins (it costs embedding structs nothing).
//!
//! A struct whose size is still above its bound after all this is solved
//! again, up to four times, declared in other orders (members shuffled
//! among those that may trade places without changing the problem, by a
//! fixed generator), each on a share of the budget left; their layouts
//! are polished in the original problem.
//!
//! Up to 48 unpinned fields, when the size is not proven yet, the exact
//! search runs once more (node-capped) on the goals up to the size alone,
//! which cuts every tie and so reaches much further.
//!
//! [`Solution::proven_goals`] counts the leading goals proven: by a finished
//! exact search (on all goals, or on those up to the size), or by meeting
//! their bounds (size: [`bound`] and line packing's proofs; soft cost 0; hot-path lines
//! `sum ceil(path bytes / L)`; read lines `ceil(read bytes / L)`; churn and
//! movement 0). `optimal` is claimed when every goal is proven, except that
//! movement, when it is the last goal of the preset, is only minimised by
//! local search.

mod bound;
mod budget;
mod check;
mod construct;
mod driver;
mod eval;
mod exact;
mod fill;
mod geometry;
mod holes;
mod ilp;
mod improve;
mod lines;
mod parts;
mod place;
mod problem;
mod runs;
mod unbroken;
mod walls;

/// Helpers shared by the solver's unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    /// A small deterministic generator (xorshift): `next(m)` is below `m`.
    pub(crate) fn rng(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut x = seed;
        move |m| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        }
    }

    /// Calls `visit` with every permutation of `v[k..]` (after `v[..k]`).
    pub(crate) fn permute(v: &mut Vec<usize>, k: usize, visit: &mut dyn FnMut(&[usize])) {
        if k == v.len() {
            visit(v);
            return;
        }
        for i in k..v.len() {
            v.swap(k, i);
            permute(v, k + 1, visit);
            v.swap(k, i);
        }
    }
}

use crate::cost::{Cost, SoftWeights};
use crate::model::{Placement, Struct};
pub use budget::time_limit_from_secs;

use crate::verify::VerifiedLayout;
use std::fmt;
use std::time::Duration;

/// Which goals come first: see [`Preset::goals`]. `--objective` takes
/// [`Preset::name`]; the variants' first lines are its help.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Preset {
    /// Size, then soft costs, hot-path lines, read-mostly lines, movement.
    #[default]
    Balanced,
    /// Fewest members moved within the declared size (a struct that already
    /// keeps the rule is left as it is), then size, soft costs, hot-path
    /// lines, read-mostly lines, movement.
    ///
    /// The size is capped at the declared size, or at the smallest size
    /// that keeps the rule when the declared one cannot: the smallest diff
    /// that fixes the struct.
    MinDiff,
    /// Size, then fewest read-mostly lines, hot-path lines, soft costs,
    /// movement: hot data packed tight.
    CompactHot,
    /// Fewest lines touched by the access file's hot paths (summed), then
    /// size, soft costs, read-mostly lines, movement.
    HotLines,
}

/// One goal of the objective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    /// Struct size in bytes.
    Size,
    /// Soft costs ([`crate::cost::soft_cost`]).
    Soft,
    /// Lines touched by the hot paths, summed ([`crate::cost::path_lines`]).
    PathLines,
    /// Lines holding read-mostly bytes ([`crate::cost::read_lines`]).
    ReadLines,
    /// Members moved ([`crate::cost::churn`]).
    Churn,
    /// Pairs of members swapped ([`crate::cost::movement`]).
    Movement,
}

impl Goal {
    /// What the summary calls it.
    pub fn name(self) -> &'static str {
        match self {
            Goal::Size => "size",
            Goal::Soft => "soft costs",
            Goal::PathLines => "hot-path lines",
            Goal::ReadLines => "read-mostly lines",
            Goal::Churn => "members moved",
            Goal::Movement => "pairs swapped",
        }
    }

    /// This goal's term of `c`.
    pub fn value(self, c: &Cost) -> u64 {
        match self {
            Goal::Size => c.size,
            Goal::Soft => c.soft,
            Goal::PathLines => c.path_lines,
            Goal::ReadLines => c.read_lines,
            Goal::Churn => c.churn,
            Goal::Movement => c.movement,
        }
    }
}

impl Preset {
    /// The goals, most important first (compared lexicographically).
    pub fn goals(self) -> &'static [Goal] {
        use Goal::*;
        match self {
            Preset::Balanced => &[Size, Soft, PathLines, ReadLines, Movement],
            Preset::MinDiff => &[Churn, Size, Soft, PathLines, ReadLines, Movement],
            Preset::CompactHot => &[Size, ReadLines, PathLines, Soft, Movement],
            Preset::HotLines => &[PathLines, Size, Soft, ReadLines, Movement],
        }
    }
}

impl Preset {
    /// Every preset, in the order `--help` lists them.
    pub const ALL: [Preset; 4] = [
        Preset::Balanced,
        Preset::MinDiff,
        Preset::CompactHot,
        Preset::HotLines,
    ];

    /// The name `--objective` and `#[layout(objective = "...")]` take.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Balanced => "balanced",
            Preset::MinDiff => "min-diff",
            Preset::CompactHot => "compact-hot",
            Preset::HotLines => "hot-lines",
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown objective preset `{s}`: use balanced, min-diff, compact-hot or hot-lines"
                )
            })
    }
}

/// The default [`SolveOptions::work_limit`]: units of work, about one
/// field placed (or one node of a search) each.
pub const DEFAULT_WORK_LIMIT: u64 = 40_000_000;

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
            line: crate::place::DataLayout::X86_64.line_bytes,
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
    /// True when every goal of the preset is proven optimal (movement, when
    /// it is the preset's last goal, is minimised by local search only and
    /// left out of the claim): the exact search finished, or every goal
    /// meets its bound.
    pub optimal: bool,
    /// How many of the preset's leading goals ([`Preset::goals`]) are proven
    /// optimal, each given the ones before it: `goals[..proven_goals]`.
    pub proven_goals: usize,
    /// The preset's goals (copied from [`Preset::goals`]).
    pub goals: &'static [Goal],
    /// A proven lower bound on each hot path's lines (index = path), at any
    /// layout: `ceil(bytes the path touches / line)`.
    pub path_bounds: Vec<u64>,
    /// A proven lower bound on the churn under the preset's constraints
    /// (equal to the churn when it is proven; 0 unless the preset is
    /// [`Preset::MinDiff`]).
    pub churn_bound: u64,
    /// The size cap [`Preset::MinDiff`] kept (None for other presets).
    pub size_cap: Option<u64>,
    /// Units of work spent ([`SolveOptions::work_limit`]).
    pub work: u64,
    pub solve_ms: u64,
    /// True when the wall-clock safety stop ([`SolveOptions::time_limit`])
    /// ended the search: a larger limit may give a different answer.
    pub stopped_by_time: bool,
    /// How it was found.
    pub method: Method,
}

/// How the solver found a layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// The declaration order already keeps the rule.
    NoConflict,
    /// The exact search proved it.
    Exact,
    /// The ILP backend found it.
    Ilp,
    /// The heuristics found it.
    Heuristic,
}

impl Method {
    /// `no-conflict`, `exact`, `ilp` or `heuristic`.
    pub fn name(self) -> &'static str {
        match self {
            Method::NoConflict => "no-conflict",
            Method::Exact => "exact",
            Method::Ilp => "ilp",
            Method::Heuristic => "heuristic",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
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
    pub size: u64,
    pub geom: geometry::Geometry,
    /// Order of the unpinned fields.
    pub order: Vec<usize>,
    pub method: Method,
}
