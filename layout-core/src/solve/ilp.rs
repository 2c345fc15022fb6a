//! The gap-fill integer program ("line types": see the solve module docs).
//!
//! Conflicting fields form one run per colour, laid in an order `π` of the
//! colours (those of the best layouts found so far, then the declaration
//! order and its reverse; at most three). Free fields, grouped into types
//! `t` of equal size `w_t` and alignment with `N_t` fields each, go to the
//! gaps `k = 0..=m` before, between and after the `m` runs. Run `j` (in `π`
//! order) has length `h_j` and alignment `a_j`. With struct alignment `A`
//! and line size `L`:
//!
//! ```text
//! minimise   S
//! subject to sum_k n[k][t] = N_t                       n[k][t] ∈ {0..N_t}
//!            g_k  = sum_t w_t n[k][t]                   (bytes in gap k)
//!            s_0 >= g_0,   s_j = a_j z_j                z_j ∈ ℕ
//!            s_{j+1} >= s_j + h_j + g_{j+1}
//!            S >= s_{m-1} + h_{m-1} + g_m,   S = A σ,   σ ∈ ℕ,   S <= best - 1
//! and a line boundary between consecutive runs:
//!   one phase p:          L μ_j >= p + s_j + h_j,   s_{j+1} + p >= L μ_j
//!   every multiple of a:  a μ_j >= s_j + h_j - a,   s_{j+1} >= a μ_j + L
//! ```
//!
//! (The second form is `s_{j+1} >= L + a floor((e_j - 1) / a)`, see
//! [`super::geometry`].) Since every two colours conflict, consecutive runs
//! suffice. Counts per type instead of one variable per field remove the
//! symmetry between interchangeable fields. Each solution is realised as an
//! order (each gap's fields by increasing alignment) and placed by the
//! greedy placer, which has the last word on offsets.
//!
//! The default backend is microlp (pure Rust), with a node limit taken from
//! the work budget, so the result does not depend on the clock; with the
//! `highs` feature, HiGHS (single-threaded) solves the same model. Both get
//! the time left before the safety stop as their time limit; when it runs
//! out the budget records it ([`Work::mark_timed_out`]).

use super::budget::Work;
use super::construct::hard_blocks;
use super::geometry::{Geometry, Phases};
use super::problem::Problem;

/// Most run orders tried.
const MAX_ORDERS: usize = 3;
/// Work charged per branch-and-bound node of the program.
const NODE_WORK: u64 = 2_000;
/// Most nodes one program may take.
const MAX_NODES: u64 = 1_000;

/// Orders realised from the program, one per run order where it found a
/// layout smaller than `best_size` (by its own account).
pub(crate) fn gap_fills(
    p: &Problem,
    g: Geometry,
    best_size: u64,
    hints: &[&[usize]],
    work: &mut Work,
) -> Vec<Vec<usize>> {
    let blocks = hard_blocks(p);
    let m = blocks.len();
    if m < 2 {
        return Vec::new();
    }
    let flex: Vec<usize> = p
        .free
        .iter()
        .copied()
        .filter(|&f| p.color[f] == 0)
        .collect();
    let mut types: Vec<(u64, u64, Vec<usize>)> = Vec::new();
    for &f in &flex {
        match types
            .iter_mut()
            .find(|t| t.0 == p.size[f] && t.1 == p.align[f])
        {
            Some(t) => t.2.push(f),
            None => types.push((p.size[f], p.align[f], vec![f])),
        }
    }
    let orders = run_orders(p, &blocks, hints);
    let mut out = Vec::new();
    for pi in orders {
        let nodes = (work.remaining() / NODE_WORK).min(MAX_NODES);
        if nodes == 0 {
            break;
        }
        work.spend(NODE_WORK);
        let runs: Vec<&Vec<usize>> = pi.iter().map(|&j| &blocks[j]).collect();
        let model = build_model(p, g, &runs, &types, best_size);
        let solved = backend::solve(&model, nodes, work);
        if let Some(values) = solved {
            let counts: Vec<Vec<u64>> = (0..=m)
                .map(|k| {
                    (0..types.len())
                        .map(|t| values[k * types.len() + t].round().max(0.0) as u64)
                        .collect()
                })
                .collect();
            let mut order = realise(p, &runs, &types, &counts);
            p.to_segment_order(&mut order);
            out.push(order);
        }
    }
    out
}

