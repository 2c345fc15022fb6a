//! The placement engine: where C puts the members of a struct or union,
//! given each member's size and alignment and, for a bit-field, its width and
//! storage unit. gcc on System V x86_64 places them this way, and Rust's
//! `#[repr(C)]` follows the same rules, so the C front-end, growth, the scan,
//! the emitters' replay and the proc-macro's plan all place members here.
//!
//! The rules:
//!
//! - in a struct, each member starts at the next multiple of its alignment
//!   after the end of the member before it; in a union every member starts
//!   at 0;
//! - a bit-field starts at the next free bit, unless its width is 0 (then at
//!   the next boundary of its storage unit) or it would end more than its
//!   type's size past the start of its unit (then at the next unit
//!   boundary), except when it may straddle units (`packed`,
//!   `#pragma pack`);
//! - zero-size members (cacheline markers, flexible arrays, empty structs)
//!   take no room but still round the position up to their alignment;
//! - the record's alignment is the largest of its members' and its own
//!   minimum (an `aligned` attribute, `#[repr(align)]`); its size is the end
//!   of its last member rounded up to that alignment.
//!
//! What a member's alignment *is* stays with the caller, which knows the
//! language: the C front-end folds `packed`, `aligned` and `#pragma pack`
//! into [`Member::align`], and gives the bit-fields that do not raise the
//! record's alignment (unnamed, zero-width and `packed` ones) an alignment
//! of 1.
//!
//! # Overflow policy
//!
//! Saturating, everywhere: a position, size or rounding that does not fit
//! in a `u64` is `u64::MAX`. No valid layout reaches it (the C front-end
//! limits types to 2^48 bytes and reports a record past that as an error),
//! so a saturated value is always refused downstream, never wrapped into a
//! plausible offset and never a panic. [`align_up`] is the one rounding
//! helper; positions inside the engine are kept in bits in a `u128`, which
//! no sum of `u64` byte sizes can overflow, and saturate when they come out.

mod data_layout;
#[cfg(test)]
mod tests;

pub use data_layout::DataLayout;

/// The smallest multiple of `align` at or above `x`. An alignment of 0
/// counts as 1 (no requirement); any alignment works, powers of two take
/// the fast path. Saturates: `u64::MAX` when that multiple does not fit.
#[inline]
pub const fn align_up(x: u64, align: u64) -> u64 {
    if align <= 1 {
        return x;
    }
    if align.is_power_of_two() {
        let mask = align - 1;
        return match x.checked_add(mask) {
            Some(v) => v & !mask,
            None => u64::MAX,
        };
    }
    match x.checked_next_multiple_of(align) {
        Some(v) => v,
        None => u64::MAX,
    }
}

/// A struct lays its members out one after another; a union puts every
/// member at 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Struct,
    Union,
}

/// One member as the engine sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// Bytes; for a bit-field, of its declared type.
    pub size: u64,
    /// The multiple a plain member starts at, and what every member gives
    /// the record's alignment (1: nothing). 0 counts as 1.
    pub align: u64,
    /// A bit-field's width and unit; `None` for a plain member.
    pub bits: Option<Bitfield>,
}

/// How a bit-field is placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bitfield {
    /// Width in bits.
    pub width: u64,
    /// The storage unit, in bits (its type's alignment, after `#pragma
    /// pack`): a zero width starts at the next multiple of it, and so does a
    /// field that does not fit in what is left of its unit.
    pub unit_bits: u64,
    /// How far past the start of its unit the field may end, in bits (its
    /// type's size).
    pub limit_bits: u64,
    /// The field may cross unit boundaries (`packed`, `#pragma pack`).
    pub straddles: bool,
}

impl Member {
    /// A plain member of `size` bytes aligned to `align`.
    pub const fn new(size: u64, align: u64) -> Member {
        Member {
            size,
            align,
            bits: None,
        }
    }

