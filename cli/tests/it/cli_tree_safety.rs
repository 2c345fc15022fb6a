//! The tree-safety pass end to end (`propose --safety-scan`): on small C
//! trees written here, every kind of code that depends on the member order
//! is found at its line and column, kept by a named, priced constraint that
//! the proposal honours, or refused at its site; on Debian's 6.1 sources
//! (extracted at test time) the same for sk_buff, struct bictcp, struct
//! bpf_sock_ops_kern and a uapi struct.

use super::support::{json, kbuild_tree, run_in, stderr, stdout};
use std::path::Path;

/// A struct with one hard conflict as declared (`hits`, lockless, shares
/// the line of the read-mostly members), so every proposal moves members.
const HEADER: &str = "struct stats {
\tlong name;
\tlong hits;
\tlong max;
\tlong min;
\tlong misses;
\tlong total;
\tlong spare;
};
typedef struct stats stats_t;
";

const ACCESS: &str = "[struct.stats]
read_mostly = [\"name\", \"max\", \"min\", \"total\"]
lockless_atomic = [\"hits\", \"misses\"]
";

fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

fn propose(dir: &Path, header: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["propose", header, "--struct", "stats", "--access", "a.toml"];
    args.extend_from_slice(extra);
    run_in(dir, &args)
}

/// The members in the order of the proposal (JSON `after`).
fn order(j: &serde_json::Value) -> Vec<String> {
    let mut f: Vec<(u64, String)> = j["after"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["offset"].as_u64().unwrap(),
                f["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    f.sort();
    f.into_iter().map(|(_, n)| n).collect()
}

fn sites(j: &serde_json::Value) -> Vec<(String, u64, u64, String)> {
    j["tree_safety"]["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["file"].as_str().unwrap().to_string(),
                s["line"].as_u64().unwrap(),
                s["column"].as_u64().unwrap(),
                s["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn every_kind_of_user_is_found_and_kept_in_the_proposal() {
    let users = "#include \"s.h\"
static struct stats boot = { 1, 2, 3 };
static stats_t table[2] = { { 1, 2 }, { .max = 4, 5 } };
static const struct stats named = { .name = 1, .spare = 2 };
void f(struct stats *p, void *q)
{
\tstruct stats z = { 0 };
\t/* struct stats c = { 9, 9, 9, 9, 9 }; a comment is no code */
\tmemset(&p->misses, 0, offsetof(struct stats, spare) - offsetof(struct stats, misses));
\tq = &(struct stats){ 7 };
}
";
    // Declared with the read-mostly members first: the positional values
    // meet no padding when `hits` and `misses` leave their line.
    let header = HEADER.replace(
        "\tlong hits;\n\tlong max;\n\tlong min;\n",
        "\tlong max;\n\tlong min;\n\tlong hits;\n",
    );
    // A struct that embeds it, initialized by position and by name.
    let holder = "struct holder { int id; unsigned a:1, b:1; struct stats st; stats_t arr[2]; };
static struct holder h = { 1, 0, 1, { 1, 2 }, { { 5 }, { 6 } } };
static struct holder h2 = { .st = { .name = 3 }, .id = 2 };
";
    let dir = tree(&[
        ("s.h", &header),
        ("a.toml", ACCESS),
        ("src/users.c", users),
        ("src/holder.c", holder),
    ]);
    let o = propose(
        dir.path(),
        "s.h",
        &["--safety-scan", "src", "--format", "json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let found = sites(&j);
    let want = [
        ("src/holder.c", 2, 8, "nested_initializer"),
        ("src/holder.c", 2, 8, "nested_initializer"),
        ("src/holder.c", 3, 8, "designated_initializer"),
        ("src/users.c", 2, 8, "positional_initializer"),
        ("src/users.c", 3, 8, "array_of_initializers"),
        ("src/users.c", 3, 8, "array_of_initializers"),
        ("src/users.c", 4, 8, "designated_initializer"),
        ("src/users.c", 7, 2, "zero_initializer"),
        ("src/users.c", 9, 24, "offset_range"),
        ("src/users.c", 10, 8, "compound_literal"),
    ];
    let got: Vec<(&str, u64, u64, &str)> = found
        .iter()
        .map(|(f, l, c, k)| (f.as_str(), *l, *c, k.as_str()))
        .collect();
    assert_eq!(got, want, "{:#}", j["tree_safety"]);
    assert_eq!(
        j["tree_safety"]["spellings"],
        serde_json::json!(["struct stats", "stats_t"])
    );
    // Each need holds in the proposal, by name.
    let after = order(&j);
    let at = |m: &str| after.iter().position(|n| n == m).unwrap();
    assert_eq!(&after[..3], ["name", "max", "min"], "{after:?}");
    assert_eq!(at("min"), at("max") + 1, "{after:?}");
    assert_eq!(at("total"), at("misses") + 1, "{after:?}");
    assert_eq!(at("spare"), at("total") + 1, "{after:?}");
    let added = j["tree_safety"]["constraints_added"].as_array().unwrap();
    assert_eq!(added.len(), 5, "{added:#?}");
    // The summary names each constraint with its site and price.
    let o = propose(dir.path(), "s.h", &["--safety-scan", "src"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary = stderr(&o);
    assert!(
        summary.contains(
            "kept: positional initializer at src/users.c:2:8 (members `name`..`min` stay first, in order): +"
        ),
        "{summary}"
    );
    assert!(
        summary.contains("kept: offset range at src/users.c:9:24 (members `misses`..`spare` stay together, in order): +"),
        "{summary}"
    );
    assert!(summary.contains("tree safety: 3 files"), "{summary}");
    assert!(summary.contains("5 constraints added"), "{summary}");
}

#[test]
fn a_range_between_zero_size_walls_is_kept_by_them_and_asserted_offsets_stay() {
    let header = "struct stats {
\tlong name;
\tlong hits;
\tchar copy_start[0];
\tlong max;
\tlong min;
\tlong misses;
\tchar copy_end[0];
\tlong total;
\tlong spare;
};
";
    let users = "void f(struct stats *a, struct stats *b)
{
\tmemcpy(&a->copy_start, &b->copy_start,
\t       offsetof(struct stats, copy_end) - offsetof(struct stats, copy_start));
\tBUILD_BUG_ON(offsetof(struct stats, name) != 0);
}
";
    let dir = tree(&[("s.h", header), ("a.toml", ACCESS), ("users.c", users)]);
    let o = propose(
        dir.path(),
        "s.h",
        &["--safety-scan", "users.c", "--format", "json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let kinds: Vec<String> = sites(&j).into_iter().map(|s| s.3).collect();
    assert_eq!(kinds, ["offset_range", "build_assertion"]);
    assert_eq!(
        j["tree_safety"]["sites"][0]["need"]["kept_by"],
        "the zero-size walls around `copy_start`..`copy_end`"
    );
    let before = super::support::field_offsets(&j["before"]);
    let after = super::support::field_offsets(&j["after"]);
    let spare = |v: &[(String, u64)]| v.iter().find(|(n, _)| n == "name").unwrap().1;
    assert_eq!(
        spare(&after),
        spare(&before),
        "a pinned member keeps its offset"
    );
    assert_ne!(before, after, "the proposal moves members");
    let summary = stderr(&propose(dir.path(), "s.h", &["--safety-scan", "users.c"]));
    assert!(
        summary.contains("kept by the zero-size walls around `copy_start`..`copy_end`: offset range at users.c:4:9: +0 bytes"),
        "{summary}"
    );
    assert!(
        summary.contains("kept: build assertion at users.c:5:2 (`name` keeps its offset)"),
        "{summary}"
    );
    // An asserted size the proposal changes refuses it, at the assertion.
    let sized = users.replace("}\n", "\tstatic_assert(sizeof(struct stats) == 56);\n}\n");
    std::fs::write(dir.path().join("users.c"), sized).unwrap();
    let o = propose(dir.path(), "s.h", &["--safety-scan", "users.c"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("users.c:6:2: error: struct stats: reordering it breaks this build assertion on the size: the size is asserted at build time and the proposal changes it (56 -> "),
        "{}",
        stderr(&o)
    );
}

#[test]
fn refusals_name_the_site() {
    // A context range over two members holds whatever lies between them.
    let bpf = "int g(int off) { switch (off) { case bpf_ctx_range_till(struct stats, hits, min): return 1; } return 0; }\n";
    let dir = tree(&[("s.h", HEADER), ("a.toml", ACCESS), ("bpf.c", bpf)]);
    let o = propose(dir.path(), "s.h", &["--safety-scan", "bpf.c"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.starts_with(
            "bpf.c:1:38: error: struct stats: reordering it breaks this BPF access by offset: `bpf_ctx_range_till` accepts every offset from `hits` to the end of `min`"
        ),
        "{e}"
    );
    assert!(stdout(&o).is_empty(), "nothing is proposed");
    for (path, header, col, what) in [
        ("include/uapi/s.h", HEADER.to_string(), 1, "include/uapi/"),
        (
            "p.h",
            HEADER.replace("};\ntypedef", "} __packed;\ntypedef"),
            3,
            "__packed",
        ),
    ] {
        let dir = tree(&[(path, &header), ("a.toml", ACCESS), ("u.c", "int x;\n")]);
        let o = propose(dir.path(), path, &["--safety-scan", "u.c"]);
        assert_eq!(o.status.code(), Some(2), "{path}: {}", stderr(&o));
        let e = stderr(&o);
        let line = if col == 1 { 1 } else { 9 };
        assert!(
            e.starts_with(&format!("{path}:{line}:{col}: error: struct stats")) && e.contains(what),
            "{path}: {e}"
        );
    }
}

#[test]
fn a_randomized_layout_is_proposed_with_the_note_and_true_users_still_count() {
    let header = HEADER.replace("};\ntypedef", "} __randomize_layout;\ntypedef");
    let config = "CONFIG_RANDSTRUCT_NONE=y\n";
    let dir = tree(&[
        ("r.h", &header),
        ("a.toml", ACCESS),
        ("u.c", "int x;\n"),
        ("k.config", config),
    ]);
    let o = propose(dir.path(), "r.h", &["--safety-scan", "u.c", "--changelog"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("note: struct stats is marked __randomize_layout: no code may depend on its member order, so any order is allowed; a CONFIG_RANDSTRUCT build shuffles the members whatever the order, and the proposal holds for builds without it\n"),
        "{e}"
    );
    assert!(e.contains("randomized layout: 1"), "{e}");
    let changelog: String = stdout(&o).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        changelog.contains(
            "Struct stats is marked __randomize_layout: no code may depend on its member order"
        ),
        "{changelog}"
    );
    // JSON says it too, and a configuration read is named.
    let o = propose(
        dir.path(),
        "r.h",
        &[
            "--safety-scan",
            "u.c",
            "--config",
            "k.config",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let note = j["notes"][0].as_str().unwrap();
    assert!(
        note.ends_with("holds for builds without it, such as the configuration read"),
        "{note}"
    );
    assert_ne!(j["after"], j["before"], "the proposal moves members");
    // A positional initializer is still a true dependence: refused at it.
    std::fs::write(dir.path().join("u.c"), "struct stats v = { 1, 2 };\n").unwrap();
    let o = propose(dir.path(), "r.h", &["--safety-scan", "u.c"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with(
            "u.c:1:1: error: struct stats: reordering it breaks this positional initializer"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn build_assertions_wrapped_in_a_macro_are_kept_before_proposing() {
    // The macro is defined in one file and used in another that never
    // names the struct.
    let defs = "#include <assert.h>\n#include <stddef.h>\n#include \"s.h\"\n\
                #define STATS_AT(m, off) static_assert(offsetof(struct stats, m) == off, #m)\n";
    let uses = "#include \"defs.h\"\nSTATS_AT(min, 24);\nSTATS_AT(total, 40);\n";
    let dir = tree(&[
        ("s.h", HEADER),
        ("a.toml", ACCESS),
        ("defs.h", defs),
        ("check.c", uses),
    ]);
    let o = propose(
        dir.path(),
        "s.h",
        &[
            "--safety-scan",
            "defs.h",
            "--safety-scan",
            "check.c",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let added = j["tree_safety"]["constraints_added"].as_array().unwrap();
    let pinned: Vec<(String, String)> = added
        .iter()
        .map(|c| {
            (
                c["sites"][0].as_str().unwrap().to_string(),
                c["need"]["pin"][0].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        pinned,
        [
            ("check.c:2:1".to_string(), "min".to_string()),
            ("check.c:3:1".to_string(), "total".to_string()),
        ]
    );
    let at = |m: &str| {
        j["after"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == m)
            .unwrap()["offset"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(
        (at("min"), at("total")),
        (24, 40),
        "the asserted offsets stay"
    );
    assert_ne!(j["after"], j["before"], "the proposal moves members");
    // gcc agrees, before and after the diff.
    let gcc = |what: &str| {
        let o = std::process::Command::new("gcc")
            .current_dir(dir.path())
            .args(["-std=gnu11", "-fsyntax-only", "check.c"])
            .output()
            .expect("gcc runs");
        assert!(
            o.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    gcc("as declared");
    let o = propose(
        dir.path(),
        "s.h",
        &["--safety-scan", "defs.h", "--safety-scan", "check.c"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    super::support::apply_p1(dir.path(), &stdout(&o), "the proposal");
    gcc("the proposal");
}

#[test]
fn a_proposal_that_moves_nothing_is_not_refused() {
    // The same BPF user, but nothing conflicts: nothing moves, nothing breaks.
    let bpf = "int g(int off) { switch (off) { case bpf_ctx_range_till(struct stats, hits, min): return 1; } return 0; }\n";
    let access = "[struct.stats]\nread_mostly = [\"name\", \"max\"]\n";
    let dir = tree(&[("s.h", HEADER), ("a.toml", access), ("bpf.c", bpf)]);
    let o = propose(
        dir.path(),
        "s.h",
        &["--safety-scan", "bpf.c", "--objective", "min-diff"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("BPF access by offset: 1"),
        "{}",
        stderr(&o)
    );
}

/// Debian's 6.1 sources (extracted once for every test of the binary,
/// `support::kernel_source`: the BPF builders of filter.c, skbuff.c,
/// sock.c, tcp_cubic.c, tcp_output.c, include/uapi/linux/tcp.h) and the
/// build tree.
fn kernel() -> Option<(&'static Path, std::path::PathBuf)> {
    Some((super::support::kernel_source()?, kbuild_tree()?))
}

/// Writes `text` as `name` in a scratch directory of the calling test (the
/// extracted sources stay as they are), returns its path.
fn write(name: &str, text: &str) -> String {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let path = DIR
        .get_or_init(|| tempfile::tempdir().unwrap())
        .path()
        .join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn kernel_sk_buff_keeps_its_offset_users_and_its_bpf_builders_name_members() {
    let Some((src, kbuild)) = kernel() else {
        return;
    };
    let header = super::support::srctree(&kbuild).join("include/linux/skbuff.h");
    let kb = kbuild.to_str().unwrap();
    let access = write(
        "skb.toml",
        "[struct.sk_buff]\nread_mostly = [\"len\", \"data_len\", \"head\", \"data\"]\nlockless_atomic = [\"users\"]\n",
    );
    let base = [
        "propose",
        header.to_str().unwrap(),
        "--kbuild",
        kb,
        "--struct",
        "sk_buff",
        "--access",
        &access,
        "--safety-scan",
        "net/core/skbuff.c",
    ];
    let mut args = base.to_vec();
    args.extend(["--format", "json"]);
    let o = run_in(src, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let added = &j["tree_safety"]["constraints_added"];
    // __alloc_skb() clears the struct up to `tail`: those members stay first.
    let first = added
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["sites"][0] == "net/core/skbuff.c:326:2")
        .unwrap_or_else(|| panic!("{added:#}"));
    let kept: Vec<String> = first["need"]["first"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    assert_eq!(kept.first().map(String::as_str), Some("next"));
    assert_eq!(kept.last().map(String::as_str), Some("tail"));
    let after = order(&j);
    assert_eq!(&after[..kept.len()], kept.as_slice(), "{after:?}");
    // The struct_group `headers` (copied whole by __copy_skb_header()) is one
    // member; the marker BPF loads by offset keeps the bitfield after it.
    assert_eq!(after.iter().filter(|n| *n == "headers").count(), 1);
    let at = |m: &str| after.iter().position(|n| n == m).unwrap();
    assert_eq!(at("cloned"), at("__cloned_offset") + 1, "{after:?}");
    assert_ne!(j["after"], j["before"], "the proposal moves members");
    // The BPF instruction builders of filter.c name members by their
    // offsets, each loaded at its own width: a name the compiler computes
    // again; the marker loads keep the bit-fields after them.
    let mut args = base.to_vec();
    args.extend(["--safety-scan", "net/core/filter.c", "--format", "json"]);
    let o = run_in(src, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let s = j["tree_safety"]["sites"].as_array().unwrap();
    let bpf: Vec<&serde_json::Value> = s.iter().filter(|s| s["kind"] == "bpf_offset").collect();
    assert!(bpf.len() > 20, "{s:#?}");
    assert!(bpf.iter().all(|s| s["need"] == "none"), "{bpf:#?}");
    assert!(
        bpf.iter()
            .any(|s| s["file"] == "net/core/filter.c" && s["line"] == 313),
        "{bpf:#?}"
    );
    assert_ne!(j["after"], j["before"], "the proposal moves members");
}

#[test]
fn kernel_offset_range_positional_users_and_uapi() {
    let Some((src, kbuild)) = kernel() else {
        return;
    };
    let common = super::support::srctree(&kbuild);
    let kb = kbuild.to_str().unwrap();
    // tcp_output.c clears struct bpf_sock_ops_kern up to `temp` by offset.
    let access = write(
        "bso.toml",
        "[struct.bpf_sock_ops_kern]\nread_mostly = [\"sk\", \"op\"]\nlockless_atomic = [\"replylong\"]\n",
    );
    let filter_h = common.join("include/linux/filter.h");
    let o = run_in(
        src,
        &[
            "propose",
            filter_h.to_str().unwrap(),
            "--kbuild",
            kb,
            "--struct",
            "bpf_sock_ops_kern",
            "--access",
            &access,
            "--safety-scan",
            "net/ipv4/tcp_output.c",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("kept: offset range at net/ipv4/tcp_output.c:488:2 and 1 more (members `sk`..`temp` stay first, in order): +64 bytes"),
        "{e}"
    );
    assert!(stdout(&o).contains("struct bpf_sock_ops_kern {"), "a diff");
    // struct bictcp: tcp_cubic.c asserts its size, which a fix must grow.
    let access = write(
        "bic.toml",
        "[struct.bictcp]\nread_mostly = [\"cnt\", \"bic_K\"]\nlockless_atomic = [\"last_cwnd\"]\n",
    );
    let o = run_in(
        src,
        &[
            "propose",
            "net/ipv4/tcp_cubic.c",
            "--struct",
            "bictcp",
            "--access",
            &access,
            "--safety-scan",
            "net/ipv4/tcp_cubic.c",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("net/ipv4/tcp_cubic.c:512:2: error: struct bictcp: reordering it breaks this build assertion on the size"),
        "{}",
        stderr(&o)
    );
    // A uapi struct is the user-space ABI: refused at its definition.
    let access = write(
        "ti.toml",
        "[struct.tcp_info]\nread_mostly = [\"tcpi_state\"]\nlockless_atomic = [\"tcpi_ca_state\"]\n",
    );
    let uapi = common.join("include/uapi/linux/tcp.h");
    let o = run_in(
        src,
        &[
            "propose",
            uapi.to_str().unwrap(),
            "--kbuild",
            kb,
            "--struct",
            "tcp_info",
            "--access",
            &access,
            "--safety-scan",
            "net/ipv4/tcp_output.c",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with(&format!(
            "{}:214:1: error: struct tcp_info: reordering it breaks this user-space ABI",
            uapi.display()
        )),
        "{}",
        stderr(&o)
    );
    // sock.c sets struct old_timeval32 by position (`{ tv.tv_sec,
    // tv.tv_usec }`): the padding that keeps the two members apart would
    // take the second value, so the proposal is refused at the site.
    let access = write(
        "tv.toml",
        "[struct.old_timeval32]\nread_mostly = [\"tv_sec\"]\nlockless_atomic = [\"tv_usec\"]\n",
    );
    let time32 = common.join("include/vdso/time32.h");
    let o = run_in(
        src,
        &[
            "propose",
            time32.to_str().unwrap(),
            "--kbuild",
            kb,
            "--struct",
            "old_timeval32",
            "--access",
            &access,
            "--safety-scan",
            "net/core/sock.c",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "net/core/sock.c:374:3: error: struct old_timeval32: reordering it breaks this positional initializer"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn group_assertions_are_kept_by_the_markers_or_refuse() {
    let header = "struct stats {
\tlong name;
\t__cacheline_group_begin(hot);
\tlong max;
\tlong hits;
\tlong min;
\t__cacheline_group_end(hot);
\tlong misses;
\tlong total;
};
";
    let access = "[struct.stats]\nread_mostly = [\"name\", \"max\", \"min\"]\nlockless_atomic = [\"hits\", \"misses\"]\n";
    let users = |size: u64| {
        format!(
            "void chk(void)\n{{\n\tCACHELINE_ASSERT_GROUP_MEMBER(struct stats, hot, max);\n\tCACHELINE_ASSERT_GROUP_SIZE(struct stats, hot, {size});\n}}\n"
        )
    };
    let dir = tree(&[("g.h", header), ("a.toml", access), ("u.c", &users(128))]);
    let o = propose(dir.path(), "g.h", &["--safety-scan", "u.c"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("kept by cache-line group hot's markers: cache-line group assertion at u.c:3:2: +0 bytes"),
        "{e}"
    );
    assert!(
        e.contains("kept by cache-line group hot within 128 bytes (checked): cache-line group assertion at u.c:4:2"),
        "{e}"
    );
    // The group grows past an asserted 24 bytes: refused at the assertion.
    std::fs::write(dir.path().join("u.c"), users(24)).unwrap();
    let o = propose(dir.path(), "g.h", &["--safety-scan", "u.c"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("u.c:4:2: error: struct stats: reordering it breaks this cache-line group assertion: cache-line group hot grows to 64 bytes, past the 24 its assertion allows"),
        "{}",
        stderr(&o)
    );
    // --regroup dissolves the group both assertions name.
    std::fs::write(dir.path().join("u.c"), users(128)).unwrap();
    let o = propose(dir.path(), "g.h", &["--safety-scan", "u.c", "--regroup"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("u.c:3:2: error: struct stats: reordering it breaks this cache-line group assertion: the assertion names cache-line group hot, which the proposal dissolves (1 more site refuses too)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_compilation_database_names_the_units_to_read() {
    let users = "static struct stats boot = { 1, 2 };\n";
    let dir = tree(&[
        ("s.h", HEADER),
        ("a.toml", ACCESS),
        ("src/users.c", users),
        (
            "src/unused.c",
            "static struct stats other = { 1, 2, 3, 4 };\n",
        ),
    ]);
    let db = format!(
        "[{{\"directory\": \"{}\", \"file\": \"src/users.c\", \"command\": \"cc -c src/users.c\"}},\n \
         {{\"directory\": \"{}\", \"file\": \"src/gone.c\", \"command\": \"cc -c src/gone.c\"}}]\n",
        dir.path().display(),
        dir.path().display()
    );
    std::fs::write(dir.path().join("compile_commands.json"), db).unwrap();
    let o = propose(
        dir.path(),
        "s.h",
        &["--safety-scan", "compile_commands.json", "--format", "json"],
    );
    // `boot` sets `name` and `hits` by position; hits must leave name's
    // line, which needs padding between them: refused at the site.
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("/src/users.c:1:8: error: struct stats: reordering it breaks this positional initializer: the proposal pads between `name` and `hits`"),
        "{e}"
    );
    std::fs::write(dir.path().join("compile_commands.json"), "[ not json").unwrap();
    let o = propose(
        dir.path(),
        "s.h",
        &["--safety-scan", "compile_commands.json"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with(
            "compile_commands.json:1:4: error: the compilation database is not a JSON array"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn styles_that_add_members_refuse_a_positional_initializer() {
    let header = HEADER.replace(
        "\tlong hits;\n\tlong max;\n\tlong min;\n",
        "\tlong max;\n\tlong min;\n\tlong hits;\n",
    );
    let users = "static struct stats boot = { 1, 2 };\n";
    let dir = tree(&[("s.h", &header), ("a.toml", ACCESS), ("u.c", users)]);
    let o = propose(dir.path(), "s.h", &["--safety-scan", "u.c"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = propose(
        dir.path(),
        "s.h",
        &["--safety-scan", "u.c", "--style", "padding"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("u.c:1:8: error: struct stats: this positional initializer sets members by position, and --style padding adds members"),
        "{}",
        stderr(&o)
    );
}
