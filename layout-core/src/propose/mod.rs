//! What `propose` settles on, behind one call: [`propose`] takes a struct as
//! a front-end read it and the user's choices, and returns the verified
//! layout to propose with everything a report says about it. The command
//! line only renders the answer; a library caller gets the same one.
//!
//! The policy, in order:
//!
//! 1. what the author built stays unless asked: `regroup` dissolves the
//!    cache-line groups, paddings and line-aligned members, `move_first`
//!    lets the first member move;
//! 2. under `--regroup --objective hot-lines`, when dissolving the groups
//!    would make a hot path touch more lines than declared, the solve with
//!    the groups kept wins if it does not;
//! 3. under `min-diff` a struct that already keeps the rule keeps its
//!    layout (moving nothing is the least churn there is);
//! 4. when lockless fields still share lines with locked ones, the price of
//!    separating them too is computed, within what is left of the time
//!    limit;
//! 5. with no objective named, a struct whose author laid out its lines (a
//!    `CACHELINE_PADDING()`, a line-aligned member, a cache-line group) gets
//!    the smallest change that fixes it (`min-diff`), and the proposal
//!    says what the size-first layout (`balanced`) would buy on top; any
//!    other struct gets `balanced` ([`default_objective`]);
//! 6. the proposal names the constraints it is proven under and prices
//!    each ([`constraints`]).

pub mod constraints;

use crate::layout::{self, Layout};
use crate::model::{Placement, Struct};
use crate::paths::path_lines;
use crate::segments::{self, Dissolved, Keep};
use crate::solve::{self, Preset, Solution, SolveError, SolveOptions};
use crate::source::StructSource;
use crate::verify::{verify, VerifiedLayout};
use std::fmt;
use std::time::{Duration, Instant};

/// The struct to propose a layout for, as a front-end read it.
#[derive(Clone, Debug)]
pub struct Subject {
    pub model: Struct,
    /// The layout as declared.
    pub declared: Layout,
    /// Where the struct's text is, when it came from a header (for diffs).
    pub source: Option<StructSource>,
}

/// The user's choices (the command line's `propose` options).
#[derive(Clone, Debug)]
pub struct ProposeOptions {
    /// `None`: [`default_objective`].
    pub objective: Option<Preset>,
    /// Dissolve the author's cache-line groups, paddings and line-aligned
    /// members (`--regroup`).
    pub regroup: bool,
    /// Let the first member move (`--move-first`).
    pub move_first: bool,
    /// Keep lockless fields off the lines of locked ones too
    /// (`--separate-locked`).
    pub separate_locked: bool,
    /// For the whole proposal, every solve included.
    pub time_limit: Duration,
    pub line: u64,
    pub placement: Placement,
    /// The configuration the struct was read in (a `.config`'s path), when
    /// its text has `#if` blocks: the proof holds for that one.
    pub configuration: Option<String>,
    /// Price each constraint the proposal keeps (a solve each).
    pub price_constraints: bool,
    /// What the tree-safety pass found in the code that uses the struct
    /// ([`crate::tree_safety::scan`]): its needs are kept, its refusals
    /// refuse a proposal that moves members.
    pub tree: Option<crate::tree_safety::TreeScan>,
}

/// Why no layout could be proposed. Render it with [`ProposeError::diagnostic`]
/// (or its `Display`); the solver's error is its `source()`.
#[derive(Debug)]
pub enum ProposeError {
    /// `--objective hot-lines` on a struct with no hot paths.
    NoHotPaths { strukt: String },
    /// The solver found no layout (pinned fields in the way, a field it
    /// cannot take).
    Solve { strukt: String, source: SolveError },
    /// Code of the tree depends on the layout in a way no reorder keeps
    /// (the tree-safety pass): the site and why.
    Unsafe {
        strukt: String,
        refusal: Box<crate::tree_safety::Refusal>,
    },
}

impl fmt::Display for ProposeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProposeError::NoHotPaths { strukt } => {
                write!(
                    f,
                    "--objective hot-lines needs the hot paths of struct {strukt}"
                )
            }
            ProposeError::Solve { strukt, source } => write!(f, "struct {strukt}: {source}"),
            ProposeError::Unsafe { strukt, refusal } => {
                write!(f, "{}", refusal.diagnostic(strukt))
            }
        }
    }
}

impl std::error::Error for ProposeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProposeError::NoHotPaths { .. } | ProposeError::Unsafe { .. } => None,
            ProposeError::Solve { source, .. } => Some(source),
        }
    }
}

