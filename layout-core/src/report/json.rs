//! The JSON form of a layout, for tools:
//!
//! ```json
//! {"struct": "lru_gen_folio", "size": 1360, "align": 8, "line": 64, "offset": 304,
//!  "fields": [{"name": "max_seq", "type": "unsigned long", "offset": 0, "size": 8, "align": 8,
//!              "access": "read_mostly", "lock": null, "group": null}, ...],
//!  "hard_conflicts": [{"line": 25, "phase": 48, "lockless": ["refaulted"],
//!                      "read_mostly": ["enabled", "gen", "seg", "list"]}]}
//! ```
//!
//! `offset` is the struct's offset in its container, `null` in aligned mode.
//! Fields come in offset order; zero-size fields are left out. `access` is one
//! of `read_mostly`, `locked_write`, `lockless_atomic`, `cold`; `lock` and
//! `group` are `null` when absent. A conflict's `lockless` lists every
//! lockless field on the line, of all writer groups.
//!
//! Also: `paths`, per hot path the lines it touches and their bound
//! (`{"tx": {"lines": 7, "bound": 4}}`, see [`crate::paths`]); `soft_cost`
//! and `soft_lines` at the default weights (see [`crate::cost`]); `churn`,
//! the members moved from the declaration order (see [`super::churn`]).

use super::ordered_slots;
use crate::layout::{reported_conflicts, Layout};
use crate::model::{Placement, Struct};
use serde_json::{json, Value};

pub(super) fn render(s: &Struct, l: &Layout) -> Value {
    let fields: Vec<Value> = ordered_slots(s, l)
        .iter()
        .filter(|sl| s.fields[sl.field].size > 0)
        .map(|sl| {
            let f = &s.fields[sl.field];
            json!({
                "name": f.name,
                "type": f.ty,
                "offset": sl.offset,
                "size": f.size,
                "align": f.align,
                "access": f.access.class_name(),
                "lock": f.access.lock(),
                "group": f.access.group(),
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
        "hard_conflicts": conflicts,
        "paths": paths,
        "soft_cost": soft_cost,
        "soft_lines": soft_lines,
        "churn": super::churn(s, l),
    })
}
