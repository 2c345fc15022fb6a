//! What pass 2 concludes for one struct: its inferred classes, the lines
//! where a lockless writer shares a cache line with read-mostly members,
//! how many lines each hot path touches past the fewest it could, the
//! evidence, and what that costs the fast paths.

use crate::infer::classify::{Class, Verdict};
use crate::infer::sites::{Heat, Site};
use crate::Struct;
use serde::Serialize;
use std::collections::BTreeSet;

/// Sites cited per member in a report (the access file has more).
pub const MAX_CITES: usize = 3;

/// Where a finding stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// A lockless writer shares a line with read-mostly members, and the
    /// classes of those members are decided: a patch is proposed.
    Conflict,
    /// A conflict rests on a member the rules could not decide: listed
    /// apart, never patched.
    Ambiguous,
    /// No decided conflict, but the hot paths touch more lines than their
    /// bytes need (the members they use are spread over the struct): a
    /// patch packs them ([`PathSpread`]).
    Spread,
    /// The inferred classes put no lockless writer next to read-mostly
    /// data, and every hot path touches as few lines as it can.
    NoConflict,
    /// Pass 2 could not analyse it (the reason says why).
    NotAnalysed,
}

impl Status {
    pub fn word(&self) -> &'static str {
        match self {
            Status::Conflict => "conflict",
            Status::Ambiguous => "ambiguous",
            Status::Spread => "hot paths spread",
            Status::NoConflict => "no conflict",
            Status::NotAnalysed => "not analysed",
        }
    }
}

/// One member on a conflict line, with its evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Party {
    pub member: String,
    /// The access file's class key (`lockless_atomic`, `read_mostly`, ...).
    pub class: String,
    /// Why the rules could not decide, when they could not.
    pub ambiguous: Option<String>,
    /// Distinct functions whose hot sites write (for a writer) or read
    /// (for a victim) it.
    pub hot_functions: Vec<String>,
    /// The hot roots that reach those sites.
    pub hot_roots: Vec<String>,
    /// The first sites, as `file:line function kind how locks`.
    pub evidence: Vec<String>,
}

/// One cache line where a lockless writer meets read-mostly members.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// The line, counted from the struct's start.
    pub line: u64,
    pub writers: Vec<Party>,
    pub victims: Vec<Party>,
    /// Hot writing functions times hot reading functions: how many
    /// (writer, reader) pairs of fast-path code bounce the line.
    pub exposure: u64,
    /// The cache-line transfers the line costs one pass over the hot roots
    /// that a better order would not ([`misses`]): none when no order of
    /// the struct's members can part the writers from the victims
    /// ([`Conflict::fixed_outside`]).
    pub misses: u64,
    /// Why no order of the struct's own members removes the conflict, when
    /// none does: a struct no larger than a line keeps every member on one
    /// line whatever their order, so the fix is outside it (padding it to
    /// a line of its own, moving the writer out of it, or the order of the
    /// struct that embeds it). Its line then counts no miss and costs
    /// nothing; the roots that bounce it are still listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_outside: Option<String>,
}

/// The cache-line transfers a shared line costs one pass over the hot
/// roots: every hot root that reaches a writer or a victim on it takes the
/// line back from the CPU that last wrote it. None when no hot code writes
/// it, or none reads it (the line then only moves on slow paths).
pub fn misses(writers: &[Party], victims: &[Party]) -> u64 {
    let roots = |ps: &[Party]| -> BTreeSet<String> {
        ps.iter()
            .flat_map(|p| p.hot_roots.iter().cloned())
            .collect()
    };
    let (w, r) = (roots(writers), roots(victims));
    if w.is_empty() || r.is_empty() {
        return 0;
    }
    w.union(&r).count() as u64
}

/// One hot path of a struct in its declared order, the struct at the
/// start of a line (as a slab or a line-aligned container puts it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathSpread {
    /// The hot root whose hot sites make the path.
    pub root: String,
    /// Lines its members' bytes touch.
    pub lines: u64,
    /// The fewest lines any order could touch ([`crate::paths::fewest_lines`]).
    pub fewest: u64,
    /// Distinct bytes it touches.
    pub bytes: u64,
    /// Members it uses.
    pub members: usize,
    /// Whether one of them is written (classed lockless or locked): a
    /// singleton's line that its path only reads stays cached.
    pub writes: bool,
}

impl PathSpread {
    /// Lines touched past the fewest: cache misses a pass over the path
    /// takes that a packed order would not.
    pub fn excess(&self) -> u64 {
        self.lines.saturating_sub(self.fewest)
    }
}

