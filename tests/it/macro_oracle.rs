//! Oracle for `#[cachelayout::optimize]`: 96 random structs
//! (tests/it/gen/oracle_cases.rs, written by tests/it/gen/gen_oracle.rs) mixing
//! primitives, atomics, arrays, pointers, nested structs with size hints and
//! `Mutex<u64>` (unknown to the size model), with random classes, writer
//! groups, pins, line sizes and objectives. They compiled, so rustc already
//! proved the rule with the real sizes; here we check that
//!
//! - rustc's offsets (`offset_of!`), size and alignment equal the plan the
//!   macro computed with layout-core's model (a `Mutex<u64>` with a class
//!   no field conflicts with is planned after every other field, where only
//!   a lower bound on its offset is known), and
//! - layout-core's independent verifier accepts the real layout at every
//!   placement the real alignment allows.

mod nested {
    #![allow(dead_code)]
    /// 24 bytes, alignment 8.
    pub struct Inner24 {
        a: u64,
        b: u64,
        c: u32,
    }
    /// 3 bytes, alignment 1.
    pub struct Inner3([u8; 3]);
    /// 200 bytes, alignment 8.
    pub struct Big200([u64; 25]);
    /// 32 bytes, alignment 16.
    #[repr(C, align(16))]
    pub struct Wide16([u8; 32]);
}

// The random cases hold arrays of atomics without an attribute, which the
// macros warn about (as deprecated items, the one warning stable Rust gives
// a proc-macro).
#[macro_use]
#[rustfmt::skip]
#[allow(deprecated)]
#[path = "gen/oracle_cases.rs"]
mod cases;

use cachelayout::CacheLayout;

fn check<T: CacheLayout>() {
    let info = T::__INFO;
    let plan = info.plan.expect("optimize records its plan");
    // A field of unknown size that no field must keep off its lines goes
    // after all the others: its real size moves none of them, and the
    // struct ends where its real bytes do.
    let is_free = |p: &cachelayout::__private::PlannedField| p.size.is_none() && !p.alone;
    let any_free = plan.fields.iter().any(is_free);
    for (real, planned) in info.fields.iter().zip(plan.fields) {
        if is_free(planned) {
            assert!(
                real.offset >= planned.offset,
                "{}: `{}` planned after every other field",
                info.name,
                real.name
            );
            continue;
        }
        assert_eq!(
            real.offset, planned.offset,
            "{}: offset of `{}`",
            info.name, real.name
        );
        if let Some(size) = planned.size {
            assert_eq!(
                (real.size, real.align),
                (size, planned.align),
                "{}: `{}`",
                info.name,
                real.name
            );
        }
    }
    if any_free {
        assert!(std::mem::size_of::<T>() >= plan.size, "{}: size", info.name);
        assert!(
            std::mem::align_of::<T>() >= plan.align,
            "{}: align",
            info.name
        );
    } else {
        assert_eq!(std::mem::size_of::<T>(), plan.size, "{}: size", info.name);
        assert_eq!(
            std::mem::align_of::<T>(),
            plan.align,
            "{}: align",
            info.name
        );
    }
    let (s, l) = T::layout_model();
    if let Err(e) = cachelayout::core::verify(&s, &l) {
        panic!("{}: {e}\n{}", info.name, T::layout_report());
    }
}

#[test]
fn optimize_plans_what_rustc_lays_out() {
    for_each_case!(check);
}
