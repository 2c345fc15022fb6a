//! Writing a probe translation unit that includes the headers, compiling it
//! to an object with DWARF (every type kept, used or not), listing the
//! macros it defines, and turning a failed compile into one located error.

use crate::Diagnostic;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The compiler command (its words) and the flags, run in `directory`.
#[derive(Debug, Clone)]
pub struct Toolchain {
    pub compiler: Vec<String>,
    pub flags: Vec<String>,
    pub directory: PathBuf,
    /// Lines the probe starts with, before the headers (options flipped
    /// for another configuration); empty by default.
    pub prologue: String,
}

/// File names inside a probe directory.
pub const SOURCE: &str = "probe.c";
pub const OBJECT: &str = "probe.o";
pub const MACROS: &str = "probe.macros";
pub const DEPS: &str = "probe.d";
/// The compiler's `-v` account of the macro listing: its include search list.
pub const SEARCH: &str = "probe.search";

/// Flags after the tree's own: DWARF for every type (not only the used
/// ones), uncompressed, not LTO bytecode; and no warnings.
const PROBE_FLAGS: [&str; 5] = [
    "-g",
    "-fno-eliminate-unused-debug-types",
    "-gz=none",
    "-fno-lto",
    "-w",
];

impl Toolchain {
    fn command(&self) -> Command {
        let mut c = self.command_bare();
        c.args(&self.flags);
        c
    }

    /// What identifies the compiler: its `--version` text.
    pub fn identity(&self) -> Result<String, Diagnostic> {
        let out = self
            .command_bare()
            .arg("--version")
            .output()
            .map_err(|e| self.cannot_run(e))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The compiler alone. gcc writes a dependency file wherever these two
    /// variables say: the probe's own (`-MD`) is the only one it writes.
    fn command_bare(&self) -> Command {
        let mut c = Command::new(&self.compiler[0]);
        c.args(&self.compiler[1..])
            .current_dir(&self.directory)
            .env_remove("DEPENDENCIES_OUTPUT")
            .env_remove("SUNPRO_DEPENDENCIES")
            .stdin(Stdio::null());
        c
    }

    /// `cc -print-file-name=include`: the compiler's own headers
    /// (stddef.h, stdarg.h), which Kbuild adds after -nostdinc.
    pub fn own_include_dir(&self) -> Option<PathBuf> {
        let out = self
            .command_bare()
            .arg("-print-file-name=include")
            .output()
            .ok()?;
        let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        (out.status.success() && p.is_absolute() && p.is_dir()).then_some(p)
    }

    fn cannot_run(&self, e: std::io::Error) -> Diagnostic {
        Diagnostic::new(format!(
            "cannot run the compiler `{}`: {e}",
            self.compiler[0]
        ))
        .help("install gcc (or clang), or name the compiler with --cc 'CMD ...'")
    }

    /// Compiles a probe of `headers` in `dir`: the object, its dependency
    /// list and its macros. The two compiler runs go in parallel.
    pub fn compile(&self, headers: &[PathBuf], dir: &Path) -> Result<(), Failed> {
        let source = dir.join(SOURCE);
        let text = probe_source(&self.prologue, headers)?;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&source)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .map_err(|e| {
                Failed::from(
                    Diagnostic::new(format!("cannot write the probe: {e}")).in_file(&source),
                )
            })?;
        let mut object = self.command();
        object
            .args(PROBE_FLAGS)
            .arg("-c")
            .arg(&source)
            .arg("-o")
            .arg(dir.join(OBJECT))
            .arg("-MD")
            .arg("-MF")
            .arg(dir.join(DEPS));
        let mut macros = self.command();
        macros
            .args(["-w", "-E", "-dM", "-v"])
            .arg(&source)
            .arg("-o")
            .arg(dir.join(MACROS));
        let run = |mut c: Command| -> Result<std::process::Child, Diagnostic> {
            c.stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| self.cannot_run(e))
        };
        let object = run(object)?;
        let macros = run(macros)?;
        let object = object.wait_with_output().map_err(|e| self.cannot_run(e))?;
        let macros = macros.wait_with_output().map_err(|e| self.cannot_run(e))?;
        let search = macros.stderr.clone();
        for out in [object, macros] {
            if !out.status.success() {
                let text = String::from_utf8_lossy(&out.stderr);
                return Err(Failed {
                    diagnostic: first_error(&text, headers, &source, &self.compiler[0]),
                    header: failing_header(
                        &text,
                        &source,
                        headers.len(),
                        self.prologue.lines().count(),
                    ),
                });
            }
        }
        std::fs::write(dir.join(SEARCH), search).map_err(|e| {
            Failed::from(Diagnostic::new(format!(
                "cannot write the probe's search list: {e}"
            )))
        })?;
        Ok(())
    }
}

