//! A struct the compiler lays out (`--cc`, `--kbuild`) never fails because
//! the header reader lacks another header's text: the header is read for
//! where each member is, every size and offset comes from the compiler's
//! DWARF. On a header of our own that uses a type, a typedef, an enum
//! constant, a flag macro and a member renamed by a macro, all from another
//! header of the `--cc` include directory, and the bounds of a randomizable
//! part: the proposal is made, its diff applies, and gcc lays the patched
//! header out as the JSON says. Under `CACHELAYOUT_SWEEPS=full`: Debian
//! 6.1's in_device, mem_cgroup, xfrm_state and task_struct with `--kbuild`.

use super::support::{apply_p1, json, kbuild_tree, run_in, stderr, stdout, sweep};
use std::path::Path;
use std::process::Command;

const OTHER: &str = "#define randomized_struct_fields_start
#define randomized_struct_fields_end
#define HAS_SPARE
#define old_name new_name
struct ext { long x[3]; };
typedef struct { int a[4]; } addr_t;
enum { OTHER_MAX = 5 };
struct cb { void *next; void (*fn)(struct cb *); };
";

const HEADER: &str = "#include \"other.h\"
struct s {
\tlong name;
\tlong hits;
\tstruct ext e;
\taddr_t addr;
\tint vals[OTHER_MAX];
\trandomized_struct_fields_start
\tlong max;
#ifdef HAS_SPARE
\tlong spare;
#endif
\tstruct cb old_name;
\trandomized_struct_fields_end
\tlong misses;
\tlong min;
};
";

const ACCESS: &str = "[struct.s]
read_mostly = [\"name\", \"max\", \"min\"]
lockless_atomic = [\"hits\", \"misses\"]
";

/// The members' offsets as gcc lays out `s.h` in `dir`.
fn gcc_offsets(dir: &Path, members: &[String]) -> Vec<(String, u64)> {
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include \"s.h\"\nint main(void)\n{\n",
    );
    for m in members {
        c.push_str(&format!(
            "\tprintf(\"{m} %zu\\n\", offsetof(struct s, {m}));\n"
        ));
    }
    c.push_str("\treturn 0;\n}\n");
    std::fs::write(dir.join("offsets.c"), c).unwrap();
    let built = Command::new("gcc")
        .current_dir(dir)
        .args(["-Iinc", "-o", "offsets", "offsets.c"])
        .output()
        .expect("gcc runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = Command::new(dir.join("offsets")).output().unwrap();
    String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(|l| {
            let (n, o) = l.split_once(' ').unwrap();
            (n.to_string(), o.parse().unwrap())
        })
        .collect()
}

#[test]
fn another_headers_types_and_constants_are_the_compilers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("inc")).unwrap();
    std::fs::write(d.join("inc/other.h"), OTHER).unwrap();
    std::fs::write(d.join("s.h"), HEADER).unwrap();
    std::fs::write(d.join("a.toml"), ACCESS).unwrap();
    let args = [
        "propose",
        "s.h",
        "--struct",
        "s",
        "--access",
        "a.toml",
        "--cc",
        "gcc -Iinc",
    ];
    // The header alone does not know `struct ext` or OTHER_MAX: an error.
    let o = run_in(d, &args[..6]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let mut with_json = args.to_vec();
    with_json.extend(["--format", "json"]);
    let o = run_in(d, &with_json);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let after: Vec<(String, u64)> = j["after"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["offset"].as_u64().unwrap(),
            )
        })
        .collect();
    let names: Vec<String> = after.iter().map(|(n, _)| n.clone()).collect();
    // The flag the header tests is defined, the renamed member is there.
    assert!(
        names.contains(&"spare".to_string()) && names.contains(&"old_name".to_string()),
        "{names:?}"
    );
    assert_ne!(j["after"], j["before"], "the proposal moves members");
    let o = run_in(d, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("note: struct s is marked randomized_struct_fields_start"),
        "{}",
        stderr(&o)
    );
    apply_p1(d, &stdout(&o), "the proposal");
    // gcc reads `old_name` as `new_name`.
    let spelled: Vec<String> = names
        .iter()
        .map(|n| {
            if n == "old_name" {
                "new_name".into()
            } else {
                n.clone()
            }
        })
        .collect();
    let mut got = gcc_offsets(d, &spelled);
    for (n, _) in got.iter_mut() {
        if n == "new_name" {
            *n = "old_name".into();
        }
    }
    assert_eq!(got, after, "gcc's offsets of the patched header");
}

/// Debian 6.1's structs whose headers use other headers' types and
/// constants: each is proposed (a verified layout) or refused for a
/// reason that is no failure of the header reader.
#[test]
fn kernel_structs_the_header_reader_used_to_block() {
    if !sweep::full() {
        println!("CACHELAYOUT_SWEEPS=full runs in_device, mem_cgroup, xfrm_state and task_struct");
        return;
    }
    let Some(kbuild) = kbuild_tree() else {
        return;
    };
    let common = super::support::srctree(&kbuild);
    let dir = tempfile::tempdir().unwrap();
    for (header, name, read_mostly, lockless) in [
        ("include/linux/inetdevice.h", "in_device", "dev", "refcnt"),
        ("include/linux/memcontrol.h", "mem_cgroup", "id", "memory"),
        ("include/net/xfrm.h", "xfrm_state", "id", "refcnt"),
        ("include/linux/sched.h", "task_struct", "pid", "tgid"),
    ] {
        let access = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &access,
            format!("[struct.{name}]\nread_mostly = [\"{read_mostly}\"]\nlockless_atomic = [\"{lockless}\"]\n"),
        )
        .unwrap();
        let o = run_in(
            dir.path(),
            &[
                "propose",
                common.join(header).to_str().unwrap(),
                "--kbuild",
                kbuild.to_str().unwrap(),
                "--struct",
                name,
                "--access",
                access.to_str().unwrap(),
                "--format",
                "json",
            ],
        );
        let e = stderr(&o);
        for reader in [
            "unknown type",
            "is not defined",
            "syntax error",
            "in the header but not in the compiler's layout",
            "lacks fields the compiler laid out",
        ] {
            assert!(!e.contains(reader), "{name}: {e}");
        }
        if name == "task_struct" {
            // Read whole; whether a layout of its bit-field runs after
            // `unsigned :0` can be written is the emitter's matter, not
            // judged here.
            continue;
        }
        assert!(o.status.success(), "{name}: {e}");
        let j = json(&o);
        assert!(
            j["after"]["fields"]
                .as_array()
                .is_some_and(|f| !f.is_empty()),
            "{name}"
        );
    }
}
