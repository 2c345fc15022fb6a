//! What the mails of `audit --series` say beside the diff, on the audit
//! fixtures (`fixtures/audit`, `fixtures/audit_spread`): the paths of the
//! cover letter's "Not in this series" lines are relative to the tree, and
//! each patch's "To measure" names the tool that fits its change — `perf
//! c2c` for false sharing, the cache misses of the path and a data-type
//! profile for a fast path packed on fewer lines.

use super::audit::{git, series_files, spread_tree, tree};
use crate::support::stderr;
use std::path::Path;
use std::process::{Command, Output};

/// `audit --series 20` of the tree `t`, its headers named by their
/// absolute path (as a `--kbuild` tree's are), with a git identity.
fn series_of(t: &Path, cache: &Path, series: &Path) -> Output {
    assert!(git(t, &["init", "-q"]).status.success());
    assert!(git(t, &["add", "-A"]).status.success());
    assert!(git(t, &["commit", "-qm", "base"]).status.success());
    Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(t)
        .args(["audit", "--cc", "gcc -Iinclude", "--roots", "roots.toml"])
        .arg(t.join("include"))
        .arg("--cache-dir")
        .arg(cache)
        .args(["--series", "20", "-o"])
        .arg(series)
        .env("GIT_AUTHOR_NAME", "Audit Test")
        .env("GIT_AUTHOR_EMAIL", "audit@example.org")
        .output()
        .expect("the cachelayout binary runs")
}

/// The paragraphs of a mail that start "To measure", each on one line.
fn measuring(mail: &str) -> Vec<String> {
    mail.split("\n\n")
        .filter(|p| p.starts_with("To measure"))
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// The fixture with struct `conn` moved to a header under include/uapi/:
/// the tree-safety pass refuses it (its layout is the user-space ABI), and
/// the cover letter says so with the header's path in the tree. The two
/// other planted structs share lines between lockless writes and read-mostly
/// members: their patches say to measure with perf c2c.
#[test]
fn the_cover_letter_names_refusals_by_tree_paths_and_false_sharing_is_measured_with_c2c() {
    let (d, t) = tree();
    let net = t.join("include/syn/net.h");
    let text = std::fs::read_to_string(&net).unwrap();
    let start = text.find("struct conn {").unwrap();
    let end = start + text[start..].find("};\n").unwrap() + 3;
    std::fs::create_dir_all(t.join("include/uapi/syn")).unwrap();
    std::fs::write(
        t.join("include/uapi/syn/conn.h"),
        format!(
            "#ifndef UAPI_SYN_CONN_H\n#define UAPI_SYN_CONN_H\n#include <syn/kernel.h>\n{}#endif\n",
            &text[start..end]
        ),
    )
    .unwrap();
    std::fs::write(
        &net,
        format!(
            "{}#include <uapi/syn/conn.h>\n{}",
            &text[..start],
            &text[end..]
        ),
    )
    .unwrap();
    let series = d.path().join("series");
    let o = series_of(&t, &d.path().join("cache"), &series);
    assert!(o.status.success(), "{}", stderr(&o));
    let files = series_files(&series);
    assert_eq!(files.len(), 3, "{files:?}");
    let cover = std::fs::read_to_string(series.join(&files[0])).unwrap();
    let refusal = cover
        .lines()
        .find(|l| l.starts_with("Not in this series, struct conn: "))
        .unwrap_or_else(|| panic!("conn is not named as refused: {cover}"));
    assert!(
        refusal.starts_with("Not in this series, struct conn: include/uapi/syn/conn.h:"),
        "{refusal}"
    );
    assert!(refusal.contains("user-space ABI"), "{refusal}");
    let root = std::fs::canonicalize(d.path()).unwrap();
    for dir in [d.path(), root.as_path()] {
        assert!(
            !cover.contains(dir.to_str().unwrap()),
            "the cover letter names a path outside the tree: {cover}"
        );
    }
    // The stderr note keeps the path the user can open.
    assert!(
        stderr(&o).contains("note: struct conn: no patch: /"),
        "{}",
        stderr(&o)
    );
    for f in &files[1..] {
        let mail = std::fs::read_to_string(series.join(f)).unwrap();
        let m = measuring(&mail);
        assert_eq!(m.len(), 1, "{f}: {mail}");
        assert!(
            m[0].contains("`perf c2c record -a`") && m[0].contains("`perf c2c report --stdio`"),
            "{f}: {mail}"
        );
        assert!(!mail.contains("perf stat"), "{f}: {mail}");
    }
    // The series still applies.
    let mut am = vec!["am".to_string()];
    am.extend(
        files[1..]
            .iter()
            .map(|f| series.join(f).display().to_string()),
    );
    let am: Vec<&str> = am.iter().map(String::as_str).collect();
    let applied = git(&t, &am);
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
}

/// The spread fixture's one patch packs the fast path flow_rx (an
/// `--objective hot-lines` patch, nothing written on the path): it says
/// to count that path's cache misses with perf stat and to take a
/// data-type profile, and nothing of perf c2c.
#[test]
fn a_packed_fast_path_is_measured_by_its_cache_misses() {
    let (d, t) = spread_tree();
    let series = d.path().join("series");
    let o = series_of(&t, &d.path().join("cache"), &series);
    assert!(o.status.success(), "{}", stderr(&o));
    let files = series_files(&series);
    assert_eq!(files.len(), 2, "{files:?}");
    let mail = std::fs::read_to_string(series.join(&files[1])).unwrap();
    let m = measuring(&mail);
    assert_eq!(m.len(), 1, "{mail}");
    assert!(
        m[0].starts_with(
            "To measure the hot path flow_rx, which now touches fewer cachelines of struct flow:"
        ),
        "{mail}"
    );
    for tool in [
        "`perf stat -e cache-misses,L1-dcache-load-misses`",
        "`perf mem record -a`",
        "`perf report -s type,typeoff --stdio`",
    ] {
        assert!(m[0].contains(tool), "{tool}: {mail}");
    }
    assert!(!mail.contains("perf c2c"), "{mail}");
}
