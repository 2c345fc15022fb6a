//! A bounded multi-producer multi-consumer queue (one sequence number per
//! slot): producers claim slots by advancing `tail`, consumers by advancing
//! `head`; both read `buffer` and `mask` on every operation.
//!
//! Producers and consumers are different writers, so `head` and `tail` must
//! not share a line, and neither may share one with `buffer` or `mask`.
//! `#[cachelayout::optimize]` does this with no attribute at all: each
//! atomic is a writer group of its own by default.
//!
//! `cargo run --example mpmc_queue` prints the optimized layout, `size_of`
//! as written, with `CachePadded` on both indices and with `optimize`, and
//! moves values through the queue from 4 producers to 4 consumers.

use cachelayout::CacheLayout;
use std::cell::UnsafeCell;
use std::mem::{size_of, MaybeUninit};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

/// A slot: the sequence number says whose turn it is (a producer's when it
/// equals the position, a consumer's when it is one past it).
struct Slot<T> {
    seq: AtomicUsize,
    value: UnsafeCell<MaybeUninit<T>>,
}

/// As a user writes it (only measured).
#[allow(dead_code)]
mod naive {
    use super::Slot;
    use std::sync::atomic::AtomicUsize;

    pub struct Queue<T> {
        pub buffer: Box<[Slot<T>]>,
        pub mask: usize,
        pub head: AtomicUsize,
        pub tail: AtomicUsize,
    }
}

/// The usual fix by hand (only measured).
#[allow(dead_code)]
mod padded {
    use super::Slot;
    use crossbeam_utils::CachePadded;
    use std::sync::atomic::AtomicUsize;

    pub struct Queue<T> {
        pub buffer: Box<[Slot<T>]>,
        pub mask: usize,
        pub head: CachePadded<AtomicUsize>,
        pub tail: CachePadded<AtomicUsize>,
    }
}

/// The same fields as `naive::Queue`, laid out by the solver.
#[cachelayout::optimize]
pub struct Queue<T> {
    buffer: Box<[Slot<T>]>,
    mask: usize,
    head: AtomicUsize,
    tail: AtomicUsize,
}

/// The same, isolated: line-aligned start and end, like the `CachePadded`
/// version, so no neighbour in memory shares its edge lines (only measured).
#[allow(dead_code)]
mod isolated {
    use super::Slot;
    use std::sync::atomic::AtomicUsize;

    #[cachelayout::optimize(isolated)]
    pub struct Queue<T> {
        buffer: Box<[Slot<T>]>,
        mask: usize,
        head: AtomicUsize,
        tail: AtomicUsize,
    }
}

// SAFETY: a slot's value is written only by the producer that claimed it
// (CAS on `tail`) before it publishes the slot's sequence number (Release),
// and read only by the consumer that claimed it (CAS on `head`) after it
// sees that number (Acquire).
unsafe impl<T: Send> Sync for Queue<T> {}

impl<T> Queue<T> {
    /// A queue of `capacity` slots (a power of two).
    pub fn with_capacity(capacity: usize) -> Self {
        assert!(capacity.is_power_of_two());
        let buffer = (0..capacity)
            .map(|i| Slot {
                seq: AtomicUsize::new(i),
                value: UnsafeCell::new(MaybeUninit::uninit()),
            })
            .collect();
        Queue::new(
            buffer,
            capacity - 1,
            AtomicUsize::new(0),
            AtomicUsize::new(0),
        )
    }

    pub fn push(&self, value: T) -> Result<(), T> {
        let mut pos = self.tail.load(Ordering::Relaxed);
        loop {
            let slot = &self.buffer[pos & self.mask];
            let seq = slot.seq.load(Ordering::Acquire);
            if seq == pos {
                match self.tail.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        // SAFETY: this producer claimed the slot.
                        unsafe { (*slot.value.get()).write(value) };
                        slot.seq.store(pos + 1, Ordering::Release);
                        return Ok(());
                    }
                    Err(now) => pos = now,
                }
            } else if seq < pos {
                return Err(value);
            } else {
                pos = self.tail.load(Ordering::Relaxed);
            }
        }
    }

    pub fn pop(&self) -> Option<T> {
        let mut pos = self.head.load(Ordering::Relaxed);
        loop {
            let slot = &self.buffer[pos & self.mask];
            let seq = slot.seq.load(Ordering::Acquire);
            if seq == pos + 1 {
                match self.head.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        // SAFETY: this consumer claimed the slot, which a producer filled.
                        let value = unsafe { (*slot.value.get()).assume_init_read() };
                        slot.seq.store(pos + self.mask + 1, Ordering::Release);
                        return Some(value);
                    }
                    Err(now) => pos = now,
                }
            } else if seq < pos + 1 {
                return None;
            } else {
                pos = self.head.load(Ordering::Relaxed);
            }
        }
    }
}

fn main() {
    println!("{}", Queue::<u64>::layout_report());
    println!("size_of, Queue<u64> (the slots are on the heap):");
    println!(
        "  as written:               {:>4} B",
        size_of::<naive::Queue<u64>>()
    );
    println!(
        "  CachePadded head, tail:   {:>4} B",
        size_of::<padded::Queue<u64>>()
    );
    println!(
        "  #[cachelayout::optimize]: {:>4} B",
        size_of::<Queue<u64>>()
    );
    println!(
        "  optimize(isolated):       {:>4} B",
        size_of::<isolated::Queue<u64>>()
    );

    const PER: u64 = 100_000;
    let q = Queue::<u64>::with_capacity(1024);
    let total: u64 = thread::scope(|s| {
        for p in 0..4u64 {
            let q = &q;
            s.spawn(move || {
                for v in 0..PER {
                    let mut v = p * PER + v;
                    while let Err(back) = q.push(v) {
                        v = back;
                        std::hint::spin_loop();
                    }
                }
            });
        }
        let consumers: Vec<_> = (0..4)
            .map(|_| {
                let q = &q;
                s.spawn(move || {
                    let (mut sum, mut n) = (0u64, 0);
                    while n < PER {
                        if let Some(v) = q.pop() {
                            sum += v;
                            n += 1;
                        }
                    }
                    sum
                })
            })
            .collect();
        consumers.into_iter().map(|c| c.join().unwrap()).sum()
    });
    let n = 4 * PER;
    println!(
        "\n4 producers, 4 consumers: {n} values, sum {total} (expected {})",
        n * (n - 1) / 2
    );
}
