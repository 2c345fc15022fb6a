//! The exact compile errors of the macros (trybuild). Regenerate the
//! `.stderr` files with `TRYBUILD=overwrite cargo test --test it macro_ui`,
//! then read them.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
