//! Growth reports as text (ready for a changelog) and as a table.
//!
//! Text, in the words a kernel changelog uses:
//!
//! ```text
//! lruvec 1624 -> 1728 (+104, lrugen moves from offset 176 to 192, plus tail padding to 64)
//! mem_cgroup_per_node 2048 -> 2112 (+64, 40 bytes of padding after lruvec absorb part of the growth)
//!
//! mem_cgroup_per_node: kmalloc-2k -> kmalloc-4k, +2048 bytes per object
//! ```

use super::{Entry, GrowthReport, Part};
use std::fmt::Write as _;

const KMALLOC_NOTE: &str =
    "size classes are those of kmalloc (SLUB, 4 KiB pages) for an object allocated \
alone; a struct that is only ever embedded costs what its embedder's line says";

/// `NAME OLD -> NEW (DELTA, PART, PART, ...)`.
pub(crate) fn line(e: &Entry) -> String {
    let mut out = format!("{} {} -> {} ({:+}", e.name, e.old.size, e.new.size, e.delta);
    let padding_parts = e.parts.iter().filter(|p| adds_padding(p)).count();
    for p in &e.parts {
        out.push_str(", ");
        out.push_str(&part(p, e, padding_parts));
    }
    out.push(')');
    out
}

fn adds_padding(p: &Part) -> bool {
    matches!(
        p,
        Part::Moves { .. } | Part::Hole { .. } | Part::PaddingGrows { .. } | Part::TailGrows { .. }
    )
}

fn part(p: &Part, e: &Entry, padding_parts: usize) -> String {
    let growing = e.padding.member_growth > 0 || e.delta > 0;
    match p {
        Part::Embedded { members, bytes } => {
            let verb = if members.len() == 1 { "grows" } else { "grow" };
            let verb = if *bytes < 0 {
                verb.replace("grow", "shrink")
            } else {
                verb.to_string()
            };
            format!("{} {verb} by {}", and_list(members), bytes.unsigned_abs())
        }
        Part::Added { member, size } => format!("{member} added ({})", bytes(*size)),
        Part::Removed { member, size } => format!("{member} removed ({})", bytes(*size)),
        Part::Resized { member, old, new } => {
            let verb = if new > old { "grows" } else { "shrinks" };
            format!("{member} {verb} from {old} to {new} bytes")
        }
        Part::Moves {
            member, from, to, ..
        } => format!("{member} moves from offset {from} to {to}"),
        Part::Hole { member, bytes: n } => {
            if padding_parts == 1 && *n as i64 == e.delta {
                format!("hole before {member}")
            } else {
                format!("{n}-byte hole before {member}")
            }
        }
        Part::PaddingGrows { after, bytes: n } => {
            format!("padding after {after} grows by {}", bytes(*n))
        }
        Part::Absorbed { after, bytes: n } => {
            let what = if after.is_empty() {
                "padding at the start".to_string()
            } else {
                format!("padding after {after}")
            };
            format!(
                "{} of {what} {}",
                bytes(*n),
                absorb_verb(*n, e.delta, growing)
            )
        }
        Part::UnionRoom { bytes: n } => {
            if e.delta == 0 {
                "the growth fits beside larger members".to_string()
            } else {
                format!("{} of the growth fit beside larger members", bytes(*n))
            }
        }
        Part::TailGrows { align, bytes: n } => {
            if growing || e.new.align > e.old.align {
                format!("plus tail padding to {align}")
            } else {
                format!("tail padding grows by {}", bytes(*n))
            }
        }
        Part::TailAbsorbed { bytes: n } => {
            format!(
                "{} of tail padding {}",
                bytes(*n),
                absorb_verb(*n, e.delta, growing)
            )
        }
    }
}

/// "absorb part of the growth", "absorbs the growth", "are gone".
fn absorb_verb(n: u64, delta: i64, growing: bool) -> String {
    let one = n == 1;
    match (growing, delta > 0) {
        (true, true) => format!(
            "{} part of the growth",
            if one { "absorbs" } else { "absorb" }
        ),
        (true, false) => format!("{} the growth", if one { "absorbs" } else { "absorb" }),
        (false, _) => (if one { "is gone" } else { "are gone" }).to_string(),
    }
}

