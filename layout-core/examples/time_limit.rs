//! How well `--time-limit` is honoured on very large structs: solves
//! synthetic structs of the given sizes (every class, the benchmark's mix)
//! with the given time limit and prints the wall time, whether the safety
//! stop fired, the units of work spent, and the size against its bound.
//!
//! ```text
//! cargo run --release -p layout-core --no-default-features --example time_limit -- \
//!     [--time-limit 1] [5000 20000]
//! ```

use layout_core::model::{Access, Field, Placement, Struct};
use layout_core::solve::{solve, SolveOptions};
use std::time::{Duration, Instant};

fn synthetic(n: usize, seed: u64) -> Struct {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut at = 0u64;
    let fields = (0..n)
        .map(|i| {
            let access = match next(20) {
                0..=4 => Access::ReadMostly,
                5..=6 => Access::Lockless { group: None },
                7 => Access::Lockless {
                    group: Some("tx".into()),
                },
                8..=10 => Access::LockedWrite { lock: "a".into() },
                11..=12 => Access::LockedWrite { lock: "b".into() },
                _ => Access::Cold,
            };
            let align = [1, 2, 4, 8, 8, 8][next(6) as usize];
            let size = align * (1 + next(8));
            at = at.div_ceil(align) * align;
            let mut f = Field::new(format!("f{i}"), "t", size, align).with_access(access);
            f.original_offset = Some(at);
            at += size;
            f
        })
        .collect();
    Struct::new("s", fields)
}

fn main() -> Result<(), String> {
    let mut limit = 1.0f64;
    let mut sizes = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--time-limit" => {
                let v = args.next().ok_or("--time-limit needs a value")?;
                limit = v.parse().map_err(|e| format!("--time-limit: {e}"))?;
            }
            n => sizes.push(n.parse::<usize>().map_err(|e| format!("{n}: {e}"))?),
        }
    }
    if sizes.is_empty() {
        sizes = vec![5_000, 20_000];
    }
    println!(
        "{:>7} {:>9} {:>8} {:>9} {:>8} {:>12} {:>9} {:>9}",
        "fields", "placement", "limit s", "wall s", "over %", "work", "stopped", "gap B"
    );
    for &n in &sizes {
        let s = synthetic(n, 1);
        for placement in [Placement::Aligned, Placement::Offset(48)] {
            let opts = SolveOptions {
                placement,
                time_limit: Duration::from_secs_f64(limit),
                ..SolveOptions::default()
            };
            let started = Instant::now();
            let sol = solve(&s, &opts).map_err(|e| e.to_string())?;
            let wall = started.elapsed().as_secs_f64();
            println!(
                "{:>7} {:>9} {:>8.2} {:>9.3} {:>8.1} {:>12} {:>9} {:>9}",
                n,
                match placement {
                    Placement::Aligned => "aligned".to_string(),
                    Placement::Offset(o) => format!("offset {o}"),
                    Placement::Offsets(o) => format!("offsets {:?}", o.as_slice()),
                },
                limit,
                wall,
                (wall / limit - 1.0) * 100.0,
                sol.work,
                sol.stopped_by_time,
                sol.layout.size - sol.lower_bound
            );
        }
    }
    Ok(())
}
