//! Growth reports: how a change to one struct's size or alignment spreads to
//! every struct that embeds it, and what it costs the allocator.
//!
//! ```text
//! lru_gen_folio 1360 -> 1408 (+48, hole before evicted[])
//! lruvec 1624 -> 1728 (+104, lrugen moves from offset 176 to 192, plus tail padding to 64)
//! mem_cgroup_per_node 2048 -> 2112 (+64, 40 bytes of padding after lruvec absorb part of the growth)
//!
//! mem_cgroup_per_node: kmalloc-2k -> kmalloc-4k, +2048 bytes per object
//! ```
//!
//! One engine for every source of types: a [`TypeDb`] from BTF or DWARF, or
//! one built from a header ([`header_types`]). Three entry points:
//!
//! - [`grow`]: the struct takes a new size (and alignment); every embedder
//!   is laid out again with C's rules ([`relayout`]).
//! - [`grow_to`]: the same with the struct's new member layout known (a
//!   proposal), so its own line says why it grew.
//! - [`compare`]: two versions of the same types (headers before and after a
//!   diff): new layouts come from the second one.
//!
//! Embedders are visited transitively, each once, embedded types before
//! their embedders; an embedder whose size and alignment do not change
//! (padding absorbed all of it) is reported and stops the spread. Each
//! [`Entry`] says old → new size, where the embedded members move and why,
//! the padding absorbed and added, and the kmalloc size class old → new.

mod explain;
#[cfg(feature = "c-header")]
mod header;
pub mod kmalloc;
mod proposal;
mod relayout;
mod render;

#[cfg(feature = "c-header")]
pub use header::{header_types, HeaderTypes};
pub use proposal::proposed_layout;

use crate::error::Diagnostic;
use crate::typedb::{Aggregate, AggregateKind, TypeDb};
use kmalloc::SizeClass;
use serde::Serialize;
use std::collections::{HashMap, HashSet, VecDeque};

/// Size and alignment of a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Shape {
    pub size: u64,
    pub align: u64,
}

/// How a growth report came about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A new size (and alignment) for the struct ([`grow`]).
    Size,
    /// A new member layout for the struct ([`grow_to`]).
    Layout,
    /// Two versions of the types ([`compare`]).
    Compare,
}

/// Everything a change to one struct does to the structs that embed it.
#[derive(Clone, Debug, Serialize)]
pub struct GrowthReport {
    pub mode: Mode,
    /// Where the types came from (`old.h -> new.h` when comparing).
    pub source: String,
    /// The struct that changed.
    pub root: String,
    /// The struct first, then its embedders, embedded types before embedders.
    pub entries: Vec<Entry>,
    /// What the report had to assume or could not see.
    pub notes: Vec<String>,
}

/// One struct's change.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    /// As C code names it without `struct` (`lruvec`), a typedef name, or
    /// the type database's synthetic name of an anonymous aggregate.
    pub name: String,
    /// `struct` or `union`.
    pub kind: &'static str,
    /// An anonymous struct or union (named after where it sits): it is
    /// never allocated alone, so its size class is not flagged.
    pub anonymous: bool,
    pub old: Shape,
    pub new: Shape,
    /// `new.size - old.size`.
    pub delta: i64,
    /// The report line: `lruvec 1624 -> 1728 (+104, ...)`.
    pub line: String,
    /// Why the size changed, in the order the line tells it.
    pub parts: Vec<Part>,
    /// The members whose type changed, with where they move.
    pub embeds: Vec<Embedded>,
    pub padding: Padding,
    /// The alignment facts behind the parts, one sentence each.
    pub why: Vec<String>,
    pub allocation: Allocation,
}

/// One piece of a size change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Part {
    /// Several embedded members (or an array of them) grow by `bytes` in all.
    Embedded {
        members: Vec<String>,
        bytes: i64,
    },
    Added {
        member: String,
        size: u64,
    },
    Removed {
        member: String,
        size: u64,
    },
    Resized {
        member: String,
        old: u64,
        new: u64,
    },
    /// More padding before a member that keeps its place in the order.
    Moves {
        member: String,
        from: u64,
        to: u64,
        bytes: u64,
    },
    /// More padding before a member in a reordered struct (or a new member).
    Hole {
        member: String,
        bytes: u64,
    },
    /// More padding after a member, the next one keeping its offset.
    PaddingGrows {
        after: String,
        bytes: u64,
    },
    /// Less padding after a member: it took part of the growth.
    Absorbed {
        after: String,
        bytes: u64,
    },
    /// A union member grew into room its larger members already took.
    UnionRoom {
        bytes: u64,
    },
    /// More tail padding: the size rounds up to `align`.
    TailGrows {
        align: u64,
        bytes: u64,
    },
    /// Less tail padding: it took part of the growth.
    TailAbsorbed {
        bytes: u64,
    },
}

