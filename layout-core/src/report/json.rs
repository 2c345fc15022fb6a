//! The JSON form of a layout, for tools:
//!
//! ```json
//! {"struct": "lru_gen_folio", "size": 1360, "align": 8, "line": 64, "offset": 304,
//!  "fields": [{"name": "max_seq", "type": "unsigned long", "offset": 0,
//!              "size": 8, "align": 8, "access": "read_mostly", "lock": null,
//!              "group": null, "segment": 0, "cacheline_group": null}, ...],
//!  "cacheline_groups": [{"name": "tcp_sock_read_tx", "begin": 1400,
//!                        "end": 1432, "size": 32, "members": ["max_window", ...]}],
//!  "hard_conflicts": [{"line": 25, "phase": 48, "lockless": ["refaulted"],
//!                      "read_mostly": ["enabled", "gen", "seg", "list"]}]}
//! ```
//!
//! `offset` is the struct's offset in its container, `null` in aligned mode.
//! Fields come in offset order, every member included: a zero-size member
//! without an access class (a cache-line group marker, a
//! `CACHELINE_PADDING()`, `headers_start[0]`) has `"access": "marker"` and
//! its real name. Otherwise `access` is one of `read_mostly`,
//! `locked_write`, `lockless_atomic`, `cold`; `lock` and `group` (the
//! lockless writer group) are `null` when absent. `type` is the member's C
//! type; `segment` is its ordering segment ([`crate::segments`]: members
//! keep nondecreasing segments); `cacheline_group` names the author's
//! cache-line group the member sits in. `cacheline_groups` lists the
//! author's groups with the offsets of their begin and end markers and the
//! bytes between them (`size`, what `CACHELINE_ASSERT_GROUP_SIZE` bounds). A conflict's `lockless` lists every
//! lockless field on the line, of all writer groups.
//!
//! Also: `paths`, per hot path the lines it touches and their bound
//! (`{"tx": {"lines": 7, "bound": 4}}`, see [`crate::paths`]); `soft_cost`
//! and `soft_lines` at the default weights (see [`crate::cost`]); `churn`,
//! the members moved from the declaration order (see [`super::churn`]).
//!
//! The schema is the type [`LayoutJson`]; `docs/json.md` describes every
//! JSON output of the command line, and [`pretty`] prints them: keys
//! sorted (serde_json's map), whatever the order of the fields below.

use super::LayoutView;
use crate::cost::SoftLine;
use crate::layout::Layout;
use crate::model::Struct;
use crate::segments;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The JSON form of one layout (`show --format json`, `before` and `after`
/// of `propose --format json`). It deserializes too, so a tool written in
/// Rust (or a test) can read the output back into this type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutJson {
    #[serde(rename = "struct")]
    pub name: String,
    pub size: u64,
    pub align: u64,
    /// Cache line size in bytes.
    pub line: u64,
    /// The struct's offset in its container; `null` in aligned mode.
    pub offset: Option<u64>,
    /// With several containers, the offset in each (the first is `offset`):
    /// the hard rule was checked at each one's phase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub container_offsets: Vec<u64>,
    /// Every member in offset order, zero-size markers included.
    pub fields: Vec<FieldJson>,
    pub cacheline_groups: Vec<GroupJson>,
    pub hard_conflicts: Vec<ConflictJson>,
    /// Per hot path (by name), the lines it touches and their bound.
    pub paths: BTreeMap<String, PathJson>,
    /// The sum of the weights of `soft_lines`.
    pub soft_cost: u64,
    pub soft_lines: Vec<SoftLine>,
    pub churn: u64,
}

/// One member of [`LayoutJson::fields`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldJson {
    pub name: String,
    /// The member's C type.
    #[serde(rename = "type")]
    pub ty: String,
    pub offset: u64,
    pub size: u64,
    pub align: u64,
    /// `read_mostly`, `locked_write`, `lockless_atomic`, `cold`, or
    /// `marker` for a zero-size member without an access class.
    pub access: String,
    pub lock: Option<String>,
    /// The lockless writer group.
    pub group: Option<String>,
    pub segment: u32,
    /// The author's cache-line group the member sits in.
    pub cacheline_group: Option<String>,
}