    /// A bit-field of a type of `size` bytes that gives the record the
    /// alignment `align` (1 for none).
    pub const fn bitfield(size: u64, align: u64, bits: Bitfield) -> Member {
        Member {
            size,
            align,
            bits: Some(bits),
        }
    }
}

/// Size and alignment of a placed record, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub size: u64,
    pub align: u64,
}

/// A record laid out by [`lay_out`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Offset of each member, in bits from the record's start.
    pub bit_offsets: Vec<u64>,
    pub size: u64,
    pub align: u64,
}

/// Places `members` in order; `min_align` is the record's own alignment
/// (1 when it has none).
pub fn lay_out(kind: Kind, members: &[Member], min_align: u64) -> Record {
    let mut cursor = Cursor::new(kind);
    let bit_offsets = members.iter().map(|m| cursor.place_bits(m)).collect();
    let Extent { size, align } = cursor.finish(min_align);
    Record {
        bit_offsets,
        size,
        align,
    }
}

/// Places members one at a time: for callers that interleave placement
/// with their own bookkeeping (a replay comparing each member with its
/// target, a search trying orders from a given start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    kind: Kind,
    /// Struct: the next free bit. Union: the end of the longest member.
    end: u128,
    align: u64,
}

impl Cursor {
    /// An empty record of `kind`.
    pub const fn new(kind: Kind) -> Cursor {
        Cursor {
            kind,
            end: 0,
            align: 1,
        }
    }

    /// A struct whose members so far end at byte `offset`.
    pub const fn at(offset: u64) -> Cursor {
        Cursor::at_bit(offset as u128 * 8)
    }

    /// A struct whose members so far end at bit `bit`.
    pub const fn at_bit(bit: u128) -> Cursor {
        Cursor {
            kind: Kind::Struct,
            end: bit,
            align: 1,
        }
    }

    /// Places `m`; returns its offset in bytes (of the byte holding its
    /// first bit, for a bit-field).
    pub fn place(&mut self, m: &Member) -> u64 {
        saturate(self.place_at(m) / 8)
    }

    /// Places `m`; returns its offset in bits.
    pub fn place_bits(&mut self, m: &Member) -> u64 {
        saturate(self.place_at(m))
    }

    fn place_at(&mut self, m: &Member) -> u128 {
        self.align = self.align.max(m.align);
        let (at, len) = match m.bits {
            Some(b) => {
                let start = match self.kind {
                    Kind::Struct => self.end,
                    Kind::Union => 0,
                };
                (bitfield_start(start, &b), u128::from(b.width))
            }
            None => {
                let start = match self.kind {
                    Kind::Struct => {
                        self.end
                            .div_ceil(8)
                            .next_multiple_of(u128::from(m.align.max(1)))
                            * 8
                    }
                    Kind::Union => 0,
                };
                (start, u128::from(m.size) * 8)
            }
        };
        self.end = match self.kind {
            Kind::Struct => at.saturating_add(len),
            Kind::Union => self.end.max(len),
        };
        at
    }

    /// The end of the members so far, in bytes (rounded up to a whole
    /// byte).
    pub fn end(&self) -> u64 {
        saturate(self.end.div_ceil(8))
    }

    /// The end of the members so far, in bits.
    pub fn end_bits(&self) -> u64 {
        saturate(self.end)
    }

    /// The largest alignment of the members so far.
    pub fn align(&self) -> u64 {
        self.align
    }

    /// Size and alignment of the record with its own alignment `min_align`
    /// (1 when none).
    pub fn finish(&self, min_align: u64) -> Extent {
        let align = self.align.max(min_align).max(1);
        Extent {
            size: align_up(self.end(), align),
            align,
        }
    }
}

/// Where a bit-field goes when the next free bit is `at`.
fn bitfield_start(at: u128, b: &Bitfield) -> u128 {
    let unit = u128::from(b.unit_bits.max(1));
    let crosses = !b.straddles && at % unit + u128::from(b.width) > u128::from(b.limit_bits);
    if b.width == 0 || crosses {
        at.next_multiple_of(unit)
    } else {
        at
    }
}

fn saturate(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}
