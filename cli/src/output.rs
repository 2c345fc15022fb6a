//! Writing `--output`: never over an input (whatever path, symbolic link or
//! hard link leads to it, with or without `--force`), never over an existing
//! file without `--force`, and atomically: the text goes to a temporary file
//! in the same directory, which is then renamed over the target, so a reader
//! sees the old file or the new one, never a part. And stdout, where a
//! closed pipe ends the output quietly.

use layout_core::Diagnostic;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path`; `inputs` are the files the command read.
pub fn write_new(
    path: &Path,
    bytes: &[u8],
    inputs: &[&Path],
    force: bool,
) -> Result<(), Diagnostic> {
    let fail = |message: String, help: &str| {
        Diagnostic::new(message)
            .in_file(path)
            .help(help.to_string())
    };
    // Where the bytes end up: through a symbolic link, at its target.
    let target = resolve(path).map_err(|e| {
        fail(
            format!("cannot write output: {e}"),
            "check the directory exists and is writable",
        )
    })?;
    if let Some(input) = inputs.iter().find(|i| same_file(i, &target)) {
        return Err(fail(
            format!(
                "cannot write output: it is the input {}",
                input.display()
            ),
            "choose another file name for --output; the command never overwrites an input, even with --force",
        ));
    }
    let exists = std::fs::symlink_metadata(&target).is_ok();
    if exists && !force {
        return Err(fail(
            "cannot write output: the file exists".into(),
            "choose a new file name, or pass --force to overwrite it",
        ));
    }
    if let Ok(meta) = std::fs::metadata(&target) {
        if !meta.is_file() {
            return Err(fail(
                "cannot write output: it is not a regular file".into(),
                "give the path of a regular file to --output",
            ));
        }
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = None;
    for attempt in 0..100u32 {
        let candidate = dir.join(format!(
            ".{name}.cachelayout-{}-{attempt}.tmp",
            std::process::id()
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(f) => {
                tmp = Some((candidate, f));
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(fail(
                    format!(
                        "cannot write output: cannot create a temporary file in {}: {e}",
                        dir.display()
                    ),
                    "check the directory exists and is writable",
                ))
            }
        }
    }
    let Some((tmp_path, mut file)) = tmp else {
        return Err(fail(
            "cannot write output: no free temporary file name".into(),
            "remove the .*.cachelayout-*.tmp files next to the output",
        ));
    };
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            // An overwritten file keeps its permissions.
            match std::fs::metadata(&target) {
                Ok(meta) => std::fs::set_permissions(&tmp_path, meta.permissions()),
                Err(_) => Ok(()),
            }
        })
        .and_then(|()| std::fs::rename(&tmp_path, &target));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp_path);
        return Err(fail(
            format!("cannot write output: {e}"),
            "check the disk has room and the directory is writable",
        ));
    }
    Ok(())
}

/// The path the bytes of `path` live at: symbolic links followed (also a
/// dangling one, to where it points), the directory made absolute.
fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::read_link(&path) {
            Ok(to) => {
                path = match path.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                }
            }
            Err(_) => break,
        }
    }
    let name = path.file_name().map(|n| n.to_os_string());
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = std::fs::canonicalize(dir)?;
    Ok(match name {
        Some(n) => dir.join(n),
        None => dir,
    })
}

/// Whether `input` and `output` are the same file: the same path once
/// resolved, or (on Unix) the same device and inode (a hard link).
fn same_file(input: &Path, output: &Path) -> bool {
    let (Ok(a), Ok(b)) = (std::fs::canonicalize(input), resolve(output)) else {
        return false;
    };
    if a == b {
        return true;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(&a), std::fs::metadata(&b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    false
}

/// Write a command's output to stdout. A closed pipe (`cachelayout show ... | head`)
/// ends the output quietly; any other failure is an error.
pub fn print_stdout(text: &str) -> Result<(), Diagnostic> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Diagnostic::new(format!("cannot write to stdout: {e}"))
                .help("check the disk has room, or where stdout is redirected"))
        }
        _ => Ok(()),
    }
}
