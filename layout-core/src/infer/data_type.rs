//! Data-type profiles (Linux 6.8+): `perf report -s type,typeoff --stdio`
//! (one row per type and offset: `struct page_counter +64 (max)`) and
//! `perf annotate --data-type --stdio` (a type's members with their share of
//! the samples). Each `# Samples: N of event 'E'` header starts the section
//! of one event; an event whose name says `load` or `store` gives loads or
//! stores (`perf mem record` records both), any other event accesses of
//! unknown direction.
//!
//! Rows are read by tokens. With `-n` (or `-F overhead,sample,...`) the
//! sample counts are exact; otherwise they are the overhead times the
//! section's sample count, which perf rounds (`1K`): the evidence says so.

use crate::Diagnostic;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Direction {
    Load,
    Store,
    /// An event that does not say (cycles, a generic memory event).
    Unknown,
}

impl Direction {
    fn of_event(name: &str) -> Direction {
        let n = name.to_ascii_lowercase();
        if n.contains("store") {
            Direction::Store
        } else if n.contains("load") || n.contains("ldlat") {
            Direction::Load
        } else {
            Direction::Unknown
        }
    }
}

/// Samples of one event at one offset of one type.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeSamples {
    /// `struct page_counter`, as perf writes it.
    pub type_name: String,
    pub offset: u64,
    /// The member perf names there (`usage.counter`), when it does.
    pub member: Option<String>,
    pub direction: Direction,
    pub event: String,
    pub samples: u64,
    /// Whether `samples` was computed from a percentage and a rounded total.
    pub estimated: bool,
    pub at: usize,
}

/// Parses either data-type format; `path` is used in errors.
pub fn parse(path: &Path, text: &str) -> Result<Vec<TypeSamples>, Diagnostic> {
    let err = |at: usize, msg: String| {
        Diagnostic::new(msg).in_file(path).at(at, 1).help(
            "give the text of `perf report -s type,typeoff --stdio` (add -n for exact counts) or of `perf annotate --data-type --stdio`",
        )
    };
    let mut out = Vec::new();
    let mut event = String::new();
    let mut total: Option<(u64, bool)> = None; // section samples, rounded?
    let mut has_samples_col = false;
    // perf annotate --data-type: the type being annotated, its samples, and its row state.
    let mut annotate: Option<(String, u64)> = None;
    for (i, raw) in text.lines().enumerate() {
        let at = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            let h = h.trim();
            if let Some(rest) = h.strip_prefix("Samples:") {
                // `# Samples: 1K of event 'cpu/mem-loads,ldlat=30/P'`
                let mut w = rest.split_whitespace();
                total = w.next().and_then(samples_count);
                event = rest
                    .split_once("of event")
                    .map(|(_, e)| e.trim().trim_matches('\'').to_string())
                    .unwrap_or_default();
                annotate = None;
            } else if h.starts_with("Overhead") {
                has_samples_col = h.split_whitespace().nth(1) == Some("Samples");
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("Annotate type:") {
            // `Annotate type: 'struct page_counter' in [kernel.kallsyms] (120 samples):`
            let name = rest.split('\'').nth(1).map(str::to_string);
            let n = rest
                .rsplit_once('(')
                .and_then(|(_, r)| r.split_whitespace().next())
                .and_then(|t| t.parse::<u64>().ok());
            match (name, n) {
                (Some(name), Some(n)) => annotate = Some((name, n)),
                _ => {
                    return Err(err(
                        at,
                        format!("cannot read this annotate header: `{line}`"),
                    ))
                }
            }
            continue;
        }
        if line.starts_with("==") || line.starts_with("--") {
            continue;
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if let Some((type_name, n)) = &annotate {
            // `Percent offset size field`: a member row ends with `;` (a leaf) or `{`.
            if tokens.first() == Some(&"Percent") || tokens == ["};"] || tokens == ["}"] {
                continue;
            }
            let (Some(pct), Some(offset)) = (
                tokens
                    .first()
                    .and_then(|t| t.trim_end_matches('%').parse::<f64>().ok()),
                tokens.get(1).and_then(|t| t.parse::<u64>().ok()),
            ) else {
                return Err(err(at, format!("cannot read this annotate row: `{line}`")));
            };
            if !line.ends_with(';') {
                continue; // an aggregate: its leaves carry its samples
            }
            let member = tokens
                .last()
                .map(|t| t.trim_end_matches(';'))
                .and_then(|t| t.split('[').next())
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            out.push(TypeSamples {
                type_name: type_name.clone(),
                offset,
                member,
                direction: Direction::of_event(&event),
                event: event.clone(),
                samples: (pct / 100.0 * *n as f64).round() as u64,
                estimated: false,
                at,
            });
            continue;
        }
        // perf report -s type,typeoff: `30.00%  [360]  struct page_counter  struct page_counter +0 (usage.counter)`
        let Some(pct) = tokens
            .first()
            .and_then(|t| t.strip_suffix('%'))
            .and_then(|t| t.parse::<f64>().ok())
        else {
            return Err(err(at, format!("cannot read this row: `{line}`")));
        };
        let mut k = 1;
        let exact = if has_samples_col {
            k = 2;
            Some(
                tokens
                    .get(1)
                    .and_then(|t| t.parse::<u64>().ok())
                    .ok_or_else(|| err(at, format!("no sample count in this row: `{line}`")))?,
            )
        } else {
            None
        };
        let Some(plus) = tokens.iter().position(|t| {
            t.strip_prefix('+')
                .is_some_and(|n| n.parse::<u64>().is_ok())
        }) else {
            // A type without offsets (`(unknown)`, `(stack operation)`) says nothing of members.
            continue;
        };
        if plus < k {
            return Err(err(at, format!("cannot read this row: `{line}`")));
        }
        let offset: u64 = tokens[plus][1..].parse().unwrap_or(0);
        let words = &tokens[k..plus];
        let half = words.len() / 2;
        let type_words = if words.len().is_multiple_of(2) && words[..half] == words[half..] {
            &words[half..]
        } else {
            words
        };
        let member = tokens
            .get(plus + 1)
            .map(|t| t.trim_start_matches('(').trim_end_matches(')').to_string())
            .filter(|t| !t.is_empty());
        let (samples, estimated) = match (exact, total) {
            (Some(n), _) => (n, false),
            (None, Some((n, rounded))) => ((pct / 100.0 * n as f64).round() as u64, rounded),
            (None, None) => {
                return Err(err(
                    at,
                    "no sample count: neither a Samples column (-n) nor a `# Samples:` header"
                        .into(),
                ))
            }
        };
        out.push(TypeSamples {
            type_name: type_words.join(" "),
            offset,
            member,
            direction: Direction::of_event(&event),
            event: event.clone(),
            samples,
            estimated,
            at,
        });
    }
    if out.is_empty() {
        return Err(Diagnostic::new("no data-type rows in the perf report")
            .in_file(path)
            .help("record with `perf mem record` on Linux 6.8+, then `perf report -s type,typeoff --stdio -n`"));
    }
    Ok(out)
}

/// `1234`, `1K`, `2M`: a count and whether perf rounded it.
fn samples_count(t: &str) -> Option<(u64, bool)> {
    let (num, mult) = match t.chars().last()? {
        'K' => (&t[..t.len() - 1], 1_000.0),
        'M' => (&t[..t.len() - 1], 1_000_000.0),
        _ => (t, 1.0),
    };
    let v: f64 = num.parse().ok()?;
    Some(((v * mult).round() as u64, mult > 1.0))
}
