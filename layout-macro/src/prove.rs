//! The rule for every instantiation of a generic struct, proven at its
//! definition.
//!
//! The compile-time checks of a generic struct can only run per
//! instantiation, and only for the instantiations rustc evaluates (a struct
//! literal evaluates none, `cargo check` none of the post-monomorphization
//! ones). So the derive also proves, from the tokens, that *no*
//! instantiation breaks the rule: a field whose size the macro does not know
//! (a type parameter, `[T; N]`, `Slot<T>`, a type from another crate) may
//! have any size from 0 up and any power-of-two alignment.
//!
//! - In the default representation rustc may put any two fields next to
//!   each other, so two fields that must not share a line are apart for sure
//!   only when one of them fills whole lines by itself: a known size that is
//!   a multiple of the line, aligned to at least the line.
//! - Under `#[repr(C)]` the order is fixed and each field starts at the end
//!   of the previous one rounded up to its alignment. The proof follows the
//!   fields with what is known about each position: an exact offset, or a
//!   lower bound and a power of two it is a multiple of. Two fields are apart
//!   when a field between them (or the later one) starts on a line boundary
//!   (aligned to the line, in a struct aligned to the line), when the known
//!   bytes between them fill a line, or when a line boundary falls between
//!   the earlier one's exact end and the least start of the later one at
//!   every phase the struct's alignment allows.
//!
//! The classes are the ones the attributes and the type names give; a class
//! a field's type carries through `AccessClass` is still checked per
//! instantiation by the generated checks.

use crate::attr::Input;
use crate::model::Model;
use layout_core::place::align_up;
use layout_core::Access;

/// What the proof knows about one field, in declaration order.
#[derive(Clone, Debug)]
pub struct Piece {
    /// `None` when the size depends on the instantiation (or the macro cannot
    /// size the type): any size from 0 up.
    pub size: Option<u64>,
    /// `None`: any power of two.
    pub align: Option<u64>,
    /// Every class the checks may give the field.
    pub classes: Vec<Access>,
}

/// The struct's representation as the proof needs it.
#[derive(Clone, Copy, Debug)]
pub struct Repr {
    /// `#[repr(C)]`: the fields stay in declaration order.
    pub c: bool,
    /// `repr(packed)`: fields may sit at any byte, instances too.
    pub packed: bool,
    /// `repr(align(N))`, or 1.
    pub min_align: u64,
    pub line: u64,
}

/// What is known about an offset from the struct's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pos {
    Exact(u64),
    /// At least `min`, and a multiple of `multiple` (a power of two).
    AtLeast {
        min: u64,
        multiple: u64,
    },
}

/// The largest power of two dividing `n` (`n = 0` is divided by all).
fn low_bit(n: u64) -> u64 {
    if n == 0 {
        1 << 63
    } else {
        1 << n.trailing_zeros()
    }
}

impl Pos {
    fn min(self) -> u64 {
        match self {
            Pos::Exact(n) => n,
            Pos::AtLeast { min, .. } => min,
        }
    }

    fn multiple(self) -> u64 {
        match self {
            Pos::Exact(n) => low_bit(n),
            Pos::AtLeast { multiple, .. } => multiple,
        }
    }

    /// Where a field of alignment `align` placed here starts.
    fn start(self, align: Option<u64>) -> Pos {
        match (self, align) {
            (Pos::Exact(n), Some(a)) => Pos::Exact(align_up(n, a)),
            (Pos::AtLeast { min, multiple }, Some(a)) => Pos::AtLeast {
                min: align_up(min, a),
                multiple: multiple.max(a),
            },
            // Rounding up to an unknown power of two keeps every power of
            // two the position was a multiple of.
            (pos, None) => Pos::AtLeast {
                min: pos.min(),
                multiple: pos.multiple(),
            },
        }
    }

