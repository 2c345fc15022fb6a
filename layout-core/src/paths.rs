//! Hot paths: how many cache lines each one touches in a layout, and the
//! fewest it could touch. This is the reference computation reports use; it
//! is independent of the solver, which may count the same thing its own way.
//!
//! A path ([`Struct::paths`]) touches the bytes its members' [`PathUse`]s
//! name (a whole member, or a sub-member's bytes). With `L` the line size,
//!
//! - **lines** at a base offset `b`: the number of distinct lines
//!   `floor((b + offset + k) / L)` over every byte `k` of every range of the
//!   path, where `offset` is the member's offset in the layout. The base is
//!   the `--offset` ([`Placement::Offset`]); in aligned mode it is the worst
//!   case, the maximum over every base that is a multiple of the struct's
//!   alignment below `L`.
//! - **bound**: `ceil(bytes / L)`, where `bytes` is the number of distinct
//!   bytes the path touches. No layout can do better: `L` bytes fill a line.
//!   It holds for every order, but a layout may not reach it (members
//!   bigger than a line, alignment, the rule, other paths).
//!
//! Zero-size members and empty ranges touch no line.
//!
//! [`PathUse`]: crate::model::PathUse

use crate::layout::Layout;
use crate::model::{Placement, Struct};
use serde::Serialize;

/// One path's lines in one layout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathLines {
    pub name: String,
    /// Lines touched (worst placement in aligned mode).
    pub lines: u64,
    /// `ceil(bytes / L)`: no layout touches fewer.
    pub bound: u64,
    /// Distinct bytes the path touches.
    pub bytes: u64,
}

/// Every path of `s` in `l`, in the order of [`Struct::paths`]. One pass
/// over the fields' uses sorts them by path: the work grows with the uses
/// (times the bases in aligned mode), not with paths times members.
pub fn path_lines(s: &Struct, l: &Layout) -> Vec<PathLines> {
    let spans = spans_by_path(s, l);
    let bytes = bytes_by_path(s);
    let bases = bases(l);
    let line = l.line.max(1);
    s.paths
        .iter()
        .zip(spans.iter().zip(bytes))
        .map(|(name, (spans, bytes))| PathLines {
            name: name.clone(),
            lines: worst_lines(spans, &bases, line),
            bound: bytes.div_ceil(line),
            bytes,
        })
        .collect()
}

/// Lines path `path` touches in `l`: at its offset, or the worst over every
/// aligned base in aligned mode.
pub fn lines(s: &Struct, l: &Layout, path: u32) -> u64 {
    worst_lines(&spans_of(s, l, path), &bases(l), l.line.max(1))
}

/// Lines path `path` touches when the struct starts `base` bytes into a line.
pub fn lines_at(s: &Struct, l: &Layout, path: u32, base: u64) -> u64 {
    lines_of_spans(&spans_of(s, l, path), base, l.line.max(1))
}

/// Distinct bytes path `path` touches (its members' ranges, overlaps counted once).
pub fn path_bytes(s: &Struct, path: u32) -> u64 {
    s.fields
        .iter()
        .map(|f| count_union(field_ranges(f, path).collect()))
        .sum()
}

