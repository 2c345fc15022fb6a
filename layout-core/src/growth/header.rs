//! A header's structs as a [`TypeDb`], so that headers and BTF go through
//! one growth engine.
//!
//! Every struct the C front-end can lay out ([`Header::struct_names`])
//! becomes an [`Aggregate`] with gcc's offsets; a typedef of a tagged struct
//! is the same aggregate, not a second one. A member embeds an aggregate
//! when its type, without array dimensions, names one of them: `struct
//! lruvec`, `struct lruvec[2]`, `atomic_long_t[4]`; pointers do not count.
//!
//! What the front-end does not give is left out: unions (it lays out only
//! structs), and anonymous struct or union members (one field each, whose
//! inner members are not visible), so a struct embedded inside one of those
//! is not found.

use crate::c::Header;
use crate::error::Diagnostic;
use crate::model::Field;
use crate::typedb::{Aggregate, AggregateKind, Member, NameKind, TypeDb};
use std::collections::HashMap;
use std::ops::Range;

/// The structs of a header, and those the front-end could not lay out.
#[derive(Debug)]
pub struct HeaderTypes {
    pub db: TypeDb,
    /// Structs that failed to lay out (an unknown type, a syntax error), by name.
    pub skipped: Vec<(String, Diagnostic)>,
}

impl HeaderTypes {
    /// The struct `name`, or why it cannot be used: the front-end's own error
    /// when it failed to lay it out, else "not found" with close names.
    pub fn find_struct(&self, name: &str) -> Result<&Aggregate, Diagnostic> {
        let bare = name.trim().trim_start_matches("struct ").trim();
        if let Some((_, d)) = self.skipped.iter().find(|(n, _)| n == bare) {
            return Err(d.clone());
        }
        self.db.find_struct(name)
    }
}

/// Lays out every struct of `header` and links the members that embed one.
pub fn header_types(header: &Header) -> HeaderTypes {
    let mut skipped = Vec::new();
    // One entry per struct definition: its names (tag first) and layout.
    let mut defs: Vec<(Vec<String>, crate::c::CStruct)> = Vec::new();
    let mut by_range: HashMap<Range<usize>, usize> = HashMap::new();
    for name in header.struct_names() {
        match header.find_struct(&name) {
            Ok(cs) => match by_range.get(&cs.source.definition) {
                Some(&k) => defs[k].0.push(name),
                None => {
                    by_range.insert(cs.source.definition.clone(), defs.len());
                    defs.push((vec![name], cs));
                }
            },
            Err(d) => skipped.push((name, d)),
        }
    }
    // Lookup key of every name: `struct TAG` for tagged structs (typedefs of
    // them included), the typedef name for anonymous typedef'd ones.
    let mut key_of: HashMap<String, String> = HashMap::new();
    let mut shape_of: HashMap<String, (u64, u64)> = HashMap::new();
    let mut heads: Vec<(String, NameKind)> = Vec::new();
    for (names, cs) in &mut defs {
        let tag = record_tag(header.text(), &cs.source.definition, names);
        if let Some(t) = &tag {
            if let Some(at) = names.iter().position(|n| n == t) {
                names.swap(0, at);
            }
        }
        let (key, kind) = match &tag {
            Some(t) => (format!("struct {t}"), NameKind::Tag),
            None => (names[0].clone(), NameKind::Typedef),
        };
        for n in names.iter() {
            let lookup = if tag.as_deref() == Some(n.as_str()) {
                format!("struct {n}")
            } else {
                n.clone()
            };
            key_of.insert(lookup, key.clone());
        }
        shape_of.insert(key.clone(), (cs.size, cs.align));
        heads.push((tag.unwrap_or_else(|| names[0].clone()), kind));
    }
    let aggregates = defs
        .iter()
        .zip(heads)
        .map(|((_, cs), (name, name_kind))| {
            let mut members: Vec<Member> = cs
                .model
                .fields
                .iter()
                .map(|f| member(f, &key_of, &shape_of))
                .collect();
            // An embedded struct less aligned than its type: the struct is
            // packed, and only attributes align its members.
            let packed = members
                .iter()
                .any(|m| m.attr_align.is_some_and(|a| a < m.align));
            if packed {
                for m in members
                    .iter_mut()
                    .filter(|m| m.aggregate.is_none() && m.align > 1)
                {
                    m.attr_align = Some(m.align);
                }
            }
            Aggregate {
                name,
                name_kind,
                kind: AggregateKind::Struct,
                size: cs.size,
                align: cs.align,
                members,
                packed,
                attr_align: (cs.model.min_align > 1).then_some(cs.model.min_align),
            }
        })
        .collect();
    HeaderTypes {
        db: TypeDb::from_aggregates(header.path(), aggregates, false),
        skipped,
    }
}

