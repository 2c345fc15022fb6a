//! The call graph over the given files: which functions the hot roots
//! reach, not going through the cold roots.

use std::collections::{BTreeMap, BTreeSet};

/// The functions reachable from `hot` without entering a function of
/// `cold`, each with the function it was first reached from (breadth
/// first, in name order: the shortest call chain, deterministic).
pub fn hot_functions(
    calls: &BTreeMap<String, BTreeSet<String>>,
    hot: &[String],
    cold: &[String],
) -> BTreeMap<String, Option<String>> {
    // A set: the cut holds every function a slow path's name marks.
    let cold: std::collections::HashSet<&str> = cold.iter().map(String::as_str).collect();
    let mut seen: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut queue: std::collections::VecDeque<(&str, Option<&str>)> =
        hot.iter().map(|h| (h.as_str(), None)).collect();
    while let Some((f, from)) = queue.pop_front() {
        if cold.contains(f) || seen.contains_key(f) {
            continue;
        }
        seen.insert(f.to_string(), from.map(str::to_string));
        if let Some(cs) = calls.get(f) {
            queue.extend(cs.iter().map(|c| (c.as_str(), Some(f))));
        }
    }
    seen
}

/// The functions that run outside init code: reached from an entry of the
/// sources without going through `cut` (`__init`, `__cold`, the cold
/// roots). An entry is a function of `external` linkage (other files may
/// call it), one no given source calls (called through a pointer from
/// elsewhere), or one `handed` over as a pointer (an ops table registered
/// by `__init` code runs later, whenever its holder calls it). A header's
/// `static inline` function is no entry: it runs when something that runs
/// calls it.
pub fn runtime_functions(
    calls: &BTreeMap<String, BTreeSet<String>>,
    cut: &[String],
    header_inline: &BTreeSet<String>,
    external: &BTreeSet<String>,
    handed: &BTreeSet<String>,
) -> BTreeSet<String> {
    let called: BTreeSet<&str> = calls
        .iter()
        .flat_map(|(f, cs)| cs.iter().filter(move |c| *c != f).map(String::as_str))
        .collect();
    let entries: Vec<String> = calls
        .keys()
        .filter(|f| {
            external.contains(*f)
                || handed.contains(*f)
                || (!called.contains(f.as_str()) && !header_inline.contains(*f))
        })
        .cloned()
        .collect();
    hot_functions(calls, &entries, cut).into_keys().collect()
}

/// The calls of functions handed over as pointers: (the function that
/// hands it over, the function, the locks held when it runs, on a cold
/// branch). A function handed over runs in that call only when the callee
/// calls through a pointer (itself, or in the functions it passes its
/// pointer parameters on to, a few levels deep): a callee of the sources
/// that only stores it (`timer_setup`, `init_waitqueue_func_entry`) or one
/// the sources do not define (`call_rcu`) runs it later, elsewhere, which
/// is no call on this path. The functions of a table handed over run when
/// the callee calls through the table's members, which the member calls
/// resolve by the member's struct: no edge here. The locks: those held
/// where it is handed over, and those the callee holds at every call
/// through a pointer.
pub fn callback_calls(
    callbacks: &[super::walk::Callback],
    indirect: &[(String, Vec<String>)],
) -> Vec<(String, String, Vec<String>, bool)> {
    use super::walk::Handed;
    let mut out = Vec::new();
    for c in callbacks {
        let Handed::Function(cb) = &c.handed else {
            continue;
        };
        let Some(inner) = pointer_call_locks(&c.callee, callbacks, indirect, 0) else {
            continue;
        };
        let mut locks: BTreeSet<String> = c.locks.iter().cloned().collect();
        locks.extend(inner);
        out.push((
            c.caller.clone(),
            cb.clone(),
            locks.into_iter().collect(),
            c.cold,
        ));
    }
    out
}

