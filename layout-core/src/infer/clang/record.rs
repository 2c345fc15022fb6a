//! The struct's layout as libclang computes it for a translation unit (the
//! front-end of `infer --source` when no header, BTF or DWARF is given):
//! each member's offset, size and alignment; a run of bit-fields in one
//! storage unit is one field (`a:b:c`), an anonymous struct or union one
//! field named after its first member.

use super::ffi::{Cursor, Index};
use super::Source;
use crate::{Diagnostic, Field, Struct};
use clang_sys::*;

/// The model of struct `name` from the first source that defines it.
pub fn struct_model(
    sources: &[Source],
    name: &str,
) -> Result<Option<(Struct, u64, u64)>, Diagnostic> {
    let index = Index::new();
    for src in sources {
        let (unit, note) = super::parse(&index, src)?;
        if let Some(n) = note {
            // A layout from a unit with errors may be wrong: say so.
            return Err(Diagnostic::new(format!(
                "the layout of struct {name} would come from a unit libclang did not compile cleanly: {n}"
            ))
            .in_file(&src.path)
            .help("give the header with --kbuild/--compile-commands/--cc, or --btf/--dwarf, for the layout"));
        }
        let found =
            unit.cursor().children().into_iter().find(|c| {
                c.kind() == CXCursor_StructDecl && c.is_definition() && c.spelling() == name
            });
        if let Some(decl) = found {
            return Ok(Some(model(decl, name)));
        }
    }
    Ok(None)
}

fn model(decl: Cursor, name: &str) -> (Struct, u64, u64) {
    let mut fields: Vec<Field> = Vec::new();
    // The storage unit (start byte, size) of the last bit-field run.
    let mut unit: Option<(u64, u64)> = None;
    for f in decl
        .children()
        .into_iter()
        .filter(|c| c.kind() == CXCursor_FieldDecl)
    {
        let bits = f.field_bit_offset().max(0) as u64;
        let (size, align) = f.type_size_align();
        let ty = f.type_name();
        let mut fname = f.spelling();
        if fname.is_empty() {
            // An anonymous struct or union: named after its first member.
            fname = f
                .type_declaration()
                .and_then(|d| {
                    d.children()
                        .into_iter()
                        .find(|c| c.kind() == CXCursor_FieldDecl)
                })
                .map(|c| c.spelling())
                .unwrap_or_else(|| format!("anon@{}", bits / 8));
        }
        if f.is_bit_field() && size > 0 {
            let start = bits / (size * 8) * size;
            if unit == Some((start, size)) {
                if let Some(last) = fields.last_mut() {
                    last.name = format!("{}:{fname}", last.name);
                    continue;
                }
            }
            unit = Some((start, size));
            let mut field = Field::new(fname, ty, size, align);
            field.original_offset = Some(start);
            fields.push(field);
            continue;
        }
        unit = None;
        let mut field = Field::new(fname, ty, size, align);
        field.original_offset = Some(bits / 8);
        fields.push(field);
    }
    let (size, align) = decl.type_size_align();
    let mut s = Struct::new(name, fields);
    s.min_align = align.max(1);
    (s, size, align.max(1))
}