/// The hot paths of `model` (its `[struct.NAME.paths]` applied) at its
/// declared offsets, the struct starting a line.
pub fn spread(model: &Struct, size: u64, align: u64, line: u64) -> Vec<PathSpread> {
    let Some(layout) =
        crate::Layout::declared(model, size, align, line, crate::Placement::Offset(0))
    else {
        return Vec::new();
    };
    crate::paths::path_lines(model, &layout)
        .into_iter()
        .enumerate()
        .map(|(i, p)| PathSpread {
            members: model
                .fields
                .iter()
                .filter(|f| f.paths.iter().any(|u| u.path as usize == i))
                .count(),
            writes: model
                .fields
                .iter()
                .filter(|f| f.paths.iter().any(|u| u.path as usize == i))
                .any(|f| {
                    matches!(
                        f.access,
                        crate::Access::Lockless { .. } | crate::Access::LockedWrite { .. }
                    )
                }),
            fewest: crate::paths::fewest_lines(model, i as u32, line),
            root: p.name,
            lines: p.lines,
            bytes: p.bytes,
        })
        .collect()
}

/// The conflicts of `model` (classes applied) at its declared offsets,
/// with the evidence from `verdicts` (one per field, as classified).
///
/// A party's hot functions and roots are those of its hot sites whose
/// bytes lie on the conflict's line (`names` resolves a sub-member such as
/// `lrugen.max_seq` to its bytes): a read of an embedded struct's first
/// member is no miss on the line its last member shares with a writer.
pub fn conflicts(
    model: &Struct,
    size: u64,
    align: u64,
    line: u64,
    verdicts: &[Verdict],
    names: &crate::access::MemberNames,
) -> Vec<Conflict> {
    let Some(layout) = crate::Layout::declared(model, size, align, line, crate::Placement::Aligned)
    else {
        return Vec::new();
    };
    let bytes = SiteBytes::new(model, names);
    let mut out = Vec::new();
    for c in crate::layout::reported_conflicts(model, &layout) {
        let on = c.line * line.max(1)..(c.line + 1) * line.max(1);
        let party = |name: &str, verdicts: &[Verdict], writer: bool| {
            party(name, verdicts, writer, &|s: &Site| {
                bytes
                    .of(s)
                    .is_none_or(|b| b.start < on.end && on.start < b.end)
            })
        };
        // Lock words judged as writers only conflict through their lockers:
        // the finding is about lockless writes.
        let writers: Vec<Party> = c
            .lockless
            .iter()
            .chain(&c.other_group)
            .filter(|w| !c.lock_words.contains(w))
            .map(|w| party(w, verdicts, true))
            .collect();
        let victims: Vec<Party> = c
            .read_mostly
            .iter()
            .map(|v| party(v, verdicts, false))
            .collect();
        if writers.is_empty() || victims.is_empty() {
            continue;
        }
        let w: BTreeSet<&String> = writers.iter().flat_map(|p| &p.hot_functions).collect();
        let r: BTreeSet<&String> = victims.iter().flat_map(|p| &p.hot_functions).collect();
        out.push(Conflict {
            line: c.line,
            exposure: (w.len() * r.len()) as u64,
            misses: misses(&writers, &victims),
            writers,
            victims,
            fixed_outside: None,
        });
    }
    out
}

/// Why no order of a struct of `size` bytes parts a conflict's writers
/// from its victims, when none does: all of it fits in one `line`, so
/// every order keeps them on the same line, and it lives only inside the
/// structs that embed it (`embedders` of them, no instance of its own), so
/// padding it to a line of its own grows each of them too: the fix is
/// outside it. `None` for a larger struct, whose members an order can
/// spread over lines, or for one the sources make on its own (its padding
/// is its own: `propose` proposes it).
pub fn fixed_outside(size: u64, line: u64, embedders: usize, own: bool) -> Option<String> {
    (size <= line.max(1) && embedders > 0 && !own).then(|| {
        format!(
            "the struct fits in one line ({size} B of {line}) and lives only inside {embedders} struct(s) that embed it: no order of its members parts the writer from the victims, and a line of its own grows each of them; the fix is outside it (the writer moved out, or the struct split)"
        )
    })
}

/// The field's verdict: by its name as the model spells it, or the first
/// part of a bit-field run's name.
fn verdict_of<'v>(name: &str, verdicts: &'v [Verdict]) -> Option<&'v Verdict> {
    verdicts.iter().find(|v| v.name == name).or_else(|| {
        verdicts
            .iter()
            .find(|v| name.split(':').next() == Some(v.name.as_str()))
    })
}

/// The bytes each site touches, from the struct's start in the declared
/// order: its member's (a sub-member, a member of an anonymous aggregate)
/// when the names know it, else its field's.
struct SiteBytes<'a> {
    model: &'a Struct,
    names: std::collections::HashMap<&'a str, std::ops::Range<u64>>,
}

impl<'a> SiteBytes<'a> {
    fn new(model: &'a Struct, names: &'a crate::access::MemberNames) -> Self {
        SiteBytes {
            model,
            names: names
                .iter()
                .map(|n| (n.name.as_str(), n.bytes.clone()))
                .collect(),
        }
    }

