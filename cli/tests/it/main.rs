//! The integration tests of the `cachelayout` command line, end to end: every
//! test runs the binary on real inputs (the shipped examples, the installed
//! kernel headers, objects gcc builds) and checks its output against an
//! oracle (gcc, pahole, the verifier). One test binary (each file below is a
//! module) so it is linked once; run one file with
//! `cargo test -p cachelayout-cli --test it cli_paths::`.

mod support;

mod audit;
mod audit_mails;
mod audit_reach;
mod cli_btf_dwarf;
mod cli_claims;
mod cli_compiler_layout;
mod cli_config;
mod cli_configs;
mod cli_diff_size;
mod cli_errors;
mod cli_groups;
mod cli_growth;
mod cli_kbuild;
mod cli_kbuild_headers;
mod cli_kernel;
mod cli_lock_words;
mod cli_mails;
mod cli_modules;
mod cli_paths;
mod cli_probe_trust;
mod cli_reliability;
mod cli_scan;
mod cli_seed;
mod cli_solver;
mod cli_tree_safety;
mod docs_quotes;
mod hostile_inputs;
mod hostile_units;
mod infer_net;
mod infer_profiles;
mod infer_reach;
mod infer_sources;
mod kernel_build;
mod tree_safety_gcc;
mod tree_safety_props;
