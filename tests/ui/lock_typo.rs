// A lock name that no field has, close to one that it has, is a typo.
use std::sync::Mutex;

#[derive(cachelayout::CacheLayout)]
pub struct Table {
    pub lock: Mutex<()>,
    #[layout(locked_write = "lokc")]
    pub len: u64,
}

fn main() {}

// The rejected struct still implements the traits: using it adds no error.
#[derive(cachelayout::CacheLayout)]
pub struct Holder {
    pub table: Table,
}

const _: () = cachelayout::assert_layout::<Table>();
