//! Recomputes an aggregate's layout after some of the types it embeds
//! changed size or alignment, with C's rules as [`crate::place`] applies
//! them: every member goes at the next multiple of its alignment after the
//! members before it, the size rounds up to the aggregate's alignment.
//!
//! Members keep their effective alignment: the larger of their type's and
//! their `aligned` attribute's. An attribute is not always known (a header's
//! `CACHELINE_PADDING()` markers are not members; BTF states no alignment
//! and the type database infers only what it can): a member that sits past
//! the place natural placement gives it must have had one. Like pahole, the
//! attribute is inferred from the offset: the largest power of two up to 64
//! (the kernel's cache line) that divides the offset and explains the gap,
//! else the smallest larger one. A gap no alignment explains stays as fixed
//! padding. Each inference is returned so that reports can say so.
//!
//! Runs of bitfields move as one block by a multiple of their widest type's
//! alignment, so their bits stay in the same place within their storage
//! units. Members that overlap what precedes them (union members, members of
//! a struct the database reads as packed) keep their place relative to it.

use super::Shape;
use crate::place::{self, Cursor};
use crate::typedb::{Aggregate, AggregateKind, Member, TypeDb};
use std::collections::HashMap;

/// An aggregate laid out again, and what had to be assumed to do it.
#[derive(Clone, Debug)]
pub(crate) struct Relaid {
    pub agg: Aggregate,
    pub assumptions: Vec<String>,
}

/// The new layout of `old` when the aggregates of `db` at the indices of
/// `changed` take their new shapes.
pub(crate) fn relayout(db: &TypeDb, old: &Aggregate, changed: &HashMap<usize, Shape>) -> Relaid {
    let change_of = |i: usize| -> Option<(Shape, Shape)> {
        let target = db.member_aggregate(old, i)?;
        let new = *changed.get(&db.index_of(target)?)?;
        Some((
            Shape {
                size: target.size,
                align: target.align,
            },
            new,
        ))
    };
    Placer::new(old).run(change_of)
}

struct Placer<'a> {
    old: &'a Aggregate,
    members: Vec<Member>,
    /// End of everything placed so far, in the old and the new layout.
    end_old: u64,
    end_new: u64,
    /// The aggregate's alignment as its members and attribute explain it.
    align_old: u64,
    align_new: u64,
    assumptions: Vec<String>,
}

impl<'a> Placer<'a> {
    fn new(old: &'a Aggregate) -> Self {
        let own = old.attr_align.unwrap_or(1).max(1);
        Placer {
            old,
            members: old.members.clone(),
            end_old: 0,
            end_new: 0,
            align_old: own,
            align_new: own,
            assumptions: Vec::new(),
        }
    }

    fn run(mut self, change_of: impl Fn(usize) -> Option<(Shape, Shape)>) -> Relaid {
        let mut i = 0;
        while i < self.old.members.len() {
            if self.old.members[i].is_bitfield() {
                i = self.place_bitfields(i);
            } else {
                self.place_member(i, change_of(i));
                i += 1;
            }
        }
        let (size, align) = self.finish_size();
        let mut agg = self.old.clone();
        agg.members = self.members;
        agg.size = size;
        agg.align = align;
        Relaid {
            agg,
            assumptions: self.assumptions,
        }
    }

    fn is_union(&self) -> bool {
        self.old.kind == AggregateKind::Union
    }

