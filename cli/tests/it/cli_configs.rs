//! `propose --check-configs`: the declared layout and the proposal in every
//! configuration that changes the struct, each compiled; the sizes checked
//! against gcc's, a rule broken in another configuration reported.

use crate::support::{self, *};
use std::path::Path;
use std::process::Command;

const HEADER: &str = "\
struct conn {
\tlong name;
\tlong limit;
#ifdef CONFIG_STATS
\tchar stats[40];
#endif
\tlong hits;
\tlong max;
#ifndef CONFIG_SMALL
\tlong spare[2];
#endif
};
";

const ACCESS: &str = "\
[struct.conn]
read_mostly = [\"name\", \"limit\", \"max\"]
lockless_atomic = [\"hits\"]
";

/// gcc's `sizeof(struct conn)` for `header` with `defines`.
fn gcc_size(dir: &Path, header: &str, defines: &[&str]) -> u64 {
    std::fs::write(dir.join("oracle.h"), header).unwrap();
    let c = dir.join("size.c");
    std::fs::write(
        &c,
        "#include <stdio.h>\n#include \"oracle.h\"\nint main(void) { printf(\"%zu\\n\", sizeof(struct conn)); return 0; }\n",
    )
    .unwrap();
    let exe = dir.join("size");
    let out = Command::new("gcc")
        .args(defines)
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    String::from_utf8_lossy(&run.stdout).trim().parse().unwrap()
}

#[test]
fn every_configuration_of_the_struct_is_compiled_and_sized_as_gcc_does() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("conn.h"), HEADER).unwrap();
    std::fs::write(p.join("conn.toml"), ACCESS).unwrap();
    let args = [
        "propose",
        "conn.h",
        "--struct",
        "conn",
        "--access",
        "conn.toml",
        "--cc",
        "gcc",
        "--no-probe-cache",
        "--check-configs",
        "--format",
        "json",
    ];
    let out = run_in(p, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let rows = v["configurations"].as_array().expect("configurations");
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["configuration"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["the configuration read", "CONFIG_STATS=y", "CONFIG_SMALL=y"]
    );
    assert_eq!(rows[0]["proposed"]["conflicts"], serde_json::json!([]));
    assert_eq!(rows[0]["proposed"]["size"], v["after"]["size"]);

    // The patched header, as the diff writes it, under each configuration.
    let diff_out = run_in(
        p,
        &[
            "propose",
            "conn.h",
            "--struct",
            "conn",
            "--access",
            "conn.toml",
            "--cc",
            "gcc",
            "--no-probe-cache",
        ],
    );
    assert_eq!(diff_out.status.code(), Some(0), "{}", stderr(&diff_out));
    let patched_dir = tempfile::tempdir().unwrap();
    std::fs::write(patched_dir.path().join("conn.h"), HEADER).unwrap();
    support::apply_p1(patched_dir.path(), &stdout(&diff_out), "the proposal");
    let patched = std::fs::read_to_string(patched_dir.path().join("conn.h")).unwrap();
    for (row, defines) in rows
        .iter()
        .zip([&[][..], &["-DCONFIG_STATS"], &["-DCONFIG_SMALL"]])
    {
        let name = &row["configuration"];
        assert_eq!(
            row["declared"]["size"].as_u64(),
            Some(gcc_size(p, HEADER, defines)),
            "{name}: declared"
        );
        assert_eq!(
            row["proposed"]["size"].as_u64(),
            Some(gcc_size(p, &patched, defines)),
            "{name}: proposed"
        );
    }
    // The summary says what was checked.
    let table = run_in(
        p,
        &[
            "propose",
            "conn.h",
            "--struct",
            "conn",
            "--access",
            "conn.toml",
            "--cc",
            "gcc",
            "--no-probe-cache",
            "--check-configs",
        ],
    );
    let summary = stderr(&table);
    assert!(summary.contains("configurations checked: 3"), "{summary}");
    assert!(summary.contains("CONFIG_STATS=y"), "{summary}");
}

/// A struct whose lockless member sits a line away from the read-mostly
/// ones only because a configurable member fills the gap: in the
/// configuration read the layout keeps the rule, and with the option
/// flipped the member goes and the rule breaks, which the summary, the
/// changelog and the JSON say.
#[test]
fn a_rule_broken_in_another_configuration_is_reported() {
    let header = "\
struct conn {
\tlong name;
\tlong limit;
#ifndef CONFIG_SMALL
\tlong spare[6];
#endif
\tlong hits;
};
";
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("conn.h"), header).unwrap();
    std::fs::write(
        p.join("conn.toml"),
        "[struct.conn]\nread_mostly = [\"name\", \"limit\"]\nlockless_atomic = [\"hits\"]\n",
    )
    .unwrap();
    let base = [
        "propose",
        "conn.h",
        "--struct",
        "conn",
        "--access",
        "conn.toml",
        "--cc",
        "gcc",
        "--no-probe-cache",
        "--check-configs",
    ];
    let out = run_in(p, &[&base[..], &["--format", "json"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let rows = v["configurations"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["proposed"]["conflicts"], serde_json::json!([]));
    assert_eq!(rows[1]["configuration"], "CONFIG_SMALL=y");
    // Without `spare` the padding the diff adds is all that is left
    // between the read-mostly members and `hits`: 8 bytes, not a line.
    assert_eq!(rows[1]["proposed"]["size"], 32);
    assert_eq!(
        rows[1]["proposed"]["conflicts"].as_array().unwrap().len(),
        1,
        "{rows:?}"
    );
    let out = run_in(p, &[&base[..], &["--changelog"]].concat());
    let (diff, summary) = (stdout(&out), stderr(&out));
    for text in [&diff, &summary] {
        assert!(
            text.contains("the proposal breaks the rule with CONFIG_SMALL=y"),
            "{text}"
        );
    }
}

/// `zone` of Debian's 6.1 headers with the shipped access file: each
/// option of its `#if` lines flipped, the proposal checked in each. With
/// `CACHELAYOUT_SWEEPS=full` (a compile of mmzone.h per configuration; the
/// fast suite checks every configuration of the small struct above).
#[test]
fn zone_is_checked_in_every_configuration_of_its_if_lines() {
    if !crate::support::sweep::full() {
        println!("CACHELAYOUT_SWEEPS=full runs zone in every configuration");
        return;
    }
    let Some(tree) = kbuild_tree() else {
        println!("SKIPPED: needs /usr/src/linux-headers-*-amd64 (Debian's linux-headers-amd64)");
        return;
    };
    let src = srctree(&tree);
    let cache = tempfile::tempdir().unwrap();
    let access = repo().join("examples/kernel/zone.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(&src)
        .env("XDG_CACHE_HOME", cache.path())
        .args([
            "propose",
            "include/linux/mmzone.h",
            "--struct",
            "zone",
            "--kbuild",
        ])
        .arg(&tree)
        .arg("--access")
        .arg(&access)
        .args(["--check-configs", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let rows = v["configurations"].as_array().unwrap();
    assert!(rows.len() >= 4, "{rows:?}");
    assert_eq!(rows[0]["proposed"]["conflicts"], serde_json::json!([]));
    let laid = rows
        .iter()
        .filter(|r| r["proposed"]["state"] == "laid")
        .count();
    assert!(laid >= 3, "{rows:?}");
    for r in rows {
        println!(
            "zone {}: declared {} proposed {}",
            r["configuration"], r["declared"], r["proposed"]
        );
    }
}

/// tcp_sock and net_device of Debian's 6.1 headers (classes from their
/// types): every configuration of their `#if` lines is compiled, and the
/// report says what was checked. With `CACHELAYOUT_SWEEPS=full` (dozens of
/// compiles).
#[test]
fn tcp_sock_and_net_device_are_checked_in_every_configuration() {
    if !crate::support::sweep::full() {
        println!("CACHELAYOUT_SWEEPS=full runs tcp_sock and net_device in every configuration");
        return;
    }
    let Some(tree) = kbuild_tree() else {
        println!("SKIPPED: needs /usr/src/linux-headers-*-amd64 (Debian's linux-headers-amd64)");
        return;
    };
    let src = srctree(&tree);
    let cache = tempfile::tempdir().unwrap();
    for (header, name) in [
        ("include/linux/tcp.h", "tcp_sock"),
        ("include/linux/netdevice.h", "net_device"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_cachelayout"))
            .current_dir(&src)
            .env("XDG_CACHE_HOME", cache.path())
            .args(["propose", header, "--struct", name, "--kbuild"])
            .arg(&tree)
            .args(["--check-configs", "--format", "json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let v = json(&out);
        let rows = v["configurations"].as_array().unwrap();
        assert!(rows.len() >= 3, "{name}: {rows:?}");
        assert_eq!(rows[0]["configuration"], "the configuration read");
        assert_eq!(rows[0]["proposed"]["size"], v["after"]["size"], "{name}");
        let laid = rows
            .iter()
            .filter(|r| r["proposed"]["state"] == "laid")
            .count();
        assert!(laid >= 2, "{name}: {rows:?}");
        for r in rows {
            println!(
                "{name} {}: declared {} proposed {}",
                r["configuration"], r["declared"], r["proposed"]
            );
        }
    }
}
