//! Hot paths and the names an access file may use, through the CLI: per-path
//! lines and bounds in `show` and `propose` (text and JSON) against values
//! computed by hand or straight from the compiler's offsets; members of
//! anonymous unions, single bitfields and dotted sub-members as names; the
//! `min-diff` "nothing to do" answer; the summary's trade and proof lines.

use crate::support;

use std::path::{Path, PathBuf};
use support::*;

/// A header with every kind of inner name: an anonymous union, a
/// `struct_group`-like anonymous struct, bitfields, an embedded struct.
const HEADER: &str = "\
struct opts {
\tunsigned int tsval;
\tunsigned int tsecr;
\tunsigned short mss;
};

struct conn {
\tunsigned long cfg;
\tunion {
\t\tunsigned long seq;
\t\tunsigned int seq32;
\t};
\tunsigned int is_open:1;
\tunsigned int is_fast:1;
\tunsigned int spare:30;
\tchar pad[100];
\tstruct opts rx_opt;
\tunsigned long hits;
};
";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Offsets (gcc, x86_64): cfg 0, union 8..16, bitfields 16..20, pad 20..120,
/// rx_opt 120..132 (tsval 120, tsecr 124, mss 128), hits 136..144; size 144.
#[test]
fn paths_count_the_lines_of_the_bytes_they_name() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "c.h", HEADER);
    write(
        dir.path(),
        "c.toml",
        "[struct.conn]\n\
         read_mostly = [\"cfg\", \"is_open\"]\n\
         lockless_atomic = [\"hits\", \"seq32\"]\n\
         [struct.conn.paths]\n\
         tx = [\"cfg\", \"seq\", \"is_fast\", \"hits\"]\n\
         rx = [\"rx_opt.tsecr\", \"seq32\"]\n",
    );
    let out = run_in(
        dir.path(),
        &[
            "show", "c.h", "--struct", "conn", "--access", "c.toml", "--offset", "0", "--format",
            "json",
        ],
    );
    let v = json(&out);
    assert_eq!(v["size"], 144, "{v}");
    // tx: cfg 0..8, seq 8..16, is_fast bit 1 of byte 16, hits 136..144: lines 0 and 2; 25 bytes.
    assert_eq!(v["paths"]["tx"]["lines"], 2, "{v}");
    assert_eq!(v["paths"]["tx"]["bound"], 1, "{v}");
    // rx: tsecr 124..128 (line 1), seq32 8..12 (line 0): two lines, 8 bytes.
    assert_eq!(v["paths"]["rx"]["lines"], 2, "{v}");
    assert_eq!(v["paths"]["rx"]["bound"], 1, "{v}");
    // The union gets the strongest class of its named members (seq32 is
    // lockless); the bitfield run gets is_open's read-mostly.
    let access: Vec<(String, String)> = v["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["access"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let class = |name: &str| {
        access
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| a.as_str())
            .unwrap_or_else(|| panic!("no field {name} in {access:?}"))
    };
    assert_eq!(class("seq"), "lockless_atomic");
    assert_eq!(class("is_open"), "read_mostly");
    assert_eq!(class("rx_opt"), "cold", "a path does not change a class");

    // At offset 40 the tx bytes are 40..56, 56..57 and 176..184: lines 0 and 2;
    // rx: 164..168 (line 2) and 48..52 (line 0).
    let out = run_in(
        dir.path(),
        &[
            "show", "c.h", "--struct", "conn", "--access", "c.toml", "--offset", "40",
        ],
    );
    let text = stdout(&out);
    assert!(text.contains("hot path tx: 2 lines (bound 1)"), "{text}");
    assert!(text.contains("hot path rx: 2 lines (bound 1)"), "{text}");
}

/// hot-lines puts the paths first: the proposal must not touch more lines
/// than the declaration, and propose prints before -> after per path.
#[test]
fn propose_prints_lines_before_and_after() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "c.h", HEADER);
    write(
        dir.path(),
        "c.toml",
        "[struct.conn]\n\
         read_mostly = [\"cfg\"]\n\
         [struct.conn.paths]\n\
         tx = [\"cfg\", \"hits\"]\n",
    );
    let out = run_in(
        dir.path(),
        &[
            "propose", "c.h", "--struct", "conn", "--access", "c.toml", "--format", "json",
        ],
    );
    let v = json(&out);
    let before = v["before"]["paths"]["tx"]["lines"].as_u64().unwrap();
    let after = v["after"]["paths"]["tx"]["lines"].as_u64().unwrap();
    assert!(after <= before, "{v}");
    assert_eq!(v["after"]["paths"]["tx"]["bound"], 1);
    assert!(v["after"]["churn"].is_u64(), "{v}");
    assert!(v["after"]["soft_cost"].is_u64(), "{v}");
    assert_eq!(v["before"]["churn"], 0, "the declared order moves nothing");
    let out = run_in(
        dir.path(),
        &[
            "propose", "c.h", "--struct", "conn", "--access", "c.toml", "--format", "table",
        ],
    );
    let text = stdout(&out);
    assert!(
        text.contains(&format!("hot path tx: {before} -> {after} lines (bound 1)")),
        "{text}"
    );
    assert!(!text.contains("(gap 0 bytes)"), "{text}");
}

