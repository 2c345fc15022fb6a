//! Writes the new struct body from the reordered nodes, spelling the plan in
//! a [`CStyle`], and records what C will see for the [`replay`] check.
//!
//! What each style does with what the header already has:
//! - a cacheline attribute stays on a member that needs a break (reused) and
//!   goes elsewhere; the `Groups` style removes them all (its markers align);
//! - a `CACHELINE_PADDING()` line stays when the next declaration starts with
//!   a member that needs a break (and spells it), and goes elsewhere; the
//!   `Groups` style removes them all; a new padding line takes the name of a
//!   removed one before making up `_padN_`;
//! - group markers are rewritten by the `Groups` style (the caller refuses
//!   them in the others);
//! - a marker line whose member the model still has (the author's groups
//!   and paddings, kept as [`segments`](crate::segments)) is kept in every
//!   style, where the layout's order puts it ([`super::body::reorder`]).
//!
//! [`replay`]: super::replay

use super::attribute::{
    guard_aligns_to, guard_declaration, insertion_point, is_anonymous, is_bitfield_run,
    line_break_attribute, opens_with_guard, run_bits, FieldAttributes, KERNEL_LINE,
};
use super::body::{Carrier, MarkerKind, Node};
use super::groups::Group;
use super::markup::{dropped_break_reason, line_break_reason, MarkupChange, Place};
use super::plan::Item;
use super::replay::{CAlign, CItem};
use super::CStyle;
use crate::error::Diagnostic;
use crate::idioms::KernelSpellings;
use crate::layout::Layout;
use crate::model::Struct;
use crate::source::{MemberSource, StructSource};
use std::ops::Range;

/// What the plan asks for, field by field.
struct FieldPlan {
    line_break: bool,
    /// A bit-field run that gcc would pack into what precedes it without a
    /// zero-width guard (`int:0;`) before it.
    guard: bool,
    /// Padding before the field: (struct offset where it starts, bytes).
    pad_before: Option<(u64, u64)>,
}

/// The new body text, and what C will see in it, in order.
pub(crate) struct Rendered {
    pub body: String,
    pub record: Vec<CItem>,
    /// The attributes, paddings and markers written or removed, in order.
    pub changes: Vec<MarkupChange>,
}

pub(crate) struct Renderer<'a> {
    src: &'a StructSource,
    s: &'a Struct,
    l: &'a Layout,
    attributes: &'a FieldAttributes,
    style: CStyle,
    fields: Vec<FieldPlan>,
    /// Tail padding: (struct offset where it starts, bytes).
    tail_pad: Option<(u64, u64)>,
    /// The field that ends the layout, after which tail padding goes.
    last_field: Option<usize>,
    /// Groups of the `Groups` style (empty in the others).
    groups: &'a [Group],
    pad_type: &'static str,
    pad_names: PadNames<'a>,
    /// The struct is `packed`, which takes a `CACHELINE_PADDING` member's
    /// alignment away.
    packed: bool,
    record: Vec<CItem>,
    changes: Vec<MarkupChange>,
    /// Model names of the author's markers the layout keeps
    /// (`_pad1_`, `__cacheline_group_begin__g`): their lines stay where
    /// they are, in every style.
    author_markers: Vec<String>,
    /// The attribute macros the header can spell.
    spellings: KernelSpellings,
    /// Per field, the declarations of it not yet written. A field is
    /// several declarations when `#if` blocks split it (a bit-field run with
    /// conditional bit-fields): C places it once, from its first
    /// declaration; the later ones only add bits to it.
    pieces_left: Vec<usize>,
    /// Per field, whether a declaration of it is written (and recorded).
    written: Vec<bool>,
}

