//! Issue 39: the header reader (tree-sitter walks, the constant-expression
//! evaluator, the macro expander, the attribute reader) on nesting of 10^3
//! to 10^5 levels: parentheses, unary and binary operators, casts, `?:`,
//! `#if` blocks and `#if` expressions, macro calls, nested and anonymous
//! structs, declarators, `typeof`, initializers and stray comment tokens.
//! Every case ends in a struct or a one-line error, in bounded time, on a
//! thread with the main thread's 8 MiB stack (the command line's), never a
//! stack overflow.

#![cfg(feature = "c-header")]

use layout_core::c::{parse_header, Defines, TypeTable};
use std::path::Path;
use std::time::Instant;

/// The header of `kind` nested `n` levels deep; each defines `struct s`.
fn nested(kind: &str, n: usize) -> String {
    let rep = |s: &str, k: usize| s.repeat(k);
    match kind {
        "parens" => format!(
            "struct s {{ char x[{}1{}]; long y; }};\n",
            rep("(", n),
            rep(")", n)
        ),
        "binary" => format!(
            "struct s {{ char x[{}]; long y; }};\n",
            vec!["1"; n].join("+")
        ),
        "unary" => format!(
            "struct s {{ char x[{}1]; long y; }};\n",
            rep("- ", 2 * (n / 2))
        ),
        "not" => format!(
            "struct s {{ char x[{}1]; long y; }};\n",
            rep("!", 2 * (n / 2))
        ),
        "cast" => format!("struct s {{ char x[{}1]; long y; }};\n", rep("(int)", n)),
        "ternary" => format!(
            "struct s {{ char x[{}1{}]; long y; }};\n",
            rep("1?", n),
            rep(":1", n)
        ),
        "ternary_else" => format!("struct s {{ char x[{}1]; long y; }};\n", rep("0?1:", n)),
        "if_blocks" => format!(
            "{}struct s {{ long y; }};\n{}",
            rep("#if 1\n", n),
            rep("#endif\n", n)
        ),
        "if_expr" => format!(
            "#if {}1{}\nstruct s {{ long y; }};\n#endif\n",
            rep("(", n),
            rep(")", n)
        ),
        "macro_calls" => format!(
            "#define F(x) (x+1)\nstruct s {{ char x[{}1{}]; long y; }};\n",
            rep("F(", n),
            rep(")", n)
        ),
        "macro_chain" => {
            let s: String = (0..n)
                .map(|i| format!("#define D{i} D{}\n", i + 1))
                .collect();
            s + &format!("#define D{n} 8\nstruct s {{ char x[D0]; long y; }};\n")
        }
        "structs" => format!(
            "struct s {{ {}int z;{} long y; }};\n",
            rep("struct { ", n),
            rep("} a;", n)
        ),
        "anon_unions" => format!(
            "struct s {{ {}int z;{} long y; }};\n",
            rep("union { ", n),
            rep("};", n)
        ),
        "pointers" => format!("struct s {{ char {}x; long y; }};\n", rep("*", n)),
        "declarators" => format!(
            "struct s {{ char {}x{}; long y; }};\n",
            rep("(*", n),
            rep(")", n)
        ),
        "arrays" => format!("struct s {{ char x{}; long y; }};\n", rep("[1]", n)),
        "typeof" => format!(
            "struct s {{ {}int{} x; long y; }};\n",
            rep("typeof(", n),
            rep(")", n)
        ),
        "initializer" => format!(
            "struct s {{ long y; }};\nstatic int v[] = {}1{};\n",
            rep("{", n),
            rep("}", n)
        ),
        "comment_tokens" => format!("struct s {{ {} */ long y; }};\n", rep("/*", n)),
        "aligned" => format!(
            "struct s {{ long y __attribute__((aligned({}8{}))); }};\n",
            rep("(", n),
            rep(")", n)
        ),
        _ => unreachable!("{kind}"),
    }
}

const KINDS: [&str; 20] = [
    "parens",
    "binary",
    "unary",
    "not",
    "cast",
    "ternary",
    "ternary_else",
    "if_blocks",
    "if_expr",
    "macro_calls",
    "macro_chain",
    "structs",
    "anon_unions",
    "pointers",
    "declarators",
    "arrays",
    "typeof",
    "initializer",
    "comment_tokens",
    "aligned",
];

/// Reads `text` and looks `struct s` up, on an 8 MiB stack: Ok, or the error line.
fn read(text: String) -> Result<(), String> {
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            let h = parse_header(
                Path::new("deep.h"),
                &text,
                &Defines::default(),
                &TypeTable::default(),
            )
            .map_err(|e| e.to_string())?;
            h.find_struct("s").map(|_| ()).map_err(|e| e.to_string())
        })
        .unwrap()
        .join()
        .expect("no panic")
}

#[test]
fn every_kind_of_nesting_ends_in_a_struct_or_one_error_line() {
    let mut depths = vec![1_000, 10_000];
    if crate::support::sweep::full() {
        depths.extend([30_000, 100_000]);
    }
    for kind in KINDS {
        for &n in &depths {
            let t0 = Instant::now();
            let got = read(nested(kind, n));
            let took = t0.elapsed();
            eprintln!(
                "{kind} × {n}: {took:.2?}: {}",
                got.as_ref().err().map_or("a struct", |e| e.as_str())
            );
            if let Err(e) = &got {
                assert!(e.starts_with("deep.h"), "{kind} × {n}: {e}");
                assert!(e.contains(": error: "), "{kind} × {n}: {e}");
                assert!(!e.contains('\n'), "{kind} × {n}: {e}");
            }
            // The time is printed, not asserted: a shared machine's load
            // decides it (a quadratic walk shows as 100 000 levels taking
            // a hundred times 10 000's).
        }
    }
}

#[test]
fn moderate_nesting_still_reads() {
    for kind in [
        "binary",
        "pointers",
        "declarators",
        "arrays",
        "if_blocks",
        "macro_chain",
    ] {
        let n = if kind == "macro_chain" { 50 } else { 200 };
        assert_eq!(read(nested(kind, n)), Ok(()), "{kind} × {n}");
    }
    for kind in ["parens", "unary", "cast", "ternary", "ternary_else"] {
        assert_eq!(read(nested(kind, 200)), Ok(()), "{kind} × 200");
    }
}
