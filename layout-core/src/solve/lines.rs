//! Line packing: small structs filled line by line.
//!
//! With a single phase, the lines of the struct are fixed intervals. Each
//! line is owned by at most one colour and holds members of that colour and
//! free members; a member may also cross the boundary into the next lines
//! (at most one per boundary; one longer than what follows covers whole
//! lines, which hold nothing else). Whether the crossing members can be
//! split so that every line holds its bytes is decided greedily: each puts
//! as many bytes as it can (a multiple of its alignment) before its
//! boundary. The test counts bytes; inside a line, members by decreasing
//! alignment leave no padding (sizes are multiples of alignments and lines
//! start at multiples of the natural alignment), so it is close to exact.
//!
//! For a target size `T` (multiples of the struct alignment below the best
//! size found, downwards while packings are found), the lines cut at `T`
//! are filled by a node-capped depth-first search (members of a colour
//! first, largest first; lines in the same state tried once), its nodes
//! charged to the work budget. Each packing is realised as orders (line
//! after line, then the member crossing out of it), which the greedy placer
//! lays out and the driver polishes, evaluates and verifies like any other
//! candidate. This finds layouts where each colour sits on lines of its own
//! with free members filling around it, which orders built from one run per
//! colour miss.

use super::budget::Work;
use super::geometry::{Geometry, Phases};
use super::problem::Problem;

/// Most unpinned members for which packings are searched.
pub(crate) const MAX_FIELDS: usize = 40;
/// Most nodes of one packing search.
const MAX_NODES: u64 = 20_000;
/// Work charged per node.
const NODE_WORK: u64 = 4;

/// Orders realised from line packings smaller than `best_size`, best last.
pub(crate) fn line_packings(
    p: &Problem,
    g: Geometry,
    best_size: u64,
    lower: u64,
    work: &mut Work,
) -> Vec<Vec<usize>> {
    let Phases::One(phase) = g.phases else {
        return Vec::new();
    };
    let fields = &p.free;
    let applicable = fields.len() <= MAX_FIELDS
        && p.pinned.is_empty()
        && !p.segmented
        && p.tail.is_none()
        && p.natural_align <= g.line
        && phase % p.natural_align == 0
        && fields.iter().all(|&f| p.size[f].is_multiple_of(p.align[f]));
    if !applicable {
        return Vec::new();
    }
    // Members of a colour first, then free ones; each by decreasing size.
    let mut items: Vec<usize> = fields.clone();
    items.sort_by_key(|&f| (p.color[f] == 0, std::cmp::Reverse(p.size[f]), f));
    let mut out = Vec::new();
    let a = g.align.max(1);
    let mut target = (best_size.saturating_sub(1) / a) * a;
    while target >= lower.max(1) && target < best_size && work.left() {
        let Some(packing) = pack(p, &items, g.line, phase, target, work) else {
            break;
        };
        out.push(realise(p, &packing, Within::Decreasing));
        out.push(realise(p, &packing, Within::AfterCrossing));
        if target < a {
            break;
        }
        target -= a;
    }
    out
}

struct Line {
    /// Bytes of the line (the last one is cut at the target).
    cap: u64,
    /// Bytes of the members wholly inside it.
    load: u64,
    owner: u32,
    members: Vec<usize>,
}

/// A packing: members per line, and the free member (if any) that crosses
/// the boundary before each line.
struct Packing {
    lines: Vec<Line>,
    /// `cross[k]`: the member across the boundary between lines `k - 1` and
    /// `k` (`cross[0]` is always `None`).
    cross: Vec<Option<usize>>,
}

/// A packing of `items` into the lines below `target`, if the search finds one.
fn pack(
    p: &Problem,
    items: &[usize],
    line: u64,
    phase: u64,
    target: u64,
    work: &mut Work,
) -> Option<Packing> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < target {
        let end = ((start + phase) / line + 1) * line - phase;
        let end = end.min(target);
        lines.push(Line {
            cap: end - start,
            load: 0,
            owner: 0,
            members: Vec::new(),
        });
        start = end;
    }
    let bytes: u64 = items.iter().map(|&f| p.size[f]).sum();
    if bytes > target {
        return None;
    }
    let cross = vec![None; lines.len()];
    let mut search = Search {
        p,
        items,
        packing: Packing { lines, cross },
        nodes: 0,
        work,
    };
    search.place(0).then_some(search.packing)
}

struct Search<'a, 'w> {
    p: &'a Problem,
    items: &'a [usize],
    packing: Packing,
    nodes: u64,
    work: &'w mut Work,
}

/// What the members crossing boundaries leave of each line, once split.
struct Split {
    /// The colour of each line (0: free bytes only).
    colour: Vec<u32>,
    /// Bytes of each line taken by members crossing into or out of it.
    crossing: Vec<u64>,
}

