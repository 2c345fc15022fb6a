// A type the size model gets wrong (this `String` is not std's): the plan
// fills the room between the counter and the configuration with it, and
// rustc's check catches that the room is smaller than planned.
use std::sync::atomic::AtomicU64;

pub struct String(pub u64);

#[cachelayout::optimize]
pub struct Stats {
    #[layout(pinned)]
    pub hits: AtomicU64,
    #[layout(cold)]
    pub name: String,
    pub config: u64,
}

fn main() {}
