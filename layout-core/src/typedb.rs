//! A type database with the layouts the compiler produced: every struct and
//! union of a BTF blob (`/sys/kernel/btf/vmlinux`, the `.BTF` section of a
//! `gcc -gbtf` object) or of DWARF (`gcc -g`), with exact sizes and offsets.
//!
//! Loaders: [`crate::btf::load_btf`] and [`crate::dwarf::load_dwarf`] (cargo
//! features `btf` and `dwarf`). Both build the same flat type graph and this
//! module turns it into [`Aggregate`]s.
//!
//! # What an aggregate holds
//!
//! - Every struct and union, named or not. An anonymous one is named after its
//!   typedef (`typedef struct { int counter; } atomic_t` gives `atomic_t`), or
//!   after the first place that embeds it: `(anon union at page.@8)` is the
//!   anonymous union at byte 8 of `struct page`, `(anon struct at
//!   page.@8.@0)` the first anonymous struct at byte 0 of that union and
//!   `(anon struct at page.@8.@0:1)` the second, and `(anon struct at
//!   foo.bar)` the type of member `bar` declared as `struct { ... } bar;`.
//!   Ones that nothing embeds get `(anon struct #TYPE_ID)`; a name that would
//!   repeat (two different structs with one tag) gets `#INDEX` appended.
//! - [`Member::ty`] is C text: `unsigned long[4][2]`, `struct page *`,
//!   `atomic_long_t`, `union {...}` for an anonymous type. gcc's base type
//!   names are written the usual way (`unsigned long`, not `long unsigned
//!   int`); BTF type tags (`__user`) are not shown.
//! - [`Member::offset`] of a bitfield is the storage unit pahole shows: the
//!   bit offset rounded down to a multiple of the declared type's size.
//! - [`Member::aggregate`] names the struct or union a member embeds by value
//!   (directly, through typedefs, or as array elements): `struct NAME`,
//!   `union NAME`, or the synthetic name for anonymous ones. [`TypeDb::find`]
//!   accepts all of these. [`Member::count`] is the number of array elements
//!   under typedefs (1 for non-arrays, 0 for flexible arrays).
//!
//! # Alignment
//!
//! DWARF states alignment only where the source asked for it
//! (`DW_AT_alignment` on types and members, gcc always, other producers from
//! DWARF 5); everything else has its natural alignment. BTF states none at
//! all, so [`TypeDb::align_inferred`] is true and the loader infers it the way
//! pahole does, with two extra checks:
//!
//! 1. Base types (integers, enums, floats) align to their size, capped at 16 on
//!    64-bit targets (`__int128`, `long double` on x86_64 and arm64); pointers
//!    to the pointer size. Arrays align like their element, typedefs and
//!    qualifiers like their target.
//! 2. A struct is *packed* when a member (not a bitfield) sits at an offset
//!    that is not a multiple of its type's natural alignment, or when its size
//!    is not a multiple of the largest natural alignment of its members
//!    (bitfields included). Its natural alignment is then 1. A packed struct
//!    whose members all happen to sit at natural offsets cannot be told apart.
//! 3. A member that sits after the place natural placement gives it
//!    (`align_up(end of previous member, alignment of its type)`) must carry
//!    an `aligned` attribute. Every power of two above the gap that divides
//!    the offset explains it; the rule takes the largest one up to 64 (the
//!    kernel's cache line), and at least the smallest one: `hot
//!    ____cacheline_aligned` after a `char` at 0 lands at 64 and gets 64, `y
//!    __aligned(16)` at 80 after a member ending at 76 gets 16. Where the
//!    offset is a multiple of 64 this is pahole's rule; elsewhere pahole takes
//!    the smallest (8 for that `y`), which understates. The attribute must
//!    also divide the struct size. This is [`Member::attr_align`]. Zero-size
//!    members count too, so the 64 of `CACHELINE_PADDING(_pad1_)` lands on
//!    `_pad1_`, where the source put it (pahole shows it on the next member).
//! 4. The same rule applied to the tail padding (size after the end of the
//!    last member) gives an attribute on the struct itself
//!    ([`Aggregate::attr_align`]).
//! 5. A struct's alignment is the largest of its members' type alignments
//!    (1 when packed), their attributes and its own attribute, but never more
//!    than the largest power of two dividing its size, nor (for the part that
//!    was inferred) than an offset where a non-packed struct embeds it.
//!
//! Inference cannot see an attribute that left no padding (a 64-byte struct
//! `__aligned(64)` looks like an 8-aligned one), and takes 64 where the
//! offset or size allows it, so `struct { long a[5]; } __aligned(32)` (size
//! 64) reads as 64-aligned unless some struct embeds it at an offset that is
//! an odd multiple of 32. Callers that depend on it should say "alignment
//! inferred".

