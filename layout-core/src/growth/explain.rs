//! Why an aggregate's size changed: compares its old and new layouts member
//! by member (matched by name) and splits the change into member growth,
//! padding added (holes, moves, tail padding) and padding absorbed.
//!
//! The size change is the sum of the members' size changes and the padding
//! changes; each padding change becomes one [`Part`], in offset order, with
//! the tail padding last.
//!
//! Each member's embedded aggregate is looked up in the type database once
//! (in [`places`]); its label and its type change are read from there.

use super::relayout::member_label;
use super::{Embedded, Padding, Part, Shape};
use crate::place::align_up;
use crate::typedb::{Aggregate, AggregateKind, TypeDb};
use std::collections::HashMap;

/// What changed in one aggregate and why.
pub(crate) struct Explained {
    pub parts: Vec<Part>,
    pub embeds: Vec<Embedded>,
    pub padding: Padding,
    pub why: Vec<String>,
}

/// One member's place: its bytes, and the padding right before it.
struct Place<'db> {
    key: String,
    label: String,
    /// The aggregate the member embeds by value, if any.
    target: Option<&'db Aggregate>,
    index: usize,
    start: u64,
    end: u64,
    hole_before: u64,
    /// The member that ends last before it ("" at the start).
    after: String,
}

/// Members in offset order with the holes between them.
fn places<'db>(db: &'db TypeDb, agg: &Aggregate) -> (Vec<Place<'db>>, u64) {
    let mut anon = 0;
    let mut list: Vec<Place> = agg
        .members
        .iter()
        .enumerate()
        .map(|(index, m)| {
            let key = if m.name.is_empty() {
                anon += 1;
                format!("#anon{anon}")
            } else {
                m.name.clone()
            };
            let r = m.byte_range();
            let target = db.member_aggregate(agg, index);
            Place {
                key,
                label: label(agg, index, target),
                target,
                index,
                start: r.start,
                end: r.end,
                hole_before: 0,
                after: String::new(),
            }
        })
        .collect();
    list.sort_by_key(|p| (p.start, p.index));
    let mut end = 0;
    let mut last = String::new();
    for p in &mut list {
        p.hole_before = p.start.saturating_sub(end);
        p.after = last.clone();
        if p.end >= end {
            end = p.end;
            last = p.label.clone();
        }
    }
    (list, end)
}

/// A member's name for reports; an anonymous union or struct (`target`) is
/// named after its members (`swap/memsw`) when they have names.
fn label(agg: &Aggregate, index: usize, target: Option<&Aggregate>) -> String {
    let m = &agg.members[index];
    if m.name.is_empty() {
        if let Some(inner) = target {
            let names: Vec<&str> = inner.members.iter().map(|i| i.name.as_str()).collect();
            if !names.is_empty() && names.len() <= 4 && names.iter().all(|n| !n.is_empty()) {
                return names.join("/");
            }
        }
    }
    member_label(m)
}

/// The type change of the member at `place`, if its type is among `changed`.
fn change_of(
    db: &TypeDb,
    place: &Place,
    changed: &HashMap<usize, Shape>,
) -> Option<(String, Shape, Shape)> {
    let target = place.target?;
    let new = *changed.get(&db.index_of(target)?)?;
    Some((
        target.display_name(),
        Shape {
            size: target.size,
            align: target.align,
        },
        new,
    ))
}

/// Compares `old` (an aggregate of `db`) with its new layout `new`;
/// `changed` holds the new shapes of the aggregates of `db` that changed.
pub(crate) fn explain(
    db: &TypeDb,
    old: &Aggregate,
    new: &Aggregate,
    changed: &HashMap<usize, Shape>,
) -> Explained {
    let c = Comparison::new(db, old, new, changed);
    let mut acc = Accounts::default();
    c.members(&mut acc);
    c.padding(&mut acc);
    c.tail(&mut acc);
    Explained {
        parts: acc.parts,
        embeds: acc.embeds,
        padding: Padding {
            absorbed: acc.absorbed,
            added: acc.added,
            tail_old: c.old.size.saturating_sub(c.old_end),
            tail_new: c.new.size.saturating_sub(c.new_end),
            member_growth: acc.growth_in,
        },
        why: acc.why,
    }
}

/// An aggregate's old and new layouts, matched member by member.
struct Comparison<'a> {
    old: &'a Aggregate,
    new: &'a Aggregate,
    old_places: Vec<Place<'a>>,
    new_places: Vec<Place<'a>>,
    old_end: u64,
    new_end: u64,
    /// Old member index -> its place (places are in offset order).
    old_place_of: Vec<usize>,
    /// Old member index -> the change of the type it embeds.
    old_change: Vec<Option<(String, Shape, Shape)>>,
    /// The members are the same, in the same order.
    same_order: bool,
    union: bool,
}

