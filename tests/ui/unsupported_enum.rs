#[derive(cachelayout::CacheLayout)]
pub enum State {
    Idle,
    Busy(u64),
}

fn main() {}
