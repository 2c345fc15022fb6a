//! The access file `infer` prints (for `propose --access`, after review)
//! and its JSON with every site.
//!
//! Every list names its ambiguous members first; each member is preceded by
//! its evidence as comments (the profile rows, then the source sites, hot
//! first) and followed by its confidence and reason.

use super::classify::{Class, Verdict};
use serde::Serialize;
use std::fmt::Write as _;

/// How many sites of one member the access file cites (the JSON has all).
const MAX_SITES: usize = 4;

/// What the run looked at, for the file's head.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    pub struct_name: String,
    pub offset: Option<u64>,
    pub sources: Vec<String>,
    pub profiles: Vec<String>,
    pub hot: Vec<String>,
    pub cold: Vec<String>,
    pub notes: Vec<String>,
    /// Hot paths: each hot root with the members its hot sites touch.
    pub paths: Vec<(String, Vec<String>)>,
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

fn comment(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The access file.
pub fn access_file(inputs: &Inputs, verdicts: &[Verdict]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Access classes of struct {} inferred by `cachelayout infer`.",
        inputs.struct_name
    );
    let _ = writeln!(
        o,
        "# Review them before use: ambiguous members come first in each list."
    );
    if !inputs.sources.is_empty() {
        let _ = writeln!(o, "# sources: {}", comment(&inputs.sources.join(" ")));
    }
    if !inputs.profiles.is_empty() {
        let _ = writeln!(o, "# profiles: {}", comment(&inputs.profiles.join(" ")));
    }
    if !inputs.hot.is_empty() {
        let _ = writeln!(o, "# hot roots: {}", comment(&inputs.hot.join(" ")));
    }
    if !inputs.cold.is_empty() {
        let _ = writeln!(o, "# cold roots: {}", comment(&inputs.cold.join(" ")));
    }
    for n in &inputs.notes {
        let _ = writeln!(o, "# note: {}", comment(n));
    }
    let ambiguous: Vec<&Verdict> = verdicts.iter().filter(|v| v.ambiguous.is_some()).collect();
    if !ambiguous.is_empty() {
        let _ = writeln!(
            o,
            "#\n# AMBIGUOUS ({}): the rules could not decide these:",
            ambiguous.len()
        );
        for v in &ambiguous {
            let _ = writeln!(
                o,
                "#   {} -> {}: {}",
                v.name,
                v.key(),
                comment(v.ambiguous.as_deref().unwrap_or(""))
            );
        }
    }
    let victims: Vec<&Verdict> = verdicts
        .iter()
        .filter(|v| !v.victim_of.is_empty())
        .collect();
    if !victims.is_empty() {
        let _ = writeln!(
            o,
            "#\n# False sharing: read-mostly members taking HITMs on a line another member writes:"
        );
        for v in &victims {
            let _ = writeln!(
                o,
                "#   {} (line {}, {} HITM) next to {}",
                v.name,
                v.line,
                v.counts.hitm,
                v.victim_of.join(", ")
            );
        }
    }
    let _ = writeln!(o, "\n[struct.{}]", inputs.struct_name);
    if let Some(off) = inputs.offset {
        let _ = writeln!(o, "offset = {off}");
    }
    // Keys in a fixed order: lockless (each writer group in member order),
    // each lock (by name), read-mostly, cold.
    let mut keys: Vec<String> = Vec::new();
    for v in verdicts {
        let k = v.key();
        if v.class == Class::LocklessAtomic && !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut locks: Vec<String> = verdicts
        .iter()
        .filter_map(|v| match &v.class {
            c @ Class::LockedWrite(_) => Some(c.key()),
            _ => None,
        })
        .collect();
    locks.sort();
    locks.dedup();
    keys.extend(locks);
    keys.push(Class::ReadMostly.key());
    keys.push(Class::Cold.key());
    for key in keys {
        let mut members: Vec<&Verdict> = verdicts.iter().filter(|v| v.key() == key).collect();
        if members.is_empty() {
            continue;
        }
        members.sort_by_key(|v| (v.ambiguous.is_none(), v.field));
        let (table_key, quoted_key) = match key.split_once('.') {
            Some((k, lock)) => (k.to_string(), format!("{k}.{}", quote_key(lock))),
            None => (key.clone(), key.clone()),
        };
        let _ = table_key;
        let _ = writeln!(o, "{quoted_key} = [");
        for v in members {
            for p in &v.profile {
                let _ = writeln!(o, "    # {}", comment(p));
            }
            for s in v.sites.iter().take(MAX_SITES) {
                let heat = match s.heat {
                    super::sites::Heat::Hot => "hot",
                    super::sites::Heat::Warm => "warm",
                    super::sites::Heat::Cold => "cold",
                };
                let why = match &s.cold_because {
                    Some(w) if s.heat != super::sites::Heat::Hot => format!(" ({})", comment(w)),
                    _ => String::new(),
                };
                let _ = writeln!(o, "    # {heat}{why} {}", comment(&s.cite()));
            }
            if v.sites.len() > MAX_SITES {
                let _ = writeln!(
                    o,
                    "    # ... {} more site(s) in --format json",
                    v.sites.len() - MAX_SITES
                );
            }
            let flag = if v.ambiguous.is_some() {
                "AMBIGUOUS, "
            } else {
                ""
            };
            let victim = if v.victim_of.is_empty() {
                String::new()
            } else {
                format!("; false-sharing victim of {}", v.victim_of.join(", "))
            };
            let _ = writeln!(
                o,
                "    {}, # {flag}confidence {}: {}{victim}",
                quote(&v.name),
                confidence_word(v),
                comment(&v.reason)
            );
        }
        let _ = writeln!(o, "]");
    }
    let paths: Vec<&(String, Vec<String>)> =
        inputs.paths.iter().filter(|(_, m)| !m.is_empty()).collect();
    if !paths.is_empty() {
        let _ = writeln!(
            o,
            "\n# Hot paths: the members each hot root's hot sites touch."
        );
        let _ = writeln!(o, "[struct.{}.paths]", inputs.struct_name);
        for (root, members) in paths {
            let names: Vec<String> = members.iter().map(|m| quote(m)).collect();
            let _ = writeln!(o, "{} = [{}]", quote_key(root), names.join(", "));
        }
    }
    o
}

/// A lock name as a TOML key: bare when it can be.
fn quote_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        quote(k)
    }
}