    /// The end of a field of `size` bytes that starts here.
    fn end(self, size: Option<u64>) -> Pos {
        match (self, size) {
            (Pos::Exact(n), Some(s)) => Pos::Exact(n.saturating_add(s)),
            (Pos::AtLeast { min, multiple }, Some(s)) => Pos::AtLeast {
                min: min.saturating_add(s),
                multiple: multiple.min(low_bit(s)),
            },
            (pos, None) => Pos::AtLeast {
                min: pos.min(),
                multiple: 1,
            },
        }
    }
}

/// The pairs of fields (declaration indices, the earlier first) that must
/// not share a line and that some instantiation may put on one. Empty when
/// the rule holds for every instantiation.
pub fn doubts(pieces: &[Piece], repr: Repr) -> Vec<(usize, usize)> {
    let line = repr.line;
    let known_align = |p: &Piece| if repr.packed { None } else { p.align };
    // The least alignment the struct can have: the fewer phases checked
    // against, the more an instance may start at, so this covers them all.
    let struct_align = if repr.packed {
        1
    } else {
        pieces
            .iter()
            .filter_map(|p| p.align)
            .fold(repr.min_align.max(1), u64::max)
    };
    let fills_lines = |p: &Piece| matches!((p.size, known_align(p)), (Some(s), Some(a)) if a >= line && s % line == 0);
    let empty = |p: &Piece| p.size == Some(0);
    let hard: Vec<(usize, usize)> = (0..pieces.len())
        .flat_map(|i| (i + 1..pieces.len()).map(move |j| (i, j)))
        .filter(|&(i, j)| {
            let (a, b) = (&pieces[i], &pieces[j]);
            crate::model::may_conflict(&a.classes, &b.classes) && !empty(a) && !empty(b)
        })
        .collect();
    if hard.is_empty() {
        return hard;
    }
    if !repr.c {
        return hard
            .into_iter()
            .filter(|&(i, j)| !fills_lines(&pieces[i]) && !fills_lines(&pieces[j]))
            .collect();
    }
    // `repr(C)`: every field's start and end, in order.
    let mut starts = Vec::with_capacity(pieces.len());
    let mut ends = Vec::with_capacity(pieces.len());
    let mut at = Pos::Exact(0);
    for p in pieces {
        let start = at.start(known_align(p));
        at = start.end(p.size);
        starts.push(start);
        ends.push(at);
    }
    // The last field up to each index that starts on a line boundary of an
    // instance (only when every instance starts on one).
    let mut last_boundary: Vec<Option<usize>> = Vec::with_capacity(pieces.len());
    let mut last = None;
    for (k, s) in starts.iter().enumerate() {
        if struct_align >= line && s.multiple() >= line {
            last = Some(k);
        }
        last_boundary.push(last);
    }
    // Known bytes before each index.
    let mut known_bytes = vec![0u64; pieces.len() + 1];
    for (k, p) in pieces.iter().enumerate() {
        known_bytes[k + 1] = known_bytes[k].saturating_add(p.size.unwrap_or(0));
    }
    let step = struct_align.min(line);
    let apart = |i: usize, j: usize| {
        if last_boundary[j].is_some_and(|k| k > i) {
            return true;
        }
        if known_bytes[j].saturating_sub(known_bytes[i + 1]) >= line - 1 {
            return true;
        }
        if let Pos::Exact(end) = ends[i] {
            let least = starts[j].min();
            return (0..line)
                .step_by(step as usize)
                .all(|phase| align_up(phase + end, line) <= phase.saturating_add(least));
        }
        false
    };
    hard.into_iter().filter(|&(i, j)| !apart(i, j)).collect()
}

