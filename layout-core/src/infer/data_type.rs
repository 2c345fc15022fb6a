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
//!
//! Event groups (`--group`, or a group recorded as `-e '{a,b}'`): perf
//! prints one value column per event. `perf annotate --data-type --group`
//! names the events in ` event[i] = NAME` lines under the type's header,
//! and its columns are percentages (the default), sample counts (`-n`) or
//! periods (`--show-total-period`); `perf report --group` names them in
//! `# Samples: N of events 'anon group { a, b }'` and prints the overhead
//! columns, then (with `-n`) the sample columns. A group's percentages are
//! each of its own event's samples, and perf prints only their sum: where
//! more than one event has samples, only counts (`-n`) say how many each
//! took, and the percentages alone are refused with that help.

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
    // perf annotate --data-type: the type being annotated and its columns.
    let mut annotate: Option<Annotated> = None;
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
                    .map(|(_, e)| {
                        e.trim_start_matches('s')
                            .trim()
                            .trim_matches('\'')
                            .to_string()
                    })
                    .unwrap_or_default();
                annotate = None;
            } else if h.starts_with("Overhead") {
                has_samples_col = h.split_whitespace().any(|w| w == "Samples");
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
                (Some(name), Some(n)) => {
                    annotate = Some(Annotated {
                        type_name: name,
                        samples: n,
                        events: Vec::new(),
                        values: None,
                        totals: None,
                    })
                }
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
        if let Some(a) = &mut annotate {
            // ` event[0] = mem-loads`: the events of a group, in column order.
            if let Some(rest) = line.strip_prefix("event[") {
                let name = rest.split_once('=').map(|(_, n)| n.trim().to_string());
                match name {
                    Some(name) if a.values.is_none() && !name.is_empty() => {
                        a.events.push(name);
                        continue;
                    }
                    _ => return Err(err(at, format!("cannot read this event line: `{line}`"))),
                }
            }
            // `Percent offset size field` (`Samples` with -n, `Period` with
            // --show-total-period); then a row per member, its value per
            // event, offset, size, type and name: a leaf ends with `;`, an
            // aggregate with `{`.
            if let Some(kind) = tokens.first().and_then(|t| Values::of_header(t)) {
                a.values = Some(kind);
                continue;
            }
            if tokens == ["};"] || tokens == ["}"] {
                continue;
            }
            let columns = a.events.len().max(1);
            let values: Option<Vec<f64>> = tokens
                .get(..columns)
                .map(|v| v.iter().map(|t| annotate_value(t)).collect())
                .and_then(|v: Vec<Option<f64>>| v.into_iter().collect());
            let (Some(values), Some(offset)) = (
                values.filter(|v| v.iter().all(|x| x.is_finite() && *x >= 0.0)),
                tokens.get(columns).and_then(|t| offset_number(t)),
            ) else {
                return Err(err(at, format!("cannot read this annotate row: `{line}`")));
            };
            let kind = a.values.unwrap_or(Values::Percent);
            if kind == Values::Percent && values.iter().any(|v| *v > 100.0) {
                return Err(err(
                    at,
                    format!("a percentage over 100 in this annotate row: `{line}`"),
                ));
            }
            if a.totals.is_none() {
                // The first row is the type itself: what each column totals.
                a.totals = Some(a.event_totals(kind, &values).map_err(|msg| {
                    Diagnostic::new(msg).in_file(path).at(at, 1).help(
                        "print sample counts with -n (`perf annotate --data-type --group --stdio -n`), \
                         or give `perf report -s type,typeoff --stdio -n` of the same data",
                    )
                })?);
            }
            if !line.ends_with(';') {
                continue; // an aggregate: its leaves carry its samples
            }
            let member = tokens
                .last()
                .map(|t| t.trim_end_matches(';'))
                .and_then(|t| t.split('[').next())
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            let totals = a.totals.as_ref().expect("set by the first row");
            for (e, (&value, total)) in values.iter().zip(totals).enumerate() {
                let name = match a.events.get(e) {
                    Some(n) => n.clone(),
                    None => event.clone(),
                };
                let samples = match (kind, total) {
                    (Values::Samples, _) => value.round() as u64,
                    (Values::Percent, Total { samples, .. }) => {
                        (value / 100.0 * *samples as f64).round() as u64
                    }
                    (Values::Period, Total { samples, root }) if *root > 0.0 => {
                        (value / root * *samples as f64).round() as u64
                    }
                    (Values::Period, _) => 0,
                };
                out.push(TypeSamples {
                    type_name: a.type_name.clone(),
                    offset,
                    member: member.clone(),
                    direction: Direction::of_event(&name),
                    event: name,
                    samples,
                    estimated: kind == Values::Period,
                    at,
                });
            }
            continue;
        }
        // perf report -s type,typeoff: `30.00%  [360]  struct page_counter  struct page_counter +0 (usage.counter)`;
        // with --group, one overhead (and sample) column per event.
        let percents = tokens
            .iter()
            .take_while(|t| percentage(t).is_some())
            .count();
        let Some(pct) = tokens.first().and_then(|t| percentage(t)) else {
            return Err(err(at, format!("cannot read this row: `{line}`")));
        };
        if percents > 1 {
            let events = group_events(&event);
            if events.len() != percents {
                return Err(err(
                    at,
                    format!(
                        "this row has {percents} overhead columns, but the `# Samples:` header \
                         names {} events: `{line}`",
                        events.len()
                    ),
                ));
            }
            if !has_samples_col {
                return Err(Diagnostic::new(format!(
                    "a group's overheads are each of its own event's samples, which the report \
                     does not print apart: cannot tell how many samples each of {} took",
                    events.join(", ")
                ))
                .in_file(path)
                .at(at, 1)
                .help("add -n (`perf report --group -s type,typeoff --stdio -n`) for the counts"));
            }
            let counts: Option<Vec<u64>> = tokens
                .get(percents..2 * percents)
                .map(|c| c.iter().map(|t| t.parse::<u64>().ok()).collect())
                .and_then(|c: Vec<Option<u64>>| c.into_iter().collect());
            let Some(counts) = counts else {
                return Err(err(at, format!("no sample counts in this row: `{line}`")));
            };
            let Some(row) = typeoff(&tokens, 2 * percents) else {
                if tokens[2 * percents..].iter().any(|t| t.starts_with('+')) {
                    return Err(err(at, format!("cannot read this row: `{line}`")));
                }
                continue;
            };
            for (name, n) in events.iter().zip(counts) {
                out.push(TypeSamples {
                    type_name: row.0.clone(),
                    offset: row.1,
                    member: row.2.clone(),
                    direction: Direction::of_event(name),
                    event: name.clone(),
                    samples: n,
                    estimated: false,
                    at,
                });
            }
            continue;
        }
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
        let Some(plus) = tokens.iter().position(|t| plus_offset(t).is_some()) else {
            // A type without offsets (`(unknown)`, `(stack operation)`) says nothing of members.
            continue;
        };
        if plus < k {
            return Err(err(at, format!("cannot read this row: `{line}`")));
        }
        let offset: u64 = plus_offset(tokens[plus]).unwrap_or(0);
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

/// An annotate row's value: ` %7.2f` (a percentage), ` %7d` (samples)
/// or ` %11lu` (a period); digits and one point only (no `nan`, `inf`,
/// sign or exponent), at most 2^53 (exact in an f64).
fn annotate_value(t: &str) -> Option<f64> {
    let n = t.strip_suffix('%').unwrap_or(t);
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    n.parse::<f64>().ok().filter(|v| *v <= (1u64 << 53) as f64)
}

/// What an annotate column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Values {
    Percent,
    Samples,
    Period,
}

