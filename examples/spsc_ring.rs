//! A single-producer single-consumer ring buffer.
//!
//! The producer writes `tail` and its cached copy of `head`; the consumer
//! writes `head` and its cached copy of `tail`. Both read `slots` and `mask`
//! on every operation. The two writer groups must not share a line with each
//! other, and neither may share one with the read-mostly fields.
//!
//! `cargo run --example spsc_ring` prints the layout as written, the layout
//! `#[cachelayout::optimize]` writes, the memory against `CachePadded` on
//! every index, and moves a million values through the optimized ring.

use cachelayout::CacheLayout;
use std::cell::UnsafeCell;
use std::mem::size_of;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

/// As a user writes it (checked, not asserted: `report_only`; only
/// reported here).
#[allow(dead_code)]
mod as_written {
    use std::cell::UnsafeCell;
    use std::sync::atomic::AtomicUsize;

    #[derive(cachelayout::CacheLayout)]
    #[layout(report_only)]
    pub struct Ring {
        pub slots: Box<[UnsafeCell<u64>]>,
        pub mask: usize,
        #[layout(lockless(group = "producer"))]
        pub tail: AtomicUsize,
        #[layout(lockless(group = "producer"))]
        pub cached_head: AtomicUsize,
        #[layout(lockless(group = "consumer"))]
        pub head: AtomicUsize,
        #[layout(lockless(group = "consumer"))]
        pub cached_tail: AtomicUsize,
    }
}

/// The usual fix by hand: `CachePadded` around every index (only measured
/// here).
#[allow(dead_code)]
mod padded {
    use crossbeam_utils::CachePadded;
    use std::cell::UnsafeCell;
    use std::sync::atomic::AtomicUsize;

    pub struct Ring {
        pub slots: Box<[UnsafeCell<u64>]>,
        pub mask: usize,
        pub tail: CachePadded<AtomicUsize>,
        pub cached_head: CachePadded<AtomicUsize>,
        pub head: CachePadded<AtomicUsize>,
        pub cached_tail: CachePadded<AtomicUsize>,
    }
}

#[cachelayout::optimize]
#[derive(Default)]
pub struct Ring {
    slots: Box<[UnsafeCell<u64>]>,
    mask: usize,
    #[layout(lockless(group = "producer"))]
    tail: AtomicUsize,
    #[layout(lockless(group = "producer"))]
    cached_head: AtomicUsize,
    #[layout(lockless(group = "consumer"))]
    head: AtomicUsize,
    #[layout(lockless(group = "consumer"))]
    cached_tail: AtomicUsize,
}

// SAFETY: a slot is written only by the producer before it publishes `tail`
// (Release) and read only by the consumer after it sees that `tail`
// (Acquire), and vice versa for `head`; `Producer` and `Consumer` are the only
// handles and neither is `Clone`.
unsafe impl Sync for Ring {}

impl Ring {
    /// A ring of `capacity` slots (a power of two).
    fn with_capacity(capacity: usize) -> Ring {
        assert!(capacity.is_power_of_two());
        // The indices start at 0, and `Default` fills the markers `optimize` adds.
        Ring {
            slots: (0..capacity).map(|_| UnsafeCell::new(0)).collect(),
            mask: capacity - 1,
            ..Default::default()
        }
    }
}

/// The one producer.
struct Producer<'a>(&'a Ring);
/// The one consumer.
struct Consumer<'a>(&'a Ring);

impl Producer<'_> {
    fn push(&mut self, value: u64) -> Result<(), u64> {
        let r = self.0;
        let tail = r.tail.load(Ordering::Relaxed);
        if tail - r.cached_head.load(Ordering::Relaxed) > r.mask {
            r.cached_head
                .store(r.head.load(Ordering::Acquire), Ordering::Relaxed);
            if tail - r.cached_head.load(Ordering::Relaxed) > r.mask {
                return Err(value);
            }
        }
        // SAFETY: the slot is free (the consumer is past it) and only this producer writes.
        unsafe { *r.slots[tail & r.mask].get() = value };
        r.tail.store(tail + 1, Ordering::Release);
        Ok(())
    }
}

impl Consumer<'_> {
    fn pop(&mut self) -> Option<u64> {
        let r = self.0;
        let head = r.head.load(Ordering::Relaxed);
        if head == r.cached_tail.load(Ordering::Relaxed) {
            r.cached_tail
                .store(r.tail.load(Ordering::Acquire), Ordering::Relaxed);
            if head == r.cached_tail.load(Ordering::Relaxed) {
                return None;
            }
        }
        // SAFETY: the producer published this slot (Acquire above) and will not touch it until `head` moves.
        let value = unsafe { *r.slots[head & r.mask].get() };
        r.head.store(head + 1, Ordering::Release);
        Some(value)
    }
}

fn main() {
    println!("== as written: #[derive(CacheLayout)] #[layout(report_only)] ==\n");
    println!("{}", as_written::Ring::layout_report());
    println!("== #[cachelayout::optimize] ==\n");
    println!("{}", Ring::layout_report());

    println!("== memory per ring (the slots are on the heap) ==\n");
    println!(
        "  as written:                     {:>4} B",
        size_of::<as_written::Ring>()
    );
    println!(
        "  #[cachelayout::optimize]:       {:>4} B",
        size_of::<Ring>()
    );
    println!(
        "  CachePadded on every index:     {:>4} B",
        size_of::<padded::Ring>()
    );

    const N: u64 = 1_000_000;
    let ring = Ring::with_capacity(1024);
    let (mut producer, mut consumer) = (Producer(&ring), Consumer(&ring));
    let sum = thread::scope(|s| {
        s.spawn(move || {
            for v in 0..N {
                while producer.push(v).is_err() {
                    std::hint::spin_loop();
                }
            }
        });
        let mut sum = 0u64;
        let mut seen = 0;
        while seen < N {
            if let Some(v) = consumer.pop() {
                sum += v;
                seen += 1;
            }
        }
        sum
    });
    println!(
        "\nmoved {N} values through the ring; sum {sum} (expected {})",
        N * (N - 1) / 2
    );
}
