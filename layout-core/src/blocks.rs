//! Conditional blocks of a struct body as units of the layout: the diff
//! moves an `#if` ... `#endif` block that holds fields only as a whole, so
//! no field may enter or leave it and no other field may come between its
//! fields; members outside may move across it. Each such block becomes one
//! of the model's [`Struct::blocks`], which the solver
//! keeps whole and the verifier checks, under every option (`--regroup`
//! too) and in every output format.

use crate::model::Struct;
use crate::source::StructSource;
use std::ops::Range;

/// Sets `model.blocks`: the fields of every conditional block (nested ones
/// too) that holds any, by field index.
///
/// A field whose declaration the source does not point at (a
/// `CACHELINE_PADDING()` marker is a body line of its own, not a field
/// declaration) is looked up by its name among those lines; one found
/// nowhere belongs to no block.
pub fn keep_conditional_blocks(model: &mut Struct, source: &StructSource) {
    let body = &source.text[source.body.clone()];
    let starts = field_starts(model, source);
    model.blocks = conditional_blocks(body, source.body.start)
        .iter()
        .map(|b| {
            starts
                .iter()
                .enumerate()
                .filter(|(_, s)| s.is_some_and(|s| b.contains(&s)))
                .map(|(i, _)| i)
                .collect::<Vec<usize>>()
        })
        .filter(|fields| !fields.is_empty())
        .collect();
}

/// Sets `model.lists`: the fields of every declaration of several
/// (`int a, b;`: members sharing their lines), in declaration order.
pub fn keep_declarator_lists(model: &mut Struct, source: &StructSource) {
    let mut lists: Vec<(Range<usize>, Vec<usize>)> = Vec::new();
    for m in &source.members {
        let Some(f) = m.field.filter(|&f| f < model.fields.len()) else {
            continue;
        };
        match lists.iter_mut().find(|(lines, _)| *lines == m.lines) {
            Some((_, fields)) if !fields.contains(&f) => fields.push(f),
            Some(_) => {}
            None => lists.push((m.lines.clone(), vec![f])),
        }
    }
    model.lists = lists
        .into_iter()
        .map(|(_, mut fields)| {
            fields.sort_unstable();
            fields
        })
        .filter(|fields| fields.len() >= 2)
        .collect();
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
    use crate::model::Field;
    use crate::source::MemberSource;

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
    fn a_block_with_fields_is_a_unit_of_the_model() {
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
        // The empty OFF block is no unit; no segment changes.
        assert_eq!(model.blocks, vec![vec![1, 2]]);
        assert!(model.fields.iter().all(|f| f.segment == 0));
    }

    #[test]
    fn a_marker_line_is_found_by_its_name() {
        // `_pad1_` is a body line of its own (no member points at its
        // field): found by its name, outside the block.
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
        assert_eq!(model.blocks, vec![vec![1]]);
        let segs: Vec<u32> = model.fields.iter().map(|f| f.segment).collect();
        assert_eq!(segs, [0, 1, 2, 3, 3]);
    }
}
