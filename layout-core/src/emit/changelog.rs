//! A commit-message paragraph for the change, in the style of the kernel's mm changelogs: which
//! lockless fields shared which cacheline with which read-mostly fields, the
//! line table before and after, what moved, the size change, the proof and
//! the phase assertion. Plain text wrapped at 72 columns.

use crate::class::Style;
use crate::layout::{Layout, LineConflict};
use crate::model::{Access, Placement, Struct};
use crate::place::align_up;
use crate::report::{LayoutView, MovedRun, ProposalView};
use crate::verify::VerifiedLayout;
use std::collections::BTreeSet;

/// Text width of the paragraph.
const WIDTH: usize = 72;
/// Adjacent fields of one class share a table row up to this many characters
/// of names (`max_seq/min_seq/timestamps[]`).
const MERGED_NAME_WIDTH: usize = 30;
/// At most this many moved runs are named one by one.
const MAX_MOVES: usize = 4;

/// What the solver knows beyond the layouts, for the changelog.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChangelogNotes {
    /// A proven lower bound on the size of any layout that obeys the rule.
    pub lower_bound: u64,
    /// The solver proved the layout optimal.
    pub optimal: bool,
    /// The size of the smallest layout that also keeps lockless fields off
    /// the lines of locked fields, when that costs more (the price of
    /// separating them).
    pub separated_size: Option<u64>,
    /// The build-time assertion that pins the phase (`phase_assertion`).
    pub phase_assertion: Option<String>,
    /// The constraints the layout is proven under, as the summary names
    /// them (`first member (sk)`, `#if blocks (...)`).
    pub kept: Vec<String>,
    /// What keeping each costs, where that is proven (one sentence each).
    pub prices: Vec<String>,
    /// The attributes, paddings and markers the diff adds or removes.
    pub markup: Vec<super::MarkupChange>,
    /// What the reader must know beyond the constraints (a
    /// `__randomize_layout` struct's note), one sentence each.
    pub notes: Vec<String>,
}

/// The changelog paragraph for moving `before_s` from `before` to `after`.
///
/// `before_s` and `after.strukt()` are the same struct (fields are matched
/// by name). Offsets in the tables are counted from the start of the
/// cacheline-aligned container in phase mode (the convention of kernel changelogs), else
/// from the start of the line the struct starts in; the text says which.
pub fn changelog(
    before_s: &Struct,
    before: &Layout,
    after: &VerifiedLayout,
    notes: &ChangelogNotes,
) -> String {
    changelog_of(&ProposalView::new(before_s, before, after), notes)
}

/// The changelog paragraph ([`changelog`]) of a proposal read once.
pub fn changelog_of(p: &ProposalView, notes: &ChangelogNotes) -> String {
    let (bv, av) = (&p.before, &p.after);
    let (before_s, before) = (bv.strukt, bv.layout);
    let (after_s, after) = (av.strukt, p.verified);
    let conflicts = &bv.conflicts;
    let before_frame = Frame::before(before, conflicts);
    let after_frame = Frame::after(after, before_frame.start);
    let mut paragraphs: Vec<String> = Vec::new();

    paragraphs.push(wrap(&problem(before_s, conflicts, before)));
    paragraphs.push(wrap(&frame_sentence(
        before_s,
        before,
        &before_frame,
        &after_frame,
    )));
    let before_names = names_on_lines(bv, &before_frame, &conflict_lines(conflicts));
    if !conflicts.is_empty() {
        paragraphs.push("Before:".into());
        paragraphs.push(table(bv, &before_frame, &before_names));
    }
    paragraphs.push(wrap(&moves(bv, &before_frame, av, &after_frame, &p.moves)));
    let mut shown_after = before_names.clone();
    for run in &p.moves {
        shown_after.extend(
            run.after
                .iter()
                .chain(&run.fields)
                .map(|&f| after_s.fields[f].name.clone()),
        );
    }
    let after_names = after_rows(av, &after_frame, &shown_after);
    paragraphs.push("After:".into());
    paragraphs.push(table(av, &after_frame, &after_names));
    if let Some(markup) = markup_paragraph(&notes.markup) {
        paragraphs.push(wrap(&markup));
    }
    if let Some((lines, before_d, after_d)) =
        changed_line_diagrams(bv, &before_frame, av, &after_frame, &p.moves)
    {
        paragraphs.push(format!(
            "The {} that change{}, before and after:",
            if lines.len() == 1 {
                "cacheline"
            } else {
                "cachelines"
            },
            if lines.len() == 1 { "s" } else { "" },
        ));
        paragraphs.push(indent(&before_d));
        paragraphs.push(indent(&after_d));
    }
    if let Some(paths) = hot_paths(bv, av) {
        paragraphs.push(wrap(&paths));
    }
    paragraphs.push(wrap(&cost(before_s, before, after, notes)));
    if let Some(a) = &notes.phase_assertion {
        let at = after.offsets_with_phases();
        paragraphs.push(wrap(&format!(
            "The layout relies on struct {} starting at {} of its cacheline-aligned \
             container{}; {} the build if that changes:",
            after_s.name,
            at.join(" and "),
            if at.len() > 1 { "s" } else { "" },
            if a.lines().count() > 1 {
                "these assertions fail"
            } else {
                "this assertion fails"
            },
        )));
        paragraphs.push(code_block(a));
    }
    for n in &notes.notes {
        paragraphs.push(wrap(&capitalize(&format!("{n}."))));
    }
    paragraphs.extend(measure(bv, av).iter().map(|m| wrap(m)));
    let mut out = paragraphs.join("\n\n");
    out.push('\n');
    out
}