/// The fewest lines path `path` can touch in an order that keeps the
/// author's line breaks and the hard rule: the members are cut into parts
/// at every line break, wall and line-aligned member ([`crate::segments`]),
/// each part starting a line, and a part needs `ceil(bytes / L)` lines for
/// the path's bytes in it, or more when one member's own ranges cannot fit
/// in fewer wherever its alignment lets it start (a used head and tail of
/// a member larger than a line). A member's floor is the fewest lines its
/// ranges touch over the offsets `0, align, 2 * align, ...` below `L`.
/// Where a part's path holds both lockless writers (a lock word counts)
/// and read-mostly members, no line may hold one of each, so it needs at
/// least `ceil(lockless / L) + ceil(read_mostly / L)` lines: a refcount
/// its author put on a line away from the members read beside it is no
/// spread line.
///
/// It is never above what the best order within the parts that keeps the
/// rule touches; a layout that moves members across a break may do better
/// still.
pub fn fewest_lines(s: &Struct, path: u32, line: u64) -> u64 {
    /// One part's path bytes: all of them, the lockless writers', the
    /// read-mostly members', and the largest member floor.
    #[derive(Default)]
    struct Part {
        bytes: u64,
        lockless: u64,
        read_mostly: u64,
        floor: u64,
    }
    impl Part {
        fn lines(&self, line: u64) -> u64 {
            let apart = if self.lockless > 0 && self.read_mostly > 0 {
                self.lockless.div_ceil(line) + self.read_mostly.div_ceil(line)
            } else {
                0
            };
            self.bytes.div_ceil(line).max(self.floor).max(apart)
        }
    }
    let line = line.max(1);
    let mut total = 0u64;
    let mut part = Part::default();
    for f in &s.fields {
        let cut =
            crate::segments::is_line_break(f) || crate::segments::is_wall(f) || f.align >= line;
        if cut {
            total += part.lines(line);
            part = Part::default();
        }
        let spans: Vec<(u64, u64)> = field_ranges(f, path).collect();
        if spans.is_empty() {
            continue;
        }
        let bytes = count_union(spans.clone());
        part.bytes += bytes;
        if f.rule_access().is_lockless() {
            part.lockless += bytes;
        } else if f.access.is_read_mostly() {
            part.read_mostly += bytes;
        }
        let member = (0..line)
            .step_by(f.align.clamp(1, line) as usize)
            .map(|base| lines_of_spans(&spans, base, line))
            .min()
            .unwrap_or(0);
        part.floor = part.floor.max(member);
    }
    total + part.lines(line)
}

/// The bases a path's lines are counted at: the `--offset`'s phase, or
/// every multiple of the alignment below `L` in aligned mode.
fn bases(l: &Layout) -> Vec<u64> {
    let line = l.line.max(1);
    match l.placement {
        Placement::Aligned => (0..line).step_by(l.align.clamp(1, line) as usize).collect(),
        _ => l.placement.offsets().iter().map(|o| o % line).collect(),
    }
}

/// The most lines `spans` touch over `bases` (0 without a base).
fn worst_lines(spans: &[(u64, u64)], bases: &[u64], line: u64) -> u64 {
    bases
        .iter()
        .map(|&base| lines_of_spans(spans, base, line))
        .max()
        .unwrap_or(0)
}

/// Distinct lines holding a byte of the closed byte ranges `spans` (from
/// the struct's start) when the struct starts `base` bytes into a line.
fn lines_of_spans(spans: &[(u64, u64)], base: u64, line: u64) -> u64 {
    count_union(
        spans
            .iter()
            .map(|&(first, last)| ((base + first) / line, (base + last) / line))
            .collect(),
    )
}

/// The non-empty ranges of `f` that path `path` uses, as closed ranges
/// relative to the member.
fn field_ranges(f: &crate::model::Field, path: u32) -> impl Iterator<Item = (u64, u64)> + '_ {
    f.paths
        .iter()
        .filter(move |u| u.path == path)
        .map(|u| (u.bytes.start, u.bytes.end.min(f.size)))
        .filter(|(a, b)| a < b)
        .map(|(a, b)| (a, b - 1))
}

/// The closed byte ranges path `path` touches in `l`, from the struct's start.
fn spans_of(s: &Struct, l: &Layout, path: u32) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for sl in &l.slots {
        if let Some(f) = s.fields.get(sl.field) {
            out.extend(field_ranges(f, path).map(|(a, b)| (sl.offset + a, sl.offset + b)));
        }
    }
    out
}

/// [`spans_of`] for every path at once, in one pass over the uses.
fn spans_by_path(s: &Struct, l: &Layout) -> Vec<Vec<(u64, u64)>> {
    let mut out = vec![Vec::new(); s.paths.len()];
    for sl in &l.slots {
        let Some(f) = s.fields.get(sl.field) else {
            continue;
        };
        for u in &f.paths {
            let end = u.bytes.end.min(f.size);
            if let Some(spans) = out.get_mut(u.path as usize) {
                if u.bytes.start < end {
                    spans.push((sl.offset + u.bytes.start, sl.offset + end - 1));
                }
            }
        }
    }
    out
}

