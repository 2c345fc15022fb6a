//! The engine against layouts gcc 14 gives on x86_64 (each case names the C
//! it stands for; `sizeof`, `_Alignof` and `offsetof` were read from gcc).

use super::*;

/// A bit-field of an `unsigned int` that raises the record's alignment.
fn uint_bits(width: u64) -> Member {
    Member::bitfield(
        4,
        4,
        Bitfield {
            width,
            unit_bits: 32,
            limit_bits: 32,
            straddles: false,
        },
    )
}

fn bytes(r: &Record) -> Vec<u64> {
    r.bit_offsets.iter().map(|b| b / 8).collect()
}

#[test]
fn members_go_at_the_next_multiple_of_their_alignment() {
    // struct { char a; int b; char c; }: 0, 4, 8; 12 bytes, aligned to 4.
    let r = lay_out(
        Kind::Struct,
        &[Member::new(1, 1), Member::new(4, 4), Member::new(1, 1)],
        1,
    );
    assert_eq!((bytes(&r), r.size, r.align), (vec![0, 4, 8], 12, 4));
}

#[test]
fn a_bitfield_that_would_straddle_its_unit_starts_the_next() {
    // struct { unsigned a:30; unsigned b:4; }: b at bit 32; 8 bytes.
    let r = lay_out(Kind::Struct, &[uint_bits(30), uint_bits(4)], 1);
    assert_eq!((r.bit_offsets, r.size, r.align), (vec![0, 32], 8, 4));
    // struct { char a; unsigned b:28; }: 8 + 28 > 32, so b at bit 32.
    let r = lay_out(Kind::Struct, &[Member::new(1, 1), uint_bits(28)], 1);
    assert_eq!((r.bit_offsets, r.size), (vec![0, 32], 8));
    // struct { char a; unsigned b:24; }: fits in the first unit, at bit 8.
    let r = lay_out(Kind::Struct, &[Member::new(1, 1), uint_bits(24)], 1);
    assert_eq!((r.bit_offsets, r.size, r.align), (vec![0, 8], 4, 4));
}

#[test]
fn packed_bitfields_straddle_and_do_not_align() {
    // struct __attribute__((packed)) { unsigned a:30; unsigned b:4; }:
    // b at bit 30; 34 bits make 5 bytes, aligned to 1.
    let packed = |width| {
        Member::bitfield(
            4,
            1,
            Bitfield {
                width,
                unit_bits: 32,
                limit_bits: 32,
                straddles: true,
            },
        )
    };
    let r = lay_out(Kind::Struct, &[packed(30), packed(4)], 1);
    assert_eq!((r.bit_offsets, r.size, r.align), (vec![0, 30], 5, 1));
    // #pragma pack(1) struct { char a; unsigned b:30; }: the unit is capped
    // at one byte; b at bit 8; 5 bytes.
    let capped = Member::bitfield(
        4,
        1,
        Bitfield {
            width: 30,
            unit_bits: 8,
            limit_bits: 32,
            straddles: true,
        },
    );
    let r = lay_out(Kind::Struct, &[Member::new(1, 1), capped], 1);
    assert_eq!((r.bit_offsets, r.size, r.align), (vec![0, 8], 5, 1));
}

#[test]
fn a_zero_width_bitfield_ends_the_unit_without_aligning_the_record() {
    // struct { char a:3; int :0; char b:2; }: b at bit 32; 5 bytes,
    // aligned to 1 (x86_64: an unnamed bit-field does not align the struct).
    let char_bits = |width| {
        Member::bitfield(
            1,
            1,
            Bitfield {
                width,
                unit_bits: 8,
                limit_bits: 8,
                straddles: false,
            },
        )
    };
    let zero = Member::bitfield(
        4,
        1,
        Bitfield {
            width: 0,
            unit_bits: 32,
            limit_bits: 32,
            straddles: false,
        },
    );
    let r = lay_out(Kind::Struct, &[char_bits(3), zero, char_bits(2)], 1);
    assert_eq!((r.bit_offsets, r.size, r.align), (vec![0, 32, 32], 5, 1));
}