/// Every function handed over as a pointer (directly or in a table): each
/// runs at some time, whoever calls it.
pub fn handed_functions(callbacks: &[super::walk::Callback]) -> BTreeSet<String> {
    use super::walk::Handed;
    callbacks
        .iter()
        .filter_map(|c| match &c.handed {
            Handed::Function(f) | Handed::Table(f) => Some(f.clone()),
            Handed::Parameter => None,
        })
        .collect()
}

/// The functions a call through a member may run: those the sources'
/// initializers install as that member of that struct
/// (`dev->netdev_ops->ndo_start_xmit(...)` runs what a `struct
/// net_device_ops` initializer stores into `.ndo_start_xmit`, never what
/// another struct's `.ndo_start_xmit` holds). A call whose struct libclang
/// does not name, or an install whose struct it does not, is matched by
/// the member's name alone.
pub fn member_targets<'a>(
    installs: &'a [(String, String, String)],
    record: &str,
    member: &str,
) -> impl Iterator<Item = &'a str> + 'a {
    let record = record.to_string();
    let member = member.to_string();
    installs
        .iter()
        .filter(move |(r, m, _)| {
            *m == member && (record.is_empty() || r.is_empty() || *r == record)
        })
        .map(|(_, _, f)| f.as_str())
}

/// The functions whose address the sources take, by their canonical type,
/// those `defined` only (a pointer call runs code of the sources).
pub fn address_taken_by_type(
    address_taken: &BTreeMap<String, String>,
    defined: impl Fn(&str) -> bool,
) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut out: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (f, t) in address_taken {
        if !t.is_empty() && defined(f) {
            out.entry(t.as_str()).or_default().insert(f.as_str());
        }
    }
    out
}

/// The functions a call through a member of function type `fn_type` may
/// run when no table or store of the sources fills that member: every
/// function of that type whose address the sources take (none for a type
/// libclang does not give).
pub fn type_targets<'a>(
    by_type: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    fn_type: &str,
) -> impl Iterator<Item = &'a str> + 'a {
    let found = if fn_type.is_empty() {
        None
    } else {
        by_type.get(fn_type).cloned()
    };
    found.into_iter().flatten()
}

/// The branches a call through a member that may run any of `targets`
/// functions counts for each of them, by the static estimate: the call
/// picks one, as a `switch` of that many arms does, so each runs on
/// 1/`targets` of its calls: the halvings that share takes, rounded up
/// (none for one target; 3 for a device transmit that eight drivers'
/// tables install). A fast path reaches what a table of many
/// implementations installs only near its root.
pub fn fanout_branches(targets: usize) -> u32 {
    if targets <= 1 {
        0
    } else {
        usize::BITS - (targets - 1).leading_zeros()
    }
}

/// The locks `f` holds at every call through a pointer, its own and those
/// of the functions it passes a pointer parameter on to; None when it makes none.
fn pointer_call_locks(
    f: &str,
    callbacks: &[super::walk::Callback],
    indirect: &[(String, Vec<String>)],
    depth: u32,
) -> Option<BTreeSet<String>> {
    let mut sets: Vec<BTreeSet<String>> = indirect
        .iter()
        .filter(|(g, _)| g == f)
        .map(|(_, held)| held.iter().cloned().collect())
        .collect();
    if depth < 4 {
        for c in callbacks
            .iter()
            .filter(|c| c.caller == f && c.handed == super::walk::Handed::Parameter)
        {
            if let Some(inner) = pointer_call_locks(&c.callee, callbacks, indirect, depth + 1) {
                let mut s: BTreeSet<String> = c.locks.iter().cloned().collect();
                s.extend(inner);
                sets.push(s);
            }
        }
    }
    let mut it = sets.into_iter();
    let first = it.next()?;
    Some(it.fold(first, |a, b| a.intersection(&b).cloned().collect()))
}

