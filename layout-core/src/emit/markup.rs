//! What the diff adds or removes besides moving members: cacheline
//! attributes, `CACHELINE_PADDING()` lines, group markers, padding members,
//! bit-field guards and the struct's own alignment, each with why it is
//! there, for the summary and the changelog.

use crate::layout::Layout;
use crate::model::Struct;
use crate::place::align_up;
use serde::Serialize;

/// One attribute, padding or marker the diff adds or removes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MarkupChange {
    /// Added (else removed).
    pub added: bool,
    /// What, as the diff spells it: `____cacheline_aligned_in_smp`,
    /// `CACHELINE_PADDING(_pad2_)`, `u8 __cacheline_pad0[8]`.
    pub what: String,
    /// Where it goes.
    pub place: Place,
    /// The member it goes on or before (`None`: the struct itself, or its
    /// end).
    pub member: Option<String>,
    /// Why it is there (or why it goes), one clause.
    pub why: String,
}

/// Where a [`MarkupChange`] sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    /// On the member's declaration (an attribute).
    On,
    /// A line of its own before the member.
    Before,
    /// A line of its own after the member.
    After,
    /// After the last member.
    End,
    /// On the struct's definition.
    Struct,
}

impl MarkupChange {
    /// `adds ____cacheline_aligned_in_smp to compact_cached_free_pfn: ...`.
    pub fn sentence(&self) -> String {
        let verb = if self.added { "adds" } else { "removes" };
        let at = match (self.place, &self.member) {
            (Place::On, Some(m)) => format!(" {} {m}", if self.added { "to" } else { "from" }),
            (Place::Before, Some(m)) => format!(" before {m}"),
            (Place::After, Some(m)) => format!(" after {m}"),
            (Place::End, _) => " at the end of the struct".to_string(),
            (Place::Struct, _) | (_, None) => {
                format!(" {} the struct", if self.added { "to" } else { "from" })
            }
        };
        format!("{verb} {}{at}: {}", self.what, self.why)
    }
}

/// The fields of the layout with bytes on `line` (container line number),
/// in offset order, without `except`.
fn on_line(s: &Struct, l: &Layout, line: u64, except: usize) -> Vec<usize> {
    let mut slots: Vec<_> = l
        .slots
        .iter()
        .filter(|sl| sl.field != except && sl.field < s.fields.len())
        .filter(|sl| {
            let size = s.fields[sl.field].size;
            size > 0 && l.line_of(sl.offset) <= line && l.line_of(sl.offset + size - 1) >= line
        })
        .collect();
    slots.sort_by_key(|sl| sl.offset);
    slots.into_iter().map(|sl| sl.field).collect()
}

/// Names, at most three, then `and N more`.
fn names(s: &Struct, fields: &[usize]) -> String {
    let mut parts: Vec<String> = fields
        .iter()
        .take(3)
        .map(|&f| s.fields[f].name.clone())
        .collect();
    if fields.len() > 3 {
        parts.push(format!("{} more", fields.len() - 3));
    }
    match parts.len() {
        0 => String::new(),
        1 => parts.remove(0),
        n => format!("{} and {}", parts[..n - 1].join(", "), parts[n - 1]),
    }
}

/// Why field `f` must start a new line of the struct: where C would put it
/// without the break, and what it would share that line with.
pub(crate) fn line_break_reason(s: &Struct, l: &Layout, f: usize) -> String {
    let name = &s.fields[f].name;
    let Some(offset) = l.slot_of(f).map(|sl| sl.offset) else {
        return format!("{name} starts a cacheline");
    };
    let line = l.line_of(offset);
    // Where the members before it in the new order end.
    let end = l
        .slots
        .iter()
        .filter(|sl| sl.offset < offset && sl.field < s.fields.len())
        .map(|sl| sl.offset + s.fields[sl.field].size)
        .max()
        .unwrap_or(0);
    let natural = align_up(end, s.fields[f].align);
    if natural >= offset {
        return format!("{name} starts cacheline {line} (offset {offset})");
    }
    let shared = l.line_of(natural);
    let neighbours = on_line(s, l, shared, f);
    let access = &s.fields[f].access;
    let conflicting: Vec<usize> = neighbours
        .iter()
        .copied()
        .filter(|&g| access.hard_conflict(&s.fields[g].access))
        .collect();
    let label = |g: usize| s.fields[g].access.label(crate::class::Style::Prose);
    if let Some(&g) = conflicting.first() {
        format!(
            "{name} starts cacheline {line}; without it C would place {name} at offset \
             {natural}, on cacheline {shared} with {} ({}), which a {} field must not share",
            names(s, &conflicting),
            label(g),
            access.label(crate::class::Style::Prose),
        )
    } else if neighbours.is_empty() {
        format!("{name} starts cacheline {line}; without it C would place it at offset {natural}")
    } else {
        format!(
            "{name} starts cacheline {line}; without it C would place it at offset {natural}, \
             on cacheline {shared} with {}",
            names(s, &neighbours)
        )
    }
}

/// Why a line break the header spelled on or before field `f` goes: where
/// `f` now sits.
pub(crate) fn dropped_break_reason(s: &Struct, l: &Layout, f: Option<usize>) -> String {
    let Some(f) = f else {
        return "no member after it needs a line break there".to_string();
    };
    let name = &s.fields[f].name;
    match l.slot_of(f).map(|sl| sl.offset) {
        Some(o) if (l.base_offset() + o).is_multiple_of(l.line) => format!(
            "{name} still starts cacheline {}, where C places it without the break",
            l.line_of(o)
        ),
        Some(o) => format!(
            "{name} no longer starts a cacheline: it sits at offset {o}, on cacheline {}",
            l.line_of(o)
        ),
        None => format!("{name} needs no line break"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_name_what_where_and_why() {
        let c = MarkupChange {
            added: true,
            what: "____cacheline_aligned_in_smp".into(),
            place: Place::On,
            member: Some("free_pfn".into()),
            why: "free_pfn starts cacheline 20".into(),
        };
        assert_eq!(
            c.sentence(),
            "adds ____cacheline_aligned_in_smp to free_pfn: free_pfn starts cacheline 20"
        );
        let r = MarkupChange {
            added: false,
            place: Place::Before,
            what: "CACHELINE_PADDING(_pad2_)".into(),
            ..c
        };
        assert!(r
            .sentence()
            .starts_with("removes CACHELINE_PADDING(_pad2_) before free_pfn: "));
    }
}
