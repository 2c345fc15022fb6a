// A generic struct is proven at its definition for every instantiation:
// `T` may be one byte, so `val` and `hot` may share a line. The error needs
// no instantiation (a struct literal evaluates no check), so `cargo check`
// reports it too.
use std::sync::atomic::AtomicU64;

#[derive(cachelayout::CacheLayout)]
pub struct Pair<T> {
    pub val: T,
    pub hot: AtomicU64,
}

#[derive(cachelayout::CacheLayout)]
#[repr(C, align(64))]
pub struct Padded<T> {
    pub a: u64,
    pub pad: T,
    pub hits: AtomicU64,
}

fn main() {}
