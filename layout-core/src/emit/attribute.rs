//! Cacheline attributes on member declarations: where they are, where a new
//! one goes.

use crate::model::Struct;
use crate::source::{MemberSource, StructSource};
use std::ops::Range;

/// Attributes that align a member to the cache line in kernel headers.
const CACHELINE_ATTRIBUTES: &[&str] = &[
    "____cacheline_aligned_in_smp",
    "____cacheline_aligned",
    "__cacheline_aligned_in_smp",
    "__cacheline_aligned",
];

/// The cacheline attributes of every field's declarator.
pub(crate) struct FieldAttributes {
    /// Absolute byte ranges in the header, per field.
    spans: Vec<Vec<Range<usize>>>,
}

impl FieldAttributes {
    /// Attributes after a field's declarator name (up to the next `,` or `;`),
    /// and, for the first declarator of a declaration, those before its name.
    pub(crate) fn find(src: &StructSource, s: &Struct) -> Self {
        let mut spans = vec![Vec::new(); s.fields.len()];
        for (k, m) in src.members.iter().enumerate() {
            let Some(field) = m.field.filter(|&f| f < s.fields.len()) else {
                continue;
            };
            let first_of_decl = k == 0 || src.members[k - 1].decl != m.decl;
            spans[field].extend(declarator_attributes(&src.text, m, first_of_decl));
        }
        FieldAttributes { spans }
    }

    /// Whether each field's declaration carries a cacheline attribute.
    pub(crate) fn present(&self) -> Vec<bool> {
        self.spans.iter().map(|v| !v.is_empty()).collect()
    }

    pub(crate) fn of(&self, field: usize) -> &[Range<usize>] {
        self.spans.get(field).map_or(&[], Vec::as_slice)
    }
}

fn declarator_attributes(text: &str, m: &MemberSource, first_of_decl: bool) -> Vec<Range<usize>> {
    let decl = &text[m.decl.clone()];
    let name_end = m.name.end.clamp(m.decl.start, m.decl.end) - m.decl.start;
    let name_start = m.name.start.clamp(m.decl.start, m.decl.end) - m.decl.start;
    let suffix_end = name_end + top_level_end(&decl[name_end..]);
    let mut spans: Vec<Range<usize>> = attribute_spans(&decl[name_end..suffix_end])
        .into_iter()
        .map(|r| r.start + name_end..r.end + name_end)
        .collect();
    if first_of_decl {
        spans.extend(attribute_spans(&decl[..name_start]));
    }
    spans
        .into_iter()
        .map(|r| r.start + m.decl.start..r.end + m.decl.start)
        .collect()
}

/// Length up to the first `,` or `;` outside brackets and parentheses.
fn top_level_end(s: &str) -> usize {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | ';' if depth <= 0 => return i,
            _ => {}
        }
    }
    s.len()
}

/// Byte ranges of cacheline attributes in `s`, skipping comments.
pub(crate) fn attribute_spans(s: &str) -> Vec<Range<usize>> {
    let bytes = s.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if s[i..].starts_with("/*") {
            i = s[i + 2..].find("*/").map_or(bytes.len(), |e| i + 2 + e + 2);
        } else if s[i..].starts_with("//") {
            i = s[i..].find('\n').map_or(bytes.len(), |e| i + e);
        } else if bytes[i].is_ascii_alphabetic() || bytes[i] == b'_' {
            let len = s[i..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(s.len() - i);
            if CACHELINE_ATTRIBUTES.contains(&&s[i..i + len]) {
                spans.push(i..i + len);
            }
            i += len;
        } else if bytes[i].is_ascii_digit() {
            // Skip numbers whole so `1__cacheline_aligned` never matches.
            i += s[i..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(s.len() - i);
        } else {
            i += 1;
        }
    }
    spans
}

/// Where a new attribute goes for this declarator: after its name and array
/// brackets (absolute offset).
pub(crate) fn insertion_point(text: &str, m: &MemberSource) -> usize {
    let mut at = m.name.end.clamp(m.decl.start, m.decl.end);
    loop {
        let rest = &text[at..m.decl.end];
        let ws = rest.len() - rest.trim_start().len();
        if !rest[ws..].starts_with('[') {
            return at;
        }
        let mut depth = 0;
        let mut close = None;
        for (i, c) in rest[ws..].char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        match close {
            Some(i) => at += ws + i + 1,
            None => return at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_skip_comments_and_other_words() {
        let d = "long x ____cacheline_aligned_in_smp; /* ____cacheline_aligned */";
        assert_eq!(attribute_spans(d), vec![7..35]);
        assert!(attribute_spans("int my____cacheline_aligned;").is_empty());
    }

    #[test]
    fn insertion_after_array_brackets() {
        let text = "\tlong nr[A][B[1]] __rcu;\n";
        let m = MemberSource {
            field: Some(0),
            lines: 0..text.len(),
            decl: 1..text.len() - 1,
            name: 6..8,
            indent: "\t".into(),
        };
        assert_eq!(&text[..insertion_point(text, &m)], "\tlong nr[A][B[1]]");
    }
}