impl Search<'_, '_> {
    /// Can the members crossing boundaries be split so that every line
    /// holds what it was given, and no line holds two colours? Each crossing
    /// member puts as many bytes as it can (a multiple of its alignment, at
    /// least one) in the line it starts in, which leaves the most room after
    /// it; one longer than what follows covers whole lines, which must then
    /// hold nothing else. How the lines are split when they can.
    fn split(&self) -> Option<Split> {
        let p = self.p;
        let Packing { lines, cross } = &self.packing;
        let mut colour = vec![0; lines.len()];
        let mut crossing = vec![0; lines.len()];
        // Bytes of the member crossing into line k still to lay, and its colour.
        let mut carried = 0;
        let mut carried_color = 0;
        for (k, l) in lines.iter().enumerate() {
            let next = cross.get(k + 1).copied().flatten();
            if carried_color != 0 && l.owner != 0 && l.owner != carried_color {
                return None;
            }
            if carried >= l.cap {
                // Covered from end to end.
                if l.load > 0 || next.is_some() {
                    return None;
                }
                colour[k] = carried_color;
                crossing[k] = l.cap;
                carried -= l.cap;
                if carried == 0 {
                    carried_color = 0;
                }
                continue;
            }
            let used = carried + l.load;
            if used > l.cap {
                return None;
            }
            let owner = if l.owner != 0 { l.owner } else { carried_color };
            colour[k] = owner;
            crossing[k] = carried;
            carried = 0;
            carried_color = 0;
            if let Some(f) = next {
                let (s, a, c) = (p.size[f], p.align[f].max(1), p.color[f]);
                if c != 0 && owner != 0 && owner != c {
                    return None;
                }
                let room = l.cap - used;
                let before = (room.min(s - 1) / a) * a;
                if before == 0 {
                    return None;
                }
                if c != 0 {
                    colour[k] = c;
                }
                crossing[k] += before;
                carried = s - before;
                carried_color = c;
            }
        }
        (carried == 0).then_some(Split { colour, crossing })
    }

    fn fits(&self) -> bool {
        self.split().is_some()
    }

    /// Place items `i..`; true when all fit.
    fn place(&mut self, i: usize) -> bool {
        let Some(&f) = self.items.get(i) else {
            return true;
        };
        self.nodes += 1;
        if self.nodes > MAX_NODES || !self.work.spend(NODE_WORK) {
            return false;
        }
        let (size, color) = (self.p.size[f], self.p.color[f]);
        let n = self.packing.lines.len();
        let Some(split) = self.split() else {
            return false;
        };
        // Lines in the same state are tried once: the same room and colour,
        // the same bytes of crossing members (a line covered by one is not
        // an empty line), crossings on the same sides.
        let mut tried: Vec<(u64, u64, u32, u64, bool, bool)> = Vec::new();
        for k in 0..n {
            let l = &self.packing.lines[k];
            let allowed = color == 0 || l.owner == 0 || l.owner == color;
            let state = (
                l.cap,
                l.load,
                split.colour[k],
                split.crossing[k],
                self.packing.cross[k].is_some(),
                self.packing.cross.get(k + 1).is_some_and(Option::is_some),
            );
            if !allowed || l.load + size > l.cap || tried.contains(&state) {
                continue;
            }
            tried.push(state);
            let owner = l.owner;
            let l = &mut self.packing.lines[k];
            l.load += size;
            if color != 0 {
                l.owner = color;
            }
            l.members.push(f);
            if self.fits() && self.place(i + 1) {
                return true;
            }
            let l = &mut self.packing.lines[k];
            l.members.pop();
            l.load -= size;
            l.owner = owner;
            if self.nodes > MAX_NODES || !self.work.left() {
                return false;
            }
        }
        // Or cross a boundary that none crosses yet.
        if size > 1 {
            for b in 1..n {
                if self.packing.cross[b].is_some() {
                    continue;
                }
                self.packing.cross[b] = Some(f);
                if self.fits() && self.place(i + 1) {
                    return true;
                }
                self.packing.cross[b] = None;
                if self.nodes > MAX_NODES || !self.work.left() {
                    return false;
                }
            }
        }
        false
    }
}

/// How the members of a line are ordered in a realisation.
#[derive(Clone, Copy)]
enum Within {
    /// By decreasing alignment.
    Decreasing,
    /// By increasing alignment after a crossing member, else decreasing.
    AfterCrossing,
}

/// The order of a packing: line after line, each line's members and then
/// the member crossing into the next line.
fn realise(p: &Problem, packing: &Packing, within: Within) -> Vec<usize> {
    let mut order = Vec::new();
    for (k, l) in packing.lines.iter().enumerate() {
        let mut m = l.members.clone();
        let increasing = matches!(within, Within::AfterCrossing) && packing.cross[k].is_some();
        if increasing {
            m.sort_by_key(|&f| (p.align[f], p.color[f] == 0, f));
        } else {
            m.sort_by_key(|&f| (std::cmp::Reverse(p.align[f]), p.color[f] == 0, f));
        }
        order.extend(m);
        if let Some(&Some(f)) = packing.cross.get(k + 1) {
            order.push(f);
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Access, Field, Struct};
    use crate::solve::place::Placer;
    use std::time::{Duration, Instant};

    /// 60 B read-mostly, 60 B lockless and 8 B cold on 64-byte lines: the
    /// cold field fits only across the boundary between the two lines.
    #[test]
    fn a_free_member_across_a_boundary_closes_the_gap() {
        let f = |name: &str, size: u64, access: Access| {
            Field::new(name, "t", size, 4).with_access(access)
        };
        let s = Struct::new(
            "s",
            vec![
                f("r", 60, Access::ReadMostly),
                f("a", 60, Access::Lockless { group: None }),
                f("c", 8, Access::Cold),
            ],
        );
        let p = Problem::new(&s, false).unwrap();
        let g = Geometry::at_offset(64, 4, 0);
        let declared = Placer::new(&p, g, false).place_all(&p.free).size;
        assert_eq!(declared, 132);
        let mut work = Work::new(1_000_000, Duration::from_secs(20), Instant::now());
        let orders = line_packings(&p, g, declared, 0, &mut work);
        for o in &orders {
            let mut sorted = o.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, p.free, "an order holds every field once");
        }
        let best = orders
            .iter()
            .map(|o| Placer::new(&p, g, false).place_all(o).size)
            .min();
        assert_eq!(best, Some(128));
    }
}
