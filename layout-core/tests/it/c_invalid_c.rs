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
    (
        "long b __my_line_aligned;",
        "unknown identifier `__my_line_aligned` after member `b`",
    ),
    ("unsigned long b FOO, c;", "unknown identifier `FOO`"),
    ("short b FOO;", "unknown identifier `FOO`"),
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
    "unsigned __int128 w; long b; unsigned long c, d; long long e;",
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

#[test]
fn item_16_the_command_line_wins_over_a_header_define_and_says_so() {
    let text = "#define N 4\n#undef M\nstruct s {\n\tchar a[N];\n\tchar b[M];\n};\n";
    let mut d = Defines::default();
    d.insert("N", 16);
    d.insert("M", 2);
    let h = parse_header(Path::new("t.h"), text, &d, &TypeTable::default()).unwrap();
    assert_eq!(h.find_struct("s").unwrap().size, 18);
    let notes = h.overridden_defines();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].starts_with("t.h:1:1: note: "), "{notes:?}");
    assert!(
        notes[0].contains("N is ignored") && notes[0].contains("set it to 16"),
        "{notes:?}"
    );
    assert!(notes[1].starts_with("t.h:2:1: note: "), "{notes:?}");
    // Without -D the header's own value counts, and nothing is said.
    let h = parse_header(
        Path::new("t.h"),
        text,
        &Defines::default(),
        &TypeTable::default(),
    )
    .unwrap();
    assert!(h.overridden_defines().is_empty());
    let e = h.find_struct("s").unwrap_err().to_string();
    assert!(e.contains("constant M is not defined"), "{e}");
}

#[test]
fn item_16_huge_array_sizes_are_too_large_not_negative() {
    for size in [
        "18446744073709551615",
        "~0UL",
        "0xffffffffffffffff",
        "1UL << 62",
    ] {
        let text = format!("struct s {{\n\tchar a[{size}];\n}};\n");
        let e = read(&text).unwrap_err();
        assert!(
            e.contains("is too large") && !e.contains("negative"),
            "{size}: {e}"
        );
        assert!(
            e.starts_with("t.h:2:9: error: ") && e.contains("; help: the limit is 2^48 bytes"),
            "{e}"
        );
    }
    let e = read("struct s {\n\tchar a[-1];\n};\n").unwrap_err();
    assert!(e.contains("array size -1 is negative"), "{e}");
}

/// Members under the limit that add up past it: the record is too large
/// (the placement engine saturates instead of wrapping, and the front-end
/// refuses what reaches the limit).
#[test]
fn records_past_the_limit_are_too_large() {
    let e = read("struct s {\n\tchar a[1UL << 47];\n\tchar b[1UL << 47];\n};\n").unwrap_err();
    assert!(
        e.starts_with("t.h:1:1: error: struct s is too large")
            && e.contains("; help: the limit is 2^48 bytes"),
        "{e}"
    );
    // 2^13 members of 2^47 bytes pass u64 bits: still refused, no panic.
    let many: String = (0..1 << 13)
        .map(|i| format!("\tchar a{i}[1UL << 47];\n"))
        .collect();
    let e = read(&format!("struct s {{\n{many}}};\n")).unwrap_err();
    assert!(e.contains("struct s is too large"), "{e}");
    // Just under the limit is fine.
    let ok = read("struct s {\n\tchar a[1UL << 47];\n\tchar b[(1UL << 47) - 8];\n};\n");
    assert_eq!(ok, Ok((1 << 48) - 8));
}

#[test]
fn item_10_a_gigabyte_array_costs_nothing() {
    use layout_core::layout::reported_conflicts;
    use layout_core::{Access, Layout, Placement};
    let text = "struct s {\n\tchar a[1 << 30];\n\tlong b;\n};\n";
    let h = parse_header(
        Path::new("t.h"),
        text,
        &Defines::default(),
        &TypeTable::default(),
    )
    .unwrap();
    let mut c = h.find_struct("s").unwrap();
    assert_eq!(c.size, (1 << 30) + 8);
    c.model.fields[0].access = Access::ReadMostly;
    c.model.fields[1].access = Access::Lockless { group: None };
    let l = Layout::declared(&c.model, c.size, c.align, 64, Placement::Aligned).unwrap();
    // Where the struct starts off a line, the line after a's 2^24 lines
    // holds a's end and b.
    let conflicts = reported_conflicts(&c.model, &l);
    assert_eq!(conflicts.len(), 1, "{conflicts:?}");
    assert_eq!(conflicts[0].line, 1 << 24);
    assert_eq!(
        (
            conflicts[0].lockless.clone(),
            conflicts[0].read_mostly.clone()
        ),
        (vec!["b".to_string()], vec!["a".to_string()])
    );
}

#[test]
fn bounded_work_macro_expansion_is_limited_with_a_named_limit() {
    // Each level doubles: 2^40 tokens unbounded.
    let mut text = String::from("#define M0 1\n");
    for k in 1..=40 {
        text.push_str(&format!("#define M{k} (M{} + M{})\n", k - 1, k - 1));
    }
    text.push_str("struct s {\n\tchar a[M40];\n};\n");
    let e = read(&text).unwrap_err();
    assert!(
        e.contains("grows past 100000 tokens") && e.contains("; help: "),
        "{e}"
    );
    let text = "#define A B\n#define B A\nstruct s {\n\tchar a[A];\n};\n";
    let e = read(text).unwrap_err();
    assert!(
        e.starts_with("t.h:4:9: error: ") && e.contains("; help: "),
        "{e}"
    );
}

#[test]
fn bounded_work_members_are_limited_with_a_named_limit() {
    let mut body = String::new();
    for k in 0..=layout_core::c::MAX_FIELDS {
        body.push_str(&format!("char m{k}; "));
    }
    let e = read(&format!("struct s {{\n{body}\n}};\n")).unwrap_err();
    assert!(
        e.starts_with("t.h:1:1: error: struct `s` has 10001 members, over the limit of 10000"),
        "{e}"
    );
    assert!(e.contains("; help: "), "{e}");
}

/// A kernel-style attribute macro from another header (`long b
/// __my_line_aligned;`) was read as a member `__my_line_aligned` of type
/// `long b` at offset 8: it is refused at the word, with how to define it;
/// defined, it aligns `b` to 64 as gcc does.
#[test]
fn an_unknown_word_after_a_declarator_is_refused_not_a_member() {
    let body = "long a;\n\tlong b __my_line_aligned;\n\tlong c;";
    let text = format!("struct s {{\n\t{body}\n}};\n");
    let e = read(&text).expect_err("an undefined attribute macro");
    assert!(e.starts_with("t.h:3:9: error: "), "{e}");
    assert!(
        e.contains("unknown identifier `__my_line_aligned` after member `b`"),
        "{e}"
    );
    assert!(e.contains("#define __my_line_aligned"), "{e}");
    assert!(e.contains("--cc") && e.contains("--kbuild"), "{e}");
    assert!(e.contains("[defines]"), "{e}");
    let defined = format!("#define __my_line_aligned __attribute__((aligned(64)))\n{text}");
    let h = parse_header(
        Path::new("t.h"),
        &defined,
        &Defines::default(),
        &TypeTable::default(),
    )
    .unwrap();
    let c = h.find_struct("s").unwrap();
    let names: Vec<&str> = c.model.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(c.model.fields[1].original_offset, Some(64));
    assert_eq!(c.size, 128);
}
