//! The independent verifier. It recomputes everything from the model and the
//! offsets alone: every field placed once, aligned, without overlap, pinned
//! fields where they were, the author's order kept (fields in nondecreasing
//! [`segment`](crate::model::Field::segment) order, the author's line
//! breaks in their order, every `#if` block in one piece, a first member
//! kept first at offset 0), size and alignment consistent, and the hard rule at
//! every phase the placement allows (a trailing flexible array member's
//! class covers the bytes from its offset on: its elements). It shares no
//! code with the solver, and states the hard rule itself ([`must_not_share`])
//! rather than reading it from the access vocabulary ([`crate::class`]): a
//! test walks every pair of classes and checks the two agree.
//!
//! A [`VerifiedLayout`] can only be made here; emitters of proposals take one.

use crate::layout::Layout;
use crate::model::{Access, Placement, Struct};
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VerifyError {
    FieldCount {
        expected: usize,
        found: usize,
    },
    Duplicate {
        field: String,
    },
    Misaligned {
        field: String,
        offset: u64,
        align: u64,
    },
    Overlap {
        first: String,
        second: String,
    },
    PastEnd {
        field: String,
        end: u64,
        size: u64,
    },
    BadAlign {
        align: u64,
        needed: u64,
    },
    SizeNotMultiple {
        size: u64,
        align: u64,
    },
    Pinned {
        field: String,
        offset: u64,
        required: u64,
    },
    PlacementMisaligned {
        offset: u64,
        align: u64,
    },
    HardRule {
        a: String,
        b: String,
        line: u64,
        phase: u64,
    },
    /// `before` (of an earlier segment: a group, a marker, the first member)
    /// does not end before `after` starts.
    Segment {
        before: String,
        after: String,
    },
    /// Two nodes of the struct's tree (line breaks, [`Struct::breaks`], and
    /// `#if` blocks, [`Struct::blocks`]) swapped: `later` (declared after
    /// `earlier`) is placed before it.
    LineBreakOrder {
        earlier: String,
        later: String,
    },
    /// `outside` sits between fields of one conditional block
    /// ([`Struct::blocks`]), of which `inside` is one.
    SplitBlock {
        inside: String,
        outside: String,
    },
    /// Every member declared with `field` between two line breaks left
    /// that part of the struct: the break no longer breaks what it did.
    /// A need of the tree-safety pass ([`crate::tree_safety`]) that the
    /// layout breaks: the site and what it needs.
    TreeNeed {
        site: String,
        keeps: String,
    },
    EmptiedPart {
        field: String,
    },
    /// The fields declared together with `first` (`int a, b;`) are not
    /// next to each other in their order.
    SplitDeclaration {
        first: String,
    },
    /// `field` crossed a line break into a part of the struct that holds
    /// no member of its class.
    LeftItsPart {
        field: String,
    },
    /// `field`, in an `#if` block, crossed a line break with its block.
    BlockLeftItsPart {
        field: String,
    },
    /// The first member, kept first, is not at offset 0.
    FirstMember {
        field: String,
        offset: u64,
    },
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use VerifyError::*;
        match self {
            FieldCount { expected, found } => {
                write!(f, "layout places {found} fields, the struct has {expected}")
            }
            Duplicate { field } => write!(f, "field `{field}` is placed twice"),
            Misaligned { field, offset, align } => {
                write!(f, "field `{field}` at offset {offset} is not aligned to {align}")
            }
            Overlap { first, second } => write!(f, "fields `{first}` and `{second}` overlap"),
            PastEnd { field, end, size } => {
                write!(f, "field `{field}` ends at {end}, past the struct size {size}")
            }
            BadAlign { align, needed } => {
                write!(f, "struct alignment {align} is not a power of two at least {needed}")
            }
            SizeNotMultiple { size, align } => {
                write!(f, "struct size {size} is not a multiple of its alignment {align}")
            }
            Pinned { field, offset, required } => write!(
                f,
                "pinned field `{field}` moved from offset {required} to {offset}"
            ),
            PlacementMisaligned { offset, align } => write!(
                f,
                "offset {offset} inside the container is not a multiple of the struct alignment {align}"
            ),
            HardRule { a, b, line, phase } => write!(
                f,
                "lockless `{a}` shares line {line} with `{b}` when the struct starts at phase {phase}"
            ),
            Segment { before, after } => write!(
                f,
                "`{after}` is placed before `{before}`, which the author's groups and markers \
                 put first (a member left its cache-line group, or a marker moved)"
            ),
            LineBreakOrder { earlier, later } => write!(
                f,
                "`{later}` is placed before `{earlier}`: the author's line breaks (paddings, \
                 line-aligned members) and `#if` blocks keep their order"
            ),
            SplitBlock { inside, outside } => write!(
                f,
                "`{outside}` is placed between the members of the `#if` block of `{inside}`: a \
                 conditional block moves only as a whole"
            ),
            TreeNeed { site, keeps } => write!(
                f,
                "the code at {site} depends on the member order, and the layout breaks it \
                 (it needs: {keeps})"
            ),
            EmptiedPart { field } => write!(
                f,
                "`{field}` and every member declared in its part of the struct (between two \
                 line breaks) left it: each part keeps a member of its own"
            ),
            SplitDeclaration { first } => write!(
                f,
                "the fields declared together with `{first}` are separated or reordered: a \
                 declaration moves only whole"
            ),
            LeftItsPart { field } => write!(
                f,
                "`{field}` crossed a line break (a padding, a line-aligned member) into a part \
                 of the struct that holds no member of its class"
            ),
            BlockLeftItsPart { field } => write!(
                f,
                "the `#if` block of `{field}` crossed a line break (a padding, a line-aligned \
                 member): a block stays between the breaks it was declared between"
            ),
            FirstMember { field, offset } => write!(
                f,
                "the first member `{field}` moved to offset {offset}; it must stay at offset 0 \
                 (code casts the struct to it)"
            ),
        }
    }
}

