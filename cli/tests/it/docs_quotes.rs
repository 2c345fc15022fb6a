//! The command output quoted in README.md, GUIDE.md and docs/solver.md,
//! kept true.
//!
//! A quoted block is the fenced block right after an HTML comment
//! `<!-- quoted: NAME -->`. `QUOTES` below says, for each NAME, which
//! command prints it, where it runs, which streams the block shows and the
//! exit status. The test runs the command and compares its output with the
//! block; a block that starts with `$ cachelayout ...` must quote the command
//! itself too. The only normalisation is the solve time (`solved in 5 ms`),
//! which differs from run to run.
//!
//! Files the docs ask the reader to write come from the docs too: a block
//! after `<!-- file: NAME -->` is written to a scratch directory as NAME, and
//! the quotes that run there (`Dir::Scratch`) see the README's header and
//! access file, not copies kept here. A block after
//! `<!-- excerpt-of: PATH -->` must appear verbatim in that file of the
//! repository.
//!
//! Every quote is a command of a few seconds at most, on the shipped
//! examples or on a single kernel header; the quotes on kernel headers are
//! skipped, with a message, when Debian's 6.1 headers are not installed.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicU64;

/// The docs that hold quoted output, relative to the repository root.
const DOCS: [&str; 3] = ["README.md", "GUIDE.md", "docs/solver.md"];

#[derive(Clone, Copy)]
enum Dir {
    /// The repository root.
    Repo,
    /// A scratch directory holding the docs' `<!-- file: NAME -->` blocks.
    Scratch,
    /// The sources of Debian's 6.1 kernel headers
    /// ([`support::debian_61_headers`]).
    KernelSources,
}

#[derive(Clone, Copy)]
enum Stream {
    Stdout,
    Stderr,
    /// stdout, then stderr: what a terminal shows for `propose`'s diff and
    /// summary.
    Both,
}

struct Quote {
    name: &'static str,
    /// The arguments after `cachelayout`; `$K` stands for the kernel build
    /// tree of Debian's 6.1 headers (its `.config`: `$K/.config`).
    args: &'static [&'static str],
    dir: Dir,
    stream: Stream,
    status: i32,
}

const LRU_GEN: [&str; 6] = [
    "examples/kernel/lru_gen.h",
    "--struct",
    "lru_gen_folio",
    "--access",
    "examples/kernel/lru_gen.toml",
    "--offset",
];

const QUOTES: &[Quote] = &[
    Quote {
        name: "propose-lru-gen",
        args: &[
            "propose", LRU_GEN[0], LRU_GEN[1], LRU_GEN[2], LRU_GEN[3], LRU_GEN[4],
        ],
        dir: Dir::Repo,
        stream: Stream::Both,
        status: 0,
    },
    Quote {
        name: "show-lru-gen",
        args: &[
            "show", LRU_GEN[0], LRU_GEN[1], LRU_GEN[2], LRU_GEN[3], LRU_GEN[4], LRU_GEN[5], "304",
        ],
        dir: Dir::Repo,
        stream: Stream::Stdout,
        status: 1,
    },
    Quote {
        name: "propose-lru-gen-offset",
        args: &[
            "propose",
            LRU_GEN[0],
            LRU_GEN[1],
            LRU_GEN[2],
            LRU_GEN[3],
            LRU_GEN[4],
            LRU_GEN[5],
            "304",
            "--container",
            "mem_cgroup_per_node.lruvec.lrugen",
        ],
        dir: Dir::Repo,
        stream: Stream::Both,
        status: 0,
    },
    Quote {
        name: "propose-lru-gen-aligned",
        args: &[
            "propose", LRU_GEN[0], LRU_GEN[1], LRU_GEN[2], LRU_GEN[3], LRU_GEN[4],
        ],
        dir: Dir::Repo,
        stream: Stream::Stderr,
        status: 0,
    },
    Quote {
        name: "propose-lru-gen-min-diff",
        args: &[
            "propose",
            LRU_GEN[0],
            LRU_GEN[1],
            LRU_GEN[2],
            LRU_GEN[3],
            LRU_GEN[4],
            "--objective",
            "min-diff",
        ],
        dir: Dir::Repo,
        stream: Stream::Stderr,
        status: 0,
    },
    Quote {
        name: "growth-lru-gen",
        args: &[
            "growth",
            "--header",
            "examples/kernel/lru_gen.h",
            "--struct",
            "lru_gen_folio",
            "--size",
            "1408",
        ],
        dir: Dir::Repo,
        stream: Stream::Stdout,
        status: 0,
    },
    Quote {
        name: "propose-conn-stats",
        args: &[
            "propose",
            "conn.h",
            "--struct",
            "conn_stats",
            "--access",
            "conn.toml",
        ],
        dir: Dir::Scratch,
        stream: Stream::Both,
        status: 0,
    },
    Quote {
        name: "kernel-unknown-type",
        args: &[
            "show",
            "include/linux/mm_types.h",
            "--struct",
            "vm_area_struct",
            "--config",
            "$K/.config",
        ],
        dir: Dir::KernelSources,
        stream: Stream::Stderr,
        status: 2,
    },
    Quote {
        name: "kbuild-prelude",
        args: &[
            "show",
            "include/linux/leds-lp3952.h",
            "--struct",
            "lp3952_led_array",
            "--kbuild",
            "$K",
        ],
        dir: Dir::KernelSources,
        stream: Stream::Stderr,
        status: 0,
    },
    Quote {
        name: "kbuild-config-excluded",
        args: &[
            "show",
            "include/linux/crypto.h",
            "--struct",
            "crypto_istat_aead",
            "--kbuild",
            "$K",
        ],
        dir: Dir::KernelSources,
        stream: Stream::Stderr,
        status: 2,
    },
];