fn confidence_word(v: &Verdict) -> &'static str {
    match v.confidence {
        super::classify::Confidence::High => "high",
        super::classify::Confidence::Medium => "medium",
        super::classify::Confidence::Low => "low",
    }
}

/// `infer --format json`: what the run looked at and every member's verdict.
#[derive(Clone, Debug, Serialize)]
pub struct InferJson {
    #[serde(rename = "struct")]
    pub struct_name: String,
    pub offset: Option<u64>,
    pub sources: Vec<String>,
    pub profiles: Vec<String>,
    pub hot_roots: Vec<String>,
    pub cold_roots: Vec<String>,
    pub notes: Vec<String>,
    pub paths: Vec<PathJson>,
    pub members: Vec<MemberJson>,
}

/// A hot path: a hot root and the members its hot sites touch.
#[derive(Clone, Debug, Serialize)]
pub struct PathJson {
    pub root: String,
    pub members: Vec<String>,
}

/// One member's verdict with its evidence.
#[derive(Clone, Debug, Serialize)]
pub struct MemberJson {
    pub name: String,
    /// The access file's key: `read_mostly`, `locked_write.LOCK`, `lockless_atomic`, `cold`.
    pub class: String,
    pub confidence: super::classify::Confidence,
    /// Why the rules could not decide, when they could not.
    pub ambiguous: Option<String>,
    pub reason: String,
    /// The cache line it starts on (from the container's start with --offset).
    pub line: u64,
    pub offset: u64,
    pub size: u64,
    /// Profile samples: loads, stores, accesses of unknown direction, HITM loads.
    pub loads: u64,
    pub stores: u64,
    pub accesses: u64,
    pub hitm: u64,
    /// Whether a count came from a percentage of a rounded total.
    pub estimated_counts: bool,
    pub write_fraction: Option<WriteFraction>,
    /// Written members on its line while it takes HITMs.
    pub victim_of: Vec<String>,
    /// The largest profile rows.
    pub profile: Vec<String>,
    /// Every source site.
    pub sites: Vec<super::sites::Site>,
}

/// The write fraction and its 95 % Wilson interval.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct WriteFraction {
    pub p: f64,
    pub low: f64,
    pub high: f64,
}