/// A member whose type changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Embedded {
    pub member: String,
    /// The changed type (`struct lru_gen_folio`).
    pub ty: String,
    /// Array elements (1 for a plain member, 0 for a flexible array).
    pub count: u64,
    pub old_offset: u64,
    pub new_offset: u64,
    /// `new_offset - old_offset`.
    pub moved: i64,
    /// The type's alignment before and after.
    pub old_align: u64,
    pub new_align: u64,
    /// Why it moved, when it did.
    pub reason: Option<String>,
}

/// Padding that took part of the change, and padding that the change added.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Padding {
    /// Bytes of holes and tail padding that the growth used up.
    pub absorbed: u64,
    /// Bytes of holes and tail padding that appeared.
    pub added: u64,
    pub tail_old: u64,
    pub tail_new: u64,
    /// Sum of the members' own size changes (added and removed members included).
    pub member_growth: i64,
}

/// The allocator's view: the bytes an object takes if it is allocated with
/// kmalloc, before and after.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Allocation {
    pub old: SizeClass,
    pub new: SizeClass,
    /// The size class changes.
    pub crosses: bool,
    /// Real bytes per object: `new.bytes - old.bytes`.
    pub per_object: i64,
    /// How many objects exist, when the user said so.
    pub instances: Option<InstanceCost>,
}

impl Allocation {
    fn new(old: u64, new: u64) -> Self {
        let (old, new) = (kmalloc::class_of(old), kmalloc::class_of(new));
        Allocation {
            crosses: old.bytes != new.bytes,
            per_object: new.bytes as i64 - old.bytes as i64,
            old,
            new,
            instances: None,
        }
    }
}

/// The most objects `--instances` may count: 2^40. The total (count times
/// the per-object change) is checked too: at most 2^56 bytes.
pub const MAX_INSTANCES: u64 = 1 << 40;

/// How many objects of a struct exist (`--instances NAME=COUNT[:NOTE]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Instances {
    pub count: u64,
    /// What the count is (`per memcg, 4 nodes`).
    pub note: Option<String>,
}

/// [`Instances`] times the per-object change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InstanceCost {
    pub count: u64,
    pub note: Option<String>,
    /// `count * per_object`.
    pub total: i64,
}

impl Instances {
    /// Parses `NAME=COUNT` or `NAME=COUNT:NOTE`.
    pub fn parse(spec: &str) -> Result<(String, Instances), Diagnostic> {
        let bad = || {
            Diagnostic::new(format!("bad --instances `{spec}`"))
                .help("write NAME=COUNT or NAME=COUNT:NOTE, e.g. mem_cgroup_per_node=4:per memcg, 4 nodes")
        };
        let (name, rest) = spec.split_once('=').ok_or_else(bad)?;
        let (count, note) = match rest.split_once(':') {
            Some((c, n)) => (c, Some(n.trim().to_string()).filter(|n| !n.is_empty())),
            None => (rest, None),
        };
        let name = name.trim().trim_start_matches("struct ").trim();
        let count: u64 = count.trim().parse().map_err(|_| bad())?;
        if count > MAX_INSTANCES {
            return Err(Diagnostic::new(format!(
                "--instances `{}`: {count} objects is more than 2^40",
                name.trim()
            ))
            .help("give the number of objects that exist at once, e.g. mem_cgroup_per_node=4"));
        }
        if name.is_empty() {
            return Err(bad());
        }
        Ok((name.to_string(), Instances { count, note }))
    }
}

