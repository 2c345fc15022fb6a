//! Sizes and alignments the macro can know without asking the compiler.
//!
//! A proc-macro sees tokens, not types, so this is a model: primitives,
//! atomics, pointers and references, fixed-size arrays, `Option` of a
//! non-null pointer, `Box`/`Arc`/`Rc`/`Weak`/`NonNull`, `Vec`/`String`,
//! transparent wrappers (`Cell`, `UnsafeCell`, `ManuallyDrop`, `MaybeUninit`,
//! `Wrapping`), `PhantomData` and `()`. Everything else (including `Mutex` and
//! `RwLock`, whose size depends on the platform) is unknown, and the caller
//! places it where any size is safe.
//!
//! Pointer-sized types use the pointer width of the machine running the
//! macro. Nothing depends on the model being right: the generated code
//! checks the rule with the real sizes at compile time.

use crate::types::{first_arg, is_unsized, shape, Shape};
use layout_core::place::DataLayout;
use syn::Type;

/// Size and alignment in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeAlign {
    pub size: u64,
    pub align: u64,
}

const PTR: u64 = DataLayout::HOST.pointer_bytes;

const fn sa(size: u64, align: u64) -> Option<SizeAlign> {
    Some(SizeAlign { size, align })
}

/// The size and alignment of `ty`, or `None` when the model does not know it.
pub fn size_of(ty: &Type) -> Option<SizeAlign> {
    match shape(ty) {
        Shape::Named { name, args } => named(&name, &args),
        Shape::Array { elem, len } => {
            let elem = size_of(elem)?;
            Some(SizeAlign {
                size: elem.size.checked_mul(len?)?,
                align: elem.align,
            })
        }
        Shape::Reference { elem } | Shape::Pointer { elem } => pointer_to(elem),
        Shape::Tuple(elems) if elems.is_empty() => sa(0, 1),
        Shape::FnPointer => sa(PTR, PTR),
        Shape::Slice | Shape::TraitObject | Shape::Tuple(_) | Shape::Other => None,
    }
}

/// A pointer to `pointee`: thin for sized types, two words for slices,
/// `str` and trait objects.
fn pointer_to(pointee: &Type) -> Option<SizeAlign> {
    if is_unsized(pointee) {
        sa(2 * PTR, PTR)
    } else {
        sa(PTR, PTR)
    }
}

fn named(name: &str, args: &[&Type]) -> Option<SizeAlign> {
    if args.is_empty() {
        if let Some(known) = scalar(name) {
            return Some(known);
        }
    }
    match name {
        "Box" | "Arc" | "Rc" | "Weak" | "NonNull" => pointer_to(first_arg(args)?),
        "AtomicPtr" => sa(PTR, PTR),
        "Vec" | "String" => sa(3 * PTR, PTR),
        // cachelayout's own markers: `cachelayout::align::Align64`.
        marker if marker_align(marker).is_some() && args.is_empty() => sa(0, marker_align(marker)?),
        "PhantomData" | "PhantomPinned" => sa(0, 1),
        "Cell" | "UnsafeCell" | "SyncUnsafeCell" | "ManuallyDrop" | "MaybeUninit" | "Wrapping"
        | "Saturating" => size_of(first_arg(args)?),
        "NonZero" => size_of(first_arg(args)?),
        "Option" => option_of(first_arg(args)?),
        "LinePadded" => line_padded(args),
        _ => None,
    }
}

/// The alignment of cachelayout's zero-sized marker `AlignN`.
fn marker_align(name: &str) -> Option<u64> {
    let n: u64 = name.strip_prefix("Align")?.parse().ok()?;
    (n.is_power_of_two() && (2..=crate::attr::MAX_ALIGN).contains(&n)).then_some(n)
}

/// `cachelayout::LinePadded<T, AlignN>` (`Align64` when `A` is left out):
/// `T` aligned to `N` and padded to a multiple of it.
fn line_padded(args: &[&Type]) -> Option<SizeAlign> {
    let inner = size_of(first_arg(args)?)?;
    let line = match args.get(1) {
        None => 64,
        Some(marker) => match shape(marker) {
            Shape::Named { name, args } if args.is_empty() => {
                name.strip_prefix("Align")?.parse::<u64>().ok()?
            }
            _ => return None,
        },
    };
    if !line.is_power_of_two() {
        return None;
    }
    let align = inner.align.max(line);
    Some(SizeAlign {
        size: inner.size.checked_next_multiple_of(align)?,
        align,
    })
}

