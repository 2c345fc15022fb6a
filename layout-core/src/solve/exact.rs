//! Exact search for small structs: branch and bound over the order of the
//! unpinned fields, each order placed by the greedy placer (optimal for its
//! order, see [`super::place`]), on the full lexicographic key.
//!
//! Interchangeable fields (same size, alignment and access) are one type;
//! they are taken in declaration order, which never costs movement. At every
//! node the key of any completion is bounded below, term by term:
//!
//! - size: the bytes still to come after the cursor (remaining fields and
//!   the pins ahead of it), the geometry's bound, the pins' ends, and the
//!   lines the remaining colours need after the cursor (up to the last
//!   line's bytes, and summed over every phase when the phase is unknown:
//!   the bounds 4 and 5 of [`super::bound`] on what is left), a flexible
//!   array member's separation from every other colour, and the cells
//!   what is left needs with the colour change to the array
//!   ([`super::runs`]);
//! - soft cost and read lines: the lines already touched by placed and
//!   pinned fields (a line's cost only grows as fields join it);
//! - movement: inversions among placed fields, plus every pair of a placed
//!   field and an unplaced field declared before it (the unplaced one will
//!   come after it);
//! - hot-path lines: the lines the placed fields' path bytes already touch;
//! - churn: `n` minus the longest order-keeping subsequence any completion
//!   can have: an increasing run of the placed prefix ending at `v`, then
//!   every unplaced field declared after `v`.
//!
//! With segments ([`crate::model::Field::segment`]), only fields of the
//! lowest segment with unplaced fields are branched on, and only those the
//! tree lets follow the prefix ([`Problem::may_follow`]: the open block
//! first, the line breaks in order), so every order searched keeps the
//! author's constraints.
//!
//! A node whose bound is not below the incumbent's key is cut. Since the
//! final key is at least the bound in every term, it is at least the bound
//! lexicographically.

use super::budget::Work;
use super::eval::{key_of, Evaluator, Key};
use super::geometry::{align_up, Geometry, Phases};
use super::place::{Cursor, Placed, Placer};
use super::problem::Problem;
use super::runs::{covered_cells, grid, runs_bound, Cover, Left};
use super::Incumbent;
use crate::cost::Cost;

/// Groups of interchangeable unpinned fields, each in declaration order.
pub(crate) fn types(p: &Problem) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for &f in &p.free {
        let same = |g: usize| {
            p.size[g] == p.size[f]
                && p.align[g] == p.align[f]
                && p.color[g] == p.color[f]
                && p.class[g] == p.class[f]
                && p.role[g] == p.role[f]
                && p.segment[g] == p.segment[f]
                && p.tree.interchangeable(g, f)
                && p.uses[g] == p.uses[f]
        };
        match out.iter_mut().find(|t| same(t[0])) {
            Some(t) => t.push(f),
            None => out.push(vec![f]),
        }
    }
    out
}

/// Number of distinct orders of the unpinned fields (saturating, as f64).
pub(crate) fn order_count(types: &[Vec<usize>]) -> f64 {
    let mut n = 0u32;
    let mut count = 1f64;
    for t in types {
        for k in 1..=t.len() as u32 {
            n += 1;
            count = count * f64::from(n) / f64::from(k);
        }
    }
    count
}

pub(crate) struct Limits {
    pub max_nodes: u64,
    /// A key term the search does not try to improve (movement, when only
    /// the terms before it are to be proven): it compares keys without it.
    pub blind_slot: Option<usize>,
    /// Only the first `cmp_len` terms are searched (the rest compare equal):
    /// e.g. up to the size and alignment, to prove the size alone.
    pub cmp_len: usize,
}

impl Limits {
    fn masked(&self, k: &Key) -> Key {
        let mut k = *k;
        if let Some(slot) = self.blind_slot {
            k[slot] = 0;
        }
        k[self.cmp_len.min(super::eval::KEY_LEN)..]
            .iter_mut()
            .for_each(|t| *t = 0);
        k
    }
}

struct Search<'a, 'p> {
    p: &'p Problem,
    placer: Placer<'p>,
    ev: &'a mut Evaluator<'p>,
    bound: u64,
    types: Vec<Vec<usize>>,
    taken: Vec<usize>,
    seq: Vec<usize>,
    offset: Vec<u64>,
    /// Sizes of the pins, by increasing start, for "bytes ahead".
    pins: Vec<(u64, u64)>,
    /// Bytes of unplaced unpinned fields, per colour.
    rem_color: Vec<u64>,
    nodes: u64,
    limits: &'a Limits,
    work: &'a mut Work,
    /// Work charged per node.
    unit: u64,
    stopped: bool,
    /// Does the key hold the churn (then its bound is computed)?
    churn: bool,
    /// Longest order-keeping run of `seq` ending at each of its fields.
    run_end: Vec<u32>,
    /// Which free fields are placed, by field index.
    placed: Vec<bool>,
    /// Whole cells each free field covers in the geometry's grid
    /// ([`super::runs`]), by field index, and a stretch's cells.
    cells_of: Vec<u64>,
    stretch: u64,
    /// The unplaced free fields, as the runs bound sees them.
    cover: Cover,
    /// The children of a node at each depth (`children[seq.len()]`), kept
    /// from node to node so that a node allocates nothing.
    children: Vec<Vec<(usize, usize)>>,
}

