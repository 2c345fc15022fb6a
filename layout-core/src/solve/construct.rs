//! Constructions: layouts built from runs of lines.
//!
//! Fields of one block (a colour, or a class) sit together in one run; only
//! at the boundary between two runs must a line boundary fall, and the gap up
//! to it is filled with pool fields by [`super::fill`], so that the next run
//! starts exactly where it may. Leftover pool fields go to the end.
//!
//! Two families:
//! - **strict**: blocks are the classes (read-mostly, each lockless group,
//!   each lock); the pool is the cold fields; while building, the placer
//!   also keeps different classes apart at the report phase, so the gaps are
//!   filled to line boundaries and the order aims at zero soft cost. (The
//!   driver then places the order under the hard rule alone, which can only
//!   make it smaller.)
//! - **hard**: blocks are the colours; the pool is every free field (locked
//!   and cold ones), which fills the gaps the hard rule needs.
//!
//! Every order of the blocks is tried when there are few of them, a few
//! natural ones otherwise. Each order built is charged to the work budget;
//! the orders are repaired to segment order
//! ([`super::problem::Problem::to_segment_order`]).

use super::budget::Work;
use super::fill::{tidy_order, Pool};
use super::geometry::Geometry;
use super::place::Placer;
use super::problem::Problem;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Strict,
    Hard,
    /// With hot paths: one block per class and set of paths (the fields
    /// that a path reads, then the ones two paths share, then the next
    /// path's), as the kernel's hand layouts group `read_tx`, `read_txrx`,
    /// `read_rx`, ...; fields on no path fill the gaps.
    Paths,
}

/// The paths field `f` is on, as a bit set (paths past 31 share bit 31).
fn path_mask(p: &Problem, f: usize) -> u32 {
    p.uses[f].iter().fold(0u32, |m, u| m | 1 << u.path.min(31))
}

/// Blocks of the paths family in reading order: by role (readers first),
/// then by first path, then fewer paths first, so that the fields two
/// paths share sit between the fields of each.
fn path_block_key(p: &Problem, block: &[usize]) -> (u8, u32, u32) {
    let role = match p.role[block[0]] {
        super::problem::SoftRole::Read => 0,
        super::problem::SoftRole::Locked(_) => 1,
        super::problem::SoftRole::Lockless => 2,
        super::problem::SoftRole::Cold => 3,
    };
    let mask = path_mask(p, block[0]);
    (role, mask.trailing_zeros(), mask.count_ones())
}

/// The blocks of `family` (in order of first appearance, each in its
/// internal order) and the pool fields.
fn blocks_of(p: &Problem, family: Family) -> (Vec<Vec<usize>>, Vec<usize>) {
    let mut signatures: Vec<(u32, u32)> = Vec::new();
    let mut label = |f: usize| match family {
        Family::Strict => p.class[f],
        Family::Hard => p.color[f],
        Family::Paths => {
            let mask = path_mask(p, f);
            if mask == 0 {
                return 0;
            }
            let sig = (mask, p.class[f]);
            let i = match signatures.iter().position(|s| *s == sig) {
                Some(i) => i,
                None => {
                    signatures.push(sig);
                    signatures.len() - 1
                }
            };
            i as u32 + 1
        }
    };
    let mut blocks: Vec<(u32, Vec<usize>)> = Vec::new();
    let mut pool = Vec::new();
    for &f in &p.free {
        let l = label(f);
        if l == 0 {
            pool.push(f);
        } else {
            match blocks.iter_mut().find(|b| b.0 == l) {
                Some(b) => b.1.push(f),
                None => blocks.push((l, vec![f])),
            }
        }
    }
    let mut blocks: Vec<Vec<usize>> = blocks
        .into_iter()
        .map(|(_, fields)| block_order(p, &fields, family))
        .collect();
    if family == Family::Paths {
        blocks.sort_by_key(|b| path_block_key(p, b));
    }
    (blocks, pool)
}

/// One run per colour, each in its internal order (used by [`super::ilp`]).
pub(crate) fn hard_blocks(p: &Problem) -> Vec<Vec<usize>> {
    blocks_of(p, Family::Hard).0
}

/// Orders of the unpinned fields built by `family` on geometry `g`.
pub(crate) fn build_all(
    p: &Problem,
    g: Geometry,
    family: Family,
    work: &mut Work,
) -> Vec<Vec<usize>> {
    let (blocks, pool) = blocks_of(p, family);
    let placer = Placer::new(p, g, family == Family::Strict);
    let pool = Pool::new(p, &pool);
    let orders = block_orders(p, &blocks);
    let mut out = Vec::new();
    let front_fills: &[bool] = if g.report != 0 {
        &[false, true]
    } else {
        &[false]
    };
    for &front in front_fills {
        let mut start = Partial {
            cur: placer.start(),
            seq: Vec::with_capacity(p.free.len()),
            pool: pool.clone(),
        };
        if front {
            // Fill up to the first line boundary at the report phase.
            let target = g.report_sep_start(1);
            start.append(
                &placer,
                target,
                &[],
                blocks.first().map_or(1, |b| p.align[b[0]]),
            );
        }
        // stack[k]: the layout after the first k blocks of the current order;
        // consecutive orders share prefixes, and so the work on them.
        let mut stack = vec![start];
        let mut previous: &[usize] = &[];
        for sigma in &orders {
            let shared = sigma
                .iter()
                .zip(previous)
                .take_while(|(a, b)| a == b)
                .count();
            stack.truncate(shared + 1);
            for &b in &sigma[shared..] {
                let mut next = stack.last().expect("stack holds the start").clone();
                let target = if next.seq.is_empty() && !front {
                    0
                } else {
                    placer.earliest(&next.cur, blocks[b][0])
                };
                next.append(&placer, target, &blocks[b], p.align[blocks[b][0]]);
                stack.push(next);
            }
            let mut order = stack.last().expect("stack holds the start").finish(&placer);
            p.to_segment_order(&mut order);
            out.push(order);
            previous = sigma;
            if !work.spend(4 * p.n as u64 + 64) {
                return out;
            }
        }
    }
    out
}

