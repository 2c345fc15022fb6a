//! Finding the headers of a source tree that embed a struct: a probe of one
//! header only sees the types that header reaches (`include/linux/mmzone.h`
//! does not include `include/linux/memcontrol.h`, which embeds `struct
//! lruvec` in `mem_cgroup_per_node`), so the embedders a growth report or a
//! list of containers needs are searched in the tree's text, and the
//! headers found are compiled into the probe with it.
//!
//! The search is lexical: a header embeds `struct NAME` when it declares a
//! member `struct NAME ident;` or `struct NAME ident[...]` (by value: no
//! `*`, not a definition, not a parameter). Comments may give a false hit;
//! the compiler's types then decide.

use std::path::{Path, PathBuf};

/// Most header files read in one search.
pub const MAX_FILES: usize = 50_000;
/// Largest header read (bytes).
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// Most headers returned.
pub const MAX_HEADERS: usize = 16;

/// The `.h` files under `roots` (recursively, sorted) that embed one of
/// `names` by value, at most [`MAX_HEADERS`], leaving out `skip`.
pub fn headers_embedding(roots: &[PathBuf], names: &[String], skip: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for r in roots {
        collect(r, &mut files);
    }
    files.sort();
    let skip: Vec<PathBuf> = skip.iter().filter_map(|p| p.canonicalize().ok()).collect();
    let mut out = Vec::new();
    for f in files {
        if out.len() >= MAX_HEADERS {
            break;
        }
        if f.canonicalize().is_ok_and(|c| skip.contains(&c)) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        if names.iter().any(|n| embeds(&text, n)) {
            out.push(f);
        }
    }
    out
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if out.len() >= MAX_FILES {
            return;
        }
        let Ok(kind) = e.file_type() else { continue };
        let p = e.path();
        if kind.is_dir() {
            collect(&p, out);
        } else if kind.is_file()
            && p.extension().is_some_and(|x| x == "h")
            && e.metadata().is_ok_and(|m| m.len() <= MAX_FILE_BYTES)
        {
            out.push(p);
        }
    }
}

/// Whether `text` declares a member `struct NAME ident;` / `ident[`.
pub fn embeds(text: &str, name: &str) -> bool {
    let needle = format!("struct {name}");
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(k) = text[from..].find(&needle) {
        let at = from + k;
        from = at + needle.len();
        let before_ok = !text[..at].ends_with(ident);
        let rest = &text[from..];
        if !before_ok || rest.starts_with(ident) {
            continue;
        }
        let rest = rest.trim_start();
        let id_len = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
        if id_len == 0 || rest.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let after = rest[id_len..].trim_start();
        if after.starts_with(';') || after.starts_with('[') {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::embeds;

    #[test]
    fn members_by_value_only() {
        assert!(embeds(
            "struct x {\n\tstruct lruvec\t\tlruvec;\n};",
            "lruvec"
        ));
        assert!(embeds("struct lruvec v[2];", "lruvec"));
        assert!(!embeds("struct lruvec *lruvec;", "lruvec"));
        assert!(!embeds("struct lruvec {\n\tint a;\n};", "lruvec"));
        assert!(!embeds("void f(struct lruvec lruvec);", "lruvec"));
        assert!(!embeds("struct lruvec_stats s;", "lruvec"));
        assert!(!embeds("struct my_lruvec s;", "lruvec"));
    }
}
