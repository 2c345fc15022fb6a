//! Sizes and alignments of the types in a [`TypeGraph`], with the alignment
//! inference that BTF (and DWARF without `DW_AT_alignment`) needs.
//! The rules are documented on [`crate::typedb`].

use super::graph::{Node, Span, TypeGraph, TypeId};
use crate::place::{align_up, DataLayout};

/// The cache line size the kernel's `____cacheline_aligned` uses on x86_64 and
/// arm64: inferred attributes are taken as large as the offset allows, up to it.
pub(crate) const LINE: u64 = DataLayout::X86_64.smp_cache_bytes;

/// Deepest typedef/qualifier/array chain followed; deeper means a cycle.
const MAX_DEPTH: u32 = 64;

/// Deepest nesting of aggregates analysed (the kernel's is under 20); deeper
/// input is corrupt or hostile, and recursing further could overflow the stack.
const MAX_NESTING: u32 = 256;

/// Alignment facts of one struct or union.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AggAlign {
    /// Certain lower bound: what the members' types alone require (1 when packed).
    pub natural: u64,
    /// The alignment: natural, raised by stated or inferred attributes.
    pub align: u64,
    /// Alignment stated or inferred for the aggregate itself (its tail padding
    /// says so); 0 when none.
    pub own: u64,
    pub packed: bool,
}

/// What an alignment comes from.
enum AlignSource {
    Fixed(u64),
    Aggregate(TypeId),
}

#[derive(Clone, Copy, Debug)]
enum State {
    Unknown,
    InProgress,
    Done(AggAlign),
}

/// Not an aggregate (in [`Aligner::slot_of`]).
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// Memoised size and alignment queries over a graph.
pub(crate) struct Aligner<'g, 'a> {
    g: &'g TypeGraph<'a>,
    /// Type ids of the aggregates; an aggregate's slot is its index here.
    ids: Vec<TypeId>,
    /// Slot of each type id; [`NO_SLOT`] for other types.
    slot_of: Vec<u32>,
    /// Analysis state of each slot.
    state: Vec<State>,
    /// Upper bound on each slot's inferred alignment from the offsets where
    /// it is embedded (0: none).
    cap: Vec<u64>,
    /// Largest natural alignment of a base type (16 on LP64: `__int128`, `long double`).
    base_cap: u64,
    /// Aggregates being analysed now (nesting depth).
    nesting: u32,
    /// Alignment attribute of every member (by index in the graph's
    /// members), stated or inferred; 0 for none. Filled by the analysis.
    attrs: Vec<u64>,
}

impl<'g, 'a> Aligner<'g, 'a> {
    pub(crate) fn new(g: &'g TypeGraph<'a>) -> Self {
        let ids: Vec<TypeId> = (0..g.nodes.len() as TypeId)
            .filter(|&id| matches!(g.node(id), Node::Aggregate { .. }))
            .collect();
        let mut slot_of = vec![NO_SLOT; g.nodes.len()];
        for (slot, &id) in ids.iter().enumerate() {
            slot_of[id as usize] = slot as u32;
        }
        let mut aligner = Aligner {
            g,
            state: vec![State::Unknown; ids.len()],
            cap: vec![0; ids.len()],
            ids,
            slot_of,
            base_cap: if g.pointer_size >= 8 { 16 } else { 8 },
            nesting: 0,
            attrs: vec![0; g.members.len()],
        };
        if g.infer_align {
            aligner.cap_from_embeddings();
        }
        aligner
    }

    /// Type ids of the aggregates, in type id order; their index is their slot.
    pub(crate) fn ids(&self) -> &[TypeId] {
        &self.ids
    }

    /// Slot of each type id ([`NO_SLOT`] for types that are not aggregates).
    pub(crate) fn slot_of(&self) -> &[u32] {
        &self.slot_of
    }

    fn slot(&self, id: TypeId) -> Option<usize> {
        match self.slot_of.get(id as usize) {
            Some(&slot) if slot != NO_SLOT => Some(slot as usize),
            _ => None,
        }
    }

    pub(crate) fn graph(&self) -> &'g TypeGraph<'a> {
        self.g
    }

