use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

#[cachelayout::optimize(line = 48, objective = "fastest")]
pub struct Bad {
    #[layout(line = 64)]
    pub a: u64,
    #[layout(locked_write)]
    pub b: u64,
    #[layout(size = 24)]
    pub c: Mutex<u64>,
    #[layout(size = 12, align = 8)]
    pub d: Mutex<u32>,
    #[layout(lockless(writer = "x"))]
    pub e: AtomicU64,
}

#[derive(cachelayout::CacheLayout)]
#[layout(read_mostly, objective = "compact-hot", objective = "min-diff")]
pub struct Twice {
    pub a: u64,
}

#[cachelayout::optimize(report_only)]
pub struct ReportOnly {
    pub a: u64,
}

#[cachelayout::optimize]
#[derive(cachelayout::CacheLayout)]
pub struct DerivedToo {
    pub a: u64,
}

fn main() {}