/// The derive's proof for a generic struct: `Err` with one message, at
/// the struct's name, naming the pairs of fields some instantiation may put
/// on one line, why, and how to fix it; `advice` ends it (the layout the
/// solver suggests).
pub fn check(input: &Input, model: &Model, advice: &str) -> syn::Result<()> {
    let pieces: Vec<Piece> = model
        .known
        .iter()
        .zip(&model.classes)
        .map(|(known, classes)| Piece {
            size: known.map(|k| k.size),
            align: known.map(|k| k.align),
            classes: classes.clone(),
        })
        .collect();
    let repr = Repr {
        c: input.repr.c,
        packed: input.repr.packed,
        min_align: input.repr.align.unwrap_or(1),
        line: model.line,
    };
    let doubts = doubts(&pieces, repr);
    if doubts.is_empty() {
        return Ok(());
    }
    // A field's class in the message; the note says when only a class its
    // type may carry (not the one the macro gave it) conflicts with `other`.
    let name = |i: usize, other: usize| {
        let f = &input.fields[i];
        let guess = &pieces[i].classes[0];
        let mut text = class_words(guess, &f.name);
        if !crate::model::may_conflict(std::slice::from_ref(guess), &pieces[other].classes) {
            text.push_str(&format!(
                " (its type `{}` may count as lockless through its `cachelayout::AccessClass`: a \
                 class attribute on the field, such as #[layout(lockless)], fixes its class)",
                crate::types::display(&f.ty)
            ));
        }
        text
    };
    const SHOWN: usize = 6;
    let mut pairs: Vec<String> = doubts
        .iter()
        .take(SHOWN)
        .map(|&(i, j)| format!("{} and {}", name(i, j), name(j, i)))
        .collect();
    if doubts.len() > SHOWN {
        pairs.push(format!("{} more pairs", doubts.len() - SHOWN));
    }
    let unsized_fields: Vec<String> = input
        .fields
        .iter()
        .zip(&model.known)
        .filter(|(_, k)| k.is_none())
        .map(|(f, _)| format!("`{}` ({})", f.name, crate::types::display(&f.ty)))
        .collect();
    let why = if !repr.c {
        "rustc may put any two fields of a struct without #[repr(C)] next to each other; only a \
         field that fills whole lines by itself, aligned to the line and a multiple of it in size, is \
         apart from the others for sure"
            .to_string()
    } else if unsized_fields.is_empty() {
        "no line boundary falls between them at every offset an instance can start at".to_string()
    } else {
        format!(
            "the macro cannot size {}, which may have any size and alignment, so no line boundary \
             falls between them for sure",
            unsized_fields.join(", ")
        )
    };
    let line = model.line;
    let repr_c = if repr.c { "" } else { "write #[repr(C)] and " };
    let mut msg = format!(
        "cachelayout: `{}` is generic, so #[derive(CacheLayout)] proves the rule at the definition for \
         every instantiation, and cannot here: {} may share a {line}-byte cache line in some \
         instantiation ({why}); fix: {repr_c}put a `[cachelayout::align::Align{line}; 0]` field (or \
         {line} bytes of padding) between them, let #[cachelayout::optimize] lay the struct out, or \
         give the fields classes that may share a line (#[layout(cold)], \
         #[layout(locked_write = \"lock\")])",
        input.ident,
        pairs.join("; "),
    );
    if !advice.is_empty() {
        msg.push_str("; ");
        msg.push_str(advice);
    }
    Err(syn::Error::new(input.ident.span(), msg))
}

