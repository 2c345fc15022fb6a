//! False sharing, measured: writer threads bump lockless counters while
//! reader threads read the configuration next to them, in three layouts of
//! the same struct (see `false_sharing/layouts.rs`):
//!
//! * as declared: counters interleaved with configuration (one line);
//! * `#[cachelayout::optimize]`: the same fields, counters on their own line;
//! * `CachePadded` on every field.
//!
//! ```text
//! cargo run --release --example false_sharing -- --writers 1 --readers 1
//! cargo run --release --example false_sharing -- --writers 8 --readers 8 --repeats 9
//! ```
//!
//! Each run starts all threads at a barrier, lets them loop for
//! `--duration-ms`, and counts the calls each made. The output gives the
//! median over `--repeats` runs with the spread, and says whether the
//! difference stands out of that spread. Threads are not pinned to CPUs: the
//! OS places them (two threads on SMT siblings share an L1 and false sharing
//! costs them less); use `taskset` to choose the CPUs.

#[path = "false_sharing/layouts.rs"]
mod layouts;

use cachelayout::CacheLayout;
use clap::Parser;
use crossbeam_utils::CachePadded;
use layouts::{declared, optimized, padded, Shard};
use std::mem::{align_of, size_of};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

/// Reader and writer throughput of three layouts of one struct.
#[derive(Parser)]
struct Args {
    /// Threads calling `fetch_add` on the counters.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    writers: u32,
    /// Threads reading the configuration fields.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    readers: u32,
    /// How long each run lets the threads loop, in milliseconds.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(10..=600_000))]
    duration_ms: u64,
    /// Runs per layout; the output gives the median.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeats: u32,
}

/// Calls between two looks at the stop flag.
const BATCH: u64 = 64;

/// One run of one layout: calls per second, summed over the threads.
#[derive(Clone, Copy)]
struct Sample {
    reads_per_s: f64,
    writes_per_s: f64,
    /// The share of the run the threads spent on a CPU (Linux only).
    on_cpu: Option<f64>,
}

/// What one thread did in a run.
#[derive(Clone, Copy)]
struct ThreadRun {
    calls: u64,
    wall: Duration,
    /// Time on a CPU, from the scheduler's statistics.
    on_cpu: Option<Duration>,
}

/// The calling thread's time on a CPU so far (Linux: first field of
/// `/proc/thread-self/schedstat`, in nanoseconds).
fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Loops `op` from the barrier until `stop`.
fn worker(start: &Barrier, stop: &AtomicBool, op: impl Fn()) -> ThreadRun {
    start.wait();
    let began = Instant::now();
    let cpu_before = thread_cpu_time();
    let mut calls = 0u64;
    // At least one batch, so every thread has a rate even when the OS ran
    // it only after `stop`.
    loop {
        for _ in 0..BATCH {
            op();
        }
        calls += BATCH;
        if stop.load(Relaxed) {
            break;
        }
    }
    let on_cpu = thread_cpu_time()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    ThreadRun {
        calls,
        wall: began.elapsed(),
        on_cpu,
    }
}

/// Calls, calls per second, wall time and time on a CPU, summed over threads.
#[derive(Default)]
struct Totals {
    calls: u64,
    per_s: f64,
    wall: Duration,
    on_cpu: Option<Duration>,
}

impl Totals {
    fn of(runs: impl IntoIterator<Item = ThreadRun>) -> Totals {
        let mut totals = Totals {
            on_cpu: Some(Duration::ZERO),
            ..Totals::default()
        };
        for run in runs {
            totals.calls += run.calls;
            totals.per_s += run.calls as f64 / run.wall.as_secs_f64();
            totals.wall += run.wall;
            totals.on_cpu = totals.on_cpu.zip(run.on_cpu).map(|(a, b)| a + b);
        }
        totals
    }
}

