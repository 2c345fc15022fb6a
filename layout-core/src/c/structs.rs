//! From a record layout to the model: fields with gcc's offsets, and the
//! byte ranges of every member of the body.

use super::attrs::{MarkerKind, SMP_CACHE_BYTES};
use super::parse::{Declarator, FieldDecl, RecordDef, TypeRef};
use super::preprocess::RegionKind;
use super::ranges::LineRanges;
use super::types::{Item, Placed, Resolver};
use super::{CStruct, Header};
use crate::error::{line_col, Diagnostic};
use crate::idioms::{PADDING_TYPE, PAD_PREFIX};
use crate::model::{Field, SourceSpan, Struct};
use crate::place::align_up;
use crate::source::{MemberSource, StructSource};
use std::collections::HashMap;
use std::ops::Range;

/// A model field being assembled, and the (member, declarator) slots it covers.
struct Pending {
    field: Field,
    /// Bit range of a bit-field run (excluding zero-width members).
    bits: Option<Range<u64>>,
    /// The largest alignment of the run's named bit-fields' types (their
    /// storage unit), and that of a zero-width bit-field opening it.
    unit_align: u64,
    guard_align: u64,
    /// The largest alignment of any non-zero bit-field's type in the run,
    /// unnamed ones too: the units it packs into.
    pack_align: u64,
    /// Where the run's bits end, zero-width members' rounding included.
    end_bits: u64,
    /// A bit-field run (else an ordinary member).
    is_run: bool,
    named: bool,
    slots: Vec<(usize, Option<usize>)>,
}

impl Pending {
    /// An ordinary member, or a zero-size marker (no slots).
    fn member(field: Field, slots: Vec<(usize, Option<usize>)>) -> Self {
        Pending {
            field,
            bits: None,
            unit_align: 1,
            guard_align: 1,
            pack_align: 1,
            end_bits: 0,
            is_run: false,
            named: true,
            slots,
        }
    }

    /// A bit-field run, before its first bit-field joins it.
    fn run() -> Self {
        Pending {
            field: Field::new("", "", 0, 1),
            is_run: true,
            named: false,
            ..Pending::member(Field::new("", "", 0, 1), Vec::new())
        }
    }
}

pub(crate) fn build(
    h: &Header,
    r: &Resolver,
    name: &str,
    idx: usize,
) -> Result<CStruct, Diagnostic> {
    let rec = &h.ast.records[idx];
    let layout = r.record(idx, rec.specifier.start)?;
    let lines = LineRanges {
        text: &h.text,
        comments: &h.ast.comments,
    };
    let pending = merge_unnamed_runs(pending_fields(h, r, rec, &layout.placed, &lines));
    let mut pending = pending;
    pending.retain(|p| p.named);
    let mut min_align = layout.attr_align;
    for p in &mut pending {
        if let Some(bits) = &p.bits {
            let guard = p.guard_align.max(p.pack_align);
            min_align = min_align.max(settle_run(&mut p.field, bits, p.unit_align, guard));
        }
    }
    let mut slot_field: HashMap<(usize, Option<usize>), usize> = HashMap::new();
    let mut fields = Vec::with_capacity(pending.len());
    for (i, p) in pending.into_iter().enumerate() {
        for s in p.slots {
            slot_field.insert(s, i);
        }
        fields.push(p.field);
    }
    let members = members(h, rec, &slot_field, &lines);
    let mut model = Struct::new(name, fields);
    model.min_align = min_align;
    crate::segments::assign(&mut model, crate::segments::Keep::default());
    let source = StructSource {
        path: h.path.clone(),
        text: h.text.clone(),
        definition: rec.specifier.clone(),
        body: rec.body.clone(),
        members,
    };
    crate::blocks::keep_conditional_blocks(&mut model, &source);
    crate::blocks::keep_declarator_lists(&mut model, &source);
    Ok(CStruct {
        model,
        size: layout.size,
        align: layout.align,
        source,
    })
}

