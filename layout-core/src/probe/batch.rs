//! Probing many headers at once (`scan --kbuild`): headers are compiled in
//! batches of [`BATCH`], in the order given; when a batch fails, the header
//! the compiler's first error came from is set aside and the rest compiled
//! again; each header set aside is then compiled alone, and reported when it
//! fails alone too; with `prelude` (a kernel tree), such a header is
//! compiled after a prelude ([`super::prelude`]) before it is reported. The
//! batches' objects are linked (`cc -r`) into one
//! object whose DWARF holds every type.

use super::compile::{Failed, Toolchain, OBJECT};
use super::{canonical, object_dir, ProbeDir};
use crate::typedb::TypeDb;
use crate::Diagnostic;
use std::path::PathBuf;
use std::process::Stdio;

/// Headers per probe.
pub const BATCH: usize = 48;

/// Every type of many headers, and the headers that do not compile alone.
pub struct TreeProbe {
    pub db: TypeDb,
    /// Headers that do not compile alone, with the compiler's first error.
    pub failed: Vec<(PathBuf, Diagnostic)>,
    /// Headers compiled after a prelude, with the prelude (`<a.h>, <b.h>`).
    pub preluded: Vec<(PathBuf, String)>,
    /// Probes used, and how many of them were compiled now (not cached).
    pub probes: usize,
    pub compiled: usize,
    _linked: super::cache::WorkDir,
}

pub fn probe_tree(
    tc: &Toolchain,
    headers: &[PathBuf],
    use_cache: bool,
    prelude: bool,
) -> Result<TreeProbe, Diagnostic> {
    let headers = canonical(headers)?;
    let mut dirs: Vec<ProbeDir> = Vec::new();
    let mut failed = Vec::new();
    let mut preluded = Vec::new();
    // A header that fails alone: after a prelude, or reported.
    let mut alone_failed = |h: PathBuf, f: Failed, dirs: &mut Vec<ProbeDir>| {
        let retried = (prelude && super::prelude::worth_a_prelude(&f))
            .then(|| super::prelude::retry(tc, &h, &f, use_cache))
            .flatten();
        match retried {
            Some((d, p)) => {
                dirs.push(d);
                preluded.push((h, p.list()));
            }
            None => failed.push((h, f.diagnostic)),
        }
    };
    for chunk in headers.chunks(BATCH) {
        let mut set = chunk.to_vec();
        let mut aside = Vec::new();
        while !set.is_empty() {
            match object_dir(tc, &set, use_cache) {
                Ok(d) => {
                    dirs.push(d);
                    break;
                }
                Err(Failed {
                    header: Some(i), ..
                }) if set.len() > 1 => aside.push(set.remove(i)),
                Err(f) if set.len() == 1 => alone_failed(set.remove(0), f, &mut dirs),
                // The compiler did not say which header: each one alone.
                Err(_) => aside.append(&mut set),
            }
        }
        for h in aside {
            match object_dir(tc, std::slice::from_ref(&h), use_cache) {
                Ok(d) => dirs.push(d),
                Err(f) => alone_failed(h, f, &mut dirs),
            }
        }
    }
    if dirs.is_empty() {
        return Err(match failed.into_iter().next() {
            Some((_, d)) => d,
            None => {
                Diagnostic::new("no headers to scan").help("give headers or directories of headers")
            }
        });
    }
    let linked = super::cache::WorkDir::new(None)?;
    let object = linked.path.join(OBJECT);
    let mut link = std::process::Command::new(&tc.compiler[0]);
    link.args(&tc.compiler[1..])
        .args(["-r", "-nostdlib", "-o"])
        .arg(&object)
        .args(dirs.iter().map(|d| d.path.join(OBJECT)))
        .current_dir(&tc.directory)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let out = link.output().map_err(|e| {
        Diagnostic::new(format!(
            "cannot run `{} -r` to link the probes: {e}",
            tc.compiler[0]
        ))
    })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(Diagnostic::new(format!(
            "`{} -r` could not link the probes: {}",
            tc.compiler[0],
            err.lines().next().unwrap_or("no message")
        ))
        .help("check that the compiler can link (binutils installed)"));
    }
    let db = crate::dwarf::load_dwarf(&object)?;
    Ok(TreeProbe {
        db,
        failed,
        preluded,
        probes: dirs.len(),
        compiled: dirs.iter().filter(|d| !d.cached).count(),
        _linked: linked,
    })
}
