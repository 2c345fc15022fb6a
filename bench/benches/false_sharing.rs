//! Reader and writer cost of three layouts of one struct under contention
//! (the layouts of `examples/false_sharing/layouts.rs`): as declared,
//! `#[cachelayout::optimize]`, `CachePadded` on every field.
//!
//! `reader/*` times 10 000 configuration reads while one background thread
//! bumps the counters; `writer/*` times 10 000 counter bumps while one
//! background thread reads the configuration. One timed thread and one
//! background thread: fits a 2-CPU machine. For more threads use the example
//! (`cargo run --release --example false_sharing -- --help`).
//!
//! `cargo bench --bench false_sharing -- --warm-up-time 1 --measurement-time 3`

// `Shard::counted` serves the example's check, not the benchmark.
#[allow(dead_code)]
#[path = "../../examples/false_sharing/layouts.rs"]
mod layouts;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use crossbeam_utils::CachePadded;
use layouts::{declared, optimized, padded, Shard};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

/// Timed calls per iteration.
const CALLS: u64 = 10_000;

/// One call on a shard.
type Call<S> = fn(&S);

/// Which side the benchmark times; the other side runs in the background.
#[derive(Clone, Copy)]
enum Timed {
    /// `read_config` timed, `count` in the background.
    Reader,
    /// `count` timed, `read_config` in the background.
    Writer,
}

impl Timed {
    fn name(self) -> &'static str {
        match self {
            Timed::Reader => "reader",
            Timed::Writer => "writer",
        }
    }

    /// The timed call and the background call.
    fn calls<S: Shard>(self) -> [Call<S>; 2] {
        match self {
            Timed::Reader => [S::read_config, S::count],
            Timed::Writer => [S::count, S::read_config],
        }
    }
}

/// Times `CALLS` timed calls on one instance of `S` while another thread
/// makes the background calls on it in a loop. Returns the background
/// thread's calls per second over the whole benchmark.
fn contended<S: Shard>(group: &mut BenchmarkGroup<'_, WallTime>, layout: &str, side: Timed) -> f64 {
    let [timed, background] = side.calls::<S>();
    // Line-aligned and alone on its lines: only the layout decides sharing.
    let shard: Box<CachePadded<S>> = Box::default();
    let stop = CachePadded::new(AtomicBool::new(false));
    let (shard, stop) = (&**shard, &*stop);
    thread::scope(|s| {
        let helper = s.spawn(move || {
            let began = Instant::now();
            let mut calls = 0u64;
            while !stop.load(Relaxed) {
                for _ in 0..64 {
                    background(shard);
                }
                calls += 64;
            }
            calls as f64 / began.elapsed().as_secs_f64()
        });
        group.bench_function(layout, |b| {
            b.iter(|| {
                for _ in 0..CALLS {
                    timed(shard);
                }
            })
        });
        stop.store(true, Relaxed);
        helper.join().expect("the background thread panicked")
    })
}

/// `<side>/declared`, `<side>/optimized`, `<side>/padded`, then the
/// background thread's rate in each.
fn bench_side(c: &mut Criterion, side: Timed) {
    let mut group = c.benchmark_group(side.name());
    group.throughput(Throughput::Elements(CALLS));
    let background = [
        (
            "declared",
            contended::<declared::ShardStats>(&mut group, "declared", side),
        ),
        (
            "optimized",
            contended::<optimized::ShardStats>(&mut group, "optimized", side),
        ),
        (
            "padded",
            contended::<padded::ShardStats>(&mut group, "padded", side),
        ),
    ];
    group.finish();
    let other = match side {
        Timed::Reader => "writer (counts)",
        Timed::Writer => "reader (reads)",
    };
    for (layout, rate) in background {
        println!(
            "{}/{layout}: background {other}: {:.1} M calls/s",
            side.name(),
            rate / 1e6
        );
    }
}

fn readers(c: &mut Criterion) {
    bench_side(c, Timed::Reader);
}

fn writers(c: &mut Criterion) {
    bench_side(c, Timed::Writer);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = readers, writers
}
criterion_main!(benches);