/// The struct's fields in placement order, before the runs without named
/// bit-fields are merged ([`merge_unnamed_runs`]): ordinary members, the
/// zero-size markers, and one run per group of bit-fields sharing units.
fn pending_fields(
    h: &Header,
    r: &Resolver,
    rec: &RecordDef,
    placed: &[Placed],
    lines: &LineRanges,
) -> Vec<Pending> {
    let mut pending: Vec<Pending> = Vec::new();
    let mut prev_bitfield = false;
    // The member declaration of the last bit-field, and where the storage
    // units of the current run end (bytes).
    let mut prev_decl = usize::MAX;
    let mut run_units_end = 0u64;
    let mut run_has_unnamed = false;
    for p in placed {
        let Item::Field { member, declarator } = p.item else {
            prev_bitfield = false;
            if let Item::Marker(k) = p.item {
                let end = pending
                    .iter()
                    .filter(|q| q.named)
                    .filter_map(|q| q.field.original_offset.map(|o| o + q.field.size))
                    .max()
                    .unwrap_or(0);
                for field in marker_fields(h, k, p, end) {
                    pending.push(Pending::member(field, Vec::new()));
                }
            }
            continue;
        };
        let f = &rec.members[member];
        let d = declarator.map(|k| &f.declarators[k]);
        match p.bits {
            Some(w) => {
                // A zero-width bit-field ends a run (the next bits start a
                // new unit) and opens the next one. So does a declaration
                // whose first, named bit-field starts a storage unit right
                // where the run's bits end, past the units of its named
                // bit-fields (`u8 a:4, b:4; u8 c:8;` is two runs, as BTF and
                // DWARF group them: either moves alone, and packs the same
                // after the other). Not after unnamed bits, which may share
                // that unit (`long a:43; int :23; short b:7;`), nor where the
                // bit-field skipped bits for not fitting the unit before,
                // nor in a run that has no named bits yet.
                let named = d.is_some_and(|d| d.name.is_some());
                let (unit_start, unit_end) = bit_unit(p);
                let run_end = pending.last().filter(|r| r.is_run).map(|r| r.end_bits);
                let new_unit = named
                    && member != prev_decl
                    && !run_has_unnamed
                    && run_end == Some(p.bit_offset)
                    && p.bit_offset == unit_start * 8
                    && run_units_end > 0
                    && unit_start >= run_units_end;
                if !prev_bitfield || w == 0 || new_unit {
                    run_units_end = 0;
                    run_has_unnamed = false;
                    pending.push(Pending::run());
                }
                prev_bitfield = true;
                prev_decl = member;
                if named && w > 0 {
                    run_units_end = run_units_end.max(unit_end);
                }
                run_has_unnamed |= !named && w > 0;
                let run = pending.last_mut().expect("pushed above");
                extend_run(
                    run,
                    p,
                    w,
                    f,
                    d.expect("bit-fields have declarators"),
                    h,
                    lines,
                    rec,
                );
                run.slots.push((member, declarator));
            }
            None => {
                prev_bitfield = false;
                let (fname, ty, at) = match d {
                    Some(d) => (d.name.clone(), type_text(f, d), d.name_range.start),
                    None => match &f.group {
                        Some(g) => (Some(g.clone()), f.spec_text.clone(), f.range.start),
                        None => (first_name(h, &f.ty), f.spec_text.clone(), f.range.start),
                    },
                };
                let Some(fname) = fname else { continue };
                let mut field = Field::new(fname, ty, p.size, p.align);
                field.original_offset = Some(p.bit_offset / 8);
                // An `aligned` attribute of a line or more on the member
                // (`____cacheline_aligned_in_smp`): a segment of its own.
                let attr = d.and_then(|d| r.max_align(&d.attrs, d.range.start).ok().flatten());
                field.line_break = attr.is_some_and(|a| a >= SMP_CACHE_BYTES);
                field.span = Some(span(
                    h,
                    at,
                    lines.member_lines(f.range.clone(), rec.body.clone()),
                ));
                pending.push(Pending::member(field, vec![(member, declarator)]));
            }
        }
    }
    pending
}

