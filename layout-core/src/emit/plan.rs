//! What C needs to place every member of a verified layout at its offset.
//!
//! C places members one after another, each at the next multiple of its
//! alignment. Replaying that over the layout's order tells, member by member,
//! whether C lands on the verified offset by itself, needs the member to
//! start a new line of the struct (an alignment break, spelled by the
//! [`super::CStyle`]), or needs explicit padding bytes before it. This is
//! rendering: the offsets come from the layout and are never changed.

use crate::error::Diagnostic;
use crate::layout::Layout;
use crate::model::Struct;
use crate::place::{Cursor, Member};
use crate::report::ordered_slots;

/// One entry of the member list C will see, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Item {
    /// A member of the struct. `line_break`: it must start a new line of the
    /// struct (aligned to the line size, which also raises the struct's
    /// alignment to the line size).
    Member {
        field: usize,
        offset: u64,
        line_break: bool,
    },
    /// `bytes` of explicit padding at struct offset `at`, before the member
    /// `before` (`None`: tail padding).
    Pad {
        at: u64,
        bytes: u64,
        before: Option<usize>,
    },
}

/// What is known of a member's own alignment, without a cacheline attribute.
#[derive(Clone, Copy)]
enum Natural {
    Known(u64),
    /// The declaration carries a cacheline attribute and the model's
    /// alignment is the line size: the type's own alignment is unknown, at
    /// most the line size.
    AtMostLine,
}

/// Where C places a member of `size` bytes aligned to `align` when the
/// members before it end at `pos`.
fn c_places(pos: u64, size: u64, align: u64) -> u64 {
    Cursor::at(pos).place(&Member::new(size, align))
}

/// What C needs for `l`: the member list, and an `aligned` attribute on the
/// struct itself where neither a member nor a line break gives the layout's
/// alignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub items: Vec<Item>,
    /// `Some(a)`: the struct definition needs `__aligned(a)`.
    pub struct_align: Option<u64>,
}

/// Where a line-aligned layout that no member needs a break for gets its
/// alignment from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum StructBreak<'a> {
    /// A member at a line multiple carries a break; `preferred[i]`: field
    /// `i`'s break is spelled already (an attribute, a padding line before
    /// it), so it goes there first and the diff does not churn.
    Member { preferred: &'a [bool] },
    /// The style aligns the start of the struct itself (the first group's
    /// aligned begin marker).
    Start,
}

/// The plan for `l`. `has_attribute[i]`: field `i`'s declaration already
/// carries a cacheline attribute (the front-end may have folded it into the
/// field's alignment).
pub(crate) fn plan(
    s: &Struct,
    l: &Layout,
    has_attribute: &[bool],
    struct_break: StructBreak,
) -> Result<Plan, Diagnostic> {
    let line = l.line;
    let breaks_allowed = l.align >= line;
    let natural = |i: usize| {
        let f = &s.fields[i];
        if has_attribute.get(i).copied().unwrap_or(false) && f.align == line {
            Natural::AtMostLine
        } else {
            Natural::Known(f.align)
        }
    };

    let mut items = Vec::new();
    let mut pos = 0u64;
    for sl in ordered_slots(s, l) {
        let f = &s.fields[sl.field];
        let target = sl.offset;
        if target < pos {
            return Err(Diagnostic::new(format!(
                "field `{}` at offset {target} overlaps the member before it, which ends at {pos}",
                f.name
            )));
        }
        let lands = match natural(sl.field) {
            Natural::Known(a) => c_places(pos, f.size, a) == target,
            Natural::AtMostLine => pos == target,
        };
        let aligned_align = match natural(sl.field) {
            Natural::Known(a) => a.max(line),
            Natural::AtMostLine => line,
        };
        let line_break = !lands
            && breaks_allowed
            && target % line == 0
            && c_places(pos, f.size, aligned_align) == target;
        if !lands && !line_break {
            items.push(Item::Pad {
                at: pos,
                bytes: target - pos,
                before: Some(sl.field),
            });
        }
        items.push(Item::Member {
            field: sl.field,
            offset: target,
            line_break,
        });
        pos = target + f.size;
    }

    let struct_align = ensure_struct_align(s, l, has_attribute, struct_break, &mut items);

    // C's size is the end of the last member rounded up to the alignment,
    // which is now the layout's; anything beyond that is explicit.
    if Cursor::at(pos).finish(l.align).size != l.size && l.size > pos {
        items.push(Item::Pad {
            at: pos,
            bytes: l.size - pos,
            before: None,
        });
    }
    Ok(Plan {
        items,
        struct_align,
    })
}

