//! Issue 12, item 15: what gcc refuses, the front-end refuses, with a
//! located one-line message and a help; and the valid forms next to each
//! case are still read. gcc is the oracle for both lists. Needs gcc.

#![cfg(feature = "c-header")]

use layout_core::c::{parse_header, Defines, TypeTable};
use std::path::Path;
use std::process::Command;

/// Struct bodies gcc rejects, and a word the message must contain.
const INVALID: &[(&str, &str)] = &[
    ("int n; int d[]; int x;", "not the last member"),
    ("int n; char d[]; char e[];", "not the last member"),
    ("int d[];", "no other member"),
    (
        "int a; char d[]; __cacheline_group_end(g);",
        "not the last member",
    ),
    ("int a; int a;", "duplicate member `a`"),
    ("int a, b, a;", "duplicate member `a`"),
    ("int a; union { int b; int a; };", "duplicate member `a`"),
    (
        "struct { int a; } ; long x; struct { char x; };",
        "duplicate member `x`",
    ),
    ("int *p : 3;", "pointer type"),
    ("float f : 3;", "floating type"),
    ("double f : 1;", "floating type"),
    ("struct { int q; } s : 2;", "struct type"),
    ("_Bool b : 2;", "`_Bool` holds 1 bit"),
    ("bool b : 3;", "`_Bool` holds 1 bit"),
    ("int a; } ; int stray; };", "closes no `{`"),
    ("ptr_t p : 3;", "pointer type"),
    ("int a : 33;", "exceeds its type"),
];

/// Close to the above, and valid.
const VALID: &[&str] = &[
    "int n; int d[];",
    "int n; struct { int a; } in; struct { int a; } in2;",
    "int a; union { int b; int c; };",
    "unsigned u : 3; signed s : 4; my_int m : 5; enum e en : 2;",
    "_Bool b : 1; bool c : 1; _Bool : 0; int after;",
    "int n; char d[0]; int after;",
    "__cacheline_group_begin(g); int a; char d[];",
];

const PRELUDE: &str =
    "#include <stdbool.h>\ntypedef int *ptr_t;\ntypedef int my_int;\nenum e { E0, E1 };\n\
    #define __cacheline_group_begin(g) unsigned char __cacheline_group_begin__##g[0]\n\
    #define __cacheline_group_end(g) unsigned char __cacheline_group_end__##g[0]\n";

fn header(body: &str) -> String {
    format!("{PRELUDE}struct s {{\n\t{body}\n}};\n")
}

fn gcc_accepts(dir: &Path, text: &str) -> bool {
    std::fs::write(dir.join("t.c"), text).unwrap();
    Command::new("gcc")
        .args(["-std=gnu11", "-fsyntax-only", "t.c"])
        .current_dir(dir)
        .output()
        .expect("gcc runs")
        .status
        .success()
}

fn read(text: &str) -> Result<u64, String> {
    parse_header(
        Path::new("t.h"),
        text,
        &Defines::default(),
        &TypeTable::default(),
    )
    .and_then(|h| h.find_struct("s"))
    .map(|c| c.size)
    .map_err(|e| e.to_string())
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "cachelayout-invalid-c-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn item_15_invalid_c_is_refused_as_gcc_refuses_it() {
    let dir = scratch("invalid");
    for (body, word) in INVALID {
        let text = header(body);
        assert!(!gcc_accepts(&dir, &text), "gcc accepts {body}");
        let e = read(&text).expect_err(body);
        assert!(e.contains(word), "{body}: {e}");
        // `t.h:LINE:COL: error: ...; help: ...` on one line.
        assert!(e.starts_with("t.h:") && e.contains(": error: "), "{e}");
        assert!(e.contains("; help: ") && !e.contains('\n'), "{e}");
    }
}

#[test]
fn item_15_the_valid_neighbours_are_read() {
    let dir = scratch("valid");
    for body in VALID {
        let text = header(body);
        assert!(gcc_accepts(&dir, &text), "gcc rejects {body}");
        read(&text).unwrap_or_else(|e| panic!("{body}: {e}"));
    }
}