impl ProposeError {
    /// The error as the command line prints it, with what to change.
    pub fn diagnostic(&self) -> crate::Diagnostic {
        if let ProposeError::Unsafe { strukt, refusal } = self {
            return refusal.diagnostic(strukt);
        }
        let d = crate::Diagnostic::new(self.to_string());
        match self {
            ProposeError::NoHotPaths { strukt } => d.help(format!(
                "list them in the access file: [struct.{strukt}.paths] tx = [\"member\", ...]"
            )),
            ProposeError::Solve { .. } => {
                d.help("unpin fields in the access file (`pinned = [...]`) or change their classes")
            }
            ProposeError::Unsafe { .. } => d,
        }
    }
}

/// The proposal: the verified layout and what reports say about it.
#[derive(Clone, Debug)]
pub struct Proposal {
    /// The struct the layout is for: the subject, less what was dissolved.
    pub subject: Subject,
    pub layout: VerifiedLayout,
    /// A proven lower bound on the size of any layout obeying the rule.
    pub lower_bound: u64,
    /// The solver's claim (see [`Solution::optimal`]); for `nothing_to_do`,
    /// that no member moves, the least churn there is.
    pub optimal: bool,
    pub solve_ms: u64,
    pub stopped_by_time: bool,
    /// Under min-diff: the layout as declared already keeps the rule.
    pub nothing_to_do: bool,
    /// The solver's answer; `None` when min-diff has nothing to do.
    pub solution: Option<Solution>,
    /// What keeping lockless fields off locked fields' lines too would give,
    /// when it costs bytes (and was not asked for).
    pub separated: Option<Solution>,
    /// What `regroup` dissolved (`None`: not asked, or the groups were kept).
    pub dissolved: Option<Dissolved>,
    /// Under `regroup` with hot-lines: the hot paths that dissolving the
    /// groups would have made worse, when the groups were kept for them.
    pub groups_kept_for: Vec<String>,
    /// The objective solved for (the user's, or [`default_objective`]).
    pub objective: Preset,
    /// With the objective chosen by default as min-diff: the size-first
    /// (`balanced`) layout, when it is smaller.
    pub smaller: Option<Solution>,
    /// What the layout is proven under, with prices when asked.
    pub constraints: Vec<constraints::Constraint>,
    /// The tree-safety pass's constraints, as kept in the model (each is
    /// also one of `constraints`).
    pub tree_constraints: Vec<crate::tree_safety::TreeConstraint>,
    /// What the tree's constraints cost together, when priced.
    pub tree_price: Option<constraints::Price>,
    /// What a reader of the proposal must know beyond its constraints (a
    /// `__randomize_layout` struct: the proposal holds without
    /// CONFIG_RANDSTRUCT); one sentence each.
    pub notes: Vec<String>,
}

/// The objective when the user names none: `min-diff` for a struct whose
/// author laid out its lines (a `CACHELINE_PADDING()`, a line-aligned
/// member, a cache-line group: the layout is intent, and the smallest
/// change that fixes it is the patch a maintainer takes), `balanced`
/// (size first) otherwise.
pub fn default_objective(s: &Struct) -> Preset {
    let laid_out = s
        .fields
        .iter()
        .any(|f| f.line_break || segments::Marker::of(f).is_some_and(|m| m.is_cacheline()));
    if laid_out {
        Preset::MinDiff
    } else {
        Preset::Balanced
    }
}

