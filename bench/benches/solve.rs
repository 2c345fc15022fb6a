//! Solver timings on synthetic structs of 10 to 300 fields with every access
//! class (read-mostly, two lockless writer groups, two locks, cold), in
//! both placement modes. Before timing, each case prints once whether its
//! result is proven optimal, its size against the lower bound, and the method.
//!
//! `cargo bench -p layout-core --bench solve -- --warm-up-time 1 --measurement-time 3`

#[path = "../synthetic/mod.rs"]
mod synthetic;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use layout_core::model::Placement;
use layout_core::solve::{solve, SolveOptions};
use std::hint::black_box;
use std::time::Duration;
use synthetic::synthetic;

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
