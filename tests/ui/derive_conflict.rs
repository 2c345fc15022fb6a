// A struct as a user writes it: the derive finds the counter next to the
// configuration and suggests an order.
use std::sync::atomic::AtomicU64;

#[derive(cachelayout::CacheLayout)]
#[repr(C)]
pub struct ServerStats {
    pub max_body_bytes: u64,
    pub requests: AtomicU64,
    pub timeout_ms: u32,
}

fn main() {}
