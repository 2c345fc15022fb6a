use std::sync::atomic::AtomicU64;

#[derive(cachelayout::CacheLayout)]
pub struct Stats {
    #[layout(read_mosty)]
    pub config: u64,
    #[layout(hot)]
    pub hits: AtomicU64,
}

#[derive(cachelayout::CacheLayout)]
#[layout(lines = 64)]
pub struct Options {
    pub a: u64,
}

fn main() {}
