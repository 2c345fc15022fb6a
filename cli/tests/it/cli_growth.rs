//! `cachelayout growth` and `propose --growth` end to end: the lru_gen case's three
//! lines from the headers before and after its fix, the kernel's
//! page_counter from BTF, and bad input (exit 2, one line).

use crate::support;

use std::path::{Path, PathBuf};
use support::*;

fn fixtures() -> PathBuf {
    repo().join("layout-core/tests/fixtures/growth")
}

/// The lru_gen header before its fix (the fixtures hold the one after it).
const BEFORE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/kernel/lru_gen.h");

fn growth(args: &[&str]) -> std::process::Output {
    let mut all = vec!["growth"];
    all.extend_from_slice(args);
    run_in(&fixtures(), &all)
}

const SEED: &str = "\
lru_gen_folio 1360 -> 1408 (+48, hole before evicted[])
lruvec 1624 -> 1728 (+104, lrugen moves from offset 176 to 192, plus tail padding to 64)
mem_cgroup_per_node 2048 -> 2112 (+64, 40 bytes of padding after lruvec absorb part of the growth)

mem_cgroup_per_node: kmalloc-2k -> kmalloc-4k, +2048 bytes per object
";

const BEFORE_AFTER: [&str; 6] = [
    "--before",
    BEFORE,
    "--after",
    "lru_gen_after.h",
    "--struct",
    "lru_gen_folio",
];

#[test]
fn before_and_after_print_the_seed_lines() {
    let out = growth(&BEFORE_AFTER);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with(SEED), "{text}");
    assert!(
        text.contains("lruvec: its alignment rises from 8 to 64"),
        "{text}"
    );
}

#[test]
fn a_new_size_in_the_header_gives_the_same_embedder_lines() {
    let out = growth(&[
        "--header",
        BEFORE,
        "--struct",
        "lru_gen_folio",
        "--size",
        "1408",
        "--align",
        "64",
        "--instances",
        "mem_cgroup_per_node=4:per memcg, 4 nodes",
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "lru_gen_folio 1360 -> 1408 (+48)");
    assert_eq!(lines[1..3], SEED.lines().collect::<Vec<_>>()[1..3]);
    assert!(text.contains(
        "mem_cgroup_per_node: kmalloc-2k -> kmalloc-4k, +2048 bytes per object, x4 (per memcg, 4 nodes): +8192 bytes"
    ));
}

#[test]
fn table_and_json_formats() {
    let mut args = BEFORE_AFTER.to_vec();
    args.extend(["--format", "table"]);
    let out = growth(&args);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let table = stdout(&out);
    let lruvec = table
        .lines()
        .find(|l| l.starts_with("lruvec "))
        .expect("a lruvec row");
    assert!(
        lruvec.contains("176 -> 192") && lruvec.contains("8 -> 64"),
        "{table}"
    );

    let mut args = BEFORE_AFTER.to_vec();
    args.extend(["--format", "json"]);
    let v = json(&growth(&args));
    let lines: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["line"].as_str().unwrap())
        .collect();
    assert_eq!(lines, SEED.lines().take(3).collect::<Vec<_>>());
    let pcn = &v["entries"][2];
    assert_eq!(pcn["allocation"]["crosses"], true);
    assert_eq!(pcn["allocation"]["per_object"], 2048);
    assert_eq!(pcn["padding"]["absorbed"], 40);
}

