// An array of atomics without an attribute warns (its elements share lines
// though different threads usually write them); `per_element` with the
// derive is an error that says what to write instead.
#![deny(deprecated)]
use std::sync::atomic::AtomicU64;

#[derive(cachelayout::CacheLayout)]
pub struct Stripes {
    pub stripes: [AtomicU64; 8],
}

#[derive(cachelayout::CacheLayout)]
pub struct Derived {
    #[layout(per_element)]
    pub stripes: [AtomicU64; 8],
}

#[cachelayout::optimize]
pub struct NotAnArray {
    #[layout(per_element)]
    pub hits: AtomicU64,
}

fn main() {}
