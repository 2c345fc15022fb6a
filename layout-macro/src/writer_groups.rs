//! What the default writer groups cost. An atomic without a `#[layout(..)]`
//! attribute gets a writer group of its own (`defaults`), so `optimize`
//! keeps every such atomic off every other's line. When two or more fields
//! got such a group, the report says how large the struct would be with
//! all of them in one shared group, so the author sees what separating them
//! costs and can group the fields one thread writes together.

use crate::attr::{Input, Options};
use crate::defaults::{default_access, own_group};
use crate::model::Model;
use crate::plan;
use layout_core::Access;

/// The fields (declaration indices) whose writer group is the default one
/// of their own.
pub fn defaulted(input: &Input, model: &Model) -> Vec<usize> {
    input
        .fields
        .iter()
        .zip(&model.strukt.fields)
        .enumerate()
        .filter(|(_, (f, m))| {
            f.access.is_none()
                && m.access == own_group(&f.name)
                && default_access(&f.ty, &f.name) == m.access
        })
        .map(|(i, _)| i)
        .collect()
}

/// The report's line on the default groups, or `None` when fewer than two
/// fields have one. `size` is the size of the planned layout. The shared
/// variant is solved with a quarter of the work budget (deterministic, like
/// every solve here), so its size is what that budget finds.
pub fn cost_note(input: &Input, model: &Model, options: &Options, size: u64) -> Option<String> {
    let fields = defaulted(input, model);
    if fields.len() < 2 {
        return None;
    }
    let mut shared = Model {
        strukt: model.strukt.clone(),
        known: model.known.clone(),
        free: model.free.clone(),
        classes: model.classes.clone(),
        line: model.line,
    };
    for &i in &fields {
        shared.strukt.fields[i].access = Access::Lockless { group: None };
    }
    let mut opts = options.clone();
    let budget = options.work_limit.unwrap_or(plan::DEFAULT_WORK_LIMIT);
    opts.work_limit = Some((budget / 4).max(1));
    let names: Vec<String> = fields
        .iter()
        .map(|&i| format!("`{}`", input.fields[i].name))
        .collect();
    let head = format!(
        "{} atomic fields without a writer group ({}) each got one of their own (different threads \
         write them), so no two share a cache line",
        fields.len(),
        names.join(", ")
    );
    let shared_size = plan::solve_model(&shared, &opts)
        .ok()
        .map(|s| s.layout.size);
    Some(match shared_size {
        Some(s) if s < size => format!(
            "{head}: {size} B, where one shared group would take {s} B ({} B more); fields one thread \
             writes together may share a group: #[layout(lockless(group = \"name\"))]",
            size - s
        ),
        _ => format!("{head}, at no cost in size ({size} B)"),
    })
}
