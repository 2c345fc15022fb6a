//! Hostile translation units handed to `infer --source` and `audit`
//! (libclang opens their includes itself): an include of `/dev/zero`, of a
//! link to it, of a FIFO; a macro that expands past the memory or CPU
//! limit; nesting of 10^3 to 10^5 levels of operators, `if`s, parentheses,
//! blocks, initializers and structs. Every case ends in a result or one
//! clear error line with exit 2, within 10 s, no signal; an audit over a
//! tree that holds such units finishes and lists them.

use crate::support::{run_with_deadline, stderr};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

const HEADER: &str = "struct s { long a; long b; };\n";

/// A directory with `s.h` and the unit `u.c` of `body` (after `#include "s.h"`).
fn unit(body: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("s.h"), HEADER).unwrap();
    std::fs::write(d.path().join("u.c"), format!("#include \"s.h\"\n{body}")).unwrap();
    d
}

fn infer(dir: &Path, extra: &[&str]) -> (Output, Duration) {
    let mut args = vec![
        "infer", "s.h", "--struct", "s", "--source", "u.c", "--cc", "gcc -I.", "--hot", "f",
    ];
    args.extend(extra);
    let t0 = Instant::now();
    let o = run_with_deadline(dir, &[], &args, Duration::from_secs(60));
    (o, t0.elapsed())
}

/// The run ended by itself, with a result (0) or one error line (2), in time.
fn contained(what: &str, o: &Output, took: Duration) -> Option<String> {
    use std::os::unix::process::ExitStatusExt as _;
    assert_eq!(o.status.signal(), None, "{what}: a signal; {}", stderr(o));
    assert!(took < Duration::from_secs(10), "{what}: took {took:?}");
    let err = stderr(o);
    match o.status.code() {
        Some(0) => None,
        Some(2) => {
            let lines: Vec<&str> = err.lines().filter(|l| l.contains("error:")).collect();
            assert_eq!(lines.len(), 1, "{what}: {err}");
            assert!(!err.contains("panicked"), "{what}: {err}");
            Some(lines[0].to_string())
        }
        c => panic!("{what}: exit {c:?}: {err}"),
    }
}

fn refused(what: &str, o: &Output, took: Duration, says: &str) {
    let e = contained(what, o, took).unwrap_or_else(|| panic!("{what}: accepted"));
    assert!(e.starts_with("u.c"), "{what}: {e}");
    assert!(e.contains(says), "{what}: {e}");
}

