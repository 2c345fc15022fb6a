//! What a call does to the locks its caller holds, read from the callee's
//! body rather than from its name: a function that takes a lock on an
//! object it returns or reaches from a parameter and returns without
//! releasing it is a lock wrapper (`compact_lock_irqsave(&zone->lock,
//! ...)`, a `folio_lruvec_lock_irq()` that returns the lruvec whose
//! `lru_lock` it took); one that releases a lock it did not take is an
//! unlock wrapper (`unlock_page_lruvec_irq(lruvec)`). Its callers hold
//! (or no longer hold) that lock from the call on.
//!
//! Where the body is out of sight (defined in another file), the caller
//! tells: a function that releases a lock on the object a call returned,
//! without taking it itself, has held it since that call
//! (`lruvec = folio_lruvec_lock_irq(folio); ...; unlock_page_lruvec_irq(lruvec)`).

use std::collections::BTreeMap;

/// A lock an effect names: the one a parameter points to (`spinlock_t
/// *lock`: at a call, the lock its argument names), or a lock by the
/// member that holds it (`lru_lock`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockRef {
    Param(usize),
    Named(String),
}

/// What calling a function does to locks: released first, then taken.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Effect {
    pub acquires: Vec<LockRef>,
    pub releases: Vec<LockRef>,
}

/// The held-lock list's mark for a lock released where the function did
/// not hold it (held by its caller, or by a call that returned with it).
pub fn released_mark(lock: &str) -> String {
    format!("!{lock}")
}

/// Whether an entry of the held-lock list is a [`released_mark`].
pub fn is_mark(entry: &str) -> bool {
    entry.starts_with('!')
}

/// One `return` of a function (or the end of its body): the locks held
/// there (with the marks of those released unheld), the variable it
/// returns, and whether it is on a cold branch (an error path).
#[derive(Clone, Debug, Default)]
pub struct Return {
    pub held: Vec<String>,
    pub var: Option<String>,
    pub cold: bool,
}

/// A call whose result a variable keeps (`lruvec = f(folio)`), with where
/// the walk's records stood after it (to add a lock to what was recorded
/// since, once a release shows the call took it).
#[derive(Clone, Debug)]
pub struct Assigned {
    pub var: String,
    pub callee: String,
    /// Whether the unit has the callee's body (then its effect is the
    /// body's, and what a caller shows holds for that caller only).
    pub visible: bool,
    pub marks: [usize; 5],
}

/// The lock bookkeeping of the function being walked.
#[derive(Clone, Debug, Default)]
pub struct FnLocks {
    pub params: Vec<String>,
    /// Held on entry (`__must_hold`).
    pub initial: Vec<String>,
    /// Asserted held (`lockdep_assert_held`, `sock_owned_by_me`): the
    /// caller's, not taken here.
    pub asserted: Vec<String>,
    /// Per lock taken here, the variable whose object holds it (`lruvec`
    /// for `&lruvec->lru_lock`); empty for a lock a wrapper's call took.
    pub bases: BTreeMap<String, String>,
    pub returns: Vec<Return>,
    pub assigned: Vec<Assigned>,
}

impl FnLocks {
    pub fn new(params: Vec<String>, initial: Vec<String>) -> FnLocks {
        FnLocks {
            params,
            initial,
            ..FnLocks::default()
        }
    }

    /// The function's effect on its callers' locks: a lock held at every
    /// return (error paths aside) that it took on an object a parameter
    /// reaches or that it returns, and did not drop and retake (a lock the
    /// caller holds); a lock released unheld at every return and not
    /// taken again.
    pub fn effect(&self) -> Effect {
        let warm: Vec<&Return> = self.returns.iter().filter(|r| !r.cold).collect();
        let rets: Vec<&Return> = if warm.is_empty() {
            self.returns.iter().collect()
        } else {
            warm
        };
        let Some(first) = rets.first() else {
            return Effect::default();
        };
        let as_ref = |l: &str| -> LockRef {
            let base = self.bases.get(l).map(String::as_str);
            match self.params.iter().position(|p| p == l) {
                Some(i) if base.is_none_or(|b| b == l) => LockRef::Param(i),
                _ => LockRef::Named(l.to_string()),
            }
        };
        let mut out = Effect::default();
        for l in first.held.iter().filter(|l| !is_mark(l)) {
            let mark = released_mark(l);
            let taken_here = rets.iter().all(|r| {
                let base_ok = match self.bases.get(l) {
                    Some(b) => b.is_empty() || self.params.contains(b) || r.var.as_ref() == Some(b),
                    None => false,
                };
                r.held.contains(l) && !r.held.contains(&mark) && base_ok
            });
            if taken_here && !self.initial.contains(l) && !self.asserted.contains(l) {
                out.acquires.push(as_ref(l));
            }
        }
        for m in first.held.iter().filter(|l| is_mark(l)) {
            let l = &m[1..];
            if rets
                .iter()
                .all(|r| r.held.contains(m) && !r.held.iter().any(|h| h == l))
            {
                out.releases.push(as_ref(l));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ret(held: &[&str], var: Option<&str>, cold: bool) -> Return {
        Return {
            held: held.iter().map(|s| s.to_string()).collect(),
            var: var.map(str::to_string),
            cold,
        }
    }

    #[test]
    fn effects_from_the_returns() {
        // Takes the lock its parameter points to on every path.
        let mut f = FnLocks::new(vec!["lock".into(), "flags".into()], vec![]);
        f.bases.insert("lock".into(), "lock".into());
        f.returns = vec![ret(&["lock"], None, false), ret(&["lock"], None, false)];
        assert_eq!(f.effect().acquires, vec![LockRef::Param(0)]);
        // Takes a lock of the object it returns; an error path returns without it.
        let mut f = FnLocks::new(vec!["folio".into()], vec![]);
        f.bases.insert("lru_lock".into(), "lruvec".into());
        f.returns = vec![
            ret(&[], None, true),
            ret(&["lru_lock"], Some("lruvec"), false),
        ];
        assert_eq!(f.effect().acquires, vec![LockRef::Named("lru_lock".into())]);
        // A lock of a local object it does not return: not the caller's.
        f.returns = vec![ret(&["lru_lock"], Some("other"), false)];
        assert_eq!(f.effect(), Effect::default());
        // Held on one path only (a failed mutex_lock_interruptible returns early).
        let mut f = FnLocks::new(vec!["x".into()], vec![]);
        f.bases.insert("m".into(), "x".into());
        f.returns = vec![ret(&["m"], None, false), ret(&[], None, false)];
        assert_eq!(f.effect(), Effect::default());
        // Dropped and retaken: the caller's lock, no effect.
        f.returns = vec![ret(&["!m", "m"], None, false)];
        assert_eq!(f.effect(), Effect::default());
        // Released unheld on every path: an unlock wrapper.
        f.returns = vec![ret(&["!lru_lock"], None, false)];
        assert_eq!(f.effect().releases, vec![LockRef::Named("lru_lock".into())]);
        // Released on one path only (a relock that may keep the lock).
        f.returns = vec![ret(&["!lru_lock"], None, false), ret(&[], None, false)];
        assert_eq!(f.effect(), Effect::default());
        // Asserted or held on entry: not taken here.
        let mut f = FnLocks::new(vec!["z".into()], vec!["lock".into()]);
        f.bases.insert("lock".into(), "z".into());
        f.returns = vec![ret(&["lock"], None, false)];
        assert_eq!(f.effect(), Effect::default());
    }
}