/// `Option<T>` has the size of `T` when `T` has a null niche the compiler is
/// guaranteed to use: references, `Box`, `NonNull`, `Arc`, `Rc`, function
/// pointers and the `NonZero` integers.
fn option_of(inner: &Type) -> Option<SizeAlign> {
    let has_niche = match shape(inner) {
        Shape::Reference { .. } | Shape::FnPointer => true,
        Shape::Named { name, .. } => {
            matches!(name.as_str(), "Box" | "NonNull" | "Arc" | "Rc" | "NonZero")
                || name.starts_with("NonZero")
        }
        _ => false,
    };
    if has_niche {
        size_of(inner)
    } else {
        None
    }
}

fn scalar(name: &str) -> Option<SizeAlign> {
    match name {
        "bool" | "u8" | "i8" | "AtomicBool" | "AtomicU8" | "AtomicI8" | "NonZeroU8"
        | "NonZeroI8" => sa(1, 1),
        "u16" | "i16" | "AtomicU16" | "AtomicI16" | "NonZeroU16" | "NonZeroI16" => sa(2, 2),
        "u32" | "i32" | "f32" | "char" | "AtomicU32" | "AtomicI32" | "NonZeroU32"
        | "NonZeroI32" => sa(4, 4),
        "u64" | "i64" | "f64" | "AtomicU64" | "AtomicI64" | "NonZeroU64" | "NonZeroI64" => sa(8, 8),
        "u128" | "i128" | "NonZeroU128" | "NonZeroI128" => sa(16, 16),
        "usize" | "isize" | "AtomicUsize" | "AtomicIsize" | "NonZeroUsize" | "NonZeroIsize" => {
            sa(PTR, PTR)
        }
        _ => None,
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod tests {
    use super::*;

    fn of(s: &str) -> Option<(u64, u64)> {
        size_of(&syn::parse_str(s).unwrap()).map(|x| (x.size, x.align))
    }

    #[test]
    fn primitives_and_atomics() {
        assert_eq!(of("u8"), Some((1, 1)));
        assert_eq!(of("char"), Some((4, 4)));
        assert_eq!(of("u128"), Some((16, 16)));
        assert_eq!(of("std::sync::atomic::AtomicU64"), Some((8, 8)));
        assert_eq!(of("AtomicPtr<Node>"), Some((8, 8)));
        assert_eq!(of("()"), Some((0, 1)));
    }

    #[test]
    fn pointers() {
        assert_eq!(of("&'a str"), Some((16, 8)));
        assert_eq!(of("&Config"), Some((8, 8)));
        assert_eq!(of("*const [u8]"), Some((16, 8)));
        assert_eq!(of("Box<dyn Fn()>"), Some((16, 8)));
        assert_eq!(of("Option<Box<Node>>"), Some((8, 8)));
        assert_eq!(of("Option<&'static [u8]>"), Some((16, 8)));
        assert_eq!(of("Option<u64>"), None);
        assert_eq!(of("Option<NonZeroU32>"), Some((4, 4)));
        assert_eq!(of("fn(u8) -> u8"), Some((8, 8)));
    }

    #[test]
    fn arrays_and_wrappers() {
        assert_eq!(of("[AtomicU64; 4]"), Some((32, 8)));
        assert_eq!(of("[[u16; 3]; 2]"), Some((12, 2)));
        assert_eq!(of("[u8; N]"), None);
        assert_eq!(of("UnsafeCell<u32>"), Some((4, 4)));
        assert_eq!(of("PhantomData<T>"), Some((0, 1)));
        assert_eq!(of("[cachelayout::align::Align64; 0]"), Some((0, 64)));
        assert_eq!(of("Align48"), None);
        assert_eq!(of("LinePadded<AtomicU64>"), Some((64, 64)));
        assert_eq!(
            of("[cachelayout::LinePadded<u32, cachelayout::align::Align128>; 3]"),
            Some((384, 128))
        );
        assert_eq!(of("LinePadded<[u8; 65], Align32>"), Some((96, 32)));
    }

    #[test]
    fn unknown_types() {
        assert_eq!(of("Mutex<u64>"), None);
        assert_eq!(of("parking_lot::RwLock<Config>"), None);
        assert_eq!(of("Config"), None);
        assert_eq!(of("(u8, u64)"), None);
    }
}