impl std::error::Error for VerifyError {}

/// A layout that passed [`verify`], with the struct it lays out.
#[derive(Clone, Debug)]
pub struct VerifiedLayout {
    layout: Layout,
    strukt: Struct,
}

impl VerifiedLayout {
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
    pub fn strukt(&self) -> &Struct {
        &self.strukt
    }
}

impl std::ops::Deref for VerifiedLayout {
    type Target = Layout;
    fn deref(&self) -> &Layout {
        &self.layout
    }
}

/// Structural checks only: a well-formed layout that may still break the hard
/// rule (used for the layout as declared, which `show` reports on).
pub fn check_structure(s: &Struct, l: &Layout) -> Result<(), VerifyError> {
    let n = s.fields.len();
    if l.slots.len() != n {
        return Err(VerifyError::FieldCount {
            expected: n,
            found: l.slots.len(),
        });
    }
    let mut seen = vec![false; n];
    for sl in &l.slots {
        if sl.field >= n {
            return Err(VerifyError::FieldCount {
                expected: n,
                found: sl.field + 1,
            });
        }
        if std::mem::replace(&mut seen[sl.field], true) {
            return Err(VerifyError::Duplicate {
                field: s.fields[sl.field].name.clone(),
            });
        }
    }
    let needed = s
        .fields
        .iter()
        .map(|f| f.align)
        .fold(s.min_align.max(1), u64::max);
    if !l.align.is_power_of_two() || l.align < needed {
        return Err(VerifyError::BadAlign {
            align: l.align,
            needed,
        });
    }
    if !l.size.is_multiple_of(l.align) {
        return Err(VerifyError::SizeNotMultiple {
            size: l.size,
            align: l.align,
        });
    }
    // Sort a copy by offset: do not trust the layout's own order.
    let mut placed: Vec<(u64, u64, usize)> = l
        .slots
        .iter()
        .map(|sl| (sl.offset, s.fields[sl.field].size, sl.field))
        .collect();
    placed.sort();
    for &(off, size, i) in &placed {
        let f = &s.fields[i];
        if f.align == 0 || off % f.align != 0 {
            return Err(VerifyError::Misaligned {
                field: f.name.clone(),
                offset: off,
                align: f.align,
            });
        }
        if off + size > l.size {
            return Err(VerifyError::PastEnd {
                field: f.name.clone(),
                end: off + size,
                size: l.size,
            });
        }
        if f.pinned {
            if let Some(req) = f.original_offset {
                if req != off {
                    return Err(VerifyError::Pinned {
                        field: f.name.clone(),
                        offset: off,
                        required: req,
                    });
                }
            }
        }
    }
    for w in placed.windows(2) {
        let (a_off, a_size, a) = w[0];
        let (b_off, _, b) = w[1];
        if a_off + a_size > b_off {
            return Err(VerifyError::Overlap {
                first: s.fields[a].name.clone(),
                second: s.fields[b].name.clone(),
            });
        }
    }
    check_segments(s, &placed)?;
    check_tree(s, &placed)?;
    for &o in l.placement.offsets() {
        if o % l.align != 0 && !(o % l.line).is_multiple_of(l.align) {
            return Err(VerifyError::PlacementMisaligned {
                offset: o,
                align: l.align,
            });
        }
    }
    Ok(())
}