/// The fewest branches on the way from a hot root to each function it
/// reaches through `calls` (not entering `cut`): the sum, over the calls of
/// a chain, of the branches that enclose each call in its caller
/// (`conds`, the fewest where a caller calls a callee in several places;
/// 0 for a call `conds` does not list, a callback's). Each branch halves
/// how often code runs by the static estimate (every branch taken half
/// the time), so this is the estimate's exponent.
pub fn branch_depth(
    calls: &BTreeMap<String, BTreeSet<String>>,
    conds: &[(String, String, u32)],
    hot: &[String],
    cut: &[String],
) -> BTreeMap<String, u32> {
    let mut weight: BTreeMap<(&str, &str), u32> = BTreeMap::new();
    for (a, b, n) in conds {
        let w = weight.entry((a.as_str(), b.as_str())).or_insert(*n);
        *w = (*w).min(*n);
    }
    let cut: std::collections::HashSet<&str> = cut.iter().map(String::as_str).collect();
    let mut best: BTreeMap<String, u32> = BTreeMap::new();
    let mut queue: std::collections::BTreeSet<(u32, String)> = hot
        .iter()
        .filter(|h| !cut.contains(h.as_str()))
        .map(|h| (0, h.clone()))
        .collect();
    while let Some((d, f)) = queue.pop_first() {
        if best.contains_key(&f) {
            continue;
        }
        best.insert(f.clone(), d);
        for c in calls.get(&f).into_iter().flatten() {
            if best.contains_key(c) || cut.contains(c.as_str()) {
                continue;
            }
            let w = weight.get(&(f.as_str(), c.as_str())).copied().unwrap_or(0);
            queue.insert((d.saturating_add(w), c.clone()));
        }
    }
    best
}

/// The call chain from a hot root to `f`: `root > a > f` (at most 8 names).
pub fn chain(reached: &BTreeMap<String, Option<String>>, f: &str) -> String {
    let mut names = vec![f.to_string()];
    let mut at = f;
    while let Some(Some(p)) = reached.get(at) {
        if names.len() == 8 {
            names.push("...".into());
            break;
        }
        names.push(p.clone());
        at = p;
    }
    names.reverse();
    names.join(" > ")
}

/// The locks every caller in the given sources holds when it calls each
/// function (a `static` one's callers are all there; for the others, the
/// user gives the files whose callers matter), through callers of
/// callers: the greatest fixpoint of "held at every call site, or on entry
/// to the caller". A function without a caller in the sources gets none. A
/// header's `static inline` function that nothing calls is dead code in
/// these units: its calls do not count.
pub fn entry_locks(
    call_sites: &[(String, String, Vec<String>)],
    header_inline: &BTreeSet<String>,
) -> BTreeMap<String, BTreeSet<String>> {
    let called: BTreeSet<&str> = call_sites
        .iter()
        .filter(|(a, b, _)| a != b)
        .map(|(_, b, _)| b.as_str())
        .collect();
    let mut callers: BTreeMap<&str, Vec<(&str, BTreeSet<&str>)>> = BTreeMap::new();
    for (caller, callee, held) in call_sites {
        let dead = header_inline.contains(caller) && !called.contains(caller.as_str());
        if caller != callee && !dead {
            callers
                .entry(callee.as_str())
                .or_default()
                .push((caller.as_str(), held.iter().map(String::as_str).collect()));
        }
    }
    // Start from "every lock a call site holds" and shrink until stable.
    let mut entry: BTreeMap<&str, BTreeSet<&str>> = callers
        .iter()
        .map(|(f, sites)| {
            (
                *f,
                sites.iter().flat_map(|(_, h)| h.iter().copied()).collect(),
            )
        })
        .collect();
    // Sweeps in name order until none changes, each recomputing only the
    // functions a caller of which changed since their last computation
    // (the others would come out as they are): the same fixpoint, in the
    // same order, without the sweeps over what is settled.
    let callees = callees_of(&callers);
    let mut dirty: std::collections::HashSet<&str> = callers.keys().copied().collect();
    loop {
        let mut changed = false;
        for (f, sites) in &callers {
            if !dirty.remove(f) {
                continue;
            }
            let mut common: Option<BTreeSet<&str>> = None;
            for (caller, held) in sites {
                let mut have = held.clone();
                if let Some(e) = entry.get(caller) {
                    have.extend(e.iter().copied());
                }
                common = Some(match common {
                    None => have,
                    Some(c) => c.intersection(&have).copied().collect(),
                });
            }
            let common = common.unwrap_or_default();
            if entry.get(f) != Some(&common) {
                entry.insert(f, common);
                changed = true;
                dirty.extend(callees.get(f).into_iter().flatten().copied());
            }
        }
        if !changed {
            break;
        }
    }
    entry
        .into_iter()
        .filter(|(_, l)| !l.is_empty())
        .map(|(f, l)| (f.to_string(), l.into_iter().map(str::to_string).collect()))
        .collect()
}

