//! The tree-safety pass against gcc: random structs with random users (a
//! positional initializer of the first members, directly and inside a
//! struct that embeds it, a range cleared by offset)
//! are proposed with `--safety-scan`, the diff is applied, and the users,
//! compiled and run with gcc against the proposed layout, still set and
//! clear exactly the members they name (checked by name). A refusal must
//! name a site. Few cases in the fast suite, more under
//! `CACHELAYOUT_SWEEPS=full`.

use super::support::{apply_p1, run_in, stderr, stdout, sweep};
use proptest::prelude::*;
use std::process::Command;

const TYPES: &[(&str, u64)] = &[("char", 1), ("short", 2), ("int", 4), ("long", 8)];

#[derive(Clone, Debug)]
struct Case {
    /// Each member: type index, class (0 read-mostly, 1 lockless, 2 cold).
    members: Vec<(usize, u8)>,
    /// The first `k` members are initialized by position.
    positional: usize,
    /// Members `a..b` are cleared by offset (`b == n`: to the end).
    range: (usize, usize),
}

fn case() -> impl Strategy<Value = Case> {
    (3usize..8)
        .prop_flat_map(|n| {
            (
                prop::collection::vec((0..TYPES.len(), 0u8..3), n),
                0..=n,
                (0..n, 1..=n),
            )
        })
        .prop_map(|(members, positional, (a, b))| {
            let (a, b) = (a.min(b - 1), b.max(a + 1));
            Case {
                members,
                positional,
                range: (a, b),
            }
        })
}

fn header(c: &Case) -> String {
    let mut t = String::from("struct s {\n");
    for (i, (ty, _)) in c.members.iter().enumerate() {
        t.push_str(&format!("\t{} m{i};\n", TYPES[*ty].0));
    }
    t.push_str("};\n");
    t
}

fn access(c: &Case) -> String {
    let names = |k: u8| {
        c.members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.1 == k)
            .map(|(i, _)| format!("\"m{i}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "[struct.s]\nread_mostly = [{}]\nlockless_atomic = [{}]\n",
        names(0),
        names(1)
    )
}

/// The users, and a `main` that checks them by member name.
fn users(c: &Case) -> String {
    let n = c.members.len();
    let values: Vec<String> = (0..c.positional).map(|i| (i + 1).to_string()).collect();
    let (a, b) = c.range;
    let len = if b == n {
        format!("sizeof(struct s) - offsetof(struct s, m{a})")
    } else {
        format!("offsetof(struct s, m{b}) - offsetof(struct s, m{a})")
    };
    let mut t = format!(
        "#include <stddef.h>\n#include <stdio.h>\n#include <string.h>\n#include \"s.h\"\n\
         static struct s init = {{ {0} }};\n\
         struct outer {{ int tag; struct s in; }};\n\
         static struct outer o = {{ 9, {{ {0} }} }};\n\
         static void clear(struct s *p)\n{{\n\tmemset(&p->m{a}, 0, {len});\n}}\n\
         int main(void)\n{{\n\tstruct s v;\n\tmemset(&v, 0x5a, sizeof(v));\n\tclear(&v);\n",
        if values.is_empty() {
            "0".to_string()
        } else {
            values.join(", ")
        }
    );
    for i in 0..n {
        let want = if i < c.positional { i + 1 } else { 0 };
        t.push_str(&format!(
            "\tif (init.m{i} != {want} || o.in.m{i} != {want}) {{ printf(\"init m{i}\\n\"); return 1; }}\n"
        ));
        let cleared = i >= a && i < b;
        t.push_str(&format!(
            "\tif ((v.m{i} == 0) != {}) {{ printf(\"clear m{i}\\n\"); return 1; }}\n",
            cleared as u8
        ));
    }
    t.push_str("\tprintf(\"ok\\n\");\n\treturn 0;\n}\n");
    t
}

fn gcc_ok(dir: &std::path::Path) -> String {
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

proptest! {
    #![proptest_config(sweep::proptest_config(64, 6))]

    #[test]
    fn a_proposal_never_breaks_the_users_the_pass_found(c in case()) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.h"), header(&c)).unwrap();
        std::fs::write(dir.path().join("a.toml"), access(&c)).unwrap();
        std::fs::write(dir.path().join("users.c"), users(&c)).unwrap();
        prop_assert_eq!(gcc_ok(dir.path()), "ok\n", "the users as declared");
        let o = run_in(
            dir.path(),
            &["propose", "s.h", "--struct", "s", "--access", "a.toml", "--safety-scan", "users.c"],
        );
        if o.status.code() == Some(2) {
            // A refusal names the users' site.
            prop_assert!(stderr(&o).starts_with("users.c:"), "{}", stderr(&o));
            return Ok(());
        }
        prop_assert!(o.status.success(), "{}", stderr(&o));
        let diff = stdout(&o);
        if !diff.is_empty() {
            apply_p1(dir.path(), &diff, "the proposal");
        }
        prop_assert_eq!(gcc_ok(dir.path()), "ok\n", "the users against the proposal:\n{}", diff);
    }
}