#[test]
fn includes_of_a_device_a_link_to_it_and_a_fifo_are_refused_by_name() {
    let d = unit("#include \"zlink.h\"\nvoid f(struct s *p) { p->a++; }\n");
    std::os::unix::fs::symlink("/dev/zero", d.path().join("zlink.h")).unwrap();
    let (o, t) = infer(d.path(), &[]);
    refused(
        "link",
        &o,
        t,
        "include of a non-regular file `zlink.h` -> /dev/zero",
    );
    let d = unit("#include \"/dev/zero\"\nvoid f(struct s *p) { p->a++; }\n");
    let (o, t) = infer(d.path(), &[]);
    refused(
        "device",
        &o,
        t,
        "`/dev/zero` -> /dev/zero (it is a character device",
    );
    let d = unit("#include \"sub/fifo.h\"\nvoid f(struct s *p) { p->a++; }\n");
    std::fs::create_dir(d.path().join("sub")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(d.path().join("sub/fifo.h"))
        .status()
        .unwrap();
    assert!(made.success());
    let (o, t) = infer(d.path(), &[]);
    refused("fifo", &o, t, "it is a FIFO");
}

/// `A39` expands to 2^39 copies of `p->a+`: past any memory or CPU limit.
fn macro_bomb() -> String {
    let mut s = String::from("#define A0 p->a+\n");
    for i in 1..40 {
        s += &format!("#define A{i} A{} A{}\n", i - 1, i - 1);
    }
    s + "long f(struct s *p) { return A39 0; }\n"
}

#[test]
fn a_unit_past_its_memory_or_cpu_limit_is_an_error_at_the_unit() {
    let d = unit(&macro_bomb());
    let (o, t) = infer(
        d.path(),
        &["--unit-memory-mb", "512", "--unit-seconds", "60"],
    );
    refused("memory", &o, t, "error: unit exceeded 512 MB while parsing");
    let (o, t) = infer(d.path(), &["--unit-seconds", "1"]);
    refused(
        "cpu",
        &o,
        t,
        "error: unit exceeded 1 s of CPU time while parsing",
    );
}

/// The unit of `kind` nested `n` levels deep.
fn nested(kind: &str, n: usize) -> String {
    match kind {
        "binary" => format!(
            "long f(struct s *p) {{ return {}; }}\n",
            vec!["p->a"; n].join(" + ")
        ),
        "if" => format!(
            "void f(struct s *p) {{ {} p->b++; }}\n",
            "if (p->a) ".repeat(n)
        ),
        "parens" => format!(
            "long f(struct s *p) {{ return {}p->a{}; }}\n",
            "(".repeat(n),
            ")".repeat(n)
        ),
        "blocks" => format!(
            "void f(struct s *p) {{ {}p->b++;{} }}\n",
            "{".repeat(n),
            "}".repeat(n)
        ),
        "initializer" => format!(
            "int x[1] = {}1{};\nvoid f(struct s *p) {{ p->a++; }}\n",
            "{".repeat(n),
            "}".repeat(n)
        ),
        "structs" => format!(
            "{}int z;{}\nvoid f(struct s *p) {{ p->a++; }}\n",
            "struct n { ".repeat(n),
            "} y;".repeat(n)
        ),
        _ => unreachable!(),
    }
}

const KINDS: [&str; 6] = ["binary", "if", "parens", "blocks", "initializer", "structs"];

#[test]
fn deep_nesting_ends_in_a_result_or_a_clear_error() {
    // The two cases, then every kind at 10^3 levels (a result) and
    // 2·10^4; with CACHELAYOUT_SWEEPS=full also 10^4 and 10^5.
    let deep = unit(&nested("binary", 16_000));
    let (o, t) = infer(deep.path(), &[]);
    refused(
        "16000 operators",
        &o,
        t,
        "nested deeper than 4096 levels in `f`",
    );
    let mut depths = vec![1_000, 20_000];
    if crate::support::sweep::full() {
        depths.extend([10_000, 100_000]);
    }
    for kind in KINDS {
        for &n in &depths {
            let d = unit(&nested(kind, n));
            let (o, t) = infer(d.path(), &[]);
            let what = format!("{kind} × {n}");
            let got = contained(&what, &o, t);
            eprintln!(
                "{what}: {:.1} s: {}",
                t.as_secs_f64(),
                got.as_deref().unwrap_or("a result")
            );
            if n == 1_000 && kind != "initializer" && kind != "structs" {
                assert_eq!(got, None, "{what}");
            }
        }
    }
}

#[test]
fn an_audit_over_hostile_units_finishes_and_lists_them() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path();
    std::fs::create_dir_all(t.join("include")).unwrap();
    std::fs::create_dir_all(t.join("src")).unwrap();
    std::fs::write(
        t.join("include/q.h"),
        "struct q { long head; char pad[56]; long tail; long seen; };\n",
    )
    .unwrap();
    std::fs::write(
        t.join("src/good.c"),
        "#include \"q.h\"\nvoid q_push(struct q *q) { __atomic_fetch_add(&q->head, 1, 0); }\nlong q_peek(struct q *q) { return q->tail + q->seen; }\n",
    )
    .unwrap();
    std::fs::write(
        t.join("src/zero.c"),
        "#include \"q.h\"\n#include \"zlink.h\"\nvoid q_zero(struct q *q) { q->seen = 0; }\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("/dev/zero", t.join("src/zlink.h")).unwrap();
    std::fs::write(
        t.join("src/deep.c"),
        format!(
            "#include \"q.h\"\nlong q_deep(struct q *q) {{ return {}; }}\n",
            vec!["q->seen"; 16_000].join(" + ")
        ),
    )
    .unwrap();
    // Not UTF-8: it does not read, and is left out like the others.
    std::fs::write(t.join("src/latin1.c"), b"/* caf\xe9 */\nint x;\n").unwrap();
    std::fs::write(
        t.join("roots.toml"),
        "[q]\nsources = [\"src/*.c\"]\nhot = [\"q_push\", \"q_peek\"]\n",
    )
    .unwrap();
    let cache = t.join("cache");
    let args = [
        "audit",
        "--cc",
        "gcc -Iinclude",
        "--roots",
        "roots.toml",
        "include",
        "--format",
        "json",
        "--cache-dir",
        cache.to_str().unwrap(),
    ];
    for run in 0..2 {
        let t0 = Instant::now();
        let o = run_with_deadline(t, &[], &args, Duration::from_secs(60));
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(t0.elapsed() < Duration::from_secs(10));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let left: Vec<(String, String)> = j["units_left_out"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| {
                (
                    u["unit"].as_str().unwrap().to_string(),
                    u["reason"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(left.len(), 3, "run {run}: {left:?}");
        assert_eq!(left[0].0, "src/latin1.c");
        assert!(left[0].1.contains("not valid UTF-8"), "{left:?}");
        assert_eq!(left[1].0, "src/deep.c");
        assert!(left[1].1.contains("nested deeper than 4096"), "{left:?}");
        assert_eq!(left[2].0, "src/zero.c");
        assert!(
            left[2]
                .1
                .contains("include of a non-regular file `zlink.h` -> /dev/zero"),
            "{left:?}"
        );
        // The text report lists them too.
        let mut text_args = args[..args.len() - 4].to_vec();
        text_args.push("--no-cache");
        let text = run_with_deadline(t, &[], &text_args, Duration::from_secs(60));
        let err_and_out = format!("{}{}", String::from_utf8_lossy(&text.stdout), stderr(&text));
        assert!(
            err_and_out.contains("src/zero.c: left out: "),
            "{err_and_out}"
        );
        // The good unit is analysed: q is found and classified.
        assert_eq!(j["units"], 3, "{}", j);
    }
}
