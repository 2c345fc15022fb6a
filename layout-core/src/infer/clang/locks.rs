//! Which calls take and release a lock, and the lock's name: the member
//! that holds it (`&zone->lock` → `lock`, `&lruvec->lru_lock` →
//! `lru_lock`), as the access file's `locked_write.NAME` says it.

/// The name without leading underscores and a `raw_` prefix
/// (`_raw_spin_lock_irqsave` → `spin_lock_irqsave`).
fn base(name: &str) -> &str {
    let n = name.trim_start_matches('_');
    n.strip_prefix("raw_").unwrap_or(n)
}

const ACQUIRE: &[&str] = &[
    "spin_lock",
    "spin_trylock",
    "mutex_lock",
    "mutex_trylock",
    "read_lock",
    "write_lock",
    "down_read",
    "down_write",
    "write_seqlock",
];
const RELEASE: &[&str] = &[
    "spin_unlock",
    "mutex_unlock",
    "read_unlock",
    "write_unlock",
    "up_read",
    "up_write",
    "write_sequnlock",
];

fn matches(name: &str, prefixes: &[&str]) -> bool {
    let b = base(name);
    !b.ends_with("_init")
        && !b.contains("_is_")
        && prefixes
            .iter()
            .any(|p| b == *p || b.strip_prefix(p).is_some_and(|r| r.starts_with('_')))
}

/// A user's `--lock-wrapper FUNC[=LOCK]`: `FUNC` takes the lock its first
/// argument points to, or the lock named `LOCK` (for wrappers that find the
/// lock themselves: `folio_lruvec_lock_irq=lru_lock`); a `FUNC` whose name
/// says `unlock` releases it.
fn wrapper<'w>(name: &str, wrappers: &'w [String]) -> Option<(bool, Option<&'w str>)> {
    wrappers.iter().find_map(|w| {
        let (f, lock) = match w.split_once('=') {
            Some((f, l)) => (f, Some(l)),
            None => (w.as_str(), None),
        };
        (f == name).then(|| (!name.contains("unlock"), lock))
    })
}

/// The lock a kernel API takes, releases or asserts through the object
/// that owns it rather than through a pointer to the lock word: the
/// socket lock, `struct sock`'s `sk_lock` (a spinlock and an owned-by-user
/// flag: `lock_sock()` owns it in process context, `bh_lock_sock()` takes
/// its spinlock in softirq, which the walker names `sk_lock` from the
/// member path `sk->sk_lock.slock`).
pub const SOCKET_LOCK: &str = crate::infer::sites::OWNER_LOCKS[0];

/// What an owner-lock API does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Acquire,
    Release,
    /// Asserts the lock is held from here on (`sock_owned_by_me()`).
    Assert,
}

const OWNER_APIS: &[(&str, Op)] = &[
    ("lock_sock", Op::Acquire),
    ("lock_sock_nested", Op::Acquire),
    ("lock_sock_fast", Op::Acquire),
    ("lock_sock_fast_nested", Op::Acquire),
    ("release_sock", Op::Release),
    ("unlock_sock_fast", Op::Release),
    ("sock_owned_by_me", Op::Assert),
];

fn owner_api(name: &str, op: Op) -> Option<&'static str> {
    OWNER_APIS
        .iter()
        .any(|(n, o)| *n == name && *o == op)
        .then_some(SOCKET_LOCK)
}

/// Whether a call of `name` asserts that a lock is held (and which).
pub fn asserts_by_call(name: &str) -> Option<&'static str> {
    owner_api(name, Op::Assert)
}

/// Functions an owner-lock API runs with its lock held, by the ops-table
/// member they are installed as: (member, the API that calls it, the lock).
/// `release_sock()` runs `sk->sk_prot->release_cb` (`tcp_release_cb`, the
/// work deferred while the user owned the socket) before it lets the
/// socket go.
pub const LOCKED_CALLBACKS: &[(&str, &str, &str)] = &[("release_cb", "release_sock", SOCKET_LOCK)];

/// Whether a call of `name` takes a lock: `Some(lock named by the
/// wrapper)`, `Some(None)` for the lock its first argument points to.
pub fn acquires<'w>(name: &str, wrappers: &'w [String]) -> Option<Option<&'w str>> {
    if let Some(l) = owner_api(name, Op::Acquire) {
        return Some(Some(l));
    }
    match wrapper(name, wrappers) {
        Some((true, lock)) => Some(lock),
        Some((false, _)) => None,
        None => matches(name, ACQUIRE).then_some(None),
    }
}

/// Whether a call of `name` releases a lock (as [`acquires`]).
pub fn releases<'w>(name: &str, wrappers: &'w [String]) -> Option<Option<&'w str>> {
    if let Some(l) = owner_api(name, Op::Release) {
        return Some(Some(l));
    }
    match wrapper(name, wrappers) {
        Some((false, lock)) => Some(lock),
        Some((true, _)) => None,
        None => matches(name, RELEASE).then_some(None),
    }
}

/// Whether `name` is the constructor `guard(NAME)` and `scoped_guard(NAME)`
/// call for a lock class (`class_spinlock_irqsave_constructor`).
pub fn is_guard(name: &str) -> bool {
    name.strip_prefix("class_")
        .and_then(|n| n.strip_suffix("_constructor"))
        .is_some_and(|class| {
            [
                "spinlock",
                "raw_spinlock",
                "mutex",
                "rwsem",
                "read_lock",
                "write_lock",
            ]
            .iter()
            .any(|k| class.starts_with(k))
        })
}

/// Whether a macro named `name` asserts a lock is held.
pub fn asserts_held(name: &str) -> bool {
    name.starts_with("lockdep_assert_held")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for n in [
            "spin_lock",
            "_raw_spin_lock_irqsave",
            "spin_lock_irq",
            "mutex_lock_nested",
            "down_write",
        ] {
            assert_eq!(acquires(n, &[]), Some(None), "{n}");
        }
        for n in [
            "spin_lock_init",
            "spinlock_check",
            "mutex_is_locked",
            "spin_unlock",
        ] {
            assert_eq!(acquires(n, &[]), None, "{n}");
        }
        assert_eq!(releases("spin_unlock_irqrestore", &[]), Some(None));
        let w = [
            "compact_lock_irqsave".to_string(),
            "folio_lruvec_lock_irq=lru_lock".into(),
            "unlock_page_lruvec_irq=lru_lock".into(),
        ];
        assert_eq!(acquires("compact_lock_irqsave", &w), Some(None));
        assert_eq!(
            acquires("folio_lruvec_lock_irq", &w),
            Some(Some("lru_lock"))
        );
        assert_eq!(
            releases("unlock_page_lruvec_irq", &w),
            Some(Some("lru_lock"))
        );
        assert_eq!(acquires("unlock_page_lruvec_irq", &w), None);
        assert!(is_guard("class_spinlock_irqsave_constructor"));
        assert!(is_guard("class_mutex_constructor"));
        assert!(!is_guard("class_rcu_constructor"));
        // The socket lock, by its owner.
        assert_eq!(acquires("lock_sock", &[]), Some(Some("sk_lock")));
        assert_eq!(acquires("lock_sock_fast", &[]), Some(Some("sk_lock")));
        assert_eq!(releases("release_sock", &[]), Some(Some("sk_lock")));
        assert_eq!(releases("unlock_sock_fast", &[]), Some(Some("sk_lock")));
        assert_eq!(asserts_by_call("sock_owned_by_me"), Some("sk_lock"));
        assert_eq!(acquires("sock_owned_by_user", &[]), None);
    }
}
