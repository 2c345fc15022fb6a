//! The compiler front-end on headers that are hard to lay out alone:
//!
//! - a run of bit-fields that starts inside a storage unit shared with the
//!   members before it (`unsigned a:1; u8 b; unsigned c:5, ...`), which the
//!   compiler splits by unit (`struct pci_dev`'s `pme_support`);
//! - a header that does not compile alone, laid out after a prelude that the
//!   note on stderr names;
//! - a struct under an `#if` the `.config` leaves out, which the error says.
//!
//! Oracles: gcc's `offsetof`/`sizeof`, `pahole` on the probe object, and the
//! patched fixture compiled again. The kernel tests use Debian's
//! `linux-headers-amd64` and are skipped with a message when it is missing.

use crate::support;

use std::path::Path;
use std::process::{Command, Output};
use support::*;

fn run_cached(dir: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(dir)
        .env("XDG_CACHE_HOME", cache)
        .args(args)
        .output()
        .expect("the cachelayout binary runs")
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

/// `struct pci_dev`'s shape around `pme_support`: the run starts at byte 6 of
/// the unit `imm_ready` opened at 4, and its last bits spill into the unit at 8.
const SHARED_UNIT: &str = "struct bf {\n\tint current_state;\n\tunsigned int imm_ready:1;\n\
\tunsigned char pm_cap;\n\tunsigned int pme_support:5;\n\tunsigned int pme_poll:1;\n\
\tunsigned int a:1, b:1, c:1, d:1, e:1, f:1, g:1, h:1;\n\tunsigned int i:1, j:1, k:1;\n\
\tunsigned int d3hot_delay;\n};\n";

fn field<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no field {name}: {v}"))
}

