//! The rules, per member, from its profile hits and its source sites:
//!
//! - frequency: a profile with at least [`Rules::min_samples`] samples
//!   decides: the write fraction's 95 % Wilson interval above
//!   [`Rules::written_above`] → written; below [`Rules::read_mostly_below`]
//!   → read-mostly (ambiguous when it saw no store at all and a hot path
//!   writes the member); between → ambiguous. Without enough samples, the sites
//!   reached from hot roots decide: a hot write → written; hot reads only →
//!   read-mostly; hot reads and hot stores on change only (skipped when
//!   the member holds the value) → read-mostly, flagged ambiguous. Nothing hot: the warm sites (code that runs, off the hot
//!   roots) decide: written there only with atomics, not all of it on
//!   known slow paths → written (lockless); else cold. Nothing at all → cold.
//! - locks: a written member whose written sites (the hot ones, when there
//!   are) all hold one lock is `locked_write.LOCK`; any other written member
//!   is `lockless_atomic`.
//! - false sharing: a read-mostly member that takes HITMs on a cache line
//!   where another member is (unambiguously) written is that member's victim.
//!
//! What the rules cannot decide is marked ambiguous with the reason, and
//! gets the class that keeps the layout safe (written beats read-mostly).

use super::profile::ProfileHit;
use super::sites::{Heat, Site};
use super::wilson;
use crate::Struct;
use serde::Serialize;
use std::collections::BTreeSet;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "class", content = "lock")]
pub enum Class {
    ReadMostly,
    LockedWrite(String),
    LocklessAtomic,
    Cold,
}

impl Class {
    /// The access file's key: `read_mostly`, `locked_write.LOCK`, ...
    pub fn key(&self) -> String {
        let keyword = self.vocabulary().info().keywords[0];
        match self {
            Class::LockedWrite(l) => format!("{keyword}.{l}"),
            Class::ReadMostly | Class::LocklessAtomic | Class::Cold => keyword.into(),
        }
    }

    /// The class of the access vocabulary ([`crate::class`]) this verdict names.
    pub fn vocabulary(&self) -> crate::class::Class {
        match self {
            Class::ReadMostly => crate::class::Class::ReadMostly,
            Class::LockedWrite(_) => crate::class::Class::LockedWrite,
            Class::LocklessAtomic => crate::class::Class::Lockless,
            Class::Cold => crate::class::Class::Cold,
        }
    }

    fn written(&self) -> bool {
        matches!(self, Class::LockedWrite(_) | Class::LocklessAtomic)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

/// The thresholds of the rules.
#[derive(Clone, Debug)]
pub struct Rules {
    pub min_samples: u64,
    pub written_above: f64,
    pub read_mostly_below: f64,
    pub line: u64,
    /// The struct's offset from a line boundary (`--offset`), for which line a member is on.
    pub phase: u64,
    /// Whether hot roots were given (without them, every site off an
    /// `unlikely()` branch is hot), for the wording.
    pub have_roots: bool,
    /// Whether sources were given (without them, locks are unknown).
    pub have_sources: bool,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            min_samples: 20,
            written_above: 0.02,
            read_mostly_below: 0.05,
            line: 64,
            phase: 0,
            have_roots: false,
            have_sources: false,
        }
    }
}

/// The profile's totals of one member.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counts {
    pub loads: u64,
    pub stores: u64,
    pub unknown: u64,
    pub hitm: u64,
    pub estimated: bool,
    /// The write fraction and its 95 % interval, with enough samples.
    pub write_fraction: Option<(f64, f64, f64)>,
}

/// The verdict on one member.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub field: usize,
    pub name: String,
    pub class: Class,
    pub confidence: Confidence,
    /// Why the rules could not decide, when they could not.
    pub ambiguous: Option<String>,
    /// Why this class, in a few words.
    pub reason: String,
    pub counts: Counts,
    /// The profile rows, largest first (at most [`MAX_CITES`]).
    pub profile: Vec<String>,
    /// The source sites, hot first (every one).
    pub sites: Vec<Site>,
    /// Written members on this member's line while it takes HITMs.
    pub victim_of: Vec<String>,
    /// The cache line (from the container's start) it starts on.
    pub line: u64,
    /// The writer group of a lockless member ([`writer_groups`]).
    pub group: Option<String>,
    /// Its offset in the struct and its size, in bytes.
    pub offset: u64,
    pub size: u64,
}

