//! An [`Aggregate`] as a layout [`Struct`]: one field per member, except
//!
//! - bitfields: consecutive bitfields that share a storage unit (each one's
//!   unit starts before the previous ones' units end) become one field named
//!   after them, `flags_a:flags_b`, because moving one alone would change how
//!   the others pack. The field spans the bytes their bits occupy, starting at
//!   the storage unit; it aligns like the widest declared type. When the unit
//!   starts inside the previous field (`char c; unsigned a:8;` puts `a` in
//!   byte 1), the field starts at the byte of its first bit and keeps the
//!   alignment that byte has.
//! - anonymous struct/union members stay one field each, named
//!   `anon_union@OFFSET` / `anon_struct@OFFSET`: their members share storage
//!   (a union) or are reached as if they were the parent's (C11 anonymous
//!   members), and moving them apart would change the type.
//!
//! Segments ([`crate::segments`]): the first member, every zero-size member
//! (cache-line group markers, paddings, zero-length arrays) and every member
//! with an `aligned(64)` attribute is a segment of its own; the members
//! between them share one.
//!
//! In a packed aggregate, a field aligns as [`packed_aligns`] derives from
//! the offsets: within the aggregate's alignment and its offset, only as
//! its own `aligned` attribute asks in a struct declared `__packed`, as its
//! type asks in a struct with `__packed` members among ordinary ones.
//!
//! A member's alignment is the larger of its type's and its own `aligned`
//! attribute's: with BTF it cannot be known whether the attribute was on the
//! member or on its type, and dropping a type's alignment would let the solver
//! place a field where the compiler will not. Every field is cold, not pinned,
//! with its original offset. Meant for structs: a union's fields all start at 0.

use super::{Aggregate, Member};

/// An `aligned` attribute on a member at least this large (the kernel's
/// `____cacheline_aligned_in_smp`) makes the member a segment of its own.
const LINE_ATTRIBUTE: u64 = DataLayout::X86_64.smp_cache_bytes;
use crate::model::{Field, Struct};
use crate::place::{align_up, DataLayout};

pub(crate) fn to_model(agg: &Aggregate) -> Struct {
    let members = &agg.members;
    let mut fields: Vec<Field> = Vec::with_capacity(members.len());
    // Per field: its type's alignment and its own `aligned` attribute.
    let mut declared: Vec<(u64, Option<u64>)> = Vec::with_capacity(members.len());
    let mut i = 0;
    while i < members.len() {
        let m = &members[i];
        if m.is_bitfield() {
            let end = bitfield_group_end(members, i);
            let prev_end = fields
                .last()
                .map_or(0, |f| f.original_offset.unwrap_or(0) + f.size);
            let field = bitfield_field(&members[i..end], prev_end);
            declared.push((field.align, None));
            fields.push(field);
            i = end;
        } else {
            let mut field = member_field(m);
            field.line_break = m.attr_align.is_some_and(|a| a >= LINE_ATTRIBUTE);
            fields.push(field);
            declared.push((m.align.max(1), m.attr_align));
            i += 1;
        }
    }
    if agg.packed {
        let aligns = packed_aligns(&fields, &declared, agg.align);
        for (f, a) in fields.iter_mut().zip(aligns) {
            f.align = a;
        }
    }
    let mut model = Struct::new(agg.name.clone(), fields);
    model.min_align = agg.attr_align.unwrap_or(1);
    crate::segments::assign(&mut model, crate::segments::Keep::default());
    model
}

/// The alignment each field of a packed aggregate keeps, from what the
/// offsets show (`declared` is each field's type alignment and own
/// `aligned` attribute; neither BTF nor DWARF says where `packed` was).
///
/// A field that sits past a gap its type's alignment explains exactly
/// (`align_up(end of the previous field, alignment) == offset`, and no
/// larger attribute of its own explains it instead) is not
/// packed: the struct has `__packed` members among ordinary ones (`char a;
/// long b __packed; int c;`). In such a struct every field keeps its
/// alignment (type and attribute) as far as its offset shows it: a packed
/// member sits at an offset its type does not explain, an ordinary one
/// where gcc placed it. Without such a field the struct is `__packed` as a
/// whole, and a field aligns only as its own attribute asks, as gcc aligns
/// it. Either way a field aligns no more than the aggregate, nor than its
/// offset shows, so the layout as compiled is one the model allows.
fn packed_aligns(fields: &[Field], declared: &[(u64, Option<u64>)], agg_align: u64) -> Vec<u64> {
    let mut prev_end = 0;
    let mut partly = false;
    for (f, &(type_align, attr)) in fields.iter().zip(declared) {
        let offset = f.original_offset.unwrap_or(0);
        // A larger attribute of its own explains the gap, not the type.
        let by_type = attr.is_none_or(|a| a <= type_align);
        if f.size > 0 && by_type && offset > prev_end && align_up(prev_end, type_align) == offset {
            partly = true;
        }
        prev_end = prev_end.max(offset + f.size);
    }
    fields
        .iter()
        .zip(declared)
        .map(|(f, &(_, attr))| {
            let asked = if partly { f.align } else { attr.unwrap_or(1) };
            let shown = match f.original_offset {
                Some(0) | None => u64::MAX,
                Some(o) => 1 << o.trailing_zeros(),
            };
            asked.min(agg_align.max(1)).min(shown).max(1)
        })
        .collect()
}

