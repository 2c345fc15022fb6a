use std::sync::atomic::AtomicU64;

#[derive(cachelayout::CacheLayout)]
pub struct Stats {
    #[layout(read_mostly, lockless)]
    pub hits: AtomicU64,
    #[layout(cold)]
    #[layout(locked_write = "lock")]
    pub misses: u64,
    #[layout(lockless, lockless_atomic)]
    pub errors: AtomicU64,
}

fn main() {}
