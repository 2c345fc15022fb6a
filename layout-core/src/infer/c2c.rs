//! `perf c2c report --stdio`: the Shared Data Cache Line Table (per cache
//! line: HITM, loads, stores) and the Shared Cache Line Distribution Pareto
//! (per line, per offset and code address: the share of the line's HITM and
//! stores, and the samples).
//!
//! Columns are found by their names in each section's last header line, and
//! rows are read by tokens, never by character positions: perf pads each
//! column to its widest value, adds columns between versions (`N/A` stores,
//! `Peer` snoops) and renames some (`--display rmt|lcl|tot|peer`). A Pareto
//! row's percentages are shares of its cache line's totals, which the
//! line's own row of the Pareto (or the table) gives as counts.

use crate::Diagnostic;
use std::path::Path;

/// Totals of one cache line, from the Shared Data Cache Line Table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineTotals {
    pub address: u64,
    pub hitm: u64,
    pub loads: u64,
    pub stores: u64,
    pub records: u64,
}

/// What one Pareto row says about one offset of one line, from one code address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetSamples {
    /// The cache line's address.
    pub line: u64,
    /// The byte offset inside the line.
    pub offset: u64,
    pub loads: u64,
    pub stores: u64,
    /// Loads that hit a line another core modified (local and remote).
    pub hitm: u64,
    pub symbol: Option<String>,
    pub source_line: Option<String>,
    /// The row's line in the report (1-based).
    pub at: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct C2cReport {
    pub lines: Vec<LineTotals>,
    pub rows: Vec<OffsetSamples>,
}

/// Header words perf spreads over two tokens.
const TWO_WORD: &[(&str, &str)] = &[
    ("PA", "cnt"),
    ("L1", "Hit"),
    ("L1", "Miss"),
    ("Code", "address"),
    ("Data", "address"),
    ("rmt", "hitm"),
    ("lcl", "hitm"),
    ("rmtc", "hitm"),
    ("lclc", "hitm"),
    ("rmt", "peer"),
    ("lcl", "peer"),
    ("Total", "records"),
];

/// The column names of a header line (`# Index  Address  Node  PA cnt ...`),
/// with two-word names joined (`PA cnt` → `PAcnt`).
fn header_names(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.trim_start_matches('#').split_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if let Some(next) = words.get(i + 1) {
            if TWO_WORD.contains(&(words[i], next)) {
                out.push(format!("{}{}", words[i], next));
                i += 2;
                continue;
            }
        }
        out.push(words[i].to_string());
        i += 1;
    }
    out
}

fn hex(token: &str) -> Option<u64> {
    let t = token
        .strip_prefix("0x")
        .or_else(|| token.strip_prefix("0X"))?;
    u64::from_str_radix(t, 16).ok()
}

fn count(token: &str) -> Option<u64> {
    token.replace(',', "").parse().ok()
}

/// `12.50%`: a share from 0 to 100 (perf prints `%.2f%%`); `nan%`,
/// `inf%`, a sign or an exponent is not one.
fn percent(token: &str) -> Option<f64> {
    let n = token.strip_suffix('%')?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    n.parse().ok().filter(|v: &f64| *v <= 100.0)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    None,
    Table,
    Pareto,
}

/// Whether a column of HITM counts or shares (local, remote, or peer snoops).
fn is_hitm(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    (n.contains("hitm") || n.contains("peer")) && !n.starts_with("tot")
}

/// Whether a column of store counts or shares.
fn is_store(name: &str) -> bool {
    matches!(name, "L1Hit" | "L1Miss" | "N/A")
}

