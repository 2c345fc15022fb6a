//! A proposed layout ([`Layout`] of a [`Struct`] model) as the aggregate's
//! new layout, so that [`super::grow_to`] can explain it and spread it.
//!
//! A model field stands for one member (header front-end, most BTF/DWARF
//! members), for a run of bitfields (`a:b:c`), or for an anonymous struct or
//! union (`anon_union@8`; see [`TypeDb::to_model`](crate::typedb::TypeDb::to_model)).
//! Every member the field stands for moves with it.

use crate::error::Diagnostic;
use crate::layout::Layout;
use crate::model::Struct;
use crate::typedb::Aggregate;

/// `old` laid out as `layout` places the fields of `model` (a model of `old`).
pub fn proposed_layout(
    old: &Aggregate,
    model: &Struct,
    layout: &Layout,
) -> Result<Aggregate, Diagnostic> {
    let mut shift: Vec<Option<i128>> = vec![None; old.members.len()];
    for slot in &layout.slots {
        let field = model
            .fields
            .get(slot.field)
            .ok_or_else(|| mismatch(old, "a slot names no field"))?;
        let from = field
            .original_offset
            .ok_or_else(|| mismatch(old, &format!("field `{}` has no offset", field.name)))?;
        let by = slot.offset as i128 - from as i128;
        let covered = members_of(old, &field.name, from);
        if covered.is_empty() {
            return Err(mismatch(
                old,
                &format!("field `{}` matches no member", field.name),
            ));
        }
        for m in covered {
            shift[m].get_or_insert(by);
        }
    }
    let mut new = old.clone();
    for (m, by) in new.members.iter_mut().zip(&shift) {
        let by = by.ok_or_else(|| {
            mismatch(
                old,
                &format!("member `{}` is in no field of the layout", m.name),
            )
        })?;
        m.offset = (m.offset as i128 + by) as u64;
        m.bit_offset = m.bit_offset.map(|b| (b as i128 + by * 8) as u64);
    }
    new.members.sort_by_key(|m| (m.offset, m.bit_offset));
    new.size = layout.size;
    new.align = layout.align;
    Ok(new)
}

/// The members a model field named `name` at `offset` stands for.
fn members_of(old: &Aggregate, name: &str, offset: u64) -> Vec<usize> {
    let by_name: Vec<usize> = if name.contains(':') {
        let parts: Vec<&str> = name.split(':').collect();
        (0..old.members.len())
            .filter(|&i| parts.contains(&old.members[i].name.as_str()))
            .collect()
    } else {
        (0..old.members.len())
            .filter(|&i| old.members[i].name == name)
            .collect()
    };
    if !by_name.is_empty() {
        return by_name;
    }
    // anon_union@8, anon_struct@8, bitfield@12: unnamed members at that offset.
    (0..old.members.len())
        .filter(|&i| {
            let m = &old.members[i];
            m.name.is_empty() && (m.offset == offset || m.byte_range().start == offset)
        })
        .collect()
}

fn mismatch(old: &Aggregate, what: &str) -> Diagnostic {
    Diagnostic::new(format!(
        "the proposed layout does not fit struct {}: {what}",
        old.name
    ))
    .help("this is a bug in cachelayout: please report it with the command line")
}
