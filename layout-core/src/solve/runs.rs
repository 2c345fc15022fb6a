//! The runs bound: the cells the fields still to place need after a
//! prefix, with the colour changes a flexible array member forces.
//!
//! Cut the struct into the cells of [`grid`] (the lines at one phase, or
//! the `a`-byte units when the rule holds at every multiple of `a`, where
//! bytes of two colours must be `m = L / a` cells apart). The fields left
//! start at or after the cursor `e`; count the cells from `Q`, the first
//! cell boundary at or after `e`. Say the first colour left in the layout
//! is `f`, its first byte at `s_f` or later (the separation from the
//! prefix's last field of another colour). Then, from `Q` on:
//!
//! - colour `f` fills at least `ceil((H_f - d) / w)` cells, where `d` is
//!   what the cell before `Q` may still take of it (`Q - s_f` when
//!   `s_f < Q`: only the first colour may go there, as a cell holds one
//!   colour), and every other colour `c` left fills `ceil(H_c / w)`;
//! - the cells from `Q` to the one holding `s_f` hold no colour left
//!   (`p0` of them, fewer than `m`);
//! - the colours left form runs, the first of colour `f`; a flexible array
//!   member of colour `t` comes after every field, on a cell at least `m`
//!   after every other colour's, so it ends the sequence with a run of
//!   `t`. With `D` the distinct colours left and `t`, the runs change
//!   colour at least `D - 1` times, and `D` times when the sequence starts
//!   and ends in `t` and holds another colour. Each change leaves `m - 1`
//!   cells with no colour;
//! - a free field left of `s` bytes covers at least `floor((s + t - w) / w)`
//!   whole cells (`t` its alignment), which hold nothing else. They lie in
//!   one stretch without colour at most: a stretch of `r` required cells
//!   takes at most `r` of them off the count, and the others add theirs
//!   (as in the root's cell bound, [`super::bound`]).
//!
//! The `N` cells counted are distinct and lie before the end, so the last
//! byte ends at `Q + (N - 1) w + 1` or later; when the array's colour is
//! not among those left the last change is to the array, whose cell comes
//! after all of them: it starts at `Q + N w` or later. The bound is the
//! smallest over the choices of `f`.
//!
//! At the root of the search this counts the array's colour as one more
//! colour change, which the bounds of [`super::bound`] leave out; deep in
//! the search it sees that a colour left between two runs of the array's
//! colour costs two stretches, not one: at alignment 32 a read-mostly
//! prefix with a 4-byte writer group and a read-mostly `data[]` still to
//! come needs the writers between two stretches, and a 96-byte cold
//! member, which covers three cells, fills one of them at most.

use super::geometry::{align_up, Geometry, Phases};

/// How a geometry cuts the struct into cells: `(w, phase, m)`: cells of `w`
/// bytes starting at multiples of `w` less the phase, bytes of two colours
/// at least `m` cells apart.
pub(crate) fn grid(g: &Geometry) -> (u64, u64, u64) {
    match g.phases {
        Phases::One(ph) => (g.line, ph, 1),
        Phases::Set(set) => (g.line, set.first(), 1),
        Phases::EveryMultipleOf(a) => (a, 0, g.line / a),
    }
}

/// Whole cells of the grid `(w, phase)` that a free field of `size` bytes
/// and alignment `align` covers wherever it lies: it starts at least `t`
/// bytes into a cell or at its start (`t` its alignment when cells start
/// at multiples of it, else 1).
pub(crate) fn covered_cells(size: u64, align: u64, w: u64, phase: u64) -> u64 {
    let a = align.max(1);
    let t = if w.is_multiple_of(a) && phase.is_multiple_of(a) {
        a
    } else {
        1
    };
    (size + t).saturating_sub(w) / w
}

/// The free fields left, as the runs bound sees them (for one grid).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Cover {
    /// Whole cells they cover, in all.
    pub cells: u64,
    /// Fields covering at least `m - 1` cells (a whole stretch each).
    pub large: u64,
    /// Cells the other fields cover.
    pub small: u64,
}

impl Cover {
    /// Add (`add`) or remove a free field covering `cells` cells, a
    /// stretch being `stretch` cells.
    pub fn change(&mut self, cells: u64, stretch: u64, add: bool) {
        if cells == 0 {
            return;
        }
        let apply = |v: &mut u64, by: u64| {
            if add {
                *v += by;
            } else {
                *v -= by;
            }
        };
        apply(&mut self.cells, cells);
        if cells >= stretch {
            apply(&mut self.large, 1);
        } else {
            apply(&mut self.small, cells);
        }
    }
}

/// What is left after a prefix.
pub(crate) struct Left<'a> {
    /// The cursor: every field left starts here or later.
    pub from: u64,
    /// Each colour left: `(colour, bytes, earliest start of its bytes)`.
    pub colours: &'a [(u32, u64, u64)],
    /// The free fields left.
    pub cover: Cover,
    /// The flexible array member's colour (0: none, or free).
    pub tail: u32,
}

/// A bound on the end of any completion (the last byte, or the flexible
/// array's offset): see the module's text. 0 when no colour is left.
pub(crate) fn runs_bound(g: &Geometry, left: &Left) -> u64 {
    let (w, phase, m) = grid(g);
    if left.colours.is_empty() || w == 0 {
        return 0;
    }
    let stretch = m - 1;
    // Cell boundaries fall at multiples of `w` less the phase.
    let q = align_up(left.from + phase, w) - phase;
    let cell_start = |x: u64| (x + phase) / w * w - phase;
    let tail = left.tail;
    let tail_left = left.colours.iter().any(|&(c, _, _)| c == tail);
    let distinct = left.colours.len() as u64 + u64::from(tail != 0 && !tail_left);
    let all_cells: u64 = left.colours.iter().map(|&(_, h, _)| h.div_ceil(w)).sum();
    let mut best = u64::MAX;
    for &(f, h_f, s_f) in left.colours {
        let s_f = s_f.max(left.from);
        let (before, pre) = if s_f < q {
            (q - s_f, 0)
        } else {
            (0, (cell_start(s_f) - q) / w)
        };
        let colour_cells = all_cells - h_f.div_ceil(w) + h_f.saturating_sub(before).div_ceil(w);
        let changes = if tail != 0 && f == tail && distinct >= 2 {
            distinct
        } else {
            distinct - 1
        };
        let required = pre + changes * stretch;
        let filled = filled(changes, stretch, pre, left.cover);
        let cells = colour_cells + required + left.cover.cells - filled;
        let end = if tail != 0 && !tail_left {
            q + cells * w
        } else if cells == 0 {
            0
        } else {
            q + (cells - 1) * w + 1
        };
        best = best.min(end);
    }
    best
}

/// The most cells the covered cells of `cover` can take off the required
/// ones: `k` stretches of `s` cells and one of `p0`, each field's covered
/// cells in one stretch at most. A field covering `s` cells or more fills
/// a stretch alone; the others fill cell for cell.
fn filled(k: u64, s: u64, p0: u64, cover: Cover) -> u64 {
    let whole = k.min(cover.large);
    let without = s * whole + cover.small.min(s * (k - whole) + p0);
    let with = if cover.large >= 1 && p0 > 0 {
        let whole = k.min(cover.large - 1);
        p0 + s * whole + cover.small.min(s * (k - whole))
    } else {
        0
    };
    without.max(with)
}
