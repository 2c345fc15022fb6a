//! Every configuration, not one: a member under `#ifdef CONFIG_X` exists in
//! some kernels only, and the offsets of everything after it shift. A
//! proposal solved in one configuration is checked in each configuration
//! that changes the struct: the one it was read in, and each option that
//! gates a member flipped. This module finds those options in the struct's
//! text, carries the classes over to the struct as another configuration
//! lays it out, and reports size and hard conflicts per configuration; the
//! command line compiles each configuration (`--check-configs`).

use crate::layout::{self, Layout};
use crate::model::Struct;
use crate::source::StructSource;
use serde::Serialize;

/// The configuration options the struct's `#if` lines test, in the order
/// they first appear (`#ifdef CONFIG_X`, `#if defined(CONFIG_X) &&
/// IS_ENABLED(CONFIG_Y)`, `#elif ...`).
pub fn options_in_body(source: &StructSource) -> Vec<String> {
    let body = &source.text[source.body.clone()];
    let mut out: Vec<String> = Vec::new();
    for line in body.lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let rest = rest.trim_start();
        let directive = ["ifdef", "ifndef", "if", "elif"]
            .iter()
            .any(|d| rest.starts_with(d));
        if !directive {
            continue;
        }
        for word in rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if word.starts_with("CONFIG_")
                && word.len() > "CONFIG_".len()
                && !out.iter().any(|o| o == word)
            {
                out.push(word.to_string());
            }
        }
    }
    out
}

/// Gives each member of `other` (the struct in another configuration) the
/// class of the member of that name in `base`; members `base` lacks (only
/// this configuration has them) keep the class they have (by their type).
pub fn carry_classes(base: &Struct, other: &mut Struct) {
    for f in &mut other.fields {
        if let Some(b) = base.fields.iter().find(|b| b.name == f.name) {
            f.access = b.access.clone();
            f.lock_word = b.lock_word;
        }
    }
}

/// The struct as one configuration lays it out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Outcome {
    /// Laid out: its size and the members of each hard conflict.
    Laid { size: u64, conflicts: Vec<String> },
    /// This configuration has no such struct.
    Absent,
    /// The configuration does not compile, or could not be read: why.
    Failed { why: String },
}

impl Outcome {
    /// The struct `s` laid out as `l`.
    pub fn of(s: &Struct, l: &Layout) -> Outcome {
        let conflicts = layout::reported_conflicts(s, l)
            .iter()
            .map(|c| {
                let others = c.read_mostly.iter().chain(&c.other_group);
                format!(
                    "line {}: {} with {}",
                    c.line,
                    c.lockless.join(", "),
                    others.cloned().collect::<Vec<_>>().join(", ")
                )
            })
            .collect();
        Outcome::Laid {
            size: l.size,
            conflicts,
        }
    }

    fn text(&self) -> String {
        match self {
            Outcome::Laid { size, conflicts } => {
                format!("{size} B, {} conflict(s)", conflicts.len())
            }
            Outcome::Absent => "no such struct".into(),
            Outcome::Failed { why } => format!("not checked: {why}"),
        }
    }

    /// Whether a hard conflict was found.
    pub fn breaks_the_rule(&self) -> bool {
        matches!(self, Outcome::Laid { conflicts, .. } if !conflicts.is_empty())
    }
}

/// One configuration: the declared layout and the proposal in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConfigCheck {
    /// `the configuration read` or `CONFIG_X=y` / `CONFIG_X=n` (flipped).
    pub configuration: String,
    pub declared: Outcome,
    pub proposed: Outcome,
}