/// The author's order: a field of a lower [`Field::segment`](crate::model::Field)
/// ends before a field of a higher one starts (zero-size markers included),
/// and a first member kept first sits at offset 0. `placed` is
/// `(offset, size, field)` for every field.
fn check_segments(s: &Struct, placed: &[(u64, u64, usize)]) -> Result<(), VerifyError> {
    let mut by_segment: Vec<(u32, u64, u64, usize)> = placed
        .iter()
        .map(|&(off, size, i)| (s.fields[i].segment, off, off + size, i))
        .collect();
    by_segment.sort();
    // The field of the earlier segments that ends last.
    let mut latest: Option<(u64, usize)> = None;
    let mut k = 0;
    while k < by_segment.len() {
        let seg = by_segment[k].0;
        let mut group_end = k;
        while group_end < by_segment.len() && by_segment[group_end].0 == seg {
            group_end += 1;
        }
        let members = &by_segment[k..group_end];
        if let Some((end, before)) = latest {
            if let Some(&(_, _, _, after)) = members.iter().find(|m| m.1 < end) {
                return Err(VerifyError::Segment {
                    before: s.fields[before].name.clone(),
                    after: s.fields[after].name.clone(),
                });
            }
        }
        for &(_, _, end, i) in members {
            if latest.is_none_or(|(e, _)| end > e) {
                latest = Some((end, i));
            }
        }
        k = group_end;
    }
    if crate::segments::first_is_kept(s) {
        if let Some(&(off, _, _)) = placed.iter().find(|p| p.2 == 0) {
            if off != 0 {
                return Err(VerifyError::FirstMember {
                    field: s.fields[0].name.clone(),
                    offset: off,
                });
            }
        }
    }
    Ok(())
}

