//! The input model: a struct's fields with their sizes, alignments and access
//! classes, and the geometry of the machine it will run on.
//!
//! Every front-end (C header, BTF, DWARF, Rust tokens, TOML) produces a
//! [`Struct`]; the solver, verifier and emitters only ever see this model.

pub use crate::class::Access;
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

/// Where a field was declared: file, 1-based line and column, byte range of the
/// whole declaration (including its leading comment) in the source text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceSpan {
    pub file: Option<PathBuf>,
    pub line: usize,
    pub column: usize,
    pub bytes: std::ops::Range<usize>,
}

impl fmt::Display for SourceSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(p) => write!(f, "{}:{}:{}", p.display(), self.line, self.column),
            None => write!(f, "{}:{}", self.line, self.column),
        }
    }
}

/// One member of a struct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    /// The type as written (`atomic_long_t`, `unsigned long[4]`, `AtomicU64`).
    pub ty: String,
    pub size: u64,
    /// A power of two.
    pub align: u64,
    pub access: Access,
    /// The field must keep its original offset (UAPI, ABI, first member).
    pub pinned: bool,
    pub span: Option<SourceSpan>,
    /// Offset in the original declaration, when known (needed for `pinned`).
    pub original_offset: Option<u64>,
    /// Ordering constraint: a layout places members in nondecreasing
    /// `segment` order. Segments come from what the author built (cache-line
    /// groups, paddings, zero-size markers, the first member); 0 everywhere
    /// means the members may take any order.
    pub segment: u32,
    /// The source aligns this member to a cache line itself
    /// (`____cacheline_aligned_in_smp` on the member, not on its type): a
    /// line break of the author's, a segment of its own
    /// ([`crate::segments`]).
    pub line_break: bool,
    /// The hot paths whose code touches this member, and which of its bytes.
    pub paths: Vec<PathUse>,
    /// The member is a lock (its class locked_write): its own state is
    /// written by every CPU that takes the lock, so the hard rule keeps it
    /// off read-mostly lines like a lockless field of a writer group of its
    /// own, named after it ([`Field::rule_access`], [`crate::lock_word`]).
    pub lock_word: bool,
}

/// A hot path's use of part of a member: the member's own bytes when the
/// path names it, or a sub-member's bytes (`rx_opt.rcv_tsval`) when it names
/// that; the member still moves as one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathUse {
    /// Index into [`Struct::paths`].
    pub path: u32,
    /// Byte range relative to the member's start.
    pub bytes: std::ops::Range<u64>,
}

impl Field {
    pub fn new(name: impl Into<String>, ty: impl Into<String>, size: u64, align: u64) -> Self {
        Field {
            name: name.into(),
            ty: ty.into(),
            size,
            align,
            access: Access::Cold,
            pinned: false,
            span: None,
            original_offset: None,
            segment: 0,
            line_break: false,
            paths: Vec::new(),
            lock_word: false,
        }
    }

    pub fn with_access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// A flexible array member (`T x[]`, or the GNU zero-length `T x[0]`):
    /// no bytes of its own, its elements follow the struct's fixed part.
    pub fn is_flexible_array(&self) -> bool {
        let ty = self.ty.trim_end();
        self.size == 0 && (ty.ends_with("[]") || ty.ends_with("[0]"))
    }
}

/// A struct to lay out. Field order is the original declaration order; a
/// field's index in `fields` is its identity everywhere downstream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Struct {
    pub name: String,
    pub fields: Vec<Field>,
    /// Minimum alignment the declaration asks for (e.g. `__aligned(64)` on the
    /// struct); 1 when it asks for none.
    pub min_align: u64,
    /// Names of the hot paths (`tx`, `rx`) that [`Field::paths`] refers to.
    pub paths: Vec<String>,
    /// Units the layout moves whole: the fields of each conditional block
    /// (`#if` ... `#endif`) of the source, by index. A layout keeps each
    /// block's fields next to each other in its order (nothing from outside
    /// comes between them), so the diff can move the block as a whole;
    /// members outside may move across it ([`crate::segments`]).
    pub blocks: Vec<Vec<usize>>,
    /// Fields declared together (`int a, b;`), by index in declaration
    /// order: a layout keeps them next to each other, in that order, as the
    /// diff moves a declaration only whole.
    pub lists: Vec<Vec<usize>>,
    /// The author's line breaks that members may cross: paddings and
    /// line-aligned members, by index, in declaration order (headed by the
    /// first member when `--move-first` frees it: it stays before them). A
    /// layout keeps them in this order ([`crate::segments`]).
    pub breaks: Vec<usize>,
}

