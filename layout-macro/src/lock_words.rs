//! Lock words in Rust structs: a field whose type is a lock (`Mutex`,
//! `RwLock` of std or parking_lot, a spin lock) and whose class is
//! locked_write holds the lock's own state, which every locker writes. The
//! model flags it (`Field::lock_word`), so the solver keeps it off
//! read-mostly lines as a lockless field of a group of its own (flagged
//! where the model is built, `model::build`), and the
//! generated checks (`FieldFacts::lock_word`) hold the struct to that.
//! The fields it guards (`locked_write = "lock"`) may still share its line.

use crate::types::{shape, Shape};
use syn::Type;

/// Type names (the last path segment) of locks whose state lives inline.
const LOCKS: &[&str] = &[
    "Mutex",
    "RwLock",
    "ReentrantMutex",
    "FairMutex",
    "SpinLock",
    "Spinlock",
    "SpinMutex",
    "TicketMutex",
    "RawMutex",
    "RawRwLock",
    "RawSpinlock",
    "SeqLock",
];

/// Whether `ty` is a lock (or an array of locks) by its name.
pub fn is_lock(ty: &Type) -> bool {
    match shape(ty) {
        Shape::Array { elem, .. } => is_lock(elem),
        Shape::Named { name, .. } => LOCKS.contains(&name.as_str()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_by_name() {
        let is = |s: &str| is_lock(&syn::parse_str(s).unwrap());
        assert!(is("std::sync::Mutex<Vec<u8>>"));
        assert!(is("parking_lot::RwLock<u64>"));
        assert!(is("spin::Mutex<()>"));
        assert!(is("[SpinLock<u8>; 4]"));
        assert!(!is("Arc<Mutex<u8>>"));
        assert!(!is("MutexGuard<'a, u8>"));
        assert!(!is("u64"));
    }
}
