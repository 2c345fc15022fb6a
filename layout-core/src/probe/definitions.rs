//! Which header of the include path defines a name the compiler did not
//! know: what a compiler error asks for ([`Wanted`]), and a search of the
//! headers under the toolchain's `-I` directories ([`Definitions`]), read
//! once, within [`MAX_FILES`] files and [`MAX_BYTES`] bytes.
//!
//! A definition is `struct|union|enum TAG {` for a tag; for a plain name,
//! `#define NAME`, a `typedef` ending in it (`typedef u64 NAME;`, `} NAME;`,
//! `typedef int (*NAME)(...)`), then an enumerator (`NAME,` / `NAME =` at a
//! line start). Headers are searched `linux/` first, then `asm/`,
//! `asm-generic/`, `net/`, the rest; within a group in `-I` order, then by
//! name, so the answer is the same on every run.

use super::compile::Toolchain;
use crate::source::bounded;
use crate::Diagnostic;
use std::path::{Path, PathBuf};

/// Files read, at most.
const MAX_FILES: usize = 20_000;
/// Bytes read in all, at most; a file over [`MAX_FILE_BYTES`] is skipped.
const MAX_BYTES: usize = 128 << 20;
const MAX_FILE_BYTES: u64 = 1 << 20;

/// What a compiler error lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    /// A header named by an `#error` ("include <linux/x.h> instead").
    Header(String),
    /// `struct`, `union` or `enum` TAG.
    Tag(String),
    /// A type name, macro or enumerator.
    Name(String),
}

/// Words a quoted name in an error may be that no header defines.
const KEYWORDS: [&str; 27] = [
    "struct", "union", "enum", "int", "char", "short", "long", "unsigned", "signed", "void",
    "const", "volatile", "static", "inline", "extern", "typedef", "float", "double", "_Bool",
    "sizeof", "return", "if", "else", "while", "for", "do", "asm",
];

impl Wanted {
    /// What the compiler's first error (as [`super::compile`] words it)
    /// says is missing; the error's source line is read for an incomplete
    /// type the message does not name.
    pub fn from_error(d: &Diagnostic) -> Vec<Wanted> {
        let m = d.message.as_str();
        let mut out = Vec::new();
        if let Some(i) = m.find("#error") {
            for w in m[i..].split(|c: char| c.is_whitespace() || "\"'<>‘’,;()".contains(c)) {
                let w = w.trim_end_matches('.');
                if w.ends_with(".h") && w.contains('/') && !w.starts_with('/') && !w.contains("..")
                {
                    out.push(Wanted::Header(w.to_string()));
                }
            }
            return out;
        }
        if m.contains("redefinition") || m.contains("conflicting") {
            return out;
        }
        let quoted = quoted(m);
        for q in &quoted {
            let q = q
                .trim_start_matches("const ")
                .trim_start_matches("volatile ");
            for kw in ["struct ", "union ", "enum "] {
                if let Some(rest) = q.strip_prefix(kw).filter(|r| is_ident(r)) {
                    out.push(Wanted::Tag(rest.to_string()));
                }
            }
        }
        let names_a_type = [
            "unknown type name",
            "undeclared",
            "before",
            "implicit declaration",
        ];
        if names_a_type.iter().any(|p| m.contains(p)) {
            let pick = if m.contains("before") {
                quoted.last()
            } else {
                quoted.first()
            };
            if let Some(q) = pick.filter(|q| is_ident(q) && !KEYWORDS.contains(&q.as_str())) {
                out.push(Wanted::Name(q.clone()));
            }
        }
        let incomplete = [
            "incomplete type",
            "isn't known",
            "isn’t known",
            "undefined type",
        ];
        if out.is_empty() && incomplete.iter().any(|p| m.contains(p)) {
            out.extend(source_line_tags(d));
        }
        out
    }
}