impl<'a> Renderer<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        src: &'a StructSource,
        s: &'a Struct,
        l: &'a Layout,
        items: &[Item],
        attributes: &'a FieldAttributes,
        style: CStyle,
        groups: &'a [Group],
        packed: bool,
    ) -> Self {
        let mut fields: Vec<FieldPlan> = (0..s.fields.len())
            .map(|_| FieldPlan {
                line_break: false,
                guard: false,
                pad_before: None,
            })
            .collect();
        let mut tail_pad = None;
        let mut last_field = None;
        // The member before, in layout order: (field, where it starts,
        // where it ends).
        let mut before: Option<(usize, u64, u64)> = None;
        let mut padded = false;
        for item in items {
            match *item {
                Item::Member {
                    field,
                    line_break,
                    offset,
                } => {
                    fields[field].line_break = line_break;
                    last_field = Some(field);
                    let f = &s.fields[field];
                    // gcc packs a bit-field into the unit where the member
                    // before it ends, or right after the bits before it:
                    // unless padding or a break puts it at its offset, a
                    // guard starts it on its own unit.
                    // A guard of its own that aligns less than the run
                    // (`signed char :0` before a `long` unit) does not.
                    let own_guard = opens_with_guard(&f.ty) && guard_aligns_to(&f.ty, f.align);
                    if is_bitfield_run(&f.ty) && !own_guard && !padded && !line_break {
                        fields[field].guard =
                            before.is_some_and(|(b, start, end)| match &s.fields[b].ty {
                                // A run opening with its own smaller guard
                                // needs one only after a gap.
                                ty if is_bitfield_run(ty) && opens_with_guard(&f.ty) => {
                                    end < offset
                                }
                                // Bits that end exactly where this run starts
                                // leave gcc nothing to pack into: no guard.
                                ty if is_bitfield_run(ty) => {
                                    run_bits(ty).map(|bits| start * 8 + bits) != Some(offset * 8)
                                }
                                _ => end < offset,
                            });
                    }
                    before = Some((field, offset, offset + f.size));
                    padded = false;
                }
                Item::Pad {
                    at,
                    bytes,
                    before: Some(f),
                } => {
                    fields[f].pad_before = Some((at, bytes));
                    padded = true;
                }
                Item::Pad {
                    at,
                    bytes,
                    before: None,
                } => tail_pad = Some((at, bytes)),
            }
        }
        Renderer {
            src,
            s,
            l,
            attributes,
            style,
            fields,
            tail_pad,
            last_field,
            groups,
            pad_type: if looks_like_kernel(&src.text) {
                "u8"
            } else {
                "unsigned char"
            },
            pad_names: PadNames::new(s),
            packed,
            record: Vec::new(),
            changes: Vec::new(),
            author_markers: Vec::new(),
            spellings: KernelSpellings::of_header(&src.path, &src.text),
            pieces_left: vec![0; s.fields.len()],
            written: vec![false; s.fields.len()],
        }
    }

    /// Spells attributes as the translation unit can (see
    /// [`super::TreeIdioms`]).
    pub(crate) fn spelling(mut self, spellings: KernelSpellings) -> Self {
        self.spellings = spellings;
        self
    }

    /// Keeps the marker lines whose members the model still has (see
    /// [`crate::segments`]): the author's groups and paddings.
    pub(crate) fn keeping(mut self, author_markers: Vec<String>) -> Self {
        self.author_markers = author_markers;
        self
    }

    /// The model name of a marker line's member, when the layout keeps it.
    fn kept_author_marker(&self, member: &MemberSource, kind: MarkerKind) -> bool {
        let decl = &self.src.text[member.decl.clone()];
        super::body::marker_field_name(decl, kind).is_some_and(|n| self.author_markers.contains(&n))
    }

    /// What C sees for a kept group marker line: the zero-size members its
    /// macro declares, with their alignments.
    fn group_marker_record(&self, kind: MarkerKind) -> Vec<CItem> {
        match kind {
            MarkerKind::GroupBeginAligned(align) => vec![CItem::Marker {
                align: align.unwrap_or(self.l.line),
            }],
            MarkerKind::GroupEndAligned(align) => vec![
                CItem::Marker { align: 8 },
                CItem::Marker {
                    align: align.unwrap_or(self.l.line),
                },
            ],
            _ => vec![CItem::Marker { align: 1 }],
        }
    }

    pub(crate) fn render(
        mut self,
        flat: &[&Node],
        carriers: &[Carrier],
    ) -> Result<Rendered, Diagnostic> {
        let text = &self.src.text;
        let keep_marker = self.padding_markers_to_keep(flat);
        // Kept marker lines that start a line: paddings, and the author's
        // `_aligned` group markers.
        let line_markers: Vec<Option<bool>> = flat
            .iter()
            .enumerate()
            .map(|(i, n)| match n {
                Node::Marker { .. } if keep_marker[i] => Some(true),
                Node::Marker { member, kind, .. }
                    if kind.is_group() && self.kept_author_marker(member, *kind) =>
                {
                    let decl = text[member.decl.clone()].trim_start();
                    Some(
                        decl.split('(')
                            .next()
                            .unwrap_or("")
                            .trim()
                            .ends_with("_aligned"),
                    )
                }
                _ => None,
            })
            .collect();
        let mut padding = PaddingNames::new(self.src, flat, &keep_marker);
        self.pieces_left = pieces_of(flat, self.s.fields.len());
        let (begins, ends) = self.group_positions(flat.len(), carriers);
        let mut out = String::new();
        let mut dropped_line = false;
        // Where a section comment that sits right above the next node starts
        // in `out`: a group marker or padding line the next declaration
        // needs goes above it, so the comment heads its section.
        let mut glued: Option<usize> = None;
        for (i, node) in flat.iter().enumerate() {
            if !begins[i].is_empty() {
                let tail = glued.map(|at| out.split_off(at)).unwrap_or_default();
                for &g in &begins[i] {
                    self.group_marker(&mut out, g, true);
                }
                out.push_str(&tail);
            }
            let at = out.len();
            match node {
                Node::Keep(r) => {
                    let mut kept = &text[r.clone()];
                    // Removing a line between two blank lines leaves one blank line.
                    if dropped_line && ends_with_blank_line(&out) {
                        kept = kept
                            .strip_prefix("\r\n")
                            .or_else(|| kept.strip_prefix('\n'))
                            .unwrap_or(kept);
                    }
                    out.push_str(kept);
                    dropped_line = false;
                    let t = kept.trim_start();
                    glued = ((t.starts_with("/*") || t.starts_with("//"))
                        && !ends_with_blank_line(kept))
                    .then_some(at);
                    continue;
                }
                Node::Marker { lines, .. } if keep_marker[i] => {
                    out.push_str(&text[lines.clone()]);
                    self.record.push(CItem::Marker {
                        align: self.padding_align(),
                    });
                    dropped_line = false;
                }
                Node::Marker {
                    member,
                    kind,
                    lines,
                } if kind.is_group() && self.kept_author_marker(member, *kind) => {
                    out.push_str(&text[lines.clone()]);
                    let record = self.group_marker_record(*kind);
                    self.record.extend(record);
                    dropped_line = false;
                }
                Node::Marker { member, kind, .. } => {
                    dropped_line = true;
                    // The member it stood before in the header.
                    let next = self
                        .src
                        .members
                        .iter()
                        .filter(|m| m.lines.start >= member.lines.end)
                        .find_map(|m| m.field.filter(|&f| f < self.s.fields.len()));
                    let why = if kind.is_group() {
                        "the groups style writes the cache-line groups anew".to_string()
                    } else {
                        dropped_break_reason(self.s, self.l, next)
                    };
                    self.changes.push(MarkupChange {
                        added: false,
                        what: text[member.decl.clone()]
                            .trim()
                            .trim_end_matches(';')
                            .to_string(),
                        place: Place::Before,
                        member: next.map(|f| self.s.fields[f].name.clone()),
                        why,
                    });
                }
                Node::Decl {
                    lines,
                    members,
                    fields,
                } => {
                    let by_marker = kept_marker_before(text, flat, &line_markers, i);
                    let decl = self.declaration(lines, members, fields, by_marker, &mut padding)?;
                    let tail = match (&decl.padding_line, glued) {
                        (Some(_), Some(at)) => out.split_off(at),
                        _ => String::new(),
                    };
                    if decl.padding_line.is_some() && !ends_with_blank_line(&out) {
                        out.push_str(decl.nl);
                    }
                    if let Some(p) = &decl.padding_line {
                        out.push_str(p);
                        out.push_str(decl.nl);
                        out.push_str(decl.nl);
                    }
                    out.push_str(&tail);
                    out.push_str(&decl.text);
                    dropped_line = false;
                }
                // `flatten` opens every block.
                Node::Block(_) => {}
            }
            glued = None;
            for &g in &ends[i] {
                // Padding before the next group ends this one: read back,
                // the padding member is a cold field, which joins the group
                // before it.
                if let Some(&next) = self.groups.get(g + 1).and_then(|n| n.fields.first()) {
                    if let Some(line) = self.take_pad_before(next) {
                        out.push_str(&line);
                    }
                }
                self.group_marker(&mut out, g, false);
            }
        }
        let original = &text[self.src.body.clone()];
        if !original.ends_with('\n') {
            while out.ends_with('\n') || out.ends_with('\r') {
                out.pop();
            }
        }
        Ok(Rendered {
            body: out,
            record: self.record,
            changes: self.changes,
        })
    }

    /// For each flat position, the groups that begin before it and end
    /// after it.
    fn group_positions(
        &self,
        n: usize,
        carriers: &[Carrier],
    ) -> (Vec<Vec<usize>>, Vec<Vec<usize>>) {
        let mut begins = vec![Vec::new(); n];
        let mut ends = vec![Vec::new(); n];
        // A field split by `#if` blocks has several carriers: the group
        // opens before its first and closes after its last.
        let first_carrier = |f: usize| carriers.iter().find(|c| c.fields.contains(&f));
        let last_carrier = |f: usize| carriers.iter().rev().find(|c| c.fields.contains(&f));
        for (g, group) in self.groups.iter().enumerate() {
            let first = group.fields.first().and_then(|&f| first_carrier(f));
            let last = group.fields.last().and_then(|&f| last_carrier(f));
            if let (Some(first), Some(last)) = (first, last) {
                begins[first.flat.start].push(g);
                ends[last.flat.end - 1].push(g);
            }
        }
        (begins, ends)
    }

    fn group_marker(&mut self, out: &mut String, g: usize, begin: bool) {
        let group = &self.groups[g];
        let Some(anchor) = group.fields.first().and_then(|&f| self.member_of(f)) else {
            return;
        };
        let nl = newline_of(&self.src.text[anchor.lines.clone()]);
        let line = if begin {
            // Groups after the first are set apart by a blank line.
            if g > 0 && !ends_with_blank_line(out) {
                out.push_str(nl);
            }
            self.record.push(CItem::Marker {
                align: if group.aligned_begin { self.l.line } else { 1 },
            });
            let line = with_line_argument(group.begin_line(), group.aligned_begin, self.l.line);
            self.changes.push(MarkupChange {
                added: true,
                what: line.trim_end_matches(';').to_string(),
                place: Place::Before,
                member: Some(self.s.fields[group.fields[0]].name.clone()),
                why: format!(
                    "opens a cache-line group of {} member{}{}",
                    group.fields.len(),
                    if group.fields.len() == 1 { "" } else { "s" },
                    if group.aligned_begin {
                        ", aligned to start a cacheline"
                    } else {
                        ""
                    }
                ),
            });
            line
        } else {
            // The end marker is aligned to a long; the aligned form then
            // pads to the next line.
            if group.aligned_end {
                self.record.push(CItem::Marker { align: 8 });
                self.record.push(CItem::Marker { align: self.l.line });
            } else {
                self.record.push(CItem::Marker { align: 1 });
            }
            let line = with_line_argument(group.end_line(), group.aligned_end, self.l.line);
            let last = group.fields.last().copied().unwrap_or(group.fields[0]);
            self.changes.push(MarkupChange {
                added: true,
                what: line.trim_end_matches(';').to_string(),
                place: Place::After,
                member: Some(self.s.fields[last].name.clone()),
                why: format!(
                    "closes the group{}",
                    if group.aligned_end {
                        ", padding to the next cacheline"
                    } else {
                        ""
                    }
                ),
            });
            line
        };
        out.push_str(&format!("{}{line}{nl}", anchor.indent));
    }

    fn member_of(&self, field: usize) -> Option<&'a MemberSource> {
        self.src.members.iter().find(|m| m.field == Some(field))
    }

    /// A `CACHELINE_PADDING()` line stays when the next declaration (past
    /// blank lines) starts with a field that needs a line break anyway; the
    /// `Groups` style keeps none.
    fn padding_markers_to_keep(&self, flat: &[&Node]) -> Vec<bool> {
        let text = &self.src.text;
        let mut keep = vec![false; flat.len()];
        for (i, node) in flat.iter().enumerate() {
            let Node::Marker {
                member,
                kind: MarkerKind::Padding,
                ..
            } = node
            else {
                continue;
            };
            if self.kept_author_marker(member, MarkerKind::Padding) {
                keep[i] = true;
                continue;
            }
            // A padding line aligns to 64 bytes: it spells no other line's break.
            if self.style == CStyle::Groups || self.l.line != KERNEL_LINE {
                continue;
            }
            // Past blank lines and comments (a section comment stays below
            // its padding).
            let next = flat[i + 1..].iter().find(|n| {
                !matches!(n, Node::Keep(r) if text[r.clone()].trim().is_empty()
                    || text[r.clone()].trim_start().starts_with("/*")
                    || text[r.clone()].trim_start().starts_with("//"))
            });
            if let Some(Node::Decl { fields, .. }) = next {
                let f = &self.fields[fields[0]];
                keep[i] = f.line_break && f.pad_before.is_none();
            }
        }
        keep
    }

    /// A declaration's lines with its attributes and padding, as the plan
    /// says, and the padding line the `Padding` style puts before it.
    fn declaration(
        &mut self,
        lines: &Range<usize>,
        members: &[&MemberSource],
        fields: &[usize],
        first_break_by_marker: bool,
        padding: &mut PaddingNames,
    ) -> Result<Declaration, Diagnostic> {
        let text = &self.src.text;
        let nl = newline_of(&text[lines.clone()]);
        let mut out = String::new();
        let mut padding_line = None;
        // The fields an earlier declaration began: their padding, guard,
        // break and place are written and recorded there.
        let continued: Vec<usize> = fields
            .iter()
            .copied()
            .filter(|&f| self.written[f])
            .collect();
        for &f in fields {
            self.pieces_left[f] = self.pieces_left[f].saturating_sub(1);
        }
        if let Some((at, bytes)) = fields
            .iter()
            .skip(1)
            .find_map(|&f| self.fields[f].pad_before)
        {
            let f = fields
                .iter()
                .find(|&&f| self.fields[f].pad_before == Some((at, bytes)));
            return Err(Diagnostic::new(format!(
                "field `{}` needs {bytes} bytes of padding before it, inside a declaration \
                 it shares with `{}`",
                self.s.fields[*f.unwrap_or(&fields[0])].name,
                self.s.fields[fields[0]].name
            ))
            .help("declare the fields one per line"));
        }
        if let Some(line) = self.take_pad_before(fields[0]) {
            out.push_str(&line);
        }
        if let Some(&f) = fields.iter().skip(1).find(|&&f| self.fields[f].guard) {
            return Err(Diagnostic::new(format!(
                "bit-field `{}` needs a zero-width guard before it, inside a declaration it \
                 shares with `{}`",
                self.s.fields[f].name, self.s.fields[fields[0]].name
            ))
            .help("declare the fields one per line"));
        }
        let first = fields[0];
        let begins = !continued.contains(&first);
        if begins && self.fields[first].guard {
            out.push_str(&self.guard_line(members[0], first)?);
        } else if begins && opens_with_guard(&self.s.fields[first].ty) {
            self.record.push(CItem::Guard {
                align: self.s.fields[first].align,
            });
        }
        // Edits as (range in the header, replacement), applied back to front.
        let mut edits: Vec<(Range<usize>, String)> = Vec::new();
        let mut seen = Vec::new();
        for m in members {
            let Some(f) = m.field.filter(|f| !seen.contains(f)) else {
                continue;
            };
            seen.push(f);
            if continued.contains(&f) {
                // Its first declaration decided its attributes, and edits
                // only its own lines.
                self.record.push(CItem::Piece { field: f });
                if self
                    .attributes
                    .of(f)
                    .iter()
                    .any(|r| lines.contains(&r.start))
                {
                    return Err(Diagnostic::new(format!(
                        "`{}` of struct {} has an attribute in a declaration after an `#if` \
                         block that splits it",
                        self.s.fields[f].name, self.s.name
                    ))
                    .help("keep the field where it is (pin it in the access file)"));
                }
                continue;
            }
            let by_marker = first_break_by_marker && f == fields[0];
            let wants = self.fields[f].line_break && !by_marker && self.style != CStyle::Groups;
            let spans = self.attributes.of(f);
            let has = !spans.is_empty();
            let mut attributed = false;
            match (wants, has, self.style) {
                (true, true, _) => attributed = true,
                (true, false, CStyle::Aligned)
                    if is_anonymous(m) || is_bitfield_run(&self.s.fields[f].ty) =>
                {
                    // gcc ignores an attribute before `union {`, and one
                    // after `}` would round the member's size up to the
                    // line; a bit-field takes none: a zero-size aligned
                    // member starts the line.
                    out.push_str(&self.zero_size_break(m, f));
                }
                (true, false, CStyle::Aligned) => {
                    let at = insertion_point(text, m);
                    let attribute = line_break_attribute(self.l.line, self.spellings);
                    self.changes.push(MarkupChange {
                        added: true,
                        what: attribute.to_string(),
                        place: Place::On,
                        member: Some(self.s.fields[f].name.clone()),
                        why: line_break_reason(self.s, self.l, f),
                    });
                    let own_line = members.len() == 1
                        && columns(line_around(text, at)) + 1 + attribute.len() > MAX_COLUMNS;
                    if own_line {
                        // After the name the line would pass checkpatch's
                        // 100 columns: the attribute goes on a continuation
                        // line, one tab deeper, as the kernel wraps them.
                        let nl = newline_of(&text[m.lines.clone()]);
                        edits.push((at..at, format!("{nl}{}\t{attribute}", m.indent)));
                    } else {
                        edits.push((at..at, format!(" {attribute}")));
                    }
                    attributed = true;
                }
                (true, false, _) => {
                    if self.l.line != KERNEL_LINE {
                        return Err(Diagnostic::new(format!(
                            "the layout starts a new {}-byte line at `{}`, but \
                             CACHELINE_PADDING() aligns to 64 bytes (SMP_CACHE_BYTES on x86_64)",
                            self.l.line, self.s.fields[f].name
                        ))
                        .help("use --style aligned or --style groups, which spell the alignment"));
                    }
                    if f != fields[0] {
                        return Err(Diagnostic::new(format!(
                            "the layout starts a new line at `{}`, which shares a declaration \
                             with `{}`: a CACHELINE_PADDING() line cannot go between them",
                            self.s.fields[f].name, self.s.fields[fields[0]].name
                        ))
                        .help("use --style aligned, or declare the fields one per line"));
                    }
                    let name = padding.next();
                    self.changes.push(MarkupChange {
                        added: true,
                        what: format!("CACHELINE_PADDING({name})"),
                        place: Place::Before,
                        member: Some(self.s.fields[f].name.clone()),
                        why: line_break_reason(self.s, self.l, f),
                    });
                    padding_line = Some(format!("{}CACHELINE_PADDING({name});", members[0].indent));
                    self.record.push(CItem::Marker {
                        align: self.padding_align(),
                    });
                }
                (false, true, _) => {
                    // Those of a later declaration of it refuse there.
                    for span in spans.iter().filter(|r| lines.contains(&r.start)) {
                        self.changes.push(MarkupChange {
                            added: false,
                            what: text[span.clone()].trim().to_string(),
                            place: Place::On,
                            member: Some(self.s.fields[f].name.clone()),
                            why: dropped_break_reason(self.s, self.l, Some(f)),
                        });
                        edits.push((removal_range(text, span), String::new()));
                    }
                }
                (false, false, _) => {}
            }
            self.record.push(CItem::Field {
                field: f,
                align: self.c_align(f, attributed),
            });
            self.written[f] = true;
        }
        edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
        let mut decl = text[lines.clone()].to_string();
        for (r, with) in edits {
            decl.replace_range(r.start - lines.start..r.end - lines.start, &with);
        }
        out.push_str(&ensure_newline(&decl));
        // After the last declaration of the last field.
        if self
            .last_field
            .is_some_and(|lf| fields.contains(&lf) && self.pieces_left[lf] == 0)
        {
            if let Some((_, bytes)) = self.tail_pad {
                let why = format!("pads struct {} to {} bytes", self.s.name, self.l.size);
                let line = self.pad_line(members[members.len() - 1], bytes, &why, None);
                out.push_str(&line);
                self.record.push(CItem::Pad { bytes });
            }
        }
        Ok(Declaration {
            text: out,
            padding_line,
            nl,
        })
    }

    /// The alignment of a `CACHELINE_PADDING` member: 64 bytes (only kept or
    /// written for 64-byte lines), unless the struct is packed.
    fn padding_align(&self) -> u64 {
        if self.packed {
            1
        } else {
            KERNEL_LINE
        }
    }

    /// The guard line before bit-field run `f` (recorded).
    fn guard_line(&mut self, anchor: &MemberSource, f: usize) -> Result<String, Diagnostic> {
        let field = &self.s.fields[f];
        let Some(decl) = guard_declaration(field.align) else {
            return Err(Diagnostic::new(format!(
                "bit-field `{}` needs a zero-width guard of alignment {}, which no integer type has",
                field.name, field.align
            ))
            .help("keep the bit-fields where they are (pin them in the access file)"));
        };
        self.record.push(CItem::Guard { align: field.align });
        self.changes.push(MarkupChange {
            added: true,
            what: decl.trim_end_matches(';').to_string(),
            place: Place::Before,
            member: Some(field.name.clone()),
            why: format!(
                "bit-field {} starts a storage unit of its own, where gcc would pack it into \
                 the bits before it",
                field.name
            ),
        });
        let nl = newline_of(&self.src.text[anchor.lines.clone()]);
        let why = format!("{} starts a new unit", field.name);
        Ok(commented(
            &anchor.indent,
            decl.trim_end_matches(';'),
            &why,
            nl,
        ))
    }

    /// A zero-size member aligned to the line, written before field `f`
    /// (recorded), so that `f` starts a new line.
    fn zero_size_break(&mut self, anchor: &MemberSource, f: usize) -> String {
        let nl = newline_of(&self.src.text[anchor.lines.clone()]);
        let offset = self.l.slot_of(f).map_or(0, |sl| sl.offset);
        let why = pad_reason(self.s, self.l, f, offset, offset);
        let attribute = line_break_attribute(self.l.line, self.spellings);
        self.record.push(CItem::Marker { align: self.l.line });
        let name = self.pad_names.next();
        self.changes.push(MarkupChange {
            added: true,
            what: format!("{} {name}[0] {attribute}", self.pad_type),
            place: Place::Before,
            member: Some(self.s.fields[f].name.clone()),
            why: line_break_reason(self.s, self.l, f),
        });
        let decl = format!("{} {name}[0] {attribute}", self.pad_type);
        commented(&anchor.indent, &decl, &why, nl)
    }

    /// The alignment C gives field `f` with (`attributed`) or without a
    /// cacheline attribute on its declarator.
    fn c_align(&self, f: usize, attributed: bool) -> CAlign {
        let line = self.l.line;
        let field = &self.s.fields[f];
        let folded = !self.attributes.of(f).is_empty() && field.align == line;
        match (attributed, folded) {
            (true, true) => CAlign::Known(line),
            (true, false) => CAlign::Known(field.align.max(line)),
            (false, true) => CAlign::AtMostLine,
            (false, false) => CAlign::Known(field.align),
        }
    }

    /// The padding line field `f` needs before it, once (recorded).
    fn take_pad_before(&mut self, f: usize) -> Option<String> {
        let (at, bytes) = self.fields[f].pad_before.take()?;
        let anchor = self.member_of(f)?;
        let why = pad_reason(self.s, self.l, f, at, at + bytes);
        self.record.push(CItem::Pad { bytes });
        Some(self.pad_line(anchor, bytes, &why, Some(f)))
    }

    /// A padding member of `bytes` before field `before` (`None`: at the
    /// end), with `why` as its comment.
    fn pad_line(
        &mut self,
        anchor: &MemberSource,
        bytes: u64,
        why: &str,
        before: Option<usize>,
    ) -> String {
        let nl = newline_of(&self.src.text[anchor.lines.clone()]);
        let name = self.pad_names.next();
        self.changes.push(MarkupChange {
            added: true,
            what: format!("{} {name}[{bytes}]", self.pad_type),
            place: if before.is_some() {
                Place::Before
            } else {
                Place::End
            },
            member: before.map(|f| self.s.fields[f].name.clone()),
            why: why.to_string(),
        });
        let decl = format!("{} {name}[{bytes}]", self.pad_type);
        commented(&anchor.indent, &decl, why, nl)
    }
}