impl Values {
    fn of_header(word: &str) -> Option<Values> {
        match word {
            "Percent" => Some(Values::Percent),
            "Samples" => Some(Values::Samples),
            "Period" => Some(Values::Period),
            _ => None,
        }
    }
}

/// One column's total: its samples, and its value on the type's own row.
#[derive(Clone, Copy, Debug)]
struct Total {
    samples: u64,
    root: f64,
}

/// The type `perf annotate --data-type` is printing.
struct Annotated {
    type_name: String,
    /// The header's samples: all events' together.
    samples: u64,
    /// A group's events, in column order (empty: one event).
    events: Vec<String>,
    values: Option<Values>,
    /// Each column's total, from the type's own row.
    totals: Option<Vec<Total>>,
}

impl Annotated {
    /// Each column's samples, from the type's own row (`root`): the
    /// header's count for one event, or for the only event of a group
    /// with samples of this type; counts need no total.
    fn event_totals(&self, kind: Values, root: &[f64]) -> Result<Vec<Total>, String> {
        let with_samples = root.iter().filter(|v| **v > 0.0).count();
        if kind != Values::Samples && root.len() > 1 && with_samples > 1 {
            return Err(format!(
                "the group's columns of `{}` are each of their own event's samples, and perf \
                 prints only their sum ({}): cannot tell how many each of {} took",
                self.type_name,
                self.samples,
                self.events.join(", ")
            ));
        }
        Ok(root
            .iter()
            .map(|&v| Total {
                samples: if v > 0.0 || root.len() == 1 {
                    self.samples
                } else {
                    0
                },
                root: v,
            })
            .collect())
    }
}

