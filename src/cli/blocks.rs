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
pub fn keep_conditional_blocks(model: &mut Struct, source: &StructSource) {
    let body = &source.text[source.body.clone()];
    let blocks = conditional_blocks(body, source.body.start);
    // The first byte of each field's declaration, in model order.
    let mut starts: Vec<Option<usize>> = vec![None; model.fields.len()];
    for m in &source.members {
        if let Some(i) = m.field {
            if let Some(s) = starts.get_mut(i) {
                *s = Some(s.map_or(m.decl.start, |x: usize| x.min(m.decl.start)));
            }
        }
    }
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
    let mut order: Vec<usize> = (0..model.fields.len()).collect();
    order.sort_by_key(|&i| starts[i].unwrap_or(usize::MAX));
    let mut segment = 0u32;
    let mut prev: Option<(u32, usize)> = None;
    for i in order {
        let at = starts[i].unwrap_or(usize::MAX);
        let old = model.fields[i].segment;
        if let Some((prev_old, prev_at)) = prev {
            let crossed = cuts.iter().any(|&c| prev_at < c && c <= at);
            if old != prev_old || crossed {
                segment += 1;
            }
        }
        prev = Some((old, at));
        model.fields[i].segment = segment;
    }
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
}
