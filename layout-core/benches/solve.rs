//! Solver timings on synthetic structs of 10 to 300 fields with every access
//! class (read-mostly, two lockless writer groups, two locks, cold), in
//! both placement modes. Before timing, each case prints once whether its
//! result is proven optimal, its size against the lower bound, and the method.
//!
//! `cargo bench -p layout-core --bench solve -- --warm-up-time 1 --measurement-time 3`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use layout_core::model::{Access, Field, Placement, Struct};
use layout_core::solve::{solve, SolveOptions};
use std::hint::black_box;
use std::time::Duration;

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
fn synthetic(n: usize, seed: u64) -> Struct {
    let mut rng = Lcg(seed ^ (n as u64) << 32);
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

fn bench_solve(c: &mut Criterion) {
    let mut group = c.benchmark_group("solve");
    for n in [10, 20, 32, 40, 80, 100, 160, 300] {
        for (mode, placement) in [
            ("aligned", Placement::Aligned),
            ("offset48", Placement::Offset(48)),
        ] {
            let s = synthetic(n, 1);
            let opts = SolveOptions {
                placement,
                time_limit: Duration::from_secs(10),
                ..SolveOptions::default()
            };
            let sol = solve(&s, &opts).expect("synthetic structs are feasible");
            println!(
                "solve/{mode}/{n}: size {} lower bound {} align {} optimal {} method {} (soft {}, read lines {}, movement {})",
                sol.layout.size,
                sol.lower_bound,
                sol.layout.align,
                sol.optimal,
                sol.method,
                sol.cost.soft,
                sol.cost.read_lines,
                sol.cost.movement
            );
            group.bench_with_input(BenchmarkId::new(mode, n), &s, |b, s| {
                b.iter(|| solve(black_box(s), &opts))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_solve);
criterion_main!(benches);
