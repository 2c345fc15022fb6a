//! The rule in O(n log n) steps, for the generated checks. rustc's const
//! evaluator stops a constant that takes too many steps ("constant
//! evaluation is taking a long time"), and comparing every pair of fields
//! at every phase stops a struct of a few hundred fields.
//!
//! Fields with bytes occupy disjoint byte ranges, so sorted by offset they
//! also end in order, and field `a` before field `c` shares a line with `c`
//! exactly when `c`'s first line is at most `a`'s last. Sweeping the sorted
//! fields while remembering the furthest last line of each kind of field
//! (read-mostly; lockless, with the group of the furthest one and the
//! furthest of any other group) finds every pair [`must_not_share`] forbids.
//!
//! Across phases: the struct starts at the phases `p = 0, s, 2s, ..` below
//! the line `L` (`s` divides `L`). `a` before `c` shares a line at `p` when
//! `(p + last(a)) mod L + (first(c) - last(a)) < L`; the left term takes
//! every value congruent to `last(a)` modulo `s`, the smallest being
//! `last(a) mod s`, so some phase shares exactly when `first(c) < last(a) -
//! last(a) mod s + L`. One sweep with these keys decides every phase at once.
//!
//! [`must_not_share`]: super::class::must_not_share

use super::class::{same_group, Class};
use super::FieldFacts;

/// The fields with bytes (zero-sized fields share nothing) sorted by offset
/// (then index): `order[..len]`; `rank[i]` is field `i`'s place in it, or
/// `usize::MAX` for a zero-sized field.
pub struct Sorted<const N: usize> {
    pub order: [usize; N],
    pub rank: [usize; N],
    pub len: usize,
}

impl<const N: usize> Sorted<N> {
    /// Heap sort: O(n log n) steps. `fields` has `N` entries.
    pub const fn new(fields: &[FieldFacts]) -> Self {
        let mut order = [0usize; N];
        let mut len = 0;
        let mut i = 0;
        while i < N {
            if fields[i].size > 0 {
                order[len] = i;
                len += 1;
            }
            i += 1;
        }
        let mut start = len / 2;
        while start > 0 {
            start -= 1;
            sift_down(fields, &mut order, start, len);
        }
        let mut end = len;
        while end > 1 {
            end -= 1;
            let top = order[0];
            order[0] = order[end];
            order[end] = top;
            sift_down(fields, &mut order, 0, end);
        }
        let mut rank = [usize::MAX; N];
        let mut k = 0;
        while k < len {
            rank[order[k]] = k;
            k += 1;
        }
        Sorted { order, rank, len }
    }
}

/// Field `a` sorts before field `b`.
const fn before(fields: &[FieldFacts], a: usize, b: usize) -> bool {
    let (x, y) = (fields[a].offset, fields[b].offset);
    x < y || (x == y && a < b)
}

/// Restores the max-heap below `root` in `order[..end]`.
const fn sift_down(fields: &[FieldFacts], order: &mut [usize], mut root: usize, end: usize) {
    loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && before(fields, order[child], order[child + 1]) {
            child += 1;
        }
        if !before(fields, order[root], order[child]) {
            return;
        }
        let t = order[root];
        order[root] = order[child];
        order[child] = t;
        root = child;
    }
}

/// How far a field reaches: `first(c) <= last(a)` for `a` sorted before `c`
/// means they share a line.
#[derive(Clone, Copy)]
pub enum Reach {
    /// At some phase, a multiple of `step` below `line`: bytes, as in the
    /// module's comment.
    AnyPhase { step: usize, line: usize },
    /// When the struct starts `phase` bytes into a line: line numbers.
    At { phase: usize, line: usize },
}

impl Reach {
    /// Of a field with bytes.
    pub const fn first(self, f: &FieldFacts) -> usize {
        match self {
            Reach::AnyPhase { .. } => f.offset,
            Reach::At { phase, line } => (phase + f.offset) / line,
        }
    }

    /// Of a field with bytes.
    pub const fn last(self, f: &FieldFacts) -> usize {
        let last = f.offset + f.size - 1;
        match self {
            Reach::AnyPhase { step, line } => last - last % step + line - 1,
            Reach::At { phase, line } => (phase + last) / line,
        }
    }
}

/// Whether two fields the rule keeps apart share a line under `reach`.
pub const fn breaks<const N: usize>(
    fields: &[FieldFacts],
    sorted: &Sorted<N>,
    reach: Reach,
) -> bool {
    // The furthest `last` of a read-mostly field so far; of a lockless
    // field, with its group; of a lockless field of any other group.
    let mut read_mostly: Option<usize> = None;
    let mut lockless: Option<(usize, Option<&str>)> = None;
    let mut other_group: Option<usize> = None;
    let mut k = 0;
    while k < sorted.len {
        let c = &fields[sorted.order[k]];
        let (first, last) = (reach.first(c), reach.last(c));
        match c.rule() {
            Class::ReadMostly => {
                if let Some((end, _)) = lockless {
                    if first <= end {
                        return true;
                    }
                }
                read_mostly = Some(max(read_mostly, last));
            }
            Class::Lockless(group) => {
                if let Some(end) = read_mostly {
                    if first <= end {
                        return true;
                    }
                }
                match lockless {
                    None => lockless = Some((last, group)),
                    Some((end, top)) => {
                        let other = if same_group(group, top) {
                            other_group
                        } else {
                            Some(end)
                        };
                        if let Some(end) = other {
                            if first <= end {
                                return true;
                            }
                        }
                        if same_group(group, top) {
                            if last > end {
                                lockless = Some((last, top));
                            }
                        } else if last > end {
                            other_group = Some(end);
                            lockless = Some((last, group));
                        } else {
                            other_group = Some(max(other_group, last));
                        }
                    }
                }
            }
            Class::LockedWrite(_) | Class::Cold => {}
        }
        k += 1;
    }
    false
}

const fn max(a: Option<usize>, b: usize) -> usize {
    match a {
        Some(a) if a > b => a,
        _ => b,
    }
}

/// The fields sorted next to field `i` whose lines (under `reach`) meet its
/// lines: `sorted.order[from..to]`, `i` included. Empty for a zero-sized
/// field.
pub const fn neighbours<const N: usize>(
    fields: &[FieldFacts],
    sorted: &Sorted<N>,
    i: usize,
    reach: Reach,
) -> (usize, usize) {
    let r = sorted.rank[i];
    if r == usize::MAX {
        return (0, 0);
    }
    let a = &fields[i];
    let (first, last) = (reach.first(a), reach.last(a));
    let mut from = r;
    while from > 0 && reach.last(&fields[sorted.order[from - 1]]) >= first {
        from -= 1;
    }
    let mut to = r + 1;
    while to < sorted.len && reach.first(&fields[sorted.order[to]]) <= last {
        to += 1;
    }
    (from, to)
}
