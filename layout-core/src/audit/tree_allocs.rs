//! Slab caches made anywhere in the source tree: a struct whose objects a
//! fast path meets is often allocated outside the audited sources (a VMA's
//! cache is made where processes fork, not where pages fault). The tree's
//! `.c` files are read for the two forms that make a cache of one struct,
//! `KMEM_CACHE(NAME, ...)` and `kmem_cache_create[_usercopy](..., sizeof(struct
//! NAME), ...)`, and a usercopy cache whose size is computed but whose
//! user-copy region is `offsetof(struct NAME, member)`; each is evidence
//! that the struct is made one per object ([`super::lifetime`]).
//!
//! The walk is bounded and deterministic: directories in sorted order,
//! symbolic links never followed, regular `.c` files only, at most
//! [`MAX_FILE_BYTES`] each, [`MAX_FILES`] in all and [`MAX_ENTRIES`]
//! directory entries looked at, and a file is tokenized
//! only when its bytes hold one of the cache-making words.

use crate::lex::{self, TokKind};
use std::collections::BTreeMap;
use std::path::Path;

/// Largest `.c` file read (a 6.1 tree's largest is under 1 MiB).
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// Most `.c` files read (a 6.1 tree has about 32 000).
pub const MAX_FILES: usize = 200_000;
/// Most directory entries looked at (files of every kind and directories;
/// a 6.1 tree has about 80 000).
pub const MAX_ENTRIES: usize = 2_000_000;
/// Deepest directory walked below the root.
const MAX_DEPTH: usize = 32;

/// What one walk found: the first cache of each struct (`file:line: form`,
/// the file relative to the root), and how much it read.
#[derive(Clone, Debug, Default)]
pub struct TreeAllocs {
    pub caches: BTreeMap<String, String>,
    pub files_listed: usize,
    pub files_tokenized: usize,
    pub entries: usize,
    /// The walk stopped at [`MAX_FILES`] or [`MAX_ENTRIES`].
    pub truncated: bool,
}

