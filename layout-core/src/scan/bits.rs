//! Bitfields as gcc lays them out (x86-64 and arm64 SysV ABIs), placed by
//! [`crate::place`]: each one at the current bit position, unless that makes
//! it cross a boundary of its declared type's storage unit; then at the
//! start of the next unit.
//!
//! Declaring the bitfields of a struct next to each other in some order is a
//! plain reordering of the source, so the scan treats all bitfields between
//! two group markers as one piece: a *pool*, in the order that packs their
//! bits into the fewest bytes. The pool needs less alignment than its widest
//! type when its bytes fit inside a unit wherever it starts: three bits of an
//! `unsigned int` fit in any byte.
//!
//! The placement is monotone: starting a bitfield at an earlier bit never
//! ends it later (a field that crosses a unit boundary from an earlier start
//! moves to that boundary, which is no later than any start at which it
//! fits). So a layout that reserves `[o, o + len)` for the pool, with `o` a
//! multiple of the pool's alignment, holds whatever comes before it in C.

use crate::place::{Bitfield, Cursor, Member};
use crate::typedb;

/// One bitfield: its width and storage unit, in bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bit {
    /// Index of the member in its aggregate.
    pub member: usize,
    pub width: u64,
    pub unit: u64,
}

impl Bit {
    pub fn of(members: &[typedb::Member], member: usize) -> Bit {
        let m = &members[member];
        let width = m.bit_size.unwrap_or(0);
        let unit_bytes = if m.size.is_power_of_two() {
            m.size
        } else {
            m.align.max(1)
        };
        Bit {
            member,
            width,
            unit: (8 * unit_bytes).max(width).max(8),
        }
    }
}

impl Bit {
    /// The bitfield as the placement engine places it.
    fn member(&self) -> Member {
        let bits = Bitfield {
            width: self.width,
            unit_bits: self.unit,
            limit_bits: self.unit,
            straddles: false,
        };
        Member::bitfield(self.unit.div_ceil(8), 1, bits)
    }
}

/// The bit after the last of `bits`, laid in order from bit `start`. Zero
/// widths are left out: the pool's order is free, so they separate nothing.
pub(crate) fn end_bit(bits: &[Bit], start: u64) -> u64 {
    let mut c = Cursor::at_bit(u128::from(start));
    for b in bits.iter().filter(|b| b.width > 0) {
        c.place_bits(&b.member());
    }
    c.end_bits()
}

/// Bytes that `bits` cover when laid from a byte boundary.
pub(crate) fn byte_len(bits: &[Bit]) -> u64 {
    end_bit(bits, 0).div_ceil(8)
}

/// A pool: the bitfields in the order that packs them into the fewest bytes,
/// its length in bytes and the smallest power-of-two alignment at which it
/// always fits in that length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pool {
    pub bits: Vec<Bit>,
    pub len: u64,
    pub align: u64,
}

/// The best of two orders: as declared, and first-fit decreasing per unit
/// size (wider units first, each unit's fields by decreasing width).
pub(crate) fn pool(declared: Vec<Bit>) -> Pool {
    let ffd = first_fit_decreasing(&declared);
    let (bits, len) = {
        let a = byte_len(&declared);
        let b = byte_len(&ffd);
        if b < a {
            (ffd, b)
        } else {
            (declared, a)
        }
    };
    let align = pool_align(&bits, len);
    Pool { bits, len, align }
}

fn first_fit_decreasing(declared: &[Bit]) -> Vec<Bit> {
    let mut sorted = declared.to_vec();
    sorted.sort_by(|a, b| b.unit.cmp(&a.unit).then(b.width.cmp(&a.width)));
    // Bins per unit size: (unit, bits used, members).
    let mut bins: Vec<(u64, u64, Vec<Bit>)> = Vec::new();
    for b in sorted {
        match bins
            .iter_mut()
            .find(|(unit, used, _)| *unit == b.unit && used + b.width <= *unit)
        {
            Some(bin) => {
                bin.1 += b.width;
                bin.2.push(b);
            }
            None => bins.push((b.unit, b.width, vec![b])),
        }
    }
    bins.into_iter().flat_map(|(_, _, v)| v).collect()
}

