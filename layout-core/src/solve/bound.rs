//! Lower bounds on the size of any layout obeying the hard rule, per geometry.
//!
//! Let `H_c` be the bytes of colour `c`, `H = sum H_c` the conflicting bytes,
//! `F` the bytes of free fields, `k` the number of colours present, `L` the
//! line size and `A` the struct alignment of the geometry.
//!
//! 1. Bytes: `S >= H + F`, and `S >=` the end of every pinned field.
//! 2. Lines: lines holding bytes of colour `c` hold nothing of another
//!    colour, so the struct touches at least `K = sum ceil(H_c / L)` lines.
//!    At phase `p` it touches `ceil((p + S) / L)` lines, so
//!    `S >= (K - 1) * L - p + 1` for every phase `p` of the set (the worst is
//!    the smallest phase).
//! 3. Gaps (struct at alignment `a < L`, every phase): between two
//!    consecutive conflicting fields of different colours there are at least
//!    `L - a` bytes that belong to no conflicting field (see
//!    [`super::geometry`]), and the colour changes at least `k - 1` times.
//!    Those gaps hold whole free fields and padding: see [`gap_fill_bound`].
//! 4. Last line: see [`last_line_bound`] (phase 0, less the phase).
//! 5. Lines over all phases (alignment `a < L`): see [`phase_sum_bound`].
//! 6. Cells (every geometry): see [`cell_bound`].
//! 7. Runs (every geometry): the cells of bound 6 with the colour change
//!    to a flexible array member, see [`super::runs`] (from offset 0, the
//!    unpinned fields only).
//!
//! Every bound is rounded up to `A`. The bound over all geometries is the
//! smallest of theirs.

use super::eval::{slot, terms, Key, Term};
use super::geometry::{align_up, Geometry, Phases};
use super::problem::Problem;
use super::runs::{covered_cells, grid, runs_bound, Cover, Left};
use super::{Goal, Preset};

pub(crate) fn size_bound(p: &Problem, g: &Geometry) -> u64 {
    let pin_end = p
        .pinned
        .iter()
        .map(|&i| p.pin[i].unwrap_or(0) + p.size[i])
        .max()
        .unwrap_or(0);
    let mut lb = p.total.max(pin_end);
    let k = p.colors_present() as u64;
    if k >= 2 {
        let line = g.line;
        let lines: u64 = p
            .color_bytes
            .iter()
            .skip(1)
            .map(|&h| h.div_ceil(line))
            .sum();
        let worst_phase = match g.phases {
            Phases::One(ph) => ph,
            Phases::EveryMultipleOf(_) => 0,
            // A layout that holds at every phase of the set holds at its
            // first: that phase's bound is one.
            Phases::Set(set) => set.first(),
        };
        lb = lb.max(((lines - 1) * line + 1).saturating_sub(worst_phase));
        lb = lb.max(last_line_bound(p, line).saturating_sub(worst_phase));
        lb = lb.max(cell_bound(p, g));
        if let Phases::EveryMultipleOf(a) = g.phases {
            lb = lb.max(gap_fill_bound(p, line, a));
            lb = lb.max(phase_sum_bound(p, line, a));
        }
    }
    if p.has_conflicts() {
        lb = lb.max(root_runs_bound(p, g));
    }
    align_up(lb, g.align)
}

/// Bound 7: the runs bound of [`super::runs`] before any field is placed,
/// on the unpinned fields (the pins only add to what they need).
fn root_runs_bound(p: &Problem, g: &Geometry) -> u64 {
    let (w, phase, m) = grid(g);
    let mut bytes = vec![0; p.color_bytes.len()];
    let mut cover = Cover::default();
    for &f in &p.free {
        bytes[p.color[f] as usize] += p.size[f];
        if p.color[f] == 0 {
            cover.change(covered_cells(p.size[f], p.align[f], w, phase), m - 1, true);
        }
    }
    let colours: Vec<(u32, u64, u64)> = bytes
        .iter()
        .enumerate()
        .skip(1)
        .filter(|&(_, &h)| h > 0)
        .map(|(c, &h)| (c as u32, h, 0))
        .collect();
    let left = Left {
        from: 0,
        colours: &colours,
        cover,
        tail: p.tail.map_or(0, |t| p.color[t]),
    };
    runs_bound(g, &left)
}

