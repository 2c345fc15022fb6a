//! Static inference with libclang (feature `infer-clang`): each
//! `--source` translation unit is parsed with its own flags (macro-expanded,
//! configuration-evaluated, typed), every access to a member of the struct
//! is found with its kind and form ([`site_kind`]) and its locks ([`walk`]),
//! and a call graph over the given files says which sites the hot roots
//! reach ([`reach`]).
//!
//! libclang runs in-process: no program is run. The source files are read
//! through [`crate::files`] (bounded) and handed to libclang as unsaved
//! files; the headers they include are read by libclang from the include
//! paths of the flags, which the compiler front-end trusts.

// libclang's constants keep their C names.
#[allow(non_upper_case_globals)]
mod ffi;
pub mod flags;
pub mod includes;
pub mod isolate;
mod lock_effects;
mod locks;
#[allow(non_upper_case_globals)]
mod param_use;
mod reach;
pub mod record;
#[allow(non_upper_case_globals)]
mod set_rarely;
#[allow(non_upper_case_globals)]
mod site_kind;
pub mod slow;
#[allow(non_upper_case_globals)]
mod walk;

use crate::infer::sites::{Heat, Site};
use crate::{Diagnostic, Struct};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Instant;

/// One translation unit to analyse: the file and the compiler arguments.
#[derive(Clone, Debug)]
pub struct Source {
    pub path: PathBuf,
    pub args: Vec<String>,
}

/// What the analysis is asked.
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub struct_name: String,
    pub sources: Vec<Source>,
    pub hot: Vec<String>,
    pub cold: Vec<String>,
    pub lock_wrappers: Vec<String>,
}

/// Every site, with notes on what the analysis could not do and timings.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub sites: Vec<Site>,
    pub notes: Vec<String>,
    /// Seconds per source file.
    pub seconds: Vec<(String, f64)>,
    /// Per hot root, the fields its hot sites touch (declaration order).
    pub paths: Vec<(String, Vec<usize>)>,
    /// What the user should see on stderr: the `--hot` roots left out
    /// because no given source defines them.
    pub warnings: Vec<String>,
    /// The `--hot` roots the sources define, in command-line order.
    pub hot_roots: Vec<String>,
}

/// Parses one source (read bounded) with its flags: a fatal error (a
/// missing header) is an error; other errors are a note, and the unit is
/// analysed anyway.
fn parse<'i>(
    index: &'i ffi::Index,
    src: &Source,
) -> Result<(ffi::Unit<'i>, Option<String>), Diagnostic> {
    let text = crate::files::text(&src.path, crate::files::Input::Source)?;
    let unit = ffi::Unit::parse(index, &src.path, &text, &src.args)
        .map_err(|e| Diagnostic::new(format!("cannot parse the source: {e}")).in_file(&src.path))?;
    let problems = unit.problems();
    // A missing header is fatal to the compiler (libclang keeps going): the flags are wrong.
    if let Some(f) = problems
        .iter()
        .find(|p| p.fatal || p.text.contains("file not found"))
    {
        return Err(Diagnostic::new(format!("libclang stopped: {}", f.text))
            .in_file(&src.path)
            .help("the flags do not compile this file: give the tree it belongs to (--kbuild DIR) or its compile_commands.json"));
    }
    let note = problems.first().map(|first| {
        format!(
            "{}: {} error(s) from libclang, analysed anyway; first: {}",
            src.path.display(),
            problems.len(),
            first.text
        )
    });
    Ok((unit, note))
}

/// The most branches (`if` arms, `switch` bodies, over the calls from the
/// nearest hot root and in the site's own function) a site may sit under
/// and still be hot: deeper, the static estimate (each branch taken half
/// the time) says it runs on less than 1/2^N of the root's calls.
pub const MAX_HOT_BRANCHES: u32 = 3;