/// The widest storage unit, in bytes, whose alignment [`pool_align`] searches.
const SEARCHED_UNIT: u64 = 64;

/// The smallest power of two `a` such that the pool, started at any multiple
/// of `a`, ends within `len` bytes of its start. The largest unit always
/// works: at a multiple of it every unit boundary falls where it did at 0.
///
/// Storage units wider than [`SEARCHED_UNIT`] bytes (no C type has them; only
/// corrupt debug info) take the largest unit without a search, which would
/// try every byte offset of the unit.
fn pool_align(bits: &[Bit], len: u64) -> u64 {
    let widest = bits.iter().map(|b| b.unit / 8).max().unwrap_or(1).max(1);
    if widest > SEARCHED_UNIT {
        return widest.checked_next_power_of_two().unwrap_or(1 << 63);
    }
    let mut a = 1;
    while a < widest {
        let period = widest.max(a);
        let fits = (0..period)
            .step_by(a as usize)
            .all(|o| end_bit(bits, 8 * o) <= 8 * (o + len));
        if fits {
            return a;
        }
        a *= 2;
    }
    widest.next_power_of_two()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bit(member: usize, width: u64, unit_bytes: u64) -> Bit {
        Bit {
            member,
            width,
            unit: 8 * unit_bytes,
        }
    }

    #[test]
    fn a_field_that_would_cross_its_unit_moves_to_the_next() {
        // u8 a:5; u8 b:5 -> b starts at bit 8.
        let bits = [bit(0, 5, 1), bit(1, 5, 1)];
        assert_eq!(end_bit(&bits, 0), 13);
        assert_eq!(byte_len(&bits), 2);
        // u32 a:20; u32 b:20 -> b at bit 32.
        let bits = [bit(0, 20, 4), bit(1, 20, 4)];
        assert_eq!(end_bit(&bits, 0), 52);
    }

    #[test]
    fn small_pools_need_little_alignment() {
        // Three 1-bit flags of unsigned int fit in any byte.
        let p = pool(vec![bit(0, 1, 4), bit(1, 1, 4), bit(2, 1, 4)]);
        assert_eq!((p.len, p.align), (1, 1));
        // One 12-bit field of unsigned int: two bytes at any even offset
        // (from byte 3 it would cross into the next unit).
        let p = pool(vec![bit(0, 12, 4)]);
        assert_eq!((p.len, p.align), (2, 2));
        // Two 6-bit fields fit two bytes from any byte: from byte 3 the
        // second moves to bit 32 and still ends in byte 4.
        let p = pool(vec![bit(0, 6, 4), bit(1, 6, 4)]);
        assert_eq!((p.len, p.align), (2, 1));
        // 20 bits of unsigned int: three bytes that must not cross a
        // 4-byte boundary: offsets 0 or 1 mod 4, so alignment 4.
        let p = pool(vec![bit(0, 20, 4)]);
        assert_eq!((p.len, p.align), (3, 4));
    }

    #[test]
    fn first_fit_decreasing_beats_a_bad_declared_order() {
        // u8 a:5; u8 b:5; u8 c:3; u8 d:3 as declared takes 3 bytes
        // (a | b c | d); a d | b c takes 2.
        let declared = vec![bit(0, 5, 1), bit(1, 5, 1), bit(2, 3, 1), bit(3, 3, 1)];
        assert_eq!(byte_len(&declared), 3);
        let p = pool(declared);
        assert_eq!(p.len, 2);
        assert_eq!(p.bits.len(), 4);
    }

    #[test]
    fn every_start_at_the_alignment_fits_the_length() {
        let p = pool(vec![bit(0, 9, 2), bit(1, 30, 8), bit(2, 3, 1)]);
        for o in (0..64).step_by(p.align as usize) {
            assert!(end_bit(&p.bits, 8 * o) <= 8 * (o + p.len), "start {o}");
        }
    }
}
