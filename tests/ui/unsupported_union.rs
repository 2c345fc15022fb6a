#[cachelayout::optimize]
pub union Word {
    pub bytes: [u8; 8],
    pub value: u64,
}

fn main() {}