/// Runs without named bit-fields join what they pad: the run before them,
/// or the ordinary member before them, or (at the struct's start) the run
/// after them.
fn merge_unnamed_runs(pending: Vec<Pending>) -> Vec<Pending> {
    // A run without named bit-fields (`int :0;` or `int :5;` after a run,
    // before an ordinary member) pads the run before it: part of it.
    let mut merged: Vec<Pending> = Vec::with_capacity(pending.len());
    for p in pending {
        match merged.last_mut() {
            Some(prev) if p.is_run && !p.named && prev.is_run => {
                if let Some(b) = &prev.bits {
                    let end = b
                        .end
                        .max(p.end_bits)
                        .max(p.bits.as_ref().map_or(0, |x| x.end));
                    prev.bits = Some(b.start..end);
                }
                prev.end_bits = prev.end_bits.max(p.end_bits);
                // Its zero-width rounding depends on where the run starts.
                prev.pack_align = prev.pack_align.max(p.pack_align).max(p.guard_align);
                prev.slots.extend(p.slots);
                if !p.field.ty.is_empty() {
                    prev.field.ty = format!("{}; {}", prev.field.ty, p.field.ty);
                }
            }
            // After an ordinary member they pad it: it covers them, and
            // keeps its offset when their units may pack them elsewhere.
            // (A zero-size marker has no slots: they stay apart from it.)
            Some(prev) if p.is_run && !p.named && prev.named && !prev.slots.is_empty() => {
                let start = prev.field.original_offset.unwrap_or(0);
                let end = p.end_bits.max(p.bits.as_ref().map_or(0, |b| b.end));
                prev.field.size = prev.field.size.max(end.div_ceil(8).saturating_sub(start));
                if p.pack_align.max(p.guard_align) > prev.field.align {
                    prev.field.pinned = true;
                }
                prev.slots.extend(p.slots);
            }
            _ => merged.push(p),
        }
    }
    // Unnamed bits that open the struct, before a run: part of it, which
    // keeps its offset (they are the struct's first bytes).
    if merged.len() > 1 && merged[0].is_run && !merged[0].named && merged[1].is_run {
        let lead = merged.remove(0);
        let next = &mut merged[0];
        if let (Some(b), Some(l)) = (&next.bits, &lead.bits) {
            next.bits = Some(l.start.min(b.start)..b.end);
        }
        next.pack_align = next
            .pack_align
            .max(lead.pack_align)
            .max(lead.guard_align)
            .max(2 * next.unit_align);
        let mut slots = lead.slots;
        slots.append(&mut next.slots);
        next.slots = slots;
    }
    merged
}

/// The zero-size members a struct-body marker macro declares, named as the
/// kernel's macros name them (and as BTF and DWARF show them):
/// `CACHELINE_PADDING(n)` is `n` of type `struct cacheline_padding`;
/// `__cacheline_group_begin[_aligned](g)` is `__cacheline_group_begin__g`;
/// `__cacheline_group_end(g)` is `__cacheline_group_end__g`;
/// `__cacheline_group_end_aligned(g)` is `__cacheline_group_end__g`
/// (aligned to 8, right after the previous member, which ends at `end`)
/// followed by `__cacheline_group_pad__g` (aligned to the line). Their
/// source is the marker line (no [`MemberSource`] names them).
fn marker_fields(h: &Header, k: usize, p: &Placed, end: u64) -> Vec<Field> {
    let mk = &h.pre.markers[k];
    let name = h.text.get(mk.name.clone()).unwrap_or("").trim().to_string();
    let offset = p.bit_offset / 8;
    let zero = |n: String, ty: &str, align: u64, at: u64| {
        let mut f = Field::new(n, ty, 0, align);
        f.original_offset = Some(at);
        f.span = Some(span(h, mk.range.start, mk.range.clone()));
        f
    };
    let member = |ty: &str, align: u64, at: u64| zero(mk.kind.field_name(&name), ty, align, at);
    match mk.kind {
        MarkerKind::Padding => vec![member(PADDING_TYPE, p.align, offset)],
        MarkerKind::GroupBegin | MarkerKind::GroupBeginAligned(_) | MarkerKind::GroupEnd => {
            vec![member("__u8[0]", p.align, offset)]
        }
        MarkerKind::GroupEndAligned(_) => {
            let end_align = 8.min(p.align);
            let at = align_up(end, end_align);
            vec![
                member("__u8[0]", end_align, at.min(offset)),
                zero(format!("{PAD_PREFIX}{name}"), "struct {}", p.align, offset),
            ]
        }
    }
}

