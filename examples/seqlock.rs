//! A sequence lock: one writer bumps `seq` (odd while it writes), writes
//! `data`, and bumps `seq` again; readers read `seq`, copy `data`, and
//! retry if `seq` moved. `seq` is a lockless field; `data` is written under
//! it (`locked_write = "seq"`), so the two may share a line, and the
//! read-mostly `name` stays off it.
//!
//! `cargo run --example seqlock` prints the optimized layout and `size_of`
//! as written, with `CachePadded` around `seq` and with `optimize`, then
//! runs one writer against three readers.

use cachelayout::CacheLayout;
use std::cell::UnsafeCell;
use std::mem::size_of;
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::thread;

/// As a user writes it (only measured).
#[allow(dead_code)]
mod naive {
    use std::cell::UnsafeCell;
    use std::sync::atomic::AtomicUsize;

    pub struct SeqLock<T> {
        pub name: &'static str,
        pub seq: AtomicUsize,
        pub data: UnsafeCell<T>,
    }
}

/// The usual fix by hand (only measured).
#[allow(dead_code)]
mod padded {
    use crossbeam_utils::CachePadded;
    use std::cell::UnsafeCell;
    use std::sync::atomic::AtomicUsize;

    pub struct SeqLock<T> {
        pub name: &'static str,
        pub seq: CachePadded<AtomicUsize>,
        pub data: UnsafeCell<T>,
    }
}

/// Laid out by the solver. `data` has the size of `T`, which the macro
/// cannot know: it gets lines of its own, correct for every `T`.
#[cachelayout::optimize]
pub struct SeqLock<T> {
    name: &'static str,
    seq: AtomicUsize,
    #[layout(locked_write = "seq")]
    data: UnsafeCell<T>,
}

// SAFETY: `data` is written only by the one writer (callers of `write`
// promise there is one) between two increments of `seq`; readers copy it
// and discard the copy unless `seq` was even and unchanged around it. A
// reader's copy may race with the write it then discards: the classic
// sequence-lock trade, done here with volatile copies of a `Copy` type. A
// stricter version copies the data word by word through atomics; the
// example is about where `seq`, `data` and `name` sit.
unsafe impl<T: Copy + Send> Sync for SeqLock<T> {}

impl<T: Copy> SeqLock<T> {
    /// The one writer: callers must not call it from two threads at once.
    pub fn write(&self, value: T) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        // SAFETY: the only writer; readers retry on a torn copy.
        unsafe { std::ptr::write_volatile(self.data.get(), value) };
        self.seq.store(s + 2, Ordering::Release);
    }

    pub fn read(&self) -> T {
        loop {
            let before = self.seq.load(Ordering::Acquire);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            // SAFETY: a copy of plain data; discarded if the writer was in it.
            let value = unsafe { std::ptr::read_volatile(self.data.get()) };
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == before {
                return value;
            }
        }
    }
}

fn main() {
    type Data = [u64; 4];
    println!("{}", SeqLock::<Data>::layout_report());
    println!("size_of, SeqLock<[u64; 4]>:");
    println!(
        "  as written:               {:>4} B",
        size_of::<naive::SeqLock<Data>>()
    );
    println!(
        "  CachePadded seq:          {:>4} B",
        size_of::<padded::SeqLock<Data>>()
    );
    println!(
        "  #[cachelayout::optimize]: {:>4} B",
        size_of::<SeqLock<Data>>()
    );

    let lock = SeqLock::new("config", AtomicUsize::new(0), UnsafeCell::new([0u64; 4]));
    let torn = thread::scope(|s| {
        let lock = &lock;
        s.spawn(move || {
            for i in 1..=100_000u64 {
                lock.write([i; 4]);
            }
        });
        let readers: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(move || {
                    (0..100_000)
                        .filter(|_| {
                            let v = lock.read();
                            v.iter().any(|&x| x != v[0])
                        })
                        .count()
                })
            })
            .collect();
        readers
            .into_iter()
            .map(|r| r.join().unwrap())
            .sum::<usize>()
    });
    println!(
        "\n1 writer, 3 readers: {torn} torn reads (expected 0); last {:?}",
        lock.read()
    );
}