/// For each caller in `callers` (callee → its call sites, each naming its
/// caller first), the callees whose sites name it.
fn callees_of<'a, T>(
    callers: &BTreeMap<&'a str, Vec<(&'a str, T)>>,
) -> BTreeMap<&'a str, Vec<&'a str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (f, sites) in callers {
        for (c, _) in sites {
            out.entry(*c).or_default().push(*f);
        }
    }
    out
}

/// A help text naming defined functions close to `name`.
pub fn close_names(name: &str, calls: &BTreeMap<String, BTreeSet<String>>) -> String {
    let close = crate::suggest::close_names(name, calls.keys().map(String::as_str));
    match close.first() {
        Some(c) => {
            format!("did you mean `{c}`? give a function defined in one of the --source files")
        }
        None => "give a function defined in one of the --source files".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_are_lifted_from_every_caller() {
        let s = |a: &str, b: &str, l: &[&str]| {
            (
                a.to_string(),
                b.to_string(),
                l.iter().map(|x| x.to_string()).collect(),
            )
        };
        let sites = vec![
            s("top", "helper", &["lru_lock"]),
            s("helper", "inner", &[]),
            s("top", "mixed", &["lru_lock"]),
            s("other", "mixed", &[]),
        ];
        let local: BTreeSet<String> = ["helper", "inner", "mixed"]
            .iter()
            .map(|x| x.to_string())
            .collect();
        let _ = local;
        let e = entry_locks(&sites, &BTreeSet::new());
        assert_eq!(e["helper"].iter().collect::<Vec<_>>(), ["lru_lock"]);
        assert_eq!(e["inner"].iter().collect::<Vec<_>>(), ["lru_lock"]);
        assert!(!e.contains_key("mixed"));
    }

    #[test]
    fn runtime_is_what_an_entry_reaches_outside_init() {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut edge = |a: &str, b: &str| {
            g.entry(a.into()).or_default().insert(b.into());
            g.entry(b.into()).or_default();
        };
        edge("sysctl_handler", "update");
        edge("init_all", "setup");
        edge("unused_inline", "helper");
        edge("setup", "shared");
        edge("update", "shared");
        edge("unused_inline", "exported");
        edge("exported", "static_helper");
        let inline: BTreeSet<String> = ["unused_inline".to_string()].into();
        let external: BTreeSet<String> = ["exported".to_string()].into();
        let none = BTreeSet::new();
        let r = runtime_functions(&g, &["init_all".into()], &inline, &external, &none);
        assert_eq!(
            r.iter().collect::<Vec<_>>(),
            [
                "exported",
                "shared",
                "static_helper",
                "sysctl_handler",
                "update"
            ]
        );
        // A show function the __init code registers (hands over) runs later.
        g.entry("init_all".into())
            .or_default()
            .insert("show".into());
        g.entry("show".into()).or_default();
        let handed: BTreeSet<String> = ["show".to_string()].into();
        let r = runtime_functions(&g, &["init_all".into()], &inline, &external, &handed);
        assert!(r.contains("show") && !r.contains("setup"), "{r:?}");
    }

    #[test]
    fn a_callback_holds_the_locks_of_the_pointer_call() {
        use super::super::walk::{Callback, Handed};
        let cb = |caller: &str, callee: &str, handed: Handed, locks: &[&str]| Callback {
            caller: caller.into(),
            callee: callee.into(),
            handed,
            locks: locks.iter().map(|l| l.to_string()).collect(),
            cold: false,
        };
        // folio_add_lru hands lru_add_fn to folio_batch_add_and_move, which
        // passes it on to folio_batch_move_lru, which calls it under lru_lock.
        let callbacks = vec![
            cb(
                "folio_add_lru",
                "folio_batch_add_and_move",
                Handed::Function("lru_add_fn".into()),
                &[],
            ),
            cb(
                "folio_batch_add_and_move",
                "folio_batch_move_lru",
                Handed::Parameter,
                &[],
            ),
            cb(
                "lru_add_drain_cpu",
                "folio_batch_move_lru",
                Handed::Function("lru_add_fn".into()),
                &["cpu_lock"],
            ),
            cb(
                "walker",
                "external_walk",
                Handed::Function("visit".into()),
                &["mmap_lock"],
            ),
        ];
        let indirect = vec![
            (
                "folio_batch_move_lru".to_string(),
                vec!["lru_lock".to_string()],
            ),
            (
                "folio_batch_move_lru".to_string(),
                vec!["lru_lock".to_string(), "x".to_string()],
            ),
        ];
        let got = callback_calls(&callbacks, &indirect);
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            got,
            vec![
                (
                    "folio_add_lru".into(),
                    "lru_add_fn".into(),
                    s(&["lru_lock"]),
                    false
                ),
                (
                    "lru_add_drain_cpu".into(),
                    "lru_add_fn".into(),
                    s(&["cpu_lock", "lru_lock"]),
                    false
                ),
                // external_walk is not in the sources: it may only store
                // `visit` (run later, elsewhere), no edge.
            ]
        );
    }

    #[test]
    fn a_member_call_runs_what_its_struct_installs() {
        let i = |r: &str, m: &str, f: &str| (r.to_string(), m.to_string(), f.to_string());
        let installs = vec![
            i("net_device_ops", "xmit", "loop_xmit"),
            i("proto_ops", "xmit", "proto_xmit"),
            i("", "xmit", "untyped_xmit"),
            i("net_device_ops", "stop", "loop_stop"),
        ];
        let got: Vec<&str> = member_targets(&installs, "net_device_ops", "xmit").collect();
        assert_eq!(got, ["loop_xmit", "untyped_xmit"]);
        // A call whose struct libclang did not name: by the member's name.
        let got: Vec<&str> = member_targets(&installs, "", "xmit").collect();
        assert_eq!(got, ["loop_xmit", "proto_xmit", "untyped_xmit"]);
    }

    #[test]
    fn a_member_no_table_fills_runs_the_address_taken_functions_of_its_type() {
        let t = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(f, t)| (f.to_string(), t.to_string()))
                .collect()
        };
        let taken = t(&[
            ("ip_rcv", "int (struct sk_buff *)"),
            ("arp_rcv", "int (struct sk_buff *)"),
            ("elsewhere", "int (struct sk_buff *)"),
            ("free_skb", "void (struct sk_buff *)"),
        ]);
        let by_type = address_taken_by_type(&taken, |f| f != "elsewhere");
        let got: Vec<&str> = type_targets(&by_type, "int (struct sk_buff *)").collect();
        assert_eq!(got, ["arp_rcv", "ip_rcv"]);
        assert_eq!(type_targets(&by_type, "").count(), 0);
        assert_eq!(type_targets(&by_type, "long (void)").count(), 0);
    }

    #[test]
    fn a_call_among_many_targets_is_a_branch_per_halving() {
        let got: Vec<u32> = [0, 1, 2, 3, 4, 5, 8, 9].map(fanout_branches).to_vec();
        assert_eq!(got, [0, 0, 1, 2, 2, 3, 3, 4]);
    }

    #[test]
    fn cold_roots_cut_the_graph() {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        g.entry("a".into())
            .or_default()
            .extend(["b".to_string(), "c".to_string()]);
        g.entry("c".into()).or_default().insert("d".into());
        let r = hot_functions(&g, &["a".into()], &["c".into()]);
        assert_eq!(r.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(chain(&r, "b"), "a > b");
    }
}

