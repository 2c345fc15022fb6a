//! Helpers shared by the emitter tests (`emit_idioms.rs`, `report_emit.rs`):
//! a scratch directory, `patch -p1` on a written header, gcc's offsets of a
//! verified layout, and a small deterministic generator.

#![allow(dead_code)]

pub mod break_oracles;
pub mod sweep;

use layout_core::VerifiedLayout;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh directory `cachelayout-FILE-PID-NAME` in the temp dir, FILE being
/// the calling test file (`emit-idioms`, `report-emit`): the test files share
/// one binary, so the file keeps their names apart.
#[track_caller]
pub fn scratch_dir(name: &str) -> PathBuf {
    let file = Path::new(std::panic::Location::caller().file())
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("test")
        .replace('_', "-");
    let dir =
        std::env::temp_dir().join(format!("cachelayout-{file}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `text` at `dir/path`, applies `diff` with `patch -p1`, returns the result.
pub fn apply(dir: &Path, path: &str, text: &str, diff: &str) -> String {
    let file = dir.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
    std::fs::write(dir.join("layout.patch"), diff).unwrap();
    let out = Command::new("patch")
        .args(["-p1", "--batch", "--forward", "-i", "layout.patch"])
        .current_dir(dir)
        .output()
        .expect("patch runs");
    assert!(
        out.status.success(),
        "patch -p1 failed:\n{}{}\n{diff}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(file).unwrap()
}

/// Runs `gcc -std=gnu11 -fsyntax-only FLAGS -I . check.c` in `dir`.
pub fn gcc_check_c(dir: &Path, flags: &[&str]) -> Output {
    Command::new("gcc")
        .args(["-std=gnu11", "-fsyntax-only"])
        .args(flags)
        .args(["-I", ".", "check.c"])
        .current_dir(dir)
        .output()
        .expect("gcc runs")
}

/// Compiles `header` after `prelude` with gcc (and the `extra` C lines, and
/// the extra gcc `flags`) and asserts every field's offset, the size and the
/// alignment of the verified layout.
pub fn assert_gcc_layout_with(
    dir: &Path,
    prelude: &str,
    header: &str,
    v: &VerifiedLayout,
    extra: &[String],
    flags: &[&str],
) {
    let mut c = format!("{prelude}#include \"{header}\"\n");
    for line in extra {
        c.push_str(line);
        c.push('\n');
    }
    let s = v.strukt();
    for sl in &v.slots {
        let name = &s.fields[sl.field].name;
        c.push_str(&format!(
            "_Static_assert(offsetof(struct {}, {name}) == {}, \"offset of {name}\");\n",
            s.name, sl.offset
        ));
    }
    c.push_str(&format!(
        "_Static_assert(sizeof(struct {}) == {}, \"size\");\n",
        s.name, v.size
    ));
    c.push_str(&format!(
        "_Static_assert(_Alignof(struct {}) == {}, \"align\");\n",
        s.name, v.align
    ));
    std::fs::write(dir.join("check.c"), c).unwrap();
    let out = gcc_check_c(dir, flags);
    assert!(
        out.status.success(),
        "gcc rejects the layout:\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(dir.join(header)).unwrap()
    );
}

/// Appends to `check` the `#include` of the random header `path` and the
/// static assertions on `v`, the layout of its `struct s{case}`.
pub fn push_case_asserts(check: &mut String, case: usize, path: &str, v: &VerifiedLayout) {
    check.push_str(&format!("#include \"{path}\"\n"));
    let s = v.strukt();
    for sl in &v.slots {
        let name = &s.fields[sl.field].name;
        check.push_str(&format!(
            "_Static_assert(offsetof(struct s{case}, {name}) == {}, \"s{case}.{name}\");\n",
            sl.offset
        ));
    }
    check.push_str(&format!(
        "_Static_assert(sizeof(struct s{case}) == {}, \"s{case} size\");\n\
         _Static_assert(_Alignof(struct s{case}) == {}, \"s{case} align\");\n",
        v.size, v.align
    ));
}

/// A small deterministic generator (64-bit LCG).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}