    /// Size in bytes (0 for void, functions, incomplete types).
    pub(crate) fn size_of(&self, id: TypeId) -> u64 {
        let mut id = id;
        let mut factor: u64 = 1;
        for _ in 0..MAX_DEPTH {
            match self.g.node(id) {
                Node::Int { size, .. } | Node::Float { size, .. } | Node::Enum { size, .. } => {
                    return factor.saturating_mul(u64::from(size))
                }
                Node::Ptr { .. } => return factor.saturating_mul(self.g.pointer_size),
                Node::Aggregate { size, .. } => return factor.saturating_mul(size),
                Node::Array { elem, count } => {
                    factor = factor.saturating_mul(count);
                    id = elem;
                }
                Node::Typedef { to, .. } | Node::Qual { to, .. } => id = to,
                Node::Void | Node::Fwd { .. } | Node::Func { .. } | Node::NotAType => return 0,
            }
        }
        0
    }

    /// Natural alignment of a base type of `size` bytes.
    fn base_align(&self, size: u64) -> u64 {
        if size == 0 {
            1
        } else {
            (1u64 << size.trailing_zeros()).min(self.base_cap)
        }
    }

    /// The alignment of a type.
    pub(crate) fn align_of(&mut self, id: TypeId) -> u64 {
        match self.align_source(id) {
            AlignSource::Fixed(a) => a,
            AlignSource::Aggregate(id) => self.aggregate(id).map_or(1, |a| a.align),
        }
    }

    /// The certain part of a type's alignment (no inferred attributes).
    fn natural_of(&mut self, id: TypeId) -> u64 {
        match self.align_source(id) {
            AlignSource::Fixed(a) => a,
            AlignSource::Aggregate(id) => self.aggregate(id).map_or(1, |a| a.natural),
        }
    }

    /// [`Aligner::align_of`] once [`Aligner::finish`] has analysed everything.
    pub(crate) fn align_known(&self, id: TypeId) -> u64 {
        match self.align_source(id) {
            AlignSource::Fixed(a) => a,
            AlignSource::Aggregate(id) => self.facts(id).map_or(1, |a| a.align),
        }
    }

    /// What decides the alignment of `id`, under typedefs, qualifiers and arrays.
    fn align_source(&self, mut id: TypeId) -> AlignSource {
        for _ in 0..MAX_DEPTH {
            match self.g.node(id) {
                Node::Int { size, .. } | Node::Float { size, .. } | Node::Enum { size, .. } => {
                    return AlignSource::Fixed(self.base_align(u64::from(size)))
                }
                Node::Ptr { .. } => return AlignSource::Fixed(self.g.pointer_size.max(1)),
                Node::Array { elem: to, .. } | Node::Qual { to, .. } => id = to,
                Node::Typedef { align, .. } if align > 0 => {
                    return AlignSource::Fixed(u64::from(align))
                }
                Node::Typedef { to, .. } => id = to,
                Node::Aggregate { .. } => return AlignSource::Aggregate(id),
                Node::Void | Node::Fwd { .. } | Node::Func { .. } | Node::NotAType => {
                    return AlignSource::Fixed(1)
                }
            }
        }
        AlignSource::Fixed(1)
    }

    /// Analyses every aggregate not analysed yet; afterwards the read-only
    /// queries ([`Aligner::facts`], [`Aligner::align_known`],
    /// [`Aligner::member_attrs`]) answer for all of them.
    pub(crate) fn finish(&mut self) {
        for slot in 0..self.ids.len() {
            self.aggregate(self.ids[slot]);
        }
    }

    /// The alignment facts of aggregate `id`, if analysed.
    pub(crate) fn facts(&self, id: TypeId) -> Option<AggAlign> {
        match self.state[self.slot(id)?] {
            State::Done(a) => Some(a),
            State::Unknown | State::InProgress => None,
        }
    }

    /// Alignment facts of the aggregate `id`; `None` for other types and
    /// for aggregates that (through corrupt input) contain themselves.
    pub(crate) fn aggregate(&mut self, id: TypeId) -> Option<AggAlign> {
        let slot = self.slot(id)?;
        match self.state[slot] {
            State::Done(a) => return Some(a),
            State::InProgress => return None,
            State::Unknown => {}
        }
        let Node::Aggregate {
            union,
            size,
            members,
            align,
            ..
        } = self.g.node(id)
        else {
            return None;
        };
        if self.nesting >= MAX_NESTING {
            return None;
        }
        self.nesting += 1;
        self.state[slot] = State::InProgress;
        let result = self.analyze(id, union, size, members, u64::from(align));
        self.state[slot] = State::Done(result);
        self.nesting -= 1;
        Some(result)
    }

