//! The last check before a diff leaves: what the renderer wrote, placed the
//! way C places members, must give the verified layout exactly.
//!
//! The renderer records every member, marker and padding array it writes, in
//! text order, with the alignment C will give it. This module places them
//! with the placement engine ([`crate::place`]) and compares with the
//! layout. It knows nothing of styles: a style that cannot express a layout
//! fails here with a message that names the first member off its offset.

use crate::error::Diagnostic;
use crate::layout::Layout;
use crate::model::Struct;
use crate::place::{Bitfield, Cursor, Extent, Kind, Member};

/// The alignment C gives a member as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CAlign {
    Known(u64),
    /// The type's own alignment is unknown, at most the line size (the
    /// front-end folded a cacheline attribute, now removed, into the
    /// field's alignment): only an exact landing is certain.
    AtMostLine,
}

/// One thing in the struct body, as C sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CItem {
    Field {
        field: usize,
        align: CAlign,
    },
    /// A zero-size member aligned to `align` (`CACHELINE_PADDING`, group
    /// markers).
    Marker {
        align: u64,
    },
    /// An explicit `u8 name[bytes]` array.
    Pad {
        bytes: u64,
    },
    /// A zero-width bit-field `T :0;` of a type aligned to `align`: the
    /// next bit-field starts on a multiple of it; the struct's alignment
    /// does not change.
    Guard {
        align: u64,
    },
    /// A later declaration of `field`, which `#if` blocks split (a
    /// bit-field run with conditional bit-fields): it adds bits to the
    /// field placed at its first, so nothing C places may come between.
    Piece {
        field: usize,
    },
}

/// Places `items` and compares with `l`; `struct_align` is the struct's own
/// `aligned` attribute (1 when none). The error names what went wrong.
pub(crate) fn check(
    s: &Struct,
    l: &Layout,
    items: &[CItem],
    struct_align: u64,
) -> Result<(), String> {
    let mut c = Cursor::new(Kind::Struct);
    let mut placed = vec![None; s.fields.len()];
    for (k, item) in items.iter().enumerate() {
        match *item {
            CItem::Field { field, align: a } => {
                let f = s
                    .fields
                    .get(field)
                    .ok_or_else(|| format!("a member names field {field}, which does not exist"))?;
                let target = l
                    .slot_of(field)
                    .map(|sl| sl.offset)
                    .ok_or_else(|| format!("field `{}` has no offset in the layout", f.name))?;
                let at = match a {
                    CAlign::Known(a) => c.place(&Member::new(f.size, a)),
                    // Anything up to the line is possible; only the end so
                    // far itself is certain, and only when it is the target.
                    CAlign::AtMostLine if c.end() == target => c.place(&Member::new(f.size, 1)),
                    CAlign::AtMostLine => {
                        return Err(format!(
                            "gcc would place `{}` somewhere from offset {} on, depending \
                             on its type's alignment, not surely at {target}",
                            f.name,
                            c.end()
                        ))
                    }
                };
                if at != target {
                    return Err(format!(
                        "gcc would place `{}` at offset {at}, not at {target}",
                        f.name
                    ));
                }
                if placed[field].replace(at).is_some() {
                    return Err(format!("field `{}` is written twice", f.name));
                }
            }
            CItem::Marker { align: a } => {
                c.place(&Member::new(0, a));
            }
            CItem::Pad { bytes } => {
                c.place(&Member::new(bytes, 1));
            }
            CItem::Piece { field } => {
                let name = s.fields.get(field).map_or("?", |f| f.name.as_str());
                let joins = match k.checked_sub(1).map(|j| items[j]) {
                    Some(CItem::Field { field: f, .. } | CItem::Piece { field: f }) => f == field,
                    _ => false,
                };
                if !joins {
                    return Err(format!(
                        "something is written between the declarations of `{name}`, \
                         which gcc would place inside its bits"
                    ));
                }
            }
            CItem::Guard { align: a } => {
                let unit = Bitfield {
                    width: 0,
                    unit_bits: a.saturating_mul(8),
                    limit_bits: a.saturating_mul(8),
                    straddles: false,
                };
                c.place(&Member::bitfield(a, 1, unit));
            }
        }
    }
    if let Some(i) = placed.iter().position(Option::is_none) {
        return Err(format!("field `{}` is not written", s.fields[i].name));
    }
    // A field of unknown alignment adds at most the line size, which the
    // layout's alignment already holds (its model alignment is the line).
    let Extent { size, align } = c.finish(struct_align);
    if align != l.align {
        return Err(format!(
            "gcc would align struct {} to {align} bytes, not {}",
            s.name, l.align
        ));
    }
    if size != l.size {
        return Err(format!(
            "gcc would make struct {} {size} bytes, not {}",
            s.name, l.size
        ));
    }
    Ok(())
}

