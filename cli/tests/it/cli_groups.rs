//! The author's cache-line groups, paddings, zero-size markers and first
//! member through the CLI: `show` and
//! `propose` JSON list every member, the table frames the groups,
//! `--regroup` dissolves the groups and says so, `--move-first` frees the
//! first member.

use crate::support;

use layout_core::report::LayoutJson;
use std::path::Path;
use support::{example, json, run_in, stderr, stdout};

const CONN: &str = "\
struct conn {
\tint id;
\t__cacheline_group_begin(conn_read);
\tlong rcv_nxt;
\tatomic_long_t drops;
\tlong snd_una;
\t__cacheline_group_end(conn_read);
\tlong cold_a;
\tlong cold_b;
};
";

const CONN_ACCESS: &str = "\
[struct.conn]
read_mostly = [\"rcv_nxt\", \"snd_una\"]
lockless_atomic = [\"drops\"]
";

const HEADERS: &str = "\
struct pkt {
\tlong len;
\tchar headers_start[0];
\tint proto;
\tlong hash;
\tchar headers_end[0];
\tint tail;
};
";

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "cachelayout-cli-groups-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn issue12_7_show_json_lists_zero_size_members() {
    let dir = scratch("headers");
    write(&dir, "pkt.h", HEADERS);
    let out = run_in(
        &dir,
        &["show", "pkt.h", "--struct", "pkt", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let fields = v["fields"].as_array().unwrap();
    let names: Vec<&str> = fields.iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "len",
            "headers_start",
            "proto",
            "hash",
            "headers_end",
            "tail"
        ]
    );
    for f in fields {
        let zero = f["size"] == 0;
        assert_eq!(f["access"] == "marker", zero, "{f}");
    }
    assert_eq!(fields[1]["type"], "char[0]");
    assert_eq!(fields[1]["offset"], 8);
    // Segments: the first member, each marker, the members between.
    let seg: Vec<u64> = fields
        .iter()
        .map(|f| f["segment"].as_u64().unwrap())
        .collect();
    assert_eq!(seg, [0, 1, 2, 2, 3, 4]);
}

