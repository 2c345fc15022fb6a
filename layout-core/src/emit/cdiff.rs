//! The C header diff: the struct's members in the verified layout's order.
//!
//! Every member moves with its whole source lines (leading comment,
//! declaration, trailing comment). The body keeps its shape: the k-th field
//! declaration in the source is replaced by the k-th member of the new order,
//! while blank lines, non-field members (macro lines, preprocessor blocks) and
//! everything outside the struct stay where they are. Alignment breaks from
//! the [`plan`](super::plan) are spelled in the [`CStyle`]; gaps no alignment
//! can express get explicit `char` (or `u8`) padding members. Existing
//! cacheline attributes stay where a break is needed and go where none is.

use super::plan::{plan, Item};
use super::CStyle;
use crate::error::{line_col, Diagnostic};
use crate::layout::Layout;
use crate::model::Struct;
use crate::source::{MemberSource, StructSource};
use crate::verify::VerifiedLayout;
use similar::{Algorithm, TextDiff};
use std::ops::Range;

/// The attribute the `Aligned` style writes.
const ALIGNED_ATTRIBUTE: &str = "____cacheline_aligned_in_smp";
/// Attributes that align a member to the cache line in kernel headers.
const CACHELINE_ATTRIBUTES: &[&str] = &[
    "____cacheline_aligned_in_smp",
    "____cacheline_aligned",
    "__cacheline_aligned_in_smp",
    "__cacheline_aligned",
];

/// A unified diff (`--- a/PATH`, `+++ b/PATH`, 3 lines of context) that turns
/// `src.text` into the same header with the struct laid out as `v`. It
/// applies with `patch -p1` (or `git apply`) from the directory `src.path` is
/// relative to, and gcc then places every member at its verified offset
/// (given `SMP_CACHE_BYTES` equal to the layout's line size). Empty when the
/// header already has this layout.
pub fn c_diff(src: &StructSource, v: &VerifiedLayout, style: CStyle) -> Result<String, Diagnostic> {
    let s = v.strukt();
    let l: &Layout = v;
    let at_struct = |d: Diagnostic| {
        let (line, col) = line_col(&src.text, src.definition.start);
        d.in_file(&src.path).at(line, col)
    };
    let fields = field_members(src, s).map_err(at_struct)?;
    let has_attribute: Vec<bool> = fields
        .iter()
        .map(|m| !attribute_spans(&src.text[m.decl.clone()]).is_empty())
        .collect();
    let items = plan(s, l, &has_attribute).map_err(at_struct)?;
    let new_text = rewrite(src, s, l, &fields, &items, style);
    Ok(unified_diff(&diff_path(src), &src.text, &new_text))
}

/// Checks the source ranges and returns each field's member, by field index.
fn field_members<'a>(
    src: &'a StructSource,
    s: &Struct,
) -> Result<Vec<&'a MemberSource>, Diagnostic> {
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
    let mut by_field: Vec<Option<&MemberSource>> = vec![None; s.fields.len()];
    let mut end = src.body.start;
    for m in &src.members {
        if !valid(&m.lines) || !within(&m.lines, &src.body) || m.lines.start < end {
            return Err(bad(format!(
                "member at byte {} is out of order or outside the body",
                m.lines.start
            )));
        }
        if !valid(&m.decl) || !within(&m.decl, &m.lines) || !within(&m.name, &m.decl) {
            return Err(bad(format!(
                "member at byte {} has a declaration outside its lines",
                m.lines.start
            )));
        }
        end = m.lines.end;
        if let Some(i) = m.field {
            let slot = by_field
                .get_mut(i)
                .ok_or_else(|| bad(format!("member at byte {} names field {i}", m.lines.start)))?;
            if slot.replace(m).is_some() {
                return Err(bad(format!(
                    "field `{}` is declared twice",
                    s.fields[i].name
                )));
            }
        }
    }
    by_field
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            m.ok_or_else(|| {
                Diagnostic::new(format!(
                    "field `{}` of struct `{}` has no declaration in the header",
                    s.fields[i].name, s.name
                ))
                .help("a field the diff must move has to come from this header")
            })
        })
        .collect()
}

