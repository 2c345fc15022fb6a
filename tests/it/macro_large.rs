//! Structs of 1000 fields through both macros
//! (tests/it/gen/large_structs.rs, written by tests/it/gen/gen_large.rs):
//! their compile-time checks stay within rustc's const-evaluation limit,
//! and the layouts keep the rule.

#[rustfmt::skip]
#[path = "gen/large_structs.rs"]
mod large;

use cachelayout::CacheLayout;

fn verified<T: CacheLayout>() {
    let (s, l) = T::layout_model();
    if let Err(e) = cachelayout::core::verify(&s, &l) {
        panic!("{e}\n{}", T::layout_report());
    }
}

#[test]
fn a_thousand_fields_build_and_keep_the_rule() {
    assert_eq!(large::Optimized1000::__INFO.fields.len(), 1000);
    assert_eq!(large::Derived1000::__INFO.fields.len(), 1000);
    verified::<large::Optimized1000>();
    verified::<large::Plain1000>();
    verified::<large::Derived1000>();
}
