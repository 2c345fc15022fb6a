//! What the author built, as ordering constraints: the struct in its tree.
//!
//! A struct's members, in declaration order, are cut into **segments**
//! ([`Field::segment`]), which every layout keeps in nondecreasing order
//! ([`crate::verify`] checks it): they are walls no member crosses.
//!
//! - the first member has segment 0 of its own, so it stays at offset 0
//!   (code casts the struct to it: `tcp_sk()`), unless the caller lets it
//!   move among the members declared with it ([`release_first`]);
//! - every zero-size member other than a padding and an empty struct is a
//!   segment of its own ([`is_wall`]): the kernel's
//!   `__cacheline_group_begin__NAME` / `__cacheline_group_end__NAME` /
//!   `__cacheline_group_pad__NAME` members (the kernel asserts group
//!   membership), any other zero-length array (`headers_start[0]`, which
//!   code uses as copy bounds) and a flexible array member; an empty struct
//!   (empty only in this configuration, as `netdevice_tracker` without
//!   reference tracking) moves like any member;
//! - the members between two of those form one segment.
//!
//! Inside a segment two lighter constraints hold:
//!
//! - **line breaks** ([`Struct::breaks`]): a `CACHELINE_PADDING()` member
//!   (`struct cacheline_padding`) and a member the source aligns to a line
//!   (`____cacheline_aligned_in_smp` on the member) keep their order among
//!   themselves, and stay line breaks (their alignment is the line's), but
//!   a member outside blocks may move across one into a part of the struct
//!   (the members between two breaks) that holds a member of its class, or
//!   anywhere when it is cold; every part keeps a member of its own;
//! - **blocks** ([`Struct::blocks`], set by the caller from the source): the
//!   fields of an `#if` block stay next to each other in the layout's
//!   order, so the block moves as a whole; members outside may move across
//!   it, members inside stay inside.
//!
//! With `--regroup` the cache-line groups and paddings are dissolved: their
//! markers leave the model ([`dissolve_groups`]), the line breaks go, and
//! only the first member and the other zero-size markers still cut
//! segments; blocks stay.

use crate::model::{Access, Field, Struct};

pub use crate::idioms::{BEGIN_PREFIX, END_PREFIX, PAD_PREFIX};

/// What a zero-size member stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Marker {
    /// `__cacheline_group_begin__NAME`.
    GroupBegin(String),
    /// `__cacheline_group_end__NAME`.
    GroupEnd(String),
    /// `__cacheline_group_pad__NAME`.
    GroupPad(String),
    /// `CACHELINE_PADDING(name)`: a member of type `struct cacheline_padding`.
    Padding,
    /// Any other zero-size member: a zero-length array (`headers_start[0]`),
    /// an empty struct, a flexible array member.
    ZeroSize,
}

impl Marker {
    /// The marker a field is, or `None` for a member with bytes.
    pub fn of(f: &Field) -> Option<Marker> {
        if f.size != 0 {
            return None;
        }
        let n = f.name.as_str();
        Some(if let Some(g) = n.strip_prefix(BEGIN_PREFIX) {
            Marker::GroupBegin(g.to_string())
        } else if let Some(g) = n.strip_prefix(END_PREFIX) {
            Marker::GroupEnd(g.to_string())
        } else if let Some(g) = n.strip_prefix(PAD_PREFIX) {
            Marker::GroupPad(g.to_string())
        } else if f.ty.trim() == crate::idioms::PADDING_TYPE {
            Marker::Padding
        } else {
            Marker::ZeroSize
        })
    }

    /// A cache-line group's marker or a padding: what `--regroup` dissolves.
    pub fn is_cacheline(&self) -> bool {
        !matches!(self, Marker::ZeroSize)
    }
}

/// True when the field is a zero-size marker that carries no access class of
/// its own (JSON writes `"access": "marker"` for it).
pub fn is_marker(f: &Field) -> bool {
    f.size == 0 && f.access == Access::Cold
}

/// How segments are cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keep {
    /// The first member stays first, at offset 0 (`--move-first` turns it off).
    pub first: bool,
    /// Paddings and members the source aligns to a line
    /// ([`Field::line_break`]) are line breaks ([`Struct::breaks`]) that keep
    /// their order (`--regroup` dissolves them with the groups).
    pub line_breaks: bool,
}

impl Default for Keep {
    fn default() -> Self {
        Keep {
            first: true,
            line_breaks: true,
        }
    }
}

/// True when the field is one of the author's line breaks: a padding
/// (`CACHELINE_PADDING()`) or a member with bytes the source aligns to a
/// line. Other zero-size members stay walls, aligned or not (a group's
/// aligned begin marker, a line-aligned flexible array).
pub fn is_line_break(f: &Field) -> bool {
    match Marker::of(f) {
        Some(m) => m == Marker::Padding,
        None => f.line_break,
    }
}

