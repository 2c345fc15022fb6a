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

/// A run of bit-fields after `unsigned :0;` whose bit-fields sit in `#if`
/// blocks (as task_struct's do), under the compiler's layout: the proposal
/// moves it, the diff applies, and gcc places every member and bit-field of
/// the patched header as the JSON says.
#[test]
fn a_bitfield_run_split_by_if_blocks_is_written_as_the_compiler_laid_it_out() {
    const SPLIT: &str = "#include \"other.h\"
struct s {
\tlong stack;
\t_Bool on_rq;
\tint usage;
\tunsigned int flags;
\tunsigned int ptrace;
\tlong a[5];
\tunsigned int personality;
\tunsigned s_a:1;
\tunsigned s_b:1;

\t/* Force alignment to the next boundary: */
\tunsigned :0;

\tunsigned r_a:1;
#ifdef HAS_SPARE
\tunsigned r_b:1;
#endif
#ifdef NOT_DEFINED
\tunsigned r_off:1;
#endif
\tunsigned r_c:2;
\tunsigned long atomic_flags;
\tlong tail[8];
\tint n;
};
";
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("inc")).unwrap();
    std::fs::write(d.join("inc/other.h"), OTHER).unwrap();
    std::fs::write(d.join("s.h"), SPLIT).unwrap();
    std::fs::write(
        d.join("a.toml"),
        "[struct.s]\nlockless_atomic = [\"usage\"]\nread_mostly = [\"stack\", \"flags\", \"ptrace\"]\n",
    )
    .unwrap();
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
    let o = run_in(d, &[&args[..], &["--format", "json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let offsets = |side: &str| -> Vec<(String, u64, bool)> {
        j[side]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["name"].as_str().unwrap().to_string(),
                    f["offset"].as_u64().unwrap(),
                    f["type"].as_str().unwrap().contains(':'),
                )
            })
            .collect()
    };
    let (before, after) = (offsets("before"), offsets("after"));
    let moved = |n: &str| {
        let at = |v: &[(String, u64, bool)]| v.iter().find(|f| f.0 == n).map(|f| f.1);
        (at(&before).unwrap(), at(&after).unwrap())
    };
    let (old, new) = moved("r_a");
    assert_ne!(old, new, "the split run moves");
    let o = run_in(d, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    // Bit positions in the original, before the patch.
    let bits = ["r_a", "r_b", "r_c"];
    let bit_probe = |d: &Path| -> Vec<i64> {
        let mut c = String::from(
            "#include <stdio.h>\n#include <string.h>\n#include \"s.h\"\nint main(void)\n{\n",
        );
        for b in bits {
            c.push_str(&format!(
                "\t{{ struct s v; memset(&v, 0, sizeof v); v.{b} = 1; const unsigned char *p = (const unsigned char *)&v; \
                 for (long i = 0; i < (long)sizeof v * 8; i++) if (p[i / 8] >> (i % 8) & 1) {{ printf(\"%ld\\n\", i); break; }} }}\n"
            ));
        }
        c.push_str("\treturn 0;\n}\n");
        std::fs::write(d.join("bits.c"), c).unwrap();
        let built = Command::new("gcc")
            .current_dir(d)
            .args(["-Iinc", "-o", "bits", "bits.c"])
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "{}",
            String::from_utf8_lossy(&built.stderr)
        );
        let run = Command::new(d.join("bits")).output().unwrap();
        String::from_utf8_lossy(&run.stdout)
            .lines()
            .map(|l| l.parse().unwrap())
            .collect()
    };
    let bits_before = bit_probe(d);
    apply_p1(d, &stdout(&o), "the proposal");
    let plain: Vec<String> = after.iter().filter(|f| !f.2).map(|f| f.0.clone()).collect();
    let want: Vec<(String, u64)> = after
        .iter()
        .filter(|f| !f.2)
        .map(|f| (f.0.clone(), f.1))
        .collect();
    assert_eq!(
        gcc_offsets(d, &plain),
        want,
        "gcc's offsets of the patched header"
    );
    let shift = 8 * (new as i64 - old as i64);
    let want_bits: Vec<i64> = bits_before.iter().map(|b| b + shift).collect();
    assert_eq!(
        bit_probe(d),
        want_bits,
        "the run's bits, moved from {old} to {new}"
    );
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
        assert!(o.status.success(), "{name}: {e}");
        if name == "task_struct" {
            // Its bit-field run after `unsigned :0` has bit-fields in `#if`
            // blocks: the diff is written too (the emitter's replay agrees).
            let mut diff_args: Vec<&str> = Vec::new();
            let (header_path, kbuild_dir, access_path) = (
                common.join(header),
                kbuild.to_str().unwrap().to_string(),
                access.to_str().unwrap().to_string(),
            );
            diff_args.extend([
                "propose",
                header_path.to_str().unwrap(),
                "--kbuild",
                &kbuild_dir,
                "--struct",
                name,
                "--access",
                &access_path,
            ]);
            let d = run_in(dir.path(), &diff_args);
            assert_eq!(d.status.code(), Some(0), "{name}: {}", stderr(&d));
            assert!(!stdout(&d).is_empty(), "{name}: a diff");
        }
        let j = json(&o);
        assert!(
            j["after"]["fields"]
                .as_array()
                .is_some_and(|f| !f.is_empty()),
            "{name}"
        );
    }
}
