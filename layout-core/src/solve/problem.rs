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
//! - **tree**: inside the segments, the author's line breaks
//!   ([`Struct::breaks`]) keep their order and each conditional block
//!   ([`Struct::blocks`]) stays in one piece of the order; the members
//!   outside move across both.

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
    /// True when some segment differs from another, or the struct has
    /// line breaks or blocks ([`Problem::tree`]): orders must be checked.
    pub segmented: bool,
    /// The line breaks and blocks of the unpinned fields.
    pub tree: Tree,
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

/// Alignments the solver can take (powers of two) and pins it can keep
/// (a known offset that is a multiple of the field's alignment).
fn check_geometry(s: &Struct) -> Result<(), SolveError> {
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
    Ok(())
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
        Problem::with_blocks(s, separate_soft, Blocks::Free)
    }

    /// [`Problem::new`] with the `#if` blocks free to move among each other
    /// inside their section ([`Blocks::Free`], the rule), or kept in their
    /// declared order ([`Blocks::Ordered`]: a smaller space the search
    /// explores first, whose layouts seed the free one).
    pub fn with_blocks(
        s: &Struct,
        separate_soft: bool,
        blocks: Blocks,
    ) -> Result<Problem, SolveError> {
        check_geometry(s)?;
        let n = s.fields.len();
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
            tree: Tree::default(),
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
        p.assign_colours(s, separate_soft);
        p.free = (0..n)
            .filter(|&i| p.pin[i].is_none() && p.tail != Some(i))
            .collect();
        if p.segmented {
            // Declaration order is the reference order: keep it where the
            // segments allow.
            p.free.sort_by_key(|&f| p.segment[f]);
        }
        p.tree = Tree::new(s, |f| p.pin[f].is_none() && p.tail != Some(f), blocks);
        p.segmented |= p.tree.constrains();
        p.pinned = (0..n).filter(|&i| p.pin[i].is_some()).collect();
        p.pinned.sort_by_key(|&i| (p.pin[i], p.size[i] > 0, i));
        if p.segmented && !p.pinned.is_empty() {
            p.bound_segments_by_pins();
        }
        p.by_path = uses_by_path(&p.uses, p.path_names);
        if p.path_names > 0 {
            let uses: usize = p.by_path.iter().map(Vec::len).sum();
            p.path_work = (uses + p.path_names) as u64;
        }
        Ok(p)
    }

    /// Colours and soft classes from the access vocabulary: its colouring
    /// of each class (free, the shared colour, or a colour per parameter)
    /// and its role (what a line holding the field costs). The hard rule
    /// reads a lock word as lockless in a group of its own
    /// (`Field::rule_access`); its soft role stays that of a lock.
    fn assign_colours(&mut self, s: &Struct, separate_soft: bool) {
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
            self.role[i] = role;
            if f.size > 0 || self.tail == Some(i) {
                self.color[i] = color;
                self.class[i] = class;
            }
            if role == SoftRole::Read {
                self.read_bytes += f.size;
            }
        }
        // Without two distinct colours nothing conflicts: clear the colours.
        let mut present: Vec<u32> = self.color.iter().copied().filter(|&c| c != 0).collect();
        present.sort_unstable();
        present.dedup();
        if present.len() < 2 {
            self.color.iter_mut().for_each(|c| *c = 0);
        }
        let n_colors = self.color.iter().copied().max().unwrap_or(0) as usize + 1;
        self.color_bytes = vec![0; n_colors];
        for i in 0..self.n {
            self.color_bytes[self.color[i] as usize] += self.size[i];
        }
    }

    /// With segments and pinned fields: each field's `floor` (the largest
    /// end of a pinned field in an earlier segment) and `ceil` (the
    /// smallest start of one in a later segment).
    fn bound_segments_by_pins(&mut self) {
        // Per segment of a pinned field: the largest end and the smallest
        // start of its pinned fields; then prefix and suffix over the
        // segments.
        let mut by_seg: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for &q in &self.pinned {
            let start = self.pin[q].unwrap_or(0);
            let e = by_seg.entry(self.segment[q]).or_insert((0, u64::MAX));
            e.0 = e.0.max(start + self.size[q]);
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
        for f in 0..self.n {
            let s = self.segment[f];
            // Pinned segments below s: the last entry with seg < s.
            let k = floor_after.partition_point(|&(seg, _)| seg < s);
            if k > 0 {
                self.floor[f] = floor_after[k - 1].1;
            }
            // Pinned segments above s: the first entry with seg > s.
            let k = ceil_before.partition_point(|&(seg, _)| seg <= s);
            if k < ceil_before.len() {
                self.ceil[f] = ceil_before[k].1;
            }
        }
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

    /// Does `order` keep the segments nondecreasing, the line breaks in
    /// their order and every block in one piece?
    pub fn in_segment_order(&self, order: &[usize]) -> bool {
        !self.segmented
            || (order
                .windows(2)
                .all(|w| self.segment[w[0]] <= self.segment[w[1]])
                && self.tree.keeps(order, self.n))
    }

    /// Repair `order` to segment order (stable: the order inside a segment
    /// stays), then to the tree's: the line breaks take their places in
    /// their order, and each block gathers where its first field is. An
    /// order that still breaks a constraint becomes the reference order
    /// ([`Problem::free`]), which keeps them all.
    pub fn to_segment_order(&self, order: &mut [usize]) {
        if !self.segmented {
            return;
        }
        order.sort_by_key(|&f| self.segment[f]);
        if !self.tree.constrains() {
            return;
        }
        self.tree.repair(order);
        if !self.in_segment_order(order) && order.len() == self.free.len() {
            order.copy_from_slice(&self.free);
        }
    }

    /// May field `f` follow the partial order `prefix` (of unpinned fields)
    /// in some order that keeps the tree? Segments are the caller's.
    pub fn may_follow(&self, prefix: &[usize], placed: &[bool], f: usize) -> bool {
        self.tree.may_follow(prefix, placed, f)
    }
}

/// The tree's constraints on the order of the unpinned fields (see
/// [`crate::segments`]): the nodes of the struct's tree (its line breaks and
/// its outermost blocks) keep their declared order, every block stays in one
/// piece, and the members outside blocks move across them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tree {
    /// The nodes, in the order they keep: a line break (one field) or a
    /// block (its fields, in declaration order).
    pub units: Vec<Vec<usize>>,
    /// Blocks of two fields or more (nested ones too), each in declaration
    /// order.
    pub blocks: Vec<Vec<usize>>,
    /// Per field: the blocks holding it (indices into `blocks`).
    pub blocks_of: Vec<Vec<u32>>,
    /// Per field: the node it belongs to (index into `units`).
    pub unit_of: Vec<Option<usize>>,
    /// Per field: it is a line break.
    pub is_break: Vec<bool>,
    /// Per field: the sections (the parts between two line breaks) it may
    /// lie in; `None`: any ([`sections_allowed`]).
    pub allowed: Vec<Option<Vec<bool>>>,
    /// Per field: it starts a section (a line break; a released first
    /// member heads the breaks' order but starts none).
    pub starts_section: Vec<bool>,
    /// Per field: the section it was declared in.
    pub declared: Vec<usize>,
    /// Per field: an unpinned member with bytes that is no line break: one
    /// its section must keep.
    pub counts_in_part: Vec<bool>,
    /// Per section: how many such members were declared in it (empty
    /// without line breaks).
    pub owners: Vec<usize>,
    /// The number of unpinned fields: the length of a complete order.
    pub free_count: usize,
    /// Fields declared together (`int a, b;`): next to each other, in this
    /// order.
    pub lists: Vec<Vec<usize>>,
    /// Per field: its list and its place in it.
    pub list_of: Vec<Option<(usize, usize)>>,
}

