//! `cachelayout infer` from perf profiles: a c2c report and data-type
//! profiles (`perf report -s type,typeoff -n`, `perf annotate --data-type`)
//! of one synthetic run on `struct pc_demo` (fixtures/perf: `usage` is
//! written by atomics on every charge and takes HITMs, `watermark` is
//! written on one path in eight, `max` and `parent` are only read and share
//! `usage`'s line, `failcnt` has too few samples, `low` and `high` are read
//! on the next line, `min` and `peak` are never touched).

use crate::support;

use std::path::PathBuf;
use support::*;

fn fixtures() -> PathBuf {
    repo().join("cli/tests/fixtures/perf")
}

fn member<'a>(j: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    j["members"]
        .as_array()
        .expect("members")
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no member {name} in {j:#}"))
}

const BASE: &str = "0xffff888104a3c000";

#[test]
fn c2c_and_data_type_find_the_written_members_and_their_victims() {
    let o = run_in(
        &fixtures(),
        &[
            "infer",
            "pc_demo.h",
            "--struct",
            "pc_demo",
            "--perf-c2c",
            "c2c.txt",
            "--base",
            BASE,
            "--perf-mem",
            "types.txt",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let class = |n: &str| member(&j, n)["class"].as_str().unwrap().to_string();
    // Written: stores (and HITM-carrying atomics) on usage and watermark.
    assert_eq!(class("usage"), "lockless_atomic");
    assert_eq!(class("watermark"), "lockless_atomic");
    // c2c: 1000 stores of 2500 samples; data type: 1000 of 2700.
    assert_eq!(member(&j, "usage")["stores"], 2000);
    assert_eq!(member(&j, "usage")["loads"], 3200);
    assert_eq!(member(&j, "usage")["hitm"], 260);
    // Read-mostly victims: they take HITMs on the line usage and watermark write.
    for victim in ["max", "parent"] {
        assert_eq!(class(victim), "read_mostly", "{victim}");
        let of: Vec<&str> = member(&j, victim)["victim_of"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(of, ["usage", "watermark"], "{victim}");
    }
    // Read on the next line without HITM: read-mostly, nobody's victim.
    for m in ["low", "high"] {
        assert_eq!(class(m), "read_mostly", "{m}");
        assert!(member(&j, m)["victim_of"].as_array().unwrap().is_empty());
    }
    // 10 + 5 samples: below the floor of 20, said so; written side (it has stores).
    let f = member(&j, "failcnt");
    assert!(
        f["ambiguous"]
            .as_str()
            .unwrap()
            .contains("not enough samples: 15"),
        "{f}"
    );
    assert_eq!(f["class"], "lockless_atomic");
    for m in ["min", "peak", "pad"] {
        assert_eq!(class(m), "cold", "{m}");
    }
    // The other object's line is left out and said so.
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("1 row(s), 200 samples, on other objects"),
        "{notes}"
    );
    // The write fraction's interval holds the point estimate.
    let wf = &member(&j, "usage")["write_fraction"];
    let (p, lo, hi) = (
        wf["p"].as_f64().unwrap(),
        wf["low"].as_f64().unwrap(),
        wf["high"].as_f64().unwrap(),
    );
    assert!(
        lo < p && p < hi && (p - 2000.0 / 5200.0).abs() < 1e-9,
        "{wf}"
    );
}

#[test]
fn each_profile_alone_finds_the_writers() {
    // The c2c report alone: the same writers and victims.
    let o = run_in(
        &fixtures(),
        &[
            "infer",
            "pc_demo.h",
            "--struct",
            "pc_demo",
            "--perf-c2c",
            "c2c.txt",
            "--base",
            BASE,
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(member(&j, "usage")["class"], "lockless_atomic");
    assert_eq!(member(&j, "watermark")["class"], "lockless_atomic");
    assert_eq!(member(&j, "max")["victim_of"][0], "usage");
    // No samples of low and high in c2c: cold.
    assert_eq!(member(&j, "low")["class"], "cold");
    // The data-type report alone (exact counts from -n).
    let o = run_in(
        &fixtures(),
        &[
            "infer",
            "pc_demo.h",
            "--struct",
            "pc_demo",
            "--perf-mem",
            "types.txt",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(member(&j, "usage")["class"], "lockless_atomic");
    assert_eq!(member(&j, "usage")["estimated_counts"], false);
    assert_eq!(member(&j, "max")["class"], "read_mostly");
    assert_eq!(member(&j, "low")["class"], "read_mostly");
    // perf annotate --data-type of the stores.
    let o = run_in(
        &fixtures(),
        &[
            "infer",
            "pc_demo.h",
            "--struct",
            "pc_demo",
            "--perf-mem",
            "annotate.txt",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(member(&j, "usage")["stores"], 1000);
    assert_eq!(member(&j, "watermark")["stores"], 60);
    assert_eq!(member(&j, "usage")["class"], "lockless_atomic");
    // perf annotate --data-type --group -n of the loads and the stores
    // together: the same counts as the report of the same run.
    let group = |file: &str| {
        run_in(
            &fixtures(),
            &[
                "infer",
                "pc_demo.h",
                "--struct",
                "pc_demo",
                "--perf-mem",
                file,
                "--format",
                "json",
            ],
        )
    };
    let o = group("annotate_group.txt");
    assert!(o.status.success(), "{}", stderr(&o));
    let g = json(&o);
    let t = json(&group("types.txt"));
    for name in ["usage", "max", "watermark", "low", "failcnt"] {
        for key in ["loads", "stores", "class"] {
            assert_eq!(member(&g, name)[key], member(&t, name)[key], "{name} {key}");
        }
    }
    // Its percentages alone do not say how many samples each event took.
    let o = group("annotate_group_percent.txt");
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("annotate_group_percent.txt:6:1: error:") && e.contains("-n"),
        "{e}"
    );
}

#[test]
fn the_access_file_lists_the_ambiguous_first_and_propose_takes_it() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "infer",
        "pc_demo.h",
        "--struct",
        "pc_demo",
        "--perf-c2c",
        "c2c.txt",
        "--base",
        BASE,
        "--perf-mem",
        "types.txt",
    ];
    let o = run_in(&fixtures(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    // Deterministic.
    assert_eq!(stdout(&run_in(&fixtures(), &args)), text);
    let lockless = text.split("lockless_atomic = [").nth(1).expect(&text);
    let failcnt = lockless.find("\"failcnt\", # AMBIGUOUS").expect(&text);
    let usage = lockless
        .find("\"usage\", # confidence medium")
        .expect(&text);
    assert!(failcnt < usage, "{text}");
    assert!(
        text.contains("c2c.txt:33 pc_demo_try_charge: 1200 loads, 800 stores, 200 HITM"),
        "{text}"
    );
    assert!(
        text.contains("max (line 0, 110 HITM) next to usage, watermark"),
        "{text}"
    );
    let access = dir.path().join("pc.toml");
    std::fs::write(&access, &text).unwrap();
    let header = fixtures().join("pc_demo.h");
    let p = run_in(
        dir.path(),
        &[
            "propose",
            header.to_str().unwrap(),
            "--struct",
            "pc_demo",
            "--access",
            "pc.toml",
            "--format",
            "json",
        ],
    );
    assert!(p.status.success(), "{}", stderr(&p));
    let j = json(&p);
    // The proposal moves the written members off the read-mostly members' lines.
    let offs = field_offsets(&j["after"]);
    let at = |n: &str| offs.iter().find(|(f, _)| f == n).map(|(_, o)| *o).unwrap();
    for w in ["usage", "watermark", "failcnt"] {
        for r in ["max", "parent", "low", "high"] {
            assert_ne!(at(w) / 64, at(r) / 64, "{w} and {r} share a line: {offs:?}");
        }
    }
}

#[test]
fn bad_profiles_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let header = fixtures().join("pc_demo.h");
    let h = header.to_str().unwrap();
    // A c2c report needs the struct's address.
    let o = run_in(
        &fixtures(),
        &[
            "infer",
            "pc_demo.h",
            "--struct",
            "pc_demo",
            "--perf-c2c",
            "c2c.txt",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--base ADDR"), "{}", stderr(&o));
    // A broken Pareto row: its file and line.
    let text = std::fs::read_to_string(fixtures().join("c2c.txt")).unwrap();
    let broken = text.replacen("0x8     0       4", "zz", 1);
    std::fs::write(dir.path().join("c2c.txt"), broken).unwrap();
    let o = run_in(
        dir.path(),
        &[
            "infer",
            h,
            "--struct",
            "pc_demo",
            "--perf-c2c",
            "c2c.txt",
            "--base",
            BASE,
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("c2c.txt:35"), "{}", stderr(&o));
    // Not a profile at all.
    std::fs::write(dir.path().join("x.txt"), "hello\n").unwrap();
    let o = run_in(
        dir.path(),
        &["infer", h, "--struct", "pc_demo", "--perf-mem", "x.txt"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("x.txt:1"), "{}", stderr(&o));
    // No evidence.
    let o = run_in(dir.path(), &["infer", h, "--struct", "pc_demo"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("infer needs evidence"),
        "{}",
        stderr(&o)
    );
    // Bounded reads: a profile over --max-input-bytes is refused.
    let o = run_in(
        &fixtures(),
        &[
            "infer",
            "pc_demo.h",
            "--struct",
            "pc_demo",
            "--perf-mem",
            "types.txt",
            "--max-input-bytes",
            "100",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("max-input-bytes"), "{}", stderr(&o));
}
