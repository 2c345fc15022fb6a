//! Type graph → [`TypeDb`]: names anonymous aggregates, renders member types,
//! applies the alignment rules of [`super::align`], drops DWARF's repeats.

use super::align::Aligner;
use super::graph::{Node, TypeGraph, TypeId};
use super::render::{keyword, type_text};
use super::{Aggregate, AggregateKind, KeySpace, Member, NameKind, TypeDb, NO_TARGET};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Builds the database of every struct and union in `g`.
pub(crate) fn build(g: &TypeGraph<'_>, source: &Path) -> TypeDb {
    let mut aligner = Aligner::new(g);
    let ids: Vec<TypeId> = (0..g.nodes.len() as TypeId)
        .filter(|&id| matches!(g.node(id), Node::Aggregate { .. }))
        .collect();
    let mut slot_of = vec![NO_TARGET; g.nodes.len()];
    for (slot, &id) in ids.iter().enumerate() {
        slot_of[id as usize] = slot as u32;
    }
    let names = Names::assign(g, &aligner, &ids, &slot_of);

    let mut aggregates = Vec::with_capacity(ids.len());
    let mut targets = Vec::with_capacity(g.members.len());
    let mut texts = TypeTexts::new(g);
    for &id in &ids {
        if let Some(agg) = materialize(&mut aligner, &mut texts, &names, &slot_of, id, &mut targets)
        {
            aggregates.push(agg);
        }
    }
    let mut keys = names.keys(g, &ids, &slot_of);
    if g.may_repeat {
        let remap = dedupe(&mut aggregates, &mut targets);
        for key in &mut keys {
            key.2 = remap[key.2 as usize];
        }
    }
    rename_repeated_synthetic(&mut aggregates, &targets);
    for (slot, agg) in aggregates.iter().enumerate() {
        if agg.name_kind == NameKind::Anonymous {
            keys.push((KeySpace::Other, agg.name.clone(), slot as u32));
        }
    }
    TypeDb::assemble(
        source.to_path_buf(),
        aggregates,
        targets,
        keys,
        g.infer_align,
        g.pointer_size,
    )
}

/// Display names of the aggregates (by slot) and what lookups should find.
struct Names {
    /// Name of each aggregate slot.
    name: Vec<String>,
    /// Member path of anonymous aggregates named after their parent
    /// (`page.@8`), used to name their own anonymous children; `None` where
    /// it is the name.
    path: Vec<Option<String>>,
    /// How a member refers to each slot (`struct foo`, `atomic_t`, `(anon ...)`).
    key: Vec<String>,
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
            key: vec![String::new(); n],
            kind: vec![NameKind::Anonymous; n],
        };
        let mut queue: Vec<u32> = Vec::with_capacity(n);
        for (slot, &id) in ids.iter().enumerate() {
            if let Node::Aggregate { union, name, .. } = g.node(id) {
                let tag = g.name(name);
                if !tag.is_empty() {
                    names.name[slot] = tag.to_string();
                    names.key[slot] = format!("{} {tag}", keyword(union));
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
            names.key[slot] = typedef.to_string();
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
                names.key[slot] = name.clone();
                names.name[slot] = name;
                names.path[slot] = Some(path);
                queue.push(slot as u32);
            }
        }
        for (slot, &id) in ids.iter().enumerate() {
            if names.name[slot].is_empty() {
                let union = matches!(g.node(id), Node::Aggregate { union: true, .. });
                let name = format!("(anon {} #{id})", keyword(union));
                names.key[slot] = name.clone();
                names.name[slot] = name;
            }
        }
        names
    }

    /// Lookup keys of tags and typedefs, in priority order.
    fn keys(
        &self,
        g: &TypeGraph<'_>,
        ids: &[TypeId],
        slot_of: &[u32],
    ) -> Vec<(KeySpace, String, u32)> {
        let mut keys = Vec::with_capacity(ids.len() * 2);
        for (slot, &id) in ids.iter().enumerate() {
            if let Node::Aggregate { union, name, .. } = g.node(id) {
                let tag = g.name(name);
                if !tag.is_empty() {
                    let space = if union {
                        KeySpace::Union
                    } else {
                        KeySpace::Struct
                    };
                    keys.push((space, tag.to_string(), slot as u32));
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
                keys.push((KeySpace::Other, typedef.to_string(), slot));
            }
        }
        keys
    }
}

/// The aggregate `id`; pushes, for each member, the slot of the aggregate it
/// embeds (or [`NO_TARGET`]) to `targets`.
fn materialize(
    aligner: &mut Aligner<'_, '_>,
    texts: &mut TypeTexts,
    names: &Names,
    slot_of: &[u32],
    id: TypeId,
    targets: &mut Vec<u32>,
) -> Option<Aggregate> {
    let g = aligner.graph();
    let Node::Aggregate {
        union,
        size,
        members,
        ..
    } = g.node(id)
    else {
        return None;
    };
    let facts = aligner.aggregate(id);
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
        let attr = aligner.member_attrs(id).get(i).copied().unwrap_or(0);
        out.push(Member {
            name: g.name(m.name).to_string(),
            ty: texts.get(g, m.ty).to_string(),
            offset,
            bit_offset: bitfield.then_some(m.bit_offset),
            bit_size: bitfield.then_some(u64::from(m.bit_size)),
            size,
            align: aligner.align_of(m.ty),
            attr_align: (attr > 1).then_some(attr),
            aggregate: (target != NO_TARGET).then(|| names.key[target as usize].clone()),
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
}

impl TypeTexts {
    fn new(g: &TypeGraph<'_>) -> Self {
        TypeTexts {
            slot: vec![0; g.nodes.len()],
            texts: Vec::new(),
        }
    }

    fn get(&mut self, g: &TypeGraph<'_>, id: TypeId) -> &str {
        let Some(&slot) = self.slot.get(id as usize) else {
            self.texts.push(type_text(g, id));
            return self.texts.last().map_or("", String::as_str);
        };
        if slot == 0 {
            self.texts.push(type_text(g, id));
            self.slot[id as usize] = self.texts.len() as u32;
        }
        &self.texts[self.slot[id as usize] as usize - 1]
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
