//! Profile samples mapped to the struct's members: a c2c cache line's
//! address and offset through the struct's address (`--base`), a data-type
//! row's offset directly (or through its container type and `--offset`).

use super::c2c::C2cReport;
use super::data_type::{Direction, TypeSamples};
use crate::{Diagnostic, Struct};

/// Where the struct sits in the profiled run.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    /// Addresses of instances of the struct (c2c reports name lines by address).
    pub bases: Vec<u64>,
    /// The struct's offset inside its container (`--offset`).
    pub offset: Option<u64>,
    /// The container's type, from `--container CONTAINER.MEMBER...`: data-type
    /// rows of that type are shifted by `offset`.
    pub container: Option<String>,
}

/// One profile row that landed on a member.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileHit {
    pub field: usize,
    pub loads: u64,
    pub stores: u64,
    /// Accesses of unknown direction (an event that is neither loads nor stores).
    pub unknown: u64,
    pub hitm: u64,
    pub estimated: bool,
    /// `file:line` of the row in the report, and the code symbol when it has one.
    pub cite: String,
}

/// What fell outside every member (padding, other objects' lines).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unmapped {
    pub rows: usize,
    pub samples: u64,
}

/// The member at `offset`, if any.
pub fn field_at(s: &Struct, offset: u64) -> Option<usize> {
    s.fields.iter().position(|f| {
        let start = f.original_offset.unwrap_or(u64::MAX);
        f.size > 0 && offset >= start && offset - start < f.size
    })
}

fn size_of(s: &Struct) -> u64 {
    s.fields
        .iter()
        .map(|f| f.original_offset.unwrap_or(0) + f.size)
        .max()
        .unwrap_or(0)
}

/// The c2c report's rows on instances of `s` at `at.bases`.
pub fn from_c2c(
    s: &Struct,
    report: &C2cReport,
    file: &str,
    at: &Placement,
) -> Result<(Vec<ProfileHit>, Unmapped), Diagnostic> {
    if at.bases.is_empty() {
        return Err(Diagnostic::new(format!(
            "{file}: a c2c report names cache lines by address, and struct {} has none given",
            s.name
        ))
        .help("give --base ADDR, the struct's address in the profiled run (repeat it for several instances), or use a data-type profile (--perf-mem), which names members"));
    }
    let size = size_of(s);
    let mut hits = Vec::new();
    let mut unmapped = Unmapped::default();
    for r in &report.rows {
        let addr = r.line.wrapping_add(r.offset);
        let inside = at
            .bases
            .iter()
            .find_map(|b| addr.checked_sub(*b).filter(|o| *o < size));
        match inside.and_then(|o| field_at(s, o)) {
            Some(field) => hits.push(ProfileHit {
                field,
                loads: r.loads,
                stores: r.stores,
                unknown: 0,
                hitm: r.hitm,
                estimated: true,
                cite: cite(file, r.at, r.symbol.as_deref()),
            }),
            None => {
                unmapped.rows += 1;
                unmapped.samples = unmapped
                    .samples
                    .saturating_add(r.loads.saturating_add(r.stores));
            }
        }
    }
    Ok((hits, unmapped))
}

fn cite(file: &str, line: usize, symbol: Option<&str>) -> String {
    match symbol {
        Some(sym) => format!("{file}:{line} {sym}"),
        None => format!("{file}:{line}"),
    }
}

fn type_matches(perf_name: &str, name: &str) -> bool {
    perf_name == name
        || perf_name
            .strip_prefix("struct ")
            .is_some_and(|n| n.trim() == name)
}

/// The data-type rows of struct `s` (or of its container at `at.offset`).
pub fn from_data_type(
    s: &Struct,
    rows: &[TypeSamples],
    file: &str,
    at: &Placement,
) -> (Vec<ProfileHit>, Unmapped) {
    let size = size_of(s);
    let mut hits = Vec::new();
    let mut unmapped = Unmapped::default();
    for r in rows {
        let offset = if type_matches(&r.type_name, &s.name) {
            Some(r.offset)
        } else {
            match (&at.container, at.offset) {
                (Some(c), Some(off)) if type_matches(&r.type_name, c) => {
                    r.offset.checked_sub(off).filter(|o| *o < size)
                }
                _ => continue, // another type
            }
        };
        let Some(offset) = offset else {
            continue; // another member of the container
        };
        let Some(field) = field_at(s, offset) else {
            unmapped.rows += 1;
            unmapped.samples = unmapped.samples.saturating_add(r.samples);
            continue;
        };
        let (loads, stores, unknown) = match r.direction {
            Direction::Load => (r.samples, 0, 0),
            Direction::Store => (0, r.samples, 0),
            Direction::Unknown => (0, 0, r.samples),
        };
        let what = match &r.member {
            Some(m) => format!("{} +{} ({m})", r.type_name, r.offset),
            None => format!("{} +{}", r.type_name, r.offset),
        };
        hits.push(ProfileHit {
            field,
            loads,
            stores,
            unknown,
            hitm: 0,
            estimated: r.estimated,
            cite: format!("{file}:{} {what} {}", r.at, r.event),
        });
    }
    (hits, unmapped)
}