/// A probe that did not compile: the compiler's first error, and which of
/// the probed headers (an index) it came from, when the compiler said.
#[derive(Debug)]
pub struct Failed {
    pub diagnostic: Diagnostic,
    pub header: Option<usize>,
}

impl From<Diagnostic> for Failed {
    fn from(diagnostic: Diagnostic) -> Self {
        Failed {
            diagnostic,
            header: None,
        }
    }
}

/// The probed header the first error came from: the probe's line that the
/// include chain starts at (line 2, after the prologue, includes the first
/// header).
fn failing_header(stderr: &str, probe: &Path, count: usize, prologue: usize) -> Option<usize> {
    let probe = probe.display().to_string();
    for line in stderr.lines() {
        let l = line
            .trim_start_matches("In file included from")
            .trim_start();
        let l = l.strip_prefix("from ").unwrap_or(l).trim();
        if let Some(rest) = l.strip_prefix(&probe) {
            let n: usize = rest
                .trim_start_matches(':')
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()?;
            return n.checked_sub(2 + prologue).filter(|&i| i < count);
        }
        if line.contains(": error: ") || line.contains(": fatal error: ") {
            return None;
        }
    }
    None
}

/// `#include "/abs/header.h"` for each header, after the prologue.
fn probe_source(prologue: &str, headers: &[PathBuf]) -> Result<String, Diagnostic> {
    let mut s = String::from("/* cachelayout probe: the types of these headers */\n");
    s.push_str(prologue);
    for h in headers {
        s.push_str(&include_line(h)?);
    }
    Ok(s)
}

/// The line `#include "PATH"` for the header at `h` (absolute). A header
/// name has no escapes in C: a path with a `"` is written `<...>` instead,
/// and a path that neither form can hold (both `"` and `>`, or a line
/// break) is refused.
pub fn include_line(h: &Path) -> Result<String, Diagnostic> {
    let Some(path) = h.to_str().filter(|p| !p.contains(['\n', '\r'])) else {
        return Err(Diagnostic::new(
            "the header's path cannot be written in an #include (it has a line break or is not UTF-8)",
        )
        .in_file(h)
        .help("copy or link the header to a plain path"));
    };
    if !path.contains('"') {
        Ok(format!("#include \"{path}\"\n"))
    } else if !path.contains('>') {
        Ok(format!("#include <{path}>\n"))
    } else {
        Err(
            Diagnostic::new("the header's path has both `\"` and `>`: no #include can name it")
                .in_file(h)
                .help("copy or link the header to a path without them"),
        )
    }
}