impl Struct {
    pub fn new(name: impl Into<String>, fields: Vec<Field>) -> Self {
        Struct {
            name: name.into(),
            fields,
            min_align: 1,
            paths: Vec::new(),
            blocks: Vec::new(),
            lists: Vec::new(),
            breaks: Vec::new(),
        }
    }

    /// The struct's natural alignment: the largest of its fields' and `min_align`.
    pub fn natural_align(&self) -> u64 {
        self.fields
            .iter()
            .map(|f| f.align)
            .fold(self.min_align.max(1), u64::max)
    }

    /// The last member when it is a flexible array
    /// ([`Field::is_flexible_array`]): its elements start at its offset, so
    /// the line holding that offset holds them too, and its class applies
    /// there (the rule the solver and the verifier keep).
    pub fn flexible_tail(&self) -> Option<usize> {
        let last = self.fields.len().checked_sub(1)?;
        self.fields[last].is_flexible_array().then_some(last)
    }

    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// True when some pair of fields falls under the hard rule.
    pub fn has_hard_pairs(&self) -> bool {
        self.fields.iter().enumerate().any(|(i, a)| {
            self.fields[i + 1..]
                .iter()
                .any(|b| a.rule_access().hard_conflict(&b.rule_access()))
        })
    }
}

/// Where instances of the struct start relative to cache lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Unknown placement: the layout must hold wherever the struct is put, at
    /// any offset that is a multiple of its alignment.
    Aligned,
    /// The struct sits at this byte offset inside a line-aligned container;
    /// its phase is `offset % line`.
    Offset(u64),
    /// The struct sits in several line-aligned containers, at these offsets
    /// (one per container, the first numbers the report's lines): the hard
    /// rule must hold at each of their phases.
    Offsets(Offsets),
}

impl Placement {
    /// The placement for these container offsets: `Aligned` for none,
    /// `Offset` for one, `Offsets` for up to [`MAX_CONTAINERS`] (more are an
    /// error).
    pub fn at_offsets(offsets: &[u64]) -> Result<Placement, String> {
        match offsets {
            [] => Ok(Placement::Aligned),
            [o] => Ok(Placement::Offset(*o)),
            _ => Offsets::new(offsets)
                .map(Placement::Offsets)
                .ok_or_else(|| {
                    format!(
                        "{} container offsets given: at most {MAX_CONTAINERS} are supported",
                        offsets.len()
                    )
                }),
        }
    }

    /// The container offsets (empty in aligned mode).
    pub fn offsets(&self) -> &[u64] {
        match self {
            Placement::Aligned => &[],
            Placement::Offset(o) => std::slice::from_ref(o),
            Placement::Offsets(o) => o.as_slice(),
        }
    }

    /// The offset that numbers the report's lines: the first container's.
    pub fn first_offset(&self) -> Option<u64> {
        self.offsets().first().copied()
    }
}

/// Most containers one layout is solved for at once.
pub const MAX_CONTAINERS: usize = 8;

/// Two to [`MAX_CONTAINERS`] container offsets, in the order given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offsets {
    len: u8,
    at: [u64; MAX_CONTAINERS],
}

impl Offsets {
    pub fn new(offsets: &[u64]) -> Option<Offsets> {
        if offsets.len() > MAX_CONTAINERS {
            return None;
        }
        let mut at = [0; MAX_CONTAINERS];
        at[..offsets.len()].copy_from_slice(offsets);
        Some(Offsets {
            len: offsets.len() as u8,
            at,
        })
    }

    pub fn as_slice(&self) -> &[u64] {
        &self.at[..self.len as usize]
    }
}

impl Serialize for Offsets {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(ser)
    }
}

/// Machine geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// Cache line size in bytes: 32, 64, 128 or 256.
    pub line: u64,
}

impl Default for Target {
    fn default() -> Self {
        Target {
            line: crate::place::DataLayout::X86_64.line_bytes,
        }
    }
}

impl Target {
    pub fn new(line: u64) -> Result<Self, String> {
        if [32, 64, 128, 256].contains(&line) {
            Ok(Target { line })
        } else {
            Err(format!(
                "line size {line} is not supported: use 32, 64, 128 or 256"
            ))
        }
    }
}
