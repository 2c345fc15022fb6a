//! Type graph → [`TypeDb`]: names anonymous aggregates, renders member types,
//! applies the alignment rules of [`super::align`], drops DWARF's repeats.

use super::align::Aligner;
use super::graph::{Node, TypeGraph, TypeId};
use super::index::NameIndex;
use super::render::{keyword, write_type};
use super::{Aggregate, AggregateKind, KeySpace, Member, NameKind, TypeDb, NO_TARGET};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Builds the database of every struct and union in `g`. Fails on a type
/// that refers to itself through typedefs, qualifiers or arrays, and on a
/// struct or union whose members do not fit in its size: the debug info is
/// then corrupt, and every layout computed from it would be wrong.
pub(crate) fn build(g: &TypeGraph<'_>, source: &Path) -> Result<TypeDb, String> {
    if let Some(cycle) = super::graph::find_cycle(g) {
        return Err(format!("corrupt type information: {cycle}"));
    }
    let mut aligner = Aligner::new(g);
    aligner.finish();
    let aligner = aligner;
    let (ids, slot_of) = (aligner.ids(), aligner.slot_of());
    let names = Names::assign(g, &aligner, ids, slot_of);
    let (mut aggregates, mut targets) = materialize_all(&aligner, &names);
    if let Some(bad) = aggregates.iter().find_map(overflowing_member) {
        return Err(format!("corrupt type information: {bad}"));
    }
    if let Some(cycle) = embedding_cycle(&aggregates, &targets) {
        return Err(format!("corrupt type information: {cycle}"));
    }
    let remap = if g.may_repeat {
        dedupe(&mut aggregates, &mut targets)
    } else {
        (0..aggregates.len() as u32).collect()
    };
    rename_repeated_synthetic(&mut aggregates, &targets);
    let mut index = NameIndex::with_capacity(aggregates.len() * 2);
    lookup_names(g, ids, slot_of, &remap, &mut index);
    for (slot, agg) in aggregates.iter().enumerate() {
        if agg.name_kind == NameKind::Anonymous {
            index.insert(KeySpace::Other, &agg.name, slot as u32);
        }
    }
    Ok(TypeDb::assemble(
        source.to_path_buf(),
        aggregates,
        targets,
        index,
        g.infer_align,
        g.pointer_size,
    ))
}

/// An aggregate that contains itself by value, directly or through others
/// (C cannot declare one), as a message. `targets` is flattened per
/// aggregate and member, as [`materialize_all`] returns it.
fn embedding_cycle(aggregates: &[Aggregate], targets: &[u32]) -> Option<String> {
    let mut first = Vec::with_capacity(aggregates.len() + 1);
    let mut at = 0usize;
    for a in aggregates {
        first.push(at);
        at += a.members.len();
    }
    first.push(at);
    let embedded = |i: usize| {
        targets
            .get(first[i]..first[i + 1])
            .unwrap_or(&[])
            .iter()
            .filter(|&&t| (t as usize) < aggregates.len())
            .map(|&t| t as usize)
    };
    // 0: not visited, 1: on the current path, 2: done.
    let mut state = vec![0u8; aggregates.len()];
    for start in 0..aggregates.len() {
        if state[start] != 0 {
            continue;
        }
        // Depth-first, iteratively: (aggregate, next member to look at).
        let mut stack = vec![(start, 0usize)];
        state[start] = 1;
        while let Some(&mut (i, ref mut next)) = stack.last_mut() {
            match embedded(i).nth(*next) {
                Some(t) => {
                    *next += 1;
                    match state[t] {
                        0 => {
                            state[t] = 1;
                            stack.push((t, 0));
                        }
                        1 => {
                            return Some(format!(
                                "{} contains itself by value (through {})",
                                aggregates[t].display_name(),
                                aggregates[i].display_name()
                            ))
                        }
                        _ => {}
                    }
                }
                None => {
                    state[i] = 2;
                    stack.pop();
                }
            }
        }
    }
    None
}

