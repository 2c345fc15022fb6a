//! Cacheline attributes on member declarations: where they are, where a new
//! one goes; and the alignment attribute of the struct itself.

use crate::idioms::{self, KernelSpellings};
use crate::lex::{tokenize, TokKind};
use crate::model::Struct;
use crate::source::{MemberSource, StructSource};
use std::ops::Range;

/// The line size the kernel's cacheline idioms stand for
/// ([`idioms::SMP_CACHE_BYTES`]): only layouts of this line size reuse them.
pub(crate) const KERNEL_LINE: u64 = idioms::SMP_CACHE_BYTES;

/// The cacheline attributes of every field's declarator.
pub(crate) struct FieldAttributes {
    /// Absolute byte ranges in the header, per field.
    spans: Vec<Vec<Range<usize>>>,
}

impl FieldAttributes {
    /// Attributes after a field's declarator name (up to the next `,` or `;`),
    /// and, for the first declarator of a declaration, those before its name.
    ///
    /// For a `line` other than [`KERNEL_LINE`] there are none: such an
    /// attribute aligns to 64 bytes, not to the layout's line, so it neither
    /// spells a break nor may be removed (the model's alignment of its field
    /// counts it); it stays on its declaration like any other attribute.
    pub(crate) fn find(src: &StructSource, s: &Struct, line: u64) -> Self {
        let mut spans = vec![Vec::new(); s.fields.len()];
        if line != KERNEL_LINE {
            return FieldAttributes { spans };
        }
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

/// Byte ranges of cacheline attributes in `s`, skipping comments and
/// literals: the kernel's macros, and the explicit alignments to the line
/// the diffs write where those are not defined (`__aligned(64)`,
/// `__attribute__((__aligned__(64)))`).
pub(crate) fn attribute_spans(s: &str) -> Vec<Range<usize>> {
    let toks: Vec<_> = tokenize(s)
        .into_iter()
        .filter(|t| !matches!(t.kind, TokKind::Comment | TokKind::Newline))
        .collect();
    let text = |i: usize| toks.get(i).map_or("", |t| t.text(s));
    let line = KERNEL_LINE.to_string();
    let line = line.as_str();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        let matched = if t.kind != TokKind::Ident {
            0
        } else if idioms::is_cacheline_attribute(t.text(s)) {
            1
        } else if t.text(s) == "__aligned" && (1..4).map(|k| text(i + k)).eq(["(", line, ")"]) {
            4
        } else if t.text(s) == "__attribute__"
            && [1, 2, 4, 5, 6, 7, 8].map(|k| text(i + k)) == ["(", "(", "(", line, ")", ")", ")"]
            && matches!(text(i + 3), "__aligned__" | "aligned")
        {
            9
        } else {
            0
        };
        if matched > 0 {
            spans.push(t.range.start..toks[i + matched - 1].range.end);
            i += matched;
        } else {
            i += 1;
        }
    }
    spans
}

/// The attribute that makes a member start a new line of `line` bytes:
/// the kernel's `____cacheline_aligned_in_smp` for 64-byte lines (what it
/// means on x86_64), else an explicit alignment (`__aligned(N)` in a kernel
/// header, `__attribute__((__aligned__(N)))` in others).
pub(crate) fn line_break_attribute(line: u64, spell: KernelSpellings) -> String {
    if line == KERNEL_LINE && spell.line_attribute {
        idioms::LINE_BREAK_ATTRIBUTE.to_string()
    } else {
        aligned_attribute(line, spell)
    }
}

/// `__aligned(N)` where the header can spell it, else the GNU attribute.
pub(crate) fn aligned_attribute(align: u64, spell: KernelSpellings) -> String {
    if spell.aligned {
        format!("__aligned({align})")
    } else {
        format!("__attribute__((__aligned__({align})))")
    }
}

/// Whether a member is anonymous (`union { ... };`): nothing names it, and an
/// attribute before it is ignored by gcc, so its break needs a zero-size
/// aligned member before it.
pub(crate) fn is_anonymous(m: &MemberSource) -> bool {
    m.name.is_empty() && m.name.start == m.decl.start
}

/// Whether a model field is a bit-field run: the C front-end writes its
/// type as `type name:width` pieces, which no other C type has.
pub(crate) fn is_bitfield_run(ty: &str) -> bool {
    ty.contains(':')
}

/// Whether a bit-field run opens with a zero-width bit-field (a guard that
/// starts it on a new unit of its own alignment).
pub(crate) fn opens_with_guard(ty: &str) -> bool {
    ty.split("; ").next().is_some_and(|p| p.ends_with(":0"))
}

/// Whether a run that opens with a zero-width guard (`signed char :0`) is
/// started by it on a multiple of `align`: its type is at least that
/// aligned (an unknown type name is taken to be).
pub(crate) fn guard_aligns_to(ty: &str, align: u64) -> bool {
    let Some(first) = ty.split("; ").next() else {
        return false;
    };
    let words: Vec<&str> = first.trim_end_matches(":0").split_whitespace().collect();
    let has = |w: &str| words.contains(&w);
    let own = if has("char") || has("_Bool") || has("u8") || has("s8") {
        1
    } else if has("short") || has("u16") || has("s16") {
        2
    } else if has("long") || has("u64") || has("s64") {
        8
    } else if has("int") || has("unsigned") || has("signed") || has("u32") || has("s32") {
        4
    } else {
        return true;
    };
    own >= align
}

/// The bits a bit-field run declares (the sum of its widths), when every
/// width is a number.
pub(crate) fn run_bits(ty: &str) -> Option<u64> {
    ty.split("; ")
        .map(|piece| piece.rsplit_once(':')?.1.trim().parse::<u64>().ok())
        .sum()
}

/// The zero-width bit-field that starts what follows on a multiple of
/// `align` bytes, without changing the struct's alignment (spelled as
/// checkpatch wants it: no space before the colon).
pub(crate) fn guard_declaration(align: u64) -> Option<&'static str> {
    Some(match align {
        1 => "char:0;",
        2 => "short:0;",
        4 => "int:0;",
        8 => "long:0;",
        _ => return None,
    })
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

/// The edit that gives the struct definition alignment `align`: the last
/// alignment attribute of the definition gets the new value (gcc applies the
/// last one), or a new one goes right before the `;`. `kernel`: spell it
/// `__aligned(N)`, else `__attribute__((__aligned__(N)))`.
pub(crate) fn struct_alignment(
    src: &StructSource,
    align: u64,
    spell: KernelSpellings,
) -> (Range<usize>, String) {
    let text = &src.text;
    let tail_end = text[src.definition.end..]
        .find(';')
        .map_or(src.definition.end, |p| src.definition.end + p);
    let new_attribute = aligned_attribute(align, spell);
    // The tail comes after the head, so its last attribute wins.
    for part in [
        src.definition.end..tail_end,
        src.definition.start..src.body.start,
    ] {
        if let Some((span, kind)) = alignment_spans(&text[part.clone()]).pop() {
            let span = span.start + part.start..span.end + part.start;
            let with = match kind {
                AlignSpelling::Macro => format!("__aligned({align})"),
                AlignSpelling::Keyword(word) => format!("{word}({align})"),
                AlignSpelling::Cacheline => new_attribute,
            };
            return (span, with);
        }
    }
    let at = text[..tail_end].trim_end().len();
    (at..at, format!(" {new_attribute}"))
}

/// How an alignment attribute is spelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AlignSpelling {
    /// `__aligned(N)`.
    Macro,
    /// `aligned` / `__aligned__` inside `__attribute__((...))`, with or
    /// without `(N)`.
    Keyword(&'static str),
    /// `____cacheline_aligned_in_smp` and friends.
    Cacheline,
}

/// Alignment attributes in `s` (a struct head or tail), in order: each span
/// covers the word and its parenthesised argument, if any.
fn alignment_spans(s: &str) -> Vec<(Range<usize>, AlignSpelling)> {
    let toks = tokenize(s);
    let punct = |k: usize, p: &str| {
        toks.get(k)
            .is_some_and(|t| t.kind == TokKind::Punct && t.text(s) == p)
    };
    let mut out = Vec::new();
    let mut k = 0;
    while k < toks.len() {
        let t = &toks[k];
        k += 1;
        if t.kind != TokKind::Ident {
            continue;
        }
        let spelling = match t.text(s) {
            "__aligned" => AlignSpelling::Macro,
            "aligned" => AlignSpelling::Keyword("aligned"),
            "__aligned__" => AlignSpelling::Keyword("__aligned__"),
            w if idioms::is_cacheline_attribute(w) => AlignSpelling::Cacheline,
            _ => continue,
        };
        let mut end = t.range.end;
        if spelling != AlignSpelling::Cacheline && punct(k, "(") {
            // Through the `)` that closes it, if any.
            let mut depth = 0usize;
            for (j, u) in toks.iter().enumerate().skip(k) {
                if u.kind != TokKind::Punct {
                    continue;
                }
                match u.text(s) {
                    "(" => depth += 1,
                    ")" => {
                        depth -= 1;
                        if depth == 0 {
                            end = u.range.end;
                            k = j + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
        }
        out.push((t.range.start..end, spelling));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> StructSource {
        StructSource::of_text("s.h", text)
    }

    fn aligned(text: &str, align: u64, kernel: bool) -> String {
        let src = source(text);
        let (r, with) = struct_alignment(
            &src,
            align,
            KernelSpellings {
                line_attribute: kernel,
                aligned: kernel,
            },
        );
        let mut out = text.to_string();
        out.replace_range(r, &with);
        out
    }

    #[test]
    fn the_struct_alignment_replaces_the_last_attribute_or_is_appended() {
        assert_eq!(
            aligned("struct s { int a; };", 16, true),
            "struct s { int a; } __aligned(16);"
        );
        assert_eq!(
            aligned("struct s { int a; } __randomize_layout;", 16, false),
            "struct s { int a; } __randomize_layout __attribute__((__aligned__(16)));"
        );
        assert_eq!(
            aligned(
                "struct s { int a; } __aligned(4) __attribute__((packed, aligned(8)));",
                32,
                true
            ),
            "struct s { int a; } __aligned(4) __attribute__((packed, aligned(32)));"
        );
        assert_eq!(
            aligned(
                "struct __attribute__((__aligned__)) s { int a; };",
                32,
                true
            ),
            "struct __attribute__((__aligned__(32))) s { int a; };"
        );
        assert_eq!(
            aligned("struct s { int a; } ____cacheline_aligned;", 128, true),
            "struct s { int a; } __aligned(128);"
        );
    }

    #[test]
    fn spans_skip_comments_and_other_words() {
        let d = "long x ____cacheline_aligned_in_smp; /* ____cacheline_aligned */";
        assert_eq!(attribute_spans(d), vec![7..35]);
        assert!(attribute_spans("int my____cacheline_aligned;").is_empty());
        assert!(
            attribute_spans("char *s = \"__cacheline_aligned\"; int a[1__cacheline_aligned];")
                .is_empty()
        );
        let d = "long x ____cacheline_internodealigned_in_smp;";
        assert_eq!(attribute_spans(d), vec![7..44]);
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