/// The struct's tree: every conditional block stays in one piece, and its
/// nodes (the author's line breaks, and the outermost blocks that hold one)
/// keep their declared order; other blocks move freely inside their part, in the order of the offsets (at one offset, zero-size
/// members first, then by segment and declaration). `placed` is `(offset,
/// size, field)` for every field.
fn check_tree(s: &Struct, placed: &[(u64, u64, usize)]) -> Result<(), VerifyError> {
    let mut order: Vec<(u64, bool, u32, usize)> = placed
        .iter()
        .map(|&(off, size, i)| (off, size != 0, s.fields[i].segment, i))
        .collect();
    order.sort_unstable();
    let mut position = vec![usize::MAX; s.fields.len()];
    for (k, &(_, _, _, i)) in order.iter().enumerate() {
        position[i] = k;
    }
    let at = |i: usize| position.get(i).copied().unwrap_or(usize::MAX);
    for block in s.blocks.iter().filter(|b| !b.is_empty()) {
        let lo = block.iter().map(|&f| at(f)).min().unwrap_or(0);
        let hi = block.iter().map(|&f| at(f)).max().unwrap_or(0);
        if hi == usize::MAX {
            continue;
        }
        if let Some(&(_, _, _, outside)) = order[lo..=hi]
            .iter()
            .find(|&&(_, _, _, i)| !block.contains(&i))
        {
            return Err(VerifyError::SplitBlock {
                inside: s.fields[block[0]].name.clone(),
                outside: s.fields[outside].name.clone(),
            });
        }
    }
    for list in s.lists.iter().filter(|l| l.len() >= 2) {
        if list
            .windows(2)
            .any(|w| at(w[0]) == usize::MAX || at(w[1]) != at(w[0]).saturating_add(1))
        {
            return Err(VerifyError::SplitDeclaration {
                first: s.fields[list[0]].name.clone(),
            });
        }
    }
    // The nodes: each line break, each block that holds one; one inside
    // another goes with it. Other blocks move freely inside their part.
    let mut nodes: Vec<Vec<usize>> = s.breaks.iter().map(|&f| vec![f]).collect();
    nodes.extend(
        s.blocks
            .iter()
            .filter(|b| b.iter().any(|f| s.breaks.contains(f)))
            .cloned(),
    );
    let within =
        |u: &Vec<usize>, v: &Vec<usize>| u.len() < v.len() && u.iter().all(|f| v.contains(f));
    let mut outer: Vec<(usize, usize)> = nodes
        .iter()
        .filter(|u| !nodes.iter().any(|v| within(u, v)))
        .map(|u| {
            let first = *u.iter().min().unwrap_or(&0);
            let start = u.iter().map(|&f| at(f)).min().unwrap_or(usize::MAX);
            (first, start)
        })
        .collect();
    outer.sort_unstable();
    outer.dedup();
    for w in outer.windows(2) {
        if w[0].1 >= w[1].1 {
            return Err(VerifyError::LineBreakOrder {
                earlier: s.fields[w[0].0].name.clone(),
                later: s.fields[w[1].0].name.clone(),
            });
        }
    }
    check_parts(s, &order)
}

/// A member outside every block and every line break lies in the part of
/// the struct (between two line breaks) it was declared in, or in one that
/// the author gave a member of its class, or anywhere when it is cold.
/// `order` is the layout's order, as in [`check_tree`].
fn check_parts(s: &Struct, order: &[(u64, bool, u32, usize)]) -> Result<(), VerifyError> {
    let starts = |i: usize| i != 0 && s.breaks.contains(&i);
    let mut declared = Vec::with_capacity(s.fields.len());
    let mut k = 0;
    for i in 0..s.fields.len() {
        if starts(i) {
            k += 1;
        }
        declared.push(k);
    }
    if k == 0 {
        return Ok(());
    }
    let held = |part: usize, access: &Access| {
        s.fields
            .iter()
            .enumerate()
            .any(|(i, f)| declared[i] == part && f.size > 0 && &f.access == access)
    };
    let mut part = 0;
    let mut kept = vec![false; k + 1];
    for &(_, _, _, i) in order {
        if starts(i) {
            part += 1;
        }
        let f = &s.fields[i];
        if declared[i] == part && f.size > 0 && !s.breaks.contains(&i) && !f.pinned {
            kept[part] = true;
        }
        // A block's member stays in its part with the block (a block that
        // holds a line break is ordered with the breaks instead).
        let blocks_of_i = || s.blocks.iter().filter(|b| b.contains(&i));
        let in_ordered_block = blocks_of_i().any(|b| b.iter().any(|f| s.breaks.contains(f)));
        let in_block = blocks_of_i().next().is_some();
        if in_block && !in_ordered_block && f.size > 0 && part != declared[i] {
            return Err(VerifyError::BlockLeftItsPart {
                field: f.name.clone(),
            });
        }
        let free = f.size == 0 || f.access == Access::Cold || s.breaks.contains(&i) || in_block;
        if !free && part != declared[i] && !held(part, &f.access) {
            return Err(VerifyError::LeftItsPart {
                field: f.name.clone(),
            });
        }
    }
    // Every part keeps a member of its own: each break still breaks.
    for (p, &kept) in kept.iter().enumerate() {
        let own =
            s.fields.iter().enumerate().find(|(i, f)| {
                declared[*i] == p && f.size > 0 && !s.breaks.contains(i) && !f.pinned
            });
        if let (Some((_, f)), false) = (own, kept) {
            return Err(VerifyError::EmptiedPart {
                field: f.name.clone(),
            });
        }
    }
    Ok(())
}

