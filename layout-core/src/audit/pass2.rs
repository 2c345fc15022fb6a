//! Pass 2 of an audit: `infer`'s analysis of the first pass-1 candidates
//! that an audited source names, within a budget of structs. Each
//! translation unit is parsed once and walked once for every selected
//! struct its subsystem may touch; its graph and each struct's sites are
//! kept in the [`super::cache`], so a second run parses nothing.

use super::cache::{self, Cache};
use super::candidates::{self, Candidate, Mentions};
use super::cost;
use super::finding::{self, Status};
use super::hotuse::{self, HotCode};
use super::lifetime::{Lifetime, Lifetimes};
use super::reading;
use super::report::{Finding, Report, UnitLeftOut};
use super::roots::Roots;
use super::tree_allocs;
use crate::infer::clang::{self, Request, Source, StructSites, UnitGraph};
use crate::infer::{self, render, Rules};
use crate::typedb::TypeDb;
use crate::Diagnostic;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Embedders named per finding.
const EMBEDDERS_SHOWN: usize = 5;

/// One translation unit of the audit: its file, its libclang arguments and
/// the subsystems (indices into the roots file) whose sources list it.
#[derive(Clone, Debug)]
pub struct Unit {
    pub path: PathBuf,
    /// The path as the report names it (relative to the source tree).
    pub shown: String,
    pub args: Vec<String>,
    pub subsystems: Vec<usize>,
}

/// What pass 2 is doing, for a progress indicator.
#[derive(Clone, Debug)]
pub enum Progress<'a> {
    /// Unit `index` of `total` (1-based) is being walked for `structs`
    /// structs, or was found in the cache.
    Unit {
        index: usize,
        total: usize,
        path: &'a str,
        structs: usize,
        cached: bool,
    },
    /// Struct `index` of `total` (1-based) is being classified.
    Struct {
        index: usize,
        total: usize,
        name: &'a str,
    },
}

/// Everything pass 2 reads.
pub struct Audit<'a> {
    pub db: &'a TypeDb,
    /// Pass 1's ranking, and how many structs the headers define.
    pub candidates: &'a [Candidate],
    pub structs_defined: usize,
    pub roots: &'a Roots,
    pub units: &'a [Unit],
    /// Structs analysed at most.
    pub budget: usize,
    pub line: u64,
    /// The fingerprint of the audited tree (headers, `.config`), in the cache keys.
    pub tree: String,
    /// Data-type profiles (`perf report -s type,typeoff`, `perf annotate
    /// --data-type`): each file's name and rows. A struct's rows decide its
    /// members' write fractions as in `infer --perf-mem`.
    pub profiles: &'a [(String, Vec<crate::infer::data_type::TypeSamples>)],
    /// Directories whose files are cited by their path relative to them
    /// (the source tree, the kernel's source tree), first match wins.
    pub shown_under: Vec<PathBuf>,
    /// Each unit parsed in a child process within these limits (the
    /// command line's own program); `None`: in this process.
    pub isolation: Option<clang::isolate::Isolation>,
    /// The whole source tree, read for the slab caches that make a struct
    /// per object outside the audited sources ([`super::tree_allocs`]);
    /// `None`: the audited sources alone.
    pub alloc_tree: Option<PathBuf>,
}

impl Audit<'_> {
    /// `file` relative to the first of [`Audit::shown_under`] that holds it.
    pub fn shown(&self, file: &str) -> String {
        for dir in &self.shown_under {
            let root = format!("{}/", dir.display().to_string().trim_end_matches('/'));
            if let Some(rel) = file.strip_prefix(&root) {
                return rel.to_string();
            }
        }
        file.to_string()
    }
}