/// One of the author's cache-line groups ([`LayoutJson::cacheline_groups`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupJson {
    pub name: String,
    /// Offset of the begin marker.
    pub begin: Option<u64>,
    /// Offset of the end marker.
    pub end: Option<u64>,
    /// Bytes between the markers.
    pub size: Option<u64>,
    pub members: Vec<String>,
}

/// One line that breaks the hard rule ([`LayoutJson::hard_conflicts`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConflictJson {
    pub line: u64,
    pub phase: u64,
    /// Every lockless field on the line, of all writer groups.
    pub lockless: Vec<String>,
    pub read_mostly: Vec<String>,
}

/// One hot path's lines ([`LayoutJson::paths`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathJson {
    pub lines: u64,
    pub bound: u64,
}

impl LayoutJson {
    /// The JSON form of the layout `v` reads.
    pub fn of(v: &LayoutView) -> LayoutJson {
        let (s, l) = (v.strukt, v.layout);
        let cacheline_group = segments::group_of_fields(s);
        let fields = v
            .rows
            .iter()
            .map(|sl| {
                let f = &s.fields[sl.field];
                let access = if segments::is_marker(f) {
                    "marker"
                } else {
                    f.access.class_name()
                };
                FieldJson {
                    name: f.name.clone(),
                    ty: f.ty.clone(),
                    offset: sl.offset,
                    size: f.size,
                    align: f.align,
                    access: access.to_string(),
                    lock: f.access.lock().map(str::to_string),
                    group: f.access.group().map(str::to_string),
                    segment: f.segment,
                    cacheline_group: cacheline_group[sl.field].clone(),
                }
            })
            .collect();
        let groups = segments::author_groups(s)
            .iter()
            .map(|g| {
                let at = |i: Option<usize>| i.and_then(|i| v.offsets[i]);
                GroupJson {
                    name: g.name.clone(),
                    begin: at(g.begin),
                    end: at(g.end),
                    size: g.span(&v.offsets),
                    members: g
                        .members
                        .iter()
                        .map(|&i| s.fields[i].name.clone())
                        .collect(),
                }
            })
            .collect();
        let conflicts = v
            .conflicts
            .iter()
            .map(|c| ConflictJson {
                line: c.line,
                phase: c.phase,
                lockless: c.lockless.iter().chain(&c.other_group).cloned().collect(),
                read_mostly: c.read_mostly.clone(),
            })
            .collect();
        let offset = l.placement.first_offset();
        let paths = v
            .paths
            .iter()
            .map(|p| {
                let lines = PathJson {
                    lines: p.lines,
                    bound: p.bound,
                };
                (p.name.clone(), lines)
            })
            .collect();
        LayoutJson {
            name: s.name.clone(),
            size: l.size,
            align: l.align,
            line: l.line,
            offset,
            container_offsets: match l.placement.offsets() {
                [_, _, ..] => l.placement.offsets().to_vec(),
                _ => Vec::new(),
            },
            fields,
            cacheline_groups: groups,
            hard_conflicts: conflicts,
            paths,
            soft_cost: v.soft_cost(),
            soft_lines: v.soft_lines.clone(),
            churn: v.churn,
        }
    }

    /// As a JSON value (keys sorted).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("layout JSON always serialises")
    }

    /// Pretty-printed with sorted keys and a final newline, as the CLI prints it.
    pub fn to_pretty(&self) -> String {
        pretty(self)
    }
}

/// `v` pretty-printed through a JSON value (so keys print sorted, as
/// serde_json's map sorts them), with a final newline.
pub fn pretty(v: &impl Serialize) -> String {
    let value = serde_json::to_value(v).expect("JSON outputs always serialise");
    let mut out = serde_json::to_string_pretty(&value).expect("JSON values always serialise");
    out.push('\n');
    out
}

pub(super) fn render(s: &Struct, l: &Layout) -> serde_json::Value {
    LayoutJson::of(&LayoutView::new(s, l)).to_value()
}
