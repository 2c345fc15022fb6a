//! The tree-safety pass's readings of offsets against gcc: pairs of small
//! users, one whose code depends on the member order and one that only
//! seems to (it names members by their offsets), compiled and run with
//! gcc against the struct as declared, against the proposal (for those
//! the pass lets through) and against the members in reverse order (any
//! order must do for them; for the others, it breaks what they read). The
//! users are written here: BPF-like loads (`BPF_LDX_MEM(SIZE, .., OFF)`
//! reading SIZE bytes at OFF), context ranges (`bpf_ctx_range`,
//! `bpf_ctx_range_till`), case labels and GNU case ranges, loads through
//! a cast at an offset.

use super::support::{apply_p1, run_in, stderr, stdout};
use std::path::Path;
use std::process::Command;

/// Members and types in declaration order.
const MEMBERS: &[(&str, &str)] = &[
    ("long", "name"),
    ("int", "lo"),
    ("int", "hi"),
    ("long", "hits"),
    ("long", "max"),
    ("long", "min"),
    ("long", "misses"),
    ("long", "total"),
];

const ACCESS: &str = "[struct.s]
read_mostly = [\"name\", \"max\", \"min\", \"total\"]
lockless_atomic = [\"hits\", \"misses\"]
";

fn header(reversed: bool) -> String {
    let mut m: Vec<&(&str, &str)> = MEMBERS.iter().collect();
    if reversed {
        m.reverse();
    }
    let mut t = String::from("struct s {\n");
    for (ty, name) in m {
        t.push_str(&format!("\t{ty} {name};\n"));
    }
    t.push_str("};\n");
    t
}

/// The users: `checks` are C conditions that must hold for `v` (and
/// `which(off)`, a switch over offsets, holds `cases`).
fn users(cases: &str, checks: &[&str]) -> String {
    let mut t = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include <string.h>\n#include \"s.h\"\n\
         #define offsetofend(T, m) (offsetof(T, m) + sizeof(((T *)0)->m))\n\
         #define BPF_B 1\n#define BPF_H 2\n#define BPF_W 4\n#define BPF_DW 8\n\
         static unsigned long long load(const void *p, int size, unsigned long off)\n{\n\
         \tunsigned long long x = 0;\n\tmemcpy(&x, (const char *)p + off, size);\n\treturn x;\n}\n\
         #define BPF_LDX_MEM(SIZE, DST, SRC, OFF) load(SRC, SIZE, OFF)\n\
         #define bpf_ctx_range(T, m) offsetof(T, m) ... offsetofend(T, m) - 1\n\
         #define bpf_ctx_range_till(T, a, b) offsetof(T, a) ... offsetofend(T, b) - 1\n\
         static int which(unsigned long off)\n{\n\tswitch (off) {\n",
    );
    t.push_str(cases);
    t.push_str(
        "\tdefault: return 0;\n\t}\n}\n\
         int main(void)\n{\n\tstruct s v;\n\tmemset(&v, 0x5a, sizeof(v));\n\
         \tv.name = 1; v.lo = 5; v.hi = 7; v.hits = 11; v.max = 13; v.min = 17; v.misses = 19; v.total = 0x0102;\n\
         \t(void)which(0);\n",
    );
    for (k, c) in checks.iter().enumerate() {
        t.push_str(&format!(
            "\tif (!({c})) {{ printf(\"check {k}\\n\"); return 1; }}\n"
        ));
    }
    t.push_str("\tprintf(\"ok\\n\");\n\treturn 0;\n}\n");
    t
}

/// What the users print, built with gcc against `s.h` in `dir`.
fn gcc_run(dir: &Path) -> String {
    let built = Command::new("gcc")
        .current_dir(dir)
        .args(["-std=gnu11", "-w", "-o", "users", "users.c"])
        .output()
        .expect("gcc runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = Command::new(dir.join("users")).output().unwrap();
    String::from_utf8_lossy(&run.stdout).into_owned()
}

fn fixture(users: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.h"), header(false)).unwrap();
    std::fs::write(dir.path().join("a.toml"), ACCESS).unwrap();
    std::fs::write(dir.path().join("users.c"), users).unwrap();
    dir
}

fn propose(dir: &Path) -> std::process::Output {
    run_in(
        dir,
        &[
            "propose",
            "s.h",
            "--struct",
            "s",
            "--access",
            "a.toml",
            "--safety-scan",
            "users.c",
        ],
    )
}

/// Users that name one member by its offset: the pass lets the proposal
/// through, and they hold against it and against any order.
const NAMES: &[(&str, &str, &[&str])] = &[
    (
        "a BPF load of the member's width",
        "",
        &["BPF_LDX_MEM(BPF_W, 0, &v, offsetof(struct s, hi)) == 7"],
    ),
    (
        "a BPF load inside the member",
        "",
        &["BPF_LDX_MEM(BPF_B, 0, &v, offsetof(struct s, total) + 1) == 1"],
    ),
    (
        "a context range of one member and a case label",
        "\tcase bpf_ctx_range(struct s, hits): return 1;\n\tcase offsetof(struct s, lo): return 2;\n",
        &[
            "which(offsetof(struct s, hits) + 3) == 1",
            "which(offsetof(struct s, lo)) == 2",
            "which(offsetof(struct s, hi)) == 0",
        ],
    ),
    (
        "a load through a cast at the member's offset",
        "",
        &["*(int *)((char *)&v + offsetof(struct s, hi)) == 7"],
    ),
];

/// Users whose code depends on where members lie relative to each other:
/// refused at their site; they hold as declared and break in reverse.
const POSITIONS: &[(&str, &str, &[&str])] = &[
    (
        "a context range over two members",
        "\tcase bpf_ctx_range_till(struct s, lo, hits): return 1;\n",
        &["which(offsetof(struct s, hi)) == 1"],
    ),
    (
        "a GNU case range over two members",
        "\tcase offsetof(struct s, lo) ... offsetofend(struct s, hi) - 1: return 1;\n",
        &["which(offsetof(struct s, hi)) == 1"],
    ),
    (
        "a BPF load wider than the member",
        "",
        &["BPF_LDX_MEM(BPF_DW, 0, &v, offsetof(struct s, lo)) == (7ULL << 32 | 5)"],
    ),
    (
        "a BPF load past the member",
        "",
        &["BPF_LDX_MEM(BPF_W, 0, &v, offsetof(struct s, lo) + 4) == 7"],
    ),
    (
        "a BPF load at the member's end",
        "",
        &["BPF_LDX_MEM(BPF_W, 0, &v, offsetofend(struct s, lo)) == 7"],
    ),
    (
        "a load through a cast wider than the member",
        "",
        &["*(unsigned long long *)((char *)&v + offsetof(struct s, lo)) == (7ULL << 32 | 5)"],
    ),
];

#[test]
fn offsets_that_name_one_member_hold_under_the_proposal_and_any_order() {
    for (what, cases, checks) in NAMES {
        let dir = fixture(&users(cases, checks));
        assert_eq!(gcc_run(dir.path()), "ok\n", "{what}: as declared");
        let o = propose(dir.path());
        assert!(o.status.success(), "{what}: {}", stderr(&o));
        let diff = stdout(&o);
        assert!(!diff.is_empty(), "{what}: the proposal moves members");
        apply_p1(dir.path(), &diff, what);
        assert_eq!(gcc_run(dir.path()), "ok\n", "{what}: the proposal\n{diff}");
        std::fs::write(dir.path().join("s.h"), header(true)).unwrap();
        assert_eq!(gcc_run(dir.path()), "ok\n", "{what}: in reverse");
    }
}

#[test]
fn offsets_that_depend_on_positions_refuse_and_break_in_another_order() {
    for (what, cases, checks) in POSITIONS {
        let dir = fixture(&users(cases, checks));
        assert_eq!(gcc_run(dir.path()), "ok\n", "{what}: as declared");
        let o = propose(dir.path());
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.starts_with("users.c:") && e.contains("error: struct s: reordering it breaks this "),
            "{what}: {e}"
        );
        assert!(stdout(&o).is_empty(), "{what}: nothing is proposed");
        // The refusal is true: in reverse order the users read something else.
        std::fs::write(dir.path().join("s.h"), header(true)).unwrap();
        assert_eq!(gcc_run(dir.path()), "check 0\n", "{what}: in reverse");
    }
}
