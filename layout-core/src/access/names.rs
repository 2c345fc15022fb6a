//! Names an access file may use besides the fields' own, and how a name
//! becomes a field and the bytes of it that the name stands for.
//!
//! A model field can be more than one C member: an anonymous struct or union,
//! a `struct_group`, a run of bitfields sharing storage units, an embedded
//! struct. Kernel versions rename the synthetic field names
//! (`anon_union@OFFSET` moves when a member is added before it), so the
//! access file may also name
//!
//! - a member of an anonymous struct or union, or of a `struct_group`, by its
//!   own name (`snd_nxt`);
//! - a single bitfield (`is_cwnd_limited`);
//! - a sub-member of an embedded struct with a dotted path
//!   (`rx_opt.rcv_tsval`, `inet_conn.icsk_ack.pending`);
//! - an element of a one-dimensional array of 2 to [`MAX_ELEMENTS`]
//!   elements by its index (`cnf.data[3]`, `ids[0]`): a site at an index
//!   the compiler computes names it so;
//! - the names BTF and DWARF give a field that is no single member, in every
//!   front-end: a run of bitfields sharing storage units by its bitfields'
//!   names joined with `:` (`save_syn:syn_data:syn_fastopen`), an anonymous
//!   struct or union by its offset (`anon_union@1304`, `anon_struct@8`);
//! - a bitfield run or an anonymous aggregate by the name the C header
//!   front-end gives it (its first bitfield, its first member): that is
//!   itself a member's name, so every front-end lists it already.
//!
//! Each name stands for its own bytes inside the field that holds it. A
//! class given to such a name goes to the whole field (the field gets the
//! strongest class of its named parts, see [`crate::access`]); a hot path
//! counts only the name's own bytes.
//!
//! Front-ends list these names as [`MemberNames`]: the C header front-end
//! ([`crate::c::Header::member_names`]) and the type database of BTF and
//! DWARF ([`MemberNames::from_typedb`]).

use crate::model::Struct;
use crate::typedb::{Aggregate, TypeDb};
use std::collections::HashMap;
use std::ops::Range;

/// Most names listed for one struct: deeper or further sub-members of huge
/// embedded structs are left out (they can still be named by their
/// enclosing member).
pub const MAX_NAMES: usize = 200_000;
/// Deepest dotted path listed (`a.b.c.d...`).
pub const MAX_DEPTH: usize = 12;
/// Most elements of a one-dimensional array member listed by their index
/// (`cnf.data[3]`): a larger array is named whole.
pub const MAX_ELEMENTS: u64 = 64;

/// A name inside the struct that is not itself a field: see the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InnerName {
    /// `snd_nxt` (member of an anonymous aggregate or a `struct_group`, a
    /// single bitfield) or `rx_opt.rcv_tsval` (sub-member).
    pub name: String,
    /// The bytes its value occupies, as offsets from the struct's start in
    /// the declared layout (a bitfield: the bytes its bits touch).
    pub bytes: Range<u64>,
}

/// Every [`InnerName`] of one struct, in declaration order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberNames {
    names: Vec<InnerName>,
}

impl MemberNames {
    pub fn new() -> Self {
        MemberNames::default()
    }

    /// Adds a name; beyond [`MAX_NAMES`] names it is dropped (returns false).
    pub fn push(&mut self, name: impl Into<String>, bytes: Range<u64>) -> bool {
        if self.names.len() >= MAX_NAMES {
            return false;
        }
        self.names.push(InnerName {
            name: name.into(),
            bytes,
        });
        true
    }

