//! Issue 39's adversarial round over the surfaces around the analysis:
//! a hostile git repository under `propose --format patch`, the `--series`
//! directory, `propose --safety-scan` over special files and link loops,
//! the audit's roots file and sources. Every case: a clear error and exit
//! 2, or the right output; no signal, no program the user did not name.

use crate::support::{run_in, stderr, stdout};
use std::path::Path;
use std::process::{Command, Output};

const POOL_H: &str = "struct pool {\n\tunsigned long limit;\n\tunsigned long allocs;\n\tunsigned long low;\n\tunsigned long frees;\n\tlong pad[6];\n\tunsigned long high;\n};\n";
const POOL_TOML: &str = "[struct.pool]\nread_mostly = [\"limit\", \"low\", \"high\"]\nlockless_atomic = [\"allocs\", \"frees\"]\n";

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

/// A repository whose config and hooks would run a program (each writes
/// its marker file) wherever git reads the index, pages, or runs an alias
/// or a hook.
fn hostile_repo(d: &Path) {
    std::fs::create_dir_all(d.join("include")).unwrap();
    std::fs::write(d.join("include/pool.h"), POOL_H).unwrap();
    std::fs::write(d.join("pool.toml"), POOL_TOML).unwrap();
    git(d, &["init", "-q"]);
    let marker = |name: &str| {
        let script = d.join(format!("{name}.sh"));
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\ntouch {}\n",
                d.join(format!("{name}.ran")).display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        script.display().to_string()
    };
    let fsmonitor = marker("fsmonitor");
    let pager = marker("pager");
    let alias = marker("alias");
    git(d, &["config", "core.fsmonitor", &fsmonitor]);
    git(d, &["config", "core.pager", &pager]);
    git(d, &["config", "alias.var", &format!("!{alias}")]);
    git(d, &["config", "alias.rev-parse", &format!("!{alias}")]);
    for hook in [
        "pre-commit",
        "post-checkout",
        "post-index-change",
        "reference-transaction",
    ] {
        let h = marker(hook);
        std::fs::copy(&h, d.join(".git/hooks").join(hook)).unwrap();
    }
}

fn ran(d: &Path) -> Vec<String> {
    std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ran"))
        .collect()
}

#[test]
fn a_patch_in_a_hostile_repository_runs_nothing_it_names() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    hostile_repo(d);
    let sub = d.join("include");
    let o = Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(&sub)
        .env("GIT_AUTHOR_NAME", "Ada Reviewer")
        .env("GIT_AUTHOR_EMAIL", "ada@example.org")
        .env("GIT_AUTHOR_DATE", "1796144186 +0000")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args([
            "propose",
            "pool.h",
            "--struct",
            "pool",
            "--access",
            "../pool.toml",
            "--format",
            "patch",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // The header's path from the work tree's top, found without git.
    assert!(
        stdout(&o).contains("\ndiff --git a/include/pool.h b/include/pool.h\n"),
        "{}",
        stdout(&o)
    );
    assert_eq!(ran(d), Vec::<String>::new());
}

fn output_of(o: &Output) -> (Option<i32>, String) {
    (
        o.status.code(),
        stderr(o).lines().last().unwrap_or("").to_string(),
    )
}

#[test]
fn series_directories_that_are_files_links_or_not_empty_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let audit_dir = crate::support::repo().join("cli/tests/fixtures/audit");
    std::fs::write(d.join("file"), "x").unwrap();
    std::fs::create_dir(d.join("full")).unwrap();
    std::fs::write(d.join("full/keep"), "y").unwrap();
    std::os::unix::fs::symlink(d.join("nowhere"), d.join("dangling")).unwrap();
    std::os::unix::fs::symlink(d.join("loop"), d.join("loop")).unwrap();
    std::os::unix::fs::symlink(d.join("file"), d.join("to-file")).unwrap();
    std::os::unix::fs::symlink(d.join("full"), d.join("to-full")).unwrap();
    let cache = d.join("cache");
    for (out, says) in [
        ("file", "exists and is not a directory"),
        ("dangling", "exists and is not a directory"),
        ("loop", "exists and is not a directory"),
        ("to-file", "exists and is not a directory"),
        ("full", "is not empty"),
        ("to-full", "is not empty"),
    ] {
        let o = run_in(
            &audit_dir,
            &[
                "audit",
                "--cc",
                "gcc -Iinclude",
                "--roots",
                "roots.toml",
                "include",
                "--series",
                "1",
                "--cache-dir",
                cache.to_str().unwrap(),
                "-o",
                d.join(out).to_str().unwrap(),
            ],
        );
        let (code, last) = output_of(&o);
        assert_eq!(code, Some(2), "{out}: {}", stderr(&o));
        assert!(last.contains(says), "{out}: {last}");
    }
    // Nothing was written anywhere: the file, the full directory, no new target.
    assert_eq!(std::fs::read(d.join("file")).unwrap(), b"x");
    assert_eq!(std::fs::read_dir(d.join("full")).unwrap().count(), 1);
    assert!(!d.join("nowhere").exists());
}

#[test]
fn a_safety_scan_over_devices_fifos_and_link_loops_ends_with_a_clear_answer() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("pool.h"), POOL_H).unwrap();
    std::fs::write(d.join("pool.toml"), POOL_TOML).unwrap();
    let tree = d.join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(
        tree.join("ok.c"),
        "#include \"pool.h\"\nvoid f(struct pool *p) { p->limit = 1; }\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("/dev/zero", tree.join("zero.c")).unwrap();
    std::os::unix::fs::symlink(&tree, tree.join("sub/up")).unwrap();
    std::os::unix::fs::symlink("self.c", tree.join("self.c")).unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", tree.join("env.c")).unwrap();
    let made = Command::new("mkfifo")
        .arg(tree.join("fifo.c"))
        .status()
        .unwrap();
    assert!(made.success());
    let t0 = std::time::Instant::now();
    let o = crate::support::run_with_deadline(
        d,
        &[],
        &[
            "propose",
            "pool.h",
            "--struct",
            "pool",
            "--access",
            "pool.toml",
            "--safety-scan",
            "tree",
        ],
        std::time::Duration::from_secs(30),
    );
    assert!(t0.elapsed() < std::time::Duration::from_secs(10));
    use std::os::unix::process::ExitStatusExt as _;
    assert_eq!(o.status.signal(), None);
    let code = o.status.code();
    assert!(
        code == Some(0) || code == Some(2),
        "{code:?}: {}",
        stderr(&o)
    );
    if code == Some(2) {
        let err = stderr(&o);
        let errors = err.lines().filter(|l| l.contains("error:")).count();
        assert_eq!(errors, 1, "{err}");
    }
    eprintln!(
        "safety scan: exit {code:?}: {}",
        stderr(&o).lines().last().unwrap_or("")
    );
}
