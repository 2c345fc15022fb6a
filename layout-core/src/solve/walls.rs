//! Line walls: a struct cut by line-aligned walls is a row of independent
//! parts.
//!
//! A *line wall* is a zero-size member that is a wall of the author's
//! ([`crate::segments::is_wall`]: no member crosses it) and is aligned to
//! the line or more (`__cacheline_group_begin_aligned`, a line-aligned
//! zero-length array). Every layout puts it on a line boundary, with the
//! members declared before it on lower lines and the members after it on
//! higher ones, so no line holds members of two parts, and each part starts
//! at phase 0. The parts are therefore independent problems: with `E_k` the
//! smallest extent of part `k` laid out alone at offset 0,
//!
//! `S >= sum_{k < last} ceil(E_k / L) * L + E_last`
//!
//! and a layout made of each part's smallest one, walls between, reaches
//! it. [`split`] solves every part alone (a solve of its own, on a share of
//! the work budget) and returns the bound from the parts' proven bounds and
//! the order made of their best layouts, which seeds the whole search. A
//! part's problem drops what the whole keeps across parts (line breaks,
//! blocks, declaration lists, hot paths, and pins outside the first part):
//! fewer constraints only lower its bound, so the bound stays a bound, and
//! the seed order is checked like any other candidate.

use super::budget::Work;
use super::problem::Problem;
use super::{solve, Preset, SolveOptions};
use crate::model::{Placement, Struct};
use crate::segments::is_wall;

/// The bound and the seed from solving every part alone.
pub(super) struct Split {
    /// A lower bound on the extent of the whole struct (before rounding to
    /// the struct's alignment).
    pub bound: u64,
    /// An order of the free fields (walls included) made of each part's
    /// best layout.
    pub order: Vec<usize>,
}

/// The line walls of `s`, in declaration order.
fn line_walls(s: &Struct, p: &Problem, line: u64) -> Vec<usize> {
    let tail = s.flexible_tail();
    (0..s.fields.len())
        .filter(|&i| {
            let f = &s.fields[i];
            f.size == 0
                && f.align >= line
                && is_wall(f)
                && !s.breaks.contains(&i)
                && Some(i) != tail
                && p.pin[i].is_none()
        })
        .collect()
}

/// Solves each part between line walls alone; `None` when `s` has no line
/// wall or a part could not be solved.
pub(super) fn split(
    s: &Struct,
    p: &Problem,
    opts: &SolveOptions,
    work: &mut Work,
) -> Option<Split> {
    let line = opts.line;
    let walls = line_walls(s, p, line);
    if walls.is_empty() {
        return None;
    }
    // The parts: the fields between consecutive walls, in declaration order.
    let mut parts: Vec<Vec<usize>> = vec![Vec::new()];
    for i in 0..s.fields.len() {
        if walls.contains(&i) {
            parts.push(Vec::new());
        } else {
            parts.last_mut()?.push(i);
        }
    }
    let share = work.remaining() / (2 * parts.len() as u64);
    let mut bound = 0u64;
    let mut order = Vec::new();
    let last = parts.len() - 1;
    for (k, part) in parts.iter().enumerate() {
        if k > 0 {
            order.push(walls[k - 1]);
        }
        if part.is_empty() {
            continue;
        }
        let sub = part_struct(s, part, k == 0);
        let sub_opts = SolveOptions {
            placement: Placement::Offset(0),
            work_limit: share,
            time_limit: work.time_left().unwrap_or(std::time::Duration::MAX),
            preset: Preset::Balanced,
            ..opts.clone()
        };
        let sol = solve(&sub, &sub_opts).ok()?;
        work.spend(sol.work);
        if sol.stopped_by_time {
            work.mark_timed_out();
        }
        let extent = sol.lower_bound;
        bound += if k < last {
            extent.div_ceil(line) * line
        } else {
            extent
        };
        order.extend(
            sol.layout
                .layout()
                .slots
                .iter()
                .map(|sl| part[sl.field])
                .filter(|&f| p.pin[f].is_none() && p.tail != Some(f)),
        );
    }
    Some(Split { bound, order })
}

