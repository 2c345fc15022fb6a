//! The integration tests of the `cachelayout` package: the CLI end to end,
//! and the macros checked against rustc's `offset_of!`. One test binary
//! (each file below is a module) so the crate is linked once; run one file
//! with `cargo test --test it cli_paths::`.

mod support;

mod cli_btf_dwarf;
mod cli_config;
mod cli_errors;
mod cli_groups;
mod cli_growth;
mod cli_kbuild;
mod cli_kbuild_headers;
mod cli_kernel;
mod cli_lock_words;
mod cli_patch_review;
mod cli_paths;
mod cli_probe_trust;
mod cli_reliability;
mod cli_scan;
mod cli_seed;
mod cli_solver;
mod macro_cachepadded;
mod macro_check_oracle;
mod macro_crate_path;
mod macro_derive;
mod macro_generics;
mod macro_hygiene;
mod macro_large;
mod macro_optimize;
mod macro_oracle;
mod macro_ui;
