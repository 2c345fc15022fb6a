//! The command line's modules import each other in no circle: a subcommand's
//! module holds its arguments and its run, and what several of them share
//! (the input arguments, the input loading, the output, the exit statuses)
//! imports no subcommand. Read from the sources in `cli/src`: an edge
//! `A -> B` is a path in module A that starts `crate::B`, or `super::B` where
//! `super` is the crate root, or, in `main.rs`, `B::` for a module it
//! declares. A path to an item of the root itself (`super::EXIT_OK`) is an
//! edge to `main`, which reaches every module, so it closes a circle too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The root module's name in the graph.
const ROOT: &str = "main";

#[test]
fn the_cli_modules_import_each_other_in_no_circle() {
    let src = super::support::repo().join("cli/src");
    let graph = module_graph(&src);
    assert!(
        graph.modules.len() >= 10,
        "read only {:?} from {}",
        graph.modules,
        src.display()
    );
    for m in graph.modules.iter().filter(|m| *m != ROOT) {
        assert!(
            graph.edges.values().any(|to| to.contains_key(m)),
            "module {m} is used by no other module: the reader missed its paths"
        );
    }
    if let Some(circle) = circle(&graph) {
        panic!(
            "the CLI's modules import each other in a circle:\n{}",
            describe(&graph, &circle)
        );
    }
}

/// The reader and the search find the circles this test exists for: the
/// shape of the old one (the arguments module took a subcommand's
/// arguments, which took another's from it), one through the root's own
/// items, one in a `use` group, and none where a nested test module says
/// `super::*`.
#[test]
fn the_module_graph_finds_circles_where_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write("main.rs", "mod args;\nmod audit;\nmod exit;\nmod output;\nfn main() { let _ = args::Cli::parse(); }\npub const OK: u8 = 0;\n");
    write("args.rs", "/// super::nothing in a comment\npub enum Command { Audit(super::audit::AuditArgs) }\npub struct ProposeArgs;\n");
    write("audit.rs", "use super::args::ProposeArgs;\npub struct AuditArgs;\nfn f() -> &'static str { \"crate::exit\" }\n");
    write(
        "exit.rs",
        "pub const A: char = '\"';\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    );
    write("output.rs", "use crate::{exit::A, args};\n");
    let graph = module_graph(dir.path());
    assert_eq!(edges_of(&graph, "main"), ["args"]);
    assert_eq!(
        edges_of(&graph, "args"),
        ["audit"],
        "comments are not paths"
    );
    assert_eq!(edges_of(&graph, "audit"), ["args"], "strings are not paths");
    assert!(
        edges_of(&graph, "exit").is_empty(),
        "`super::*` of a nested module is its own file"
    );
    assert_eq!(edges_of(&graph, "output"), ["args", "exit"]);
    let c = circle(&graph).expect("args -> audit -> args is a circle");
    assert_eq!(c, ["args", "audit", "args"]);

    // An item of the root (`super::OK`) closes a circle through main.
    write(
        "audit.rs",
        "pub struct AuditArgs;\nfn f() -> u8 { super::OK }\n",
    );
    let graph = module_graph(dir.path());
    assert_eq!(edges_of(&graph, "audit"), ["main"]);
    let c = circle(&graph).expect("main -> args -> audit -> main is a circle");
    assert_eq!(c, ["main", "args", "audit", "main"]);

    // Broken both ways: acyclic.
    write("audit.rs", "pub struct AuditArgs;\n");
    assert_eq!(circle(&module_graph(dir.path())), None);
}

fn edges_of<'g>(graph: &'g Graph, from: &str) -> Vec<&'g str> {
    graph
        .edges
        .get(from)
        .map_or(Vec::new(), |to| to.keys().map(String::as_str).collect())
}

