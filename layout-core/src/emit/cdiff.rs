//! The C header diff: the struct's members in the verified layout's order.
//!
//! Every declaration moves with its whole source lines (leading comment,
//! declaration, trailing comment). The body keeps its shape ([`body`]): the
//! k-th field-carrying position in the source receives the k-th declaration
//! (or `#if` block) of the new order, while blank lines, directives and other
//! non-field text stay where they are. Alignment breaks from the
//! [`plan`](super::plan) are spelled in the [`CStyle`] by the
//! [`render`](super::render)er; gaps no alignment can express get explicit
//! `u8` (or `unsigned char`) padding members; an alignment no member gives
//! comes from `__aligned(N)` on the struct. The `Groups` style also writes
//! (or rewrites) the check function after the struct. Before the diff is
//! made, the [`replay`](super::replay) check places what was written as C
//! does and refuses any difference from the verified layout.

use super::attribute::{struct_alignment, FieldAttributes};
use super::body::{self, Node};
use super::check_fn;
use super::groups::{plan_groups, Group, Member};
use super::line_diff;
use super::markup::{MarkupChange, Place};
use super::plan::{plan, Item, StructBreak};
use super::render::{newline_of, Renderer};
use super::replay;
use super::{CStyle, TreeIdioms};
use crate::error::{line_col, Diagnostic};
use crate::layout::Layout;
use crate::model::Struct;
use crate::report::ordered_slots;
use crate::source::StructSource;
use crate::verify::VerifiedLayout;
use similar::{capture_diff, group_diff_ops, Algorithm, DiffOp, DiffTag};
use std::ops::Range;

/// A unified diff (`--- a/PATH`, `+++ b/PATH`, 3 lines of context) that turns
/// `src.text` into the same header with the struct laid out as `v`, in the
/// given [`CStyle`]. It applies with `patch -p1` (or `git apply`) from the
/// directory `src.path` is relative to, and gcc then places every member at
/// its verified offset, with the verified size and alignment (given
/// `SMP_CACHE_BYTES` equal to the layout's line size). Empty when the header
/// already has this layout in this style.
///
/// Errors: source ranges that do not fit the struct, a layout that would
/// move a field into or out of an `#if` block or split a declaration of
/// several fields, `__cacheline_group_*` markers in a style other than
/// `Groups`, a break the style cannot put where the layout needs it (inside a
/// declaration, or inside an `#if` block for `Groups`), and any layout the
/// style's C would not reproduce exactly (the help then suggests
/// `--style aligned`).
pub fn c_diff(src: &StructSource, v: &VerifiedLayout, style: CStyle) -> Result<String, Diagnostic> {
    let idioms = TreeIdioms {
        groups: true,
        aligned_groups: true,
        assert_member: true,
        ..TreeIdioms::of_header(&src.path, &src.text)
    };
    diff_and_check(src, v, style, &idioms, true, None).map(|d| d.diff)
}

/// A diff for the translation unit a header lands in, with what the
/// `Groups` style's check function is, apart: the kernel keeps these in a
/// `.c` file (`net_dev_struct_check()` in `net/core/dev.c`), not in the
/// header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CDiff {
    pub diff: String,
    /// The check function, for a `.c` file; `None` in the other styles,
    /// or when the tree has no `CACHELINE_ASSERT_GROUP_MEMBER`.
    pub check_function: Option<String>,
    /// Every attribute, padding and marker the diff adds or removes, with
    /// why, in the order of the body.
    pub changes: Vec<MarkupChange>,
}

/// [`c_diff`] written only with the idioms `idioms` says the translation
/// unit defines: `--style groups` is refused where the tree has no group
/// markers (or no aligned ones where a group needs them), attributes are
/// spelled as the header can, and the check function comes apart. The diff
/// headers name the header `shown_path` (relative to the tree it applies
/// in) when given, else `src.path` without a leading `./` or `/`.
pub fn c_diff_in(
    src: &StructSource,
    v: &VerifiedLayout,
    style: CStyle,
    idioms: &TreeIdioms,
    shown_path: Option<&str>,
) -> Result<CDiff, Diagnostic> {
    diff_and_check(src, v, style, idioms, false, shown_path)
}

