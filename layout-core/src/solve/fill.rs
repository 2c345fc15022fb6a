//! Filling a gap with free fields, without padding.
//!
//! A gap starts at offset `start`; the next field (alignment `a`) may not
//! start before `target`. Which multiset of pool fields, laid back to back
//! with every field at a multiple of its alignment, ends at the smallest
//! offset `>= target` that is a multiple of `a`? A bounded-knapsack
//! reachability table over the offsets `start ..= target + L + a` answers
//! it. When no such offset is reachable, the fill reaching furthest below
//! `target` leaves the least padding.

use super::geometry::align_up;
use super::problem::Problem;

/// Free fields grouped by (size, alignment); each group's fields in
/// declaration order, taken from the front.
#[derive(Clone, Debug)]
pub(crate) struct Pool {
    types: Vec<PoolType>,
}

#[derive(Clone, Debug)]
struct PoolType {
    size: u64,
    align: u64,
    fields: Vec<usize>,
    taken: usize,
}

impl PoolType {
    fn left(&self) -> usize {
        self.fields.len() - self.taken
    }
}

impl Pool {
    pub fn new(p: &Problem, fields: &[usize]) -> Pool {
        let mut types: Vec<PoolType> = Vec::new();
        for &f in fields {
            match types
                .iter_mut()
                .find(|t| t.size == p.size[f] && t.align == p.align[f])
            {
                Some(t) => t.fields.push(f),
                None => types.push(PoolType {
                    size: p.size[f],
                    align: p.align[f],
                    fields: vec![f],
                    taken: 0,
                }),
            }
        }
        types.sort_by_key(|t| (t.align, t.size));
        Pool { types }
    }

    pub fn is_empty(&self) -> bool {
        self.types.iter().all(|t| t.left() == 0)
    }

    /// The fields not taken yet, in declaration order.
    pub fn rest(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .types
            .iter()
            .flat_map(|t| t.fields[t.taken..].iter().copied())
            .collect();
        v.sort_unstable();
        v
    }

    /// Take the fields that fill `start .. target` (see the module docs), in
    /// the order they are to be laid out. `limit` caps the table's span.
    pub fn fill(
        &mut self,
        start: u64,
        target: u64,
        next_align: u64,
        line: u64,
        limit: u64,
    ) -> Vec<usize> {
        if target <= start || self.is_empty() {
            return Vec::new();
        }
        let span = (target - start + line + next_align).min(limit) as usize;
        // from[d]: (type, previous d) of the last field of a fill ending at start + d.
        let mut from: Vec<Option<(usize, usize)>> = vec![None; span + 1];
        let mut reach = vec![false; span + 1];
        reach[0] = true;
        let mut used = vec![0usize; span + 1];
        for (ti, t) in self.types.iter().enumerate() {
            let (size, align, left) = (t.size as usize, t.align, t.left());
            if size == 0 || left == 0 {
                continue;
            }
            for d in 0..=span {
                if reach[d] {
                    used[d] = 0;
                    continue;
                }
                if d >= size {
                    let prev = d - size;
                    if reach[prev] && (start + prev as u64) % align == 0 && used[prev] < left {
                        reach[d] = true;
                        used[d] = used[prev] + 1;
                        from[d] = Some((ti, prev));
                    }
                }
            }
        }
        let need = (target - start) as usize;
        let exact = (need..=span).find(|&d| reach[d] && (start + d as u64) % next_align == 0);
        let end = exact
            .or_else(|| (0..need.min(span + 1)).rev().find(|&d| reach[d]))
            .unwrap_or(0);
        let mut picked_types = Vec::new();
        let mut d = end;
        while let Some((ti, prev)) = from[d] {
            picked_types.push(ti);
            d = prev;
        }
        picked_types.reverse();
        picked_types
            .into_iter()
            .map(|ti| {
                let t = &mut self.types[ti];
                t.taken += 1;
                t.fields[t.taken - 1]
            })
            .collect()
    }
}

/// `fields` in declaration order when that needs no padding between them
/// (laid from an offset aligned to their largest alignment), else by
/// decreasing alignment (stable), which never needs any.
pub(crate) fn tidy_order(p: &Problem, fields: &[usize]) -> Vec<usize> {
    let mut v = fields.to_vec();
    v.sort_unstable();
    let mut at = 0;
    let padded = v.iter().any(|&f| {
        let x = align_up(at, p.align[f]);
        let pad = x != at;
        at = x + p.size[f];
        pad
    });
    if padded {
        v.sort_by_key(|&f| std::cmp::Reverse(p.align[f]));
    }
    v
}