/// Where each field may lie among the author's line breaks. The struct's
/// parts between two breaks hold what their author put there; a member
/// outside every block may cross a break into another part only if that
/// part holds a member of its own access class (the read-mostly head for a
/// read-mostly member), or when it is cold (cold fills any line). A block
/// and a break stay in their part: the nodes keep their order.
pub(crate) fn sections_allowed(
    s: &Struct,
    starts_section: &[bool],
    in_node: &[bool],
) -> Vec<Option<Vec<bool>>> {
    let mut declared = Vec::with_capacity(s.fields.len());
    let mut k = 0;
    for &starts in starts_section {
        if starts {
            k += 1;
        }
        declared.push(k);
    }
    let count = k + 1;
    let mut classes: Vec<Vec<&crate::model::Access>> = vec![Vec::new(); count];
    for (f, field) in s.fields.iter().enumerate() {
        if field.size > 0 && !classes[declared[f]].contains(&&field.access) {
            classes[declared[f]].push(&field.access);
        }
    }
    s.fields
        .iter()
        .enumerate()
        .map(|(f, field)| {
            let free = count == 1
                || in_node[f]
                || field.size == 0
                || field.access == crate::model::Access::Cold;
            (!free).then(|| {
                (0..count)
                    .map(|k| k == declared[f] || classes[k].contains(&&field.access))
                    .collect()
            })
        })
        .collect()
}