/// The diagnostic for a rendering that `check` refused.
pub(crate) fn refusal(s: &Struct, style: super::CStyle, why: &str) -> Diagnostic {
    let d = Diagnostic::new(format!(
        "the {style} style cannot express this layout of struct {}: {why}",
        s.name
    ));
    if style == super::CStyle::Aligned {
        d.help("this is a bug in cachelayout; please report it with the header")
    } else {
        d.help("use --style aligned, which can")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Slot;
    use crate::model::{Field, Placement};

    fn two_longs(offsets: [u64; 2], size: u64, align: u64) -> (Struct, Layout) {
        let s = Struct::new(
            "s",
            vec![Field::new("a", "long", 8, 8), Field::new("b", "long", 8, 8)],
        );
        let l = Layout {
            slots: vec![
                Slot {
                    field: 0,
                    offset: offsets[0],
                },
                Slot {
                    field: 1,
                    offset: offsets[1],
                },
            ],
            size,
            align,
            line: 64,
            placement: Placement::Aligned,
        };
        (s, l)
    }

    const A: CItem = CItem::Field {
        field: 0,
        align: CAlign::Known(8),
    };
    const B: CItem = CItem::Field {
        field: 1,
        align: CAlign::Known(8),
    };

    #[test]
    fn a_line_marker_reaches_the_next_line() {
        let (s, l) = two_longs([0, 64], 128, 64);
        assert_eq!(
            check(&s, &l, &[A, CItem::Marker { align: 64 }, B], 1),
            Ok(())
        );
        let err = check(&s, &l, &[A, B], 1).unwrap_err();
        assert_eq!(err, "gcc would place `b` at offset 8, not at 64");
    }

    #[test]
    fn size_and_alignment_must_match() {
        let (s, l) = two_longs([0, 8], 16, 8);
        assert_eq!(check(&s, &l, &[A, B], 1), Ok(()));
        assert_eq!(
            check(&s, &l, &[A, B, CItem::Marker { align: 64 }], 1).unwrap_err(),
            "gcc would align struct s to 64 bytes, not 8"
        );
        let (s, l) = two_longs([0, 8], 16, 16);
        assert_eq!(check(&s, &l, &[A, B], 16), Ok(()));
        assert_eq!(
            check(&s, &l, &[A, B, CItem::Pad { bytes: 24 }], 16).unwrap_err(),
            "gcc would make struct s 48 bytes, not 16"
        );
    }

    #[test]
    fn unknown_alignment_only_lands_exactly() {
        let (s, l) = two_longs([0, 64], 128, 64);
        let b = CItem::Field {
            field: 1,
            align: CAlign::AtMostLine,
        };
        let at_most = check(&s, &l, &[A, CItem::Pad { bytes: 56 }, b], 64);
        assert_eq!(at_most, Ok(()));
        assert!(check(&s, &l, &[A, b], 64)
            .unwrap_err()
            .contains("not surely at 64"));
    }

    #[test]
    fn a_later_declaration_of_a_field_follows_it_directly() {
        let (s, l) = two_longs([0, 8], 16, 8);
        let piece = CItem::Piece { field: 0 };
        assert_eq!(check(&s, &l, &[A, piece, piece, B], 1), Ok(()));
        let err = check(&s, &l, &[A, CItem::Marker { align: 1 }, piece, B], 1).unwrap_err();
        assert!(err.contains("between the declarations of `a`"), "{err}");
        assert!(check(&s, &l, &[A, B, piece], 1).is_err());
        assert!(check(&s, &l, &[piece, A, B], 1).is_err());
    }

    #[test]
    fn every_field_once() {
        let (s, l) = two_longs([0, 8], 16, 8);
        assert_eq!(
            check(&s, &l, &[A], 1).unwrap_err(),
            "field `b` is not written"
        );
    }
}
