// A lock name that no field has, close to one that it has, is a typo.
use std::sync::Mutex;

#[derive(cachelayout::CacheLayout)]
pub struct Table {
    pub lock: Mutex<()>,
    #[layout(locked_write = "lokc")]
    pub len: u64,
}

fn main() {}