#[test]
fn show_lists_and_frames_the_authors_groups() {
    let dir = scratch("conn-show");
    write(&dir, "conn.h", CONN);
    write(&dir, "conn.toml", CONN_ACCESS);
    let args = [
        "show",
        "conn.h",
        "--struct",
        "conn",
        "--access",
        "conn.toml",
    ];
    let out = run_in(&dir, &args);
    let table = stdout(&out);
    let begin = table.find("=== cache-line group conn_read ===").unwrap();
    let end = table
        .find("=== end of cache-line group conn_read ===")
        .unwrap();
    let at = |n: &str| table.find(n).unwrap();
    assert!(begin < at("rcv_nxt;") && at("snd_una;") < end, "{table}");
    assert!(end < at("cold_a;"), "{table}");
    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let v = json(&run_in(&dir, &json_args));
    assert_eq!(
        v["cacheline_groups"],
        serde_json::json!([{"name": "conn_read", "begin": 4, "end": 32, "size": 28,
                            "members": ["rcv_nxt", "drops", "snd_una"]}])
    );
    let begin = v["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "__cacheline_group_begin__conn_read")
        .unwrap();
    assert_eq!(begin["access"], "marker");
    assert_eq!(begin["cacheline_group"], "conn_read");
    // The output is the schema type (docs/json.md): read back, it prints
    // the same bytes.
    let out = run_in(&dir, &json_args);
    let typed: LayoutJson = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(typed.to_pretty(), stdout(&out));
    let group = &typed.cacheline_groups[0];
    assert_eq!(
        (group.begin, group.end, group.size),
        (Some(4), Some(32), Some(28))
    );
}

#[test]
fn regroup_dissolves_the_authors_groups_and_says_so() {
    let dir = scratch("conn-regroup");
    write(&dir, "conn.h", CONN);
    write(&dir, "conn.toml", CONN_ACCESS);
    let base = [
        "propose",
        "conn.h",
        "--struct",
        "conn",
        "--access",
        "conn.toml",
        "--regroup",
        "--move-first",
    ];
    let mut args = base.to_vec();
    args.extend(["--style", "groups"]);
    let out = run_in(&dir, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--regroup dissolved the author's groups conn_read"),
        "{}",
        stderr(&out)
    );
    let diff = stdout(&out);
    assert!(
        diff.contains("-\t__cacheline_group_begin(conn_read);"),
        "{diff}"
    );
    // The check function goes to a .c file, apart from the header, and
    // only where the tree has CACHELINE_ASSERT_GROUP_MEMBER: conn.h has not.
    assert!(!diff.contains("CACHELINE_ASSERT_GROUP_MEMBER"), "{diff}");
    assert!(
        stderr(&out).contains("no check function for struct conn"),
        "{}",
        stderr(&out)
    );
    // The new groups are named after the classes.
    assert!(
        diff.contains("+\t__cacheline_group_begin(read_mostly);"),
        "{diff}"
    );
    assert!(
        diff.contains("+\t__cacheline_group_begin(lockless);"),
        "{diff}"
    );
    assert!(
        !diff.contains("+\t__cacheline_group_begin(conn_read)"),
        "{diff}"
    );
    let mut args = base.to_vec();
    args.extend(["--format", "json"]);
    let v = json(&run_in(&dir, &args));
    assert_eq!(v["dissolved_groups"], serde_json::json!(["conn_read"]));
    assert_eq!(v["after"]["cacheline_groups"], serde_json::json!([]));
    assert_eq!(v["after"]["hard_conflicts"], serde_json::json!([]));
}

#[test]
fn the_first_member_stays_first_unless_move_first() {
    let kernel = example("kernel");
    let args = [
        "propose",
        "lru_gen.h",
        "--struct",
        "lru_gen_folio",
        "--access",
        "lru_gen.toml",
        "--format",
        "json",
    ];
    let v = json(&run_in(&kernel, &args));
    assert_eq!(v["after"]["fields"][0]["name"], "max_seq");
    assert_eq!(v["after"]["fields"][0]["offset"], 0);
    assert_eq!(v["after"]["fields"][0]["segment"], 0);
    let mut moved = args.to_vec();
    moved.push("--move-first");
    let v = json(&run_in(&kernel, &moved));
    assert_eq!(v["after"]["hard_conflicts"], serde_json::json!([]));
    let first = v["after"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "max_seq")
        .unwrap()
        .clone();
    assert_eq!(first["segment"], 1, "max_seq shares the segment after it");
}

/// The default proposal keeps every member inside its group, and the diff
/// keeps the author's marker lines.
#[test]
fn default_proposal_keeps_the_authors_group() {
    let dir = scratch("conn-default");
    write(&dir, "conn.h", CONN);
    write(&dir, "conn.toml", CONN_ACCESS);
    let args = [
        "propose",
        "conn.h",
        "--struct",
        "conn",
        "--access",
        "conn.toml",
        "--format",
        "json",
    ];
    let out = run_in(&dir, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let g = &v["after"]["cacheline_groups"][0];
    let off = |n: &str| {
        v["after"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == n)
            .unwrap()["offset"]
            .as_u64()
            .unwrap()
    };
    for m in ["rcv_nxt", "drops", "snd_una"] {
        assert!(g["begin"].as_u64().unwrap() <= off(m));
        assert!(off(m) + 8 <= g["end"].as_u64().unwrap());
    }
    assert_eq!(off("id"), 0);
}

#[test]
fn btf_regroup_lists_the_kernels_groups() {
    let btf = "/sys/kernel/btf/vmlinux";
    if !Path::new(btf).exists() {
        eprintln!("skipped: {btf} is missing");
        return;
    }
    let out = run_in(
        &support::repo(),
        &[
            "propose",
            "--btf",
            btf,
            "--struct",
            "tcp_sock",
            "--regroup",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let dissolved = v["dissolved_groups"].as_array().unwrap();
    assert!(
        dissolved.iter().any(|g| g == "tcp_sock_read_tx"),
        "{dissolved:?}"
    );
    assert_eq!(v["before"]["cacheline_groups"], serde_json::json!([]));
    let first = &v["after"]["fields"][0];
    assert_eq!(first["name"], "inet_conn");
    assert_eq!(first["offset"], 0);
    assert!(v["after"]["size"].as_u64() <= v["before"]["size"].as_u64());
}

/// `struct zone` on the installed mmzone.h: `--regroup` may drop the three
/// `CACHELINE_PADDING()`s, and says so.
#[test]
fn zone_regroup_says_it_dissolves_the_paddings() {
    let trees: Vec<std::path::PathBuf> = std::fs::read_dir("/usr/src")
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join("include/linux/mmzone.h").exists())
                .collect()
        })
        .unwrap_or_default();
    let Some(tree) = trees.into_iter().max() else {
        eprintln!("skipped: no installed include/linux/mmzone.h");
        return;
    };
    let access = example("kernel/zone.toml");
    let out = run_in(
        &tree,
        &[
            "propose",
            "include/linux/mmzone.h",
            "--struct",
            "zone",
            "--access",
            access.to_str().unwrap(),
            "--regroup",
            "--move-first",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(
        v["dissolved_paddings"],
        serde_json::json!(["_pad1_", "_pad2_", "_pad3_"])
    );
    assert_eq!(v["after"]["hard_conflicts"], serde_json::json!([]));
    // Without --regroup the paddings are members of every layout.
    let shown = json(&run_in(
        &tree,
        &[
            "show",
            "include/linux/mmzone.h",
            "--struct",
            "zone",
            "--access",
            access.to_str().unwrap(),
            "--format",
            "json",
        ],
    ));
    let pads: Vec<u64> = shown["fields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["type"] == "struct cacheline_padding")
        .map(|f| f["offset"].as_u64().unwrap())
        .collect();
    assert_eq!(pads.len(), 3);
    assert!(pads.iter().all(|o| o % 64 == 0), "{pads:?}");
}

/// A first member declared alone before a line break: `--move-first` has no
/// member to let it move among, so the break holds.
const LONE_FIRST_PADDING: &str = "\
struct s {
\tlong f0;
\tCACHELINE_PADDING(_pad1_);
\tlong f1;
\tlong f2;
\tlong f3;
};
";

const LONE_FIRST_ALIGNED: &str = "\
struct s {
\tlong f0;
\tlong f1 ____cacheline_aligned_in_smp;
\tlong f2;
\tlong f3;
};
";

const LONE_FIRST_ACCESS: &str = "\
[struct.s]
read_mostly = [\"f0\", \"f2\"]
lockless_atomic = [\"f1\"]
";

/// `propose ARGS` as JSON and as a diff in `dir` (both must succeed); the
/// diff applied with `patch -p1`, and `show --format json` of the patched
/// header. Returns the proposal's JSON, the patched layout's JSON and the
/// patched header's text.
fn propose_and_apply(
    dir: &Path,
    header: &str,
    extra: &[&str],
) -> (serde_json::Value, serde_json::Value, String) {
    let base = ["--struct", "s", "--access", "s.toml"];
    let mut json_args = vec!["propose", header];
    json_args.extend(base);
    json_args.extend(extra);
    json_args.extend(["--format", "json"]);
    let out = run_in(dir, &json_args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let proposal = json(&out);
    let mut diff_args = vec!["propose", header];
    diff_args.extend(base);
    diff_args.extend(extra);
    let diff = run_in(dir, &diff_args);
    assert_eq!(diff.status.code(), Some(0), "{}", stderr(&diff));
    if !diff.stdout.is_empty() {
        write(dir, "fix.patch", &stdout(&diff));
        let patch = std::process::Command::new("patch")
            .current_dir(dir)
            .args(["-p1", "-i", "fix.patch"])
            .output()
            .unwrap();
        assert!(patch.status.success(), "patch failed:\n{}", stdout(&diff));
    }
    let mut show_args = vec!["show", header];
    show_args.extend(base);
    show_args.extend(["--format", "json"]);
    let shown = run_in(dir, &show_args);
    assert_eq!(shown.status.code(), Some(0), "{}", stdout(&shown));
    let text = std::fs::read_to_string(dir.join(header)).unwrap();
    (proposal, json(&shown), text)
}

#[test]
fn move_first_keeps_a_padding_after_a_lone_first_member() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "s.h", LONE_FIRST_PADDING);
    write(dir.path(), "s.toml", LONE_FIRST_ACCESS);
    let (proposal, patched, _) = propose_and_apply(dir.path(), "s.h", &["--move-first"]);
    let after = &proposal["after"];
    assert_eq!(after["hard_conflicts"], serde_json::json!([]));
    let offsets = support::field_offsets(after);
    let at = |n: &str| offsets.iter().find(|(m, _)| m == n).unwrap().1;
    assert_eq!(at("f0"), 0, "{offsets:?}");
    // The padding is a line break members may cross, not a wall: the
    // read-mostly f2 may join f0's part (it holds their class), the
    // lockless f1 may not.
    assert_eq!(at("_pad1_"), 64, "{offsets:?}");
    assert!(at("f1") >= 64, "f1 crossed the padding: {offsets:?}");
    let mut sorted = offsets.clone();
    sorted.sort();
    let mut got = support::field_offsets(&patched);
    got.sort();
    assert_eq!(got, sorted, "the diff and the JSON disagree");
    assert_eq!(patched["size"], after["size"]);
}

#[test]
fn move_first_keeps_a_line_aligned_member_and_its_attribute() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "s.h", LONE_FIRST_ALIGNED);
    write(dir.path(), "s.toml", LONE_FIRST_ACCESS);
    let (proposal, patched, text) = propose_and_apply(dir.path(), "s.h", &["--move-first"]);
    let after = &proposal["after"];
    assert_eq!(after["hard_conflicts"], serde_json::json!([]));
    let offsets = support::field_offsets(after);
    assert_eq!(offsets[0], ("f0".to_string(), 0), "{offsets:?}");
    assert!(
        text.contains("long f1 ____cacheline_aligned_in_smp;"),
        "f1 lost its attribute:\n{text}"
    );
    let mut sorted = offsets.clone();
    sorted.sort();
    let mut got = support::field_offsets(&patched);
    got.sort();
    assert_eq!(got, sorted, "the diff and the JSON disagree");
}

/// A `____cacheline_aligned_in_smp` member is a line break `--regroup`
/// dissolves (it may move off its line, as `_tx` in net_device): the summary
/// names it, never "no groups or paddings to dissolve".
#[test]
fn regroup_names_the_line_aligned_members_it_dissolves() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "s.h", LONE_FIRST_ALIGNED);
    write(dir.path(), "s.toml", LONE_FIRST_ACCESS);
    let base = [
        "propose",
        "s.h",
        "--struct",
        "s",
        "--access",
        "s.toml",
        "--regroup",
    ];
    let out = run_in(dir.path(), &base);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--regroup dissolved the author's line break of 1 line-aligned member (`f1`)"),
        "{err}"
    );
    assert!(!err.contains("no cache-line groups"), "{err}");
    let mut args = base.to_vec();
    args.extend(["--format", "json"]);
    let v = json(&run_in(dir.path(), &args));
    assert_eq!(v["dissolved_line_aligned"], serde_json::json!(["f1"]));
    assert_eq!(v["dissolved_groups"], serde_json::json!([]));
}