/// The texts between quotes (`'x'` or `‘x’`) of a message.
fn quoted(m: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = m;
    while let Some(i) = rest.find(['\'', '‘']) {
        let open = rest[i..].chars().next().unwrap_or('\'');
        let close = if open == '‘' { '’' } else { '\'' };
        let after = &rest[i + open.len_utf8()..];
        match after.find(close) {
            Some(j) => {
                out.push(after[..j].to_string());
                rest = &after[j + close.len_utf8()..];
            }
            None => break,
        }
    }
    out
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// `struct X` / `union X` / `enum X` on the error's source line, or on one
/// of the two before it (a declaration split over lines).
fn source_line_tags(d: &Diagnostic) -> Vec<Wanted> {
    let Some(file) = &d.file else {
        return Vec::new();
    };
    let Some(text) = super::read_text(file) else {
        return Vec::new();
    };
    let lines: Vec<&str> = text.lines().collect();
    let at = d.line.saturating_sub(1);
    for back in 0..3 {
        let Some(line) = at.checked_sub(back).and_then(|i| lines.get(i)) else {
            break;
        };
        let words: Vec<&str> = line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        let tags: Vec<Wanted> = words
            .windows(2)
            .filter(|w| matches!(w[0], "struct" | "union" | "enum") && is_ident(w[1]))
            .map(|w| Wanted::Tag(w[1].to_string()))
            .collect();
        if !tags.is_empty() {
            return tags;
        }
    }
    Vec::new()
}

/// The headers of the include path, read on first use.
pub struct Definitions {
    dirs: Vec<PathBuf>,
    /// (include name, text), in search order.
    files: Option<Vec<(String, String)>>,
}

impl Definitions {
    pub fn new(tc: &Toolchain) -> Definitions {
        Definitions {
            dirs: include_dirs(tc),
            files: None,
        }
    }

    /// The file `#include <name>` finds: the first `-I` directory that has it.
    pub fn resolve(&self, name: &str) -> Option<PathBuf> {
        self.dirs
            .iter()
            .map(|d| d.join(name))
            .find(|p| p.is_file())
            .and_then(|p| p.canonicalize().ok())
    }

    /// The include names of the headers that define what `wanted` lacks
    /// (one each, the first in search order), none of them `header`.
    pub fn headers_for(&mut self, wanted: &[Wanted], header: &Path) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for w in wanted {
            let found = match w {
                Wanted::Header(name) => self.resolve(name).map(|_| name.clone()),
                Wanted::Tag(t) => self.find(|text| defines_tag(text, t), header),
                Wanted::Name(n) => self
                    .find(|text| defines_name(text, n), header)
                    .or_else(|| self.find(|text| enumerates(text, n), header)),
            };
            if let Some(f) = found {
                if !out.contains(&f) {
                    out.push(f);
                }
            }
        }
        out
    }

    /// The include name of `header` (`linux/slub_def.h`), if the include path finds it.
    pub fn name_of(&self, header: &Path) -> Option<String> {
        self.dirs.iter().find_map(|d| {
            let rel = header.strip_prefix(d).ok()?;
            let name = rel.to_string_lossy().replace('\\', "/");
            (self.resolve(&name).as_deref() == Some(header)).then_some(name)
        })
    }

    /// Headers that `#include <name>`, in search order, at most `max`.
    pub fn includers(&mut self, name: &str, max: usize) -> Vec<String> {
        let dirs = self.dirs.clone();
        let files = self.files.get_or_insert_with(|| read_all(&dirs));
        let wanted = format!("<{name}>");
        files
            .iter()
            .filter(|(n, text)| {
                n != name
                    && text.match_indices(&wanted).any(|(i, _)| {
                        let line = line_of(text, i).trim_start();
                        line.strip_prefix('#')
                            .is_some_and(|r| r.trim_start().starts_with("include"))
                    })
            })
            .map(|(n, _)| n.clone())
            .take(max)
            .collect()
    }

    fn find(&mut self, pred: impl Fn(&str) -> bool, header: &Path) -> Option<String> {
        let dirs = self.dirs.clone();
        let files = self.files.get_or_insert_with(|| read_all(&dirs));
        files
            .iter()
            .find(|(name, text)| pred(text) && !dirs.iter().any(|d| d.join(name) == header))
            .map(|(name, _)| name.clone())
    }
}