/// Whether an owner lock (the socket lock) is held on entry to a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Owned {
    /// A call reaching it holds it, and no call of known context lacks it.
    Yes,
    /// No call of the sources reaches it (or only calls of unknown
    /// context): its callers are elsewhere.
    Unknown,
}

/// For an owner lock (one a subsystem's callers take before they call its
/// entry points: the socket layer owns the socket before it calls the
/// protocol's `sendmsg`, `setsockopt`, `shutdown`, a timer takes it before
/// its handler), whether each function holds it on entry. A function no
/// call of the sources reaches is of unknown context and does not veto:
/// the meet over the calls of "the call holds it, or else what its caller
/// holds", where unknown meets anything as that thing (the greatest
/// fixpoint, from unknown). A function without callers stays unknown. The
/// lock is per object: a function the sources reach both with it and from
/// a root without it mostly handles another socket on the second path (a
/// listener, a request, a new child), so a lock seen taken is trusted.
pub fn owner_entry(
    call_sites: &[(String, String, Vec<String>)],
    header_inline: &BTreeSet<String>,
    lock: &str,
) -> BTreeMap<String, Owned> {
    let called: BTreeSet<&str> = call_sites
        .iter()
        .filter(|(a, b, _)| a != b)
        .map(|(_, b, _)| b.as_str())
        .collect();
    let mut callers: BTreeMap<&str, Vec<(&str, bool)>> = BTreeMap::new();
    for (caller, callee, held) in call_sites {
        let dead = header_inline.contains(caller) && !called.contains(caller.as_str());
        if caller != callee && !dead {
            callers
                .entry(callee.as_str())
                .or_default()
                .push((caller.as_str(), held.iter().any(|h| h == lock)));
        }
    }
    let mut state: BTreeMap<&str, Owned> = callers.keys().map(|f| (*f, Owned::Unknown)).collect();
    // As in entry_locks: only what a changed caller can change.
    let callees = callees_of(&callers);
    let mut dirty: std::collections::HashSet<&str> = callers.keys().copied().collect();
    loop {
        let mut changed = false;
        for (f, sites) in &callers {
            if !dirty.remove(f) {
                continue;
            }
            let v = sites
                .iter()
                .map(|(c, holds)| {
                    if *holds {
                        Owned::Yes
                    } else {
                        state.get(c).copied().unwrap_or(Owned::Unknown)
                    }
                })
                .min()
                .unwrap_or(Owned::Unknown);
            if state.get(f) != Some(&v) {
                state.insert(f, v);
                changed = true;
                dirty.extend(callees.get(f).into_iter().flatten().copied());
            }
        }
        if !changed {
            break;
        }
    }
    state.into_iter().map(|(f, v)| (f.to_string(), v)).collect()
}