/// Solves, verifies and decides, following the policy of the module docs.
pub fn propose(subject: Subject, opts: &ProposeOptions) -> Result<Proposal, ProposeError> {
    let started = Instant::now();
    let preset = opts
        .objective
        .unwrap_or_else(|| default_objective(&subject.model));
    // Under --regroup --objective hot-lines, the struct with the author's
    // groups as they are: kept when dissolving them would cost a hot path.
    let mut author = (opts.regroup && preset == Preset::HotLines).then(|| subject.clone());
    let mut subject = subject;
    let mut dissolved = author_choices(opts, &mut subject);
    // The tree's needs, on the model as the author's choices left it.
    let tree_needs = opts
        .tree
        .as_ref()
        .map(crate::tree_safety::constrain)
        .unwrap_or_default();
    let untreed = subject.model.clone();
    keep_tree(opts, &tree_needs, &mut subject)?;
    if preset == Preset::HotLines && subject.model.paths.is_empty() {
        return Err(ProposeError::NoHotPaths {
            strukt: subject.model.name.clone(),
        });
    }
    let solve_opts = SolveOptions {
        line: opts.line,
        placement: opts.placement,
        time_limit: opts.time_limit,
        preset,
        separate_soft: opts.separate_locked,
        ..SolveOptions::default()
    };
    let mut groups_kept_for = Vec::new();
    let mut precomputed = None;
    let mut author_untreed = None;
    if let Some(author) = author.as_mut() {
        let regrouped = solve_named(&subject.model, &solve_opts)?;
        let worse = paths_worse(&subject.model, &subject.declared, &regrouped.layout);
        if opts.move_first {
            segments::release_first(&mut author.model);
        }
        author_untreed = Some(author.model.clone());
        keep_tree(opts, &tree_needs, author)?;
        let in_groups = (!worse.is_empty())
            .then(|| solve::solve(&author.model, &solve_opts).ok())
            .flatten()
            .filter(|k| paths_worse(&author.model, &author.declared, &k.layout).is_empty());
        precomputed = Some(match in_groups {
            Some(kept) => {
                groups_kept_for = worse;
                dissolved = None;
                kept
            }
            None => regrouped,
        });
    }
    let mut untreed = untreed;
    if !groups_kept_for.is_empty() {
        subject = author.take().expect("kept only under regroup");
        untreed = author_untreed.expect("set with the author's subject");
    }
    let s = &subject.model;
    // Under min-diff a struct that already keeps the rule keeps its layout.
    let declared_keeps_rule =
        preset == Preset::MinDiff && layout::reported_conflicts(s, &subject.declared).is_empty();
    let as_declared = declared_keeps_rule
        .then(|| verify(s, &subject.declared).ok())
        .flatten();
    let mut proposal = match as_declared {
        Some(layout) => {
            let bytes: u64 = s.fields.iter().map(|f| f.size).sum();
            let lower_bound = crate::place::align_up(bytes, s.natural_align());
            Proposal::new(subject.clone(), preset, layout, lower_bound, None)
        }
        None => {
            let sol = match precomputed {
                Some(p) => p,
                None => solve_named(s, &solve_opts).map_err(|e| with_tree(e, &tree_needs))?,
            };
            let (layout, lower_bound) = (sol.layout.clone(), sol.lower_bound);
            Proposal::new(subject.clone(), preset, layout, lower_bound, Some(sol))
        }
    };
    // The objective was chosen for the author's layout: say what the
    // size-first one would buy.
    if opts.objective.is_none() && preset == Preset::MinDiff {
        proposal.smaller = solve::solve(
            s,
            &SolveOptions {
                preset: Preset::Balanced,
                time_limit: opts.time_limit.saturating_sub(started.elapsed()),
                ..solve_opts.clone()
            },
        )
        .ok()
        .filter(|alt| alt.layout.size < proposal.layout.size);
    }
    // When lockless fields still share lines with locked ones, price
    // separating them too, within what is left of the time limit.
    if !opts.separate_locked && !proposal.nothing_to_do {
        proposal.separated = solve::solve(
            s,
            &SolveOptions {
                separate_soft: true,
                time_limit: opts.time_limit.saturating_sub(started.elapsed()),
                ..solve_opts.clone()
            },
        )
        .ok()
        .filter(|alt| alt.layout.size > proposal.layout.size);
    }
    if let Some(scan) = &opts.tree {
        crate::verify::check_tree_needs(s, &proposal.layout, &subject.declared, &tree_needs)
            .map_err(|e| ProposeError::Solve {
                strukt: s.name.clone(),
                source: SolveError::Infeasible(e.to_string()),
            })?;
        let changes = !proposal.moves_nothing();
        if let Some(refusal) = crate::tree_safety::apply::refusal(
            scan,
            s,
            &subject.declared,
            &proposal.layout,
            changes,
        ) {
            return Err(ProposeError::Unsafe {
                strukt: s.name.clone(),
                refusal: Box::new(refusal),
            });
        }
    }
    proposal
        .notes
        .extend(proposal.subject.source.as_ref().and_then(|src| {
            crate::tree_safety::randstruct::note(src, &s.name, opts.configuration.as_deref())
        }));
    proposal.constraints = constraints::kept_by(s, opts.configuration.as_deref());
    let first_tree = proposal.constraints.len();
    proposal
        .constraints
        .extend(tree_needs.iter().map(|c| constraints::Constraint {
            kept: constraints::Kept::of_site(c.kind),
            names: match &c.need {
                crate::tree_safety::Need::First(n)
                | crate::tree_safety::Need::Run(n)
                | crate::tree_safety::Need::Last(n)
                | crate::tree_safety::Need::Pin(n) => n.clone(),
                _ => Vec::new(),
            },
            without: None,
            site: Some(c.site_text()),
            keeps: Some(c.keeps()),
        }));
    if opts.price_constraints && !proposal.nothing_to_do {
        let left = SolveOptions {
            time_limit: opts.time_limit.saturating_sub(started.elapsed()),
            ..solve_opts.clone()
        };
        constraints::price(s, &mut proposal.constraints, &left);
        proposal.tree_price = crate::tree_safety::apply::price(
            &untreed,
            &subject.declared,
            &tree_needs,
            &mut proposal.constraints[first_tree..],
            &left,
        );
    }
    proposal.tree_constraints = tree_needs;
    proposal.dissolved = dissolved;
    proposal.groups_kept_for = groups_kept_for;
    Ok(proposal)
}