#[test]
fn a_bitfield_run_inside_a_shared_unit_lays_out_as_gcc_does() {
    if !have("gcc") {
        println!("SKIPPED: no gcc");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("bf.h"), SHARED_UNIT).unwrap();
    let oracle = gcc_run(
        p,
        "#include <stdio.h>\n#include <stddef.h>\n#include \"bf.h\"\nint main(void) {\n\
printf(\"%zu %zu %zu\\n\", offsetof(struct bf, pm_cap), offsetof(struct bf, d3hot_delay), sizeof(struct bf));\nreturn 0; }\n",
    );
    let want: Vec<u64> = oracle
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    let base = ["bf.h", "--struct", "bf", "--cc", "gcc"];
    let out = run_cached(
        p,
        cache.path(),
        &[&["show"], &base[..], &["--format", "json"]].concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(field(&v, "pm_cap")["offset"].as_u64(), Some(want[0]));
    assert_eq!(field(&v, "d3hot_delay")["offset"].as_u64(), Some(want[1]));
    assert_eq!(v["size"].as_u64(), Some(want[2]));
    // The run spans bytes 6..9 and moves only by what byte 6 shows.
    let run = field(&v, "pme_support");
    assert_eq!(
        (
            run["offset"].as_u64(),
            run["size"].as_u64(),
            run["align"].as_u64()
        ),
        (Some(6), Some(3), Some(2)),
        "{run}"
    );

    // A proposal moves members around the run; the patched header, compiled
    // again, has the proposed offsets and size.
    std::fs::write(
        p.join("bf.toml"),
        "[struct.bf]\nread_mostly = [\"pm_cap\", \"d3hot_delay\"]\nlockless_atomic = [\"current_state\"]\n",
    )
    .unwrap();
    let with_access = [&base[..], &["--access", "bf.toml"]].concat();
    let out = run_cached(
        p,
        cache.path(),
        &[&["propose"], &with_access[..], &["--format", "json"]].concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let proposed = json(&out);
    let out = run_cached(p, cache.path(), &[&["propose"], &with_access[..]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    apply_p1(p, &stdout(&out), "pci_dev's shape");
    let out = run_cached(
        p,
        cache.path(),
        &[&["show"], &base[..], &["--format", "json"]].concat(),
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let after = json(&out);
    assert_eq!(after["size"], proposed["after"]["size"]);
    for name in ["current_state", "pm_cap", "d3hot_delay"] {
        assert_eq!(
            field(&after, name)["offset"],
            field(&proposed["after"], name)["offset"],
            "{name}: the compiler lays the patched header out as proposed"
        );
    }
}

// ---- A configured kernel tree: Debian's linux-headers-amd64 ----

macro_rules! require_kernel_tree {
    () => {{
        match kbuild_tree() {
            Some(t) if have("gcc") && srctree(&t).join("include/linux").is_dir() => t,
            _ => {
                println!("SKIPPED: needs /usr/src/linux-headers-*-amd64 with its -common sibling (Debian's linux-headers-amd64) and gcc");
                return;
            }
        }
    }};
}

/// The offset pahole gives a member of `struct NAME` in `object`.
fn pahole_offset(object: &Path, name: &str, member: &str) -> Option<u64> {
    let out = Command::new("pahole")
        .args(["-C", name])
        .arg(object)
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let (decl, comment) = l.split_once("/*")?;
        let decl = decl.trim().trim_end_matches(';');
        let named = decl
            .split(':')
            .next()?
            .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()?;
        (named == member).then(|| {
            comment
                .split_whitespace()
                .next()
                .and_then(|w| w.split(':').next()?.parse().ok())
        })?
    })
}

#[test]
fn kbuild_lays_out_pci_dev_whose_pm_bits_share_a_unit() {
    let tree = require_kernel_tree!();
    let src = srctree(&tree);
    let cache = tempfile::tempdir().unwrap();
    let k = tree.to_str().unwrap();
    let out = run_cached(
        &src,
        cache.path(),
        &[
            "show",
            "include/linux/pci.h",
            "--struct",
            "pci_dev",
            "--kbuild",
            k,
            "--format",
            "json",
        ],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let v = json(&out);
    let run = field(&v, "pme_support");
    let (off, size, align) = (
        run["offset"].as_u64().unwrap(),
        run["size"].as_u64().unwrap(),
        run["align"].as_u64().unwrap(),
    );
    assert_eq!(off % align, 0, "{run}");
    let pm_cap = field(&v, "pm_cap")["offset"].as_u64().unwrap();
    assert_eq!(off, pm_cap + 1, "the run starts after pm_cap: {run}");
    // The next declaration starts a fresh unit right where the run's bits
    // end: a run of its own, as BTF and DWARF group them.
    let next = field(&v, "hotplug_user_indicators");
    assert_eq!(next["offset"].as_u64(), Some(off + size), "{next}");
    // pahole puts the run's bits in the unit at pm_cap - 1, the next run's
    // (to clear_retrain_link) in the unit after it.
    if have("pahole") {
        let probe = std::fs::read_dir(cache.path().join("cachelayout/probes"))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path().join("probe.o")))
            .find(|p| p.is_file())
            .unwrap();
        let unit = pahole_offset(&probe, "pci_dev", "pme_support").unwrap();
        let last = pahole_offset(&probe, "pci_dev", "ignore_hotplug").unwrap();
        assert_eq!(unit, pm_cap - 1);
        assert_eq!(
            last, unit,
            "{run}: its last bit-field shares the first's unit"
        );
        let next_unit = pahole_offset(&probe, "pci_dev", "clear_retrain_link").unwrap();
        assert_eq!(Some(next_unit), next["offset"].as_u64(), "{next}");
    }
}

#[test]
fn kbuild_lays_out_a_header_that_needs_a_prelude_and_says_so() {
    let tree = require_kernel_tree!();
    let src = srctree(&tree);
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = tree.to_str().unwrap();
    // u32 and struct list_head come from <linux/types.h>; struct
    // hlist_bl_head from <linux/list_bl.h>, which the base does not include.
    std::fs::write(
        dir.path().join("fixture.h"),
        "struct fixture_node {\n\tu32 id;\n\tstruct list_head link;\n\tunsigned long flags;\n};\n\n\
struct fixture_bl {\n\tu64 id;\n\tstruct hlist_bl_head heads[2];\n\tstruct fixture_node node;\n};\n",
    )
    .unwrap();
    let show = |dir: &Path, header: &str, name: &str| {
        let out = run_cached(
            dir,
            cache.path(),
            &[
                "show", header, "--struct", name, "--kbuild", k, "--format", "json",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        (json(&out), stderr(&out))
    };
    let (v, note) = show(dir.path(), "fixture.h", "fixture_bl");
    assert!(
        note.contains("fixture.h does not compile alone (unknown type name")
            && note.contains(
                "laid out after the prelude <linux/types.h>, <linux/kernel.h>, <linux/list_bl.h>"
            ),
        "{note}"
    );
    assert_eq!(
        field_offsets(&v),
        [
            ("id".to_string(), 0),
            ("heads".to_string(), 8),
            ("node".to_string(), 24)
        ]
    );
    assert_eq!(v["size"].as_u64(), Some(56));
    // Again from the cache: the same note, the same layout.
    let (again, note_again) = show(dir.path(), "fixture.h", "fixture_bl");
    assert_eq!((again, note_again), (v, note));

    // A real header the kernel includes after others.
    let (v, note) = show(&src, "include/linux/kcore.h", "kcore_list");
    assert!(
        note.contains("include/linux/kcore.h does not compile alone")
            && note.contains("after the prelude <linux/types.h>, <linux/kernel.h>"),
        "{note}"
    );
    assert_eq!(field(&v, "list")["offset"].as_u64(), Some(0));
}

#[test]
fn kbuild_says_which_config_option_leaves_a_struct_out() {
    let tree = require_kernel_tree!();
    let src = srctree(&tree);
    let config = std::fs::read_to_string(tree.join(".config")).unwrap();
    if config
        .lines()
        .any(|l| l.starts_with("CONFIG_CRYPTO_STATS="))
    {
        println!("SKIPPED: this .config sets CONFIG_CRYPTO_STATS");
        return;
    }
    let text = std::fs::read_to_string(src.join("include/linux/crypto.h")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let def = lines
        .iter()
        .position(|l| l.starts_with("struct crypto_istat_aead {"))
        .unwrap();
    let ifdef = 1
        + (0..def)
            .rev()
            .find(|&i| lines[i].starts_with("#ifdef CONFIG_CRYPTO_STATS"))
            .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let out = run_cached(
        &src,
        cache.path(),
        &[
            "show",
            "include/linux/crypto.h",
            "--struct",
            "crypto_istat_aead",
            "--kbuild",
            tree.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!("include/linux/crypto.h:{ifdef}:1: error: struct crypto_istat_aead is defined under `#ifdef CONFIG_CRYPTO_STATS`, which this configuration leaves out: CONFIG_CRYPTO_STATS is not set in this .config")),
        "{err}"
    );
    assert!(!err.contains("probe.o"), "{err}");
}