fn diff_and_check(
    src: &StructSource,
    v: &VerifiedLayout,
    style: CStyle,
    idioms: &TreeIdioms,
    check_in_header: bool,
    shown_path: Option<&str>,
) -> Result<CDiff, Diagnostic> {
    let (stripped, stripped_layout, stripped_src, kept_markers, index) =
        without_markers(src, v.strukt(), v);
    let (s, l, src): (&Struct, &Layout, &StructSource) =
        (&stripped, &stripped_layout, &stripped_src);
    let at_struct = |d: Diagnostic| {
        let (line, col) = line_col(&src.text, src.definition.start);
        let help = d.help.clone().unwrap_or_else(|| {
            "the diff cannot be written; --format table or json prints the verified layout"
                .to_string()
        });
        d.in_file(&src.path).at(line, col).help(help)
    };
    if !l.line.is_power_of_two() {
        return Err(at_struct(Diagnostic::new(format!(
            "line size {} is not a power of two",
            l.line
        ))));
    }
    check_ranges(src, s).map_err(at_struct)?;
    if style.writes_groups() {
        refuse_missing_groups(s, idioms, false).map_err(at_struct)?;
    }
    let nodes = body::parse(src).map_err(at_struct)?;
    if !style.writes_groups() {
        refuse_group_markers(src, s, &nodes, style, &kept_markers)?;
    } else if let Some(g) = kept_markers
        .iter()
        .find_map(|m| m.strip_prefix(crate::segments::BEGIN_PREFIX))
    {
        return Err(at_struct(
            Diagnostic::new(format!(
                "struct `{}` keeps the author's cache-line group `{g}`, which the groups style \
                 would rewrite",
                s.name
            ))
            .help("pass --regroup to rebuild the groups, or use --style aligned, which keeps them"),
        ));
    }
    let placed_markers = marker_lines(src, &nodes, &kept_markers);
    let (rank, marker_rank) = ranks(v.strukt(), v, &index, &placed_markers);
    let text = &src.text;
    let rank_of_marker = |m: &crate::source::MemberSource, kind: body::MarkerKind| {
        body::marker_field_name(&text[m.decl.clone()], kind)
            .and_then(|name| marker_rank.get(&name).copied())
    };
    let reordered = body::reorder(s, &nodes, &rank, &rank_of_marker).map_err(at_struct)?;
    let (flat, carriers) = body::flatten_with_carriers(&reordered);

    let attributes = FieldAttributes::find(src, s, l.line);
    let struct_break = if style.writes_groups() {
        StructBreak::Start
    } else {
        StructBreak::Member {
            preferred: &spelled_breaks(&flat, &attributes, s.fields.len()),
        }
    };
    let planned = plan(s, l, &attributes.present(), struct_break).map_err(at_struct)?;
    let groups = if style.writes_groups() {
        let members = group_members(&planned.items, &carriers);
        // The author's groups are dissolved (`--regroup`; a kept group is
        // refused above): new groups are named from classes and paths only.
        let groups = plan_groups(s, l, &members, &vec![None; s.fields.len()]).map_err(at_struct)?;
        let aligned = groups.iter().any(|g| g.aligned_begin || g.aligned_end);
        refuse_missing_groups(s, idioms, aligned).map_err(at_struct)?;
        groups
    } else {
        Vec::new()
    };
    let packed = is_packed(src);
    let rendered = Renderer::new(
        src,
        s,
        l,
        &planned.items,
        &attributes,
        style,
        &groups,
        packed,
    )
    .keeping(kept_markers)
    .spelling(idioms.spellings)
    .render(&flat, &carriers)
    .map_err(at_struct)?;
    // gcc applies the last alignment attribute of the definition: the new
    // one replaces it.
    let struct_align = planned.struct_align.unwrap_or(s.min_align);
    replay::check(s, l, &rendered.record, struct_align)
        .map_err(|why| at_struct(replay::refusal(s, style, &why)))?;

    let mut changes = rendered.changes;
    let mut edits: Vec<(Range<usize>, String)> = vec![(src.body.clone(), rendered.body)];
    if let Some(a) = planned.struct_align {
        let edit = struct_alignment(src, a, idioms.spellings);
        changes.push(MarkupChange {
            added: true,
            what: edit.1.trim().to_string(),
            place: Place::Struct,
            member: None,
            why: format!(
                "no member's alignment gives struct {} the layout's {a}-byte alignment",
                s.name
            ),
        });
        edits.push(edit);
    }
    let mut check_function = None;
    if style.writes_check_function() && check_in_header {
        edits.push(check_function_edit(src, s, &groups));
    } else if style.writes_check_function() && idioms.assert_member {
        check_function = Some(check_function_text(src, s, &groups));
    }
    edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    let mut new_text = src.text.clone();
    let mut limit = usize::MAX;
    for (r, with) in edits {
        if r.end > limit {
            return Err(at_struct(
                Diagnostic::new(format!(
                    "the check function {} overlaps the definition of struct {}",
                    check_fn::function_name(&s.name),
                    s.name
                ))
                .help("move or remove that function"),
            ));
        }
        limit = r.start;
        new_text.replace_range(r, &with);
    }
    Ok(CDiff {
        diff: unified_diff(
            &shown_path.map_or_else(|| diff_path(src), str::to_string),
            &src.text,
            &new_text,
        ),
        check_function,
        changes,
    })
}

