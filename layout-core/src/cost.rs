//! Soft costs and the secondary objective terms of a layout.
//!
//! All terms are judged at the layout's report placement (its `--offset` in
//! phase mode, phase 0 otherwise), with lines numbered by
//! [`Layout::line_of`]:
//!
//! - **soft cost**: for every line, `lockless_locked` if it holds bytes of a
//!   lockless and a locked field, plus `locked_read` if it holds a locked and a
//!   read-mostly field, plus `locked_locked` if it holds locked fields of two
//!   different locks. Each kind is charged once per line.
//! - **read lines**: the number of distinct lines that hold bytes of
//!   read-mostly fields.
//! - **hot-path lines**: for each hot path ([`crate::model::Struct::paths`]),
//!   the number of distinct lines `floor((base + off + k) / L)` over every
//!   byte `k` of every [`crate::model::PathUse`] range of the members on the
//!   path (`off` the member's offset; empty ranges count nothing), where
//!   `base` is the `--offset`, and in aligned mode the largest count over
//!   every base that is a multiple of the struct's alignment below `L`;
//!   [`path_lines_each`] gives each path's, [`path_lines`] their sum.
//! - **churn**: the number of members moved: `n` minus the length of the
//!   longest subsequence of the layout's order that keeps declaration order
//!   (the members outside it are the ones a diff moves).
//! - **movement**: the number of field pairs whose relative order differs
//!   from the declaration order (Kendall tau distance), with the layout's
//!   order being the order of its slots.
//!
//! Zero-size fields hold no bytes: they cost nothing and touch no line.

use crate::layout::Layout;
use crate::model::{Access, Struct};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Weights of the soft costs. Each is charged once per line on
/// which the two kinds of field meet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftWeights {
    /// A lockless field next to a locked field.
    pub lockless_locked: u64,
    /// A locked field next to a read-mostly field.
    pub locked_read: u64,
    /// Fields under different locks on one line.
    pub locked_locked: u64,
}

impl Default for SoftWeights {
    fn default() -> Self {
        SoftWeights {
            lockless_locked: 4,
            locked_read: 2,
            locked_locked: 1,
        }
    }
}

/// The objective terms of one layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Cost {
    pub size: u64,
    pub soft: u64,
    pub read_lines: u64,
    /// Lines the hot paths touch, summed over the paths.
    pub path_lines: u64,
    /// Members moved from the declaration order.
    pub churn: u64,
    pub movement: u64,
}

/// Which two kinds of field meet on a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SoftKind {
    /// A lockless field and a locked field.
    LocklessLocked,
    /// A locked field and a read-mostly field.
    LockedRead,
    /// Locked fields of two different locks.
    LockedLocked,
}

impl SoftKind {
    /// The weight charged for this kind.
    pub fn weight(self, w: &SoftWeights) -> u64 {
        match self {
            SoftKind::LocklessLocked => w.lockless_locked,
            SoftKind::LockedRead => w.locked_read,
            SoftKind::LockedLocked => w.locked_locked,
        }
    }
}

/// One soft cost charged on one line, with the fields on either side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoftLine {
    /// Line number at the report placement (see [`Layout::line_of`]).
    pub line: u64,
    pub kind: SoftKind,
    pub weight: u64,
    /// Lockless fields (`LocklessLocked`), locked fields (`LockedRead`), or
    /// the fields of the first lock on the line (`LockedLocked`).
    pub first: Vec<String>,
    /// Locked fields (`LocklessLocked`), read-mostly fields (`LockedRead`),
    /// or the fields of the other locks (`LockedLocked`).
    pub second: Vec<String>,
}

/// Every objective term of `l` (see the module docs).
pub fn cost_of(s: &Struct, l: &Layout, w: &SoftWeights) -> Cost {
    Cost {
        size: l.size,
        soft: soft_cost(s, l, w),
        read_lines: read_lines(s, l),
        path_lines: path_lines(s, l),
        churn: churn(s, l),
        movement: movement(s, l),
    }
}

