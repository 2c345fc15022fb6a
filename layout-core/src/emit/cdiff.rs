//! The C header diff: the struct's members in the verified layout's order.
//!
//! Every declaration moves with its whole source lines (leading comment,
//! declaration, trailing comment). The body keeps its shape ([`body`]): the
//! k-th field-carrying position in the source receives the k-th declaration
//! (or `#if` block) of the new order, while blank lines, directives and other
//! non-field text stay where they are. Alignment breaks from the
//! [`plan`](super::plan) are spelled in the [`CStyle`]; a `CACHELINE_PADDING()`
//! line right before a member that needs a break stays and spells it, other
//! such lines go. Gaps no alignment can express get explicit `u8` (or
//! `unsigned char`) padding members. Existing cacheline attributes stay where
//! a break is needed and go where none is.

use super::attribute::{insertion_point, FieldAttributes};
use super::body::{self, MarkerKind, Node};
use super::plan::{plan, Item};
use super::CStyle;
use crate::error::{line_col, Diagnostic};
use crate::layout::Layout;
use crate::model::Struct;
use crate::report::ordered_slots;
use crate::source::{MemberSource, StructSource};
use crate::verify::VerifiedLayout;
use similar::{Algorithm, TextDiff};
use std::ops::Range;

/// The attribute the `Aligned` style writes.
const ALIGNED_ATTRIBUTE: &str = "____cacheline_aligned_in_smp";
/// A unified diff (`--- a/PATH`, `+++ b/PATH`, 3 lines of context) that turns
/// `src.text` into the same header with the struct laid out as `v`. It
/// applies with `patch -p1` (or `git apply`) from the directory `src.path` is
/// relative to, and gcc then places every member at its verified offset
/// (given `SMP_CACHE_BYTES` equal to the layout's line size). Empty when the
/// header already has this layout.
///
/// Errors: source ranges that do not fit the struct, a layout that would
/// move a field into or out of an `#if` block or split a declaration of
/// several fields, `__cacheline_group_*` markers (the `Groups` style is still
/// to come), an alignment C cannot express with the style.
pub fn c_diff(src: &StructSource, v: &VerifiedLayout, style: CStyle) -> Result<String, Diagnostic> {
    let s = v.strukt();
    let l: &Layout = v;
    let at_struct = |d: Diagnostic| {
        let (line, col) = line_col(&src.text, src.definition.start);
        d.in_file(&src.path).at(line, col)
    };
    if !l.line.is_power_of_two() {
        return Err(at_struct(Diagnostic::new(format!(
            "line size {} is not a power of two",
            l.line
        ))));
    }
    check_ranges(src, s).map_err(at_struct)?;
    let nodes = body::parse(src).map_err(at_struct)?;
    let mut flat = Vec::new();
    body::flatten(&nodes, &mut flat);
    if let Some(Node::Marker { member, .. }) = flat.iter().find(|n| {
        matches!(
            n,
            Node::Marker {
                kind: MarkerKind::Group,
                ..
            }
        )
    }) {
        let (line, col) = line_col(&src.text, member.decl.start);
        return Err(Diagnostic::new(format!(
            "struct `{}` uses __cacheline_group markers, which the {style:?} style cannot keep",
            s.name
        ))
        .in_file(&src.path)
        .at(line, col)
        .help("group markers need the Groups style of the C diff, which is not available yet"));
    }
    let order: Vec<usize> = ordered_slots(s, l).iter().map(|sl| sl.field).collect();
    let mut rank = vec![0; s.fields.len()];
    for (k, &f) in order.iter().enumerate() {
        rank[f] = k;
    }
    let reordered = body::reorder(s, &nodes, &rank).map_err(at_struct)?;
    let mut flat = Vec::new();
    body::flatten(&reordered, &mut flat);

    let attributes = FieldAttributes::find(src, s);
    let items = plan(s, l, &attributes.present()).map_err(at_struct)?;
    let new_body = Renderer::new(src, s, l, &items, &attributes, style)
        .render(&flat)
        .map_err(at_struct)?;
    let mut new_text = String::with_capacity(src.text.len() + 256);
    new_text.push_str(&src.text[..src.body.start]);
    new_text.push_str(&new_body);
    new_text.push_str(&src.text[src.body.end..]);
    Ok(unified_diff(&diff_path(src), &src.text, &new_text))
}