/// Bytes of each colour present (colour 0, the free fields, left out).
fn colour_bytes(p: &Problem) -> impl Iterator<Item = u64> + '_ {
    p.color_bytes.iter().skip(1).copied().filter(|&h| h > 0)
}

/// Bound 4, at phase 0 (subtract the phase for another): the last line
/// holding conflicting bytes belongs to some colour `z`. Every other colour
/// `c` owns at least `ceil(H_c / L)` whole lines before it, and `z`'s bytes
/// that do not fit its earlier lines sit on that last line, so the last
/// conflicting byte ends at or after
/// `L * sum_{c != z} ceil(H_c / L) + H_z`, for the best choice of `z`.
fn last_line_bound(p: &Problem, line: u64) -> u64 {
    let whole: u64 = colour_bytes(p).map(|h| h.div_ceil(line)).sum();
    colour_bytes(p)
        .map(|h| line * (whole - h.div_ceil(line)) + h)
        .min()
        .unwrap_or(0)
}

/// Bound 3, struct at alignment `a < L`: `k` colours leave at least `k - 1`
/// disjoint gaps of `G = L - a` bytes or more, each holding only whole free
/// fields and padding. A free field of at least `G` bytes fills one gap on
/// its own; smaller ones fill the others at best byte for byte. So of the
/// `(k - 1) G` gap bytes free fields cover at most
/// `G b + min(small, G (k - 1 - b))`, where `b` is the number of gaps the
/// large fields can fill (`min(k - 1, large fields)`) and `small` the bytes
/// of the smaller free fields; the rest is padding, and
/// `S >= H + F + (k - 1) G - cover`. With free bytes divisible at will this
/// is `H + max(F, (k - 1) G)`; whole fields make it larger: a 192-byte free
/// field fills one gap of 56 bytes, and 33 bytes of small ones leave 23 of
/// the other empty.
///
/// Pins sharpen it. A stretch between pinned conflicting fields (or the
/// struct's start) shorter than `G` holds no gap, as a gap holds no
/// conflicting byte; it holds only the colour of the pins around it (any
/// other would share a line with them). So a pinned free field in such a
/// stretch fills no gap, and each hole between pins in it holds fields of
/// that colour and, for the rest, padding or small free fields, which are
/// then missing from the gaps: those bytes ([`short_hole_bytes`]) add to the
/// gap bytes the small free fields must cover.
fn gap_fill_bound(p: &Problem, line: u64, a: u64) -> u64 {
    let colours = colour_bytes(p).count() as u64;
    if colours < 2 || a >= line {
        return p.total;
    }
    let gap = line - a;
    let gaps = colours - 1;
    let in_a_gap =
        |f: usize| p.pin[f].is_none_or(|at| short_stretch(p, at, at + p.size[f], gap).is_none());
    let free = (0..p.n).filter(|&f| p.color[f] == 0 && p.size[f] > 0 && in_a_gap(f));
    let large = free.clone().filter(|&f| p.size[f] >= gap).count() as u64;
    let small: u64 = free.filter(|&f| p.size[f] < gap).map(|f| p.size[f]).sum();
    let need = gap * (gaps - gaps.min(large));
    p.total + (need + short_hole_bytes(p, gap)).saturating_sub(small)
}

/// The colour a stretch of bytes `[start, end)` must keep when the pinned
/// conflicting fields around it (the end of the last one before `start`,
/// or the struct's start; the start of the first one from `end`) are
/// fewer than `gap` bytes apart; `None` when they are not (or no pinned
/// conflicting field follows).
fn short_stretch(p: &Problem, start: u64, end: u64, gap: u64) -> Option<u32> {
    let coloured = p
        .pinned
        .iter()
        .filter(|&&j| p.color[j] != 0 && p.size[j] > 0)
        .filter_map(|&j| p.pin[j].map(|at| (at, at + p.size[j], p.color[j])));
    let before = coloured
        .clone()
        .filter(|&(_, e, _)| e <= start)
        .map(|(_, e, _)| e)
        .max()
        .unwrap_or(0);
    let (after, colour) = coloured
        .filter(|&(s, _, _)| s >= end)
        .map(|(s, _, c)| (s, c))
        .min()?;
    (after - before < gap).then_some(colour)
}

