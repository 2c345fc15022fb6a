//! Source patterns of a roots file (`net/ipv4/tcp*.c`, `mm/**/*.c`)
//! expanded under the source tree: `*` and `?` within one path component,
//! `**` for any number of directories. Results are sorted and each file is
//! listed once; directories are walked in name order, symbolic links to
//! directories are not followed (a tree stays finite), and a file whose
//! real path is outside the tree (a link to `/etc`, `/proc`) is left out.

use std::path::{Path, PathBuf};

/// Files under `root` that `pattern` matches, sorted, relative paths
/// joined to `root`.
pub fn expand(root: &Path, pattern: &str) -> std::io::Result<Vec<PathBuf>> {
    let parts: Vec<&str> = pattern
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let mut out = Vec::new();
    walk(root, &parts, &mut out)?;
    // A symbolic link that leads out of the tree (to `/etc`, `/proc`, a
    // home directory) is not one of its sources.
    let real_root = std::fs::canonicalize(root)?;
    out.retain(|p| std::fs::canonicalize(p).is_ok_and(|r| r.starts_with(&real_root)));
    out.sort();
    out.dedup();
    Ok(out)
}

fn walk(dir: &Path, parts: &[&str], out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(());
    };
    if *first == "**" {
        // Zero directories, then one more level of any directory.
        walk(dir, rest, out)?;
        for sub in entries(dir)? {
            if std::fs::symlink_metadata(&sub)?.is_dir() {
                walk(&sub, parts, out)?;
            }
        }
        return Ok(());
    }
    let last = rest.is_empty();
    if !first.contains(['*', '?']) {
        let p = dir.join(first);
        if last {
            if p.is_file() {
                out.push(p);
            }
        } else if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
            walk(&p, rest, out)?;
        }
        return Ok(());
    }
    for p in entries(dir)? {
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !matches(first.as_bytes(), name.as_bytes()) {
            continue;
        }
        if last {
            if p.is_file() {
                out.push(p);
            }
        } else if std::fs::symlink_metadata(&p)?.is_dir() {
            walk(&p, rest, out)?;
        }
    }
    Ok(())
}

fn entries(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    v.sort();
    Ok(v)
}

/// Whether `name` matches the one-component pattern `pat` (`*`, `?`).
pub fn matches(pat: &[u8], name: &[u8]) -> bool {
    // Iterative wildcard match with one backtrack point: linear in practice.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pat.len() && (pat[p] == b'?' || pat[p] == name[n]) {
            p += 1;
            n += 1;
        } else if p < pat.len() && pat[p] == b'*' {
            star = Some((p, n));
            p += 1;
        } else if let Some((sp, sn)) = star {
            p = sp + 1;
            n = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    pat[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_in_one_component() {
        assert!(matches(b"tcp*.c", b"tcp_input.c"));
        assert!(matches(b"tcp*.c", b"tcp.c"));
        assert!(!matches(b"tcp*.c", b"udp.c"));
        assert!(matches(b"?.c", b"a.c"));
        assert!(!matches(b"?.c", b"ab.c"));
        assert!(matches(b"*", b"x"));
    }

    #[test]
    fn links_out_of_the_tree_are_not_sources() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("t");
        std::fs::create_dir_all(t.join("net")).unwrap();
        std::fs::write(t.join("net/a.c"), "").unwrap();
        std::fs::write(d.path().join("secret.c"), "").unwrap();
        std::os::unix::fs::symlink(d.path().join("secret.c"), t.join("net/out.c")).unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", t.join("net/env.c")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", t.join("net/zero.c")).unwrap();
        std::os::unix::fs::symlink("/", t.join("net/root")).unwrap();
        std::os::unix::fs::symlink("loop.c", t.join("net/loop.c")).unwrap();
        std::os::unix::fs::symlink("a.c", t.join("net/in.c")).unwrap();
        for pat in [
            "net/*.c",
            "**/*.c",
            "net/root/etc/*",
            "net/root/proc/self/*",
        ] {
            let got: Vec<String> = expand(&t, pat)
                .unwrap()
                .iter()
                .map(|p| p.strip_prefix(&t).unwrap().display().to_string())
                .collect();
            let want: &[&str] = if pat.ends_with(".c") {
                &["net/a.c", "net/in.c"]
            } else {
                &[]
            };
            assert_eq!(got, want, "{pat}");
        }
    }

    #[test]
    fn expands_under_the_root() {
        let d = tempfile::tempdir().unwrap();
        for f in [
            "net/ipv4/tcp.c",
            "net/ipv4/tcp_input.c",
            "net/ipv4/udp.c",
            "net/core/dev.c",
            "net/core/x/y.c",
        ] {
            let p = d.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let names = |pat: &str| -> Vec<String> {
            expand(d.path(), pat)
                .unwrap()
                .iter()
                .map(|p| p.strip_prefix(d.path()).unwrap().display().to_string())
                .collect()
        };
        assert_eq!(
            names("net/ipv4/tcp*.c"),
            ["net/ipv4/tcp.c", "net/ipv4/tcp_input.c"]
        );
        assert_eq!(names("net/core/dev.c"), ["net/core/dev.c"]);
        assert_eq!(names("net/**/*.c").len(), 5);
        assert_eq!(names("net/*/dev.c"), ["net/core/dev.c"]);
        assert!(names("nothing/*.c").is_empty());
    }
}
