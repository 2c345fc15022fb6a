//! The JSON forms of `scan --format json`: one object with the list of
//! structs, one struct per line, so that a scan of thousands of structs
//! reads (and greps) like the table:
//!
//! ```json
//! {"structs": [
//!   {"struct": "a", "size": 24, "best_size": 16, "saving": 8, "optimal": true},
//!   {"struct": "b", "size": 40, "best_size": 32, "saving": 8, "optimal": true}
//! ], "scanned": 2, "packable": 2, "total_saving": 16}
//! ```
//!
//! Keys print in the order of the fields below. `docs/json.md` describes
//! every key.

use crate::scan::{PackScan, Ranked};
use serde::Serialize;
use serde_json::ser::Formatter;
use std::io::{self, Write};

/// `scan --packable --format json`.
#[derive(Clone, Debug, Serialize)]
pub struct PackableJson<'a> {
    /// The structs that reordering alone makes smaller, in database order.
    pub structs: Vec<PackableRow<'a>>,
    /// How many structs were looked at.
    pub scanned: usize,
    /// How many of them are packable (`structs.len()`).
    pub packable: usize,
    /// The sum of the savings.
    pub total_saving: u64,
}

/// One struct of [`PackableJson`].
#[derive(Clone, Debug, Serialize)]
pub struct PackableRow<'a> {
    #[serde(rename = "struct")]
    pub name: &'a str,
    pub size: u64,
    pub best_size: u64,
    pub saving: u64,
    /// No reordering does better.
    pub optimal: bool,
}

impl<'a> PackableJson<'a> {
    pub fn of(scan: &'a PackScan<'_>) -> Self {
        PackableJson {
            structs: scan
                .structs
                .iter()
                .map(|p| PackableRow {
                    name: &p.agg.name,
                    size: p.agg.size,
                    best_size: p.best_size,
                    saving: p.saving(),
                    optimal: p.optimal,
                })
                .collect(),
            scanned: scan.scanned,
            packable: scan.structs.len(),
            total_saving: scan.total_saving(),
        }
    }
}

/// `scan --format json`: the ranking of structs whose lockless fields share
/// lines with other data.
#[derive(Clone, Debug, Serialize)]
pub struct RankingJson<'a> {
    /// Most exposed first.
    pub structs: Vec<RankingRow<'a>>,
    /// Cache line size in bytes.
    pub line: u64,
    /// Always `true`: lines are counted from the struct's start and classes
    /// are inferred from member types unless an access file names the struct.
    pub heuristic: bool,
}

/// One struct of [`RankingJson`].
#[derive(Clone, Debug, Serialize)]
pub struct RankingRow<'a> {
    #[serde(rename = "struct")]
    pub name: &'a str,
    pub size: u64,
    /// Padding-only best size.
    pub best_size: u64,
    /// Bytes of other fields on lines that hold lockless bytes.
    pub shared_bytes: u64,
    /// The read-mostly part of `shared_bytes`.
    pub read_mostly_bytes: u64,
    /// Lines that hold lockless bytes and other data.
    pub lines: u64,
    /// Where the classes come from: `access file` or `inferred`.
    pub classes: &'static str,
    /// Lockless fields that share a line with other data, in offset order.
    pub lockless: &'a [String],
}

impl<'a> RankingJson<'a> {
    pub fn of(ranked: &'a [Ranked], line: u64) -> Self {
        RankingJson {
            structs: ranked
                .iter()
                .map(|r| {
                    let e = &r.exposure;
                    RankingRow {
                        name: &e.name,
                        size: e.size,
                        best_size: r.best_size,
                        shared_bytes: e.shared_bytes,
                        read_mostly_bytes: e.read_mostly_bytes,
                        lines: e.lines,
                        classes: r.classes.name(),
                        lockless: &e.lockless,
                    }
                })
                .collect(),
            line,
            heuristic: true,
        }
    }
}

/// Writes `value` (an object whose first array holds the rows) one row per
/// line, as the module docs show, with a final newline.
pub fn write_rows(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, RowPerLine::default());
    value.serialize(&mut ser).map_err(io::Error::from)?;
    writeln!(out)
}

/// Compact JSON with `": "` and `", "`, and each element of the arrays
/// directly under the top object on a line of its own, indented by two.
#[derive(Default)]
struct RowPerLine {
    /// Objects and arrays open around the next token.
    depth: usize,
}

impl RowPerLine {
    /// Inside an array directly under the top-level object.
    fn in_rows(&self) -> bool {
        self.depth == 2
    }
}

impl Formatter for RowPerLine {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        w.write_all(b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        let rows = self.in_rows();
        self.depth -= 1;
        w.write_all(if rows { b"\n]" } else { b"]" })
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        match (self.in_rows(), first) {
            (true, true) => w.write_all(b"\n  "),
            (true, false) => w.write_all(b",\n  "),
            (false, true) => Ok(()),
            (false, false) => w.write_all(b", "),
        }
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        w.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        w.write_all(b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Row<'a> {
        #[serde(rename = "struct")]
        name: &'a str,
        tags: Vec<&'a str>,
        ok: bool,
    }

    #[derive(Serialize)]
    struct Rows<'a> {
        structs: Vec<Row<'a>>,
        line: u64,
    }

    fn written(v: &impl Serialize) -> String {
        let mut out = Vec::new();
        write_rows(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn one_row_per_line_with_spaced_separators() {
        let v = Rows {
            structs: vec![
                Row {
                    name: "a\"b",
                    tags: vec!["x", "y"],
                    ok: true,
                },
                Row {
                    name: "c",
                    tags: vec![],
                    ok: false,
                },
            ],
            line: 64,
        };
        assert_eq!(
            written(&v),
            "{\"structs\": [\n  {\"struct\": \"a\\\"b\", \"tags\": [\"x\", \"y\"], \"ok\": true},\n  \
             {\"struct\": \"c\", \"tags\": [], \"ok\": false}\n], \"line\": 64}\n"
        );
        let back: serde_json::Value = serde_json::from_str(&written(&v)).unwrap();
        assert_eq!(back, serde_json::to_value(&v).unwrap());
    }

    #[test]
    fn no_rows_still_close_on_their_own_line() {
        let v = Rows {
            structs: vec![],
            line: 64,
        };
        assert_eq!(written(&v), "{\"structs\": [\n], \"line\": 64}\n");
    }
}
