//! Structs declared by `macro_rules!` macros: their tokens carry the
//! declaring macro's hygiene, the name and fields the caller's. Both macros
//! must expand to code that resolves in either context, with every kind of
//! check (the rule, a size hint, a pinned field, a generic instantiation).

use cachelayout::CacheLayout;
use std::sync::atomic::AtomicU64;

#[allow(dead_code)]
pub struct Histogram {
    pub buckets: [u64; 3],
}

macro_rules! checked {
    ($name:ident, $field:ident) => {
        #[derive(cachelayout::CacheLayout)]
        pub struct $name {
            pub config: u64,
            #[layout(size = 24, align = 8)]
            pub $field: Histogram,
        }
    };
}

macro_rules! optimized {
    ($name:ident, $field:ident) => {
        #[cachelayout::optimize]
        pub struct $name {
            #[layout(pinned)]
            pub magic: u32,
            pub config: u64,
            pub $field: AtomicU64,
            #[layout(size = 24, align = 8)]
            pub latency: Histogram,
        }
    };
}

macro_rules! generic {
    ($name:ident) => {
        #[cachelayout::optimize]
        pub struct $name<T> {
            pub config: T,
            pub hits: AtomicU64,
        }
    };
}

checked!(Checked, latency);
optimized!(Optimized, hits);
generic!(Generic);

/// The same, declared entirely inside the macro.
macro_rules! fixed {
    () => {
        #[derive(cachelayout::CacheLayout)]
        pub struct Fixed {
            pub a: u64,
        }
    };
}
fixed!();

#[test]
fn structs_declared_by_macro_rules() {
    let o = Optimized::new(7, 1, AtomicU64::new(0), Histogram { buckets: [0; 3] });
    assert_eq!(o.magic, 7);
    assert_eq!(std::mem::offset_of!(Optimized, magic), 0);
    assert_ne!(
        std::mem::offset_of!(Optimized, hits) / 64,
        std::mem::offset_of!(Optimized, config) / 64
    );
    let g = Generic::new(5u8, AtomicU64::new(0));
    assert_eq!(g.config, 5);
    assert_eq!(Checked::__INFO.fields.len(), 2);
    assert_eq!(Fixed::__INFO.fields.len(), 1);
    assert!(<Generic<u16>>::layout_report().contains("hits"));
}