impl Proposal {
    /// A proposal of `layout`: the solver's answer (`solution`), or
    /// without one the layout as declared (min-diff's nothing to do).
    fn new(
        subject: Subject,
        objective: Preset,
        layout: VerifiedLayout,
        lower_bound: u64,
        solution: Option<Solution>,
    ) -> Self {
        Proposal {
            subject,
            layout,
            lower_bound,
            optimal: solution.as_ref().is_none_or(|sol| sol.optimal),
            solve_ms: solution.as_ref().map_or(0, |sol| sol.solve_ms),
            stopped_by_time: solution.as_ref().is_some_and(|sol| sol.stopped_by_time),
            nothing_to_do: solution.is_none(),
            solution,
            separated: None,
            dissolved: None,
            groups_kept_for: Vec::new(),
            objective,
            smaller: None,
            constraints: Vec::new(),
            tree_constraints: Vec::new(),
            tree_price: None,
            notes: Vec::new(),
        }
    }

    /// Whether the proposal places every member where it already is: then
    /// there is nothing to patch.
    pub fn moves_nothing(&self) -> bool {
        same_layout(&self.subject.declared, &self.layout)
    }

    /// Whether a time limit stopped a search, so that the answer may
    /// differ with a larger one.
    pub fn stopped_by_time(&self) -> bool {
        self.stopped_by_time
            || [&self.separated, &self.smaller]
                .into_iter()
                .flatten()
                .any(|a| a.stopped_by_time)
    }
}

/// True when `b` places every field where `a` does, at the same size and
/// alignment.
pub fn same_layout(a: &Layout, b: &Layout) -> bool {
    let placed = |l: &Layout| {
        let mut v: Vec<(usize, u64)> = l.slots.iter().map(|s| (s.field, s.offset)).collect();
        v.sort_unstable();
        v
    };
    a.size == b.size && a.align == b.align && placed(a) == placed(b)
}

/// `regroup` and `move_first`: what the solver may undo of what the author
/// built. With `regroup` the model loses the author's group markers and
/// paddings (the declared layout and the source follow the new field
/// indices); returns what was dissolved.
fn author_choices(opts: &ProposeOptions, subject: &mut Subject) -> Option<Dissolved> {
    let dissolved = opts.regroup.then(|| {
        let keep = Keep {
            first: !opts.move_first,
            ..Keep::default()
        };
        let d = segments::dissolve_groups(&mut subject.model, keep);
        subject.declared.slots = subject
            .declared
            .slots
            .iter()
            .filter_map(|sl| {
                d.index[sl.field].map(|field| crate::Slot {
                    field,
                    offset: sl.offset,
                })
            })
            .collect();
        if let Some(src) = &mut subject.source {
            segments::remap_source(src, &d);
        }
        d
    });
    if opts.move_first {
        segments::release_first(&mut subject.model);
    }
    dissolved
}

/// A solve that failed under the tree's needs says so: they are
/// constraints the user did not write in the access file.
fn with_tree(e: ProposeError, needs: &[crate::tree_safety::TreeConstraint]) -> ProposeError {
    match e {
        ProposeError::Solve { strukt, source } if !needs.is_empty() => {
            let sites: Vec<String> = needs.iter().map(|c| c.site_text()).collect();
            ProposeError::Solve {
                strukt,
                source: SolveError::Infeasible(format!(
                    "{source}; with the needs of the code --safety-scan found kept ({})",
                    sites.join("; ")
                )),
            }
        }
        e => e,
    }
}