/// What the comparison found so far.
#[derive(Default)]
struct Accounts {
    parts: Vec<Part>,
    embeds: Vec<Embedded>,
    why: Vec<String>,
    added: u64,
    absorbed: u64,
    growth_in: i64,
}

impl<'a> Comparison<'a> {
    fn new(
        db: &'a TypeDb,
        old: &'a Aggregate,
        new: &'a Aggregate,
        changed: &HashMap<usize, Shape>,
    ) -> Self {
        let (old_places, old_end) = places(db, old);
        let (new_places, new_end) = places(db, new);
        let mut old_place_of = vec![0; old.members.len()];
        for (k, p) in old_places.iter().enumerate() {
            old_place_of[p.index] = k;
        }
        let old_change = (0..old.members.len())
            .map(|i| change_of(db, &old_places[old_place_of[i]], changed))
            .collect();
        let same_order = old.members.len() == new.members.len()
            && old
                .members
                .iter()
                .zip(&new.members)
                .all(|(a, b)| a.name == b.name);
        Comparison {
            old,
            new,
            old_places,
            new_places,
            old_end,
            new_end,
            old_place_of,
            old_change,
            same_order,
            union: old.kind == AggregateKind::Union,
        }
    }

    fn old_by_key(&self) -> HashMap<&str, &Place<'a>> {
        self.old_places
            .iter()
            .map(|p| (p.key.as_str(), p))
            .collect()
    }

    fn new_by_key(&self) -> HashMap<&str, &Place<'a>> {
        self.new_places
            .iter()
            .map(|p| (p.key.as_str(), p))
            .collect()
    }

    /// Members: embedded types that changed, and members added, removed,
    /// resized.
    fn members(&self, acc: &mut Accounts) {
        let (old, new) = (self.old, self.new);
        let (old_places, new_places) = (&self.old_places, &self.new_places);
        let (old_place_of, old_change) = (&self.old_place_of, &self.old_change);
        let (old_by_key, new_by_key) = (self.old_by_key(), self.new_by_key());
        let union = self.union;
        let mut grown_embedded: Vec<String> = Vec::new();
        let mut grown_bytes = 0i64;
        let mut instances = 0u64;
        let (parts, embeds, why) = (&mut acc.parts, &mut acc.embeds, &mut acc.why);
        let growth_in = &mut acc.growth_in;
        for (i, m) in old.members.iter().enumerate() {
            let key = &old_places[old_place_of[i]].key;
            let Some(np) = new_by_key.get(key.as_str()) else {
                parts.push(Part::Removed {
                    member: old_places[old_place_of[i]].label.clone(),
                    size: m.size,
                });
                *growth_in -= m.size as i64;
                continue;
            };
            let nm = &new.members[np.index];
            let grew = nm.size as i64 - m.size as i64;
            *growth_in += grew;
            let op = old_by_key[key.as_str()];
            if let Some((ty, was, now)) = old_change[i].clone() {
                if grew != 0 {
                    grown_embedded.push(op.label.clone());
                    grown_bytes += grew;
                    instances += m.count.max(1);
                }
                let moved = nm.offset as i64 - m.offset as i64;
                let hole_grew = np.hole_before > op.hole_before;
                let reason = if moved == 0 {
                    None
                } else if hole_grew && now.align > was.align {
                    Some(format!(
                        "{ty} is now {}-byte aligned (was {})",
                        now.align, was.align
                    ))
                } else if hole_grew {
                    Some(format!(
                        "padding before it grew by {} bytes",
                        np.hole_before - op.hole_before
                    ))
                } else if moved > 0 {
                    Some("members before it grew".to_string())
                } else {
                    Some("members before it shrank".to_string())
                };
                if hole_grew && now.align > was.align && moved != 0 {
                    why.push(format!(
                    "{}.{}: {ty} is now {}-byte aligned (was {}), so it moves to the next multiple of {}",
                    old.name, op.label, now.align, was.align, now.align
                ));
                }
                embeds.push(Embedded {
                    member: op.label.clone(),
                    ty,
                    count: m.count,
                    old_offset: m.offset,
                    new_offset: nm.offset,
                    moved,
                    old_align: was.align,
                    new_align: now.align,
                    reason,
                });
            } else if grew != 0 {
                parts.push(Part::Resized {
                    member: op.label.clone(),
                    old: m.size,
                    new: nm.size,
                });
            }
        }
        for p in new_places.iter() {
            if !old_by_key.contains_key(p.key.as_str()) {
                let size = new.members[p.index].size;
                parts.push(Part::Added {
                    member: p.label.clone(),
                    size,
                });
                *growth_in += size as i64;
            }
        }
        // A union's members overlap: their growth does not add up.
        if !union && (grown_embedded.len() > 1 || instances > 1) {
            parts.insert(
                0,
                Part::Embedded {
                    members: grown_embedded,
                    bytes: grown_bytes,
                },
            );
        }
    }

    /// Padding between members: holes added or absorbed, members moved, a
    /// union's room.
    fn padding(&self, acc: &mut Accounts) {
        let (old, new) = (self.old, self.new);
        let (old_places, new_places) = (&self.old_places, &self.new_places);
        let (old_by_key, new_by_key) = (self.old_by_key(), self.new_by_key());
        let (old_place_of, old_change) = (&self.old_place_of, &self.old_change);
        let (same_order, union) = (self.same_order, self.union);
        let (old_end, new_end) = (self.old_end, self.new_end);
        let (parts, why) = (&mut acc.parts, &mut acc.why);
        let (added, absorbed) = (&mut acc.added, &mut acc.absorbed);
        if union {
            let widest_growth = old
                .members
                .iter()
                .enumerate()
                .filter_map(|(i, m)| {
                    let key = &old_places[old_place_of[i]].key;
                    let np = new_by_key.get(key.as_str())?;
                    Some(new.members[np.index].byte_range().end as i64 - m.byte_range().end as i64)
                })
                .max()
                .unwrap_or(0);
            let room = widest_growth - (new_end as i64 - old_end as i64);
            if room > 0 {
                parts.push(Part::UnionRoom { bytes: room as u64 });
                *absorbed += room as u64;
            }
        } else {
            for np in new_places.iter() {
                let Some(op) = old_by_key.get(np.key.as_str()) else {
                    if np.hole_before > 0 {
                        parts.push(Part::Hole {
                            member: np.label.clone(),
                            bytes: np.hole_before,
                        });
                        *added += np.hole_before;
                    }
                    continue;
                };
                if np.hole_before > op.hole_before {
                    let bytes = np.hole_before - op.hole_before;
                    *added += bytes;
                    let (from, to) = (old.members[op.index].offset, new.members[np.index].offset);
                    let nm = &new.members[np.index];
                    let align = nm.align.max(nm.attr_align.unwrap_or(1));
                    let embeds_change = old_change[op.index].is_some();
                    if same_order && from != to && !embeds_change && align > 1 {
                        why.push(format!(
                        "{}.{}: it is {align}-byte aligned, so it moves to the next multiple of {align}",
                        old.name, np.label
                    ));
                    }
                    parts.push(if !same_order {
                        Part::Hole {
                            member: np.label.clone(),
                            bytes,
                        }
                    } else if from != to {
                        Part::Moves {
                            member: np.label.clone(),
                            from,
                            to,
                            bytes,
                        }
                    } else {
                        Part::PaddingGrows {
                            after: np.after.clone(),
                            bytes,
                        }
                    });
                } else if np.hole_before < op.hole_before {
                    let bytes = op.hole_before - np.hole_before;
                    *absorbed += bytes;
                    parts.push(Part::Absorbed {
                        after: op.after.clone(),
                        bytes,
                    });
                }
            }
            for op in old_places.iter() {
                if !new_by_key.contains_key(op.key.as_str()) && op.hole_before > 0 {
                    *absorbed += op.hole_before;
                    parts.push(Part::Absorbed {
                        after: op.after.clone(),
                        bytes: op.hole_before,
                    });
                }
            }
        }
    }

    /// Tail padding, and why the size rounds as it does.
    fn tail(&self, acc: &mut Accounts) {
        let (old, new) = (self.old, self.new);
        let (old_end, new_end) = (self.old_end, self.new_end);
        let delta = new.size as i64 - old.size as i64;
        let (parts, why) = (&mut acc.parts, &mut acc.why);
        let (added, absorbed) = (&mut acc.added, &mut acc.absorbed);
        let tail_old = old.size.saturating_sub(old_end);
        let tail_new = new.size.saturating_sub(new_end);
        if tail_new > tail_old {
            *added += tail_new - tail_old;
            parts.push(Part::TailGrows {
                align: new.align,
                bytes: tail_new - tail_old,
            });
            if new.align != old.align {
                why.push(format!(
                "{}: its alignment rises from {} to {}, so its size rounds up to a multiple of {}",
                old.name, old.align, new.align, new.align
            ));
            } else {
                why.push(format!(
                    "{}: its size rounds up to a multiple of its alignment {}",
                    old.name, new.align
                ));
            }
        } else if tail_new < tail_old {
            *absorbed += tail_old - tail_new;
            parts.push(Part::TailAbsorbed {
                bytes: tail_old - tail_new,
            });
        }
        let absorbs = parts
            .iter()
            .any(|p| matches!(p, Part::Absorbed { .. } | Part::TailAbsorbed { .. }));
        if absorbs
            && new.align == old.align
            && new.align >= 64
            && delta != 0
            && delta % new.align as i64 == 0
        {
            let rounded = align_up(new_end, new.align) == new.size;
            if rounded {
                why.push(format!(
                    "{} is {}-byte aligned, so its size changes in steps of {}",
                    old.name, new.align, new.align
                ));
            }
        }
    }
}
