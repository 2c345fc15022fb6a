//! The audit's result: the findings ranked, as a table, as JSON, and as
//! the ranked table of a series' cover letter.

use super::finding::{Conflict, PathSpread, Status};
use super::lifetime::Lifetime;
use serde::Serialize;
use std::fmt::Write as _;

/// One struct of the report.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    #[serde(rename = "struct")]
    pub name: String,
    /// `path:line` of its definition (relative to the tree when under it).
    pub defined_at: String,
    /// The header that defines it, as read.
    #[serde(skip)]
    pub header: std::path::PathBuf,
    pub size: u64,
    pub status: Status,
    /// Why it was not analysed, or what made it ambiguous.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Cache-line fetches one pass over its hot roots takes that a better
    /// order would not: each conflict line's [`Conflict::misses`] plus each
    /// hot path's [`PathSpread::excess`]. The ranking is by it.
    pub misses: u64,
    /// What those misses cost ([`super::cost`]): conflict lines as
    /// coherence misses, spread lines by how the struct lives. The
    /// ranking is by it, then by the coherence misses
    /// ([`Finding::coherence_misses`]), then by the misses.
    pub cost: u64,
    /// How the struct lives, from the sources ([`super::lifetime`]).
    pub lifetime: Lifetime,
    /// When some members were undecided: which reading of them the
    /// ranking takes, why, and what the other reading would cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reading: Option<String>,
    /// Sum of its conflicts' exposures.
    pub exposure: u64,
    pub conflicts: Vec<Conflict>,
    /// Its hot paths in the declared order, and their lines past the fewest.
    pub paths: Vec<PathSpread>,
    pub excess_lines: u64,
    /// Its place in pass 2's order (1-based: pass 1's exposure weighed by
    /// the units that use it) and the bytes its atomics and locks share.
    pub pass1_rank: usize,
    pub pass1_shared_bytes: u64,
    /// Structs that embed it by value (`container.member`), at most a few.
    pub embedders: Vec<String>,
    pub embedder_count: usize,
    /// Inferred members per class: lockless, locked, read-mostly, cold.
    pub classes: [usize; 4],
    /// Translation units whose sites were joined.
    pub units: usize,
    /// Members the rules could not decide (listed first in the access file).
    pub ambiguous_members: Vec<String>,
    /// The inferred access file (what a patch is proposed from).
    #[serde(skip)]
    pub access_file: String,
}

impl Finding {
    /// Whether a series patches it: a decided conflict that fast-path code
    /// drives on both sides (a hot writer and a hot reader), or hot paths
    /// that touch more lines than they need.
    /// A struct ranked by a reading of undecided members is patched with
    /// that reading's access file, and its changelog names the reading (a
    /// profile confirms it). A struct whose misses cost nothing (a
    /// singleton's spread lines that hot code only reads: they stay
    /// cached) is not patched.
    pub fn patchable(&self) -> bool {
        match self.status {
            Status::Conflict | Status::Spread => {
                self.cost > 0 && (self.exposure > 0 || self.excess_lines > 0)
            }
            _ => false,
        }
    }

    /// Whether its patch is about the hot paths' lines alone: no conflict
    /// that hot code drives (`propose --objective hot-lines`).
    pub fn packs_hot_paths(&self) -> bool {
        self.exposure == 0 && self.excess_lines > 0
    }

    /// Hot functions on both sides of every conflict (a tie-break).
    fn hot_count(&self) -> usize {
        self.conflicts
            .iter()
            .flat_map(|c| c.writers.iter().chain(&c.victims))
            .map(|p| p.hot_functions.len())
            .sum()
    }
}

/// The whole audit.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// Structs defined in the audited headers that the probe laid out.
    pub structs: usize,
    /// Pass 1's candidates.
    pub candidates: usize,
    /// The pass-2 budget (structs) and how many were analysed.
    pub budget: usize,
    pub analysed: usize,
    /// Translation units walked, and how many came from the cache.
    pub units: usize,
    pub units_cached: usize,
    /// Conflicts and spread hot paths, most misses first.
    pub ranked: Vec<Finding>,
    /// Conflicts that rest on an ambiguous member: never patched.
    pub ambiguous: Vec<Finding>,
    /// Analysed, no conflict found.
    pub clean: Vec<Finding>,
    /// Not analysed (no source names it, or the analysis failed).
    pub not_analysed: Vec<Finding>,
    /// Candidates past the budget, in pass 2's order, with their bytes.
    pub past_budget: Vec<(String, u64)>,
    pub notes: Vec<String>,
    /// The units left out (not parsed, past a limit), with why.
    pub units_left_out: Vec<UnitLeftOut>,
    /// The weights the cost put on each line ([`super::cost`]).
    pub weights: super::cost::Weights,
}

/// A unit pass 2 could not walk (a parse error, a limit, a refused
/// include), with why: the audit goes on without it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct UnitLeftOut {
    pub unit: String,
    pub reason: String,
}

