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

use super::eval::{slot, terms, Key, Term};
use super::geometry::{align_up, Geometry, Phases};
use super::problem::Problem;
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

/// Lines each hot path needs at any layout: `ceil(bytes / L)`, counting
/// each member's bytes on the path once.
pub(crate) fn path_bounds(p: &Problem, line: u64) -> Vec<u64> {
    (0..p.path_names)
        .map(|path| {
            let bytes: u64 = p
                .uses
                .iter()
                .map(|uses| {
                    let mut spans: Vec<(u64, u64)> = uses
                        .iter()
                        .filter(|u| u.path as usize == path && u.bytes.end > u.bytes.start)
                        .map(|u| (u.bytes.start, u.bytes.end))
                        .collect();
                    spans.sort_unstable();
                    let (mut covered, mut to) = (0, 0);
                    for (s, e) in spans {
                        let s = s.max(to);
                        if e > s {
                            covered += e - s;
                            to = e;
                        }
                    }
                    covered
                })
                .sum();
            bytes.div_ceil(line)
        })
        .collect()
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