/// Runs pass 2 and ranks the findings.
pub fn analyse(
    a: &Audit<'_>,
    cache: &mut Cache,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Report, Diagnostic> {
    let mut notes = Vec::new();
    // Which structs each unit names, and each unit's cache key.
    let mut mentions = Mentions::default();
    let mut keys = Vec::with_capacity(a.units.len());
    let wrappers: Vec<String> = {
        let set: BTreeSet<&String> = a
            .roots
            .subsystems
            .iter()
            .flat_map(|s| &s.lock_wrappers)
            .collect();
        set.into_iter().cloned().collect()
    };
    // A unit that does not read (not UTF-8, over the limit, gone) is left
    // out, like one libclang stops on: the audit goes on.
    let mut unreadable: BTreeMap<usize, String> = BTreeMap::new();
    let mut lifetimes = Lifetimes::default();
    let mut hot_code = HotCode::default();
    let mut hot_units: BTreeSet<usize> = BTreeSet::new();
    for (i, u) in a.units.iter().enumerate() {
        let text = match crate::files::text(&u.path, crate::files::Input::Source) {
            Ok(t) => t,
            Err(e) => {
                unreadable.insert(i, e.to_string());
                keys.push(String::new());
                continue;
            }
        };
        mentions.add(i, &text);
        lifetimes.add(&u.shown, &text);
        hot_code.add(&text);
        let defines_root = u.subsystems.iter().any(|&s| {
            a.roots.subsystems[s]
                .hot
                .iter()
                .any(|r| candidates::defines_function(&text, r))
        });
        if defines_root {
            hot_units.insert(i);
        }
        keys.push(cache::unit_key(
            &u.path,
            text.as_bytes(),
            &u.args,
            &wrappers,
            &a.tree,
        ));
    }
    if let Some(root) = &a.alloc_tree {
        let found = tree_allocs::scan(root);
        if found.truncated {
            notes.push(format!(
                "{}: the walk for slab caches stopped at {} C files ({} entries)",
                root.display(),
                found.files_listed,
                found.entries
            ));
        }
        lifetimes.add_tree_caches(&found.caches);
    }
    // Which units use each candidate: they name it, or a struct that embeds it.
    let using: Vec<Vec<usize>> = a
        .candidates
        .iter()
        .map(|c| {
            let mut set: BTreeSet<usize> = mentions.of(&c.name).into_iter().collect();
            if let Some(agg) =
                a.db.find_all(&c.name)
                    .into_iter()
                    .find(|x| x.name == c.name)
            {
                for p in crate::containers::embedding_paths(a.db, agg) {
                    set.extend(mentions.of(&p.container));
                }
            }
            set.into_iter().collect()
        })
        .collect();
    // Pass 2's order: the candidates some unit uses, weighed by how many
    // and by how much the fast paths' code uses them: how often the fast
    // paths' own units (those that define a hot root: their header
    // helpers are not read here) name them, and the functions the hot
    // roots reach by name in every unit, each mention halved per call
    // level.
    let all_hot: Vec<String> = a
        .roots
        .subsystems
        .iter()
        .flat_map(|s| s.hot.iter().cloned())
        .collect();
    let hot_uses = hot_code.uses(&all_hot);
    let mut order: Vec<usize> = (0..a.candidates.len())
        .filter(|&i| !using[i].is_empty())
        .collect();
    let unused = a.candidates.len() - order.len();
    order.sort_by_cached_key(|&i| {
        let c = &a.candidates[i];
        c.key(
            using[i].len(),
            mentions.count_in(&c.name, &hot_units) * hotuse::ROOT_WEIGHT
                + hot_uses.get(&c.name).copied().unwrap_or(0),
        )
    });
    let selected: Vec<(usize, &Candidate)> = order
        .iter()
        .take(a.budget)
        .enumerate()
        .map(|(rank, &i)| (rank, &a.candidates[i]))
        .collect();
    if unused > 0 {
        notes.push(format!(
            "{unused} pass-1 candidate(s) are used by no audited source (neither named nor embedded in a struct one names): left out"
        ));
    }
    let past: Vec<(String, u64)> = order
        .iter()
        .skip(a.budget)
        .map(|&i| {
            (
                a.candidates[i].name.clone(),
                a.candidates[i].exposure.shared_bytes,
            )
        })
        .collect();
    // Per selected struct: its subsystems (those of the units that use it), and their units.
    let subsystems_of: Vec<BTreeSet<usize>> = order
        .iter()
        .take(a.budget)
        .map(|&i| {
            using[i]
                .iter()
                .flat_map(|&u| a.units[u].subsystems.iter().copied())
                .collect()
        })
        .collect();
    let units_of: Vec<Vec<usize>> = subsystems_of
        .iter()
        .map(|subs| {
            (0..a.units.len())
                .filter(|&u| a.units[u].subsystems.iter().any(|s| subs.contains(s)))
                .collect()
        })
        .collect();
    // Walk every unit once for the structs that need it (or read the cache).
    let mut graphs: Vec<Option<UnitGraph>> = vec![None; a.units.len()];
    let mut sites: BTreeMap<(usize, usize), StructSites> = BTreeMap::new();
    let mut walked = 0;
    let mut from_cache = 0;
    let mut left_out: Vec<UnitLeftOut> = unreadable
        .iter()
        .map(|(&u, why)| {
            notes.push(format!("{}: left out: {why}", a.units[u].shown));
            UnitLeftOut {
                unit: a.units[u].shown.clone(),
                reason: why.clone(),
            }
        })
        .collect();
    let needed: Vec<Vec<usize>> = (0..a.units.len())
        .map(|u| {
            (0..selected.len())
                .filter(|&s| units_of[s].contains(&u))
                .collect()
        })
        .collect();
    let units_total = needed.iter().filter(|n| !n.is_empty()).count();
    for (u, unit) in a.units.iter().enumerate() {
        let needing = &needed[u];
        if needing.is_empty() || unreadable.contains_key(&u) {
            continue;
        }
        walked += 1;
        // A unit libclang stopped on stays stopped until its key changes.
        let failed_key = format!("{}-failed", keys[u]);
        if let Some(why) = cache.get::<String>(&failed_key) {
            from_cache += 1;
            notes.push(format!("{}: left out: {why}", unit.shown));
            left_out.push(UnitLeftOut {
                unit: unit.shown.clone(),
                reason: why,
            });
            continue;
        }
        let graph: Option<UnitGraph> = cache.get(&keys[u]);
        let mut missing = Vec::new();
        for &s in needing {
            match cache.get::<StructSites>(&cache::sites_key(&keys[u], &selected[s].1.name)) {
                Some(st) => {
                    sites.insert((u, s), st);
                }
                None => missing.push(s),
            }
        }
        let cached = graph.is_some() && missing.is_empty();
        progress(Progress::Unit {
            index: walked,
            total: units_total,
            path: &unit.shown,
            structs: needing.len(),
            cached,
        });
        if cached {
            from_cache += 1;
            graphs[u] = graph;
            continue;
        }
        let names: Vec<String> = missing
            .iter()
            .map(|&s| selected[s].1.name.clone())
            .collect();
        let src = Source {
            path: unit.path.clone(),
            args: unit.args.clone(),
        };
        let walked_unit = match &a.isolation {
            Some(iso) => clang::isolate::walk_unit_isolated(iso, &src, &names, &wrappers),
            None => clang::walk_unit(&src, &names, &wrappers).map_err(|diagnostic| {
                clang::isolate::UnitFailure {
                    diagnostic,
                    repeatable: true,
                }
            }),
        };
        match walked_unit {
            Ok((g, per)) => {
                cache.put(&keys[u], &g);
                for (&s, st) in missing.iter().zip(per) {
                    cache.put(&cache::sites_key(&keys[u], &selected[s].1.name), &st);
                    sites.insert((u, s), st);
                }
                graphs[u] = Some(g);
            }
            Err(e) => {
                // A limit, a crash or a refused include is tried again next run.
                if e.repeatable {
                    cache.put(&failed_key, &e.to_string());
                }
                notes.push(format!("{}: left out: {e}", unit.shown));
                left_out.push(UnitLeftOut {
                    unit: unit.shown.clone(),
                    reason: e.to_string(),
                });
            }
        }
    }
    let total = selected.len();
    let mut findings = Vec::new();
    let mut joins = Joins::default();
    for (s, (rank, c)) in selected.iter().enumerate() {
        progress(Progress::Struct {
            index: s + 1,
            total,
            name: &c.name,
        });
        let mut f = struct_finding(a, *rank, c, &lifetimes);
        let refs: Vec<(usize, &UnitGraph, &StructSites)> = units_of[s]
            .iter()
            .filter_map(|&u| Some((u, graphs[u].as_ref()?, sites.get(&(u, s))?)))
            .collect();
        f.units = refs.len();
        if let Err(why) = classify(
            a,
            c,
            &subsystems_of[s],
            &refs,
            &lifetimes,
            &mut joins,
            &mut f,
        ) {
            f.status = Status::NotAnalysed;
            f.reason = Some(why);
        }
        findings.push(f);
    }
    let mut report = Report::new(findings);
    report.structs = a.structs_defined;
    report.candidates = a.candidates.len();
    report.budget = a.budget;
    report.analysed = total;
    report.units = walked;
    report.units_cached = from_cache;
    report.past_budget = past;
    report.notes = notes;
    report.units_left_out = left_out;
    Ok(report)
}

/// A finding with what pass 1 knows.
fn struct_finding(a: &Audit<'_>, rank: usize, c: &Candidate, lives: &Lifetimes) -> Finding {
    let agg =
        a.db.find_all(&c.name)
            .into_iter()
            .find(|x| x.name == c.name);
    let lifetime = agg.map_or(Lifetime::Unknown, |agg| lives.of(a.db, agg));
    let (embedders, embedder_count) = match agg {
        Some(agg) => {
            let paths = crate::containers::embedding_paths(a.db, agg);
            let n = paths.len();
            (
                paths
                    .iter()
                    .take(EMBEDDERS_SHOWN)
                    .map(|p| p.spelled())
                    .collect(),
                n,
            )
        }
        None => (Vec::new(), 0),
    };
    Finding {
        name: c.name.clone(),
        defined_at: format!(
            "{}:{}",
            a.shown(&c.definition.header.display().to_string()),
            c.definition.line
        ),
        header: c.definition.header.clone(),
        size: c.size,
        status: Status::NoConflict,
        reason: None,
        exposure: 0,
        conflicts: Vec::new(),
        paths: Vec::new(),
        excess_lines: 0,
        misses: 0,
        cost: 0,
        lifetime,
        reading: None,
        pass1_rank: rank + 1,
        pass1_shared_bytes: c.exposure.shared_bytes,
        embedders,
        embedder_count,
        classes: [0; 4],
        units: 0,
        ambiguous_members: Vec::new(),
        access_file: String::new(),
    }
}

/// The joined graphs of the unit sets already analysed, by units and roots:
/// structs of the same subsystems share one.
type Joins = BTreeMap<(Vec<usize>, Vec<String>, Vec<String>), clang::Joined>;

/// Joins the struct's units, classifies its members and finds its conflicts.
fn classify(
    a: &Audit<'_>,
    c: &Candidate,
    subsystems: &BTreeSet<usize>,
    refs: &[(usize, &UnitGraph, &StructSites)],
    lives: &Lifetimes,
    joins: &mut Joins,
    f: &mut Finding,
) -> Result<(), String> {
    let agg =
        a.db.find_all(&c.name)
            .into_iter()
            .find(|x| x.name == c.name)
            .ok_or_else(|| "not in the probe's types".to_string())?;
    let model = a.db.to_flat_model(agg);
    // Roots of its subsystems that its units define, in file order.
    let mut hot: Vec<String> = Vec::new();
    let mut cold: Vec<String> = Vec::new();
    let mut wrappers: Vec<String> = Vec::new();
    let mut undefined = Vec::new();
    for &s in subsystems {
        let sub = &a.roots.subsystems[s];
        for (list, out) in [(&sub.hot, &mut hot), (&sub.cold, &mut cold)] {
            for r in list {
                if out.contains(r) {
                    continue;
                }
                if refs.iter().any(|(_, g, _)| g.defines(r)) {
                    out.push(r.clone());
                } else {
                    undefined.push(r.clone());
                }
            }
        }
        for w in &sub.lock_wrappers {
            if !wrappers.contains(w) {
                wrappers.push(w.clone());
            }
        }
    }
    let req = Request {
        struct_name: c.name.clone(),
        sources: Vec::new(),
        hot: hot.clone(),
        cold: cold.clone(),
        lock_wrappers: wrappers,
    };
    let key = (
        refs.iter().map(|(u, _, _)| *u).collect::<Vec<usize>>(),
        hot.clone(),
        cold.clone(),
    );
    if !joins.contains_key(&key) {
        let graphs: Vec<&UnitGraph> = refs.iter().map(|(_, g, _)| *g).collect();
        let joined = clang::join(&graphs, &hot, &cold).map_err(|e| e.to_string())?;
        joins.insert(key.clone(), joined);
    }
    let struct_sites: Vec<&StructSites> = refs.iter().map(|(_, _, s)| *s).collect();
    let mut analysis = clang::combine_joined(&model, &req, &joins[&key], &struct_sites)
        .map_err(|e| e.to_string())?;
    for site in &mut analysis.sites {
        site.file = a.shown(&site.file);
    }
    // Reached as the running context's own instance: that decides how
    // its lines cost, whatever allocates it.
    if let Some(e) = super::lifetime::running_context(&analysis.sites) {
        f.lifetime = Lifetime::Running(match f.lifetime.evidence() {
            Some(a) => format!("{e}; {}: {a}", f.lifetime.word()),
            None => e,
        });
    } else if let Some(l) = lives.per_cpu(&c.name, &analysis.sites) {
        // Per-CPU instances: whose the fast paths reach decides how
        // their lines cost, whatever else the sources show.
        f.lifetime = l;
    }
    let rules = Rules {
        line: a.line,
        have_roots: !hot.is_empty(),
        have_sources: true,
        ..Rules::default()
    };
    let mut hits = Vec::new();
    let mut profiled = Vec::new();
    for (file, rows) in a.profiles {
        let (h, _) = infer::profile::from_data_type(
            &model,
            rows,
            file,
            &infer::profile::Placement::default(),
        );
        if !h.is_empty() {
            profiled.push(file.clone());
        }
        hits.extend(h);
    }
    let verdicts = infer::classify(&model, &hits, &analysis.sites, &rules);
    let names = crate::access::MemberNames::from_typedb(a.db, agg);
    let mut inputs = render::Inputs {
        struct_name: c.name.clone(),
        sources: refs.iter().map(|(_, g, _)| g_file(g, a)).collect(),
        profiles: profiled,
        hot,
        cold,
        notes: analysis.notes.clone(),
        paths: render::path_names(&model, &names, a.line, &analysis.paths, &analysis.sites),
        ..Default::default()
    };
    if !undefined.is_empty() {
        inputs.notes.push(format!(
            "roots not defined in these units (left out): {}",
            undefined.join(", ")
        ));
    }
    let outside = finding::fixed_outside(
        agg.size,
        a.line,
        f.embedder_count,
        lives.has_own_instances(&c.name),
    );
    let assessed = assess(
        a,
        agg,
        (&model, &names, &outside),
        &inputs,
        &verdicts,
        &f.lifetime,
    )?;
    f.classes = finding::class_counts(&verdicts);
    f.ambiguous_members = verdicts
        .iter()
        .filter(|v| v.ambiguous.is_some())
        .map(|v| v.name.clone())
        .collect();
    // Were an undecided member read-mostly, a struct no larger than a line
    // would still cost nothing (no order of its own parts them): nothing
    // rests on the undecided members.
    let undecided = if outside.is_some() {
        Vec::new()
    } else {
        finding::undecided_on_writer_lines(&assessed.classed, a.line, &verdicts)
    };
    let status = if assessed.conflicts.is_empty() && !undecided.is_empty() {
        f.reason = Some(format!(
            "undecided members share a line with a lockless writer (a conflict if they are read-mostly): {}",
            undecided.join(", ")
        ));
        Status::Ambiguous
    } else if assessed.conflicts.is_empty() {
        assessed.status()
    } else if finding::rests_on_ambiguity(&assessed.conflicts) {
        let members: BTreeSet<String> = assessed
            .conflicts
            .iter()
            .filter(|c| c.misses > 0)
            .flat_map(|c| c.writers.iter().chain(&c.victims))
            .filter(|p| p.ambiguous.is_some())
            .map(|p| p.member.clone())
            .collect();
        f.reason = Some(format!(
            "the conflict rests on members the rules could not decide: {}",
            members.into_iter().collect::<Vec<_>>().join(", ")
        ));
        Status::Ambiguous
    } else {
        Status::Conflict
    };
    if status != Status::Ambiguous {
        assessed.fill(f);
        f.status = status;
        return Ok(());
    }
    // Undecided members the ranking depends on: price both readings, rank
    // by the one the static estimate of their hot sites favours, and say
    // so. With no hot site on any of them the evidence favours neither:
    // listed apart (a profile decides).
    let evidence = verdicts
        .iter()
        .filter(|v| v.ambiguous.is_some())
        .any(|v| reading::hot_weights(v) != (0, 0));
    if !evidence {
        assessed.fill(f);
        f.status = Status::Ambiguous;
        return Ok(());
    }
    let (favoured, flipped) = reading::favoured(&verdicts);
    let chosen = assess(
        a,
        agg,
        (&model, &names, &outside),
        &inputs,
        &favoured,
        &f.lifetime,
    )?;
    let why = f.reason.take().unwrap_or_default();
    let status = chosen.status();
    // The reading set against it: the safe side (every undecided member
    // written) when some were read as read-mostly, else every undecided
    // member read as read-mostly.
    let (favours, other_name, other) = if flipped.is_empty() {
        let (read, _) = reading::all_read_mostly(&verdicts);
        (
            format!(
                "every undecided member written (hot writes above 1/{} of hot accesses by the static estimate)",
                reading::MAX_WRITE_SHARE
            ),
            "every undecided member read-mostly",
            assess(a, agg, (&model, &names, &outside), &inputs, &read, &f.lifetime)?,
        )
    } else {
        (
            format!(
                "{} read-mostly (hot writes at most 1/{} of hot accesses by the static estimate), the others written",
                flipped.join(", "),
                reading::MAX_WRITE_SHARE
            ),
            "every undecided member written",
            assessed,
        )
    };
    f.reading = Some(format!(
        "{why}; ranked by the reading the evidence favours: {favours} ({}, cost {}); {other_name}: {}, cost {}; a data-type profile (--perf-mem) confirms it",
        status.word(),
        chosen.cost,
        other.status().word(),
        other.cost
    ));
    chosen.fill(f);
    f.status = status;
    Ok(())
}

/// One reading of a struct's members priced: the access file, the model
/// with its classes, the conflicts and hot paths at the declared offsets,
/// and what they cost.
struct Assessed {
    text: String,
    classed: crate::Struct,
    conflicts: Vec<finding::Conflict>,
    paths: Vec<finding::PathSpread>,
    misses: u64,
    cost: u64,
}

impl Assessed {
    /// The status of a reading with no undecided member.
    fn status(&self) -> Status {
        let excess: u64 = self.paths.iter().map(finding::PathSpread::excess).sum();
        if !self.conflicts.is_empty() {
            Status::Conflict
        } else if excess > 0 {
            Status::Spread
        } else {
            Status::NoConflict
        }
    }

    fn fill(self, f: &mut Finding) {
        f.exposure = self.conflicts.iter().map(|c| c.exposure).sum();
        f.excess_lines = self.paths.iter().map(finding::PathSpread::excess).sum();
        f.misses = self.misses;
        f.cost = self.cost;
        f.conflicts = self.conflicts;
        f.paths = self.paths;
        f.access_file = self.text;
    }
}

/// Prices the reading `verdicts` of the struct's members.
fn assess(
    a: &Audit<'_>,
    agg: &crate::typedb::Aggregate,
    // The struct's model, its inner names, and why no order of its own
    // removes its conflicts, if none does.
    (model, names, outside): (&crate::Struct, &crate::access::MemberNames, &Option<String>),
    inputs: &render::Inputs,
    verdicts: &[crate::infer::classify::Verdict],
    lifetime: &Lifetime,
) -> Result<Assessed, String> {
    let text = render::access_file(inputs, verdicts);
    let file = crate::access::parse(std::path::Path::new("<inferred>"), &text)
        .map_err(|e| format!("the inferred access file does not load: {e}"))?;
    let mut classed = model.clone();
    file.apply_with(&mut classed, names)
        .map_err(|e| format!("the inferred access file does not apply: {e}"))?;
    let mut conflicts = finding::conflicts(&classed, agg.size, agg.align, a.line, verdicts, names);
    // No order of its own parts them: no miss of its order.
    if let Some(why) = outside {
        for c in &mut conflicts {
            c.misses = 0;
            c.fixed_outside = Some(why.clone());
        }
    }
    let paths = finding::spread(&classed, agg.size, agg.align, a.line);
    let excess: u64 = paths.iter().map(finding::PathSpread::excess).sum();
    let misses = conflicts.iter().map(|c| c.misses).sum::<u64>() + excess;
    let cost = cost::cost(&conflicts, &paths, lifetime);
    Ok(Assessed {
        text,
        classed,
        conflicts,
        paths,
        misses,
        cost,
    })
}

/// The unit's path as the report names it.
fn g_file(g: &UnitGraph, a: &Audit<'_>) -> String {
    let file = g.file();
    a.units
        .iter()
        .find(|u| u.path.display().to_string() == file)
        .map_or_else(|| file.to_string(), |u| u.shown.clone())
}