/// How the search treats the `#if` blocks among each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Blocks {
    /// Each block moves as a whole inside its section (the rule).
    Free,
    /// The blocks also keep their declared order among each other and the
    /// line breaks.
    Ordered,
}

impl Tree {
    fn new(s: &Struct, unpinned: impl Fn(usize) -> bool, order: Blocks) -> Tree {
        let n = s.fields.len();
        let keep = |f: &usize| *f < n && unpinned(*f);
        let mut blocks: Vec<Vec<usize>> = s
            .blocks
            .iter()
            .map(|b| {
                let mut b: Vec<usize> = b.iter().copied().filter(keep).collect();
                b.sort_unstable();
                b.dedup();
                b
            })
            .filter(|b| !b.is_empty())
            .collect();
        blocks.sort();
        blocks.dedup();
        let breaks: Vec<usize> = s.breaks.iter().copied().filter(keep).collect();
        // The nodes that keep their order: the line breaks, and the blocks
        // that hold one. Other blocks move freely inside their section.
        let mut units: Vec<Vec<usize>> = breaks.iter().map(|&f| vec![f]).collect();
        units.extend(
            blocks
                .iter()
                .filter(|b| order == Blocks::Ordered || b.iter().any(|f| breaks.contains(f)))
                .cloned(),
        );
        // Only the outermost nodes: one inside another moves with it.
        let inside =
            |u: &Vec<usize>, v: &Vec<usize>| u.len() < v.len() && u.iter().all(|f| v.contains(f));
        let outer: Vec<Vec<usize>> = units
            .iter()
            .filter(|u| !units.iter().any(|v| inside(u, v)))
            .cloned()
            .collect();
        let mut units = outer;
        units.sort_by_key(|u| u[0]);
        units.dedup();
        // Every block, one-member ones too, stays in its section; only the
        // blocks of two members or more constrain the order inside it.
        let sectioned = blocks.clone();
        blocks.retain(|b| b.len() >= 2);
        let mut blocks_of = vec![Vec::new(); n];
        for (k, b) in blocks.iter().enumerate() {
            for &f in b {
                blocks_of[f].push(k as u32);
            }
        }
        let mut unit_of = vec![None; n];
        for (k, u) in units.iter().enumerate() {
            for &f in u {
                unit_of[f] = Some(k);
            }
        }
        let mut is_break = vec![false; n];
        for &f in &breaks {
            is_break[f] = true;
        }
        let starts_section: Vec<bool> = (0..n).map(|f| is_break[f] && f != 0).collect();
        let in_node: Vec<bool> = (0..n).map(|f| unit_of[f].is_some()).collect();
        let mut allowed = sections_allowed(s, &starts_section, &in_node);
        // A block's fields stay in the section the block was declared in.
        let sections = starts_section.iter().filter(|&&b| b).count() + 1;
        if sections > 1 {
            let mut section = Vec::with_capacity(n);
            let mut k = 0;
            for &starts in &starts_section {
                if starts {
                    k += 1;
                }
                section.push(k);
            }
            for b in &sectioned {
                for &f in b.iter().filter(|&&f| !in_node[f]) {
                    allowed[f] = Some((0..sections).map(|k| k == section[f]).collect());
                }
            }
        }
        let mut declared = Vec::with_capacity(n);
        let mut k = 0;
        for &starts in &starts_section {
            if starts {
                k += 1;
            }
            declared.push(k);
        }
        let counts_in_part: Vec<bool> = (0..n)
            .map(|f| keep(&f) && s.fields[f].size > 0 && !is_break[f])
            .collect();
        let mut owners = vec![0; k + 1];
        for f in (0..n).filter(|&f| counts_in_part[f]) {
            owners[declared[f]] += 1;
        }
        if k == 0 {
            owners.clear();
        }
        let lists: Vec<Vec<usize>> = s
            .lists
            .iter()
            .map(|l| l.iter().copied().filter(keep).collect::<Vec<usize>>())
            .filter(|l| l.len() >= 2)
            .collect();
        let mut list_of = vec![None; n];
        for (k, l) in lists.iter().enumerate() {
            for (i, &f) in l.iter().enumerate() {
                list_of[f] = Some((k, i));
            }
        }
        let free_count = (0..n).filter(|f| keep(f)).count();
        Tree {
            free_count,
            declared,
            counts_in_part,
            owners,
            lists,
            list_of,
            units,
            blocks,
            blocks_of,
            unit_of,
            is_break,
            allowed,
            starts_section,
        }
    }