/// The events of `anon group { a, b }` (or `group NAME { a, b }`); one
/// event otherwise.
fn group_events(event: &str) -> Vec<String> {
    match event.split_once('{').and_then(|(_, r)| r.rsplit_once('}')) {
        Some((inner, _)) => inner
            .split(',')
            .map(|e| e.trim().to_string())
            .filter(|e| !e.is_empty())
            .collect(),
        None => vec![event.to_string()],
    }
}

/// The type, offset and member of a report row's `TYPE TYPE +OFF (MEMBER)`
/// tokens from `k` on; `None` for a type without offsets.
fn typeoff(tokens: &[&str], k: usize) -> Option<(String, u64, Option<String>)> {
    let plus = k + tokens
        .get(k..)?
        .iter()
        .position(|t| plus_offset(t).is_some())?;
    let offset: u64 = plus_offset(tokens[plus])?;
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
    Some((type_words.join(" "), offset, member))
}

/// An offset as perf prints it: decimal (`%d`, older perf) or C's `%#x`
/// (`0x18`, and `0` for zero, without the prefix); the largest is a type's
/// size, so more than 32 bits is not an offset.
fn offset_number(t: &str) -> Option<u64> {
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            u64::from_str_radix(hex, 16).ok()?
        }
        Some(_) => return None,
        None if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => t.parse().ok()?,
        None => return None,
    };
    (v <= u64::from(u32::MAX)).then_some(v)
}

/// `+OFF` of `perf report -s typeoff`: `+%d` or `+%#x`.
fn plus_offset(t: &str) -> Option<u64> {
    offset_number(t.strip_prefix('+')?)
}

/// `12.50%`: a share from 0 to 100 (perf prints `%.2f%%`); anything else
/// (`nan%`, `inf%`, `-1%`, `150%`) is not an overhead column.
fn percentage(t: &str) -> Option<f64> {
    let n = t.strip_suffix('%')?;
    if !n.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    n.parse::<f64>().ok().filter(|v| (0.0..=100.0).contains(v))
}

