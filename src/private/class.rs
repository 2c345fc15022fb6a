//! The runtime's own statement of the access classes: the [`Class`] the
//! generated code records for every field, the words the compile-time
//! messages and the report print for it, and the rule the checks enforce
//! ([`must_not_share`]).
//!
//! It shares no code with layout-core on purpose (a macro user's runtime
//! depends on this crate alone, and the checks are an oracle for the solver
//! and the verifier); `tests/it/macro_check_oracle.rs` walks every pair of
//! classes and checks that this rule, layout-core's verifier, its solver and
//! the macros' code generation agree.

use super::FieldFacts;

/// The access class of a field, in a form `const` items can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    ReadMostly,
    /// Under the named lock.
    LockedWrite(&'static str),
    /// With its writer group, if any.
    Lockless(Option<&'static str>),
    Cold,
}

impl Class {
    /// Lockless above locked above everything else.
    pub(crate) const fn rank(self) -> u8 {
        match self {
            Class::Lockless(_) => 2,
            Class::LockedWrite(_) => 1,
            Class::ReadMostly | Class::Cold => 0,
        }
    }

    /// What a type whose strongest field has this class carries into the
    /// structs that hold it.
    pub(crate) const fn carried(self) -> crate::Access {
        match self {
            Class::Lockless(_) => crate::Access::Lockless,
            Class::LockedWrite(_) => crate::Access::LockedWrite,
            Class::ReadMostly | Class::Cold => crate::Access::ReadMostly,
        }
    }

    /// `read-mostly`, `locked`, `lockless`, `cold`: the class in a message.
    pub(crate) const fn word(self) -> &'static str {
        match self {
            Class::ReadMostly => "read-mostly",
            Class::LockedWrite(_) => "locked",
            Class::Lockless(_) => "lockless",
            Class::Cold => "cold",
        }
    }

    /// The attribute that declares a class raised to this one.
    pub(crate) const fn attribute(self) -> &'static str {
        match self {
            Class::Lockless(_) => "#[layout(lockless)]",
            Class::LockedWrite(_) | Class::ReadMostly | Class::Cold => {
                "#[layout(locked_write = \"lock\")]"
            }
        }
    }

    /// The class in the report: `locked by `lock``, `lockless, writer
    /// group `tx``.
    pub(crate) fn text(self) -> String {
        match self {
            Class::ReadMostly => "read-mostly".into(),
            Class::LockedWrite(lock) => format!("locked by `{lock}`"),
            Class::Lockless(None) => "lockless".into(),
            Class::Lockless(Some(g)) => format!("lockless, writer group `{g}`"),
            Class::Cold => "cold".into(),
        }
    }

    /// The class in layout-core's model.
    #[cfg(feature = "model")]
    pub fn to_model(self) -> layout_core::Access {
        use layout_core::Access;
        match self {
            Class::ReadMostly => Access::ReadMostly,
            Class::LockedWrite(lock) => Access::LockedWrite {
                lock: lock.to_string(),
            },
            Class::Lockless(group) => Access::Lockless {
                group: group.map(str::to_string),
            },
            Class::Cold => Access::Cold,
        }
    }
}

/// Whether lockless field `a` (at index `i`) carries the check against `b`
/// (at index `j`): `b` is read-mostly, or lockless of another writer group
/// and declared after `a`. Lock words count as lockless writers of their
/// own groups ([`FieldFacts::rule`]).
pub(crate) const fn must_not_share(a: &FieldFacts, i: usize, b: &FieldFacts, j: usize) -> bool {
    // A lock word is judged as a lockless writer of its own group.
    match (a.rule(), b.rule()) {
        (Class::Lockless(_), Class::ReadMostly) => true,
        (Class::Lockless(ga), Class::Lockless(gb)) => j > i && !same_group(ga, gb),
        (Class::Lockless(_), Class::LockedWrite(_) | Class::Cold)
        | (Class::ReadMostly | Class::LockedWrite(_) | Class::Cold, _) => false,
    }
}

pub(crate) const fn same_group(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            let (a, b) = (a.as_bytes(), b.as_bytes());
            if a.len() != b.len() {
                return false;
            }
            let mut k = 0;
            while k < a.len() {
                if a[k] != b[k] {
                    return false;
                }
                k += 1;
            }
            true
        }
        _ => false,
    }
}
