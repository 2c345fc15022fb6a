//! Where a struct lives in a type graph: the containers that embed it, at
//! which offset and so at which phase, as [`crate::typedb::TypeDb`] knows
//! them (BTF, DWARF, a compiler probe).
//!
//! - [`container_offset`]: `mem_cgroup_per_node.lruvec.lrugen` → the byte
//!   offset of that member in the container, and the type it holds;
//! - [`embedding_paths`]: every outermost named struct that holds the
//!   struct by value, through any chain of members (arrays: their first
//!   element), with the member path and the offset.
//!
//! A layout is solved for the phases (`offset % line`) of the containers it
//! is given (`--offset`, `--container`); the paths say which embedders those
//! are, and which were left out.

use crate::error::Diagnostic;
use crate::typedb::{Aggregate, TypeDb};

/// Most embedding paths listed (a struct in a widely used type has many).
pub const MAX_PATHS: usize = 64;
/// Deepest chain of embedders followed.
pub const MAX_DEPTH: usize = 16;

/// One place the struct sits: `mem_cgroup_per_node.lruvec.lrugen` at 136.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbeddingPath {
    /// The outermost struct (never embedded by value itself in the graph).
    pub container: String,
    /// The member path from it to the struct (`lruvec.lrugen`).
    pub member: String,
    /// The struct's offset inside the container.
    pub offset: u64,
}

impl EmbeddingPath {
    /// `container.member.path`, as `--container` takes it.
    pub fn spelled(&self) -> String {
        format!("{}.{}", self.container, self.member)
    }
}

/// The offset of `path` (`CONTAINER.member.path`, array steps as
/// `name[N]`) inside its container, and the name of the aggregate the path
/// ends at.
pub fn container_offset(db: &TypeDb, path: &str) -> Result<(u64, String), Diagnostic> {
    let path = path.trim();
    let path = path.strip_prefix("struct ").map_or(path, str::trim);
    let bad = || {
        Diagnostic::new(format!("--container {path}: not CONTAINER.MEMBER.PATH"))
            .help("e.g. --container mem_cgroup_per_node.lruvec.lrugen")
    };
    let (container, rest) = path.split_once('.').ok_or_else(bad)?;
    let mut agg: &Aggregate = db.find_struct(container)?;
    let mut offset = 0u64;
    for step in rest.split('.') {
        let (name, index) = match step.split_once('[') {
            Some((n, i)) => {
                let i = i.strip_suffix(']').ok_or_else(bad)?;
                (n, Some(i.parse::<u64>().map_err(|_| bad())?))
            }
            None => (step, None),
        };
        let (i, m) = find_member(db, agg, name, &mut offset).ok_or_else(|| {
            let names: Vec<String> = agg.members.iter().map(|m| m.field_name()).collect();
            Diagnostic::new(format!(
                "--container {path}: struct {} has no member `{name}`",
                agg.display_name()
            ))
            .help(format!("its members: {}", names.join(", ")))
        })?;
        let (i, m) = (i, m.clone());
        offset += m.offset;
        if let Some(k) = index {
            if k >= m.count.max(1) {
                return Err(Diagnostic::new(format!(
                    "--container {path}: `{name}` has {} elements",
                    m.count
                )));
            }
            offset += k * (m.size / m.count.max(1));
        }
        agg = db.member_aggregate(agg, i).ok_or_else(|| {
            Diagnostic::new(format!(
                "--container {path}: `{name}` is not a struct or union held by value"
            ))
        })?;
    }
    Ok((offset, agg.name.clone()))
}

/// Member `name` of `agg`, looking into anonymous members (whose offsets
/// are added to `offset`).
fn find_member<'a>(
    db: &'a TypeDb,
    agg: &'a Aggregate,
    name: &str,
    offset: &mut u64,
) -> Option<(usize, &'a crate::typedb::Member)> {
    if let Some(i) = agg.members.iter().position(|m| m.name == name) {
        return Some((i, &agg.members[i]));
    }
    for (i, m) in agg.members.iter().enumerate() {
        if m.name.is_empty() {
            if let Some(inner) = db.member_aggregate(agg, i) {
                let mut at = *offset + m.offset;
                if let Some(found) = find_member(db, inner, name, &mut at) {
                    *offset = at;
                    return Some(found);
                }
            }
        }
    }
    None
}

/// Every outermost named struct that embeds `agg` by value, with the member
/// path and offset, sorted by container then path; at most [`MAX_PATHS`].
pub fn embedding_paths(db: &TypeDb, agg: &Aggregate) -> Vec<EmbeddingPath> {
    let mut out = Vec::new();
    walk(db, agg, Vec::new(), 0, 0, &mut out);
    out.sort_by(|a, b| (&a.container, &a.member).cmp(&(&b.container, &b.member)));
    out.dedup();
    out
}

/// Goes up from `agg`, at `offset` inside what `path` (innermost step
/// last, reversed) leads to.
fn walk(
    db: &TypeDb,
    agg: &Aggregate,
    path: Vec<String>,
    offset: u64,
    depth: usize,
    out: &mut Vec<EmbeddingPath>,
) {
    if out.len() >= MAX_PATHS {
        return;
    }
    let ups = db.embedders_of(agg);
    let named_top = !agg.is_anonymous() && !path.is_empty();
    if ups.is_empty() || depth >= MAX_DEPTH {
        if named_top {
            out.push(EmbeddingPath {
                container: agg.name.clone(),
                member: path.iter().rev().cloned().collect::<Vec<_>>().join("."),
                offset,
            });
        }
        return;
    }
    for (up, i) in ups {
        let m = &up.members[i];
        let mut p = path.clone();
        if !m.name.is_empty() {
            p.push(m.name.clone());
        }
        walk(db, up, p, offset + m.offset, depth + 1, out);
    }
}

/// The summary lines about containers: each embedder the type graph
/// knows, with its offset and phase, and whether the layout was solved for
/// (`solved`; else checked at) that phase; then the offsets no assertion
/// pins (`unpinned`).
pub fn placement_note(
    paths: Option<&[EmbeddingPath]>,
    placement: &crate::model::Placement,
    line: u64,
    unpinned: &[u64],
    solved: bool,
) -> String {
    let (done, not_done) = match solved {
        true => ("solved for", "NOT solved for"),
        false => ("checked", "NOT checked"),
    };
    let line = line.max(1);
    let phases: Vec<u64> = placement.offsets().iter().map(|o| o % line).collect();
    let mut out = String::new();
    if let Some(paths) = paths.filter(|p| !p.is_empty()) {
        out.push_str("embedders in the types read:\n");
        for p in paths {
            let phase = p.offset % line;
            let verdict = if placement.offsets().is_empty() {
                "the layout holds at every placement".to_string()
            } else if phases.contains(&phase) {
                done.to_string()
            } else {
                format!("{not_done}: add --container {}", p.spelled())
            };
            out.push_str(&format!(
                "  {} at offset {} (phase {phase}): {verdict}\n",
                p.spelled(),
                p.offset
            ));
        }
        if paths.len() >= MAX_PATHS {
            out.push_str(&format!("  (the first {MAX_PATHS} listed)\n"));
        }
    }
    if !unpinned.is_empty() {
        let at: Vec<String> = unpinned.iter().map(u64::to_string).collect();
        out.push_str(&format!(
            "offset {} has no container name, so no static_assert pins it: give --container CONTAINER.MEMBER.PATH\n",
            at.join(", ")
        ));
    }
    out
}
