// A struct declared by a `macro_rules!` macro that breaks the rule: the
// rule's message, at the name the caller gave (not a hygiene error).
use std::sync::atomic::AtomicU64;

macro_rules! counters {
    ($name:ident) => {
        #[derive(cachelayout::CacheLayout)]
        #[repr(C)]
        pub struct $name {
            pub limit: u64,
            pub hits: AtomicU64,
        }
    };
}

counters!(Counters);

fn main() {}