/// A linear expression: `sum coef * var + constant`.
#[derive(Clone, Default)]
struct Lin {
    terms: Vec<(usize, f64)>,
    constant: f64,
}

impl Lin {
    fn var(v: usize, coef: f64) -> Lin {
        Lin {
            terms: vec![(v, coef)],
            constant: 0.0,
        }
    }

    fn plus(mut self, other: &Lin, scale: f64) -> Lin {
        for &(v, c) in &other.terms {
            match self.terms.iter_mut().find(|t| t.0 == v) {
                Some(t) => t.1 += scale * c,
                None => self.terms.push((v, scale * c)),
            }
        }
        self.constant += scale * other.constant;
        self
    }

    fn add_const(mut self, c: f64) -> Lin {
        self.constant += c;
        self
    }
}

/// An integer program: minimise `objective`; every constraint says
/// `lin >= 0` or, with `eq`, `lin == 0`.
struct Model {
    /// Bounds of each integer variable.
    vars: Vec<(i32, i32)>,
    cons: Vec<(Lin, bool)>,
    /// Objective coefficient of each variable.
    objective: Vec<f64>,
}

impl Model {
    fn add_var(&mut self, min: i32, max: i32) -> usize {
        self.vars.push((min, max));
        self.objective.push(0.0);
        self.vars.len() - 1
    }

    fn geq(&mut self, a: Lin, b: Lin) {
        self.cons.push((a.plus(&b, -1.0), false));
    }

    fn eq(&mut self, a: Lin, b: Lin) {
        self.cons.push((a.plus(&b, -1.0), true));
    }
}

/// Variables `n[k][t]` come first (`k * types + t`), as [`gap_fills`] reads them.
fn build_model(
    p: &Problem,
    g: Geometry,
    runs: &[&Vec<usize>],
    types: &[(u64, u64, Vec<usize>)],
    best_size: u64,
) -> Model {
    let m = runs.len();
    let line = g.line as f64;
    let big = i32::MAX;
    let mut model = Model {
        vars: Vec::new(),
        cons: Vec::new(),
        objective: Vec::new(),
    };
    let n: Vec<Vec<usize>> = (0..=m)
        .map(|_| {
            types
                .iter()
                .map(|t| model.add_var(0, t.2.len() as i32))
                .collect()
        })
        .collect();
    let z: Vec<usize> = (0..m).map(|_| model.add_var(0, big)).collect();
    let mu: Vec<usize> = (0..m - 1).map(|_| model.add_var(0, big)).collect();
    let sigma = model.add_var(0, big);
    model.objective[sigma] = g.align as f64;
    let size = Lin::var(sigma, g.align as f64);
    let gap = |k: usize| -> Lin {
        types
            .iter()
            .zip(&n[k])
            .fold(Lin::default(), |acc, (t, &v)| {
                acc.plus(&Lin::var(v, t.0 as f64), 1.0)
            })
    };
    let start = |j: usize| Lin::var(z[j], p_align(p, runs[j]) as f64);
    let len = |j: usize| run_length(p, runs[j]) as f64;
    for (ti, t) in types.iter().enumerate() {
        let total = (0..=m).fold(Lin::default(), |acc, k| {
            acc.plus(&Lin::var(n[k][ti], 1.0), 1.0)
        });
        model.eq(total, Lin::default().add_const(t.2.len() as f64));
    }
    model.geq(start(0), gap(0));
    for (j, &mu_j) in mu.iter().enumerate() {
        let end_j = start(j).add_const(len(j));
        model.geq(start(j + 1), end_j.clone().plus(&gap(j + 1), 1.0));
        match g.phases {
            Phases::One(ph) => {
                let ph = ph as f64;
                model.geq(Lin::var(mu_j, line), end_j.add_const(ph));
                model.geq(start(j + 1).add_const(ph), Lin::var(mu_j, line));
            }
            // A line boundary between the runs at each phase of the set.
            Phases::Set(set) => {
                for ph in set.iter() {
                    let mu = model.add_var(0, big);
                    let ph = ph as f64;
                    model.geq(Lin::var(mu, line), end_j.clone().add_const(ph));
                    model.geq(start(j + 1).add_const(ph), Lin::var(mu, line));
                }
            }
            Phases::EveryMultipleOf(a) => {
                let a = a as f64;
                model.geq(Lin::var(mu_j, a), end_j.add_const(-a));
                model.geq(start(j + 1), Lin::var(mu_j, a).add_const(line));
            }
        }
    }
    model.geq(
        size.clone(),
        start(m - 1).add_const(len(m - 1)).plus(&gap(m), 1.0),
    );
    model.geq(
        Lin::default().add_const(best_size.saturating_sub(1) as f64),
        size,
    );
    model
}

