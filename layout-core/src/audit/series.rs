//! `audit --series`: the top findings as a `git format-patch` series. The
//! patches themselves are `propose --format patch` mails; this module
//! numbers them, adds what the audit found to each changelog, and writes
//! the cover letter with the ranked table.

use super::finding::{PathSpread, Status};
use super::report::{ranked_table, Finding};
use crate::emit::{rfc2822, Author};
use std::fmt::Write as _;

/// The file name of patch `i` (1-based; 0 is the cover letter), as
/// `git format-patch` names them: `0001-mm-reorder-struct-page_counter.patch`.
pub fn file_name(i: usize, subject: &str) -> String {
    let mut slug = String::new();
    for c in subject.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug: String = slug.trim_matches('-').chars().take(52).collect();
    format!("{i:04}-{}.patch", slug.trim_end_matches('-'))
}

/// The subject line of a `git format-patch` mail (`Subject: [PATCH] ...`).
pub fn subject_of(mail: &str) -> Option<&str> {
    mail.lines()
        .find_map(|l| l.strip_prefix("Subject: [PATCH] "))
}

/// The mail numbered `i` of `n` (`[PATCH i/n]`), with `note` added at the
/// end of its changelog (before `Signed-off-by:` and the `---` line).
pub fn number(mail: &str, i: usize, n: usize, note: &str) -> String {
    let numbered = mail.replacen(
        "Subject: [PATCH] ",
        &format!("Subject: [PATCH {i}/{n}] "),
        1,
    );
    let Some(end) = numbered.find("\n---\n") else {
        return numbered;
    };
    let at = numbered[..end].rfind("\n\nSigned-off-by:").unwrap_or(end);
    // The headers as they are; the changelog's lines within checkpatch's width.
    let body_start = numbered.find("\n\n").map_or(0, |i| i + 2).min(at);
    let mut out = String::with_capacity(numbered.len() + note.len() + 2);
    out.push_str(&numbered[..body_start]);
    out.push_str(wrap(&numbered[body_start..at], 75).trim_end_matches('\n'));
    out.push_str("\n\n");
    // A line that is only `---` would end the message for git am.
    for line in note.trim_end().lines() {
        if line.trim_end() == "---" {
            out.push_str("--\n");
        } else {
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out.pop();
    out.push_str(&numbered[at..]);
    out
}

/// What the audit adds to a patch's changelog: the conflicts with their
/// evidence and the tree-safety note.
pub fn changelog_note(f: &Finding, safety: &str) -> String {
    let mut o = String::new();
    if !f.conflicts.is_empty() {
        let _ = writeln!(
            o,
            "Found by cachelayout audit (exposure {}: hot writing functions times hot reading functions, summed over the lines):",
            f.exposure
        );
    }
    for c in &f.conflicts {
        let writers: Vec<String> = c.writers.iter().map(|p| run_name(&p.member)).collect();
        let victims: Vec<String> = c.victims.iter().map(|p| run_name(&p.member)).collect();
        let _ = writeln!(
            o,
            "- line {}: {} written without a lock, next to read-mostly {}",
            c.line,
            writers.join(", "),
            victims.join(", ")
        );
        for p in c.writers.iter().chain(&c.victims).take(4) {
            if let Some(e) = p.evidence.first() {
                let _ = writeln!(o, "  {}: {e}", run_name(&p.member));
            }
        }
    }
    let spread: Vec<&PathSpread> = f.paths.iter().filter(|p| p.excess() > 0).collect();
    if !spread.is_empty() {
        let _ = writeln!(
            o,
            "{} cachelayout audit, the struct at the start of a line: the hot paths touch {} line(s) more than their bytes need:",
            if f.conflicts.is_empty() { "Found by" } else { "Also found by" },
            f.excess_lines
        );
        for p in spread {
            let _ = writeln!(
                o,
                "- {}: {} lines for {} bytes in {} members (fewest {})",
                p.root, p.lines, p.bytes, p.members, p.fewest
            );
        }
    }
    if let Some(r) = &f.reading {
        let _ = writeln!(
            o,
            "The sources left some members undecided; this patch takes one reading of them: {r}."
        );
    }
    if f.embedder_count > 0 {
        let _ = writeln!(
            o,
            "Embedded by value in {} struct(s): {}.",
            f.embedder_count,
            f.embedders.join(", ")
        );
    }
    o.push('\n');
    o.push_str(safety);
    wrap(&o, WIDTH)
}

/// A member as a changelog names it: a bit-field run (`a:b:c`, one word
/// too long to wrap) by its first bit-field and how many follow.
fn run_name(member: &str) -> String {
    match member.split_once(':') {
        Some((first, rest)) => format!("{first} (+{} bit-fields)", rest.split(':').count()),
        None => member.to_string(),
    }
}

/// Widest changelog line (checkpatch warns past 75).
const WIDTH: usize = 72;

/// `text` with every line longer than `width` broken at spaces (the
/// others as they are); the continuation lines are indented two more than
/// the line they continue.
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for line in text.lines() {
        if line.chars().count() <= width {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let mut current = " ".repeat(indent);
        let mut empty = true;
        for word in line.split_whitespace() {
            if !empty && current.len() + 1 + word.len() > width {
                out.push_str(&current);
                out.push('\n');
                current = " ".repeat(indent + 2);
                empty = true;
            }
            if !empty {
                current.push(' ');
            }
            current.push_str(word);
            empty = false;
        }
        out.push_str(current.trim_end());
        out.push('\n');
    }
    out
}

/// The cover letter (`0000-cover-letter.patch`) of the series of `findings`, in order.
/// `refused` names the structs with a conflict that gave no patch, and why
/// (a tree-safety refusal, nothing to move).
pub fn cover_letter(
    author: &Author,
    findings: &[Finding],
    ambiguous: &[Finding],
    refused: &[(String, String)],
) -> String {
    let n = findings.len();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
    );
    let _ = writeln!(o, "From: {} <{}>", author.name, author.email);
    let _ = writeln!(o, "Date: {}", rfc2822(author.time, author.tz_minutes));
    let shared = findings
        .iter()
        .filter(|f| f.status == Status::Conflict)
        .count();
    let subject = if shared == n {
        format!("Keep lockless writes off read-mostly cache lines in {n} struct(s)")
    } else if shared == 0 {
        format!("Pack the fast paths of {n} struct(s) on fewer cache lines")
    } else {
        format!("Cache-line layout of {n} structs: false sharing and spread fast paths")
    };
    let _ = writeln!(o, "Subject: [PATCH 0/{n}] {subject}");
    o.push('\n');
    let _ = writeln!(
        o,
        "cachelayout audit ranked the structs of the audited headers by the cache\n\
lines their fast paths fetch that a better order would not, from the\n\
accesses in the audited sources (hot: the functions the hot roots reach):\n\
a line where a lockless write meets members the fast paths only read\n\
moves once per hot root that touches it; a hot path whose members are\n\
spread costs its lines past the fewest its bytes need. Each patch moves\n\
the members of one struct, checked in every configuration its #if lines\n\
select; the changelogs give the sites."
    );
    o.push('\n');
    let _ = writeln!(o, "{}", super::cost::WEIGHTS.legend());
    o.push_str(&ranked_table(findings));
    if !ambiguous.is_empty() {
        let names: Vec<&str> = ambiguous.iter().map(|f| f.name.as_str()).collect();
        let _ = writeln!(
            o,
            "\nNot in this series, their classes undecided (a profile would settle them): {}",
            names.join(", ")
        );
    }
    for (name, why) in refused {
        let _ = writeln!(o, "\nNot in this series, struct {name}: {why}");
    }
    o.push_str("\n-- \ncachelayout\n\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_with_the_note_before_the_signoff() {
        let mail = "From 0 Mon\nSubject: [PATCH] mm: reorder struct x\n\nBody.\n\nSigned-off-by: A <a@b>\n---\n a | 1 +\n";
        let out = number(mail, 2, 3, "Found.\n---\nmore");
        assert!(
            out.contains("Subject: [PATCH 2/3] mm: reorder struct x\n"),
            "{out}"
        );
        assert!(
            out.contains("Body.\n\nFound.\n--\nmore\n\nSigned-off-by: A <a@b>\n---\n"),
            "{out}"
        );
        assert_eq!(
            file_name(1, "mm: reorder struct page_counter"),
            "0001-mm-reorder-struct-page_counter.patch"
        );
    }

    #[test]
    fn bit_field_runs_are_named_by_their_first() {
        assert_eq!(run_name("a:b:c"), "a (+2 bit-fields)");
        assert_eq!(run_name("a"), "a");
    }
}
