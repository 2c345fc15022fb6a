//! Local search on the order of the unpinned fields: small changes to the
//! order, each placed by the greedy placer and kept when the key improves.
//!
//! Moves (drawn by a fixed-seed generator, so results are reproducible):
//! move one field elsewhere, swap two fields, swap neighbours, send a field
//! back to its declaration rank, or sort a run of one class back into
//! declaration order (the last two shrink the diff). With [`Climb::runs`]
//! (the restarts' searches), a tenth of the single moves become moves of a
//! run of two to eight neighbours elsewhere as one: a line's worth of
//! members changes lines in one step, where moving them one by one passes
//! through worse sizes. A move that breaks the segment order
//! ([`super::problem::Problem::segment`]) is not tried.
//!
//! [`repack`] (between the restarts) is ruin and recreate: the members of
//! two lines taken out and put back one by one where the layout ends
//! earliest.
//!
//! Every evaluation is charged to the work budget ([`super::budget`]).

use super::budget::Work;
use super::eval::{slot, Evaluator, Key, Term, KEY_LEN};
use super::place::{Placed, Placer};
use super::Goal;

/// A small linear congruential generator (Knuth's MMIX constants).
pub(crate) struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Lcg {
        Lcg(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// How far one local search goes.
#[derive(Clone, Copy)]
pub(crate) struct Climb {
    /// The size bound of the geometry (see [`guided`]).
    pub size_bound: u64,
    /// Most orders evaluated.
    pub evals: u64,
    /// Also move runs of neighbours as one. Off in a struct's first solve
    /// (its moves, and so its results, stay what they were), on in the
    /// restarts, which only run where the size is left above its bound.
    pub runs: bool,
}

/// The key the search climbs: while the size is above `size_bound`, the
/// unrounded end comes right after it, so that moves which remove padding
/// count before the padding is all gone.
fn guided(key: &Key, end: u64, size_bound: u64, size_slot: usize) -> [u64; KEY_LEN + 1] {
    let mut g = [0; KEY_LEN + 1];
    g[..=size_slot].copy_from_slice(&key[..=size_slot]);
    g[size_slot + 1] = if key[size_slot] > size_bound { end } else { 0 };
    g[size_slot + 2..].copy_from_slice(&key[size_slot + 1..]);
    g
}

/// Improve `order` (with key `key`) in place. Stops early once `done(key)`.
pub(crate) fn local_search(
    placer: &Placer,
    ev: &mut Evaluator,
    order: &mut Vec<usize>,
    key: &mut Key,
    limits: Climb,
    work: &mut Work,
    done: &dyn Fn(&Key) -> bool,
) {
    let Climb {
        size_bound,
        evals: evals_budget,
        runs,
    } = limits;
    let n = order.len();
    if n < 2 || done(key) {
        return;
    }
    let p = placer.p;
    let size_slot = slot(ev.preset(), Term::Goal(Goal::Size)).unwrap_or(1);
    let unit = p.eval_work();
    let mut rng = Lcg::new(n as u64 * 7919 + key[0]);
    let mut scratch = placer.place_all(order);
    let mut current = guided(key, scratch.end, size_bound, size_slot);
    let mut try_order = |order: &[usize], key: &mut Key, scratch: &mut Placed| -> bool {
        if !p.in_segment_order(order) {
            return false;
        }
        placer.place_into(order, scratch);
        let k = ev.key(scratch, &placer.g);
        let g = guided(&k, scratch.end, size_bound, size_slot);
        if g < current {
            current = g;
            *key = k;
            true
        } else {
            false
        }
    };
    let mut evals = 0;
    while evals < evals_budget {
        if !work.spend(unit) {
            return;
        }
        evals += 1;
        let i = rng.below(n);
        match rng.below(10) {
            3 if runs => {
                // A run of neighbours moved elsewhere as one.
                let len = 2 + rng.below(7.min(n - 1));
                let lo = i.min(n - len);
                let j = rng.below(n - len + 1);
                if j == lo {
                    continue;
                }
                let run: Vec<usize> = order.drain(lo..lo + len).collect();
                order.splice(j..j, run.iter().copied());
                if !try_order(order, key, &mut scratch) {
                    order.drain(j..j + len);
                    order.splice(lo..lo, run);
                }
            }
            0..=3 => {
                let j = rng.below(n);
                if i == j {
                    continue;
                }
                let f = order.remove(i);
                order.insert(j, f);
                if !try_order(order, key, &mut scratch) {
                    order.remove(j);
                    order.insert(i, f);
                }
            }
            4..=5 => {
                let j = rng.below(n);
                if p.size[order[i]] == p.size[order[j]] && p.class[order[i]] == p.class[order[j]] {
                    continue;
                }
                order.swap(i, j);
                if !try_order(order, key, &mut scratch) {
                    order.swap(i, j);
                }
            }
            6..=7 => {
                let j = (i + 1) % n;
                order.swap(i, j);
                if !try_order(order, key, &mut scratch) {
                    order.swap(i, j);
                }
            }
            8 => {
                // Back to its declaration rank among the others.
                let f = order[i];
                let rank = order.iter().filter(|&&h| h < f).count();
                if rank == i {
                    continue;
                }
                order.remove(i);
                order.insert(rank, f);
                if !try_order(order, key, &mut scratch) {
                    order.remove(rank);
                    order.insert(i, f);
                }
            }
            _ => {
                // Sort the run of i's class around i by declaration order.
                let c = p.class[order[i]];
                let mut lo = i;
                while lo > 0 && p.class[order[lo - 1]] == c {
                    lo -= 1;
                }
                let mut hi = i + 1;
                while hi < n && p.class[order[hi]] == c {
                    hi += 1;
                }
                if order[lo..hi].windows(2).all(|w| w[0] < w[1]) {
                    continue;
                }
                let saved: Vec<usize> = order[lo..hi].to_vec();
                order[lo..hi].sort_unstable();
                if !try_order(order, key, &mut scratch) {
                    order[lo..hi].copy_from_slice(&saved);
                }
            }
        }
        if done(key) {
            return;
        }
    }
}

/// Ruin and recreate from `order` (with key `key`): the members with bytes
/// on two lines drawn at random (one line when both draws agree) are taken
/// out, and each is put back, in a random order, where the layout so far
/// ends earliest (ties drawn at random); the result is kept when its key is
/// no worse. Rounds go on until `spend` units of work are spent, the budget
/// is, or `done(key)`. A line's members leave the line together, so the
/// holes they leave can close at once, where moving them one by one passes
/// through larger sizes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn repack(
    placer: &Placer,
    ev: &mut Evaluator,
    order: &mut Vec<usize>,
    key: &mut Key,
    size_bound: u64,
    spend: u64,
    seed: u64,
    work: &mut Work,
    done: &dyn Fn(&Key) -> bool,
) {
    let n = order.len();
    if n < 4 || done(key) {
        return;
    }
    let p = placer.p;
    let line = placer.g.line.max(1);
    let size_slot = slot(ev.preset(), Term::Goal(Goal::Size)).unwrap_or(1);
    let unit = p.eval_work();
    let stop = work.used().saturating_add(spend);
    let mut rng = Lcg::new(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ n as u64);
    let mut scratch = placer.place_all(order);
    let mut current = guided(key, scratch.end, size_bound, size_slot);
    let mut trial: Vec<usize> = Vec::with_capacity(n);
    let mut out: Vec<usize> = Vec::with_capacity(n);
    while work.used() < stop {
        if !work.spend(unit) {
            return;
        }
        placer.place_into(order, &mut scratch);
        let lines = scratch.end.div_ceil(line).max(1) as usize;
        let (a, b) = (rng.below(lines) as u64, rng.below(lines) as u64);
        out.clear();
        out.extend(order.iter().copied().filter(|&f| {
            let l = scratch.offset[f] / line;
            p.size[f] > 0 && (l == a || l == b)
        }));
        if out.is_empty() || 2 * out.len() > n {
            continue;
        }
        for m in (1..out.len()).rev() {
            out.swap(m, rng.below(m + 1));
        }
        trial.clear();
        trial.extend(order.iter().copied().filter(|f| !out.contains(f)));
        let mut whole = true;
        for &f in &out {
            let mut best: Option<((bool, u64, u64), usize)> = None;
            let mut ties = 0;
            for j in 0..=trial.len() {
                trial.insert(j, f);
                if p.in_segment_order(&trial) {
                    if !work.spend(unit) {
                        return;
                    }
                    placer.place_into(&trial, &mut scratch);
                    let k = (scratch.late, scratch.size, scratch.end);
                    match best {
                        Some((bk, _)) if k > bk => {}
                        Some((bk, _)) if k == bk => {
                            ties += 1;
                            if rng.below(ties + 1) == 0 {
                                best = Some((k, j));
                            }
                        }
                        _ => {
                            best = Some((k, j));
                            ties = 0;
                        }
                    }
                }
                trial.remove(j);
            }
            let Some((_, j)) = best else {
                whole = false;
                break;
            };
            trial.insert(j, f);
        }
        if !whole || trial.len() != n || !p.in_segment_order(&trial) {
            continue;
        }
        if !work.spend(unit) {
            return;
        }
        placer.place_into(&trial, &mut scratch);
        let k = ev.key(&scratch, &placer.g);
        let g = guided(&k, scratch.end, size_bound, size_slot);
        if g <= current {
            current = g;
            *key = k;
            order.clone_from(&trial);
            if done(key) {
                return;
            }
        }
    }
}
