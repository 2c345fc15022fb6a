// A generic struct is checked per instantiation: `Padded<[u8; 56]>` keeps
// the rule, `Padded<u8>` puts `hits` on the line of `a` and `pad`.
use std::sync::atomic::AtomicU64;

#[derive(cachelayout::CacheLayout)]
#[repr(C, align(64))]
pub struct Padded<T> {
    pub a: u64,
    pub pad: T,
    pub hits: AtomicU64,
}

const _: () = cachelayout::assert_layout::<Padded<[u8; 56]>>();
const _: () = cachelayout::assert_layout::<Padded<u8>>();

fn main() {}
