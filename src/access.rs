//! The access class a type carries into the structs that hold it: the
//! compiler's answer to "is this field lockless?", read by the macros'
//! compile-time checks, so that a struct of atomics, an alias of an atomic or
//! a user-defined sync type is never classed read-mostly by its name alone.

/// The strongest way any data inside a type is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Plain data: written only by whoever owns it exclusively.
    ReadMostly,
    /// A lock, or data written only under a lock.
    LockedWrite,
    /// Data written by many CPUs without a lock (atomics).
    Lockless,
}

/// A type that carries an access class into the structs that hold it.
///
/// Implemented for the std and core atomics (lockless), `Mutex` and
/// `RwLock` (locked), arrays, `Option`, `ManuallyDrop` and `CachePadded`-like
/// wrappers of such types, and by `#[derive(CacheLayout)]` and
/// `#[cachelayout::optimize]` (the strongest class of the struct's fields,
/// or `#[layout(contains = "lockless")]`). Implement it by hand for a sync
/// type built another way:
///
/// ```
/// struct Notify { /* a futex word, written by every waker */ }
/// impl cachelayout::AccessClass for Notify {
///     const ACCESS: cachelayout::Access = cachelayout::Access::Lockless;
/// }
/// ```
pub trait AccessClass {
    const ACCESS: Access;
}

macro_rules! carries {
    ($access:ident: $($ty:ty),* $(,)?) => {$(
        impl AccessClass for $ty {
            const ACCESS: Access = Access::$access;
        }
    )*};
}

use core::sync::atomic::*;
carries!(Lockless: AtomicBool, AtomicU8, AtomicI8, AtomicU16, AtomicI16, AtomicU32, AtomicI32,
    AtomicU64, AtomicI64, AtomicUsize, AtomicIsize);

impl<T> AccessClass for AtomicPtr<T> {
    const ACCESS: Access = Access::Lockless;
}

impl<T: ?Sized> AccessClass for std::sync::Mutex<T> {
    const ACCESS: Access = Access::LockedWrite;
}

impl<T: ?Sized> AccessClass for std::sync::RwLock<T> {
    const ACCESS: Access = Access::LockedWrite;
}

impl<T: AccessClass, const N: usize> AccessClass for [T; N] {
    const ACCESS: Access = T::ACCESS;
}

impl<T: AccessClass> AccessClass for Option<T> {
    const ACCESS: Access = T::ACCESS;
}

impl<T: AccessClass> AccessClass for core::mem::ManuallyDrop<T> {
    const ACCESS: Access = T::ACCESS;
}

impl<T: AccessClass> AccessClass for core::cell::UnsafeCell<T> {
    const ACCESS: Access = T::ACCESS;
}