fn span(h: &Header, at: usize, bytes: Range<usize>) -> SourceSpan {
    let (line, column) = line_col(&h.text, at);
    SourceSpan {
        file: Some(h.path.clone()),
        line,
        column,
        bytes,
    }
}

/// `unsigned long[4]`, `char *`, `void (*)(int)`.
fn type_text(f: &FieldDecl, d: &Declarator) -> String {
    let a = &d.abstract_text;
    if a.is_empty() {
        f.spec_text.clone()
    } else if a.starts_with('[') {
        format!("{}{a}", f.spec_text)
    } else {
        format!("{} {a}", f.spec_text)
    }
}

/// The first named field of an anonymous struct or union (recursively).
fn first_name(h: &Header, ty: &TypeRef) -> Option<String> {
    let TypeRef::Record { def: Some(idx), .. } = ty else {
        return None;
    };
    for m in &h.ast.records[*idx].members {
        if m.group.is_some() {
            return m.group.clone();
        }
        if let Some(n) = m.declarators.iter().find_map(|d| d.name.clone()) {
            return Some(n);
        }
        if m.declarators.is_empty() {
            if let Some(n) = first_name(h, &m.ty) {
                return Some(n);
            }
        }
    }
    None
}

/// The storage unit of a bit-field (bytes from the record's start): the
/// aligned unit of its declared type that holds its first bit, as BTF and
/// DWARF show it.
fn bit_unit(p: &Placed) -> (u64, u64) {
    let size = p.size.max(1);
    let start = p.bit_offset / (size * 8) * size;
    (start, start + size)
}

/// Adds one bit-field to the run: the field covers the bytes its named
/// bits touch; its alignment is that of the declared types, lowered to what the
/// run's start offset allows.
#[allow(clippy::too_many_arguments)]
fn extend_run(
    run: &mut Pending,
    p: &Placed,
    width: u64,
    f: &FieldDecl,
    d: &Declarator,
    h: &Header,
    lines: &LineRanges,
    rec: &RecordDef,
) {
    let piece = match &d.name {
        Some(n) => format!("{} {n}:{width}", type_text(f, d)),
        None => format!("{}:{width}", type_text(f, d)),
    };
    run.field.ty = if run.field.ty.is_empty() {
        piece
    } else {
        format!("{}; {piece}", run.field.ty)
    };
    // The field covers every bit of the run, unnamed padding bits too (gcc
    // places what follows after them).
    if width == 0 && run.bits.is_none() {
        run.guard_align = run.guard_align.max(p.align);
    }
    run.end_bits = run.end_bits.max(p.bit_offset + width);
    if width > 0 || run.bits.is_some() {
        run.pack_align = run.pack_align.max(p.align);
    }
    if width > 0 {
        let b = p.bit_offset..p.bit_offset + width;
        run.bits = Some(match &run.bits {
            Some(r) => r.start.min(b.start)..r.end.max(b.end),
            None => b,
        });
    }
    if let Some(n) = &d.name {
        if !run.named {
            run.named = true;
            run.field.name = n.clone();
            run.field.span = Some(span(
                h,
                d.name_range.start,
                lines.member_lines(f.range.clone(), rec.body.clone()),
            ));
        }
        run.unit_align = run.unit_align.max(p.align);
    }
    if let Some(s) = &mut run.field.span {
        let member = lines.member_lines(f.range.clone(), rec.body.clone());
        s.bytes.end = s.bytes.end.max(member.end);
    }
}

