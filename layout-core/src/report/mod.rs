//! Reports on a layout, for people and for tools: a pahole-style [`table`], a
//! per-line box [`diagram`] in the style kernel reviewers ask for (seed 000),
//! the lines that break the hard rule ([`conflict_lines`]) and a JSON form
//! ([`layout_json`]).
//!
//! Reports render a layout; they never compute one. They take the struct and
//! any [`Layout`] (the layout as declared, which may break the hard rule, or a
//! verified proposal through `Deref`). Line numbers are [`Layout::line_of`]'s:
//! counted from the container start in `Offset` mode.

mod diagram;
mod json;
mod syntax;
mod table;

pub use syntax::Syntax;

use crate::layout::{reported_conflicts, Layout, LineConflict, Slot};
use crate::model::Struct;

/// A pahole-style table of the layout; see [`table::render`].
pub fn table(s: &Struct, l: &Layout) -> String {
    table::render(s, l)
}

/// Box diagrams of the given lines (numbered as [`Layout::line_of`] numbers
/// them); see [`diagram::render`].
pub fn diagram(s: &Struct, l: &Layout, lines: &[u64]) -> String {
    diagram::render(s, l, lines)
}

/// The lines that break the hard rule, ascending, each once (from
/// [`reported_conflicts`]).
pub fn conflict_lines(s: &Struct, l: &Layout) -> Vec<u64> {
    let mut lines: Vec<u64> = reported_conflicts(s, l).iter().map(|c| c.line).collect();
    lines.sort_unstable();
    lines.dedup();
    lines
}

/// The layout as JSON; see [`json::render`] for the exact shape.
pub fn layout_json(s: &Struct, l: &Layout) -> serde_json::Value {
    json::render(s, l)
}

/// Slots in the order a reader (and C) sees them: by offset, a zero-size
/// field before a sized one at the same offset, ties otherwise in slot order.
/// Slots that name no field of `s` are dropped.
pub(crate) fn ordered_slots(s: &Struct, l: &Layout) -> Vec<Slot> {
    let mut slots: Vec<Slot> = l
        .slots
        .iter()
        .copied()
        .filter(|sl| sl.field < s.fields.len())
        .collect();
    slots.sort_by_key(|sl| (sl.offset, s.fields[sl.field].size != 0));
    slots
}

/// `a, b, c`.
pub(crate) fn join(names: &[String]) -> String {
    names.join(", ")
}

/// One sentence on a broken line: `line 25: lockless refaulted shares with
/// read-mostly enabled, gen, seg, list`.
pub(crate) fn conflict_sentence(c: &LineConflict) -> String {
    let verb = if c.lockless.len() == 1 {
        "shares"
    } else {
        "share"
    };
    let mut with = Vec::new();
    if !c.read_mostly.is_empty() {
        with.push(format!("read-mostly {}", join(&c.read_mostly)));
    }
    if !c.other_group.is_empty() {
        with.push(format!(
            "lockless {} of another writer group",
            join(&c.other_group)
        ));
    }
    format!(
        "line {}: lockless {} {verb} with {}",
        c.line,
        join(&c.lockless),
        with.join(" and ")
    )
}