impl GrowthReport {
    /// Multiplies each named struct's per-object change by its instance
    /// count. Names must be structs of the report.
    pub fn apply_instances(&mut self, instances: &[(String, Instances)]) -> Result<(), Diagnostic> {
        for (name, inst) in instances {
            let Some(entry) = self.entries.iter_mut().find(|e| &e.name == name) else {
                let names: Vec<&str> = self.entries.iter().map(|e| e.name.as_str()).collect();
                return Err(Diagnostic::new(format!(
                    "--instances names `{name}`, which is not in this report"
                ))
                .help(format!("the report's structs: {}", names.join(", "))));
            };
            let a = &mut entry.allocation;
            let total = i64::try_from(inst.count)
                .ok()
                .and_then(|count| a.per_object.checked_mul(count))
                .filter(|t| t.unsigned_abs() <= MAX_SIZE << 8)
                .ok_or_else(|| {
                    Diagnostic::new(format!(
                        "--instances {name}={}: {} objects of {:+} bytes each is past 2^56 bytes",
                        inst.count, inst.count, a.per_object
                    ))
                    .help("give the number of objects that exist at once")
                })?;
            a.instances = Some(InstanceCost {
                count: inst.count,
                note: inst.note.clone(),
                total,
            });
        }
        Ok(())
    }

    /// The changelog text: one line per struct, the size class crossings,
    /// why, and notes.
    pub fn text(&self) -> String {
        render::text(self)
    }

    /// One row per struct (and per embedded member that changed).
    pub fn table(&self) -> String {
        render::table(self)
    }

    /// The report as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("growth reports always serialise")
    }
}

/// `name` (an aggregate of `db`) takes size and alignment `new`; every
/// aggregate that embeds it, transitively, is laid out again.
pub fn grow(db: &TypeDb, name: &str, new: Shape) -> Result<GrowthReport, Diagnostic> {
    let root = db.find_struct(name)?;
    check_new_shape(root, new)?;
    let mut entry = entry_for(root, new, Vec::new(), Explanation::default());
    if new.align != root.align {
        entry.why.push(format!(
            "{} is now {}-byte aligned (was {})",
            root.name, new.align, root.align
        ));
    }
    within_limits(spread(db, root, entry, new, None, Mode::Size))
}

/// The report, unless some struct of it grows past [`MAX_SIZE`] (an array
/// of many copies of the changed struct).
fn within_limits(report: GrowthReport) -> Result<GrowthReport, Diagnostic> {
    match report.entries.iter().find(|e| e.new.size > MAX_SIZE) {
        None => Ok(report),
        Some(e) => Err(Diagnostic::new(format!(
            "struct {} would be {} bytes, past 2^48 bytes, the largest address space",
            e.name, e.new.size
        ))
        .help("give a smaller --size")),
    }
}

/// `name` (an aggregate of `db`) takes the layout `new` (same members,
/// other offsets, size or alignment): its line says why it grew, and every
/// aggregate that embeds it is laid out again.
pub fn grow_to(db: &TypeDb, name: &str, new: &Aggregate) -> Result<GrowthReport, Diagnostic> {
    let root = db.find_struct(name)?;
    let (shape, entry) = root_entry(db, root, new);
    let mut report = spread(db, root, entry, shape, None, Mode::Layout);
    note_if_unchanged(&mut report, root, shape);
    Ok(report)
}

/// Two versions of the same types: `name` and every aggregate that embeds it
/// in `before`, with their layouts in `after`.
pub fn compare(before: &TypeDb, after: &TypeDb, name: &str) -> Result<GrowthReport, Diagnostic> {
    let root = before.find_struct(name)?;
    let new_root = after.find_struct(name)?;
    let (shape, entry) = root_entry(before, root, new_root);
    let mut report = spread(before, root, entry, shape, Some(after), Mode::Compare);
    report.source = format!(
        "{} -> {}",
        before.source().display(),
        after.source().display()
    );
    note_if_unchanged(&mut report, root, shape);
    Ok(report)
}

/// The changed struct's own line, when its new member layout is known.
fn root_entry(db: &TypeDb, root: &Aggregate, new: &Aggregate) -> (Shape, Entry) {
    let shape = Shape {
        size: new.size,
        align: new.align,
    };
    let e = explain::explain(db, root, new, &HashMap::new());
    let mut entry = entry_for(root, shape, Vec::new(), Explanation::from(e));
    if shape.align != root.align {
        entry.why.insert(
            0,
            format!(
                "{} is now {}-byte aligned (was {})",
                root.name, shape.align, root.align
            ),
        );
    }
    (shape, entry)
}

