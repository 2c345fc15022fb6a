//! The synthetic structs of the solver bench (`benches/solve.rs`), shared
//! with `examples/solve_scaling.rs` (which includes this file by path).

use layout_core::model::{Access, Field, Struct};

/// A tiny linear congruential generator: the structs are the same on every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// `n` fields: 25% read-mostly, 15% lockless (two writer groups), 25%
/// locked (two locks), 35% cold; mostly 8-byte scalars and pointers, some
/// smaller scalars, some arrays. Offsets are those of the C layout.
pub fn synthetic(n: usize, seed: u64) -> Struct {
    let mut rng = Lcg(seed ^ ((n as u64) << 32));
    let mut at = 0u64;
    let fields = (0..n)
        .map(|i| {
            let access = match rng.below(20) {
                0..=4 => Access::ReadMostly,
                5..=6 => Access::Lockless { group: None },
                7 => Access::Lockless {
                    group: Some("tx".into()),
                },
                8..=10 => Access::LockedWrite { lock: "a".into() },
                11..=12 => Access::LockedWrite { lock: "b".into() },
                _ => Access::Cold,
            };
            let (size, align) = match rng.below(16) {
                0..=6 => (8, 8),
                7..=8 => (4, 4),
                9 => (2, 2),
                10 => (1, 1),
                11 => (16, 8),
                12 => (24, 8),
                13 => (32, 8),
                14 => (64, 8),
                _ => (8 * (1 + rng.below(32)), 8),
            };
            at = at.div_ceil(align) * align;
            let mut f = Field::new(format!("f{i}"), "u64", size, align).with_access(access);
            f.original_offset = Some(at);
            at += size;
            f
        })
        .collect();
    Struct::new(format!("synthetic{n}"), fields)
}
