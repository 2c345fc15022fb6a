// A field that holds a `?Sized` type parameter in place: one error per
// field that says what to change, not rustc's errors about `size_of`.
use std::cell::UnsafeCell;

#[derive(cachelayout::CacheLayout)]
pub struct Checked<T: ?Sized> {
    pub len: usize,
    pub data: T,
}

#[cachelayout::optimize]
pub struct Rewritten<T>
where
    T: ?Sized,
{
    pub len: usize,
    pub boxed: Box<T>,
    pub data: UnsafeCell<T>,
}

fn main() {}
