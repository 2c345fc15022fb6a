//! The roots file a maintainer keeps: per subsystem, the sources whose
//! accesses count and the entry points of its fast paths.
//!
//! ```toml
//! [net]
//! sources = ["net/ipv4/*.c", "net/core/dev.c"]   # globs under the source tree
//! hot = ["tcp_sendmsg", "tcp_v4_rcv"]             # fast-path entry points
//! cold = []                                       # slow-path entry points (optional)
//! lock_wrappers = []                              # as infer --lock-wrapper (optional)
//! ```
//!
//! Every top-level table is a subsystem. Errors name the file, line and
//! column of the key or value at fault.

use crate::Diagnostic;
use std::path::{Path, PathBuf};
use toml_edit::{ImDocument, Item, Table, Value};

/// Keys of a subsystem's table.
const KEYS: &[&str] = &["sources", "hot", "cold", "lock_wrappers"];

/// One subsystem of the roots file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subsystem {
    pub name: String,
    /// Glob patterns of C files, `/`-separated, relative to the source tree.
    pub sources: Vec<String>,
    pub hot: Vec<String>,
    pub cold: Vec<String>,
    pub lock_wrappers: Vec<String>,
    /// Line of the table's header, for messages.
    pub line: usize,
}

/// A parsed roots file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Roots {
    pub path: PathBuf,
    /// In file order.
    pub subsystems: Vec<Subsystem>,
}

/// Reads and parses the roots file at `path` (bounded).
/// The most subsystems a roots file may name, and entries one list may
/// hold: each pattern is expanded and each unit matched against each
/// subsystem, so a file of a million entries would be a million walks.
pub const MAX_SUBSYSTEMS: usize = 1024;
pub const MAX_ENTRIES: usize = 10_000;

pub fn read(path: &Path) -> Result<Roots, Diagnostic> {
    let text = crate::files::text(path, crate::files::Input::Roots)?;
    parse(path, &text)
}

/// Parses the text of a roots file; `path` names it in errors.
pub fn parse(path: &Path, text: &str) -> Result<Roots, Diagnostic> {
    let at = |span: Option<std::ops::Range<usize>>| {
        span.map_or((0, 0), |s| crate::error::line_col(text, s.start))
    };
    let err = |span: Option<std::ops::Range<usize>>, msg: String| {
        let (l, c) = at(span);
        Diagnostic::new(msg).in_file(path).at(l, c)
    };
    let doc = ImDocument::parse(text).map_err(|e| {
        let message = e
            .message()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(", ");
        err(e.span(), format!("invalid TOML: {message}")).help("fix the TOML syntax here")
    })?;
    let mut roots = Roots {
        path: path.to_path_buf(),
        subsystems: Vec::new(),
    };
    let root = doc.as_table();
    for (name, item) in root.iter() {
        let key_span = root.key(name).and_then(|k| k.span());
        if roots.subsystems.len() == MAX_SUBSYSTEMS {
            return Err(err(
                key_span,
                format!("more than {MAX_SUBSYSTEMS} subsystems in the roots file"),
            )
            .help("join subsystems that share their sources into one table"));
        }
        let Item::Table(table) = item else {
            return Err(err(
                key_span,
                format!("`{name}` is not a subsystem table"),
            )
            .help("write each subsystem as a table: [net] sources = [\"net/ipv4/*.c\"] hot = [\"tcp_sendmsg\"]"));
        };
        roots
            .subsystems
            .push(subsystem(name, table, at(key_span).0, &err)?);
    }
    if roots.subsystems.is_empty() {
        return Err(Diagnostic::new("the roots file names no subsystem")
            .in_file(path)
            .help("add a table per subsystem: [net] sources = [\"net/ipv4/*.c\"] hot = [\"tcp_sendmsg\"]"));
    }
    Ok(roots)
}

fn subsystem(
    name: &str,
    table: &Table,
    line: usize,
    err: &dyn Fn(Option<std::ops::Range<usize>>, String) -> Diagnostic,
) -> Result<Subsystem, Diagnostic> {
    let mut s = Subsystem {
        name: name.to_string(),
        line,
        ..Subsystem::default()
    };
    for (key, item) in table.iter() {
        let key_span = table.key(key).and_then(|k| k.span());
        let list = match key {
            "sources" => &mut s.sources,
            "hot" => &mut s.hot,
            "cold" => &mut s.cold,
            "lock_wrappers" => &mut s.lock_wrappers,
            _ => {
                let close = strsim_closest(key);
                return Err(
                    err(key_span, format!("unknown key `{key}` in [{name}]")).help(match close {
                        Some(k) => format!("did you mean `{k}`? the keys are {}", KEYS.join(", ")),
                        None => format!("the keys are {}", KEYS.join(", ")),
                    }),
                );
            }
        };
        *list = strings(name, key, item, key_span, err)?;
    }
    if s.sources.is_empty() {
        return Err(err(
            None,
            format!("[{name}] has no sources"),
        )
        .at(line, 1)
        .help("add sources = [\"dir/*.c\"]: the C files (globs under the source tree) whose accesses count"));
    }
    for p in &s.sources {
        if p.starts_with('/') || p.split('/').any(|c| c == "..") {
            return Err(err(
                None,
                format!("[{name}] source pattern `{p}` leaves the source tree"),
            )
            .at(line, 1)
            .help("write patterns relative to the source tree, without `..`"));
        }
    }
    Ok(s)
}

