//! Reports on a layout, for people and for tools: a pahole-style [`table`], a
//! per-line box [`diagram`] in the style kernel reviewers ask for (mm changelogs),
//! the lines that break the hard rule ([`conflict_lines`]) and a JSON form
//! ([`layout_json`]).
//!
//! Reports render a layout; they never compute one. Each reads a
//! [`LayoutView`] of the struct and any [`Layout`] (the layout as declared,
//! which may break the hard rule, or a verified proposal through `Deref`),
//! computed once per layout; the functions that take a struct and a layout
//! build the view for one report. Line numbers are [`Layout::line_of`]'s:
//! counted from the container start in `Offset` mode.

mod churn;
mod diagram;
pub mod json;
mod moves;
mod propose_json;
pub mod scan_json;
mod syntax;
mod table;
mod view;

pub use churn::churn;
pub use json::LayoutJson;
pub use moves::MovedRun;
pub use propose_json::{ProposeJson, TreeSafetyJson};
pub use syntax::Syntax;
pub(crate) use view::ordered_slots;
pub use view::{LayoutView, ProposalView};

use crate::layout::{reported_conflicts, Layout, LineConflict};
use crate::model::Struct;

/// A pahole-style table of the layout:
///
/// ```text
/// struct lru_gen_folio {
///         atomic_long_t  refaulted[1][2][4];  /*  1272    64 */  A
///         /* --- cacheline 25 boundary (1600 bytes) was 40 bytes ago --- */
///         /* !!! line 25: lockless refaulted shares with read-mostly enabled, gen, seg, list */
///         bool           enabled;             /*  1336     1 */  R
///         ...
///         /* size: 1360, cachelines: 22, members: 14, sum members: 1355, holes: 1, sum holes: 5, padding: 0 */
///         /* hard conflicts: 1 */
/// };
/// ```
///
/// Member offsets and sizes are the struct's own, as pahole prints them;
/// cacheline numbers and boundary bytes are counted from the container (a
/// comment at the top says so in `Offset` mode). The last column is the
/// access class (`R`, `L(lock)`, `A`, `A(group)`, `C`). Holes, tail padding
/// and lines that break the hard rule are commented where they fall (those
/// that break it only at another phase, in aligned mode, at the top). Types
/// print in C (`unsigned long nr_pages[4][2][5];`) or, when a field type can
/// only be Rust, in Rust (`counts: [AtomicU64; 4],`); see [`Syntax`].
pub fn table(s: &Struct, l: &Layout) -> String {
    table::render(&LayoutView::new(s, l))
}

/// Box diagrams of the given lines (numbered as [`Layout::line_of`] numbers
/// them), in the style of the kernel's mm changelogs:
///
/// ```text
/// line 25 (1600-1663)
/// +------------+-----------------+-----------+-------------+
/// | refaulted  | enabled,gen,seg | pad       | list        |
/// | <1600-1639 | 1640-1642       | 1643-1647 | 1648-1663   |
/// | lockless   | read-mostly     |           | read-mostly |
/// +------------+-----------------+-----------+-------------+
/// ```
///
/// then the CPUs that touch the line (who writes without a lock, who holds
/// which lock, who reads) side by side, and a one-line verdict. Byte ranges
/// are container offsets; `<` and `>` mark a field that continues on the
/// previous or next line; adjacent fields of the same class share a cell.
/// Output lines stay within 100 columns (a line with many cells becomes
/// several boxes), unless a single name is wider.
pub fn diagram(s: &Struct, l: &Layout, lines: &[u64]) -> String {
    diagram::render(&LayoutView::new(s, l), lines)
}

/// The lines that break the hard rule, ascending, each once (from
/// [`reported_conflicts`]).
pub fn conflict_lines(s: &Struct, l: &Layout) -> Vec<u64> {
    let mut lines: Vec<u64> = reported_conflicts(s, l).iter().map(|c| c.line).collect();
    lines.sort_unstable();
    lines.dedup();
    lines
}

