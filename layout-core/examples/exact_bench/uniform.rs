//! Uniform random instances: a random mix of classes (1 to 3 lockless
//! writer groups, read-mostly, locked, cold), sizes mostly small, every
//! member free, lines of 64 and 128 bytes, aligned mode and random offsets.

use super::{Instance, Rng};
use layout_core::model::{Access, Field, Placement, Struct};

/// Size bands of the set: fields per struct, inclusive.
pub const BANDS: [(usize, usize); 4] = [(5, 10), (11, 20), (21, 40), (60, 120)];

/// One random instance with `n` fields.
pub fn instance(n: usize, rng: &mut Rng) -> Instance {
    let groups = 1 + rng.below(3) as u32;
    // Weights of read-mostly, each lockless group, locked, cold.
    let w_read = 1 + rng.below(6);
    let w_lockless = 1 + rng.below(4);
    let w_locked = rng.below(4);
    let w_cold = rng.below(6);
    let total = w_read + w_lockless + w_locked + w_cold;
    let mut fields = Vec::new();
    let mut at = 0u64;
    for i in 0..n {
        let r = rng.below(total);
        let access = if r < w_read {
            Access::ReadMostly
        } else if r < w_read + w_lockless {
            let g = rng.below(u64::from(groups)) as u32;
            Access::Lockless {
                group: (g > 0).then(|| format!("g{g}")),
            }
        } else if r < w_read + w_lockless + w_locked {
            Access::LockedWrite { lock: "l".into() }
        } else {
            Access::Cold
        };
        let align = [1u64, 2, 4, 8, 8, 8, 8, 16][rng.below(8) as usize];
        let units = match rng.below(10) {
            0..=6 => 1,
            7..=8 => 1 + rng.below(4),
            _ => 1 + rng.below(24),
        };
        let size = (align * units).max(1);
        at = at.div_ceil(align) * align;
        let mut f = Field::new(format!("f{i}"), "t", size, align).with_access(access);
        f.original_offset = Some(at);
        at += size;
        fields.push(f);
    }
    let s = Struct::new("s", fields);
    let line = if rng.below(3) == 0 { 128 } else { 64 };
    let placement = if rng.below(2) == 0 {
        Placement::Aligned
    } else {
        let a = s.natural_align();
        Placement::Offset(rng.below(line / a) * a)
    };
    Instance {
        s,
        line,
        placement,
        shape: "uniform".into(),
    }
}
