//! Lock words. A lock's own state (a spinlock's word, a mutex's owner and
//! wait bits) is written by every CPU that takes or releases the lock,
//! whatever data the lock protects: a contended write, like a lockless
//! field's. A read-mostly field on the lock word's line is evicted from
//! every reader's cache at each acquisition.
//!
//! So a field flagged [`Field::lock_word`] (a lock, classed locked_write)
//! falls under the hard rule as a lockless field of a writer group of its
//! own ([`Field::rule_access`]): no line holds it and a read-mostly field,
//! nor it and a lockless field of another group. The data it guards
//! (locked_write under it) and cold fields may share its line, as before;
//! its soft costs are still those of a locked field.
//!
//! Front-ends set the flag: the macros for `Mutex`, `RwLock` and spin
//! locks by type name, and [`mark_c`] for C members of a kernel lock type
//! (`spinlock_t`, `raw_spinlock_t`, `rwlock_t`, `seqlock_t`, `struct mutex`,
//! `struct rw_semaphore`) whose class is locked_write.

use crate::model::{Access, Field, Struct};
use crate::scan::infer::{classify_type, TypeClass};

/// The writer group a lock word stands in for the hard rule: its own,
/// named after the field, as the macros name an atomic's default group
/// (no two fields have one name; a lockless field whose group names the
/// lock joins it, on purpose).
pub fn group_of(field: &str) -> String {
    field.to_string()
}

/// Flags the locked_write members of `s` whose C type is a kernel lock.
pub fn mark_c(s: &mut Struct) {
    for f in &mut s.fields {
        if matches!(f.access, Access::LockedWrite { .. }) && classify_type(&f.ty) == TypeClass::Lock
        {
            f.lock_word = true;
        }
    }
}

impl Field {
    /// The access the hard rule reads: a lock word's is lockless in a group
    /// of its own; every other field's is its class.
    pub fn rule_access(&self) -> std::borrow::Cow<'_, Access> {
        match &self.access {
            Access::LockedWrite { .. } if self.lock_word => {
                std::borrow::Cow::Owned(Access::Lockless {
                    group: Some(group_of(&self.name)),
                })
            }
            a => std::borrow::Cow::Borrowed(a),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_locks_under_locked_write_are_lock_words() {
        let lock = |ty: &str, access: Access| Field::new("l", ty, 4, 4).with_access(access);
        let locked = Access::LockedWrite { lock: "l".into() };
        let mut s = Struct::new(
            "s",
            vec![
                lock("spinlock_t", locked.clone()),
                lock("struct mutex", locked.clone()),
                lock("struct rw_semaphore", locked.clone()),
                lock("seqlock_t", locked.clone()),
                lock("spinlock_t", Access::Cold),
                lock("unsigned long", locked.clone()),
                lock("spinlock_t *", locked),
            ],
        );
        mark_c(&mut s);
        let flags: Vec<bool> = s.fields.iter().map(|f| f.lock_word).collect();
        assert_eq!(flags, [true, true, true, true, false, false, false]);
        let read = Field::new("r", "int", 4, 4).with_access(Access::ReadMostly);
        assert!(s.fields[0].rule_access().hard_conflict(&read.access));
        assert!(!s.fields[5].rule_access().hard_conflict(&read.access));
    }

    /// A spinlock next to read-mostly fields: the solver moves it off their
    /// line (it would not for a plain locked field), and the verifier
    /// rejects the layout as declared.
    #[test]
    fn solver_and_verifier_keep_lock_words_off_read_mostly_lines() {
        let strukt = |lock_word: bool| {
            let mut lock =
                Field::new("lock", "spinlock_t", 4, 4).with_access(Access::LockedWrite {
                    lock: "lock".into(),
                });
            lock.lock_word = lock_word;
            let guarded = Field::new("count", "int", 4, 4).with_access(Access::LockedWrite {
                lock: "lock".into(),
            });
            let read = Field::new("limit", "long", 8, 8).with_access(Access::ReadMostly);
            let mut s = Struct::new("s", vec![read, lock, guarded]);
            s.min_align = 64;
            s
        };
        let declared = crate::Layout {
            slots: vec![
                crate::Slot {
                    field: 0,
                    offset: 0,
                },
                crate::Slot {
                    field: 1,
                    offset: 8,
                },
                crate::Slot {
                    field: 2,
                    offset: 12,
                },
            ],
            size: 64,
            align: 64,
            line: 64,
            placement: crate::Placement::Aligned,
        };
        assert!(crate::verify(&strukt(false), &declared).is_ok());
        let err = crate::verify(&strukt(true), &declared)
            .unwrap_err()
            .to_string();
        assert!(err.contains("lock") && err.contains("limit"), "{err}");
        let solved = crate::solve(&strukt(true), &crate::SolveOptions::default()).unwrap();
        let l = &solved.layout;
        let at = |f: usize| l.slot_of(f).unwrap().offset / 64;
        assert_ne!(at(0), at(1));
        assert_eq!(at(1), at(2), "the guarded field may share the lock's line");
        assert!(!crate::layout::reported_conflicts(&strukt(true), &declared).is_empty());
        assert!(strukt(true).has_hard_pairs() && !strukt(false).has_hard_pairs());
    }
}