/// The layout as JSON:
///
/// ```json
/// {"struct": "lru_gen_folio", "size": 1360, "align": 8, "line": 64, "offset": 304,
///  "fields": [{"name": "max_seq", "type": "unsigned long", "offset": 0,
///              "size": 8, "align": 8, "access": "read_mostly", "lock": null,
///              "group": null, "segment": 0, "cacheline_group": null}],
///  "cacheline_groups": [],
///  "hard_conflicts": [{"line": 25, "phase": 48, "lockless": ["refaulted"],
///                      "read_mostly": ["enabled", "gen", "seg", "list"]}]}
/// ```
///
/// The schema is [`LayoutJson`]. `offset` is the struct's offset in its
/// container, `null` in aligned mode. Fields come in offset order, zero-size markers included
/// (`"access": "marker"`). `access` is otherwise one of `read_mostly`,
/// `locked_write`, `lockless_atomic`, `cold`; `lock` and `group` are `null`
/// when absent; `cacheline_groups` lists the author's groups (see the
/// `json` module). A conflict's `lockless` lists every lockless field on
/// the line, of all writer groups.
pub fn layout_json(s: &Struct, l: &Layout) -> serde_json::Value {
    json::render(s, l)
}

/// One line per hot path: `hot path tx: 7 lines (bound 4)`, or with `after`,
/// `hot path tx: 7 -> 5 lines (bound 4)`; lines as [`crate::paths`] counts
/// them (the worst placement in aligned mode). Empty without paths.
pub fn path_lines_text(s: &Struct, before: &Layout, after: Option<&Layout>) -> String {
    let old = crate::paths::path_lines(s, before);
    let new = after.map(|a| crate::paths::path_lines(s, a));
    paths_text(&old, new.as_deref())
}

impl LayoutView<'_> {
    /// The pahole-style table ([`table`]).
    pub fn table(&self) -> String {
        table::render(self)
    }

    /// Box diagrams of the given lines ([`diagram`]).
    pub fn diagram(&self, lines: &[u64]) -> String {
        diagram::render(self, lines)
    }

    /// [`LayoutView::diagram`] within `width` columns (a commit message's
    /// 72, say).
    pub fn diagram_within(&self, lines: &[u64], width: usize) -> String {
        diagram::render_within(self, lines, width)
    }

    /// The JSON form ([`layout_json`]).
    pub fn json(&self) -> LayoutJson {
        LayoutJson::of(self)
    }

    /// The lines per hot path of `before`, or of `before` and `after`
    /// ([`path_lines_text`]).
    pub fn paths_text(before: &LayoutView, after: Option<&LayoutView>) -> String {
        paths_text(&before.paths, after.map(|a| a.paths.as_slice()))
    }
}

fn paths_text(old: &[crate::paths::PathLines], new: Option<&[crate::paths::PathLines]>) -> String {
    let mut out = String::new();
    for (k, p) in old.iter().enumerate() {
        let lines = match new.map(|n| &n[k]) {
            Some(n) => format!("{} -> {}", p.lines, n.lines),
            None => p.lines.to_string(),
        };
        out.push_str(&format!(
            "hot path {}: {lines} lines (bound {})\n",
            p.name, p.bound
        ));
    }
    out
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
    let (words, atomics): (Vec<String>, Vec<String>) = c
        .lockless
        .iter()
        .cloned()
        .partition(|n| c.lock_words.contains(n));
    let mut who = Vec::new();
    if !atomics.is_empty() {
        who.push(format!("lockless {}", join(&atomics)));
    }
    if !words.is_empty() {
        let s = if words.len() == 1 { "" } else { "s" };
        who.push(format!("lock word{s} {}", join(&words)));
    }
    format!(
        "line {}: {} {verb} with {}",
        c.line,
        who.join(" and "),
        with.join(" and ")
    )
}
