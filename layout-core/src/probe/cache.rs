//! The probe cache: one directory per probe under
//! `$XDG_CACHE_HOME/cachelayout/probes` (or `~/.cache/...`), named by the
//! hash of everything that decides the compile: the compiler's identity,
//! its words and flags (with the contents of response files), the
//! environment variables the compiler reads, the directory it runs in, the
//! probed headers' paths and contents. A probe also depends on every file
//! the compiler consulted: the entry lists each header it included (from the
//! compiler's `-MD` output) with the hash of its contents, and each place on
//! the include path where a header was looked for before it was found (from
//! the compiler's `-v` search list), which must stay empty. A lookup checks
//! them all again, so an entry is never used once a header changed or a new
//! one would be found first (it is compiled again).
//! A probe that did not compile is an entry too (its first error, and the
//! files the compiler read before it), so a tree-wide scan does not compile
//! again the headers that do not compile alone.
//!
//! Entries are immutable once published: a probe is compiled in a private
//! directory (random name, mode 0700, created exclusively) and renamed into
//! place; a run never removes an entry another run may be reading (a stale
//! one is first renamed away). The cache directory must belong to the user
//! and be writable by nobody else, or it is not used. Work directories of
//! runs that were killed are swept by the next run.

use super::compile::{self, Toolchain};
use super::hash::{self, Fnv128};
use crate::source::bounded;
use crate::Diagnostic;
use std::path::{Path, PathBuf};

/// The list of files an entry was built from, with their hashes.
const INPUTS: &str = "inputs";
/// Bumped when what an entry holds changes.
const FORMAT: &str = "cachelayout-probe-2";

/// Environment variables that change what gcc or clang compiles (include
/// paths, the programs the driver runs, options added to every command).
const COMPILER_ENV: [&str; 13] = [
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "OBJC_INCLUDE_PATH",
    "GCC_EXEC_PREFIX",
    "COMPILER_PATH",
    "GCC_COMPARE_DEBUG",
    "SOURCE_DATE_EPOCH",
    "CCC_OVERRIDE_OPTIONS",
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
];

/// The system cache directory for probes, if there is one.
pub fn default_root() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) if Path::new(&x).is_absolute() => PathBuf::from(x),
        _ => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".cache"),
    };
    Some(base.join("cachelayout").join("probes"))
}

/// Creates the cache directory `root` (mode 0700) if needed and checks that
/// it can be trusted: `root` and its parent are real directories (not
/// symbolic links) owned by this user and writable by nobody else.
pub fn open_root(root: &Path) -> Result<(), String> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(root)
        .map_err(|e| format!("cannot create it: {e}"))?;
    for dir in [Some(root), root.parent()].into_iter().flatten() {
        let meta = std::fs::symlink_metadata(dir)
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        if !meta.file_type().is_dir() {
            return Err(format!(
                "{} is not a directory (a symbolic link?)",
                dir.display()
            ));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            // SAFETY: geteuid has no preconditions and cannot fail.
            let me = unsafe { libc::geteuid() };
            if meta.uid() != me {
                return Err(format!(
                    "{} belongs to another user (uid {})",
                    dir.display(),
                    meta.uid()
                ));
            }
            if meta.mode() & 0o022 != 0 {
                return Err(format!(
                    "{} is writable by other users (mode {:o})",
                    dir.display(),
                    meta.mode() & 0o7777
                ));
            }
        }
    }
    Ok(())
}

