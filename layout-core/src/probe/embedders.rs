//! A probe that also sees the struct's embedders: one header's probe knows
//! only the types that header reaches, so in a kernel tree the headers that
//! embed the struct (or what embeds it, transitively) are searched
//! ([`crate::embedder_search`]) and compiled into the probe with it.
//! Headers that do not compile with it are left out, and said so.

use super::{run, KbuildTree, Probe, ProbeArgs};
use crate::embedder_search::headers_embedding;
use crate::typedb::TypeDb;
use crate::Diagnostic;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Rounds of search: each round looks for embedders of what the last found.
const ROUNDS: usize = 3;

/// The probe of `header` and the tree's headers that embed `struct_name`
/// (with `--kbuild`; otherwise the probe of `header` alone). Returns the
/// probe and the headers added.
pub fn run_with_embedders(
    args: &ProbeArgs,
    header: &Path,
    struct_name: &str,
) -> Result<(Probe, Vec<PathBuf>), Diagnostic> {
    let mut probe = run(args, &[header.to_path_buf()])?;
    let Some(dir) = &args.kbuild else {
        return Ok((probe, Vec::new()));
    };
    let tree = KbuildTree::locate(dir)?;
    let roots = [tree.srctree.join("include")];
    let mut added: Vec<PathBuf> = Vec::new();
    let mut tried: BTreeSet<PathBuf> = BTreeSet::new();
    for _ in 0..ROUNDS {
        let names = embedder_names(&probe.db, struct_name);
        let mut skip = vec![header.to_path_buf()];
        skip.extend(tried.iter().cloned());
        let found = headers_embedding(&roots, &names, &skip);
        if found.is_empty() {
            break;
        }
        tried.extend(found.iter().cloned());
        let with = |added: &[PathBuf], extra: &[PathBuf]| {
            let mut all = vec![header.to_path_buf()];
            all.extend(added.iter().cloned());
            all.extend(extra.iter().cloned());
            run(args, &all)
        };
        match with(&added, &found) {
            Ok(p) => {
                probe = p;
                added.extend(found);
            }
            Err(_) => {
                // One at a time: keep those that compile with the others.
                for h in found {
                    if let Ok(p) = with(&added, std::slice::from_ref(&h)) {
                        probe = p;
                        added.push(h);
                    } else {
                        eprintln!(
                            "note: {} may embed struct {struct_name} but does not compile with {}: its structs are not searched",
                            h.display(),
                            header.display()
                        );
                    }
                }
            }
        }
    }
    Ok((probe, added))
}

/// `name` and every named aggregate that embeds it, transitively.
fn embedder_names(db: &TypeDb, name: &str) -> Vec<String> {
    let mut out = vec![name.to_string()];
    let Some(root) = db.find(name) else {
        return out;
    };
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    let mut stack = vec![root];
    while let Some(agg) = stack.pop() {
        for (up, _) in db.embedders_of(agg) {
            if let Some(i) = db.index_of(up) {
                if seen.insert(i) {
                    if !up.is_anonymous() && !out.contains(&up.name) {
                        out.push(up.name.clone());
                    }
                    stack.push(up);
                }
            }
        }
    }
    out
}