/// Every function the call graph names (callers and callees).
fn all_function_names(
    calls: &BTreeMap<String, BTreeSet<String>>,
    cold_calls: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeSet<String> {
    calls
        .iter()
        .chain(cold_calls)
        .flat_map(|(f, cs)| std::iter::once(f).chain(cs))
        .cloned()
        .collect()
}

/// What the walk of one translation unit found that does not depend on
/// the struct: its call graph, its functions' marks, its parse note.
/// Serialisable, so a caller may keep it per unit (`cachelayout audit`
/// caches it by the unit's content); opaque otherwise.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct UnitGraph {
    calls: BTreeMap<String, BTreeSet<String>>,
    cold_calls: BTreeMap<String, BTreeSet<String>>,
    indirect: Vec<(String, Vec<String>)>,
    callbacks: Vec<walk::Callback>,
    member_calls: Vec<walk::MemberCall>,
    ops_members: Vec<(String, String, String)>,
    #[serde(default)]
    address_taken: BTreeMap<String, String>,
    call_conds: Vec<(String, String, u32)>,
    call_sites: Vec<(String, String, Vec<String>)>,
    header_inline: BTreeSet<String>,
    external: BTreeSet<String>,
    cold_marked: BTreeSet<String>,
    note: Option<String>,
    file: String,
    seconds: f64,
}

impl UnitGraph {
    /// Whether the unit defines function `name` (a possible root).
    pub fn defines(&self, name: &str) -> bool {
        self.calls.contains_key(name)
    }

    /// Seconds the parse and walk took.
    pub fn seconds(&self) -> f64 {
        self.seconds
    }

    /// The unit's path, as given.
    pub fn file(&self) -> &str {
        &self.file
    }
}

/// What the walk of one translation unit found for one struct: the
/// accesses to its members. Serialisable like [`UnitGraph`].
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct StructSites {
    sites: Vec<walk::RawSite>,
    saw_struct: bool,
}

impl StructSites {
    /// Whether the unit uses (or defines) the struct.
    pub fn saw_struct(&self) -> bool {
        self.saw_struct
    }

    /// How many accesses to the struct's members the unit holds.
    pub fn len(&self) -> usize {
        self.sites.len()
    }

    /// Whether the unit accesses no member of the struct.
    pub fn is_empty(&self) -> bool {
        self.sites.is_empty()
    }
}

/// Parses `src` once and walks it once for the members of every struct of
/// `struct_names`: the unit's graph, and its sites per struct (in that
/// order). A fatal parse error (a missing header) is an error.
pub fn walk_unit(
    src: &Source,
    struct_names: &[String],
    lock_wrappers: &[String],
) -> Result<(UnitGraph, Vec<StructSites>), Diagnostic> {
    let index = ffi::Index::new();
    let t0 = Instant::now();
    let (unit, note) = parse(&index, src)?;
    let mut w = walk::Walker::new(&unit, struct_names, lock_wrappers);
    w.run();
    if let Some((place, function)) = w.too_deep.take() {
        let file = if place.file.is_empty() {
            src.path.display().to_string()
        } else {
            place.file
        };
        return Err(Diagnostic::new(format!(
            "statements and expressions nested deeper than {} levels in `{function}`: the walk stops here",
            walk::MAX_NESTING
        ))
        .in_file(file)
        .at(place.line as usize, 0)
        .help("split the expression or the nested blocks, or leave this unit out"));
    }
    let mut per: Vec<StructSites> = w
        .saw_struct
        .iter()
        .map(|&saw_struct| StructSites {
            sites: Vec::new(),
            saw_struct,
        })
        .collect();
    for (i, site) in std::mem::take(&mut w.sites) {
        per[i].sites.push(site);
    }
    let graph = UnitGraph {
        calls: std::mem::take(&mut w.calls),
        cold_calls: std::mem::take(&mut w.cold_calls),
        indirect: std::mem::take(&mut w.indirect),
        callbacks: std::mem::take(&mut w.callbacks),
        member_calls: std::mem::take(&mut w.member_calls),
        ops_members: std::mem::take(&mut w.ops_members),
        address_taken: std::mem::take(&mut w.address_taken),
        call_conds: std::mem::take(&mut w.call_conds),
        call_sites: std::mem::take(&mut w.call_sites),
        header_inline: std::mem::take(&mut w.header_inline),
        external: std::mem::take(&mut w.external),
        cold_marked: std::mem::take(&mut w.cold_marked),
        note,
        file: src.path.display().to_string(),
        seconds: t0.elapsed().as_secs_f64(),
    };
    Ok((graph, per))
}