/// The compiler's first error, at the place it names, with the line of the
/// probed header that led there when the error is in a header it includes.
fn first_error(text: &str, headers: &[PathBuf], probe: &Path, cc: &str) -> Diagnostic {
    let lines: Vec<&str> = text.lines().collect();
    let Some(at) = lines
        .iter()
        .position(|l| l.contains(": error: ") || l.contains(": fatal error: "))
    else {
        let last = lines.iter().rev().find(|l| !l.trim().is_empty());
        return Diagnostic::new(format!(
            "the compiler `{cc}` failed on the probe: {}",
            trim(last.copied().unwrap_or("no message"))
        ))
        .help("check the compiler and the flags (--kbuild, --compile-commands, --cc)");
    };
    let line = lines[at];
    let (place, message) = match line
        .find(": fatal error: ")
        .or_else(|| line.find(": error: "))
    {
        Some(i) => {
            let rest = &line[i + 2..];
            (&line[..i], rest.split_once(": ").map_or(rest, |(_, m)| m))
        }
        None => ("", line),
    };
    let (file, line_no, col) = split_place(place);
    let file = PathBuf::from(file);
    // The include chain printed above the error: the frame in a probed header.
    let chain = lines[..at]
        .iter()
        .rev()
        .take_while(|l| {
            l.starts_with("In file included from") || l.starts_with("                 from")
        })
        .filter_map(|l| {
            let l = l
                .trim_start_matches("In file included from")
                .trim_start()
                .trim_start_matches("from")
                .trim()
                .trim_end_matches([',', ':']);
            let (f, n, _) = split_place(l);
            headers
                .iter()
                .any(|h| Path::new(f) == h)
                .then(|| format!("{f}:{n}"))
        })
        .next();
    let in_probe = file == probe;
    let mut d = Diagnostic::new(format!("the compiler `{cc}` failed: {}", trim(message)));
    if in_probe {
        // The probe's own line: the header itself is missing or unreadable.
        if let Some(h) = headers.get(line_no.saturating_sub(2)) {
            d = d.in_file(h);
        }
    } else {
        d = d.in_file(&file).at(line_no, col);
    }
    let help = match chain {
        Some(from) if !headers.contains(&file) => format!(
            "in a header included from {from}; the header must compile with the tree's flags \
(check --kbuild, --compile-commands or --cc)"
        ),
        _ => "the header must compile with the tree's flags (check --kbuild, --compile-commands or --cc)"
            .to_string(),
    };
    d.help(help)
}

/// `file:line:col` (line and column optional).
fn split_place(place: &str) -> (&str, usize, usize) {
    let num = |s: &str| s.parse::<usize>().ok();
    if let Some((rest, last)) = place.rsplit_once(':') {
        if let Some(last) = num(last) {
            if let Some((file, line)) = rest.rsplit_once(':') {
                if let Some(line) = num(line) {
                    return (file, line, last);
                }
            }
            return (rest, last, 0);
        }
    }
    (place, 0, 0)
}

/// One line, at most 200 characters.
fn trim(message: &str) -> String {
    let m = message.trim();
    if m.chars().count() <= 200 {
        m.to_string()
    } else {
        let cut: String = m.chars().take(197).collect();
        format!("{cut}...")
    }
}