/// Makes C's struct alignment the layout's: a line-aligned layout needs one
/// line break somewhere, even where no member needs one for its offset; any
/// other alignment the members do not give comes from an attribute on the
/// struct (returned).
fn ensure_struct_align(
    s: &Struct,
    l: &Layout,
    has_attribute: &[bool],
    struct_break: StructBreak,
    items: &mut [Item],
) -> Option<u64> {
    let line = l.line;
    let known = s
        .fields
        .iter()
        .enumerate()
        .filter(|(i, f)| !(has_attribute.get(*i).copied().unwrap_or(false) && f.align == line))
        .map(|(_, f)| f.align)
        .fold(s.min_align.max(1), u64::max);
    let has_break = items.iter().any(|it| {
        matches!(
            it,
            Item::Member {
                line_break: true,
                ..
            }
        )
    });
    let starts_line = matches!(struct_break, StructBreak::Start) && l.align >= line;
    let achieved = if has_break || starts_line {
        known.max(line)
    } else {
        known
    };
    if achieved >= l.align {
        return None;
    }
    let StructBreak::Member { preferred } = struct_break else {
        return Some(l.align);
    };
    if l.align != line {
        return Some(l.align);
    }
    // Any member at a line multiple can carry the break without moving: C
    // reaches it with `pos <= offset`, and rounding up to the line stops at
    // the offset. Prefer one whose break is spelled already.
    let at_line = |it: &Item| matches!(it, Item::Member { offset, .. } if offset % line == 0);
    let carrier = items
        .iter()
        .position(|it| {
            at_line(it)
                && matches!(it, Item::Member { field, .. }
                    if preferred.get(*field).copied().unwrap_or(false))
        })
        .or_else(|| items.iter().position(at_line));
    match carrier.map(|i| &mut items[i]) {
        Some(Item::Member { line_break, .. }) => {
            *line_break = true;
            None
        }
        // No member at all: the struct's own attribute gives the alignment.
        _ => Some(l.align),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Slot;
    use crate::model::{Field, Placement};

    fn layout(offsets: &[u64], size: u64, align: u64, placement: Placement) -> Layout {
        Layout {
            slots: offsets
                .iter()
                .enumerate()
                .map(|(field, &offset)| Slot { field, offset })
                .collect(),
            size,
            align,
            line: 64,
            placement,
        }
    }

    #[test]
    fn break_where_rounding_to_the_line_reaches_the_offset() {
        let s = Struct::new(
            "s",
            vec![Field::new("a", "long", 8, 8), Field::new("b", "long", 8, 8)],
        );
        let items = plan(
            &s,
            &layout(&[0, 64], 128, 64, Placement::Aligned),
            &[false, false],
            StructBreak::Member {
                preferred: &[false, false],
            },
        )
        .unwrap()
        .items;
        assert_eq!(
            items,
            vec![
                Item::Member {
                    field: 0,
                    offset: 0,
                    line_break: false
                },
                Item::Member {
                    field: 1,
                    offset: 64,
                    line_break: true
                },
            ]
        );
    }

    #[test]
    fn padding_where_the_struct_is_not_line_aligned() {
        let s = Struct::new(
            "s",
            vec![Field::new("a", "long", 8, 8), Field::new("b", "long", 8, 8)],
        );
        // Phase 48: struct offset 16 is the container's line boundary.
        let items = plan(
            &s,
            &layout(&[0, 16], 24, 8, Placement::Offset(48)),
            &[false, false],
            StructBreak::Member {
                preferred: &[false, false],
            },
        )
        .unwrap()
        .items;
        assert_eq!(
            items[1],
            Item::Pad {
                at: 8,
                bytes: 8,
                before: Some(1)
            }
        );
    }

    #[test]
    fn line_aligned_layout_without_a_needed_break_puts_one_on_the_first_member() {
        let s = Struct::new("s", vec![Field::new("a", "long", 8, 8)]);
        let items = plan(
            &s,
            &layout(&[0], 64, 64, Placement::Aligned),
            &[false],
            StructBreak::Member {
                preferred: &[false],
            },
        )
        .unwrap()
        .items;
        assert_eq!(
            items,
            vec![Item::Member {
                field: 0,
                offset: 0,
                line_break: true
            }]
        );
    }

    #[test]
    fn an_existing_attribute_is_kept_only_where_needed() {
        let mut b = Field::new("b", "long", 8, 64);
        b.align = 64;
        let s = Struct::new("s", vec![Field::new("a", "long", 64, 8), b]);
        // b directly follows a at 64: no break for its offset, but the struct
        // is line-aligned, and b already carries the attribute.
        let items = plan(
            &s,
            &layout(&[0, 64], 128, 64, Placement::Aligned),
            &[false, true],
            StructBreak::Member {
                preferred: &[false, true],
            },
        )
        .unwrap()
        .items;
        assert_eq!(
            items,
            vec![
                Item::Member {
                    field: 0,
                    offset: 0,
                    line_break: false
                },
                Item::Member {
                    field: 1,
                    offset: 64,
                    line_break: true
                },
            ]
        );
    }

    #[test]
    fn an_alignment_no_member_gives_comes_from_the_struct() {
        let s = Struct::new(
            "s",
            vec![Field::new("a", "long", 8, 8), Field::new("b", "long", 8, 8)],
        );
        let l = layout(&[0, 64], 80, 16, Placement::Aligned);
        let p = plan(
            &s,
            &l,
            &[false, false],
            StructBreak::Member {
                preferred: &[false, false],
            },
        )
        .unwrap();
        assert_eq!(p.struct_align, Some(16));
        assert_eq!(
            p.items[1],
            Item::Pad {
                at: 8,
                bytes: 56,
                before: Some(1)
            }
        );
        // The struct's own attribute counts.
        let mut s16 = s.clone();
        s16.min_align = 16;
        let p = plan(
            &s16,
            &l,
            &[false, false],
            StructBreak::Member {
                preferred: &[false, false],
            },
        )
        .unwrap();
        assert_eq!(p.struct_align, None);
    }

    #[test]
    fn a_style_that_aligns_the_start_needs_no_carrier() {
        let s = Struct::new("s", vec![Field::new("a", "long", 8, 8)]);
        let l = layout(&[0], 64, 64, Placement::Aligned);
        let p = plan(&s, &l, &[false], StructBreak::Start).unwrap();
        assert_eq!(p.struct_align, None);
        assert_eq!(
            p.items,
            vec![Item::Member {
                field: 0,
                offset: 0,
                line_break: false
            }]
        );
    }

    #[test]
    fn the_carrier_is_a_member_whose_break_is_spelled_already() {
        let s = Struct::new(
            "s",
            vec![
                Field::new("a", "long", 64, 8),
                Field::new("b", "long", 8, 8),
            ],
        );
        let l = layout(&[0, 64], 128, 64, Placement::Aligned);
        let p = plan(
            &s,
            &l,
            &[false, false],
            StructBreak::Member {
                preferred: &[false, true],
            },
        )
        .unwrap();
        let breaks: Vec<bool> = p
            .items
            .iter()
            .map(|it| {
                matches!(
                    it,
                    Item::Member {
                        line_break: true,
                        ..
                    }
                )
            })
            .collect();
        assert_eq!(breaks, [false, true]);
    }
}
