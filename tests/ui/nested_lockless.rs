// `Counters` is all atomics: a field of that type is lockless whatever its
// name says, and the derive fails naming `counters`. So is an alias of an
// atomic. (The counters are bumped together: one writer group.)
use std::sync::atomic::AtomicU64;

#[derive(cachelayout::CacheLayout)]
pub struct Counters {
    #[layout(lockless(group = "stats"))]
    pub hits: AtomicU64,
    #[layout(lockless(group = "stats"))]
    pub misses: AtomicU64,
}

#[derive(cachelayout::CacheLayout)]
pub struct Outer {
    pub limit: u64,
    pub counters: Counters,
    pub name: &'static str,
}

type Counter = AtomicU64;

#[derive(cachelayout::CacheLayout)]
pub struct Aliased {
    pub limit: u64,
    pub served: Counter,
}

// A type built on atomics some other way says what it carries.
#[derive(cachelayout::CacheLayout)]
#[layout(contains = "lockless")]
pub struct Notify {
    pub state: u64,
}

#[derive(cachelayout::CacheLayout)]
pub struct Waiter {
    pub id: u64,
    pub notify: Notify,
}

fn main() {}
