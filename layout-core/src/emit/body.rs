//! A struct body as the C diff sees it, and its members in a new order.
//!
//! The body is a list of nodes: text that stays where it is (blank lines,
//! directives, skipped `#if` groups, anything that is not a field), marker
//! macros (`CACHELINE_PADDING(...)`, `__cacheline_group_*(...)`), field
//! declarations, and conditional blocks (`#if` ... `#endif`) holding nodes of
//! their own. Reordering keeps every other node where it is and refills the
//! positions of the carrying nodes (fields, and the marker lines the layout
//! places, such as a kept `CACHELINE_PADDING()`) in the new order, level by
//! level: a conditional block moves as a whole, so no field enters or
//! leaves a conditional; a declaration of several fields (`int a, b;`, a run
//! of bit-fields) moves as a whole too.

use crate::error::Diagnostic;
use crate::model::Struct;
use crate::source::{MemberSource, StructSource};
use std::ops::Range;

/// A struct-body marker macro, with its alignment argument when it is a
/// number (else the layout's line is meant).
pub(crate) use crate::idioms::MarkerKind;

#[derive(Clone, Debug)]
pub(crate) enum Node<'a> {
    /// Source text kept as it is, where it is.
    Keep(Range<usize>),
    /// A marker line: its member, and its whole lines without a leading
    /// comment (which stays where it is, as `Keep` text: the marker may go).
    Marker {
        member: &'a MemberSource,
        kind: MarkerKind,
        lines: Range<usize>,
    },
    /// One declaration: its whole lines, its members (one per declarator or
    /// bit-field) and their fields in source order.
    Decl {
        lines: Range<usize>,
        members: Vec<&'a MemberSource>,
        fields: Vec<usize>,
    },
    /// `#if` ... `#endif`, both directive lines included (as `Keep` nodes).
    Block(Vec<Node<'a>>),
}

impl Node<'_> {
    /// Every field inside, in source order.
    fn fields(&self) -> Vec<usize> {
        match self {
            Node::Decl { fields, .. } => fields.clone(),
            Node::Block(nodes) => nodes.iter().flat_map(Node::fields).collect(),
            Node::Keep(_) | Node::Marker { .. } => Vec::new(),
        }
    }
}

/// Builds the node list of `src`'s body. `src` must have passed the range
/// checks (members in order, inside the body).
pub(crate) fn parse<'a>(src: &'a StructSource) -> Result<Vec<Node<'a>>, Diagnostic> {
    let text = &src.text;
    // The open blocks, innermost last; the body itself at the bottom.
    let mut stack: Vec<Vec<Node<'a>>> = vec![Vec::new()];
    let mut cursor = src.body.start;
    for m in &src.members {
        let depth = stack.len();
        let top = stack.last_mut().expect("the body level is never popped");
        if m.lines.start > cursor {
            top.push(Node::Keep(cursor..m.lines.start));
        }
        cursor = m.lines.end;
        if let Some(field) = m.field {
            push_declaration(top, m, field);
            continue;
        }
        let decl = text[m.decl.clone()].trim_start();
        match directive(decl) {
            Some("if" | "ifdef" | "ifndef") => stack.push(vec![Node::Keep(m.lines.clone())]),
            Some("endif") if depth > 1 => {
                let mut block = stack.pop().expect("checked above");
                block.push(Node::Keep(m.lines.clone()));
                stack
                    .last_mut()
                    .expect("the body level is never popped")
                    .push(Node::Block(block));
            }
            Some(_) => top.push(Node::Keep(m.lines.clone())),
            None => match marker_kind(decl) {
                Some(kind) => top.push(Node::Marker {
                    member: m,
                    kind,
                    lines: m.lines.clone(),
                }),
                None => top.push(Node::Keep(m.lines.clone())),
            },
        }
    }
    if stack.len() > 1 {
        return Err(
            Diagnostic::new("a conditional (`#if`) in the struct body has no `#endif`")
                .help("close it with `#endif` inside the struct body"),
        );
    }
    let top = stack.last_mut().expect("the body level is never popped");
    if src.body.end > cursor {
        top.push(Node::Keep(cursor..src.body.end));
    }
    let nodes = stack.pop().expect("the body level");
    Ok(anchor_section_comments(text, nodes))
}