/// A member line the diff writes, `decl;` with `why` as its comment: on
/// the same line where that fits in [`MAX_COLUMNS`], else the comment on
/// a line of its own above the member, so that checkpatch accepts it.
fn commented(indent: &str, decl: &str, why: &str, nl: &str) -> String {
    let one = format!("{indent}{decl};\t/* {why} */");
    if columns(&one) <= MAX_COLUMNS {
        format!("{one}{nl}")
    } else {
        format!("{indent}/* {why} */{nl}{indent}{decl};{nl}")
    }
}

/// A group marker line with the line size as its alignment argument where
/// the marker aligns and the line is not the 64 bytes it means without one
/// (`__cacheline_group_begin_aligned(g, 128);`).
fn with_line_argument(marker: String, aligned: bool, line: u64) -> String {
    match marker.strip_suffix(");") {
        Some(head) if aligned && line != KERNEL_LINE => format!("{head}, {line});"),
        _ => marker,
    }
}

/// One rendered declaration.
/// Per field, how many declarations of `flat` hold it.
fn pieces_of(flat: &[&Node], fields: usize) -> Vec<usize> {
    let mut pieces = vec![0; fields];
    for node in flat {
        if let Node::Decl { fields, .. } = node {
            for &f in fields {
                if let Some(n) = pieces.get_mut(f) {
                    *n += 1;
                }
            }
        }
    }
    pieces
}

