//! Bad input gets one line naming the file, the line, and what to add or
//! change; exit status 2; never a panic.

use crate::support;

use std::path::Path;
use support::*;

const HEADER: &str = "#define N 4\n\
struct counters {\n\
\tunsigned long config;\n\
\tlong hits[N];\n\
\tunsigned int flags;\n\
};\n";

const ACCESS: &str = "[struct.counters]\n\
read_mostly = [\"config\"]\n\
lockless_atomic = [\"hits\"]\n";

fn setup(header: &str, access: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.h"), header).unwrap();
    std::fs::write(dir.path().join("a.toml"), access).unwrap();
    dir
}

/// Runs the command, checks exit 2 and a single-line error; returns the line.
fn error_line(dir: &Path, args: &[&str]) -> String {
    let out = run_in(dir, args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "expected exit 2, stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line:\n{err}");
    assert!(stdout(&out).is_empty(), "nothing on stdout on error");
    lines[0].to_string()
}

fn show(dir: &Path, extra: &[&str]) -> String {
    let mut args = vec!["show", "c.h", "--struct", "counters", "--access", "a.toml"];
    args.extend_from_slice(extra);
    error_line(dir, &args)
}

#[test]
fn the_fixture_itself_is_fine() {
    let dir = setup(HEADER, ACCESS);
    let out = run_in(
        dir.path(),
        &["show", "c.h", "--struct", "counters", "--access", "a.toml"],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "hits and config share line 0: {}",
        stderr(&out)
    );
}

#[test]
fn unknown_struct_names_the_header_and_the_close_name() {
    let dir = setup(HEADER, ACCESS);
    let e = error_line(dir.path(), &["show", "c.h", "--struct", "counter"]);
    assert!(e.starts_with("c.h"), "{e}");
    assert!(e.contains("counter") && e.contains("counters"), "{e}");
}

#[test]
fn access_field_the_struct_lacks_names_the_toml_line() {
    let dir = setup(
        HEADER,
        "[struct.counters]\nread_mostly = [\"config\"]\nlockless_atomic = [\"hitz\"]\n",
    );
    let e = show(dir.path(), &[]);
    assert!(e.starts_with("a.toml:3"), "{e}");
    assert!(e.contains("hitz") && e.contains("hits"), "{e}");
}

#[test]
fn field_in_two_classes_names_both() {
    let dir = setup(
        HEADER,
        "[struct.counters]\nread_mostly = [\"config\", \"hits\"]\nlockless_atomic = [\"hits\"]\n",
    );
    let e = show(dir.path(), &[]);
    assert!(e.starts_with("a.toml:"), "{e}");
    assert!(
        e.contains("hits") && e.contains("read_mostly") && e.contains("lockless_atomic"),
        "{e}"
    );
}

#[test]
fn unknown_type_says_what_to_add() {
    let dir = setup(
        "struct counters {\n\tunsigned long config;\n\tstruct mystery m;\n};\n",
        "",
    );
    let e = error_line(
        dir.path(),
        &["show", "c.h", "--struct", "counters", "--access", "a.toml"],
    );
    assert!(e.starts_with("c.h:3:"), "{e}");
    assert!(e.contains("struct mystery") && e.contains("[types]"), "{e}");
}

#[test]
fn missing_constant_says_to_define_it() {
    let dir = setup("struct counters {\n\tlong hits[NR_CPUS];\n};\n", "");
    let e = error_line(dir.path(), &["show", "c.h", "--struct", "counters"]);
    assert!(e.starts_with("c.h:2:"), "{e}");
    assert!(e.contains("NR_CPUS") && e.contains("-D"), "{e}");
    // ... and defining it works.
    let out = run_in(
        dir.path(),
        &[
            "show",
            "c.h",
            "--struct",
            "counters",
            "-D",
            "NR_CPUS=8",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["size"], 64);
}

#[test]
fn unparsable_header_points_at_the_error() {
    let dir = setup(
        "struct counters {\n\tunsigned long config;\n\tlong hits[4]\n\tint @@@;\n};\n",
        "",
    );
    let e = error_line(dir.path(), &["show", "c.h", "--struct", "counters"]);
    assert!(e.starts_with("c.h:"), "{e}");
    assert!(e.contains("parse") || e.contains("syntax"), "{e}");
}

/// `long b __my_line_aligned;` with the macro from another header: gcc
/// refuses the line; it was read as a member named `__my_line_aligned`.
#[test]
fn an_undefined_attribute_macro_after_a_member_is_named_and_located() {
    let dir = setup(
        "struct counters {\n\tlong a;\n\tlong b __my_line_aligned;\n\tlong c;\n};\n",
        "",
    );
    let e = error_line(dir.path(), &["show", "c.h", "--struct", "counters"]);
    assert!(e.starts_with("c.h:3:9: error: "), "{e}");
    assert!(
        e.contains("unknown identifier `__my_line_aligned` after member `b`"),
        "{e}"
    );
    assert!(
        e.contains("#define __my_line_aligned") && e.contains("--cc") && e.contains("--kbuild"),
        "{e}"
    );
}

#[test]
fn unreadable_files_are_named() {
    let dir = setup(HEADER, ACCESS);
    let e = error_line(dir.path(), &["show", "missing.h", "--struct", "counters"]);
    assert!(e.starts_with("missing.h"), "{e}");
    let e = error_line(
        dir.path(),
        &[
            "show",
            "c.h",
            "--struct",
            "counters",
            "--access",
            "missing.toml",
        ],
    );
    assert!(e.starts_with("missing.toml"), "{e}");
}

#[test]
fn bad_toml_points_at_the_line() {
    let dir = setup(HEADER, "[struct.counters]\nread_mostly = [\"config\"\n");
    let e = show(dir.path(), &[]);
    assert!(e.starts_with("a.toml:"), "{e}");
}

#[test]
fn bad_flags_are_explained() {
    let dir = setup(HEADER, ACCESS);
    let e = show(dir.path(), &["--line", "48"]);
    assert!(e.contains("48") && e.contains("64"), "{e}");
    let e = show(dir.path(), &["-D", "N=four"]);
    assert!(e.contains("-D"), "{e}");
    let e = show(dir.path(), &["--offset", "4"]);
    assert!(e.contains("offset 4") && e.contains("alignment"), "{e}");
}

#[test]
fn infeasible_pins_are_explained() {
    let dir = setup(
        "struct counters {\n\tunsigned long config;\n\tunsigned long hits;\n};\n",
        "[struct.counters]\nread_mostly = [\"config\"]\nlockless_atomic = [\"hits\"]\npinned = [\"config\", \"hits\"]\n",
    );
    let e = error_line(
        dir.path(),
        &[
            "propose", "c.h", "--struct", "counters", "--access", "a.toml",
        ],
    );
    assert!(
        e.contains("config") && e.contains("hits") && e.contains("pinned"),
        "{e}"
    );
}
