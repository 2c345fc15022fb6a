//! Access classes from C types alone, for structs nobody annotated.
//!
//! | member type | class |
//! |---|---|
//! | `atomic_t`, `atomic_long_t`, `atomic64_t`, `refcount_t`, `struct kref` (arrays too) | lockless |
//! | Rust's `AtomicBool`, `AtomicU8` ... `AtomicUsize`, `AtomicI8` ... `AtomicIsize`, `AtomicPtr<T>` (as rustc's DWARF names them) | lockless |
//! | `spinlock_t`, `raw_spinlock_t`, `rwlock_t`, `seqlock_t`, `struct mutex`, `struct rw_semaphore` | a lock word: locked_write under its own name |
//! | an anonymous struct or union | the class of the first lockless, else lock, member inside it |
//! | anything else | cold (unannotated C fields) |
//!
//! This is a heuristic: an atomic may be written by one CPU only, and a
//! plain field may be written locklessly with `WRITE_ONCE`. Pointers to
//! these types are plain fields.

use crate::model::{Access, Struct};
use crate::typedb::{Aggregate, TypeDb};

const LOCKLESS: &[&str] = &[
    "atomic_t",
    "atomic_long_t",
    "atomic64_t",
    "refcount_t",
    "struct kref",
];

/// `core::sync::atomic` types, whose DWARF names carry no path.
const RUST_ATOMICS: &[&str] = &[
    "AtomicBool",
    "AtomicU8",
    "AtomicU16",
    "AtomicU32",
    "AtomicU64",
    "AtomicUsize",
    "AtomicI8",
    "AtomicI16",
    "AtomicI32",
    "AtomicI64",
    "AtomicIsize",
];

const LOCKS: &[&str] = &[
    "spinlock_t",
    "raw_spinlock_t",
    "rwlock_t",
    "seqlock_t",
    "struct mutex",
    "struct spinlock",
    "struct raw_spinlock",
    "struct rw_semaphore",
];

/// What a member's type says about how it is accessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeClass {
    Lockless,
    Lock,
    Other,
}

/// The class of a C type as [`crate::typedb::Member::ty`] writes it:
/// `atomic_long_t`, `atomic_t[4]`, `volatile spinlock_t`, `struct mutex`.
pub fn classify_type(ty: &str) -> TypeClass {
    let base = ty.split('[').next().unwrap_or(ty);
    if base.contains('*') || base.contains('(') {
        return TypeClass::Other;
    }
    let mut words = base
        .split_whitespace()
        .filter(|w| !matches!(*w, "const" | "volatile"));
    let first = words.next().unwrap_or("");
    let name = match first {
        "struct" | "union" => {
            let tag = words.next().unwrap_or("");
            return classify_name(first, tag);
        }
        _ => first,
    };
    if words.next().is_some() {
        return TypeClass::Other;
    }
    classify_name("", name)
}

fn classify_name(keyword: &str, name: &str) -> TypeClass {
    let matches = |list: &[&str]| {
        list.iter().any(|t| match t.split_once(' ') {
            Some((k, n)) => k == keyword && n == name,
            None => keyword.is_empty() && *t == name,
        })
    };
    let rust_atomic =
        keyword == "struct" && (RUST_ATOMICS.contains(&name) || name.starts_with("AtomicPtr<"));
    if matches(LOCKLESS) || rust_atomic {
        TypeClass::Lockless
    } else if matches(LOCKS) {
        TypeClass::Lock
    } else {
        TypeClass::Other
    }
}

/// The access class a field of this type gets: lockless, a lock word
/// (locked_write under the field's own name), or cold.
pub fn type_access(ty: &str, field: &str) -> Access {
    match classify_type(ty) {
        TypeClass::Lockless => Access::Lockless { group: None },
        TypeClass::Lock => Access::LockedWrite {
            lock: field.to_string(),
        },
        TypeClass::Other => Access::Cold,
    }
}

/// The class of member `index` of `agg`, looking one level into anonymous
/// structs and unions; the name is that of the lock inside for a lock.
fn member_class(db: &TypeDb, agg: &Aggregate, index: usize) -> (TypeClass, String) {
    let m = &agg.members[index];
    if !m.name.is_empty() || m.is_bitfield() {
        return (classify_type(&m.ty), m.name.clone());
    }
    let Some(inner) = db.member_aggregate(agg, index) else {
        return (TypeClass::Other, String::new());
    };
    let mut lock = None;
    for im in &inner.members {
        match classify_type(&im.ty) {
            TypeClass::Lockless => return (TypeClass::Lockless, im.name.clone()),
            TypeClass::Lock if lock.is_none() => lock = Some(im.name.clone()),
            _ => {}
        }
    }
    match lock {
        Some(name) => (TypeClass::Lock, name),
        None => (TypeClass::Other, String::new()),
    }
}

