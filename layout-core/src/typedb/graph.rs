//! The type graph both loaders produce: flat vectors indexed by type id, the
//! shape of BTF (which DWARF maps onto easily). [`super::build`] turns it into
//! a [`super::TypeDb`].

use std::borrow::Cow;

/// Index of a type in [`TypeGraph::nodes`]; 0 is `void`.
pub(crate) type TypeId = u32;

/// A type qualifier or tag that wraps another type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Qualifier {
    Const,
    Volatile,
    Restrict,
    Atomic,
    /// BTF `TYPE_TAG` (e.g. `__user`): invisible in C text.
    TypeTag,
}

impl Qualifier {
    /// The C keyword, or `None` for tags that C text does not show.
    pub(crate) fn keyword(self) -> Option<&'static str> {
        match self {
            Qualifier::Const => Some("const"),
            Qualifier::Volatile => Some("volatile"),
            Qualifier::Restrict => Some("restrict"),
            Qualifier::Atomic => Some("_Atomic"),
            Qualifier::TypeTag => None,
        }
    }
}

/// A contiguous run in [`TypeGraph::members`] or [`TypeGraph::params`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: u32,
    pub len: u32,
}

impl Span {
    pub(crate) fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.start as usize + self.len as usize
    }
}

/// One type. Names are offsets of NUL-terminated strings in
/// [`TypeGraph::strings`]; 0 is the empty name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    Void,
    Int {
        name: u32,
        size: u32,
    },
    Float {
        name: u32,
        size: u32,
    },
    Ptr {
        to: TypeId,
    },
    /// `count` 0 for flexible arrays (`x[]`).
    Array {
        elem: TypeId,
        count: u64,
    },
    Aggregate {
        union: bool,
        name: u32,
        size: u64,
        members: Span,
        /// Alignment the debug info states (DWARF `DW_AT_alignment`); 0 when none.
        align: u32,
    },
    Enum {
        name: u32,
        size: u32,
    },
    /// A declared but undefined struct or union.
    Fwd {
        name: u32,
        union: bool,
    },
    Typedef {
        name: u32,
        to: TypeId,
        align: u32,
    },
    Qual {
        qual: Qualifier,
        to: TypeId,
    },
    Func {
        ret: TypeId,
        params: Span,
        variadic: bool,
    },
    /// Functions, variables, data sections, declaration tags: not member types.
    NotAType,
}

/// A struct or union member as the debug info gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawMember {
    pub name: u32,
    pub ty: TypeId,
    /// Offset of the member's first bit from the start of the aggregate.
    pub bit_offset: u64,
    /// Width of a bitfield; 0 for ordinary members.
    pub bit_size: u32,
    /// Alignment the debug info states for the member (DWARF); 0 when none.
    pub align: u32,
}

/// All types of one BTF blob or one DWARF file.
#[derive(Debug)]
pub(crate) struct TypeGraph<'a> {
    /// NUL-terminated names; starts with a NUL so that offset 0 is "".
    pub strings: Cow<'a, [u8]>,
    pub nodes: Vec<Node>,
    pub members: Vec<RawMember>,
    pub params: Vec<TypeId>,
    /// Size of a pointer (and of `long`) on the target.
    pub pointer_size: u64,
    /// Whether alignment must be inferred from offsets (BTF; DWARF producers
    /// that omit `DW_AT_alignment`).
    pub infer_align: bool,
    /// Whether identical aggregates may repeat (one copy per DWARF unit).
    pub may_repeat: bool,
}

impl<'a> TypeGraph<'a> {
    /// The name at `offset`; "" when out of range or not UTF-8.
    pub(crate) fn name(&self, offset: u32) -> &str {
        let bytes = self.strings.get(offset as usize..).unwrap_or(&[]);
        match std::ffi::CStr::from_bytes_until_nul(bytes) {
            Ok(name) => name.to_str().unwrap_or(""),
            Err(_) => std::str::from_utf8(bytes).unwrap_or(""),
        }
    }

    pub(crate) fn node(&self, id: TypeId) -> Node {
        self.nodes.get(id as usize).copied().unwrap_or(Node::Void)
    }

    pub(crate) fn members_of(&self, span: Span) -> &[RawMember] {
        self.members.get(span.range()).unwrap_or(&[])
    }

    pub(crate) fn params_of(&self, span: Span) -> &[TypeId] {
        self.params.get(span.range()).unwrap_or(&[])
    }

    /// Every type id a node refers to, for validation.
    pub(crate) fn references(&self, node: &Node, mut visit: impl FnMut(TypeId)) {
        match *node {
            Node::Ptr { to } | Node::Typedef { to, .. } | Node::Qual { to, .. } => visit(to),
            Node::Array { elem, .. } => visit(elem),
            Node::Aggregate { members, .. } => {
                for m in self.members_of(members) {
                    visit(m.ty)
                }
            }
            Node::Func { ret, params, .. } => {
                visit(ret);
                for &p in self.params_of(params) {
                    visit(p)
                }
            }
            Node::Void
            | Node::Int { .. }
            | Node::Float { .. }
            | Node::Enum { .. }
            | Node::Fwd { .. }
            | Node::NotAType => {}
        }
    }
}

/// The first type whose chain of typedefs, qualifiers and array elements
/// never reaches a concrete type (a cycle, which only corrupt debug info
/// has: C cannot write `typedef T T` or an array of itself), as a message.
/// Without this check such a type reads as size 0 and the struct holding it
/// as well-formed.
pub(crate) fn find_cycle(g: &TypeGraph<'_>) -> Option<String> {
    // 0: not visited, 1: on the current chain, 2: reaches a concrete type.
    let mut state = vec![0u8; g.nodes.len()];
    let mut chain = Vec::new();
    for start in 0..g.nodes.len() {
        let mut id = start;
        chain.clear();
        loop {
            match state.get(id).copied() {
                Some(1) => {
                    return Some(format!(
                        "type {start} refers to itself through typedefs, qualifiers or array elements (type {id} is on the cycle)"
                    ))
                }
                Some(0) => {}
                _ => break,
            }
            state[id] = 1;
            chain.push(id);
            match g.nodes[id] {
                Node::Typedef { to, .. } | Node::Qual { to, .. } | Node::Array { elem: to, .. } => {
                    id = to as usize
                }
                _ => break,
            }
        }
        for &done in &chain {
            state[done] = 2;
        }
    }
    None
}
