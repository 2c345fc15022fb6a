//! What `propose --format patch` and `audit --series` need from outside
//! the layout: git's author identity and the header's path from the tree
//! root. Only git runs, and only as [`git`] starts it: in a repository that
//! may be hostile, nothing it configures runs.

use layout_core::emit::Author;
use layout_core::Diagnostic;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `git` in `dir`, such that the repository there cannot make it run a
/// program: no pager (`--no-pager`, `core.pager`, `GIT_PAGER`), no
/// fsmonitor, no hooks, no prompt; stdin closed. git runs no alias of a
/// built-in command, and only built-ins run here.
fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        .args([
            "--no-pager",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.pager=cat",
        ])
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.untrackedCache=false",
        ])
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null());
    c
}

/// The author of a mail, as `git commit` takes it: the name from
/// `GIT_AUTHOR_NAME`, else git's `author.name`, else `user.name`; the
/// address from `GIT_AUTHOR_EMAIL`, `author.email`, `user.email`. Never an
/// address git would guess from the user and host names: with no identity
/// set, an error that says how to set one. The date is `GIT_AUTHOR_DATE`
/// (in any of git's formats) or now, as git reads it.
pub fn author(dir: &Path) -> Result<Author, Diagnostic> {
    let name = identity(dir, "GIT_AUTHOR_NAME", &["author.name", "user.name"])?;
    let email = identity(dir, "GIT_AUTHOR_EMAIL", &["author.email", "user.email"])?;
    let (Some(name), Some(email)) = (name.clone(), email.clone()) else {
        let missing = match (name, email) {
            (None, None) => {
                "user.name and user.email are not set (nor GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL)"
            }
            (None, _) => "user.name is not set (nor GIT_AUTHOR_NAME)",
            _ => "user.email is not set (nor GIT_AUTHOR_EMAIL)",
        };
        return Err(Diagnostic::new(format!("a mail needs git's author identity: {missing}"))
            .help("git config --global user.name 'Your Name'; git config --global user.email you@example.org (or set GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL)"));
    };
    // git reads the date; the identity it is given is the one found above,
    // so it has nothing to guess.
    let out = git(dir)
        .args(["var", "GIT_AUTHOR_IDENT"])
        .env("GIT_AUTHOR_NAME", &name)
        .env("GIT_AUTHOR_EMAIL", &email)
        .output()
        .map_err(|e| {
            Diagnostic::new(format!("cannot run git for the mail's date: {e}"))
                .help("install git, or put it on PATH")
        })?;
    let ident = String::from_utf8_lossy(&out.stdout);
    let dated = out
        .status
        .success()
        .then(|| parse_ident(ident.trim()))
        .flatten()
        .ok_or_else(|| {
            Diagnostic::new(format!(
                "git cannot read the author's date: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
            .help("unset GIT_AUTHOR_DATE, or give it as git does: '1700000000 +0000'")
        })?;
    Ok(Author {
        name,
        email,
        ..dated
    })
}

/// One part of the identity: the environment variable `var`, else the
/// first of git's configuration `keys` that is set (read with `git config`,
/// which runs nothing). `None` when none is set (an empty value counts as
/// unset); an error when the value could not sit in a mail header.
fn identity(dir: &Path, var: &str, keys: &[&str]) -> Result<Option<String>, Diagnostic> {
    let from_env = || {
        let v = std::env::var_os(var)?;
        Some((var.to_string(), v.to_string_lossy().trim().to_string()))
    };
    let from_config = |key: &&str| {
        let out = git(dir)
            .args(["config", "-z", "--get", key])
            .stderr(Stdio::null())
            .output()
            .ok()?;
        let value = String::from_utf8_lossy(&out.stdout);
        let value = value.trim_end_matches('\0').trim().to_string();
        out.status.success().then(|| (key.to_string(), value))
    };
    let found = from_env()
        .into_iter()
        .chain(keys.iter().filter_map(from_config))
        .find(|(_, v)| !v.is_empty());
    let Some((from, value)) = found else {
        return Ok(None);
    };
    if value
        .chars()
        .any(|c| c.is_control() || c == '<' || c == '>')
    {
        let what = if from == var {
            from.clone()
        } else {
            format!("git's {from}")
        };
        return Err(Diagnostic::new(format!(
            "{what} holds a line break, a control character or an angle bracket: it cannot go in a mail's From: line"
        ))
        .help(if from == var {
            format!("set {var} to a plain name or address")
        } else {
            format!("set it to a plain name or address: git config --global {from} ...")
        }));
    }
    Ok(Some(value))
}

/// `Name <email> 1700000000 +0100`.
fn parse_ident(ident: &str) -> Option<Author> {
    let (name, rest) = ident.split_once(" <")?;
    let (email, rest) = rest.split_once("> ")?;
    let (time, tz) = rest.trim().split_once(' ')?;
    let sign = if tz.starts_with('-') { -1 } else { 1 };
    let digits = tz.trim_start_matches(['+', '-']);
    let (h, m) = (
        digits.get(..2)?.parse::<i32>().ok()?,
        digits.get(2..4)?.parse::<i32>().ok()?,
    );
    Some(Author {
        name: name.trim().to_string(),
        email: email.to_string(),
        time: time.parse().ok()?,
        tz_minutes: sign * (h * 60 + m),
    })
}

/// The header's path from the root of its tree, `/`-separated, as `git am`
/// expects it in a mail: under the `--kbuild` tree (its source tree or its
/// build tree) when it lies there, else under the git work tree that holds
/// it, else under the directory above its `include/`, else under its
/// directory's parent.
pub fn tree_path(header: &Path, kbuild: Option<&Path>) -> Result<String, Diagnostic> {
    let abs = resolved(header)?;
    let root = kbuild_root(&abs, kbuild).unwrap_or_else(|| fallback_root(&abs, true));
    Ok(relative(&abs, &root))
}

/// The header's path as a plain diff's headers show it (`--- a/PATH`):
/// relative to the `--kbuild` tree when the header lies there, else to the
/// current directory when it lies under it, else to the directory above
/// its `include/` (or its directory's parent). Never absolute, so never
/// `a//...`; runs no program.
pub fn shown_path(header: &Path, kbuild: Option<&Path>) -> Result<String, Diagnostic> {
    let abs = resolved(header)?;
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|d| std::fs::canonicalize(d).ok())
        .filter(|d| abs.starts_with(d));
    let root = kbuild_root(&abs, kbuild)
        .or(cwd)
        .unwrap_or_else(|| fallback_root(&abs, false));
    Ok(relative(&abs, &root))
}

/// An error as a mail gives it: its file, and any path in its text, under
/// one of `trees` written relative to that tree (the longest that holds
/// it), as `git am` and a reviewer read paths; other paths as they are.
#[cfg(feature = "infer-clang")] // for audit --series
pub fn in_trees(e: &Diagnostic, trees: &[PathBuf]) -> String {
    // Each tree as given and as resolved, the longest first.
    let mut roots: Vec<PathBuf> = trees
        .iter()
        .flat_map(|t| [Some(t.clone()), std::fs::canonicalize(t).ok()])
        .flatten()
        .filter(|r| r.is_absolute() && r.parent().is_some())
        .collect();
    roots.sort_by_key(|r| std::cmp::Reverse(r.as_os_str().len()));
    roots.dedup();
    let mut e = e.clone();
    if let Some(file) = &e.file {
        let abs = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
        let under = |p: &Path| {
            roots
                .iter()
                .find(|r| p.starts_with(r))
                .map(|r| relative(p, r))
        };
        if let Some(rel) = under(&abs).or_else(|| under(file)) {
            e.file = Some(PathBuf::from(rel));
        }
    }
    let mut text = e.to_string();
    for r in &roots {
        text = text.replace(&format!("{}/", r.display()), "");
    }
    text
}

fn resolved(header: &Path) -> Result<PathBuf, Diagnostic> {
    std::fs::canonicalize(header).map_err(|e| {
        Diagnostic::new(format!("cannot resolve {}: {e}", header.display()))
            .help("give the path of the header the patch changes")
    })
}

/// The `--kbuild` tree that holds `abs`: its source tree (a Debian
/// headers package keeps the sources in a `-common` sibling), or the
/// build tree itself.
fn kbuild_root(abs: &Path, kbuild: Option<&Path>) -> Option<PathBuf> {
    let kbuild = kbuild?;
    let mut roots = Vec::new();
    if let Ok(tree) = layout_core::probe::KbuildTree::locate(kbuild) {
        roots.push(std::fs::canonicalize(&tree.srctree).unwrap_or(tree.srctree));
        roots.push(std::fs::canonicalize(&tree.objtree).unwrap_or(tree.objtree));
    }
    roots.extend(std::fs::canonicalize(kbuild).ok());
    roots.into_iter().find(|r| abs.starts_with(r))
}

/// The root of a header outside the `--kbuild` tree: the git work tree
/// that holds it (when `git` may run), else the directory above its
/// `include/`, else its directory's parent.
fn fallback_root(abs: &Path, git: bool) -> PathBuf {
    let dir = abs.parent().unwrap_or(Path::new("/")).to_path_buf();
    git.then(|| git_toplevel(&dir))
        .flatten()
        .filter(|t| abs.starts_with(t))
        .or_else(|| {
            abs.ancestors()
                .find(|a| a.file_name().is_some_and(|n| n == "include"))
                .and_then(Path::parent)
                .map(Path::to_path_buf)
        })
        .unwrap_or_else(|| dir.parent().unwrap_or(&dir).to_path_buf())
}

/// `abs` from `root`, `/`-separated, without a root or prefix component.
fn relative(abs: &Path, root: &Path) -> String {
    let rel = abs.strip_prefix(root).unwrap_or(abs);
    rel.components()
        .filter_map(|c| match c {
            std::path::Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The git work tree that holds `dir`: the nearest directory above it
/// with a `.git` entry (a directory, or a worktree's or submodule's
/// file). Found on the filesystem: running git in an untrusted
/// repository would run what its config names (`core.fsmonitor`, ...).
fn git_toplevel(dir: &Path) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(dir).ok()?;
    dir.ancestors()
        .find(|a| std::fs::symlink_metadata(a.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_identities_parse() {
        let a = parse_ident("A U Thor <a@example.org> 1796144186 -0130").unwrap();
        assert_eq!(
            (a.name.as_str(), a.email.as_str()),
            ("A U Thor", "a@example.org")
        );
        assert_eq!((a.time, a.tz_minutes), (1_796_144_186, -90));
        assert!(parse_ident("nobody").is_none());
    }

    #[cfg(feature = "infer-clang")]
    #[test]
    fn errors_name_files_relative_to_their_tree() {
        let d = std::env::temp_dir();
        let tree = std::fs::canonicalize(&d).unwrap().join("kernel-tree");
        let e = Diagnostic::new(format!(
            "struct s: {} breaks it",
            tree.join("net/core/filter.c").display()
        ))
        .in_file(tree.join("include/uapi/linux/s.h"))
        .at(3, 5)
        .help("see /elsewhere/x.h");
        assert_eq!(
            in_trees(&e, &[PathBuf::from("/nowhere"), tree.clone()]),
            "include/uapi/linux/s.h:3:5: error: struct s: net/core/filter.c breaks it; help: see /elsewhere/x.h"
        );
        // A file under no tree keeps its path.
        let outside = Diagnostic::new("m").in_file("/elsewhere/x.h");
        assert_eq!(in_trees(&outside, &[tree]), "/elsewhere/x.h: error: m");
    }
}
