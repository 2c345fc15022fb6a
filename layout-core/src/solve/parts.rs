//! Layouts found without the author's line breaks, rearranged line by line
//! into the parts the breaks make.
//!
//! At one phase with the lines as cells (a struct aligned to the line, as
//! every struct with a `CACHELINE_PADDING()` is), the hard rule is a rule
//! on each line alone: the lines of a layout may be put in any order, as
//! long as a member across a boundary keeps the lines it spans together.
//! Line packing's finding ([`super::lines`]) and the struct solved without
//! its paddings ([`super::unbroken`]) give layouts that ignore the breaks;
//! the constructions repair such an order by sending the members that left
//! their part back to it, which seldom keeps the layout's size. Here the
//! layout is cut into *chains* (runs of lines tied by the members across
//! them), each chain is given a part where each of its members may lie
//! (its own, one that holds its class, anywhere when cold), so that every
//! part keeps a member of its own, and the chains are laid part after
//! part with the breaks between: an order that keeps the tree and, placed
//! again, is no larger than the layout (each chain starts a line, as it
//! did). The chain of the first member comes first.
//!
//! Nothing here is a bound or a proof: the orders are placed, evaluated
//! and verified like any other candidate.

use super::budget::Work;
use super::geometry::{Geometry, Phases};
use super::problem::Problem;

/// Most nodes of the search that gives chains their parts.
const MAX_NODES: u64 = 20_000;

/// Can [`arrange`] take layouts of `p` in `g`: one phase, the line as
/// cell, no pins, no blocks or declaration lists, line breaks of no bytes,
/// one segment (a first member kept first aside)?
pub(super) fn applies(p: &Problem, g: &Geometry) -> bool {
    if !matches!(g.phases, Phases::One(0)) || g.align < g.line {
        return false;
    }
    let t = &p.tree;
    if !p.pinned.is_empty() || !t.blocks.is_empty() || !t.lists.is_empty() {
        return false;
    }
    if p.free.iter().any(|&f| t.is_break[f] && p.size[f] > 0) {
        return false;
    }
    if t.units.iter().any(|u| u.len() != 1) {
        return false;
    }
    let rest = if first_kept(p) {
        &p.free[1..]
    } else {
        &p.free[..]
    };
    rest.windows(2).all(|w| p.segment[w[0]] == p.segment[w[1]])
}

/// Is the first free member kept first (a segment below all the others)?
fn first_kept(p: &Problem) -> bool {
    match p.free.split_first() {
        Some((&f, rest)) => !rest.is_empty() && rest.iter().all(|&g| p.segment[g] > p.segment[f]),
        None => false,
    }
}

/// An order of the free fields that keeps the tree, made from a layout of
/// the free members with bytes (`(offset, field)`, breaks left out) in
/// `g`: its chains of lines given parts, the breaks between the parts,
/// the fewest bytes possible sent back to their own parts (members a part
/// may not hold). `None` when no assignment keeps every part's own member
/// (or the search ran out of nodes before it found one).
pub(super) fn arrange(
    p: &Problem,
    g: &Geometry,
    layout: &[(u64, usize)],
    work: &mut Work,
) -> Option<Vec<usize>> {
    let t = &p.tree;
    let line = g.line;
    let breaks: Vec<usize> = p.free.iter().copied().filter(|&f| t.is_break[f]).collect();
    let parts = t.owners.len().max(1);
    if breaks.len() + 1 != parts && !(breaks.is_empty() && parts == 1) {
        return None;
    }
    let mut members: Vec<(u64, usize)> = layout
        .iter()
        .copied()
        .filter(|&(_, f)| p.size[f] > 0 && !t.is_break[f])
        .collect();
    members.sort_unstable();
    // Chains: runs of lines that members across a boundary tie together.
    let mut chains: Vec<Vec<usize>> = Vec::new();
    let mut last_line = None::<u64>;
    for &(off, f) in &members {
        let (lo, hi) = (off / line, (off + p.size[f] - 1) / line);
        match last_line {
            Some(l) if lo <= l => {
                chains.last_mut().expect("a chain is open").push(f);
                last_line = Some(l.max(hi));
            }
            _ => {
                chains.push(vec![f]);
                last_line = Some(hi);
            }
        }
    }
    // The first member's chain first, the first member first in it.
    if first_kept(p) {
        let first = p.free[0];
        let c = chains.iter().position(|c| c.contains(&first))?;
        let chain = chains.remove(c);
        let at = chain.iter().position(|&f| f == first)?;
        // Only from the chain's first line: moving it earlier there moves
        // no member to another line.
        let first_line = members.iter().find(|m| m.1 == chain[0]).map(|m| m.0 / line);
        let its_line = members.iter().find(|m| m.1 == first).map(|m| m.0 / line);
        if first_line != its_line {
            return None;
        }
        let mut chain = chain;
        chain.remove(at);
        chain.insert(0, first);
        chains.insert(0, chain);
    }
    // Each chain's bytes that may not lie in each part (members that
    // would have to go back to their own part), and the parts it keeps a
    // member of.
    let strays: Vec<Vec<u64>> = chains
        .iter()
        .map(|c| {
            (0..parts)
                .map(|k| {
                    c.iter()
                        .filter(|&&f| {
                            t.allowed[f]
                                .as_ref()
                                .is_some_and(|a| a.get(k) != Some(&true))
                        })
                        .map(|&f| p.size[f])
                        .sum()
                })
                .collect()
        })
        .collect();
    let own: Vec<Vec<bool>> = chains
        .iter()
        .map(|c| {
            (0..parts)
                .map(|k| c.iter().any(|&f| t.counts_in_part[f] && t.declared[f] == k))
                .collect()
        })
        .collect();
    let needed: Vec<bool> = (0..parts)
        .map(|k| t.owners.get(k).copied().unwrap_or(0) > 0)
        .collect();
    let mut search = Assign {
        strays: &strays,
        own: &own,
        needed: &needed,
        part: vec![usize::MAX; chains.len()],
        kept: vec![0; parts],
        cost: 0,
        best: None,
        nodes: 0,
        fixed_first: first_kept(p),
    };
    search.dfs(0);
    work.spend(search.nodes);
    let (_, part) = search.best?;
    let mut order = Vec::with_capacity(p.free.len());
    for k in 0..parts {
        if k > 0 {
            order.push(breaks[k - 1]);
        }
        for (c, chain) in chains.iter().enumerate() {
            if part[c] == k {
                order.extend_from_slice(chain);
            }
        }
    }
    // Members of no bytes (that are no breaks) fit anywhere: at the end.
    order.extend(
        p.free
            .iter()
            .copied()
            .filter(|&f| p.size[f] == 0 && !t.is_break[f]),
    );
    if order.len() != p.free.len() {
        return None;
    }
    // The strays go back to the end of their own part (the tree's repair).
    if !p.in_segment_order(&order) {
        p.to_segment_order(&mut order);
    }
    p.in_segment_order(&order).then_some(order)
}

