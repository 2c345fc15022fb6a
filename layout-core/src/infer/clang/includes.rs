//! The headers a translation unit may include, checked before libclang
//! opens them: libclang reads its includes itself, outside the tool's
//! bounded reads, so an `#include` of `/dev/zero`, of a symbolic link to
//! it or of a FIFO would make the parse eat memory without bound or hang.
//!
//! The `#include` lines of the unit, of its `-include`/`-imacros` files and
//! of every header they reach are resolved lexically against the unit's
//! include paths (`-iquote`, `-I`, `-isystem`, `-idirafter`, and the
//! including file's directory for `"..."`), as the preprocessor would
//! without evaluating `#if`: a line the configuration skips is checked too.
//! A computed include (`#include MACRO`) and a header found on no given
//! path (a system header) are not followed. The walk reads at most
//! [`MAX_FILES`] headers, each within the header limit.

use crate::source::bounded::{self, ReadError};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Headers read at most per unit.
pub const MAX_FILES: usize = 8192;

/// An include that libclang must not open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadInclude {
    /// The file whose `#include` names it, and the line (1-based).
    pub from: PathBuf,
    pub line: usize,
    /// As spelled between the quotes or angle brackets.
    pub spelled: String,
    /// Where it leads (symbolic links resolved, when they resolve).
    pub target: PathBuf,
    /// Why it is refused.
    pub why: String,
}

impl BadInclude {
    /// The message: ``include of a non-regular file `zlink.h` -> /dev/zero (a character device)``.
    pub fn message(&self) -> String {
        format!(
            "include of {} `{}` -> {} ({}, at {}:{})",
            if self.why.starts_with("it is larger") {
                "a file too large"
            } else {
                "a non-regular file"
            },
            self.spelled,
            self.target.display(),
            self.why,
            self.from.display(),
            self.line
        )
    }
}

/// The search paths of a unit's libclang arguments.
#[derive(Clone, Debug, Default)]
struct Paths {
    quote: Vec<PathBuf>,
    angle: Vec<PathBuf>,
    forced: Vec<PathBuf>,
}

fn paths(args: &[String]) -> Paths {
    let mut p = Paths::default();
    let mut after = Vec::new();
    let mut system = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let next = args.get(i + 1).map(PathBuf::from);
        match a {
            "-iquote" | "-I" | "-isystem" | "-idirafter" | "-include" | "-imacros" => {
                if let Some(v) = next {
                    match a {
                        "-iquote" => p.quote.push(v),
                        "-I" => p.angle.push(v),
                        "-isystem" => system.push(v),
                        "-idirafter" => after.push(v),
                        _ => p.forced.push(v),
                    }
                }
                i += 2;
                continue;
            }
            _ => {
                if let Some(d) = a.strip_prefix("-I") {
                    p.angle.push(PathBuf::from(d));
                }
            }
        }
        i += 1;
    }
    p.angle.extend(system);
    p.angle.extend(after);
    p
}

/// The `#include`/`#include_next` lines of `text`: line, spelled name, quoted.
fn include_lines(text: &str) -> Vec<(usize, String, bool)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(rest) = rest
            .strip_prefix("include_next")
            .or_else(|| rest.strip_prefix("include"))
        else {
            continue;
        };
        let rest = rest.trim_start();
        let (close, quoted) = match rest.chars().next() {
            Some('"') => ('"', true),
            Some('<') => ('>', false),
            _ => continue,
        };
        if let Some(end) = rest[1..].find(close) {
            out.push((n + 1, rest[1..1 + end].to_string(), quoted));
        }
    }
    out
}

/// What `path` is, if libclang must not open it.
fn refused(path: &Path, limit: u64) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return Some(match bounded::read(path, 0) {
            Err(ReadError::NotRegular(what)) => format!("it is {what}"),
            _ => "it is not a regular file".to_string(),
        });
    }
    if meta.len() > limit {
        return Some(ReadError::TooLarge { limit }.to_string());
    }
    // A file of /proc or /sys states a size of 0 and may never end (or block).
    let real = std::fs::canonicalize(path).ok()?;
    if real.starts_with("/proc") || real.starts_with("/sys") {
        return Some("it is a file of the kernel's /proc or /sys".to_string());
    }
    None
}