fn bytes(n: u64) -> String {
    if n == 1 {
        "1 byte".to_string()
    } else {
        format!("{n} bytes")
    }
}

fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `NAME: kmalloc-2k -> kmalloc-4k, +2048 bytes per object[, x4 (note): +8192 bytes]`.
fn allocation_line(e: &Entry) -> String {
    let a = &e.allocation;
    let mut out = if a.crosses {
        format!(
            "{}: {} -> {}, {:+} bytes per object",
            e.name, a.old.name, a.new.name, a.per_object
        )
    } else {
        format!(
            "{}: {}, {:+} bytes per object",
            e.name, a.old.name, a.per_object
        )
    };
    if let Some(i) = &a.instances {
        let _ = write!(out, ", x{}", i.count);
        if let Some(note) = &i.note {
            let _ = write!(out, " ({note})");
        }
        let _ = write!(out, ": {:+} bytes", i.total);
    }
    out
}

pub(crate) fn text(r: &GrowthReport) -> String {
    let mut out = String::new();
    for e in &r.entries {
        let _ = writeln!(out, "{}", e.line);
    }
    out.push('\n');
    let crossing: Vec<&Entry> = r
        .entries
        .iter()
        .filter(|e| !e.anonymous && (e.allocation.crosses || e.allocation.instances.is_some()))
        .collect();
    if crossing.iter().all(|e| !e.allocation.crosses) {
        let _ = writeln!(out, "No kmalloc size class changes.");
    }
    for e in &crossing {
        let _ = writeln!(out, "{}", allocation_line(e));
    }
    let why: Vec<&String> = r.entries.iter().flat_map(|e| &e.why).collect();
    if !why.is_empty() {
        out.push_str("\nWhy:\n");
        for w in why {
            let _ = writeln!(out, "  {w}");
        }
    }
    let kmalloc_note = (!crossing.is_empty()).then_some(KMALLOC_NOTE);
    if !r.notes.is_empty() || kmalloc_note.is_some() {
        out.push_str("\nNotes:\n");
        for n in r.notes.iter().map(String::as_str).chain(kmalloc_note) {
            let _ = writeln!(out, "  {n}");
        }
    }
    out
}

pub(crate) fn table(r: &GrowthReport) -> String {
    let with_instances = r.entries.iter().any(|e| e.allocation.instances.is_some());
    let mut header = vec![
        "struct",
        "size",
        "delta",
        "align",
        "member",
        "offset",
        "moved",
        "absorbed",
        "tail pad",
        "kmalloc",
        "per object",
    ];
    if with_instances {
        header.push("instances");
    }
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for e in &r.entries {
        let a = &e.allocation;
        let kmalloc = if a.crosses {
            format!("{} -> {}", a.old.name, a.new.name)
        } else {
            a.old.name.clone()
        };
        let first = |member: String, offset: String, moved: String| {
            let mut row = vec![
                e.name.clone(),
                format!("{} -> {}", e.old.size, e.new.size),
                format!("{:+}", e.delta),
                arrow(e.old.align, e.new.align),
                member,
                offset,
                moved,
                e.padding.absorbed.to_string(),
                arrow(e.padding.tail_old, e.padding.tail_new),
                kmalloc.clone(),
                format!("{:+}", a.per_object),
            ];
            if with_instances {
                row.push(
                    a.instances
                        .as_ref()
                        .map_or("-".to_string(), |i| format!("x{} = {:+}", i.count, i.total)),
                );
            }
            row
        };
        let mut embeds = e.embeds.iter();
        match embeds.next() {
            None => rows.push(first("-".into(), "-".into(), "-".into())),
            Some(m) => {
                rows.push(first(
                    m.member.clone(),
                    arrow(m.old_offset, m.new_offset),
                    format!("{:+}", m.moved),
                ));
                for m in embeds {
                    let mut row = vec![String::new(); rows[0].len()];
                    row[4] = m.member.clone();
                    row[5] = arrow(m.old_offset, m.new_offset);
                    row[6] = format!("{:+}", m.moved);
                    rows.push(row);
                }
            }
        }
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

fn arrow(old: u64, new: u64) -> String {
    if old == new {
        old.to_string()
    } else {
        format!("{old} -> {new}")
    }
}