#[test]
fn unknown_names_say_where_the_name_exists() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "c.h", HEADER);
    let cases = [
        (
            "[struct.conn.paths]\nrx = [\"tsval\"]\n",
            2,
            "write `rx_opt.tsval`",
        ),
        (
            "[struct.conn.paths]\nrx = [\n \"rx_opt.tsvel\"]\n",
            3,
            "did you mean `rx_opt.tsval`",
        ),
        (
            "[struct.conn]\ncold = [\"is_fats\"]\n",
            2,
            "did you mean `is_fast`?",
        ),
        (
            "[struct.conn]\ncold = [\"hits.x\"]\n",
            2,
            "`hits` has no members",
        ),
        (
            "[struct.conn.paths]\ntx = [\"cfg\", \"cfg\"]\n",
            2,
            "listed twice in paths.tx",
        ),
    ];
    for (text, line, wanted) in cases {
        write(dir.path(), "c.toml", text);
        let out = run_in(
            dir.path(),
            &["show", "c.h", "--struct", "conn", "--access", "c.toml"],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(err.starts_with(&format!("c.toml:{line}:")), "{text}: {err}");
        assert!(err.contains(wanted), "{text}: {err}");
        assert!(err.contains("; help: "), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

/// min-diff leaves a struct that keeps the rule alone; hot-lines needs paths.
#[test]
fn min_diff_nothing_to_do_and_hot_lines_without_paths() {
    let dir = tempfile::tempdir().unwrap();
    // 32 bytes with holes; 24 reordered.
    write(
        dir.path(),
        "c.h",
        "struct conn {\n\tchar a;\n\tlong cfg;\n\tchar c;\n\tlong hits;\n};\n",
    );
    write(
        dir.path(),
        "c.toml",
        "[struct.conn]\nread_mostly = [\"cfg\"]\nlocked_write.l = [\"hits\"]\n",
    );
    let args = ["propose", "c.h", "--struct", "conn", "--access", "c.toml"];
    let out = run_in(
        dir.path(),
        &[&args[..], &["--objective", "min-diff"]].concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert!(stderr(&out).contains("nothing to do"), "{}", stderr(&out));
    // The balanced objective does move members here: the struct has holes,
    // and the summary says what that buys.
    let out = run_in(dir.path(), &args);
    assert!(stdout(&out).starts_with("--- a/c.h"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the change buys: "),
        "{}",
        stderr(&out)
    );
    let out = run_in(
        dir.path(),
        &[&args[..], &["--objective", "min-diff", "--format", "json"]].concat(),
    );
    let v = json(&out);
    assert_eq!(v["nothing_to_do"], true);
    assert_eq!(v["after"]["churn"], 0);
    let out = run_in(
        dir.path(),
        &[&args[..], &["--objective", "hot-lines"]].concat(),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("needs the hot paths") && err.contains("[struct.conn.paths]"),
        "{err}"
    );
}

/// The newest `/usr/src/linux-headers-*-common` tree.
fn kernel_headers() -> Option<PathBuf> {
    let mut trees: Vec<PathBuf> = std::fs::read_dir("/usr/src")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("linux-headers-") && n.ends_with("-common"))
        })
        .filter(|p| p.join("include/linux").is_dir())
        .collect();
    trees.sort();
    trees.pop()
}

/// page_counter already keeps the rule: min-diff has nothing to do.
#[test]
fn min_diff_on_a_struct_that_keeps_the_rule_does_nothing() {
    let Some(tree) = kernel_headers() else {
        eprintln!("skipped: no /usr/src/linux-headers-*-common");
        return;
    };
    let header = tree.join("include/linux/page_counter.h");
    let access = example("kernel/page_counter.toml");
    let out = run_in(
        &tree,
        &[
            "propose",
            header.to_str().unwrap(),
            "--struct",
            "page_counter",
            "--access",
            access.to_str().unwrap(),
            "--objective",
            "min-diff",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "empty diff: {}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("nothing to do"), "{err}");
    assert!(!err.contains("not proven"), "{err}");
}

#[test]
fn tcp_sock_paths_from_the_kernels_own_groups() {
    let btf = Path::new("/sys/kernel/btf/vmlinux");
    if !btf.exists() {
        eprintln!("skipped: no /sys/kernel/btf/vmlinux");
        return;
    }
    let db = layout_core::btf::load_btf(btf).unwrap();
    let (text, bytes) = group_access(&db, "tcp_sock");

    assert!(!bytes[0].is_empty() && !bytes[1].is_empty(), "{text}");
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "tcp.toml", &text);
    let args = [
        "show",
        "--btf",
        "/sys/kernel/btf/vmlinux",
        "--struct",
        "tcp_sock",
        "--access",
        "tcp.toml",
    ];
    let out = run_in(dir.path(), &args);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let table = stdout(&out);
    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let v = json(&run_in(dir.path(), &json_args));
    let align = v["align"].as_u64().unwrap();
    for (k, path) in ["tx", "rx"].into_iter().enumerate() {
        let lines = v["paths"][path]["lines"].as_u64().unwrap();
        let bound = v["paths"][path]["bound"].as_u64().unwrap();
        let mut distinct: Vec<u64> = bytes[k].iter().flat_map(|&(a, b)| a..b).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let total = distinct.len() as u64;
        assert_eq!(bound, total.div_ceil(64), "{path}");
        assert!(lines >= bound, "{path}: {lines} < {bound}");
        if align >= 64 {
            // Only base 0: the lines straight from the compiler's offsets.
            assert_eq!(lines as usize, lines_of(&bytes[k]), "{path}");
        }
        assert!(
            table.contains(&format!("hot path {path}: {lines} lines (bound {bound})")),
            "{table}"
        );
    }
    // --regroup --objective hot-lines never makes a path touch more lines
    // than the declared layout: when dissolving the groups would, they stay.
    let mut regroup = vec!["propose"];
    regroup.extend(&args[1..]);
    regroup.extend(["--regroup", "--objective", "hot-lines", "--format", "json"]);
    let out = run_in(dir.path(), &regroup);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    for path in ["tx", "rx"] {
        let before = v["before"]["paths"][path]["lines"].as_u64().unwrap();
        let after = v["after"]["paths"][path]["lines"].as_u64().unwrap();
        assert!(after <= before, "{path}: {before} -> {after}");
    }
}

/// `n` hot paths on a struct of 16 longs: path `pK` names two of them,
/// `f(K % 16)` and the one 1 + `(K / 16) % 15` after it.
fn many_paths(n: usize) -> String {
    let mut text = String::from(
        "[struct.s]\nread_mostly = [\"f0\", \"f1\"]\nlockless_atomic = [\"f2\"]\n[struct.s.paths]\n",
    );
    for k in 0..n {
        let (a, b) = (k % 16, (k + 1 + (k / 16) % 15) % 16);
        text.push_str(&format!("p{k} = [\"f{a}\", \"f{b}\"]\n"));
    }
    text
}

#[test]
fn twenty_thousand_paths_are_counted_in_linear_work() {
    let dir = tempfile::tempdir().unwrap();
    let header: String = std::iter::once("struct s {\n".to_string())
        .chain((0..16).map(|i| format!("\tlong f{i};\n")))
        .chain(std::iter::once("};\n".to_string()))
        .collect();
    write(dir.path(), "s.h", &header);
    write(dir.path(), "s.toml", &many_paths(20_000));
    let deadline = std::time::Duration::from_secs(90);
    let base = ["--struct", "s", "--access", "s.toml", "--format", "json"];
    let show = run_with_deadline(
        dir.path(),
        &[],
        &[&["show", "s.h"][..], &base].concat(),
        deadline,
    );
    assert_eq!(show.status.code(), Some(1), "{}", stderr(&show));
    let v = json(&show);
    let paths = v["paths"].as_object().unwrap();
    assert_eq!(paths.len(), 20_000);
    // p0 names f0 (0-7) and f1 (8-15): two lines when the struct starts 56
    // bytes into a line, 16 bytes for a bound of one; p15 names f15
    // (120-127) and f0 (0-7): two lines at every start.
    assert_eq!(
        (&paths["p0"]["lines"], &paths["p0"]["bound"]),
        (&2.into(), &1.into())
    );
    assert_eq!(
        (&paths["p15"]["lines"], &paths["p15"]["bound"]),
        (&2.into(), &1.into())
    );

    let propose = run_with_deadline(
        dir.path(),
        &[],
        &[&["propose", "s.h", "--time-limit", "5"][..], &base].concat(),
        deadline,
    );
    assert_eq!(propose.status.code(), Some(0), "{}", stderr(&propose));
    let v = json(&propose);
    assert_eq!(v["after"]["hard_conflicts"], serde_json::json!([]));
    assert_eq!(v["after"]["paths"].as_object().unwrap().len(), 20_000);
}