/// Runs the analysis over every source; `model` maps the members' offsets to its fields.
pub fn analyse(model: &Struct, req: &Request) -> Result<Analysis, Diagnostic> {
    analyse_with(model, req, &mut |src, names, wrappers| {
        walk_unit(src, names, wrappers)
    })
}

/// [`analyse`] with each unit walked in a child process within limits
/// ([`isolate`]): a unit past a limit is an error naming it.
pub fn analyse_isolated(
    model: &Struct,
    req: &Request,
    iso: &isolate::Isolation,
) -> Result<Analysis, Diagnostic> {
    analyse_with(model, req, &mut |src, names, wrappers| {
        isolate::walk_unit_isolated(iso, src, names, wrappers).map_err(|f| f.diagnostic)
    })
}

/// A unit's walk: [`walk_unit`] or its isolated form.
type WalkUnit<'a> = dyn FnMut(&Source, &[String], &[String]) -> Result<(UnitGraph, Vec<StructSites>), Diagnostic>
    + 'a;

fn analyse_with(
    model: &Struct,
    req: &Request,
    walk: &mut WalkUnit<'_>,
) -> Result<Analysis, Diagnostic> {
    let mut units = Vec::with_capacity(req.sources.len());
    for src in &req.sources {
        let (graph, mut sites) = walk(
            src,
            std::slice::from_ref(&req.struct_name),
            &req.lock_wrappers,
        )?;
        units.push((graph, sites.remove(0)));
    }
    let refs: Vec<(&UnitGraph, &StructSites)> = units.iter().map(|(g, s)| (g, s)).collect();
    combine(model, req, &refs)
}

/// The analysis of the struct from the walks of its units ([`walk_unit`],
/// in `req.sources` order): the call graphs joined, each site's heat and
/// locks decided. `req.sources` is not read again.
pub fn combine(
    model: &Struct,
    req: &Request,
    units: &[(&UnitGraph, &StructSites)],
) -> Result<Analysis, Diagnostic> {
    let graphs: Vec<&UnitGraph> = units.iter().map(|(g, _)| *g).collect();
    let sites: Vec<&StructSites> = units.iter().map(|(_, s)| *s).collect();
    let joined = join(&graphs, &req.hot, &req.cold)?;
    combine_joined(model, req, &joined, &sites)
}

/// The call graphs of several units joined, with what the hot and cold
/// roots reach in them: the part of the analysis that does not depend on
/// the struct, so that many structs of the same units share it.
#[derive(Clone, Debug)]
pub struct Joined {
    /// The `--hot` roots asked for, and those the units define.
    requested_hot: Vec<String>,
    cold: Vec<String>,
    hot: Vec<String>,
    warnings: Vec<String>,
    notes: Vec<String>,
    seconds: Vec<(String, f64)>,
    header_inline: BTreeSet<String>,
    cold_marked: BTreeSet<String>,
    reached: BTreeMap<String, Option<String>>,
    through_cold: BTreeMap<String, Option<String>>,
    runtime: BTreeSet<String>,
    entry: BTreeMap<String, BTreeSet<String>>,
    /// Per hot root, the fewest branches from it to each function it reaches.
    per_root: Vec<(String, BTreeMap<String, u32>)>,
    depth: BTreeMap<String, u32>,
    owned: BTreeMap<String, reach::Owned>,
}

