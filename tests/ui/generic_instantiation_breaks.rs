// What the definition takes on trust is checked per instantiation: the
// proof at the definition uses the size hint on `val`, and each
// instantiation's check compares it with rustc's size: `Hinted<u64>` keeps
// it, `Hinted<u8>` does not.
use std::sync::atomic::AtomicU64;

#[derive(cachelayout::CacheLayout)]
#[repr(C)]
pub struct Hinted<T> {
    #[layout(size = 8, align = 8)]
    pub val: T,
    #[layout(cold)]
    pub pad: [u8; 56],
    pub hits: AtomicU64,
}

const _: () = cachelayout::assert_layout::<Hinted<u64>>();
const _: () = cachelayout::assert_layout::<Hinted<u8>>();

fn main() {}