/// A model field as a member. An embedded struct's alignment is its type's;
/// more than that is an `aligned` attribute on the member.
fn member(
    f: &Field,
    key_of: &HashMap<String, String>,
    shape_of: &HashMap<String, (u64, u64)>,
) -> Member {
    let embedded = embedded_name(&f.ty).and_then(|n| key_of.get(&n));
    let (aggregate, count, align, attr_align) = match embedded {
        Some(key) => {
            let (size, align) = shape_of[key];
            let count = f.size.checked_div(size).unwrap_or(1);
            let attr = (f.align > align).then_some(f.align);
            // Less than the type's alignment: a packed struct, where only
            // attributes align (see `header_types`).
            let attr = if f.align < align { Some(f.align) } else { attr };
            (Some(key.clone()), count, align, attr)
        }
        None => (None, array_count(&f.ty), f.align, None),
    };
    Member {
        name: f.name.clone(),
        ty: f.ty.clone(),
        offset: f.original_offset.unwrap_or(0),
        bit_offset: None,
        bit_size: None,
        size: f.size,
        align,
        attr_align,
        aggregate,
        count,
    }
}

/// The aggregate name a member type embeds by value: `struct foo` for
/// `struct foo[2]`, `atomic_long_t` for `const atomic_long_t`; `None` for
/// pointers, functions, bit-fields and inline definitions.
fn embedded_name(ty: &str) -> Option<String> {
    if ty.contains(['*', '(', ':', '{']) {
        return None;
    }
    let base = ty.split('[').next().unwrap_or(ty);
    let words: Vec<&str> = base
        .split_whitespace()
        .filter(|w| !matches!(*w, "const" | "volatile"))
        .collect();
    match words.as_slice() {
        ["struct", tag] => Some(format!("struct {tag}")),
        [name] => Some((*name).to_string()),
        _ => None,
    }
}

/// Product of the numeric array dimensions of a type (1 when there are none
/// or one is not a number).
fn array_count(ty: &str) -> u64 {
    let mut count = 1u64;
    for dim in ty.split('[').skip(1) {
        let inner = dim.split(']').next().unwrap_or("").trim();
        match inner.parse::<u64>() {
            Ok(n) => count = count.saturating_mul(n),
            Err(_) => return 1,
        }
    }
    count
}

/// The tag of the record whose specifier is `text[range]` (`struct foo {`):
/// the first word between `struct` and `{` that is one of the struct's names
/// (attributes may stand there too).
fn record_tag(text: &str, range: &Range<usize>, names: &[String]) -> Option<String> {
    let spec = text.get(range.clone())?;
    let head = spec.split('{').next().unwrap_or(spec);
    let after = head.split_once("struct")?.1;
    after
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| names.iter().any(|n| n == w))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_names_come_from_value_types_only() {
        assert_eq!(embedded_name("struct lruvec"), Some("struct lruvec".into()));
        assert_eq!(
            embedded_name("struct lruvec[2]"),
            Some("struct lruvec".into())
        );
        assert_eq!(
            embedded_name("atomic_long_t[1][2][4]"),
            Some("atomic_long_t".into())
        );
        assert_eq!(embedded_name("const struct foo"), Some("struct foo".into()));
        assert_eq!(embedded_name("struct lruvec *"), None);
        assert_eq!(embedded_name("void (*)(int)"), None);
        assert_eq!(embedded_name("unsigned long"), None);
        assert_eq!(embedded_name("unsigned int a:3"), None);
    }

    #[test]
    fn array_counts_multiply_numeric_dimensions() {
        assert_eq!(array_count("unsigned long[4][2]"), 8);
        assert_eq!(array_count("long"), 1);
        assert_eq!(array_count("long[N]"), 1);
    }

    #[test]
    fn record_tags_skip_attributes() {
        let names = ["foo".to_string(), "foo_t".to_string()];
        let text = "struct __attribute__((packed)) foo { int a; }";
        assert_eq!(
            record_tag(text, &(0..text.len()), &names),
            Some("foo".into())
        );
        let anon = "struct { struct foo a; }";
        assert_eq!(record_tag(anon, &(0..anon.len()), &names), None);
    }
}