/// The first member of `agg` that ends past the aggregate's size, as a
/// message (a flexible array or zero-size member may end exactly there).
fn overflowing_member(agg: &Aggregate) -> Option<String> {
    agg.members.iter().find_map(|m| {
        let end = match (m.bit_offset, m.bit_size) {
            (Some(bit), Some(width)) => bit.checked_add(width).map(|e| e.div_ceil(8)),
            _ => m.offset.checked_add(m.size),
        };
        match end {
            Some(end) if end <= agg.size => None,
            Some(end) => Some(format!(
                "{} is {} bytes, but member `{}` ends at byte {end}",
                agg.display_name(),
                agg.size,
                m.field_name()
            )),
            None => Some(format!(
                "member `{}` of {} ends past 2^64 bytes",
                m.field_name(),
                agg.display_name()
            )),
        }
    })
}

/// Adds tags, then typedefs that resolve to aggregates, to `index`
/// (`remap`: final slot of each slot).
fn lookup_names(
    g: &TypeGraph<'_>,
    ids: &[TypeId],
    slot_of: &[u32],
    remap: &[u32],
    index: &mut NameIndex,
) {
    for (slot, &id) in ids.iter().enumerate() {
        if let Node::Aggregate { union, name, .. } = g.node(id) {
            let tag = g.name(name);
            if !tag.is_empty() {
                let space = if union {
                    KeySpace::Union
                } else {
                    KeySpace::Struct
                };
                index.insert(space, tag, remap[slot]);
            }
        }
    }
    for node in &g.nodes {
        let Node::Typedef { name, to, .. } = *node else {
            continue;
        };
        let target = strip_typedefs(g, to);
        let Some(&slot) = slot_of.get(target as usize) else {
            continue;
        };
        let typedef = g.name(name);
        if slot != NO_TARGET && !typedef.is_empty() {
            index.insert(KeySpace::Other, typedef, remap[slot as usize]);
        }
    }
}

/// Display names of the aggregates (by slot) and what lookups should find.
struct Names {
    /// Name of each aggregate slot.
    name: Vec<String>,
    /// Member path of anonymous aggregates named after their parent
    /// (`page.@8`), used to name their own anonymous children; `None` where
    /// it is the name.
    path: Vec<Option<String>>,
    kind: Vec<NameKind>,
}

impl Names {
    fn assign(
        g: &TypeGraph<'_>,
        aligner: &Aligner<'_, '_>,
        ids: &[TypeId],
        slot_of: &[u32],
    ) -> Names {
        let n = ids.len();
        let mut names = Names {
            name: vec![String::new(); n],
            path: vec![None; n],
            kind: vec![NameKind::Anonymous; n],
        };
        let mut queue: Vec<u32> = Vec::with_capacity(n);
        for (slot, &id) in ids.iter().enumerate() {
            if let Node::Aggregate { name, .. } = g.node(id) {
                let tag = g.name(name);
                if !tag.is_empty() {
                    names.name[slot] = tag.to_string();
                    names.kind[slot] = NameKind::Tag;
                    queue.push(slot as u32);
                }
            }
        }
        // typedef struct { ... } atomic_t;
        for node in &g.nodes {
            let Node::Typedef { name, to, .. } = *node else {
                continue;
            };
            let target = strip_qualifiers(g, to);
            let Some(&slot) = slot_of.get(target as usize) else {
                continue;
            };
            if slot == NO_TARGET || !names.name[slot as usize].is_empty() {
                continue;
            }
            let typedef = g.name(name);
            if typedef.is_empty() {
                continue;
            }
            let slot = slot as usize;
            names.name[slot] = typedef.to_string();
            names.kind[slot] = NameKind::Typedef;
            queue.push(slot as u32);
        }
        // Anonymous members, breadth first from the named aggregates.
        let mut next = 0;
        while next < queue.len() {
            let parent = queue[next] as usize;
            next += 1;
            let Node::Aggregate { members, .. } = g.node(ids[parent]) else {
                continue;
            };
            // Unnamed members seen so far at each offset (a union's all sit at 0).
            let mut unnamed_at: Vec<(u64, u32)> = Vec::new();
            for m in g.members_of(members) {
                let member = g.name(m.name);
                let offset = m.bit_offset / 8;
                let mut ordinal = 0;
                if member.is_empty() {
                    match unnamed_at.iter_mut().find(|(o, _)| *o == offset) {
                        Some((_, n)) => {
                            *n += 1;
                            ordinal = *n;
                        }
                        None => unnamed_at.push((offset, 0)),
                    }
                }
                let (elem, _) = aligner.element(m.ty);
                let Some(&slot) = slot_of.get(elem as usize) else {
                    continue;
                };
                if slot == NO_TARGET || !names.name[slot as usize].is_empty() {
                    continue;
                }
                let Node::Aggregate { union, .. } = g.node(elem) else {
                    continue;
                };
                let step = match (member.is_empty(), ordinal) {
                    (false, _) => member.to_string(),
                    (true, 0) => format!("@{offset}"),
                    (true, n) => format!("@{offset}:{n}"),
                };
                let parent_path = names.path[parent].as_deref().unwrap_or(&names.name[parent]);
                let path = format!("{parent_path}.{step}");
                let name = format!("(anon {} at {path})", keyword(union));
                let slot = slot as usize;
                names.name[slot] = name;
                names.path[slot] = Some(path);
                queue.push(slot as u32);
            }
        }
        for (slot, &id) in ids.iter().enumerate() {
            if names.name[slot].is_empty() {
                let union = matches!(g.node(id), Node::Aggregate { union: true, .. });
                let name = format!("(anon {} #{id})", keyword(union));
                names.name[slot] = name;
            }
        }
        names
    }