/// Splits the comments above a declaration that describe a section, not
/// the member, off the declaration: they stay where they are (as `Keep`
/// text), while a member's own comment moves with it.
///
/// Of the comments directly above a declaration, all but the last describe
/// the section. The last one is the member's own unless it opens a
/// paragraph of several members: nothing but blank lines, directives or
/// other kept text before it, and another member right after the
/// declaration (`/* Slow start and congestion control */` above
/// `snd_ssthresh`, `snd_cwnd`, ...). A comment above a member alone in its
/// paragraph (`/* Header prediction flags */` above `pred_flags`) or
/// inside a paragraph is the member's own. So is one above a field that
/// `#if` blocks split (a bit-field run with conditional bit-fields, the
/// comment above its `unsigned :0;`), when what follows is more of it.
fn anchor_section_comments<'a>(text: &str, nodes: Vec<Node<'a>>) -> Vec<Node<'a>> {
    let n = nodes.len();
    let opens: Vec<bool> = (0..n)
        .map(|i| i == 0 || !matches!(nodes[i - 1], Node::Decl { .. }))
        .collect();
    let followed: Vec<bool> = (0..n)
        .map(|i| {
            let own = nodes[i].fields();
            i + 1 < n
                && match &nodes[i + 1] {
                    Node::Keep(_) => false,
                    Node::Block(inner) => inner
                        .iter()
                        .flat_map(Node::fields)
                        .any(|f| !own.contains(&f)),
                    Node::Decl { fields, .. } => fields.iter().any(|f| !own.contains(f)),
                    // A marker ends a group or starts a line: what follows
                    // it is another paragraph.
                    Node::Marker { .. } => false,
                }
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for (i, node) in nodes.into_iter().enumerate() {
        match node {
            Node::Decl {
                lines,
                members,
                fields,
            } => {
                let decl_line = line_start(text, members[0].decl.start).max(lines.start);
                let units = comment_units(text, lines.start..decl_line);
                let own_start = match units.last() {
                    None => lines.start,
                    Some(_) if units.len() == 1 && opens[i] && followed[i] => decl_line,
                    Some(&last) => last,
                };
                if own_start > lines.start {
                    out.push(Node::Keep(lines.start..own_start));
                }
                out.push(Node::Decl {
                    lines: own_start..lines.end,
                    members,
                    fields,
                });
            }
            Node::Block(inner) => out.push(Node::Block(anchor_section_comments(text, inner))),
            Node::Marker {
                member,
                kind,
                lines,
            } => {
                let decl_line = line_start(text, member.decl.start).max(lines.start);
                if decl_line > lines.start {
                    out.push(Node::Keep(lines.start..decl_line));
                }
                out.push(Node::Marker {
                    member,
                    kind,
                    lines: decl_line..lines.end,
                });
            }
            other => out.push(other),
        }
    }
    out
}

/// Where the line holding byte `at` starts.
fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |p| p + 1)
}

/// Where each comment in `range` (whole lines of comments only) starts:
/// a `/* ... */` block over one or more lines, or a run of `//` lines.
fn comment_units(text: &str, range: Range<usize>) -> Vec<usize> {
    let mut units = Vec::new();
    let mut in_block = false;
    let mut after_slashes = false;
    let mut at = range.start;
    for line in text[range.clone()].split_inclusive('\n') {
        let t = line.trim();
        let slashes = t.starts_with("//");
        if !(in_block || t.is_empty() || slashes && after_slashes) {
            units.push(at);
            in_block = t.starts_with("/*");
        }
        after_slashes = slashes && !in_block;
        if in_block && block_closes(t) {
            in_block = false;
        }
        at += line.len();
    }
    units
}

/// Whether a line of a `/* */` comment closes it (the last `/*` on the line
/// has a `*/` after it, or the line has a `*/` and opens none).
fn block_closes(line: &str) -> bool {
    match (line.rfind("/*"), line.rfind("*/")) {
        (Some(open), Some(close)) => close > open,
        (None, Some(_)) => true,
        _ => false,
    }
}

/// Adds member `m` of `field`: to the declaration it shares lines or its
/// field with (`int a, b;`, bit-fields of one storage unit), else as a new one.
fn push_declaration<'a>(nodes: &mut Vec<Node<'a>>, m: &'a MemberSource, field: usize) {
    // The declaration to join, looking back over kept text only.
    let join = nodes
        .iter()
        .rposition(|n| !matches!(n, Node::Keep(_)))
        .filter(|&i| match &nodes[i] {
            Node::Decl { lines, fields, .. } => lines == &m.lines || fields.contains(&field),
            _ => false,
        });
    match join {
        Some(i) => {
            // Kept text between the two members becomes part of the declaration.
            nodes.truncate(i + 1);
            if let Node::Decl {
                lines,
                members,
                fields,
            } = &mut nodes[i]
            {
                lines.end = lines.end.max(m.lines.end);
                members.push(m);
                if !fields.contains(&field) {
                    fields.push(field);
                }
            }
        }
        None => nodes.push(Node::Decl {
            lines: m.lines.clone(),
            members: vec![m],
            fields: vec![field],
        }),
    }
}