/// Joins the graphs of `units` and runs the reachability from the `hot`
/// and `cold` roots (each must be defined in some unit).
pub fn join(
    units: &[&UnitGraph],
    requested_hot: &[String],
    cold: &[String],
) -> Result<Joined, Diagnostic> {
    let mut calls: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut cold_calls: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut indirect: Vec<(String, Vec<String>)> = Vec::new();
    let mut callbacks: Vec<walk::Callback> = Vec::new();
    let mut call_sites = Vec::new();
    let mut header_inline = BTreeSet::new();
    let mut external = BTreeSet::new();
    let mut cold_marked: BTreeSet<String> = BTreeSet::new();
    let mut member_calls: Vec<walk::MemberCall> = Vec::new();
    let mut ops_members: Vec<(String, String, String)> = Vec::new();
    let mut address_taken: BTreeMap<String, String> = BTreeMap::new();
    let mut call_conds: Vec<(String, String, u32)> = Vec::new();
    let mut notes = Vec::new();
    let mut seconds = Vec::new();
    for g in units {
        notes.extend(g.note.clone());
        call_sites.extend(g.call_sites.iter().cloned());
        header_inline.extend(g.header_inline.iter().cloned());
        external.extend(g.external.iter().cloned());
        cold_marked.extend(g.cold_marked.iter().cloned());
        for (f, callees) in &g.calls {
            calls
                .entry(f.clone())
                .or_default()
                .extend(callees.iter().cloned());
        }
        for (f, callees) in &g.cold_calls {
            cold_calls
                .entry(f.clone())
                .or_default()
                .extend(callees.iter().cloned());
        }
        indirect.extend(g.indirect.iter().cloned());
        callbacks.extend(g.callbacks.iter().cloned());
        member_calls.extend(g.member_calls.iter().cloned());
        ops_members.extend(g.ops_members.iter().cloned());
        for (f, t) in &g.address_taken {
            address_taken.entry(f.clone()).or_insert_with(|| t.clone());
        }
        call_conds.extend(g.call_conds.iter().cloned());
        seconds.push((g.file.clone(), g.seconds));
    }
    // A root the sources do not define: with one list of roots for a
    // subsystem, some are in other files. Warn and go on while one hot
    // root is defined; none defined (or a cold root missing) is an error.
    let defined = |r: &String| calls.contains_key(r);
    for root in cold {
        if !defined(root) {
            return Err(Diagnostic::new(format!(
                "`{root}` (a --cold root) is not defined in the given sources"
            ))
            .help(reach::close_names(root, &calls)));
        }
    }
    let hot: Vec<String> = requested_hot
        .iter()
        .filter(|r| defined(r))
        .cloned()
        .collect();
    if hot.is_empty() && !requested_hot.is_empty() {
        let root = &requested_hot[0];
        return Err(Diagnostic::new(format!(
            "no --hot root is defined in the given sources (`{root}` is not)"
        ))
        .help(reach::close_names(root, &calls)));
    }
    let mut warnings = Vec::new();
    for root in requested_hot.iter().filter(|r| !defined(r)) {
        warnings.push(format!(
            "--hot {root}: not defined in the given sources, left out ({})",
            reach::close_names(root, &calls)
        ));
    }
    // A function handed over as a pointer runs in the call that takes it,
    // when that callee calls through a pointer: an edge from the function
    // that hands it over, holding what that caller holds and what the
    // callee holds where it calls through a pointer (folio_add_lru >
    // lru_add_fn under lru_lock, taken by folio_batch_move_lru).
    callbacks.sort();
    callbacks.dedup();
    let mut handed: BTreeSet<String> = reach::handed_functions(&callbacks);
    for (caller, cb, locks, cold) in reach::callback_calls(&callbacks, &indirect) {
        let map = if cold { &mut cold_calls } else { &mut calls };
        map.entry(caller.clone()).or_default().insert(cb.clone());
        call_sites.push((caller, cb, locks));
    }
    // A call through an ops member (`icsk->icsk_ca_ops->cong_avoid(...)`)
    // reaches every function of the sources a global initializer of the
    // member's struct installs as that member (`.cong_avoid =
    // cubictcp_cong_avoid` in a `struct tcp_congestion_ops`), holding what
    // the caller holds there; a function an owner-lock API runs with its
    // lock held (release_sock runs `.release_cb` under the socket lock) is
    // called by that API with the lock.
    ops_members.sort();
    ops_members.dedup();
    ops_members.retain(|(_, _, f)| calls.contains_key(f));
    // A member no table or store of the sources fills (`packet_type.func`
    // with af_inet.c left out) may hold any function of its type whose
    // address the sources take (`ip_rcv`, named in an `INDIRECT_CALL`).
    let by_type = reach::address_taken_by_type(&address_taken, |f| calls.contains_key(f));
    let mut extra: Vec<(String, String, Vec<String>, bool)> = Vec::new();
    for mc in &member_calls {
        let mut targets: BTreeSet<&str> =
            reach::member_targets(&ops_members, &mc.record, &mc.member).collect();
        if targets.is_empty() {
            targets.extend(reach::type_targets(&by_type, &mc.fn_type));
        }
        // One of n targets runs on a share of the calls: branches by the
        // static estimate, as an `if` arm is.
        let fanout = reach::fanout_branches(targets.len());
        for f in targets {
            if fanout > 0 {
                call_conds.push((mc.caller.clone(), f.to_string(), fanout));
            }
            extra.push((mc.caller.clone(), f.to_string(), mc.locks.clone(), mc.cold));
        }
    }
    for (member, api, lock) in locks::LOCKED_CALLBACKS {
        for f in reach::member_targets(&ops_members, "", member) {
            extra.push((
                api.to_string(),
                f.to_string(),
                vec![lock.to_string()],
                false,
            ));
        }
    }
    for (caller, f, locks, cold) in extra {
        handed.insert(f.clone());
        let map = if cold { &mut cold_calls } else { &mut calls };
        map.entry(caller.clone()).or_default().insert(f.clone());
        call_sites.push((caller, f, locks));
    }
    // __init and __cold functions cut the graph like cold roots.
    let mut cut: Vec<String> = cold.to_vec();
    cut.extend(cold_marked.iter().filter(|f| !hot.contains(f)).cloned());
    // A slow path by its name (setup, a state change, an error, a timer,
    // loss recovery) is not hot however a hot root reaches it: it runs as
    // code reached through an `unlikely()` branch does.
    let mut narrowed = cut.clone();
    narrowed.extend(
        all_function_names(&calls, &cold_calls)
            .into_iter()
            .filter(|f| !hot.contains(f) && slow::slow_path(f).is_some()),
    );
    let reached = reach::hot_functions(&calls, &hot, &narrowed);
    let depth = reach::branch_depth(&calls, &call_conds, &hot, &narrowed);
    // Every call, on cold branches too: what runs at all, and what a hot
    // root reaches only through a call on an `unlikely()` branch.
    let mut all_calls = calls.clone();
    for (f, callees) in &cold_calls {
        all_calls
            .entry(f.clone())
            .or_default()
            .extend(callees.iter().cloned());
    }
    let through_cold = reach::hot_functions(&all_calls, &hot, &cut);
    let runtime = reach::runtime_functions(&all_calls, &cut, &header_inline, &external, &handed);
    let entry = reach::entry_locks(&call_sites, &header_inline);
    // Each hot root's path: what it reaches within its own branch budget
    // (a site deep in branches from one root and near another is on the
    // second root's path only), up to where it enters another hot root
    // (tcp_sendmsg's path ends where tcp_write_xmit's begins; a send that
    // allocates enters the allocator's root): the other root's path is
    // its own.
    let per_root: Vec<(String, BTreeMap<String, u32>)> = hot
        .iter()
        .map(|r| {
            let mut own = narrowed.clone();
            own.extend(hot.iter().filter(|h| *h != r).cloned());
            (
                r.clone(),
                reach::branch_depth(&calls, &call_conds, std::slice::from_ref(r), &own),
            )
        })
        .collect();
    // Functions some call in the sources reaches (the others' callers,
    // and the locks they hold, are elsewhere).
    let owned = reach::owner_entry(&call_sites, &header_inline, locks::SOCKET_LOCK);
    Ok(Joined {
        requested_hot: requested_hot.to_vec(),
        cold: cold.to_vec(),
        hot,
        warnings,
        notes,
        seconds,
        header_inline,
        cold_marked,
        reached,
        through_cold,
        runtime,
        entry,
        per_root,
        depth,
        owned,
    })
}

