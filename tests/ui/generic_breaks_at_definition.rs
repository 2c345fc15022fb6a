// A generic struct is proven at its definition for every instantiation:
// `T` may be one byte, so `val` and `hot` may share a line. The error needs
// no instantiation (a struct literal evaluates no check), so `cargo check`
// reports it too.
use std::marker::PhantomData;
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

// `Counters` holds atomics: the checks count `counters` as lockless (its
// `AccessClass`) though its name made the macro guess read-mostly.
#[derive(cachelayout::CacheLayout)]
pub struct Counters {
    pub served: AtomicU64,
}

#[derive(cachelayout::CacheLayout)]
#[repr(C)]
pub struct Holder<T> {
    pub limit: u64,
    pub counters: Counters,
    pub _marker: PhantomData<T>,
}

// Built with a struct literal: no instantiation's check would run.
pub fn build() -> Pair<u8> {
    Pair {
        val: 1,
        hot: AtomicU64::new(0),
    }
}

fn main() {}
