//! The probe cache: one directory per probe under
//! `$XDG_CACHE_HOME/cachelayout/probes` (or `~/.cache/...`), named by the
//! hash of everything that decides the compile: the compiler's identity,
//! its words and flags, the directory it runs in, the probed headers' paths
//! and contents. A probe also depends on every header those include: the
//! entry lists them (from the compiler's `-MD` output) with the hash of
//! their contents, and a lookup hashes them again, so an entry whose
//! headers changed since is never used (it is compiled again and replaced).
//! A probe that did not compile is an entry too (its first error, and the
//! files the compiler read before it), so a tree-wide scan does not compile
//! again the headers that do not compile alone.
//! Entries are written to a temporary directory and renamed into place, so
//! a reader never sees half an entry.

use super::compile::{self, Toolchain};
use super::hash::{self, Fnv128};
use layout_core::Diagnostic;
use std::path::{Path, PathBuf};

/// The list of files an entry was built from, with their hashes.
const INPUTS: &str = "inputs";
/// Bumped when what an entry holds changes.
const FORMAT: &str = "cachelayout-probe-1";

/// The system cache directory for probes, if there is one.
pub fn default_root() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) if Path::new(&x).is_absolute() => PathBuf::from(x),
        _ => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".cache"),
    };
    Some(base.join("cachelayout").join("probes"))
}

/// The cache key of a probe.
pub fn key(tc: &Toolchain, identity: &str, headers: &[PathBuf]) -> Result<String, Diagnostic> {
    let mut h = Fnv128::default();
    h.field(FORMAT.as_bytes())
        .field(env!("CARGO_PKG_VERSION").as_bytes())
        .field(identity.as_bytes());
    for w in tc.compiler.iter().chain(&tc.flags) {
        h.field(w.as_bytes());
    }
    h.field(tc.directory.as_os_str().as_encoded_bytes());
    for header in headers {
        let text = std::fs::read(header).map_err(|e| {
            Diagnostic::new(format!("cannot read header: {e}"))
                .in_file(header)
                .help("check the path")
        })?;
        h.field(header.as_os_str().as_encoded_bytes()).field(&text);
    }
    Ok(h.hex())
}

/// Marks an entry of a probe that did not compile, and holds its error.
const FAILED: &str = "failed";

/// What the cache holds for a key.
pub enum Found {
    /// The directory of a compiled probe.
    Compiled(PathBuf),
    /// The probe did not compile, and no file it read has changed since.
    Failed(compile::Failed),
    Missing,
}