/// The cache key of a probe.
pub fn key(tc: &Toolchain, identity: &str, headers: &[PathBuf]) -> Result<String, Diagnostic> {
    let mut h = Fnv128::default();
    h.field(FORMAT.as_bytes())
        .field(env!("CARGO_PKG_VERSION").as_bytes())
        .field(identity.as_bytes());
    for w in tc.compiler.iter().chain(&tc.flags) {
        h.field(w.as_bytes());
        if let Some(file) = w.strip_prefix('@') {
            response_file(&mut h, &tc.directory, file, 0);
        }
    }
    for var in COMPILER_ENV {
        h.field(var.as_bytes());
        match std::env::var_os(var) {
            Some(v) => h.field(b"=").field(v.as_encoded_bytes()),
            None => h.field(b"unset"),
        };
    }
    h.field(tc.directory.as_os_str().as_encoded_bytes());
    h.field(tc.prologue.as_bytes());
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

/// Hashes a response file of `--cc` (`@FILE`, relative to the directory the
/// compiler runs in) and those it names.
fn response_file(h: &mut Fnv128, dir: &Path, name: &str, depth: usize) {
    let path = dir.join(name);
    let path = path.as_path();
    let Ok(bytes) = bounded::read(path, bounded::TEXT_LIMIT) else {
        h.field(b"unreadable");
        return;
    };
    crate::files::note_input(path);
    h.field(&bytes);
    if depth >= 8 {
        return;
    }
    for w in String::from_utf8_lossy(&bytes).split_whitespace() {
        if let Some(inner) = w.strip_prefix('@') {
            response_file(h, dir, inner, depth + 1);
        }
    }
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
/// contents it had, and no header has appeared where the compiler looked
/// before it found one. A stale entry is renamed away, then removed (a run
/// that is reading it keeps its open files).
pub fn lookup(root: &Path, key: &str) -> Found {
    let dir = root.join(key);
    let Ok(inputs) = std::fs::read_to_string(dir.join(INPUTS)) else {
        return Found::Missing;
    };
    let fresh = inputs.lines().all(|l| match l.split_once('\t') {
        Some((ABSENT, path)) => std::fs::symlink_metadata(path).is_err(),
        Some((want, path)) => hash::file(Path::new(path)).as_deref() == Some(want),
        None => false,
    });
    if fresh && !inputs.is_empty() {
        for (tag, path) in inputs.lines().filter_map(|l| l.split_once('\t')) {
            if tag != ABSENT {
                crate::files::note_input(Path::new(path));
            }
        }
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
    discard(root, &dir);
    Found::Missing
}

/// Marks, in an entry's inputs, a place where a header must not appear.
const ABSENT: &str = "-";

/// Renames the entry `dir` away (atomically) into a private directory,
/// which is removed with it when dropped.
fn discard(root: &Path, dir: &Path) {
    if let Ok(aside) = tempfile::Builder::new()
        .prefix(&format!("tmp-{}-stale-", std::process::id()))
        .tempdir_in(root)
    {
        let _ = std::fs::rename(dir, aside.path().join("entry"));
    }
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

/// A fresh private directory to compile a probe in: inside the cache root
/// (so that storing it is a rename), or in the system's temporary directory.
/// Its name is random and it is created exclusively with mode 0700, so no
/// other user can plant files or links in it. It is removed when dropped,
/// and by [`interrupted`] when the run is stopped by a signal.
pub struct WorkDir {
    pub path: PathBuf,
    dir: Option<tempfile::TempDir>,
}

impl WorkDir {
    pub fn new(root: Option<&Path>) -> Result<WorkDir, Diagnostic> {
        let mut builder = tempfile::Builder::new();
        let prefix = format!("tmp-{}-", std::process::id());
        // Created and registered under one lock: a signal that arrives
        // between the two would otherwise find the directory on disk but
        // not in the list, and leave it behind.
        let made = live::create(|| match root {
            Some(r) => builder.prefix(&prefix).tempdir_in(r),
            None => builder.prefix("cachelayout-probe-").tempdir(),
        });
        let dir = made.map_err(|e| {
            Diagnostic::new(format!("cannot create a directory for the probe: {e}"))
                .in_file(root.map_or_else(std::env::temp_dir, Path::to_path_buf))
                .help("check the permissions of the cache directory (or of $TMPDIR), or pass --no-probe-cache")
        })?;
        let path = dir.path().to_path_buf();
        Ok(WorkDir {
            path,
            dir: Some(dir),
        })
    }

    /// Keeps the directory (it was renamed into the cache).
    fn keep(mut self) {
        if let Some(d) = self.dir.take() {
            let _ = d.keep();
        }
        live::remove(&self.path, None);
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        live::remove(&self.path, self.dir.take());
    }
}

/// The work directories of this run, for removal on a signal.
mod live {
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    static DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

    /// Runs `make` with the list locked and adds the directory it made, so
    /// that the signal handler ([`remove_all_and_hold`]) sees either no
    /// directory or a listed one.
    pub fn create(
        make: impl FnOnce() -> std::io::Result<tempfile::TempDir>,
    ) -> std::io::Result<tempfile::TempDir> {
        let mut list = lock();
        let dir = make()?;
        list.push(dir.path().to_path_buf());
        Ok(dir)
    }

    /// Takes `p` off the list, removing the directory (`dir`, when given)
    /// first with the list locked: a signal meanwhile waits for it.
    pub fn remove(p: &Path, dir: Option<tempfile::TempDir>) {
        let mut list = lock();
        drop(dir);
        list.retain(|x| x != p);
    }

    /// Removes every listed directory and keeps the list locked for good,
    /// so that no new one is made before the process ends.
    pub fn remove_all_and_hold() {
        let list = lock();
        for d in list.iter() {
            let _ = std::fs::remove_dir_all(d);
        }
        std::mem::forget(list);
    }

    fn lock() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
        DIRS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// On SIGINT, SIGTERM or SIGHUP: removes this run's work directories, then
/// ends the process with the signal's usual status (128 + its number).
/// Installed once, before the first probe.
pub fn remove_work_dirs_on_signal() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        std::thread::spawn(move || {
            if let Some(sig) = signals.forever().next() {
                interrupted();
                std::process::exit(128 + sig);
            }
        });
    });
}

/// Removes this run's work directories now; none is made after this.
fn interrupted() {
    live::remove_all_and_hold();
}

/// Removes the work directories that runs killed before they could clean
/// up left in `root`: `tmp-PID-*` of a process that no longer exists, last
/// changed over [`STALE_AFTER`] ago (a run in another PID namespace sharing
/// the cache is not seen in `/proc`, but it is not that old). Where
/// processes cannot be seen (no `/proc`), nothing is removed.
pub fn sweep(root: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(dir) = std::fs::read_dir(root) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("tmp-"))
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        if old && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// How old a dead run's work directory must be before it is swept.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// Where the compiler looked for headers, in order: the `-v` search list it
/// printed while listing the macros (see [`compile::SEARCH`]), relative
/// directories made absolute. Directories it ignored because they did not
/// exist come first: a header that appears in one may be found first later.
fn search_list(work: &Path, tc: &Toolchain) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(work.join(compile::SEARCH)) else {
        return Vec::new();
    };
    let mut missing = Vec::new();
    let mut dirs = Vec::new();
    let mut listing = false;
    for l in text.lines() {
        if let Some(d) = l
            .strip_prefix("ignoring nonexistent directory \"")
            .and_then(|d| d.strip_suffix('"'))
        {
            missing.push(tc.directory.join(d));
        } else if l.starts_with("#include ") && l.ends_with("search starts here:") {
            listing = true;
        } else if l.starts_with("End of search list") {
            listing = false;
        } else if listing && l.starts_with(' ') {
            let d = l.trim().trim_end_matches(" (framework directory)");
            dirs.push(tc.directory.join(d));
        }
    }
    missing.extend(dirs);
    missing
}

/// The places a header found at `dep` would have been found first had it
/// been there: the same relative name in each directory searched before the
/// one that holds it (and in the probed headers' own directories, for
/// `#include "..."`). Only places that are empty now are listed.
fn earlier_places(dep: &Path, search: &[PathBuf], first: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (k, d) in search.iter().enumerate() {
        let Ok(rel) = dep.strip_prefix(d) else {
            continue;
        };
        for earlier in first.iter().chain(&search[..k]) {
            let p = earlier.join(rel);
            if p != dep && std::fs::symlink_metadata(&p).is_err() && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// Records the files the probe in `work` read and moves it to `root/key`;
/// returns where the entry now is. When another run stored the same key
/// first, its entry is used. `None` when the probe could not be stored (its
/// directory is then still `work`'s).
pub fn store(
    root: &Path,
    key: &str,
    work: WorkDir,
    tc: &Toolchain,
    headers: &[PathBuf],
) -> Result<PathBuf, WorkDir> {
    store_entry(root, key, work, tc, headers, None)
}

/// Records a probe that did not compile, when the compiler listed the files
/// it read (it does not after a missing `#include`): the failure is then
/// reported again, without compiling, until one of them changes.
pub fn store_failure(
    root: &Path,
    key: &str,
    work: WorkDir,
    tc: &Toolchain,
    headers: &[PathBuf],
    f: &compile::Failed,
) {
    let _ = store_entry(root, key, work, tc, headers, Some(f));
}

/// What an entry's `inputs` file says: each file read, with its hash, and
/// each place that must stay empty. `None` when a file cannot be read or its
/// name cannot be written on one line.
fn inputs_of(work: &Path, tc: &Toolchain, headers: &[PathBuf]) -> Option<String> {
    let deps = std::fs::read_to_string(work.join(compile::DEPS)).ok()?;
    let source = work.join(compile::SOURCE);
    let search = search_list(work, tc);
    let own_dirs: Vec<PathBuf> = headers
        .iter()
        .filter_map(|h| h.parent().map(Path::to_path_buf))
        .collect();
    let mut inputs = String::new();
    let mut line = |tag: &str, p: &Path| -> Option<()> {
        let text = p.to_str().filter(|t| !t.contains(['\n', '\t', '\r']))?;
        inputs.push_str(&format!("{tag}\t{text}\n"));
        Some(())
    };
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
        crate::files::note_input(&p);
        line(&hash::file(&p)?, &p)?;
        for empty in earlier_places(&p, &search, &own_dirs) {
            line(ABSENT, &empty)?;
        }
    }
    Some(inputs)
}

fn store_entry(
    root: &Path,
    key: &str,
    work: WorkDir,
    tc: &Toolchain,
    headers: &[PathBuf],
    failed: Option<&compile::Failed>,
) -> Result<PathBuf, WorkDir> {
    if let Some(f) = failed {
        if std::fs::write(work.path.join(FAILED), write_failure(f)).is_err() {
            return Err(work);
        }
    }
    let Some(inputs) = inputs_of(&work.path, tc, headers) else {
        return Err(work);
    };
    if std::fs::write(work.path.join(INPUTS), inputs).is_err() {
        return Err(work);
    }
    let dest = root.join(key);
    // A rename onto an existing entry fails (it is not empty): entries are
    // never replaced while another run may read them.
    if std::fs::rename(&work.path, &dest).is_ok() {
        work.keep();
        return Ok(dest);
    }
    match lookup(root, key) {
        Found::Compiled(dir) if failed.is_none() => Ok(dir),
        _ => Err(work),
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
