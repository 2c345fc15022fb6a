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

use super::ordered_slots;
use crate::layout::{reported_conflicts, Layout};
use crate::model::{Placement, Struct};
use crate::segments;
use serde_json::{json, Value};

pub(super) fn render(s: &Struct, l: &Layout) -> Value {
    let cacheline_group = segments::group_of_fields(s);
    let fields: Vec<Value> = ordered_slots(s, l)
        .iter()
        .map(|sl| {
            let f = &s.fields[sl.field];
            let access = if segments::is_marker(f) {
                "marker"
            } else {
                f.access.class_name()
            };
            json!({
                "name": f.name,
                "type": f.ty,
                "offset": sl.offset,
                "size": f.size,
                "align": f.align,
                "access": access,
                "lock": f.access.lock(),
                "group": f.access.group(),
                "segment": f.segment,
                "cacheline_group": cacheline_group[sl.field],
            })
        })
        .collect();
    let offset_of = l.offsets_by_field(s.fields.len());
    let groups: Vec<Value> = segments::author_groups(s)
        .iter()
        .map(|g| {
            let at = |i: Option<usize>| i.and_then(|i| offset_of[i]);
            let members: Vec<&str> = g
                .members
                .iter()
                .map(|&i| s.fields[i].name.as_str())
                .collect();
            json!({
                "name": g.name,
                "begin": at(g.begin),
                "end": at(g.end),
                "size": g.span(&offset_of),
                "members": members,
            })
        })
        .collect();
    let conflicts: Vec<Value> = reported_conflicts(s, l)
        .into_iter()
        .map(|c| {
            let lockless: Vec<String> = c.lockless.into_iter().chain(c.other_group).collect();
            json!({
                "line": c.line,
                "phase": c.phase,
                "lockless": lockless,
                "read_mostly": c.read_mostly,
            })
        })
        .collect();
    let offset = match l.placement {
        Placement::Offset(o) => Value::from(o),
        Placement::Aligned => Value::Null,
    };
    let paths: serde_json::Map<String, Value> = crate::paths::path_lines(s, l)
        .into_iter()
        .map(|p| (p.name, json!({"lines": p.lines, "bound": p.bound})))
        .collect();
    let weights = crate::cost::SoftWeights::default();
    let soft_lines = crate::cost::soft_lines(s, l, &weights);
    let soft_cost: u64 = soft_lines.iter().map(|sl| sl.weight).sum();
    json!({
        "struct": s.name,
        "size": l.size,
        "align": l.align,
        "line": l.line,
        "offset": offset,
        "fields": fields,
        "cacheline_groups": groups,
        "hard_conflicts": conflicts,
        "paths": paths,
        "soft_cost": soft_cost,
        "soft_lines": soft_lines,
        "churn": super::churn(s, l),
    })
}