/// Is `f` (the last declared member) a flexible array member (`T x[]`, or
/// the GNU zero-length `T x[0]`)? Its elements live after the struct's
/// fixed part, so its class applies from its offset on.
pub fn is_trailing_flexible_array(f: &crate::model::Field) -> bool {
    let ty = f.ty.trim_end();
    f.size == 0 && (ty.ends_with("[]") || ty.ends_with("[0]"))
}

/// The hard rule, stated independently of the access vocabulary: may bytes
/// of `a` and `b` never share a line? Lockless against read-mostly, and
/// lockless fields of different writer groups (no group is one group).
pub fn must_not_share(a: &Access, b: &Access) -> bool {
    match (a, b) {
        (Access::Lockless { group: x }, Access::Lockless { group: y }) => x != y,
        (Access::Lockless { .. }, Access::ReadMostly)
        | (Access::ReadMostly, Access::Lockless { .. }) => true,
        (Access::Lockless { .. }, Access::LockedWrite { .. } | Access::Cold)
        | (
            Access::ReadMostly | Access::LockedWrite { .. } | Access::Cold,
            Access::ReadMostly | Access::LockedWrite { .. } | Access::Cold,
        )
        | (Access::LockedWrite { .. } | Access::Cold, Access::Lockless { .. }) => false,
    }
}

/// The access the rule judges a field by, stated here apart from the model's
/// `Field::rule_access`: a lock word (a lock whose own state every locker
/// writes) is a lockless writer of a group of its own, named after it.
fn rule_of(f: &crate::model::Field) -> Access {
    match &f.access {
        Access::LockedWrite { .. } if f.lock_word => Access::Lockless {
            group: Some(f.name.clone()),
        },
        a => a.clone(),
    }
}

