//! The gap-fill integer program (DESIGN.md §5, "line types").
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
//! The default backend is microlp (pure Rust); with the `highs` feature,
//! HiGHS solves the same model.

use super::construct::hard_blocks;
use super::geometry::{Geometry, Phases};
use super::problem::Problem;
use good_lp::{
    variable, Expression, ProblemVariables, Solution, SolverModel, Variable, WithTimeLimit,
};
use std::time::Instant;

#[cfg(feature = "highs")]
use good_lp::highs as backend;
#[cfg(not(feature = "highs"))]
use good_lp::microlp as backend;

/// Most run orders tried.
const MAX_ORDERS: usize = 3;

/// Orders realised from the program, one per run order where it found a
/// layout smaller than `best_size` (by its own account).
pub(crate) fn gap_fills(
    p: &Problem,
    g: Geometry,
    best_size: u64,
    hints: &[&[usize]],
    deadline: Instant,
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
    let count = orders.len();
    for (k, pi) in orders.into_iter().enumerate() {
        // Each remaining order gets an equal share of what is left.
        let left = deadline
            .saturating_duration_since(Instant::now())
            .as_secs_f64()
            / (count - k) as f64;
        if left <= 0.0 {
            break;
        }
        let runs: Vec<&Vec<usize>> = pi.iter().map(|&j| &blocks[j]).collect();
        if let Some(counts) = solve_model(p, g, &runs, &types, best_size, left) {
            out.push(realise(p, &runs, &types, &counts));
        }
    }
    out
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

/// Solve the program for one run order; the counts `n[k][t]` of its solution.
fn solve_model(
    p: &Problem,
    g: Geometry,
    runs: &[&Vec<usize>],
    types: &[(u64, u64, Vec<usize>)],
    best_size: u64,
    seconds: f64,
) -> Option<Vec<Vec<u64>>> {
    let m = runs.len();
    let line = g.line as f64;
    let mut vars = ProblemVariables::new();
    let n: Vec<Vec<Variable>> = (0..=m)
        .map(|_| {
            types
                .iter()
                .map(|t| vars.add(variable().integer().min(0).max(t.2.len() as f64)))
                .collect()
        })
        .collect();
    let z: Vec<Variable> = (0..m)
        .map(|_| vars.add(variable().integer().min(0)))
        .collect();
    let mu: Vec<Variable> = (0..m - 1)
        .map(|_| vars.add(variable().integer().min(0)))
        .collect();
    let sigma = vars.add(variable().integer().min(0));
    let size = g.align as f64 * sigma;
    let gap =
        |k: usize| -> Expression { types.iter().zip(&n[k]).map(|(t, &v)| t.0 as f64 * v).sum() };
    let start = |j: usize| -> Expression { p_align(p, runs[j]) as f64 * z[j] };
    let len = |j: usize| run_length(p, runs[j]) as f64;
    let mut model = vars
        .minimise(size.clone())
        .using(backend)
        .with_time_limit(seconds);
    for (ti, t) in types.iter().enumerate() {
        let total: Expression = (0..=m).map(|k| n[k][ti]).sum();
        model.add_constraint(total.eq(t.2.len() as f64));
    }
    model.add_constraint(start(0).geq(gap(0)));
    for (j, &mu_j) in mu.iter().enumerate() {
        let end_j = start(j) + len(j);
        model.add_constraint(start(j + 1).geq(end_j.clone() + gap(j + 1)));
        match g.phases {
            Phases::One(ph) => {
                let ph = ph as f64;
                model.add_constraint((line * mu_j).geq(end_j + ph));
                model.add_constraint((start(j + 1) + ph).geq(line * mu_j));
            }
            Phases::EveryMultipleOf(a) => {
                let a = a as f64;
                model.add_constraint((a * mu_j).geq(end_j - a));
                model.add_constraint(start(j + 1).geq(a * mu_j + line));
            }
        }
    }
    model.add_constraint(size.clone().geq(start(m - 1) + len(m - 1) + gap(m)));
    model.add_constraint(size.leq(best_size.saturating_sub(1) as f64));
    let solution = model.solve().ok()?;
    Some(
        n.iter()
            .map(|row| {
                row.iter()
                    .map(|&v| solution.value(v).round().max(0.0) as u64)
                    .collect()
            })
            .collect(),
    )
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

    fn best_realised(p: &Problem, g: Geometry) -> u64 {
        let orders = gap_fills(p, g, 1_000, &[], Instant::now() + Duration::from_secs(20));
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
        let deadline = Instant::now() + Duration::from_secs(20);
        assert!(gap_fills(&p, Geometry::at_offset(64, 8, 0), 120, &[], deadline).is_empty());
    }
}