    fn analyze(&mut self, id: TypeId, union: bool, size: u64, span: Span, stated: u64) -> AggAlign {
        let g = self.g;
        let members = g.members_of(span);
        let mut max_natural = 1;
        let mut max_align = 1;
        let mut max_stated = stated.max(1);
        let mut packed = false;
        for m in members {
            let natural = self.natural_of(m.ty);
            max_natural = max_natural.max(natural);
            max_align = max_align.max(self.align_of(m.ty));
            max_stated = max_stated.max(u64::from(m.align));
            let misplaced = m.bit_offset % 8 != 0 || (m.bit_offset / 8) % natural != 0;
            if m.bit_size == 0 && self.size_of(m.ty) > 0 && misplaced {
                packed = true;
            }
        }
        if size > 0 && !size.is_multiple_of(max_natural) {
            packed = true;
        }
        let unpacked = if packed && !union {
            self.unpacked_align(members)
        } else {
            1
        };
        let natural = if packed { unpacked } else { max_natural }.max(max_stated);
        let (max_attr, end) = self.member_attrs_for(union, size, packed, span);
        let from_members = if packed { unpacked } else { max_align }.max(max_attr);
        // DWARF states an alignment wherever one was asked for, members
        // included (gcc marks a struct with an aligned member as aligned too);
        // the struct's own attribute is the part its members do not explain.
        let mut own = if stated > from_members { stated } else { 0 };
        let mut align = from_members.max(stated);
        if self.g.infer_align && size > align_up(end, align) {
            if let Some(a) = infer(size, end, align) {
                own = own.max(a);
                align = align.max(a);
            }
        }
        // Evidence against over-inference: a type's alignment divides its size
        // and every offset where a non-packed struct embeds it.
        if size > 0 {
            align = align.min(1 << size.trailing_zeros());
        }
        if let Some(&cap) = self.slot(id).and_then(|slot| self.cap.get(slot)) {
            if cap > 0 {
                align = align.min(cap);
                own = own.min(cap);
            }
        }
        let align = align.max(natural);
        AggAlign {
            natural,
            align,
            own: if own > 1 { own } else { 0 },
            packed,
        }
    }

    /// In a packed struct, the largest alignment of a member that sits past
    /// a gap its type's alignment explains exactly (`align_up(end of the
    /// previous member, alignment) == offset`): such a member is not packed
    /// (a `__packed` member among ordinary ones), and the struct is at least
    /// that aligned, as gcc makes it.
    fn unpacked_align(&mut self, members: &[super::graph::RawMember]) -> u64 {
        let mut end = 0u64;
        let mut most = 1;
        for m in members {
            let size = self.size_of(m.ty);
            if m.bit_size > 0 {
                end = end.max((m.bit_offset + u64::from(m.bit_size)).div_ceil(8));
                continue;
            }
            let offset = m.bit_offset / 8;
            let natural = self.natural_of(m.ty);
            if m.bit_offset % 8 == 0 && offset > end && align_up(end, natural) == offset {
                most = most.max(natural);
            }
            end = end.max(offset.saturating_add(size));
        }
        most
    }

    /// The alignment attribute of each member of aggregate `id` (stated, or
    /// inferred from an offset natural placement does not explain; 0 for
    /// none), once analysed.
    pub(crate) fn member_attrs(&self, id: TypeId) -> &[u64] {
        let Node::Aggregate { members, .. } = self.g.node(id) else {
            return &[];
        };
        if self.facts(id).is_none() {
            return &[];
        }
        self.attrs.get(members.range()).unwrap_or(&[])
    }

    /// Stores the member attributes of the aggregate whose members are
    /// `span`; returns the largest and the end (in bytes) of the last member.
    fn member_attrs_for(&mut self, union: bool, size: u64, packed: bool, span: Span) -> (u64, u64) {
        let g = self.g;
        let mut max_attr = 1;
        let mut end_bits: u64 = 0;
        for (i, m) in g.members_of(span).iter().enumerate() {
            let stated = u64::from(m.align);
            let type_size = self.size_of(m.ty);
            // A stated alignment is the member's own attribute where its
            // type does not explain it (gcc states it for members of aligned
            // types too).
            let explained = if packed { 1 } else { self.align_of(m.ty) };
            let mut attr = if stated > explained { stated } else { 0 };
            let ordinary = m.bit_size == 0 && m.bit_offset % 8 == 0;
            if g.infer_align && !union && ordinary {
                let placed = explained.max(stated);
                let start = end_bits.div_ceil(8);
                let offset = m.bit_offset / 8;
                if offset > align_up(start, placed) {
                    if let Some(a) = infer(offset, start, placed) {
                        // A member's alignment divides the struct size.
                        let a = a.min(lowbit(size));
                        if offset - start < a && a > placed {
                            attr = attr.max(a);
                        }
                    }
                }
            }
            if let Some(slot) = self.attrs.get_mut(span.start as usize + i) {
                *slot = attr;
            }
            max_attr = max_attr.max(attr);
            let bits = if m.bit_size > 0 {
                u64::from(m.bit_size)
            } else {
                type_size.saturating_mul(8)
            };
            end_bits = end_bits.max(m.bit_offset.saturating_add(bits));
        }
        (max_attr, end_bits.div_ceil(8))
    }

