// A generic struct's proof at the definition uses the size hints; a hint
// on a field whose type does not depend on the parameters is checked there
// too, with no instantiation.
use std::marker::PhantomData;
use std::sync::atomic::AtomicU64;

pub struct Config {
    pub limits: [u64; 2],
}

#[derive(cachelayout::CacheLayout)]
#[repr(C)]
pub struct Wrong<T> {
    #[layout(read_mostly, size = 64, align = 64)]
    pub config: Config,
    pub hits: AtomicU64,
    pub _marker: PhantomData<T>,
}

fn main() {}