/// The header with the struct body rebuilt from the plan.
fn rewrite(
    src: &StructSource,
    s: &Struct,
    l: &Layout,
    fields: &[&MemberSource],
    items: &[Item],
    style: CStyle,
) -> String {
    let text = &src.text;
    let pad_type = if looks_like_kernel(text) {
        "u8"
    } else {
        "unsigned char"
    };
    let mut pad_names = PadNames::new(s);
    // One chunk per member of the new order: its padding, then its lines.
    let mut chunks: Vec<String> = Vec::new();
    let mut pending_pad = String::new();
    for item in items {
        match *item {
            Item::Member {
                field, line_break, ..
            } => {
                let mut chunk = std::mem::take(&mut pending_pad);
                chunk.push_str(&ensure_newline(&member_text(
                    text,
                    fields[field],
                    line_break,
                    style,
                )));
                chunks.push(chunk);
            }
            Item::Pad { at, bytes, before } => {
                let anchor = before.map(|i| fields[i]).or_else(|| fields.last().copied());
                let indent = anchor.map_or("\t", |m| m.indent.as_str());
                let nl = anchor.map_or("\n", |m| newline_of(&text[m.lines.clone()]));
                let why = match before {
                    Some(i) => pad_reason(s, l, i, at + bytes),
                    None => format!("pads struct {} to {} bytes", s.name, l.size),
                };
                let pad = format!(
                    "{indent}{pad_type} {}[{bytes}];\t/* {why} */{nl}",
                    pad_names.next()
                );
                match (before, chunks.last_mut()) {
                    (None, Some(last)) => last.push_str(&pad),
                    _ => pending_pad.push_str(&pad),
                }
            }
        }
    }

    let mut body = String::new();
    let mut cursor = src.body.start;
    let mut next_chunk = chunks.into_iter();
    for m in &src.members {
        body.push_str(&text[cursor..m.lines.start]);
        let original = &text[m.lines.clone()];
        match m.field.and_then(|_| next_chunk.next()) {
            Some(chunk) => body.push_str(&match_trailing_newline(chunk, original)),
            None => body.push_str(original),
        }
        cursor = m.lines.end;
    }
    body.push_str(&text[cursor..src.body.end]);

    let mut out = String::with_capacity(text.len() + 256);
    out.push_str(&text[..src.body.start]);
    out.push_str(&body);
    out.push_str(&text[src.body.end..]);
    out
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

/// A member's source lines with its cacheline attribute added or removed.
fn member_text(text: &str, m: &MemberSource, line_break: bool, style: CStyle) -> String {
    let lines = &text[m.lines.clone()];
    let decl = m.decl.start - m.lines.start..m.decl.end - m.lines.start;
    let attributes = attribute_spans(&lines[decl.clone()]);
    match (line_break, attributes.is_empty(), style) {
        (true, true, CStyle::Aligned) => {
            // Before the `;`: after the declarator and its array brackets.
            let at = match lines[decl.clone()].trim_end().strip_suffix(';') {
                Some(before) => decl.start + before.trim_end().len(),
                None => decl.start + lines[decl.clone()].trim_end().len(),
            };
            format!("{} {ALIGNED_ATTRIBUTE}{}", &lines[..at], &lines[at..])
        }
        (false, false, _) => {
            let mut out = lines.to_string();
            for span in attributes.iter().rev() {
                let (start, end) = (decl.start + span.start, decl.start + span.end);
                // Take the blank before the attribute, else the one after it.
                let ws_before =
                    out[..start].len() - out[..start].trim_end_matches([' ', '\t']).len();
                let ws_after = out[end..].len() - out[end..].trim_start_matches([' ', '\t']).len();
                let range = if ws_before > 0 {
                    start - ws_before..end
                } else {
                    start..end + ws_after
                };
                out.replace_range(range, "");
            }
            out
        }
        _ => lines.to_string(),
    }
}

/// Byte ranges of cacheline attributes in a declaration, skipping comments.
fn attribute_spans(decl: &str) -> Vec<Range<usize>> {
    let bytes = decl.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if decl[i..].starts_with("/*") {
            i = decl[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |e| i + 2 + e + 2);
        } else if decl[i..].starts_with("//") {
            i = decl[i..].find('\n').map_or(bytes.len(), |e| i + e);
        } else if bytes[i].is_ascii_alphabetic() || bytes[i] == b'_' {
            let len = decl[i..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(decl.len() - i);
            if CACHELINE_ATTRIBUTES.contains(&&decl[i..i + len]) {
                spans.push(i..i + len);
            }
            i += len;
        } else {
            i += 1;
        }
    }
    spans
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

/// A chunk placed where `original` was ends with a newline exactly when
/// `original` did (the last member may share its line with the `}`).
fn match_trailing_newline(mut chunk: String, original: &str) -> String {
    if !original.ends_with('\n') {
        while chunk.ends_with('\n') || chunk.ends_with('\r') {
            chunk.pop();
        }
    }
    chunk
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
