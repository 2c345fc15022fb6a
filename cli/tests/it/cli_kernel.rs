//! The CLI on real kernel headers: Debian's `linux-headers-amd64` (installed
//! by `.ci/run`). For `struct zone` (include/linux/mmzone.h) and `struct
//! page_counter` (include/linux/page_counter.h), with the access files in
//! examples/kernel/ (classes from the headers' comments, a [types] table and
//! the build's [defines]): `show` runs, `propose` gives a diff that
//! `patch -p1` applies to a copy of the real header, and `show` on the
//! patched copy finds no hard conflict.
//!
//! Skipped with a message when the headers are not installed.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::*;

/// The newest `/usr/src/linux-headers-*-common` tree.
fn kernel_headers() -> Option<PathBuf> {
    let mut trees: Vec<PathBuf> = std::fs::read_dir("/usr/src")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("linux-headers-") && n.ends_with("-common"))
        })
        .filter(|p| p.join("include/linux").is_dir())
        .collect();
    trees.sort();
    trees.pop()
}

/// What `show --format json` says.
struct Shown {
    code: i32,
    size: u64,
    conflicts: usize,
}

fn show(dir: &Path, header: &str, name: &str, access: &Path) -> Shown {
    let access = access.to_str().unwrap();
    let out = run_in(
        dir,
        &[
            "show", header, "--struct", name, "--access", access, "--format", "json",
        ],
    );
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "show {header} exited {code}: {}",
        stderr(&out)
    );
    let v = json(&out);
    let conflicts = v["hard_conflicts"]
        .as_array()
        .expect("hard_conflicts is an array")
        .len();
    assert_eq!(
        code == 1,
        conflicts > 0,
        "the exit status says whether there are conflicts"
    );
    Shown {
        code,
        size: v["size"].as_u64().unwrap(),
        conflicts,
    }
}

/// Copies the real header to `include/linux/FILE` in a temporary directory,
/// shows, proposes, applies the diff with `patch -p1` and shows again.
/// Returns (before, after).
fn round_trip(tree: &Path, file: &str, name: &str, access: &str) -> (Shown, Shown) {
    let rel = format!("include/linux/{file}");
    let access = example("kernel").join(access);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("include/linux")).unwrap();
    std::fs::copy(tree.join(&rel), dir.path().join(&rel)).unwrap();

    let before = show(dir.path(), &rel, name, &access);
    let table = run_in(
        dir.path(),
        &[
            "show",
            &rel,
            "--struct",
            name,
            "--access",
            access.to_str().unwrap(),
        ],
    );
    assert_eq!(table.status.code(), Some(before.code));
    assert!(
        stdout(&table).contains(&format!("struct {name} {{")),
        "{}",
        stdout(&table)
    );

    let out = run_in(
        dir.path(),
        &[
            "propose",
            &rel,
            "--struct",
            name,
            "--access",
            access.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "propose failed: {}",
        stderr(&out)
    );
    let diff = stdout(&out);
    println!("{}", stderr(&out).lines().next().unwrap_or(""));
    if diff.is_empty() {
        assert_eq!(
            before.conflicts, 0,
            "an empty diff for a struct with conflicts"
        );
    } else {
        assert!(
            diff.starts_with(&format!("--- a/{rel}\n+++ b/{rel}\n")),
            "{diff}"
        );
        let patch_file = dir.path().join("fix.patch");
        std::fs::write(&patch_file, &diff).unwrap();
        let applied = Command::new("patch")
            .current_dir(dir.path())
            .args(["-p1", "--batch", "-i", "fix.patch"])
            .output()
            .expect("`patch` runs (.ci/run installs it)");
        assert!(
            applied.status.success(),
            "patch -p1 failed:\n{}{}\n{diff}",
            String::from_utf8_lossy(&applied.stdout),
            String::from_utf8_lossy(&applied.stderr)
        );
        let patched = std::fs::read_to_string(dir.path().join(&rel)).unwrap();
        let original = std::fs::read_to_string(tree.join(&rel)).unwrap();
        assert_ne!(patched, original, "the diff changed nothing");
    }
    let after = show(dir.path(), &rel, name, &access);
    assert_eq!(after.code, 0, "the patched header still has hard conflicts");
    assert_eq!(after.conflicts, 0);
    println!(
        "struct {name}: {} -> {} bytes, hard conflicts {} -> {}",
        before.size, after.size, before.conflicts, after.conflicts
    );
    (before, after)
}