/// Gives a finished bit-field run its bytes and alignment, and returns the
/// alignment its types give the struct.
///
/// A run whose first byte is a multiple of its unit's alignment packs the
/// same wherever it starts on such a multiple (after a zero-width guard the
/// emitter writes where gcc would otherwise pack it with what precedes): it
/// moves freely with that alignment. A run that shares a unit with the
/// member before it (`char c; int a:3;`) only packs the same at its own
/// offset: it is pinned there, and the struct keeps the alignment of its
/// type through `min_align` (gcc counts it, the lowered field does not).
/// So is a run with a zero-width or unnamed bit-field of a wider type than
/// its named ones (it packs by units the struct's alignment ignores).
fn settle_run(field: &mut Field, bits: &Range<u64>, unit_align: u64, guard_align: u64) -> u64 {
    let start = bits.start / 8;
    let end = bits.end.div_ceil(8);
    field.original_offset = Some(start);
    field.size = end - start;
    field.align = unit_align;
    if !start.is_multiple_of(unit_align) || guard_align > unit_align {
        while field.align > 1 && !start.is_multiple_of(field.align) {
            field.align /= 2;
        }
        field.pinned = true;
    }
    unit_align
}

/// Every member of the body: field declarations, markers, directive lines
/// and skipped groups, in source order.
fn members(
    h: &Header,
    rec: &RecordDef,
    slot_field: &HashMap<(usize, Option<usize>), usize>,
    lines: &LineRanges,
) -> Vec<MemberSource> {
    let body = rec.body.clone();
    let in_member = |at: usize| rec.members.iter().any(|m| m.range.contains(&at));
    let mut out: Vec<MemberSource> = Vec::new();
    for (m, f) in rec.members.iter().enumerate() {
        let lines_r = lines.member_lines(f.range.clone(), body.clone());
        let indent = lines.indent(f.range.start);
        let make = |field: Option<usize>, name: Range<usize>| MemberSource {
            field,
            lines: lines_r.clone(),
            decl: f.range.clone(),
            name,
            indent: indent.clone(),
        };
        // A member macro's name sits inside the call: an attribute for the
        // member goes after the `)`.
        let after_call = f.macro_call_end.map(|e| e..e);
        if f.declarators.is_empty() {
            let field = slot_field.get(&(m, None)).copied();
            let name = after_call.unwrap_or(f.range.start..f.range.start);
            out.push(make(field, name));
            continue;
        }
        let mut last_field = None;
        for (k, d) in f.declarators.iter().enumerate() {
            let field = slot_field.get(&(m, Some(k))).copied();
            // Bit-fields of one run in one declaration: one member.
            if field.is_some() && field == last_field {
                continue;
            }
            last_field = field;
            let name = after_call.clone().unwrap_or(d.name_range.clone());
            out.push(make(field, name));
        }
    }
    for mk in &h.pre.markers {
        if body.contains(&mk.range.start) && !in_member(mk.range.start) {
            out.push(MemberSource {
                field: None,
                lines: lines.member_lines(mk.range.clone(), body.clone()),
                decl: mk.range.clone(),
                name: mk.name.clone(),
                indent: lines.indent(mk.range.start),
            });
        }
    }
    for region in &h.pre.regions {
        let r = region.range.clone();
        if !body.contains(&r.start) || in_member(r.start) {
            continue;
        }
        // The text itself, without the line's leading blanks.
        let lead = h.text[r.clone()].len() - h.text[r.clone()].trim_start().len();
        let decl_start = if region.kind == RegionKind::Directive {
            r.start + lead
        } else {
            r.start
        };
        let decl_end = r.start + h.text[r.clone()].trim_end().len();
        let decl = decl_start..decl_end.max(decl_start);
        out.push(MemberSource {
            field: None,
            lines: lines.member_lines(decl.clone(), body.clone()),
            decl: decl.clone(),
            name: decl.start..decl.start,
            indent: lines.indent(r.start),
        });
    }
    out.sort_by_key(|m| (m.decl.start, m.field));
    out
}
