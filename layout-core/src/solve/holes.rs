//! Filling the holes pinned members leave.
//!
//! The placer lays the order's members one after another and steps over
//! the pins, so the padding before a pin stays empty unless the order puts
//! the right small members there. Local search rarely does: filling one
//! hole moves the later members down by a few bytes, which changes the size
//! only once enough holes are filled to free a whole line (a plateau of
//! equal keys). [`fill_holes`] fills them directly: it places the order,
//! takes the first hole (bytes between two members, or before a pin, that no
//! member holds), and moves into it the largest later member that lands
//! there once placed, until no hole takes one. Which member may go where is
//! left to the placer (alignment, colours, pins), and the result is a
//! candidate order like any other: the driver evaluates it and keeps it
//! only when its key is better.

use super::budget::Work;
use super::place::Placer;

/// Most moves tried per call, in units of the order's length.
const MOVES_PER_MEMBER: usize = 4;

/// `order` with the holes filled (see the module's text); the same order
/// when no member moves into a hole.
pub(crate) fn fill_holes(placer: &Placer, order: &[usize], work: &mut Work) -> Vec<usize> {
    let p = placer.p;
    let mut order = order.to_vec();
    let mut tries = MOVES_PER_MEMBER * order.len();
    // Holes below this offset take no member: skip them.
    let mut from = 0u64;
    'holes: while tries > 0 && work.spend(p.eval_work()) {
        let placed = placer.place_all(&order);
        if placed.late {
            break;
        }
        // The first hole at or after `from`, and the index in `order` of
        // the first member placed after it.
        let mut spans: Vec<(u64, u64)> = placed
            .order
            .iter()
            .filter(|&&f| p.size[f] > 0)
            .map(|&f| (placed.offset[f], placed.offset[f] + p.size[f]))
            .collect();
        spans.sort_unstable();
        let mut end = 0;
        let mut hole = None;
        for &(start, stop) in &spans {
            if start > end && end >= from {
                hole = Some((end, start));
                break;
            }
            end = end.max(stop);
        }
        let Some((h0, h1)) = hole else { break };
        let Some(at) = order.iter().position(|&f| placed.offset[f] >= h1) else {
            break;
        };
        // Later members that could fit: members of a colour first (free
        // ones are better kept for the gaps between colours), largest first.
        let mut candidates: Vec<usize> = (at..order.len())
            .filter(|&i| {
                let f = order[i];
                let a = p.align[f].max(1);
                p.size[f] > 0 && h0.div_ceil(a) * a + p.size[f] <= h1
            })
            .collect();
        candidates.sort_by_key(|&i| {
            (
                p.color[order[i]] == 0,
                std::cmp::Reverse(p.size[order[i]]),
                i,
            )
        });
        for i in candidates {
            if tries == 0 || !work.spend(p.eval_work()) {
                break 'holes;
            }
            tries -= 1;
            let mut moved = order.clone();
            let f = moved.remove(i);
            moved.insert(at, f);
            if !p.in_segment_order(&moved) {
                continue;
            }
            let again = placer.place_all(&moved);
            if !again.late && again.offset[f] < h1 && again.size <= placed.size {
                order = moved;
                continue 'holes;
            }
        }
        from = h1;
    }
    order
}
