//! Where line boundaries fall, as seen from the struct's own offsets.
//!
//! A [`Geometry`] is one way to place the struct: its alignment, the set of
//! phases at which the hard rule must hold, and the phase at which soft costs
//! and read lines are judged. Byte `x` of the struct is on line `(p + x) / L`
//! at phase `p`.
//!
//! The one question the solver asks of it: a field of one colour ends at `e`
//! (its last byte is `e - 1`); what is the smallest offset `x` at which a
//! field of another colour may start, i.e. the smallest `x` with
//! `(p + e - 1) / L < (p + x) / L` for every phase `p` of the set?
//!
//! - one phase `p`: `x = ceil((p + e) / L) * L - p`.
//! - every multiple of `a < L` (the struct at its alignment `a`, anywhere):
//!   the worst phase puts byte `e - 1` at the smallest position in its line,
//!   `(e - 1) mod a`, so `x - (e - 1) >= L - (e - 1) mod a`, that is
//!   `x = L + a * floor((e - 1) / a)`.

use crate::model::Placement;

/// The set of phases at which the hard rule must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phases {
    /// Exactly this phase (phase mode, or an alignment of at least a line).
    One(u64),
    /// Every multiple of this alignment below the line size (alignment < line).
    EveryMultipleOf(u64),
    /// Each of these phases (several containers, each at its own offset).
    Set(PhaseSet),
}

/// A set of phases below 256 (the largest line size), as a bit set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PhaseSet([u64; 4]);

impl PhaseSet {
    pub fn of(phases: impl IntoIterator<Item = u64>) -> PhaseSet {
        let mut bits = [0u64; 4];
        for p in phases {
            let p = p % 256;
            bits[(p / 64) as usize] |= 1 << (p % 64);
        }
        PhaseSet(bits)
    }

    /// The phases, ascending.
    pub fn iter(self) -> impl Iterator<Item = u64> {
        (0..256u64).filter(move |&p| self.0[(p / 64) as usize] & (1 << (p % 64)) != 0)
    }