/// A field named with its class: "lockless `hot`", with the writer group
/// when it is not the field's own default one.
fn class_words(access: &Access, name: &str) -> String {
    match access {
        Access::Lockless { group: Some(g) } if g != name => {
            format!("lockless `{name}` (writer group `{g}`)")
        }
        Access::Lockless { .. } => format!("lockless `{name}`"),
        Access::ReadMostly => format!("read-mostly `{name}`"),
        other => format!("{} `{name}`", other.class_name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: Access = Access::ReadMostly;

    fn a() -> Access {
        Access::Lockless { group: None }
    }

    fn known(size: u64, align: u64, access: Access) -> Piece {
        Piece {
            size: Some(size),
            align: Some(align),
            classes: vec![access],
        }
    }

    fn unknown(access: Access) -> Piece {
        Piece {
            size: None,
            align: None,
            classes: vec![access],
        }
    }

    fn c(min_align: u64) -> Repr {
        Repr {
            c: true,
            packed: false,
            min_align,
            line: 64,
        }
    }

    const RUST: Repr = Repr {
        c: false,
        packed: false,
        min_align: 1,
        line: 64,
    };

    #[test]
    fn a_parameter_next_to_an_atomic_is_doubtful() {
        let pair = [unknown(R), known(8, 8, a())];
        assert_eq!(doubts(&pair, RUST), vec![(0, 1)]);
        assert_eq!(doubts(&pair, c(1)), vec![(0, 1)]);
        // `Padded<T>`: `a`, then `T`, then the atomic, in a struct aligned to 64.
        let padded = [known(8, 8, R), unknown(R), known(8, 8, a())];
        assert_eq!(doubts(&padded, c(64)), vec![(0, 2), (1, 2)]);
    }

    #[test]
    fn a_line_marker_between_proves_it() {
        let marked = [unknown(R), known(0, 64, Access::Cold), known(8, 8, a())];
        assert!(doubts(&marked, c(1)).is_empty());
        // Without `repr(C)` rustc may move the marker.
        assert_eq!(doubts(&marked, RUST), vec![(0, 2)]);
        let after = [known(8, 8, a()), known(0, 64, Access::Cold), unknown(R)];
        assert!(doubts(&after, c(1)).is_empty());
    }

    #[test]
    fn padding_proves_it() {
        // 64 known bytes between: a line boundary whatever `T` is.
        let padded = [unknown(R), known(64, 1, Access::Cold), known(8, 8, a())];
        assert!(doubts(&padded, c(1)).is_empty());
        let short = [unknown(R), known(62, 1, Access::Cold), known(8, 8, a())];
        assert_eq!(doubts(&short, c(1)), vec![(0, 2)]);
        // The atomic first, 56 bytes after it, then `T`: a boundary at 64 in
        // every phase 8-byte alignment allows.
        let first = [known(8, 8, a()), known(56, 1, Access::Cold), unknown(R)];
        assert!(doubts(&first, c(1)).is_empty());
        let first = [known(8, 8, a()), known(48, 1, Access::Cold), unknown(R)];
        assert_eq!(doubts(&first, c(1)), vec![(0, 2)]);
    }

    #[test]
    fn fields_that_fill_lines_are_apart_in_any_order() {
        let padded = [unknown(R), known(128, 128, a())];
        assert!(doubts(&padded, RUST).is_empty());
        assert!(doubts(&padded, c(1)).is_empty());
        let packed = Repr {
            packed: true,
            ..RUST
        };
        assert_eq!(doubts(&padded, packed), vec![(0, 1)]);
    }

    #[test]
    fn classes_that_may_share_need_nothing() {
        let locked = [
            unknown(Access::LockedWrite { lock: "seq".into() }),
            known(8, 8, a()),
        ];
        assert!(doubts(&locked, RUST).is_empty());
        let empty = [known(0, 1, R), known(8, 8, a())];
        assert!(doubts(&empty, RUST).is_empty());
        let groups = [
            known(
                8,
                8,
                Access::Lockless {
                    group: Some("tx".into()),
                },
            ),
            unknown(R),
            known(
                8,
                8,
                Access::Lockless {
                    group: Some("rx".into()),
                },
            ),
        ];
        assert_eq!(doubts(&groups, c(1)), vec![(0, 1), (0, 2), (1, 2)]);
        // A type that may carry lockless data next to a read-mostly field.
        let carried = [
            known(8, 8, R),
            Piece {
                classes: vec![R, a()],
                ..known(8, 8, R)
            },
        ];
        assert_eq!(doubts(&carried, c(1)), vec![(0, 1)]);
    }
}
