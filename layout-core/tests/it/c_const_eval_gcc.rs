//! Issue 12, item 4: integer constant expressions have C's types and
//! conversions. gcc is the oracle: 1,200 random expressions over literals
//! of every integer type (decimal, hex, suffixes), casts, and every C
//! operator are folded by gcc, which gives each one's value and type, or
//! diagnoses it (overflow, shift count, negative left shift, division by
//! zero). The front-end's evaluator must give the same value and type, and
//! refuse exactly the expressions gcc diagnoses.
//!
//! Deterministic (fixed seed); two gcc runs in all. Needs gcc.

#![cfg(feature = "c-header")]

use layout_core::c::evaluate_constant;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::process::Command;

const CASES: usize = 1200;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

const LITERALS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "28",
    "31",
    "63",
    "255",
    "1000",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "0x7fffffff",
    "0x80000000",
    "0xffffffff",
    "0xff",
    "017",
    "0u",
    "1u",
    "5U",
    "0xffffffffu",
    "1L",
    "2l",
    "-1L",
    "1UL",
    "3ul",
    "0x10UL",
    "9223372036854775807",
    "0x8000000000000000",
    "0xffffffffffffffffUL",
    "1LL",
    "2ULL",
    "'A'",
    "'\\n'",
];

const CASTS: &[&str] = &[
    "(unsigned char)",
    "(signed char)",
    "(char)",
    "(short)",
    "(unsigned short)",
    "(int)",
    "(unsigned)",
    "(unsigned int)",
    "(long)",
    "(unsigned long)",
    "(long long)",
    "(_Bool)",
];

const BINARY: &[&str] = &[
    "+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "==", "!=", "<", ">", "<=", ">=", "&&",
    "||",
];

fn expr(rng: &mut Rng, depth: u32) -> String {
    if depth == 0 || rng.below(5) == 0 {
        return rng.pick(LITERALS).to_string();
    }
    match rng.below(10) {
        0 => format!(
            "{}({})",
            rng.pick(&["-", "~", "!", "+"]),
            expr(rng, depth - 1)
        ),
        1 => format!("{}({})", rng.pick(CASTS), expr(rng, depth - 1)),
        2 => format!(
            "({} ? {} : {})",
            expr(rng, depth - 1),
            expr(rng, depth - 1),
            expr(rng, depth - 1)
        ),
        3 => {
            // Shifts mostly by small counts, so that most are defined.
            let count = if rng.below(4) == 0 {
                expr(rng, depth - 1)
            } else {
                rng.below(40).to_string()
            };
            format!(
                "({}) {} {count}",
                expr(rng, depth - 1),
                rng.pick(&["<<", ">>"])
            )
        }
        _ => format!(
            "({}) {} ({})",
            expr(rng, depth - 1),
            rng.pick(BINARY),
            expr(rng, depth - 1)
        ),
    }
}

fn scratch() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cachelayout-const-eval-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The declarations that make gcc fold expression `i` on line `i + 1`.
fn line(i: usize, e: &str) -> String {
    format!(
        "static const unsigned long long v{i} = (unsigned long long)({e}); \
         static const int t{i} = (int)(sizeof({e}) * 8 + (((__typeof__({e}))-1 > 0) ? 1000 : 0));\n"
    )
}

#[test]
fn item_4_constant_expressions_match_gcc() {
    if Command::new("gcc").arg("--version").output().is_err() {
        eprintln!("gcc not installed: skipped");
        return;
    }
    let mut rng = Rng(0x4c0_5745);
    // Unary `+` applies the integer promotions to a top-level cast.
    let exprs: Vec<String> = (0..CASES)
        .map(|_| format!("+({})", expr(&mut rng, 4)))
        .collect();
    let dir = scratch();

    // Pass 1: which lines does gcc diagnose?
    let mut all = String::new();
    for (i, e) in exprs.iter().enumerate() {
        all.push_str(&line(i, e));
    }
    std::fs::write(dir.join("all.c"), &all).unwrap();
    let out = Command::new("gcc")
        .args([
            "-std=gnu11",
            "-fsyntax-only",
            "-Wshift-negative-value",
            "all.c",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut diagnosed = BTreeSet::new();
    for l in stderr.lines() {
        let Some(rest) = l.strip_prefix("all.c:") else {
            continue;
        };
        if !(rest.contains(": warning: ") || rest.contains(": error: ")) {
            continue;
        }
        let n: usize = rest.split(':').next().unwrap().parse().unwrap();
        diagnosed.insert(n - 1);
    }

    // Pass 2: the values and types of the others.
    let mut prog = String::from("#include <stdio.h>\n");
    let mut body = String::from("int main(void)\n{\n");
    for (i, e) in exprs.iter().enumerate() {
        if !diagnosed.contains(&i) {
            prog.push_str(&line(i, e));
            writeln!(body, "\tprintf(\"{i} %llu %d\\n\", v{i}, t{i});").unwrap();
        }
    }
    body.push_str("\treturn 0;\n}\n");
    prog.push_str(&body);
    std::fs::write(dir.join("values.c"), &prog).unwrap();
    let out = Command::new("gcc")
        .args(["-std=gnu11", "-w", "-o", "values", "values.c"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(dir.join("values")).output().unwrap();
    let values = String::from_utf8(run.stdout).unwrap();

    let mut checked = 0;
    let mut mismatches = Vec::new();
    for l in values.lines() {
        let mut w = l.split(' ');
        let i: usize = w.next().unwrap().parse().unwrap();
        let v: u64 = w.next().unwrap().parse().unwrap();
        let t: u32 = w.next().unwrap().parse().unwrap();
        let (bits, unsigned) = (t % 1000, t >= 1000);
        let want_ty = match (bits, unsigned) {
            (32, false) => "int",
            (32, true) => "unsigned int",
            (64, false) => "long",
            (64, true) => "unsigned long",
            other => panic!("type {other:?} of {}", exprs[i]),
        };
        match evaluate_constant(&exprs[i]) {
            Ok((got, ty)) if got.rem_euclid(1 << 64) as u64 == v && ty == want_ty => {}
            got => mismatches.push(format!("{}: gcc {v} {want_ty}, ours {got:?}", exprs[i])),
        }
        checked += 1;
    }
    for &i in &diagnosed {
        if let Ok(got) = evaluate_constant(&exprs[i]) {
            mismatches.push(format!("{}: gcc diagnoses it, ours {got:?}", exprs[i]));
        }
    }
    eprintln!(
        "{checked} values and types compared, {} expressions diagnosed by gcc and refused",
        diagnosed.len()
    );
    assert!(
        mismatches.is_empty(),
        "{} of {CASES} differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert_eq!(checked + diagnosed.len(), CASES);
    assert!(
        checked >= 600 && diagnosed.len() >= 100,
        "{checked} {}",
        diagnosed.len()
    );
}
