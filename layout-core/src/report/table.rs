//! The pahole-style table.
//!
//! ```text
//! struct lru_gen_folio {
//!         unsigned long  refaulted[1][2][4];  /*  1272    64 */  A
//!         /* --- cacheline 25 boundary (1600 bytes) was 40 bytes ago --- */
//!         /* !!! line 25: lockless refaulted shares with read-mostly enabled, gen, seg, list */
//!         bool           enabled;             /*  1336     1 */  R
//! ```
//!
//! Member offsets and sizes are the struct's own, as pahole prints them.
//! Cacheline numbers and boundary byte counts are counted from the container
//! start ([`Layout::line_of`]); in `Offset` mode a comment at the top says so.
//! The last column is the access class (`-` for a zero-size marker). The
//! author's cache-line groups are framed by `=== cache-line group NAME ===`
//! before the begin marker and `=== end of cache-line group NAME ===` after
//! the end marker. Holes, tail padding and lines that
//! break the hard rule get comments where they fall, and the summary at the
//! end counts them; its `cachelines` are the lines the struct touches at
//! its placement.

use super::{conflict_sentence, LayoutView, Syntax};
use crate::layout::LineConflict;
use std::collections::BTreeMap;

/// Widest type and name columns before a long entry is let run over.
const MAX_TYPE_COLUMN: usize = 30;
const MAX_NAME_COLUMN: usize = 32;

enum Row {
    Member {
        left: String,
        right: String,
        offset: u64,
        size: u64,
        class: String,
    },
    Comment(String),
    Blank,
}

/// Renders the table; see the module documentation.
pub(super) fn render(v: &LayoutView) -> String {
    let (s, l) = (v.strukt, v.layout);
    let syntax = Syntax::detect(s);
    let lsize = l.line.max(1);
    let base = l.base_offset();
    let placement_phase = base % lsize;
    let line_of = |byte: u64| (base + byte) / lsize;

    // Conflicts at the placement the table draws go on their line; those at
    // another phase (aligned mode) are listed at the top.
    let mut on_line: BTreeMap<u64, Vec<&LineConflict>> = BTreeMap::new();
    let mut elsewhere = Vec::new();
    let conflict_count = v.conflicts.len();
    for c in &v.conflicts {
        if c.phase == placement_phase {
            on_line.entry(c.line).or_default().push(c);
        } else {
            elsewhere.push(c);
        }
    }

    let mut rows = Vec::new();
    if let Some(o) = l.placement.first_offset() {
        rows.push(Row::Comment(format!(
            "placed at offset {o} of a cacheline-aligned container (phase {placement_phase}):"
        )));
        for &other in &l.placement.offsets()[1..] {
            rows.push(Row::Comment(format!(
                "also at offset {other} of another (phase {}), where the rule is checked too",
                other % l.line.max(1)
            )));
        }
        rows.push(Row::Comment(
            "offsets are the struct's, cachelines are counted from the container".into(),
        ));
    }
    for c in &elsewhere {
        rows.push(Row::Comment(format!(
            "!!! when the struct starts {} bytes into a line, {}",
            c.phase,
            conflict_sentence(c)
        )));
    }

    let mut cur_line = line_of(0);
    let mut marked = None;
    mark_lines(&mut rows, &on_line, cur_line, &mut marked);

    let mut pos = 0u64;
    let (mut holes, mut sum_holes, mut sum_members) = (0u64, 0u64, 0u64);
    let slots = &v.rows;
    for sl in slots {
        let f = &s.fields[sl.field];
        if sl.offset > pos {
            let hole = sl.offset - pos;
            holes += 1;
            sum_holes += hole;
            rows.push(Row::Blank);
            rows.push(Row::Comment(format!("XXX {hole} bytes hole, try to pack")));
            rows.push(Row::Blank);
        }
        let line = line_of(sl.offset);
        if line > cur_line {
            let boundary = line * lsize;
            let ago = base + sl.offset - boundary;
            rows.push(Row::Comment(if ago == 0 {
                format!("--- cacheline {line} boundary ({boundary} bytes) ---")
            } else {
                format!("--- cacheline {line} boundary ({boundary} bytes) was {ago} bytes ago ---")
            }));
            cur_line = line;
            mark_lines(&mut rows, &on_line, line, &mut marked);
        }
        let marker = crate::segments::Marker::of(f);
        if let Some(crate::segments::Marker::GroupBegin(g)) = &marker {
            rows.push(Row::Comment(format!("=== cache-line group {g} ===")));
        }
        let (left, right) = syntax.member_columns(&f.ty, &f.name);
        rows.push(Row::Member {
            left,
            right,
            offset: sl.offset,
            size: f.size,
            class: if crate::segments::is_marker(f) {
                "-".into()
            } else {
                f.access.tag()
            },
        });
        if let Some(crate::segments::Marker::GroupEnd(g)) = &marker {
            rows.push(Row::Comment(format!("=== end of cache-line group {g} ===")));
        }
        sum_members += f.size;
        pos = pos.max(sl.offset + f.size);
    }
    // Conflicts on lines no member starts on (cannot happen for a
    // well-formed layout, but a report never drops one).
    mark_lines(&mut rows, &on_line, u64::MAX, &mut marked);

    let padding = l.size.saturating_sub(pos);
    if padding > 0 {
        rows.push(Row::Blank);
        rows.push(Row::Comment(format!("XXX {padding} bytes tail padding")));
    }
    let cachelines = if l.size == 0 {
        0
    } else {
        line_of(l.size - 1) - line_of(0) + 1
    };
    rows.push(Row::Blank);
    rows.push(Row::Comment(format!(
        "size: {}, cachelines: {cachelines}, members: {}, sum members: {sum_members}, \
         holes: {holes}, sum holes: {sum_holes}, padding: {padding}",
        l.size,
        slots.len()
    )));
    let natural = s.natural_align();
    if l.align > natural {
        rows.push(Row::Comment(format!(
            "align: {} (natural alignment {natural})",
            l.align
        )));
    }
    rows.push(Row::Comment(format!("hard conflicts: {conflict_count}")));

    let mut out = format!("struct {} {{\n", s.name);
    out.push_str(&format_rows(&rows));
    out.push_str(syntax.closing());
    out.push('\n');
    out
}