/// A fenced block of a doc, after the HTML comment that names it.
struct Block {
    doc: &'static str,
    /// The comment's line (1-based), for messages.
    line: usize,
    text: String,
}

/// Every block after a `<!-- KIND: NAME -->` comment in `doc`, as
/// `(NAME, block)`. The block's lines lose the indentation of its fence
/// (blocks inside list items are indented).
fn blocks(doc: &'static str, text: &str, kind: &str) -> Vec<(String, Block)> {
    let opening = format!("<!-- {kind}: ");
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim().strip_prefix(&opening) else {
            continue;
        };
        let name = rest
            .strip_suffix(" -->")
            .unwrap_or_else(|| panic!("{doc}:{}: a comment `{line}` not closed", i + 1));
        let fence = lines.get(i + 1).copied().unwrap_or("");
        let indent = fence.len() - fence.trim_start().len();
        assert!(
            fence.trim_start().starts_with("```"),
            "{doc}:{}: `{line}` must be followed by a fenced block",
            i + 1
        );
        let mut body = String::new();
        for l in &lines[i + 2..] {
            if l.trim() == "```" {
                break;
            }
            body.push_str(l.get(indent..).unwrap_or(l.trim_start()));
            body.push('\n');
        }
        found.push((
            name.to_string(),
            Block {
                doc,
                line: i + 1,
                text: body,
            },
        ));
    }
    found
}

/// The repository root, where the docs are: this package's directory or the
/// nearest one above it that holds GUIDE.md (so the test reads the same
/// docs from whichever package of the workspace runs it).
fn root() -> PathBuf {
    let mut dir = support::repo();
    while !dir.join("GUIDE.md").is_file() {
        assert!(
            dir.pop(),
            "no GUIDE.md in {} or above",
            support::repo().display()
        );
    }
    dir
}

fn read_doc(doc: &str) -> String {
    std::fs::read_to_string(root().join(doc)).unwrap_or_else(|e| panic!("{doc} is readable: {e}"))
}

fn all_blocks(kind: &str) -> Vec<(String, Block)> {
    DOCS.iter()
        .flat_map(|doc| blocks(doc, &read_doc(doc), kind))
        .collect()
}