/// Run the search on every geometry (`bounds[i]` is the size bound of
/// `geoms[i]`), improving `best`. Returns true when it finished: the
/// incumbent is then optimal.
pub(crate) fn branch_and_bound<'p>(
    p: &'p Problem,
    geoms: &[Geometry],
    bounds: &[u64],
    ev: &mut Evaluator<'p>,
    best: &mut Option<Incumbent>,
    limits: &Limits,
    work: &mut Work,
) -> bool {
    let types = types(p);
    let pins: Vec<(u64, u64)> = p
        .pinned
        .iter()
        .map(|&i| (p.pin[i].unwrap_or(0), p.size[i]))
        .collect();
    let mut nodes = 0;
    let churn = ev.preset().goals().contains(&super::Goal::Churn);
    for (g, &bound) in geoms.iter().zip(bounds) {
        let (w, phase, m) = grid(g);
        let cells_of: Vec<u64> = (0..p.n)
            .map(|f| covered_cells(p.size[f], p.align[f], w, phase))
            .collect();
        let mut cover = Cover::default();
        for &f in p.free.iter().filter(|&&f| p.color[f] == 0) {
            cover.change(cells_of[f], m - 1, true);
        }
        let mut s = Search {
            p,
            placer: Placer::new(p, *g, false),
            ev: &mut *ev,
            bound,
            taken: vec![0; types.len()],
            types: types.clone(),
            seq: Vec::with_capacity(p.free.len()),
            offset: vec![0; p.n],
            pins: pins.clone(),
            rem_color: {
                let mut r = vec![0; p.color_bytes.len()];
                for &f in &p.free {
                    r[p.color[f] as usize] += p.size[f];
                }
                r
            },
            nodes,
            limits,
            work: &mut *work,
            // A node places a field and bounds the hot paths' lines.
            unit: 1 + p.n as u64 / 8 + p.path_work,
            stopped: false,
            churn,
            run_end: Vec::with_capacity(p.free.len()),
            placed: vec![false; p.n],
            cells_of,
            stretch: m - 1,
            cover,
            children: vec![Vec::new(); p.free.len() + 1],
        };
        for &i in &p.pinned {
            s.offset[i] = p.pin[i].unwrap_or(0);
        }
        let cur = s.placer.start();
        let rem: u64 = p.free.iter().map(|&f| p.size[f]).sum();
        s.dfs(cur, rem, 0, best);
        nodes = s.nodes;
        if s.stopped {
            return false;
        }
    }
    true
}

impl<'a, 'p> Search<'a, 'p> {
    fn dfs(&mut self, cur: Cursor, rem: u64, mv: u64, best: &mut Option<Incumbent>) {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes || !self.work.spend(self.unit) {
            self.stopped = true;
        }
        if self.stopped {
            return;
        }
        let g = self.placer.g;
        if self.seq.len() == self.p.free.len() {
            if self.p.segmented && !self.p.in_segment_order(&self.seq) {
                // The prefix rule prunes; the whole order is checked here.
                return;
            }
            let mut cur = cur;
            if let Some(t) = self.p.tail {
                self.offset[t] = self.placer.place_tail(&mut cur);
            }
            let size = align_up(cur.max_end, g.align);
            let placed = Placed {
                offset: self.offset.clone(),
                end: cur.max_end,
                size,
                late: cur.late,
                order: self.placer.merge(&self.seq, &self.offset),
            };
            let key = self.ev.key(&placed, &g);
            if best
                .as_ref()
                .is_none_or(|b| self.limits.masked(&key) < self.limits.masked(&b.key))
            {
                *best = Some(Incumbent {
                    key,
                    size,
                    geom: g,
                    order: self.seq.clone(),
                    method: super::Method::Heuristic,
                });
            }
            return;
        }
        if let Some(b) = best {
            let lower = self.lower_key(&cur, rem, mv);
            if self.limits.masked(&lower) >= self.limits.masked(&b.key) {
                return;
            }
        }
        let depth = self.seq.len();
        let mut next = std::mem::take(&mut self.children[depth]);
        self.children_of_node(&mut next);
        for &(f, t) in &next {
            let mut c = cur;
            self.offset[f] = self.placer.place(&mut c, f);
            if c.late {
                // Past a pinned field of a later segment: so is every
                // completion (fields only move later).
                continue;
            }
            // New pairs (f, unplaced earlier-declared field) that must invert.
            let earlier_unplaced = self
                .types
                .iter()
                .zip(&self.taken)
                .map(|(ty, &k)| ty[k..].iter().filter(|&&h| h < f).count() as u64)
                .sum::<u64>();
            let color = self.p.color[f] as usize;
            self.taken[t] += 1;
            self.rem_color[color] -= self.p.size[f];
            if color == 0 {
                self.cover.change(self.cells_of[f], self.stretch, false);
            }
            if self.churn {
                let run = self
                    .seq
                    .iter()
                    .zip(&self.run_end)
                    .filter(|&(&u, _)| u < f)
                    .map(|(_, &r)| r)
                    .max()
                    .unwrap_or(0);
                self.run_end.push(run + 1);
            }
            self.placed[f] = true;
            self.seq.push(f);
            self.dfs(c, rem - self.p.size[f], mv + earlier_unplaced, best);
            self.seq.pop();
            if self.churn {
                self.run_end.pop();
            }
            self.placed[f] = false;
            if color == 0 {
                self.cover.change(self.cells_of[f], self.stretch, true);
            }
            self.rem_color[color] += self.p.size[f];
            self.taken[t] -= 1;
            if self.stopped {
                break;
            }
        }
        self.children[depth] = next;
    }

