//! The files a safety scan reads: each path given, a file as it is, a
//! directory walked for its `.c` and `.h` files in sorted order (symbolic
//! links are not followed, so a loop cannot hold the walk), a compilation
//! database (`compile_commands.json`) for the units it names, each read
//! within the input limit ([`crate::files`]). Bytes that are not UTF-8 (a
//! Latin-1 comment) are read as replacement characters: the scan reads
//! tokens, never the bytes of a comment.

use crate::files::{self, Input};
use crate::Diagnostic;
use std::path::{Path, PathBuf};

/// Most files one scan reads: a whole kernel tree has about 60 000.
pub const MAX_FILES: usize = 200_000;

/// The files under `paths`, in order, without repeats.
pub fn list(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Diagnostic> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::symlink_metadata(p).map_err(|e| {
            Diagnostic::new(format!("cannot read --safety-scan {}: {e}", p.display()))
                .in_file(p)
                .help("give C files or directories of the tree that uses the struct")
        })?;
        if meta.is_dir() {
            walk(p, &mut out)?;
        } else if p.extension().is_some_and(|e| e == "json") {
            units(p, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|p| seen.insert(p.clone()));
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Diagnostic> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| {
            Diagnostic::new(format!("cannot list {}: {e}", dir.display()))
                .in_file(dir)
                .help("give a directory this user may read")
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for e in entries {
        let Ok(meta) = std::fs::symlink_metadata(&e) else {
            continue;
        };
        if meta.is_dir() {
            walk(&e, out)?;
        } else if meta.is_file() && is_c_source(&e) {
            if out.len() >= MAX_FILES {
                return Err(Diagnostic::new(format!(
                    "--safety-scan names more than {MAX_FILES} C files"
                ))
                .in_file(dir)
                .help("give the directories whose code uses the struct (e.g. net/ipv4)"));
            }
            out.push(e);
        }
    }
    Ok(())
}

/// The translation units a compilation database (`compile_commands.json`)
/// names: each entry's `file`, relative to its `directory`; those that are
/// no longer there are left out.
fn units(db: &Path, out: &mut Vec<PathBuf>) -> Result<(), Diagnostic> {
    let bytes = files::read(db, Input::CompileCommands)?;
    let entries: Vec<serde_json::Value> = serde_json::from_slice(&bytes).map_err(|e| {
        Diagnostic::new(format!(
            "the compilation database is not a JSON array of entries: {e}"
        ))
        .in_file(db)
        .at(e.line(), e.column())
        .help("give the compile_commands.json your build wrote, or C files and directories")
    })?;
    let base = db.parent().unwrap_or(Path::new("."));
    for e in &entries {
        let Some(file) = e.get("file").and_then(|f| f.as_str()) else {
            continue;
        };
        let dir = e
            .get("directory")
            .and_then(|d| d.as_str())
            .map_or(base.to_path_buf(), PathBuf::from);
        let path = dir.join(file);
        if out.len() >= MAX_FILES {
            return Err(Diagnostic::new(format!(
                "--safety-scan names more than {MAX_FILES} C files"
            ))
            .in_file(db)
            .help("give the directories whose code uses the struct (e.g. net/ipv4)"));
        }
        if is_c_source(&path) && path.is_file() {
            out.push(path);
        }
    }
    Ok(())
}

fn is_c_source(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("c") | Some("h")
    )
}

/// The text of one file, within the input limit.
pub fn read(path: &Path) -> Result<String, Diagnostic> {
    let bytes = files::read(path, Input::TreeSource)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}