    fn place_member(&mut self, i: usize, change: Option<(Shape, Shape)>) {
        let m = &self.old.members[i];
        let packed = self.old.packed;
        let attr = m.attr_align.unwrap_or(1).max(1);
        let (size_new, type_align_new) = match change {
            Some((was, now)) => (resized(m, was, now), now.align),
            None => (m.size, m.align),
        };
        let natural_align = |type_align: u64| if packed { attr } else { type_align.max(attr) };
        let mut a_old = natural_align(m.align.max(1));
        let mut a_new = natural_align(type_align_new.max(1));
        let mut inferred = None;
        let offset_new = if self.is_union() {
            m.offset
        } else {
            let natural = c_places(self.end_old, a_old);
            if m.offset == natural {
                c_places(self.end_new, a_new)
            } else if m.offset > natural {
                match inferred_align(m.offset, self.end_old, a_old) {
                    Some(p) => {
                        self.assumptions.push(format!(
                            "{}.{}: offset {} lies past its natural place {natural}: assumed __aligned({p})",
                            self.old.name,
                            member_label(m),
                            m.offset
                        ));
                        a_old = a_old.max(p);
                        a_new = a_new.max(p);
                        inferred = Some(p);
                        c_places(self.end_new, a_new)
                    }
                    None => {
                        let extra = m.offset - natural;
                        self.assumptions.push(format!(
                            "{}.{}: {} of padding before it that no alignment explains, kept as is",
                            self.old.name,
                            member_label(m),
                            bytes(extra)
                        ));
                        c_places(self.end_new, a_new) + extra
                    }
                }
            } else {
                shifted(m.offset, self.end_new as i128 - self.end_old as i128, a_new)
            }
        };
        self.end_old = self.end_old.max(m.offset + m.size);
        self.end_new = self.end_new.max(offset_new + size_new);
        self.align_old = self.align_old.max(a_old);
        self.align_new = self.align_new.max(a_new);
        let placed = &mut self.members[i];
        placed.offset = offset_new;
        placed.size = size_new;
        placed.align = type_align_new;
        if inferred.is_some() {
            placed.attr_align = inferred;
        }
    }

    /// Places the run of bitfields that starts at `start`; returns its end.
    fn place_bitfields(&mut self, start: usize) -> usize {
        let members = &self.old.members;
        let end = crate::typedb::bitfield_group_end(members, start);
        let run = &members[start..end];
        let align = if self.old.packed {
            1
        } else {
            run.iter().map(|m| m.align.max(1)).max().unwrap_or(1)
        };
        let bytes_end = run.iter().map(|m| m.byte_range().end).max().unwrap_or(0);
        let shift = if self.is_union() {
            0
        } else {
            shift_by(self.end_new as i128 - self.end_old as i128, align)
        };
        for (k, m) in (start..end).zip(run) {
            let placed = &mut self.members[k];
            placed.offset = add(m.offset, shift);
            placed.bit_offset = m.bit_offset.map(|b| add(b, shift * 8));
        }
        self.end_old = self.end_old.max(bytes_end);
        self.end_new = self.end_new.max(add(bytes_end, shift));
        self.align_old = self.align_old.max(align);
        self.align_new = self.align_new.max(align);
        end
    }

    /// The new size and alignment. An alignment or tail padding the members
    /// do not explain (the database's inference, an attribute it could not
    /// see) is kept.
    fn finish_size(&mut self) -> (u64, u64) {
        let old = self.old;
        let align_new = if self.align_new == self.align_old {
            old.align
        } else if old.align > self.align_old {
            self.align_new.max(old.align)
        } else {
            self.align_new
        };
        let natural_old = Cursor::at(self.end_old).finish(old.align).size;
        let size = if old.size == natural_old {
            Cursor::at(self.end_new).finish(align_new).size
        } else if old.size > natural_old {
            let extra = old.size - natural_old;
            self.assumptions.push(format!(
                "{}: {} of tail padding that its alignment does not explain, kept as is",
                old.name,
                bytes(extra)
            ));
            Cursor::at(self.end_new).finish(align_new).size + extra
        } else {
            add(old.size, self.end_new as i128 - self.end_old as i128)
        };
        (size, align_new)
    }
}

/// Where C places a member aligned to `align` after members that end at
/// `end`.
fn c_places(end: u64, align: u64) -> u64 {
    Cursor::at(end).place(&place::Member::new(0, align))
}

/// The new size of a member whose type goes from `was` to `now`.
fn resized(m: &Member, was: Shape, now: Shape) -> u64 {
    if m.count == 0 {
        0
    } else if Some(m.size) == m.count.checked_mul(was.size) {
        m.count.saturating_mul(now.size)
    } else {
        add(
            m.size,
            m.count as i128 * (now.size as i128 - was.size as i128),
        )
    }
}