/// Full verification: structure plus the hard rule at every allowed phase
/// (a trailing flexible array member holds the bytes from its offset on).
pub fn verify(s: &Struct, l: &Layout) -> Result<VerifiedLayout, VerifyError> {
    check_structure(s, l)?;
    let line = l.line;
    let phases: Vec<u64> = match l.placement {
        Placement::Offset(_) | Placement::Offsets(_) => {
            let mut v: Vec<u64> = l.placement.offsets().iter().map(|o| o % line).collect();
            v.sort_unstable();
            v.dedup();
            v
        }
        Placement::Aligned => {
            let mut v = Vec::new();
            let mut p = 0;
            while p < line {
                v.push(p);
                p += l.align.max(1);
            }
            v
        }
    };
    let base = match l.placement.first_offset() {
        Some(o) => o - o % line,
        None => 0,
    };
    let mut offset = vec![0u64; s.fields.len()];
    for sl in &l.slots {
        offset[sl.field] = sl.offset;
    }
    // Bytes each field holds for the rule: its own, and for a trailing
    // flexible array the bytes from its offset on, which the elements fill
    // (its own line's tail is enough: nothing of the struct comes after it).
    let last = s.fields.len().wrapping_sub(1);
    let extent = |i: usize| {
        let f = &s.fields[i];
        if i == last && is_trailing_flexible_array(f) {
            1
        } else {
            f.size
        }
    };
    // Sweep each phase in offset order: a field can only share a line with
    // the fields that start on or before its last line. Of all violations,
    // report the one with the first pair in declaration order (then the
    // first phase), whatever order the sweep finds them in.
    let rules: Vec<Access> = s.fields.iter().map(rule_of).collect();
    let mut by_offset: Vec<usize> = (0..s.fields.len()).filter(|&i| extent(i) > 0).collect();
    by_offset.sort_by_key(|&i| (offset[i], i));
    let mut worst: Option<(usize, usize, usize)> = None;
    for (pi, &p) in phases.iter().enumerate() {
        let lines = |i: usize| {
            (
                (p + offset[i]) / line,
                (p + offset[i] + extent(i) - 1) / line,
            )
        };
        for (k, &i) in by_offset.iter().enumerate() {
            let (_, i1) = lines(i);
            for &j in &by_offset[k + 1..] {
                let (j0, _) = lines(j);
                if j0 > i1 {
                    break;
                }
                if must_not_share(&rules[i], &rules[j]) {
                    let found = (i.min(j), i.max(j), pi);
                    if worst.is_none_or(|w| found < w) {
                        worst = Some(found);
                    }
                }
            }
        }
    }
    if let Some((i, j, pi)) = worst {
        let (a, b) = (&s.fields[i], &s.fields[j]);
        let (lockless, other) = if matches!(rules[i], Access::Lockless { .. }) {
            (a, b)
        } else {
            (b, a)
        };
        let p = phases[pi];
        return Err(VerifyError::HardRule {
            a: lockless.name.clone(),
            b: other.name.clone(),
            line: (base + p + offset[i].max(offset[j])) / line,
            phase: p,
        });
    }
    Ok(VerifiedLayout {
        layout: l.clone(),
        strukt: s.clone(),
    })
}

