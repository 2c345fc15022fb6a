#[cachelayout::optimize]
#[repr(C, packed)]
pub struct Packed {
    pub flags: u8,
    pub len: u32,
}

fn main() {}
