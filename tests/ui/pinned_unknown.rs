use std::sync::Mutex;

#[cachelayout::optimize]
#[repr(C)]
pub struct Header {
    pub lock: Mutex<u64>,
    #[layout(pinned)]
    pub magic: u32,
}

fn main() {}