/// Whether a zero-size member is a wall: a cache-line group's marker, a
/// zero-length or flexible array. An empty struct (a type that has bytes
/// only in other configurations: a lock class key without lockdep, a
/// reference tracker without tracking) is an ordinary member.
pub fn is_wall(f: &Field) -> bool {
    match Marker::of(f) {
        None => false,
        Some(Marker::ZeroSize) => f.ty.contains('['),
        Some(_) => true,
    }
}

/// Sets every field's segment and the struct's line breaks from the
/// declaration order (see the module docs). Blocks are left as they are.
pub fn assign(s: &mut Struct, keep: Keep) {
    let n = s.fields.len();
    let mut seg = 0u32;
    let mut open = false;
    s.breaks.clear();
    for i in 0..n {
        let f = &s.fields[i];
        let line_break = keep.line_breaks && is_line_break(f);
        let own = (i == 0 && keep.first && n > 1) || (is_wall(f) && !line_break);
        if line_break {
            s.breaks.push(i);
        }
        if own {
            if open {
                seg += 1;
            }
            s.fields[i].segment = seg;
            seg += 1;
            open = false;
        } else {
            s.fields[i].segment = seg;
            open = true;
        }
    }
    if !keep.first {
        keep_first_before_breaks(s);
    }
}

/// True when the layout must keep field 0 first at offset 0: its segment is
/// below every other field's.
pub fn first_is_kept(s: &Struct) -> bool {
    match s.fields.split_first() {
        Some((first, rest)) if !rest.is_empty() => rest.iter().all(|f| f.segment > first.segment),
        _ => false,
    }
}

/// A cache-line group of the author, as the markers declare it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorGroup {
    pub name: String,
    /// Index of the begin marker, if any.
    pub begin: Option<usize>,
    /// Index of the end marker, if any.
    pub end: Option<usize>,
    /// The fields with bytes between the markers, in declaration order.
    pub members: Vec<usize>,
}

impl AuthorGroup {
    /// Bytes from the begin marker to the end marker in `offsets` (by field
    /// index): what the kernel's `CACHELINE_ASSERT_GROUP_SIZE` bounds.
    pub fn span(&self, offsets: &[Option<u64>]) -> Option<u64> {
        let b = offsets.get(self.begin?).copied().flatten()?;
        let e = offsets.get(self.end?).copied().flatten()?;
        e.checked_sub(b)
    }
}

/// The author's groups whose span grows from layout `before` to `after`
/// (offsets by field index): `(name, span before, span after)`.
pub fn grown_groups(
    s: &Struct,
    before: &[Option<u64>],
    after: &[Option<u64>],
) -> Vec<(String, u64, u64)> {
    author_groups(s)
        .into_iter()
        .filter_map(|g| {
            let (b, a) = (g.span(before)?, g.span(after)?);
            (a > b).then_some((g.name, b, a))
        })
        .collect()
}

/// The cache-line groups declared by `__cacheline_group_begin__NAME` /
/// `__cacheline_group_end__NAME` members, in declaration order.
pub fn author_groups(s: &Struct) -> Vec<AuthorGroup> {
    let mut groups: Vec<AuthorGroup> = Vec::new();
    let mut open: Option<usize> = None;
    for (i, f) in s.fields.iter().enumerate() {
        match Marker::of(f) {
            Some(Marker::GroupBegin(g)) => {
                groups.push(AuthorGroup {
                    name: g,
                    begin: Some(i),
                    end: None,
                    members: Vec::new(),
                });
                open = Some(groups.len() - 1);
            }
            Some(Marker::GroupEnd(g)) => {
                match groups
                    .iter_mut()
                    .rev()
                    .find(|x| x.name == g && x.end.is_none())
                {
                    Some(x) => x.end = Some(i),
                    None => groups.push(AuthorGroup {
                        name: g,
                        begin: None,
                        end: Some(i),
                        members: Vec::new(),
                    }),
                }
                if open.is_some_and(|k| groups[k].end.is_some()) {
                    open = None;
                }
            }
            Some(_) => {}
            None => {
                if let Some(k) = open {
                    groups[k].members.push(i);
                }
            }
        }
    }
    groups
}

/// What [`dissolve_groups`] removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dissolved {
    /// The author's cache-line groups, then paddings, in declaration order.
    pub groups: Vec<String>,
    pub paddings: Vec<String>,
    /// The members the source aligns to a line ([`Field::line_break`]):
    /// their line breaks are gone, the members stay.
    pub line_aligned: Vec<String>,
    /// For each old field index, its new index (`None`: a removed marker).
    pub index: Vec<Option<usize>>,
}