/// Runs `writers` counting threads and `readers` reading threads on one
/// fresh instance of `S` for `duration`.
fn run<S: Shard>(writers: u32, readers: u32, duration: Duration) -> Sample {
    // Line-aligned and alone on its lines, whatever the layout's alignment:
    // only the layout decides which fields share a line.
    let shard: Box<CachePadded<S>> = Box::default();
    let stop = CachePadded::new(AtomicBool::new(false));
    let start = Barrier::new((writers + readers + 1) as usize);
    let (shard, stop, start) = (&**shard, &*stop, &start);
    let (write_calls, sample) = thread::scope(|s| {
        let writer_threads: Vec<_> = (0..writers)
            .map(|_| s.spawn(move || worker(start, stop, || shard.count())))
            .collect();
        let reader_threads: Vec<_> = (0..readers)
            .map(|_| s.spawn(move || worker(start, stop, || shard.read_config())))
            .collect();
        start.wait();
        thread::sleep(duration);
        stop.store(true, Relaxed);
        let join = |threads: Vec<thread::ScopedJoinHandle<'_, ThreadRun>>| {
            Totals::of(
                threads
                    .into_iter()
                    .map(|t| t.join().expect("a worker thread panicked")),
            )
        };
        let (writes, reads) = (join(writer_threads), join(reader_threads));
        let on_cpu = writes
            .on_cpu
            .zip(reads.on_cpu)
            .map(|(w, r)| (w + r).as_secs_f64() / (writes.wall + reads.wall).as_secs_f64());
        (
            writes.calls,
            Sample {
                reads_per_s: reads.per_s,
                writes_per_s: writes.per_s,
                on_cpu,
            },
        )
    });
    assert_eq!(
        shard.counted(),
        write_calls,
        "the counters must hold every increment the writers made"
    );
    sample
}

/// A layout under test.
struct Layout {
    name: &'static str,
    size: usize,
    align: usize,
    run: fn(u32, u32, Duration) -> Sample,
    samples: Vec<Sample>,
}

impl Layout {
    fn of<S: Shard>(name: &'static str) -> Layout {
        Layout {
            name,
            size: size_of::<S>(),
            align: align_of::<S>(),
            run: run::<S>,
            samples: Vec::new(),
        }
    }

    fn reads(&self) -> Vec<f64> {
        self.samples.iter().map(|s| s.reads_per_s).collect()
    }

    fn writes(&self) -> Vec<f64> {
        self.samples.iter().map(|s| s.writes_per_s).collect()
    }

    /// The share of the runs the threads spent on a CPU, where known.
    fn on_cpu(&self) -> Option<Vec<f64>> {
        self.samples.iter().map(|s| s.on_cpu).collect()
    }
}

/// Median, minimum and maximum.
fn spread(values: &[f64]) -> (f64, f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    let median = if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    };
    (median, v[0], v[v.len() - 1])
}

/// `12.3 M/s (min 11.9, max 12.5)`.
fn rate(values: &[f64]) -> String {
    let (median, min, max) = spread(values);
    format!(
        "{:.1} M/s ({:.1}..{:.1})",
        median / 1e6,
        min / 1e6,
        max / 1e6
    )
}

/// The ratio of the medians, and whether the repeats separate the two.
fn compare(other: &[f64], base: &[f64]) -> String {
    let (other_median, other_min, other_max) = spread(other);
    let (base_median, base_min, base_max) = spread(base);
    let verdict = if other.len() < 2 {
        "one repeat: no spread to judge noise by"
    } else if other_min > base_max {
        "higher in every repeat"
    } else if other_max < base_min {
        "lower in every repeat"
    } else {
        "ranges overlap: not told apart from run-to-run noise"
    };
    format!("{:>5.2}x  {verdict}", other_median / base_median)
}

/// CPU model, SMT siblings and load, where Linux tells them.
fn machine_lines() -> Vec<String> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let mut lines = Vec::new();
    if let Some(model) = read("/proc/cpuinfo").and_then(|info| {
        info.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map(|m| m.trim().to_string())
    }) {
        lines.push(format!("CPU model:                {model}"));
    }
    if let Some(siblings) = read("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list") {
        lines.push(format!(
            "SMT siblings of cpu0:     {} (as the OS sees them; a VM may hide the host's)",
            siblings.trim()
        ));
    }
    if let Some(load) = read("/proc/loadavg") {
        let one_minute = load.split_whitespace().next().unwrap_or("?");
        lines.push(format!(
            "load average (1 min):     {one_minute} (other processes compete for the same CPUs)"
        ));
    }
    lines
}