/// The analysis of the struct from its sites in the units of `joined`
/// (whose roots must be `req`'s).
/// A member whose only hot sites take back what it holds, down to zero
/// (`x->m -= min(x->m, d)`), and that code off the hot paths sets (a
/// plain or other write elsewhere): on the hot path it holds zero until
/// that code ran, and the update changes nothing. Its hot sites run, in
/// effect, with the code that set it: they become warm, on a slow path a
/// hot root reaches.
fn settle_drains(sites: &mut [Site], drains: &[bool]) {
    let fields: BTreeSet<usize> = sites.iter().map(|s| s.field).collect();
    for f in fields {
        let of = |i: &usize| sites[*i].field == f;
        let idx: Vec<usize> = (0..sites.len()).filter(of).collect();
        let hot: Vec<usize> = idx
            .iter()
            .copied()
            .filter(|i| sites[*i].heat == Heat::Hot)
            .collect();
        if hot.is_empty() || !hot.iter().all(|i| drains[*i]) {
            continue;
        }
        let Some(setter) = idx
            .iter()
            .find(|i| !drains[**i] && sites[**i].kind.writes())
            .map(|i| sites[*i].cite())
        else {
            continue;
        };
        for i in hot {
            let s = &mut sites[i];
            s.cold_because = Some(format!(
                "an update that only takes back what the member holds, down to zero, on a hot path ({}): it holds zero there until code off the hot paths sets it ({setter})",
                s.hot_via.as_deref().unwrap_or(&s.function)
            ));
            s.heat = Heat::Warm;
            s.hot_via = None;
            s.hot_roots.clear();
            s.branches = None;
            s.near_hot = true;
        }
    }
}

