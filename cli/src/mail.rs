//! What `propose --format patch` needs from outside the layout: git's
//! author identity (`git var GIT_AUTHOR_IDENT`, which reads user.name,
//! user.email and GIT_AUTHOR_* as git commit does) and the header's path
//! from the tree root. Only git runs.

use layout_core::emit::Author;
use layout_core::Diagnostic;
use std::path::{Path, PathBuf};
use std::process::Command;

/// git's author identity, run from the header's directory.
pub fn author(dir: &Path) -> Result<Author, Diagnostic> {
    let no_identity = || {
        Diagnostic::new("--format patch needs git's author identity (user.name and user.email)")
            .help("git config --global user.name 'Your Name'; git config --global user.email you@example.org")
    };
    let out = Command::new("git")
        .current_dir(dir)
        .args(["var", "GIT_AUTHOR_IDENT"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|_| no_identity())?;
    if !out.status.success() {
        return Err(no_identity());
    }
    parse_ident(String::from_utf8_lossy(&out.stdout).trim()).ok_or_else(no_identity)
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
}
