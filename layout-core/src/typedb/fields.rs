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
//! In a packed aggregate, a field's alignment is also capped by what its
//! offset and the aggregate's alignment show (see [`packed_align`]).
//!
//! A member's alignment is the larger of its type's and its own `aligned`
//! attribute's: with BTF it cannot be known whether the attribute was on the
//! member or on its type, and dropping a type's alignment would let the solver
//! place a field where the compiler will not. Every field is cold, not pinned,
//! with its original offset. In a packed struct a field aligns only as its
//! own `aligned` attribute asks (within the struct's alignment and its offset). Meant for structs: a union's fields all start at 0.

use super::{Aggregate, Member};

/// An `aligned` attribute on a member at least this large (the kernel's
/// `____cacheline_aligned_in_smp`) makes the member a segment of its own.
const LINE_ATTRIBUTE: u64 = 64;
use crate::model::{Field, Struct};

pub(crate) fn to_model(agg: &Aggregate) -> Struct {
    let members = &agg.members;
    let mut fields: Vec<Field> = Vec::with_capacity(members.len());
    let mut line_start: Vec<bool> = Vec::with_capacity(members.len());
    let mut i = 0;
    while i < members.len() {
        let m = &members[i];
        if m.is_bitfield() {
            let end = bitfield_group_end(members, i);
            let prev_end = fields
                .last()
                .map_or(0, |f| f.original_offset.unwrap_or(0) + f.size);
            fields.push(bitfield_field(&members[i..end], prev_end));
            line_start.push(false);
            i = end;
        } else {
            fields.push(member_field(m));
            line_start.push(m.attr_align.is_some_and(|a| a >= LINE_ATTRIBUTE));
            i += 1;
        }
        if agg.packed {
            let prev_end = match fields.len() {
                0 | 1 => 0,
                n => fields[n - 2].original_offset.unwrap_or(0) + fields[n - 2].size,
            };
            let f = fields.last_mut().expect("a field was just pushed");
            f.align = packed_align(f.align, f.original_offset.unwrap_or(0), prev_end, agg.align);
        }
    }
    if agg.packed {
        // In a packed struct a member aligns only as its own `aligned`
        // attribute asks, and never beyond the struct or its offset.
        for f in &mut fields {
            let attr = agg
                .members
                .iter()
                .find(|m| m.field_name() == f.name)
                .and_then(|m| m.attr_align);
            let offset_align = match f.original_offset {
                Some(0) | None => u64::MAX,
                Some(o) => 1 << o.trailing_zeros(),
            };
            f.align = attr
                .unwrap_or(1)
                .min(agg.align.max(1))
                .min(offset_align)
                .max(1);
        }
    }
    let mut model = Struct::new(agg.name.clone(), fields);
    model.min_align = agg.attr_align.unwrap_or(1);
    crate::segments::assign(&mut model, &line_start, crate::segments::Keep::default());
    model
}

/// The alignment a field of a packed aggregate keeps. A field after a gap
/// that its type's alignment explains exactly is not packed (a `__packed`
/// member among ordinary ones): it keeps that alignment. Any other field gets
/// no more than its offset shows (a packed member can sit anywhere) nor than
/// the aggregate's alignment: a struct declared `__packed` has alignment 1,
/// so all its fields get 1, as gcc gives them.
fn packed_align(align: u64, offset: u64, prev_end: u64, agg_align: u64) -> u64 {
    if offset > prev_end && prev_end.next_multiple_of(align.max(1)) == offset {
        return align.min(agg_align.max(1));
    }
    let shown = if offset == 0 {
        align
    } else {
        align.min(1 << offset.trailing_zeros())
    };
    shown.min(agg_align.max(1)).max(1)
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