/// Refuses the `Groups` style where the tree lacks the markers it writes.
fn refuse_missing_groups(s: &Struct, idioms: &TreeIdioms, aligned: bool) -> Result<(), Diagnostic> {
    let missing = idioms.missing_group_macros(aligned);
    if missing.is_empty() {
        return Ok(());
    }
    Err(Diagnostic::new(format!(
        "--style groups writes {} for struct {}, which this tree does not define",
        missing.join(", "),
        s.name
    ))
    .help("use --style aligned (____cacheline_aligned_in_smp) or --style padding on this tree"))
}

/// The names of the kept markers (`kept`) that have a marker line in the
/// body: those lines move to where the layout puts their members.
fn marker_lines(src: &StructSource, nodes: &[Node], kept: &[String]) -> Vec<String> {
    let mut flat = Vec::new();
    body::flatten(nodes, &mut flat);
    flat.iter()
        .filter_map(|n| match n {
            Node::Marker { member, kind, .. } => {
                body::marker_field_name(&src.text[member.decl.clone()], *kind)
            }
            _ => None,
        })
        .filter(|name| kept.contains(name))
        .collect()
}

/// Each stripped field's place in the layout's order, and each placed
/// marker line's (by its member's name), counted over both: the order of
/// the verified layout, with the kept markers that have a line
/// (`placed_markers`) among the fields. `index` maps the verified struct's
/// fields to the stripped one's.
fn ranks(
    full: &Struct,
    v: &Layout,
    index: &[Option<usize>],
    placed_markers: &[String],
) -> (Vec<usize>, std::collections::HashMap<String, usize>) {
    let mut rank = vec![0; index.iter().flatten().count()];
    let mut marker_rank = std::collections::HashMap::new();
    let mut k = 0;
    for sl in ordered_slots(full, v) {
        match index.get(sl.field).copied().flatten() {
            Some(f) => rank[f] = k,
            None => {
                let name = &full.fields[sl.field].name;
                if !placed_markers.contains(name) {
                    continue;
                }
                marker_rank.insert(name.clone(), k);
            }
        }
        k += 1;
    }
    (rank, marker_rank)
}

