#[derive(cachelayout::CacheLayout)]
pub struct Message {
    pub len: u64,
    pub data: [u8],
}

fn main() {}
