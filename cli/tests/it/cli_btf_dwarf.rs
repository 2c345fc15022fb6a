//! Exact layouts from the compiler: `--btf` and `--dwarf` on objects that gcc
//! builds from the lru_gen header, and on the running kernel's BTF when present.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::*;

/// Compile the lru_gen header into an object with the given debug flag.
fn object(dir: &Path, flag: &str) -> PathBuf {
    let c = dir.join("use.c");
    std::fs::write(
        &c,
        "#include \"lru_gen.h\"\nstruct mem_cgroup_per_node node;\nstruct lru_gen_folio folio;\n",
    )
    .unwrap();
    let obj = dir.join(format!("use{flag}.o"));
    let out = Command::new("gcc")
        .args([flag, "-c", "-I"])
        .arg(example("kernel"))
        .arg(&c)
        .arg("-o")
        .arg(&obj)
        .output()
        .expect("gcc runs");
    assert!(
        out.status.success(),
        "gcc {flag}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    obj
}

fn check_exact_show(flag: &str, option: &str) {
    let dir = tempfile::tempdir().unwrap();
    let obj = object(dir.path(), flag);
    let access = example("kernel/lru_gen.toml");
    let out = run_in(
        dir.path(),
        &[
            "show",
            option,
            obj.to_str().unwrap(),
            "--struct",
            "lru_gen_folio",
            "--access",
            access.to_str().unwrap(),
            "--offset",
            "304",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let l = json(&out);
    assert_eq!(l["size"], 1360);
    let offsets: std::collections::HashMap<_, _> = field_offsets(&l).into_iter().collect();
    assert_eq!(offsets["refaulted"], 1272);
    assert_eq!(offsets["enabled"], 1336);
    assert_eq!(l["hard_conflicts"][0]["line"], 25);
}

#[test]
fn show_from_btf_without_a_header() {
    check_exact_show("-gbtf", "--btf");
}

#[test]
fn show_from_dwarf_without_a_header() {
    check_exact_show("-g", "--dwarf");
}

/// With a header and BTF, the diff comes from the header and the numbers
/// from the compiler; the patched header compiles to the proposed offsets.
#[test]
fn propose_with_btf_and_header_writes_a_diff_that_gcc_confirms() {
    let dir = tempfile::tempdir().unwrap();
    let obj = object(dir.path(), "-gbtf");
    std::fs::copy(example("kernel/lru_gen.h"), dir.path().join("lru_gen.h")).unwrap();
    let access = example("kernel/lru_gen.toml");
    let base = [
        "propose",
        "lru_gen.h",
        "--btf",
        obj.to_str().unwrap(),
        "--struct",
        "lru_gen_folio",
        "--access",
        access.to_str().unwrap(),
    ];
    let diff = run_in(dir.path(), &base);
    assert_eq!(diff.status.code(), Some(0), "{}", stderr(&diff));
    let mut json_args = base.to_vec();
    json_args.extend(["--format", "json"]);
    let v = json(&run_in(dir.path(), &json_args));
    // The JSON carries the diff the diff format prints, byte for byte.
    assert_eq!(
        v["diff"].as_str(),
        Some(String::from_utf8_lossy(&diff.stdout).as_ref()),
        "JSON's diff"
    );
    std::fs::write(dir.path().join("fix.patch"), &diff.stdout).unwrap();
    let patch = Command::new("patch")
        .current_dir(dir.path())
        .args(["-p1", "-i", "fix.patch"])
        .output()
        .unwrap();
    assert!(
        patch.status.success(),
        "{}",
        String::from_utf8_lossy(&patch.stdout)
    );
    let mut prog = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include \"lru_gen.h\"\nint main(void) {\n",
    );
    for (name, off) in field_offsets(&v["after"]) {
        prog.push_str(&format!(
            "\tif (offsetof(struct lru_gen_folio, {name}) != {off}) printf(\"{name} moved\\n\");\n"
        ));
    }
    prog.push_str(&format!(
        "\tif (sizeof(struct lru_gen_folio) != {}) printf(\"size\\n\");\n\treturn 0;\n}}\n",
        v["after"]["size"]
    ));
    assert_eq!(gcc_run(dir.path(), &prog), "");
}

#[test]
fn a_diff_without_a_header_is_refused_with_help() {
    let dir = tempfile::tempdir().unwrap();
    let obj = object(dir.path(), "-gbtf");
    let access = example("kernel/lru_gen.toml");
    let out = run_in(
        dir.path(),
        &[
            "propose",
            "--btf",
            obj.to_str().unwrap(),
            "--struct",
            "lru_gen_folio",
            "--access",
            access.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("header"), "{}", stderr(&out));
    let table = run_in(
        dir.path(),
        &[
            "propose",
            "--btf",
            obj.to_str().unwrap(),
            "--struct",
            "lru_gen_folio",
            "--access",
            access.to_str().unwrap(),
            "--format",
            "table",
        ],
    );
    assert_eq!(table.status.code(), Some(0), "{}", stderr(&table));
}

#[test]
fn running_kernel_btf() {
    let vmlinux = Path::new("/sys/kernel/btf/vmlinux");
    if !vmlinux.exists() {
        eprintln!("skipped: /sys/kernel/btf/vmlinux is absent on this machine");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("pc.toml"),
        "[struct.page_counter]\nlockless_atomic = [\"usage\"]\nread_mostly = [\"parent\", \"max\"]\n",
    )
    .unwrap();
    let out = run_in(
        dir.path(),
        &[
            "show",
            "--btf",
            "/sys/kernel/btf/vmlinux",
            "--struct",
            "page_counter",
            "--access",
            "pc.toml",
            "--format",
            "json",
        ],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let before = json(&out);
    let out = run_in(
        dir.path(),
        &[
            "propose",
            "--btf",
            "/sys/kernel/btf/vmlinux",
            "--struct",
            "page_counter",
            "--access",
            "pc.toml",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["before"]["size"], before["size"]);
    assert_eq!(v["after"]["hard_conflicts"], serde_json::json!([]));
    assert!(v["after"]["size"].as_u64().unwrap() <= before["size"].as_u64().unwrap());
}

#[test]
fn missing_struct_in_btf_lists_close_names() {
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        eprintln!("skipped: /sys/kernel/btf/vmlinux is absent on this machine");
        return;
    }
    let out = run_in(
        Path::new("."),
        &[
            "show",
            "--btf",
            "/sys/kernel/btf/vmlinux",
            "--struct",
            "page_countr",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("page_counter"), "{}", stderr(&out));
}
