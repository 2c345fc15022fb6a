//! The independent verifier. It recomputes everything from the model and the
//! offsets alone: every field placed once, aligned, without overlap, pinned
//! fields where they were, the author's order kept (fields in nondecreasing
//! [`segment`](crate::model::Field::segment) order, a first member kept
//! first at offset 0), size and alignment consistent, and the hard rule at
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
    if let Placement::Offset(o) = l.placement {
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
        Placement::Offset(o) => vec![o % line],
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
    let base = match l.placement {
        Placement::Offset(o) => o - o % line,
        Placement::Aligned => 0,
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