/// The members [`type_defaults`] classed by their types.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TypeDefaults {
    /// Atomic types: lockless.
    pub lockless: Vec<String>,
    /// Lock types: locked_write under their own name, lock words.
    pub locks: Vec<String>,
}

impl TypeDefaults {
    /// One line for the output: which classes came from which types.
    pub fn note(&self) -> String {
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        format!(
            "note: no access file, so the classes come from the member types (as scan and the Rust macros take them): lockless (atomic types): {}; locks (lock words): {}; every other member cold; help: pass --access FILE to give read-mostly members and hot paths",
            list(&self.lockless),
            list(&self.locks)
        )
    }
}

/// Without an access file: every member of `s` gets the class its type
/// implies ([`type_access`]), and locks are flagged as lock words, the
/// defaults `scan` and the Rust macros use.
pub fn type_defaults(s: &mut Struct) -> TypeDefaults {
    let mut out = TypeDefaults::default();
    for f in &mut s.fields {
        if f.size == 0 {
            continue;
        }
        f.access = type_access(&f.ty, &f.name);
        match f.access {
            Access::Lockless { .. } => out.lockless.push(f.name.clone()),
            Access::LockedWrite { .. } => out.locks.push(f.name.clone()),
            _ => {}
        }
    }
    crate::lock_word::mark_c(s);
    out
}

/// Whether any member of `agg` is lockless by its type (no allocation
/// unless an anonymous member has to be looked into).
pub fn has_lockless(db: &TypeDb, agg: &Aggregate) -> bool {
    (0..agg.members.len()).any(|i| {
        let m = &agg.members[i];
        if m.name.is_empty() && !m.is_bitfield() {
            member_class(db, agg, i).0 == TypeClass::Lockless
        } else {
            classify_type(&m.ty) == TypeClass::Lockless
        }
    })
}

/// [`TypeDb::to_model`] of `agg` with the classes its member types imply.
pub fn infer_model(db: &TypeDb, agg: &Aggregate) -> Struct {
    let mut model = db.to_model(agg);
    for field in &mut model.fields {
        let Some(offset) = field.original_offset else {
            continue;
        };
        let member = agg.members.iter().position(|m| {
            m.offset == offset
                && !m.is_bitfield()
                && (m.name == field.name || (m.name.is_empty() && field.name.starts_with("anon_")))
        });
        let Some(i) = member else {
            continue;
        };
        field.access = match member_class(db, agg, i) {
            (TypeClass::Lockless, _) => Access::Lockless { group: None },
            (TypeClass::Lock, lock) => Access::LockedWrite {
                lock: if agg.members[i].name.is_empty() {
                    lock
                } else {
                    field.name.clone()
                },
            },
            (TypeClass::Other, _) => Access::Cold,
        };
    }
    model
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_atomics_are_lockless() {
        for t in [
            "struct AtomicU64",
            "struct AtomicBool",
            "struct AtomicPtr<u8>",
            "struct AtomicUsize[2]",
        ] {
            assert_eq!(classify_type(t), TypeClass::Lockless, "{t}");
        }
        for t in [
            "struct AtomicU64 *",
            "AtomicU64",
            "struct AtomicU128x",
            "union AtomicU64",
        ] {
            assert_eq!(classify_type(t), TypeClass::Other, "{t}");
        }
    }

    #[test]
    fn atomics_and_refcounts_are_lockless() {
        for ty in [
            "atomic_t",
            "atomic_long_t",
            "atomic64_t",
            "refcount_t",
            "atomic_long_t[4][2]",
            "volatile atomic_t",
            "struct kref",
        ] {
            assert_eq!(classify_type(ty), TypeClass::Lockless, "{ty}");
        }
    }

    #[test]
    fn lock_types_are_lock_words() {
        for ty in [
            "spinlock_t",
            "raw_spinlock_t",
            "rwlock_t",
            "seqlock_t",
            "struct mutex",
            "struct rw_semaphore",
        ] {
            assert_eq!(classify_type(ty), TypeClass::Lock, "{ty}");
        }
        assert_eq!(
            type_access("spinlock_t", "lru_lock"),
            Access::LockedWrite {
                lock: "lru_lock".into()
            }
        );
    }

    #[test]
    fn pointers_and_lookalikes_are_plain() {
        for ty in [
            "atomic_t *",
            "struct mutex *",
            "unsigned long",
            "struct atomic_t",
            "union mutex",
            "atomic_tx",
            "struct mutex_waiter",
        ] {
            assert_eq!(classify_type(ty), TypeClass::Other, "{ty}");
        }
        assert_eq!(type_access("u64", "x"), Access::Cold);
    }
}
