// Producer and consumer indices in different writer groups must not share
// a line.
use std::sync::atomic::AtomicUsize;

#[derive(cachelayout::CacheLayout)]
#[repr(C)]
pub struct Indices {
    #[layout(lockless(group = "producer"))]
    pub tail: AtomicUsize,
    #[layout(lockless(group = "consumer"))]
    pub head: AtomicUsize,
}

fn main() {}
