//! The integration tests of the `cachelayout` package: the macros checked
//! against rustc's `offset_of!` and the independent verifier. One test
//! binary (each file below is a module) so the crate is linked once; run one
//! file with `cargo test -p cachelayout --test it macro_derive::`. The
//! command line's tests are in `cli/tests/`.

#[path = "../../layout-core/tests/it/support/sweep.rs"]
mod sweep;

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
