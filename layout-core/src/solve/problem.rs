//! The struct as the solver sees it: per field its size, alignment, pin, and
//! two labels derived from its access class.
//!
//! - **colour** (hard rule): two fields of different non-zero colours must not
//!   share a line at any allowed phase. Read-mostly fields get colour 1, each
//!   lockless writer group its own colour; with `separate_soft`, locked fields
//!   join colour 1 (they must then avoid lockless fields, and may sit with
//!   read-mostly ones). Everything else has colour 0 and is free. Every pair
//!   of distinct non-zero colours conflicts, so the rule is a line colouring.
//!   The colours are the access vocabulary's [`colouring`] of each class.
//! - **class** (soft costs): read-mostly, each lockless group, each lock, and
//!   cold (class 0). Lines holding one class plus cold fields cost nothing.
//!
//! Zero-size fields hold no bytes, so they get colour 0 and class 0 — except
//! a trailing flexible array member ([`Problem::tail`]): its elements live
//! from its offset on, so it keeps its colour, is laid last, and must not
//! start on a line holding bytes of a conflicting colour.
//!
//! - **segment**: the author's order constraints ([`crate::model::Field::segment`]):
//!   every layout keeps the members in nondecreasing segment order.

use super::SolveError;
use crate::class::{colouring, Class, Colouring, Role};
use crate::model::{PathUse, Struct};
use std::collections::BTreeMap;

/// Colour 0: conflicts with nothing.
pub(crate) const FREE: u32 = 0;
/// The colour of every class the vocabulary colours [`Colouring::Shared`]
/// (read-mostly; locked too under `separate_soft`).
pub(crate) const SHARED: u32 = 1;
/// The colours of [`Colouring::PerParam`] classes (each lockless writer
/// group) start here.
pub(crate) const FIRST_PER_PARAM: u32 = 2;

/// What a field contributes to the soft costs of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SoftRole {
    Read,
    Lockless,
    /// Locked by the lock with this index.
    Locked(u32),
    Cold,
}

pub(crate) struct Problem {
    pub n: usize,
    pub size: Vec<u64>,
    pub align: Vec<u64>,
    pub color: Vec<u32>,
    pub class: Vec<u32>,
    pub role: Vec<SoftRole>,
    /// Required offset of pinned fields.
    pub pin: Vec<Option<u64>>,
    /// Unpinned fields, in declaration order.
    pub free: Vec<usize>,
    /// Pinned fields, by increasing offset.
    pub pinned: Vec<usize>,
    pub natural_align: u64,
    /// Sum of all field sizes.
    pub total: u64,
    /// Bytes of fields with each colour (index = colour).
    pub color_bytes: Vec<u64>,
    /// Bytes of read-mostly fields.
    pub read_bytes: u64,
    pub names: Vec<String>,
    /// Ordering constraint of each field (nondecreasing along a layout).
    pub segment: Vec<u32>,
    /// True when some segment differs from another: orders must be checked.
    pub segmented: bool,
    /// The author's order against the pinned fields, per field: the
    /// smallest offset it may take (the largest end of a pinned field of a
    /// lower segment; 0 when none) ...
    pub floor: Vec<u64>,
    /// ... and the largest end it may have (the smallest start of a pinned
    /// field of a higher segment; `u64::MAX` when none). Only unpinned
    /// fields use them.
    pub ceil: Vec<u64>,
    /// Number of hot paths.
    pub path_names: usize,
    /// Each field's hot-path uses (bytes relative to the field).
    pub uses: Vec<Vec<PathUse>>,
    /// The same uses by path: `(field, bytes)` of each non-empty one, so a
    /// path's lines are counted without looking at the other paths.
    pub by_path: Vec<Vec<(usize, std::ops::Range<u64>)>>,
    /// The hot paths' share of [`Problem::eval_work`]: their uses and their
    /// number (0 without paths).
    pub path_work: u64,
    /// A trailing flexible array member: laid after every other field.
    pub tail: Option<usize>,
}

/// Each path's non-empty uses, `(field, bytes)`, from every field's uses.
fn uses_by_path(uses: &[Vec<PathUse>], paths: usize) -> Vec<Vec<(usize, std::ops::Range<u64>)>> {
    let mut out = vec![Vec::new(); paths];
    for (f, field_uses) in uses.iter().enumerate() {
        for u in field_uses.iter().filter(|u| u.bytes.end > u.bytes.start) {
            out[u.path as usize].push((f, u.bytes.clone()));
        }
    }
    out
}