#[test]
fn shrinking_and_no_embedders_are_reported() {
    let out = growth(&[
        "--header",
        BEFORE,
        "--struct",
        "lru_gen_folio",
        "--size",
        "1328",
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("lru_gen_folio 1360 -> 1328 (-32)"), "{text}");
    assert!(
        text.contains(
            "mem_cgroup_per_node 2048 -> 1984 (-64, 32 bytes of padding after lruvec are gone)"
        ),
        "{text}"
    );
    assert!(
        text.contains("\nNo kmalloc size class changes.\n"),
        "{text}"
    );

    let out = growth(&[
        "--header",
        BEFORE,
        "--struct",
        "mem_cgroup_per_node",
        "--size",
        "2112",
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("mem_cgroup_per_node 2048 -> 2112 (+64)\n"),
        "{text}"
    );
    assert!(
        text.contains("embeds struct mem_cgroup_per_node by value"),
        "{text}"
    );
}

/// Runs `growth ARGS` and checks for exit 2 with one line on stderr that
/// contains every `wanted`.
fn fails(args: &[&str], wanted: &[&str]) {
    let out = growth(args);
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?}: stdout {} stderr {err}",
        stdout(&out)
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    for w in wanted {
        assert!(err.contains(w), "{args:?}: `{w}` not in {err}");
    }
}

#[test]
fn bad_input_exits_2_with_one_line() {
    fails(
        &["--header", BEFORE, "--struct", "lruvek", "--size", "2048"],
        &["no struct", "lruvec"],
    );
    fails(
        &[
            "--before",
            BEFORE,
            "--after",
            "lru_gen_after.h",
            "--struct",
            "lru_genfolio",
        ],
        &["lru_genfolio", "lru_gen_folio"],
    );
    fails(
        &["--before", BEFORE, "--struct", "lruvec"],
        &["--before and --after go together"],
    );
    fails(
        &["--struct", "lruvec", "--size", "2048"],
        &["--size needs the types"],
    );
    fails(&["--struct", "lruvec"], &["no change given"]);
    fails(
        &[
            "--header",
            BEFORE,
            "--struct",
            "lru_gen_folio",
            "--size",
            "1400",
            "--align",
            "64",
        ],
        &["not a multiple of the alignment 64", "--size 1408"],
    );
    fails(
        &[
            "--header",
            BEFORE,
            "--struct",
            "lru_gen_folio",
            "--size",
            "1360",
        ],
        &["nothing changes"],
    );
    fails(
        &[
            "--header",
            BEFORE,
            "--struct",
            "lru_gen_folio",
            "--size",
            "1408",
            "--instances",
            "lruvec",
        ],
        &["bad --instances", "NAME=COUNT"],
    );
    fails(
        &[
            "--header",
            BEFORE,
            "--struct",
            "lru_gen_folio",
            "--size",
            "1408",
            "--instances",
            "mem_cgroup=3",
        ],
        &["`mem_cgroup`", "mem_cgroup_per_node"],
    );
    fails(
        &[
            "--header",
            "missing.h",
            "--struct",
            "lruvec",
            "--size",
            "2048",
        ],
        &["missing.h", "cannot read"],
    );
    fails(
        &[
            "--before",
            BEFORE,
            "--after",
            "lru_gen_after.h",
            "--struct",
            "lruvec",
            "--size",
            "2048",
        ],
        &["take no --size"],
    );
}

#[test]
fn propose_growth_reports_the_proposal() {
    let dir = example("kernel");
    let args = [
        "propose",
        "lru_gen.h",
        "--struct",
        "lru_gen_folio",
        "--access",
        "lru_gen.toml",
        "--separate-locked",
        "--growth",
    ];
    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let out = run_in(&dir, &json_args);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let v = json(&out);
    let g = &v["growth"];
    assert_eq!(g["mode"], "layout");
    assert_eq!(g["entries"][0]["name"], "lru_gen_folio");
    assert_eq!(g["entries"][0]["new"]["size"], v["after"]["size"]);
    let names: Vec<&str> = g["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lru_gen_folio", "lruvec", "mem_cgroup_per_node"]);

    // With the diff on stdout, the report goes to stderr after the summary.
    let out = run_in(&dir, &args);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(stdout(&out).starts_with("--- "), "{}", stdout(&out));
    let err = stderr(&out);
    let growth_at = err
        .find("\nGrowth:\nlru_gen_folio 1360 -> ")
        .expect("a growth report");
    assert!(
        err.find("struct lru_gen_folio: 1360 ->").unwrap() < growth_at,
        "{err}"
    );
    assert!(err.contains("\nmem_cgroup_per_node 2048 -> "), "{err}");
}

