//! Expansion time of `#[cachelayout::optimize]` and `#[derive(CacheLayout)]`
//! on synthetic structs of 8, 32 and 128 fields.
//!
//! Run `cargo test -p layout-macro --lib timing -- --ignored --nocapture`.
//! To measure what a user's debug build runs (proc-macro dependencies
//! unoptimised), override the workspace's `opt-level = 2` for dependencies:
//! `--config 'profile.dev.package."*".opt-level=0'` with a separate
//! `CARGO_TARGET_DIR`.

use crate::attr::Mode;
use crate::expand;
use proc_macro2::TokenStream;
use std::time::{Duration, Instant};

/// A struct of `n` fields that mixes every class and common types: per 8
/// fields, 3 read-mostly, 3 lockless (two writer groups), one locked, one
/// cold; sizes from 1 to 32 bytes.
pub fn synthetic(n: usize) -> TokenStream {
    let fields = (0..n).map(|i| {
        let (attr, ty) = match i % 8 {
            0 => ("", "u64"),
            1 => ("", "AtomicU64"),
            2 => ("", "&'static str"),
            3 => ("#[layout(lockless(group = \"g1\"))]", "AtomicU32"),
            4 => ("#[layout(locked_write = \"lock\")]", "[u32; 3]"),
            5 => ("", "u8"),
            6 => ("#[layout(cold)]", "[u64; 4]"),
            _ => ("#[layout(lockless(group = \"g1\"))]", "AtomicU16"),
        };
        format!("{attr} f{i}: {ty},")
    });
    let src = format!("pub struct S{n} {{ {} }}", fields.collect::<String>());
    src.parse().expect("synthetic struct tokens")
}

fn time(f: impl Fn() -> TokenStream) -> (Duration, Duration) {
    let mut runs: Vec<Duration> = (0..7)
        .map(|_| {
            let start = Instant::now();
            let out = f();
            let t = start.elapsed();
            // Outside the timed part: printing tokens is slow at opt-level 0.
            assert!(!out.to_string().contains("compile_error"), "{out}");
            t
        })
        .collect();
    runs.sort();
    (runs[0], runs[runs.len() / 2])
}

#[test]
#[ignore = "measurement: run with --ignored --nocapture"]
fn expansion_time() {
    let opt = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!("expansion time ({opt} build of layout-macro; min / median of 7):");
    for n in [8, 32, 128] {
        let item = synthetic(n);
        let (min_o, med_o) = time(|| expand::optimize(TokenStream::new(), item.clone()));
        let (min_d, med_d) = time(|| expand::derive(item.clone()));
        let input = crate::attr::parse(
            syn::parse2(item.clone()).unwrap(),
            Mode::Optimize,
            TokenStream::new(),
        )
        .unwrap();
        let model = crate::model::build(&input, Mode::Optimize).unwrap();
        let solution = crate::plan::solve_model(&model, &input.options).unwrap();
        // The derive's proof for a generic struct, on the same fields (it
        // fails here: nothing separates the classes; the time is the point).
        let derived = crate::attr::parse(
            syn::parse2(item.clone()).unwrap(),
            Mode::Derive,
            TokenStream::new(),
        )
        .unwrap();
        let derived_model = crate::model::build(&derived, Mode::Derive).unwrap();
        let start = Instant::now();
        let _ = crate::prove::check(&derived, &derived_model, "");
        let proof = start.elapsed();
        println!(
            "  {n:>3} fields: the generic proof {:>7.3} ms",
            proof.as_secs_f64() * 1e3
        );
        println!(
            "  {n:>3} fields: optimize {:>7.2} / {:>7.2} ms, derive {:>7.2} / {:>7.2} ms; solver: {} in {} ms, \
             {} B (bound {} B, {})",
            min_o.as_secs_f64() * 1e3,
            med_o.as_secs_f64() * 1e3,
            min_d.as_secs_f64() * 1e3,
            med_d.as_secs_f64() * 1e3,
            solution.method,
            solution.solve_ms,
            solution.layout.size,
            solution.lower_bound,
            if solution.optimal { "optimal" } else { "budget reached" }
        );
    }
}

/// A 128-field struct expands within the work budget, before the safety
/// stop (which would make the expansion an error).
#[test]
fn large_structs_do_not_stall() {
    let out = expand::optimize(TokenStream::new(), synthetic(128)).to_string();
    assert!(!out.contains("compile_error"), "{out}");
}