struct Declaration {
    text: String,
    /// The `Padding` style's `CACHELINE_PADDING(...);` before it, without
    /// newline.
    padding_line: Option<String>,
    nl: &'static str,
}

/// Whether a kept marker that starts a line (`line_markers[j] ==
/// Some(true)`) precedes node `i`, past blank lines, section comments and
/// other kept markers.
fn kept_marker_before(text: &str, flat: &[&Node], line_markers: &[Option<bool>], i: usize) -> bool {
    for j in (0..i).rev() {
        match (flat[j], line_markers[j]) {
            (_, Some(true)) => return true,
            (_, Some(false)) => continue,
            (Node::Keep(r), None)
                if text[r.clone()].trim().is_empty()
                    || text[r.clone()].trim_start().starts_with("/*")
                    || text[r.clone()].trim_start().starts_with("//") =>
            {
                continue
            }
            _ => return false,
        }
    }
    false
}

fn ends_with_blank_line(out: &str) -> bool {
    out.ends_with("\n\n") || out.ends_with("\n\r\n") || out == "\n" || out == "\r\n"
}

/// An attribute with the blank before it (else the one after it).
fn removal_range(text: &str, span: &Range<usize>) -> Range<usize> {
    let before = &text[..span.start];
    let ws_before = before.len() - before.trim_end_matches([' ', '\t']).len();
    let after = &text[span.end..];
    let ws_after = after.len() - after.trim_start_matches([' ', '\t']).len();
    if ws_before > 0 {
        span.start - ws_before..span.end
    } else {
        span.start..span.end + ws_after
    }
}