// The type graph and its analysis serve the BTF and DWARF loaders only.
#[cfg(any(feature = "btf", feature = "dwarf"))]
mod align;
#[cfg(any(feature = "btf", feature = "dwarf"))]
mod build;
mod fields;
mod flat;
pub(crate) use fields::bitfield_group_end;
#[cfg(any(feature = "btf", feature = "dwarf"))]
pub(crate) mod graph;
mod index;
#[cfg(any(feature = "btf", feature = "dwarf"))]
mod render;

use crate::error::Diagnostic;
use crate::model::Struct;
use index::NameIndex;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

#[cfg(any(feature = "btf", feature = "dwarf"))]
pub(crate) use build::build;

/// Struct or union.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggregateKind {
    Struct,
    Union,
}

impl AggregateKind {
    /// `struct` or `union`.
    pub fn keyword(self) -> &'static str {
        match self {
            AggregateKind::Struct => "struct",
            AggregateKind::Union => "union",
        }
    }
}

/// One member of a struct or union, as the compiler laid it out.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Member {
    /// "" for anonymous struct/union members.
    pub name: String,
    /// C type text: `struct list_head`, `unsigned long[4][2]`, `atomic_long_t`.
    pub ty: String,
    /// Byte offset; for bitfields the start of the storage unit as pahole shows it.
    pub offset: u64,
    /// Bitfields only: offset of the first bit from the start of the aggregate.
    pub bit_offset: Option<u64>,
    /// Bitfields only: width in bits.
    pub bit_size: Option<u64>,
    /// Size of the member's type (all elements of an array).
    pub size: u64,
    /// Alignment of the member's type (inferred for BTF, see the module docs).
    pub align: u64,
    /// Alignment an `aligned` attribute on the member asks for (stated in
    /// DWARF, inferred in BTF); `None` when it has none.
    pub attr_align: Option<u64>,
    /// The struct or union embedded by value (directly or as array elements),
    /// as [`TypeDb::find`] accepts it: `struct NAME`, `union NAME`, a typedef
    /// name for typedef'd anonymous ones, or a synthetic `(anon ...)` name.
    pub aggregate: Option<String>,
    /// Number of elements: product of the array dimensions, 1 for non-arrays,
    /// 0 for flexible arrays.
    pub count: u64,
}

impl Member {
    /// The name a field takes in models and tables: the member's own, or
    /// `anon_union@OFFSET` / `anon_struct@OFFSET` for an anonymous member.
    pub fn field_name(&self) -> String {
        if !self.name.is_empty() {
            return self.name.clone();
        }
        let kind = if self.ty.starts_with("union") {
            "union"
        } else {
            "struct"
        };
        format!("anon_{kind}@{}", self.offset)
    }

    pub fn is_bitfield(&self) -> bool {
        self.bit_size.is_some()
    }

    /// The byte range the member's bits or bytes occupy.
    pub fn byte_range(&self) -> std::ops::Range<u64> {
        match (self.bit_offset, self.bit_size) {
            (Some(bit), Some(width)) => bit / 8..(bit + width).div_ceil(8),
            _ => self.offset..self.offset + self.size,
        }
    }
}

/// Where an aggregate's name comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NameKind {
    /// `struct NAME` / `union NAME`.
    Tag,
    /// `typedef struct { ... } NAME;`
    Typedef,
    /// No tag or typedef: a synthetic `(anon ...)` name.
    Anonymous,
}