    /// How a member refers to the aggregate in `slot`: `struct foo`,
    /// `atomic_t`, `(anon ...)`.
    fn key(&self, slot: usize, union: bool) -> String {
        match self.kind[slot] {
            NameKind::Tag => {
                let (keyword, name) = (keyword(union), &self.name[slot]);
                let mut key = String::with_capacity(keyword.len() + 1 + name.len());
                key.push_str(keyword);
                key.push(' ');
                key.push_str(name);
                key
            }
            NameKind::Typedef | NameKind::Anonymous => self.name[slot].clone(),
        }
    }
}

/// Every aggregate, in slot order, and for each member the slot of the
/// aggregate it embeds (or [`NO_TARGET`]), flattened.
///
/// Most of the load time is here, in allocating the members' strings.
/// Splitting the work over threads did not pay on a loaded machine (each
/// thread's allocator arena faults in fresh pages), so it runs on one.
fn materialize_all(aligner: &Aligner<'_, '_>, names: &Names) -> (Vec<Aggregate>, Vec<u32>) {
    let g = aligner.graph();
    let ids = aligner.ids();
    let mut texts = TypeTexts::new(g);
    let mut aggregates = Vec::with_capacity(ids.len());
    let mut targets = Vec::with_capacity(g.members.len());
    for &id in ids {
        if let Some(agg) = materialize(aligner, &mut texts, names, id, &mut targets) {
            aggregates.push(agg);
        }
    }
    (aggregates, targets)
}

/// The aggregate `id`; pushes, for each member, the slot of the aggregate it
/// embeds (or [`NO_TARGET`]) to `targets`.
fn materialize(
    aligner: &Aligner<'_, '_>,
    texts: &mut TypeTexts,
    names: &Names,
    id: TypeId,
    targets: &mut Vec<u32>,
) -> Option<Aggregate> {
    let g = aligner.graph();
    let slot_of = aligner.slot_of();
    let Node::Aggregate {
        union,
        size,
        members,
        ..
    } = g.node(id)
    else {
        return None;
    };
    let facts = aligner.facts(id);
    let attrs = aligner.member_attrs(id);
    let raw = g.members_of(members);
    let mut out = Vec::with_capacity(raw.len());
    for (i, m) in raw.iter().enumerate() {
        let size = aligner.size_of(m.ty);
        let (elem, count) = aligner.element(m.ty);
        let target = slot_of.get(elem as usize).copied().unwrap_or(NO_TARGET);
        let bitfield = m.bit_size > 0;
        let offset = if bitfield && size > 0 {
            m.bit_offset / (size * 8) * size
        } else {
            m.bit_offset / 8
        };
        let attr = attrs.get(i).copied().unwrap_or(0);
        out.push(Member {
            name: g.name(m.name).to_string(),
            ty: texts.get(g, m.ty).to_string(),
            offset,
            bit_offset: bitfield.then_some(m.bit_offset),
            bit_size: bitfield.then_some(u64::from(m.bit_size)),
            size,
            align: aligner.align_known(m.ty),
            attr_align: (attr > 1).then_some(attr),
            aggregate: (target != NO_TARGET).then(|| {
                let union = matches!(g.node(elem), Node::Aggregate { union: true, .. });
                names.key(target as usize, union)
            }),
            count,
        });
        targets.push(target);
    }
    let slot = slot_of[id as usize] as usize;
    Some(Aggregate {
        name: names.name[slot].clone(),
        name_kind: names.kind[slot],
        kind: if union {
            AggregateKind::Union
        } else {
            AggregateKind::Struct
        },
        size,
        align: facts.map_or(1, |f| f.align),
        members: out,
        packed: facts.is_some_and(|f| f.packed),
        attr_align: facts.and_then(|f| (f.own > 1).then_some(f.own)),
    })
}

