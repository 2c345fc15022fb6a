//! `cachelayout infer --source`: access classes from the C sources through
//! libclang, judged against ground truth written down here with its
//! evidence (file:line): the `stats` fixture (fixtures/infer: a lock, a
//! counter and a list under it, reached through a `lockdep_assert_held()`
//! helper, an atomic, a bit op, `READ_ONCE` readers, an `unlikely()` error
//! path, an `__init` and a cold root) and the kernel's `page_counter`
//! (Debian's linux-source-6.1, mm/page_counter.c and mm/memcontrol.c, with
//! the Kbuild flags of linux-headers-amd64). Each prints its per-class
//! precision and recall and its time.

use crate::support;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;
use support::*;

fn fixtures() -> PathBuf {
    repo().join("cli/tests/fixtures/infer")
}

/// Ground truth: member, class, evidence.
pub(crate) type Truth = [(&'static str, &'static str, &'static str)];

/// Per class: (true positives, false positives, false negatives); prints the table.
pub(crate) fn score(
    what: &str,
    truth: &Truth,
    got: &HashMap<String, String>,
) -> BTreeMap<String, (u32, u32, u32)> {
    let mut s: BTreeMap<String, (u32, u32, u32)> = BTreeMap::new();
    for (m, class, _) in truth {
        let g = got
            .get(*m)
            .unwrap_or_else(|| panic!("{what}: no verdict on {m}"));
        if g == class {
            s.entry(class.to_string()).or_default().0 += 1;
        } else {
            s.entry(g.clone()).or_default().1 += 1;
            s.entry(class.to_string()).or_default().2 += 1;
        }
    }
    for (m, class, why) in truth {
        if got.get(*m).is_some_and(|g| g != class) {
            eprintln!("{what}: miss: {m}: {} (truth {class}: {why})", got[*m]);
        }
    }
    print_classes(what, &s);
    s
}

/// The per-class table: precision, recall and the counts.
pub(crate) fn print_classes(what: &str, s: &BTreeMap<String, (u32, u32, u32)>) {
    eprintln!("{what}: class, precision, recall");
    for (class, (tp, fp, fn_)) in s {
        let p = *tp as f64 / (*tp + *fp).max(1) as f64;
        let r = *tp as f64 / (*tp + *fn_).max(1) as f64;
        eprintln!(
            "  {class:<22} {:>5.1}% {:>5.1}%  ({tp} right, {fp} wrongly, {fn_} missed)",
            100.0 * p,
            100.0 * r
        );
    }
}

/// Every kind of class keeps 75% precision and recall or better.
fn each_class_keeps_three_quarters(s: &BTreeMap<String, (u32, u32, u32)>) {
    for (class, (tp, fp, fn_)) in s {
        assert!(
            4 * tp >= 3 * (tp + fp) && 4 * tp >= 3 * (tp + fn_),
            "{class}: {tp} right, {fp} wrongly, {fn_} missed"
        );
    }
}

/// Per-class counts of several structs together, by kind of class
/// (`locked_write.lock` and `locked_write.lru_lock` are `locked_write`).
fn merge_classes(
    all: &mut BTreeMap<String, (u32, u32, u32)>,
    s: &BTreeMap<String, (u32, u32, u32)>,
) {
    for (class, (tp, fp, fn_)) in s {
        let kind = class.split('.').next().unwrap_or(class);
        let e = all.entry(kind.to_string()).or_default();
        e.0 += tp;
        e.1 += fp;
        e.2 += fn_;
    }
}

/// Scores each struct's output against its ground truth (and checks that
/// none contradicts its evidence silently): classes right, classes in
/// all, and the per-class counts merged.
pub(crate) fn score_structs(
    structs: &[(&str, &Truth, &serde_json::Value)],
) -> (u32, u32, BTreeMap<String, (u32, u32, u32)>) {
    let (mut right, mut all, mut per_class) = (0, 0, BTreeMap::new());
    for &(what, truth, j) in structs {
        let s = score(what, truth, &classes(j));
        merge_classes(&mut per_class, &s);
        right += s.values().map(|v| v.0).sum::<u32>();
        all += truth.len() as u32;
        no_silent_contradiction(what, truth, j);
    }
    (right, all, per_class)
}

pub(crate) fn classes(j: &serde_json::Value) -> HashMap<String, String> {
    j["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["class"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn site<'a>(j: &'a serde_json::Value, member: &str, line: u64) -> &'a serde_json::Value {
    self::member(j, member)["sites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["line"] == line)
        .unwrap_or_else(|| panic!("no site of {member} at line {line}: {j:#}"))
}

/// The member `name` of `infer --format json`'s output.
pub(crate) fn member<'a>(j: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    j["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no member {name}: {j:#}"))
}

const STATS_TRUTH: &Truth = &[
    (
        "lock",
        "locked_write.lock",
        "stats.c:21 spin_lock(&s->lock) in stats_add",
    ),
    (
        "nr_items",
        "locked_write.lock",
        "stats.c:22 ++ under lock; stats.c:6 -- under lockdep_assert_held",
    ),
    (
        "items",
        "locked_write.lock",
        "stats.c:23 list_add under lock",
    ),
    (
        "hits",
        "lockless_atomic",
        "stats.c:14 atomic_long_add, no lock",
    ),
    ("flags", "lockless_atomic", "stats.c:26 set_bit, no lock"),
    (
        "limit",
        "read_mostly",
        "stats.c:16 READ_ONCE on the hot path; written in stats_set_limit (cold root) and __init",
    ),
    ("parent", "read_mostly", "stats.c:15 read walking up"),
    ("failcnt", "cold", "stats.c:17 ++ only under unlikely()"),
    (
        "created",
        "cold",
        "stats.c:45 written in __init stats_init only",
    ),
    (
        "misc",
        "cold",
        "stats.c:47 written in __init only; its sizeof is no access",
    ),
];

const STATS_ARGS: &[&str] = &[
    "infer",
    "stats.h",
    "--struct",
    "stats",
    "--source",
    "stats.c",
    "--cc",
    "gcc -I.",
    "--hot",
    "stats_add",
    "--hot",
    "stats_remove",
    "--cold",
    "stats_set_limit",
];

#[test]
fn stats_fixture_matches_its_ground_truth() {
    let t0 = Instant::now();
    let mut args = STATS_ARGS.to_vec();
    args.extend(["--format", "json"]);
    let o = run_in(&fixtures(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    eprintln!("stats: {:.2} s", t0.elapsed().as_secs_f64());
    let j = json(&o);
    let s = score("stats", STATS_TRUTH, &classes(&j));
    assert!(
        s.values().all(|(_, fp, fn_)| *fp == 0 && *fn_ == 0),
        "{s:?}"
    );
    // The evidence behind the verdicts.
    let w = site(&j, "limit", 40);
    assert_eq!(
        (w["kind"].as_str(), w["how"].as_str(), w["heat"].as_str()),
        (Some("write"), Some("WRITE_ONCE"), Some("cold"))
    );
    let r = site(&j, "limit", 16);
    assert_eq!(
        (r["kind"].as_str(), r["how"].as_str(), r["heat"].as_str()),
        (Some("read"), Some("READ_ONCE"), Some("hot"))
    );
    assert_eq!(site(&j, "failcnt", 17)["cold_because"], "unlikely()");
    // lockdep_assert_held() in a helper: the decrement is under the lock.
    assert_eq!(site(&j, "nr_items", 6)["locks"][0], "lock");
    assert_eq!(site(&j, "items", 23)["how"], "list_add");
    assert_eq!(site(&j, "hits", 14)["kind"], "rmw");
    // sizeof(s->misc) is no access: one site only.
    let misc = member(&j, "misc");
    assert_eq!(misc["sites"].as_array().unwrap().len(), 1);
}

#[test]
fn stats_access_file_goes_to_propose() {
    let o = run_in(&fixtures(), STATS_ARGS);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("# hot stats.c:14 stats_add rmw atomic_long_add no lock"),
        "{text}"
    );
    assert_eq!(
        stdout(&run_in(&fixtures(), STATS_ARGS)),
        text,
        "deterministic"
    );
    // Each hot root's members, as hot paths.
    let paths = "[struct.stats.paths]\n\
        stats_add = [\"lock\", \"nr_items\", \"items\", \"hits\", \"limit\", \"parent\", \"flags\"]\n\
        stats_remove = [\"lock\", \"nr_items\"]\n";
    assert!(text.contains(paths), "{text}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("stats.toml"), &text).unwrap();
    let header = fixtures().join("stats.h");
    let p = run_in(
        dir.path(),
        &[
            "propose",
            header.to_str().unwrap(),
            "--struct",
            "stats",
            "--access",
            "stats.toml",
            "--format",
            "json",
        ],
    );
    assert!(p.status.success(), "{}", stderr(&p));
    let offs = field_offsets(&json(&p)["after"]);
    let line = |n: &str| offs.iter().find(|(f, _)| f == n).unwrap().1 / 64;
    for w in ["hits", "flags"] {
        for r in ["limit", "parent"] {
            assert_ne!(line(w), line(r), "{w} and {r}: {offs:?}");
        }
    }
}

#[test]
fn propose_reads_the_access_file_from_a_pipe() {
    // `propose --access <(cachelayout infer ...)`: the access file through
    // a FIFO (as a shell's process substitution gives it) and through
    // /dev/stdin on a pipe, with the same proposal as from a regular file.
    let o = run_in(&fixtures(), STATS_ARGS);
    assert!(o.status.success(), "{}", stderr(&o));
    let access = o.stdout.clone();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("stats.toml"), &access).unwrap();
    let header = fixtures().join("stats.h");
    let propose = |access: &str| {
        vec![
            "propose".to_string(),
            header.to_str().unwrap().to_string(),
            "--struct".into(),
            "stats".into(),
            "--access".into(),
            access.to_string(),
            "--format".into(),
            "json".into(),
        ]
    };
    let args = propose("stats.toml");
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let from_file = run_in(dir.path(), &a);
    assert!(from_file.status.success(), "{}", stderr(&from_file));
    // The proposal, without the solver's time.
    let proposal = |o: &std::process::Output| {
        let mut j = json(o);
        j.as_object_mut().unwrap().remove("solve_ms");
        j
    };
    let fifo = dir.path().join("access.fifo");
    let feed = Fifo::new(&fifo, access.clone());
    let args = propose("access.fifo");
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let from_fifo = run_with_deadline(dir.path(), &[], &a, std::time::Duration::from_secs(60));
    drop(feed);
    assert!(from_fifo.status.success(), "{}", stderr(&from_fifo));
    assert_eq!(proposal(&from_fifo), proposal(&from_file));
    // /dev/stdin on a pipe.
    use std::io::Write as _;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(dir.path())
        .env("XDG_CACHE_HOME", crate::support::process_cache())
        .args(propose("/dev/stdin"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&access).unwrap();
    let from_stdin = child.wait_with_output().unwrap();
    assert!(from_stdin.status.success(), "{}", stderr(&from_stdin));
    assert_eq!(proposal(&from_stdin), proposal(&from_file));
    // A pipe larger than the limit is refused; a directory or a device is no access file.
    let big = dir.path().join("big.fifo");
    let feed = Fifo::new(&big, vec![b'#'; 1 << 20]);
    let mut args = propose("big.fifo");
    args.extend(["--max-input-bytes".to_string(), "4096".to_string()]);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run_with_deadline(dir.path(), &[], &a, std::time::Duration::from_secs(60));
    drop(feed);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("big.fifo: error: cannot read the access file: it is larger than the limit of 4 KiB (4096 bytes)"),
        "{}",
        stderr(&o)
    );
    for (bad, what) in [(".", "a directory"), ("/dev/zero", "a character device")] {
        let args = propose(bad);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_with_deadline(dir.path(), &[], &a, std::time::Duration::from_secs(60));
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("it is {what}, not a regular file"))
                && stderr(&o).contains("a regular file or a pipe"),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn bad_source_arguments_are_clear_errors() {
    let f = fixtures();
    let run = |extra: &[&str]| {
        let mut a = vec!["infer", "stats.h", "--struct", "stats"];
        a.extend(extra);
        run_in(&f, &a)
    };
    let o = run(&[
        "--source", "stats.c", "--cc", "gcc -I.", "--hot", "stats_ad",
    ]);
    assert_eq!(o.status.code(), Some(2));
    // No --hot root defined: an error (one of several missing: a warning).
    assert!(
        stderr(&o).contains("no --hot root is defined in the given sources (`stats_ad` is not)")
            && stderr(&o).contains("did you mean `stats_add`"),
        "{}",
        stderr(&o)
    );
    let o = run(&["--source", "stats.c"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--source needs the flags"),
        "{}",
        stderr(&o)
    );
    let o = run(&["--source", "missing.c", "--cc", "gcc"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("missing.c"), "{}", stderr(&o));
    // A file that does not compile with these flags: the include is missing, at its line.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.c"),
        "#include \"stats.h\"\n#include \"nope.h\"\n",
    )
    .unwrap();
    let bad = dir.path().join("bad.c");
    let inc = format!("gcc -I{}", f.display());
    let o = run(&["--source", bad.to_str().unwrap(), "--cc", &inc]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.c:2:") && stderr(&o).contains("nope.h"),
        "{}",
        stderr(&o)
    );
}

/// Debian's 6.1 sources (mm/ among them), extracted once for every test
/// of the binary: `support::kernel_source`.
pub(crate) fn kernel_mm() -> Option<&'static Path> {
    crate::support::kernel_source()
}

/// page_counter as a memcg maintainer sees it in 6.1, with the evidence.
pub(crate) const PAGE_COUNTER_TRUTH: &Truth = &[
    (
        "usage",
        "lockless_atomic",
        "mm/page_counter.c:77 atomic_long_add_return in page_counter_charge, every charge",
    ),
    (
        "emin",
        "lockless_atomic",
        "mm/memcontrol.c:6912 WRITE_ONCE in mem_cgroup_calculate_protection, every reclaim pass",
    ),
    (
        "min_usage",
        "lockless_atomic",
        "mm/page_counter.c:28 atomic_long_xchg in propagate_protected_usage",
    ),
    (
        "children_min_usage",
        "lockless_atomic",
        "mm/page_counter.c:31 atomic_long_add on the parent",
    ),
    (
        "elow",
        "lockless_atomic",
        "mm/memcontrol.c:6917 WRITE_ONCE in mem_cgroup_calculate_protection",
    ),
    (
        "low_usage",
        "lockless_atomic",
        "mm/page_counter.c:37 atomic_long_xchg",
    ),
    (
        "children_low_usage",
        "lockless_atomic",
        "mm/page_counter.c:40 atomic_long_add on the parent",
    ),
    (
        "watermark",
        "lockless_atomic",
        "mm/page_counter.c:84 WRITE_ONCE, racy by design",
    ),
    (
        "failcnt",
        "lockless_atomic",
        "mm/page_counter.c:127 data_race(c->failcnt++)",
    ),
    (
        "min",
        "read_mostly",
        "mm/page_counter.c:25 READ_ONCE; written by page_counter_set_min (cgroup file write)",
    ),
    (
        "low",
        "read_mostly",
        "mm/page_counter.c:34 READ_ONCE; written by page_counter_set_low",
    ),
    (
        "high",
        "read_mostly",
        "mm/memcontrol.c reclaim_high/mem_find_max_overage READ_ONCE; written by memory_high_write",
    ),
    (
        "max",
        "read_mostly",
        "mm/page_counter.c:120 compared on every try_charge; written by page_counter_set_max",
    ),
    (
        "parent",
        "read_mostly",
        "mm/page_counter.c:74 walked up on every charge; set once at init",
    ),
];

/// The roots a memcg maintainer names: charge, uncharge, and reclaim's protection check.
const PAGE_COUNTER_ROOTS: &[&str] = &[
    "--hot",
    "page_counter_try_charge",
    "--hot",
    "page_counter_charge",
    "--hot",
    "page_counter_uncharge",
    "--hot",
    "try_charge_memcg",
    "--hot",
    "mem_cgroup_uncharge_list",
    "--hot",
    "mem_cgroup_calculate_protection",
];

#[test]
fn page_counter_from_mm_matches_its_ground_truth_and_propose_separates_usage() {
    let (Some(mm), Some(tree)) = (kernel_mm(), kbuild_tree()) else {
        return;
    };
    let src = mm;
    let header = srctree(&tree).join("include/linux/page_counter.h");
    let t = tree.to_str().unwrap();
    let mut args = vec![
        "infer",
        header.to_str().unwrap(),
        "--struct",
        "page_counter",
        "--kbuild",
        t,
        "--source",
        "mm/page_counter.c",
        "--source",
        "mm/memcontrol.c",
    ];
    args.extend(PAGE_COUNTER_ROOTS);
    let t0 = Instant::now();
    let mut json_args = args.clone();
    json_args.extend(["--format", "json"]);
    let o = run_in(src, &json_args);
    let secs = t0.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", stderr(&o));
    eprintln!("page_counter: {secs:.2} s\n{}", stderr(&o));
    assert!(secs < 60.0, "{secs} s");
    let j = json(&o);
    // Every member has evidence.
    for m in j["members"].as_array().unwrap() {
        assert!(
            !m["sites"].as_array().unwrap().is_empty(),
            "no site for {}",
            m["name"]
        );
    }
    let got = classes(&j);
    let s = score("page_counter", PAGE_COUNTER_TRUTH, &got);
    let right: u32 = s.values().map(|v| v.0).sum();
    assert!(
        right as f64 >= 0.9 * PAGE_COUNTER_TRUTH.len() as f64,
        "{s:?}"
    );
    // Never lockless where the truth says read-mostly, or the other way.
    for (m, class, why) in PAGE_COUNTER_TRUTH {
        let g = &got[*m];
        let opposite = (*class == "read_mostly" && g.starts_with("lockless"))
            || (class.starts_with("lockless") && g == "read_mostly");
        assert!(!opposite, "{m}: {g}, but {class}: {why}");
    }
    // The evidence of the hottest member.
    let usage = site(&j, "usage", 77);
    assert_eq!(
        (usage["how"].as_str(), usage["kind"].as_str()),
        (Some("atomic_long_add_return"), Some("rmw"))
    );
    assert_eq!(site(&j, "watermark", 84)["how"], "WRITE_ONCE");
    // Writer groups: reclaim's protection check writes emin and elow, the
    // charge paths the rest: two contexts.
    let mut grouped = args.clone();
    grouped.push("--writer-groups");
    let g = run_in(src, &grouped);
    assert!(g.status.success(), "{}", stderr(&g));
    let text = stdout(&g);
    let protection = text
        .split("lockless_atomic.mem_cgroup_calculate_protection = [")
        .nth(1)
        .and_then(|t| t.split(']').next())
        .expect(&text);
    assert!(
        protection.contains("\"emin\"")
            && protection.contains("\"elow\"")
            && !protection.contains("\"usage\""),
        "{text}"
    );
    assert!(
        text.contains("lockless_atomic.page_counter_try_charge = ["),
        "{text}"
    );
    // propose --access with the inferred file keeps usage apart from the limits and parent.
    let o = run_in(src, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = tempfile::tempdir().unwrap();
    let access = dir.path().join("pc.toml");
    std::fs::write(&access, stdout(&o)).unwrap();
    let p = run_in(
        dir.path(),
        &[
            "propose",
            header.to_str().unwrap(),
            "--struct",
            "page_counter",
            "--kbuild",
            t,
            "--access",
            "pc.toml",
            "--format",
            "json",
        ],
    );
    assert!(p.status.success(), "{}", stderr(&p));
    let offs = field_offsets(&json(&p)["after"]);
    let line = |n: &str| {
        offs.iter()
            .find(|(f, _)| f == n)
            .unwrap_or_else(|| panic!("{n}: {offs:?}"))
            .1
            / 64
    };
    for r in ["min", "low", "high", "max", "parent"] {
        assert_ne!(
            line("usage"),
            line(r),
            "usage and {r} share a line: {offs:?}"
        );
    }
}

/// lru_gen_struct (6.1's name of lru_gen_folio), as the multi-gen LRU's
/// seed fix classes it: the sequence numbers and timestamps change once per
/// aging generation; the lists and their sizes under lru_lock on every
/// add, isolate and sort; the refault counters with atomics from refaults.
pub(crate) const LRU_GEN_TRUTH: &Truth = &[
    ("max_seq", "read_mostly", "mm/vmscan.c:4390 smp_store_release in inc_max_seq, once per generation; READ_ONCE readers at 4446"),
    ("min_seq", "read_mostly", "mm/vmscan.c:4330 WRITE_ONCE under lru_lock, once per generation; read on every add (mm_inline.h)"),
    ("timestamps", "read_mostly", "mm/vmscan.c:4388 WRITE_ONCE once per generation"),
    ("folios", "locked_write.lru_lock", "mm/vmscan.c:4776 list_move in sort_folio under lru_lock (from evict_folios)"),
    ("nr_pages", "locked_write.lru_lock", "mm/vmscan.c:3757 WRITE_ONCE in reset_batch_size under lru_lock; mm_inline.h lru_gen_update_size"),
    ("avg_refaulted", "locked_write.lru_lock", "mm/vmscan.c:3640 WRITE_ONCE after lockdep_assert_held(lru_lock) at 3627"),
    ("avg_total", "locked_write.lru_lock", "mm/vmscan.c:3646 likewise"),
    ("protected", "locked_write.lru_lock", "mm/vmscan.c:3653 likewise; sort_folio under lru_lock"),
    ("evicted", "lockless_atomic", "mm/workingset.c:242 atomic_long_add in lru_gen_eviction, no lock"),
    ("refaulted", "lockless_atomic", "mm/workingset.c:284 atomic_long_add in lru_gen_refault, no lock"),
    ("enabled", "read_mostly", "mm_inline.h lru_gen_add_folio reads it; written by lru_gen_change_state (sysfs)"),
];

/// zone: as examples/kernel/zone.toml classes it (page allocator,
/// compaction, vmstat), by the classes infer gives (read on a fast path /
/// written / not on a fast path). Three members the layout file keeps
/// with the read-mostly ones, where a cold member does no harm, are on no
/// fast path of 6.1 and are cold here: `pageset_high`, `pageset_batch`
/// (the pcp setup only) and `span_seqlock` (a CONFIG_DEBUG_VM check).
pub(crate) const ZONE_TRUTH: &Truth = &[
    (
        "_watermark",
        "read_mostly",
        "mm/page_alloc.c zone_watermark_ok on every allocation; set by setup_per_zone_wmarks",
    ),
    (
        "watermark_boost",
        "read_mostly",
        "mm/page_alloc.c:2777 boost_watermark under zone->lock, on fallback only",
    ),
    (
        "nr_reserved_highatomic",
        "read_mostly",
        "mm/page_alloc.c:2932 reserve_highatomic_pageblock, rare",
    ),
    (
        "lowmem_reserve",
        "read_mostly",
        "mm/page_alloc.c:4073 __zone_watermark_ok",
    ),
    ("node", "read_mostly", "mmzone.h zone_to_nid"),
    ("zone_pgdat", "read_mostly", "set at init"),
    (
        "per_cpu_pageset",
        "read_mostly",
        "a per-CPU pointer: this_cpu_ptr reads it",
    ),
    (
        "per_cpu_zonestats",
        "read_mostly",
        "a per-CPU pointer: per_cpu_ptr reads it",
    ),
    (
        "pageset_high",
        "cold",
        "mm/page_alloc.c:7212-7217 zone_set_pageset_high_and_batch and 7295 zone_pcp_init: read and written only when the pcp lists are set up again (sysctl, hotplug); no fast path reads it (the pcp's own high is what nr_pcp_high reads)",
    ),
    (
        "pageset_batch",
        "cold",
        "likewise: mm/page_alloc.c:7213, 7217, 7296",
    ),
    ("zone_start_pfn", "read_mostly", "mmzone.h zone_end_pfn"),
    (
        "managed_pages",
        "read_mostly",
        "mmzone.h zone_managed_pages; written at boot and hotplug",
    ),
    ("spanned_pages", "read_mostly", "mmzone.h zone_end_pfn"),
    ("present_pages", "read_mostly", "mmzone.h populated_zone"),
    (
        "span_seqlock",
        "cold",
        "read only by page_outside_zone_boundaries (mm/page_alloc.c:654), under CONFIG_DEBUG_VM, which Debian's configuration leaves off; written on memory hotplug (memory_hotplug.h:140)",
    ),
    (
        "percpu_drift_mark",
        "read_mostly",
        "mm/page_alloc.c:4163 zone_watermark_ok_safe",
    ),
    (
        "contiguous",
        "read_mostly",
        "mm/internal.h:380 pageblock_pfn_to_page",
    ),
    (
        "free_area",
        "locked_write.lock",
        "mm/page_alloc.c:1070 del_page_from_free_list under zone->lock",
    ),
    (
        "flags",
        "locked_write.lock",
        "mm/page_alloc.c:2819 set_bit in steal_suitable_fallback under zone->lock",
    ),
    ("lock", "locked_write.lock", "the lock word"),
    (
        "nr_isolate_pageblock",
        "locked_write.lock",
        "page_isolation.c under zone->lock (not among the sources)",
    ),
    (
        "compact_cached_free_pfn",
        "lockless_atomic",
        "mm/compaction.c:229 reset_cached_positions, racy",
    ),
    (
        "compact_cached_migrate_pfn",
        "lockless_atomic",
        "mm/compaction.c:227",
    ),
    (
        "compact_init_migrate_pfn",
        "lockless_atomic",
        "mm/compaction.c:354",
    ),
    (
        "compact_init_free_pfn",
        "lockless_atomic",
        "mm/compaction.c:364",
    ),
    (
        "compact_considered",
        "lockless_atomic",
        "mm/compaction.c:156 defer_compaction",
    ),
    (
        "compact_defer_shift",
        "lockless_atomic",
        "mm/compaction.c:157",
    ),
    (
        "compact_order_failed",
        "lockless_atomic",
        "mm/compaction.c:160",
    ),
    (
        "compact_blockskip_flush",
        "lockless_atomic",
        "mm/compaction.c:337",
    ),
    (
        "vm_stat",
        "lockless_atomic",
        "vmstat.h:162 atomic_long_add from refresh_cpu_vm_stats",
    ),
    (
        "vm_numa_event",
        "lockless_atomic",
        "vmstat.h:142 atomic_long_add when NUMA events are folded",
    ),
    ("name", "cold", "set at init, printed"),
    ("present_early_pages", "cold", "boot only"),
    ("initialized", "cold", "set at init"),
];

/// Runs infer on one struct of mm/ (JSON), returns its verdicts and the seconds it took.
fn infer_mm(
    header: &str,
    name: &str,
    sources: &[&str],
    extra: &[&str],
) -> Option<(serde_json::Value, f64)> {
    let (mm, tree) = (kernel_mm()?, kbuild_tree()?);
    let header = srctree(&tree).join("include/linux").join(header);
    let t = tree.to_str().unwrap().to_string();
    let mut args: Vec<String> = [
        "infer",
        header.to_str().unwrap(),
        "--struct",
        name,
        "--kbuild",
        &t,
        "--format",
        "json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for s in sources {
        args.push("--source".into());
        args.push(format!("mm/{s}"));
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let t0 = Instant::now();
    let o = run_in(mm, &a);
    let secs = t0.elapsed().as_secs_f64();
    assert!(o.status.success(), "{name}: {}", stderr(&o));
    Some((json(&o), secs))
}

/// Never lockless where the truth says read-mostly, or the other way round,
/// unless the verdict says it is ambiguous.
fn no_silent_contradiction(what: &str, truth: &Truth, j: &serde_json::Value) {
    for (m, class, why) in truth {
        let v = member(j, m);
        let g = v["class"].as_str().unwrap();
        let opposite = (*class == "read_mostly" && g.starts_with("lockless"))
            || (class.starts_with("lockless") && g == "read_mostly");
        assert!(
            !opposite || v["ambiguous"].is_string(),
            "{what}.{m}: {g}, but {class}: {why}"
        );
    }
}

#[test]
fn lru_gen_zone_and_page_counter_together_within_a_minute() {
    // The three mm/ structs and their ground truth: CACHELAYOUT_SWEEPS=full
    // (page_counter alone is in the fast suite, below).
    if !crate::support::sweep::full() {
        println!("page_counter only in the fast suite: CACHELAYOUT_SWEEPS=full runs lru_gen_struct and zone");
        return;
    }
    let t0 = Instant::now();
    let Some((lru, lru_s)) = infer_mm(
        "mmzone.h",
        "lru_gen_struct",
        &["vmscan.c", "workingset.c"],
        // No --lock-wrapper: the lru_lock wrappers are read from their
        // bodies (memcontrol.h's relock and unlock helpers) or from their
        // callers (folio_lruvec_lock_irq, defined in memcontrol.c).
        &[
            "--hot",
            "evict_folios",
            "--hot",
            "lru_gen_refault",
            "--hot",
            "lru_gen_eviction",
            "--hot",
            "lru_gen_look_around",
        ],
    ) else {
        return;
    };
    let (zone, zone_s) = infer_mm(
        "mmzone.h",
        "zone",
        &["page_alloc.c", "compaction.c", "vmstat.c", "vmscan.c"],
        &[
            "--hot",
            "get_page_from_freelist",
            "--hot",
            "free_unref_page",
            "--hot",
            "free_unref_page_list",
            "--hot",
            "__free_pages_ok",
            "--hot",
            "compact_zone",
            "--hot",
            "try_to_compact_pages",
            "--hot",
            "refresh_cpu_vm_stats",
        ],
    )
    .unwrap();
    let (pc, pc_s) = infer_mm(
        "page_counter.h",
        "page_counter",
        &["page_counter.c", "memcontrol.c"],
        PAGE_COUNTER_ROOTS,
    )
    .unwrap();
    // The three runs (the extraction of mm/ from the tarball is not theirs).
    let total = lru_s + zone_s + pc_s;
    eprintln!(
        "time: lru_gen_struct {lru_s:.1} s, zone {zone_s:.1} s, page_counter {pc_s:.1} s; {total:.1} s together ({:.1} s with the extraction)",
        t0.elapsed().as_secs_f64()
    );
    assert!(total < 60.0, "{total} s");
    let structs = [
        ("lru_gen_struct", LRU_GEN_TRUTH, &lru),
        ("zone", ZONE_TRUTH, &zone),
        ("page_counter", PAGE_COUNTER_TRUTH, &pc),
    ];
    let (right, all, per_class) = score_structs(&structs);
    for (what, _, j) in structs {
        for m in j["members"].as_array().unwrap() {
            let touched = !m["sites"].as_array().unwrap().is_empty();
            assert!(
                touched || m["class"] == "cold",
                "{what}.{}: a class without evidence",
                m["name"]
            );
        }
    }
    print_classes("all three", &per_class);
    eprintln!(
        "all three: {right} of {all} classes right ({:.0}%)",
        100.0 * right as f64 / all as f64
    );
    // Measured: 55 of 59 (93 %); the misses are listed in GUIDE.md
    // (min_seq is flagged ambiguous on purpose). One more miss fails.
    assert!(right >= 55, "{right} of {all}");
    // Every class keeps 75 % precision and recall, cold too.
    each_class_keeps_three_quarters(&per_class);
    // The hard case the rules flag instead of guessing: min_seq is written
    // under lru_lock, only when it changes (`if (min_seq[type] ==
    // lrugen->min_seq[type]) continue;`), and read without it.
    let min_seq = member(&lru, "min_seq");
    assert!(
        min_seq["ambiguous"]
            .as_str()
            .unwrap()
            .contains("only when its value changes"),
        "{min_seq}"
    );
}

/// lruvec (include/linux/mmzone.h of 6.1) as the LRU code uses it, with
/// the evidence (file:line function how lock). `lrugen` and `mm_state` are
/// nested structs with classes of their own (lru_gen_struct above): not here.
pub(crate) const LRUVEC_TRUTH: &Truth = &[
    (
        "lists",
        "locked_write.lru_lock",
        "mm/swap.c:220 lru_add_fn lruvec_add_folio (list_add, mm_inline.h:328), run through the pointer move_fn by folio_batch_move_lru under lru_lock (folio_lruvec_relock_irqsave, mm/swap.c:237); mm/vmscan.c:2208 isolate_lru_folios under lru_lock (spin_lock_irq, mm/vmscan.c:2495)",
    ),
    (
        "lru_lock",
        "locked_write.lru_lock",
        "mm/vmscan.c:2495 shrink_inactive_list spin_lock_irq: the lock word",
    ),
    (
        "anon_cost",
        "locked_write.lru_lock",
        "mm/swap.c:307 lru_note_cost += under spin_lock_irq(&lruvec->lru_lock) at 302, from shrink_inactive_list (mm/vmscan.c:2525); read under it at mm/vmscan.c:2828",
    ),
    (
        "file_cost",
        "locked_write.lru_lock",
        "mm/swap.c:305 lru_note_cost += under lru_lock, likewise",
    ),
    (
        "nonresident_age",
        "lockless_atomic",
        "mm/workingset.c:339 workingset_age_nonresident atomic_long_add, no lock, on every eviction and activation",
    ),
    (
        "refaults",
        "read_mostly",
        "mm/vmscan.c:2846 prepare_scan_count read on every shrink_node; written once per reclaim run by snapshot_refaults (mm/vmscan.c:6439, from do_try_to_free_pages and balance_pgdat)",
    ),
    (
        "flags",
        "lockless_atomic",
        "mm/vmscan.c:6237 shrink_node set_bit(LRUVEC_CONGESTED), no lock; clear_bit from kswapd at mm/vmscan.c:6508",
    ),
    (
        "pgdat",
        "read_mostly",
        "include/linux/mmzone.h:1274 lruvec_pgdat on every LRU update; written under unlikely() in mem_cgroup_lruvec (memcontrol.h:736) when a node comes back",
    ),
];

/// The roots an mm maintainer names for lruvec: reclaim's pass over a
/// node, a new page joining the LRU (every fault), and the workingset's
/// eviction and refault.
const LRUVEC_ROOTS: &[&str] = &[
    "--hot",
    "shrink_node",
    "--hot",
    "folio_add_lru",
    "--hot",
    "workingset_eviction",
    "--hot",
    "workingset_refault",
];

/// per_cpu_pages (include/linux/mmzone.h of 6.1): the per-CPU page lists
/// under their own lock since 6.0, with the evidence.
pub(crate) const PCP_TRUTH: &Truth = &[
    (
        "lock",
        "locked_write.lock",
        "mm/page_alloc.c:3530 free_unref_page pcp_spin_trylock (spin_trylock(&pcp->lock), mm/page_alloc.c:178); mm/page_alloc.c:3844 rmqueue_pcplist",
    ),
    (
        "count",
        "locked_write.lock",
        "mm/page_alloc.c:3480 free_unref_page_commit += under the lock taken at 3530; mm/page_alloc.c:3826 __rmqueue_pcplist -= under the lock taken at 3844",
    ),
    (
        "high",
        "read_mostly",
        "mm/page_alloc.c:3454 nr_pcp_high READ_ONCE on every free; written by pageset_update (mm/page_alloc.c:7164 WRITE_ONCE) from sysctl and hotplug",
    ),
    (
        "batch",
        "read_mostly",
        "mm/page_alloc.c:3492 free_unref_page_commit and 3803 __rmqueue_pcplist READ_ONCE; written by pageset_update (7163)",
    ),
    (
        "free_factor",
        "locked_write.lock",
        "mm/page_alloc.c:3445 nr_pcp_free ++ on the free path under the lock; mm/page_alloc.c:3855 rmqueue_pcplist >>= 1 under the lock",
    ),
    (
        "expire",
        "lockless_atomic",
        "mm/vmstat.c:858 refresh_cpu_vm_stats __this_cpu_dec_return, per CPU, no lock; __this_cpu_write at 831 and 854",
    ),
    (
        "lists",
        "locked_write.lock",
        "mm/page_alloc.c:3479 free_unref_page_commit list_add under the lock; mm/page_alloc.c:3825 __rmqueue_pcplist list_del under it",
    ),
];

/// The page allocator's roots (as for zone) and vmstat's per-CPU fold.
const PCP_ROOTS: &[&str] = &[
    "--hot",
    "get_page_from_freelist",
    "--hot",
    "free_unref_page",
    "--hot",
    "free_unref_page_list",
    "--hot",
    "refresh_cpu_vm_stats",
];

#[test]
fn lruvec_and_per_cpu_pages_match_their_ground_truth() {
    // Ground truth beyond the three structs the rules were developed on:
    // CACHELAYOUT_SWEEPS=full (as lru_gen_struct and zone).
    if !crate::support::sweep::full() {
        println!("CACHELAYOUT_SWEEPS=full runs lruvec and per_cpu_pages");
        return;
    }
    let Some((lruvec, lruvec_s)) = infer_mm(
        "mmzone.h",
        "lruvec",
        &["vmscan.c", "workingset.c", "swap.c"],
        LRUVEC_ROOTS,
    ) else {
        return;
    };
    let (pcp, pcp_s) = infer_mm(
        "mmzone.h",
        "per_cpu_pages",
        &["page_alloc.c", "vmstat.c"],
        PCP_ROOTS,
    )
    .unwrap();
    eprintln!("time: lruvec {lruvec_s:.1} s, per_cpu_pages {pcp_s:.1} s");
    assert!(lruvec_s + pcp_s < 60.0, "{lruvec_s} s + {pcp_s} s");
    let (right, all, per_class) = score_structs(&[
        ("lruvec", LRUVEC_TRUTH, &lruvec),
        ("per_cpu_pages", PCP_TRUTH, &pcp),
    ]);
    print_classes("lruvec and per_cpu_pages", &per_class);
    eprintln!("lruvec and per_cpu_pages: {right} of {all} classes right");
    // Measured: 15 of 15 (lruvec's lists needs the lock lifted through the
    // pointer call of folio_batch_move_lru). One miss is allowed, no more.
    assert!(right + 1 >= all, "{right} of {all}");
    each_class_keeps_three_quarters(&per_class);
    // The evidence of the callback: lru_add_fn's list_add holds lru_lock.
    let lists = member(&lruvec, "lists");
    assert!(
        lists["sites"].as_array().unwrap().iter().any(|s| {
            s["function"] == "lruvec_add_folio"
                && s["heat"] == "hot"
                && s["locks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|l| l == "lru_lock")
        }),
        "{lists}"
    );
}

#[test]
fn the_profile_decides_how_often_the_code_decides_the_lock() {
    let mut args = STATS_ARGS.to_vec();
    args.extend(["--perf-mem", "stats_types.txt", "--format", "json"]);
    let o = run_in(&fixtures(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let m = |n: &str| member(&j, n).clone();
    // Written often (the profile), under the lock (the code).
    assert_eq!(m("nr_items")["class"], "locked_write.lock");
    // Written often although the code writes it only on a cold path: the
    // profile wins on frequency; no lock at its writes.
    assert_eq!(m("limit")["class"], "lockless_atomic");
    assert!(
        m("limit")["reason"]
            .as_str()
            .unwrap()
            .contains("stores 100/500"),
        "{}",
        m("limit")
    );
    assert_eq!(m("failcnt")["class"], "lockless_atomic");
    // The profile saw no store, the code writes it on a hot path: said, not guessed.
    let hits = m("hits");
    assert_eq!(hits["class"], "lockless_atomic");
    assert!(
        hits["ambiguous"]
            .as_str()
            .unwrap()
            .contains("a hot path writes it at stats.c:14"),
        "{hits}"
    );
}

#[test]
fn guards_and_must_hold_hold_their_lock() {
    // fixtures/infer/guard.c: guard() to the end of its block, scoped_guard()
    // to the end of its statement, __must_hold() for the whole function;
    // static_branch_unlikely() and error paths as cold; container_of().
    let o = run_in(
        &fixtures(),
        &[
            "infer", "stats.h", "--struct", "stats", "--source", "guard.c", "--cc", "gcc -I.",
            "--format", "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(site(&j, "nr_items", 7)["locks"][0], "lock");
    assert_eq!(site(&j, "nr_items", 13)["locks"][0], "lock");
    assert!(site(&j, "misc", 14)["locks"].as_array().unwrap().is_empty());
    assert_eq!(site(&j, "created", 19)["locks"][0], "lock");
    assert_eq!(classes(&j)["nr_items"], "locked_write.lock");
    assert_eq!(classes(&j)["misc"], "lockless_atomic");
    // static_branch_unlikely() is an unlikely() branch.
    assert_eq!(site(&j, "failcnt", 28)["cold_because"], "unlikely()");
    assert_eq!(classes(&j)["failcnt"], "cold");
    // After an `err:` label: an error path.
    assert_eq!(site(&j, "created", 38)["cold_because"], "error path");
    assert_eq!(site(&j, "misc", 35)["heat"], "hot");
    // Through a local alias and container_of(); offsetof() is no access.
    let limit = site(&j, "limit", 50);
    assert_eq!(
        (limit["kind"].as_str(), limit["how"].as_str()),
        (Some("read"), Some("READ_ONCE"))
    );
    assert_eq!(site(&j, "hits", 50)["member"], "hits.counter");
    let items = member(&j, "items");
    assert!(
        items["sites"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["function"] != "stats_limit_of"),
        "{items}"
    );
}

#[test]
fn lock_wrappers_by_their_bodies() {
    // fixtures/infer/wrappers.c: no --lock-wrapper. A function that takes
    // the lock of the object it returns, one that takes the lock its
    // parameter points to, one that releases a lock it did not take; a
    // function out of sight whose result's lock is released later (it
    // took it, for its other callers too); one that drops and retakes its
    // caller's lock (no effect).
    let o = run_in(
        &fixtures(),
        &[
            "infer",
            "stats.h",
            "--struct",
            "stats",
            "--source",
            "wrappers.c",
            "--cc",
            "gcc -I.",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let locks = |m: &str, line: u64| site(&j, m, line)["locks"].clone();
    assert_eq!(locks("nr_items", 31), serde_json::json!(["lock"]));
    assert_eq!(locks("misc", 33), serde_json::json!([]));
    assert_eq!(locks("created", 39), serde_json::json!(["lock"]));
    assert_eq!(locks("failcnt", 48), serde_json::json!(["lock"]));
    assert_eq!(locks("limit", 50), serde_json::json!([]));
    assert_eq!(locks("flags", 63), serde_json::json!([]));
    // What a caller shows of a callee whose body the unit has holds for
    // that caller only; of one out of sight, for its other callers too.
    assert_eq!(locks("created", 77), serde_json::json!(["lock"]));
    assert_eq!(locks("misc", 86), serde_json::json!([]));
    assert_eq!(locks("nr_items", 97), serde_json::json!(["lock"]));
    for (m, class) in [
        ("nr_items", "locked_write.lock"),
        ("created", "locked_write.lock"),
        ("failcnt", "locked_write.lock"),
        ("misc", "lockless_atomic"),
        ("flags", "lockless_atomic"),
    ] {
        assert_eq!(classes(&j)[m], class, "{m}");
    }
}

#[test]
fn accesses_through_a_cast_are_the_containers() {
    // fixtures/infer/casts.c: `b` cast to a `struct conn *` (by a
    // function whose body returns its parameter cast, or by
    // container_of()) points into a conn: `b->state` and
    // `mid_of(b)->mid_flags` are accesses of conn.m, which embeds both
    // structs; in a function that never casts `b` to a conn they are not.
    let o = run_in(
        &fixtures(),
        &[
            "infer", "casts.h", "--struct", "conn", "--source", "casts.c", "--cc", "gcc -I.",
            "--format", "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(site(&j, "m", 12)["member"], "m.b.state");
    assert_eq!(site(&j, "m", 12)["kind"], "write");
    assert_eq!(site(&j, "m", 13)["member"], "m.mid_flags");
    assert_eq!(site(&j, "m", 21)["member"], "m.b.refs");
    let m = member(&j, "m");
    assert!(
        m["sites"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["function"] != "base_only"),
        "{m}"
    );
    assert_eq!(classes(&j)["m"], "lockless_atomic");
    assert_eq!(classes(&j)["other"], "cold");
}

#[test]
fn an_address_handed_to_a_function_that_only_reads_through_it_is_read() {
    // fixtures/infer/readers.c: `&s->items` handed to functions whose
    // bodies only read through the pointer (directly, and through a
    // second such function) is read; handed to one that writes through
    // it, or keeps a copy of it, it may be written.
    // put_head hands it to a callback only under `unlikely()`.
    let o = run_in(
        &fixtures(),
        &[
            "infer",
            "stats.h",
            "--struct",
            "stats",
            "--source",
            "readers.c",
            "--cc",
            "gcc -I.",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let sites = member(&j, "items")["sites"].as_array().unwrap().clone();
    let kind = |how: &str| {
        sites
            .iter()
            .find(|s| s["how"] == how)
            .map(|s| s["kind"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("{how}: {sites:?}"))
    };
    assert_eq!(kind("first_is"), "read");
    assert_eq!(kind("count_front"), "read");
    assert_eq!(kind("reset_head"), "rmw");
    assert_eq!(kind("keep_head"), "rmw");
    // A hand-off to a release callback on a branch expected not taken
    // (`unlikely()`, the last put) makes no write; every time, it may.
    assert_eq!(kind("put_head"), "read");
    assert_eq!(kind("drop_head"), "rmw");
}

#[test]
fn each_operand_of_a_condition_runs_under_the_ones_before_it() {
    // fixtures/infer/conds.c: a read as the fifth operand of `&&` sits
    // under four branches (past the budget of three: warm, cold by its
    // class); as the second, under one (hot).
    let o = run_in(
        &fixtures(),
        &[
            "infer",
            "stats.h",
            "--struct",
            "stats",
            "--source",
            "conds.c",
            "--cc",
            "gcc -I.",
            "--hot",
            "stats_hot",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let limit = site(&j, "limit", 5);
    assert_eq!(limit["heat"], "warm", "{limit}");
    assert!(
        limit["cold_because"]
            .as_str()
            .unwrap()
            .starts_with("4 branches"),
        "{limit}"
    );
    let failcnt = site(&j, "failcnt", 7);
    assert_eq!(
        (failcnt["heat"].as_str(), failcnt["branches"].as_u64()),
        (Some("hot"), Some(1))
    );
    assert_eq!(classes(&j)["limit"], "cold");
    assert_eq!(classes(&j)["failcnt"], "read_mostly");
}

#[test]
fn a_store_skipped_when_the_member_holds_the_value_is_a_write_on_change() {
    // fixtures/infer/changes.c: `if (READ_ONCE(s->limit) != limit)
    // WRITE_ONCE(s->limit, limit);`, a store after `if (s->flags == i)
    // continue;` and after `if (s->parent == parent) return;` write only
    // when the value changes: read on the hot path, they are read-mostly
    // (flagged ambiguous: how often the value changes, the code does not
    // say). `s->misc += limit` under `!=` and `s->nr_items++` write on
    // every call.
    let o = run_in(
        &fixtures(),
        &[
            "infer",
            "stats.h",
            "--struct",
            "stats",
            "--source",
            "changes.c",
            "--cc",
            "gcc -I.",
            "--hot",
            "stats_change",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let got = classes(&j);
    for m in ["limit", "flags", "parent"] {
        assert_eq!(got[m], "read_mostly", "{m}: {j:#}");
        let v = member(&j, m);
        assert!(
            v["ambiguous"]
                .as_str()
                .is_some_and(|a| a.contains("only when its value changes")),
            "{v:#}"
        );
        assert!(
            v["sites"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["kind"] == "write" && s["on_change"] == true),
            "{v:#}"
        );
    }
    for m in ["misc", "nr_items"] {
        assert_eq!(got[m], "lockless_atomic", "{m}: {j:#}");
    }
}

#[test]
fn an_update_that_only_takes_back_what_a_slow_path_set_is_not_hot() {
    // fixtures/infer/drains.c: `s->failcnt -= min(s->failcnt, done)` on
    // every call, and `s->failcnt = n` only in a function the hot root
    // calls on an unlikely() branch: on the hot path the member holds
    // zero until that ran, and the update changes nothing. Its hot sites
    // become warm, on a slow path a hot root reaches: cold. `s->misc -=
    // done` writes on every call.
    let o = run_in(
        &fixtures(),
        &[
            "infer",
            "stats.h",
            "--struct",
            "stats",
            "--source",
            "drains.c",
            "--cc",
            "gcc -I.",
            "--hot",
            "stats_done",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let got = classes(&j);
    assert_eq!(got["failcnt"], "cold", "{j:#}");
    assert_eq!(got["misc"], "lockless_atomic", "{j:#}");
    let f = member(&j, "failcnt");
    assert!(
        f["sites"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["line"] == 15
                && s["heat"] == "warm"
                && s["cold_because"]
                    .as_str()
                    .is_some_and(|c| c.contains("takes back what the member holds"))),
        "{f:#}"
    );
}

#[test]
fn callbacks_slow_paths_printing_and_code_off_the_hot_roots() {
    // fixtures/infer/reach.c: a callback run under the lock of the function
    // it is handed to (through a second that passes it on); a slow path the
    // hot root calls only on an unlikely() branch; a handler and a folding
    // function no hot root reaches; a value only printed; __init code.
    let o = run_in(
        &fixtures(),
        &[
            "infer",
            "stats.h",
            "--struct",
            "stats",
            "--source",
            "reach.c",
            "--cc",
            "gcc -I.",
            "--hot",
            "stats_fast",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let got = classes(&j);
    let want = [
        ("lock", "locked_write.lock"),
        ("nr_items", "locked_write.lock"),
        ("items", "locked_write.lock"),
        ("hits", "lockless_atomic"),
        ("flags", "read_mostly"),
        ("misc", "cold"),
        ("limit", "cold"),
        ("parent", "cold"),
        ("failcnt", "cold"),
        ("created", "cold"),
    ];
    for (m, class) in want {
        assert_eq!(got[m], class, "{m}: {j:#}");
    }
    // The callback's write: hot, through the function that hands it over,
    // under the lock its callee holds at the pointer call.
    let nr = site(&j, "nr_items", 24);
    assert_eq!(nr["heat"], "hot");
    assert_eq!(nr["locks"][0], "lock");
    assert_eq!(nr["hot_via"], "stats_fast > stats_visit_add");
    // Called only on an unlikely() branch: not hot, but it runs.
    let slow = site(&j, "flags", 31);
    assert_eq!(
        (slow["heat"].as_str(), slow["cold_because"].as_str()),
        (
            Some("warm"),
            Some("a hot root calls it only on an unlikely() branch or error path (stats_fast > stats_slow)")
        )
    );
    // Read on the hot path, written only on its slow path: read-mostly,
    // flagged with both readings.
    let flags = member(&j, "flags");
    assert!(
        flags["ambiguous"]
            .as_str()
            .unwrap()
            .contains("read-mostly if that path is as rare as its name or branch says, written if it runs per operation"),
        "{flags:#}"
    );
    // Read only by a handler no hot root reaches: cold.
    assert_eq!(site(&j, "misc", 45)["heat"], "warm");
    assert_eq!(site(&j, "created", 44)["cold_because"], "printed");
    assert_eq!(
        site(&j, "failcnt", 57)["cold_because"],
        "__init/__cold code"
    );
}

#[test]
fn without_a_header_the_struct_comes_from_the_sources() {
    // The same verdicts and the same access file as with the header.
    let with_header = run_in(&fixtures(), STATS_ARGS);
    let mut args: Vec<&str> = STATS_ARGS.to_vec();
    args.remove(1); // stats.h
    let alone = run_in(&fixtures(), &args);
    assert!(alone.status.success(), "{}", stderr(&alone));
    assert_eq!(stdout(&alone), stdout(&with_header));
    // page_counter from mm/ alone: libclang's offsets are gcc's (the probe's DWARF).
    let (Some(mm), Some(tree)) = (kernel_mm(), kbuild_tree()) else {
        return;
    };
    let src = mm;
    let header = srctree(&tree).join("include/linux/page_counter.h");
    let t = tree.to_str().unwrap();
    let base = [
        "--struct",
        "page_counter",
        "--kbuild",
        t,
        "--source",
        "mm/page_counter.c",
        "--format",
        "json",
    ];
    let offsets = |o: &std::process::Output| -> Vec<(String, u64, u64)> {
        assert!(o.status.success(), "{}", stderr(o));
        json(o)["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["name"].as_str().unwrap().to_string(),
                    m["offset"].as_u64().unwrap(),
                    m["size"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let from_clang = offsets(&run_in(src, &[&["infer"][..], &base].concat()));
    let from_gcc = offsets(&run_in(
        src,
        &[&["infer", header.to_str().unwrap()][..], &base].concat(),
    ));
    assert_eq!(from_clang, from_gcc);
    assert!(
        from_gcc.iter().any(|(n, o, _)| n == "parent" && *o >= 128),
        "{from_gcc:?}"
    );
}

#[test]
fn flags_come_from_a_compilation_database() {
    // The include directory is relative to the entry's directory.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("inc")).unwrap();
    for f in ["stats.c", "stats.h"] {
        std::fs::copy(fixtures().join(f), d.join(f)).unwrap();
    }
    std::fs::copy(
        fixtures().join("mini_kernel.h"),
        d.join("inc/mini_kernel.h"),
    )
    .unwrap();
    let db = serde_json::json!([{
        "directory": d.to_str().unwrap(),
        "file": "stats.c",
        "command": "gcc -Iinc -c stats.c -o stats.o",
    }]);
    std::fs::write(d.join("compile_commands.json"), db.to_string()).unwrap();
    let o = run_in(
        d,
        &[
            "infer",
            "--struct",
            "stats",
            "--source",
            "stats.c",
            "--compile-commands",
            "compile_commands.json",
            "--hot",
            "stats_add",
            "--hot",
            "stats_remove",
            "--cold",
            "stats_set_limit",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let s = score(
        "stats (compile_commands.json)",
        STATS_TRUTH,
        &classes(&json(&o)),
    );
    assert!(
        s.values().all(|(_, fp, fn_)| *fp == 0 && *fn_ == 0),
        "{s:?}"
    );
    // Without the database's -Iinc the header is missing: a located error.
    let o = run_in(
        d,
        &[
            "infer", "--struct", "stats", "--source", "stats.c", "--cc", "gcc",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("mini_kernel.h"), "{}", stderr(&o));
}

#[test]
fn a_profile_that_measures_rare_writes_decides_the_seed_like_case() {
    // nr_items is written under the lock on every add (the code), but the
    // profile measures 5 stores in 1005 samples: read-mostly, as max_seq is.
    // flags: the code writes it on the hot path, the profile saw no store
    // in a run that recorded stores: they disagree, and it says so.
    let mut args = STATS_ARGS.to_vec();
    args.extend(["--perf-mem", "stats_rare.txt", "--format", "json"]);
    let o = run_in(&fixtures(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let m = |n: &str| member(&j, n).clone();
    let nr = m("nr_items");
    assert_eq!(nr["class"], "read_mostly", "{nr}");
    assert!(nr["ambiguous"].is_null(), "{nr}");
    assert!(
        nr["reason"]
            .as_str()
            .unwrap()
            .contains("measures the writes at stats.c:"),
        "{nr}"
    );
    let flags = m("flags");
    assert_eq!(flags["class"], "lockless_atomic");
    assert!(
        flags["ambiguous"]
            .as_str()
            .unwrap()
            .contains("saw no store"),
        "{flags}"
    );
}

#[test]
fn the_socket_lock_by_its_owner() {
    // fixtures/infer/sock.c: a connection embedding a socket whose lock is
    // taken with lock_sock() (process context) and bh_lock_sock() (its
    // spinlock, softirq); a helper called under both and from a function
    // of unknown context; a callback run inside release_sock(); a slow
    // path by its name; a root the file does not define.
    let o = run_in(
        &fixtures(),
        &[
            "infer",
            "sock.h",
            "--struct",
            "conn",
            "--source",
            "sock.c",
            "--cc",
            "gcc -I.",
            "--hot",
            "conn_sendmsg",
            "--hot",
            "conn_rcv",
            "--hot",
            "conn_poll",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: --hot conn_poll: not defined in the given sources, left out"),
        "{}",
        stderr(&o)
    );
    let j = json(&o);
    let got = classes(&j);
    for (m, class) in [
        ("sk", "locked_write.sk_lock"),
        ("snd_nxt", "locked_write.sk_lock"),
        ("rcv_nxt", "locked_write.sk_lock"),
        ("sent", "locked_write.sk_lock"),
        ("window_clamp", "read_mostly"),
        ("mss", "read_mostly"),
    ] {
        assert_eq!(got[m], class, "{m}: {j:#}");
    }
    // bh_lock_sock's spinlock is named by the socket lock it belongs to.
    assert_eq!(site(&j, "rcv_nxt", 32)["locks"][0], "sk_lock");
    // release_cb runs under release_sock's lock.
    let cb = site(&j, "sent", 45);
    assert_eq!(cb["locks"][0], "sk_lock");
    assert_eq!(
        cb["hot_via"],
        "conn_sendmsg > release_sock > conn_release_cb"
    );
    // Written only on a slow path the hot root reaches: both readings.
    let mss = member(&j, "mss");
    assert!(
        mss["ambiguous"]
            .as_str()
            .unwrap()
            .contains("written if it runs per operation"),
        "{mss:#}"
    );
    // No root defined at all: an error.
    let o = run_in(
        &fixtures(),
        &[
            "infer",
            "sock.h",
            "--struct",
            "conn",
            "--source",
            "sock.c",
            "--cc",
            "gcc -I.",
            "--hot",
            "conn_poll",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no --hot root is defined"),
        "{}",
        stderr(&o)
    );
}
