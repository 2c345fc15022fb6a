//! Issue 12: a proptest mutator for the C header input, run in CI for a
//! bounded number of cases (`PROPTEST_CASES`, default 256; a fixed seed,
//! `PROPTEST_RNG_SEED` picks another).
//!
//! Seeds: the example header (`examples/kernel/lru_gen.h`), a set of small
//! structs with bit-fields, flexible arrays, attributes and conditionals,
//! and installed kernel headers where present (read at test time). Each
//! case applies random mutations (delete, duplicate or swap ranges; insert
//! C tokens, extreme numbers, directives, braces) and runs the front-end
//! on every struct of the result, then the solver, the verifier and the
//! diff emitter on the small ones. The invariant: a verified layout and a
//! diff (or a refusal), or an error that is one line in the promised
//! format, `file:line:col: error: ...; help: ...`; never a panic, and never
//! more than a few seconds on a case.

#![cfg(feature = "c-header")]

use layout_core::c::{parse_header, Defines, TypeTable};
use layout_core::emit::{c_diff, CStyle};
use layout_core::solve::{solve, SolveOptions};
use layout_core::{Access, Diagnostic};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

const LRU_GEN: &str = include_str!("../../../examples/kernel/lru_gen.h");

const SMALL: &str = "\
#define N 4
#define SHIFT(x) ((x) << 2)
enum e { E0, E1 = 7, E2 };
typedef unsigned int u32;
struct inner { long a; char b; };
struct s {
\tunsigned int a:3, b:5;
\tchar c;
\tu32 d:7;
\tint :0;
\tlong e[N];
#ifdef CONFIG_X
\tint x;
#else
\tint y;
#endif
\tstruct inner in;
\tunion { int u1; long u2; };
\tchar f[SHIFT(E2)] __attribute__((aligned(16)));
\t_Bool g:1;
\tchar tail[];
};
struct t {
\tlong x ____cacheline_aligned_in_smp;
\tCACHELINE_PADDING(_pad1_);
\tint y;
} __aligned(64);
";

/// Installed kernel headers used as seeds when present.
const KERNEL_HEADERS: &[&str] = &[
    "include/linux/page_counter.h",
    "include/linux/llist.h",
    "include/linux/kref.h",
    "include/linux/percpu_counter.h",
];

fn seeds() -> Vec<(String, String)> {
    let mut out = vec![
        ("lru_gen.h".to_string(), LRU_GEN.to_string()),
        ("small.h".to_string(), SMALL.to_string()),
    ];
    if let Ok(dirs) = std::fs::read_dir("/usr/src") {
        let mut dirs: Vec<_> = dirs.flatten().map(|d| d.path()).collect();
        dirs.sort();
        for d in dirs {
            for rel in KERNEL_HEADERS {
                if let Ok(text) = std::fs::read_to_string(d.join(rel)) {
                    out.push((rel.rsplit('/').next().unwrap().to_string(), text));
                }
            }
        }
    }
    out
}

/// Tokens a mutation inserts.
const TOKENS: &[&str] = &[
    "}",
    "{",
    ";",
    ":",
    ":0",
    "[",
    "]",
    "(",
    ")",
    ",",
    "*",
    "0",
    "1",
    "-1",
    "1<<40",
    "1<<30",
    "~0u",
    "18446744073709551615",
    "0x7fffffff + 1",
    "char a[];",
    "int x:33;",
    "_Bool b:2;",
    "#if 1\n",
    "#endif\n",
    "#else\n",
    "#define X (",
    "#undef N\n",
    "\"str",
    "/*",
    "*/",
    "__attribute__((aligned(",
    "__aligned(3)",
    "____cacheline_aligned_in_smp",
    "struct",
    "union",
    "int",
    "long long",
    "unsigned",
    "float f:3;",
    "void",
    "typedef",
    "enum {",
    "sizeof(struct s)",
    "offsetof(struct s, a)",
    "__packed",
    "#pragma pack(1)\n",
    "DECLARE_BITMAP(m, 1<<20);",
    "struct_group(g,",
    "\u{e9}",
    "\0",
];

#[derive(Clone, Debug)]
enum Mutation {
    Delete(usize, usize),
    Duplicate(usize, usize),
    Insert(usize, usize),
    SwapLines(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..40).prop_map(|(a, n)| Mutation::Delete(a, n)),
        (any::<usize>(), 1usize..80).prop_map(|(a, n)| Mutation::Duplicate(a, n)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(a, t)| Mutation::Insert(a, t)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
    ]
}