pub const MAX_CITES: usize = 3;

impl Verdict {
    /// The access file's key: `lockless_atomic[.GROUP]`, `locked_write.LOCK`, ...
    pub fn key(&self) -> String {
        match (&self.class, &self.group) {
            (c @ Class::LocklessAtomic, Some(g)) => format!("{}.{g}", c.key()),
            (c, _) => c.key(),
        }
    }
}

/// Writer groups: lockless members written from distinct contexts. Two
/// members are in one group when a hot root writes both (the groups are the
/// connected components); a group is named after its first root in
/// `roots` order. Lockless members no hot root writes (a profile's, an
/// ambiguous one's) form the group `other`. With one group or none, nothing
/// changes.
pub fn writer_groups(verdicts: &mut [Verdict], roots: &[String]) {
    let lockless: Vec<usize> = (0..verdicts.len())
        .filter(|&i| verdicts[i].class == Class::LocklessAtomic)
        .collect();
    let writers = |v: &Verdict| -> BTreeSet<usize> {
        v.sites
            .iter()
            .filter(|x| x.heat == Heat::Hot && x.kind.writes())
            .flat_map(|x| x.hot_roots.iter())
            .filter_map(|r| roots.iter().position(|q| q == r))
            .collect()
    };
    // Union-find over the roots.
    let mut parent: Vec<usize> = (0..roots.len()).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    let sets: Vec<(usize, BTreeSet<usize>)> = lockless
        .iter()
        .map(|&i| (i, writers(&verdicts[i])))
        .collect();
    for (_, set) in &sets {
        let mut it = set.iter();
        if let Some(&first) = it.next() {
            for &r in it {
                let (a, b) = (find(&mut parent, first), find(&mut parent, r));
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let group_of = |parent: &mut Vec<usize>, set: &BTreeSet<usize>| {
        set.iter().next().map(|&r| find(parent, r))
    };
    let components: BTreeSet<Option<usize>> =
        sets.iter().map(|(_, s)| group_of(&mut parent, s)).collect();
    if components.len() < 2 {
        return;
    }
    for (i, set) in sets {
        verdicts[i].group = Some(match group_of(&mut parent, &set) {
            Some(root) => crate::class::identifier(&roots[root]),
            None => "other".into(),
        });
    }
}

enum Frequency {
    Written(String),
    ReadMostly(String),
    Cold(String),
    Ambiguous { written: bool, why: String },
}

/// The verdict on every member of `s` (declaration order), from the
/// profiles' `hits` and the sources' `sites`.
pub fn classify(s: &Struct, hits: &[ProfileHit], sites: &[Site], rules: &Rules) -> Vec<Verdict> {
    let mut out: Vec<Verdict> = Vec::new();
    for (i, f) in s.fields.iter().enumerate() {
        if f.size == 0 {
            continue;
        }
        let mine: Vec<&ProfileHit> = hits.iter().filter(|h| h.field == i).collect();
        let mut counts = Counts::default();
        for h in &mine {
            counts.loads = counts.loads.saturating_add(h.loads);
            counts.stores = counts.stores.saturating_add(h.stores);
            counts.unknown = counts.unknown.saturating_add(h.unknown);
            counts.hitm = counts.hitm.saturating_add(h.hitm);
            counts.estimated |= h.estimated;
        }
        let mut sorted = mine.clone();
        sorted.sort_by(|a, b| {
            let total = |h: &ProfileHit| {
                [h.loads, h.stores, h.unknown, h.hitm]
                    .iter()
                    .fold(0u64, |t, x| t.saturating_add(*x))
            };
            total(b).cmp(&total(a)).then(a.cite.cmp(&b.cite))
        });
        let profile: Vec<String> = sorted
            .iter()
            .take(MAX_CITES)
            .map(|h| {
                format!(
                    "{}: {} loads, {} stores{}{}",
                    h.cite,
                    h.loads,
                    h.stores,
                    if h.unknown > 0 {
                        format!(", {} accesses", h.unknown)
                    } else {
                        String::new()
                    },
                    if h.hitm > 0 {
                        format!(", {} HITM", h.hitm)
                    } else {
                        String::new()
                    }
                )
            })
            .collect();
        let mut my_sites: Vec<Site> = sites.iter().filter(|x| x.field == i).cloned().collect();
        my_sites.sort_by(|a, b| {
            (a.heat, &a.file, a.line, &a.function, a.kind, &a.how).cmp(&(
                b.heat,
                &b.file,
                b.line,
                &b.function,
                b.kind,
                &b.how,
            ))
        });
        my_sites.dedup();
        let freq = frequency(&mut counts, &my_sites, rules);
        let (class, confidence, ambiguous, reason) = match freq {
            Frequency::Cold(r) => (Class::Cold, Confidence::High, None, r),
            Frequency::ReadMostly(r) => {
                let conf = if counts.loads.saturating_add(counts.stores)
                    >= rules.min_samples.saturating_mul(5)
                    || my_sites.iter().any(|x| x.heat == Heat::Hot)
                {
                    Confidence::High
                } else {
                    Confidence::Medium
                };
                (Class::ReadMostly, conf, None, r)
            }
            Frequency::Written(r) => {
                let (class, lock_note) = lock_class(&my_sites, rules);
                if let (Class::LockedWrite(lock), None) = (&class, profile_decided(&counts, rules))
                {
                    if let Some(read) = lockless_hot_read(&my_sites, lock) {
                        let why = format!(
                            "written under {lock} on hot paths ({r}) and read without it at {}: only the write frequency separates read-mostly from contended (give a profile)",
                            read.cite()
                        );
                        out.push(Verdict {
                            field: i,
                            name: access_name(&f.name),
                            class: class.clone(),
                            confidence: Confidence::Low,
                            ambiguous: Some(why),
                            reason: "kept locked_write (the safe side)".into(),
                            counts,
                            profile,
                            sites: my_sites,
                            victim_of: Vec::new(),
                            line: rules.phase.saturating_add(f.original_offset.unwrap_or(0))
                                / rules.line.max(1),
                            offset: f.original_offset.unwrap_or(0),
                            size: f.size,
                            group: None,
                        });
                        continue;
                    }
                }
                let off_hot = profile_decided(&counts, rules).is_none()
                    && !my_sites.iter().any(|x| x.heat == Heat::Hot);
                let conf = if lock_note.is_some() || off_hot {
                    Confidence::Medium
                } else {
                    Confidence::High
                };
                let reason = match lock_note {
                    Some(n) => format!("{r}; {n}"),
                    None => r,
                };
                (class, conf, None, reason)
            }
            Frequency::Ambiguous { written: true, why } => {
                let (class, _) = lock_class(&my_sites, rules);
                (
                    class,
                    Confidence::Low,
                    Some(why),
                    "treated as written (the safe side)".into(),
                )
            }
            Frequency::Ambiguous {
                written: false,
                why,
            } => (
                Class::ReadMostly,
                Confidence::Low,
                Some(why),
                "no write seen".into(),
            ),
        };
        out.push(Verdict {
            field: i,
            name: access_name(&f.name),
            class,
            confidence,
            ambiguous,
            reason,
            counts,
            profile,
            sites: my_sites,
            victim_of: Vec::new(),
            line: rules.phase.saturating_add(f.original_offset.unwrap_or(0)) / rules.line.max(1),
            offset: f.original_offset.unwrap_or(0),
            size: f.size,
            group: None,
        });
    }
    mark_victims(s, &mut out, rules);
    out
}

/// The access file's name of a field: a run of bit-fields the compiler
/// names `a:b:c` by its first bit-field.
fn access_name(name: &str) -> String {
    name.split(':').next().unwrap_or(name).to_string()
}

fn frequency(counts: &mut Counts, sites: &[Site], rules: &Rules) -> Frequency {
    let n = counts.loads.saturating_add(counts.stores);
    let sampled = n.saturating_add(counts.unknown);
    if n >= rules.min_samples {
        let (lo, hi) = wilson::interval(counts.stores, n, wilson::Z95);
        let p = counts.stores as f64 / n as f64;
        counts.write_fraction = Some((p, lo, hi));
        let frac = format!(
            "stores {}/{} = {:.1}% [{:.1}%, {:.1}%]",
            counts.stores,
            n,
            100.0 * p,
            100.0 * lo,
            100.0 * hi
        );
        if lo >= rules.written_above {
            return Frequency::Written(format!("written: {frac}"));
        }
        if hi < rules.read_mostly_below {
            // The profile measured the writes as rare: it decides (the
            // seed's case: written under a lock once per generation, read
            // everywhere). It saw none although a hot path writes: the two
            // disagree, and the rules do not choose.
            return match hot_static_write(sites) {
                Some(w) if counts.stores == 0 => Frequency::Ambiguous {
                    written: true,
                    why: format!(
                        "the profile saw no store ({frac}) but a hot path writes it at {w}"
                    ),
                },
                Some(w) => Frequency::ReadMostly(format!(
                    "read-mostly: {frac}; the profile measures the writes at {w} as rare"
                )),
                None => Frequency::ReadMostly(format!("read-mostly: {frac}")),
            };
        }
        return Frequency::Ambiguous {
            written: counts.stores > 0,
            why: format!(
                "the write fraction is between the thresholds ({frac}; written above {:.0}%, read-mostly below {:.0}%)",
                100.0 * rules.written_above,
                100.0 * rules.read_mostly_below
            ),
        };
    }
    let hot: Vec<&Site> = sites.iter().filter(|x| x.heat == Heat::Hot).collect();
    // A store on change (skipped when the member holds the value) is no
    // write per operation where hot code reads the member too.
    let hot_read = hot.iter().find(|x| !x.kind.writes());
    let per_op = |x: &&&Site| x.kind.writes() && (!x.on_change || hot_read.is_none());
    if let Some(w) = hot.iter().find(per_op) {
        let note = if sampled > 0 {
            format!(
                " (the profile has {sampled} samples, fewer than {})",
                rules.min_samples
            )
        } else {
            String::new()
        };
        return Frequency::Written(format!(
            "{} writes it at {}{note}",
            if rules.have_roots {
                "a hot path"
            } else {
                "the code"
            },
            w.cite()
        ));
    }
    if let Some(r) = hot_read {
        if counts.stores > 0 {
            return Frequency::Ambiguous {
                written: true,
                why: format!(
                    "the code only reads it on hot paths ({}), but the profile saw {} stores in {} samples (fewer than {})",
                    r.cite(),
                    counts.stores,
                    sampled,
                    rules.min_samples
                ),
            };
        }
        // Written only where a hot root reaches through a slow path: how
        // often that runs is a guess from the names and branches.
        if let Some(w) = hot.iter().find(|x| x.on_change && x.kind.writes()) {
            return Frequency::Ambiguous {
                written: false,
                why: format!(
                    "read on hot paths ({}) and written there only when its value changes ({}, under a test that it differs): read-mostly if it changes rarely, written if it changes per operation",
                    r.cite(),
                    w.cite()
                ),
            };
        }
        if let Some(w) = sites.iter().find(|x| x.near_hot && x.kind.writes()) {
            return Frequency::Ambiguous {
                written: false,
                why: format!(
                    "read on hot paths ({}) and written only on a slow path a hot root reaches ({}: {}): read-mostly if that path is as rare as its name or branch says, written if it runs per operation",
                    r.cite(),
                    w.cite(),
                    w.cold_because.as_deref().unwrap_or("slow path")
                ),
            };
        }
        return Frequency::ReadMostly(format!(
            "only read on {} ({})",
            if rules.have_roots {
                "hot paths"
            } else {
                "the given sources"
            },
            r.cite()
        ));
    }
    if sampled > 0 {
        return Frequency::Ambiguous {
            written: counts.stores > 0,
            why: format!(
                "not enough samples: {sampled} (at least {} needed){}",
                rules.min_samples,
                if sites.is_empty() {
                    ""
                } else {
                    ", and no hot path touches it"
                }
            ),
        };
    }
    // No hot root touches it, but code that runs does (a sysctl or sysfs
    // handler, an ops table's function, a caller elsewhere): rare compared
    // with the hot paths. Written there only with atomics → a counter
    // others add to concurrently, unless every such write is known to be
    // rare (on a slow path a hot root reaches, or in a function named for
    // one: a link event's counter, an ICMP error's rate limit); read there
    // → cold (its writes, if any, are off the hot paths too).
    let warm: Vec<&Site> = sites.iter().filter(|x| x.heat == Heat::Warm).collect();
    let warm_writes: Vec<&&Site> = warm.iter().filter(|x| x.kind.writes()).collect();
    // Bit operations are flags set on configuration events (`set_bit` in
    // `__dev_open`), not a counter: they say nothing of how often.
    if !warm_writes.is_empty()
        && warm_writes
            .iter()
            .all(|x| is_atomic(&x.how) && !x.how.ends_with("_bit"))
    {
        if let Some(w) = warm_writes.iter().find(|x| !rare(x)) {
            return Frequency::Written(format!(
                "no hot path touches it; outside them it is written only with atomics ({})",
                w.cite()
            ));
        }
    }
    // Read only off the hot paths: on a slow path a hot root reaches (an
    // `unlikely()` or error branch, setup, a timer or loss recovery it
    // calls), in a function whose name says it is a slow path (a sysctl
    // handler, setup), or by code no hot root reaches at all
    // (configuration, registration, reporting): cold. A hot path the
    // roots do not name makes it hot: name its root.
    let reads: Vec<&&Site> = warm
        .iter()
        .filter(|x| x.kind == super::sites::Kind::Read)
        .collect();
    if let Some(r) = reads.iter().find(|x| rare(x)).or(reads.first()) {
        let why = if rare(r) {
            "read only on slow paths"
        } else {
            "read only by code no hot root reaches"
        };
        return Frequency::Cold(format!(
            "no hot path touches it; {why} ({}: {})",
            r.cite(),
            r.cold_because.as_deref().unwrap_or("slow path")
        ));
    }
    if sites.is_empty() {
        Frequency::Cold("no access seen".into())
    } else if warm.is_empty() {
        Frequency::Cold(format!(
            "no hot path touches it, nor any code but init, error paths and printing ({} cold site(s))",
            sites.len()
        ))
    } else {
        let rarely = if warm.iter().all(|x| rare(x)) {
            "only written, on slow paths"
        } else {
            "only written"
        };
        Frequency::Cold(format!(
            "no hot path touches it; outside them it is {rarely} ({}: {})",
            warm[0].cite(),
            warm[0]
                .cold_because
                .as_deref()
                .unwrap_or("not reached from a hot root")
        ))
    }
}

/// Whether a warm site is known to run rarely: on a slow path a hot root
/// reaches, or in a function whose name says it is one.
fn rare(x: &Site) -> bool {
    x.near_hot || x.slow_name
}

/// Whether a site's form is an atomic operation (`atomic_long_add`,
/// `set_bit`, `xchg`, `cmpxchg`, `this_cpu_add`): made for concurrent writers.
fn is_atomic(how: &str) -> bool {
    let h = how.trim_start_matches('_');
    h.starts_with("atomic")
        || h.contains("xchg")
        || h.ends_with("_bit")
        || h.starts_with("this_cpu")
        || h.starts_with("raw_cpu")
}

/// Whether a profile had enough samples to decide the frequency.
fn profile_decided(counts: &Counts, rules: &Rules) -> Option<()> {
    (counts.loads.saturating_add(counts.stores) >= rules.min_samples).then_some(())
}

/// A hot read of the member that does not hold `lock` (`READ_ONCE` outside it).
fn lockless_hot_read<'a>(sites: &'a [Site], lock: &str) -> Option<&'a Site> {
    sites.iter().find(|x| {
        x.heat == Heat::Hot
            && x.kind == super::sites::Kind::Read
            && !x.locks.iter().any(|l| l == lock)
    })
}

fn hot_static_write(sites: &[Site]) -> Option<String> {
    sites
        .iter()
        .find(|x| x.heat == Heat::Hot && x.kind.writes())
        .map(Site::cite)
}

/// `locked_write.LOCK` when every written site (the hot ones, if any)
/// holds one lock; else lockless, with a note when the sources cannot say.
fn lock_class(sites: &[Site], rules: &Rules) -> (Class, Option<String>) {
    let writes: Vec<&Site> = sites.iter().filter(|x| x.kind.writes()).collect();
    let hot: Vec<&Site> = writes
        .iter()
        .copied()
        .filter(|x| x.heat == Heat::Hot)
        .collect();
    let mut considered = if hot.is_empty() { writes } else { hot };
    // A write in a function no source calls, holding nothing there, is of
    // unknown context (its callers, and their locks, are elsewhere): it
    // does not veto a lock every other write holds.
    // Only for an owner lock, which the callers of a subsystem's entry
    // points take (super::sites::OWNER_LOCKS).
    let unknown = |x: &Site| x.context_unknown && x.locks.is_empty();
    let known: Vec<&Site> = considered.iter().copied().filter(|x| !unknown(x)).collect();
    let owner_held = !known.is_empty()
        && super::sites::OWNER_LOCKS
            .iter()
            .any(|l| known.iter().all(|x| x.locks.iter().any(|h| h == l)));
    if owner_held {
        considered = known;
    }
    if considered.is_empty() {
        let why = if rules.have_sources {
            "no write in the given sources: the lock is unknown"
        } else {
            "no sources given: the lock is unknown"
        };
        return (Class::LocklessAtomic, Some(why.into()));
    }
    let mut common: Option<BTreeSet<&str>> = None;
    for w in &considered {
        let held: BTreeSet<&str> = w.locks.iter().map(String::as_str).collect();
        common = Some(match common {
            None => held,
            Some(c) => c.intersection(&held).copied().collect(),
        });
    }
    // Written only with atomics, and somewhere without the lock: the
    // atomics are what makes it safe, not the lock some writers hold.
    let atomic_lockless = sites.iter().any(|x| x.kind.writes())
        && sites
            .iter()
            .filter(|x| x.kind.writes())
            .all(|x| is_atomic(&x.how));
    let unlocked_somewhere = |lock: &str| {
        sites
            .iter()
            .any(|x| x.kind.writes() && !x.locks.iter().any(|l| l == lock))
    };
    match common.and_then(|c| c.into_iter().next()) {
        Some(lock) if atomic_lockless && unlocked_somewhere(lock) => (Class::LocklessAtomic, None),
        Some(lock) => (Class::LockedWrite(lock.to_string()), None),
        None => (Class::LocklessAtomic, None),
    }
}

fn mark_victims(s: &Struct, out: &mut [Verdict], rules: &Rules) {
    let lines_of = |v: &Verdict| {
        let f = &s.fields[v.field];
        let start = rules.phase.saturating_add(f.original_offset.unwrap_or(0));
        let end = start.saturating_add(f.size.max(1) - 1);
        (start / rules.line.max(1), end / rules.line.max(1))
    };
    let written: Vec<(String, (u64, u64))> = out
        .iter()
        .filter(|v| v.class.written() && v.ambiguous.is_none())
        .map(|v| (v.name.clone(), lines_of(v)))
        .collect();
    for v in out.iter_mut() {
        if v.class != Class::ReadMostly || v.counts.hitm == 0 {
            continue;
        }
        let (a, b) = lines_of(v);
        v.victim_of = written
            .iter()
            .filter(|(name, (c, d))| *name != v.name && *c <= b && a <= *d)
            .map(|(name, _)| name.clone())
            .collect();
    }
}