pub fn combine_joined(
    model: &Struct,
    req: &Request,
    joined: &Joined,
    units: &[&StructSites],
) -> Result<Analysis, Diagnostic> {
    let Joined {
        requested_hot: _,
        cold: _,
        hot,
        warnings,
        notes,
        seconds,
        header_inline,
        cold_marked,
        reached,
        through_cold,
        runtime,
        entry,
        per_root,
        depth,
        owned,
    } = joined;
    debug_assert!(joined.requested_hot == req.hot && joined.cold == req.cold);
    let mut out = Analysis {
        notes: notes.clone(),
        seconds: seconds.clone(),
        warnings: warnings.clone(),
        hot_roots: hot.clone(),
        ..Analysis::default()
    };
    let saw = units.iter().any(|st| st.saw_struct);
    if !saw {
        return Err(Diagnostic::new(format!(
            "no source given uses struct {} (nor defines it)",
            req.struct_name
        ))
        .help("give the C files that access the struct with --source"));
    }
    let mut raw: Vec<walk::RawSite> = units
        .iter()
        .flat_map(|st| st.sites.iter().cloned())
        .collect();
    raw.sort();
    raw.dedup();
    let mut paths: Vec<(String, BTreeSet<usize>)> =
        hot.iter().map(|r| (r.clone(), BTreeSet::new())).collect();
    let mut drains: Vec<bool> = Vec::new();
    for r in raw {
        let Some(field) = crate::infer::profile::field_at(model, r.offset) else {
            out.notes.push(format!(
                "{}:{}: member `{}` at offset {} is not a field of the layout given (a different configuration?)",
                r.file, r.line, r.member, r.offset
            ));
            continue;
        };
        let mut branches_hot = None;
        let (heat, cold_because) = if hot.is_empty() {
            match &r.cold_branch {
                Some(c) => (Heat::Cold, Some(c.clone())),
                None => (Heat::Hot, None),
            }
        } else if let Some(c) = &r.cold_branch {
            (Heat::Cold, Some(c.clone()))
        } else if reached.contains_key(&r.function) {
            // Deep in branches from the nearest root: by the static
            // estimate it runs on a small share of the root's calls.
            let branches = depth
                .get(&r.function)
                .copied()
                .unwrap_or(0)
                .saturating_add(r.conds);
            if branches > MAX_HOT_BRANCHES {
                (
                    Heat::Warm,
                    Some(format!(
                        "{branches} branches from the nearest hot root ({}): by the static estimate it runs on 1/{} of its calls or fewer",
                        reach::chain(reached, &r.function),
                        1u64 << branches.min(62)
                    )),
                )
            } else {
                branches_hot = Some(branches);
                (Heat::Hot, None)
            }
        } else if !runtime.contains(&r.function) {
            let why = if req.cold.contains(&r.function) {
                "a cold root"
            } else if cold_marked.contains(&r.function) {
                "__init/__cold code"
            } else if header_inline.contains(&r.function) {
                "a header helper no code that runs calls"
            } else {
                "called only from __init/__cold code or a cold root"
            };
            (Heat::Cold, Some(why.to_string()))
        } else if through_cold.contains_key(&r.function) {
            let chain = reach::chain(through_cold, &r.function);
            let slow = chain
                .split(" > ")
                .find_map(|f| slow::slow_path(f).map(|why| (f.to_string(), why)));
            let why = match slow {
                Some((f, why)) => {
                    format!("a slow path a hot root reaches ({chain}): `{f}` is {why} by its name")
                }
                None => format!(
                    "a hot root calls it only on an unlikely() branch or error path ({chain})"
                ),
            };
            (Heat::Warm, Some(why))
        } else {
            (Heat::Warm, Some("not reached from a hot root".to_string()))
        };
        let mut locks = r.locks;
        if owned.get(&r.function) == Some(&reach::Owned::Yes) {
            locks.push(locks::SOCKET_LOCK.to_string());
        }
        if let Some(l) = entry.get(&r.function) {
            locks.extend(l.iter().cloned());
            locks.sort();
            locks.dedup();
        }
        // The roots on whose own fast path the site is: reached within
        // the branch budget from that root.
        let hot_roots: Vec<String> = if heat == Heat::Hot {
            per_root
                .iter()
                .filter(|(_, d)| {
                    d.get(&r.function)
                        .is_some_and(|b| b.saturating_add(r.conds) <= MAX_HOT_BRANCHES)
                })
                .map(|(root, _)| root.clone())
                .collect()
        } else {
            Vec::new()
        };
        let hot_via =
            (heat == Heat::Hot && !hot.is_empty()).then(|| reach::chain(reached, &r.function));
        let near_hot = heat != Heat::Hot && through_cold.contains_key(&r.function);
        let context_unknown = !matches!(owned.get(&r.function), Some(reach::Owned::Yes));
        let function = r.function.clone();
        out.sites.push(Site {
            field,
            member: r.member,
            file: r.file,
            line: r.line,
            function: r.function,
            kind: r.kind,
            how: r.how,
            locks,
            heat,
            cold_because,
            hot_via,
            hot_roots,
            loop_depth: r.loop_depth,
            branches: branches_hot,
            near_hot,
            slow_name: slow::slow_path(&function).is_some(),
            context_unknown,
            accessor: r.accessor,
            on_change: r.on_change,
        });
        drains.push(r.drains);
    }
    settle_drains(&mut out.sites, &drains);
    for s in &out.sites {
        for (root, fields) in paths.iter_mut() {
            if s.hot_roots.contains(root) {
                fields.insert(s.field);
            }
        }
    }
    out.paths = paths
        .into_iter()
        .map(|(r, f)| (r, f.into_iter().collect()))
        .collect();
    Ok(out)
}