/// Why a padding member from `at` to `offset` (where `field` starts) is
/// there, for its comment.
fn pad_reason(s: &Struct, l: &Layout, field: usize, at: u64, offset: u64) -> String {
    let name = &s.fields[field].name;
    let container = l.base_offset() + offset;
    // Aligned mode below the line size: the padding keeps the member off the
    // line where the one before it ends, wherever the struct starts.
    let before = l
        .slots
        .iter()
        .filter(|sl| sl.field < s.fields.len() && s.fields[sl.field].size > 0)
        .find(|sl| sl.offset + s.fields[sl.field].size == at);
    let apart = at > 0
        && l.placement == crate::model::Placement::Aligned
        && l.align < l.line
        && l.phases()
            .iter()
            .all(|p| (p + at - 1) / l.line < (p + offset) / l.line);
    if let (true, Some(b)) = (apart, before) {
        format!(
            "keeps {name} off the cacheline of {}",
            s.fields[b.field].name
        )
    } else if container.is_multiple_of(l.line) && l.base_offset() > 0 {
        format!(
            "{name} starts cacheline {} of the container",
            l.line_of(offset)
        )
    } else if container.is_multiple_of(l.line) {
        format!("{name} starts cacheline {}", l.line_of(offset))
    } else {
        format!("{name} at offset {offset}")
    }
}