/// Checks that the source ranges fit each other and the struct, and that
/// every field has a declaration.
fn check_ranges(src: &StructSource, s: &Struct) -> Result<(), Diagnostic> {
    let text = &src.text;
    let within = |inner: &Range<usize>, outer: &Range<usize>| {
        inner.start <= inner.end && outer.start <= inner.start && inner.end <= outer.end
    };
    let valid = |r: &Range<usize>| text.get(r.clone()).is_some();
    let bad = |what: String| {
        Diagnostic::new(format!(
            "the source ranges of struct `{}` are inconsistent: {what}",
            s.name
        ))
        .help("this is a front-end bug; please report it with the header")
    };
    if !valid(&src.definition) || !valid(&src.body) || !within(&src.body, &src.definition) {
        return Err(bad("the body is not inside the definition".into()));
    }
    let mut declared = vec![false; s.fields.len()];
    let mut end = src.body.start;
    for m in &src.members {
        // Declarators of one declaration share their lines.
        let shares_previous = m.lines.end == end && m.lines.start < end;
        if !valid(&m.lines)
            || !within(&m.lines, &src.body)
            || (m.lines.start < end && !shares_previous)
        {
            return Err(bad(format!(
                "member at byte {} is out of order or outside the body",
                m.lines.start
            )));
        }
        if !valid(&m.decl)
            || !valid(&m.name)
            || !within(&m.decl, &m.lines)
            || !within(&m.name, &m.decl)
        {
            return Err(bad(format!(
                "member at byte {} has a declaration outside its lines",
                m.lines.start
            )));
        }
        end = m.lines.end;
        if let Some(i) = m.field {
            *declared.get_mut(i).ok_or_else(|| {
                bad(format!("member at byte {} names field {i}", m.lines.start))
            })? = true;
        }
    }
    match declared.iter().position(|d| !d) {
        Some(i) => Err(Diagnostic::new(format!(
            "field `{}` of struct `{}` has no declaration in the header",
            s.fields[i].name, s.name
        ))
        .help("a field the diff must move has to come from this header")),
        None => Ok(()),
    }
}

/// What the plan asks for, field by field.
struct FieldPlan {
    line_break: bool,
    /// Padding before the field: (struct offset where it starts, bytes).
    pad_before: Option<(u64, u64)>,
}

/// Writes the new struct body from the reordered nodes.
struct Renderer<'a> {
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
    pad_type: &'static str,
    pad_names: PadNames<'a>,
}