impl Problem {
    pub fn new(s: &Struct, separate_soft: bool) -> Result<Problem, SolveError> {
        let n = s.fields.len();
        if !s.min_align.is_power_of_two() && s.min_align != 0 {
            return Err(SolveError::BadField(format!(
                "struct `{}` asks for alignment {}: alignments must be powers of two",
                s.name, s.min_align
            )));
        }
        for f in &s.fields {
            if !f.align.is_power_of_two() {
                return Err(SolveError::BadField(format!(
                    "field `{}` has alignment {}: alignments must be powers of two",
                    f.name, f.align
                )));
            }
            if f.pinned {
                let Some(o) = f.original_offset else {
                    return Err(SolveError::BadField(format!(
                        "field `{}` is pinned but its original offset is unknown: give its offset or drop the pin",
                        f.name
                    )));
                };
                if o % f.align != 0 {
                    return Err(SolveError::BadField(format!(
                        "field `{}` is pinned at offset {o}, which is not a multiple of its alignment {}",
                        f.name, f.align
                    )));
                }
            }
        }
        // Colours and soft classes come from the access vocabulary: its
        // colouring of each class (free, the shared colour, or a colour per
        // parameter) and its role (what a line holding the field costs).
        // The hard rule reads a lock word as lockless in a group of its own
        // (`Field::rule_access`); its soft role stays that of a lock.
        let rules: Vec<std::borrow::Cow<'_, crate::model::Access>> =
            s.fields.iter().map(|f| f.rule_access()).collect();
        let mut per_param: BTreeMap<(Class, Option<&str>), u32> = BTreeMap::new();
        let mut locks: BTreeMap<&str, u32> = BTreeMap::new();
        for (f, rule) in s.fields.iter().zip(&rules) {
            if colouring(rule.class(), separate_soft) == Colouring::PerParam {
                let next = per_param.len() as u32;
                per_param
                    .entry((rule.class(), rule.param()))
                    .or_insert(next);
            }
            if let Some(lock) = f.access.lock() {
                let next = locks.len() as u32;
                locks.entry(lock).or_insert(next);
            }
        }
        let n_groups = per_param.len() as u32;
        let mut p = Problem {
            n,
            size: s.fields.iter().map(|f| f.size).collect(),
            align: s.fields.iter().map(|f| f.align).collect(),
            color: vec![0; n],
            class: vec![0; n],
            role: vec![SoftRole::Cold; n],
            pin: s
                .fields
                .iter()
                .map(|f| if f.pinned { f.original_offset } else { None })
                .collect(),
            free: Vec::new(),
            pinned: Vec::new(),
            natural_align: s.natural_align(),
            total: s.fields.iter().map(|f| f.size).sum(),
            color_bytes: Vec::new(),
            read_bytes: 0,
            names: s.fields.iter().map(|f| f.name.clone()).collect(),
            segment: s.fields.iter().map(|f| f.segment).collect(),
            segmented: s.fields.windows(2).any(|w| w[0].segment != w[1].segment),
            floor: vec![0; n],
            ceil: vec![u64::MAX; n],
            path_names: s.paths.len(),
            uses: s
                .fields
                .iter()
                .map(|f| {
                    f.paths
                        .iter()
                        .filter(|u| (u.path as usize) < s.paths.len())
                        .cloned()
                        .collect()
                })
                .collect(),
            by_path: Vec::new(),
            path_work: 0,
            tail: s.flexible_tail().filter(|&t| !s.fields[t].pinned),
        };
        for (i, f) in s.fields.iter().enumerate() {
            let rule = &rules[i];
            let color = match colouring(rule.class(), separate_soft) {
                Colouring::Free => FREE,
                Colouring::Shared => SHARED,
                Colouring::PerParam => FIRST_PER_PARAM + per_param[&(rule.class(), rule.param())],
            };
            let (class, role) = match (f.access.role(), f.access.lock()) {
                (Role::Reader, _) => (SHARED, SoftRole::Read),
                (Role::LocklessWriter, _) => (color, SoftRole::Lockless),
                (Role::LockedWriter, Some(lock)) => {
                    let k = locks[lock];
                    (FIRST_PER_PARAM + n_groups + k, SoftRole::Locked(k))
                }
                (Role::LockedWriter, None) | (Role::Idle, _) => (FREE, SoftRole::Cold),
            };
            p.role[i] = role;
            if f.size > 0 || p.tail == Some(i) {
                p.color[i] = color;
                p.class[i] = class;
            }
            if role == SoftRole::Read {
                p.read_bytes += f.size;
            }
        }
        // Without two distinct colours nothing conflicts: clear the colours.
        let mut present: Vec<u32> = p.color.iter().copied().filter(|&c| c != 0).collect();
        present.sort_unstable();
        present.dedup();
        if present.len() < 2 {
            p.color.iter_mut().for_each(|c| *c = 0);
        }
        let n_colors = p.color.iter().copied().max().unwrap_or(0) as usize + 1;
        p.color_bytes = vec![0; n_colors];
        for i in 0..n {
            p.color_bytes[p.color[i] as usize] += p.size[i];
        }
        p.free = (0..n)
            .filter(|&i| p.pin[i].is_none() && p.tail != Some(i))
            .collect();
        if p.segmented {
            // Declaration order is the reference order: keep it where the
            // segments allow.
            p.free.sort_by_key(|&f| p.segment[f]);
        }
        p.pinned = (0..n).filter(|&i| p.pin[i].is_some()).collect();
        p.pinned.sort_by_key(|&i| (p.pin[i], p.size[i] > 0, i));
        if p.segmented && !p.pinned.is_empty() {
            // Per segment of a pinned field: the largest end and the
            // smallest start of its pinned fields; then prefix and suffix
            // over the segments.
            let mut by_seg: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
            for &q in &p.pinned {
                let start = p.pin[q].unwrap_or(0);
                let e = by_seg.entry(p.segment[q]).or_insert((0, u64::MAX));
                e.0 = e.0.max(start + p.size[q]);
                e.1 = e.1.min(start);
            }
            let mut floor_after: Vec<(u32, u64)> = Vec::with_capacity(by_seg.len());
            let mut acc = 0;
            for (&seg, &(end, _)) in &by_seg {
                acc = acc.max(end);
                floor_after.push((seg, acc));
            }
            let mut ceil_before: Vec<(u32, u64)> = Vec::with_capacity(by_seg.len());
            let mut acc = u64::MAX;
            for (&seg, &(_, start)) in by_seg.iter().rev() {
                acc = acc.min(start);
                ceil_before.push((seg, acc));
            }
            ceil_before.reverse();
            for f in 0..n {
                let s = p.segment[f];
                // Pinned segments below s: the last entry with seg < s.
                let k = floor_after.partition_point(|&(seg, _)| seg < s);
                if k > 0 {
                    p.floor[f] = floor_after[k - 1].1;
                }
                // Pinned segments above s: the first entry with seg > s.
                let k = ceil_before.partition_point(|&(seg, _)| seg <= s);
                if k < ceil_before.len() {
                    p.ceil[f] = ceil_before[k].1;
                }
            }
        }
        p.by_path = uses_by_path(&p.uses, p.path_names);
        if p.path_names > 0 {
            let uses: usize = p.by_path.iter().map(Vec::len).sum();
            p.path_work = (uses + p.path_names) as u64;
        }
        Ok(p)
    }