/// `solved in 33 ms` -> `solved in N ms`: the one thing that changes from
/// run to run.
fn normalise(text: &str) -> String {
    const MARK: &str = "solved in ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        let (before, after) = rest.split_at(at + MARK.len());
        out.push_str(before);
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && after[digits..].starts_with(" ms") {
            out.push('N');
            rest = &after[digits..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The block without its first line when that line quotes the command, and
/// the command it quotes (continuation lines joined).
fn split_command(block: &str) -> (Option<String>, String) {
    let Some(first) = block.strip_prefix("$ ") else {
        return (None, block.to_string());
    };
    let mut command = String::new();
    let mut lines = first.split_inclusive('\n');
    for line in lines.by_ref() {
        let line = line.trim_end_matches('\n');
        match line.strip_suffix('\\') {
            Some(part) => command.push_str(part),
            None => {
                command.push_str(line);
                break;
            }
        }
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    (Some(words.join(" ")), lines.collect())
}

/// Writes every `<!-- file: NAME -->` block of the docs into `dir`.
fn write_doc_files(dir: &Path) {
    let files = all_blocks("file");
    assert!(
        !files.is_empty(),
        "the README quotes the files of its first own header"
    );
    for (name, block) in files {
        assert!(
            !name.contains('/') && !name.starts_with('.'),
            "{}:{}: a file block names a plain file name, not {name}",
            block.doc,
            block.line
        );
        std::fs::write(dir.join(&name), &block.text).expect("the scratch directory is writable");
    }
}

/// The directory a quote runs in, or why it is skipped.
fn dir_of(quote: &Quote, scratch: &Path) -> Result<PathBuf, String> {
    match quote.dir {
        Dir::Repo => Ok(root()),
        Dir::Scratch => Ok(scratch.to_path_buf()),
        Dir::KernelSources => support::debian_61_headers()
            .map(|(_, common)| common)
            .ok_or_else(|| {
                "Debian's 6.1 kernel headers (linux-headers-amd64) are not installed".into()
            }),
    }
}

/// What the quote's command prints, as its block shows it.
fn output_of(quote: &Quote, dir: &Path, cache: &Path) -> String {
    let build = support::debian_61_headers().map(|(build, _)| build.display().to_string());
    let args: Vec<String> = quote
        .args
        .iter()
        .map(|a| match (a.strip_prefix("$K"), &build) {
            (Some(rest), Some(build)) => format!("{build}{rest}"),
            _ => a.to_string(),
        })
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(dir)
        .env("XDG_CACHE_HOME", cache)
        .args(&args)
        .output()
        .expect("the cachelayout binary runs");
    let (stdout, stderr) = (support::stdout(&out), support::stderr(&out));
    assert_eq!(
        out.status.code(),
        Some(quote.status),
        "quote {}: `cachelayout {}` exits {:?}\nstderr:\n{stderr}",
        quote.name,
        args.join(" "),
        out.status.code()
    );
    match quote.stream {
        Stream::Stdout => stdout,
        Stream::Stderr => stderr,
        Stream::Both => stdout + &stderr,
    }
}

/// `DOCS_QUOTES=overwrite cargo test -p cachelayout-cli --test it
/// docs_quotes::`: pastes the new output into the doc (read the diff
/// before committing it).
fn overwrite(block: &Block, expected: &str, actual: &str) {
    let path = root().join(block.doc);
    let text = std::fs::read_to_string(&path).expect("the doc is readable");
    // Blocks inside list items are indented: try the usual indentations.
    let indent = |t: &str, by: &str| -> String {
        t.split_inclusive('\n')
            .map(|l| {
                if l == "\n" {
                    l.to_string()
                } else {
                    format!("{by}{l}")
                }
            })
            .collect()
    };
    for by in ["    ", "  ", ""] {
        let (old, new) = (indent(expected, by), indent(actual, by));
        if text.matches(&old).count() == 1 {
            std::fs::write(&path, text.replacen(&old, &new, 1)).expect("the doc is writable");
            eprintln!("{}:{}: quote overwritten", block.doc, block.line);
            return;
        }
    }
    panic!(
        "{}:{}: the quote is not found once as written: paste it by hand",
        block.doc, block.line
    );
}

fn check_quote(quote: &Quote, block: &Block, scratch: &Path, cache: &Path) {
    let dir = match dir_of(quote, scratch) {
        Ok(dir) => dir,
        Err(why) => {
            eprintln!("skipping quote {}: {why}", quote.name);
            return;
        }
    };
    let (command, expected) = split_command(&block.text);
    if let Some(command) = command {
        assert_eq!(
            command,
            format!("cachelayout {}", quote.args.join(" ")),
            "{}:{}: quote {} shows another command than the one it quotes",
            block.doc,
            block.line,
            quote.name
        );
    }
    let actual = output_of(quote, &dir, cache);
    if std::env::var("DOCS_QUOTES").is_ok_and(|v| v == "overwrite")
        && normalise(&expected) != normalise(&actual)
    {
        overwrite(block, &expected, &actual);
        return;
    }
    assert_eq!(
        normalise(&expected),
        normalise(&actual),
        "{}:{}: quote {} differs from what the command prints; paste the new output",
        block.doc,
        block.line,
        quote.name
    );
}

#[test]
fn quoted_output_matches_the_commands() {
    let scratch = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    write_doc_files(scratch.path());
    let quoted = all_blocks("quoted");
    for quote in QUOTES {
        let mut blocks = quoted.iter().filter(|(name, _)| name == quote.name);
        let (_, block) = blocks
            .next()
            .unwrap_or_else(|| panic!("no `<!-- quoted: {} -->` block in the docs", quote.name));
        assert!(
            blocks.next().is_none(),
            "quote {} is quoted twice",
            quote.name
        );
        check_quote(quote, block, scratch.path(), cache.path());
    }
}

#[test]
fn every_quoted_block_has_its_command_here() {
    for (name, block) in all_blocks("quoted") {
        let known = QUOTES.iter().any(|q| q.name == name)
            || UI_QUOTES.iter().any(|(n, _)| *n == name)
            || name == REPORT_QUOTE;
        assert!(
            known,
            "{}:{}: `<!-- quoted: {name} -->` has no entry in tests/it/docs_quotes.rs",
            block.doc, block.line
        );
    }
}

// The README's first `optimize`d struct, as it is written there (an
// excerpt the test `excerpts_are_in_their_files` finds in this file).
#[cachelayout::optimize]
pub struct ServerStats {
    pub max_body_bytes: u64,
    pub requests: AtomicU64,
    pub timeout_ms: u32,
}

/// The README's quote of `ServerStats::layout_report()`.
const REPORT_QUOTE: &str = "report-server-stats";

#[test]
fn the_quoted_report_is_the_macros() {
    let quoted = all_blocks("quoted");
    let (_, block) = quoted
        .iter()
        .find(|(n, _)| n == REPORT_QUOTE)
        .unwrap_or_else(|| panic!("no `<!-- quoted: {REPORT_QUOTE} -->` block in the docs"));
    let report = <ServerStats as cachelayout::CacheLayout>::layout_report();
    assert_eq!(
        block.text.trim_end(),
        report.trim_end(),
        "{}:{}: the quoted report differs from layout_report()",
        block.doc,
        block.line
    );
    let stats = ServerStats::new(1 << 20, AtomicU64::new(0), 30_000);
    assert_eq!(stats.max_body_bytes, 1 << 20);
    assert_eq!(stats.timeout_ms, 30_000);
}

/// Compiler errors the docs quote, and the trybuild file that keeps each
/// true (`macro_ui` compares the compiler's output with it). A quote is the
/// file's first errors: the file starts with the block.
const UI_QUOTES: [(&str, &str); 4] = [
    ("ui-derive-conflict", "tests/ui/derive_conflict.stderr"),
    (
        "ui-derive-conflict-guide",
        "tests/ui/derive_conflict.stderr",
    ),
    ("ui-nested-lockless", "tests/ui/nested_lockless.stderr"),
    (
        "ui-generic-breaks-at-definition",
        "tests/ui/generic_breaks_at_definition.stderr",
    ),
];

#[test]
fn quoted_compiler_errors_match_the_ui_tests() {
    let quoted = all_blocks("quoted");
    for (name, path) in UI_QUOTES {
        let (_, block) = quoted
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no `<!-- quoted: {name} -->` block in the docs"));
        let expected = std::fs::read_to_string(root().join(path)).unwrap();
        assert!(
            !block.text.trim().is_empty() && expected.starts_with(&block.text),
            "{}:{}: quote {name} is not how {path} starts:\n{}",
            block.doc,
            block.line,
            block.text
        );
    }
}

#[test]
fn excerpts_are_in_their_files() {
    let excerpts = all_blocks("excerpt-of");
    assert!(!excerpts.is_empty(), "the README quotes a ui test's source");
    for (path, block) in excerpts {
        let source = std::fs::read_to_string(root().join(&path))
            .unwrap_or_else(|e| panic!("{}:{}: {path}: {e}", block.doc, block.line));
        assert!(
            source.contains(&block.text),
            "{}:{}: the block is not an excerpt of {path}",
            block.doc,
            block.line
        );
    }
}

#[test]
fn the_solve_time_is_all_that_is_normalised() {
    assert_eq!(
        normalise("x (solved in 33 ms)\nsolved in 1 ms\n"),
        "x (solved in N ms)\nsolved in N ms\n"
    );
    assert_eq!(normalise("solved in a few ms"), "solved in a few ms");
    assert_ne!(normalise("size 1360 bytes"), normalise("size 1408 bytes"));
}

#[test]
fn a_block_after_a_comment_is_extracted_without_its_indentation() {
    let doc =
        "text\n  <!-- quoted: x -->\n  ```console\n  $ cachelayout a \\\n      b\n  out\n  ```\n";
    let found = blocks("doc", doc, "quoted");
    assert_eq!(found.len(), 1);
    let (name, block) = &found[0];
    assert_eq!(name, "x");
    assert_eq!(block.line, 2);
    let (command, rest) = split_command(&block.text);
    assert_eq!(command.as_deref(), Some("cachelayout a b"));
    assert_eq!(rest, "out\n");
}