/// The seed case without `--kbuild`. The fast suite solves zone twice
/// already, with `--kbuild` (`cli_kbuild`, `cli_diff_size`: its diff
/// applied and measured), at about 10 s a solve in the test build; this one
/// runs with CACHELAYOUT_SWEEPS=full.
#[test]
fn struct_zone_of_mmzone_h_is_fixed_by_a_patch_that_applies() {
    if !crate::support::sweep::full() {
        println!("CACHELAYOUT_SWEEPS=full runs zone's round trip without --kbuild");
        return;
    }
    let Some(tree) = kernel_headers() else {
        println!("SKIPPED: no /usr/src/linux-headers-*-common (install Debian's linux-headers-amd64, as .ci/run does)");
        return;
    };
    let (before, after) = round_trip(&tree, "mmzone.h", "zone", "zone.toml");
    // percpu_drift_mark and contiguous (read-mostly) share their line with
    // compaction's lockless scanner positions.
    assert!(
        before.conflicts >= 1,
        "the 6.1 layout has a hard conflict on the compaction line"
    );
    assert!(
        after.size <= before.size,
        "{} -> {}",
        before.size,
        after.size
    );
    assert_eq!(after.size % 64, 0, "struct zone is cache-line aligned");
}

#[test]
fn struct_page_counter_keeps_its_three_lines() {
    let Some(tree) = kernel_headers() else {
        println!("SKIPPED: no /usr/src/linux-headers-*-common (install Debian's linux-headers-amd64, as .ci/run does)");
        return;
    };
    let (before, after) = round_trip(&tree, "page_counter.h", "page_counter", "page_counter.toml");
    // usage, the tracking counters and the limits are three classes that
    // may not share a line: three lines is the least, and 6.1 has them.
    assert_eq!(before.conflicts, 0);
    assert_eq!(before.size, 192);
    assert_eq!(after.size, 192);
}

#[test]
fn the_access_files_name_every_field_they_class() {
    let Some(tree) = kernel_headers() else {
        println!("SKIPPED: no /usr/src/linux-headers-*-common");
        return;
    };
    // `show --format json` lists each field with its class: no field the
    // access file names is missing (the access file would fail to apply),
    // and the classes the comments give are there.
    for (file, name, access, field, class) in [
        (
            "mmzone.h",
            "zone",
            "zone.toml",
            "vm_stat",
            "lockless_atomic",
        ),
        ("mmzone.h", "zone", "zone.toml", "_watermark", "read_mostly"),
        ("mmzone.h", "zone", "zone.toml", "lock", "locked_write"),
        (
            "page_counter.h",
            "page_counter",
            "page_counter.toml",
            "usage",
            "lockless_atomic",
        ),
        (
            "page_counter.h",
            "page_counter",
            "page_counter.toml",
            "max",
            "read_mostly",
        ),
    ] {
        let rel = format!("include/linux/{file}");
        let access = example("kernel").join(access);
        let out = run_in(
            &tree,
            &[
                "show",
                &rel,
                "--struct",
                name,
                "--access",
                access.to_str().unwrap(),
                "--format",
                "json",
            ],
        );
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
        let v = json(&out);
        let f = v["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == field)
            .unwrap_or_else(|| panic!("no field {field} in {v}"));
        assert!(f.to_string().contains(class), "{field}: {f}");
    }
}
