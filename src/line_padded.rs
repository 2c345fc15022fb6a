//! [`LinePadded`]: a value on cache lines of its own, the element type
//! `#[layout(per_element)]` gives an array (`[AtomicU64; 8]` becomes
//! `[LinePadded<AtomicU64>; 8]`), so that threads writing different
//! elements never write one line.

use core::fmt;
use core::ops::{Deref, DerefMut};

/// `T` aligned to, and padded to a multiple of, the alignment of `A` (a
/// marker of [`crate::align`]; `Align64` by default): in an array, each
/// element starts a line of its own, as with `CachePadded`, but with the
/// line size the layout was made for.
///
/// It dereferences to `T`, so `stripes[i].fetch_add(1, Relaxed)` reads as
/// it did on `[AtomicU64; N]`:
///
/// ```
/// use cachelayout::LinePadded;
/// use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
///
/// let stripes: [LinePadded<AtomicU64>; 4] = Default::default();
/// stripes[1].fetch_add(1, Relaxed);
/// assert_eq!(std::mem::size_of_val(&stripes), 4 * 64);
/// ```
#[repr(C)]
pub struct LinePadded<T, A = crate::align::Align64> {
    _align: [A; 0],
    value: T,
}

impl<T, A> LinePadded<T, A> {
    /// `value` on lines of its own.
    pub const fn new(value: T) -> Self {
        LinePadded { _align: [], value }
    }

    /// The value.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T, A> Deref for LinePadded<T, A> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T, A> DerefMut for LinePadded<T, A> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T: Default, A> Default for LinePadded<T, A> {
    fn default() -> Self {
        LinePadded::new(T::default())
    }
}

impl<T: Clone, A> Clone for LinePadded<T, A> {
    fn clone(&self) -> Self {
        LinePadded::new(self.value.clone())
    }
}

impl<T: fmt::Debug, A> fmt::Debug for LinePadded<T, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl<T, A> From<T> for LinePadded<T, A> {
    fn from(value: T) -> Self {
        LinePadded::new(value)
    }
}

impl<T: crate::AccessClass, A> crate::AccessClass for LinePadded<T, A> {
    const ACCESS: crate::Access = T::ACCESS;
}