/// The search that gives each chain a part: every part that must keeps a
/// member of its own, and the fewest bytes stray from the parts they may
/// lie in.
struct Assign<'a> {
    strays: &'a [Vec<u64>],
    own: &'a [Vec<bool>],
    needed: &'a [bool],
    part: Vec<usize>,
    /// How many chains assigned so far keep a member of each part.
    kept: Vec<u32>,
    /// Stray bytes of the chains assigned so far.
    cost: u64,
    /// The best assignment: its stray bytes and each chain's part.
    best: Option<(u64, Vec<usize>)>,
    nodes: u64,
    fixed_first: bool,
}

impl Assign<'_> {
    fn dfs(&mut self, c: usize) {
        self.nodes += 1;
        if self.nodes > MAX_NODES || self.best.as_ref().is_some_and(|b| b.0 == 0) {
            return;
        }
        let parts = self.needed.len();
        let rest: u64 = (c..self.part.len())
            .map(|d| self.strays[d].iter().copied().min().unwrap_or(0))
            .sum();
        if self.best.as_ref().is_some_and(|b| self.cost + rest >= b.0) {
            return;
        }
        if c == self.part.len() {
            if (0..parts).all(|k| !self.needed[k] || self.kept[k] > 0) {
                self.best = Some((self.cost, self.part.clone()));
            }
            return;
        }
        // Every part still without its own member needs a chain left that
        // keeps one.
        for k in (0..parts).filter(|&k| self.needed[k] && self.kept[k] == 0) {
            if !(c..self.part.len()).any(|d| self.own[d][k]) {
                return;
            }
        }
        // The first member's chain in part 0; else the parts by stray
        // bytes, those whose own member the chain keeps first.
        let mut choices: Vec<usize> = if c == 0 && self.fixed_first {
            vec![0]
        } else {
            (0..parts).collect()
        };
        choices.sort_by_key(|&k| (self.strays[c][k], !self.own[c][k]));
        for k in choices {
            self.part[c] = k;
            self.cost += self.strays[c][k];
            self.kept[k] += u32::from(self.own[c][k]);
            self.dfs(c + 1);
            self.kept[k] -= u32::from(self.own[c][k]);
            self.cost -= self.strays[c][k];
            self.part[c] = usize::MAX;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Access, Field, Struct};
    use crate::solve::place::Placer;
    use std::time::{Duration, Instant};

    /// `head` and `x` (lockless) before the padding, `r` (read-mostly) and
    /// `y` (the same writer group as `x`) after it. Without the padding the
    /// read-mostly members share one line and the writers the next; given
    /// parts, the writers' line goes after the padding (it keeps `y`, the
    /// second part's own member, and `x` may join its group there): two
    /// lines, where the declared order takes four.
    #[test]
    fn the_lines_of_a_layout_without_the_breaks_get_parts() {
        let m = |name: &str, access: Access| Field::new(name, "long", 8, 8).with_access(access);
        let g = || Access::Lockless {
            group: Some("g".into()),
        };
        let mut s = Struct::new(
            "s",
            vec![
                m("head", Access::ReadMostly),
                m("x", g()),
                Field::new("_pad1_", "struct cacheline_padding", 0, 64),
                m("r", Access::ReadMostly),
                m("y", g()),
            ],
        );
        crate::segments::assign(&mut s, crate::segments::Keep::default());
        let p = Problem::new(&s, false).unwrap();
        let geom = Geometry::aligned(64, 64);
        assert!(applies(&p, &geom));
        let declared = Placer::new(&p, geom, false).place_all(&p.free).size;
        assert_eq!(declared, 256);
        // The layout without the padding: the read-mostly line, then the
        // writers' line.
        let layout = [(0, 0), (8, 3), (64, 1), (72, 4)];
        let mut work = Work::new(1_000_000, Duration::from_secs(20), Instant::now());
        let order = arrange(&p, &geom, &layout, &mut work).expect("an order");
        assert!(p.in_segment_order(&order), "{order:?}");
        assert_eq!(order, vec![0, 3, 2, 1, 4]);
        assert_eq!(Placer::new(&p, geom, false).place_all(&order).size, 128);
    }
}