/// Bytes of the holes between pinned fields, in stretches too short for a
/// gap ([`short_stretch`]), that fields of the stretch's colour cannot
/// fill: each hole less the most bytes of that colour's unpinned fields
/// that fit in it (a subset sum, alignment ignored, each hole on its own:
/// all of which can only overstate what fits).
fn short_hole_bytes(p: &Problem, gap: u64) -> u64 {
    let mut pins: Vec<(u64, u64)> = p
        .pinned
        .iter()
        .filter(|&&j| p.size[j] > 0)
        .filter_map(|&j| p.pin[j].map(|at| (at, at + p.size[j])))
        .collect();
    pins.sort_unstable();
    let mut hole_bytes = 0;
    let mut from = 0;
    for (at, end) in pins {
        if at > from {
            if let Some(colour) = short_stretch(p, from, at, gap) {
                let hole = at - from;
                hole_bytes += hole - most_bytes(p, colour, hole);
            }
        }
        from = from.max(end);
    }
    hole_bytes
}

/// The most bytes, at most `room`, that unpinned fields of `colour` add up
/// to.
fn most_bytes(p: &Problem, colour: u32, room: u64) -> u64 {
    let sizes = p
        .free
        .iter()
        .filter(|&&f| p.color[f] == colour)
        .map(|&f| p.size[f]);
    let reach = subset_sums(sizes, room);
    reach.iter().rposition(|&r| r).unwrap_or(0) as u64
}

/// Which totals from 0 to `limit` some of `items` add up to (each used at
/// most once): `sums[t]` for total `t`.
pub(super) fn subset_sums(items: impl IntoIterator<Item = u64>, limit: u64) -> Vec<bool> {
    let limit = limit as usize;
    let mut sums = vec![false; limit + 1];
    sums[0] = true;
    for item in items {
        let item = item as usize;
        if item == 0 || item > limit {
            continue;
        }
        for at in (item..=limit).rev() {
            sums[at] |= sums[at - item];
        }
    }
    sums
}

/// What `large` items of at least `width` units each and `small` units of
/// smaller ones leave empty in `gaps` gaps of `width` units, at the least:
/// a large item fills one gap on its own, the small units fill the rest one
/// for one.
fn unfilled(gaps: u64, width: u64, large: u64, small: u64) -> u64 {
    let filled = gaps.min(large);
    let cover = width * filled + small.min(width * (gaps - filled));
    width * gaps - cover
}

/// Bound 6: cut the struct into cells — the lines at one phase `p`
/// (`w = L`, colours `m = 1` cell apart), or, at alignment `a < L` and
/// every phase, the `a`-byte units (`w = a`; bytes of two colours must be
/// `m = L / a` cells apart, see [`super::lines`]). Colour `c` touches at
/// least `ceil(H_c / w)` cells of its own. A free field of `s >= w` bytes
/// covers at least `floor((s + t - w) / w)` whole cells, which hold nothing
/// else (`t`: its alignment when cells start at multiples of it, else 1;
/// it starts at least `t` bytes into a cell or at its start). Between the
/// runs of different colours lie `k - 1` stretches of at least `m - 1`
/// cells with no colour. The cells a field covers are consecutive, so they
/// lie in one stretch at most; as in [`gap_fill_bound`], a field covering
/// `m - 1` cells or more fills a stretch, the others fill the rest cell for
/// cell, and what none fills adds its cells. With `N` the sum of all that,
/// the cells cut at `S`, `ceil((S + p) / w)`, are at least `N`:
/// `S >= (N - 1) w - p + 1`. It counts what the lines-over-all-phases
/// bound counts, plus the cells large free fields cover: a 192-byte free
/// field covers 5 of the 32-byte cells, which no colour may use.
fn cell_bound(p: &Problem, g: &Geometry) -> u64 {
    let (w, phase, m) = match g.phases {
        Phases::One(ph) => (g.line, ph, 1),
        Phases::Set(set) => (g.line, set.first(), 1),
        Phases::EveryMultipleOf(a) => (a, 0, g.line / a),
    };
    let colours = colour_bytes(p).count() as u64;
    if colours == 0 || w == 0 {
        return 0;
    }
    let colour_cells: u64 = colour_bytes(p).map(|h| h.div_ceil(w)).sum();
    let stretch = m - 1;
    let stretches = colours - 1;
    // Cells covered; fields covering a whole stretch; cells the others cover.
    let (mut covered, mut large, mut small) = (0, 0, 0);
    for f in (0..p.n).filter(|&f| p.color[f] == 0) {
        let a = p.align[f].max(1);
        let t = if w % a == 0 && phase % a == 0 { a } else { 1 };
        let cells = (p.size[f] + t).saturating_sub(w) / w;
        covered += cells;
        if cells >= stretch {
            large += 1;
        } else {
            small += cells;
        }
    }
    let cells = colour_cells + covered + unfilled(stretches, stretch, large, small);
    ((cells - 1) * w + 1).saturating_sub(phase)
}

