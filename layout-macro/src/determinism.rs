//! The same struct expands to the same tokens under any load: the solver's
//! budget is work, not time. Each struct is expanded at normal speed, then
//! again while every core spins, and the outputs are compared token for
//! token.

use crate::expand;
use crate::timing::synthetic;
use proc_macro2::TokenStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

fn expand_all(n: usize) -> (String, String) {
    let item = synthetic(n);
    (
        expand::optimize(TokenStream::new(), item.clone()).to_string(),
        expand::derive(item).to_string(),
    )
}

/// Spins `2 × cores` threads until the returned flag is set.
fn load() -> (Arc<AtomicBool>, Vec<thread::JoinHandle<()>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let cores = thread::available_parallelism().map_or(2, |n| n.get());
    let spinners = (0..2 * cores)
        .map(|_| {
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })
        })
        .collect();
    (stop, spinners)
}

#[test]
fn identical_tokens_under_load() {
    for n in [32, 128] {
        let quiet = expand_all(n);
        assert!(!quiet.0.contains("compile_error"), "{}", quiet.0);
        let (stop, spinners) = load();
        let loaded: Vec<(String, String)> = (0..3).map(|_| expand_all(n)).collect();
        stop.store(true, Ordering::Relaxed);
        for s in spinners {
            s.join().expect("spinner");
        }
        for (k, l) in loaded.iter().enumerate() {
            assert!(
                l.0 == quiet.0,
                "{n} fields: optimize expanded differently under load (run {k})"
            );
            assert!(
                l.1 == quiet.1,
                "{n} fields: derive expanded differently under load (run {k})"
            );
        }
    }
}