    /// Is every field of `order` in a section it may lie in?
    fn sections_kept(&self, order: &[usize]) -> bool {
        let mut k = 0;
        let mut kept = vec![false; self.owners.len()];
        let allowed = order.iter().all(|&f| {
            if self.starts_section[f] {
                k += 1;
            }
            if self.declared[f] == k && self.counts_in_part[f] {
                if let Some(x) = kept.get_mut(k) {
                    *x = true;
                }
            }
            self.allowed[f]
                .as_ref()
                .is_none_or(|a| a.get(k).copied().unwrap_or(false))
        });
        // Every part keeps one of its own members: a line break still
        // breaks what the author put around it.
        let complete = order.len() == self.free_count;
        allowed
            && (!complete
                || kept
                    .iter()
                    .zip(&self.owners)
                    .all(|(&kept, &owners)| kept || owners == 0))
    }

    /// Moves every field that lies in a section it may not back to the end
    /// of the section it was declared in (before the break after it).
    fn to_sections(&self, order: &mut [usize]) {
        if self.sections_kept(order) {
            return;
        }
        let declared = |f: usize| self.starts_section[..f].iter().filter(|&&b| b).count();
        let mut k = 0;
        let mut strays = Vec::new();
        let mut kept = Vec::with_capacity(order.len());
        for &f in order.iter() {
            if self.starts_section[f] {
                k += 1;
            }
            match &self.allowed[f] {
                Some(a) if !a.get(k).copied().unwrap_or(false) => strays.push(f),
                _ => kept.push(f),
            }
        }
        let mut out = Vec::with_capacity(order.len());
        let mut k = 0;
        let place = |out: &mut Vec<usize>, k: usize| {
            for &f in &strays {
                if declared(f) == k {
                    out.push(f);
                }
            }
        };
        for &f in &kept {
            if self.starts_section[f] {
                place(&mut out, k);
                k += 1;
            }
            out.push(f);
        }
        place(&mut out, k);
        if out.len() == order.len() {
            order.copy_from_slice(&out);
        }
    }