fn member_field(m: &Member) -> Field {
    let name = m.field_name();
    let align = m.align.max(m.attr_align.unwrap_or(1)).max(1);
    let mut field = Field::new(name, m.ty.clone(), m.size, align);
    field.original_offset = Some(m.offset);
    field
}

/// One past the last bitfield of the group that starts at `start`.
/// One past the last member of the run of bitfields starting at `start` that
/// share storage units with it (how gcc groups them; one field in models).
pub(crate) fn bitfield_group_end(members: &[Member], start: usize) -> usize {
    let first = &members[start];
    let mut unit_end = first.offset + first.size;
    let mut end = start + 1;
    while let Some(m) = members.get(end) {
        if !m.is_bitfield() || m.offset >= unit_end {
            break;
        }
        unit_end = unit_end.max(m.offset + m.size);
        end += 1;
    }
    end
}

fn bitfield_field(group: &[Member], prev_end: u64) -> Field {
    let unit_start = group.iter().map(|m| m.offset).min().unwrap_or(0);
    let first_bit = group.iter().filter_map(|m| m.bit_offset).min().unwrap_or(0);
    let bit_end = group
        .iter()
        .map(|m| m.bit_offset.unwrap_or(0) + m.bit_size.unwrap_or(0))
        .max()
        .unwrap_or(0);
    let widest = group.iter().map(|m| m.align.max(1)).max().unwrap_or(1);
    let (offset, align) = if unit_start >= prev_end {
        (unit_start, widest)
    } else {
        let byte = first_bit / 8;
        let shown = if byte == 0 {
            widest
        } else {
            1 << byte.trailing_zeros()
        };
        (byte, shown.min(widest))
    };
    let size = bit_end.div_ceil(8).saturating_sub(offset);
    let named: Vec<&str> = group
        .iter()
        .map(|m| m.name.as_str())
        .filter(|n| !n.is_empty())
        .collect();
    let name = if named.is_empty() {
        format!("bitfield@{offset}")
    } else {
        named.join(":")
    };
    let ty = if group.iter().all(|m| m.ty == group[0].ty) {
        group[0].ty.clone()
    } else {
        group
            .iter()
            .map(|m| m.ty.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut field = Field::new(name, ty, size, align);
    field.original_offset = Some(offset);
    field
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(name: &str, size: u64, align: u64, offset: u64) -> Field {
        let mut f = Field::new(name, "t", size, align);
        f.original_offset = Some(offset);
        f
    }

    #[test]
    fn a_struct_packed_as_a_whole_aligns_only_as_attributes_ask() {
        // struct { char a; int b; long c; short d; } __packed
        let fields = [
            at("a", 1, 1, 0),
            at("b", 4, 4, 1),
            at("c", 8, 8, 5),
            at("d", 2, 2, 13),
        ];
        let declared = [(1, None), (4, None), (8, None), (2, None)];
        assert_eq!(packed_aligns(&fields, &declared, 1), [1, 1, 1, 1]);
        // The same with __aligned(8) on the struct: still 1 each.
        assert_eq!(packed_aligns(&fields, &declared, 8), [1, 1, 1, 1]);
    }

    #[test]
    fn ordinary_members_beside_a_packed_one_keep_their_alignment() {
        // struct { char a; long b __packed; int c; short d; }
        let fields = [
            at("a", 1, 1, 0),
            at("b", 8, 8, 1),
            at("c", 4, 4, 12),
            at("d", 2, 2, 16),
        ];
        let declared = [(1, None), (8, None), (4, None), (2, None)];
        assert_eq!(packed_aligns(&fields, &declared, 4), [1, 1, 4, 2]);
    }
}