#[cfg(not(feature = "highs"))]
mod backend {
    use super::{Model, Work};
    use microlp::{ComparisonOp, OptimizationDirection, Problem, SolveOptions, TerminationReason};

    /// Solve with at most `nodes` branch-and-bound nodes; the variables'
    /// values, or None when no solution was found.
    pub(super) fn solve(model: &Model, nodes: u64, work: &mut Work) -> Option<Vec<f64>> {
        let mut problem = Problem::new(OptimizationDirection::Minimize);
        let vars: Vec<_> = model
            .vars
            .iter()
            .zip(&model.objective)
            .map(|(&(lo, hi), &c)| problem.add_integer_var(c, (lo, hi)))
            .collect();
        for (lin, eq) in &model.cons {
            let expr: Vec<(microlp::Variable, f64)> =
                lin.terms.iter().map(|&(v, c)| (vars[v], c)).collect();
            let op = if *eq {
                ComparisonOp::Eq
            } else {
                ComparisonOp::Ge
            };
            problem.add_constraint(expr, op, -lin.constant);
        }
        let mut options = SolveOptions::default();
        options.node_limit = Some(nodes);
        options.time_limit = work.time_left();
        let outcome = problem.solve_with(options).ok()?;
        let reason = outcome.termination_reason();
        work.spend(
            outcome
                .stats()
                .nodes_solved
                .saturating_mul(super::NODE_WORK),
        );
        if reason == TerminationReason::TimeLimit {
            work.mark_timed_out();
        }
        let solution = outcome.solution()?;
        Some(vars.iter().map(|&v| solution.var_value(v)).collect())
    }
}

#[cfg(feature = "highs")]
mod backend {
    use super::{Model, Work};
    use good_lp::{
        highs, variable, Expression, ProblemVariables, Solution, SolutionStatus, SolverModel,
        WithTimeLimit,
    };

    /// Solve with HiGHS (`nodes` is not passed on: HiGHS is deterministic
    /// for a given model without a time limit);
    /// the variables' values, or None when no solution was found.
    pub(super) fn solve(model: &Model, _nodes: u64, work: &mut Work) -> Option<Vec<f64>> {
        let mut pv = ProblemVariables::new();
        let vars: Vec<_> = model
            .vars
            .iter()
            .map(|&(lo, hi)| pv.add(variable().integer().min(lo).max(hi)))
            .collect();
        let objective: Expression = vars
            .iter()
            .zip(&model.objective)
            .map(|(&v, &c)| c * v)
            .sum();
        let mut problem = pv.minimise(objective).using(highs);
        if let Some(t) = work.time_left() {
            problem = problem.with_time_limit(t.as_secs_f64().min(1e9));
        }
        for (lin, eq) in &model.cons {
            let e: Expression = lin
                .terms
                .iter()
                .map(|&(v, c)| c * vars[v])
                .sum::<Expression>()
                + lin.constant;
            problem.add_constraint(if *eq { e.eq(0.0) } else { e.geq(0.0) });
        }
        let solution = problem.solve().ok()?;
        if solution.status() == SolutionStatus::TimeLimit {
            work.mark_timed_out();
        }
        Some(vars.iter().map(|&v| solution.value(v)).collect())
    }
}

/// The run orders to try: those of the hint layouts (colours by first
/// appearance), then the declaration order of the colours and its reverse.
fn run_orders(p: &Problem, blocks: &[Vec<usize>], hints: &[&[usize]]) -> Vec<Vec<usize>> {
    let m = blocks.len();
    let block_of = |f: usize| blocks.iter().position(|b| p.color[b[0]] == p.color[f]);
    let mut out: Vec<Vec<usize>> = Vec::new();
    let natural: Vec<usize> = (0..m).collect();
    let reversed: Vec<usize> = (0..m).rev().collect();
    let from_hints = hints.iter().map(|order| {
        let mut seen = Vec::with_capacity(m);
        for &f in order.iter() {
            if let Some(b) = block_of(f).filter(|_| p.color[f] != 0) {
                if !seen.contains(&b) {
                    seen.push(b);
                }
            }
        }
        seen
    });
    for order in from_hints.chain([natural, reversed]) {
        if order.len() == m && !out.contains(&order) && out.len() < MAX_ORDERS {
            out.push(order);
        }
    }
    out
}