#[test]
fn aligned_members_and_records() {
    // struct { char a; int b __attribute__((aligned(16))); }: b at 16; 32
    // bytes aligned to 16.
    let r = lay_out(Kind::Struct, &[Member::new(1, 1), Member::new(4, 16)], 1);
    assert_eq!((bytes(&r), r.size, r.align), (vec![0, 16], 32, 16));
    // struct __attribute__((aligned(64))) { int a; }: 64 bytes.
    let r = lay_out(Kind::Struct, &[Member::new(4, 4)], 64);
    assert_eq!((r.size, r.align), (64, 64));
}

#[test]
fn zero_size_members_align_but_take_no_room() {
    // struct { int n; long data[]; }: the flexible array at 8; 8 bytes.
    let r = lay_out(Kind::Struct, &[Member::new(4, 4), Member::new(0, 8)], 1);
    assert_eq!((bytes(&r), r.size, r.align), (vec![0, 8], 8, 8));
    // struct { char a; struct {} e; long z[0]; char b; }: 0, 1, 8, 8; 16.
    let members = [
        Member::new(1, 1),
        Member::new(0, 1),
        Member::new(0, 8),
        Member::new(1, 1),
    ];
    let r = lay_out(Kind::Struct, &members, 1);
    assert_eq!((bytes(&r), r.size, r.align), (vec![0, 1, 8, 8], 16, 8));
}

#[test]
fn union_members_all_start_at_zero() {
    // union { char a[5]; int b; unsigned c:3; }: 8 bytes aligned to 4.
    let r = lay_out(
        Kind::Union,
        &[Member::new(5, 1), Member::new(4, 4), uint_bits(3)],
        1,
    );
    assert_eq!((r.bit_offsets, r.size, r.align), (vec![0, 0, 0], 8, 4));
}

#[test]
fn a_cursor_continues_from_where_it_starts() {
    let mut c = Cursor::at(3);
    assert_eq!(c.place(&Member::new(8, 8)), 8);
    assert_eq!((c.end(), c.align()), (16, 8));
    // From bit 20, a 20-bit field of an unsigned int crosses bit 32.
    let mut c = Cursor::at_bit(20);
    assert_eq!(c.place_bits(&uint_bits(20)), 32);
    assert_eq!(c.end_bits(), 52);
}

#[test]
fn align_up_has_one_policy_saturating() {
    assert_eq!(align_up(13, 8), 16);
    assert_eq!(align_up(16, 8), 16);
    // No requirement, and alignments that are not powers of two.
    assert_eq!(align_up(13, 0), 13);
    assert_eq!(align_up(13, 1), 13);
    assert_eq!(align_up(13, 12), 24);
    // A multiple that does not fit saturates.
    assert_eq!(align_up(u64::MAX - 3, 8), u64::MAX);
    assert_eq!(align_up(u64::MAX - 1, 12), u64::MAX);
    assert_eq!(align_up(u64::MAX, 1), u64::MAX);
}

#[test]
fn a_record_past_u64_saturates() {
    let half = Member::new(u64::MAX / 2 + 1, 1);
    let r = lay_out(Kind::Struct, &[half, half, Member::new(1, 8)], 1);
    assert_eq!(r.bit_offsets, vec![0, u64::MAX, u64::MAX]);
    assert_eq!((r.size, r.align), (u64::MAX, 8));
    let mut c = Cursor::new(Kind::Struct);
    c.place(&half);
    assert_eq!(c.place(&half), u64::MAX / 2 + 1);
    assert_eq!(c.end(), u64::MAX);
}

#[test]
fn the_x86_64_data_layout() {
    let dl = DataLayout::default();
    assert_eq!(dl, DataLayout::X86_64);
    assert_eq!(
        (dl.pointer_bytes, dl.line_bytes, dl.smp_cache_bytes),
        (8, 64, 64)
    );
    assert_eq!(
        DataLayout::HOST.pointer_bytes,
        std::mem::size_of::<usize>() as u64
    );
}