/// The `-I DIR` / `-IDIR` directories of the flags, in order, made absolute
/// against the compiler's directory.
fn include_dirs(tc: &Toolchain) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut it = tc.compiler.iter().skip(1).chain(&tc.flags);
    while let Some(f) = it.next() {
        let dir = match f.strip_prefix("-I") {
            Some("") => it.next().cloned(),
            Some(d) => Some(d.to_string()),
            None => None,
        };
        if let Some(d) = dir {
            let p = tc.directory.join(d);
            if p.is_dir() && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// Search group of an include name: `linux/` first.
fn group(name: &str) -> usize {
    ["linux/", "asm/", "asm-generic/", "net/"]
        .iter()
        .position(|p| name.starts_with(p))
        .unwrap_or(4)
}

/// Every `.h` under the directories, as (include name, text), in search order.
fn read_all(dirs: &[PathBuf]) -> Vec<(String, String)> {
    let mut names: Vec<(usize, usize, String, PathBuf)> = Vec::new();
    for (k, d) in dirs.iter().enumerate() {
        let mut stack = vec![d.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                let Ok(t) = e.file_type() else { continue };
                if t.is_dir() {
                    stack.push(p);
                } else if t.is_file() && p.extension().is_some_and(|x| x == "h") {
                    if let Ok(rel) = p.strip_prefix(d) {
                        let name = rel.to_string_lossy().replace('\\', "/");
                        // Those directories are on the include path themselves.
                        if name.starts_with("uapi/") || name.starts_with("generated/") {
                            continue;
                        }
                        names.push((group(&name), k, name, p));
                    }
                }
                if names.len() >= MAX_FILES {
                    break;
                }
            }
        }
    }
    names.sort();
    let mut total = 0usize;
    let mut out = Vec::new();
    for (_, _, name, path) in names {
        let small = std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_FILE_BYTES);
        if !small {
            continue;
        }
        if let Ok(bytes) = bounded::read(&path, MAX_FILE_BYTES) {
            total += bytes.len();
            if total > MAX_BYTES {
                break;
            }
            out.push((name, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    out
}

/// Byte positions where `word` occurs as a whole identifier.
fn word_at<'a>(text: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    text.match_indices(word).map(|(i, _)| i).filter(move |&i| {
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let before = text[..i].chars().next_back().is_some_and(ident);
        let after = text[i + word.len()..].chars().next().is_some_and(ident);
        !before && !after
    })
}

fn line_of(text: &str, at: usize) -> &str {
    let start = text[..at].rfind('\n').map_or(0, |p| p + 1);
    let end = text[at..].find('\n').map_or(text.len(), |p| at + p);
    &text[start..end]
}

/// `struct|union|enum TAG {` (the brace on the same line).
fn defines_tag(text: &str, tag: &str) -> bool {
    word_at(text, tag).any(|i| {
        let before = text[..i].trim_end();
        let kw = ["struct", "union", "enum"].iter().any(|k| {
            before.ends_with(k)
                && !before[..before.len() - k.len()]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        kw && text[i + tag.len()..]
            .trim_start_matches([' ', '\t'])
            .starts_with('{')
    })
}

/// `#define NAME`, or a one-line typedef that names NAME (`typedef u64 NAME;`,
/// `} NAME;`, `typedef int (*NAME)(void);`, `typedef u32 __bitwise NAME;`).
fn defines_name(text: &str, name: &str) -> bool {
    word_at(text, name).any(|i| {
        let line = line_of(text, i).trim_start();
        if let Some(rest) = line.strip_prefix('#') {
            let rest = rest.trim_start();
            return rest.strip_prefix("define").is_some_and(|r| {
                let r = r.trim_start();
                r.starts_with(name)
                    && !r[name.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            });
        }
        let body = if let Some(r) = line.strip_prefix("typedef") {
            r
        } else if let Some(r) = line.strip_prefix('}') {
            r
        } else {
            return false;
        };
        typedef_name(body).as_deref() == Some(name)
    })
}

/// The name a one-line typedef declares: after `(*` for a function
/// pointer, else the last identifier before `;`, an array bound or an
/// attribute.
fn typedef_name(body: &str) -> Option<String> {
    let stmt = &body[..body.find(';')?];
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    if let Some(p) = stmt.find("(*") {
        let n = ident(stmt[p + 2..].trim_start());
        return (!n.is_empty()).then_some(n);
    }
    let mut s = stmt;
    for cut in ["__attribute__", "__aligned", "__packed", "["] {
        if let Some(p) = s.find(cut) {
            if !s[..p].trim().is_empty() {
                s = &s[..p];
            }
        }
    }
    let n: String = s
        .trim_end()
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    (!n.is_empty()).then_some(n)
}

/// `NAME,` / `NAME =` / `NAME` alone at a line start (an enumerator).
fn enumerates(text: &str, name: &str) -> bool {
    word_at(text, name).any(|i| {
        let line = line_of(text, i);
        let t = line.trim_start();
        t.starts_with(name) && {
            let after = t[name.len()..].trim_start();
            after.is_empty() || after.starts_with(',') || after.starts_with('=')
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(m: &str) -> Diagnostic {
        Diagnostic::new(format!("the compiler `gcc` failed: {m}"))
    }

    #[test]
    fn errors_say_what_is_missing() {
        assert_eq!(
            Wanted::from_error(&err("unknown type name ‘pgoff_t’")),
            [Wanted::Name("pgoff_t".into())]
        );
        assert_eq!(
            Wanted::from_error(&err("expected specifier-qualifier-list before 'ssize_t'")),
            [Wanted::Name("ssize_t".into())]
        );
        assert_eq!(
            Wanted::from_error(&err("array type has incomplete element type ‘struct page’")),
            [Wanted::Tag("page".into())]
        );
        assert_eq!(
            Wanted::from_error(&err("invalid use of undefined type ‘const struct slab’")),
            [Wanted::Tag("slab".into())]
        );
        assert_eq!(
            Wanted::from_error(&err(
                "#error \"Please don't include <linux/x_impl.h> directly, include <linux/x.h>\""
            )),
            [
                Wanted::Header("linux/x_impl.h".into()),
                Wanted::Header("linux/x.h".into())
            ]
        );
        assert_eq!(
            Wanted::from_error(&err("‘NR_CPUS’ undeclared here (not in a function)")),
            [Wanted::Name("NR_CPUS".into())]
        );
        assert!(Wanted::from_error(&err("expected ‘;’ before ‘}’ token")).is_empty());
        assert!(Wanted::from_error(&err("redefinition of ‘struct x’")).is_empty());
    }

    #[test]
    fn definitions_are_found_by_their_shape() {
        let text = "struct page;\nstruct page_x {\n};\nstruct page {\n\tint a;\n};\n";
        assert!(defines_tag(text, "page"));
        assert!(!defines_tag("struct page;\nstruct page *p;\n", "page"));
        assert!(defines_name("typedef unsigned long pgoff_t;\n", "pgoff_t"));
        assert!(defines_name(
            "typedef struct {\n int x;\n} rwlock_t;\n",
            "rwlock_t"
        ));
        assert!(defines_name("typedef int (*cb_t)(int);\n", "cb_t"));
        assert!(defines_name("#define NR_CPUS 64\n", "NR_CPUS"));
        assert!(!defines_name("extern pgoff_t x;\n", "pgoff_t"));
        assert!(!defines_name("typedef u64 (*cb_t)(u64, u64);\n", "u64"));
        assert!(!defines_name(
            "typedef guid_t g_t __aligned(__alignof__(u32));\n",
            "u32"
        ));
        assert!(defines_name(
            "typedef guid_t g_t __aligned(__alignof__(u32));\n",
            "g_t"
        ));
        assert!(!defines_name("typedef u32 __bitwise blk_opf_t;\n", "u32"));
        assert!(defines_name(
            "typedef u32 __bitwise blk_opf_t;\n",
            "blk_opf_t"
        ));
        assert!(defines_name("typedef unsigned long bits_t[4];\n", "bits_t"));
        assert!(enumerates(
            "enum e {\n\tMAX_NR_ZONES = 3,\n};\n",
            "MAX_NR_ZONES"
        ));
        assert!(!enumerates("\tfoo(MAX_NR_ZONES);\n", "MAX_NR_ZONES"));
    }
}