/// Checks each need of the tree-safety pass against the layout `l` of `s`,
/// from the offsets alone (none of the model's encoding of them is read):
/// members kept first are the first in offset order, in their order;
/// members kept together are next to each other in their order; members
/// kept last are the last; pinned ones sit at their declared offsets
/// (`declared`). Order at one offset: zero-size members first, then by
/// declaration.
pub fn check_tree_needs(
    s: &Struct,
    l: &Layout,
    declared: &Layout,
    needs: &[crate::tree_safety::TreeConstraint],
) -> Result<(), VerifyError> {
    use crate::tree_safety::Need;
    let mut order: Vec<(u64, bool, usize)> = l
        .slots
        .iter()
        .map(|sl| (sl.offset, s.fields[sl.field].size != 0, sl.field))
        .collect();
    order.sort_unstable();
    let mut position = vec![usize::MAX; s.fields.len()];
    for (k, &(_, _, f)) in order.iter().enumerate() {
        position[f] = k;
    }
    let offset_in =
        |l: &Layout, f: usize| l.slots.iter().find(|sl| sl.field == f).map(|sl| sl.offset);
    for c in needs {
        let broken = || VerifyError::TreeNeed {
            site: c.site_text(),
            keeps: c.keeps(),
        };
        let names = match &c.need {
            Need::First(n) | Need::Run(n) | Need::Last(n) | Need::Pin(n) => n,
            _ => continue,
        };
        let fields: Option<Vec<usize>> = names.iter().map(|m| s.field_index(m)).collect();
        let fields = fields.ok_or_else(broken)?;
        let at: Vec<usize> = fields.iter().map(|&f| position[f]).collect();
        let in_order = at.windows(2).all(|w| w[1] == w[0].wrapping_add(1));
        let ok = match &c.need {
            Need::First(_) => in_order && at.first() == Some(&0),
            Need::Run(_) => in_order,
            Need::Last(_) => in_order && at.last() == Some(&(s.fields.len() - 1)),
            _ => fields
                .iter()
                .all(|&f| offset_in(l, f).is_some() && offset_in(l, f) == offset_in(declared, f)),
        };
        if !ok {
            return Err(broken());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Slot;
    use crate::model::Field;

    fn struct_with_a_block_and_a_padding() -> Struct {
        let long = |n: &str, access: Access| Field::new(n, "long", 8, 8).with_access(access);
        let pad = Field::new("_pad1_", "struct cacheline_padding", 0, 64);
        let mut s = Struct::new(
            "s",
            vec![
                long("head", Access::ReadMostly),
                pad,
                long("a", Access::ReadMostly),
                long("b", Access::Cold),
                long("c", Access::Cold),
                long("d", Access::Lockless { group: None }),
            ],
        );
        crate::segments::assign(&mut s, crate::segments::Keep::default());
        s.blocks = vec![vec![3, 4]];
        s
    }

    fn at(offsets: &[u64], size: u64) -> Layout {
        Layout {
            slots: offsets
                .iter()
                .enumerate()
                .map(|(field, &offset)| Slot { field, offset })
                .collect(),
            size,
            align: 64,
            line: 64,
            placement: Placement::Aligned,
        }
    }

    #[test]
    fn the_tree_is_checked_from_the_offsets() {
        let s = struct_with_a_block_and_a_padding();
        // Declared: head | pad a b c d.
        assert!(verify(&s, &at(&[0, 64, 64, 72, 80, 128], 192)).is_ok());
        // `a` crosses the padding into the head's part (read-mostly there).
        assert!(verify(&s, &at(&[0, 64, 8, 64, 72, 128], 192)).is_ok());
        // `d` may not: no lockless member in the head's part.
        let e = verify(&s, &at(&[0, 64, 64, 72, 80, 8], 128)).unwrap_err();
        assert!(matches!(e, VerifyError::LeftItsPart { .. }), "{e}");
        // `a` between `b` and `c` splits their block.
        let e = verify(&s, &at(&[0, 64, 72, 64, 80, 128], 192)).unwrap_err();
        assert!(matches!(e, VerifyError::SplitBlock { .. }), "{e}");
        // The block crosses the padding: it stays in its part.
        let e = verify(&s, &at(&[0, 64, 72, 8, 16, 128], 192)).unwrap_err();
        assert!(matches!(e, VerifyError::BlockLeftItsPart { .. }), "{e}");
        // Inside its part it moves freely: before `a` now.
        assert!(verify(&s, &at(&[0, 64, 80, 64, 72, 128], 192)).is_ok());
    }

    #[test]
    fn blocks_move_among_each_other() {
        let long = |n: &str, a: Access| Field::new(n, "long", 8, 8).with_access(a);
        let pad = Field::new("_pad1_", "struct cacheline_padding", 0, 64);
        let mut s = Struct::new(
            "s",
            vec![
                long("head", Access::ReadMostly),
                long("x", Access::Cold),
                long("y", Access::Cold),
                pad,
                long("z", Access::Cold),
            ],
        );
        crate::segments::assign(&mut s, crate::segments::Keep::default());
        s.blocks = vec![vec![1], vec![2]];
        // Declared: head x y | pad z; the two blocks swapped: fine.
        assert!(verify(&s, &at(&[0, 16, 8, 64, 64], 128)).is_ok());
        // A block may not cross the padding.
        let e = verify(&s, &at(&[0, 8, 72, 64, 64], 128)).unwrap_err();
        assert!(matches!(e, VerifyError::BlockLeftItsPart { .. }), "{e}");
    }

    #[test]
    fn a_break_that_no_longer_breaks_is_refused() {
        let long = |n: &str| Field::new(n, "long", 8, 8).with_access(Access::ReadMostly);
        let pad = Field::new("_pad1_", "struct cacheline_padding", 0, 64);
        let mut s = Struct::new("s", vec![long("head"), pad, long("a")]);
        crate::segments::assign(&mut s, crate::segments::Keep::default());
        assert!(verify(&s, &at(&[0, 64, 64], 128)).is_ok());
        // `a` may join the head (same class), but then nothing is left
        // after the padding.
        let e = verify(&s, &at(&[0, 64, 8], 64)).unwrap_err();
        assert!(matches!(e, VerifyError::EmptiedPart { .. }), "{e}");
    }
}
