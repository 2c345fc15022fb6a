//! One name for a member in every front-end: the names `show --btf` and
//! `show --dwarf` print for fields that are no single member (a bit-field
//! run `a:b:c`, an anonymous union `anon_union@OFFSET`), the names the
//! header front-end prints (a run's first bit-field, a union's first
//! member), and every bit-field and union member by its own name are
//! accepted by the BTF, DWARF, header and compiler-probe front-ends alike,
//! and give the same classes to the same bytes.
//!
//! Oracles: the objects gcc builds with `-gbtf` and `-g` from the same
//! header, and for the kernel the probe object of `--kbuild` itself (its
//! DWARF, and its BTF as `pahole -J` encodes it).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::*;

/// Two `u8` bit-field declarations that fill one byte each (two storage
/// units: the compiler groups them apart), a run whose second declaration
/// shares the first one's byte (one unit), an anonymous union and an
/// `unsigned int` run, between ordinary members.
const HEADER: &str = "typedef unsigned char u8;
typedef unsigned int u32;

struct fx {
	long head;
	u8	chrono_type:2,
		rate_app_limited:1,
		fastopen_connect:1,
		fastopen_client_fail:4;
	u8	nonagle:4,
		thin_lto:1,
		repair:1,
		frto:2;
	u8	half_a:4;
	u8	half_b:4;
	union {
		u32 alpha;
		u32 beta;
	};
	u32 after;
	unsigned int save_syn:2,
		syn_data:1;
	long tail;
};
";

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