/// The model without the zero-size members the header spells as marker
/// lines (`CACHELINE_PADDING()`, `__cacheline_group_*()`), which the C
/// front-end adds and no member declaration carries; the layout without
/// their slots; the source with its members' field indices to match; and
/// their names: those lines move only where the layout moves their members
/// ([`ranks`]); and where each field went (`None`: a marker).
#[allow(clippy::type_complexity)]
fn without_markers(
    src: &StructSource,
    s: &Struct,
    l: &Layout,
) -> (
    Struct,
    Layout,
    StructSource,
    Vec<String>,
    Vec<Option<usize>>,
) {
    let mut declared = vec![false; s.fields.len()];
    for m in &src.members {
        if let Some(d) = m.field.and_then(|f| declared.get_mut(f)) {
            *d = true;
        }
    }
    let mut index = vec![None; s.fields.len()];
    let mut fields = Vec::new();
    let mut kept = Vec::new();
    for (i, f) in s.fields.iter().enumerate() {
        if f.size == 0 && !declared[i] {
            kept.push(f.name.clone());
        } else {
            index[i] = Some(fields.len());
            fields.push(f.clone());
        }
    }
    let mut stripped = s.clone();
    stripped.fields = fields;
    let mut layout = l.clone();
    layout.slots = l
        .slots
        .iter()
        .filter_map(|sl| {
            index
                .get(sl.field)
                .copied()
                .flatten()
                .map(|field| crate::layout::Slot {
                    field,
                    offset: sl.offset,
                })
        })
        .collect();
    let mut source = src.clone();
    for m in &mut source.members {
        m.field = m
            .field
            .map(|f| index.get(f).copied().flatten().unwrap_or(usize::MAX));
    }
    (stripped, layout, source, kept, index)
}

/// The other styles cannot keep group markers the layout does not keep:
/// the members between them move.
fn refuse_group_markers(
    src: &StructSource,
    s: &Struct,
    nodes: &[Node],
    style: CStyle,
    kept: &[String],
) -> Result<(), Diagnostic> {
    let mut flat = Vec::new();
    body::flatten(nodes, &mut flat);
    let text = &src.text;
    let marker = flat.iter().find_map(|n| match n {
        Node::Marker { member, kind, .. }
            if kind.is_group()
                && !body::marker_field_name(&text[member.decl.clone()], *kind)
                    .is_some_and(|name| kept.contains(&name)) =>
        {
            Some(member)
        }
        _ => None,
    });
    match marker {
        Some(member) => {
            let (line, col) = line_col(&src.text, member.decl.start);
            Err(Diagnostic::new(format!(
                "struct `{}` uses __cacheline_group markers, which the {style} style cannot keep",
                s.name
            ))
            .in_file(&src.path)
            .at(line, col)
            .help("use --style groups, which rewrites the groups"))
        }
        None => Ok(()),
    }
}

/// Fields whose break the header spells already: a cacheline attribute, or
/// a `CACHELINE_PADDING()` line right before their declaration (blank lines
/// aside) in the reordered body.
fn spelled_breaks(flat: &[&Node], attributes: &FieldAttributes, n: usize) -> Vec<bool> {
    let mut spelled = attributes.present();
    spelled.resize(n, false);
    let mut after_padding = false;
    for node in flat {
        match node {
            Node::Marker {
                kind: body::MarkerKind::Padding,
                ..
            } => after_padding = true,
            Node::Decl { fields, .. } => {
                if after_padding {
                    if let Some(s) = fields.first().and_then(|&f| spelled.get_mut(f)) {
                        *s = true;
                    }
                }
                after_padding = false;
            }
            Node::Keep(_) | Node::Marker { .. } | Node::Block(_) => {}
        }
    }
    spelled
}

/// The members in layout order with their breaks and top-level carriers.
fn group_members(items: &[Item], carriers: &[body::Carrier]) -> Vec<Member> {
    items
        .iter()
        .filter_map(|it| match *it {
            Item::Member {
                field, line_break, ..
            } => Some(Member {
                field,
                line_break,
                carrier: carriers
                    .iter()
                    .position(|c| c.fields.contains(&field))
                    .unwrap_or(usize::MAX),
            }),
            Item::Pad { .. } => None,
        })
        .collect()
}

/// Whether the struct is declared `packed` (which overrides the alignment
/// of a `CACHELINE_PADDING` member).
fn is_packed(src: &StructSource) -> bool {
    let text = &src.text;
    let head = &text[src.definition.start..src.body.start];
    let tail_end = text[src.definition.end..]
        .find(';')
        .map_or(text.len(), |p| src.definition.end + p);
    let tail = &text[src.definition.end..tail_end];
    [head, tail].iter().any(|part| {
        crate::lex::tokenize(part).iter().any(|t| {
            t.kind == crate::lex::TokKind::Ident && crate::idioms::is_packed_word(t.text(part))
        })
    })
}

