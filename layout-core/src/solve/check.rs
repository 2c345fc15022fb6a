//! Checks outside the search: pinned fields against each other (before),
//! and the pairs the verifier does not know about (after).

use super::geometry::Geometry;
use super::place::Placer;
use super::problem::{Problem, SoftRole};
use crate::layout::Layout;

/// Check the pinned fields against each other in geometry `g`.
pub(super) fn pins_fit(p: &Problem, g: &Geometry) -> Result<(), String> {
    let pins = &p.pinned;
    for (k, &a) in pins.iter().enumerate() {
        for &b in &pins[k + 1..] {
            let (sa, sb) = (p.pin[a].unwrap_or(0), p.pin[b].unwrap_or(0));
            let (ea, eb) = (sa + p.size[a], sb + p.size[b]);
            let overlap = sa < eb && sb < ea
                || (p.size[a] == 0 && sb < sa && sa < eb)
                || (p.size[b] == 0 && sa < sb && sb < ea);
            if overlap {
                return Err(format!(
                    "pinned fields `{}` (offset {sa}, {} bytes) and `{}` (offset {sb}, {} bytes) overlap",
                    p.names[a], p.size[a], p.names[b], p.size[b]
                ));
            }
            // The one of the lower segment ends before the other starts.
            let ordered = match p.segment[a].cmp(&p.segment[b]) {
                std::cmp::Ordering::Less => ea <= sb,
                std::cmp::Ordering::Greater => eb <= sa,
                std::cmp::Ordering::Equal => true,
            };
            if !ordered {
                return Err(format!(
                    "pinned fields `{}` and `{}` break the author's order (its groups, markers \
                     and first member): unpin one of them",
                    p.names[a], p.names[b]
                ));
            }
            if p.conflict(a, b) && g.sep_start(ea) > sb {
                return Err(format!(
                    "pinned fields `{}` (offset {sa}) and `{}` (offset {sb}) may not share a cache line, \
                     but they do at some placement; unpin one of them",
                    p.names[a], p.names[b]
                ));
            }
        }
    }
    // Each unpinned field alone, as early as it may go after the pinned
    // fields of lower segments: if it still ends past a pinned field of a
    // higher segment, so does it in every order.
    let placer = Placer::new(p, *g, false);
    for &f in &p.free {
        let mut cur = placer.start();
        let x = placer.place(&mut cur, f);
        if cur.late {
            let q = p
                .pinned
                .iter()
                .copied()
                .filter(|&q| p.segment[q] > p.segment[f])
                .min_by_key(|&q| p.pin[q])
                .unwrap_or(f);
            return Err(format!(
                "`{}` must end before pinned `{}` (offset {}) in the author's order (its groups, \
                 markers and first member), but the rules put it at offset {x} at the earliest; \
                 unpin `{}`",
                p.names[f],
                p.names[q],
                p.pin[q].unwrap_or(0),
                p.names[q]
            ));
        }
    }
    Ok(())
}

/// The verifier knows the hard rule only; with `separate_soft` the solver
/// also promised to keep lockless and locked fields apart. Check those pairs
/// phase by phase.
pub(super) fn separated(p: &Problem, l: &Layout) -> Result<(), String> {
    let locked = |f: usize| matches!(p.role[f], SoftRole::Locked(_));
    if !(0..p.n).any(|f| locked(f) && p.color[f] != 0) {
        return Ok(());
    }
    let offset = l.offsets_by_field(p.n);
    let mut sized: Vec<usize> = (0..p.n)
        .filter(|&f| p.size[f] > 0 && p.color[f] != 0)
        .collect();
    sized.sort_by_key(|&f| (offset[f].unwrap_or(0), f));
    let lines = |phase: u64, f: usize| {
        let o = offset[f].unwrap_or(0);
        ((phase + o) / l.line, (phase + o + p.size[f] - 1) / l.line)
    };
    for phase in crate::layout::phases(l.placement, l.align, l.line) {
        // In offset order, only fields starting on or before a field's last
        // line can share a line with it.
        for (k, &a) in sized.iter().enumerate() {
            let (_, a1) = lines(phase, a);
            for &b in &sized[k + 1..] {
                if lines(phase, b).0 > a1 {
                    break;
                }
                if p.conflict(a, b) && (locked(a) || locked(b)) {
                    let (a, b) = (a.min(b), a.max(b));
                    return Err(format!(
                        "`{}` and `{}` share a line at phase {phase}",
                        p.names[a], p.names[b]
                    ));
                }
            }
        }
    }
    Ok(())
}