/// `1234`, `1K`, `2M`: a count and whether perf rounded it.
fn samples_count(t: &str) -> Option<(u64, bool)> {
    let (num, mult) = match t.chars().last()? {
        'K' => (&t[..t.len() - 1], 1_000u64),
        'M' => (&t[..t.len() - 1], 1_000_000),
        'G' => (&t[..t.len() - 1], 1_000_000_000),
        _ => (t, 1),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: u64 = num.parse().ok()?;
    Some((v.checked_mul(mult)?, mult > 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str) -> Vec<(Option<String>, Direction, u64, bool)> {
        parse(Path::new("t"), text)
            .unwrap()
            .into_iter()
            .map(|r| (r.member, r.direction, r.samples, r.estimated))
            .collect()
    }

    const GROUP_HEAD: &str = "Annotate type: 'struct s' in [kernel.kallsyms] (130 samples):\n \
        event[0] = mem-loads\n event[1] = mem-stores\n\
        ============================================================================\n";

    #[test]
    fn annotate_groups_with_counts_give_each_event_its_samples() {
        let text = format!(
            "{GROUP_HEAD}                Samples     offset       size  field\n\
             \x20  100      30          0         16  struct s   {{\n\
             \x20   90       0          0          8      long   a;\n\
             \x20   10      30          8          8      long   b;\n\
             \x20                                           }};\n"
        );
        let r = rows(&text);
        use Direction::{Load, Store};
        assert_eq!(
            r,
            [
                (Some("a".into()), Load, 90, false),
                (Some("a".into()), Store, 0, false),
                (Some("b".into()), Load, 10, false),
                (Some("b".into()), Store, 30, false),
            ]
        );
    }

    #[test]
    fn annotate_group_percentages_are_read_only_where_one_event_has_samples() {
        let both = format!(
            "{GROUP_HEAD}                Percent     offset       size  field\n\
             \x20 100.00  100.00          0         16  struct s   {{\n\
             \x20  90.00    0.00          0          8      long   a;\n\
             \x20  10.00  100.00          8          8      long   b;\n\
             \x20                                           }};\n"
        );
        let e = parse(Path::new("t"), &both).unwrap_err().to_string();
        assert!(
            e.contains("t:6:1") && e.contains("cannot tell how many"),
            "{e}"
        );
        assert!(e.contains("-n"), "{e}");
        // Only the stores sampled this type: the header's count is theirs.
        let stores = both
            .replace("100.00  100.00", "  0.00  100.00")
            .replace("90.00    0.00", " 0.00    0.00")
            .replace("10.00  100.00", " 0.00  100.00");
        let r = rows(&stores);
        assert_eq!(r[3], (Some("b".into()), Direction::Store, 130, false));
        assert_eq!(r[2], (Some("b".into()), Direction::Load, 0, false));
    }

    #[test]
    fn annotate_periods_are_shares_of_the_type_and_estimated() {
        let text = "Annotate type: 'struct s' in [kernel.kallsyms] (50 samples):\n\
             ============================================================================\n\
             \x20        Period     offset       size  field\n\
             \x20        4000          0         16  struct s   {\n\
             \x20        3000          0          8      long   a;\n\
             \x20        1000          8          8      long   b;\n\
             \x20                                          };\n";
        let r = rows(text);
        assert_eq!(r[0].2, 38);
        assert_eq!(r[1].2, 13);
        assert!(r.iter().all(|r| r.3));
    }

    #[test]
    fn report_groups_need_their_sample_columns() {
        let head = "# Samples: 130 of events 'anon group { mem-loads, mem-stores }'\n\
                    # Overhead       Samples  Data Type  Data Type Offset\n";
        let text = format!(
            "{head}    90.00%  0.00%    90     0  struct s  struct s +0 (a)\n\
             \x20   10.00%  100.00%  10    30  struct s  struct s +8 (b)\n"
        );
        let r = rows(&text);
        assert_eq!(r.len(), 4);
        assert_eq!(r[3], (Some("b".into()), Direction::Store, 30, false));
        assert_eq!(r[2], (Some("b".into()), Direction::Load, 10, false));
        let no_counts = text
            .replace(" Samples ", " ")
            .replace("    90     0", "")
            .replace("  10    30", "");
        let e = parse(Path::new("t"), &no_counts).unwrap_err().to_string();
        assert!(e.contains("cannot tell how many samples each"), "{e}");
    }

    #[test]
    fn an_event_line_after_the_columns_is_an_error() {
        let text = format!(
            "{GROUP_HEAD}                Samples     offset       size  field\n event[2] = cycles\n"
        );
        let e = parse(Path::new("t"), &text).unwrap_err().to_string();
        assert!(e.contains("cannot read this event line"), "{e}");
    }

    /// C's `%#Nx`: `0x` and the hex digits, except zero, which is `0`.
    fn c_hex(v: u64, width: usize) -> String {
        let s = if v == 0 {
            "0".to_string()
        } else {
            format!("{v:#x}")
        };
        format!("{s:>width$}")
    }

    /// Rows of `perf annotate --data-type --stdio` as recent perf prints
    /// them: the value (` %7.2f`, ` %7d` with -n, one per event of a
    /// group), then ` %#10x %#10x  ` offset and size, the type and `\t`
    /// and the name; a leaf ends with `;`, an aggregate with ` {`.
    fn annotate_hex(values: &[&[&str]], group: &[&str], head: &str) -> String {
        let members: [(u64, u64, &str, &str, bool); 4] = [
            (0, 0x28, "struct lru_gen_folio", "", false),
            (0, 0x8, "long unsigned int", "max_seq", true),
            (0x8, 0x10, "long unsigned int[]", "min_seq", true),
            (0x18, 0x10, "long unsigned int[]", "timestamps", true),
        ];
        let mut t = String::from(
            "Annotate type: 'struct lru_gen_folio' in [kernel.kallsyms] (40 samples):\n",
        );
        t += &"=".repeat(76);
        t += "\n";
        for (i, e) in group.iter().enumerate() {
            t += &format!(" event[{i}] = {e}\n");
        }
        t += &format!(" {head:>7} {:>10} {:>10}  field\n", "offset", "size");
        for ((off, size, ty, name, leaf), vals) in members.iter().zip(values) {
            for v in *vals {
                t += &format!(" {v:>7}");
            }
            t += &format!(" {} {}  ", c_hex(*off, 10), c_hex(*size, 10));
            if *leaf {
                t += &format!("    {ty}\t{name};\n");
            } else {
                t += &format!("{ty}\t {{\n");
            }
        }
        t += &format!("{:>33}\n", "};");
        t
    }

    #[test]
    fn annotate_rows_in_hex_read_as_in_decimal() {
        let hex = annotate_hex(
            &[&["100.00"], &["25.00"], &["50.00"], &["25.00"]],
            &[],
            "Percent",
        );
        assert!(
            hex.contains("        0x8       0x10      long unsigned int[]\tmin_seq;"),
            "{hex}"
        );
        let text = format!("# Samples: 40 of event 'cpu/mem-stores/P'\n{hex}");
        let r = parse(Path::new("t"), &text).unwrap();
        let got: Vec<(u64, Option<&str>, u64)> = r
            .iter()
            .map(|r| (r.offset, r.member.as_deref(), r.samples))
            .collect();
        assert_eq!(
            got,
            [
                (0, Some("max_seq"), 10),
                (8, Some("min_seq"), 20),
                (0x18, Some("timestamps"), 10)
            ]
        );
        assert!(r.iter().all(|r| r.direction == Direction::Store));
        // The same rows in decimal (`%10d`) read the same.
        let dec = hex
            .replace("       0x8 ", "         8 ")
            .replace("      0x18 ", "        24 ");
        let dec = dec
            .replace("0x28", "  40")
            .replace("0x10", "  16")
            .replace("0x8", "  8");
        let text2 = format!("# Samples: 40 of event 'cpu/mem-stores/P'\n{dec}");
        let r2 = parse(Path::new("t"), &text2).unwrap();
        assert_eq!(
            r2.iter().map(|r| (r.offset, r.samples)).collect::<Vec<_>>(),
            r.iter().map(|r| (r.offset, r.samples)).collect::<Vec<_>>()
        );
        // A group with counts (-n: ` %7d` per event).
        let group = annotate_hex(
            &[&["30", "10"], &["20", "0"], &["10", "0"], &["0", "10"]],
            &["mem-loads", "mem-stores"],
            "Samples",
        );
        let r = rows(&group);
        assert_eq!(
            r,
            [
                (Some("max_seq".into()), Direction::Load, 20, false),
                (Some("max_seq".into()), Direction::Store, 0, false),
                (Some("min_seq".into()), Direction::Load, 10, false),
                (Some("min_seq".into()), Direction::Store, 0, false),
                (Some("timestamps".into()), Direction::Load, 0, false),
                (Some("timestamps".into()), Direction::Store, 10, false),
            ]
        );
    }

    #[test]
    fn report_typeoff_offsets_in_hex_read_as_in_decimal() {
        // `perf report -s type,typeoff`: the type (`%s`), then `%s +%#x (%s)`
        // (recent perf) or `%s +%d (%s)` (6.8); with -n the ` %*lu` samples.
        let row = |pct: &str, n: u64, off: &str, m: &str| {
            format!(
                "    {pct:>6}%  {n:>10}  struct lru_gen_folio  struct lru_gen_folio +{off} ({m})\n"
            )
        };
        let head = "# Samples: 40 of event 'cpu/mem-loads,ldlat=30/P'\n# Overhead  Samples  Data Type  Data Type Offset\n";
        let hex = format!(
            "{head}{}{}{}",
            row("25.00", 10, "0", "max_seq"),
            row("50.00", 20, "0x8", "min_seq"),
            row("25.00", 10, "0x18", "timestamps")
        );
        let dec = format!(
            "{head}{}{}{}",
            row("25.00", 10, "0", "max_seq"),
            row("50.00", 20, "8", "min_seq"),
            row("25.00", 10, "24", "timestamps")
        );
        for text in [&hex, &dec] {
            let r = parse(Path::new("t"), text).unwrap();
            let got: Vec<(u64, Option<&str>, u64)> = r
                .iter()
                .map(|r| (r.offset, r.member.as_deref(), r.samples))
                .collect();
            assert_eq!(
                got,
                [
                    (0, Some("max_seq"), 10),
                    (8, Some("min_seq"), 20),
                    (24, Some("timestamps"), 10)
                ]
            );
        }
        // A group (--group -n) in hex.
        let ghead = "# Samples: 130 of events 'anon group { mem-loads, mem-stores }'\n\
                     # Overhead       Samples  Data Type  Data Type Offset\n";
        let g = format!("{ghead}    10.00%  100.00%  10    30  struct s  struct s +0x8 (b)\n");
        let r = rows(&g);
        assert_eq!(r[1], (Some("b".into()), Direction::Store, 30, false));
        assert_eq!(parse(Path::new("t"), &g).unwrap()[1].offset, 8);
    }

    #[test]
    fn hostile_numbers_are_refused_or_saturate_never_panic() {
        let head = "# Samples: 40 of event 'mem-loads'\n# Overhead  Samples  Data Type  Data Type Offset\n";
        let report = |pct: &str, n: &str, off: &str| {
            format!("{head}    {pct}%  {n}  struct s  struct s +{off} (a)\n")
        };
        // Offsets past 32 bits, overflowing, negative or malformed hex: no offset, no row.
        for off in [
            "0x100000000",
            "0xffffffffffffffffffff",
            "99999999999999999999999",
            "-8",
            "0x",
            "0xg",
            "1e3",
        ] {
            let e = parse(Path::new("t"), &report("10.00", "4", off));
            assert!(e.is_err(), "+{off}: {e:?}");
        }
        // Percentages that are not shares; counts that overflow.
        for (pct, n) in [
            ("nan", "4"),
            ("inf", "4"),
            ("-5.00", "4"),
            ("150.00", "4"),
            ("1e308", "4"),
            ("10.00", "99999999999999999999999"),
            ("10.00", "-4"),
        ] {
            let e = parse(Path::new("t"), &report(pct, n, "0x8"));
            assert!(e.is_err(), "{pct}% {n}: {e:?}");
        }
        // The largest count perf can print is kept exactly.
        let max = parse(
            Path::new("t"),
            &report("10.00", &u64::MAX.to_string(), "0x8"),
        )
        .unwrap();
        assert_eq!(max[0].samples, u64::MAX);
        // A `# Samples:` total that overflows is no total.
        let t = "# Samples: 99999999999999999999K of event 'mem-loads'\n    10.00%  struct s  struct s +0x8 (a)\n";
        assert!(parse(Path::new("t"), t).is_err());
        assert_eq!(samples_count("18446744073709552K"), None);
        assert_eq!(samples_count("3G"), Some((3_000_000_000, true)));
        // Annotate: a huge, a negative, a non-numeric or a >100 % value.
        for bad in [
            "1e300",
            "-1.00",
            "nan",
            "inf",
            "180.00",
            "99999999999999999999",
        ] {
            let text = annotate_hex(
                &[&["100.00"], &[bad], &["50.00"], &["25.00"]],
                &[],
                "Percent",
            );
            assert!(
                parse(
                    Path::new("t"),
                    &format!("# Samples: 40 of event 'x'\n{text}")
                )
                .is_err(),
                "{bad}"
            );
        }
    }
}
