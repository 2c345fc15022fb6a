//! Whole-program scans of a type database (`cachelayout scan`):
//!
//! - [`packable`]: every struct that reordering alone makes smaller, with its
//!   best size (`pahole -P`, but keeping explicit alignment and cache-line
//!   groups intact: [`pack`]), each packed layout checked by
//!   [`crate::verify::check_structure`] and [`pack::check`];
//! - [`rank`]: the structs whose lockless fields share cache lines with other
//!   data, most exposed first, with classes from an access file or inferred
//!   from the member types ([`infer`]). A heuristic: see [`rank`].
//!
//! Structs are those with a tag or a typedef name; unions and anonymous
//! structs (which move with their parent) are left out.

pub(crate) mod bits;
pub mod infer;
pub mod pack;
pub mod rank;

use crate::access::AccessFile;
use crate::error::Diagnostic;
use crate::typedb::{Aggregate, AggregateKind, NameKind, TypeDb};
use pack::{PackError, Packing};
use rank::Exposure;

/// Whether a scan looks at `agg`: a struct with a tag or typedef name.
pub fn is_scanned(agg: &Aggregate) -> bool {
    agg.kind == AggregateKind::Struct && agg.name_kind != NameKind::Anonymous
}

/// One struct that packs smaller.
#[derive(Clone, Debug)]
pub struct Packable<'db> {
    pub agg: &'db Aggregate,
    pub best_size: u64,
    /// No reordering does better (see [`pack`]).
    pub optimal: bool,
}

impl Packable<'_> {
    pub fn saving(&self) -> u64 {
        self.agg.size - self.best_size
    }
}

/// The result of [`packable`].
#[derive(Debug, Default)]
pub struct PackScan<'db> {
    /// Structs with a saving, in database order.
    pub structs: Vec<Packable<'db>>,
    /// How many structs were looked at.
    pub scanned: usize,
    /// Packings the checks refused (reported as not packable): packer bugs.
    pub refused: Vec<(String, PackError)>,
}

impl PackScan<'_> {
    pub fn total_saving(&self) -> u64 {
        self.structs.iter().map(Packable::saving).sum()
    }
}

/// Packs every scanned struct of `db`; see the module docs.
pub fn packable(db: &TypeDb) -> PackScan<'_> {
    let mut scan = PackScan::default();
    for agg in db.aggregates().filter(|a| is_scanned(a)) {
        scan.scanned += 1;
        let packing = pack::pack_padding_only(agg);
        if packing.best_size >= agg.size {
            continue;
        }
        match pack::check(agg, &packing) {
            Ok(()) => scan.structs.push(Packable {
                agg,
                best_size: packing.best_size,
                optimal: packing.optimal,
            }),
            Err(e) => scan.refused.push((agg.name.clone(), e)),
        }
    }
    scan
}

/// The checked packing of one struct (for reports that show the layout).
pub fn pack_checked(agg: &Aggregate) -> Result<Packing, PackError> {
    let packing = pack::pack_padding_only(agg);
    pack::check(agg, &packing)?;
    Ok(packing)
}

/// Where a ranked struct's classes came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Classes {
    AccessFile,
    Inferred,
}

impl Classes {
    pub fn name(self) -> &'static str {
        match self {
            Classes::AccessFile => "access file",
            Classes::Inferred => "inferred",
        }
    }
}

/// One struct of the ranking.
#[derive(Clone, Debug)]
pub struct Ranked {
    pub exposure: Exposure,
    /// Padding-only best size (as [`packable`] computes it).
    pub best_size: u64,
    pub classes: Classes,
}

/// The structs whose lockless fields share cache lines with other data,
/// most exposed first (see [`rank`]). Structs with a table in `access` take
/// their classes from it (it is an error when no struct of that name
/// exists); the others get classes from their member types ([`infer`]).
pub fn rank(
    db: &TypeDb,
    access: Option<&AccessFile>,
    line: u64,
) -> Result<Vec<Ranked>, Diagnostic> {
    let mut out = Vec::new();
    let listed = |name: &str| access.is_some_and(|f| f.structs.contains_key(name));
    if let Some(file) = access {
        for (name, table) in &file.structs {
            let found = db.find_all(name);
            let structs: Vec<&Aggregate> = found.into_iter().filter(|a| is_scanned(a)).collect();
            if structs.is_empty() {
                return Err(Diagnostic::new(format!(
                    "[struct.{name}] names no struct in {}",
                    db.source().display()
                ))
                .in_file(&file.path)
                .at(table.at.line, table.at.column)
                .help("check the name, or remove the table"));
            }
            for agg in structs {
                let mut model = db.to_model(agg);
                file.apply_with(
                    &mut model,
                    &crate::access::MemberNames::from_typedb(db, agg),
                )?;
                if let Some(e) = rank::exposure(&model, agg.size, line) {
                    out.push(ranked(agg, e, Classes::AccessFile));
                }
            }
        }
    }
    for agg in db.aggregates().filter(|a| is_scanned(a)) {
        if listed(&agg.name) || !infer::has_lockless(db, agg) {
            continue;
        }
        let model = infer::infer_model(db, agg);
        if let Some(e) = rank::exposure(&model, agg.size, line) {
            out.push(ranked(agg, e, Classes::Inferred));
        }
    }
    out.sort_by(|a, b| {
        a.exposure
            .rank_key()
            .cmp(&b.exposure.rank_key())
            .then_with(|| a.exposure.name.cmp(&b.exposure.name))
    });
    Ok(out)
}

fn ranked(agg: &Aggregate, exposure: Exposure, classes: Classes) -> Ranked {
    let best_size = match pack_checked(agg) {
        Ok(p) => p.best_size,
        Err(_) => agg.size,
    };
    Ranked {
        exposure,
        best_size,
        classes,
    }
}
