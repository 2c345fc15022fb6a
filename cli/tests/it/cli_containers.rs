//! A struct in several containers: `--container` (and `--offset`) given
//! more than once solve and check the layout at every container's phase,
//! with one `static_assert` per container; the embedders the types know are
//! listed with their phases; `growth` under `--kbuild` finds embedders in
//! headers the struct's own header does not include.
//!
//! Oracles: gcc's `offsetof` on a small project, and for the kernel the
//! patched header compiled again with the tree's flags (its DWARF).

use crate::support;

use std::path::Path;
use std::process::{Command, Output};
use support::*;

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

fn run_cached(dir: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(dir)
        .env("XDG_CACHE_HOME", cache)
        .args(args)
        .output()
        .expect("the cachelayout binary runs")
}

/// `stats` sits at phase 8 in `node` and at phase 40 in `table`.
const PROJECT: &str = "struct stats {
	long read_a;
	long hits;
	long read_b;
	long misses;
	long read_c;
	long read_d;
	long read_e;
	long read_f;
};

struct node {
	long id;
	struct stats s;
} __attribute__((aligned(64)));

struct table {
	char name[40];
	struct stats st;
} __attribute__((aligned(64)));
";

const ACCESS: &str = "[struct.stats]
read_mostly = [\"read_a\", \"read_b\", \"read_c\", \"read_d\", \"read_e\", \"read_f\"]
lockless_atomic = [\"hits\", \"misses\"]
";

/// `(phase, line)` of each hard conflict of a JSON layout.
fn conflicts(v: &serde_json::Value) -> Vec<(u64, u64)> {
    v["hard_conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["phase"].as_u64().unwrap(), c["line"].as_u64().unwrap()))
        .collect()
}

#[test]
fn two_containers_from_dwarf_are_solved_at_both_phases() {
    if !have("gcc") {
        println!("SKIPPED: needs gcc");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("stats.h"), PROJECT).unwrap();
    std::fs::write(d.join("stats.toml"), ACCESS).unwrap();
    std::fs::write(
        d.join("use.c"),
        "#include \"stats.h\"\nstruct node n;\nstruct table t;\n",
    )
    .unwrap();
    let out = Command::new("gcc")
        .current_dir(d)
        .args(["-g", "-c", "use.c", "-o", "use.o"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let base = [
        "stats.h",
        "--dwarf",
        "use.o",
        "--struct",
        "stats",
        "--access",
        "stats.toml",
    ];
    let both = ["--container", "node.s", "--container", "table.st"];

    // Declared: conflicts at both phases, each container's lines its own.
    let out = run_in(
        d,
        &[&["show"], &base[..], &both, &["--format", "json"]].concat(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["container_offsets"], serde_json::json!([8, 40]));
    let phases: Vec<u64> = conflicts(&v).iter().map(|c| c.0).collect();
    assert!(phases.contains(&8) && phases.contains(&40), "{phases:?}");

    // A given offset that the types contradict is refused.
    let out = run_in(
        d,
        &[
            &["show"],
            &base[..],
            &["--container", "node.s", "--offset", "16"],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("at offset 8 in the types, not 16"),
        "{}",
        stderr(&out)
    );

    // Proposed for both: no conflict at either phase, two assertions, and
    // the diff, compiled, is the proposed layout.
    let out = run_in(d, &[&["propose"], &base[..], &both].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("static_assert(offsetof(struct node, s) % 64 == 8);")
            && err.contains("static_assert(offsetof(struct table, st) % 64 == 40);"),
        "{err}"
    );
    assert!(
        err.contains("node.s at offset 8 (phase 8): solved for"),
        "{err}"
    );
    assert!(
        err.contains("table.st at offset 40 (phase 40): solved for"),
        "{err}"
    );
    apply_p1(d, &stdout(&out), "stats");
    for (container, offset) in [("node", 8), ("table", 40)] {
        let member = if container == "node" { "s" } else { "st" };
        let out = run_in(
            d,
            &[
                &[
                    "show",
                    "stats.h",
                    "--struct",
                    "stats",
                    "--access",
                    "stats.toml",
                ][..],
                &["--offset", &offset.to_string(), "--format", "json"],
            ]
            .concat(),
        );
        assert_eq!(out.status.code(), Some(0), "{container}: {}", stdout(&out));
        assert!(conflicts(&json(&out)).is_empty());
        // gcc agrees on where the struct sits.
        let printed = gcc_run(
            d,
            &format!(
                "#include <stddef.h>\n#include <stdio.h>\n#include \"stats.h\"\n\
                 int main(void) {{ printf(\"%zu\", offsetof(struct {container}, {member})); return 0; }}\n"
            ),
        );
        assert_eq!(printed.trim(), offset.to_string());
    }
}

#[test]
fn a_container_without_types_needs_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("stats.h"), PROJECT).unwrap();
    let out = run_in(
        d,
        &[
            "show",
            "stats.h",
            "--struct",
            "stats",
            "--container",
            "node.s",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("give --offset for each --container"),
        "{}",
        stderr(&out)
    );
    let out = run_in(
        d,
        &[
            "show",
            "stats.h",
            "--struct",
            "stats",
            "--container",
            "node.s",
            "--offset",
            "8",
            "--offset",
            "40",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("one offset per container"),
        "{}",
        stderr(&out)
    );
}

// ---- The kernel: lru_gen_struct of Debian's 6.1 headers ----

const LRU_GEN_ACCESS: &str = "[struct.lru_gen_struct]
read_mostly = [\"max_seq\", \"min_seq\", \"timestamps\", \"enabled\"]
lockless_atomic = [\"evicted\", \"refaulted\"]
locked_write.lru_lock = [\"folios\", \"nr_pages\", \"avg_refaulted\", \"avg_total\", \"protected\"]
";

const MEMCG: &str = "mem_cgroup_per_node.lruvec.lrugen";
const PGDAT: &str = "pglist_data.__lruvec.lrugen";

macro_rules! require_kernel_tree {
    () => {{
        match kbuild_tree() {
            Some(t) if have("gcc") && srctree(&t).join("include/linux/mmzone.h").is_file() => t,
            _ => {
                println!("SKIPPED: needs /usr/src/linux-headers-*-amd64 with its -common sibling and gcc");
                return;
            }
        }
    }};
}

/// `show` of the header in `dir` (a copy of the tree's, shadowing it) at
/// the given containers: its JSON.
fn show_in(
    dir: &Path,
    cache: &Path,
    k: &str,
    containers: &[&str],
) -> (Option<i32>, serde_json::Value) {
    let shadow = format!("gcc -I{}", dir.join("include").display());
    let mut args = vec![
        "show",
        "include/linux/mmzone.h",
        "--struct",
        "lru_gen_struct",
        "--kbuild",
        k,
        "--cc",
        &shadow,
        "--access",
        "lru_gen.toml",
        "--format",
        "json",
    ];
    for c in containers {
        args.extend(["--container", c]);
    }
    let out = run_cached(dir, cache, &args);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    (out.status.code(), json(&out))
}

#[test]
fn lru_gen_struct_in_both_containers_has_no_conflict_at_phase_8_or_16() {
    let tree = require_kernel_tree!();
    let k = tree.to_str().unwrap();
    let src = srctree(&tree);
    let cache = tempfile::tempdir().unwrap();
    for solved_for in [vec![MEMCG], vec![MEMCG, PGDAT]] {
        let copy = tempfile::tempdir().unwrap();
        let c = copy.path();
        std::fs::create_dir_all(c.join("include/linux")).unwrap();
        std::fs::copy(
            src.join("include/linux/mmzone.h"),
            c.join("include/linux/mmzone.h"),
        )
        .unwrap();
        std::fs::write(c.join("lru_gen.toml"), LRU_GEN_ACCESS).unwrap();
        // Declared: a conflict at each phase.
        let (code, v) = show_in(c, cache.path(), k, &[MEMCG, PGDAT]);
        assert_eq!(code, Some(1));
        assert_eq!(v["container_offsets"], serde_json::json!([136, 172112]));
        let phases: Vec<u64> = conflicts(&v).iter().map(|x| x.0).collect();
        assert!(phases.contains(&8) && phases.contains(&16), "{phases:?}");

        let mut args = vec![
            "propose",
            "include/linux/mmzone.h",
            "--struct",
            "lru_gen_struct",
            "--kbuild",
            k,
            "--access",
            "lru_gen.toml",
        ];
        for s in &solved_for {
            args.extend(["--container", s]);
        }
        let out = run_cached(c, cache.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(
                "static_assert(offsetof(struct mem_cgroup_per_node, lruvec.lrugen) % 64 == 8);"
            ),
            "{err}"
        );
        assert!(
            err.contains("mem_cgroup_per_node.lruvec.lrugen at offset 136 (phase 8): solved for"),
            "{err}"
        );
        let pgdat_line = "pglist_data.__lruvec.lrugen at offset 172112 (phase 16)";
        apply_p1(c, &stdout(&out), "lru_gen_struct");
        // The patched header compiled again, at both containers.
        let (code, after) = show_in(c, cache.path(), k, &[MEMCG, PGDAT]);
        assert_eq!(after["size"], 1328);
        if solved_for.len() == 2 {
            assert!(err.contains(&format!("{pgdat_line}: solved for")), "{err}");
            assert!(
                err.contains(
                    "static_assert(offsetof(struct pglist_data, __lruvec.lrugen) % 64 == 16);"
                ),
                "{err}"
            );
            assert_eq!(code, Some(0), "{:?}", conflicts(&after));
            assert!(conflicts(&after).is_empty());
        } else {
            // Solved for one container only: said so, and the other still conflicts.
            assert!(
                err.contains(&format!("{pgdat_line}: NOT solved for")),
                "{err}"
            );
            assert_eq!(code, Some(1));
            assert!(
                conflicts(&after).iter().all(|x| x.0 == 16),
                "{:?}",
                conflicts(&after)
            );
        }
    }
}

/// `growth` under `--kbuild` of mmzone.h: mem_cgroup_per_node (in
/// memcontrol.h, which mmzone.h does not include) is an embedder.
#[test]
fn kbuild_growth_finds_embedders_in_other_headers() {
    let tree = require_kernel_tree!();
    let k = tree.to_str().unwrap();
    let src = srctree(&tree);
    let cache = tempfile::tempdir().unwrap();
    let out = run_cached(
        &src,
        cache.path(),
        &[
            "growth",
            "--header",
            "include/linux/mmzone.h",
            "--kbuild",
            k,
            "--struct",
            "lru_gen_struct",
            "--size",
            "1408",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.contains(&"lru_gen_struct 1328 -> 1408 (+80)"),
        "{text}"
    );
    assert!(lines.contains(&"lruvec 1592 -> 1672 (+80)"), "{text}");
    assert!(
        lines.contains(&"mem_cgroup_per_node 2560 -> 2640 (+80)"),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("pglist_data 174208 -> 174272")),
        "{text}"
    );
    assert!(text.contains("include/linux/memcontrol.h"), "{text}");

    // The same through a proposal that grows the struct (keeping lockless
    // fields off the locked ones costs 8 bytes at both phases).
    let copy = tempfile::tempdir().unwrap();
    std::fs::write(copy.path().join("lru_gen.toml"), LRU_GEN_ACCESS).unwrap();
    let access = copy.path().join("lru_gen.toml");
    let out = run_cached(
        &src,
        cache.path(),
        &[
            "propose",
            "include/linux/mmzone.h",
            "--struct",
            "lru_gen_struct",
            "--kbuild",
            k,
            "--access",
            access.to_str().unwrap(),
            "--container",
            MEMCG,
            "--container",
            PGDAT,
            "--separate-locked",
            "--growth",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let grown = v["after"]["size"].as_u64().unwrap();
    assert!(grown > 1328, "{grown}");
    let entries = v["growth"]["entries"].as_array().unwrap();
    let memcg = entries
        .iter()
        .find(|e| e["name"] == "mem_cgroup_per_node")
        .unwrap_or_else(|| panic!("mem_cgroup_per_node is an embedder: {entries:?}"));
    assert_eq!(memcg["old"]["size"], 2560);
    assert_eq!(memcg["new"]["size"].as_u64(), Some(2560 + grown - 1328));
}
