//! What the benchmarks solve: a struct with its line size and placement,
//! drawn from a generator that gives the same instances on every machine.

use layout_core::model::{Placement, Struct};

pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        // xorshift64*: the instances are the same on every machine.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) % n
    }
}

pub struct Instance {
    pub s: Struct,
    pub line: u64,
    pub placement: Placement,
    pub shape: String,
}