/// For `--regroup`: removes the cache-line group markers and paddings from
/// the model (the emitter writes new ones), then cuts segments again from
/// the first member and the other zero-size markers only.
pub fn dissolve_groups(s: &mut Struct, keep: Keep) -> Dissolved {
    let mut out = Dissolved::default();
    let mut next = 0;
    for f in &s.fields {
        let marker = Marker::of(f);
        match &marker {
            Some(Marker::GroupBegin(g)) => out.groups.push(g.clone()),
            Some(Marker::Padding) => out.paddings.push(f.name.clone()),
            None if f.line_break => out.line_aligned.push(f.name.clone()),
            _ => {}
        }
        if marker.is_some_and(|m| m.is_cacheline()) {
            out.index.push(None);
        } else {
            out.index.push(Some(next));
            next += 1;
        }
    }
    s.fields
        .retain(|f| !Marker::of(f).is_some_and(|m| m.is_cacheline()));
    s.blocks = remap_blocks(&s.blocks, &out.index);
    s.lists = remap_blocks(&s.lists, &out.index);
    assign(
        s,
        Keep {
            line_breaks: false,
            ..keep
        },
    );
    out
}

/// The blocks with their fields at their new indices (removed fields
/// dropped, empty blocks too).
fn remap_blocks(blocks: &[Vec<usize>], index: &[Option<usize>]) -> Vec<Vec<usize>> {
    blocks
        .iter()
        .map(|b| {
            b.iter()
                .filter_map(|&f| index.get(f).copied().flatten())
                .collect::<Vec<usize>>()
        })
        .filter(|b| !b.is_empty())
        .collect()
}

/// Points `src`'s member declarations at the fields' new indices after
/// [`dissolve_groups`].
pub fn remap_source(src: &mut crate::source::StructSource, d: &Dissolved) {
    for m in &mut src.members {
        m.field = m.field.and_then(|f| d.index.get(f).copied().flatten());
    }
}

/// For `--regroup --move-first` and tools that rewrite every group: the
/// model without the author's groups and paddings, every member free
/// (segment 0 everywhere), its source remapped.
pub fn free_all(s: &mut Struct, src: Option<&mut crate::source::StructSource>) -> Dissolved {
    let d = dissolve_groups(
        s,
        Keep {
            first: false,
            ..Keep::default()
        },
    );
    for f in &mut s.fields {
        f.segment = 0;
    }
    if let Some(src) = src {
        remap_source(src, &d);
    }
    d
}

/// For `--move-first`: the first member joins the members declared with it
/// (the segment after it), so it may move among them. It frees the first
/// member only: when a line break of the author's follows it (a marker, a
/// padding, a line-aligned member), no member was declared with it, and it
/// stays first.
pub fn release_first(s: &mut Struct) {
    if first_is_kept(s) && !second_is_a_break(s) {
        s.fields[0].segment = s.fields[1].segment;
        keep_first_before_breaks(s);
    }
}

/// A first member free to move stays before the author's first line break:
/// it heads the chain of [`Struct::breaks`].
fn keep_first_before_breaks(s: &mut Struct) {
    if !s.breaks.is_empty() && s.breaks[0] != 0 {
        s.breaks.insert(0, 0);
    }
}

/// True when the member declared second is a segment of its own that
/// [`assign`] cut (a zero-size marker) or one of the author's line breaks.
fn second_is_a_break(s: &Struct) -> bool {
    let second = &s.fields[1];
    second.size == 0 || s.breaks.contains(&1) || is_line_break(second)
}