/// What each hot path of the access file touches before and after, with
/// the fewest lines its bytes can fit in (`ceil(bytes / line)`, no layout
/// does better).
fn hot_paths(bv: &LayoutView, av: &LayoutView) -> Option<String> {
    if bv.paths.is_empty() {
        return None;
    }
    let each: Vec<String> = bv
        .paths
        .iter()
        .zip(&av.paths)
        .map(|(o, n)| {
            format!(
                "{} touches {} -> {} cachelines (its {} bytes need at least {})",
                o.name, o.lines, n.lines, o.bytes, o.bound
            )
        })
        .collect();
    Some(format!(
        "Hot paths, as the access file lists their fields: {}.",
        each.join("; ")
    ))
}

/// Most hot paths named one by one in the measuring paragraph.
const MAX_NAMED_PATHS: usize = 4;

/// How a reviewer can see the effect, with the tool that fits the change:
/// `perf c2c` where writes shared lines with other data (the hard rule, or
/// the soft costs of locked lines); for hot paths now on fewer lines, the
/// cache misses of those paths (`perf stat`) and a data-type profile of
/// their loads; for a change of size alone, pahole and the slab counts.
/// One paragraph per kind of effect.
fn measure(bv: &LayoutView, av: &LayoutView) -> Vec<String> {
    let name = &av.strukt.name;
    let soft = |v: &LayoutView| v.soft_lines.iter().map(|l| l.weight).sum::<u64>();
    let shared = !bv.conflicts.is_empty() || soft(av) < soft(bv);
    let packed: Vec<String> = bv
        .paths
        .iter()
        .zip(&av.paths)
        .filter(|(o, n)| n.lines < o.lines)
        .map(|(o, _)| o.name.clone())
        .collect();
    let smaller = av.layout.size < bv.layout.size;
    let mut out = Vec::new();
    if shared || (packed.is_empty() && !smaller) {
        out.push(format!(
            "To measure: run a workload that exercises struct {name} under `perf c2c record -a` \
             before and after the change; `perf c2c report --stdio` lists the cachelines with \
             HITM loads and the fields behind them."
        ));
    }
    if !packed.is_empty() {
        let mut named: Vec<String> = packed.iter().take(MAX_NAMED_PATHS).cloned().collect();
        if packed.len() > MAX_NAMED_PATHS {
            named.push(format!("{} more", packed.len() - MAX_NAMED_PATHS));
        }
        let (paths, them) = if packed.len() == 1 {
            ("hot path", "it")
        } else {
            ("hot paths", "them")
        };
        out.push(format!(
            "To measure the {paths} {}, which now touch{} fewer cachelines of struct {name}: \
             count the cache misses of a workload that runs {them}, before and after the \
             change, with `perf stat -e cache-misses,L1-dcache-load-misses`; and take a \
             data-type profile of it (`perf mem record -a`, then `perf report -s \
             type,typeoff --stdio`, Linux 6.8+), which gives the loads of struct {name} by \
             member offset: after the change they fall on fewer cachelines.",
            and_list(&named),
            if packed.len() == 1 { "es" } else { "" },
        ));
    }
    if out.is_empty() {
        out.push(format!(
            "To measure: `pahole -C {name}` on an object built with `-g` shows the new \
             size and its holes; where struct {name} comes from a slab cache, \
             /proc/slabinfo shows the objects per slab before and after the change."
        ));
    }
    out
}

/// Where struct byte 0 sits for the tables: `start` bytes into a
/// line-aligned frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Frame {
    start: u64,
    line: u64,
}

impl Frame {
    /// The container offset in phase mode; in aligned mode the phase of the
    /// first conflict (or 0).
    fn before(l: &Layout, conflicts: &[LineConflict]) -> Frame {
        let start = match l.placement.first_offset() {
            Some(o) => o,
            None => conflicts.first().map_or(0, |c| c.phase),
        };
        Frame {
            start,
            line: l.line,
        }
    }

    /// The container offset in phase mode; in aligned mode where the struct
    /// lands in the before table's frame: the same offset, rounded up to the
    /// new alignment (as an embedding struct would place it).
    fn after(l: &Layout, before_start: u64) -> Frame {
        let start = match l.placement.first_offset() {
            Some(o) => o,
            None => align_up(before_start, l.align),
        };
        Frame {
            start,
            line: l.line,
        }
    }

    fn lines(&self, offset: u64, size: u64) -> (u64, u64) {
        let first = (self.start + offset) / self.line;
        (first, (self.start + offset + size.max(1) - 1) / self.line)
    }
}

