//! Box diagrams of single cache lines, in the style of the kernel's mm changelogs:
//!
//! ```text
//! line 25 (1600-1663)
//! +------------+-----------------+-----------+-------------+
//! | refaulted  | enabled,gen,seg | pad       | list        |
//! | <1600-1639 | 1640-1642       | 1643-1647 | 1648-1663   |
//! | lockless   | read-mostly     |           | read-mostly |
//! +------------+-----------------+-----------+-------------+
//! ```
//!
//! followed by the CPUs that touch the line: who writes without a lock, who
//! holds which lock, who reads, and what that costs. Byte ranges are container
//! offsets; `<` and `>` mark a field that continues on the previous or next
//! line. Adjacent fields of the same class share a cell. Every output line
//! stays within [`WIDTH`] columns unless one name alone is wider; a line with
//! many cells is drawn as several boxes one under the other.

use super::{join, LayoutView};
use crate::class::{Role, Style};
use crate::model::{Access, Struct};

/// Output width in columns.
pub const WIDTH: usize = 100;
/// The names of merged fields wrap within their cell at this width.
const CELL_NAME_WIDTH: usize = 24;
/// Widest column of the CPU table under a box.
const MAX_CPU_COLUMN: usize = 46;

pub(super) fn render(v: &LayoutView, lines: &[u64]) -> String {
    render_within(v, lines, WIDTH)
}

