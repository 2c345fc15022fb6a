//! Constraints of C that gcc enforces on a struct or union body and that a
//! layout depends on: refusing what gcc refuses, instead of laying it out.
//!
//! - member names are unique, counting the members of anonymous structs and
//!   unions (they share the enclosing namespace);
//! - a flexible array member (`T name[];`) is the last member of a struct
//!   with at least one other named member, and never in a union;
//! - every `}` of the active text closes a `{` (a stray one is a syntax
//!   error gcc reports, even outside the struct);
//! - a bit-field has an integer (or enum) type, not a pointer, array, float
//!   or struct; a `_Bool` bit-field is at most 1 bit wide (checked where
//!   the width is known, [`check_bitfield_width`]).

use super::parse::{Derived, FieldDecl, RecordDef, RecordKind, TypeRef};
use super::Header;
use crate::error::Diagnostic;
use crate::lex::{tokenize, TokKind};
use std::collections::HashMap;

/// What the checks read while a record is laid out: the header, and
/// errors located in it (the layout's resolver provides both).
pub(crate) trait Context {
    fn header(&self) -> &Header;
    fn error(&self, at: usize, message: String) -> Diagnostic;
}

/// What a bit-field's declared type is, as far as C's rules go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BitfieldType {
    /// An integer or enum type.
    Integer,
    /// `_Bool` / `bool`: at most 1 bit.
    Bool,
    /// A type of the built-in tables or `[types]`: its kind is not known.
    Unknown,
}

/// Checks a record body before it is laid out.
pub(crate) fn check_record(r: &impl Context, rec: &RecordDef) -> Result<(), Diagnostic> {
    let mut names: HashMap<String, usize> = HashMap::new();
    collect_names(r, rec, &mut names, 0)?;
    check_flexible_arrays(r, rec)
}

/// Adds the names `rec` declares in its namespace (its own members and
/// those of its anonymous members); the second of two equal names fails.
fn collect_names(
    r: &impl Context,
    rec: &RecordDef,
    names: &mut HashMap<String, usize>,
    depth: usize,
) -> Result<(), Diagnostic> {
    if depth > 64 {
        return Ok(());
    }
    for f in &rec.members {
        if f.declarators.is_empty() {
            if let TypeRef::Record {
                tag: None,
                def: Some(idx),
                ..
            } = &f.ty
            {
                let inner = &r.header().ast.records[*idx];
                collect_names(r, inner, names, depth + 1)?;
            }
            continue;
        }
        for d in &f.declarators {
            let Some(name) = &d.name else { continue };
            if let Some(&first) = names.get(name) {
                let (line, _) = crate::error::line_col(r.header().text(), first);
                return Err(r
                    .error(d.name_range.start, format!("duplicate member `{name}`"))
                    .help(format!(
                        "the first `{name}` is declared on line {line}; rename one of them"
                    )));
            }
            names.insert(name.clone(), d.name_range.start);
        }
    }
    Ok(())
}

fn is_flexible(f: &FieldDecl, k: usize) -> bool {
    matches!(f.declarators[k].derived.first(), Some(Derived::Array(None)))
}