/// [`path_bytes`] for every path at once: each member's ranges grouped by
/// path, counted once per member.
fn bytes_by_path(s: &Struct) -> Vec<u64> {
    let mut out = vec![0; s.paths.len()];
    let mut ranges: Vec<(u32, u64, u64)> = Vec::new();
    for f in &s.fields {
        ranges.clear();
        ranges.extend(
            f.paths
                .iter()
                .map(|u| (u.path, u.bytes.start, u.bytes.end.min(f.size)))
                .filter(|&(p, a, b)| a < b && (p as usize) < out.len())
                .map(|(p, a, b)| (p, a, b - 1)),
        );
        ranges.sort_unstable();
        for run in ranges.chunk_by(|x, y| x.0 == y.0) {
            out[run[0].0 as usize] += count_union(run.iter().map(|&(_, a, b)| (a, b)).collect());
        }
    }
    out
}

/// The number of integers in the union of the closed intervals `spans`.
pub(crate) fn count_union(mut spans: Vec<(u64, u64)>) -> u64 {
    spans.sort_unstable();
    let mut count = 0;
    let mut counted_to: Option<u64> = None;
    for (first, last) in spans {
        let from = match counted_to {
            Some(c) if c >= first => c + 1,
            _ => first,
        };
        if last >= from {
            count += last - from + 1;
        }
        counted_to = Some(counted_to.map_or(last, |c| c.max(last)));
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Slot;
    use crate::model::{Field, PathUse};

    fn field(name: &str, size: u64, uses: &[(u32, std::ops::Range<u64>)]) -> Field {
        let mut f = Field::new(name, "char", size, 1);
        f.paths = uses
            .iter()
            .map(|(p, r)| PathUse {
                path: *p,
                bytes: r.clone(),
            })
            .collect();
        f
    }

    fn layout(offsets: &[u64], size: u64, align: u64, placement: Placement) -> Layout {
        Layout {
            slots: offsets
                .iter()
                .enumerate()
                .map(|(field, &offset)| Slot { field, offset })
                .collect(),
            size,
            align,
            line: 64,
            placement,
        }
    }

    #[test]
    fn lines_count_distinct_lines_of_named_bytes() {
        // a: 0..8 (tx), b: 60..70 (tx: bytes 2..6 only, i.e. 62..66), c: 130..131 (rx).
        let mut s = Struct::new(
            "s",
            vec![
                field("a", 8, &[(0, 0..8)]),
                field("b", 10, &[(0, 2..6)]),
                field("c", 1, &[(1, 0..1)]),
            ],
        );
        s.paths = vec!["tx".into(), "rx".into()];
        let l = layout(&[0, 60, 130], 192, 1, Placement::Offset(0));
        let p = path_lines(&s, &l);
        // tx bytes 0..8 (line 0) and 62..66 (lines 0 and 1): 2 lines, 12 bytes.
        assert_eq!((p[0].lines, p[0].bound, p[0].bytes), (2, 1, 12), "{p:?}");
        assert_eq!((p[1].lines, p[1].bound), (1, 1));
        // At offset 2 the tx bytes are 2..10 and 64..68: lines 0 and 1 still.
        assert_eq!(lines_at(&s, &l, 0, 2), 2);
        // At offset 56: 56..64 is line 0, 118..122 is line 1.
        assert_eq!(lines_at(&s, &l, 0, 56), 2);
        // At offset 60: 60..68 spans lines 0-1, 122..126 line 1.
        assert_eq!(lines_at(&s, &l, 0, 60), 2);
        // Offset 1000 is phase 40: 40..48 and 102..106: lines 0 and 1.
        let l1000 = layout(&[0, 60, 130], 192, 1, Placement::Offset(1000));
        assert_eq!(lines(&s, &l1000, 0), 2);
    }

    #[test]
    fn fewest_lines_counts_a_member_that_cannot_fit_in_fewer() {
        // A 128-byte member aligned to 64 whose head and tail are used: two
        // lines wherever it goes, though its 16 bytes would fit in one.
        let mut big = field("big", 128, &[(0, 0..8), (0, 120..128)]);
        big.align = 64;
        let mut s = Struct::new("s", vec![big, field("x", 8, &[(0, 0..8)])]);
        s.paths = vec!["p".into()];
        assert_eq!(path_bytes(&s, 0).div_ceil(64), 1);
        assert_eq!(fewest_lines(&s, 0, 64), 2);
        // Byte-aligned, the same member can start at 56: 56..64 and 176..184
        // are still two lines apart.
        s.fields[0].align = 1;
        assert_eq!(fewest_lines(&s, 0, 64), 2);
        // A line-aligned member starts a line of its own: x (before it)
        // and its head cannot share one.
        let mut s2 = Struct::new(
            "s",
            vec![field("x", 8, &[(0, 0..8)]), field("y", 8, &[(0, 0..8)])],
        );
        s2.paths = vec!["p".into()];
        assert_eq!(fewest_lines(&s2, 0, 64), 1);
        s2.fields[1].align = 64;
        assert_eq!(fewest_lines(&s2, 0, 64), 2);
        // Used only at its head, it fits one line.
        s.fields[0].paths = vec![PathUse {
            path: 0,
            bytes: 0..8,
        }];
        assert_eq!(fewest_lines(&s, 0, 64), 1);
    }

    #[test]
    fn fewest_lines_keeps_lockless_writers_off_the_lines_read_beside_them() {
        // A refcount and two read-mostly members: 24 bytes would fit one
        // line, but the rule keeps the refcount off the readers' line.
        let mut s = Struct::new(
            "dst",
            vec![
                field("ops", 8, &[(0, 0..8)]),
                field("flags", 8, &[(0, 0..8)]),
                field("refcnt", 8, &[(0, 0..8)]),
            ],
        );
        s.paths = vec!["xmit".into()];
        assert_eq!(fewest_lines(&s, 0, 64), 1);
        s.fields[2].access = crate::Access::Lockless { group: None };
        assert_eq!(fewest_lines(&s, 0, 64), 1, "no read-mostly member yet");
        s.fields[0].access = crate::Access::ReadMostly;
        assert_eq!(fewest_lines(&s, 0, 64), 2);
        // A lock word counts as a lockless writer; a locked member does not.
        s.fields[2].access = crate::Access::LockedWrite {
            lock: "lock".into(),
        };
        assert_eq!(fewest_lines(&s, 0, 64), 1);
        s.fields[2].lock_word = true;
        assert_eq!(fewest_lines(&s, 0, 64), 2);
    }

    #[test]
    fn fewest_lines_is_never_above_the_best_order_that_keeps_the_rule() {
        // Every order of four members packed at their alignment, each
        // lockless, read-mostly or cold (an exhaustive search): the best
        // order with no line holding a lockless and a read-mostly member
        // (every order, when all are cold) touches at least fewest_lines.
        let sizes = [(40u64, 8u64), (24, 8), (70, 2), (16, 16)];
        let classes = [
            crate::Access::Lockless { group: None },
            crate::Access::ReadMostly,
            crate::Access::Cold,
        ];
        for mask in 1u32..16 {
            for pick in 0..81u32 {
                let fields: Vec<Field> = sizes
                    .iter()
                    .enumerate()
                    .map(|(i, &(size, align))| {
                        let uses: Vec<(u32, std::ops::Range<u64>)> = if mask & (1 << i) != 0 {
                            vec![(0, 0..size.min(12)), (0, size - 4..size)]
                        } else {
                            Vec::new()
                        };
                        let mut f = field(&format!("m{i}"), size, &uses);
                        f.align = align;
                        f.access = classes[(pick / 3u32.pow(i as u32) % 3) as usize].clone();
                        f
                    })
                    .collect();
                let mut s = Struct::new("s", fields);
                s.paths = vec!["p".into()];
                let floor = fewest_lines(&s, 0, 64);
                let mut best = u64::MAX;
                for perm in permutations(4) {
                    // Each member at its alignment, or pushed to the next
                    // line: every packing the rule may need.
                    for push in 0u32..16 {
                        let mut offsets = [0u64; 4];
                        let mut at = 0u64;
                        for (k, &i) in perm.iter().enumerate() {
                            if push & (1 << k) != 0 {
                                at = at.next_multiple_of(64);
                            }
                            at = at.next_multiple_of(sizes[i].1);
                            offsets[i] = at;
                            at += sizes[i].0;
                        }
                        let l = layout(&offsets, at.next_multiple_of(16), 16, Placement::Offset(0));
                        if crate::layout::reported_conflicts(&s, &l).is_empty() {
                            best = best.min(lines(&s, &l, 0));
                        }
                    }
                }
                assert!(
                    floor <= best,
                    "mask {mask} pick {pick}: floor {floor}, best {best}"
                );
                assert!(floor >= path_bytes(&s, 0).div_ceil(64));
            }
        }
    }

    fn permutations(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![Vec::new()];
        }
        let mut out = Vec::new();
        for p in permutations(n - 1) {
            for at in 0..=p.len() {
                let mut q = p.clone();
                q.insert(at, n - 1);
                out.push(q);
            }
        }
        out
    }

    #[test]
    fn aligned_mode_takes_the_worst_base() {
        // One 8-byte path member at 60: at base 0 it straddles lines 0 and 1.
        let mut s = Struct::new(
            "s",
            vec![field("pad", 60, &[]), field("x", 8, &[(0, 0..8)])],
        );
        s.paths = vec!["hot".into()];
        // Alignment 8: bases 0, 8, ..., 56; 60 + 0 straddles, 60 + 8 = 68 does not.
        let l = layout(&[0, 60], 72, 8, Placement::Aligned);
        assert_eq!(lines(&s, &l, 0), 2);
        // Alignment 64: only base 0.
        let l = layout(&[0, 56], 64, 64, Placement::Aligned);
        assert_eq!(lines(&s, &l, 0), 1);
        assert_eq!(path_lines(&s, &l)[0].bound, 1);
    }

    #[test]
    fn overlapping_ranges_count_once_and_empty_ones_not_at_all() {
        let mut s = Struct::new(
            "s",
            vec![
                field("u", 100, &[(0, 0..40), (0, 20..70)]),
                field("z", 0, &[(0, 0..0)]),
            ],
        );
        s.paths = vec!["p".into()];
        assert_eq!(path_bytes(&s, 0), 70);
        let l = layout(&[0, 100], 104, 1, Placement::Offset(0));
        let p = &path_lines(&s, &l)[0];
        assert_eq!((p.lines, p.bound), (2, 2));
    }

    #[test]
    fn every_path_at_once_agrees_with_one_path_at_a_time() {
        // 40 paths over 6 members of 24 bytes: path k names the bytes
        // k..k+9 of member k % 6 and all of member (k * 5) % 6.
        let fields: Vec<Field> = (0..6)
            .map(|i| {
                let uses: Vec<(u32, std::ops::Range<u64>)> = (0..40u32)
                    .flat_map(|k| {
                        let mut v = Vec::new();
                        if k % 6 == i {
                            v.push((k, u64::from(k % 20)..u64::from(k % 20) + 9));
                        }
                        if (k * 5) % 6 == i {
                            v.push((k, 0..24));
                        }
                        v
                    })
                    .collect();
                field(&format!("m{i}"), 24, &uses)
            })
            .collect();
        let mut s = Struct::new("s", fields);
        s.paths = (0..40).map(|k| format!("p{k}")).collect();
        let offsets = [0, 24, 48, 72, 96, 120];
        for placement in [Placement::Aligned, Placement::Offset(40)] {
            let l = layout(&offsets, 144, 8, placement);
            let all = path_lines(&s, &l);
            for (k, p) in all.iter().enumerate() {
                assert_eq!(p.lines, lines(&s, &l, k as u32), "path {k}");
                assert_eq!(p.bytes, path_bytes(&s, k as u32), "path {k}");
            }
        }
    }
}