    /// True when the tree constrains any order.
    pub fn constrains(&self) -> bool {
        self.units.len() > 1
            || !self.blocks.is_empty()
            || !self.lists.is_empty()
            || self.allowed.iter().any(Option::is_some)
            || self.owners.len() > 1
    }

    /// Can fields `a` and `b` trade places without the tree noticing? Not
    /// when they were declared in different parts: which of them sits in
    /// a part decides whether the part keeps a member of its own.
    pub fn interchangeable(&self, a: usize, b: usize) -> bool {
        !self.is_break[a]
            && (self.owners.is_empty() || self.declared[a] == self.declared[b])
            && !self.is_break[b]
            && self.unit_of[a] == self.unit_of[b]
            && self.blocks_of[a] == self.blocks_of[b]
            && self.allowed[a] == self.allowed[b]
            && self.list_of[a].is_none()
            && self.list_of[b].is_none()
    }

    fn positions(order: &[usize], n: usize) -> Vec<usize> {
        let mut at = vec![usize::MAX; n];
        for (k, &f) in order.iter().enumerate() {
            at[f] = k;
        }
        at
    }

    /// Does `order` keep the nodes in order and the blocks whole?
    pub fn keeps(&self, order: &[usize], n: usize) -> bool {
        if !self.constrains() {
            return true;
        }
        let at = Self::positions(order, n);
        let starts: Vec<usize> = self
            .units
            .iter()
            .filter_map(|u| u.iter().map(|&f| at[f]).filter(|&k| k != usize::MAX).min())
            .collect();
        starts.windows(2).all(|w| w[0] < w[1])
            && self.sections_kept(order)
            && self.lists.iter().all(|l| {
                l.windows(2)
                    .all(|w| at[w[0]] != usize::MAX && at[w[1]] == at[w[0]] + 1)
            })
            && self.blocks.iter().all(|b| {
                let ks: Vec<usize> = b
                    .iter()
                    .map(|&f| at[f])
                    .filter(|&k| k != usize::MAX)
                    .collect();
                match (ks.iter().min(), ks.iter().max()) {
                    (Some(lo), Some(hi)) => hi - lo + 1 == ks.len(),
                    _ => true,
                }
            })
    }

    /// Gathers each block where its first field is (outer blocks first),
    /// then puts the nodes on the places nodes hold, in their order.
    fn repair(&self, order: &mut [usize]) {
        let mut by_size: Vec<&Vec<usize>> = self.blocks.iter().collect();
        by_size.sort_by_key(|b| std::cmp::Reverse(b.len()));
        for b in by_size {
            gather(order, b);
        }
        for l in &self.lists {
            if order.iter().filter(|f| l.contains(f)).count() != l.len() {
                continue;
            }
            gather(order, l);
            if let Some(first) = order.iter().position(|f| l.contains(f)) {
                order[first..first + l.len()].copy_from_slice(l);
            }
        }
        // The order as tokens: a node's fields (contiguous now), or one
        // field outside every node.
        let mut tokens: Vec<Vec<usize>> = Vec::new();
        let mut units_seen: Vec<usize> = Vec::new();
        for &f in order.iter() {
            match self.unit_of[f] {
                Some(u) if units_seen.last() == Some(&u) => {
                    tokens.last_mut().expect("a token per unit seen").push(f);
                }
                Some(u) => {
                    units_seen.push(u);
                    tokens.push(vec![f]);
                }
                None => {
                    units_seen.push(usize::MAX);
                    tokens.push(vec![f]);
                }
            }
        }
        let mut in_order: Vec<usize> = units_seen
            .iter()
            .copied()
            .filter(|&u| u != usize::MAX)
            .collect();
        in_order.sort_unstable();
        let mut next_unit = in_order.into_iter();
        let mut by_unit: Vec<Option<Vec<usize>>> = vec![None; self.units.len()];
        for (t, &u) in tokens.iter().zip(&units_seen) {
            if u != usize::MAX && by_unit[u].is_none() {
                by_unit[u] = Some(t.clone());
            }
        }
        let mut out = Vec::with_capacity(order.len());
        for (t, &u) in tokens.iter().zip(&units_seen) {
            if u == usize::MAX {
                out.extend_from_slice(t);
            } else if let Some(k) = next_unit.next() {
                out.extend(by_unit[k].take().unwrap_or_default());
            }
        }
        if out.len() == order.len() {
            order.copy_from_slice(&out);
        }
        self.to_sections(order);
    }

