//! Per-request counters next to the configuration every request reads.
//!
//! Every request reads `name`, `max_body_bytes`, `timeout_ms` and
//! `max_connections`, and bumps the atomic counters (all of them, on every
//! request: one writer group, `requests`). Declared the natural
//! way, the counters share cache lines with the configuration: each
//! increment on one CPU evicts the configuration from every other CPU.
//!
//! `cargo run --example server_stats` prints the layout as written (the
//! report of `#[derive(CacheLayout)]`), the layout `#[cachelayout::optimize]`
//! writes, and the memory each takes against wrapping every hot field in
//! `crossbeam_utils::CachePadded`.

use cachelayout::CacheLayout;
use std::mem::size_of;
use std::sync::atomic::Ordering;
use std::thread;

/// The struct as a user writes it, checked but not asserted
/// (`report_only`): the report shows the lines that break the rule.
mod as_written {
    use std::sync::atomic::AtomicU64;
    use std::sync::Mutex;

    #[derive(cachelayout::CacheLayout)]
    #[layout(report_only)]
    pub struct ServerStats {
        pub name: &'static str,
        #[layout(lockless(group = "requests"))]
        pub requests: AtomicU64,
        pub max_body_bytes: u64,
        #[layout(lockless(group = "requests"))]
        pub bytes_in: AtomicU64,
        pub timeout_ms: u32,
        #[layout(lockless(group = "requests"))]
        pub bytes_out: AtomicU64,
        pub max_connections: u32,
        #[layout(lockless(group = "requests"))]
        pub errors: AtomicU64,
        /// The last errors, for the status page.
        pub recent_errors: Mutex<Vec<String>>,
    }
}

/// The same fields, laid out by the solver.
mod optimized {
    use std::sync::atomic::AtomicU64;
    use std::sync::Mutex;

    // `new` below is this library's own constructor, so the generated one
    // (all fields, declaration order) is named `from_fields`.
    #[cachelayout::optimize(constructor = "from_fields")]
    #[derive(Default)]
    pub struct ServerStats {
        pub name: &'static str,
        #[layout(lockless(group = "requests"))]
        pub requests: AtomicU64,
        pub max_body_bytes: u64,
        #[layout(lockless(group = "requests"))]
        pub bytes_in: AtomicU64,
        pub timeout_ms: u32,
        #[layout(lockless(group = "requests"))]
        pub bytes_out: AtomicU64,
        pub max_connections: u32,
        #[layout(lockless(group = "requests"))]
        pub errors: AtomicU64,
        /// The last errors, for the status page. The macro cannot size a
        /// `Mutex` (its size differs between platforms), so it gets lines
        /// of its own; `#[layout(size = N, align = M)]` would let it fill
        /// room elsewhere (and is checked at compile time).
        pub recent_errors: Mutex<Vec<String>>,
    }

    impl ServerStats {
        /// The markers `optimize` adds are private: build values here (the
        /// generated `Default` fills them in; so does `from_fields`).
        pub fn new(
            name: &'static str,
            max_body_bytes: u64,
            timeout_ms: u32,
            max_connections: u32,
        ) -> Self {
            ServerStats {
                name,
                max_body_bytes,
                timeout_ms,
                max_connections,
                ..Default::default()
            }
        }
    }
}

/// The usual fix by hand: every hot field in its own 128-byte `CachePadded`
/// (only measured here).
#[allow(dead_code)]
mod padded {
    use crossbeam_utils::CachePadded;
    use std::sync::atomic::AtomicU64;
    use std::sync::Mutex;

    pub struct ServerStats {
        pub name: &'static str,
        pub requests: CachePadded<AtomicU64>,
        pub max_body_bytes: u64,
        pub bytes_in: CachePadded<AtomicU64>,
        pub timeout_ms: u32,
        pub bytes_out: CachePadded<AtomicU64>,
        pub max_connections: u32,
        pub errors: CachePadded<AtomicU64>,
        pub recent_errors: Mutex<Vec<String>>,
    }
}

/// What a request does with the stats: read the configuration, count.
fn handle(stats: &optimized::ServerStats, body_len: u64) {
    stats.requests.fetch_add(1, Ordering::Relaxed);
    if body_len > stats.max_body_bytes {
        stats.errors.fetch_add(1, Ordering::Relaxed);
        stats
            .recent_errors
            .lock()
            .unwrap()
            .push(format!("{}: body of {body_len} bytes", stats.name));
        return;
    }
    stats.bytes_in.fetch_add(body_len, Ordering::Relaxed);
    stats.bytes_out.fetch_add(body_len / 2, Ordering::Relaxed);
}

fn main() {
    println!("== as written: #[derive(CacheLayout)] #[layout(report_only)] ==\n");
    println!("{}", as_written::ServerStats::layout_report());
    println!("== #[cachelayout::optimize] ==\n");
    println!("{}", optimized::ServerStats::layout_report());

    println!("== memory per instance ==\n");
    println!(
        "  as written:                      {:>4} B",
        size_of::<as_written::ServerStats>()
    );
    println!(
        "  #[cachelayout::optimize]:        {:>4} B",
        size_of::<optimized::ServerStats>()
    );
    println!(
        "  CachePadded on every hot field:  {:>4} B  ({} B per CachePadded<AtomicU64>)",
        size_of::<padded::ServerStats>(),
        size_of::<crossbeam_utils::CachePadded<std::sync::atomic::AtomicU64>>()
    );

    let stats = optimized::ServerStats::new("api", 1 << 20, 30_000, 1024);
    thread::scope(|s| {
        for t in 0..4u64 {
            let stats = &stats;
            s.spawn(move || (0..10_000u64).for_each(|i| handle(stats, (i * 97 + t) % (2 << 20))));
        }
    });
    println!(
        "\n4 threads x 10000 requests: requests {}, errors {}, bytes in {}",
        stats.requests.load(Ordering::Relaxed),
        stats.errors.load(Ordering::Relaxed),
        stats.bytes_in.load(Ordering::Relaxed)
    );
}