/// The same header compiled by gcc, read back as DWARF (`-g`) and as BTF
/// (`-gbtf`, where alignments are inferred): the same embedder lines.
#[test]
fn dwarf_and_btf_of_the_header_agree() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli_growth");
    std::fs::create_dir_all(&dir).unwrap();
    let unit = dir.join("unit.c");
    let header = Path::new(BEFORE);
    std::fs::write(
        &unit,
        format!(
            "#include \"{}\"\nstruct mem_cgroup_per_node pn;\n",
            header.display()
        ),
    )
    .unwrap();
    for (flag, option) in [("-g", "--dwarf"), ("-gbtf", "--btf")] {
        let object = dir.join(format!("unit{flag}.o"));
        let gcc = std::process::Command::new("gcc")
            .arg(flag)
            .arg("-c")
            .arg(&unit)
            .arg("-o")
            .arg(&object)
            .output();
        match gcc {
            Ok(o) if o.status.success() => {}
            _ => {
                eprintln!("gcc {flag} is not available: {option} skipped");
                continue;
            }
        }
        let object = object.to_str().unwrap();
        let out = growth(&[
            option,
            object,
            "--struct",
            "lru_gen_folio",
            "--size",
            "1408",
            "--align",
            "64",
        ]);
        assert_eq!(out.status.code(), Some(0), "{option}: {}", stderr(&out));
        let text = stdout(&out);
        let lines: Vec<&str> = text.lines().take(3).collect();
        assert_eq!(lines[0], "lru_gen_folio 1360 -> 1408 (+48)", "{option}");
        assert_eq!(
            lines[1..],
            SEED.lines().collect::<Vec<_>>()[1..3],
            "{option}"
        );
    }
}

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

#[test]
fn btf_page_counter_growth_reaches_every_embedder() {
    if !Path::new(VMLINUX).exists() {
        eprintln!("{VMLINUX} does not exist: skipped");
        return;
    }
    let db = layout_core::btf::load_btf(Path::new(VMLINUX)).unwrap();
    let Some(pc) = db.find("struct page_counter") else {
        eprintln!("this kernel has no struct page_counter: skipped");
        return;
    };
    let size = (pc.size + 64).to_string();
    let out = growth(&[
        "--btf",
        VMLINUX,
        "--struct",
        "page_counter",
        "--size",
        &size,
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let v = json(&out);
    let entries = v["entries"].as_array().unwrap();
    let mcg = entries
        .iter()
        .find(|e| e["name"] == "mem_cgroup")
        .expect("mem_cgroup is reported");
    let delta = mcg["delta"].as_i64().unwrap();
    // Every page_counter slot of mem_cgroup (a union of two counts once)
    // grows by 64: that much, less padding absorbed, plus padding added.
    let slots = mcg["embeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["count"].as_i64().unwrap())
        .sum::<i64>();
    assert!(slots >= 2, "{mcg}");
    let padding = &mcg["padding"];
    assert_eq!(
        padding["member_growth"].as_i64().unwrap(),
        64 * slots,
        "{mcg}"
    );
    let expected =
        64 * slots - padding["absorbed"].as_i64().unwrap() + padding["added"].as_i64().unwrap();
    assert_eq!(delta, expected, "{}", mcg["line"]);
    assert!(delta > 0 && delta % 64 == 0, "{}", mcg["line"]);
    // Every direct embedder is reported, and the text names mem_cgroup too.
    for (agg, _) in db.embedders("struct page_counter") {
        assert!(
            entries.iter().any(|e| e["name"] == agg.name.as_str()),
            "{} missing",
            agg.name
        );
    }
    let text = stdout(&growth(&[
        "--btf",
        VMLINUX,
        "--struct",
        "page_counter",
        "--size",
        &size,
    ]));
    assert!(text.lines().any(|l| l.starts_with("mem_cgroup ")), "{text}");
    println!("{text}");
}
