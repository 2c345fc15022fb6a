//! Why a struct the header defines is not in the probe: its definition sits
//! in a conditional group (`#ifdef CONFIG_X`, `#else` of `#if IS_ENABLED(..)`)
//! this configuration leaves out. The header's conditional groups around the
//! definition are read from its text ([`enclosing`]); their conditions are
//! evaluated by the compiler itself, with the probe's flags, after the
//! probe's headers (`-E` of a translation unit on stdin: no file is
//! written), so the answer is the compiler's, not a guess.

use super::compile::Toolchain;
use crate::Diagnostic;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One branch of a conditional group: `#if`, `#ifdef`, `#ifndef`, `#elif`
/// or `#else`, its condition as the preprocessor reads it, its line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Branch {
    directive: String,
    /// As written after the directive (`CONFIG_X`, `IS_ENABLED(CONFIG_Y)`).
    text: String,
    /// As an `#if` expression (`defined(CONFIG_X)`); empty for `#else`.
    expr: String,
    line: usize,
}

/// The branches of one group up to the one that holds the definition.
type Group = Vec<Branch>;

/// The conditional groups around the first line that defines `struct NAME {`
/// (or `union NAME {`), outermost first, without the header's include guard;
/// `None` when the text has no such definition.
fn enclosing(text: &str, name: &str) -> Option<Vec<Group>> {
    let mut stack: Vec<Group> = Vec::new();
    // `#ifndef X` then `#define X` as the first two directives: the guard.
    let mut directives = 0;
    let mut guard_name: Option<String> = None;
    let mut guarded = false;
    for (line, l) in logical_lines(text) {
        let t = l.trim_start();
        if let Some(d) = t.strip_prefix('#') {
            let d = d.trim_start();
            let word: String = d
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let rest = d[word.len()..].trim().to_string();
            directives += 1;
            if directives == 1 && word == "ifndef" {
                guard_name = Some(rest.clone());
            }
            if directives == 2 {
                guarded =
                    word == "define" && guard_name.as_deref() == rest.split_whitespace().next();
            }
            let branch = |expr: String| Branch {
                directive: word.clone(),
                text: rest.clone(),
                expr,
                line,
            };
            match word.as_str() {
                "if" => stack.push(vec![branch(rest.clone())]),
                "ifdef" => stack.push(vec![branch(format!("defined({rest})"))]),
                "ifndef" => stack.push(vec![branch(format!("!defined({rest})"))]),
                "elif" => stack.last_mut()?.push(branch(rest.clone())),
                "elifdef" => stack.last_mut()?.push(branch(format!("defined({rest})"))),
                "elifndef" => stack.last_mut()?.push(branch(format!("!defined({rest})"))),
                "else" => stack.last_mut()?.push(branch(String::new())),
                "endif" => {
                    stack.pop()?;
                }
                _ => {}
            }
            continue;
        }
        if defines(t, name) {
            let is_guard = |g: &Group| {
                g[0].directive == "ifndef" && guard_name.as_deref() == Some(g[0].text.as_str())
            };
            let skip = usize::from(guarded && stack.first().is_some_and(is_guard));
            return Some(stack.into_iter().skip(skip).collect());
        }
    }
    None
}

/// The macro whose body defines `struct NAME {`, and its line.
fn in_a_macro(text: &str, name: &str) -> Option<(String, usize)> {
    logical_lines(text).into_iter().find_map(|(line, l)| {
        let d = l.trim_start().strip_prefix('#')?.trim_start();
        let rest = d.strip_prefix("define")?.trim_start();
        let macro_name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        (!macro_name.is_empty() && defines(rest, name)).then_some((macro_name, line))
    })
}

/// Whether a line defines `struct NAME {` or `union NAME {`.
fn defines(line: &str, name: &str) -> bool {
    let mut tokens: Vec<&str> = Vec::new();
    let mut i = 0;
    let bytes = line.as_bytes();
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            tokens.push(&line[start..i]);
        } else {
            if !c.is_ascii_whitespace() {
                tokens.push(if c == b'{' { "{" } else { "." });
            }
            i += 1;
        }
    }
    tokens
        .windows(3)
        .any(|w| matches!(w[0], "struct" | "union") && w[1] == name && w[2] == "{")
}

