//! Kernel-like instances: the shapes real structs have and uniform random
//! ones rarely do.
//!
//! - `align-tail`: members aligned to 16, 32 or 64 bytes (per-CPU-like
//!   arrays, `____cacheline_aligned` types) and a flexible array tail with a
//!   class of its own, aligned mode;
//! - `locks`: two to four locks (lock words, each a colour of its own) with
//!   the fields they protect, one to three lockless writer groups, every
//!   member free to move (as `--move-first --regroup`);
//! - `pins`: writer groups with pinned members (UAPI, ABI): the first member
//!   and one to three others keep their declared offsets;
//! - `flags-arrays`: many one- to four-byte flags among big arrays, cut by
//!   line-aligned walls (paddings taken as fixed line breaks), aligned mode;
//! - `large`: 60 to 150 members, few classes (read-mostly, one writer
//!   group, locked and cold), sizes as in `net_device` or `tcp_sock`.

use super::{Instance, Rng};
use layout_core::model::{Access, Field, Placement, Struct};
use layout_core::segments::{assign, Keep};

/// The shapes, in the order the benchmark prints them.
pub const SHAPES: [&str; 5] = ["align-tail", "locks", "pins", "flags-arrays", "large"];

/// One instance of `shape` with `n` members (walls and the tail included).
pub fn instance(shape: &str, n: usize, rng: &mut Rng) -> Instance {
    match shape {
        "align-tail" => align_tail(n, rng),
        "locks" => locks(n, rng),
        "pins" => pins(n, rng),
        "flags-arrays" => flags_arrays(n, rng),
        _ => large(n, rng),
    }
}

/// A class drawn with weights (read-mostly, lockless, cold), `groups`
/// writer groups.
fn class(rng: &mut Rng, groups: u64, w: [u64; 3]) -> Access {
    let r = rng.below(w.iter().sum());
    if r < w[0] {
        Access::ReadMostly
    } else if r < w[0] + w[1] {
        let g = rng.below(groups);
        Access::Lockless {
            group: (g > 0).then(|| format!("g{g}")),
        }
    } else {
        Access::Cold
    }
}

/// A small scalar: flags, counters, pointers.
fn scalar(rng: &mut Rng) -> (u64, u64) {
    let a = [1u64, 2, 4, 4, 8, 8, 8, 8][rng.below(8) as usize];
    let units = if rng.below(5) == 0 {
        1 + rng.below(4)
    } else {
        1
    };
    (a * units, a)
}

fn field(i: usize, size: u64, align: u64, access: Access) -> Field {
    Field::new(format!("f{i}"), "t", size, align).with_access(access)
}

/// Declared offsets in declaration order (C's rule), and the struct.
fn finish(name: &str, mut fields: Vec<Field>, keep: Keep, placement: Placement) -> Instance {
    let mut at = 0u64;
    for f in &mut fields {
        at = at.div_ceil(f.align.max(1)) * f.align.max(1);
        f.original_offset = Some(at);
        at += f.size;
    }
    let mut s = Struct::new(name, fields);
    assign(&mut s, keep);
    let placement = match placement {
        Placement::Offset(o) => {
            let a = s.natural_align();
            Placement::Offset(o / a * a)
        }
        p => p,
    };
    Instance {
        s,
        line: 64,
        placement,
        shape: name.to_string(),
    }
}

const FREE_ALL: Keep = Keep {
    first: false,
    line_breaks: false,
};

fn align_tail(n: usize, rng: &mut Rng) -> Instance {
    let groups = 1 + rng.below(3);
    let w = [2 + rng.below(4), 1 + rng.below(3), rng.below(4)];
    // The largest alignment: 16 or 32 leave the struct below the line
    // (the rule at every multiple of it), 64 puts it on lines.
    let big = [16u64, 32, 32, 64][rng.below(4) as usize];
    let mut fields = Vec::new();
    for i in 0..n - 1 {
        let access = class(rng, groups, w);
        let (size, align) = if rng.below(4) == 0 {
            let a = [16u64, big, big][rng.below(3) as usize];
            (a * (1 + rng.below(3)), a)
        } else {
            scalar(rng)
        };
        fields.push(field(i, size, align, access));
    }
    let tail_align = [4u64, 8, 16, big][rng.below(4) as usize];
    let tail =
        Field::new(format!("f{}", n - 1), "u8[]", 0, tail_align).with_access(class(rng, groups, w));
    fields.push(tail);
    finish("align-tail", fields, FREE_ALL, Placement::Aligned)
}