struct Graph {
    modules: BTreeSet<String>,
    /// from -> to -> where the first such path is (`file:line`).
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

/// The edges between the top-level modules of the crate whose root is
/// `src/main.rs`. A file in a directory (`src/m/x.rs`) belongs to `m`.
fn module_graph(src: &Path) -> Graph {
    let root_text = std::fs::read_to_string(src.join("main.rs")).expect("src/main.rs reads");
    let declared = declared_modules(&tokens(&root_text));
    let mut modules: BTreeSet<String> = declared.iter().cloned().collect();
    modules.insert(ROOT.to_string());
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for file in rust_files(src) {
        let rel = file.strip_prefix(src).unwrap();
        let path = module_path(rel);
        let me = path.first().cloned().unwrap_or_else(|| ROOT.to_string());
        let text = std::fs::read_to_string(&file).unwrap();
        for (target, line) in references(&tokens(&text), &path, &declared) {
            if target != me {
                edges
                    .entry(me.clone())
                    .or_default()
                    .entry(target)
                    .or_insert_with(|| format!("{}:{line}", rel.display()));
            }
        }
    }
    Graph { modules, edges }
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
    out
}

/// `main.rs` -> [], `show.rs` -> [show], `m/mod.rs` -> [m], `m/x.rs` -> [m, x].
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") || parts == ["main"] {
        parts.pop();
    }
    parts
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

