//! Who a mail is from: `propose --format patch` takes git's author identity
//! (`GIT_AUTHOR_NAME`/`GIT_AUTHOR_EMAIL`, else git's configuration) or stops
//! with exit 2 and says how to set one; it never writes an address git
//! would guess. And the git it runs in a repository that may be hostile
//! runs nothing the repository configures: a trap armed in the
//! repository's `.git/config` (fsmonitor, pager, hooks) that `git status`
//! springs is not sprung by the mail. Each case on a copy of the shipped
//! example header, with a HOME of its own and no system configuration.

use crate::support::{example, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch directory holding `lru_gen.h` and its access file, and an
/// empty HOME beside it.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        for d in ["home", "tree/include"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        std::fs::copy(
            example("kernel/lru_gen.h"),
            dir.path().join("tree/include/lru_gen.h"),
        )
        .unwrap();
        std::fs::copy(
            example("kernel/lru_gen.toml"),
            dir.path().join("lru_gen.toml"),
        )
        .unwrap();
        Scratch { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// A command with git's view of the world reduced to this directory:
    /// an empty HOME, no system or global configuration, no identity in
    /// the environment, no repository above the tree.
    fn isolated(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("home/.config"))
            .env("XDG_CACHE_HOME", self.path("home/.cache"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CEILING_DIRECTORIES", self.dir.path())
            .env("GIT_AUTHOR_DATE", "1796144186 +0000");
        for var in [
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "GIT_COMMITTER_NAME",
            "GIT_COMMITTER_EMAIL",
            "GIT_CONFIG_GLOBAL",
            "GIT_CONFIG_SYSTEM",
            "GIT_DIR",
            "GIT_WORK_TREE",
            "EMAIL",
        ] {
            c.env_remove(var);
        }
        c
    }

    /// `propose --format patch` of the copied header, run in the tree.
    fn mail(&self, env: &[(&str, &str)]) -> Output {
        let mut c = self.isolated(env!("CARGO_BIN_EXE_cachelayout"));
        c.current_dir(self.path("tree")).args([
            "propose",
            "include/lru_gen.h",
            "--struct",
            "lru_gen_folio",
            "--access",
            self.path("lru_gen.toml").to_str().unwrap(),
            "--format",
            "patch",
        ]);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().expect("the cachelayout binary runs")
    }

    fn git(&self, args: &[&str]) -> Output {
        let out = self
            .isolated("git")
            .current_dir(self.path("tree"))
            .args(args)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }
}

fn from_line(mail: &str) -> &str {
    mail.lines()
        .find(|l| l.starts_with("From: "))
        .unwrap_or_else(|| panic!("no From: line in {mail}"))
}

#[test]
fn the_identity_comes_from_the_environment() {
    let s = Scratch::new();
    let o = s.mail(&[
        ("GIT_AUTHOR_NAME", "Ada Maintainer"),
        ("GIT_AUTHOR_EMAIL", "ada@example.org"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mail = stdout(&o);
    assert_eq!(from_line(&mail), "From: Ada Maintainer <ada@example.org>");
    assert!(
        mail.contains("\nDate: Tue, 1 Dec 2026 16:56:26 +0000\n"),
        "GIT_AUTHOR_DATE is the date: {mail}"
    );
}

#[test]
fn without_an_identity_the_mail_is_refused_with_how_to_set_one() {
    let s = Scratch::new();
    let o = s.mail(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stdout(&o).is_empty(), "no mail: {}", stdout(&o));
    let err = stderr(&o);
    // The line GUIDE.md quotes ("Who the mail is from").
    assert_eq!(
        err,
        "error: a mail needs git's author identity: user.name and user.email are not set \
         (nor GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL); help: git config --global user.name \
         'Your Name'; git config --global user.email you@example.org (or set \
         GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL)\n"
    );
    // A name alone is not an identity either; no address is made up for it.
    let o = s.mail(&[("GIT_AUTHOR_NAME", "Ada Maintainer")]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("user.email is not set (nor GIT_AUTHOR_EMAIL)"),
        "{}",
        stderr(&o)
    );
    // A value that would break the mail's headers is refused, not written.
    let o = s.mail(&[
        ("GIT_AUTHOR_NAME", "Ada\nBcc: everyone@example.org"),
        ("GIT_AUTHOR_EMAIL", "ada@example.org"),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("GIT_AUTHOR_NAME holds a line break"),
        "{}",
        stderr(&o)
    );
}

/// A script that creates `marker` when anything runs it.
fn trap(dir: &Path, marker: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let script = dir.join("trap.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn a_hostile_repository_runs_nothing_and_its_identity_is_read_as_data() {
    let s = Scratch::new();
    let marker = s.path("sprung");
    let script = trap(s.dir.path(), &marker);
    let script = script.to_str().unwrap();
    s.git(&["init", "-q"]);
    let hooks = s.path("tree/.git/hooks");
    for hook in [
        "pre-commit",
        "post-checkout",
        "post-index-change",
        "reference-transaction",
    ] {
        std::fs::copy(script, hooks.join(hook)).unwrap();
    }
    for (key, value) in [
        ("user.name", "Repo Author"),
        ("user.email", "repo@example.org"),
        ("core.fsmonitor", script),
        ("core.pager", script),
        ("pager.config", script),
        ("pager.var", script),
        ("pager.rev-parse", script),
        ("core.askPass", script),
        ("core.sshCommand", script),
    ] {
        s.git(&["config", key, value]);
    }
    s.git(&["add", "-A"]);
    let _ = std::fs::remove_file(&marker);
    let o = s.mail(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mail = stdout(&o);
    assert_eq!(from_line(&mail), "From: Repo Author <repo@example.org>");
    assert!(
        mail.contains("diff --git a/include/lru_gen.h b/include/lru_gen.h"),
        "the path from the repository's top: {mail}"
    );
    assert!(
        !marker.exists(),
        "the mail ran the repository's program: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
    // The trap is armed: git's own status springs it.
    s.git(&["status", "--short"]);
    assert!(marker.exists(), "git status did not run core.fsmonitor");
}
