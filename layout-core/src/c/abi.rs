//! The x86_64 System V (LP64) facts the C front-end lays types out with:
//! what a size and alignment are, the pointer, and the keyword scalar
//! types. The kernel's named types are in [`super::kernel_types`].

use crate::place::DataLayout;

/// Size and alignment in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TyLayout {
    pub size: u64,
    pub align: u64,
}

/// A pointer (of any type, function pointers too): the target's pointer
/// width ([`DataLayout::pointer_bytes`]).
pub(crate) const POINTER: TyLayout = TyLayout {
    size: DataLayout::X86_64.pointer_bytes,
    align: DataLayout::X86_64.pointer_bytes,
};

/// x86_64 sizes of keyword scalar types (`unsigned long`, `long double`).
pub(crate) fn scalar_layout(words: &[String]) -> Option<TyLayout> {
    let has = |w: &str| words.iter().any(|x| x == w);
    let longs = words.iter().filter(|w| *w == "long").count();
    let n = |size| Some(TyLayout { size, align: size });
    if has("void") {
        return None;
    }
    if has("__int128") || has("__int128_t") || has("__uint128_t") {
        return n(16);
    }
    if has("char") {
        n(1)
    } else if has("short") {
        n(2)
    } else if has("double") {
        if longs > 0 {
            n(16)
        } else {
            n(8)
        }
    } else if has("float") {
        n(4)
    } else if has("_Bool") {
        n(1)
    } else if longs > 0 {
        n(8)
    } else if has("int") || has("signed") || has("unsigned") {
        n(4)
    } else {
        None
    }
}