/// The lines of `text` with comments removed and continuations joined,
/// each with the number of its first physical line.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start = 1;
    let mut in_comment = false;
    for (i, raw) in text.lines().enumerate() {
        if cur.is_empty() {
            start = i + 1;
        }
        let mut line = String::new();
        let mut rest = raw;
        loop {
            if in_comment {
                match rest.find("*/") {
                    Some(p) => {
                        rest = &rest[p + 2..];
                        in_comment = false;
                        line.push(' ');
                    }
                    None => break,
                }
            } else {
                let block = rest.find("/*");
                let single = rest.find("//");
                match (block, single) {
                    (Some(b), s) if s.is_none_or(|s| b < s) => {
                        line.push_str(&rest[..b]);
                        rest = &rest[b + 2..];
                        in_comment = true;
                    }
                    (_, Some(s)) => {
                        line.push_str(&rest[..s]);
                        break;
                    }
                    _ => {
                        line.push_str(rest);
                        break;
                    }
                }
            }
        }
        match line.trim_end().strip_suffix('\\') {
            Some(joined) => cur.push_str(joined),
            None => {
                cur.push_str(&line);
                out.push((start, std::mem::take(&mut cur)));
            }
        }
    }
    if !cur.is_empty() {
        out.push((start, cur));
    }
    out
}

/// Why `struct NAME` of `header` is not in the probe of `probed` (the
/// prelude and the header, absolute), as one located error; `None` when its
/// definition is not in a group this configuration leaves out.
pub fn explain_missing(
    tc: &Toolchain,
    probed: &[PathBuf],
    header: &Path,
    shown: &Path,
    name: &str,
    config: Option<&Path>,
) -> Option<Diagnostic> {
    let text = super::read_text(header)?;
    let Some(groups) = enclosing(&text, name) else {
        return in_a_macro(&text, name).map(|(m, line)| {
            Diagnostic::new(format!(
                "struct {name} is written by the macro `{m}`, not defined by the header itself"
            ))
            .in_file(shown)
            .at(line, 1)
            .help(format!(
                "the files that expand `{m}` define the struct: lay out one of theirs"
            ))
        });
    };
    if groups.is_empty() {
        return None;
    }
    let values = evaluate(tc, probed, &groups)?;
    // The outermost group whose branch is not taken.
    let (_, group) = groups.iter().enumerate().find(|(g, group)| {
        let last = group.len() - 1;
        let earlier_false = (0..last).all(|b| values.get(&(*g, b)) == Some(&false));
        let this_true = group[last].expr.is_empty() || values.get(&(*g, last)) == Some(&true);
        !(earlier_false && this_true)
    })?;
    let branch = group.last()?;
    let opening = &group[0];
    let under = if branch.directive == "else" {
        format!(
            "in the `#else` (line {}) of `#{} {}`",
            branch.line, opening.directive, opening.text
        )
    } else {
        format!("under `#{} {}`", branch.directive, branch.text)
    };
    let at = if branch.directive == "else" {
        opening.line
    } else {
        branch.line
    };
    let options = options_in(group);
    let set = config.map(set_options).unwrap_or_default();
    let why = match config {
        Some(_) if !options.is_empty() => {
            let said: Vec<String> = options
                .iter()
                .map(|o| {
                    let on = set.contains(o.as_str());
                    format!("{o} is {}", if on { "set" } else { "not set" })
                })
                .collect();
            format!("{} in this .config", said.join(", "))
        }
        Some(_) => "the condition is false with this .config".to_string(),
        None => "the condition is false with these flags".to_string(),
    };
    let help = match (config, options.first()) {
        (Some(_), Some(o)) => format!(
            "this build has no struct {name}: {} {o} in the tree's .config (and `make modules_prepare`) to lay it out",
            if set.contains(o.as_str()) { "unset" } else { "set" }
        ),
        _ => format!(
            "this build has no struct {name}: lay out a struct the configuration compiles"
        ),
    };
    Some(
        Diagnostic::new(format!(
            "struct {name} is defined {under}, which this configuration leaves out: {why}"
        ))
        .in_file(shown)
        .at(at, 1)
        .help(help),
    )
}