/// [`render`] with every output line within `width` columns (unless one
/// name alone is wider).
pub(super) fn render_within(v: &LayoutView, lines: &[u64], width: usize) -> String {
    let mut out = String::new();
    for (i, &line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&render_line(v, line, width));
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CellKind {
    Fields,
    Pad,
    Outside,
}

struct Cell {
    kind: CellKind,
    fields: Vec<usize>,
    /// Container offsets, `end` exclusive.
    start: u64,
    end: u64,
    /// The first field began on an earlier line / the last one goes on.
    from_before: bool,
    goes_on: bool,
}

impl Cell {
    /// The cell's name lines: field names joined by commas, wrapped after
    /// a comma at [`CELL_NAME_WIDTH`].
    fn name_lines(&self, s: &Struct) -> Vec<String> {
        match self.kind {
            CellKind::Fields => {
                let mut lines = vec![String::new()];
                for (k, &i) in self.fields.iter().enumerate() {
                    let name = &s.fields[i].name;
                    let sep = if k + 1 < self.fields.len() { "," } else { "" };
                    let cur = lines.last_mut().expect("one line");
                    if !cur.is_empty() && cur.len() + name.len() + sep.len() > CELL_NAME_WIDTH {
                        lines.push(String::new());
                    }
                    let cur = lines.last_mut().expect("one line");
                    cur.push_str(name);
                    cur.push_str(sep);
                }
                lines
            }
            CellKind::Pad => vec!["pad".into()],
            CellKind::Outside => vec!["outside".into()],
        }
    }

    fn range(&self) -> String {
        let last = self.end - 1;
        let mut r = if self.start == last {
            self.start.to_string()
        } else {
            format!("{}-{last}", self.start)
        };
        if self.from_before {
            r.insert(0, '<');
        }
        if self.goes_on {
            r.push('>');
        }
        r
    }

    fn class(&self, s: &Struct) -> String {
        match self.kind {
            CellKind::Fields => class_label(&s.fields[self.fields[0]].access),
            CellKind::Pad | CellKind::Outside => String::new(),
        }
    }
}

fn class_label(a: &Access) -> String {
    a.label(Style::Diagram)
}

fn render_line(v: &LayoutView, line: u64, width: usize) -> String {
    let (s, l) = (v.strukt, v.layout);
    let lsize = l.line.max(1);
    let base = l.base_offset();
    let (Some(cs), Some(struct_end)) = (line.checked_mul(lsize), base.checked_add(l.size)) else {
        return format!("line {line}: out of range\n");
    };
    let ce = cs + lsize;
    let mut out = format!("line {line} ({cs}-{})\n", ce - 1);
    if ce <= base || cs >= struct_end {
        let first = base / lsize;
        let last = struct_end.saturating_sub(1).max(base) / lsize;
        out.push_str(&format!(
            "  holds no byte of struct {} (lines {first}-{last})\n",
            s.name
        ));
        return out;
    }
    let cells = cells_of_line(v, cs, ce);
    let widths: Vec<usize> = cells
        .iter()
        .map(|c| {
            let name = c.name_lines(s).iter().map(String::len).max().unwrap_or(0);
            name.max(c.range().len()).max(c.class(s).len())
        })
        .collect();
    for chunk in chunk_to_width(&widths, width) {
        draw_box(&mut out, s, &cells[chunk.clone()], &widths[chunk]);
    }
    if cells.iter().any(|c| c.from_before || c.goes_on) {
        out.push_str("(< and > mark a field that continues on the previous or next line)\n");
    }
    out.push_str(&cpus(s, &cells, line, width));
    out
}

/// The cells of one line: fields (adjacent ones of the same class merged),
/// padding, and bytes of the container outside the struct. A trailing
/// flexible array's elements fill its line from its offset on (they go on
/// past the struct's end).
fn cells_of_line(v: &LayoutView, cs: u64, ce: u64) -> Vec<Cell> {
    let (s, l) = (v.strukt, v.layout);
    let base = l.base_offset();
    let struct_end = base + l.size;
    let tail = s.flexible_tail();
    let mut cells: Vec<Cell> = Vec::new();
    let gap = |kind, start, end| Cell {
        kind,
        fields: Vec::new(),
        start,
        end,
        from_before: false,
        goes_on: false,
    };
    if base > cs {
        cells.push(gap(CellKind::Outside, cs, base));
    }
    let mut cursor = cs.max(base);
    for sl in &v.rows {
        let f = &s.fields[sl.field];
        let fs = base + sl.offset;
        let elements = Some(sl.field) == tail && (cs..ce).contains(&fs);
        let fe = if elements { ce } else { fs + f.size };
        if fe <= cs || fs >= ce || (f.size == 0 && !elements) {
            continue;
        }
        let (a, b) = (fs.max(cs), fe.min(ce));
        if a > cursor {
            cells.push(gap(CellKind::Pad, cursor, a));
        }
        let from_before = fs < cs;
        let goes_on = fe > ce || elements;
        let merged = cells.last_mut().is_some_and(|prev| {
            let fits = prev.kind == CellKind::Fields
                && prev.end == a
                && !prev.goes_on
                && !from_before
                && s.fields[prev.fields[0]].access == f.access;
            if fits {
                prev.fields.push(sl.field);
                prev.end = b;
                prev.goes_on = goes_on;
            }
            fits
        });
        if !merged {
            cells.push(Cell {
                kind: CellKind::Fields,
                fields: vec![sl.field],
                start: a,
                end: b,
                from_before,
                goes_on,
            });
        }
        cursor = cursor.max(b);
    }
    let struct_part_end = struct_end.min(ce);
    if cursor < struct_part_end {
        cells.push(gap(CellKind::Pad, cursor, struct_part_end));
    }
    if struct_end.max(cursor) < ce {
        cells.push(gap(CellKind::Outside, struct_end.max(cursor), ce));
    }
    cells
}

/// Consecutive runs of cells whose box fits in `limit` columns (a single
/// cell wider than that gets a run of its own).
fn chunk_to_width(widths: &[usize], limit: usize) -> Vec<std::ops::Range<usize>> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut width = 1;
    for (i, w) in widths.iter().enumerate() {
        if i > start && width + w + 3 > limit {
            chunks.push(start..i);
            start = i;
            width = 1;
        }
        width += w + 3;
    }
    if start < widths.len() {
        chunks.push(start..widths.len());
    }
    chunks
}