/// Bound 5, struct at alignment `a < L` (the rule at every phase that is a
/// multiple of `a`): sum, over those `L / a` phases, the lines each colour
/// touches. At phase `p` a line boundary falls before struct byte `m` when
/// `m + p` is a multiple of `L`; each multiple `m` of `a` is such a boundary
/// at exactly one phase. A colour whose bytes span `b_1 < ... < b_h` touches
/// one line plus one per phase and per pair of consecutive bytes
/// `(b_i, b_i+1]` holding a boundary; over the phases that is at least
/// `L / a + floor((H_c - 1) / a)` (a pair with a long gap counts `L / a`,
/// which pays for what splitting the colour there loses, at most 1). The
/// lines of different colours are distinct, and the struct touches
/// `L / a + floor((S - 1) / a)` lines over the phases, so
/// `floor((S - 1) / a) >= (k - 1) L / a + sum_c floor((H_c - 1) / a)`.
fn phase_sum_bound(p: &Problem, line: u64, a: u64) -> u64 {
    let colours = colour_bytes(p).count() as u64;
    if colours == 0 {
        return 0;
    }
    let cuts: u64 = (colours - 1) * (line / a) + colour_bytes(p).map(|h| (h - 1) / a).sum::<u64>();
    a * cuts + 1
}

/// Lines any layout needs for the read-mostly bytes.
pub(crate) fn read_lines_bound(p: &Problem, line: u64) -> u64 {
    p.read_bytes.div_ceil(line)
}

/// Lines each hot path needs at any layout: `ceil(bytes / L)`, counting
/// each member's bytes on the path once. One pass over the uses, grouped by
/// member and path.
pub(crate) fn path_bounds(p: &Problem, line: u64) -> Vec<u64> {
    let mut bytes = vec![0u64; p.path_names];
    let mut spans: Vec<(u32, u64, u64)> = Vec::new();
    for uses in &p.uses {
        spans.clear();
        spans.extend(
            uses.iter()
                .filter(|u| u.bytes.end > u.bytes.start)
                .map(|u| (u.path, u.bytes.start, u.bytes.end)),
        );
        spans.sort_unstable();
        for run in spans.chunk_by(|a, b| a.0 == b.0) {
            bytes[run[0].0 as usize] += covered(run.iter().map(|&(_, s, e)| (s, e)));
        }
    }
    bytes.iter().map(|b| b.div_ceil(line)).collect()
}

/// Bytes the sorted half-open ranges cover, overlaps once.
fn covered(sorted: impl Iterator<Item = (u64, u64)>) -> u64 {
    let (mut total, mut to) = (0, 0);
    for (s, e) in sorted {
        let s = s.max(to);
        if e > s {
            total += e - s;
            to = e;
        }
    }
    total
}

