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
    ///
    /// Each type is used in one run, types by increasing alignment (small
    /// fields realign first, large ones follow without padding). Among fills
    /// ending at the same offset, the one spending the fewest small fields
    /// wins: a type costs `ceil(64 / size)` per field, since small fields are
    /// what later gaps need to realign.
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
        const UNREACHED: u64 = u64::MAX;
        let mut cost = vec![UNREACHED; span + 1];
        cost[0] = 0;
        // runs[ti][d]: (count, previous d) when type ti's pass improved the
        // fill ending at start + d.
        let mut runs: Vec<Vec<Option<(usize, usize)>>> = Vec::with_capacity(self.types.len());
        for t in &self.types {
            let mut run = vec![None; span + 1];
            let (size, align, left) = (t.size as usize, t.align, t.left());
            if size == 0 || left == 0 {
                runs.push(run);
                continue;
            }
            let unit = 64u64.div_ceil(t.size);
            let before = cost.clone();
            for (q, &reached) in before.iter().enumerate() {
                if reached == UNREACHED || !(start + q as u64).is_multiple_of(align) {
                    continue;
                }
                for k in 1..=left {
                    let d = q + k * size;
                    if d > span {
                        break;
                    }
                    let c = reached + k as u64 * unit;
                    if c < cost[d] {
                        cost[d] = c;
                        run[d] = Some((k, q));
                    }
                }
            }
            runs.push(run);
        }
        let need = (target - start) as usize;
        let exact = (need..=span)
            .find(|&d| cost[d] != UNREACHED && (start + d as u64).is_multiple_of(next_align));
        let end = exact
            .or_else(|| {
                (0..need.min(span + 1))
                    .rev()
                    .find(|&d| cost[d] != UNREACHED)
            })
            .unwrap_or(0);
        // Walk the passes backwards: the last pass that improved d made its last run.
        let mut picked = Vec::new();
        let mut d = end;
        for ti in (0..self.types.len()).rev() {
            if let Some((k, q)) = runs[ti][d] {
                picked.push((ti, k));
                d = q;
            }
        }
        picked.reverse();
        let mut out = Vec::new();
        for (ti, k) in picked {
            let t = &mut self.types[ti];
            out.extend_from_slice(&t.fields[t.taken..t.taken + k]);
            t.taken += k;
        }
        out
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
    p.to_segment_order(&mut v);
    v
}