impl Finding {
    /// The misses on conflict lines: lines another CPU wrote. At equal
    /// cost these come first, since the cost's weight of a coherence miss
    /// is a floor (it grows with the CPUs that write the line), while a
    /// spread line's cold fetch is one fetch.
    pub fn coherence_misses(&self) -> u64 {
        self.misses.saturating_sub(self.excess_lines)
    }
}

impl Report {
    /// Files each finding under its status, ranked.
    pub fn new(findings: Vec<Finding>) -> Report {
        let mut r = Report::default();
        for f in findings {
            match f.status {
                Status::Conflict | Status::Spread => r.ranked.push(f),
                Status::Ambiguous => r.ambiguous.push(f),
                Status::NoConflict => r.clean.push(f),
                Status::NotAnalysed => r.not_analysed.push(f),
            }
        }
        let key = |f: &Finding| {
            (
                std::cmp::Reverse(f.cost),
                std::cmp::Reverse(f.coherence_misses()),
                std::cmp::Reverse(f.misses),
                std::cmp::Reverse(f.exposure),
                std::cmp::Reverse(f.hot_count()),
                f.pass1_rank,
            )
        };
        r.ranked.sort_by_key(key);
        r.ambiguous.sort_by_key(key);
        r.clean.sort_by_key(|f| f.pass1_rank);
        r.not_analysed.sort_by_key(|f| f.pass1_rank);
        r
    }

    /// The readable table: the ranking, then each finding's evidence, then
    /// the ambiguous, clean and unanalysed structs.
    pub fn table(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "# cachelayout audit: {} structs defined, {} pass-1 candidates, {} analysed (budget {}), {} translation units ({} from the cache)",
            self.structs, self.candidates, self.analysed, self.budget, self.units, self.units_cached
        );
        let _ = writeln!(
            o,
            "# {} with a conflict, {} with spread hot paths only, {} ambiguous (not patched), {} with neither, {} not analysed",
            self.ranked.iter().filter(|f| f.status == Status::Conflict).count(),
            self.ranked.iter().filter(|f| f.status == Status::Spread).count(),
            self.ambiguous.len(),
            self.clean.len(),
            self.not_analysed.len()
        );
        let _ = writeln!(o, "{}", self.weights.legend());
        o.push_str(&ranked_table(&self.ranked));
        for (i, f) in self.ranked.iter().enumerate() {
            let _ = writeln!(
                o,
                "\n{}. struct {} ({}, {} B): {}, cost {}, {} miss(es) per pass over its hot roots",
                i + 1,
                f.name,
                f.defined_at,
                f.size,
                f.status.word(),
                f.cost,
                f.misses
            );
            evidence(&mut o, f);
        }
        if !self.ambiguous.is_empty() {
            let _ = writeln!(o, "\nAmbiguous (listed apart, not patched):");
            for f in &self.ambiguous {
                let _ = writeln!(
                    o,
                    "  struct {} ({}, {} B): cost {}, misses {}, exposure {}; undecided: {}",
                    f.name,
                    f.defined_at,
                    f.size,
                    f.cost,
                    f.misses,
                    f.exposure,
                    f.ambiguous_members.join(", ")
                );
                evidence(&mut o, f);
            }
        }
        if !self.clean.is_empty() {
            let names: Vec<&str> = self.clean.iter().map(|f| f.name.as_str()).collect();
            let _ = writeln!(
                o,
                "\nNo conflict and no spread hot path after inference: {}",
                names.join(", ")
            );
        }
        if !self.not_analysed.is_empty() {
            let _ = writeln!(o, "\nNot analysed:");
            for f in &self.not_analysed {
                let _ = writeln!(
                    o,
                    "  struct {}: {}",
                    f.name,
                    f.reason.as_deref().unwrap_or("")
                );
            }
        }
        if !self.past_budget.is_empty() {
            let shown: Vec<String> = self
                .past_budget
                .iter()
                .take(20)
                .map(|(n, b)| format!("{n} ({b} B)"))
                .collect();
            let more = self.past_budget.len().saturating_sub(shown.len());
            let _ = writeln!(
                o,
                "\nPast the budget (pass 1 only, by hot use, then shared bytes): {}{}",
                shown.join(", "),
                if more > 0 {
                    format!(", and {more} more")
                } else {
                    String::new()
                }
            );
        }
        for n in &self.notes {
            let _ = writeln!(o, "note: {n}");
        }
        o
    }

    /// The report as pretty JSON (docs/json.md).
    pub fn json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".to_string());
        s.push('\n');
        s
    }
}

