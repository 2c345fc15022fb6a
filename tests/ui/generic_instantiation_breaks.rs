// What the definition cannot see is still checked per instantiation: the
// macro guesses read-mostly for `counters` from its type's name, and the
// proof at the definition holds with that class; rustc says `Counters`
// carries lockless data (its `AccessClass`), and the instantiation's check
// finds it on the line of `limit`.
use std::marker::PhantomData;
use std::sync::atomic::AtomicU64;

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

const _: () = cachelayout::assert_layout::<Holder<u8>>();

fn main() {}