/// A struct or union with its compiler layout.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Aggregate {
    /// Tag name (`lru_gen_folio`), typedef name for typedef'd anonymous
    /// aggregates, or a synthetic `(anon ...)` name.
    pub name: String,
    pub name_kind: NameKind,
    pub kind: AggregateKind,
    pub size: u64,
    pub align: u64,
    pub members: Vec<Member>,
    /// Packed (stated nowhere in BTF or DWARF: inferred, see the module docs).
    pub packed: bool,
    /// Alignment an `aligned` attribute on the aggregate itself asks for
    /// (stated in DWARF, inferred from tail padding in BTF).
    pub attr_align: Option<u64>,
}

impl Aggregate {
    /// How C code names the type: `struct NAME`, `union NAME`, the typedef
    /// name, or the synthetic name of an anonymous one.
    pub fn display_name(&self) -> String {
        match self.name_kind {
            NameKind::Tag => format!("{} {}", self.kind.keyword(), self.name),
            NameKind::Typedef | NameKind::Anonymous => self.name.clone(),
        }
    }

    /// Whether the name is synthetic (the aggregate has no tag or typedef).
    pub fn is_anonymous(&self) -> bool {
        self.name_kind == NameKind::Anonymous
    }
}

/// Which name space a lookup key lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum KeySpace {
    /// `struct TAG`.
    Struct,
    /// `union TAG`.
    Union,
    /// Typedef and synthetic names.
    Other,
}

/// All structs and unions of one BTF blob or DWARF file.
#[derive(Debug)]
pub struct TypeDb {
    source: PathBuf,
    aggregates: Vec<Aggregate>,
    /// For each aggregate, for each member: index of the embedded aggregate or
    /// `u32::MAX`; flattened, `target_start[i]` is aggregate i's first.
    targets: Vec<u32>,
    target_start: Vec<u32>,
    index: NameIndex,
    align_inferred: bool,
    pointer_size: u64,
    embedders: OnceLock<Vec<Vec<(u32, u32)>>>,
}

const NO_TARGET: u32 = u32::MAX;

impl TypeDb {
    /// A database of hand-made aggregates (tests, TOML): looked up by name as
    /// their [`NameKind`] says; members' [`Member::aggregate`] resolved by name.
    pub fn from_aggregates(
        source: impl Into<PathBuf>,
        aggregates: Vec<Aggregate>,
        align_inferred: bool,
    ) -> TypeDb {
        let mut index = NameIndex::with_capacity(aggregates.len());
        for (i, a) in aggregates.iter().enumerate() {
            let space = match (a.name_kind, a.kind) {
                (NameKind::Tag, AggregateKind::Struct) => KeySpace::Struct,
                (NameKind::Tag, AggregateKind::Union) => KeySpace::Union,
                _ => KeySpace::Other,
            };
            index.insert(space, &a.name, i as u32);
        }
        let mut db = TypeDb::assemble(
            source.into(),
            aggregates,
            Vec::new(),
            index,
            align_inferred,
            8,
        );
        let targets: Vec<u32> = db
            .aggregates
            .iter()
            .flat_map(|a| &a.members)
            .map(|m| {
                m.aggregate
                    .as_deref()
                    .and_then(|k| db.index(k))
                    .map_or(NO_TARGET, |i| i as u32)
            })
            .collect();
        db.targets = targets;
        db
    }

    /// Assembles a database; `targets` flattened per aggregate and member
    /// (empty: filled by the caller).
    pub(crate) fn assemble(
        source: PathBuf,
        aggregates: Vec<Aggregate>,
        targets: Vec<u32>,
        index: NameIndex,
        align_inferred: bool,
        pointer_size: u64,
    ) -> TypeDb {
        let mut target_start = Vec::with_capacity(aggregates.len());
        let mut next = 0u32;
        for a in &aggregates {
            target_start.push(next);
            next += a.members.len() as u32;
        }
        TypeDb {
            source,
            aggregates,
            targets,
            target_start,
            index,
            align_inferred,
            pointer_size,
            embedders: OnceLock::new(),
        }
    }