fn locks(n: usize, rng: &mut Rng) -> Instance {
    let locks = 2 + rng.below(3);
    let groups = 1 + rng.below(3);
    let mut fields = Vec::new();
    let mut lock = 0;
    for i in 0..n {
        let f = if (lock as u64) < locks && rng.below(n as u64) < locks * 2 {
            lock += 1;
            let mut f = Field::new(format!("lock{lock}"), "spinlock_t", 4, 4).with_access(
                Access::LockedWrite {
                    lock: format!("lock{lock}"),
                },
            );
            f.lock_word = true;
            f
        } else if lock > 0 && rng.below(3) == 0 {
            let (size, align) = scalar(rng);
            let l = 1 + rng.below(lock as u64);
            field(
                i,
                size,
                align,
                Access::LockedWrite {
                    lock: format!("lock{l}"),
                },
            )
        } else {
            let (size, align) = if rng.below(8) == 0 {
                (8 * (4 + rng.below(28)), 8)
            } else {
                scalar(rng)
            };
            field(i, size, align, class(rng, groups, [3, 2, 2]))
        };
        fields.push(f);
    }
    let placement = if rng.below(2) == 0 {
        Placement::Aligned
    } else {
        Placement::Offset(8 * rng.below(8))
    };
    finish("locks", fields, FREE_ALL, placement)
}

fn pins(n: usize, rng: &mut Rng) -> Instance {
    let groups = 2 + rng.below(2);
    let w = [2 + rng.below(3), 2 + rng.below(3), rng.below(3)];
    let mut fields: Vec<Field> = (0..n)
        .map(|i| {
            let (size, align) = if rng.below(6) == 0 {
                (8 * (2 + rng.below(14)), 8)
            } else {
                scalar(rng)
            };
            field(i, size, align, class(rng, groups, w))
        })
        .collect();
    // The first member and up to three more (UAPI, ABI) keep their
    // offsets: among the first members, as a header's fixed part.
    // Pinned members share the first one's class or are cold: pins that
    // conflict among themselves leave no layout.
    fields[0].pinned = true;
    for _ in 0..rng.below(4) {
        let i = rng.below(n.min(8) as u64) as usize;
        fields[i].pinned = true;
        if rng.below(2) == 0 {
            fields[i].access = fields[0].access.clone();
        } else {
            fields[i].access = Access::Cold;
        }
    }
    let placement = if rng.below(2) == 0 {
        Placement::Aligned
    } else {
        Placement::Offset(8 * rng.below(8))
    };
    let keep = Keep {
        first: true,
        line_breaks: false,
    };
    finish("pins", fields, keep, placement)
}

fn flags_arrays(n: usize, rng: &mut Rng) -> Instance {
    let groups = 1 + rng.below(2);
    let walls = 1 + rng.below(3).min(n as u64 / 6);
    let mut fields = Vec::new();
    let mut wall = 0u64;
    for i in 0..n {
        let f = if wall < walls && i > 0 && i + 1 < n && rng.below(n as u64) < walls * 2 {
            wall += 1;
            Field::new(format!("pad{wall}"), "u8[0]", 0, 64).with_access(Access::Cold)
        } else if rng.below(6) == 0 {
            let size = 8 * [8u64, 12, 16, 24, 32, 64][rng.below(6) as usize];
            field(i, size, 8, class(rng, groups, [3, 1, 2]))
        } else {
            let a = [1u64, 1, 2, 4][rng.below(4) as usize];
            field(i, a, a, class(rng, groups, [3, 2, 2]))
        };
        fields.push(f);
    }
    let keep = Keep {
        first: false,
        line_breaks: false,
    };
    finish("flags-arrays", fields, keep, Placement::Aligned)
}

fn large(n: usize, rng: &mut Rng) -> Instance {
    let w = [3 + rng.below(4), 1 + rng.below(2), 2 + rng.below(4)];
    let mut fields = Vec::new();
    for i in 0..n {
        let (size, align) = match rng.below(12) {
            0 => (8 * (4 + rng.below(40)), 8),
            1 => (16 * (1 + rng.below(4)), 16),
            _ => scalar(rng),
        };
        let access = if rng.below(10) == 0 {
            Access::LockedWrite { lock: "l".into() }
        } else {
            class(rng, 1, w)
        };
        fields.push(field(i, size, align, access));
    }
    let placement = if rng.below(2) == 0 {
        Placement::Aligned
    } else {
        Placement::Offset(8 * rng.below(8))
    };
    finish("large", fields, FREE_ALL, placement)
}