fn note_if_unchanged(report: &mut GrowthReport, root: &Aggregate, shape: Shape) {
    if shape.size == root.size && shape.align == root.align {
        report.notes.insert(0, unchanged_note(root));
    }
}

fn unchanged_note(root: &Aggregate) -> String {
    format!(
        "{} keeps its size ({}) and alignment ({}): nothing that embeds it changes",
        root.name, root.size, root.align
    )
}

/// [`compare`] for two headers: a struct the front-end could not lay out
/// is reported with the front-end's error.
#[cfg(feature = "c-header")]
pub fn compare_headers(
    before: &HeaderTypes,
    after: &HeaderTypes,
    name: &str,
) -> Result<GrowthReport, Diagnostic> {
    before.find_struct(name)?;
    after.find_struct(name)?;
    let mut report = compare(&before.db, &after.db, name)?;
    for (types, which) in [(before, "before"), (after, "after")] {
        for (skipped, d) in &types.skipped {
            report.notes.push(format!(
                "struct {skipped} ({which}) could not be laid out, so it is not in this report: {}",
                d.message
            ));
        }
    }
    Ok(report)
}

/// The largest size a report computes with: 2^48 bytes, the largest
/// virtual address space of x86_64 and arm64 with 4-level page tables. Every
/// size and difference of a report then fits an `i64` with room to spare.
pub const MAX_SIZE: u64 = 1 << 48;

fn check_new_shape(root: &Aggregate, new: Shape) -> Result<(), Diagnostic> {
    let name = &root.name;
    if new.align == 0 || !new.align.is_power_of_two() || new.align > MAX_SIZE {
        return Err(Diagnostic::new(format!(
            "alignment {} is not a power of two up to 2^48",
            new.align
        ))
        .help("give --align 1, 2, 4, 8, 16, 32, 64, ..."));
    }
    if new.size > MAX_SIZE {
        return Err(Diagnostic::new(format!(
            "a size of {} bytes for struct {name} is past 2^48 bytes, the largest address space",
            new.size
        ))
        .help(format!("give its new size in bytes (now {})", root.size)));
    }
    if new.size == 0 {
        return Err(
            Diagnostic::new(format!("a size of 0 for struct {name} makes no sense"))
                .help(format!("give its new size in bytes (now {})", root.size)),
        );
    }
    if !new.size.is_multiple_of(new.align) {
        return Err(Diagnostic::new(format!(
            "size {} is not a multiple of the alignment {} of struct {name}",
            new.size, new.align
        ))
        .help(match crate::place::align_up(new.size, new.align) {
            up if up <= MAX_SIZE => format!(
                "C rounds a struct's size up to its alignment: give --size {up} or another --align"
            ),
            _ => "C rounds a struct's size up to its alignment: give a smaller --align".to_string(),
        }));
    }
    if new.size == root.size && new.align == root.align {
        return Err(Diagnostic::new(format!(
            "struct {name} is already {} bytes, aligned to {}: nothing changes",
            root.size, root.align
        ))
        .help("give the new --size (and --align) the struct will have"));
    }
    Ok(())
}

/// The explanation parts of an entry.
#[derive(Default)]
struct Explanation {
    parts: Vec<Part>,
    embeds: Vec<Embedded>,
    padding: Padding,
    why: Vec<String>,
}

impl From<explain::Explained> for Explanation {
    fn from(e: explain::Explained) -> Self {
        Explanation {
            parts: e.parts,
            embeds: e.embeds,
            padding: e.padding,
            why: e.why,
        }
    }
}

fn entry_for(old: &Aggregate, new: Shape, why: Vec<String>, e: Explanation) -> Entry {
    let mut entry = Entry {
        name: old.name.clone(),
        kind: match old.kind {
            AggregateKind::Struct => "struct",
            AggregateKind::Union => "union",
        },
        anonymous: old.is_anonymous(),
        old: Shape {
            size: old.size,
            align: old.align,
        },
        new,
        delta: new.size as i64 - old.size as i64,
        line: String::new(),
        parts: e.parts,
        embeds: e.embeds,
        padding: e.padding,
        why: e.why,
        allocation: Allocation::new(old.size, new.size),
    };
    entry.why.extend(why);
    entry.line = render::line(&entry);
    entry
}

