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
//!    [`super::geometry`]), and the colour changes at least `k - 1` times, so
//!    `S >= H + max(F, (k - 1) * (L - a))`.
//!
//! Every bound is rounded up to `A`. The bound over all geometries is the
//! smallest of theirs.

use super::eval::{movement_slot, Key};
use super::geometry::{align_up, Geometry, Phases};
use super::problem::Problem;
use super::Preset;

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
        };
        lb = lb.max(((lines - 1) * line + 1).saturating_sub(worst_phase));
        if let Phases::EveryMultipleOf(a) = g.phases {
            let hard = p.total - p.free_bytes();
            lb = lb.max(hard + p.free_bytes().max((k - 1) * (line - a)));
        }
    }
    align_up(lb, g.align)
}

/// Lines any layout needs for the read-mostly bytes.
pub(crate) fn read_lines_bound(p: &Problem, line: u64) -> u64 {
    p.read_bytes.div_ceil(line)
}

/// The bounds every goal is measured against.
pub(super) struct Proof {
    pub lower: u64,
    pub read: u64,
    /// (alignment, size bound) of each geometry.
    pub geoms: Vec<(u64, u64)>,
    pub preset: Preset,
}

impl Proof {
    /// Does key `k` meet every bound? With `movement_last_free`, movement
    /// need not when it is the preset's last goal.
    pub fn meets(&self, k: &Key, movement_last_free: bool) -> bool {
        if k[0] != self.lower {
            return false;
        }
        // No smaller alignment could reach this size.
        if !self
            .geoms
            .iter()
            .all(|&(align, lb)| align >= k[1] || lb > k[0])
        {
            return false;
        }
        let mv = movement_slot(self.preset);
        let read_slot = match self.preset {
            Preset::Balanced | Preset::HotLines => 3,
            Preset::MinDiff => 4,
            Preset::CompactHot => 2,
        };
        (2..5).all(|slot| {
            let bound = if slot == read_slot { self.read } else { 0 };
            k[slot] == bound || (movement_last_free && slot == mv && mv == 4)
        })
    }
}
