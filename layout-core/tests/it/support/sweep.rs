//! The two test commands. `cargo test --workspace` is the fast suite: every
//! oracle runs, each sweep on a fixed sample (the same on every machine).
//! `CACHELAYOUT_SWEEPS=full cargo test --workspace` runs the sweeps whole
//! (every installed kernel header, every struct of `include/linux`, the
//! full case counts of the property tests). `.ci/run` runs both. Shared by
//! the three test binaries of the workspace.

#![allow(dead_code)]

/// Whether this run is the exhaustive one (`CACHELAYOUT_SWEEPS=full`).
pub fn full() -> bool {
    std::env::var("CACHELAYOUT_SWEEPS").is_ok_and(|v| v == "full")
}

/// A property test's case count: `whole` in the exhaustive run, `sampled`
/// in the fast suite.
pub fn cases(whole: u32, sampled: u32) -> u32 {
    if full() {
        whole
    } else {
        sampled
    }
}

/// Every `every`-th item of `items` (in their order, from the first) in the
/// fast suite; all of them in the exhaustive run.
pub fn sample<T>(items: Vec<T>, every: usize) -> Vec<T> {
    if full() || every <= 1 {
        return items;
    }
    items
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % every == 0)
        .map(|(_, x)| x)
        .collect()
}

/// How much of a sweep this run covers, for the test's output.
pub fn describe(every: usize) -> String {
    if full() || every <= 1 {
        "the whole sweep (CACHELAYOUT_SWEEPS=full)".into()
    } else {
        format!("a fixed sample, every {every}th (CACHELAYOUT_SWEEPS=full for all)")
    }
}

/// A property test's configuration: [`cases`]`(whole, sampled)` cases drawn
/// from a fixed seed, so that every run (CI's included) tries the same
/// cases and a failure is reproduced by running the test again;
/// `PROPTEST_RNG_SEED=N` draws others, to explore. No failure is written
/// into the source tree (a failing case is printed, with its seed).
pub fn proptest_config(whole: u32, sampled: u32) -> proptest::test_runner::Config {
    let seed = std::env::var("PROPTEST_RNG_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0xcac4_e11e);
    proptest::test_runner::Config {
        cases: cases(whole, sampled),
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(seed),
        ..proptest::test_runner::Config::default()
    }
}