/// Adds the conflict marks of every line after `*marked` up to `upto`.
fn mark_lines(
    rows: &mut Vec<Row>,
    on_line: &BTreeMap<u64, Vec<&LineConflict>>,
    upto: u64,
    marked: &mut Option<u64>,
) {
    let from = match *marked {
        Some(m) if m >= upto => return,
        Some(m) => m + 1,
        None => 0,
    };
    for cs in on_line.range(from..=upto).map(|(_, cs)| cs) {
        for c in cs {
            rows.push(Row::Comment(format!("!!! {}", conflict_sentence(c))));
        }
    }
    *marked = Some(upto);
}

fn format_rows(rows: &[Row]) -> String {
    let mut wl = 0;
    let mut wr = 0;
    let mut wo = 5;
    let mut ws = 5;
    for r in rows {
        if let Row::Member {
            left,
            right,
            offset,
            size,
            ..
        } = r
        {
            wl = wl.max(left.len().min(MAX_TYPE_COLUMN));
            wr = wr.max(right.len().min(MAX_NAME_COLUMN));
            wo = wo.max(offset.to_string().len());
            ws = ws.max(size.to_string().len());
        }
    }
    let mut out = String::new();
    for r in rows {
        let line = match r {
            Row::Member {
                left,
                right,
                offset,
                size,
                class,
            } => format!("\t{left:<wl$} {right:<wr$}  /* {offset:>wo$} {size:>ws$} */  {class}"),
            Row::Comment(text) => format!("\t/* {text} */"),
            Row::Blank => String::new(),
        };
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