/// An alignment attribute that puts a member at `offset` after `end`:
/// powers of two `p >= floor` that divide the offset with `offset - end < p`;
/// the largest up to 64, else the smallest.
fn inferred_align(offset: u64, end: u64, floor: u64) -> Option<u64> {
    let gap = offset - end;
    let fits = |p: u64| p >= floor && offset.is_multiple_of(p) && gap < p;
    let small = (0..=6).map(|k| 1u64 << k).rev().find(|&p| fits(p));
    small.or_else(|| (7..=20).map(|k| 1u64 << k).find(|&p| fits(p)))
}

/// `offset` moved by the smallest multiple of `align` that is at least `by`.
fn shifted(offset: u64, by: i128, align: u64) -> u64 {
    add(offset, shift_by(by, align))
}

/// The smallest multiple of `align` that is at least `by`.
fn shift_by(by: i128, align: u64) -> i128 {
    let a = align.max(1) as i128;
    by.div_euclid(a) * a + if by.rem_euclid(a) == 0 { 0 } else { a }
}

fn bytes(n: u64) -> String {
    if n == 1 {
        "1 byte".to_string()
    } else {
        format!("{n} bytes")
    }
}

fn add(x: u64, by: i128) -> u64 {
    (x as i128 + by).clamp(0, u64::MAX as i128) as u64
}

/// How reports name a member: `name`, `name[]` for arrays, or
/// `(anonymous union)` / `(anonymous struct)`.
pub(crate) fn member_label(m: &Member) -> String {
    if m.name.is_empty() {
        let kind = if m.ty.starts_with("union") {
            "union"
        } else {
            "struct"
        };
        format!("(anonymous {kind} at {})", m.offset)
    } else if m.count != 1 || m.ty.contains('[') {
        format!("{}[]", m.name)
    } else {
        m.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inferred_alignment_prefers_the_cache_line() {
        // `hot ____cacheline_aligned` after a char at 0.
        assert_eq!(inferred_align(64, 1, 1), Some(64));
        // A 16-byte gap at 1792 after 1752: 64 explains it.
        assert_eq!(inferred_align(1792, 1752, 8), Some(64));
        // At 80 after 76: 16 is the largest that divides 80.
        assert_eq!(inferred_align(80, 76, 4), Some(16));
        // A page-aligned member far from the previous end.
        assert_eq!(inferred_align(4096, 100, 8), Some(4096));
        // Nothing explains 12 bytes of gap at offset 20.
        assert_eq!(inferred_align(20, 8, 4), None);
    }

    #[test]
    fn shifts_are_multiples_of_the_alignment() {
        assert_eq!(shifted(100, 16, 8), 116);
        assert_eq!(shifted(100, 20, 8), 124);
        assert_eq!(shifted(100, -20, 8), 84);
        assert_eq!(shifted(100, 0, 64), 100);
    }

    /// Every aggregate of the running kernel, laid out again with nothing
    /// changed, comes out as the compiler laid it out: the rules (inferred
    /// attributes, bitfield runs, unions, packed structs) explain every real
    /// layout, so a change moves only what it must.
    #[cfg(feature = "btf")]
    #[test]
    fn kernel_layouts_come_out_unchanged() {
        let path = std::path::Path::new("/sys/kernel/btf/vmlinux");
        if !path.exists() {
            eprintln!("{} does not exist: skipped", path.display());
            return;
        }
        let db = crate::btf::load_btf(path).unwrap();
        let mut differ = Vec::new();
        let mut assumed = Vec::new();
        for agg in db.aggregates() {
            let relaid = relayout(&db, agg, &HashMap::new());
            assumed.extend(relaid.assumptions.iter().cloned());
            let placed = |a: &Aggregate| -> Vec<(u64, Option<u64>, u64)> {
                a.members
                    .iter()
                    .map(|m| (m.offset, m.bit_offset, m.size))
                    .collect()
            };
            let same = (relaid.agg.size, relaid.agg.align) == (agg.size, agg.align)
                && placed(&relaid.agg) == placed(agg);
            if !same {
                differ.push(agg.name.clone());
            }
        }
        assert!(db.len() > 1000);
        assert!(
            differ.is_empty(),
            "{} of {} differ: {:?}",
            differ.len(),
            db.len(),
            &differ[..differ.len().min(20)]
        );
        eprintln!(
            "{} aggregates, {} assumptions: {assumed:#?}",
            db.len(),
            assumed.len()
        );
    }
}