fn draw_box(out: &mut String, s: &Struct, cells: &[Cell], widths: &[usize]) {
    let border: String = widths
        .iter()
        .map(|w| format!("+{}", "-".repeat(w + 2)))
        .collect::<String>()
        + "+\n";
    let names: Vec<Vec<String>> = cells.iter().map(|c| c.name_lines(s)).collect();
    let name_rows = names.iter().map(Vec::len).max().unwrap_or(1);
    let mut rows: Vec<Vec<String>> = (0..name_rows)
        .map(|r| {
            names
                .iter()
                .map(|n| n.get(r).cloned().unwrap_or_default())
                .collect()
        })
        .collect();
    rows.push(cells.iter().map(Cell::range).collect());
    rows.push(cells.iter().map(|c| c.class(s)).collect());
    out.push_str(&border);
    for row in rows {
        for (text, w) in row.iter().zip(widths) {
            out.push_str(&format!("| {text:<w$} "));
        }
        out.push_str("|\n");
    }
    out.push_str(&border);
}

/// One CPU in the table under a box: a title and what it does on the line.
struct Cpu {
    title: String,
    action: String,
    /// Misses the line after another CPU's lockless write (hard conflict).
    misses: bool,
}

/// Who touches the line and what it costs: a column per CPU, then a verdict.
fn cpus(s: &Struct, cells: &[Cell], line: u64, width: usize) -> String {
    let mut writers: Vec<(Option<&str>, Vec<String>)> = Vec::new();
    let mut lockers: Vec<(&str, Vec<String>)> = Vec::new();
    let mut readers: Vec<String> = Vec::new();
    for &i in cells.iter().flat_map(|c| &c.fields) {
        let f = &s.fields[i];
        match f.access.role() {
            Role::LocklessWriter => {
                let g = f.access.param();
                match writers.iter_mut().find(|(wg, _)| *wg == g) {
                    Some((_, names)) => names.push(f.name.clone()),
                    None => writers.push((g, vec![f.name.clone()])),
                }
            }
            Role::LockedWriter => {
                let lock = f.access.param().unwrap_or_default();
                match lockers.iter_mut().find(|(k, _)| *k == lock) {
                    Some((_, names)) => names.push(f.name.clone()),
                    None => lockers.push((lock, vec![f.name.clone()])),
                }
            }
            Role::Reader => readers.push(f.name.clone()),
            Role::Idle => {}
        }
    }
    // A lock word (every locker writes it) next to read-mostly fields.
    let lock_words: Vec<String> = cells
        .iter()
        .flat_map(|c| &c.fields)
        .filter(|&&i| s.fields[i].lock_word)
        .map(|&i| s.fields[i].name.clone())
        .collect();
    let lock_hard = !lock_words.is_empty() && !readers.is_empty();
    // The hard rule, judged on what this drawing shows.
    let hard = !writers.is_empty() && (!readers.is_empty() || writers.len() > 1);
    let mut list: Vec<Cpu> = Vec::new();
    let letter = |n: usize| char::from(b'A' + (n % 26) as u8);
    for (g, names) in &writers {
        list.push(Cpu {
            title: match g {
                None => format!("CPU {} (atomic, no lock)", letter(list.len())),
                Some(g) => format!("CPU {} (atomic, writer group {g})", letter(list.len())),
            },
            action: format!("writes {}", join(names)),
            misses: writers.len() > 1,
        });
    }
    for (lock, names) in &lockers {
        list.push(Cpu {
            title: format!("CPU {} (holds {lock})", letter(list.len())),
            action: format!("reads, writes {}", join(names)),
            misses: false,
        });
    }
    if !readers.is_empty() {
        list.push(Cpu {
            title: format!("CPU {} (reader)", letter(list.len())),
            action: format!("reads {}", join(&readers)),
            misses: !writers.is_empty() || lock_hard,
        });
    }
    let mut out = String::new();
    if !list.is_empty() {
        out.push('\n');
        out.push_str(&cpu_columns(&list, if hard { 2 } else { 1 }, width));
        out.push('\n');
    }
    let text = if lock_hard && !hard {
        format!(
            "Every CPU that takes the lock writes its lock word {} on line {line}, which readers \
             of {} keep missing on. False sharing.",
            join(&lock_words),
            join(&readers)
        )
    } else {
        verdict(&list, &writers, &lockers, line, hard)
    };
    out.push_str(&wrap(&text, width).join("\n"));
    out.push('\n');
    out
}