/// The bounds every goal is measured against.
pub(super) struct Proof {
    pub lower: u64,
    pub read: u64,
    /// Sum of the hot paths' bounds.
    pub paths: u64,
    /// A bound on the churn (0 unless proven otherwise).
    pub churn: u64,
    /// (alignment, size bound) of each geometry.
    pub geoms: Vec<(u64, u64)>,
    pub preset: Preset,
}

impl Proof {
    /// Does key `k` meet every bound? With `movement_last_free`, movement
    /// need not when it is the preset's last goal.
    pub fn meets(&self, k: &Key, movement_last_free: bool) -> bool {
        let goals = self.preset.goals();
        let free = usize::from(movement_last_free && goals.last() == Some(&Goal::Movement));
        self.proven_goals(k) >= goals.len() - free
    }

    /// How many of the preset's leading goals `k` proves optimal by meeting
    /// their bounds (a goal counts only when all before it do).
    pub fn proven_goals(&self, k: &Key) -> usize {
        self.proven_goals_after(k, 0)
    }

    /// Like [`Proof::proven_goals`] when the first `known` terms of the key
    /// are already proven (by a finished search on them).
    pub fn proven_goals_after(&self, k: &Key, known: usize) -> usize {
        let size = slot(self.preset, Term::Goal(Goal::Size)).map_or(0, |s| k[s]);
        let mut proven = 0;
        for (i, t) in terms(self.preset).iter().enumerate() {
            if i < known {
                proven += usize::from(matches!(t, Term::Goal(_)));
                continue;
            }
            let ok = match t {
                Term::OverCap | Term::Pad => {
                    if k[i] != 0 {
                        return proven;
                    }
                    continue;
                }
                // No smaller alignment could reach this size.
                Term::Align => {
                    if self
                        .geoms
                        .iter()
                        .all(|&(align, lb)| align >= k[i] || lb > size)
                    {
                        continue;
                    }
                    return proven;
                }
                Term::Goal(g) => {
                    k[i] == match g {
                        Goal::Size => self.lower,
                        Goal::ReadLines => self.read,
                        Goal::PathLines => self.paths,
                        Goal::Churn => self.churn,
                        Goal::Soft | Goal::Movement => 0,
                    }
                }
            };
            if !ok {
                return proven;
            }
            proven += 1;
        }
        proven
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Access, Field, Placement, Struct};
    use crate::solve::budget::Work;
    use crate::solve::geometry::candidates;
    use crate::solve::geometry::tests::phase_list;
    use crate::solve::lines::no_layout_within;
    use std::time::{Duration, Instant};

    /// The smallest size over every order, each field at the smallest
    /// offset (a multiple of its alignment, after the previous field) that
    /// keeps every earlier field of another colour on an earlier line at
    /// every phase, and a flexible array member last, at or after every
    /// field's end, its first byte on a later line than every field of
    /// another colour: the definition, independent of the solver.
    fn brute_min(p: &Problem, g: &Geometry) -> u64 {
        let phases = phase_list(g);
        let shares = |placed: &[(u64, u64, u32)], x: u64, colour: u32| {
            placed.iter().any(|&(s, e, c)| {
                c != 0
                    && colour != 0
                    && c != colour
                    && e > s
                    && phases
                        .iter()
                        .any(|&ph| (ph + e - 1) / g.line >= (ph + x) / g.line)
            })
        };
        let mut order: Vec<usize> = (0..p.n).filter(|&f| p.tail != Some(f)).collect();
        let mut best = u64::MAX;
        crate::solve::test_support::permute(&mut order, 0, &mut |order| {
            let mut placed: Vec<(u64, u64, u32)> = Vec::new();
            let mut end = 0;
            for &f in order.iter() {
                let mut x = align_up(end, p.align[f]);
                while p.size[f] > 0 && shares(&placed, x, p.color[f]) {
                    x += p.align[f];
                }
                end = x + p.size[f];
                placed.push((x, end, p.color[f]));
            }
            if let Some(t) = p.tail {
                let mut x = align_up(end, p.align[t]);
                while shares(&placed, x, p.color[t]) {
                    x += p.align[t];
                }
                end = end.max(x);
            }
            best = best.min(align_up(end, g.align));
        });
        best
    }