/// The `CONFIG_*` options a group's conditions name, in order, once each.
fn options_in(group: &[Branch]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for b in group {
        for w in b
            .text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        {
            if w.starts_with("CONFIG_") && !out.iter().any(|o| o == w) {
                out.push(w.to_string());
            }
        }
    }
    out
}

/// The options a `.config` sets (`CONFIG_X=y`, `=m`, or a value).
fn set_options(config: &Path) -> HashSet<String> {
    super::read_text(config)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim().to_string()))
        .collect()
}

/// Each branch condition's value after the probed headers, by (group,
/// branch), as `cc -E` computes it; `None` when the compiler fails.
fn evaluate(
    tc: &Toolchain,
    probed: &[PathBuf],
    groups: &[Group],
) -> Option<std::collections::HashMap<(usize, usize), bool>> {
    let mut src = String::new();
    for h in probed {
        src.push_str(&super::compile::include_line(h).ok()?);
    }
    for (g, group) in groups.iter().enumerate() {
        for (b, branch) in group.iter().enumerate() {
            if branch.expr.is_empty() {
                continue;
            }
            src.push_str(&format!(
                "#if {}\ncachelayout_condition_{g}_{b}_1\n#else\ncachelayout_condition_{g}_{b}_0\n#endif\n",
                branch.expr
            ));
        }
    }
    let mut c = Command::new(&tc.compiler[0]);
    c.args(&tc.compiler[1..])
        .args(&tc.flags)
        .args(["-w", "-E", "-P", "-x", "c", "-"])
        .current_dir(&tc.directory)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = c.spawn().ok()?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take()?;
        // The compiler reads all of stdin before it writes much: no deadlock.
        stdin.write_all(src.as_bytes()).ok()?;
    }
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut values = std::collections::HashMap::new();
    for w in text.split_whitespace() {
        if let Some(rest) = w.strip_prefix("cachelayout_condition_") {
            let mut it = rest.split('_').map(|n| n.parse::<usize>().ok());
            if let (Some(Some(g)), Some(Some(b)), Some(Some(v))) = (it.next(), it.next(), it.next())
            {
                values.insert((g, b), v == 1);
            }
        }
    }
    Some(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_groups_around_a_definition_without_the_include_guard() {
        let text = "/* x */\n#ifndef _X_H\n#define _X_H\n#include <a.h>\n\
#ifdef CONFIG_A\nstruct a { int x; };\n#endif\n\
#if IS_ENABLED(CONFIG_B) && \\\n    defined(CONFIG_C) /* two lines */\n#else\n#ifndef CONFIG_D\nstruct b {\n\tint y;\n};\n#endif\n#endif\n#endif\n";
        let a = enclosing(text, "a").unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0][0].expr, "defined(CONFIG_A)");
        assert_eq!(a[0][0].line, 5);
        let b = enclosing(text, "b").unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].len(), 2);
        assert_eq!(
            b[0][0].text,
            "IS_ENABLED(CONFIG_B) &&     defined(CONFIG_C)"
        );
        assert_eq!(b[0][1].directive, "else");
        assert_eq!(b[0][1].line, 10);
        assert_eq!(b[1][0].expr, "!defined(CONFIG_D)");
        assert_eq!(options_in(&b[0]), ["CONFIG_B", "CONFIG_C"]);
        assert!(enclosing(text, "c").is_none());
    }

    #[test]
    fn a_struct_a_macro_writes_is_found_in_the_macro() {
        let text = "#define MAKE(s_name, f) \\\n\tstruct s_name { f };\n#define X 1\n";
        assert!(enclosing(text, "s_name").is_none());
        assert_eq!(in_a_macro(text, "s_name"), Some(("MAKE".to_string(), 1)));
        assert_eq!(in_a_macro(text, "other"), None);
    }

    #[test]
    fn a_header_without_a_guard_keeps_its_first_group() {
        let text = "#ifndef CONFIG_A\nstruct a {\n};\n#endif\n";
        let a = enclosing(text, "a").unwrap();
        assert_eq!(a.len(), 1);
    }
}