/// Parses the text of `perf c2c report --stdio`; `path` is used in errors.
pub fn parse(path: &Path, text: &str) -> Result<C2cReport, Diagnostic> {
    let mut report = C2cReport::default();
    let mut section = Section::None;
    let mut names: Vec<String> = Vec::new();
    // The Pareto's share columns (before `Offset`), and the current line's counts of them.
    let mut share_cols: Vec<String> = Vec::new();
    let mut current: Option<(u64, Vec<u64>)> = None;
    let err = |at: usize, msg: String| {
        Diagnostic::new(msg)
            .in_file(path)
            .at(at, 1)
            .help("give the unmodified text of `perf c2c report --stdio` (the Pareto section is needed: do not pass --stats)")
    };
    for (i, raw) in text.lines().enumerate() {
        let at = i + 1;
        let line = raw.trim();
        if line.contains("Shared Data Cache Line Table") {
            section = Section::Table;
            names.clear();
            continue;
        }
        if line.contains("Shared Cache Line Distribution Pareto") {
            section = Section::Pareto;
            names.clear();
            continue;
        }
        if line.starts_with("====") || line.is_empty() {
            continue;
        }
        if line.starts_with('=') || line.contains("Trace Event Information") {
            section = Section::None;
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            let h = h.trim();
            if h.starts_with("..") || h.starts_with("--") || h.is_empty() {
                continue;
            }
            let cand = header_names(h);
            match section {
                Section::Table if cand.iter().any(|n| n == "Address") => names = cand,
                Section::Pareto if cand.iter().any(|n| n == "Offset") => {
                    let off = cand.iter().position(|n| n == "Offset").unwrap_or(0);
                    // `Num` heads the share columns in the header only.
                    share_cols = cand[..off]
                        .iter()
                        .filter(|n| *n != "Num")
                        .cloned()
                        .collect();
                    names = cand;
                }
                _ => {}
            }
            continue;
        }
        if line.starts_with("---") {
            continue;
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        match section {
            Section::None => {}
            Section::Table => {
                if names.is_empty() {
                    return Err(err(
                        at,
                        "a cache line row before the table's header line".into(),
                    ));
                }
                report.lines.push(table_row(&names, &tokens).ok_or_else(|| {
                    err(
                        at,
                        format!("cannot read this Shared Data Cache Line Table row: `{line}`"),
                    )
                })?);
            }
            Section::Pareto => {
                if names.is_empty() {
                    return Err(err(
                        at,
                        "a Pareto row before the Pareto's header line".into(),
                    ));
                }
                if tokens.first().is_some_and(|t| t.ends_with('%')) {
                    let Some((addr, counts)) = &current else {
                        return Err(err(at, "an offset row before its cache line's row".into()));
                    };
                    let row = pareto_row(&names, &share_cols, counts, *addr, &tokens, at)
                        .ok_or_else(|| err(at, format!("cannot read this Pareto row: `{line}`")))?;
                    report.rows.push(row);
                } else {
                    // A cache line: its number, its counts of the share columns, its address.
                    let addr = tokens.iter().rev().find_map(|t| hex(t));
                    let counts: Option<Vec<u64>> = tokens
                        .get(1..1 + share_cols.len())
                        .map(|c| c.iter().map(|t| count(t)).collect::<Option<Vec<u64>>>())
                        .and_then(|c| c);
                    match (addr, counts) {
                        (Some(a), Some(c)) => current = Some((a, c)),
                        _ => {
                            return Err(err(
                                at,
                                format!("cannot read this Pareto cache line row: `{line}`"),
                            ))
                        }
                    }
                }
            }
        }
    }
    if report.rows.is_empty() {
        return Err(Diagnostic::new("no Shared Cache Line Distribution Pareto rows in the perf c2c report")
            .in_file(path)
            .help("run `perf c2c report --stdio` (without --stats) on a `perf c2c record` of the workload"));
    }
    Ok(report)
}

fn table_row(names: &[String], tokens: &[&str]) -> Option<LineTotals> {
    if tokens.len() < names.len() {
        return None;
    }
    let col = |name: &str| names.iter().position(|n| n == name);
    let at = |name: &str| col(name).and_then(|i| count(tokens[i]));
    let address = hex(tokens[col("Address")?])?;
    // The first `Total` after `Hitm` is the HITM total; without it, the sum of the HITM columns.
    let hitm = match names.iter().position(|n| n == "Hitm") {
        Some(h) => names[h..]
            .iter()
            .position(|n| n == "Total")
            .and_then(|t| count(tokens[h + t])),
        None => None,
    }
    .or_else(|| {
        Some(
            at("LclHitm")
                .unwrap_or(0)
                .saturating_add(at("RmtHitm").unwrap_or(0)),
        )
    })?;
    Some(LineTotals {
        address,
        hitm,
        loads: at("Loads").unwrap_or(0),
        stores: at("Stores").unwrap_or(0),
        records: at("records").unwrap_or(0),
    })
}

fn pareto_row(
    names: &[String],
    share_cols: &[String],
    counts: &[u64],
    line: u64,
    tokens: &[&str],
    at: usize,
) -> Option<OffsetSamples> {
    let n = share_cols.len();
    let shares: Vec<f64> = tokens
        .get(..n)?
        .iter()
        .map(|t| percent(t))
        .collect::<Option<_>>()?;
    let part = |pred: fn(&str) -> bool| -> u64 {
        share_cols
            .iter()
            .zip(&shares)
            .zip(counts)
            .filter(|((c, _), _)| pred(c))
            .map(|((_, s), total)| (s / 100.0 * *total as f64).round() as u64)
            .fold(0u64, u64::saturating_add)
    };
    let hitm = part(is_hitm);
    let stores = part(is_store);
    // After the shares the row follows the header from `Offset` on.
    let off_col = names.iter().position(|c| c == "Offset")?;
    let rest = &tokens[n..];
    let col = |name: &str| names[off_col..].iter().position(|c| c == name);
    let offset = hex(rest.get(col("Offset")?)?)?;
    let records = col("records")
        .and_then(|i| rest.get(i))
        .and_then(|t| count(t))?;
    // The symbol follows its `[k]` / `[.]` marker; the source line is `file:line`.
    let marker = rest
        .iter()
        .position(|t| t.starts_with('[') && t.ends_with(']') && t.len() <= 3);
    let symbol = marker.and_then(|m| rest.get(m + 1)).map(|s| s.to_string());
    let source_line = marker.and_then(|m| {
        rest[m + 1..]
            .iter()
            .find(|t| {
                t.rsplit_once(':')
                    .is_some_and(|(_, l)| l.parse::<u64>().is_ok())
            })
            .map(|s| s.to_string())
    });
    Some(OffsetSamples {
        line,
        offset,
        loads: records.saturating_sub(stores),
        stores,
        hitm,
        symbol,
        source_line,
        at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        // The same cases on every run.
        #![proptest_config(ProptestConfig {
            rng_seed: proptest::test_runner::RngSeed::Fixed(0xc2c),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Any text, and any perf-like text with its columns shuffled,
        /// is a report or an error, never a panic.
        #[test]
        fn never_panics(lines in proptest::collection::vec(
            proptest::sample::select(vec![
                "Shared Data Cache Line Table", "Shared Cache Line Distribution Pareto",
                "# Index Address Node PA cnt Hitm Total LclHitm RmtHitm records Loads Stores",
                "#   Num  RmtHitm  LclHitm  records  Offset  Node  Code address  records  Symbol",
                "#   Num  Offset RmtHitm", "0 0xffff8881 0 1 50.00% 10 5 5 100 80 20",
                "      0       30      400  0xffff888104a3c000", "  50.00%  25.00%  0x8  0  1  0xffffffff81  12  [k] f  x.c:1",
                "100.00% 0x0", "-----", "=====", "", "  0x10 [k]", "# Samples: 1K of event 'mem-loads'",
                "# Overhead  Samples  Data Type  Data Type Offset", "  5.00%  12  struct a  struct a +8 (b)",
                "Annotate type: 'struct a' in x (10 samples):", "  10.00  8  8  long  b;", "  1.0  x  y  z;",
                // Groups: the event lines, each value column kind, several columns.
                " event[0] = mem-loads", " event[1] = mem-stores", "event[", " event[1] =",
                "      Samples  offset  size  field", "      Period  offset  size  field",
                "  100.00  100.00  0  16  struct a  {", "  3  4  8  8  long  b;", "  5  x  8  8  long  c;",
                "};", "# Samples: 130 of events 'anon group { mem-loads, mem-stores }'",
                "  90.00%  10.00%  90  10  struct a  struct a +0 (b)", "  1.00%  2.00%  struct a  struct a +8 (c)",
                "  NaN  inf  0  8  long  d;", "  -1.0  0  8  long  e;",
                // Hostile numbers: huge, negative, overflowing, not numbers.
                "0 0xffffffffffffffffff 0 1 50.00% 18446744073709551615 18446744073709551615 18446744073709551615 18446744073709551615 18446744073709551615 18446744073709551615",
                "  100.00%  100.00%  0xffffffffffffffff  0  18446744073709551615  0xffffffffffffffff  18446744073709551615  [k] f  x.c:1",
                "  nan%  inf%  0x8  0  1  0x1  12  [k] f  x.c:1", "  -5.00%  1e308%  0x8  0  1  0x1  12  [k] f  x.c:1",
                "  5.00%  18446744073709551616  struct a  struct a +0xffffffffffff (b)",
                "  5.00%  12  struct a  struct a +-8 (b)", "  150.00%  12  struct a  struct a +0x8 (b)",
                "# Samples: 18446744073709551615K of event 'mem-loads'",
                "  1e300  0x8  0x10  long  b;", "  99999999999999999999  0  0x8  long  f;",
            ]), 0..16)) {
            let text = lines.join("\n");
            let _ = parse(Path::new("t"), &text);
            let _ = crate::infer::data_type::parse(Path::new("t"), &text);
        }
    }

    #[test]
    fn counts_at_the_top_of_u64_saturate_and_bad_shares_are_refused() {
        let max = u64::MAX;
        let text = format!(
            "Shared Data Cache Line Table\n\
             # Index Address Node PA cnt LclHitm RmtHitm records Loads Stores\n\
             0 0xffff888104a3c000 0 1 {max} {max} {max} {max} {max}\n\
             Shared Cache Line Distribution Pareto\n\
             #   LclHitm  RmtHitm  Stores  Offset  Node  PA cnt  Code address  records  Symbol\n\
             \x20 100.00%  100.00%  100.00%  0x8  0  1  0xffffffff81000000  {max}  [k] f  x.c:1\n\
             \x20 100.00%  100.00%  100.00%  0x10  0  1  0xffffffff81000000  {max}  [k] g  x.c:2\n"
        );
        // The table row's HITM sum and the offsets' shares of counts at
        // u64::MAX saturate (a debug build panicked on the overflow); the
        // Pareto rows here lack their line's row: an error, not a panic.
        let e = parse(Path::new("t"), &text).unwrap_err();
        assert!(e.to_string().contains("before its cache line's row"), "{e}");
        let names: Vec<String> = [
            "Index", "Address", "Node", "PAcnt", "LclHitm", "RmtHitm", "records", "Loads", "Stores",
        ]
        .map(String::from)
        .to_vec();
        let m = max.to_string();
        let row = table_row(
            &names,
            &["0", "0xffff888104a3c000", "0", "1", &m, &m, &m, &m, &m],
        )
        .unwrap();
        assert_eq!((row.hitm, row.loads), (max, max));
        for bad in ["nan%", "inf%", "-5.00%", "1e308%", "150.00%"] {
            assert_eq!(percent(bad), None, "{bad}");
        }
        assert_eq!(percent("12.50%"), Some(12.5));
    }

    #[test]
    fn header_words_are_joined() {
        assert_eq!(
            header_names(
                "#   Num  RmtHitm  LclHitm   L1 Hit  L1 Miss  Offset  Node  PA cnt  Code address"
            ),
            [
                "Num",
                "RmtHitm",
                "LclHitm",
                "L1Hit",
                "L1Miss",
                "Offset",
                "Node",
                "PAcnt",
                "Codeaddress"
            ]
        );
    }
}