    /// Work units ([`super::budget`]) one evaluation of an order costs: one
    /// per field placed, and one per hot-path use and per path counted, so
    /// a struct with many paths spends its budget as fast as its
    /// evaluations take time.
    pub fn eval_work(&self) -> u64 {
        1 + self.n as u64 + self.path_work
    }

    /// True when some pair of fields falls under the (effective) hard rule.
    pub fn has_conflicts(&self) -> bool {
        self.color.iter().any(|&c| c != 0)
    }

    /// Do fields `a` and `b` fall under the hard rule?
    pub fn conflict(&self, a: usize, b: usize) -> bool {
        let (ca, cb) = (self.color[a], self.color[b]);
        ca != 0 && cb != 0 && ca != cb
    }

    /// Number of distinct non-zero colours with bytes.
    pub fn colors_present(&self) -> usize {
        self.color_bytes.iter().skip(1).filter(|&&b| b > 0).count()
    }

    /// Does `order` keep the segments nondecreasing?
    pub fn in_segment_order(&self, order: &[usize]) -> bool {
        !self.segmented
            || order
                .windows(2)
                .all(|w| self.segment[w[0]] <= self.segment[w[1]])
    }

    /// Repair `order` to segment order (stable: the order inside a segment stays).
    pub fn to_segment_order(&self, order: &mut [usize]) {
        if self.segmented {
            order.sort_by_key(|&f| self.segment[f]);
        }
    }
}