/// The name of every macro in `-dM` output (`NAME` of `#define NAME(x) ...`).
pub fn macro_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("#define "))
        .map(|rest| {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            rest[..end].to_string()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// The object-like macros of `-dM` output defined as nothing (`#define
/// SPLIT_RSS_COUNTING`): flags a header tests with `#ifdef`.
pub fn flag_macros(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .lines()
        .filter_map(|line| line.strip_prefix("#define "))
        .filter_map(|rest| {
            let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
            let ok = !name.is_empty()
                && value.trim().is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            ok.then(|| name.to_string())
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The object-like macros of `-dM` output whose value is an integer
/// (directly or through other such macros): what the header's own parser
/// needs for array sizes and conditions.
pub fn integer_macros(text: &str) -> Vec<(String, i64)> {
    let mut raw: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("#define ") else {
            continue;
        };
        let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
        if name.contains('(') || value.trim().is_empty() {
            continue;
        }
        raw.insert(name, value.trim());
    }
    let mut out: Vec<(String, i64)> = raw
        .keys()
        .filter_map(|&name| resolve(&raw, name, 0).map(|v| (name.to_string(), v)))
        .collect();
    out.sort();
    out
}

fn resolve(raw: &std::collections::HashMap<&str, &str>, name: &str, depth: u32) -> Option<i64> {
    let v = raw.get(name)?;
    let (neg, body) = strip_int_wrappers(v);
    let value = match parse_int_literal(body) {
        Some(x) => x,
        None if depth < 8 && is_ident(body) => resolve(raw, body, depth + 1)?,
        None => return None,
    };
    Some(if neg { value.checked_neg()? } else { value })
}

/// `(x)`, `-x`, `(-x)`.
fn strip_int_wrappers(v: &str) -> (bool, &str) {
    let mut s = v.trim();
    let mut neg = false;
    loop {
        if let Some(inner) = s.strip_prefix('(').and_then(|x| x.strip_suffix(')')) {
            s = inner.trim();
        } else if let Some(inner) = s.strip_prefix('-') {
            if neg {
                return (neg, v);
            }
            neg = true;
            s = inner.trim();
        } else {
            return (neg, s);
        }
    }
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// `123`, `0x7f`, `010`, with `u`/`l` suffixes.
fn parse_int_literal(s: &str) -> Option<i64> {
    let body = s.trim_end_matches(['u', 'U', 'l', 'L']);
    if body.is_empty() || !body.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        u64::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse::<u64>().ok()?
    };
    i64::try_from(v).ok()
}

/// The files a `-MD` dependency list names (after the target), with make's
/// escapes undone: `\ ` is a space, `\#` a `#`, `\:` a `:` and `$$` a `$`
/// in a file's name.
pub fn dependencies(text: &str) -> Vec<String> {
    let joined = text.replace("\\\n", " ");
    let mut out = Vec::new();
    let mut word = String::new();
    let mut after_target = false;
    let mut chars = joined.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some(' ' | '#' | ':' | '\\')) => {
                word.extend(chars.next());
            }
            '$' if chars.peek() == Some(&'$') => {
                chars.next();
                word.push('$');
            }
            // The rule's colon: a colon followed by a space or the end.
            ':' if !after_target && matches!(chars.peek(), None | Some(' ' | '\t' | '\n')) => {
                after_target = true;
                word.clear();
            }
            '\n' if after_target => break,
            c if c.is_whitespace() => {
                if after_target && !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                word.clear();
            }
            c => word.push(c),
        }
    }
    if after_target && !word.is_empty() {
        out.push(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_macros_follow_aliases_and_skip_the_rest() {
        let text =
            "#define A 5\n#define B A\n#define C (-(0x10UL))\n#define D __attribute__((x))\n\
#define E(x) x\n#define F\n#define G 010\n#define H B\n";
        let m = integer_macros(text);
        let get = |n: &str| m.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert_eq!(get("A"), Some(5));
        assert_eq!(get("B"), Some(5));
        assert_eq!(get("H"), Some(5));
        assert_eq!(get("C"), Some(-16));
        assert_eq!(get("G"), Some(8));
        assert_eq!(get("D"), None);
        assert_eq!(get("E"), None);
        assert_eq!(get("F"), None);
        assert_eq!(flag_macros(text), ["F"]);
    }

    #[test]
    fn dependencies_of_a_make_rule() {
        let d = "probe.o: /t/probe.c /a/x.h \\\n /a/my\\ dir/y.h\n";
        assert_eq!(dependencies(d), ["/t/probe.c", "/a/x.h", "/a/my dir/y.h"]);
        // make's escapes: `$$` is a `$`, `\#` a `#`, `\:` a `:`.
        let d = "/w/probe.o: /w/probe.c /a/x$$y\\#z/h.h \\\n /b/c\\:d.h\n";
        assert_eq!(dependencies(d), ["/w/probe.c", "/a/x$y#z/h.h", "/b/c:d.h"]);
    }

    #[test]
    fn the_first_error_is_located_in_the_header_that_failed() {
        let h = PathBuf::from("/src/include/linux/foo.h");
        let stderr = "In file included from /src/include/linux/foo.h:7,\n                 from /tmp/p/probe.c:2:\n\
/src/include/linux/bar.h:12:3: error: unknown type name 'baz'\n   12 |   baz x;\n/src/x.h:1:1: error: second\n";
        let probe = Path::new("/tmp/p/probe.c");
        let d = first_error(stderr, std::slice::from_ref(&h), probe, "gcc");
        assert_eq!(failing_header(stderr, probe, 1, 0), Some(0));
        assert_eq!(failing_header(stderr, probe, 0, 0), None);
        let s = d.to_string();
        assert!(s.starts_with("/src/include/linux/bar.h:12:3: error: the compiler `gcc` failed: unknown type name 'baz'"), "{s}");
        assert!(
            s.contains("included from /src/include/linux/foo.h:7"),
            "{s}"
        );
        assert!(!s.contains("second"), "{s}");
    }
}
