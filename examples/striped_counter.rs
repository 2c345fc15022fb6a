//! A striped counter: thread `i` adds to stripe `i % N`, readers sum the
//! stripes. The stripes exist so that different threads write different
//! cache lines; as a plain `[AtomicU64; N]` they share lines, and the
//! macros warn. `#[layout(per_element)]` gives each stripe lines of its own
//! (the element type becomes `cachelayout::LinePadded<AtomicU64>`), with a
//! const generic `N`.
//!
//! `cargo run --example striped_counter` prints the optimized layout and
//! `size_of` as written, with `[CachePadded<AtomicU64>; N]` and with
//! `optimize`, then counts from 8 threads.

use cachelayout::{CacheLayout, LinePadded};
use std::mem::size_of;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::thread;

/// As a user writes it (only measured; the stripes share lines).
#[allow(dead_code)]
mod naive {
    use std::sync::atomic::AtomicU64;

    pub struct Striped<const N: usize> {
        pub name: &'static str,
        pub stripes: [AtomicU64; N],
    }
}

/// The usual fix by hand (only measured).
#[allow(dead_code)]
mod padded {
    use crossbeam_utils::CachePadded;
    use std::sync::atomic::AtomicU64;

    pub struct Striped<const N: usize> {
        pub name: &'static str,
        pub stripes: [CachePadded<AtomicU64>; N],
    }
}

#[cachelayout::optimize]
pub struct Striped<const N: usize> {
    name: &'static str,
    #[layout(per_element)]
    stripes: [AtomicU64; N],
}

impl<const N: usize> Striped<N> {
    pub fn named(name: &'static str) -> Self {
        Striped::new(
            name,
            std::array::from_fn(|_| LinePadded::new(AtomicU64::new(0))),
        )
    }

    pub fn add(&self, thread: usize, n: u64) {
        self.stripes[thread % N].fetch_add(n, Relaxed);
    }

    pub fn sum(&self) -> u64 {
        self.stripes.iter().map(|s| s.load(Relaxed)).sum()
    }
}

fn main() {
    println!("{}", Striped::<8>::layout_report());
    println!("size_of, 8 stripes:");
    println!(
        "  as written:               {:>4} B",
        size_of::<naive::Striped<8>>()
    );
    println!(
        "  [CachePadded<_>; 8]:      {:>4} B",
        size_of::<padded::Striped<8>>()
    );
    println!(
        "  #[cachelayout::optimize]: {:>4} B",
        size_of::<Striped<8>>()
    );

    let counter = Striped::<8>::named("requests");
    thread::scope(|s| {
        for t in 0..8 {
            let counter = &counter;
            s.spawn(move || {
                for _ in 0..100_000 {
                    counter.add(t, 1);
                }
            });
        }
    });
    println!("\n8 threads x 100000: {} (expected 800000)", counter.sum());
}