/// The check function alone, for a `.c` file.
fn check_function_text(src: &StructSource, s: &Struct, groups: &[Group]) -> String {
    check_function_edit(src, s, groups)
        .1
        .trim_start_matches(['\r', '\n'])
        .to_string()
}

/// The check function of a style that writes one: where it goes (replacing the
/// one a previous run wrote, else after the struct definition's line) and
/// its text.
fn check_function_edit(src: &StructSource, s: &Struct, groups: &[Group]) -> (Range<usize>, String) {
    let text = &src.text;
    let nl = newline_of(&text[src.body.clone()]);
    let head = &text[src.definition.start..src.body.start];
    let tagged = head.split_whitespace().any(|w| w == s.name);
    let type_name = if tagged {
        format!("struct {}", s.name)
    } else {
        s.name.clone()
    };
    let function = check_fn::check_function(s, &type_name, groups, nl);
    if let Some(r) = check_fn::existing(text, &s.name) {
        return (r, function);
    }
    let after = text[src.definition.end..]
        .find(';')
        .map(|p| src.definition.end + p)
        .and_then(|semi| text[semi..].find('\n').map(|p| semi + p + 1))
        .unwrap_or(text.len());
    let lead = if text[..after].ends_with('\n') {
        nl
    } else {
        "\n\n"
    };
    (after..after, format!("{lead}{function}"))
}

/// Checks that the source ranges fit each other and the struct, and that
/// every field has a declaration.
fn check_ranges(src: &StructSource, s: &Struct) -> Result<(), Diagnostic> {
    let text = &src.text;
    let within = |inner: &Range<usize>, outer: &Range<usize>| {
        inner.start <= inner.end && outer.start <= inner.start && inner.end <= outer.end
    };
    let valid = |r: &Range<usize>| text.get(r.clone()).is_some();
    let bad = |what: String| {
        Diagnostic::new(format!(
            "the source ranges of struct `{}` are inconsistent: {what}",
            s.name
        ))
        .help("this is a front-end bug; please report it with the header")
    };
    if !valid(&src.definition) || !valid(&src.body) || !within(&src.body, &src.definition) {
        return Err(bad("the body is not inside the definition".into()));
    }
    let mut declared = vec![false; s.fields.len()];
    let mut end = src.body.start;
    for m in &src.members {
        // Declarators of one declaration share their lines.
        let shares_previous = m.lines.end == end && m.lines.start < end;
        if !valid(&m.lines)
            || !within(&m.lines, &src.body)
            || (m.lines.start < end && !shares_previous)
        {
            return Err(bad(format!(
                "member at byte {} is out of order or outside the body",
                m.lines.start
            )));
        }
        if !valid(&m.decl)
            || !valid(&m.name)
            || !within(&m.decl, &m.lines)
            || !within(&m.name, &m.decl)
        {
            return Err(bad(format!(
                "member at byte {} has a declaration outside its lines",
                m.lines.start
            )));
        }
        end = m.lines.end;
        if let Some(i) = m.field {
            *declared.get_mut(i).ok_or_else(|| {
                bad(format!("member at byte {} names field {i}", m.lines.start))
            })? = true;
        }
    }
    match declared.iter().position(|d| !d) {
        Some(i) => Err(Diagnostic::new(format!(
            "field `{}` of struct `{}` has no declaration in the header",
            s.fields[i].name, s.name
        ))
        .help("a field the diff must move has to come from this header")),
        None => Ok(()),
    }
}

/// The path as the diff headers show it: `/`-separated, without a leading
/// `./` or `/` (an absolute path reads as relative to the root, never
/// `a//...`).
fn diff_path(src: &StructSource) -> String {
    let p = src.path.to_string_lossy().replace('\\', "/");
    let mut p = p.as_str();
    loop {
        if let Some(rest) = p.strip_prefix("./") {
            p = rest;
        } else if let Some(rest) = p.strip_prefix('/') {
            p = rest;
        } else {
            break;
        }
    }
    p.to_string()
}

