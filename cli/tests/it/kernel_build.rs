//! The mails build in the kernel, and the kernel lays the structs out as
//! the mails say. For three structs of Debian's 6.1 (`tcp_sock`,
//! `netns_ipv4`, `lru_gen_struct`, with the access files of
//! `examples/kernel/`): `propose --format patch` and `--format json` on the
//! installed headers (`--kbuild`, linux-headers-amd64), `git am` of the
//! three mails on a clean tree extracted from linux-source-6.1, `make
//! olddefconfig` from linux-headers-amd64's `.config`, `make prepare`, then
//! the objects of sources that use each struct; the DWARF of each object
//! (read by `show --dwarf`, the project's DWARF front-end) must give the
//! size and every member offset that the JSON's `after` layout states.
//!
//! Minutes of kernel build (the tree extracted, prepare, three objects): the
//! full sweep only (`CACHELAYOUT_SWEEPS=full`); skipped with a note when the
//! Debian packages are not installed. GUIDE.md ("Building the mails in the
//! kernel") gives the same steps for users.

use crate::support::{debian_61_headers, example, field_offsets, json, stderr, sweep};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

const TARBALL: &str = "/usr/src/linux-source-6.1.tar.xz";

/// A struct, its header (from the tree's root), its access file in
/// `examples/kernel/`, and objects whose sources use it.
struct Case {
    name: &'static str,
    header: &'static str,
    access: &'static str,
    objects: &'static [&'static str],
}

const CASES: [Case; 3] = [
    Case {
        name: "tcp_sock",
        header: "include/linux/tcp.h",
        access: "kernel/tcp_sock.toml",
        objects: &["net/ipv4/tcp_input.o"],
    },
    Case {
        name: "netns_ipv4",
        header: "include/net/netns/ipv4.h",
        access: "kernel/netns_ipv4.toml",
        objects: &["net/ipv4/tcp_ipv4.o"],
    },
    Case {
        name: "lru_gen_struct",
        header: "include/linux/mmzone.h",
        access: "kernel/lru_gen_struct.toml",
        objects: &["mm/vmscan.o"],
    },
];

/// The identity the mails and the base commit carry.
const IDENTITY: [(&str, &str); 5] = [
    ("GIT_AUTHOR_NAME", "Ada Maintainer"),
    ("GIT_AUTHOR_EMAIL", "ada@example.org"),
    ("GIT_COMMITTER_NAME", "Ada Maintainer"),
    ("GIT_COMMITTER_EMAIL", "ada@example.org"),
    ("GIT_AUTHOR_DATE", "1796144186 +0000"),
];

fn cachelayout(dir: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(dir)
        .env("XDG_CACHE_HOME", cache)
        .envs(IDENTITY)
        .args(args)
        .output()
        .expect("the cachelayout binary runs")
}

/// Runs `program args` in `dir` and asserts it succeeded.
fn ok(dir: &Path, program: &str, args: &[&str]) -> Output {
    let out = Command::new(program)
        .current_dir(dir)
        .envs(IDENTITY)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    assert!(
        out.status.success(),
        "{program} {}: {}{}",
        args.join(" "),
        tail(&String::from_utf8_lossy(&out.stdout)),
        tail(&String::from_utf8_lossy(&out.stderr))
    );
    out
}

/// The last lines of a long log.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// Member name -> offset, and the size, of a JSON layout object. A
/// bit-field run goes by its first bit-field: the header names it so,
/// DWARF by all of them (`nonagle:thin_lto:...`).
fn offsets(layout: &serde_json::Value) -> (BTreeMap<String, u64>, u64) {
    (
        field_offsets(layout)
            .into_iter()
            .map(|(name, off)| (name.split(':').next().unwrap_or(&name).to_string(), off))
            .collect(),
        layout["size"].as_u64().expect("a size"),
    )
}

