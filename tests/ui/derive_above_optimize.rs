// `#[derive(CacheLayout)]` above `#[cachelayout::optimize]` runs first, on
// the struct as written: one error that says to remove it and move the
// derive below, not conflicting impls.
use std::sync::atomic::AtomicU64;

#[derive(cachelayout::CacheLayout, Debug)]
#[cachelayout::optimize]
pub struct Stats {
    pub config: u64,
    pub hits: AtomicU64,
}

fn main() {}