    /// Caps aggregates' inferred alignment by the offsets where non-packed
    /// aggregates embed them, and forgets the analyses the caps change.
    fn cap_from_embeddings(&mut self) {
        let g = self.g;
        let mut capped = vec![false; self.ids.len()];
        for parent in 0..self.ids.len() {
            let id = self.ids[parent];
            let Node::Aggregate { members, .. } = g.node(id) else {
                continue;
            };
            if self.aggregate(id).is_none_or(|a| a.packed) {
                continue;
            }
            for m in g.members_of(members) {
                if m.bit_size > 0 || m.bit_offset % 8 != 0 {
                    continue;
                }
                let (elem, count) = self.element(m.ty);
                let Some(slot) = self.slot(elem) else {
                    continue;
                };
                let Some(facts) = self.aggregate(elem) else {
                    continue;
                };
                if facts.align <= facts.natural {
                    continue;
                }
                let mut bound = lowbit(m.bit_offset / 8);
                if count > 1 {
                    bound = bound.min(lowbit(self.size_of(elem)));
                }
                if bound < facts.align {
                    let cap = &mut self.cap[slot];
                    let new = if *cap == 0 { bound } else { (*cap).min(bound) }.max(facts.natural);
                    if new != *cap {
                        *cap = new;
                        capped[slot] = true;
                    }
                }
            }
        }
        self.forget_affected(capped);
    }

    /// Resets the analysis of the `affected` slots and of every aggregate
    /// that embeds one of them, directly or not.
    fn forget_affected(&mut self, mut affected: Vec<bool>) {
        if !affected.contains(&true) {
            return;
        }
        let g = self.g;
        let mut changed = true;
        while changed {
            changed = false;
            for parent in 0..self.ids.len() {
                if affected[parent] {
                    continue;
                }
                let Node::Aggregate { members, .. } = g.node(self.ids[parent]) else {
                    continue;
                };
                let embeds = g
                    .members_of(members)
                    .iter()
                    .any(|m| self.slot(self.element(m.ty).0).is_some_and(|s| affected[s]));
                if embeds {
                    affected[parent] = true;
                    changed = true;
                }
            }
        }
        for (state, hit) in self.state.iter_mut().zip(affected) {
            if hit {
                *state = State::Unknown;
            }
        }
    }

    /// The element type under typedefs, qualifiers and arrays, and the number
    /// of elements (product of the array dimensions; 1 for non-arrays).
    pub(crate) fn element(&self, id: TypeId) -> (TypeId, u64) {
        let mut id = id;
        let mut count: u64 = 1;
        for _ in 0..MAX_DEPTH {
            match self.g.node(id) {
                Node::Array { elem, count: n } => {
                    count = count.saturating_mul(n);
                    id = elem;
                }
                Node::Typedef { to, .. } | Node::Qual { to, .. } => id = to,
                _ => return (id, count),
            }
        }
        (0, count)
    }
}

/// The alignment an attribute must have had for a member (or the struct's
/// tail) to sit at `offset` when natural placement (alignment `natural`) would
/// have put it right after `end`. Any power of two above the gap
/// `offset - end` that divides `offset` explains it; this picks the largest
/// one up to [`LINE`] (but at least the smallest one), so that it never
/// understates an attribute of up to a cache line. `None` when no alignment
/// explains the gap or it would be natural anyway.
pub(crate) fn infer(offset: u64, end: u64, natural: u64) -> Option<u64> {
    let gap = offset.checked_sub(end).filter(|&g| g > 0)?;
    let smallest = gap.checked_add(1)?.checked_next_power_of_two()?;
    if !offset.is_multiple_of(smallest) {
        return None;
    }
    let a = lowbit(offset).min(LINE).max(smallest);
    (a > natural).then_some(a)
}

/// The largest power of two dividing `x` (`u64::MAX` for 0: no bound).
fn lowbit(x: u64) -> u64 {
    if x == 0 {
        u64::MAX
    } else {
        1 << x.trailing_zeros()
    }
}