    /// May `f` follow `prefix` (`placed[g]`: `g` is in it)? Every block
    /// begun and not finished must hold `f`, a block `f` belongs to must
    /// not be finished yet, and a node `f` begins must come after the node
    /// before it has begun.
    pub fn may_follow(&self, prefix: &[usize], placed: &[bool], f: usize) -> bool {
        if !self.constrains() {
            return true;
        }
        if let Some(a) = &self.allowed[f] {
            let k = prefix.iter().filter(|&&g| self.starts_section[g]).count();
            if !a.get(k).copied().unwrap_or(false) {
                return false;
            }
        }
        if let Some(u) = self.unit_of[f] {
            let begun = |k: usize| self.units[k].iter().any(|&g| placed[g]);
            if u > 0 && !begun(u) && !begun(u - 1) {
                return false;
            }
        }
        let last = prefix.last().copied();
        // A declaration begun goes on with its next field, and only then.
        for (k, l) in self.lists.iter().enumerate() {
            let done = l.iter().filter(|&&g| placed[g]).count();
            let next_of_l = self.list_of[f] == Some((k, done));
            let holds_f = self.list_of[f].is_some_and(|(j, _)| j == k);
            if (done > 0 && done < l.len() && !(next_of_l && last == Some(l[done - 1])))
                || (holds_f && !next_of_l)
            {
                return false;
            }
        }
        self.blocks.iter().enumerate().all(|(k, b)| {
            let done = b.iter().filter(|&&g| placed[g]).count();
            let holds_f = self.blocks_of[f].contains(&(k as u32));
            if done == 0 {
                true
            } else if done == b.len() {
                !holds_f
            } else {
                holds_f && last.is_some_and(|l| b.contains(&l))
            }
        })
    }
}

