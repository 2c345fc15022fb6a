//! One cache shard's configuration and counters, in three layouts.
//!
//! Readers (every lookup) read the configuration: `name`, `capacity`,
//! `ttl_ms`, `max_key_len`, `shard_id`. Writers bump the counters without a
//! lock: `hits`, `misses`, `inserts`, all three on every call (one writer
//! group, `count`). The fields are the same in each layout;
//! only where they sit differs.
//!
//! Shared by `examples/false_sharing.rs` and `benches/false_sharing.rs`.

use crossbeam_utils::CachePadded;
use std::hint::black_box;
use std::sync::atomic::Ordering::Relaxed;

/// What the threads do with a shard, whatever its layout.
pub trait Shard: Default + Sync {
    /// One lookup's worth of configuration reads: loads every read-mostly
    /// field (each value goes through `black_box`, so none is skipped or
    /// hoisted out of the caller's loop).
    fn read_config(&self);

    /// One request's worth of counting: `fetch_add(1, Relaxed)` on every
    /// lockless counter.
    fn count(&self);

    /// How many `count` calls the counters hold (every counter gets one
    /// increment per call, so any of them tells).
    fn counted(&self) -> u64;
}

/// As a user writes it: configuration and counters interleaved, one 64-byte
/// line in all. Checked but not asserted (`report_only`), so the report
/// names the lines that break the rule.
pub mod declared {
    use std::sync::atomic::AtomicU64;

    #[derive(cachelayout::CacheLayout, Default)]
    #[layout(report_only)]
    #[repr(C)]
    pub struct ShardStats {
        pub name: &'static str,
        #[layout(lockless(group = "count"))]
        pub hits: AtomicU64,
        pub capacity: u64,
        #[layout(lockless(group = "count"))]
        pub misses: AtomicU64,
        pub ttl_ms: u64,
        #[layout(lockless(group = "count"))]
        pub inserts: AtomicU64,
        pub max_key_len: u32,
        pub shard_id: u32,
    }
}

/// The same fields, laid out by `#[cachelayout::optimize]` (64-byte lines,
/// the default).
pub mod optimized {
    use std::sync::atomic::AtomicU64;

    #[cachelayout::optimize]
    #[derive(Default)]
    pub struct ShardStats {
        pub name: &'static str,
        #[layout(lockless(group = "count"))]
        pub hits: AtomicU64,
        pub capacity: u64,
        #[layout(lockless(group = "count"))]
        pub misses: AtomicU64,
        pub ttl_ms: u64,
        #[layout(lockless(group = "count"))]
        pub inserts: AtomicU64,
        pub max_key_len: u32,
        pub shard_id: u32,
    }
}

/// The usual fix by hand: every field in its own `CachePadded` (128 bytes
/// on x86_64 and aarch64).
pub mod padded {
    use crossbeam_utils::CachePadded;
    use std::sync::atomic::AtomicU64;

    #[derive(Default)]
    pub struct ShardStats {
        pub name: CachePadded<&'static str>,
        pub hits: CachePadded<AtomicU64>,
        pub capacity: CachePadded<u64>,
        pub misses: CachePadded<AtomicU64>,
        pub ttl_ms: CachePadded<u64>,
        pub inserts: CachePadded<AtomicU64>,
        pub max_key_len: CachePadded<u32>,
        pub shard_id: CachePadded<u32>,
    }
}

/// A plain field's value.
fn plain<T: Copy>(field: &T) -> T {
    *field
}

/// A `CachePadded` field's value.
fn unpad<T: Copy>(field: &CachePadded<T>) -> T {
    **field
}

/// Implements [`Shard`] for a layout; `$get` turns `&field` into its value.
macro_rules! impl_shard {
    ($layout:ty, $get:ident) => {
        impl Shard for $layout {
            fn read_config(&self) {
                // Launder the reference: the compiler must load each field
                // again on every call instead of keeping it in a register.
                let s = black_box(self);
                black_box($get(&s.name));
                black_box($get(&s.capacity));
                black_box($get(&s.ttl_ms));
                black_box($get(&s.max_key_len));
                black_box($get(&s.shard_id));
            }

            fn count(&self) {
                self.hits.fetch_add(1, Relaxed);
                self.misses.fetch_add(1, Relaxed);
                self.inserts.fetch_add(1, Relaxed);
            }

            fn counted(&self) -> u64 {
                self.hits.load(Relaxed)
            }
        }
    };
}

impl_shard!(declared::ShardStats, plain);
impl_shard!(optimized::ShardStats, plain);
impl_shard!(padded::ShardStats, unpad);
