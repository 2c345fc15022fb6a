//! Kernel headers that do not compile alone: many are only ever included
//! after others (`<linux/types.h>`, `<linux/kernel.h>`, the header that
//! defines a type they use). When such a header's probe fails with an error
//! the header itself causes (an unknown type name, an incomplete type, an
//! `#error` naming the header to include instead), it is probed again after
//! a **prelude**: the two base headers and the headers the `#error` names;
//! each further failure adds the headers of the include path that define the
//! names the compiler did not know ([`super::definitions`]), before the
//! prelude header that failed when one did, up to [`MAX_TRIES`] compiles;
//! failing that, a header that includes this one is the prelude. The same `.config` and flags apply; only
//! declarations are added, so the layout is the one the kernel's own
//! includers see. The caller says which prelude was used.

use super::compile::{Failed, Toolchain};
use super::definitions::{Definitions, Wanted};
use super::{object_dir, ProbeDir};
use std::path::{Path, PathBuf};

/// What every prelude starts with.
const BASE: [&str; 2] = ["linux/types.h", "linux/kernel.h"];
/// Compiles of one header with a prelude, at most.
pub const MAX_TRIES: usize = 6;
/// Headers in a prelude, at most.
const MAX_HEADERS: usize = 16;

/// The headers included before the probed one: as written in an
/// `#include <...>`, and the files the include path finds.
#[derive(Debug, Clone, Default)]
pub struct Prelude {
    pub names: Vec<String>,
    pub files: Vec<PathBuf>,
}

impl Prelude {
    /// `<linux/types.h>, <linux/kernel.h>`.
    pub fn list(&self) -> String {
        self.names
            .iter()
            .map(|n| format!("<{n}>"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Whether a failed probe of a header alone is worth a prelude: the compiler
/// ran and stopped at a line of the header or of a header it includes (not
/// at the probe's own line: the header is missing).
pub fn worth_a_prelude(failed: &Failed) -> bool {
    let d = &failed.diagnostic;
    d.file.is_some() && d.line > 0 && !d.message.contains("No such file")
}

/// The probe of `header` (absolute) after a prelude, and the prelude; `None`
/// when no prelude the include path offers makes it compile. First the base
/// headers and the definers of what the errors lack; failing that, a header
/// that includes this one ([`MAX_INCLUDERS`] at most), as the kernel does.
pub fn retry(
    tc: &Toolchain,
    header: &Path,
    first: &Failed,
    use_cache: bool,
) -> Option<(ProbeDir, Prelude)> {
    let mut defs = Definitions::new(tc);
    if let Some(found) = by_definitions(&mut defs, tc, header, first, use_cache) {
        return Some(found);
    }
    let name = defs.name_of(header)?;
    for includer in defs.includers(&name, MAX_INCLUDERS) {
        let names: Vec<String> = BASE
            .iter()
            .map(|b| b.to_string())
            .chain([includer])
            .collect();
        match attempt(&defs, tc, Some(header), names.clone(), use_cache) {
            Ok(Some(found)) => return Some(found),
            // A header without an include guard, defined twice: the
            // includer's own include of it is the one to read.
            Err(f) if f.diagnostic.message.contains("redefinition") => {
                if let Ok(Some(found)) = attempt(&defs, tc, None, names, use_cache) {
                    return Some(found);
                }
            }
            _ => {}
        }
    }
    None
}

/// Headers that include the probed one, tried as a prelude at most.
const MAX_INCLUDERS: usize = 2;

fn by_definitions(
    defs: &mut Definitions,
    tc: &Toolchain,
    header: &Path,
    first: &Failed,
    use_cache: bool,
) -> Option<(ProbeDir, Prelude)> {
    // The base first, and the headers an `#error` names; the definers of
    // missing names only for what the base leaves missing (most of the
    // header's first errors are types the base defines).
    let mut names: Vec<String> = BASE.iter().map(|b| b.to_string()).collect();
    let asked = Wanted::from_error(&first.diagnostic);
    let headers: Vec<Wanted> = asked
        .into_iter()
        .filter(|w| matches!(w, Wanted::Header(_)))
        .collect();
    for n in defs.headers_for(&headers, header) {
        push_unique(&mut names, n, None);
    }
    for _ in 0..MAX_TRIES {
        let failed = match attempt(defs, tc, Some(header), names.clone(), use_cache) {
            Ok(found) => return found,
            Err(f) => f,
        };
        // Add the definers of what this error lacks, before the prelude
        // header it came from (that one needs them first).
        let before = failed.header.filter(|&i| i < names.len());
        let found = defs.headers_for(&Wanted::from_error(&failed.diagnostic), header);
        let mut added = false;
        for n in found {
            if names.len() >= MAX_HEADERS {
                break;
            }
            added |= push_unique(&mut names, n, before);
        }
        if !added {
            return None;
        }
    }
    None
}

/// One compile of `header` after the headers `names` (or of those alone,
/// when one of them includes the header): the probe, `Ok(None)` when a name
/// does not resolve, or the failure.
fn attempt(
    defs: &Definitions,
    tc: &Toolchain,
    header: Option<&Path>,
    names: Vec<String>,
    use_cache: bool,
) -> Result<Option<(ProbeDir, Prelude)>, Failed> {
    let files: Vec<PathBuf> = names.iter().filter_map(|n| defs.resolve(n)).collect();
    if files.len() != names.len() || files.iter().any(|f| Some(f.as_path()) == header) {
        return Ok(None);
    }
    let mut probed = files.clone();
    probed.extend(header.map(Path::to_path_buf));
    let dir = object_dir(tc, &probed, use_cache)?;
    Ok(Some((dir, Prelude { names, files })))
}

/// Inserts `name` at `at` (or at the end) unless it is there already.
fn push_unique(names: &mut Vec<String>, name: String, at: Option<usize>) -> bool {
    if names.contains(&name) {
        return false;
    }
    match at {
        Some(i) if i <= names.len() => names.insert(i, name),
        _ => names.push(name),
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_their_first_place_and_dependencies_go_first() {
        let mut v = vec!["linux/types.h".to_string(), "linux/fs.h".to_string()];
        assert!(!push_unique(&mut v, "linux/types.h".into(), None));
        assert!(push_unique(&mut v, "linux/uidgid.h".into(), Some(1)));
        assert!(push_unique(&mut v, "linux/x.h".into(), None));
        assert_eq!(
            v,
            ["linux/types.h", "linux/uidgid.h", "linux/fs.h", "linux/x.h"]
        );
    }
}