/// The tokens of a Rust file with their lines, without comments, string,
/// byte-string and char literals (so no path in a doc comment or a help
/// text counts).
fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let skip_to = |i: &mut usize, line: &mut usize, end: usize| {
        *line += c[*i..end.min(c.len())]
            .iter()
            .filter(|&&ch| ch == '\n')
            .count();
        *i = end;
    };
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let (mut depth, mut j) = (1, i + 2);
            while j < c.len() && depth > 0 {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            skip_to(&mut i, &mut line, j);
        } else if let Some(end) = raw_string_end(&c, i) {
            skip_to(&mut i, &mut line, end);
        } else if ch == '"' || (ch == 'b' && next == Some('"')) {
            let mut j = if ch == 'b' { i + 2 } else { i + 1 };
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            skip_to(&mut i, &mut line, j + 1);
        } else if ch == '\'' {
            // A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(c[start..i].iter().collect()), line));
        } else if ch == ':' && next == Some(':') {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// Where a raw (byte) string starting at `i` ends: `r"..."`, `r#"..."#`, `br"..."`.
fn raw_string_end(c: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if c.get(j) == Some(&'b') {
        j += 1;
    }
    if c.get(j) != Some(&'r') || (i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_')) {
        return None;
    }
    j += 1;
    let hashes = c[j..].iter().take_while(|&&ch| ch == '#').count();
    j += hashes;
    if c.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < c.len() {
        if c[j] == '"'
            && c[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&h| h == '#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(c.len())
}

/// The modules `main.rs` declares at its top level (`mod NAME;`).
fn declared_modules(toks: &[(Tok, usize)]) -> Vec<String> {
    let mut depth = 0;
    let mut out = Vec::new();
    for (k, (t, _)) in toks.iter().enumerate() {
        match t {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => depth -= 1,
            Tok::Ident(kw) if kw == "mod" && depth == 0 => {
                if let (Some((Tok::Ident(name), _)), Some((Tok::Punct(';'), _))) =
                    (toks.get(k + 1), toks.get(k + 2))
                {
                    out.push(name.clone());
                }
            }
            _ => {}
        }
    }
    out
}

/// The top-level modules (or [`ROOT`] for an item of the root) that the
/// paths of a file reach, with their lines. `path` is the file's module
/// path; inline `mod NAME { ... }` blocks extend it.
fn references(toks: &[(Tok, usize)], path: &[String], declared: &[String]) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    // Brace depths at which an inline module opened.
    let mut inline: Vec<usize> = Vec::new();
    let mut depth = 0;
    let mut k = 0;
    while k < toks.len() {
        let (t, line) = &toks[k];
        match t {
            Tok::Punct('{') => {
                let opens_mod = k >= 2
                    && matches!(&toks[k - 2].0, Tok::Ident(kw) if kw == "mod")
                    && matches!(&toks[k - 1].0, Tok::Ident(_));
                depth += 1;
                if opens_mod {
                    inline.push(depth);
                }
            }
            Tok::Punct('}') => {
                if inline.last() == Some(&depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            Tok::Ident(first) if k == 0 || toks[k - 1].0 != Tok::PathSep => {
                let here = path.len() + inline.len();
                let sep_at = |j: usize| toks.get(j).map(|t| &t.0) == Some(&Tok::PathSep);
                let ident_at = |j: usize, s: &str| matches!(toks.get(j).map(|t| &t.0), Some(Tok::Ident(i)) if i == s);
                // Where the path's first segment below the root starts, when
                // the path starts at the root.
                let below_root = match first.as_str() {
                    "crate" if sep_at(k + 1) => Some(k + 2),
                    "self" if here == 0 && sep_at(k + 1) => Some(k + 2),
                    "super" => {
                        let (mut level, mut j) = (here, k);
                        while ident_at(j, "super") && sep_at(j + 1) {
                            level = level.saturating_sub(1);
                            j += 2;
                        }
                        (j > k && level == 0).then_some(j)
                    }
                    // A bare path in the root: `show::run`, `use command::Cli`.
                    name if here == 0 && sep_at(k + 1) && declared.iter().any(|d| d == name) => {
                        Some(k)
                    }
                    _ => None,
                };
                for target in below_root.map_or(Vec::new(), |j| segments_below_root(toks, j)) {
                    let to = if declared.contains(&target) {
                        target
                    } else {
                        ROOT.to_string()
                    };
                    out.push((to, *line));
                }
            }
            _ => {}
        }
        k += 1;
    }
    out
}

/// The first segment of a path after `crate::` (at token `k`): one name,
/// or the first name of each item of a `{ ... }` group (`*` for a glob).
fn segments_below_root(toks: &[(Tok, usize)], k: usize) -> Vec<String> {
    match toks.get(k).map(|t| &t.0) {
        Some(Tok::Ident(name)) => vec![name.clone()],
        Some(Tok::Punct('*')) => vec!["*".to_string()],
        Some(Tok::Punct('{')) => {
            let (mut out, mut depth, mut item_start) = (Vec::new(), 0, true);
            for (t, _) in &toks[k..] {
                match t {
                    Tok::Punct('{') => {
                        depth += 1;
                        continue;
                    }
                    Tok::Punct('}') => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Tok::Punct(',') if depth == 1 => {
                        item_start = true;
                        continue;
                    }
                    Tok::Ident(name) if depth == 1 && item_start && name != "self" => {
                        out.push(name.clone())
                    }
                    Tok::Punct('*') if depth == 1 && item_start => out.push("*".to_string()),
                    _ => {}
                }
                item_start = false;
            }
            out
        }
        _ => Vec::new(),
    }
}

/// A circle of the graph, as the modules along it (the first repeated at
/// the end), or None. Modules and edges are searched in name order, so the
/// answer is the same on every run.
fn circle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    fn visit(
        m: &str,
        graph: &Graph,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        marks.insert(m.to_string(), Mark::OnPath);
        path.push(m.to_string());
        for to in graph.edges.get(m).into_iter().flat_map(BTreeMap::keys) {
            match marks.get(to).copied().unwrap_or(Mark::New) {
                Mark::OnPath => {
                    let start = path.iter().position(|p| p == to).unwrap();
                    let mut c = path[start..].to_vec();
                    c.push(to.clone());
                    return Some(c);
                }
                Mark::New => {
                    if let Some(c) = visit(to, graph, marks, path) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks.insert(m.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    let mut starts: Vec<&String> = graph.modules.iter().collect();
    // The root first: a circle through it reads from it.
    starts.sort_by_key(|m| *m != ROOT);
    for m in starts {
        if marks.get(m).copied().unwrap_or(Mark::New) == Mark::New {
            if let Some(c) = visit(m, graph, &mut marks, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// Each step of a circle with the line that makes it.
fn describe(graph: &Graph, circle: &[String]) -> String {
    circle
        .windows(2)
        .map(|w| format!("  {} -> {} ({})", w[0], w[1], graph.edges[&w[0]][&w[1]]))
        .collect::<Vec<_>>()
        .join("\n")
}