fn check_flexible_arrays(r: &impl Context, rec: &RecordDef) -> Result<(), Diagnostic> {
    // Where each member starts: declarators, anonymous members, and the
    // body markers (`CACHELINE_PADDING()`, group markers), which are named
    // zero-size members to gcc.
    let mut starts: Vec<usize> = Vec::new();
    for f in &rec.members {
        if f.declarators.is_empty() {
            starts.push(f.range.start);
        }
        starts.extend(f.declarators.iter().map(|d| d.range.start));
    }
    let h = r.header();
    starts.extend(
        h.pre
            .markers
            .iter()
            .map(|m| m.range.start)
            .filter(|at| rec.body.contains(at))
            .filter(|at| !rec.members.iter().any(|f| f.range.contains(at))),
    );
    let last = starts.iter().copied().max();
    for f in &rec.members {
        for k in 0..f.declarators.len() {
            if !is_flexible(f, k) || f.macro_call_end.is_some() {
                continue;
            }
            let d = &f.declarators[k];
            let at = d.name_range.start;
            let name = d.name.as_deref().unwrap_or("");
            if rec.kind == RecordKind::Union {
                return Err(r
                    .error(at, format!("flexible array member `{name}` in a union"))
                    .help("give the array a size, or wrap it with DECLARE_FLEX_ARRAY()"));
            }
            if last != Some(d.range.start) {
                return Err(r
                    .error(
                        at,
                        format!("flexible array member `{name}` is not the last member"),
                    )
                    .help("move it to the end of the struct, or give it a size"));
            }
            if starts.len() == 1 {
                return Err(r
                    .error(
                        at,
                        format!("flexible array member `{name}` in a struct with no other member"),
                    )
                    .help("add a member before it, or wrap it with DECLARE_FLEX_ARRAY()"));
            }
        }
    }
    Ok(())
}

/// The kind of a bit-field's type, or why it cannot be a bit-field.
pub(crate) fn bitfield_type(
    r: &impl Context,
    ty: &TypeRef,
    derived: &[Derived],
    at: usize,
    name: &str,
) -> Result<BitfieldType, Diagnostic> {
    let not_integer = |what: &str| {
        r.error(
            at,
            format!("bit-field `{name}` has {what} type; a bit-field must have an integer type"),
        )
        .help("use an integer type such as `unsigned int`, or drop the `: width`")
    };
    if let Some(step) = derived.first() {
        return Err(not_integer(match step {
            Derived::Pointer => "a pointer",
            Derived::Function => "a function",
            _ => "an array",
        }));
    }
    let mut ty = ty.clone();
    for _ in 0..64 {
        match &ty {
            TypeRef::Scalar(words) => {
                let has = |w: &str| words.iter().any(|x| x == w);
                if has("float") || has("double") {
                    return Err(not_integer("a floating"));
                }
                return Ok(if has("_Bool") {
                    BitfieldType::Bool
                } else {
                    BitfieldType::Integer
                });
            }
            TypeRef::Enum { .. } => return Ok(BitfieldType::Integer),
            TypeRef::Record { kind, .. } => {
                return Err(not_integer(match kind {
                    RecordKind::Union => "a union",
                    _ => "a struct",
                }))
            }
            TypeRef::Name(n) => {
                if n == "bool" || n == "_Bool" {
                    return Ok(BitfieldType::Bool);
                }
                let h = r.header();
                match h.index.typedefs.get(n).map(|&i| &h.ast.typedefs[i]) {
                    Some(td) if !td.declarator.derived.is_empty() => {
                        return Err(not_integer(match td.declarator.derived[0] {
                            Derived::Pointer => "a pointer",
                            Derived::Function => "a function",
                            _ => "an array",
                        }))
                    }
                    Some(td) => ty = td.ty.clone(),
                    None => return Ok(BitfieldType::Unknown),
                }
            }
            TypeRef::Unsupported(_) => return Ok(BitfieldType::Unknown),
        }
    }
    Ok(BitfieldType::Unknown)
}

/// A `_Bool` bit-field is at most 1 bit wide.
pub(crate) fn check_bitfield_width(
    r: &impl Context,
    kind: BitfieldType,
    width: u64,
    at: usize,
) -> Result<(), Diagnostic> {
    if kind == BitfieldType::Bool && width > 1 {
        return Err(r
            .error(
                at,
                format!("bit-field width {width} exceeds its type (`_Bool` holds 1 bit)"),
            )
            .help("use `:1`, or an unsigned integer type for a wider field"));
    }
    Ok(())
}

/// The first `}` of `text` (the preprocessed text: inactive branches and
/// directives blanked) that closes no `{`.
pub(crate) fn stray_closing_brace(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for tok in tokenize(text) {
        if tok.kind != TokKind::Punct {
            continue;
        }
        match tok.text(text) {
            "{" => depth += 1,
            "}" => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return Some(tok.range.start),
            },
            _ => {}
        }
    }
    None
}