/// The nearest char boundary at or before `at` (mod the length).
fn boundary(s: &str, at: usize) -> usize {
    let mut i = if s.is_empty() { 0 } else { at % (s.len() + 1) };
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut s = text.to_string();
    match *m {
        Mutation::Delete(a, n) => {
            let a = boundary(&s, a);
            let b = boundary(&s, (a + n).min(s.len()));
            s.replace_range(a..b.max(a), "");
        }
        Mutation::Duplicate(a, n) => {
            let a = boundary(&s, a);
            let b = boundary(&s, (a + n).min(s.len())).max(a);
            let piece = s[a..b].to_string();
            s.insert_str(b, &piece);
        }
        Mutation::Insert(a, t) => {
            let a = boundary(&s, a);
            s.insert_str(a, TOKENS[t]);
        }
        Mutation::SwapLines(a, b) => {
            let mut lines: Vec<&str> = s.split('\n').collect();
            let n = lines.len();
            lines.swap(a % n, b % n);
            s = lines.join("\n");
        }
    }
    s
}

/// The promised format: one line, `file:line:col: error: ...; help: ...`
/// (a whole-file error may have no line).
fn check_message(d: &Diagnostic, text: &str) -> Result<(), String> {
    let shown = d.to_string();
    let whole_file = d.message.starts_with("no struct") || d.message.contains("defines no struct");
    if shown.contains('\n') {
        return Err(format!("more than one line: {shown}"));
    }
    if d.file.is_none() || d.help.as_deref().is_none_or(str::is_empty) {
        return Err(format!("no file or no help: {shown}"));
    }
    if !whole_file && (d.line == 0 || d.column == 0) {
        return Err(format!("no line:col: {shown}"));
    }
    if d.line > text.lines().count() + 1 {
        return Err(format!("line past the end: {shown}"));
    }
    if shown.len() > 2000 {
        return Err(format!("message of {} bytes", shown.len()));
    }
    Ok(())
}

/// Runs the pipeline on one header text.
fn pipeline(name: &str, text: &str) -> Result<usize, String> {
    let path = Path::new(name);
    let h = match parse_header(path, text, &Defines::default(), &TypeTable::default()) {
        Ok(h) => h,
        Err(d) => return check_message(&d, text).map(|_| 0),
    };
    let mut laid_out = 0;
    for s in h.struct_names().into_iter().take(4) {
        let c = match h.find_struct(&s) {
            Ok(c) => c,
            Err(d) => {
                check_message(&d, text)?;
                continue;
            }
        };
        laid_out += 1;
        if c.model.fields.len() > 24 || c.size > 1 << 16 {
            continue;
        }
        let mut model = c.model.clone();
        for (i, f) in model.fields.iter_mut().enumerate() {
            f.access = match i % 3 {
                0 => Access::ReadMostly,
                1 => Access::Lockless { group: None },
                _ => Access::Cold,
            };
        }
        // The pipeline is under test, not the optimum: a small work
        // budget (a struct left open still gets a verified layout, which
        // the diff must write).
        let opts = SolveOptions {
            time_limit: Duration::from_secs(5),
            work_limit: 1_000_000,
            ..SolveOptions::default()
        };
        let Ok(sol) = solve(&model, &opts) else {
            continue;
        };
        if let Err(d) = c_diff(&c.source, &sol.layout, CStyle::Aligned) {
            check_message(&d, text)?;
        }
    }
    Ok(laid_out)
}

/// The pipeline in a thread: a panic or a case over 20 s is a failure.
fn bounded(name: String, text: String) -> Result<usize, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(|| pipeline(&name, &text));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Ok(r)) => r,
        Ok(Err(_)) => Err("panicked".into()),
        Err(_) => Err("took more than 20 s".into()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256),
        failure_persistence: None,
        // The same cases on every run (PROPTEST_RNG_SEED picks others).
        rng_seed: std::env::var("PROPTEST_RNG_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(RngSeed::Fixed(0x12c_f022), RngSeed::Fixed),
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_headers_give_a_layout_or_a_located_error(
        seed in any::<usize>(),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let seeds = seeds();
        let (name, text) = &seeds[seed % seeds.len()];
        let mut text = text.clone();
        for m in &mutations {
            text = apply(&text, m);
        }
        if let Err(why) = bounded(name.clone(), text.clone()) {
            let at = mutations.iter().map(|m| format!("{m:?}")).collect::<Vec<_>>().join(", ");
            prop_assert!(false, "{name} after [{at}]: {why}");
        }
    }
}

#[test]
fn the_seeds_lay_out() {
    for (name, text) in seeds() {
        let n = bounded(name.clone(), text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(n > 0, "{name}: no struct laid out");
    }
}