/// The directive name of a preprocessor line (`#  ifdef X` → `ifdef`).
fn directive(decl: &str) -> Option<&str> {
    let rest = decl.strip_prefix('#')?.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The marker macro a body line calls, if any: `__cacheline_group_end_aligned(g, 128);`.
fn marker_kind(decl: &str) -> Option<MarkerKind> {
    let end = decl
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(decl.len());
    MarkerKind::from_macro(&decl[..end], || {
        decl.split_once(',')
            .and_then(|(_, rest)| {
                rest.trim_end_matches([')', ';', ' '])
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .filter(|a| a.is_power_of_two())
    })
}

/// The first argument of a marker macro: `g` in `__cacheline_group_begin(g);`.
pub(crate) fn marker_name(decl: &str) -> Option<&str> {
    let open = decl.find('(')?;
    let rest = &decl[open + 1..];
    let end = rest.find([',', ')'])?;
    let name = rest[..end].trim();
    (!name.is_empty()).then_some(name)
}

/// The name of the zero-size member a marker line declares, as the model
/// (and BTF) calls it: `_pad1_`, `__cacheline_group_begin__g`,
/// `__cacheline_group_end__g`.
pub(crate) fn marker_field_name(decl: &str, kind: MarkerKind) -> Option<String> {
    Some(kind.field_name(marker_name(decl)?))
}

/// Where a node goes in the new order: the ranks of its fields, and of
/// the marker lines the layout places (`marker_rank`), at every level inside.
fn ranks_of(
    node: &Node,
    rank: &[usize],
    marker_rank: &dyn Fn(&MemberSource, MarkerKind) -> Option<usize>,
) -> Vec<usize> {
    match node {
        Node::Decl { fields, .. } => fields.iter().map(|&f| rank[f]).collect(),
        Node::Block(inner) => inner
            .iter()
            .flat_map(|n| ranks_of(n, rank, marker_rank))
            .collect(),
        Node::Marker { member, kind, .. } => marker_rank(member, *kind).into_iter().collect(),
        Node::Keep(_) => Vec::new(),
    }
}

/// The nodes with their carrying nodes in the order of `rank`
/// (`rank[field]` = position in the new order), at every level. A carrying
/// node holds fields, or is a marker line the layout places
/// (`marker_rank`: its position in the same order): the author's paddings
/// move with the line breaks they make, so a member may cross one.
pub(crate) fn reorder<'a>(
    s: &Struct,
    nodes: &[Node<'a>],
    rank: &[usize],
    marker_rank: &dyn Fn(&MemberSource, MarkerKind) -> Option<usize>,
) -> Result<Vec<Node<'a>>, Diagnostic> {
    let mut carriers: Vec<(usize, Node<'a>)> = Vec::new();
    let mut carrying = vec![false; nodes.len()];
    for (k, node) in nodes.iter().enumerate() {
        let ranks = ranks_of(node, rank, marker_rank);
        if ranks.is_empty() {
            continue;
        }
        carrying[k] = true;
        let fields = node.fields();
        let (lo, hi) = (
            *ranks.iter().min().expect("not empty"),
            *ranks.iter().max().expect("not empty"),
        );
        let names = || {
            fields
                .iter()
                .map(|&f| format!("`{}`", s.fields[f].name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let node = match node {
            Node::Decl { .. }
                if ranks.windows(2).any(|w| w[0] > w[1]) || hi - lo + 1 != ranks.len() =>
            {
                return Err(Diagnostic::new(format!(
                    "the layout separates or reorders {} of struct `{}`, declared together",
                    names(),
                    s.name
                ))
                .help("declare them one per line, or keep them together in the layout"));
            }
            Node::Block(_) if hi - lo + 1 != ranks.len() => {
                return Err(Diagnostic::new(format!(
                    "the layout moves fields between {} of struct `{}`, which sit in one \
                     `#if` block",
                    names(),
                    s.name
                ))
                .help(
                    "the diff moves a conditional block only as a whole; keep its fields together",
                ));
            }
            Node::Block(inner) => Node::Block(reorder(s, inner, rank, marker_rank)?),
            other => other.clone(),
        };
        carriers.push((lo, node));
    }
    carriers.sort_by_key(|(lo, _)| *lo);
    let mut next = carriers.into_iter().map(|(_, n)| n);
    Ok(nodes
        .iter()
        .zip(&carrying)
        .map(|(n, &carries)| {
            if carries {
                next.next().expect("one carrier per carrying position")
            } else {
                n.clone()
            }
        })
        .collect())
}

/// Nodes in text order, blocks opened up.
pub(crate) fn flatten<'a, 'n>(nodes: &'n [Node<'a>], out: &mut Vec<&'n Node<'a>>) {
    for n in nodes {
        match n {
            Node::Block(inner) => flatten(inner, out),
            other => out.push(other),
        }
    }
}

/// A top-level node that carries fields, and where it lies in the
/// flattened list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Carrier {
    pub flat: Range<usize>,
    pub fields: Vec<usize>,
}

/// [`flatten`], and the top-level carriers of fields in order.
pub(crate) fn flatten_with_carriers<'a, 'n>(
    nodes: &'n [Node<'a>],
) -> (Vec<&'n Node<'a>>, Vec<Carrier>) {
    let mut flat = Vec::new();
    let mut carriers = Vec::new();
    for n in nodes {
        let start = flat.len();
        flatten(std::slice::from_ref(n), &mut flat);
        let fields = n.fields();
        if !fields.is_empty() {
            carriers.push(Carrier {
                flat: start..flat.len(),
                fields,
            });
        }
    }
    (flat, carriers)
}
