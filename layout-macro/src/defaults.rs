//! The access class of a field that has no access attribute, read from its
//! type: a struct shared as `&S` across threads changes only
//! through interior mutability, so
//!
//! | type                                   | class                          |
//! |----------------------------------------|--------------------------------|
//! | `Atomic*` (also in arrays, `CachePadded`, `ManuallyDrop`) | `lockless`, a writer group of its own named after the field |
//! | `Mutex<T>`, `RwLock<T>` (std, parking_lot, spin, ...) | `locked_write` under a lock named after the field |
//! | anything else                          | `read_mostly`                  |
//!
//! Two atomics are written by different threads more often than not (a
//! queue's `head` by consumers, its `tail` by producers), so each defaults
//! to a writer group of its own: the rule keeps them on different lines.
//! Fields one thread writes together join one group by naming it,
//! `#[layout(lockless(group = "stats"))]`; a group named like a field joins
//! that field's default group.

use crate::types::{first_arg, shape, Shape};
use layout_core::Access;
use syn::Type;

/// The default access class of a field named `field` of type `ty`.
pub fn default_access(ty: &Type, field: &str) -> Access {
    match shape(ty) {
        Shape::Array { elem, .. } => default_access(elem, field),
        Shape::Named { name, args } => match name.as_str() {
            "CachePadded" | "LinePadded" | "ManuallyDrop" => match first_arg(&args) {
                Some(inner) => default_access(inner, field),
                None => Access::ReadMostly,
            },
            "Mutex" | "RwLock" => Access::LockedWrite {
                lock: field.to_string(),
            },
            atomic if atomic.starts_with("Atomic") => own_group(field),
            _ => Access::ReadMostly,
        },
        _ => Access::ReadMostly,
    }
}

/// A lockless class in a writer group of its own, named after the field.
pub fn own_group(field: &str) -> Access {
    Access::Lockless {
        group: Some(field.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(ty: &str) -> Access {
        default_access(&syn::parse_str(ty).unwrap(), "f")
    }

    #[test]
    fn defaults_follow_the_type() {
        assert_eq!(access("AtomicU64"), own_group("f"));
        assert_eq!(access("core::sync::atomic::AtomicBool"), own_group("f"));
        assert_eq!(access("[AtomicUsize; 8]"), own_group("f"));
        assert_eq!(access("CachePadded<AtomicU64>"), own_group("f"));
        assert_eq!(
            access("std::sync::Mutex<Vec<u8>>"),
            Access::LockedWrite { lock: "f".into() }
        );
        assert_eq!(
            access("parking_lot::RwLock<u64>"),
            Access::LockedWrite { lock: "f".into() }
        );
        assert_eq!(access("u64"), Access::ReadMostly);
        assert_eq!(access("Arc<AtomicU64>"), Access::ReadMostly);
        assert_eq!(access("&'static str"), Access::ReadMostly);
    }
}
