use std::sync::atomic::AtomicU64;

#[derive(cachelayout::CacheLayout)]
pub struct Slot<T> {
    pub value: T,
    pub version: AtomicU64,
}

#[cachelayout::optimize]
pub struct Buffer<const N: usize> {
    pub data: [u8; N],
    pub len: AtomicU64,
}

fn main() {}