impl<'a> Renderer<'a> {
    fn new(
        src: &'a StructSource,
        s: &'a Struct,
        l: &'a Layout,
        items: &[Item],
        attributes: &'a FieldAttributes,
        style: CStyle,
    ) -> Self {
        let mut fields: Vec<FieldPlan> = (0..s.fields.len())
            .map(|_| FieldPlan {
                line_break: false,
                pad_before: None,
            })
            .collect();
        let mut tail_pad = None;
        let mut last_field = None;
        for item in items {
            match *item {
                Item::Member {
                    field, line_break, ..
                } => {
                    fields[field].line_break = line_break;
                    last_field = Some(field);
                }
                Item::Pad {
                    at,
                    bytes,
                    before: Some(f),
                } => fields[f].pad_before = Some((at, bytes)),
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
            pad_type: if looks_like_kernel(&src.text) {
                "u8"
            } else {
                "unsigned char"
            },
            pad_names: PadNames::new(s),
        }
    }

    fn render(mut self, flat: &[&Node]) -> Result<String, Diagnostic> {
        let text = &self.src.text;
        let keep_marker = self.padding_markers_to_keep(flat);
        let mut out = String::new();
        let mut dropped_line = false;
        for (i, node) in flat.iter().enumerate() {
            match node {
                Node::Keep(r) => {
                    let mut kept = &text[r.clone()];
                    // Removing a line between two blank lines leaves one blank line.
                    if dropped_line && (out.ends_with("\n\n") || out.ends_with("\n\r\n")) {
                        kept = kept
                            .strip_prefix("\r\n")
                            .or_else(|| kept.strip_prefix('\n'))
                            .unwrap_or(kept);
                    }
                    out.push_str(kept);
                }
                Node::Marker { member, .. } => {
                    if keep_marker[i] {
                        out.push_str(&text[member.lines.clone()]);
                    } else {
                        dropped_line = true;
                        continue;
                    }
                }
                Node::Decl {
                    lines,
                    members,
                    fields,
                } => {
                    let by_marker = self.kept_marker_before(flat, &keep_marker, i);
                    out.push_str(&self.declaration(lines, members, fields, by_marker)?);
                }
                // `flatten` opens every block.
                Node::Block(_) => {}
            }
            dropped_line = false;
        }
        let original = &text[self.src.body.clone()];
        if !original.ends_with('\n') {
            while out.ends_with('\n') || out.ends_with('\r') {
                out.pop();
            }
        }
        Ok(out)
    }

    /// A `CACHELINE_PADDING()` line stays when the next declaration (past
    /// blank lines) starts with a field that needs a line break anyway.
    fn padding_markers_to_keep(&self, flat: &[&Node]) -> Vec<bool> {
        let text = &self.src.text;
        let mut keep = vec![false; flat.len()];
        for (i, node) in flat.iter().enumerate() {
            if !matches!(
                node,
                Node::Marker {
                    kind: MarkerKind::Padding,
                    ..
                }
            ) {
                continue;
            }
            let next = flat[i + 1..]
                .iter()
                .find(|n| !matches!(n, Node::Keep(r) if text[r.clone()].trim().is_empty()));
            if let Some(Node::Decl { fields, .. }) = next {
                let f = &self.fields[fields[0]];
                keep[i] = f.line_break && f.pad_before.is_none();
            }
        }
        keep
    }

    /// Whether a kept padding marker (past blank lines) precedes node `i`.
    fn kept_marker_before(&self, flat: &[&Node], keep: &[bool], i: usize) -> bool {
        let text = &self.src.text;
        let before = flat[..i]
            .iter()
            .rposition(|n| !matches!(n, Node::Keep(r) if text[r.clone()].trim().is_empty()));
        before.is_some_and(|j| keep[j])
    }

    /// A declaration's lines with its attributes and padding, as the plan says.
    fn declaration(
        &mut self,
        lines: &Range<usize>,
        members: &[&MemberSource],
        fields: &[usize],
        first_break_by_marker: bool,
    ) -> Result<String, Diagnostic> {
        let text = &self.src.text;
        let mut out = String::new();
        for (k, &f) in fields.iter().enumerate() {
            if let Some((at, bytes)) = self.fields[f].pad_before {
                if k > 0 {
                    return Err(Diagnostic::new(format!(
                        "field `{}` needs {bytes} bytes of padding before it, inside a declaration \
                         it shares with `{}`",
                        self.s.fields[f].name, self.s.fields[fields[0]].name
                    ))
                    .help("declare the fields one per line"));
                }
                let anchor = members[0];
                let why = pad_reason(self.s, self.l, f, at + bytes);
                out.push_str(&self.pad_line(anchor, bytes, &why));
            }
        }
        // Edits as (range in the header, replacement), applied back to front.
        let mut edits: Vec<(Range<usize>, String)> = Vec::new();
        let mut seen = Vec::new();
        for m in members {
            let Some(f) = m.field.filter(|f| !seen.contains(f)) else {
                continue;
            };
            seen.push(f);
            let by_marker = first_break_by_marker && f == fields[0];
            let wants = self.fields[f].line_break && !by_marker;
            let spans = self.attributes.of(f);
            match (wants, spans.is_empty(), self.style) {
                (true, true, CStyle::Aligned) => {
                    let at = insertion_point(text, m);
                    edits.push((at..at, format!(" {ALIGNED_ATTRIBUTE}")));
                }
                (false, false, _) => {
                    for span in spans {
                        edits.push((removal_range(text, span), String::new()));
                    }
                }
                _ => {}
            }
        }
        edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
        let mut decl = text[lines.clone()].to_string();
        for (r, with) in edits {
            decl.replace_range(r.start - lines.start..r.end - lines.start, &with);
        }
        out.push_str(&ensure_newline(&decl));
        if self.last_field.is_some_and(|lf| fields.contains(&lf)) {
            if let Some((_, bytes)) = self.tail_pad {
                let why = format!("pads struct {} to {} bytes", self.s.name, self.l.size);
                let anchor = members[members.len() - 1];
                out.push_str(&self.pad_line(anchor, bytes, &why));
            }
        }
        Ok(out)
    }

    fn pad_line(&mut self, anchor: &MemberSource, bytes: u64, why: &str) -> String {
        let nl = newline_of(&self.src.text[anchor.lines.clone()]);
        format!(
            "{}{} {}[{bytes}];\t/* {why} */{nl}",
            anchor.indent,
            self.pad_type,
            self.pad_names.next()
        )
    }
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

/// Why a padding member is there, for its comment.
fn pad_reason(s: &Struct, l: &Layout, field: usize, offset: u64) -> String {
    let name = &s.fields[field].name;
    let container = l.base_offset() + offset;
    if container % l.line == 0 && l.base_offset() > 0 {
        format!(
            "{name} starts cacheline {} of the container",
            l.line_of(offset)
        )
    } else if container % l.line == 0 {
        format!("{name} starts cacheline {}", l.line_of(offset))
    } else {
        format!("{name} at offset {offset}")
    }
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
            let name = format!("__cacheline_pad{}", self.next);
            self.next += 1;
            if self.s.field_index(&name).is_none() {
                return name;
            }
        }
    }
}

/// Kernel headers get `u8` padding, others `unsigned char`.
fn looks_like_kernel(text: &str) -> bool {
    text.contains("#include <linux/")
        || text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| matches!(w, "u8" | "u16" | "u32" | "u64" | "__u8" | "__u32" | "__u64"))
}

fn newline_of(lines: &str) -> &'static str {
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

/// The path as the diff headers show it: relative, `/`-separated.
fn diff_path(src: &StructSource) -> String {
    let p = src.path.to_string_lossy().replace('\\', "/");
    let mut p = p.as_str();
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    p.to_string()
}

/// A unified diff with 3 lines of context and git-style hunk context (the
/// nearest line above the hunk that starts with an identifier).
fn unified_diff(path: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Patience)
        .diff_lines(old, new);
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        let text = hunk.to_string();
        let (header, rest) = text.split_once('\n').unwrap_or((&text, ""));
        out.push_str(header);
        let first_old = hunk.ops().first().map_or(0, |op| op.old_range().start);
        if let Some(f) = function_context(&old_lines, first_old) {
            out.push(' ');
            out.push_str(f);
        }
        out.push('\n');
        out.push_str(rest);
    }
    out
}

fn function_context<'a>(lines: &[&'a str], before: usize) -> Option<&'a str> {
    lines[..before.min(lines.len())]
        .iter()
        .rev()
        .find(|l| l.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$'))
        .map(|l| l.trim_end())
}