    /// The file the types came from.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// Whether alignments were inferred from offsets (BTF) rather than read.
    pub fn align_inferred(&self) -> bool {
        self.align_inferred
    }

    /// Pointer size of the target, in bytes.
    pub fn pointer_size(&self) -> u64 {
        self.pointer_size
    }

    pub fn len(&self) -> usize {
        self.aggregates.len()
    }

    pub fn is_empty(&self) -> bool {
        self.aggregates.is_empty()
    }

    /// Every struct and union, anonymous ones included.
    pub fn aggregates(&self) -> impl Iterator<Item = &Aggregate> {
        self.aggregates.iter()
    }

    /// The aggregate at position `index` of [`TypeDb::aggregates`].
    pub fn get(&self, index: usize) -> Option<&Aggregate> {
        self.aggregates.get(index)
    }

    /// Every definition of `name` (a tag can have several different ones in
    /// a kernel: static structs of different drivers), in order.
    pub fn find_all(&self, name: &str) -> Vec<&Aggregate> {
        let name = name.trim();
        let (kind, bare) = if let Some(tag) = name.strip_prefix("struct ") {
            (Some(AggregateKind::Struct), tag.trim())
        } else if let Some(tag) = name.strip_prefix("union ") {
            (Some(AggregateKind::Union), tag.trim())
        } else {
            (None, name)
        };
        self.aggregates
            .iter()
            .filter(|a| a.name == bare && kind.is_none_or(|k| k == a.kind))
            .collect()
    }

    /// A struct or union by name: `foo` (struct tag, then union tag, then
    /// typedef or synthetic name), `struct foo`, `union foo`, a typedef that
    /// resolves to an aggregate (`atomic_long_t`), or a synthetic name.
    /// With several different definitions of one tag, the first one.
    pub fn find(&self, name: &str) -> Option<&Aggregate> {
        self.index(name).map(|i| &self.aggregates[i])
    }

    fn index(&self, name: &str) -> Option<usize> {
        let name = name.trim();
        let found = if let Some(tag) = name.strip_prefix("struct ") {
            self.index.get(KeySpace::Struct, tag.trim())
        } else if let Some(tag) = name.strip_prefix("union ") {
            self.index.get(KeySpace::Union, tag.trim())
        } else {
            self.index
                .get(KeySpace::Struct, name)
                .or_else(|| self.index.get(KeySpace::Union, name))
                .or_else(|| self.index.get(KeySpace::Other, name))
        };
        found.map(|i| i as usize)
    }

    /// Like [`TypeDb::find`], with an error that names the file and close names.
    pub fn find_struct(&self, name: &str) -> Result<&Aggregate, Diagnostic> {
        if let Some(found) = self.find(name) {
            return Ok(found);
        }
        let close = close_names(name, self.index.names());
        let mut d = Diagnostic::new(format!("no struct or union named `{}`", name.trim()))
            .in_file(&self.source);
        d = if close.is_empty() {
            d.help("check the spelling, or load the file that defines it")
        } else {
            d.help(format!("close names: {}", close.join(", ")))
        };
        Err(d)
    }

    /// The position of `agg` in [`TypeDb::aggregates`], if it belongs to this database.
    pub fn index_of(&self, agg: &Aggregate) -> Option<usize> {
        let base = self.aggregates.as_ptr() as usize;
        let at = agg as *const Aggregate as usize;
        let size = std::mem::size_of::<Aggregate>();
        let i = at.checked_sub(base)? / size;
        (i < self.aggregates.len() && std::ptr::eq(&self.aggregates[i], agg)).then_some(i)
    }

    /// The aggregates that embed `name` by value (directly or as array
    /// elements; not through pointers), with the member index. Anonymous
    /// aggregates are embedders too: follow them up with their synthetic name.
    pub fn embedders(&self, name: &str) -> Vec<(&Aggregate, usize)> {
        match self.index(name) {
            Some(i) => self.embedders_at(i),
            None => Vec::new(),
        }
    }

