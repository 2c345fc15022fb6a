// Sizes and alignments no Rust type can have are spanned errors, not panics
// of the macros (their sums would overflow).
use std::sync::atomic::AtomicU64;

pub struct Blob;

#[derive(cachelayout::CacheLayout)]
pub struct Checked {
    #[layout(size = 18446744073709551615, align = 1)]
    pub blob: Blob,
    pub hits: AtomicU64,
}

#[cachelayout::optimize]
pub struct Rewritten {
    #[layout(size = 18446744073709551615, align = 1)]
    pub blob: Blob,
    pub hits: AtomicU64,
}

#[cachelayout::optimize]
pub struct TooAligned {
    #[layout(size = 0, align = 9223372036854775808)]
    pub blob: Blob,
    pub hits: AtomicU64,
}

#[cachelayout::optimize]
pub struct TooLarge {
    #[layout(size = 4611686018427387904, align = 8)]
    pub a: Blob,
    #[layout(size = 4611686018427387904, align = 8)]
    pub b: Blob,
    pub hits: AtomicU64,
}

fn main() {}