#[cfg(test)]
mod owner_tests {
    use super::*;

    #[test]
    fn an_owner_lock_is_not_vetoed_by_callers_of_unknown_context() {
        let s = |a: &str, b: &str, l: &[&str]| {
            (
                a.to_string(),
                b.to_string(),
                l.iter().map(|x| x.to_string()).collect::<Vec<String>>(),
            )
        };
        // A timer takes the lock before its handler; release_cb (no
        // caller in the sources) calls it too; both reach xmit. poll
        // calls peek without it: peek's context is known and not held.
        let sites = vec![
            s("timer", "handler", &["sk_lock"]),
            s("release_cb", "handler", &[]),
            s("handler", "xmit", &[]),
            s("connect", "connect_helper", &[]),
            s("rcv", "peek", &["sk_lock"]),
            s("rcv", "poll_helper", &[]),
            s("poll_helper", "peek", &[]),
        ];
        let e = owner_entry(&sites, &BTreeSet::new(), "sk_lock");
        assert_eq!(e["handler"], Owned::Yes);
        assert_eq!(e["xmit"], Owned::Yes);
        assert_eq!(e["connect_helper"], Owned::Unknown);
        assert_eq!(e["poll_helper"], Owned::Unknown);
        assert_eq!(e["peek"], Owned::Yes);
    }
}