    /// Lists each element of the one-dimensional array `name` of `count`
    /// elements at `bytes` by its index (`name[k]`), when it has 2 to
    /// [`MAX_ELEMENTS`] of them; false when the list is full.
    pub fn push_elements(&mut self, name: &str, bytes: Range<u64>, count: u64) -> bool {
        let len = bytes.end.saturating_sub(bytes.start);
        if !(2..=MAX_ELEMENTS).contains(&count) || !len.is_multiple_of(count) {
            return true;
        }
        let each = len / count;
        (0..count).all(|k| {
            let at = bytes.start + k * each;
            self.push(format!("{name}[{k}]"), at..at + each)
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = &InnerName> {
        self.names.iter()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The names inside the fields of `agg` (from BTF or DWARF), as its
    /// [`TypeDb::to_model`] fields hold them.
    pub fn from_typedb(db: &TypeDb, agg: &Aggregate) -> MemberNames {
        let mut out = MemberNames::new();
        walk_aggregate(db, agg, 0, None, 0, &mut out);
        // The model's names for runs and anonymous members, for a model
        // whose fields carry other names (the header's, under a probe).
        for f in &db.to_model(agg).fields {
            if let (true, Some(o)) = (is_synthetic(&f.name), f.original_offset) {
                out.push(f.name.clone(), o..o + f.size);
            }
        }
        out
    }
}

/// The names a site's member may stand for, the most precise first: the
/// member as the code names it (`cnf.data[3]`, `lrugen.max_seq`), then each
/// one around it (`cnf.data`, `cnf`), without the empty components of
/// anonymous aggregates (`sk.__sk_common..skc_daddr` is
/// `sk.__sk_common.skc_daddr`). An index that is no number (`folios[gen]`)
/// names no element, and the array is named whole.
pub fn enclosing(member: &str) -> Vec<String> {
    let bare = member
        .split('.')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(".");
    let mut out = Vec::new();
    let mut at = bare.as_str();
    loop {
        out.push(at.to_string());
        match at.rfind(['.', '[']) {
            Some(p) => at = &at[..p],
            None => return out,
        }
    }
}

/// Whether a field name is one BTF and DWARF make up for a field that is no
/// single member: `a:b` (a bitfield run), `anon_union@8`, `anon_struct@8`,
/// `bitfield@4` (a run of unnamed bitfields).
pub fn is_synthetic(name: &str) -> bool {
    name.contains(':')
        || ["anon_union@", "anon_struct@", "bitfield@"]
            .iter()
            .any(|p| name.starts_with(p))
}

/// Lists the members of `agg` (at `base` in the struct) under `prefix`
/// (`None`: promoted to the struct's own scope, as members of anonymous
/// aggregates are). Top-level named members are fields, not inner names.
fn walk_aggregate(
    db: &TypeDb,
    agg: &Aggregate,
    base: u64,
    prefix: Option<&str>,
    depth: usize,
    out: &mut MemberNames,
) {
    for (i, m) in agg.members.iter().enumerate() {
        let dotted = |name: &str| match prefix {
            Some(p) => format!("{p}.{name}"),
            None => name.to_string(),
        };
        if m.is_bitfield() {
            if !m.name.is_empty() {
                let r = m.byte_range();
                if !out.push(dotted(&m.name), base + r.start..base + r.end) {
                    return;
                }
            }
            continue;
        }
        let start = base + m.offset;
        if m.name.is_empty() {
            if let Some(inner) = db.member_aggregate(agg, i) {
                if depth < MAX_DEPTH {
                    walk_aggregate(db, inner, start, prefix, depth + 1, out);
                }
            }
            continue;
        }
        let name = dotted(&m.name);
        if (prefix.is_some() || depth > 0) && !out.push(name.clone(), start..start + m.size) {
            return;
        }
        if m.ty.matches('[').count() == 1
            && !out.push_elements(&name, start..start + m.size, m.count)
        {
            return;
        }
        if m.count == 1 && depth < MAX_DEPTH {
            if let Some(inner) = db.member_aggregate(agg, i) {
                walk_aggregate(db, inner, start, Some(&name), depth + 1, out);
            }
        }
    }
}

/// What a name in the access file stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Named {
    /// Index into `Struct::fields`.
    pub field: usize,
    /// The name's bytes relative to the field's start.
    pub bytes: Range<u64>,
}

/// Resolves access-file names against one struct: field names, then the
/// front-end's inner names.
pub(crate) struct NameTable<'a> {
    s: &'a Struct,
    by_name: HashMap<&'a str, Named>,
    inner: Vec<&'a str>,
}

impl<'a> NameTable<'a> {
    pub fn new(s: &'a Struct, names: &'a MemberNames) -> Self {
        let mut by_name: HashMap<&'a str, Named> = HashMap::new();
        // Fields with bytes by original offset, to find the one holding a name.
        let mut spans: Vec<(u64, u64, usize)> = s
            .fields
            .iter()
            .enumerate()
            .filter_map(|(i, f)| Some((f.original_offset?, f.size, i)))
            .filter(|&(_, size, _)| size > 0)
            .collect();
        spans.sort_unstable();
        let holder = |bytes: &Range<u64>| -> Option<(u64, u64, usize)> {
            let k = spans.partition_point(|&(o, _, _)| o <= bytes.start);
            let &(o, size, i) = spans.get(k.checked_sub(1)?)?;
            (bytes.start < o + size).then_some((o, size, i))
        };
        let mut inner = Vec::new();
        // A name the front-end lists inside a field is more precise than a
        // field named after it (the C front-end names an anonymous union
        // after its first member, a bitfield run after its first bitfield).
        for n in names.iter() {
            let Some((o, size, field)) = holder(&n.bytes) else {
                continue;
            };
            let start = n.bytes.start - o;
            let end = n.bytes.end.clamp(n.bytes.start, o + size) - o;
            by_name.entry(n.name.as_str()).or_insert(Named {
                field,
                bytes: start..end,
            });
            inner.push(n.name.as_str());
        }
        for (i, f) in s.fields.iter().enumerate() {
            by_name.entry(f.name.as_str()).or_insert(Named {
                field: i,
                bytes: 0..f.size,
            });
        }
        NameTable { s, by_name, inner }
    }

    pub fn get(&self, name: &str) -> Option<Named> {
        self.by_name.get(name).cloned()
    }

    /// The help for a name that is not found: where it does exist, or close
    /// names, or what can be named.
    pub fn help_for_unknown(&self, name: &str) -> String {
        if let Some((head, rest)) = name.split_once('.') {
            if self.by_name.contains_key(head) {
                let prefix = format!("{head}.");
                let subs: Vec<&str> = self
                    .inner
                    .iter()
                    .copied()
                    .filter(|n| n.strip_prefix(&prefix).is_some_and(|r| !r.contains('.')))
                    .collect();
                if subs.is_empty() {
                    return format!("`{head}` has no members to name: name `{head}` itself");
                }
                let close = crate::suggest::close_names(name, subs.iter().copied());
                return match close.as_slice() {
                    [] => format!(
                        "`{head}` has no member `{rest}`; its members: {}",
                        some(&subs)
                    ),
                    c => format!("did you mean `{}`?", c.join("`, `")),
                };
            }
        } else {
            let suffix = format!(".{name}");
            let places: Vec<&str> = self
                .inner
                .iter()
                .copied()
                .filter(|n| n.ends_with(&suffix))
                .take(3)
                .collect();
            if let Some(first) = places.first() {
                let owner = &first[..first.len() - suffix.len()];
                let mut help = format!("`{name}` is a member of `{owner}`: write `{first}`");
                if places.len() > 1 {
                    help.push_str(&format!(" (or {})", quoted(&places[1..])));
                }
                return help;
            }
        }
        let bare = self
            .s
            .fields
            .iter()
            .map(|f| f.name.as_str())
            .chain(self.inner.iter().copied().filter(|n| !n.contains('.')));
        let close = crate::suggest::close_names(name, bare);
        match close.as_slice() {
            [] => {
                let fields: Vec<&str> = self.s.fields.iter().map(|f| f.name.as_str()).collect();
                format!("its fields are: {}", some(&fields))
            }
            c => format!("did you mean `{}`?", c.join("`, `")),
        }
    }
}

/// Up to 20 names, then how many more.
fn some(names: &[&str]) -> String {
    const SHOWN: usize = 20;
    let mut s = names[..names.len().min(SHOWN)].join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    s
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_stands_for_itself_then_for_what_holds_it() {
        assert_eq!(enclosing("cnf.data[3]"), ["cnf.data[3]", "cnf.data", "cnf"]);
        assert_eq!(
            enclosing("folios[gen][1]"),
            ["folios[gen][1]", "folios[gen]", "folios"]
        );
        assert_eq!(
            enclosing("sk.__sk_common..skc_daddr"),
            ["sk.__sk_common.skc_daddr", "sk.__sk_common", "sk"]
        );
        assert_eq!(enclosing("hits"), ["hits"]);
    }

    #[test]
    fn elements_are_listed_for_small_arrays_of_whole_elements() {
        let mut n = MemberNames::new();
        assert!(n.push_elements("data", 8..20, 3));
        let got: Vec<(&str, Range<u64>)> = n
            .iter()
            .map(|x| (x.name.as_str(), x.bytes.clone()))
            .collect();
        assert_eq!(
            got,
            [("data[0]", 8..12), ("data[1]", 12..16), ("data[2]", 16..20)]
        );
        // One element, too many, or bytes the count does not divide: none.
        assert!(n.push_elements("one", 0..8, 1));
        assert!(n.push_elements("many", 0..65, MAX_ELEMENTS + 1));
        assert!(n.push_elements("odd", 0..10, 3));
        assert_eq!(n.len(), 3);
    }
}