fn strings(
    table: &str,
    key: &str,
    item: &Item,
    key_span: Option<std::ops::Range<usize>>,
    err: &dyn Fn(Option<std::ops::Range<usize>>, String) -> Diagnostic,
) -> Result<Vec<String>, Diagnostic> {
    let Some(array) = item.as_array() else {
        return Err(err(
            item.span().or(key_span),
            format!("[{table}] {key} must be a list of strings"),
        )
        .help(format!("write {key} = [\"...\", \"...\"]")));
    };
    if array.len() > MAX_ENTRIES {
        return Err(err(
            item.span().or(key_span),
            format!(
                "[{table}] {key} holds {} entries, more than the {MAX_ENTRIES} a list may hold",
                array.len()
            ),
        )
        .help("use globs (`net/ipv4/*.c`) rather than listing every file"));
    }
    let mut out = Vec::new();
    for v in array.iter() {
        match v {
            Value::String(s) if !s.value().trim().is_empty() => {
                out.push(s.value().trim().to_string())
            }
            _ => {
                return Err(err(
                    v.span(),
                    format!("[{table}] {key}: each entry must be a non-empty string"),
                )
                .help(format!("write {key} = [\"...\", \"...\"]")))
            }
        }
    }
    Ok(out)
}

fn strsim_closest(key: &str) -> Option<&'static str> {
    KEYS.iter()
        .map(|k| (strsim::levenshtein(k, key), *k))
        .filter(|(d, _)| *d <= 3)
        .min()
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsystems_in_file_order() {
        let r = parse(
            Path::new("r.toml"),
            "[net]\nsources = [\"net/*.c\"]\nhot = [\"tx\", \"rx\"]\n\n[mm]\nsources = [\"mm/a.c\"]\nlock_wrappers = [\"w=lock\"]\n",
        )
        .unwrap();
        assert_eq!(r.subsystems.len(), 2);
        assert_eq!(r.subsystems[0].name, "net");
        assert_eq!(r.subsystems[0].hot, ["tx", "rx"]);
        assert_eq!(r.subsystems[1].lock_wrappers, ["w=lock"]);
        assert_eq!(r.subsystems[1].line, 5);
    }

    #[test]
    fn huge_lists_and_too_many_subsystems_are_errors() {
        let p = Path::new("r.toml");
        let many: String = (0..=MAX_ENTRIES).map(|i| format!("\"f{i}\",")).collect();
        let e = parse(
            p,
            &format!("[net]\nsources = [\"a/*.c\"]\nhot = [{many}]\n"),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("r.toml:3:7: error: [net] hot holds 10001 entries"),
            "{e}"
        );
        let tables: String = (0..=MAX_SUBSYSTEMS)
            .map(|i| format!("[s{i}]\nsources = [\"a/*.c\"]\n"))
            .collect();
        let e = parse(p, &tables).unwrap_err();
        assert!(e.to_string().contains("more than 1024 subsystems"), "{e}");
    }

    #[test]
    fn the_example_roots_files_parse() {
        for (name, text) in [
            (
                "audit-roots.toml",
                include_str!("../../../examples/kernel/audit-roots.toml"),
            ),
            (
                "audit-roots-wide.toml",
                include_str!("../../../examples/kernel/audit-roots-wide.toml"),
            ),
        ] {
            let r = parse(Path::new(name), text).unwrap_or_else(|e| panic!("{e}"));
            let names: Vec<&str> = r.subsystems.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, ["mm", "net"], "{name}");
            for s in &r.subsystems {
                let mut hot = s.hot.clone();
                hot.sort();
                hot.dedup();
                assert_eq!(hot.len(), s.hot.len(), "{name} [{}]: a root twice", s.name);
            }
        }
    }

    #[test]
    fn errors_say_where() {
        let e = parse(
            Path::new("r.toml"),
            "[net]\nsources = [\"a.c\"]\nhott = [\"x\"]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("r.toml:3:1: error: unknown key `hott` in [net]"),
            "{e}"
        );
        assert!(e.contains("did you mean `hot`"), "{e}");
        let e = parse(Path::new("r.toml"), "[net]\nsources = [\"a.c\", 3]\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("r.toml:2:19: error:"), "{e}");
        let e = parse(Path::new("r.toml"), "[net]\nhot = [\"x\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no sources"), "{e}");
        let e = parse(Path::new("r.toml"), "[net]\nsources = [\"../x.c\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("leaves the source tree"), "{e}");
        let e = parse(Path::new("r.toml"), "[net\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid TOML"), "{e}");
    }
}