/// A layout being built: the placed prefix and the pool fields left.
#[derive(Clone)]
struct Partial {
    cur: super::place::Cursor,
    seq: Vec<usize>,
    pool: Pool,
}

impl Partial {
    /// Fill from the pool up to `target` (for a field of alignment
    /// `next_align`), then lay `block`.
    fn append(&mut self, placer: &Placer, target: u64, block: &[usize], next_align: u64) {
        let g = placer.g;
        let limit = 4 * g.line + 4 * placer.p.natural_align;
        for f in self
            .pool
            .fill(self.cur.end, target, next_align, g.line, limit)
        {
            self.seq.push(f);
            placer.place(&mut self.cur, f);
        }
        for &f in block {
            self.seq.push(f);
            placer.place(&mut self.cur, f);
        }
    }

    /// The whole order: leftovers first up to the next multiple of their
    /// largest alignment without padding, then the rest, which packs from there.
    fn finish(&self, placer: &Placer) -> Vec<usize> {
        let p = placer.p;
        let g = placer.g;
        let mut seq = self.seq.clone();
        let mut pool = self.pool.clone();
        let rest = pool.rest();
        if let Some(top) = rest.iter().map(|&f| p.align[f]).max() {
            let aligned = super::geometry::align_up(self.cur.end, top);
            seq.extend(pool.fill(
                self.cur.end,
                aligned,
                top,
                g.line,
                4 * g.line + 4 * p.natural_align,
            ));
            seq.extend(tidy_order(p, &pool.rest()));
        }
        seq
    }
}

/// Inside a block: classes in order of first appearance (hard family), each
/// tidy (declaration order unless that pads).
fn block_order(p: &Problem, fields: &[usize], family: Family) -> Vec<usize> {
    if family == Family::Strict {
        return tidy_order(p, fields);
    }
    let mut classes: Vec<u32> = Vec::new();
    for &f in fields {
        if !classes.contains(&p.class[f]) {
            classes.push(p.class[f]);
        }
    }
    if classes.len() == 1 {
        return tidy_order(p, fields);
    }
    // Several classes of one colour: keep each class together, and the whole
    // block free of padding by decreasing alignment first.
    let mut v = fields.to_vec();
    v.sort_by_key(|&f| {
        (
            std::cmp::Reverse(p.align[f]),
            classes.iter().position(|&c| c == p.class[f]),
            f,
        )
    });
    v
}

/// The block orders to try: all of them for up to 5 blocks, else a few.
fn block_orders(p: &Problem, blocks: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let m = blocks.len();
    if m <= 5 {
        let mut out = Vec::new();
        permutations(&mut (0..m).collect(), 0, &mut out);
        return out;
    }
    // First appearance; by role (read-mostly, locked, lockless) and reversed;
    // largest first and last.
    let role_rank = |b: &Vec<usize>| match p.role[b[0]] {
        super::problem::SoftRole::Read => 0,
        super::problem::SoftRole::Locked(_) => 1,
        super::problem::SoftRole::Lockless => 2,
        super::problem::SoftRole::Cold => 3,
    };
    let bytes = |b: &Vec<usize>| b.iter().map(|&f| p.size[f]).sum::<u64>();
    let natural: Vec<usize> = (0..m).collect();
    let mut by_role = natural.clone();
    by_role.sort_by_key(|&i| role_rank(&blocks[i]));
    let mut by_role_rev = by_role.clone();
    by_role_rev.reverse();
    let mut by_size = natural.clone();
    by_size.sort_by_key(|&i| std::cmp::Reverse(bytes(&blocks[i])));
    let mut middle_big = Vec::new();
    for (k, &i) in by_size.iter().enumerate() {
        if k % 2 == 0 {
            middle_big.push(i);
        } else {
            middle_big.insert(0, i);
        }
    }
    let mut out = vec![natural, by_role, by_role_rev, by_size, middle_big];
    out.dedup();
    out
}

/// Every permutation of `v[k..]` (after `v[..k]`), appended to `out`.
pub(crate) fn permutations(v: &mut Vec<usize>, k: usize, out: &mut Vec<Vec<usize>>) {
    if k == v.len() {
        out.push(v.clone());
        return;
    }
    for i in k..v.len() {
        v.swap(k, i);
        permutations(v, k + 1, out);
        v.swap(k, i);
    }
}
