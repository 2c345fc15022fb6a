//! The model of an aggregate with its anonymous struct members opened: each
//! member of a C11 anonymous struct (`struct { ... };` with no member name)
//! becomes a field of the parent at its own offset, as the code reaches it
//! (`mm->mmap_lock`, not `mm->anon_struct@0.mmap_lock`). Anonymous unions
//! stay one field: their members share bytes.
//!
//! [`super::TypeDb::to_model`] keeps such a struct whole, which is right for
//! proposing (moving its members apart would change the type), but wrong for
//! pricing the declared layout: a struct whose every member sits inside one
//! anonymous struct (a wrapper that keeps a flexible tail out of a
//! randomized part) would be one field, which can share a line with nothing.

use super::{fields, Aggregate, AggregateKind, TypeDb};
use crate::model::{Field, Struct};

/// Anonymous structs opened inside one another, at most.
const MAX_DEPTH: u32 = 8;

pub(crate) fn to_flat_model(db: &TypeDb, agg: &Aggregate) -> Struct {
    let mut s = fields::to_model(agg);
    s.fields = open(db, agg, 0, 0);
    crate::segments::assign(&mut s, crate::segments::Keep::default());
    s
}

/// `agg`'s fields, each anonymous struct member's fields in its place, at
/// offsets from the outermost aggregate (`base` is `agg`'s offset there).
fn open(db: &TypeDb, agg: &Aggregate, base: u64, depth: u32) -> Vec<Field> {
    let model = fields::to_model(agg);
    let mut out = Vec::with_capacity(model.fields.len());
    for mut f in model.fields {
        let inner = (depth < MAX_DEPTH)
            .then(|| anonymous_struct(db, agg, &f))
            .flatten();
        match inner {
            Some((at, inner)) => out.extend(open(db, inner, base + at, depth + 1)),
            None => {
                f.original_offset = f.original_offset.map(|o| o + base);
                if base > 0 {
                    f.name = rebased_name(&f.name, base);
                }
                out.push(f);
            }
        }
    }
    out
}

/// The anonymous struct field `f` holds, with its offset in `agg`.
fn anonymous_struct<'d>(
    db: &'d TypeDb,
    agg: &Aggregate,
    f: &Field,
) -> Option<(u64, &'d Aggregate)> {
    if !f.name.starts_with("anon_struct@") {
        return None;
    }
    let m = agg
        .members
        .iter()
        .find(|m| m.name.is_empty() && m.field_name() == f.name && m.count == 1)?;
    let inner = db.find(m.aggregate.as_deref()?)?;
    (inner.kind == AggregateKind::Struct && !inner.members.is_empty()).then_some((m.offset, inner))
}

/// An anonymous member's synthetic name (`anon_union@8`) counted from the
/// outermost aggregate: `anon_union@24` when its struct sits at 16.
fn rebased_name(name: &str, base: u64) -> String {
    match name.rsplit_once('@') {
        Some((kind, at)) if kind.starts_with("anon_") => match at.parse::<u64>() {
            Ok(o) => format!("{kind}@{}", o + base),
            Err(_) => name.to_string(),
        },
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebased_names_count_from_the_outer_struct() {
        assert_eq!(rebased_name("anon_union@8", 16), "anon_union@24");
        assert_eq!(rebased_name("mmap_lock", 16), "mmap_lock");
    }
}
