// `isolated` asks for a struct that starts and ends on a line boundary; the
// derive writes nothing, so a struct aligned to less fails, saying what to add.
use std::sync::atomic::AtomicU64;

#[derive(cachelayout::CacheLayout)]
#[layout(isolated)]
pub struct Queue {
    pub head: AtomicU64,
}

fn main() {}