    /// `None` when the field has no declared offset.
    fn of(&self, s: &Site) -> Option<std::ops::Range<u64>> {
        let f = self.model.fields.get(s.field)?;
        let start = f.original_offset?;
        let field = start..start + f.size;
        // `cnf.data[3]` is looked up as such, then `cnf.data`, then `cnf`;
        // `folios[gen]` is `folios`.
        for at in crate::access::names::enclosing(&s.member) {
            if let Some(b) = self.names.get(at.as_str()) {
                // Within the field, or it names something else.
                if b.start >= field.start && b.end <= field.end {
                    return Some(b.clone());
                }
            }
        }
        Some(field)
    }
}

fn party(name: &str, verdicts: &[Verdict], writer: bool, on_line: &dyn Fn(&Site) -> bool) -> Party {
    let Some(v) = verdict_of(name, verdicts) else {
        return Party {
            member: name.to_string(),
            class: String::new(),
            ambiguous: None,
            hot_functions: Vec::new(),
            hot_roots: Vec::new(),
            evidence: Vec::new(),
        };
    };
    let wanted = |s: &&Site| s.kind.writes() == writer;
    let hot: Vec<&Site> = v
        .sites
        .iter()
        .filter(wanted)
        .filter(|s| s.heat == Heat::Hot && on_line(s))
        .collect();
    let functions: BTreeSet<String> = hot.iter().map(|s| s.function.clone()).collect();
    let roots: BTreeSet<String> = hot
        .iter()
        .flat_map(|s| s.hot_roots.iter().cloned())
        .collect();
    // Hot sites first, then the others of the same side, in the verdict's order.
    let mut cited: Vec<&Site> = hot.clone();
    cited.extend(
        v.sites
            .iter()
            .filter(wanted)
            .filter(|s| s.heat != Heat::Hot || !on_line(s)),
    );
    Party {
        member: name.to_string(),
        class: v.key(),
        ambiguous: v.ambiguous.clone(),
        hot_functions: functions.into_iter().collect(),
        hot_roots: roots.into_iter().collect(),
        evidence: cited
            .iter()
            .take(MAX_CITES)
            .map(|s| format!("{} ({})", s.cite(), heat_word(s)))
            .collect(),
    }
}

fn heat_word(s: &Site) -> String {
    match (s.heat, &s.cold_because) {
        (Heat::Hot, _) => match &s.hot_via {
            Some(via) => format!("hot: {via}"),
            None => "hot".to_string(),
        },
        (Heat::Warm, Some(why)) => format!("warm: {why}"),
        (Heat::Warm, None) => "warm".to_string(),
        (Heat::Cold, Some(why)) => format!("cold: {why}"),
        (Heat::Cold, None) => "cold".to_string(),
    }
}

/// The members the rules could not decide that share a line with a
/// lockless writer (a lock word counts) that hot code runs, of `model` at
/// its declared offsets: were such a member read-mostly, the line would be
/// a conflict that costs the fast paths.
pub fn undecided_on_writer_lines(model: &Struct, line: u64, verdicts: &[Verdict]) -> Vec<String> {
    let line = line.max(1);
    let span = |f: &crate::Field| {
        let start = f.original_offset?;
        (f.size > 0).then(|| (start / line, (start + f.size - 1) / line))
    };
    // A writer no hot code runs costs no miss whichever class the member
    // next to it has (as a conflict it would be listed, not patched): only
    // hot writers leave the question open.
    let hot_writer = |i: usize| {
        let name = &model.fields[i].name;
        verdict_of(name, verdicts).is_some_and(|v| {
            v.sites
                .iter()
                .any(|s| s.kind.writes() && s.heat == Heat::Hot)
        })
    };
    let writer_lines: Vec<(u64, u64)> = model
        .fields
        .iter()
        .enumerate()
        .filter(|(i, f)| f.rule_access().is_lockless() && hot_writer(*i))
        .filter_map(|(_, f)| span(f))
        .collect();
    let mut out = Vec::new();
    for v in verdicts.iter().filter(|v| v.ambiguous.is_some()) {
        let Some(f) = model.fields.get(v.field) else {
            continue;
        };
        if f.rule_access().is_lockless() {
            continue;
        }
        let Some((a, b)) = span(f) else {
            continue;
        };
        if writer_lines.iter().any(|&(c, d)| a <= d && c <= b) {
            out.push(v.name.clone());
        }
    }
    out
}

/// Whether any member of a conflict that costs the fast paths (misses
/// above 0) has an ambiguous verdict: a line no hot code writes costs
/// nothing whichever class its members have.
pub fn rests_on_ambiguity(conflicts: &[Conflict]) -> bool {
    conflicts
        .iter()
        .filter(|c| c.misses > 0)
        .flat_map(|c| c.writers.iter().chain(&c.victims))
        .any(|p| p.ambiguous.is_some())
}

/// How many verdicts are of each class, for the report (`lockless 3,
/// locked 2, read-mostly 10, cold 4`).
pub fn class_counts(verdicts: &[Verdict]) -> [usize; 4] {
    let mut n = [0; 4];
    for v in verdicts {
        let i = match v.class {
            Class::LocklessAtomic => 0,
            Class::LockedWrite(_) => 1,
            Class::ReadMostly => 2,
            Class::Cold => 3,
        };
        n[i] += 1;
    }
    n
}