/// The JSON: every member with its verdict, counts and every site.
pub fn json(inputs: &Inputs, verdicts: &[Verdict]) -> InferJson {
    InferJson {
        struct_name: inputs.struct_name.clone(),
        offset: inputs.offset,
        sources: inputs.sources.clone(),
        profiles: inputs.profiles.clone(),
        hot_roots: inputs.hot.clone(),
        cold_roots: inputs.cold.clone(),
        notes: inputs.notes.clone(),
        paths: inputs
            .paths
            .iter()
            .map(|(root, members)| PathJson {
                root: root.clone(),
                members: members.clone(),
            })
            .collect(),
        members: verdicts
            .iter()
            .map(|v| MemberJson {
                name: v.name.clone(),
                class: v.key(),
                confidence: v.confidence,
                ambiguous: v.ambiguous.clone(),
                reason: v.reason.clone(),
                line: v.line,
                offset: v.offset,
                size: v.size,
                loads: v.counts.loads,
                stores: v.counts.stores,
                accesses: v.counts.unknown,
                hitm: v.counts.hitm,
                estimated_counts: v.counts.estimated,
                write_fraction: v.counts.write_fraction.map(|(p, low, high)| WriteFraction {
                    p,
                    low,
                    high,
                }),
                victim_of: v.victim_of.clone(),
                profile: v.profile.clone(),
                sites: v.sites.clone(),
            })
            .collect(),
    }
}

/// Each hot root's path as `[struct.NAME.paths]` lists it: per root of
/// `paths` (the fields its hot sites touch, [`super::clang::Analysis::paths`]),
/// the names its hot `sites` use. A site on a sub-member of an embedded
/// struct (`lrugen.max_seq`, `rx_opt.rcv_tsval`) or on a single bit-field
/// is listed by that name when `names` knows it inside the site's field,
/// so that the path counts that member's own bytes, not the whole field's
/// (an embedded struct of twenty lines read at one member touches one
/// line, wherever the struct around it puts it); an element at an index
/// the compiler computes is listed as such (`cnf.data[3]`, when `names`
/// lists the array's elements), any other index is dropped (`folios[gen]`
/// is `folios`: which element runs is not known). Any
/// other site is listed by its field's name (a bit-field run by its first
/// bit-field), as before. A site that only takes the address of a member
/// larger than a `line` (`lrugen = &lruvec->lrugen`, kept for later use)
/// reads none of it: what the code reads through the pointer is its own
/// site (a sub-member, or the embedded struct's), so it lists nothing.
pub fn path_names(
    model: &crate::Struct,
    names: &crate::access::MemberNames,
    line: u64,
    paths: &[(String, Vec<usize>)],
    sites: &[super::sites::Site],
) -> Vec<(String, Vec<String>)> {
    use std::collections::{BTreeSet, HashMap};
    let known: HashMap<&str, std::ops::Range<u64>> = names
        .iter()
        .map(|n| (n.name.as_str(), n.bytes.clone()))
        .collect();
    let field_name = |i: usize| {
        let n = &model.fields[i].name;
        n.split(':').next().unwrap_or(n).to_string()
    };
    // The most precise name `names` knows for a site within its field,
    // and the bytes it stands for.
    let named = |s: &super::sites::Site| -> (String, u64) {
        let Some(f) = model.fields.get(s.field) else {
            return (String::new(), 0);
        };
        let Some(start) = f.original_offset else {
            return (field_name(s.field), f.size);
        };
        let field = start..start + f.size;
        for at in crate::access::names::enclosing(&s.member) {
            if at == f.name || at == field_name(s.field) {
                break;
            }
            if let Some(b) = known.get(at.as_str()) {
                if b.start >= field.start && b.end <= field.end && b.start < b.end {
                    return (at, b.end - b.start);
                }
            }
        }
        (field_name(s.field), f.size)
    };
    let name_of = |s: &super::sites::Site| -> String {
        let (name, bytes) = named(s);
        if s.how == "address taken" && bytes > line.max(1) {
            return String::new();
        }
        name
    };
    paths
        .iter()
        .map(|(root, fields)| {
            let fields: BTreeSet<usize> = fields.iter().copied().collect();
            let mut listed: BTreeSet<(usize, String)> = sites
                .iter()
                .filter(|s| {
                    s.heat == super::sites::Heat::Hot
                        && fields.contains(&s.field)
                        && s.hot_roots.iter().any(|r| r == root)
                })
                .map(|s| (s.field, name_of(s)))
                .filter(|(_, n)| !n.is_empty())
                .collect();
            // A field its sites name whole covers its sub-members: listed once.
            let whole: BTreeSet<usize> = listed
                .iter()
                .filter(|(i, n)| *n == field_name(*i))
                .map(|(i, _)| *i)
                .collect();
            listed.retain(|(i, n)| !whole.contains(i) || *n == field_name(*i));
            let mut out: Vec<String> = Vec::new();
            for (_, n) in listed {
                if !out.contains(&n) {
                    out.push(n);
                }
            }
            (root.clone(), out)
        })
        .collect()
}