/// The longest line checkpatch accepts (`--max-line-length`, 100 since 5.7).
const MAX_COLUMNS: usize = 100;

/// The whole line that holds byte `at`, without its newline.
fn line_around(text: &str, at: usize) -> &str {
    let start = line_start_of(text, at);
    let end = text[at..].find('\n').map_or(text.len(), |p| at + p);
    text[start..end].trim_end_matches('\r')
}

/// Where the line holding byte `at` starts.
fn line_start_of(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |p| p + 1)
}

/// The columns a line takes with 8-column tabs, as checkpatch counts them.
fn columns(line: &str) -> usize {
    line.chars().fold(0, |col, c| match c {
        '\t' => col + 8 - col % 8,
        _ => col + 1,
    })
}

/// The prefix of the padding members the diff writes (`__cacheline_pad0`).
const PAD_PREFIX: &str = "__cacheline_pad";

/// Whether `name` is one of the padding members the diff writes.
pub(crate) fn is_padding_member(name: &str) -> bool {
    name.strip_prefix(PAD_PREFIX)
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// Names for padding members that no field of the struct uses.
struct PadNames<'a> {
    s: &'a Struct,
    next: usize,
}

impl<'a> PadNames<'a> {
    fn new(s: &'a Struct) -> Self {
        PadNames { s, next: 0 }
    }
    fn next(&mut self) -> String {
        loop {
            let name = format!("{PAD_PREFIX}{}", self.next);
            self.next += 1;
            if self.s.field_index(&name).is_none() {
                return name;
            }
        }
    }
}