/// The first include of the unit at `unit` (its text `text`, its libclang
/// arguments `args`) that libclang must not open: not a regular file, or
/// larger than `limit` bytes.
pub fn first_bad(unit: &Path, text: &str, args: &[String], limit: u64) -> Option<BadInclude> {
    let p = paths(args);
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    // (file, its text if already read)
    let mut todo: Vec<(PathBuf, Option<String>)> = vec![(unit.to_path_buf(), Some(text.into()))];
    for f in &p.forced {
        if let Some(why) = refused(f, limit) {
            return Some(BadInclude {
                from: unit.to_path_buf(),
                line: 0,
                spelled: f.display().to_string(),
                target: std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()),
                why,
            });
        }
        todo.push((f.clone(), None));
    }
    let mut read = 0;
    while let Some((file, text)) = todo.pop() {
        if !seen.insert(file.clone()) {
            continue;
        }
        let text = match text {
            Some(t) => t,
            None => {
                read += 1;
                if read > MAX_FILES {
                    break;
                }
                match bounded::read(&file, limit) {
                    Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                    Err(_) => continue,
                }
            }
        };
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        for (line, spelled, quoted) in include_lines(&text) {
            let name = Path::new(&spelled);
            let candidates: Vec<PathBuf> = if name.is_absolute() {
                vec![name.to_path_buf()]
            } else {
                let here = quoted.then(|| dir.clone());
                here.into_iter()
                    .chain(if quoted { p.quote.clone() } else { Vec::new() })
                    .chain(p.angle.iter().cloned())
                    .map(|d| d.join(name))
                    .collect()
            };
            // The first candidate that exists is the one the preprocessor opens.
            let Some(found) = candidates
                .into_iter()
                .find(|c| std::fs::symlink_metadata(c).is_ok())
            else {
                continue;
            };
            if let Some(why) = refused(&found, limit) {
                return Some(BadInclude {
                    from: file.clone(),
                    line,
                    spelled,
                    target: std::fs::canonicalize(&found).unwrap_or(found),
                    why,
                });
            }
            if std::fs::metadata(&found).is_ok() && !seen.contains(&found) {
                todo.push((found, None));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_lines_are_read_lexically() {
        let t = "#include \"a.h\"\n  #  include <b/c.h>\n#include_next <d.h>\n#include MACRO\n// #include \"e.h\"\n";
        assert_eq!(
            include_lines(t),
            [
                (1, "a.h".to_string(), true),
                (2, "b/c.h".to_string(), false),
                (3, "d.h".to_string(), false)
            ]
        );
    }

    #[test]
    fn a_link_to_a_device_a_fifo_and_a_huge_file_are_found_through_headers() {
        let d = tempfile::tempdir().unwrap();
        let inc = d.path().join("inc");
        std::fs::create_dir(&inc).unwrap();
        std::fs::write(inc.join("ok.h"), "#include <sub/deep.h>\n").unwrap();
        std::fs::create_dir(inc.join("sub")).unwrap();
        std::fs::write(inc.join("sub/deep.h"), "int x;\n#include \"zlink.h\"\n").unwrap();
        std::os::unix::fs::symlink("/dev/zero", inc.join("sub/zlink.h")).unwrap();
        let args = vec![format!("-I{}", inc.display())];
        let unit = d.path().join("u.c");
        let bad = first_bad(&unit, "#include <ok.h>\n", &args, 1 << 20).unwrap();
        assert_eq!(bad.spelled, "zlink.h");
        assert_eq!(bad.target, Path::new("/dev/zero"));
        assert_eq!(bad.line, 2);
        assert!(
            bad.message().starts_with(
                "include of a non-regular file `zlink.h` -> /dev/zero (it is a character device"
            ),
            "{}",
            bad.message()
        );
        // A FIFO.
        let fifo = d.path().join("f.h");
        let c = std::ffi::CString::new(fifo.display().to_string()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let bad = first_bad(&unit, "#include \"f.h\"\n", &args, 1 << 20).unwrap();
        assert!(bad.why.contains("FIFO"), "{bad:?}");
        // A header over the limit, and a forced include of a device.
        std::fs::write(inc.join("big.h"), vec![b' '; 2048]).unwrap();
        let bad = first_bad(&unit, "#include <big.h>\n", &args, 1024).unwrap();
        assert!(bad.message().starts_with("include of a file too large"));
        let forced = vec!["-include".to_string(), "/dev/null".to_string()];
        assert!(first_bad(&unit, "", &forced, 1024).is_some());
        // Nothing wrong; a header on no path is not followed; a cycle ends.
        std::fs::write(inc.join("a.h"), "#include \"b.h\"\n").unwrap();
        std::fs::write(inc.join("b.h"), "#include \"a.h\"\n#include <stdio.h>\n").unwrap();
        assert_eq!(first_bad(&unit, "#include <a.h>\n", &args, 1 << 20), None);
    }
}