/// `fx.h` and the objects gcc builds from it with `-gbtf` and `-g`.
fn fixture(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let h = dir.join("fx.h");
    std::fs::write(&h, HEADER).unwrap();
    let c = dir.join("use.c");
    std::fs::write(&c, "#include \"fx.h\"\nstruct fx x;\n").unwrap();
    let mut objs = Vec::new();
    for flag in ["-gbtf", "-g"] {
        let obj = dir.join(format!("use{flag}.o"));
        let out = Command::new("gcc")
            .args([flag, "-c"])
            .arg(&c)
            .arg("-o")
            .arg(&obj)
            .output()
            .expect("gcc runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        objs.push(obj);
    }
    let dwarf = objs.pop().unwrap();
    let btf = objs.pop().unwrap();
    (h, btf, dwarf)
}

/// `(name, offset, size, access)` of every field of a JSON layout.
fn fields(v: &serde_json::Value) -> Vec<(String, u64, u64, String)> {
    v["fields"]
        .as_array()
        .expect("fields is an array")
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["offset"].as_u64().unwrap(),
                f["size"].as_u64().unwrap(),
                f["access"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `show ARGS --format json` (exit 0, or 1 for hard conflicts).
fn show_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["show"];
    all.extend_from_slice(args);
    all.extend(["--format", "json"]);
    let out = run_in(dir, &all);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "show {args:?}: {}",
        stderr(&out)
    );
    json(&out)
}

/// An access file for `name` listing `read` as read-mostly and `written` as
/// lockless.
fn access(dir: &Path, file: &str, name: &str, read: &[String], written: &[String]) -> PathBuf {
    let list = |v: &[String]| {
        v.iter()
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let p = dir.join(file);
    std::fs::write(
        &p,
        format!(
            "[struct.{name}]\nread_mostly = [{}]\nlockless_atomic = [{}]\n",
            list(read),
            list(written)
        ),
    )
    .unwrap();
    p
}

/// `(offset, size, access)` of every field.
type Classes = Vec<(u64, u64, String)>;

/// `(offset, size, access)` of every field, the layout every front-end
/// must agree on.
fn bytes_and_classes(v: &serde_json::Value) -> Classes {
    fields(v)
        .into_iter()
        .map(|(_, o, s, a)| (o, s, a))
        .collect()
}

#[test]
fn names_any_front_end_prints_are_accepted_by_all_of_them() {
    if !have("gcc") {
        println!("SKIPPED: needs gcc");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (h, btf, dwarf) = fixture(d);
    let (h, btf, dwarf) = (
        h.to_str().unwrap(),
        btf.to_str().unwrap(),
        dwarf.to_str().unwrap(),
    );
    let front_ends: [(&str, Vec<&str>); 4] = [
        ("btf", vec!["--btf", btf]),
        ("dwarf", vec!["--dwarf", dwarf]),
        ("header", vec![h]),
        ("probe", vec![h, "--cc", "gcc"]),
    ];
    // The names each front-end prints; then an access file written from
    // them, read by every front-end.
    let mut layouts: Vec<(String, Classes)> = Vec::new();
    for (printer, args) in &front_ends {
        let mut a = args.clone();
        a.extend(["--struct", "fx"]);
        let names: Vec<String> = fields(&show_json(d, &a)).into_iter().map(|f| f.0).collect();
        // head and the union are read-mostly, every other field lockless.
        let union = |n: &String| n == "alpha" || n.starts_with("anon_union@");
        let read: Vec<String> = names
            .iter()
            .filter(|n| *n == "head" || union(n))
            .cloned()
            .collect();
        let written: Vec<String> = names
            .iter()
            .filter(|n| !read.contains(n) && *n != "tail" && *n != "after")
            .cloned()
            .collect();
        assert_eq!(read.len(), 2, "{printer}: {names:?}");
        let file = access(d, &format!("{printer}.toml"), "fx", &read, &written);
        for (reader, args) in &front_ends {
            let mut a = args.clone();
            a.extend(["--struct", "fx", "--access", file.to_str().unwrap()]);
            let v = show_json(d, &a);
            layouts.push((format!("{printer} names, {reader}"), bytes_and_classes(&v)));
        }
    }
    // Each member by its own name, and the union by its offset alias.
    let file = access(
        d,
        "members.toml",
        "fx",
        &["head".into(), "anon_union@12".into()],
        &[
            "fastopen_client_fail".into(),
            "frto".into(),
            "half_b".into(),
            "syn_data".into(),
        ],
    );
    for (reader, args) in &front_ends {
        let mut a = args.clone();
        a.extend(["--struct", "fx", "--access", file.to_str().unwrap()]);
        let v = show_json(d, &a);
        layouts.push((format!("member names, {reader}"), bytes_and_classes(&v)));
    }
    let expected: Classes = [
        (0, 8, "read_mostly"),
        (8, 1, "lockless_atomic"),
        (9, 1, "lockless_atomic"),
        (10, 1, "lockless_atomic"),
        (12, 4, "read_mostly"),
        (16, 4, "cold"),
        (20, 1, "lockless_atomic"),
        (24, 8, "cold"),
    ]
    .iter()
    .map(|&(o, s, a)| (o, s, a.to_string()))
    .collect();
    for (what, got) in &layouts {
        assert_eq!(got, &expected, "{what}");
    }
}

#[test]
fn a_misspelt_run_name_is_still_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("fx.h"), HEADER).unwrap();
    let file = access(d, "bad.toml", "fx", &["chrono_type:nonagle".into()], &[]);
    let out = run_in(
        d,
        &[
            "show",
            "fx.h",
            "--struct",
            "fx",
            "--access",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("chrono_type:nonagle"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn two_separate_u8_runs_stay_two_fields_in_every_front_end() {
    if !have("gcc") {
        println!("SKIPPED: needs gcc");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (h, btf, dwarf) = fixture(d);
    let (h, btf, dwarf) = (
        h.to_str().unwrap(),
        btf.to_str().unwrap(),
        dwarf.to_str().unwrap(),
    );
    for args in [
        vec!["--btf", btf],
        vec!["--dwarf", dwarf],
        vec![h],
        vec![h, "--cc", "gcc"],
    ] {
        let mut a = args.clone();
        a.extend(["--struct", "fx"]);
        let f = fields(&show_json(d, &a));
        let at: Vec<(u64, u64)> = f.iter().map(|x| (x.1, x.2)).collect();
        assert_eq!(
            at,
            [
                (0, 8),
                (8, 1),
                (9, 1),
                (10, 1),
                (12, 4),
                (16, 4),
                (20, 1),
                (24, 8)
            ],
            "{args:?}: {f:?}"
        );
    }
}

/// tcp_sock of the 6.1 headers: the names of the `--kbuild` probe's own
/// DWARF and of its BTF (`pahole -J`) are accepted by `--kbuild` and give
/// the same bytes the same classes; `chrono_type` and `nonagle` (two `u8`
/// declarations of 8 bits each) stay two one-byte fields.
#[test]
fn kbuild_tcp_sock_takes_the_names_of_its_btf_and_dwarf() {
    let tree = match kbuild_tree() {
        Some(t) if have("gcc") && have("pahole") && srctree(&t).join("include/linux").is_dir() => t,
        _ => {
            println!("SKIPPED: needs Debian's linux-headers-amd64, gcc and pahole");
            return;
        }
    };
    let src = srctree(&tree);
    let k = tree.to_str().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let base = [
        "show",
        "include/linux/tcp.h",
        "--struct",
        "tcp_sock",
        "--kbuild",
        k,
    ];
    let out = run_cached(
        &src,
        cache.path(),
        &[&base[..], &["--format", "json"]].concat(),
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let kbuild = fields(&json(&out));
    let runs: Vec<&(String, u64, u64, String)> = kbuild
        .iter()
        .filter(|f| f.0 == "chrono_type" || f.0 == "nonagle")
        .collect();
    assert_eq!(runs.len(), 2, "{kbuild:?}");
    assert_eq!(runs[0].2, 1, "{runs:?}");
    assert_eq!(runs[1].2, 1, "{runs:?}");
    assert_eq!(runs[1].1, runs[0].1 + 1, "{runs:?}");

    let probe = std::fs::read_dir(cache.path().join("cachelayout/probes"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path().join("probe.o")))
        .find(|p| p.is_file())
        .expect("the probe is cached");
    let work = tempfile::tempdir().unwrap();
    let btf = work.path().join("probe-btf.o");
    std::fs::copy(&probe, &btf).unwrap();
    let out = Command::new("pahole").arg("-J").arg(&btf).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (option, obj) in [("--dwarf", &probe), ("--btf", &btf)] {
        let o = obj.to_str().unwrap();
        let v = show_json(work.path(), &[option, o, "--struct", "tcp_sock"]);
        let printed = fields(&v);
        // The fields with made-up names: bit-field runs and anonymous members.
        let synthetic: Vec<String> = printed
            .iter()
            .filter(|f| f.0.contains(':') || f.0.contains('@'))
            .map(|f| f.0.clone())
            .collect();
        // (6.1's tcp_sock has no anonymous union at the top: the fixture
        // tests cover that name.)
        assert!(
            synthetic.iter().any(|n| n.starts_with("save_syn:"))
                && synthetic.iter().any(|n| n.starts_with("nonagle:")),
            "{option}: {synthetic:?}"
        );
        let file = access(work.path(), "names.toml", "tcp_sock", &[], &synthetic);
        let f = file.to_str().unwrap();
        let own = show_json(
            work.path(),
            &[option, o, "--struct", "tcp_sock", "--access", f],
        );
        let out = run_cached(
            &src,
            cache.path(),
            &[&base[..], &["--access", f, "--format", "json"]].concat(),
        );
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{option} names under --kbuild: {}",
            stderr(&out)
        );
        let written = |v: &[(String, u64, u64, String)]| -> Vec<(u64, u64)> {
            v.iter()
                .filter(|x| x.3 == "lockless_atomic")
                .map(|x| (x.1, x.2))
                .collect()
        };
        assert_eq!(
            written(&fields(&json(&out))),
            written(&fields(&own)),
            "{option} names: the same bytes are lockless"
        );
    }
}