/// Walks `root` for slab caches of structs.
pub fn scan(root: &Path) -> TreeAllocs {
    let mut out = TreeAllocs::default();
    walk(root, root, 0, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, depth: usize, out: &mut TreeAllocs) {
    if depth > MAX_DEPTH || out.truncated {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for e in entries {
        out.entries += 1;
        if out.entries > MAX_ENTRIES {
            out.truncated = true;
            return;
        }
        let Ok(meta) = std::fs::symlink_metadata(&e) else {
            continue;
        };
        if meta.is_dir() {
            walk(root, &e, depth + 1, out);
        } else if meta.is_file() && e.extension().is_some_and(|x| x == "c") {
            if out.files_listed >= MAX_FILES {
                out.truncated = true;
                return;
            }
            out.files_listed += 1;
            if meta.len() > MAX_FILE_BYTES {
                continue;
            }
            let Ok(bytes) = crate::source::bounded::read(&e, MAX_FILE_BYTES) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            if !holds_cache_word(&text) {
                continue;
            }
            out.files_tokenized += 1;
            let shown = e.strip_prefix(root).unwrap_or(&e).display().to_string();
            for (name, line, form) in caches_in(&text) {
                out.caches
                    .entry(name)
                    .or_insert_with(|| format!("{shown}:{line}: {form}"));
            }
        }
    }
}

/// The cheap prefilter: the text holds a cache-making word.
fn holds_cache_word(text: &str) -> bool {
    text.contains("KMEM_CACHE") || text.contains("kmem_cache_create")
}

/// The slab caches of one source: each struct, its line and the form.
pub fn caches_in(text: &str) -> Vec<(String, u32, String)> {
    // The project's C tokenizer, without comments, literals and newlines;
    // each token with the 1-based line it starts on.
    let t: Vec<(&str, TokKind, u32)> = {
        let mut line = 1u32;
        let mut seen = 0usize;
        lex::tokenize(text)
            .into_iter()
            .filter(|k| {
                !matches!(
                    k.kind,
                    TokKind::Comment | TokKind::StrLit | TokKind::CharLit | TokKind::Newline
                )
            })
            .map(|k| {
                line += text[seen..k.range.start].matches('\n').count() as u32;
                seen = k.range.start;
                (k.text(text), k.kind, line)
            })
            .collect()
    };
    let at = |i: usize| t.get(i).map_or("", |k| k.0);
    let ident = |i: usize| t.get(i).is_some_and(|k| k.1 == TokKind::Ident);
    let mut out = Vec::new();
    for i in 0..t.len() {
        let line = t[i].2;
        if at(i) == "KMEM_CACHE" && at(i + 1) == "(" && at(i + 3) == "," && ident(i + 2) {
            out.push((
                at(i + 2).to_string(),
                line,
                format!("KMEM_CACHE({}, ...)", at(i + 2)),
            ));
        }
        if matches!(at(i), "kmem_cache_create" | "kmem_cache_create_usercopy") && at(i + 1) == "(" {
            // The size is the second argument: the tokens after the first
            // comma at the call's own depth, up to the next one. A
            // usercopy cache's fifth, the offset of the region user
            // copies may touch, is `offsetof(struct NAME, member)` of the
            // object it holds (`mm_struct`, whose size is a local).
            let usercopy = at(i) == "kmem_cache_create_usercopy";
            let last_arg = if usercopy { 4 } else { 1 };
            let found = out.len();
            let mut depth = 0i64;
            let mut arg = 0;
            let mut j = i + 1;
            while j < t.len() {
                // `sizeof(struct NAME)` as the size, `offsetof(struct
                // NAME, ...)` as the region: the argument it must be, the
                // token after the struct's name, and how the evidence
                // ends the form.
                let form = match at(j) {
                    "sizeof" => Some((1, ")", ")")),
                    "offsetof" if out.len() == found => Some((4, ",", ", ...)")),
                    _ => None,
                };
                if let Some((_, _, tail)) = form.filter(|(wanted, after, _)| {
                    arg == *wanted
                        && depth == 1
                        && at(j + 1) == "("
                        && at(j + 2) == "struct"
                        && ident(j + 3)
                        && at(j + 4) == *after
                }) {
                    out.push((
                        at(j + 3).to_string(),
                        line,
                        format!("{}(..., {}(struct {}{tail}, ...)", at(i), at(j), at(j + 3)),
                    ));
                }
                match at(j) {
                    "(" => depth += 1,
                    ")" => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    "," if depth == 1 => {
                        arg += 1;
                        if arg > last_arg {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_forms_name_their_struct_and_line() {
        let got = caches_in(
            "/* KMEM_CACHE(in_comment, 0) */\n\
             void __init proc_caches_init(void)\n{\n\
                 area_cachep = KMEM_CACHE(area, SLAB_PANIC);\n\
                 conn_cachep = kmem_cache_create(\"conn\",\n\
                     sizeof(struct conn), 0, SLAB_HWCACHE_ALIGN, NULL);\n\
                 task_cachep = kmem_cache_create(\"task\", task_size, align, 0, NULL);\n\
                 x = kmem_cache_create(\"x\", 64, 0, 0, ctor(sizeof(struct not_size)));\n\
                 memset(p, 0, sizeof(struct not_a_cache));\n\
                 mm_size = sizeof(struct mm) + cpumask_size();\n\
                 mm_cachep = kmem_cache_create_usercopy(\"mm\", mm_size, 0, 0,\n\
                     offsetof(struct mm, saved_auxv), sizeof_field(struct mm, saved_auxv), NULL);\n\
                 y = kmem_cache_create(\"y\", y_size, 0, 0, offsetof(struct not_usercopy, a));\n\
                 s = kmem_cache_create_usercopy(\"s\", sizeof(struct sized), 0, 0,\n\
                     offsetof(struct sized, cb), 8, NULL);\n\
             }\n",
        );
        let names: Vec<(&str, u32)> = got.iter().map(|(n, l, _)| (n.as_str(), *l)).collect();
        assert_eq!(names, [("area", 4), ("conn", 5), ("mm", 11), ("sized", 14)]);
        assert_eq!(
            got[2].2,
            "kmem_cache_create_usercopy(..., offsetof(struct mm, ...), ...)"
        );
    }

    #[test]
    fn the_walk_reads_c_files_in_order_and_skips_the_rest() {
        let dir = std::env::temp_dir().join(format!("tree-allocs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("kernel")).unwrap();
        std::fs::create_dir_all(dir.join("mm")).unwrap();
        std::fs::write(dir.join("kernel/fork.c"), "c = KMEM_CACHE(area, 0);\n").unwrap();
        std::fs::write(dir.join("mm/later.c"), "\n\nc = KMEM_CACHE(area, 0);\n").unwrap();
        std::fs::write(dir.join("mm/plain.c"), "int f(void) { return 0; }\n").unwrap();
        std::fs::write(dir.join("mm/x.h"), "c = KMEM_CACHE(in_header, 0);\n").unwrap();
        let got = scan(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(got.files_listed, 3);
        assert_eq!(got.files_tokenized, 2, "the prefilter skips plain.c");
        assert_eq!(
            got.caches.get("area").map(String::as_str),
            Some("kernel/fork.c:1: KMEM_CACHE(area, ...)")
        );
        assert!(!got.caches.contains_key("in_header"));
    }
}