    /// [`TypeDb::embedders`] of an aggregate of this database.
    pub fn embedders_of(&self, agg: &Aggregate) -> Vec<(&Aggregate, usize)> {
        match self.index_of(agg) {
            Some(i) => self.embedders_at(i),
            None => Vec::new(),
        }
    }

    fn embedders_at(&self, target: usize) -> Vec<(&Aggregate, usize)> {
        let index = self.embedders.get_or_init(|| self.embedder_index());
        index[target]
            .iter()
            .map(|&(a, m)| (&self.aggregates[a as usize], m as usize))
            .collect()
    }

    fn embedder_index(&self) -> Vec<Vec<(u32, u32)>> {
        let mut index = vec![Vec::new(); self.aggregates.len()];
        for (a, agg) in self.aggregates.iter().enumerate() {
            let start = self.target_start[a] as usize;
            for m in 0..agg.members.len() {
                let t = self.targets.get(start + m).copied().unwrap_or(NO_TARGET);
                if let Some(list) = index.get_mut(t as usize) {
                    list.push((a as u32, m as u32));
                }
            }
        }
        index
    }

    /// The aggregate that member `member` of `agg` embeds, if any.
    pub fn member_aggregate(&self, agg: &Aggregate, member: usize) -> Option<&Aggregate> {
        let i = self.index_of(agg)?;
        if member >= agg.members.len() {
            return None;
        }
        let t = *self.targets.get(self.target_start[i] as usize + member)?;
        self.aggregates.get(t as usize)
    }

    /// The layout model of `agg`: one cold, unpinned field per member with
    /// its original offset, except that
    ///
    /// - consecutive bitfields sharing a storage unit become one field named
    ///   `a:b:c`, spanning the bytes their bits occupy from the unit's start
    ///   and aligned like their widest type (moving one alone would change how
    ///   the others pack); a group whose unit starts inside the previous field
    ///   (`char c; unsigned a:8;`) starts at its first bit's byte instead;
    /// - an anonymous struct or union member is one field, `anon_union@8`;
    /// - a field's alignment is the larger of its type's and its `aligned`
    ///   attribute's (BTF cannot tell which one carried it, and dropping a
    ///   type's alignment would let the solver place the field where the
    ///   compiler will not); `min_align` is the aggregate's own attribute.
    ///
    /// Meant for structs: a union's fields all start at 0.
    pub fn to_model(&self, agg: &Aggregate) -> Struct {
        fields::to_model(agg)
    }

    /// [`TypeDb::to_model`] with each anonymous struct member opened into
    /// the fields it holds, at their offsets (anonymous unions stay one
    /// field): the declared layout as the code reaches it, to price it.
    /// Not for proposing: the members of an anonymous struct move together.
    pub fn to_flat_model(&self, agg: &Aggregate) -> Struct {
        flat::to_flat_model(self, agg)
    }
}

/// Up to five type names close to `wanted`: by edit distance, then
/// containing it. Unlike [`crate::suggest::close_names`] it skips names
/// whose length alone rules them out (a BTF file has 100,000 of them).
fn close_names<'n>(wanted: &str, names: impl Iterator<Item = &'n str>) -> Vec<String> {
    let wanted = wanted
        .trim()
        .trim_start_matches("struct ")
        .trim_start_matches("union ")
        .trim();
    let limit = (wanted.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = Vec::new();
    for name in names {
        if name.starts_with("(anon ") {
            continue;
        }
        let d = if name.len().abs_diff(wanted.len()) <= limit {
            crate::suggest::edit_distance(wanted, name)
        } else if name.contains(wanted) {
            limit
        } else {
            continue;
        };
        if d <= limit {
            scored.push((d, name));
        }
    }
    scored.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(a.1.len().cmp(&b.1.len()))
            .then(a.1.cmp(b.1))
    });
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(5)
        .map(|(_, n)| n.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_prefers_near_spellings() {
        let names = ["page_counter", "page", "mem_cgroup", "page_counters_x"];
        let close = close_names("page_countr", names.into_iter());
        assert_eq!(close.first().map(String::as_str), Some("page_counter"));
        assert!(!close.contains(&"mem_cgroup".to_string()));
    }
}