/// `rank misses struct size conflict-lines writers -> victims hot-path-lines
/// defined-at embedders`, tab-separated.
pub fn ranked_table(ranked: &[Finding]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# rank\tcost\tmisses\tstruct\tsize\tconflict lines\twriters -> read-mostly victims\thot-path lines (fewest keeping the rule)\tdefined at\tembedders"
    );
    for (i, f) in ranked.iter().enumerate() {
        let lines: Vec<String> = f.conflicts.iter().map(|c| c.line.to_string()).collect();
        let mut writers: Vec<&str> = Vec::new();
        let mut victims: Vec<&str> = Vec::new();
        for c in &f.conflicts {
            writers.extend(c.writers.iter().map(|p| p.member.as_str()));
            victims.extend(c.victims.iter().map(|p| p.member.as_str()));
        }
        writers.dedup();
        victims.dedup();
        let parties = if writers.is_empty() {
            "-".to_string()
        } else {
            format!("{} -> {}", shorten(&writers), shorten(&victims))
        };
        let (touched, fewest) = f
            .paths
            .iter()
            .fold((0, 0), |(l, b), p| (l + p.lines, b + p.fewest));
        let _ = writeln!(
            o,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            i + 1,
            f.cost,
            f.misses,
            f.name,
            f.size,
            if lines.is_empty() {
                "-".to_string()
            } else {
                lines.join(",")
            },
            parties,
            if f.paths.is_empty() {
                "-".to_string()
            } else {
                format!("{touched} ({fewest})")
            },
            f.defined_at,
            f.embedder_count
        );
    }
    o
}

fn shorten(names: &[&str]) -> String {
    const SHOWN: usize = 4;
    if names.len() <= SHOWN {
        names.join(",")
    } else {
        format!("{},+{}", names[..SHOWN].join(","), names.len() - SHOWN)
    }
}

fn evidence(o: &mut String, f: &Finding) {
    let _ = match f.lifetime.evidence() {
        Some(e) => writeln!(o, "   lives: {} ({e})", f.lifetime.word()),
        None => writeln!(o, "   lives: {}", f.lifetime.word()),
    };
    if let Some(r) = &f.reading {
        let _ = writeln!(o, "   reading: {r}");
    }
    for c in &f.conflicts {
        let _ = writeln!(
            o,
            "   line {} (exposure {}, misses {}):",
            c.line, c.exposure, c.misses
        );
        if let Some(why) = &c.fixed_outside {
            let _ = writeln!(o, "     no miss to this struct's order: {why}");
        }
        for (side, parties) in [("writer", &c.writers), ("victim", &c.victims)] {
            for p in parties.iter() {
                let amb = p
                    .ambiguous
                    .as_deref()
                    .map(|a| format!(", ambiguous: {a}"))
                    .unwrap_or_default();
                let roots = if p.hot_roots.is_empty() {
                    String::new()
                } else {
                    format!(" from {}", p.hot_roots.join(", "))
                };
                let _ = writeln!(
                    o,
                    "     {side} {} ({}{amb}): hot in {} function(s){roots}",
                    p.member,
                    p.class,
                    p.hot_functions.len()
                );
                for e in &p.evidence {
                    let _ = writeln!(o, "       {e}");
                }
            }
        }
    }
    for p in f.paths.iter().filter(|p| p.excess() > 0) {
        let _ = writeln!(
            o,
            "   hot path {}: {} lines for {} B in {} member(s), fewest {} ({} past it)",
            p.root,
            p.lines,
            p.bytes,
            p.members,
            p.fewest,
            p.excess()
        );
    }
    if f.embedder_count > 0 {
        let more = f.embedder_count.saturating_sub(f.embedders.len());
        let _ = writeln!(
            o,
            "   embedded in: {}{}",
            f.embedders.join(", "),
            if more > 0 {
                format!(", and {more} more")
            } else {
                String::new()
            }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(name: &str, cost: u64, misses: u64, exposure: u64, pass1: usize) -> Finding {
        Finding {
            name: name.into(),
            defined_at: "x.h:1".into(),
            header: std::path::PathBuf::from("x.h"),
            size: 128,
            status: Status::Spread,
            reason: None,
            misses,
            cost,
            lifetime: Lifetime::Unknown,
            reading: None,
            exposure,
            conflicts: Vec::new(),
            paths: Vec::new(),
            excess_lines: misses,
            pass1_rank: pass1,
            pass1_shared_bytes: 0,
            embedders: Vec::new(),
            embedder_count: 0,
            classes: [0; 4],
            units: 1,
            ambiguous_members: Vec::new(),
            access_file: String::new(),
        }
    }

    #[test]
    fn the_ranking_is_by_cost_then_coherence_misses_then_misses_then_exposure_then_pass_one() {
        let mut coherent = finding("coherence_first", 4, 1, 0, 90);
        coherent.excess_lines = 0;
        let r = Report::new(vec![
            coherent,
            finding("later_in_pass1", 4, 2, 0, 9),
            finding("fewer_misses", 4, 1, 0, 1),
            finding("free", 0, 50, 9, 1),
            finding("dearest", 9, 1, 0, 50),
            finding("more_exposed", 4, 2, 3, 20),
            finding("first_in_pass1", 4, 2, 0, 2),
        ]);
        let names: Vec<&str> = r.ranked.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "dearest",
                "coherence_first",
                "more_exposed",
                "first_in_pass1",
                "later_in_pass1",
                "fewer_misses",
                "free"
            ]
        );
        // A struct whose misses cost nothing is ranked, last, and never patched.
        assert!(!r.ranked[6].patchable());
        assert!(r.ranked[0].patchable());
        // The table states the weights it ranked by.
        assert!(r
            .table()
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("# cost per line:"));
    }
}