/// A cache entry that is still valid: every file it was built from has the
/// contents it had.
pub fn lookup(root: &Path, key: &str) -> Found {
    let dir = root.join(key);
    let Ok(inputs) = std::fs::read_to_string(dir.join(INPUTS)) else {
        return Found::Missing;
    };
    let fresh = inputs.lines().all(|l| {
        l.split_once('\t')
            .is_some_and(|(want, path)| hash::file(Path::new(path)).as_deref() == Some(want))
    });
    if fresh && !inputs.is_empty() {
        if let Ok(text) = std::fs::read_to_string(dir.join(FAILED)) {
            if let Some(f) = read_failure(&text) {
                return Found::Failed(f);
            }
        } else if [compile::OBJECT, compile::MACROS]
            .iter()
            .all(|f| dir.join(f).is_file())
        {
            return Found::Compiled(dir);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Found::Missing
}

/// A failure as `KEY\tVALUE` lines (each value on one line).
fn write_failure(f: &compile::Failed) -> String {
    let d = &f.diagnostic;
    let one_line = |s: &str| s.replace(['\n', '\t'], " ");
    let mut out = String::new();
    if let Some(h) = f.header {
        out.push_str(&format!("header\t{h}\n"));
    }
    if let Some(file) = &d.file {
        out.push_str(&format!(
            "file\t{}\n",
            one_line(&file.display().to_string())
        ));
    }
    out.push_str(&format!("line\t{}\ncolumn\t{}\n", d.line, d.column));
    out.push_str(&format!("message\t{}\n", one_line(&d.message)));
    if let Some(help) = &d.help {
        out.push_str(&format!("help\t{}\n", one_line(help)));
    }
    out
}

fn read_failure(text: &str) -> Option<compile::Failed> {
    let mut d = Diagnostic::new("");
    let mut header = None;
    let mut has_message = false;
    for l in text.lines() {
        let (k, v) = l.split_once('\t')?;
        match k {
            "header" => header = Some(v.parse().ok()?),
            "file" => d.file = Some(PathBuf::from(v)),
            "line" => d.line = v.parse().ok()?,
            "column" => d.column = v.parse().ok()?,
            "message" => {
                d.message = v.to_string();
                has_message = true;
            }
            "help" => d.help = Some(v.to_string()),
            _ => return None,
        }
    }
    has_message.then_some(compile::Failed {
        diagnostic: d,
        header,
    })
}

/// A fresh directory to compile a probe in: inside `root` (so that storing
/// it is a rename), or in the system's temporary directory.
pub struct WorkDir {
    pub path: PathBuf,
    keep: bool,
}

impl WorkDir {
    pub fn new(root: Option<&Path>) -> Result<WorkDir, Diagnostic> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("tmp-{}-{n}", std::process::id());
        let base = match root {
            Some(r) => r.to_path_buf(),
            None => std::env::temp_dir().join("cachelayout-probes"),
        };
        let path = base.join(name);
        std::fs::create_dir_all(&path).map_err(|e| {
            Diagnostic::new(format!("cannot create a directory for the probe: {e}"))
                .in_file(&path)
                .help("check the permissions of the cache directory, or pass --no-probe-cache")
        })?;
        Ok(WorkDir { path, keep: false })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Records the files the probe in `work` read and moves it to `root/key`;
/// returns where the entry now is. When another run stored the same key
/// first, its entry is used.
pub fn store(root: &Path, key: &str, work: WorkDir, tc: &Toolchain) -> Option<PathBuf> {
    store_entry(root, key, work, tc, None)
}

/// Records a probe that did not compile, when the compiler listed the files
/// it read (it does not after a missing `#include`): the failure is then
/// reported again, without compiling, until one of them changes.
pub fn store_failure(root: &Path, key: &str, work: WorkDir, tc: &Toolchain, f: &compile::Failed) {
    let _ = store_entry(root, key, work, tc, Some(f));
}

fn store_entry(
    root: &Path,
    key: &str,
    mut work: WorkDir,
    tc: &Toolchain,
    failed: Option<&compile::Failed>,
) -> Option<PathBuf> {
    if let Some(f) = failed {
        std::fs::write(work.path.join(FAILED), write_failure(f)).ok()?;
    }
    let deps = std::fs::read_to_string(work.path.join(compile::DEPS)).ok()?;
    let source = work.path.join(compile::SOURCE);
    let mut inputs = String::new();
    for dep in compile::dependencies(&deps) {
        let p = Path::new(&dep);
        let p = if p.is_relative() {
            tc.directory.join(p)
        } else {
            p.to_path_buf()
        };
        if p == source {
            continue;
        }
        inputs.push_str(&format!("{}\t{}\n", hash::file(&p)?, p.display()));
    }
    std::fs::write(work.path.join(INPUTS), inputs).ok()?;
    let dest = root.join(key);
    let _ = std::fs::remove_dir_all(&dest);
    if std::fs::rename(&work.path, &dest).is_ok() {
        work.keep = true;
        return Some(dest);
    }
    match lookup(root, key) {
        Found::Compiled(dir) => Some(dir),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_reads_back_as_written() {
        let f = compile::Failed {
            diagnostic: Diagnostic::new("the compiler `gcc` failed: x\ty")
                .in_file("/a b/c.h")
                .at(3, 4)
                .help("h"),
            header: Some(2),
        };
        let back = read_failure(&write_failure(&f)).unwrap();
        assert_eq!(back.header, Some(2));
        assert_eq!(back.diagnostic.message, "the compiler `gcc` failed: x y");
        assert_eq!(back.diagnostic.file, Some(PathBuf::from("/a b/c.h")));
        assert_eq!((back.diagnostic.line, back.diagnostic.column), (3, 4));
        assert_eq!(back.diagnostic.help.as_deref(), Some("h"));
        assert!(read_failure("line\t1\n").is_none());
    }
}