/// The lines each hot path touches (index = path; see the module docs),
/// as the reference count in [`crate::paths`] gives them.
pub fn path_lines_each(s: &Struct, l: &Layout) -> Vec<u64> {
    crate::paths::path_lines(s, l)
        .iter()
        .map(|p| p.lines)
        .collect()
}

/// The lines the hot paths touch, summed over the paths.
pub fn path_lines(s: &Struct, l: &Layout) -> u64 {
    path_lines_each(s, l).iter().sum()
}

/// Members moved: the number of fields minus the longest subsequence of the
/// layout's slot order that keeps declaration order.
pub fn churn(s: &Struct, l: &Layout) -> u64 {
    let order: Vec<usize> = l
        .slots
        .iter()
        .map(|sl| sl.field)
        .filter(|&f| f < s.fields.len())
        .collect();
    (order.len() - longest_increasing(&order)) as u64
}

/// Length of the longest strictly increasing subsequence of `seq`.
pub fn longest_increasing(seq: &[usize]) -> usize {
    let mut tails: Vec<usize> = Vec::with_capacity(seq.len());
    for &x in seq {
        let at = tails.partition_point(|&t| t < x);
        if at == tails.len() {
            tails.push(x);
        } else {
            tails[at] = x;
        }
    }
    tails.len()
}

/// The total soft cost: the sum of the weights of [`soft_lines`].
pub fn soft_cost(s: &Struct, l: &Layout, w: &SoftWeights) -> u64 {
    soft_lines(s, l, w).iter().map(|sl| sl.weight).sum()
}

/// Every soft cost charged, line by line (lines in increasing order). Kinds
/// with weight 0 are left out.
pub fn soft_lines(s: &Struct, l: &Layout, w: &SoftWeights) -> Vec<SoftLine> {
    let mut out = Vec::new();
    for (line, fields) in fields_by_line(s, l) {
        let of = |pred: &dyn Fn(&Access) -> bool| -> Vec<String> {
            fields
                .iter()
                .filter(|&&i| pred(&s.fields[i].access))
                .map(|&i| s.fields[i].name.clone())
                .collect()
        };
        let lockless = of(&|a| a.is_lockless());
        let locked = of(&|a| a.lock().is_some());
        let read = of(&|a| a.is_read_mostly());
        let mut push = |kind: SoftKind, first: Vec<String>, second: Vec<String>| {
            let weight = kind.weight(w);
            if weight > 0 {
                out.push(SoftLine {
                    line,
                    kind,
                    weight,
                    first,
                    second,
                });
            }
        };
        if !lockless.is_empty() && !locked.is_empty() {
            push(SoftKind::LocklessLocked, lockless, locked.clone());
        }
        if !locked.is_empty() && !read.is_empty() {
            push(SoftKind::LockedRead, locked, read);
        }
        let mut by_lock: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for &i in &fields {
            if let Some(lock) = s.fields[i].access.lock() {
                by_lock
                    .entry(lock)
                    .or_default()
                    .push(s.fields[i].name.clone());
            }
        }
        if by_lock.len() >= 2 {
            let mut groups = by_lock.into_values();
            let first = groups.next().unwrap_or_default();
            let second = groups.flatten().collect();
            push(SoftKind::LockedLocked, first, second);
        }
    }
    out
}

/// The number of distinct lines holding bytes of read-mostly fields.
pub fn read_lines(s: &Struct, l: &Layout) -> u64 {
    let spans: Vec<(u64, u64)> = l
        .slots
        .iter()
        .filter_map(|sl| {
            let f = s.fields.get(sl.field)?;
            (f.size > 0 && f.access.is_read_mostly())
                .then(|| (l.line_of(sl.offset), l.line_of(sl.offset + f.size - 1)))
        })
        .collect();
    crate::paths::count_union(spans)
}

/// Kendall tau distance between the layout's slot order and the declaration
/// order: the number of pairs of fields that swapped places.
pub fn movement(s: &Struct, l: &Layout) -> u64 {
    let order: Vec<usize> = l
        .slots
        .iter()
        .map(|sl| sl.field)
        .filter(|&f| f < s.fields.len())
        .collect();
    inversions(&order)
}