/// The per-configuration report: one line each, then a verdict.
pub fn report(checks: &[ConfigCheck]) -> String {
    let width = checks
        .iter()
        .map(|c| c.configuration.len())
        .max()
        .unwrap_or(0);
    let mut t = format!(
        "configurations checked: {} (the one read, and each option of the struct's #if lines flipped)\n",
        checks.len()
    );
    for c in checks {
        t.push_str(&format!(
            "  {:width$}  declared {:24}  proposed {}\n",
            c.configuration,
            c.declared.text(),
            c.proposed.text()
        ));
    }
    let broken: Vec<&str> = checks
        .iter()
        .filter(|c| c.proposed.breaks_the_rule())
        .map(|c| c.configuration.as_str())
        .collect();
    let unchecked = checks
        .iter()
        .filter(|c| !matches!(c.proposed, Outcome::Laid { .. }))
        .count();
    if broken.is_empty() && unchecked == 0 {
        t.push_str("the proposal keeps the rule in every configuration checked\n");
    } else if broken.is_empty() {
        t.push_str(&format!(
            "the proposal keeps the rule in every configuration that compiled ({unchecked} not checked)\n"
        ));
    } else {
        t.push_str(&format!(
            "the proposal breaks the rule with {}: it is solved for the configuration read only\n",
            broken.join(", ")
        ));
    }
    t
}

/// `text` with a unified diff of the proposal's (one file, hunks in
/// order, `-`/`+`/` ` lines) applied; `None` when a hunk does not match.
pub fn apply_diff(text: &str, diff: &str) -> Option<String> {
    let old: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len());
    let mut at = 0usize;
    let mut lines = diff.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        let Some(header) = line.strip_prefix("@@ -") else {
            continue;
        };
        let start: usize = header.split([',', ' ']).next()?.parse().ok()?;
        // A hunk of `-0,0` inserts after line 0.
        let first = start.saturating_sub(1).max(at);
        while at < first {
            out.push_str(old.get(at)?);
            at += 1;
        }
        while let Some(l) = lines.peek() {
            if l.starts_with("@@") || l.starts_with("--- ") || l.starts_with("diff ") {
                break;
            }
            let l = lines.next()?;
            let same = |want: &str| {
                old.get(at)
                    .is_some_and(|o| o.trim_end_matches('\n') == want.trim_end_matches('\n'))
            };
            match l.as_bytes().first() {
                Some(b' ') => {
                    if !same(&l[1..]) {
                        return None;
                    }
                    out.push_str(old[at]);
                    at += 1;
                }
                Some(b'-') => {
                    if !same(&l[1..]) {
                        return None;
                    }
                    at += 1;
                }
                Some(b'+') => out.push_str(&l[1..]),
                Some(b'\\') => {}
                _ => break,
            }
        }
    }
    while at < old.len() {
        out.push_str(old[at]);
        at += 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_come_from_the_if_lines_of_the_body_in_order() {
        let text = "struct s {\n\tint a;\n#ifdef CONFIG_B\n\tint b;\n#elif defined(CONFIG_C) && IS_ENABLED(CONFIG_B)\n\tint c;\n#endif\n#if MAX_X > 2 /* CONFIG_IN_COMMENT_TOO */\n\tint d;\n#endif\n};\n";
        let body_start = text.find('{').unwrap() + 1;
        let body_end = text.rfind('}').unwrap();
        let src = StructSource {
            path: "x.h".into(),
            text: text.into(),
            definition: 0..body_end + 1,
            body: body_start..body_end,
            members: Vec::new(),
        };
        assert_eq!(
            options_in_body(&src),
            ["CONFIG_B", "CONFIG_C", "CONFIG_IN_COMMENT_TOO"]
        );
    }

    #[test]
    fn a_diff_applies_to_the_text_it_was_made_from() {
        let old = "a\nb\nc\nd\ne\n";
        let new = "a\nc\nb\nd\ne\nf\n";
        let diff = similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .header("a/x", "b/x")
            .to_string();
        assert_eq!(apply_diff(old, &diff).as_deref(), Some(new));
        assert_eq!(apply_diff("a\nX\nc\nd\ne\n", &diff), None);
        assert_eq!(apply_diff(old, ""), Some(old.to_string()));
    }
}