/// Moves the fields of `block` next to the first of them in `order`,
/// keeping their order and everyone else's.
fn gather(order: &mut [usize], block: &[usize]) {
    let Some(first) = order.iter().position(|f| block.contains(f)) else {
        return;
    };
    let (inside, outside): (Vec<usize>, Vec<usize>) =
        order[first..].iter().partition(|f| block.contains(f));
    for (slot, f) in order[first..]
        .iter_mut()
        .zip(inside.into_iter().chain(outside))
    {
        *slot = f;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Access, Field};

    /// `head` (read-mostly), `_pad1_`, `a` (read-mostly), `b` `c` in an
    /// `#if` block, `d` (lockless), `e` (cold): the first member is field 0.
    fn tree_struct() -> Struct {
        let long = |n: &str, access: Access| Field::new(n, "long", 8, 8).with_access(access);
        let mut pad = Field::new("_pad1_", "struct cacheline_padding", 0, 64);
        pad.ty = "struct cacheline_padding".into();
        let mut s = Struct::new(
            "s",
            vec![
                long("head", Access::ReadMostly),
                pad,
                long("a", Access::ReadMostly),
                long("b", Access::Cold),
                long("c", Access::Cold),
                long("d", Access::Lockless { group: None }),
                long("e", Access::Cold),
            ],
        );
        crate::segments::assign(&mut s, crate::segments::Keep::default());
        s.blocks = vec![vec![3, 4]];
        s
    }

    #[test]
    fn the_tree_keeps_blocks_whole_breaks_in_order_and_classes_in_their_parts() {
        let s = tree_struct();
        let p = Problem::new(&s, false).unwrap();
        assert!(p.segmented && p.tree.constrains());
        // The first member is a wall; the order is of the others.
        let keeps = |o: &[usize]| p.in_segment_order(&[&[0][..], o].concat());
        assert!(keeps(&[1, 2, 3, 4, 5, 6]));
        // `a` (read-mostly) crosses the padding into the head's part.
        assert!(keeps(&[2, 1, 3, 4, 5, 6]));
        // `e` (cold) goes anywhere; `d` (lockless) may not join the head.
        assert!(keeps(&[6, 1, 2, 3, 4, 5]));
        assert!(!keeps(&[5, 1, 2, 3, 4, 6]));
        // The block stays whole, and after the padding.
        assert!(!keeps(&[1, 3, 2, 4, 5, 6]));
        assert!(!keeps(&[3, 4, 1, 2, 5, 6]));
        // A member outside moves across the block.
        assert!(keeps(&[1, 3, 4, 2, 5, 6]));
    }

    #[test]
    fn every_part_keeps_a_member_of_its_own() {
        let long = |n: &str| Field::new(n, "long", 8, 8).with_access(Access::ReadMostly);
        let pad = Field::new("_pad1_", "struct cacheline_padding", 0, 64);
        let mut s = Struct::new("s", vec![long("head"), pad, long("a"), long("b")]);
        crate::segments::assign(&mut s, crate::segments::Keep::default());
        let p = Problem::new(&s, false).unwrap();
        assert!(p.in_segment_order(&[0, 2, 1, 3]));
        assert!(!p.in_segment_order(&[0, 2, 3, 1]));
    }

    #[test]
    fn a_repaired_order_keeps_the_tree_and_the_search_follows_it() {
        let s = tree_struct();
        let p = Problem::new(&s, false).unwrap();
        let mut order = vec![0, 5, 3, 2, 1, 4, 6];
        p.to_segment_order(&mut order);
        assert!(p.in_segment_order(&order), "{order:?}");
        let placed = |prefix: &[usize]| {
            let mut v = vec![false; s.fields.len()];
            for &f in prefix {
                v[f] = true;
            }
            v
        };
        // After `b`, only `c` may follow: the block is open.
        let prefix = [0, 1, 3];
        assert!(p.may_follow(&prefix, &placed(&prefix), 4));
        assert!(!p.may_follow(&prefix, &placed(&prefix), 2));
        // Before the padding, `d` may not come (its class is not the head's).
        let prefix = [0];
        assert!(!p.may_follow(&prefix, &placed(&prefix), 5));
        assert!(p.may_follow(&prefix, &placed(&prefix), 2));
    }

    /// The tree's rule against the verifier's, on random kernel-like
    /// structs (paddings, line-aligned members, lock words, writer groups,
    /// declaration lists and `#if` blocks, the first member kept or
    /// released) and orders near their declaration: an order the verifier
    /// accepts (laid out by the placer) keeps the tree, and the other way.
    /// The exact search branches only on orders that keep the tree, so a
    /// tree stricter than the verifier would make its proofs claim sizes
    /// some layout beats.
    #[test]
    fn the_tree_keeps_exactly_the_orders_the_verifier_accepts() {
        use crate::layout::{Layout, Slot};
        use crate::model::Placement;
        use crate::solve::geometry::Geometry;
        use crate::solve::place::Placer;
        let mut next = crate::solve::test_support::rng(0x38_0001);
        let (mut stricter, mut looser, mut valid) = (Vec::new(), 0, 0);
        for case in 0..3000u64 {
            let n = 6 + next(14) as usize;
            let mut fields = Vec::new();
            let pads: Vec<u64> = (0..2 + next(2)).map(|_| 1 + next(n as u64 - 1)).collect();
            for i in 0..n {
                for &q in &pads {
                    if q as usize == i {
                        fields.push(Field::new(
                            format!("_pad{}_", fields.len()),
                            "struct cacheline_padding",
                            0,
                            64,
                        ));
                    }
                }
                let access = match next(12) {
                    0..=3 => Access::ReadMostly,
                    4 => Access::Lockless { group: None },
                    5 | 6 => Access::Lockless {
                        group: Some(format!("g{}", next(2))),
                    },
                    7 | 8 => Access::LockedWrite { lock: "l".into() },
                    _ => Access::Cold,
                };
                let (size, align) = [(8, 8), (4, 4), (16, 16), (64, 64), (24, 8)][next(5) as usize];
                let mut f = Field::new(format!("m{i}"), "t", size, align).with_access(access);
                f.lock_word = matches!(f.access, Access::LockedWrite { .. }) && next(3) == 0;
                f.line_break = i > 0 && align == 64 && next(2) == 0;
                fields.push(f);
            }
            let mut s = Struct::new("s", fields);
            crate::segments::assign(
                &mut s,
                crate::segments::Keep {
                    first: case % 4 != 0,
                    line_breaks: true,
                },
            );
            // Now and then a declaration list (`int a, b;`) or an `#if`
            // block of members with bytes that are no breaks, side by side.
            let plain = |i: usize| i > 0 && s.fields[i].size > 0 && !s.breaks.contains(&i);
            for _ in 0..next(3) {
                let at = next(s.fields.len() as u64) as usize;
                let len = 1 + next(3) as usize;
                let run: Vec<usize> = (at..(at + len).min(s.fields.len())).collect();
                let taken = |i: &usize| s.lists.iter().chain(&s.blocks).any(|g| g.contains(i));
                if run.len() < 2 || !run.iter().all(|&i| plain(i) && !taken(&i)) {
                    continue;
                }
                if next(2) == 0 {
                    s.lists.push(run);
                } else {
                    s.blocks.push(run);
                }
            }
            let p = Problem::new(&s, false).unwrap();
            let g = Geometry::aligned(64, 64);
            for _ in 0..40 {
                let mut order = p.free.clone();
                for _ in 0..1 + next(4) {
                    let a = next(order.len() as u64) as usize;
                    let b = next(order.len() as u64) as usize;
                    let f = order.remove(a);
                    order.insert(b, f);
                }
                if order.windows(2).any(|w| p.segment[w[0]] > p.segment[w[1]]) {
                    continue;
                }
                let placed = Placer::new(&p, g, false).place_all(&order);
                let mut slots: Vec<Slot> = order
                    .iter()
                    .map(|&f| Slot {
                        field: f,
                        offset: placed.offset[f],
                    })
                    .collect();
                slots.sort_by_key(|sl| (sl.offset, s.fields[sl.field].size > 0, sl.field));
                let l = Layout {
                    slots,
                    size: placed.size,
                    align: 64,
                    line: 64,
                    placement: Placement::Aligned,
                };
                let v = crate::verify::verify(&s, &l);
                // The layout's own order (zero-size members first at an
                // offset, then by declaration), as the verifier reads it.
                let canonical: Vec<usize> = {
                    let mut o: Vec<(u64, bool, u32, usize)> = order
                        .iter()
                        .map(|&f| {
                            (
                                placed.offset[f],
                                s.fields[f].size > 0,
                                s.fields[f].segment,
                                f,
                            )
                        })
                        .collect();
                    o.sort_unstable();
                    o.into_iter().map(|x| x.3).collect()
                };
                let t = p.in_segment_order(&canonical);
                valid += usize::from(v.is_ok());
                if v.is_ok() && !t && stricter.len() < 3 {
                    stricter.push(format!("{order:?} {s:?}"));
                }
                if t && v.is_err() {
                    looser += 1;
                }
            }
        }
        assert!(
            stricter.is_empty() && looser == 0,
            "{valid} valid, {looser} looser; stricter: {stricter:#?}"
        );
        // Most orders tried are layouts the verifier accepts: the test
        // compares the two rules where they matter.
        assert!(valid > 20_000, "only {valid} valid");
    }
}
