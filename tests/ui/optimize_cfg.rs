// optimize runs before #[cfg] and #[cfg_attr] on the fields are evaluated.
use std::sync::atomic::AtomicU64;

#[cachelayout::optimize]
pub struct Stats {
    pub hits: AtomicU64,
    #[cfg(debug_assertions)]
    pub misses: AtomicU64,
    #[cfg_attr(target_os = "linux", layout(cold))]
    pub config: u64,
}

fn main() {}
