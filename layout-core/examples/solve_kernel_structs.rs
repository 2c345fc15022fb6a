//! Solver timings on real kernel structs with access classes inferred from
//! their member types (`layout_core::scan::infer`: atomics and refcounts
//! lockless, spinlocks and mutexes lock words), in two settings:
//!
//! - `inferred`: every other field cold, the default for unannotated C fields
//!   (no hard pairs unless an access file says more: the padding-only case);
//! - `hot-reads`: every other field read-mostly, the hardest reading (each
//!   lockless field must leave the lines of all plain fields).
//!
//! For each struct it prints the median solve time of N runs, the size as
//! compiled, the solution's size, the proven lower bound, the gap in bytes
//! and in cache lines, whether it is proven optimal, and the method.
//!
//! ```text
//! cargo run --release --example solve_kernel_structs -- \
//!     [--btf /sys/kernel/btf/vmlinux] [--runs 5] [--time-limit 5] [STRUCT...]
//! # the HiGHS backend:
//! cargo run --release --example solve_kernel_structs --features layout-core/highs -- ...
//! ```

use layout_core::model::{Access, Struct};
use layout_core::scan::infer;
use layout_core::solve::{solve, SolveOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The largest structs with atomics, and a few classics. mm_struct keeps
/// its fields in one anonymous struct (so that the whole of it can be
/// cache-line aligned): its body is that struct.
const DEFAULT_STRUCTS: &[&str] = &[
    "task_struct",
    "btrfs_fs_info",
    "netns_ipv4",
    "net_device",
    "ext4_sb_info",
    "sock",
    "(anon struct at mm_struct.@0)",
    "request_queue",
    "zone",
    "page_counter",
];

struct Options {
    btf: PathBuf,
    runs: usize,
    time_limit: Duration,
    structs: Vec<String>,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        btf: "/sys/kernel/btf/vmlinux".into(),
        runs: 5,
        time_limit: Duration::from_secs(5),
        structs: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--btf" => o.btf = value()?.into(),
            "--runs" => o.runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--time-limit" => {
                let secs: f64 = value()?.parse().map_err(|e| format!("--time-limit: {e}"))?;
                o.time_limit = Duration::from_secs_f64(secs);
            }
            name if !name.starts_with('-') => o.structs.push(name.to_string()),
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if o.structs.is_empty() {
        o.structs = DEFAULT_STRUCTS.iter().map(|s| s.to_string()).collect();
    }
    Ok(o)
}

/// `mm_struct body` for the anonymous struct that holds mm_struct's fields.
fn short(name: &str) -> String {
    match name
        .strip_prefix("(anon struct at ")
        .and_then(|r| r.split_once('.'))
    {
        Some((parent, _)) => format!("{parent} body"),
        None => name.to_string(),
    }
}

fn class_counts(s: &Struct) -> (usize, usize, usize) {
    let lockless = s.fields.iter().filter(|f| f.access.is_lockless()).count();
    let locked = s
        .fields
        .iter()
        .filter(|f| f.access.lock().is_some())
        .count();
    let read = s
        .fields
        .iter()
        .filter(|f| f.access.is_read_mostly())
        .count();
    (lockless, locked, read)
}

fn run() -> Result<(), String> {
    let o = parse_args()?;
    let db = layout_core::btf::load_btf(&o.btf).map_err(|d| d.to_string())?;
    let opts = SolveOptions {
        time_limit: o.time_limit,
        ..SolveOptions::default()
    };
    println!(
        "{:<14} {:<9} {:>6} {:>11} {:>9} {:>6} {:>6} {:>6} {:>5} {:>5} {:>7} method",
        "struct",
        "classes",
        "fields",
        "A/L/R",
        "median",
        "size",
        "solved",
        "bound",
        "gap B",
        "gap L",
        "optimal"
    );
    for name in &o.structs {
        let Some(agg) = db.find(name) else {
            println!("{:<14} not in {}", short(name), o.btf.display());
            continue;
        };
        let inferred = infer::infer_model(&db, agg);
        let mut hot = inferred.clone();
        for f in &mut hot.fields {
            if f.access == Access::Cold && f.size > 0 {
                f.access = Access::ReadMostly;
            }
        }
        for (label, s) in [("inferred", &inferred), ("hot-reads", &hot)] {
            let mut times = Vec::new();
            let mut last = None;
            for _ in 0..o.runs.max(1) {
                let start = Instant::now();
                let sol = solve(s, &opts);
                times.push(start.elapsed());
                last = Some(sol);
            }
            times.sort();
            let median = times[times.len() / 2];
            let (a, l, r) = class_counts(s);
            match last {
                Some(Ok(sol)) => {
                    let size = sol.layout.size;
                    let gap = size - sol.lower_bound;
                    println!(
                        "{:<14} {:<9} {:>6} {:>11} {:>7.1}ms {:>6} {:>6} {:>6} {:>5} {:>5} {:>7} {}",
                        short(name),
                        label,
                        s.fields.len(),
                        format!("{a}/{l}/{r}"),
                        median.as_secs_f64() * 1e3,
                        agg.size,
                        size,
                        sol.lower_bound,
                        gap,
                        gap.div_ceil(opts.line),
                        sol.optimal,
                        sol.method
                    );
                }
                Some(Err(e)) => println!("{:<14} {label:<9} error: {e}", short(name)),
                None => {}
            }
        }
    }
    std::mem::forget(db);
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
