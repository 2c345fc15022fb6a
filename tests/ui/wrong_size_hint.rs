use std::sync::atomic::AtomicU64;

pub struct Histogram {
    pub buckets: [u64; 3],
}

#[cachelayout::optimize]
pub struct Stats {
    pub hits: AtomicU64,
    #[layout(size = 16, align = 8)]
    pub latency: Histogram,
}

fn main() {}