    /// Every bound, and every size line packing proves out of reach
    /// ([`crate::solve::lines::no_layout_within`]), against the exhaustive
    /// optimum of 400 random small structs at every geometry.
    #[test]
    fn no_bound_exceeds_the_exhaustive_optimum() {
        let mut next = crate::solve::test_support::rng(0x2545_F491_4F6C_DD1Du64);
        let mut tight = 0;
        let mut proofs = 0;
        for case in 0..400 {
            let n = 2 + next(4) as usize;
            let fields: Vec<Field> = (0..n)
                .map(|i| {
                    let access = match next(5) {
                        0 | 1 => Access::ReadMostly,
                        2 => Access::Lockless { group: None },
                        3 => Access::Lockless {
                            group: Some("g".into()),
                        },
                        _ => Access::Cold,
                    };
                    let align = [1, 2, 4, 8][next(4) as usize];
                    let span = if next(4) == 0 { 12 } else { 3 };
                    let size = align * (1 + next(span));
                    Field::new(format!("f{i}"), "t", size, align).with_access(access)
                })
                .collect();
            let mut s = Struct::new("s", fields);
            // A third end in a flexible array member of some class.
            if case % 3 == 0 {
                let tail = s.fields.len() - 1;
                s.fields[tail].size = 0;
                s.fields[tail].ty = "u8[]".into();
            }
            let p = Problem::new(&s, false).unwrap();
            let line = [16, 32][case % 2];
            let mut geoms = candidates(line, p.natural_align, Placement::Aligned, true);
            let step = p.natural_align as usize;
            geoms.extend(
                (0..line)
                    .step_by(step)
                    .map(|o| Geometry::at_offset(line, p.natural_align, o)),
            );
            for g in &geoms {
                let (lb, opt) = (size_bound(&p, g), brute_min(&p, g));
                assert!(lb <= opt, "bound {lb} > optimum {opt} at {g:?}: {s:?}");
                tight += usize::from(lb == opt);
                let mut work = Work::new(10_000_000, Duration::from_secs(60), Instant::now());
                assert!(
                    !no_layout_within(&p, *g, opt, &mut work),
                    "packing proves no layout of the optimum {opt} at {g:?}: {s:?}"
                );
                if opt > lb && no_layout_within(&p, *g, opt - g.align, &mut work) {
                    proofs += 1;
                }
            }
        }
        // The bounds are not trivially low: most of them are exact here,
        // and packing proves the optimum where they are not.
        assert!(tight > 1000, "only {tight} tight");
        assert!(proofs > 50, "only {proofs} proofs");
    }

    #[test]
    fn path_bounds_and_the_work_of_an_evaluation_count_each_name_once() {
        use crate::model::PathUse;
        let with = |mut f: Field, uses: &[(u32, std::ops::Range<u64>)]| {
            f.paths = uses
                .iter()
                .map(|(path, bytes)| PathUse {
                    path: *path,
                    bytes: bytes.clone(),
                })
                .collect();
            f
        };
        let mut s = Struct::new(
            "s",
            vec![
                // Path 0: 8 bytes of `a` (two overlapping names), all of `b`.
                with(Field::new("a", "u64", 8, 8), &[(0, 0..6), (0, 4..8)]),
                with(Field::new("b", "char[60]", 60, 1), &[(0, 0..60)]),
                // Path 1: `c`, and an empty range that touches nothing.
                with(Field::new("c", "u64", 8, 8), &[(1, 0..8), (1, 3..3)]),
            ],
        );
        s.paths = vec!["tx".into(), "rx".into()];
        let p = Problem::new(&s, false).unwrap();
        assert_eq!(path_bounds(&p, 64), vec![2, 1]);
        assert_eq!(p.by_path.iter().map(Vec::len).collect::<Vec<_>>(), [3, 1]);
        // One unit, one per member, one per non-empty name, one per path.
        assert_eq!(p.eval_work(), 1 + 3 + 4 + 2);
        s.paths.clear();
        for f in &mut s.fields {
            f.paths.clear();
        }
        assert_eq!(Problem::new(&s, false).unwrap().eval_work(), 1 + 3);
    }
}
