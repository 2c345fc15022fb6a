//! Solver scaling over many synthetic structs per size: the distribution of
//! `layout-core/benches/solve.rs` (25% read-mostly, 15% lockless in two
//! writer groups, 25% locked under two locks, 35% cold; mostly 8-byte
//! fields, some small ones and arrays), with several seeds per size where
//! the criterion bench times one. Each struct is solved once per placement
//! (aligned, and at offset 48 of a line-aligned container).
//!
//! Per size it prints the median and the slowest solve time, how many
//! results are proven optimal (every goal at its bound), how many have the
//! size at its lower bound, and the largest gap in bytes and in lines.
//!
//! ```text
//! cargo run --release --example solve_scaling -- [--seeds 9] [--time-limit 5] [SIZES...]
//! cargo run --release --example solve_scaling --features layout-core/highs -- ...
//! ```

use layout_core::model::Placement;
use layout_core::solve::{solve, SolveOptions};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use synthetic::synthetic;

/// The bench's distribution (seed 1 gives its struct).
#[path = "../../bench/synthetic/mod.rs"]
mod synthetic;

fn run() -> Result<(), String> {
    let mut seeds = 9u64;
    let mut limit = Duration::from_secs(5);
    let mut sizes: Vec<usize> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--seeds" => seeds = value()?.parse().map_err(|e| format!("--seeds: {e}"))?,
            "--time-limit" => {
                let s: f64 = value()?.parse().map_err(|e| format!("--time-limit: {e}"))?;
                limit = Duration::from_secs_f64(s);
            }
            n => sizes.push(n.parse().map_err(|e| format!("size {n}: {e}"))?),
        }
    }
    if sizes.is_empty() {
        sizes = vec![10, 20, 32, 40, 80, 100, 160, 300];
    }
    println!(
        "{:>6} {:>6} {:>10} {:>10} {:>8} {:>11} {:>9} {:>9}  methods",
        "fields", "solves", "median", "slowest", "optimal", "size=bound", "max gap B", "max gap L"
    );
    for &n in &sizes {
        let mut times = Vec::new();
        let (mut optimal, mut at_bound, mut gap_b, mut solves) = (0, 0, 0u64, 0);
        let mut methods: Vec<&'static str> = Vec::new();
        for seed in 1..=seeds {
            let s = synthetic(n, seed);
            for placement in [Placement::Aligned, Placement::Offset(48)] {
                let opts = SolveOptions {
                    placement,
                    time_limit: limit,
                    ..SolveOptions::default()
                };
                let start = Instant::now();
                let sol = solve(&s, &opts).map_err(|e| format!("{n} fields, seed {seed}: {e}"))?;
                times.push(start.elapsed());
                solves += 1;
                optimal += usize::from(sol.optimal);
                let gap = sol.layout.size - sol.lower_bound;
                at_bound += usize::from(gap == 0);
                gap_b = gap_b.max(gap);
                if !methods.contains(&sol.method.name()) {
                    methods.push(sol.method.name());
                }
            }
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "{:>6} {:>6} {:>8.1}ms {:>8.1}ms {:>8} {:>11} {:>9} {:>9}  {}",
            n,
            solves,
            ms(times[times.len() / 2]),
            ms(*times.last().unwrap_or(&Duration::ZERO)),
            format!("{optimal}/{solves}"),
            format!("{at_bound}/{solves}"),
            gap_b,
            gap_b.div_ceil(64),
            methods.join(",")
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