/// `evicted[]` for arrays, the name otherwise.
fn shown(s: &Struct, i: usize) -> String {
    let f = &s.fields[i];
    if f.ty.contains('[') {
        format!("{}[]", f.name)
    } else {
        f.name.clone()
    }
}

fn shown_by_name(s: &Struct, name: &str) -> String {
    match s.field_index(name) {
        Some(i) => shown(s, i),
        None => name.to_string(),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn role(a: &Access) -> String {
    a.label(Style::Prose)
}

/// `a, b and c`.
fn list(offsets: &[u64]) -> String {
    let words: Vec<String> = offsets.iter().map(u64::to_string).collect();
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => words.join(""),
    }
}

/// The first paragraph: which lockless fields share which lines with what.
fn problem(s: &Struct, conflicts: &[LineConflict], l: &Layout) -> String {
    if conflicts.is_empty() {
        let at = match l.placement {
            Placement::Offset(o) => format!("at offset {o} of its container"),
            Placement::Offsets(o) => format!("at offsets {} of its containers", list(o.as_slice())),
            Placement::Aligned => "at any placement".into(),
        };
        return format!(
            "No cacheline of struct {} holds both a field written without a lock and a \
             field read on hot paths {at}; this change only reorders it.",
            s.name
        );
    }
    let names = |v: &[String]| and_list(&v.iter().map(|n| shown_by_name(s, n)).collect::<Vec<_>>());
    let mut clauses = Vec::new();
    let mut writers: Vec<String> = Vec::new();
    let mut readers: Vec<String> = Vec::new();
    for c in conflicts {
        let verb = if c.lockless.len() == 1 { "sits" } else { "sit" };
        let mut with = Vec::new();
        if !c.read_mostly.is_empty() {
            with.push(names(&c.read_mostly));
        }
        if !c.other_group.is_empty() {
            with.push(format!(
                "{}, written by other CPUs without a lock",
                names(&c.other_group)
            ));
        }
        clauses.push(format!(
            "on cacheline {}, {} {verb} with {}",
            c.line,
            names(&c.lockless),
            with.join(" and with ")
        ));
        for n in c.lockless.iter().chain(&c.other_group) {
            if !writers.contains(n) {
                writers.push(n.clone());
            }
        }
        for n in &c.read_mostly {
            if !readers.contains(n) {
                readers.push(n.clone());
            }
        }
    }
    if clauses.len() > 3 {
        let more = clauses.len() - 3;
        clauses.truncate(3);
        clauses.push(format!("{more} more cachelines are shared the same way"));
    }
    let verb = if writers.len() == 1 { "is" } else { "are" };
    let mut text = format!(
        "In struct {}, {} {verb} written without a lock by many CPUs. {}.",
        s.name,
        names(&writers),
        capitalize(&clauses.join("; "))
    );
    if !readers.is_empty() {
        let (those, are) = if readers.len() == 1 {
            ("That field is", "it")
        } else {
            ("Those fields are", "them")
        };
        text.push_str(&format!(
            " {those} read on hot paths: every lockless write takes the line away \
             from the CPUs that read {are}, although they never read {}.",
            names(&writers)
        ));
    } else {
        text.push_str(
            " Lockless writers of different groups take the line away from each other \
             on every write.",
        );
    }
    text
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// How offsets and lines in the tables are counted.
fn frame_sentence(s: &Struct, before: &Layout, bf: &Frame, af: &Frame) -> String {
    let line = bf.line;
    let mut text = match before.placement {
        Placement::Offset(_) | Placement::Offsets(_) => format!(
            "Offsets below are counted from the start of the cacheline-aligned \
             container, in which struct {} starts at offset {}, so line N is bytes \
             N*{line} to N*{line}+{}.",
            s.name,
            bf.start,
            line - 1
        ),
        Placement::Aligned if bf.start == 0 => format!(
            "Offsets below are those of the struct, and line N is its bytes N*{line} to \
             N*{line}+{} when it starts a cacheline.",
            line - 1
        ),
        Placement::Aligned => format!(
            "Offsets below are counted from the start of the cacheline an instance \
             starts in, for one that starts {} bytes into it (its alignment allows \
             that), so line N is bytes N*{line} to N*{line}+{}.",
            bf.start,
            line - 1
        ),
    };
    if af.start != bf.start {
        text.push_str(&format!(
            " After the change, the struct starts at offset {} (its alignment \
             rounds it up).",
            af.start
        ));
    }
    text
}

fn conflict_lines(conflicts: &[LineConflict]) -> BTreeSet<u64> {
    conflicts.iter().map(|c| c.line).collect()
}

/// Names of the fields with bytes on `lines`, in layout order.
fn names_on_lines(v: &LayoutView, frame: &Frame, lines: &BTreeSet<u64>) -> Vec<String> {
    let s = v.strukt;
    v.rows
        .iter()
        .filter(|sl| {
            let size = s.fields[sl.field].size;
            let (a, b) = frame.lines(sl.offset, size);
            size > 0 && lines.range(a..=b).next().is_some()
        })
        .map(|sl| s.fields[sl.field].name.clone())
        .collect()
}

/// The fields the after table shows: `shown` (those of the before table,
/// the moved ones and where they went), every lockless field, and every
/// field that shares a line with one.
fn after_rows(v: &LayoutView, frame: &Frame, shown: &[String]) -> Vec<String> {
    let (s, l) = (v.strukt, v.layout);
    let lockless_lines: BTreeSet<u64> = l
        .slots
        .iter()
        .filter(|sl| s.fields[sl.field].access.is_lockless() && s.fields[sl.field].size > 0)
        .flat_map(|sl| {
            let (a, b) = frame.lines(sl.offset, s.fields[sl.field].size);
            a..=b
        })
        .collect();
    let near_lockless = names_on_lines(v, frame, &lockless_lines);
    v.rows
        .iter()
        .map(|sl| &s.fields[sl.field].name)
        .filter(|n| shown.contains(n) || near_lockless.contains(n))
        .cloned()
        .collect()
}

/// One table row: names, byte range, lines, role.
struct Row {
    names: Vec<String>,
    first: u64,
    end: u64,
    lines: (u64, u64),
    role: String,
}

/// The table of `names` (layout order) at `frame`; adjacent fields of one
/// role with no bytes between them share a row.
fn table(v: &LayoutView, frame: &Frame, names: &[String]) -> String {
    let s = v.strukt;
    let mut rows: Vec<Row> = Vec::new();
    let mut prev_field: Option<usize> = None;
    for sl in &v.rows {
        let f = &s.fields[sl.field];
        if !names.contains(&f.name) || f.size == 0 {
            prev_field = None;
            continue;
        }
        let name = shown(s, sl.field);
        let first = frame.start + sl.offset;
        let end = first + f.size;
        let role = role(&f.access);
        let lines = frame.lines(sl.offset, f.size);
        match rows.last_mut() {
            Some(r)
                if prev_field.is_some()
                    && r.role == role
                    && r.end == first
                    && r.names.join("/").len() + 1 + name.len() <= MERGED_NAME_WIDTH =>
            {
                r.names.push(name);
                r.end = end;
                r.lines.1 = lines.1;
            }
            _ => rows.push(Row {
                names: vec![name],
                first,
                end,
                lines,
                role,
            }),
        }
        prev_field = Some(sl.field);
    }
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            let range = if r.end - r.first > 1 {
                format!("{}-{}", r.first, r.end - 1)
            } else {
                r.first.to_string()
            };
            let lines = if r.lines.0 == r.lines.1 {
                r.lines.0.to_string()
            } else {
                format!("{}-{}", r.lines.0, r.lines.1)
            };
            [r.names.join("/"), range, lines, r.role.clone()]
        })
        .collect();
    let header = ["field", "offset", "line", "role"].map(String::from);
    let mut widths = [0usize; 4];
    for row in std::iter::once(&header).chain(&cells) {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    std::iter::once(&header)
        .chain(&cells)
        .map(|row| {
            let line = format!(
                "  {:w0$}  {:w1$}  {:w2$}  {}",
                row[0],
                row[1],
                row[2],
                row[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            );
            line.trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What moved, and where the lockless fields ended up.
fn moves(
    bv: &LayoutView,
    before_frame: &Frame,
    v: &LayoutView,
    frame: &Frame,
    blocks: &[MovedRun],
) -> String {
    let (s, after) = (v.strukt, v.layout);
    let mut text = String::new();
    if blocks.is_empty() {
        text.push_str("The fields keep their order.");
    } else if blocks.len() > MAX_MOVES {
        let moved: usize = blocks.iter().map(|b| b.fields.len()).sum();
        text.push_str(&format!(
            "Move {moved} of the {} fields, as the table below shows.",
            s.fields.len()
        ));
    } else {
        let sentences: Vec<String> = blocks
            .iter()
            .map(
                |MovedRun {
                     after: anchor,
                     fields,
                 }| {
                    let names: Vec<String> = fields.iter().map(|&f| shown(s, f)).collect();
                    let first = after.slot_of(fields[0]).map_or(0, |sl| sl.offset);
                    let last = fields[fields.len() - 1];
                    let end = after.slot_of(last).map_or(0, |sl| sl.offset) + s.fields[last].size;
                    let class = &s.fields[fields[0]].access;
                    let same_class = fields.iter().all(|&f| s.fields[f].access == *class);
                    let place = match anchor {
                        Some(a) if same_class && s.fields[*a].access == *class => {
                            format!("after {}, which is {} as well", shown(s, *a), role(class))
                        }
                        Some(a) => format!("after {}", shown(s, *a)),
                        None => "to the start of the struct".into(),
                    };
                    let lines = line_move(bv, before_frame, v, frame, fields);
                    let why = move_reason(bv, before_frame, v, frame, fields);
                    format!(
                        "Move {}{lines} {place} ({}){why}.",
                        and_list(&names),
                        byte_range(frame.start + first, frame.start + end)
                    )
                },
            )
            .collect();
        text.push_str(&sentences.join(" "));
    }
    for sentence in holes(v, frame) {
        text.push(' ');
        text.push_str(&sentence);
    }
    text.push(' ');
    text.push_str(&lockless_result(v, frame));
    text
}

/// The lines (in each table's frame) a run of fields covers, before and
/// after: ` from cacheline 20 to cacheline 19`, empty when they stay.
fn line_move(bv: &LayoutView, bf: &Frame, av: &LayoutView, af: &Frame, fields: &[usize]) -> String {
    let (Some(before), Some(after)) = (
        run_lines(bv, bf, av.strukt, fields),
        run_lines(av, af, av.strukt, fields),
    ) else {
        return String::new();
    };
    if before == after {
        return format!(" (staying on {})", lines_text(before));
    }
    format!(" from {} to {}", lines_text(before), lines_text(after))
}

/// `cacheline 3`, `cachelines 3-5`.
fn lines_text((a, b): (u64, u64)) -> String {
    if a == b {
        format!("cacheline {a}")
    } else {
        format!("cachelines {a}-{b}")
    }
}

/// The first and last line the fields (of `s`, matched by name in `v`)
/// cover in `v`.
fn run_lines(v: &LayoutView, frame: &Frame, s: &Struct, fields: &[usize]) -> Option<(u64, u64)> {
    let mut span: Option<(u64, u64)> = None;
    for &f in fields {
        let i = v.strukt.field_index(&s.fields[f].name)?;
        let off = v.layout.slot_of(i)?.offset;
        let (a, b) = frame.lines(off, v.strukt.fields[i].size);
        span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
    }
    span
}

/// The names on line `line` of `v` (in its frame), without `except`.
fn names_on(v: &LayoutView, frame: &Frame, line: u64, except: &[String]) -> Vec<String> {
    let s = v.strukt;
    v.rows
        .iter()
        .filter(|sl| s.fields[sl.field].size > 0)
        .filter(|sl| {
            let (a, b) = frame.lines(sl.offset, s.fields[sl.field].size);
            a <= line && line <= b
        })
        .map(|sl| s.fields[sl.field].name.clone())
        .filter(|n| !except.contains(n))
        .collect()
}

/// What the patch adds or removes besides moving members, one sentence
/// each.
fn markup_paragraph(markup: &[super::MarkupChange]) -> Option<String> {
    if markup.is_empty() {
        return None;
    }
    let sentences: Vec<String> = markup
        .iter()
        .map(|c| format!("The patch {}.", c.sentence()))
        .collect();
    Some(sentences.join(" "))
}

/// At most this many cachelines are drawn before and after.
const MAX_DRAWN_LINES: usize = 3;

/// Box diagrams (within the changelog's width) of the cachelines whose
/// fields change, before and after: the lines the moved runs leave and
/// reach and the lines that broke the rule, where the fields on them
/// differ. `None` when no line or too many change, or when the tables
/// number lines from another start than the diagrams.
fn changed_line_diagrams(
    bv: &LayoutView,
    bf: &Frame,
    av: &LayoutView,
    af: &Frame,
    moves: &[MovedRun],
) -> Option<(Vec<u64>, String, String)> {
    if bf.start != bv.layout.base_offset() || af.start != av.layout.base_offset() {
        return None;
    }
    let s = av.strukt;
    let mut lines = BTreeSet::new();
    for run in moves {
        for (v, f) in [(bv, bf), (av, af)] {
            if let Some((a, b)) = run_lines(v, f, s, &run.fields) {
                lines.extend(a..=b);
            }
        }
    }
    lines.extend(
        bv.conflicts
            .iter()
            .filter(|c| c.phase == bf.start % bf.line)
            .map(|c| c.line),
    );
    let changed: Vec<u64> = lines
        .into_iter()
        .filter(|&line| {
            let mut was = names_on(bv, bf, line, &[]);
            let mut now = names_on(av, af, line, &[]);
            was.sort();
            now.sort();
            was != now
        })
        .collect();
    if changed.is_empty() || changed.len() > MAX_DRAWN_LINES {
        return None;
    }
    let width = WIDTH - 2;
    Some((
        changed.clone(),
        format!("Before:\n{}", bv.diagram_within(&changed, width)),
        format!("After:\n{}", av.diagram_within(&changed, width)),
    ))
}

/// Every line indented by two spaces (blank lines stay empty).
fn indent(text: &str) -> String {
    text.trim_end()
        .lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("  {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Why a run moves: the conflict it leaves, or the line it frees for
/// others, or the hole it fills.
fn move_reason(
    bv: &LayoutView,
    bf: &Frame,
    av: &LayoutView,
    af: &Frame,
    fields: &[usize],
) -> String {
    let s = av.strukt;
    let own: Vec<String> = fields.iter().map(|&f| s.fields[f].name.clone()).collect();
    let (they, their, shares, leave, takes) = if own.len() == 1 {
        ("it", "its", "shares", "leave", "takes")
    } else {
        ("they", "their", "share", "leave", "take")
    };
    let shown_all = |names: &[String]| -> String {
        let v: Vec<String> = names.iter().map(|n| shown_by_name(s, n)).collect();
        and_list(&v)
    };
    // A hard conflict of its own, before.
    for c in &bv.conflicts {
        let reader = own.iter().any(|n| c.read_mostly.contains(n));
        let writer = own
            .iter()
            .any(|n| c.lockless.contains(n) || c.other_group.contains(n));
        // As the first paragraph numbers it.
        let line = c.line;
        if reader {
            return format!(
                ": {they} no longer {shares} cacheline {line} with the lockless writes to {}",
                shown_all(&c.lockless)
            );
        }
        if writer {
            return format!(
                ": {their} lockless writes {leave} cacheline {line}, which holds read-mostly {}",
                shown_all(&c.read_mostly)
            );
        }
    }
    let (Some(before), Some(after)) = (run_lines(bv, bf, s, fields), run_lines(av, af, s, fields))
    else {
        return String::new();
    };
    // Room it leaves for members that now sit on its old lines.
    let mut arrived: Vec<String> = Vec::new();
    for line in before.0..=before.1 {
        let was = names_on(bv, bf, line, &own);
        for n in names_on(av, af, line, &own) {
            if !was.contains(&n) && !arrived.contains(&n) {
                arrived.push(n);
            }
        }
    }
    if !arrived.is_empty() {
        arrived.truncate(3);
        return format!(
            ": that makes room on {} for {}",
            lines_text(before),
            shown_all(&arrived)
        );
    }
    // Room others left on its new lines.
    let mut left: Vec<String> = Vec::new();
    for line in after.0..=after.1 {
        let now = names_on(av, af, line, &own);
        for n in names_on(bv, bf, line, &own) {
            if !now.contains(&n) && !left.contains(&n) {
                left.push(n);
            }
        }
    }
    if !left.is_empty() && before != after {
        left.truncate(4);
        return format!(
            ": {they} {takes} the room {} left on {}",
            shown_all(&left),
            lines_text(after)
        );
    }
    String::new()
}

fn byte_range(first: u64, end: u64) -> String {
    if end > first + 1 {
        format!("offsets {first}-{}", end - 1)
    } else {
        format!("offset {first}")
    }
}

/// Sentences for the gaps wider than the next field's own alignment needs:
/// bytes left free so that it starts a new line (in the frame), or so that
/// it never shares a line with the field before it (at any phase the
/// placement allows).
fn holes(v: &LayoutView, frame: &Frame) -> Vec<String> {
    let (s, l) = (v.strukt, v.layout);
    let mut out = Vec::new();
    let mut end = 0u64;
    let mut before: Option<usize> = None;
    for sl in &v.rows {
        let f = &s.fields[sl.field];
        let natural = align_up(end, f.align);
        if sl.offset > natural && f.size > 0 {
            let gap = sl.offset - end;
            let name = shown(s, sl.field);
            let apart = |p: u64| (p + end - 1) / l.line < (p + sl.offset) / l.line;
            let why = if (frame.start + sl.offset).is_multiple_of(frame.line) {
                format!(
                    " so that it starts cacheline {}",
                    (frame.start + sl.offset) / frame.line
                )
            } else {
                match before {
                    Some(b) if end > 0 && l.phases().into_iter().all(apart) => {
                        format!(", so that it never shares a cacheline with {}", shown(s, b))
                    }
                    _ => String::new(),
                }
            };
            out.push(format!("{gap} bytes stay free before {name}{why}."));
        }
        if sl.offset + f.size >= end {
            end = sl.offset + f.size;
            before = Some(sl.field);
        }
    }
    out
}

/// Where the lockless fields are now, and what shares their lines.
fn lockless_result(v: &LayoutView, frame: &Frame) -> String {
    let (s, l) = (v.strukt, v.layout);
    let lockless: Vec<usize> = v
        .order()
        .filter(|&f| s.fields[f].access.is_lockless() && s.fields[f].size > 0)
        .collect();
    let everywhere = match l.placement {
        Placement::Aligned => "at any placement",
        Placement::Offset(_) => "at this placement",
        Placement::Offsets(_) => "at these placements",
    };
    if lockless.is_empty() {
        return format!("No field is written without a lock; nothing conflicts {everywhere}.");
    }
    let mut lines = BTreeSet::new();
    for &f in &lockless {
        let off = l.slot_of(f).map_or(0, |sl| sl.offset);
        let (a, b) = frame.lines(off, s.fields[f].size);
        lines.extend(a..=b);
    }
    let sharing: Vec<usize> = names_on_lines(v, frame, &lines)
        .iter()
        .filter_map(|n| s.field_index(n))
        .filter(|&f| !s.fields[f].access.is_lockless())
        .collect();
    let names: Vec<String> = lockless.iter().map(|&f| shown(s, f)).collect();
    let first = *lines.first().expect("lockless fields have lines");
    let last = *lines.last().expect("lockless fields have lines");
    let on = if first == last {
        format!("cacheline {first}")
    } else {
        format!("cachelines {first}-{last}")
    };
    let with = if sharing.is_empty() {
        "which they have to themselves".to_string()
    } else {
        let mut classes: Vec<String> = Vec::new();
        for &f in &sharing {
            let c = match &s.fields[f].access {
                Access::LockedWrite { lock } => format!("fields under {lock}"),
                other => format!("{} fields", role(other)),
            };
            if !classes.contains(&c) {
                classes.push(c);
            }
        }
        let list: Vec<String> = sharing.iter().map(|&f| shown(s, f)).collect();
        format!(
            "shared only with {} ({})",
            and_list(&classes),
            and_list(&list)
        )
    };
    format!(
        "{} now {} on {on}, {with}: no cacheline holds a lockless field and a \
         read-mostly field {everywhere}.",
        and_list(&names),
        if names.len() == 1 { "sits" } else { "sit" }
    )
}

/// The size change, the proof and the price of separating locked fields.
fn cost(s: &Struct, before: &Layout, after: &VerifiedLayout, notes: &ChangelogNotes) -> String {
    let name = &s.name;
    let mut text = match after.size.cmp(&before.size) {
        std::cmp::Ordering::Equal => format!("This keeps struct {name} at {} bytes", after.size),
        std::cmp::Ordering::Greater => format!(
            "This grows struct {name} from {} to {} bytes (+{})",
            before.size,
            after.size,
            after.size - before.size
        ),
        std::cmp::Ordering::Less => format!(
            "This shrinks struct {name} from {} to {} bytes (-{})",
            before.size,
            after.size,
            before.size - after.size
        ),
    };
    if after.align != before.align {
        let verb = if after.align > before.align {
            "raises"
        } else {
            "lowers"
        };
        text.push_str(&format!(
            " and {verb} its alignment from {} to {} bytes",
            before.align, after.align
        ));
    }
    text.push('.');
    let under = if notes.kept.is_empty() {
        String::new()
    } else {
        format!(" while keeping the {}", and_list(&notes.kept))
    };
    if after.size <= notes.lower_bound {
        text.push_str(&format!(
            " No smaller layout obeys the rule: lower bound {} bytes.",
            notes.lower_bound
        ));
    } else if notes.optimal {
        text.push_str(&format!(
            " No smaller layout obeys the rule{under}; without those constraints the \
             lower bound is {} bytes.",
            notes.lower_bound
        ));
    } else {
        text.push_str(&format!(
            " A smaller layout may exist: the lower bound is {} bytes, {} below this one.",
            notes.lower_bound,
            after.size - notes.lower_bound
        ));
    }
    for price in &notes.prices {
        text.push(' ');
        let mut chars = price.chars();
        if let Some(first) = chars.next() {
            text.extend(first.to_uppercase());
            text.push_str(chars.as_str());
        }
        text.push('.');
    }
    if let Some(sep) = notes.separated_size.filter(|&sep| sep > after.size) {
        text.push_str(&format!(
            " Keeping the lockless fields off the lines of the locked fields as well \
             would cost {} more bytes ({sep} bytes).",
            sep - after.size
        ));
    }
    text
}

/// Words of `text` in lines of at most [`WIDTH`] columns (a longer word
/// gets a line of its own).
fn wrap(text: &str) -> String {
    wrap_with(text, "", "")
}

fn wrap_with(text: &str, first_indent: &str, indent: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut current = first_indent.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && current.len() + 1 + word.len() > WIDTH {
            lines.push(std::mem::replace(&mut current, indent.to_string()));
            empty = true;
        }
        if !empty {
            current.push(' ');
        }
        current.push_str(word);
        empty = false;
    }
    lines.push(current);
    lines.join("\n")
}

/// Lines of C, indented by 2 and wrapped with a hanging indent of 6, after
/// a comma where one fits, else between words.
fn code_block(code: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for line in code.lines() {
        let mut current = "  ".to_string();
        for piece in line.trim().split_inclusive(", ") {
            let fits = current.trim_end().len() + piece.trim_end().len() <= WIDTH;
            if !fits && !current.trim().is_empty() {
                out.push(current.trim_end().to_string());
                current = "      ".to_string();
            }
            current.push_str(piece);
        }
        if current.trim_end().len() > WIDTH {
            out.push(wrap_with(current.trim(), "  ", "      "));
        } else {
            out.push(current.trim_end().to_string());
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_words_and_width() {
        let text = "word ".repeat(40);
        let w = wrap(&text);
        assert!(w.lines().all(|l| l.len() <= WIDTH), "{w}");
        assert_eq!(w.split_whitespace().count(), 40);
        let code = code_block(
            "static_assert(offsetof(struct mem_cgroup_per_node, lruvec.lrugen) % 64 == 48);",
        );
        assert_eq!(
            code,
            "  static_assert(offsetof(struct mem_cgroup_per_node,\n      lruvec.lrugen) % 64 == 48);"
        );
    }

    #[test]
    fn lists_read_like_english() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(and_list(&v(&["a"])), "a");
        assert_eq!(and_list(&v(&["a", "b", "c"])), "a, b and c");
    }

    use crate::layout::Slot;
    use crate::model::Field;
    use crate::verify::verify;

    fn layout(offsets: &[u64], size: u64, align: u64, placement: Placement) -> Layout {
        Layout {
            slots: offsets
                .iter()
                .enumerate()
                .map(|(field, &offset)| Slot { field, offset })
                .collect(),
            size,
            align,
            line: 64,
            placement,
        }
    }

    fn counters() -> Struct {
        let a = |g: &str| Access::Lockless {
            group: Some(g.into()),
        };
        Struct::new(
            "ring",
            vec![
                Field::new("head", "unsigned long", 8, 8).with_access(a("producer")),
                Field::new("tail", "unsigned long", 8, 8).with_access(a("consumer")),
                Field::new("mask", "unsigned long", 8, 8).with_access(Access::ReadMostly),
            ],
        )
    }

    #[test]
    fn writer_groups_at_a_phase_of_an_aligned_struct() {
        let s = counters();
        let before = layout(&[0, 8, 16], 24, 8, Placement::Aligned);
        let after = verify(&s, &layout(&[64, 128, 0], 192, 64, Placement::Aligned)).unwrap();
        let notes = ChangelogNotes {
            lower_bound: 192,
            optimal: true,
            ..ChangelogNotes::default()
        };
        let text = changelog(&s, &before, &after, &notes);
        let prose = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            prose.starts_with(
                "In struct ring, head and tail are written without a lock by many CPUs. \
                 On cacheline 0, head sits with mask and with tail, written by other CPUs \
                 without a lock."
            ),
            "{text}"
        );
        assert!(prose.contains("when it starts a cacheline"), "{text}");
        assert!(
            prose.contains("This grows struct ring from 24 to 192 bytes (+168) and raises its alignment from 8 to 64 bytes. No smaller layout obeys the rule: lower bound 192 bytes."),
            "{text}"
        );
        assert!(
            text.contains("  head   64-71    1     lockless (producer)\n"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.len() <= WIDTH), "{text}");
    }

    #[test]
    fn a_layout_without_conflicts_says_so_and_has_no_before_table() {
        let s = counters();
        let before = layout(&[64, 128, 0], 192, 64, Placement::Aligned);
        let after = verify(&s, &before).unwrap();
        let text = changelog(&s, &before, &after, &ChangelogNotes::default());
        assert!(
            text.starts_with("No cacheline of struct ring holds both"),
            "{text}"
        );
        assert!(!text.contains("Before:"), "{text}");
        assert!(text.contains("The fields keep their order."), "{text}");
        assert!(
            text.contains("This keeps struct ring at 192 bytes."),
            "{text}"
        );
    }

    /// The measuring paragraphs of the changelog (those that start "To measure").
    fn measuring(text: &str) -> Vec<String> {
        text.split("\n\n")
            .filter(|p| p.starts_with("To measure"))
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    }

    #[test]
    fn false_sharing_is_measured_with_perf_c2c() {
        let s = counters();
        let before = layout(&[0, 8, 16], 24, 8, Placement::Aligned);
        let after = verify(&s, &layout(&[64, 128, 0], 192, 64, Placement::Aligned)).unwrap();
        let text = changelog(&s, &before, &after, &ChangelogNotes::default());
        let m = measuring(&text);
        assert_eq!(m.len(), 1, "{text}");
        assert!(m[0].contains("`perf c2c record -a`"), "{text}");
        assert!(!m[0].contains("perf stat"), "{text}");
    }

    /// A struct whose one hot path reads `key`, `hash` and `mtu`, which sit
    /// on three lines before and on one after; nothing is written.
    #[test]
    fn a_packed_hot_path_is_measured_by_its_cache_misses_and_a_data_type_profile() {
        let on = |path: u32| vec![crate::model::PathUse { path, bytes: 0..8 }];
        let mut s = Struct::new(
            "flow",
            vec![
                Field::new("key", "unsigned long", 8, 8).with_access(Access::ReadMostly),
                Field::new("pad1", "char", 64, 1),
                Field::new("hash", "unsigned long", 8, 8).with_access(Access::ReadMostly),
                Field::new("pad2", "char", 64, 1),
                Field::new("mtu", "unsigned long", 8, 8).with_access(Access::ReadMostly),
            ],
        );
        s.paths = vec!["flow_rx".to_string()];
        for f in [0, 2, 4] {
            s.fields[f].paths = on(0);
        }
        let before = layout(&[0, 8, 72, 80, 144], 152, 8, Placement::Aligned);
        let after = verify(&s, &layout(&[0, 24, 8, 88, 16], 152, 8, Placement::Aligned)).unwrap();
        let text = changelog(&s, &before, &after, &ChangelogNotes::default());
        let m = measuring(&text);
        assert_eq!(m.len(), 1, "{text}");
        assert!(
            m[0].starts_with("To measure the hot path flow_rx, which now touches fewer cachelines of struct flow:"),
            "{text}"
        );
        for tool in [
            "`perf stat -e cache-misses,L1-dcache-load-misses`",
            "`perf mem record -a`",
            "`perf report -s type,typeoff --stdio`",
        ] {
            assert!(m[0].contains(tool), "{tool}: {text}");
        }
        assert!(
            !text.contains("perf c2c"),
            "no false sharing to measure: {text}"
        );
        assert!(text.lines().all(|l| l.len() <= WIDTH), "{text}");
    }
}