#[test]
fn three_mails_apply_build_and_the_objects_dwarf_is_the_json_layout() {
    if !sweep::full() {
        eprintln!("note: skipped: builds kernel objects; runs with CACHELAYOUT_SWEEPS=full");
        return;
    }
    let Some((kbuild, common)) = debian_61_headers().filter(|_| Path::new(TARBALL).is_file())
    else {
        eprintln!(
            "note: skipped: needs linux-source-6.1 ({TARBALL}) and Debian's 6.1 linux-headers-amd64"
        );
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let cache = d.path().join("cache");

    // The mails and the layouts they state, from the installed headers.
    let mut mails = Vec::new();
    let mut stated = Vec::new();
    for c in &CASES {
        let header = common.join(c.header);
        let access = example(c.access);
        let args = |format: &'static str| {
            vec![
                "propose".to_string(),
                header.display().to_string(),
                "--struct".into(),
                c.name.into(),
                "--kbuild".into(),
                kbuild.display().to_string(),
                "--access".into(),
                access.display().to_string(),
                "--format".into(),
                format.into(),
            ]
        };
        let run = |format| {
            let a = args(format);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            cachelayout(d.path(), &cache, &a)
        };
        let mail = run("patch");
        assert!(mail.status.success(), "{}: {}", c.name, stderr(&mail));
        assert!(
            mail.stdout
                .starts_with(b"From 0000000000000000000000000000000000000000"),
            "{}: no mail (nothing to move?): {}",
            c.name,
            stderr(&mail)
        );
        let path = d.path().join(format!("{}.patch", c.name));
        std::fs::write(&path, &mail.stdout).unwrap();
        mails.push(path);
        let j = json(&run("json"));
        stated.push(offsets(&j["after"]));
    }

    // A clean tree, its headers committed, the mails applied with git am.
    let started = Instant::now();
    ok(d.path(), "tar", &["-xJf", TARBALL]);
    let src = d.path().join("linux-source-6.1");
    let extracted = started.elapsed();
    ok(&src, "git", &["init", "-q"]);
    let mut add = vec!["add", "-f"];
    add.extend(CASES.iter().map(|c| c.header));
    ok(&src, "git", &add);
    ok(&src, "git", &["commit", "-qm", "linux-source-6.1"]);
    let mut am = vec!["am".to_string()];
    am.extend(mails.iter().map(|m| m.display().to_string()));
    let am: Vec<&str> = am.iter().map(String::as_str).collect();
    ok(&src, "git", &am);
    let log = ok(&src, "git", &["log", "--format=%s"]);
    assert_eq!(
        String::from_utf8_lossy(&log.stdout).lines().count(),
        CASES.len() + 1
    );

    // The tree's configuration, prepare, and the objects.
    std::fs::copy(kbuild.join(".config"), src.join(".config")).unwrap();
    let jobs = format!(
        "-j{}",
        std::thread::available_parallelism().map_or(2, |n| n.get())
    );
    let started = Instant::now();
    ok(&src, "make", &["-s", "olddefconfig"]);
    ok(&src, "make", &["-s", &jobs, "prepare"]);
    let prepared = started.elapsed();
    let started = Instant::now();
    let mut make = vec!["-s".to_string(), jobs.clone()];
    make.extend(
        CASES
            .iter()
            .flat_map(|c| c.objects.iter().map(|o| o.to_string())),
    );
    let make: Vec<&str> = make.iter().map(String::as_str).collect();
    ok(&src, "make", &make);
    let built = started.elapsed();
    eprintln!(
        "kernel build: extracted in {:.0} s, olddefconfig + prepare {:.0} s, {} objects {:.0} s",
        extracted.as_secs_f64(),
        prepared.as_secs_f64(),
        make.len() - 2,
        built.as_secs_f64()
    );

    // Each object's DWARF is the layout the JSON states.
    for (c, (want, want_size)) in CASES.iter().zip(&stated) {
        for o in c.objects {
            let obj = src.join(o);
            let shown = cachelayout(
                d.path(),
                &cache,
                &[
                    "show",
                    "--dwarf",
                    obj.to_str().unwrap(),
                    "--struct",
                    c.name,
                    "--format",
                    "json",
                ],
            );
            // 1: show found a conflict between the classes it assumes
            // from the member types; the layout is what is compared.
            assert!(
                matches!(shown.status.code(), Some(0 | 1)),
                "{o}: {}",
                stderr(&shown)
            );
            let (got, got_size) = offsets(&json(&shown));
            assert_eq!(got_size, *want_size, "struct {} in {o}: size", c.name);
            assert_eq!(got.len(), want.len(), "struct {} in {o}: members", c.name);
            let differ: Vec<String> = want
                .iter()
                .filter(|(name, off)| got.get(*name) != Some(off))
                .map(|(name, off)| format!("{name}: mail {off}, {o} {:?}", got.get(name)))
                .collect();
            assert!(
                differ.is_empty(),
                "struct {} in {o}: the built object's DWARF is not the mail's layout:\n{}",
                c.name,
                differ.join("\n")
            );
        }
    }
}