    /// The children of the node (each type's next field, earliest-declared
    /// first, in the lowest segment with fields left), in `next`.
    fn children_of_node(&self, next: &mut Vec<(usize, usize)>) {
        next.clear();
        next.extend(
            (0..self.types.len())
                .filter(|&t| self.taken[t] < self.types[t].len())
                .map(|t| (self.types[t][self.taken[t]], t)),
        );
        if self.p.segmented {
            let low = next.iter().map(|&(f, _)| self.p.segment[f]).min();
            next.retain(|&(f, _)| Some(self.p.segment[f]) == low);
            next.retain(|&(f, _)| self.p.may_follow(&self.seq, &self.placed, f));
        }
        next.sort_unstable();
    }

    /// A bound on the end of the last byte of any completion of the node.
    fn end_bound(&self, cur: &Cursor, rem: u64) -> u64 {
        let g = self.placer.g;
        let ahead: u64 = self
            .pins
            .iter()
            .filter(|&&(start, _)| start >= cur.end)
            .map(|&(_, size)| size)
            .sum();
        let mut end = cur.max_end.max(cur.end + rem + ahead);
        // The first remaining field of colour c starts after the separation
        // from the placed fields of other colours; the rest of c follows.
        let (mut colors, mut hard) = (0, 0);
        for (c, &bytes) in self.rem_color.iter().enumerate().skip(1) {
            if bytes > 0 {
                colors += 1;
                hard += bytes;
                let start = cur.end.max(g.sep_start(cur.end_of_other_colors(c as u32)));
                end = end.max(start + bytes);
            }
        }
        // Unknown phase: every colour change among them leaves a gap of at
        // least L - a bytes that only free fields, pins or padding fill.
        if let Phases::EveryMultipleOf(a) = g.phases {
            if colors >= 2 {
                let fillers = self.rem_color[0] + ahead;
                end = end.max(cur.end + hard + fillers.max((colors - 1) * (g.line - a)));
            }
        }
        if colors >= 1 {
            end = end.max(self.lines_bound(cur));
            if let Phases::EveryMultipleOf(a) = g.phases {
                end = end.max(self.phase_sum_bound(cur, a));
            }
        }
        end.max(self.tail_bound(cur))
    }

    /// A flexible array member of a colour comes after every field, on a
    /// later line (at every phase) than the last byte of every other
    /// colour, placed or left; and the runs bound ([`super::runs`]) on
    /// the cells what is left needs, with the colour change to the array.
    fn tail_bound(&self, cur: &Cursor) -> u64 {
        let g = self.placer.g;
        let tail = self.p.tail.map_or(0, |t| self.p.color[t]);
        let colours: Vec<(u32, u64, u64)> = self
            .rem_color
            .iter()
            .enumerate()
            .skip(1)
            .filter(|&(_, &bytes)| bytes > 0)
            .map(|(c, &bytes)| {
                let start = cur.end.max(g.sep_start(cur.end_of_other_colors(c as u32)));
                (c as u32, bytes, start)
            })
            .collect();
        let mut end = 0;
        if tail != 0 {
            end = g.sep_start(cur.end_of_other_colors(tail));
            for &(_, bytes, start) in colours.iter().filter(|&&(c, _, _)| c != tail) {
                end = end.max(g.sep_start(start + bytes));
            }
        }
        let left = Left {
            from: cur.end,
            colours: &colours,
            cover: self.cover,
            tail,
        };
        end.max(runs_bound(&g, &left))
    }

