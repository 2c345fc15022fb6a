//! Helpers shared by the CLI integration tests: run the binary, compile C with
//! gcc, read JSON layouts.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn example(rel: &str) -> PathBuf {
    repo().join("examples").join(rel)
}

/// Run `cachelayout ARGS` in `dir`.
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the cachelayout binary runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            stdout(o),
            stderr(o)
        )
    })
}

/// `(name, offset)` of every field of a JSON layout object, in its order.
pub fn field_offsets(layout: &serde_json::Value) -> Vec<(String, u64)> {
    layout["fields"]
        .as_array()
        .expect("fields is an array")
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["offset"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Compile and run a C program in `dir`; returns its stdout.
pub fn gcc_run(dir: &Path, source: &str) -> String {
    let c = dir.join("oracle.c");
    std::fs::write(&c, source).unwrap();
    let exe = dir.join("oracle");
    let out = Command::new("gcc")
        .arg("-std=gnu11")
        .arg("-I")
        .arg(dir)
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("gcc runs");
    assert!(
        out.status.success(),
        "gcc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success());
    String::from_utf8_lossy(&run.stdout).into_owned()
}

/// `/usr/src/linux-headers-*-amd64` (the newest), the configured build tree
/// of Debian's `linux-headers-amd64`, which `.ci/run` installs.
pub fn kbuild_tree() -> Option<PathBuf> {
    let mut trees: Vec<PathBuf> = std::fs::read_dir("/usr/src")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("linux-headers-") && !n.ends_with("-common"))
        })
        .filter(|p| p.join(".config").is_file())
        .collect();
    trees.sort();
    trees.pop()
}

/// The `-common` sibling of a Debian build tree: its sources.
pub fn srctree(tree: &Path) -> PathBuf {
    let name = tree.file_name().unwrap().to_str().unwrap();
    let (stem, _) = name.rsplit_once('-').unwrap();
    tree.with_file_name(format!("{stem}-common"))
}