/// The group a field belongs to in the author's declaration (by field
/// index): the name of the begin marker it follows, `None` outside groups.
pub fn group_of_fields(s: &Struct) -> Vec<Option<String>> {
    let mut out = vec![None; s.fields.len()];
    for g in author_groups(s) {
        for &m in &g.members {
            out[m] = Some(g.name.clone());
        }
        for i in [g.begin, g.end].into_iter().flatten() {
            out[i] = Some(g.name.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, size: u64) -> Field {
        Field::new(name, if size == 0 { "__u8[0]" } else { "u64" }, size, 8)
    }

    fn sample() -> Struct {
        Struct::new(
            "s",
            vec![
                field("base", 8),
                field("a", 8),
                field("__cacheline_group_begin__hot", 0),
                field("b", 8),
                field("c", 8),
                field("__cacheline_group_end__hot", 0),
                field("d", 8),
            ],
        )
    }

    #[test]
    fn markers_and_the_first_member_cut_segments() {
        let mut s = sample();
        assign(&mut s, Keep::default());
        let seg: Vec<u32> = s.fields.iter().map(|f| f.segment).collect();
        assert_eq!(seg, vec![0, 1, 2, 3, 3, 4, 5]);
        assert!(first_is_kept(&s));
        assign(
            &mut s,
            Keep {
                first: false,
                ..Keep::default()
            },
        );
        let seg: Vec<u32> = s.fields.iter().map(|f| f.segment).collect();
        assert_eq!(seg, vec![0, 0, 1, 2, 2, 3, 4]);
        assert!(!first_is_kept(&s));
    }

    #[test]
    fn paddings_and_line_aligned_members_are_line_breaks_not_walls() {
        let mut pad = field("_pad1_", 0);
        pad.ty = "struct cacheline_padding".into();
        let mut s = Struct::new(
            "s",
            vec![
                field("a", 8),
                field("b", 8),
                pad,
                field("c", 8),
                field("d", 8),
            ],
        );
        s.fields[4].line_break = true;
        assign(&mut s, Keep::default());
        let seg: Vec<u32> = s.fields.iter().map(|f| f.segment).collect();
        // Only the first member is a wall; the padding and `d` keep their order.
        assert_eq!(seg, vec![0, 1, 1, 1, 1]);
        assert_eq!(s.breaks, vec![2, 4]);
        // --regroup: no line breaks.
        assign(
            &mut s,
            Keep {
                line_breaks: false,
                ..Keep::default()
            },
        );
        assert!(s.breaks.is_empty());
    }

    #[test]
    fn a_released_first_member_never_crosses_a_line_break() {
        let shape = |second: Field| {
            let mut s = Struct::new("s", vec![field("f0", 8), second, field("f2", 8)]);
            assign(&mut s, Keep::default());
            release_first(&mut s);
            s.fields.iter().map(|f| f.segment).collect::<Vec<u32>>()
        };
        // Declared with the members after it: it joins them.
        assert_eq!(shape(field("f1", 8)), vec![1, 1, 1]);
        // A padding or a line-aligned member follows it: nothing to join.
        let mut pad = field("_pad1_", 0);
        pad.ty = "struct cacheline_padding".into();
        assert_eq!(shape(pad), vec![0, 1, 1]);
        let mut aligned = field("f1", 8);
        aligned.line_break = true;
        assert_eq!(shape(aligned), vec![0, 1, 1]);
        // Released before a later line break, it heads the breaks' order.
        let mut pad = field("_pad1_", 0);
        pad.ty = "struct cacheline_padding".into();
        let mut s = Struct::new("s", vec![field("f0", 8), field("f1", 8), pad]);
        assign(&mut s, Keep::default());
        release_first(&mut s);
        assert_eq!(s.breaks, vec![0, 2]);
    }

    #[test]
    fn groups_are_found_and_dissolved() {
        let mut s = sample();
        let g = author_groups(&s);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].name, "hot");
        assert_eq!((g[0].begin, g[0].end), (Some(2), Some(5)));
        assert_eq!(g[0].members, vec![3, 4]);
        let of = group_of_fields(&s);
        assert_eq!(of[3].as_deref(), Some("hot"));
        assert_eq!(of[6], None);
        let d = dissolve_groups(&mut s, Keep::default());
        assert_eq!(d.groups, vec!["hot".to_string()]);
        assert_eq!(
            d.index,
            vec![Some(0), Some(1), None, Some(2), Some(3), None, Some(4)]
        );
        assert_eq!(s.fields.len(), 5);
        let seg: Vec<u32> = s.fields.iter().map(|f| f.segment).collect();
        assert_eq!(seg, vec![0, 1, 1, 1, 1]);
        release_first(&mut s);
        assert_eq!(s.fields[0].segment, 1);
        assert!(author_groups(&s).is_empty());
    }

    #[test]
    fn a_group_that_spans_more_bytes_is_reported() {
        let s = sample();
        let before: Vec<Option<u64>> = [0, 8, 16, 16, 24, 32, 32].map(Some).to_vec();
        assert!(grown_groups(&s, &before, &before).is_empty());
        let after: Vec<Option<u64>> = [0, 8, 16, 24, 32, 40, 40].map(Some).to_vec();
        assert_eq!(
            grown_groups(&s, &before, &after),
            vec![("hot".to_string(), 16, 24)]
        );
    }

    #[test]
    fn zero_size_kinds() {
        let mut pad = field("_pad1_", 0);
        pad.ty = "struct cacheline_padding".into();
        assert_eq!(Marker::of(&pad), Some(Marker::Padding));
        assert_eq!(
            Marker::of(&field("headers_start", 0)),
            Some(Marker::ZeroSize)
        );
        assert_eq!(
            Marker::of(&field("__cacheline_group_pad__x", 0)),
            Some(Marker::GroupPad("x".into()))
        );
        assert_eq!(Marker::of(&field("a", 8)), None);
    }
}