/// C text of member types, rendered once per type.
struct TypeTexts {
    /// Index in `texts` + 1 for each type id; 0 when not rendered yet.
    slot: Vec<u32>,
    texts: Vec<String>,
    scratch: String,
}

impl TypeTexts {
    fn new(g: &TypeGraph<'_>) -> Self {
        TypeTexts {
            slot: vec![0; g.nodes.len()],
            texts: Vec::new(),
            scratch: String::new(),
        }
    }

    fn get(&mut self, g: &TypeGraph<'_>, id: TypeId) -> &str {
        let slot = self.slot.get(id as usize).copied().unwrap_or(0);
        if slot > 0 {
            return &self.texts[slot as usize - 1];
        }
        let mut text = String::new();
        write_type(g, id, &mut text, &mut self.scratch);
        self.texts.push(text);
        if let Some(s) = self.slot.get_mut(id as usize) {
            *s = self.texts.len() as u32;
        }
        self.texts.last().map_or("", String::as_str)
    }
}

/// Drops aggregates identical to an earlier one (DWARF repeats types in every
/// unit) with their `targets` (flattened per aggregate and member); returns
/// the new slot of every old slot and remaps the targets.
fn dedupe(aggregates: &mut Vec<Aggregate>, targets: &mut Vec<u32>) -> Vec<u32> {
    let mut first: HashMap<&Aggregate, u32> = HashMap::with_capacity(aggregates.len());
    let mut remap = Vec::with_capacity(aggregates.len());
    let mut keep = Vec::with_capacity(aggregates.len());
    for agg in aggregates.iter() {
        let next = first.len() as u32;
        let slot = *first.entry(agg).or_insert(next);
        keep.push(slot == next);
        remap.push(slot);
    }
    drop(first);
    let mut kept_targets = Vec::with_capacity(targets.len());
    let mut at = 0;
    for (agg, &kept) in aggregates.iter().zip(&keep) {
        let n = agg.members.len();
        if kept {
            let own = targets.get(at..at + n).unwrap_or(&[]);
            kept_targets.extend(
                own.iter()
                    .map(|&t| if t == NO_TARGET { t } else { remap[t as usize] }),
            );
        }
        at += n;
    }
    *targets = kept_targets;
    let mut keep_iter = keep.iter();
    aggregates.retain(|_| *keep_iter.next().unwrap_or(&false));
    remap
}

/// Gives every synthetic name that repeats (two different structs with one
/// tag give their anonymous members the same path) a `#INDEX` suffix, and
/// renames the members that embed them (`targets` as in [`dedupe`]).
fn rename_repeated_synthetic(aggregates: &mut [Aggregate], targets: &[u32]) {
    let mut seen = HashSet::new();
    let mut renamed: HashMap<u32, String> = HashMap::new();
    for (slot, agg) in aggregates.iter_mut().enumerate() {
        if agg.name_kind == NameKind::Anonymous && !seen.insert(agg.name.clone()) {
            let base = agg.name.trim_end_matches(')');
            agg.name = format!("{base} #{slot})");
            renamed.insert(slot as u32, agg.name.clone());
        }
    }
    if renamed.is_empty() {
        return;
    }
    let mut at = 0;
    for agg in aggregates.iter_mut() {
        for m in &mut agg.members {
            if let Some(name) = targets.get(at).and_then(|t| renamed.get(t)) {
                m.aggregate = Some(name.clone());
            }
            at += 1;
        }
    }
}

fn strip_qualifiers(g: &TypeGraph<'_>, mut id: TypeId) -> TypeId {
    for _ in 0..64 {
        match g.node(id) {
            Node::Qual { to, .. } => id = to,
            _ => return id,
        }
    }
    0
}

fn strip_typedefs(g: &TypeGraph<'_>, mut id: TypeId) -> TypeId {
    for _ in 0..64 {
        match g.node(id) {
            Node::Qual { to, .. } | Node::Typedef { to, .. } => id = to,
            _ => return id,
        }
    }
    0
}
