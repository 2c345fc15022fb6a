//! `cachelayout audit` end to end: the synthetic tree of
//! `fixtures/audit` (20 structs, false sharing planted in 3: `net_queue`,
//! `conn`, `page_pool_s`; one whose classes only a profile could settle:
//! `net_timer`; one whose lockless writer runs off the fast paths:
//! `net_flow`), compiled with `--cc 'gcc -Iinclude'`: the ranking, the
//! cache, the series applied with `git am` and each patched header
//! compiled again with gcc; then a smoke test on Debian's 6.1 sources.

use crate::support::{repo, run_in, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Command;

const PLANTED: [&str; 3] = ["conn", "net_queue", "page_pool_s"];

fn fixture() -> PathBuf {
    repo().join("cli/tests/fixtures/audit")
}

/// The fixture copied into a new directory, with its own audit cache.
pub(super) fn tree() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("tree");
    copy_dir(&fixture(), &t);
    (d, t)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

fn audit(dir: &Path, cache: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "audit",
        "--cc",
        "gcc -Iinclude",
        "--roots",
        "roots.toml",
        "include",
        "--cache-dir",
        cache.to_str().unwrap(),
    ];
    args.extend(extra);
    run_in(dir, &args)
}

/// The audit of fixture `name` (cli/tests/fixtures/NAME, copied), as JSON.
fn audit_fixture_json(name: &str) -> serde_json::Value {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("tree");
    copy_dir(&repo().join("cli/tests/fixtures").join(name), &t);
    let o = audit(&t, &d.path().join("cache"), &["--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Struct `name`'s finding in an audit's JSON, from any list.
fn finding(j: &serde_json::Value, name: &str) -> serde_json::Value {
    ["ranked", "clean", "ambiguous"]
        .iter()
        .flat_map(|k| j[*k].as_array().unwrap())
        .find(|f| f["struct"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name}: {j}"))
}

fn names(list: &serde_json::Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|f| f["struct"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_three_planted_structs_rank_first_with_their_evidence() {
    let (d, t) = tree();
    let o = audit(&t, &d.path().join("cache"), &["--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ranked = names(&j["ranked"]);
    let mut first: Vec<String> = ranked.iter().take(3).cloned().collect();
    first.sort();
    assert_eq!(first, PLANTED, "ranked: {ranked:?}");
    // Every other conflict is one no hot code writes: exposure 0, never patched.
    for f in j["ranked"].as_array().unwrap().iter().skip(3) {
        assert_eq!(f["exposure"], 0, "{f}");
    }
    for f in j["ranked"].as_array().unwrap().iter().take(3) {
        assert!(f["exposure"].as_u64().unwrap() > 0, "{f}");
    }
    // net_timer's expires is written under its lock on one hot path and
    // read without it on another, each under no branch: by the static
    // estimate it is written as often as read, so the written reading
    // ranks it (no conflict), and the report says what the other costs.
    assert!(names(&j["ambiguous"]).is_empty(), "{j}");
    let timer = j["clean"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["struct"] == "net_timer")
        .unwrap_or_else(|| panic!("net_timer not clean: {j}"));
    let reading = timer["reading"].as_str().unwrap();
    assert!(
        reading
            .contains("ranked by the reading the evidence favours: every undecided member written")
            && reading.contains("every undecided member read-mostly: conflict, cost "),
        "{reading}"
    );
    let clean = names(&j["clean"]);
    for s in [
        "net_table",
        "net_ring",
        "mm_lru",
        "net_dev_stats",
        "mm_counter",
    ] {
        assert!(clean.contains(&s.to_string()), "{s} not clean: {clean:?}");
    }
    // Pass 1 leaves out a one-line struct without an atomic or lock sharing
    // its line, and what no audited source uses.
    let all: Vec<String> = ["ranked", "ambiguous", "clean", "not_analysed"]
        .iter()
        .flat_map(|k| names(&j[*k]))
        .collect();
    for s in [
        "net_proto",
        "net_cfg",
        "mm_node",
        "net_unused",
        "mm_unnamed",
    ] {
        assert!(!all.contains(&s.to_string()), "{s} analysed: {all:?}");
    }
    // The evidence: the writer's and the victims' sites, relative to the tree.
    let conn = j["ranked"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["struct"] == "conn")
        .unwrap();
    let c = &conn["conflicts"][0];
    assert_eq!(c["line"], 0);
    assert_eq!(c["writers"][0]["member"], "rcv_nxt");
    assert_eq!(c["writers"][0]["class"], "lockless_atomic");
    let cite = c["writers"][0]["evidence"][0].as_str().unwrap();
    assert!(
        cite.starts_with("net/rx.c:13 net_receive write WRITE_ONCE no lock"),
        "{cite}"
    );
    let victims: Vec<&str> = c["victims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["member"].as_str().unwrap())
        .collect();
    assert_eq!(victims, ["window_clamp", "mss"]);
    assert_eq!(conn["defined_at"], "include/syn/net.h:16");
    // The progress lines: one per unit parsed, one per struct.
    let err = stderr(&o);
    assert!(err.contains("[1/3] net/rx.c (7 struct(s))"), "{err}");
    assert!(err.contains("] struct conn\n"), "{err}");
}

#[test]
fn a_warm_rerun_reads_every_unit_from_the_cache() {
    let (d, t) = tree();
    let cache = d.path().join("cache");
    let cold = audit(&t, &cache, &[]);
    assert!(cold.status.success(), "{}", stderr(&cold));
    let warm = audit(&t, &cache, &[]);
    assert!(warm.status.success(), "{}", stderr(&warm));
    // The same report, but for the count of units from the cache in its head.
    let body = |o: &std::process::Output| stdout(o).split_once('\n').map(|(_, b)| b.to_string());
    assert_eq!(body(&cold), body(&warm));
    let err = stderr(&warm);
    assert!(err.contains(" 0 written"), "{err}");
    assert!(!err.contains("net/rx.c"), "a unit was parsed again: {err}");
    assert!(
        stdout(&warm).contains("3 translation units (3 from the cache)"),
        "{}",
        stdout(&warm)
    );
    // An edited source is parsed again.
    let rx = t.join("net/rx.c");
    let text = std::fs::read_to_string(&rx).unwrap();
    std::fs::write(&rx, format!("{text}\n/* edited */\n")).unwrap();
    let edited = audit(&t, &cache, &[]);
    assert!(
        stderr(&edited).contains("net/rx.c (7 struct(s))"),
        "{}",
        stderr(&edited)
    );
    assert!(
        stdout(&edited).contains("(2 from the cache)"),
        "{}",
        stdout(&edited)
    );
}

pub(super) fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=Audit Test",
            "-c",
            "user.email=audit@example.org",
        ])
        .args(args)
        .env("GIT_AUTHOR_NAME", "Audit Test")
        .env("GIT_AUTHOR_EMAIL", "audit@example.org")
        .env("GIT_COMMITTER_NAME", "Audit Test")
        .env("GIT_COMMITTER_EMAIL", "audit@example.org")
        .output()
        .expect("git runs")
}

/// `audit --series N -o series` on the fixture tree `t` (a git repository
/// with its base committed), with a git identity for the mails.
fn audit_series(t: &Path, cache: &Path, n: &str, series: &Path) -> std::process::Output {
    assert!(git(t, &["init", "-q"]).status.success());
    assert!(git(t, &["add", "-A"]).status.success());
    assert!(git(t, &["commit", "-qm", "base"]).status.success());
    Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(t)
        .env("XDG_CACHE_HOME", crate::support::process_cache())
        .args([
            "audit",
            "--cc",
            "gcc -Iinclude",
            "--roots",
            "roots.toml",
            "include",
            "--cache-dir",
            cache.to_str().unwrap(),
            "--series",
            n,
            "-o",
            series.to_str().unwrap(),
        ])
        .env("GIT_AUTHOR_NAME", "Audit Test")
        .env("GIT_AUTHOR_EMAIL", "audit@example.org")
        .output()
        .unwrap()
}

/// The file names in a series directory, sorted (the cover letter first).
pub(super) fn series_files(series: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(series)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    files
}

#[test]
fn the_series_patches_the_planted_structs_only_and_applies_with_git_am() {
    let (d, t) = tree();
    let series = d.path().join("series");
    let o = audit_series(&t, &d.path().join("cache"), "20", &series);
    assert!(o.status.success(), "{}", stderr(&o));
    let files = series_files(&series);
    assert_eq!(files.len(), 4, "{files:?}");
    assert_eq!(files[0], "0000-cover-letter.patch");
    let mut patched: Vec<&str> = Vec::new();
    for f in &files[1..] {
        let s = PLANTED
            .iter()
            .find(|p| f.contains(&format!("struct-{p}-")))
            .unwrap_or_else(|| panic!("{f} patches no planted struct"));
        patched.push(s);
    }
    patched.sort();
    assert_eq!(patched, PLANTED);
    let cover = std::fs::read_to_string(series.join(&files[0])).unwrap();
    assert!(cover.contains("Subject: [PATCH 0/3] "), "{cover}");
    // net_timer is ranked by the written reading of its undecided member
    // (no conflict): neither patched nor listed apart.
    assert!(
        !cover.contains("net_timer"),
        "net_timer is no longer ambiguous: {cover}"
    );
    let first = std::fs::read_to_string(series.join(&files[1])).unwrap();
    assert!(first.contains("Subject: [PATCH 1/3] "), "{first}");
    assert!(first.contains("configurations checked"), "{first}");
    assert!(first.contains("tree safety: "), "{first}");
    assert!(first.contains("Found by cachelayout audit"), "{first}");
    // git am on the clean tree, then every header compiles and the planted
    // structs keep their members.
    let mut am = vec!["am".to_string()];
    am.extend(
        files[1..]
            .iter()
            .map(|f| series.join(f).display().to_string()),
    );
    let am: Vec<&str> = am.iter().map(String::as_str).collect();
    let applied = git(&t, &am);
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let log = git(&t, &["log", "--format=%s"]);
    assert_eq!(String::from_utf8_lossy(&log.stdout).lines().count(), 4);
    for h in ["include/syn/net.h", "include/syn/mm.h"] {
        let c = Command::new("gcc")
            .current_dir(&t)
            .args(["-fsyntax-only", "-Iinclude", "-x", "c", h])
            .output()
            .unwrap();
        assert!(
            c.status.success(),
            "{h}: {}",
            String::from_utf8_lossy(&c.stderr)
        );
    }
    for src in ["net/tx.c", "net/rx.c", "mm/alloc.c"] {
        let c = Command::new("gcc")
            .current_dir(&t)
            .args(["-fsyntax-only", "-Iinclude", src])
            .output()
            .unwrap();
        assert!(
            c.status.success(),
            "{src}: {}",
            String::from_utf8_lossy(&c.stderr)
        );
    }
    // The patched tree has nothing left to patch.
    let again = audit(&t, &d.path().join("cache"), &["--format", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    let left: Vec<&serde_json::Value> = j["ranked"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["exposure"].as_u64() > Some(0))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// The spread fixture (`fixtures/audit_spread`): `flow` and `flow_packed`
/// hold the same members, only `flow` spreads what its fast path reads
/// over three lines; nothing is written on the fast path.
pub(super) fn spread_tree() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("tree");
    copy_dir(&repo().join("cli/tests/fixtures/audit_spread"), &t);
    (d, t)
}

#[test]
fn a_spread_fast_path_ranks_and_its_patch_packs_it() {
    let (d, t) = spread_tree();
    let cache = d.path().join("cache");
    let o = audit(&t, &cache, &["--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(names(&j["ranked"]), ["flow"], "{j}");
    let flow = &j["ranked"][0];
    assert_eq!(flow["status"], "spread");
    assert_eq!(flow["conflicts"].as_array().unwrap().len(), 0);
    let p = &flow["paths"][0];
    assert_eq!(p["root"], "flow_rx");
    // key at 0, hash_rnd at 72, mtu at 144: lines 0, 1 and 2, for 20 bytes.
    assert_eq!(
        (p["lines"].as_u64(), p["fewest"].as_u64()),
        (Some(3), Some(1)),
        "{p}"
    );
    assert_eq!(p["bytes"], 20);
    assert_eq!(flow["excess_lines"], 2);
    assert_eq!(flow["misses"], 2);
    assert!(
        names(&j["clean"]).contains(&"flow_packed".to_string()),
        "{j}"
    );
    // The table says why it ranks.
    let o = audit(&t, &cache, &[]);
    let table = stdout(&o);
    assert!(
        table.contains("hot path flow_rx: 3 lines for 20 B in 3 member(s), fewest 1 (2 past it)"),
        "{table}"
    );
    // The series packs it: one patch, `git am` on the clean tree, and the
    // patched tree has nothing left to rank.
    let series = d.path().join("series");
    let o = audit_series(&t, &cache, "3", &series);
    assert!(o.status.success(), "{}", stderr(&o));
    let files = series_files(&series);
    assert_eq!(files.len(), 2, "{files:?}");
    let cover = std::fs::read_to_string(series.join(&files[0])).unwrap();
    assert!(
        cover.contains(
            "Subject: [PATCH 0/1] Pack the fast paths of 1 struct(s) on fewer cache lines"
        ),
        "{cover}"
    );
    let patch = std::fs::read_to_string(series.join(&files[1])).unwrap();
    assert!(files[1].contains("struct-flow-"), "{files:?}");
    assert!(
        patch.contains("- flow_rx: 3 lines for 20 bytes in 3 members (fewest 1)"),
        "{patch}"
    );
    let applied = git(&t, &["am", series.join(&files[1]).to_str().unwrap()]);
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let c = Command::new("gcc")
        .current_dir(&t)
        .args(["-fsyntax-only", "-Iinclude", "src/flow.c"])
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    let again = audit(&t, &cache, &["--format", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(names(&j["ranked"]), Vec::<String>::new(), "{j}");
    assert!(names(&j["clean"]).contains(&"flow".to_string()), "{j}");
}

#[test]
fn a_series_never_writes_into_a_directory_with_files() {
    let (d, t) = tree();
    let series = d.path().join("series");
    std::fs::create_dir(&series).unwrap();
    std::fs::write(series.join("keep.txt"), "mine").unwrap();
    let o = audit(
        &t,
        &d.path().join("cache"),
        &["--series", "1", "-o", series.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the series directory is not empty"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(series.join("keep.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn roots_file_errors_say_where() {
    let (d, t) = tree();
    std::fs::write(
        t.join("bad.toml"),
        "[net]\nsources = [\"net/*.c\"]\nhott = [\"net_xmit\"]\n",
    )
    .unwrap();
    let o = run_in(
        &t,
        &[
            "audit",
            "--cc",
            "gcc -Iinclude",
            "--roots",
            "bad.toml",
            "include",
            "--cache-dir",
            d.path().join("cache").to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with(
            "bad.toml:3:1: error: unknown key `hott` in [net]; help: did you mean `hot`?"
        ),
        "{err}"
    );
    std::fs::write(t.join("none.toml"), "[net]\nsources = [\"nothing/*.c\"]\n").unwrap();
    let o = run_in(
        &t,
        &[
            "audit",
            "--cc",
            "gcc -Iinclude",
            "--roots",
            "none.toml",
            "include",
            "--no-cache",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("none.toml:1:1: error: no file under"),
        "{}",
        stderr(&o)
    );
}

/// Debian's 6.1 mm/, bounded: `zone` (mmzone.h) from page_alloc.c,
/// vmstat.c and compaction.c with the allocator's roots, and
/// `page_counter` from page_counter.c and memcontrol.c with memcg's. zone's
/// compaction cursors, written without a lock on every compaction, share a
/// line with members compaction reads: it ranks first, and its patch applies
/// with `git am` to the 6.1 header, checkpatch-clean. page_counter is
/// already separated in this tree (its CACHELINE_PADDING lines): no conflict.
#[test]
fn kernel_smoke_zone_and_page_counter_from_6_1() {
    // An audit of real sources: CACHELAYOUT_SWEEPS=full only.
    if !crate::support::sweep::full() {
        println!("CACHELAYOUT_SWEEPS=full runs the audit of Debian's 6.1 mm/");
        return;
    }
    let (Some(src), Some(kbuild)) = (
        crate::support::kernel_source(),
        crate::support::kbuild_tree(),
    ) else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("roots.toml"),
        "[alloc]\nsources = [\"mm/page_alloc.c\", \"mm/vmstat.c\", \"mm/compaction.c\"]\n\
hot = [\"get_page_from_freelist\", \"free_unref_page\", \"free_unref_page_list\", \"__free_pages_ok\", \
\"compact_zone\", \"try_to_compact_pages\", \"refresh_cpu_vm_stats\"]\n\
lock_wrappers = [\"compact_lock_irqsave\"]\n\n\
[memcg]\nsources = [\"mm/page_counter.c\", \"mm/memcontrol.c\"]\n\
hot = [\"page_counter_try_charge\", \"page_counter_charge\", \"page_counter_uncharge\", \
\"try_charge_memcg\", \"mem_cgroup_uncharge_list\", \"mem_cgroup_calculate_protection\"]\n",
    )
    .unwrap();
    let common = crate::support::srctree(&kbuild).join("include/linux");
    let series = d.path().join("series");
    let t0 = std::time::Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(d.path())
        .env("XDG_CACHE_HOME", crate::support::process_cache())
        .args([
            "audit",
            "--kbuild",
            kbuild.to_str().unwrap(),
            "--source-tree",
        ])
        .arg(src)
        .args(["--roots", "roots.toml", "--budget", "8", "--cache-dir"])
        .arg(d.path().join("cache"))
        .arg(common.join("mmzone.h"))
        .arg(common.join("page_counter.h"))
        .args(["--format", "json", "--series", "1", "-o"])
        .arg(&series)
        .env("GIT_AUTHOR_NAME", "Audit Test")
        .env("GIT_AUTHOR_EMAIL", "audit@example.org")
        .output()
        .unwrap();
    eprintln!("kernel smoke: {:.1} s", t0.elapsed().as_secs_f64());
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let zone = &j["ranked"][0];
    assert_eq!(zone["struct"], "zone", "{}", stdout(&o));
    assert!(zone["exposure"].as_u64().unwrap() > 0, "{zone}");
    assert_eq!(
        zone["defined_at"].as_str().unwrap().split(':').next(),
        Some("include/linux/mmzone.h")
    );
    let writers: Vec<&str> = zone["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["writers"].as_array().unwrap())
        .map(|w| w["member"].as_str().unwrap())
        .collect();
    assert!(writers.contains(&"compact_cached_free_pfn"), "{writers:?}");
    assert!(zone.to_string().contains("mm/compaction.c:"), "{zone}");
    assert!(
        names(&j["clean"]).contains(&"page_counter".to_string()),
        "{}",
        stdout(&o)
    );
    // The patch applies with git am to the 6.1 header and checkpatch finds nothing.
    let repo = d.path().join("clean");
    std::fs::create_dir_all(repo.join("include/linux")).unwrap();
    std::fs::copy(
        src.join("include/linux/mmzone.h"),
        repo.join("include/linux/mmzone.h"),
    )
    .unwrap();
    assert!(git(&repo, &["init", "-q"]).status.success());
    assert!(git(&repo, &["add", "-A"]).status.success());
    assert!(git(&repo, &["commit", "-qm", "6.1"]).status.success());
    let patch = std::fs::read_dir(&series)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("0001-"))
        .expect("a patch for zone");
    let applied = git(&repo, &["am", patch.to_str().unwrap()]);
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let cp = Command::new("perl")
        .current_dir(src)
        .args([
            "scripts/checkpatch.pl",
            "--no-tree",
            "--no-signoff",
            "--terse",
        ])
        .arg(&patch)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&cp.stdout);
    let findings: Vec<&str> = report
        .lines()
        .filter(|l| l.contains(": ERROR:") || l.contains(": WARNING:"))
        .collect();
    assert!(findings.is_empty(), "checkpatch: {report}");
}

/// A data-type profile settles what the sources leave open: `expires`,
/// written under the lock and read without it, is read-mostly by its
/// write fraction, so `net_timer` has a conflict (its lockless `fires`)
/// instead of being listed apart.
#[test]
fn a_data_type_profile_settles_an_ambiguous_struct() {
    let (d, t) = tree();
    let o = audit(
        &t,
        &d.path().join("cache"),
        &["--perf-mem", "net_timer_types.txt", "--format", "json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(names(&j["ambiguous"]).is_empty(), "{}", stdout(&o));
    let timer = j["ranked"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["struct"] == "net_timer")
        .unwrap_or_else(|| panic!("net_timer not ranked: {}", stdout(&o)));
    let victims: Vec<&str> = timer["conflicts"][0]["victims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["member"].as_str().unwrap())
        .collect();
    assert_eq!(victims, ["expires"]);
    // The planted three still rank first.
    let mut first: Vec<String> = names(&j["ranked"]).into_iter().take(3).collect();
    first.sort();
    assert_eq!(first, PLANTED);
}

/// A unit libclang stops on (a missing header) is left out with its error,
/// and a second run reads the error from the cache instead of parsing it.
#[test]
fn a_unit_that_does_not_parse_is_left_out_once() {
    let (d, t) = tree();
    std::fs::write(
        t.join("net/broken.c"),
        "#include <syn/net.h>\n#include <no/such.h>\nint f(struct conn *c) { return c->mss; }\n",
    )
    .unwrap();
    let cache = d.path().join("cache");
    let first = audit(&t, &cache, &[]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(
        stdout(&first).contains("net/broken.c: left out:"),
        "{}",
        stdout(&first)
    );
    assert!(
        stderr(&first).contains("net/broken.c ("),
        "{}",
        stderr(&first)
    );
    let second = audit(&t, &cache, &[]);
    assert!(
        stdout(&second).contains("net/broken.c: left out:"),
        "{}",
        stdout(&second)
    );
    assert!(
        !stderr(&second).contains("net/broken.c ("),
        "{}",
        stderr(&second)
    );
    assert!(
        stdout(&second).contains("(4 from the cache)"),
        "{}",
        stdout(&second)
    );
}

/// The flags may come from a compilation database instead of `--cc`.
#[test]
fn a_compilation_database_gives_the_flags() {
    let (d, t) = tree();
    let dir = t.display().to_string();
    let entries: Vec<String> = ["net/tx.c", "net/rx.c", "mm/alloc.c"]
        .iter()
        .map(|f| {
            format!(
                r#"{{"directory": "{dir}", "command": "gcc -Iinclude -c {f} -o x.o", "file": "{f}"}}"#
            )
        })
        .collect();
    std::fs::write(
        t.join("compile_commands.json"),
        format!("[{}]\n", entries.join(",\n")),
    )
    .unwrap();
    let o = run_in(
        &t,
        &[
            "audit",
            "--compile-commands",
            "compile_commands.json",
            "--roots",
            "roots.toml",
            "include",
            "--format",
            "json",
            "--cache-dir",
            d.path().join("cache").to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut first: Vec<String> = names(&j["ranked"]).into_iter().take(3).collect();
    first.sort();
    assert_eq!(first, PLANTED);
}

#[test]
fn a_miss_costs_what_the_struct_lives_as_and_a_read_only_singleton_is_not_patched() {
    // fixtures/audit_lifetime: three structs whose fast path is spread
    // alike (3 lines where 1 would do); one allocated per connection, one
    // a static read-only table, one of unknown lifetime.
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("tree");
    copy_dir(&repo().join("cli/tests/fixtures/audit_lifetime"), &t);
    let cache = d.path().join("cache");
    let o = audit(&t, &cache, &["--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        names(&j["ranked"]),
        ["life_conn", "life_flow", "life_table"],
        "{j}"
    );
    let got: Vec<(u64, u64, &str)> = j["ranked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["misses"].as_u64().unwrap(),
                f["cost"].as_u64().unwrap(),
                f["lifetime"]["kind"].as_str().unwrap(),
            )
        })
        .collect();
    // 2 lines past the fewest each: a cold fetch (2) per line of the
    // per-object struct, 1 for the unknown, 0 for the cached table.
    assert_eq!(
        got,
        [(2, 4, "per_object"), (2, 2, "unknown"), (2, 0, "singleton")],
        "{j}"
    );
    assert!(
        j["ranked"][0]["lifetime"]["evidence"]
            .as_str()
            .unwrap()
            .contains("sizeof(*c)"),
        "{j}"
    );
    // The series patches the two whose lines cost something.
    let series = d.path().join("series");
    let o = audit_series(&t, &cache, "3", &series);
    assert!(o.status.success(), "{}", stderr(&o));
    let files = series_files(&series);
    assert_eq!(files.len(), 3, "{files:?}");
    assert!(
        files
            .iter()
            .all(|f| !f.contains("life-table") && !f.contains("life_table")),
        "{files:?}"
    );
}

#[test]
fn a_slab_cache_made_outside_the_audited_sources_makes_a_struct_per_object() {
    // fixtures/audit_lifetime with one more file that the roots do not
    // audit: life_flow's slab cache is made there, so its lines are cold
    // fetches (2 each), not of unknown lifetime (1). A cache in a header
    // or a comment, or a plain sizeof, is no such evidence.
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("tree");
    copy_dir(&repo().join("cli/tests/fixtures/audit_lifetime"), &t);
    std::fs::create_dir_all(t.join("kernel")).unwrap();
    std::fs::write(
        t.join("kernel/flows.c"),
        "#include <life/life.h>\n\
         /* KMEM_CACHE(life_table, 0) */\n\
         static void *flow_cachep;\n\
         void flows_init(void)\n{\n\
         \tflow_cachep = KMEM_CACHE(life_flow, 0);\n}\n\
         unsigned long table_bytes(void) { return sizeof(struct life_table); }\n",
    )
    .unwrap();
    std::fs::write(
        t.join("kernel/flows.h"),
        "#define TABLES KMEM_CACHE(life_table, 0)\n",
    )
    .unwrap();
    let o = audit(&t, &d.path().join("cache"), &["--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let of = |name: &str| {
        j["ranked"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["struct"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name}: {j}"))
    };
    let flow = of("life_flow");
    assert_eq!(flow["lifetime"]["kind"], "per_object", "{flow}");
    assert_eq!(flow["cost"], 4, "{flow}");
    assert!(
        flow["lifetime"]["evidence"]
            .as_str()
            .unwrap()
            .starts_with("kernel/flows.c:6: KMEM_CACHE(life_flow, ...)"),
        "{flow}"
    );
    assert_eq!(of("life_table")["lifetime"]["kind"], "singleton", "{j}");
}

/// An audit of Debian's 6.1 over an mm subsystem and a net subsystem (three
/// units each, the example roots those units define, the headers of the
/// structs both sides use): an mm root and a net root whose code shares no
/// fast path do not show the same path in any struct, and no singleton
/// that hot code only reads is patched. Slow (libclang over six large
/// units): with CACHELAYOUT_SWEEPS=full.
#[test]
fn kernel_sweep_each_root_has_its_own_path_in_6_1() {
    if !crate::support::sweep::full() {
        eprintln!("note: skipped: set CACHELAYOUT_SWEEPS=full");
        return;
    }
    let Some(src) = crate::support::kernel_source() else {
        return;
    };
    let kbuild = crate::support::kbuild_tree().unwrap();
    let d = tempfile::tempdir().unwrap();
    let roots = d.path().join("roots.toml");
    std::fs::write(
        &roots,
        r#"[mm]
sources = ["mm/page_alloc.c", "mm/swap.c", "mm/memcontrol.c"]
hot = ["get_page_from_freelist", "free_unref_page", "free_unref_page_list",
       "folio_add_lru", "try_charge_memcg", "mem_cgroup_uncharge_list"]

[net]
sources = ["net/core/dev.c", "net/ipv4/tcp.c", "net/ipv4/tcp_output.c",
           "net/ipv4/route.c", "net/ipv4/icmp.c", "net/core/net_namespace.c"]
hot = ["tcp_sendmsg", "tcp_write_xmit", "__dev_queue_xmit", "dev_hard_start_xmit",
       "__netif_receive_skb_core", "napi_gro_receive"]
"#,
    )
    .unwrap();
    let common = crate::support::srctree(&kbuild).join("include");
    let headers: Vec<PathBuf> = [
        "linux/mm_types.h",
        "linux/mmzone.h",
        "linux/memcontrol.h",
        "linux/sched.h",
        "linux/skbuff.h",
        "linux/netdevice.h",
        "net/sock.h",
        "net/dst.h",
        "net/dst_ops.h",
    ]
    .iter()
    .map(|h| common.join(h))
    .collect();
    let o = Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(d.path())
        .env("XDG_CACHE_HOME", crate::support::process_cache())
        .args([
            "audit",
            "--kbuild",
            kbuild.to_str().unwrap(),
            "--source-tree",
        ])
        .arg(src)
        .arg("--roots")
        .arg(&roots)
        .args(["--budget", "100", "--format", "json", "--cache-dir"])
        .arg(d.path().join("cache"))
        .args(&headers)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let stats = |f: &serde_json::Value, root: &str| {
        f["paths"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["root"] == root && p["members"].as_u64() > Some(0))
            .map(|p| (p["lines"].clone(), p["bytes"].clone(), p["members"].clone()))
    };
    for sec in ["ranked", "ambiguous", "clean"] {
        for f in j[sec].as_array().unwrap() {
            let (mm, net) = (stats(f, "free_unref_page"), stats(f, "dev_hard_start_xmit"));
            assert!(
                mm.is_none() || mm != net,
                "struct {}: the same path from an allocator root and a transmit root",
                f["struct"]
            );
        }
    }
    for f in j["ranked"].as_array().unwrap() {
        let read_only_singleton = f["lifetime"]["kind"] == "singleton"
            && f["conflicts"].as_array().unwrap().is_empty()
            && f["paths"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["writes"] == false);
        if read_only_singleton {
            assert_eq!(f["cost"], 0, "{f}");
        }
    }
    // How each struct lives, by the nearest evidence: route.c's file-scope
    // `ipv4_dst_ops`, not the copies inside each namespace (net_namespace.c
    // allocates `struct net`, which embeds them); and
    // icmp.c's `DEFINE_PER_CPU(struct sock *, ...)` is a pointer per CPU,
    // no file-scope `sock`.
    let find = |name: &str| finding(&j, name);
    let ops = find("dst_ops");
    assert_eq!(ops["lifetime"]["kind"], "singleton", "{ops}");
    assert!(
        ops["lifetime"]["evidence"]
            .as_str()
            .unwrap()
            .contains("ipv4_dst_ops"),
        "{ops}"
    );
    let sock = find("sock");
    assert_ne!(sock["lifetime"]["kind"], "singleton", "{sock}");
}

#[test]
fn a_conflict_line_counts_the_reads_of_the_bytes_on_it() {
    // fixtures/audit_line: the drop counter shares line 2 with the end of
    // the embedded configuration (`cfg.created`, set at init); the fast
    // path reads `cfg.mtu`, on line 0. The line is still listed (the
    // classes put a writer next to read-mostly bytes) but costs no miss.
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("tree");
    copy_dir(&repo().join("cli/tests/fixtures/audit_line"), &t);
    let cache = d.path().join("cache");
    let o = audit(&t, &cache, &["--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let all: Vec<&serde_json::Value> = ["ranked", "clean", "ambiguous"]
        .iter()
        .flat_map(|k| j[*k].as_array().unwrap())
        .collect();
    let port = all
        .iter()
        .find(|f| f["struct"] == "ln_port")
        .unwrap_or_else(|| panic!("{j}"));
    let line2: Vec<&serde_json::Value> = port["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["line"] == 2)
        .collect();
    assert_eq!(line2.len(), 1, "{port}");
    assert_eq!(line2[0]["misses"], 0, "{port}");
    let victim = &line2[0]["victims"][0];
    assert_eq!(victim["member"], "cfg", "{port}");
    assert_eq!(victim["hot_roots"].as_array().unwrap().len(), 0, "{port}");
    // The writer's line 2 conflict costs nothing; what is left is the path
    // spread over lines 0 and 2.
    assert_eq!(port["cost"], port["excess_lines"], "{port}");
}

#[test]
fn pass_one_weighs_what_the_fast_paths_helpers_name_in_other_files() {
    // fixtures/audit_hotuse: hu_pool and hu_cfg are alike by their types,
    // none of their units the root's; the root's helper in pool.c names
    // hu_pool, and two units no fast path runs name hu_cfg. With a budget
    // of one, hu_pool is analysed and hu_cfg (first by name, and named by
    // more units) is past the budget: a unit that names a struct weighs
    // less than a mention one call below a root.
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("tree");
    copy_dir(&repo().join("cli/tests/fixtures/audit_hotuse"), &t);
    let cache = d.path().join("cache");
    let o = audit(&t, &cache, &["--format", "json", "--budget", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let past: Vec<&str> = j["past_budget"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[0].as_str().unwrap())
        .collect();
    assert_eq!(past, ["hu_cfg"], "{j}");
    let analysed: Vec<String> = ["ranked", "clean", "ambiguous"]
        .iter()
        .flat_map(|k| names(&j[*k]))
        .collect();
    assert_eq!(analysed, ["hu_pool"], "{j}");
}

#[test]
fn a_per_cpu_instance_costs_by_whose_instance_the_fast_paths_reach() {
    // fixtures/audit_percpu: two per-CPU structs spread alike (3 lines
    // where 1 would do, a member written on each path). The fast paths
    // reach only the running CPU's pool (this_cpu_ptr): its lines are that
    // CPU's own and cost nothing. The steering path writes another CPU's
    // queue (per_cpu(queues, cpu)): its written lines move between CPUs.
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("tree");
    copy_dir(&repo().join("cli/tests/fixtures/audit_percpu"), &t);
    let cache = d.path().join("cache");
    let o = audit(&t, &cache, &["--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(names(&j["ranked"]), ["pcpu_queue", "pcpu_pool"], "{j}");
    let (queue, pool) = (&j["ranked"][0], &j["ranked"][1]);
    assert_eq!(queue["lifetime"]["kind"], "per_cpu_shared", "{queue}");
    assert!(
        queue["lifetime"]["evidence"]
            .as_str()
            .unwrap()
            .contains("per_cpu(queues, cpu) in pcpu_steer"),
        "{queue}"
    );
    assert!(queue["cost"].as_u64().unwrap() > 0, "{queue}");
    assert_eq!(pool["lifetime"]["kind"], "per_cpu", "{pool}");
    assert_eq!(pool["cost"], 0, "{pool}");
    assert_eq!(j["weights"]["coherence"], 4, "{j}");
    // The table states the weights it ranked by.
    let o = audit(&t, &cache, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("# cost per line: conflict (coherence miss, per hot root) 4;")),
        "{table}"
    );
    assert!(
        table.contains("lives: per-CPU, the running CPU's own (")
            && table.contains("reach the running CPU's instance: this_cpu_ptr(&pools) in pcpu_rx)"),
        "{table}"
    );
}

#[test]
fn a_path_counts_the_bytes_of_the_sub_members_it_reads() {
    // fixtures/audit_embed: em_node's fast path reads head and
    // stats.hits, both on line 0; counted whole, the embedded stats
    // (bytes 56..175) put the path on three lines where two would do.
    // em_dev's reads key, cfg.mtu and rate: lines 0 and 2 for 24 bytes;
    // counted whole, cfg (bytes 8..167) hid the spread.
    let j = audit_fixture_json("audit_embed");
    let find = |name: &str| finding(&j, name);
    let node = find("em_node");
    assert_eq!(node["status"], "no_conflict", "{node}");
    let p = &node["paths"][0];
    assert_eq!(
        (
            p["lines"].as_u64(),
            p["fewest"].as_u64(),
            p["bytes"].as_u64()
        ),
        (Some(1), Some(1), Some(16)),
        "{p}"
    );
    let dev = find("em_dev");
    assert_eq!(dev["status"], "spread", "{dev}");
    let p = &dev["paths"][0];
    assert_eq!(
        (
            p["lines"].as_u64(),
            p["fewest"].as_u64(),
            p["bytes"].as_u64()
        ),
        (Some(2), Some(1), Some(24)),
        "{p}"
    );
    assert_eq!(dev["excess_lines"], 1, "{dev}");
}

#[test]
fn the_nearest_evidence_decides_how_a_struct_lives_and_the_rule_bounds_the_fewest_lines() {
    // fixtures/audit_nearest: near_ops has a file-scope instance and an
    // allocated embedder; near_dst reads three members on line 0 and
    // takes a reference on line 1.
    let j = audit_fixture_json("audit_nearest");
    let find = |name: &str| finding(&j, name);
    // The table the fast path reads is the file-scope one, not the copy
    // inside each allocated namespace: a singleton only read, cost 0.
    let ops = find("near_ops");
    assert_eq!(ops["lifetime"]["kind"], "singleton", "{ops}");
    assert_eq!(
        ops["lifetime"]["evidence"], "src/near.c: struct near_ops near_ipv4_ops",
        "{ops}"
    );
    assert_eq!(ops["excess_lines"], 2, "{ops}");
    assert_eq!(ops["cost"], 0, "{ops}");
    // The namespace has no evidence of its own beyond its allocation.
    let ns = find("near_ns");
    assert_eq!(ns["lifetime"]["kind"], "per_object", "{ns}");
    // The reference count sits apart from what is read beside it: two
    // lines, and no order that keeps the rule touches fewer.
    let dst = find("near_dst");
    assert_eq!(dst["status"], "no_conflict", "{dst}");
    let p = &dst["paths"][0];
    assert_eq!(
        (
            p["lines"].as_u64(),
            p["fewest"].as_u64(),
            p["writes"].as_bool()
        ),
        (Some(2), Some(2), Some(true)),
        "{p}"
    );
}

#[test]
fn an_element_at_a_constant_index_counts_its_own_bytes() {
    // fixtures/audit_index: idx_dev's path reads key (0..8), conf[1]
    // (12..16) and rate (200..208): 2 lines for 20 bytes. idx_var's reads
    // conf[i], the whole table (8..200): 4 lines for 208 bytes.
    let j = audit_fixture_json("audit_index");
    let find = |name: &str| finding(&j, name);
    let path = |f: &serde_json::Value| {
        let p = &f["paths"][0];
        (
            p["lines"].as_u64(),
            p["fewest"].as_u64(),
            p["bytes"].as_u64(),
        )
    };
    let dev = find("idx_dev");
    assert_eq!(path(&dev), (Some(2), Some(1), Some(20)), "{dev}");
    assert_eq!(dev["status"], "spread", "{dev}");
    let var = find("idx_var");
    assert_eq!(path(&var), (Some(4), Some(4), Some(208)), "{var}");
    assert_eq!(var["status"], "no_conflict", "{var}");
}

#[test]
fn a_conflict_in_a_struct_of_one_line_is_no_miss_of_its_order() {
    // fixtures/audit_embed: em_ref (16 bytes, only inside em_owner),
    // em_solo (16 bytes, a static instance of its own) and em_big (128
    // bytes) hold a reference count taken on every packet next to the id
    // every packet reads. No order of em_ref's two members parts them and
    // a line of its own grows em_owner: its line is listed with why,
    // counts no miss and costs nothing. em_big's and em_solo's cost a
    // coherence miss (em_solo's fix, padding, is its own).
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("tree");
    copy_dir(&repo().join("cli/tests/fixtures/audit_embed"), &t);
    let cache = d.path().join("cache");
    let o = audit(&t, &cache, &["--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ranked = j["ranked"].as_array().unwrap();
    let find = |name: &str| {
        ranked
            .iter()
            .find(|f| f["struct"] == name)
            .unwrap_or_else(|| panic!("{name}: {j}"))
    };
    let big = find("em_big");
    assert_eq!(big["status"], "conflict", "{big}");
    assert_eq!(big["conflicts"][0]["misses"], 1, "{big}");
    assert_eq!(big["cost"], 4, "{big}");
    assert!(big["conflicts"][0].get("fixed_outside").is_none(), "{big}");
    let solo = find("em_solo");
    assert_eq!(solo["cost"], 4, "{solo}");
    assert!(
        solo["conflicts"][0].get("fixed_outside").is_none(),
        "{solo}"
    );
    let small = find("em_ref");
    assert_eq!(small["status"], "conflict", "{small}");
    let c = &small["conflicts"][0];
    assert_eq!(c["misses"], 0, "{small}");
    assert_eq!(c["exposure"], 1, "{small}");
    assert!(
        c["fixed_outside"].as_str().is_some_and(|w| w.starts_with(
            "the struct fits in one line (16 B of 64) and lives only inside 1 struct(s)"
        )),
        "{small}"
    );
    assert_eq!(
        (small["cost"].as_u64(), small["misses"].as_u64()),
        (Some(0), Some(0))
    );
    // Ranked after every struct that costs, and never patched.
    let at = |name: &str| ranked.iter().position(|f| f["struct"] == name).unwrap();
    assert!(at("em_big") < at("em_ref"), "{j}");
    // The table says why.
    let table = stdout(&audit(&t, &cache, &[]));
    assert!(
        table.contains(
            "no miss to this struct's order: the struct fits in one line (16 B of 64) and lives only inside 1"
        ),
        "{table}"
    );
}