    /// The smallest phase (0 for an empty set).
    pub fn first(self) -> u64 {
        self.iter().next().unwrap_or(0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub line: u64,
    /// The struct's alignment in this geometry.
    pub align: u64,
    pub phases: Phases,
    /// The phase at which soft costs and read lines are judged.
    pub report: u64,
    pub placement: Placement,
}

impl Geometry {
    /// Phase mode: the struct keeps its natural alignment, at phase `offset % line`.
    pub fn at_offset(line: u64, align: u64, offset: u64) -> Geometry {
        let p = offset % line;
        Geometry {
            line,
            align,
            phases: Phases::One(p),
            report: p,
            placement: Placement::Offset(offset),
        }
    }

    /// Several containers: the struct keeps its natural alignment, and the
    /// rule holds at the phase of each offset; soft costs and read lines are
    /// judged at the first one's.
    pub fn at_offsets(line: u64, align: u64, offsets: &[u64]) -> Geometry {
        let set = PhaseSet::of(offsets.iter().map(|o| o % line));
        let report = offsets.first().map_or(0, |o| o % line);
        let phases = match set.iter().count() {
            1 => Phases::One(report),
            _ => Phases::Set(set),
        };
        Geometry {
            line,
            align,
            phases,
            report,
            placement: Placement::at_offsets(offsets).unwrap_or(Placement::Offset(report)),
        }
    }

    /// Aligned mode with struct alignment `align`: the rule holds at every
    /// multiple of `align` (only phase 0 once `align >= line`).
    pub fn aligned(line: u64, align: u64) -> Geometry {
        let phases = if align >= line {
            Phases::One(0)
        } else {
            Phases::EveryMultipleOf(align)
        };
        Geometry {
            line,
            align,
            phases,
            report: 0,
            placement: Placement::Aligned,
        }
    }

    /// Smallest start of a field that must not share a line (at any phase of
    /// the set) with bytes ending at `end` (exclusive). `end == 0` needs nothing.
    pub fn sep_start(&self, end: u64) -> u64 {
        if end == 0 {
            return 0;
        }
        match self.phases {
            Phases::One(p) => one_phase_sep(self.line, p, end),
            Phases::EveryMultipleOf(a) => self.line + a * ((end - 1) / a),
            Phases::Set(set) => set
                .iter()
                .map(|p| one_phase_sep(self.line, p, end))
                .max()
                .unwrap_or(end),
        }
    }

    /// Largest end (exclusive) of bytes that may not share a line with a
    /// field starting at `start`: the inverse of [`Geometry::sep_start`].
    /// 0 when no byte before `start` is far enough.
    pub fn max_end_before(&self, start: u64) -> u64 {
        match self.phases {
            Phases::One(p) => ((p + start) / self.line * self.line).saturating_sub(p),
            Phases::EveryMultipleOf(a) => {
                if start < self.line {
                    0
                } else {
                    a * ((start - self.line) / a + 1)
                }
            }
            Phases::Set(set) => set
                .iter()
                .map(|p| ((p + start) / self.line * self.line).saturating_sub(p))
                .min()
                .unwrap_or(0),
        }
    }

    /// Like [`Geometry::sep_start`], at the report phase only (soft separation).
    pub fn report_sep_start(&self, end: u64) -> u64 {
        if end == 0 {
            return 0;
        }
        one_phase_sep(self.line, self.report, end)
    }

    /// Line of struct byte `x` at the report phase.
    pub fn report_line(&self, x: u64) -> u64 {
        (self.report + x) / self.line
    }
}

fn one_phase_sep(line: u64, p: u64, end: u64) -> u64 {
    align_up(p + end, line) - p
}

pub(crate) use crate::place::align_up;

/// The geometries worth trying, by increasing alignment: in phase mode the
/// natural one; in aligned mode every power of two from the natural
/// alignment up to the line size (a larger alignment shrinks the phase set
/// and so the separation needed, at the price of tail padding).
pub(crate) fn candidates(
    line: u64,
    natural: u64,
    placement: Placement,
    has_conflicts: bool,
) -> Vec<Geometry> {
    match placement {
        Placement::Offset(o) => vec![Geometry::at_offset(line, natural, o)],
        Placement::Offsets(o) => vec![Geometry::at_offsets(line, natural, o.as_slice())],
        Placement::Aligned => {
            let mut v = vec![Geometry::aligned(line, natural)];
            let mut a = natural;
            while has_conflicts && a < line {
                a *= 2;
                v.push(Geometry::aligned(line, a));
            }
            v
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The phases at which the rule holds, by the definition (shared with
    /// the bound tests).
    pub(crate) fn phase_list(g: &Geometry) -> Vec<u64> {
        match g.phases {
            Phases::One(p) => vec![p],
            Phases::EveryMultipleOf(a) => (0..g.line).step_by(a as usize).collect(),
            Phases::Set(set) => set.iter().collect(),
        }
    }

    /// Brute force over the phase list: the definition.
    fn brute_sep(g: &Geometry, end: u64) -> u64 {
        (0..)
            .find(|&x| {
                phase_list(g)
                    .iter()
                    .all(|&p| (p + end - 1) / g.line < (p + x) / g.line)
            })
            .unwrap()
    }

    #[test]
    fn separation_matches_the_definition() {
        for line in [32, 64, 128] {
            let mut gs = vec![];
            for a in [1, 2, 4, 8, 16, 32, 64, 128, 256] {
                gs.push(Geometry::aligned(line, a));
            }
            for o in [0, 8, 48, 63, 100] {
                gs.push(Geometry::at_offset(line, 1, o));
            }
            // Several containers.
            for offsets in [&[136, 172112][..], &[8, 40], &[0, 1, 31], &[5, 5 + line]] {
                gs.push(Geometry::at_offsets(line, 1, offsets));
            }
            for g in &gs {
                for end in 1..300 {
                    let x = g.sep_start(end);
                    assert_eq!(x, brute_sep(g, end), "{g:?} end {end}");
                    assert!(g.max_end_before(x) >= end, "{g:?} end {end} x {x}");
                    // max_end_before is the largest end whose separation fits.
                    let m = g.max_end_before(end);
                    assert!(m == 0 || g.sep_start(m) <= end, "{g:?} start {end}");
                    assert!(g.sep_start(m + 1) > end, "{g:?} start {end}");
                }
            }
        }
    }

    #[test]
    fn several_containers_keep_their_phases() {
        let g = Geometry::at_offsets(64, 8, &[136, 172112]);
        assert_eq!(g.phases, Phases::Set(PhaseSet::of([8, 16])));
        assert_eq!(g.report, 8);
        assert_eq!(g.placement.offsets(), [136, 172112]);
        // Equal phases are one.
        assert_eq!(Geometry::at_offsets(64, 8, &[8, 72]).phases, Phases::One(8));
    }

    #[test]
    fn aligned_candidates_go_up_to_the_line() {
        let c = candidates(64, 8, Placement::Aligned, true);
        let aligns: Vec<u64> = c.iter().map(|g| g.align).collect();
        assert_eq!(aligns, [8, 16, 32, 64]);
        assert_eq!(c[3].phases, Phases::One(0));
        assert_eq!(candidates(64, 128, Placement::Aligned, true).len(), 1);
        assert_eq!(candidates(64, 8, Placement::Aligned, false).len(), 1);
    }
}
