//! A concrete layout of a [`Struct`]: an offset for every field, a size and an
//! alignment, and the cache-line geometry it is judged under.
//!
//! Layouts come from front-ends (the layout as declared) or from the solver (a
//! proposal). Either way, only [`crate::verify`] turns one into a
//! [`crate::verify::VerifiedLayout`], the only kind emitters accept for proposals.

use crate::model::{Placement, Struct};
use serde::Serialize;

/// One field placed at an offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Index into `Struct::fields`.
    pub field: usize,
    pub offset: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Slots in increasing offset order.
    pub slots: Vec<Slot>,
    pub size: u64,
    pub align: u64,
    /// Cache line size.
    pub line: u64,
    pub placement: Placement,
}

impl Layout {
    /// The layout as declared, from the fields' `original_offset`s.
    ///
    /// Returns `None` when a field has no original offset.
    pub fn declared(
        s: &Struct,
        size: u64,
        align: u64,
        line: u64,
        placement: Placement,
    ) -> Option<Layout> {
        let mut slots = s
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                f.original_offset.map(|o| Slot {
                    field: i,
                    offset: o,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        slots.sort_by_key(|sl| (sl.offset, sl.field));
        Some(Layout {
            slots,
            size,
            align,
            line,
            placement,
        })
    }

    /// The byte offset of the struct's start inside its line-aligned container
    /// used for numbering lines in reports: the `--offset` in phase mode, 0 otherwise.
    pub fn base_offset(&self) -> u64 {
        self.placement.first_offset().unwrap_or(0)
    }

    /// Each container offset of the placement with its phase, as the
    /// summary and the changelog say it: `offset 136 (phase 8)`.
    pub fn offsets_with_phases(&self) -> Vec<String> {
        self.placement
            .offsets()
            .iter()
            .map(|o| format!("offset {o} (phase {})", o % self.line))
            .collect()
    }

    /// Every phase (start offset modulo the line size) at which an instance of
    /// this layout can sit: the given one in phase mode, every multiple of the
    /// alignment below the line size otherwise.
    pub fn phases(&self) -> Vec<u64> {
        phases(self.placement, self.align, self.line)
    }

    /// Line number (from the container's start) of struct byte `byte` at the
    /// report placement.
    pub fn line_of(&self, byte: u64) -> u64 {
        (self.base_offset() + byte) / self.line
    }

    pub fn slot_of(&self, field: usize) -> Option<&Slot> {
        self.slots.iter().find(|s| s.field == field)
    }

    /// Offsets indexed by field index.
    pub fn offsets_by_field(&self, n_fields: usize) -> Vec<Option<u64>> {
        let mut v = vec![None; n_fields];
        for sl in &self.slots {
            if sl.field < n_fields {
                v[sl.field] = Some(sl.offset);
            }
        }
        v
    }
}

/// The set of phases of a placement; see [`Layout::phases`].
pub fn phases(placement: Placement, align: u64, line: u64) -> Vec<u64> {
    match placement {
        Placement::Aligned => {
            let step = align.clamp(1, line);
            (0..line).step_by(step as usize).collect()
        }
        _ => {
            let mut v: Vec<u64> = placement.offsets().iter().map(|o| o % line).collect();
            v.sort_unstable();
            v.dedup();
            v
        }
    }
}

/// A cache line that holds bytes of both a lockless field and a field it must
/// not share with (read-mostly, or lockless of another writer group).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LineConflict {
    /// Line number counted from the container start at this phase.
    pub line: u64,
    /// The phase at which the conflict happens.
    pub phase: u64,
    pub lockless: Vec<String>,
    pub read_mostly: Vec<String>,
    /// Lockless fields of another writer group on the same line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other_group: Vec<String>,
    /// The lock words (`Field::lock_word`) among `lockless` and
    /// `other_group`: locks whose own state every locker writes, judged as
    /// lockless writers of their own groups.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lock_words: Vec<String>,
}

/// Lines on which the hard rule is broken when the struct starts at
/// `phase` (numbered as if the container starts `base - phase` bytes... i.e.
/// line numbers are `(base + byte) / line` when `phase == base % line`).
///
/// Zero-size fields occupy no bytes and never conflict, except a trailing
/// flexible array ([`Struct::flexible_tail`]): its elements start at its
/// offset, so it holds the line of that offset (as for the verifier).
pub fn hard_conflicts_at(s: &Struct, layout: &Layout, phase: u64, base: u64) -> Vec<LineConflict> {
    let line = layout.line;
    // Container offset that has the requested phase and is closest to `base`.
    let start = base - base % line + phase;
    let tail = s.flexible_tail();
    // Only a line where some field starts or ends can hold two fields: the
    // lines inside a big array are its alone. Visiting just those keeps the
    // work proportional to the fields, not to the bytes.
    let span = |sl: &Slot| {
        let size = if Some(sl.field) == tail {
            1
        } else {
            s.fields[sl.field].size
        };
        (size > 0).then(|| {
            (
                (start + sl.offset) / line,
                (start + sl.offset + size - 1) / line,
            )
        })
    };
    let mut per_line: std::collections::BTreeMap<u64, Vec<usize>> = Default::default();
    for (first, last) in layout.slots.iter().filter_map(span) {
        per_line.entry(first).or_default();
        per_line.entry(last).or_default();
    }
    for sl in &layout.slots {
        if let Some((first, last)) = span(sl) {
            for (_, fields) in per_line.range_mut(first..=last) {
                fields.push(sl.field);
            }
        }
    }
    // A lock word counts as a lockless writer of its own group here.
    let rules: Vec<std::borrow::Cow<'_, crate::model::Access>> =
        s.fields.iter().map(|f| f.rule_access()).collect();
    let group = |i: usize| rules[i].group().map(str::to_owned);
    let mut out = Vec::new();
    for (l, fields) in per_line {
        let lockless: Vec<usize> = fields
            .iter()
            .copied()
            .filter(|&i| rules[i].is_lockless())
            .collect();
        if lockless.is_empty() {
            continue;
        }
        let read_mostly: Vec<String> = fields
            .iter()
            .filter(|&&i| s.fields[i].access.is_read_mostly())
            .map(|&i| s.fields[i].name.clone())
            .collect();
        let first_group = group(lockless[0]);
        let mixed_groups = lockless.iter().any(|&i| group(i) != first_group);
        if read_mostly.is_empty() && !mixed_groups {
            continue;
        }
        let (lockless_names, other_group) = if mixed_groups {
            let (a, b): (Vec<usize>, Vec<usize>) =
                lockless.iter().partition(|&&i| group(i) == first_group);
            (names(s, &a), names(s, &b))
        } else {
            (names(s, &lockless), Vec::new())
        };
        let lock_words: Vec<String> = fields
            .iter()
            .filter(|&&i| s.fields[i].lock_word && rules[i].is_lockless())
            .map(|&i| s.fields[i].name.clone())
            .collect();
        out.push(LineConflict {
            line: l,
            phase,
            lockless: lockless_names,
            read_mostly,
            other_group,
            lock_words,
        });
    }
    out
}

fn names(s: &Struct, idx: &[usize]) -> Vec<String> {
    idx.iter().map(|&i| s.fields[i].name.clone()).collect()
}

/// Conflicts to report for a layout: at the given placement in phase mode; in
/// aligned mode at phase 0 if there are any, else at the first phase that has any.
///
/// With several containers, the conflicts at each one's phase, its lines
/// counted from its own start.
pub fn reported_conflicts(s: &Struct, layout: &Layout) -> Vec<LineConflict> {
    if let Placement::Offsets(o) = layout.placement {
        let mut all: Vec<LineConflict> = Vec::new();
        for &base in o.as_slice() {
            let phase = base % layout.line.max(1);
            if all.iter().any(|c| c.phase == phase) {
                continue;
            }
            all.extend(hard_conflicts_at(s, layout, phase, base));
        }
        return all;
    }
    let base = layout.base_offset();
    for phase in layout.phases() {
        let c = hard_conflicts_at(s, layout, phase, base);
        if !c.is_empty() {
            return c;
        }
    }
    Vec::new()
}
