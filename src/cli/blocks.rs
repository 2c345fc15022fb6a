//! Conditional blocks of a struct body as ordering constraints: the diff
//! moves an `#if` ... `#endif` block that holds fields only as a whole, so
//! no field may enter or leave it and no other field may come between its
//! fields. Each boundary of such a block becomes a segment boundary of the
//! model (fields keep a nondecreasing segment order), on top of the
//! segments the header already gives (cache-line groups, paddings).

use layout_core::source::StructSource;
use layout_core::Struct;
use std::ops::Range;

/// Renumbers `model.fields[..].segment` so that every conditional block
/// holding fields is a run of segments of its own.
///
/// Fields are walked in model order (the declaration order, which is the
/// order of the declared offsets), so the new segments stay nondecreasing
/// wherever the old ones were: the declared layout keeps passing its own
/// segment check. A field whose declaration the source does not point at (a
/// `CACHELINE_PADDING()` marker is a body line of its own, not a field
/// declaration) is looked up by its name among those lines, or else counts
/// as sitting where the field before it starts.
pub fn keep_conditional_blocks(model: &mut Struct, source: &StructSource) {
    let body = &source.text[source.body.clone()];
    let blocks = conditional_blocks(body, source.body.start);
    let starts = field_starts(model, source);
    let mut cuts: Vec<usize> = Vec::new();
    for b in &blocks {
        if starts.iter().flatten().any(|s| b.contains(s)) {
            cuts.push(b.start);
            cuts.push(b.end);
        }
    }
    if cuts.is_empty() {
        return;
    }
    cuts.sort_unstable();
    let mut segment = 0u32;
    let mut prev: Option<(u32, Option<usize>)> = None;
    for (field, &start) in model.fields.iter_mut().zip(&starts) {
        let old = field.segment;
        let mut at = start;
        if let Some((prev_old, prev_at)) = prev {
            let crossed = match (prev_at, at) {
                (Some(p), Some(a)) => {
                    let (lo, hi) = (p.min(a), p.max(a));
                    cuts.iter().any(|&c| lo < c && c <= hi)
                }
                _ => false,
            };
            if old != prev_old || crossed {
                segment += 1;
            }
            at = at.or(prev_at);
        }
        prev = Some((old, at));
        field.segment = segment;
    }
}

/// The first byte of each field's declaration, by field index: from the
/// member that declares it, or for a zero-size marker the body line that
/// names it (`CACHELINE_PADDING(_pad1_);`); `None` when neither is found.
fn field_starts(model: &Struct, source: &StructSource) -> Vec<Option<usize>> {
    let mut starts: Vec<Option<usize>> = vec![None; model.fields.len()];
    for m in &source.members {
        if let Some(i) = m.field {
            if let Some(s) = starts.get_mut(i) {
                *s = Some(s.map_or(m.decl.start, |x: usize| x.min(m.decl.start)));
            }
        }
    }
    let mut used = vec![false; source.members.len()];
    for (i, f) in model.fields.iter().enumerate() {
        if starts[i].is_some() || f.size != 0 {
            continue;
        }
        let named = source.members.iter().enumerate().position(|(k, m)| {
            !used[k]
                && m.field.is_none()
                && !m.name.is_empty()
                && source.text.get(m.name.clone()) == Some(f.name.as_str())
        });
        if let Some(k) = named {
            used[k] = true;
            starts[i] = Some(source.members[k].decl.start);
        }
    }
    starts
}

/// Every `#if`/`#ifdef`/`#ifndef` ... `#endif` of `body` (whose first byte
/// is at `base` in the file), from the start of its first directive line to
/// the end of its `#endif` line, nested ones too.
fn conditional_blocks(body: &str, base: usize) -> Vec<Range<usize>> {
    let mut open: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    let mut at = base;
    for line in body.split_inclusive('\n') {
        let t = line.trim_start();
        if let Some(d) = t.strip_prefix('#') {
            let d = d.trim_start();
            let word: String = d.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
            match word.as_str() {
                "if" | "ifdef" | "ifndef" => open.push(at),
                "endif" => {
                    if let Some(s) = open.pop() {
                        out.push(s..at + line.len());
                    }
                }
                _ => {}
            }
        }
        at += line.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use layout_core::source::MemberSource;
    use layout_core::Field;

    fn member(text: &str, name: &str, field: usize) -> MemberSource {
        let at = text.find(name).unwrap();
        MemberSource {
            field: Some(field),
            lines: at..at + name.len(),
            decl: at..at + name.len(),
            name: at..at + name.len(),
            indent: String::new(),
        }
    }

    #[test]
    fn a_block_with_fields_is_a_segment_of_its_own() {
        let text = "struct s {\n\tint a;\n#ifdef X\n\tint b;\n\tint c;\n#endif\n\tint d;\n#ifdef OFF\n#endif\n\tint e;\n};\n";
        let body = text.find('{').unwrap() + 1..text.rfind('}').unwrap();
        let names = ["a;", "b;", "c;", "d;", "e;"];
        let source = StructSource {
            path: "s.h".into(),
            text: text.into(),
            definition: 0..text.len() - 2,
            body,
            members: names
                .iter()
                .enumerate()
                .map(|(i, n)| member(text, n, i))
                .collect(),
        };
        let fields = names
            .iter()
            .map(|n| Field::new(&n[..1], "int", 4, 4))
            .collect();
        let mut model = Struct::new("s", fields);
        keep_conditional_blocks(&mut model, &source);
        let segs: Vec<u32> = model.fields.iter().map(|f| f.segment).collect();
        // The empty OFF block is no boundary: d and e stay free to swap.
        assert_eq!(segs, [0, 1, 1, 2, 2]);
    }

    #[test]
    fn a_marker_line_keeps_its_place_among_the_blocks() {
        // `_pad1_` is a body line of its own (no member points at its
        // field): it must stay between `b` and `c`, not go last.
        let text = "struct s {\n\tint a;\n#ifdef X\n\tint b;\n#endif\n\tCACHELINE_PADDING(_pad1_);\n\tint c;\n\tint d;\n};\n";
        let body = text.find('{').unwrap() + 1..text.rfind('}').unwrap();
        let mut members: Vec<MemberSource> = [("a;", 0), ("b;", 1), ("c;", 3), ("d;", 4)]
            .iter()
            .map(|&(n, i)| member(text, n, i))
            .collect();
        let pad = text.find("_pad1_").unwrap();
        let line = text.find("CACHELINE_PADDING").unwrap();
        members.push(MemberSource {
            field: None,
            lines: line..pad + 8,
            decl: line..pad + 8,
            name: pad..pad + 6,
            indent: String::new(),
        });
        members.sort_by_key(|m| m.decl.start);
        let source = StructSource {
            path: "s.h".into(),
            text: text.into(),
            definition: 0..text.len() - 2,
            body,
            members,
        };
        let mut pad_field = Field::new("_pad1_", "struct cacheline_padding", 0, 64);
        pad_field.segment = 2;
        let mut fields: Vec<Field> = ["a", "b", "c", "d"]
            .iter()
            .map(|n| Field::new(*n, "int", 4, 4))
            .collect();
        fields.insert(2, pad_field);
        let mut model = Struct::new("s", fields);
        for (f, seg) in model.fields.iter_mut().zip([0, 1, 2, 3, 3]) {
            f.segment = seg;
        }
        keep_conditional_blocks(&mut model, &source);
        let segs: Vec<u32> = model.fields.iter().map(|f| f.segment).collect();
        assert_eq!(segs, [0, 1, 2, 3, 3]);
        assert!(segs.windows(2).all(|w| w[0] <= w[1]));
    }
}
