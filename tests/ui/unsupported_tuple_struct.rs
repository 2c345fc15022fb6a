use std::sync::atomic::AtomicU64;

// The derive checks tuple structs; optimize cannot reorder them.
#[cachelayout::optimize]
pub struct Pair(pub u64, pub AtomicU64);

fn main() {}