/// Number of pairs `i < j` with `seq[i] > seq[j]` (merge sort, O(n log n)).
pub fn inversions(seq: &[usize]) -> u64 {
    fn sort_count(v: &mut [usize], buf: &mut Vec<usize>) -> u64 {
        if v.len() < 2 {
            return 0;
        }
        let mid = v.len() / 2;
        let mut count = sort_count(&mut v[..mid], buf) + sort_count(&mut v[mid..], buf);
        buf.clear();
        let (mut i, mut j) = (0, mid);
        while i < mid && j < v.len() {
            if v[j] < v[i] {
                count += (mid - i) as u64;
                buf.push(v[j]);
                j += 1;
            } else {
                buf.push(v[i]);
                i += 1;
            }
        }
        buf.extend_from_slice(&v[i..mid]);
        buf.extend_from_slice(&v[j..]);
        v.copy_from_slice(buf);
        count
    }
    let mut v = seq.to_vec();
    sort_count(&mut v, &mut Vec::with_capacity(seq.len()))
}

/// The fields holding bytes of each line that may hold more than one field,
/// at the report placement: the first and last line of every field (a line
/// strictly inside a field holds nothing else, since fields do not overlap).
fn fields_by_line(s: &Struct, l: &Layout) -> BTreeMap<u64, Vec<usize>> {
    let mut per_line: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for sl in &l.slots {
        let Some(f) = s.fields.get(sl.field) else {
            continue;
        };
        if f.size == 0 {
            continue;
        }
        let (first, last) = (l.line_of(sl.offset), l.line_of(sl.offset + f.size - 1));
        per_line.entry(first).or_default().push(sl.field);
        if last != first {
            per_line.entry(last).or_default().push(sl.field);
        }
    }
    per_line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Slot;
    use crate::model::{Field, Placement};

    fn field(name: &str, size: u64, access: Access) -> Field {
        Field::new(name, "t", size, 8).with_access(access)
    }

    fn layout(offsets: &[(usize, u64)], size: u64, placement: Placement) -> Layout {
        Layout {
            slots: offsets
                .iter()
                .map(|&(field, offset)| Slot { field, offset })
                .collect(),
            size,
            align: 8,
            line: 64,
            placement,
        }
    }

    #[test]
    fn charges_each_kind_once_per_line() {
        let lock = |l: &str| Access::LockedWrite { lock: l.into() };
        let s = Struct::new(
            "s",
            vec![
                field("a", 8, Access::Lockless { group: None }),
                field("l1", 8, lock("x")),
                field("l2", 8, lock("y")),
                field("r", 8, Access::ReadMostly),
                field("c", 64, Access::Cold),
            ],
        );
        let l = layout(
            &[(0, 0), (1, 8), (2, 16), (3, 24), (4, 32)],
            96,
            Placement::Aligned,
        );
        let lines = soft_lines(&s, &l, &SoftWeights::default());
        let kinds: Vec<SoftKind> = lines.iter().map(|sl| sl.kind).collect();
        assert_eq!(
            kinds,
            [
                SoftKind::LocklessLocked,
                SoftKind::LockedRead,
                SoftKind::LockedLocked
            ]
        );
        assert_eq!(lines[2].first, ["l1"]);
        assert_eq!(lines[2].second, ["l2"]);
        let c = cost_of(&s, &l, &SoftWeights::default());
        assert_eq!(
            c,
            Cost {
                size: 96,
                soft: 4 + 2 + 1,
                read_lines: 1,
                path_lines: 0,
                churn: 0,
                movement: 0
            }
        );
    }

    #[test]
    fn lines_follow_the_report_offset() {
        let s = Struct::new(
            "s",
            vec![
                field("r", 8, Access::ReadMostly),
                field("l", 8, Access::LockedWrite { lock: "k".into() }),
            ],
        );
        // At offset 56 the struct's bytes 0..8 sit on one line, 8..16 on the next.
        let l = layout(&[(0, 0), (1, 8)], 16, Placement::Offset(56));
        assert_eq!(soft_cost(&s, &l, &SoftWeights::default()), 0);
        let l = layout(&[(0, 0), (1, 8)], 16, Placement::Aligned);
        assert_eq!(soft_cost(&s, &l, &SoftWeights::default()), 2);
    }

    #[test]
    fn movement_counts_swapped_pairs() {
        assert_eq!(inversions(&[0, 1, 2, 3]), 0);
        assert_eq!(inversions(&[3, 2, 1, 0]), 6);
        assert_eq!(inversions(&[1, 0, 3, 2, 4]), 2);
        let s = Struct::new(
            "s",
            (0..3)
                .map(|i| field(&format!("f{i}"), 8, Access::Cold))
                .collect(),
        );
        let l = layout(&[(2, 0), (0, 8), (1, 16)], 24, Placement::Aligned);
        assert_eq!(movement(&s, &l), 2);
        // One member moved (f2 to the front).
        assert_eq!(churn(&s, &l), 1);
    }

    #[test]
    fn churn_is_members_outside_the_longest_kept_run() {
        assert_eq!(longest_increasing(&[0, 1, 2, 3]), 4);
        assert_eq!(longest_increasing(&[3, 2, 1, 0]), 1);
        assert_eq!(longest_increasing(&[1, 0, 3, 2, 4]), 3);
        assert_eq!(longest_increasing(&[4, 0, 1, 2, 3]), 4);
    }

    #[test]
    fn path_lines_count_distinct_lines_at_the_worst_base() {
        use crate::model::PathUse;
        let mut s = Struct::new(
            "s",
            vec![
                field("a", 8, Access::Cold),
                field("b", 48, Access::Cold),
                field("c", 8, Access::Cold),
            ],
        );
        s.paths = vec!["tx".into()];
        s.fields[0].paths = vec![PathUse {
            path: 0,
            bytes: 0..8,
        }];
        s.fields[2].paths = vec![PathUse {
            path: 0,
            bytes: 0..8,
        }];
        // a at 0, c at 56: one line at base 0, two at base 8 (c at 64..72).
        let l = layout(&[(0, 0), (1, 8), (2, 56)], 64, Placement::Offset(0));
        assert_eq!(path_lines_each(&s, &l), [1]);
        let l = layout(&[(0, 0), (1, 8), (2, 56)], 64, Placement::Offset(8));
        assert_eq!(path_lines_each(&s, &l), [2]);
        // Aligned at 8: the worst base (8..56) gives two lines.
        let l = layout(&[(0, 0), (1, 8), (2, 56)], 64, Placement::Aligned);
        assert_eq!(path_lines(&s, &l), 2);
        // An empty range touches nothing.
        s.fields[2].paths = vec![PathUse {
            path: 0,
            bytes: 4..4,
        }];
        assert_eq!(path_lines(&s, &l), 1);
    }

    #[test]
    fn huge_fields_are_counted_without_visiting_their_lines() {
        let s = Struct::new(
            "s",
            vec![
                field("r", 1 << 40, Access::ReadMostly),
                field("l", 8, Access::LockedWrite { lock: "k".into() }),
            ],
        );
        let l = layout(&[(0, 0), (1, 1 << 40)], (1 << 40) + 8, Placement::Aligned);
        assert_eq!(read_lines(&s, &l), (1 << 40) / 64);
        assert_eq!(soft_cost(&s, &l, &SoftWeights::default()), 0);
        let l = layout(&[(1, 0), (0, 8)], (1 << 40) + 8, Placement::Aligned);
        assert_eq!(read_lines(&s, &l), (1 << 40) / 64 + 1);
        assert_eq!(soft_cost(&s, &l, &SoftWeights::default()), 2);
    }

    #[test]
    fn zero_size_fields_touch_no_line() {
        let s = Struct::new(
            "s",
            vec![
                field("r", 0, Access::ReadMostly),
                field("l", 8, Access::LockedWrite { lock: "k".into() }),
            ],
        );
        let l = layout(&[(0, 0), (1, 0)], 8, Placement::Aligned);
        assert_eq!(cost_of(&s, &l, &SoftWeights::default()).soft, 0);
        assert_eq!(read_lines(&s, &l), 0);
    }
}