/// Length of a run laid from an offset aligned to its first field.
fn run_length(p: &Problem, run: &[usize]) -> u64 {
    run.iter().fold(0, |at, &f| {
        super::geometry::align_up(at, p.align[f]) + p.size[f]
    })
}

fn p_align(p: &Problem, run: &[usize]) -> u64 {
    run.first().map_or(1, |&f| p.align[f])
}

/// The order: gap 0, run 0, gap 1, ..., gap m; each type's fields handed out
/// to the gaps in declaration order; inside a gap by increasing alignment.
fn realise(
    p: &Problem,
    runs: &[&Vec<usize>],
    types: &[(u64, u64, Vec<usize>)],
    counts: &[Vec<u64>],
) -> Vec<usize> {
    let mut next = vec![0usize; types.len()];
    let mut order = Vec::with_capacity(p.free.len());
    for (k, row) in counts.iter().enumerate() {
        let mut gap: Vec<usize> = Vec::new();
        for (ti, &c) in row.iter().enumerate() {
            let fields = &types[ti].2;
            let take = (c as usize).min(fields.len() - next[ti]);
            gap.extend_from_slice(&fields[next[ti]..next[ti] + take]);
            next[ti] += take;
        }
        gap.sort_by_key(|&f| (p.align[f], f));
        order.extend(gap);
        if let Some(run) = runs.get(k) {
            order.extend_from_slice(run);
        }
    }
    // Rounding can leave fields out: they go last.
    for (ti, t) in types.iter().enumerate() {
        order.extend_from_slice(&t.2[next[ti]..]);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Access, Field, Struct};
    use crate::solve::place::Placer;
    use std::time::Duration;

    /// 40 B read-mostly, 40 B lockless, 40 B of cold fields in four pieces.
    fn problem() -> Problem {
        let f = |name: &str, size: u64, access: Access| {
            Field::new(name, "t", size, 8).with_access(access)
        };
        let s = Struct::new(
            "s",
            vec![
                f("r", 40, Access::ReadMostly),
                f("c1", 8, Access::Cold),
                f("a", 40, Access::Lockless { group: None }),
                f("c2", 8, Access::Cold),
                f("c3", 16, Access::Cold),
                f("c4", 8, Access::Cold),
            ],
        );
        Problem::new(&s, false).unwrap()
    }

    fn work() -> Work {
        Work::new(
            crate::solve::DEFAULT_WORK_LIMIT,
            Duration::from_secs(20),
            std::time::Instant::now(),
        )
    }

    fn best_realised(p: &Problem, g: Geometry) -> u64 {
        let orders = gap_fills(p, g, 1_000, &[], &mut work());
        assert!(!orders.is_empty());
        for o in &orders {
            let mut sorted = o.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, p.free, "an order holds every field once");
        }
        orders
            .iter()
            .map(|o| Placer::new(p, g, false).place_all(o).size)
            .min()
            .unwrap()
    }

    #[test]
    fn known_phase_fills_the_gap_exactly() {
        // r at 0..40, 24 B of cold up to the line, a at 64..104, 16 B after.
        assert_eq!(
            best_realised(&problem(), Geometry::at_offset(64, 8, 0)),
            120
        );
    }

    #[test]
    fn unknown_phase_needs_a_gap_of_56_bytes() {
        // Byte 39 may sit at position 7 of its line: a starts 57 bytes on.
        // 40 B of cold fit in the gap, 16 B are padding.
        assert_eq!(best_realised(&problem(), Geometry::aligned(64, 8)), 136);
    }

    #[test]
    fn nothing_better_than_the_cutoff_means_no_order() {
        let p = problem();
        assert!(gap_fills(&p, Geometry::at_offset(64, 8, 0), 120, &[], &mut work()).is_empty());
    }
}