/// Names for new `CACHELINE_PADDING()` lines: those of removed lines first,
/// then `_padN_` names no word of the body uses.
struct PaddingNames {
    reusable: Vec<String>,
    taken: Vec<String>,
    next: usize,
}

impl PaddingNames {
    fn new(src: &StructSource, flat: &[&Node], keep: &[bool]) -> Self {
        let text = &src.text;
        let mut reusable = Vec::new();
        for (i, n) in flat.iter().enumerate() {
            if let Node::Marker {
                member,
                kind: MarkerKind::Padding,
                ..
            } = n
            {
                if let (false, Some(name)) = (
                    keep[i],
                    super::body::marker_name(&text[member.decl.clone()]),
                ) {
                    reusable.push(name.to_string());
                }
            }
        }
        let taken = text[src.body.clone()]
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect();
        PaddingNames {
            reusable,
            taken,
            next: 1,
        }
    }

    fn next(&mut self) -> String {
        if !self.reusable.is_empty() {
            return self.reusable.remove(0);
        }
        loop {
            let name = format!("_pad{}_", self.next);
            self.next += 1;
            if !self.taken.contains(&name) {
                self.taken.push(name.clone());
                return name;
            }
        }
    }
}

/// Kernel headers get `u8` padding, others `unsigned char`.
pub(crate) fn looks_like_kernel(text: &str) -> bool {
    text.contains("#include <linux/")
        || text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| matches!(w, "u8" | "u16" | "u32" | "u64" | "__u8" | "__u32" | "__u64"))
}

pub(crate) fn newline_of(lines: &str) -> &'static str {
    if lines.ends_with("\r\n") {
        "\r\n"
    } else {
        "\n"
    }
}

fn ensure_newline(chunk: &str) -> String {
    if chunk.ends_with('\n') {
        chunk.to_string()
    } else {
        format!("{chunk}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_past_the_column_limit_goes_above_its_member() {
        let short = commented(
            "\t",
            "u8 __cacheline_pad0[8]",
            "keeps a off the cacheline of b",
            "\n",
        );
        assert_eq!(
            short,
            "\tu8 __cacheline_pad0[8];\t/* keeps a off the cacheline of b */\n"
        );
        // skb_shared_info's in 6.1: 102 columns on one line.
        let why = "keeps destructor_arg off the cacheline of xdp_frags_size";
        let long = commented("\t", "u8 __cacheline_pad1[56]", why, "\r\n");
        assert_eq!(
            long,
            format!("\t/* {why} */\r\n\tu8 __cacheline_pad1[56];\r\n")
        );
        assert!(long.lines().all(|l| columns(l) <= MAX_COLUMNS));
        assert!(columns(&format!("\tu8 __cacheline_pad1[56];\t/* {why} */")) > MAX_COLUMNS);
    }
}