/// Writes the tree's needs into `subject`'s model; one it cannot keep (a
/// member `--regroup` dissolved) refuses the proposal at its site.
fn keep_tree(
    opts: &ProposeOptions,
    needs: &[crate::tree_safety::TreeConstraint],
    subject: &mut Subject,
) -> Result<(), ProposeError> {
    let Some(scan) = &opts.tree else {
        return Ok(());
    };
    crate::tree_safety::apply::apply_all(needs, &mut subject.model, &subject.declared).map_err(
        |(k, why)| {
            let at = &needs[k].sites[0];
            let site = scan
                .sites
                .iter()
                .find(|s| &s.at() == at)
                .cloned()
                .expect("a constraint's site is one of the scan's");
            ProposeError::Unsafe {
                strukt: subject.model.name.clone(),
                refusal: Box::new(crate::tree_safety::Refusal { site, why, more: 0 }),
            }
        },
    )
}

/// The hot paths that touch more lines in `after` than in `before`, as
/// `tx 6 -> 7 lines`.
pub fn paths_worse(s: &Struct, before: &Layout, after: &Layout) -> Vec<String> {
    let old = path_lines(s, before);
    let new = path_lines(s, after);
    old.iter()
        .zip(&new)
        .filter(|(o, n)| n.lines > o.lines)
        .map(|(o, n)| format!("{} {} -> {} lines", o.name, o.lines, n.lines))
        .collect()
}

fn solve_named(s: &Struct, opts: &SolveOptions) -> Result<Solution, ProposeError> {
    solve::solve(s, opts).map_err(|source| ProposeError::Solve {
        strukt: s.name.clone(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Access, Field};

    /// `read`, then `hits` (lockless) on the same line as declared: one
    /// hard conflict.
    fn conflicted() -> Subject {
        let long = |n: &str, a: Access, o: u64| {
            let mut f = Field::new(n, "long", 8, 8).with_access(a);
            f.original_offset = Some(o);
            f
        };
        let mut model = Struct::new(
            "stats",
            vec![
                long("name", Access::ReadMostly, 0),
                long("hits", Access::Lockless { group: None }, 8),
                long("max", Access::ReadMostly, 16),
            ],
        );
        segments::assign(&mut model, Keep::default());
        let declared = Layout::declared(&model, 24, 8, 64, Placement::Aligned).unwrap();
        Subject {
            model,
            declared,
            source: None,
        }
    }

    fn options(objective: Preset) -> ProposeOptions {
        ProposeOptions {
            objective: Some(objective),
            regroup: false,
            move_first: false,
            separate_locked: false,
            time_limit: Duration::from_secs(10),
            line: 64,
            placement: Placement::Aligned,
            configuration: None,
            price_constraints: true,
            tree: None,
        }
    }

    #[test]
    fn a_conflict_is_solved_and_verified() {
        let p = propose(conflicted(), &options(Preset::Balanced)).unwrap();
        assert!(!p.nothing_to_do && !p.moves_nothing());
        assert!(layout::reported_conflicts(&p.subject.model, &p.layout).is_empty());
        let line_of = |f: usize| p.layout.slots.iter().find(|s| s.field == f).unwrap().offset / 64;
        assert_ne!(
            line_of(1),
            line_of(0),
            "the lockless field leaves the read-mostly line"
        );
        assert_ne!(line_of(1), line_of(2));
        assert!(p.solution.is_some());
    }

    #[test]
    fn min_diff_keeps_a_layout_that_already_keeps_the_rule() {
        let mut ok = conflicted();
        ok.model.fields[1].access = Access::ReadMostly;
        let p = propose(ok, &options(Preset::MinDiff)).unwrap();
        assert!(p.nothing_to_do && p.moves_nothing() && p.solution.is_none());
        assert!(p.separated.is_none());
    }

    #[test]
    fn hot_lines_without_paths_is_a_typed_error() {
        let err = propose(conflicted(), &options(Preset::HotLines)).unwrap_err();
        assert!(matches!(&err, ProposeError::NoHotPaths { strukt } if strukt == "stats"));
        assert!(std::error::Error::source(&err).is_none());
        let d = err.diagnostic();
        assert!(d.help.unwrap().contains("[struct.stats.paths]"));
    }

    #[test]
    fn an_infeasible_pin_is_a_solve_error_with_its_source() {
        let mut s = conflicted();
        for f in &mut s.model.fields {
            f.pinned = true;
        }
        let err = propose(s, &options(Preset::Balanced)).unwrap_err();
        let ProposeError::Solve { strukt, .. } = &err else {
            panic!("expected a solve error, got {err:?}");
        };
        assert_eq!(strukt, "stats");
        let source = std::error::Error::source(&err).expect("the solver's error");
        assert!(source.to_string().contains("no layout"), "{source}");
    }
}