/// Visits the embedders of `root` (embedded types first), lays each one out
/// again (or takes its layout from `after`), and explains it.
fn spread(
    db: &TypeDb,
    root: &Aggregate,
    root_entry: Entry,
    root_new: Shape,
    after: Option<&TypeDb>,
    mode: Mode,
) -> GrowthReport {
    let all: Vec<&Aggregate> = db.aggregates().collect();
    let root_index = db
        .index_of(root)
        .expect("the root comes from this database");
    let order = embedder_order(db, &all, root_index);
    let mut notes = Vec::new();
    if db.align_inferred() {
        notes.push(format!(
            "{} states no alignments: they are inferred from offsets like pahole does, and an \
aligned attribute that left no padding cannot be seen",
            db.source().display()
        ));
    }
    if order.is_empty() {
        notes.push(format!(
            "nothing in {} embeds {} by value (members that point to it do not count)",
            db.source().display(),
            root.display_name()
        ));
    }
    let mut changed: HashMap<usize, Shape> = HashMap::new();
    let root_old = Shape {
        size: root.size,
        align: root.align,
    };
    if root_new != root_old {
        changed.insert(root_index, root_new);
    }
    let mut entries = vec![root_entry];
    for index in order {
        let agg = all[index];
        let touched = (0..agg.members.len()).any(|m| {
            db.member_aggregate(agg, m)
                .and_then(|t| db.index_of(t))
                .is_some_and(|t| changed.contains_key(&t))
        });
        if !touched {
            continue;
        }
        let (new, assumptions) = new_layout(db, agg, &changed, after, &mut notes);
        let e = explain::explain(db, agg, &new, &changed);
        let shape = Shape {
            size: new.size,
            align: new.align,
        };
        entries.push(entry_for(agg, shape, assumptions, Explanation::from(e)));
        if shape
            != (Shape {
                size: agg.size,
                align: agg.align,
            })
        {
            changed.insert(index, shape);
        }
    }
    GrowthReport {
        mode,
        source: db.source().display().to_string(),
        root: root.name.clone(),
        entries,
        notes,
    }
}

/// The new layout of an embedder: from `after` when comparing (predicted
/// when it is not there), else laid out again.
fn new_layout(
    db: &TypeDb,
    agg: &Aggregate,
    changed: &HashMap<usize, Shape>,
    after: Option<&TypeDb>,
    notes: &mut Vec<String>,
) -> (Aggregate, Vec<String>) {
    if let Some(after) = after {
        if let Some(found) = after.find(&agg.display_name()) {
            return (found.clone(), Vec::new());
        }
        notes.push(format!(
            "{} is not in {}: its new layout is computed from the old one",
            agg.display_name(),
            after.source().display()
        ));
    }
    let relaid = relayout::relayout(db, agg, changed);
    (relaid.agg, relaid.assumptions)
}

/// The aggregates that embed `root` by value, transitively, each once, every
/// one after all the types it embeds from that set.
fn embedder_order(db: &TypeDb, all: &[&Aggregate], root: usize) -> Vec<usize> {
    let mut successors: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut indegree: HashMap<usize, usize> = HashMap::new();
    let mut seen = HashSet::from([root]);
    let mut queue = VecDeque::from([root]);
    while let Some(t) = queue.pop_front() {
        let mut next: Vec<usize> = Vec::new();
        for (e, _) in db.embedders_of(all[t]) {
            if let Some(i) = db.index_of(e) {
                if !next.contains(&i) {
                    next.push(i);
                }
            }
        }
        // An aggregate that embeds itself (only corrupt types do; the
        // readers refuse them) is not its own embedder here.
        next.retain(|&e| e != root && e != t);
        for &e in &next {
            *indegree.entry(e).or_default() += 1;
            if seen.insert(e) {
                queue.push_back(e);
            }
        }
        successors.insert(t, next);
    }
    let mut order = Vec::new();
    let mut ready = VecDeque::from([root]);
    while let Some(t) = ready.pop_front() {
        if t != root {
            order.push(t);
        }
        for &e in successors.get(&t).map(Vec::as_slice).unwrap_or(&[]) {
            let d = indegree.get_mut(&e).expect("counted above");
            *d -= 1;
            if *d == 0 {
                ready.push_back(e);
            }
        }
    }
    order
}