fn verdict(
    list: &[Cpu],
    writers: &[(Option<&str>, Vec<String>)],
    lockers: &[(&str, Vec<String>)],
    line: u64,
    hard: bool,
) -> String {
    let cpu = |i: usize| {
        list[i]
            .title
            .split(" (")
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let written: Vec<String> = writers
        .iter()
        .flat_map(|(_, n)| n.iter().cloned())
        .collect();
    if hard && writers.len() > 1 {
        let names: Vec<String> = (0..writers.len()).map(cpu).collect();
        return format!(
            "{} write different fields of line {line} without a lock: the line bounces \
             between them. False sharing.",
            names.join(" and ")
        );
    }
    if hard {
        let reader = cpu(list.len() - 1);
        return format!(
            "{reader} doesn't need {}, but it keeps missing on line {line}. False sharing.",
            join(&written)
        );
    }
    let readers = list.iter().any(|c| c.title.ends_with("(reader)"));
    match (writers.is_empty(), lockers.is_empty()) {
        (true, true) if readers => format!("Line {line} is only read: no false sharing."),
        (true, true) => format!("Line {line} holds only cold fields and padding."),
        (true, false) if readers => format!(
            "Line {line} is written only under a lock: no false sharing. Its readers miss \
             after locked writes (allowed, a soft cost)."
        ),
        (true, false) => {
            format!("Line {line} is written only under a lock: true sharing, no false sharing.")
        }
        (false, true) => format!(
            "Only {} writes line {line}, and no read-mostly field shares it: no false sharing.",
            cpu(0)
        ),
        (false, false) => format!(
            "Lock holders miss on line {line} after {}'s lockless writes (allowed, a soft \
             cost); no read-mostly field shares it: no false sharing.",
            cpu(0)
        ),
    }
}

/// CPUs side by side: a row of titles, then `repeat` rows of actions (two
/// show the ping-pong), each row as tall as its tallest entry.
fn cpu_columns(list: &[Cpu], repeat: usize, limit: usize) -> String {
    let n = list.len();
    let width = (limit.saturating_sub(2 * (n - 1)) / n).clamp(8, MAX_CPU_COLUMN);
    let mut rows: Vec<Vec<Vec<String>>> =
        vec![list.iter().map(|c| wrap(&c.title, width)).collect()];
    for _ in 0..repeat {
        rows.push(
            list.iter()
                .map(|c| {
                    let action = if c.misses {
                        format!("{} -> miss", c.action)
                    } else {
                        c.action.clone()
                    };
                    wrap(&action, width)
                })
                .collect(),
        );
    }
    let mut out = String::new();
    for row in rows {
        let height = row.iter().map(Vec::len).max().unwrap_or(0);
        for k in 0..height {
            let mut text = String::new();
            for (i, entry) in row.iter().enumerate() {
                let cell = entry.get(k).map(String::as_str).unwrap_or("");
                if i + 1 < n {
                    text.push_str(&format!("{cell:<width$}  "));
                } else {
                    text.push_str(cell);
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        }
    }
    out
}

/// Greedy word wrap at `width` columns; a word longer than that gets its own
/// line, and `-> x` stays together.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        match words.last_mut() {
            Some(prev) if prev == "->" => {
                prev.push(' ');
                prev.push_str(word);
            }
            _ => words.push(word.to_string()),
        }
    }
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in words {
        if !cur.is_empty() && cur.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(&word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}