/// Part `part` of `s` as a struct of its own: its fields (segments kept),
/// pins only in the first part, nothing that spans parts.
fn part_struct(s: &Struct, part: &[usize], first: bool) -> Struct {
    let fields = part
        .iter()
        .map(|&i| {
            let mut f = s.fields[i].clone();
            f.paths.clear();
            f.pinned &= first;
            f
        })
        .collect();
    Struct::new(format!("{}.part", s.name), fields)
}

#[cfg(test)]
mod tests {
    use super::split;
    use crate::model::{Access, Field, Placement, Struct};
    use crate::segments::{assign, Keep};
    use crate::solve::budget::Work;
    use crate::solve::problem::Problem;
    use crate::solve::{solve, SolveOptions};
    use std::time::{Duration, Instant};

    /// The smallest size over every order that keeps the segments, each
    /// field as early as its alignment and the colours (phase 0) allow:
    /// an oracle that knows nothing of parts.
    fn brute_min(s: &Struct, line: u64) -> u64 {
        let n = s.fields.len();
        let colour = |f: &Field| match f.access {
            Access::ReadMostly => 1,
            Access::Lockless { .. } => 2,
            _ => 0,
        };
        let mut best = u64::MAX;
        let mut order: Vec<usize> = (0..n).collect();
        crate::solve::test_support::permute(&mut order, 0, &mut |order| {
            if order
                .windows(2)
                .any(|w| s.fields[w[0]].segment > s.fields[w[1]].segment)
            {
                return;
            }
            let mut placed: Vec<(u64, u64, u32)> = Vec::new();
            let mut end = 0u64;
            for &i in order {
                let f = &s.fields[i];
                let mut x = end.div_ceil(f.align) * f.align;
                let c = colour(f);
                while placed.iter().any(|&(a, e, d)| {
                    c != 0 && d != 0 && c != d && e > a && (e - 1) / line >= x / line
                }) {
                    x += f.align;
                }
                end = x + f.size;
                placed.push((x, end, c));
            }
            best = best.min(end.div_ceil(s.natural_align()) * s.natural_align());
        });
        best
    }

    /// Random structs of up to six members and one or two line walls: the
    /// solver's size is the exhaustive optimum, its bound never above it,
    /// and the parts' bounds prove it.
    #[test]
    fn parts_between_line_walls_reach_and_prove_the_exhaustive_optimum() {
        let mut next = crate::solve::test_support::rng(0x5851_F42D_4C95_7F2Du64);
        let mut proven = 0;
        for case in 0..150 {
            let line = [16u64, 32][case % 2];
            let members = 3 + next(4) as usize;
            let walls = 1 + next(2) as usize;
            let mut fields: Vec<Field> = (0..members)
                .map(|i| {
                    let access = match next(4) {
                        0 | 1 => Access::ReadMostly,
                        2 => Access::Lockless { group: None },
                        _ => Access::Cold,
                    };
                    let align = [1, 2, 4][next(3) as usize];
                    let span = if next(4) == 0 { 8 } else { 3 };
                    let size = align * (1 + next(span));
                    Field::new(format!("f{i}"), "t", size, align).with_access(access)
                })
                .collect();
            for w in 0..walls {
                let at = 1 + next(members as u64 - 1) as usize;
                let wall = Field::new(format!("w{w}"), "u8[0]", 0, line).with_access(Access::Cold);
                fields.insert(at, wall);
            }
            let mut s = Struct::new("s", fields);
            assign(
                &mut s,
                Keep {
                    first: false,
                    line_breaks: false,
                },
            );
            let opts = SolveOptions {
                line,
                placement: Placement::Aligned,
                ..SolveOptions::default()
            };
            let best = brute_min(&s, line);
            let p = Problem::new(&s, false).unwrap();
            let mut work = Work::new(10_000_000, Duration::from_secs(60), Instant::now());
            let parts = split(&s, &p, &opts, &mut work).expect("parts");
            let bound = parts.bound.div_ceil(line) * line;
            assert!(bound <= best, "parts bound {bound} > optimum {best}: {s:?}");
            proven += usize::from(bound == best);
            let sol = solve(&s, &opts).unwrap();
            assert_eq!(sol.layout.layout().size, best, "{s:?}");
            assert_eq!(sol.lower_bound, best, "{s:?}");
        }
        // The parts' bounds alone are the optimum almost always.
        assert!(proven >= 140, "only {proven} of 150 tight");
    }
}