    /// The root's phase-sum bound ([`super::bound`], bound 5) on what is
    /// left: every remaining conflicting byte lies at or after `s0`, the
    /// earliest start any remaining colour may take. Over the `L / a`
    /// phases the remaining colours touch at least
    /// `sum_c (L / a + floor((h_c - 1) / a))` distinct lines, all within
    /// `[s0, end)`, which touches `L / a + floor((end - 1) / a) - floor(s0 / a)`.
    fn phase_sum_bound(&self, cur: &Cursor, a: u64) -> u64 {
        let g = self.placer.g;
        let (mut colors, mut cuts) = (0u64, 0u64);
        let mut s0 = u64::MAX;
        for (c, &bytes) in self.rem_color.iter().enumerate().skip(1) {
            if bytes > 0 {
                colors += 1;
                cuts += (bytes - 1) / a;
                s0 = s0.min(cur.end.max(g.sep_start(cur.end_of_other_colors(c as u32))));
            }
        }
        if colors == 0 {
            return 0;
        }
        a * (s0 / a + (colors - 1) * (g.line / a) + cuts) + 1
    }

    /// Lines at one phase `q` (the geometry's, or 0, which every aligned
    /// geometry must also hold at): every remaining byte of colour `c` sits
    /// on the current line (only if the line holds no other colour) or on a
    /// later line holding only `c` (and free bytes). So the remaining colours
    /// need `K` whole lines after the current one, and the last byte is at
    /// least on the `K`-th of them.
    fn lines_bound(&self, cur: &Cursor) -> u64 {
        let g = self.placer.g;
        let line = g.line;
        let q = match g.phases {
            Phases::One(q) => q,
            Phases::Set(set) => set.first(),
            Phases::EveryMultipleOf(_) => 0,
        };
        let line_start = (q + cur.end) / line * line;
        let next = line_start + line - q;
        let space = next - cur.end;
        let (last_color, last_end) = cur.last_color();
        let occupied = last_color != 0 && last_end + q > line_start;
        // At most one colour `u` uses the current line (`space` bytes of
        // it); the others start on later lines. The last line holding
        // remaining conflicting bytes belongs to some colour `z`: it holds
        // at least what `z`'s other lines cannot, and every other colour's
        // lines come before it (see [`super::bound`], bound 4).
        let present = || {
            self.rem_color
                .iter()
                .enumerate()
                .skip(1)
                .filter(|&(_, &b)| b > 0)
                .map(|(c, &b)| (c as u32, b))
        };
        let users = present()
            .map(|(c, _)| Some(c))
            .filter(|&u| !occupied || u == Some(last_color))
            .chain(std::iter::once(None));
        let mut best = u64::MAX;
        for u in users {
            let after = |c: u32, b: u64| {
                if Some(c) == u {
                    b.saturating_sub(space)
                } else {
                    b
                }
            };
            let lines: u64 = present().map(|(c, b)| after(c, b).div_ceil(line)).sum();
            if lines == 0 {
                return 0;
            }
            let end = present()
                .map(|(c, b)| after(c, b))
                .filter(|&rest| rest > 0)
                .map(|rest| next + line * (lines - rest.div_ceil(line)) + rest)
                .min()
                .unwrap_or(0);
            best = best.min(end);
        }
        best
    }

    /// The fewest members any completion of `seq` moves (see the module docs).
    fn churn_bound(&self) -> u64 {
        let free = &self.p.free;
        let unplaced = |v: Option<usize>| {
            free.iter()
                .filter(|&&h| !self.placed[h] && v.is_none_or(|v| h > v))
                .count() as u64
        };
        let mut keep = unplaced(None);
        for (&u, &run) in self.seq.iter().zip(&self.run_end) {
            keep = keep.max(u64::from(run) + unplaced(Some(u)));
        }
        free.len() as u64 - keep
    }

    fn lower_key(&mut self, cur: &Cursor, rem: u64, mv: u64) -> Key {
        let g = self.placer.g;
        let size = align_up(self.end_bound(cur, rem).max(self.bound), g.align);
        let order = self.placer.merge(&self.seq, &self.offset);
        let (soft, read_lines) = self.ev.lines(&order, &self.offset, &g);
        let path_lines = self.ev.path_lines(&order, &self.offset, &g);
        let churn = if self.churn { self.churn_bound() } else { 0 };
        key_of(
            &Cost {
                size,
                soft,
                read_lines,
                path_lines,
                churn,
                movement: mv,
            },
            g.align,
            self.ev.cap,
            self.ev.preset(),
        )
    }
}