/// A unified diff with 3 lines of context and git-style hunk context (the
/// nearest line above the hunk that starts with an identifier): the
/// smallest of several line diffs ([`line_diff`]), so never larger than
/// git's.
///
/// Blank lines stay where they are in the body (see [`body`]): one candidate
/// pairs the k-th blank line of the old text with the k-th of the new one
/// and diffs the text between two blank lines on its own, so that it shows
/// members moving, never blank lines; it is the diff shown unless another
/// is smaller.
fn unified_diff(path: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let anchored = anchored_ops(&old_lines, &new_lines);
    let ops = line_diff::smallest(&old_lines, &new_lines, &anchored).ops();
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    for group in group_diff_ops(merge_equal(ops), 3) {
        if group.iter().all(|op| op.tag() == DiffTag::Equal) {
            continue;
        }
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        out.push_str(&format!(
            "@@ -{} +{} @@",
            hunk_range(&old_range),
            hunk_range(&new_range)
        ));
        if let Some(f) = function_context(&old_lines, old_range.start) {
            out.push(' ');
            out.push_str(f);
        }
        out.push('\n');
        for op in &group {
            let (tag, o, n) = op.as_tag_tuple();
            let (mark, lines) = match tag {
                DiffTag::Equal => (' ', &old_lines[o]),
                DiffTag::Delete => ('-', &old_lines[o]),
                DiffTag::Insert => ('+', &new_lines[n]),
                DiffTag::Replace => {
                    push_lines(&mut out, '-', &old_lines[o]);
                    ('+', &new_lines[n])
                }
            };
            push_lines(&mut out, mark, lines);
        }
    }
    out
}

/// Adjacent equal runs as one (what [`group_diff_ops`] expects).
fn merge_equal(ops: Vec<DiffOp>) -> Vec<DiffOp> {
    let mut out: Vec<DiffOp> = Vec::with_capacity(ops.len());
    for op in ops {
        if let (Some(DiffOp::Equal { len, .. }), DiffOp::Equal { len: more, .. }) =
            (out.last_mut(), &op)
        {
            *len += more;
            continue;
        }
        if op.old_range().is_empty() && op.new_range().is_empty() {
            continue;
        }
        out.push(op);
    }
    out
}

/// `start,count` of a hunk header (the line before the hunk when it is
/// empty, as diff writes it).
fn hunk_range(r: &Range<usize>) -> String {
    match r.len() {
        0 => format!("{},0", r.start),
        1 => format!("{}", r.start + 1),
        n => format!("{},{n}", r.start + 1),
    }
}

fn push_lines(out: &mut String, mark: char, lines: &[&str]) {
    for line in lines {
        out.push(mark);
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
}

/// The diff operations from `old` to `new`: between blank lines, paired
/// in order when both have as many; over the whole text otherwise.
fn anchored_ops(old: &[&str], new: &[&str]) -> Vec<DiffOp> {
    let blanks = |lines: &[&str]| -> Vec<usize> {
        (0..lines.len())
            .filter(|&i| lines[i].trim().is_empty() && lines[i].ends_with('\n'))
            .collect()
    };
    let (ob, nb) = (blanks(old), blanks(new));
    if ob.len() != nb.len() {
        return capture_diff(Algorithm::Patience, old, 0..old.len(), new, 0..new.len());
    }
    let mut ops = Vec::new();
    let (mut o, mut n) = (0, 0);
    for (&bo, &bn) in ob
        .iter()
        .zip(&nb)
        .chain(std::iter::once((&old.len(), &new.len())))
    {
        ops.extend(capture_diff(Algorithm::Patience, old, o..bo, new, n..bn));
        if bo < old.len() {
            ops.push(if old[bo] == new[bn] {
                DiffOp::Equal {
                    old_index: bo,
                    new_index: bn,
                    len: 1,
                }
            } else {
                DiffOp::Replace {
                    old_index: bo,
                    old_len: 1,
                    new_index: bn,
                    new_len: 1,
                }
            });
        }
        (o, n) = (bo + 1, bn + 1);
    }
    ops
}

fn function_context<'a>(lines: &[&'a str], before: usize) -> Option<&'a str> {
    lines[..before.min(lines.len())]
        .iter()
        .rev()
        .find(|l| l.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$'))
        .map(|l| l.trim_end())
}