fn main() {
    let args = Args::parse();
    let duration = Duration::from_millis(args.duration_ms);
    let cpus = thread::available_parallelism().map_or(0, |n| n.get());
    let threads = (args.writers + args.readers) as usize;

    println!("== machine ==\n");
    println!("available_parallelism:    {cpus}");
    for line in machine_lines() {
        println!("{line}");
    }
    println!(
        "threads:                  {} writers + {} readers = {threads}, not pinned",
        args.writers, args.readers
    );
    if threads > cpus {
        println!(
            "\nWARNING: {threads} threads on {cpus} CPUs. Threads take turns on the CPUs, so these \
             numbers mostly measure the scheduler, not cache-line traffic."
        );
    }

    println!("\n== as declared: #[derive(CacheLayout)] #[layout(report_only)] #[repr(C)] ==\n");
    println!("{}", declared::ShardStats::layout_report());
    println!("== #[cachelayout::optimize] ==\n");
    println!("{}", optimized::ShardStats::layout_report());

    let mut layouts = [
        Layout::of::<declared::ShardStats>("as declared"),
        Layout::of::<optimized::ShardStats>("cachelayout::optimize"),
        Layout::of::<padded::ShardStats>("CachePadded every field"),
    ];
    println!("== bytes per instance ==\n");
    for l in &layouts {
        println!("  {:<24} {:>5} B  (align {})", l.name, l.size, l.align);
    }

    println!(
        "\n== throughput: {} runs of {} ms per layout, layouts interleaved ==\n",
        args.repeats, args.duration_ms
    );
    println!("reads  = calls of read_config (loads of 5 read-mostly fields), summed over readers");
    println!("writes = calls of count (fetch_add(1, Relaxed) on 3 counters), summed over writers");
    println!("each instance starts a 128-byte line pair and is alone on its lines\n");
    let began = Instant::now();
    for repeat in 0..args.repeats as usize {
        // Rotate the order so no layout always runs first (or last).
        for i in 0..layouts.len() {
            let layout = &mut layouts[(repeat + i) % 3];
            let sample = (layout.run)(args.writers, args.readers, duration);
            layout.samples.push(sample);
        }
    }
    println!(
        "{:<24} {:>30} {:>30} {:>12}",
        "layout", "reads: median (min..max)", "writes: median (min..max)", "on a CPU"
    );
    let mut least_on_cpu = f64::INFINITY;
    for l in &layouts {
        let on_cpu = l.on_cpu().map_or("unknown".to_string(), |shares| {
            let (median, min, _) = spread(&shares);
            least_on_cpu = least_on_cpu.min(min);
            format!("{:.0}%", median * 100.0)
        });
        println!(
            "{:<24} {:>30} {:>30} {on_cpu:>12}",
            l.name,
            rate(&l.reads()),
            rate(&l.writes())
        );
    }
    println!(
        "(on a CPU: the threads' time on a CPU over their wall time, median of the runs, \
         from /proc/thread-self/schedstat)"
    );
    if least_on_cpu < 0.9 {
        println!(
            "\nNOTE: in some runs the threads were on a CPU only {:.0}% of the time: for part of \
             each run readers and writers did not run side by side, which hides false sharing.",
            least_on_cpu * 100.0
        );
    }

    let [declared, optimized, padded] = &layouts;
    println!("\nratios of medians against as declared:");
    for other in [optimized, padded] {
        println!(
            "  {:<24} reads  {}",
            other.name,
            compare(&other.reads(), &declared.reads())
        );
        println!(
            "  {:<24} writes {}",
            "",
            compare(&other.writes(), &declared.writes())
        );
    }
    println!(
        "\nmeasured in {:.1} s; a 'higher in every repeat' on a loaded or small machine \
         can still be noise, rerun with more --repeats to check",
        began.elapsed().as_secs_f64()
    );
}
