//! Finding the code that depends on the struct's member order, in one
//! file's tokens: positional initializers (declarations, arrays of them,
//! compound literals), ranges by offset (`offsetof(S, b) - offsetof(S, a)`,
//! a `mem*()` length that is an offset), offsets of zero-size markers,
//! build-time assertions on offsets and sizes, cache-line group
//! assertions, and BPF instructions built from offsets. Each site comes
//! with what keeps it intact ([`Need`]); designated initializers and the
//! all-zero `{ 0 }` are recorded as safe.

use super::macros::AssertMacros;
use super::members::Members;
use super::spelling::Spelling;
use super::tokens::Code;
use super::{Need, SiteKind};
use std::ops::Range;

/// A site found in one file: the token it starts at, what it is, what it
/// needs.
pub(crate) struct Found {
    pub tok: usize,
    pub kind: SiteKind,
    pub need: Need,
}

/// A place in the member order an offset expression stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Point {
    /// Where field `f` starts (`offsetof(S, f)`).
    Before(usize),
    /// Where field `f` ends (`offsetofend(S, f)`).
    After(usize),
    /// The struct's end (`sizeof(struct S)`).
    End,
    /// `sizeof(*p)` or `sizeof(v)`: the struct's end when subtracted by an
    /// offset of the struct.
    WeakEnd,
}

/// An offset expression of the struct: tokens `toks` (inclusive of the
/// closing parenthesis), the point it names.
#[derive(Clone, Debug)]
struct Atom {
    toks: Range<usize>,
    point: Point,
}

/// Most tokens an offset expression spans (`offsetof(struct s, a.b[2])`).
const MAX_ATOM_TOKENS: usize = 64;

/// Deepest array of the struct an initializer is read through.
const MAX_DIMS: usize = 8;

/// The atoms strictly inside the macro call at `i` whose `)` is `close`
/// (`atoms` is sorted by position).
fn within(atoms: &[Atom], i: usize, close: usize) -> impl Iterator<Item = &Atom> {
    let from = atoms.partition_point(|a| a.toks.start <= i);
    atoms[from..]
        .iter()
        .take_while(move |a| a.toks.start < close)
        .filter(move |a| a.toks.end <= close + 1)
}

/// Macros that assert at build time.
const ASSERTIONS: &[&str] = &[
    "BUILD_BUG_ON",
    "BUILD_BUG_ON_MSG",
    "BUILD_BUG_ON_ZERO",
    "BUILD_BUG_ON_NOT_POWER_OF_2",
    "static_assert",
    "_Static_assert",
    "ASSERT_STRUCT_OFFSET",
];

/// The kernel's cache-line group assertions.
const GROUP_MEMBER: &str = "CACHELINE_ASSERT_GROUP_MEMBER";
const GROUP_SIZE: &str = "CACHELINE_ASSERT_GROUP_SIZE";

/// Every word that asserts at build time: a macro whose body names one
/// wraps an assertion ([`AssertMacros`]).
pub(crate) fn assert_words() -> Vec<&'static str> {
    let mut w = ASSERTIONS.to_vec();
    w.extend([GROUP_MEMBER, GROUP_SIZE]);
    w
}

/// Copy and clear functions whose last argument is a length.
const MEM_CALLS: &[&str] = &[
    "memset",
    "memcpy",
    "memmove",
    "memcmp",
    "memzero_explicit",
    "__builtin_memset",
    "__builtin_memcpy",
    "unsafe_memcpy",
];

/// Context-access helpers of the BPF verifier that name members by offset.
const BPF_HELPERS: &[&str] = &["bpf_target_off", "bpf_ctx_range", "bpf_ctx_range_till"];

/// Every site of `code` (file `file` of the scan) that uses the struct
/// spelled `sp`; `macros`: the assertion macros the tree defines.
pub(crate) fn find(
    code: &Code,
    file: usize,
    sp: &Spelling,
    m: &Members,
    embedders: &[Embedder],
    macros: &AssertMacros,
) -> Vec<Found> {
    let mut out = Vec::new();
    let atoms = atoms(code, sp, m);
    // Tokens inside an assertion or a BPF macro: their offsets are judged
    // there, not as ranges.
    let mut judged: Vec<Range<usize>> = Vec::new();
    assertions(code, sp, m, &atoms, &mut judged, &mut out);
    // An assertion macro's own body is read at its uses.
    let bodies = macros.definitions(file);
    out.retain(|f| !bodies.iter().any(|b| b.contains(&f.tok)));
    judged.extend(bodies);
    macro_assertions(code, file, sp, m, macros, &mut judged, &mut out);
    bpf(code, sp, m, &atoms, &mut judged, &mut out);
    // Which tokens lie inside a judged span (a difference array: nested
    // spans cost nothing more).
    let mut depth = vec![0i64; code.len() + 1];
    for r in &judged {
        depth[r.start.min(code.len())] += 1;
        depth[r.end.min(code.len())] -= 1;
    }
    let mut inside = Vec::with_capacity(code.len());
    let mut d = 0;
    for x in &depth[..code.len()] {
        d += x;
        inside.push(d > 0);
    }
    let free: Vec<&Atom> = atoms
        .iter()
        .filter(|a| !inside.get(a.toks.start).copied().unwrap_or(false))
        .collect();
    ranges(code, m, &free, &mut out);
    offset_loads(code, m, &free, &mut out);
    initializers(code, sp, m, &mut out);
    nested(code, embedders, m, &mut out);
    out.sort_by_key(|f| f.tok);
    out
}

/// The offset expressions of the struct in `code`.
fn atoms(code: &Code, sp: &Spelling, m: &Members) -> Vec<Atom> {
    let mut out = Vec::new();
    for i in 0..code.len() {
        let word = code.at(i);
        let point_of = match word {
            "offsetof" | "__builtin_offsetof" | "offsetofend" => true,
            "sizeof" => false,
            _ => continue,
        };
        if !code.is(i + 1, "(") {
            continue;
        }
        let Some(close) = code.closing(i + 1) else {
            continue;
        };
        // A type and a member designator are short; a longer list is none.
        if close - i > MAX_ATOM_TOKENS {
            continue;
        }
        let els = code.elements(i + 1);
        let point = if point_of {
            let [ty, member] = els.as_slice() else {
                continue;
            };
            if !sp.is_exactly(code, ty.clone()) {
                continue;
            }
            let Some(f) = m.field(code.at(member.start)) else {
                continue;
            };
            if word == "offsetofend" {
                Point::After(f)
            } else {
                Point::Before(f)
            }
        } else {
            let [ty] = els.as_slice() else {
                continue;
            };
            if sp.is_exactly(code, ty.clone()) {
                Point::End
            } else if code.is(ty.start, "*") || (ty.len() == 1 && code.is_ident(ty.start)) {
                Point::WeakEnd
            } else {
                continue;
            }
        };
        out.push(Atom {
            toks: i..close + 1,
            point,
        });
    }
    out
}

/// Build-time assertions: an offset named pins its member; the size named
/// must not change; a cache-line group assertion is kept by the group's
/// markers.
fn assertions(
    code: &Code,
    sp: &Spelling,
    m: &Members,
    atoms: &[Atom],
    judged: &mut Vec<Range<usize>>,
    out: &mut Vec<Found>,
) {
    for i in 0..code.len() {
        let word = code.at(i);
        let group = word == GROUP_MEMBER || word == GROUP_SIZE;
        if !(group || ASSERTIONS.contains(&word)) || !code.is(i + 1, "(") {
            continue;
        }
        let Some(close) = code.closing(i + 1) else {
            continue;
        };
        if group {
            let els = code.elements(i + 1);
            let [ty, g, third] = els.as_slice() else {
                continue;
            };
            if !sp.is_exactly(code, ty.clone()) {
                continue;
            }
            let name = code.at(g.start).to_string();
            let need = if word == GROUP_SIZE {
                let bytes = (third.len() == 1)
                    .then(|| parse_number(code.at(third.start)))
                    .flatten();
                Need::GroupSize { group: name, bytes }
            } else {
                Need::Group { group: name }
            };
            judged.push(i..close + 1);
            out.push(Found {
                tok: i,
                kind: SiteKind::GroupAssertion,
                need,
            });
            continue;
        }
        let inside: Vec<&Atom> = within(atoms, i, close).collect();
        if inside.is_empty() {
            continue;
        }
        judged.push(i..close + 1);
        let mut pins: Vec<usize> = inside
            .iter()
            .filter_map(|a| match a.point {
                Point::Before(f) | Point::After(f) => Some(f),
                _ => None,
            })
            .collect();
        pins.sort_unstable();
        pins.dedup();
        if !pins.is_empty() {
            out.push(Found {
                tok: i,
                kind: SiteKind::BuildAssertion,
                need: Need::Pin(pins.iter().map(|&f| m.names[f].clone()).collect()),
            });
        }
        if inside.iter().any(|a| a.point == Point::End) {
            out.push(Found {
                tok: i,
                kind: SiteKind::SizeAssertion,
                need: Need::Size,
            });
        }
    }
}

/// Uses of a macro that wraps a build assertion (`FOLIO_MATCH(lru, lru)`):
/// expanded one level, the assertion's offsets and sizes are read as if
/// written out, at the use.
fn macro_assertions(
    code: &Code,
    file: usize,
    sp: &Spelling,
    m: &Members,
    macros: &AssertMacros,
    judged: &mut Vec<Range<usize>>,
    out: &mut Vec<Found>,
) {
    if macros.is_empty() {
        return;
    }
    for i in 0..code.len() {
        if !code.is_ident(i) {
            continue;
        }
        let Some(text) = macros.expand(code, file, i) else {
            continue;
        };
        let e = Code::new(&text);
        let mut found = Vec::new();
        assertions(&e, sp, m, &atoms(&e, sp, m), &mut Vec::new(), &mut found);
        if found.is_empty() {
            continue;
        }
        if let Some(close) = code.closing(i + 1) {
            judged.push(i..close + 1);
        }
        out.extend(found.into_iter().map(|f| Found { tok: i, ..f }));
    }
}

/// BPF instructions built from an offset of the struct (`BPF_LDX_MEM(..,
/// offsetof(struct S, m))`) and the verifier's context-access helpers
/// naming it (`bpf_ctx_range(struct S, m)`). An offset of one member is a
/// name: the compiler computes it again after any reorder. What depends
/// on the members' relative positions is kept or refused: an offset past a
/// member (`offsetofend`) or a sum this pass cannot bound, a range over
/// two members (`bpf_ctx_range_till(S, a, b)`), a load wider than the
/// member; the offset of a zero-size marker (masks over the bit-fields
/// after it) keeps the member after the marker next to it.
fn bpf(
    code: &Code,
    sp: &Spelling,
    m: &Members,
    atoms: &[Atom],
    judged: &mut Vec<Range<usize>>,
    out: &mut Vec<Found>,
) {
    for i in 0..code.len() {
        let word = code.at(i);
        let insn = word.starts_with("BPF_") && code.is_ident(i);
        if !(insn || BPF_HELPERS.contains(&word)) || !code.is(i + 1, "(") {
            continue;
        }
        // A macro's definition is no use (its parameters are no type).
        if i > 0 && code.is(i - 1, "define") {
            continue;
        }
        let Some(close) = code.closing(i + 1) else {
            continue;
        };
        let els = code.elements(i + 1);
        if !insn {
            if !els
                .first()
                .is_some_and(|ty| sp.is_exactly(code, ty.clone()))
            {
                continue;
            }
            judged.push(i..close + 1);
            let field = |k: usize| els.get(k).and_then(|el| m.field(code.at(el.start)));
            let need = match (word, field(1), field(2)) {
                ("bpf_ctx_range_till", Some(a), Some(b)) if a != b => Need::Refuse(format!(
                    "`{word}` accepts every offset from `{}` to the end of `{}`: the range holds \
                     whatever the order puts between them",
                    m.names[a], m.names[b]
                )),
                ("bpf_ctx_range_till", Some(_), Some(_)) => Need::None,
                ("bpf_ctx_range_till", _, _) => Need::Refuse(format!(
                    "`{word}` names a member this pass does not find in the struct: the range \
                     may span members"
                )),
                // One member, by the helper's definition.
                _ => Need::None,
            };
            out.push(Found {
                tok: i,
                kind: SiteKind::BpfOffset,
                need,
            });
            continue;
        }
        let inside: Vec<&Atom> = within(atoms, i, close)
            .filter(|a| matches!(a.point, Point::Before(_) | Point::After(_)))
            .collect();
        if inside.is_empty() {
            continue;
        }
        judged.push(i..close + 1);
        // The access's width: the size operand of a load or a store.
        let width = (word.contains("_MEM") || word == "BPF_ATOMIC_OP")
            .then(|| {
                els.first()
                    .and_then(|el| bpf_width(code, sp, m, el.clone()))
            })
            .flatten();
        let mut needs: Vec<(SiteKind, Need)> = Vec::new();
        for a in inside {
            let el = els
                .iter()
                .find(|el| el.start <= a.toks.start && a.toks.end <= el.end)
                .cloned()
                .unwrap_or(a.toks.clone());
            let need = offset_use(code, sp, m, a, el, width, word);
            if !needs.contains(&need) {
                needs.push(need);
            }
        }
        for (kind, need) in needs {
            out.push(Found { tok: i, kind, need });
        }
    }
}

/// What an offset of the struct at atom `a`, the operand `el` of BPF
/// instruction `word` whose access is `width` bytes wide, needs.
fn offset_use(
    code: &Code,
    sp: &Spelling,
    m: &Members,
    a: &Atom,
    el: Range<usize>,
    width: Option<u64>,
    word: &str,
) -> (SiteKind, Need) {
    let refuse = |why: String| (SiteKind::BpfOffset, Need::Refuse(why));
    let f = match a.point {
        Point::Before(f) => f,
        Point::After(f) => {
            return refuse(format!(
                "`{word}` uses the offset where `{}` ends, which is where the next member \
                 starts: that depends on the order",
                m.names[f]
            ))
        }
        _ => return (SiteKind::BpfOffset, Need::None),
    };
    if m.plain_marker.get(f).copied().unwrap_or(false) && f + 1 < m.len() {
        // The bytes after the marker are read (masks over its bit-fields).
        return (SiteKind::MarkerOffset, Need::Run(m.span(f..f + 2)));
    }
    let Some(extra) = addend(code, sp, a, el) else {
        return refuse(format!(
            "`{word}` adds to the offset of `{}` what this pass cannot bound: it may reach the \
             members after it",
            m.names[f]
        ));
    };
    let size = m.sizes.get(f).copied().unwrap_or(0);
    match width {
        Some(w) if size > 0 && extra + w > size => {
            refuse(format!(
            "`{word}` accesses {w} bytes at `{}`{}, which has {size}: it reads the member after it",
            m.names[f],
            if extra > 0 { format!(" + {extra}") } else { String::new() }
        ))
        }
        _ if size > 0 && extra >= size => refuse(format!(
            "`{word}` uses the offset of `{}` + {extra}, past its {size} bytes",
            m.names[f]
        )),
        _ => (SiteKind::BpfOffset, Need::None),
    }
}

/// The constant the operand `el` adds to the offset atom `a` holds: the
/// other terms of a sum are numbers, or offsets and member sizes inside
/// another type (which lie within the member: `offsetof(struct S, m) +
/// offsetof(struct T, x)` and `offsetof(struct tcp_sock, rtt_min) +
/// sizeof_field(struct minmax_sample, t)` count as 0). `None`: a term
/// this pass cannot bound (one of this struct's own: a second member), or
/// a difference.
fn addend(code: &Code, sp: &Spelling, a: &Atom, el: Range<usize>) -> Option<u64> {
    // The operand without enclosing parentheses.
    let mut el = el;
    while code.is(el.start, "(") && code.closing(el.start) == Some(el.end - 1) && el.len() > 2 {
        el = el.start + 1..el.end - 1;
    }
    let mut sum = 0u64;
    let mut t = el.start;
    let mut first = true;
    while t < el.end {
        if !first {
            if !code.is(t, "+") {
                return None;
            }
            t += 1;
        }
        first = false;
        if t == a.toks.start {
            t = a.toks.end;
            continue;
        }
        let word = code.at(t);
        if let Some(n) = parse_number(word) {
            sum = sum.checked_add(n)?;
            t += 1;
            continue;
        }
        let inside_other = matches!(
            word,
            "offsetof" | "__builtin_offsetof" | "sizeof_field" | "FIELD_SIZEOF"
        );
        if inside_other && code.is(t + 1, "(") {
            let close = code.closing(t + 1)?;
            let els = code.elements(t + 1);
            // An offset inside another type; another of this struct's is a
            // second member.
            if els.first().is_none_or(|ty| sp.is_exactly(code, ty.clone())) {
                return None;
            }
            t = close + 1;
            continue;
        }
        return None;
    }
    Some(sum)
}

/// The width of a BPF access whose size operand is `el`: `BPF_B` ..
/// `BPF_DW`, `BPF_FIELD_SIZEOF(struct S, m)` (the member's),
/// `BPF_SIZEOF(T)` of a scalar type. `None`: a width this pass does not
/// know (the program's own, `BPF_SIZE(insn->code)`, which the verifier
/// bounds by the context field).
fn bpf_width(code: &Code, sp: &Spelling, m: &Members, el: Range<usize>) -> Option<u64> {
    let w = code.at(el.start);
    if el.len() == 1 {
        return match w {
            "BPF_B" => Some(1),
            "BPF_H" => Some(2),
            "BPF_W" => Some(4),
            "BPF_DW" => Some(8),
            _ => None,
        };
    }
    if !code.is(el.start + 1, "(") || code.closing(el.start + 1) != Some(el.end - 1) {
        return None;
    }
    let els = code.elements(el.start + 1);
    match (w, els.as_slice()) {
        ("BPF_FIELD_SIZEOF", [ty, member]) if sp.is_exactly(code, ty.clone()) => {
            m.field(code.at(member.start)).map(|f| m.sizes[f])
        }
        ("BPF_SIZEOF", [ty]) => scalar_size(code, ty.clone()),
        _ => None,
    }
}

/// The size of a scalar type spelled by tokens `ty` (`u32`, `void *`,
/// `unsigned long`); `None` for any other.
fn scalar_size(code: &Code, ty: Range<usize>) -> Option<u64> {
    let words: Vec<&str> = ty
        .clone()
        .map(|t| code.at(t))
        .filter(|w| !matches!(*w, "const" | "volatile" | "unsigned" | "signed"))
        .collect();
    match words.as_slice() {
        [.., "*"] => Some(8),
        [] | ["int"] => Some(4),
        [one] => match *one {
            "char" | "u8" | "s8" | "__u8" | "__s8" | "bool" | "_Bool" => Some(1),
            "short" | "u16" | "s16" | "__u16" | "__s16" | "__be16" | "__le16" => Some(2),
            "u32" | "s32" | "__u32" | "__s32" | "__be32" | "__le32" | "__wsum" => Some(4),
            "long" | "u64" | "s64" | "__u64" | "__s64" | "__be64" | "__le64" | "size_t" => Some(8),
            _ => None,
        },
        ["short", "int"] => Some(2),
        ["long", "long"] | ["long", "int"] | ["long", "long", "int"] => Some(8),
        _ => None,
    }
}

/// Loads through a cast at an offset of the struct: `*(T *)((char *)p +
/// offsetof(struct S, m))` reads `sizeof(T)` bytes at `m`, which is a name
/// as long as `T` is no wider than the member; a wider one reads the
/// member after it. A GNU case range `case offsetof(S, a) ...
/// offsetofend(S, b) - 1:` over two members holds whatever lies between
/// them.
fn offset_loads(code: &Code, m: &Members, atoms: &[&Atom], out: &mut Vec<Found>) {
    let by_start: std::collections::HashMap<usize, &Atom> =
        atoms.iter().map(|a| (a.toks.start, *a)).collect();
    for a in atoms {
        let Point::Before(f) = a.point else {
            continue;
        };
        // A case range from this offset.
        if code.is(a.toks.end, "...") {
            if let Some(b) = by_start.get(&(a.toks.end + 1)) {
                let g = match b.point {
                    Point::Before(g) | Point::After(g) => g,
                    _ => continue,
                };
                let need = if g == f {
                    Need::None
                } else {
                    Need::Refuse(format!(
                        "the case range runs from `{}` to `{}`: it holds whatever the order puts \
                         between them",
                        m.names[f.min(g)],
                        m.names[f.max(g)]
                    ))
                };
                out.push(Found {
                    tok: a.toks.start,
                    kind: SiteKind::OffsetRange,
                    need,
                });
            }
            continue;
        }
        // `( ( char * ) p + ATOM )` under `* ( T * )`.
        if !code.is(a.toks.start.wrapping_sub(1), "+") || !code.is(a.toks.end, ")") {
            continue;
        }
        let close = a.toks.end;
        let Some(open) = (a.toks.start.saturating_sub(MAX_ATOM_TOKENS)..a.toks.start)
            .rev()
            .find(|&o| code.is(o, "(") && code.closing(o) == Some(close))
        else {
            continue;
        };
        if !(code.is(open.wrapping_sub(1), ")") && code.is(open.wrapping_sub(2), "*")) {
            continue;
        }
        let cast_close = open - 1;
        let Some(cast_open) = (cast_close.saturating_sub(8)..cast_close)
            .rev()
            .find(|&o| code.is(o, "(") && code.closing(o) == Some(cast_close))
        else {
            continue;
        };
        if !code.is(cast_open.wrapping_sub(1), "*") {
            continue;
        }
        // `T *` in the cast: the pointee's tokens.
        let Some(width) = scalar_size(code, cast_open + 1..cast_close - 1) else {
            continue;
        };
        let size = m.sizes.get(f).copied().unwrap_or(0);
        if size == 0 {
            continue;
        }
        let need = if width > size {
            Need::Refuse(format!(
                "the load reads {width} bytes at `{}`, which has {size}: it reads the member \
                 after it",
                m.names[f]
            ))
        } else {
            Need::None
        };
        out.push(Found {
            tok: cast_open.wrapping_sub(1),
            kind: SiteKind::OffsetLoad,
            need,
        });
    }
}

/// Ranges by offset: `A - B` of two offsets of the struct, and a `mem*()`
/// length that is one offset (a range from the struct's start); an offset
/// of a zero-size marker alone stands for the bytes after it.
fn ranges(code: &Code, m: &Members, atoms: &[&Atom], out: &mut Vec<Found>) {
    let n = m.len();
    let mut in_range = vec![false; atoms.len()];
    // Atoms by their first token and by the token after their last.
    let by_start: std::collections::HashMap<usize, usize> = atoms
        .iter()
        .enumerate()
        .map(|(k, a)| (a.toks.start, k))
        .collect();
    let by_end: std::collections::HashMap<usize, usize> = atoms
        .iter()
        .enumerate()
        .map(|(k, a)| (a.toks.end, k))
        .collect();
    for (bi, b) in atoms.iter().enumerate() {
        let minus = b.toks.start.wrapping_sub(1);
        if !code.is(minus, "-") {
            continue;
        }
        // `A - B`, or `(A) - B`.
        let paren = minus.wrapping_sub(1);
        let ai = by_end.get(&minus).copied().or_else(|| {
            code.is(paren, ")")
                .then(|| by_end.get(&paren).copied())
                .flatten()
        });
        let Some(ai) = ai else {
            continue;
        };
        let (a, b_point) = (atoms[ai], b.point);
        let end = match a.point {
            Point::WeakEnd | Point::End => Point::End,
            p => p,
        };
        if matches!(b_point, Point::End | Point::WeakEnd) {
            continue;
        }
        if let Some(need) = range_need(m, b_point, end) {
            in_range[ai] = true;
            in_range[bi] = true;
            out.push(Found {
                tok: a.toks.start,
                kind: SiteKind::OffsetRange,
                need,
            });
        }
    }
    // A length that is one offset: from the start of the struct.
    for i in 0..code.len() {
        if !MEM_CALLS.contains(&code.at(i)) || !code.is(i + 1, "(") {
            continue;
        }
        let els = code.elements(i + 1);
        let Some(len) = els.last().filter(|_| els.len() >= 3) else {
            continue;
        };
        let Some(k) = by_start
            .get(&len.start)
            .copied()
            .filter(|&k| atoms[k].toks == *len)
        else {
            continue;
        };
        if in_range[k] || !matches!(atoms[k].point, Point::Before(_) | Point::After(_)) {
            continue;
        }
        if let Some(need) = range_need(m, Point::Before(0), atoms[k].point) {
            in_range[k] = true;
            out.push(Found {
                tok: i,
                kind: SiteKind::OffsetRange,
                need,
            });
        }
    }
    // The offset of a zero-size marker: code reads what follows it.
    for (k, a) in atoms.iter().enumerate() {
        let Point::Before(f) = a.point else {
            continue;
        };
        if in_range[k] || !m.plain_marker[f] || f + 1 >= n {
            continue;
        }
        // `len - offsetof(S, marker)`: the bytes from the marker to an end
        // this pass cannot name (an object size), taken as the struct's.
        if code.is(a.toks.start.wrapping_sub(1), "-") {
            if let Some(need) = range_need(m, a.point, Point::End) {
                out.push(Found {
                    tok: a.toks.start,
                    kind: SiteKind::OffsetRange,
                    need,
                });
            }
            continue;
        }
        out.push(Found {
            tok: a.toks.start,
            kind: SiteKind::MarkerOffset,
            need: Need::Run(m.span(f..f + 2)),
        });
    }
}

/// What keeps the bytes from `from` to `to` holding the same members: the
/// members from the range's first to the one its end names stay together
/// in order (a range at the struct's start or end stays there); a range
/// between two zero-size walls is kept by them.
fn range_need(m: &Members, from: Point, to: Point) -> Option<Need> {
    let n = m.len();
    let first = match from {
        Point::Before(f) => f,
        Point::After(f) => f + 1,
        _ => return None,
    };
    // The last field the range holds or ends at (whose start is its end).
    let (last, at_end) = match to {
        Point::Before(f) => (f, false),
        Point::After(f) => (f, false),
        Point::End | Point::WeakEnd => (n.checked_sub(1)?, true),
    };
    let (first, last) = (first.min(last), first.max(last));
    if last >= n {
        return None;
    }
    let walled = |f: usize| m.wall.get(f).copied().unwrap_or(false);
    let starts_walled = first == 0 || walled(first);
    let ends_walled = at_end || (matches!(to, Point::Before(_)) && walled(last));
    if starts_walled && ends_walled {
        return Some(Need::KeptBy(format!(
            "the zero-size walls around `{}`..`{}`",
            m.names[first], m.names[last]
        )));
    }
    let names = m.span(first..last + 1);
    Some(if first == 0 {
        Need::First(names)
    } else if at_end {
        Need::Last(names)
    } else {
        Need::Run(names)
    })
}

/// Initializers of the struct: declarations (`struct S v = {..}`, arrays
/// of them, several declarators) and compound literals (`(struct S){..}`,
/// `(struct S[]){..}`).
fn initializers(code: &Code, sp: &Spelling, m: &Members, out: &mut Vec<Found>) {
    each_initializer(code, sp, &mut |open, dims, kind, site| {
        initializer(code, m, open, dims, kind, site, out)
    });
}

/// Calls `on(open, dims, kind, site)` for every initializer of the type
/// `sp` spells: the brace `open` initializes one (`dims` 0) or an array of
/// `dims` dimensions of them, found at token `site`.
fn each_initializer(code: &Code, sp: &Spelling, on: &mut dyn FnMut(usize, usize, SiteKind, usize)) {
    each_typed_initializer(
        code,
        &|c, i| sp.at(c, i).map(|e| (e, 0)),
        &mut |open, dims, kind, site, _| on(open, dims, kind, site),
    );
}

/// Whether the tokens at an index spell one of several types: where the
/// type ends, and which one.
type TypeAt<'a> = dyn Fn(&Code, usize) -> Option<(usize, usize)> + 'a;

/// [`each_initializer`] for several types at once: `ty(code, i)` says
/// whether the tokens at `i` spell one of them (where the type ends, and
/// which), and `on` gets which.
fn each_typed_initializer(
    code: &Code,
    ty: &TypeAt,
    on: &mut dyn FnMut(usize, usize, SiteKind, usize, usize),
) {
    let mut i = 0;
    while i < code.len() {
        let Some((after, which)) = ty(code, i) else {
            i += 1;
            continue;
        };
        let mut on = |open, dims, kind, site| on(open, dims, kind, site, which);
        // Not a type in these places.
        let prev = if i == 0 { "" } else { code.at(i - 1) };
        if matches!(prev, "sizeof" | "offsetof" | "offsetofend" | "->" | ".") {
            i = after;
            continue;
        }
        if prev == "(" {
            // A compound literal: `( TYPE [dims] ) {`.
            let mut j = after;
            let mut dims = 0;
            while code.is(j, "[") {
                match code.closing(j) {
                    Some(c) => j = c + 1,
                    None => break,
                }
                dims = (dims + 1).min(MAX_DIMS);
            }
            if code.is(j, ")") && code.is(j + 1, "{") {
                let kind = if dims > 0 {
                    SiteKind::ArrayOfInitializers
                } else {
                    SiteKind::CompoundLiteral
                };
                on(j + 1, dims, kind, i);
            }
            i = after;
            continue;
        }
        i = declarators(code, after, i, &mut on);
    }
}

/// The declarators after a type at `start` (the type began at `ty`):
/// each `name [dims] attributes = { ... }` is an initializer. Returns where
/// the scan goes on.
fn declarators(
    code: &Code,
    start: usize,
    ty: usize,
    on: &mut dyn FnMut(usize, usize, SiteKind, usize),
) -> usize {
    let mut j = start;
    // A definition `struct S { ... }` or a forward declaration.
    if code.is(j, "{") || code.is(j, ";") {
        return j + 1;
    }
    loop {
        while matches!(code.at(j), "const" | "volatile" | "restrict") {
            j += 1;
        }
        let pointer = code.is(j, "*");
        if !pointer && !code.is_ident(j) {
            return j.max(start);
        }
        let mut k = j;
        if pointer {
            while code.is(k, "*") || matches!(code.at(k), "const" | "volatile" | "restrict") {
                k += 1;
            }
        }
        if !code.is_ident(k) {
            return k.max(start);
        }
        k += 1;
        if code.is(k, "(") && !pointer {
            // A function returning the struct.
            return k;
        }
        let mut dims = 0;
        while code.is(k, "[") {
            match code.closing(k) {
                Some(c) => k = c + 1,
                None => return k,
            }
            dims = (dims + 1).min(MAX_DIMS);
        }
        // Attributes after the name: `__initdata`, `__aligned(8)`.
        while code.is_ident(k) {
            k += 1;
            if code.is(k, "(") {
                match code.closing(k) {
                    Some(c) => k = c + 1,
                    None => return k,
                }
            }
        }
        if code.is(k, "=") {
            if code.is(k + 1, "{") && !pointer {
                let kind = if dims > 0 {
                    SiteKind::ArrayOfInitializers
                } else {
                    SiteKind::PositionalInitializer
                };
                on(k + 1, dims, kind, ty);
            }
            // Past the initializer: to the next top-level `,` or `;`.
            k += 1;
            let mut depth = 0usize;
            while k < code.len() {
                match code.at(k) {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" => match depth.checked_sub(1) {
                        Some(d) => depth = d,
                        None => return k,
                    },
                    "," | ";" if depth == 0 => break,
                    _ => {}
                }
                k += 1;
            }
        }
        if code.is(k, ",") {
            j = k + 1;
            continue;
        }
        return k.max(start);
    }
}

/// The initializer of the struct (or of an array of `dims` dimensions of
/// it) at the brace `open`, found at token `site`.
fn initializer(
    code: &Code,
    m: &Members,
    open: usize,
    dims: usize,
    kind: SiteKind,
    site: usize,
    out: &mut Vec<Found>,
) {
    let mut needs: Vec<Need> = Vec::new();
    struct_inits(code, m, open, dims, &mut needs);
    let positional: Vec<Need> = needs
        .into_iter()
        .filter(|n| !matches!(n, Need::None))
        .collect();
    if positional.is_empty() {
        out.push(Found {
            tok: site,
            kind: if is_zero_init(code, open) {
                SiteKind::ZeroInitializer
            } else {
                SiteKind::DesignatedInitializer
            },
            need: Need::None,
        });
    }
    for need in dedup(positional) {
        out.push(Found {
            tok: site,
            kind,
            need,
        });
    }
}

fn dedup(mut v: Vec<Need>) -> Vec<Need> {
    let mut out: Vec<Need> = Vec::new();
    v.drain(..).for_each(|n| {
        if !out.contains(&n) {
            out.push(n)
        }
    });
    out
}

/// `{ }` or `{ 0 }`: every member zero, whatever the order.
fn is_zero_init(code: &Code, open: usize) -> bool {
    let els = code.elements(open);
    els.is_empty() || (els.len() == 1 && els[0].len() == 1 && code.is(els[0].start, "0"))
}

/// What the struct initializers under brace `open` need: at `dims` 0 the
/// brace initializes one struct, deeper it holds arrays of them.
fn struct_inits(code: &Code, m: &Members, open: usize, dims: usize, needs: &mut Vec<Need>) {
    let n = m.len();
    if n == 0 {
        return;
    }
    let els = code.elements(open);
    if dims > 0 {
        let mut flat = 0;
        for el in &els {
            // `[N] = { ... }` or `{ ... }`.
            let mut v = el.start;
            if code.is(v, "[") {
                match code.closing(v) {
                    Some(c) if code.is(c + 1, "=") => v = c + 2,
                    _ => continue,
                }
            }
            if code.is(v, "{") {
                struct_inits(code, m, v, dims - 1, needs);
            } else {
                flat += 1;
            }
        }
        // Braces elided: the values fill the structs member after member.
        if flat > 0 {
            needs.push(Need::First(m.span(0..flat.min(n))));
        }
        return;
    }
    if is_zero_init(code, open) {
        needs.push(Need::None);
        return;
    }
    // `cur`: the member the next positional value initializes; `from`: the
    // designated member a run of positional values follows.
    let mut cur = 0usize;
    let mut from: Option<usize> = None;
    let mut prefix = 0usize;
    let mut any = false;
    for el in &els {
        let t = el.start;
        let designated = if code.is(t, ".") && code.is_ident(t + 1) {
            Some(code.at(t + 1))
        } else if code.is_ident(t) && code.is(t + 1, ":") {
            // The old GNU spelling `member: value`.
            Some(code.at(t))
        } else {
            None
        };
        match designated {
            Some(name) => match m.field(name) {
                Some(f) => {
                    from = Some(f);
                    cur = f + 1;
                }
                None => {
                    // A member the model does not know: whatever follows
                    // positionally cannot be placed; keep the whole order.
                    from = None;
                    cur = n;
                }
            },
            None if code.is(t, "[") => {}
            None => {
                any = true;
                match from {
                    None => prefix = prefix.max((cur + 1).min(n)),
                    Some(d) => needs.push(Need::Run(m.span(d..(cur + 1).min(n)))),
                }
                cur += 1;
            }
        }
    }
    if prefix > 0 {
        needs.push(Need::First(m.span(0..prefix)));
    } else if !any {
        needs.push(Need::None);
    }
}

fn parse_number(s: &str) -> Option<u64> {
    let s = s.trim_end_matches(['u', 'U', 'l', 'L']);
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// A struct that embeds the struct (not by pointer): its members' names in
/// declaration order (`None`: an unnamed one), and where the struct is
/// among them (index, array dimensions).
#[derive(Clone, Debug)]
pub(crate) struct Embedder {
    pub spelling: Spelling,
    pub members: Vec<Option<String>>,
    pub embeds: Vec<(usize, usize)>,
}

/// The structs `code` defines that embed the struct `sp` spells.
pub(crate) fn embedders(code: &Code, sp: &Spelling) -> Vec<Embedder> {
    let mut out = Vec::new();
    for i in 0..code.len() {
        if !(code.is(i, "struct") && code.is_ident(i + 1) && code.is(i + 2, "{")) {
            continue;
        }
        if code.is(i + 1, &sp.tag) {
            continue;
        }
        let Some(close) = code.closing(i + 2) else {
            continue;
        };
        let mut members = Vec::new();
        let mut embeds = Vec::new();
        // The declarations of the body, at its top level.
        let mut start = i + 3;
        let mut k = start;
        while k < close {
            match code.at(k) {
                "(" | "[" | "{" => {
                    k = code.closing(k).map_or(close, |c| c + 1);
                    continue;
                }
                ";" => {
                    declaration(code, sp, start..k, &mut members, &mut embeds);
                    start = k + 1;
                }
                _ => {}
            }
            k += 1;
        }
        if !embeds.is_empty() {
            out.push(Embedder {
                spelling: Spelling::new(code.at(i + 1)),
                members,
                embeds,
            });
        }
    }
    out
}

/// One member declaration `decl` of an embedding struct: its declarators'
/// names, and those of the struct `sp` spells.
fn declaration(
    code: &Code,
    sp: &Spelling,
    decl: Range<usize>,
    members: &mut Vec<Option<String>>,
    embeds: &mut Vec<(usize, usize)>,
) {
    if decl.is_empty() {
        return;
    }
    let mut t = decl.start;
    while matches!(code.at(t), "const" | "volatile") {
        t += 1;
    }
    let of_struct = sp.at(code, t).filter(|&e| !code.is(e, "{"));
    // An aggregate member declared in place: one member (or its declarators).
    let body_end = (matches!(code.at(t), "struct" | "union"))
        .then(|| {
            let b = if code.is(t + 1, "{") { t + 1 } else { t + 2 };
            code.is(b, "{").then(|| code.closing(b)).flatten()
        })
        .flatten();
    let from = match (of_struct, body_end) {
        (Some(e), _) => e,
        (None, Some(c)) => c + 1,
        (None, None) => t,
    };
    if from >= decl.end {
        members.push(None);
        return;
    }
    // Split the declarators at top-level commas.
    let mut parts = Vec::new();
    let mut s = from;
    let mut k = from;
    while k < decl.end {
        match code.at(k) {
            "(" | "[" | "{" => {
                k = code.closing(k).map_or(decl.end, |c| c + 1);
                continue;
            }
            "," => {
                parts.push(s..k);
                s = k + 1;
            }
            _ => {}
        }
        k += 1;
    }
    parts.push(s..decl.end);
    for p in parts {
        let pointer = code.is(p.start, "*") || (code.is(p.start, "(") && code.is(p.start + 1, "*"));
        let name = (p.start..p.end)
            .take_while(|&j| !matches!(code.at(j), "[" | ":" | "="))
            .filter(|&j| code.is_ident(j))
            .last()
            .or_else(|| {
                (code.is(p.start, "(") && code.is(p.start + 1, "*")).then_some(p.start + 2)
            });
        let Some(name) = name else {
            continue;
        };
        let dims = (p.start..p.end)
            .filter(|&j| code.is(j, "["))
            .count()
            .min(MAX_DIMS);
        if of_struct.is_some() && !pointer {
            embeds.push((members.len(), dims));
        }
        members.push(Some(code.at(name).to_string()));
    }
}

/// Initializers of a struct that embeds the struct: the braces they give
/// the embedded member (by position or by `.member`) are the struct's.
fn nested(code: &Code, embedders: &[Embedder], m: &Members, out: &mut Vec<Found>) {
    if embedders.is_empty() {
        return;
    }
    // One pass for all of them: a tag names its embedder.
    let by_tag: std::collections::HashMap<&str, usize> = embedders
        .iter()
        .enumerate()
        .map(|(k, e)| (e.spelling.tag.as_str(), k))
        .collect();
    let ty = |c: &Code, mut i: usize| {
        while matches!(c.at(i), "const" | "volatile") {
            i += 1;
        }
        (c.is(i, "struct"))
            .then(|| by_tag.get(c.at(i + 1)).map(|&k| (i + 2, k)))
            .flatten()
    };
    let mut found: Vec<(usize, usize, usize)> = Vec::new();
    each_typed_initializer(code, &ty, &mut |open, dims, _, site, k| {
        outer_inits(code, &embedders[k], open, dims, site, &mut found);
    });
    for (open, dims, site) in found {
        initializer(code, m, open, dims, SiteKind::NestedInitializer, site, out);
    }
}

/// The braces under `open` (an initializer of the embedder, or an array
/// of `dims` dimensions of them) that initialize the embedded struct:
/// `(brace, dimensions, site)`.
fn outer_inits(
    code: &Code,
    e: &Embedder,
    open: usize,
    dims: usize,
    site: usize,
    found: &mut Vec<(usize, usize, usize)>,
) {
    let els = code.elements(open);
    if dims > 0 {
        for el in &els {
            let mut v = el.start;
            if code.is(v, "[") {
                match code.closing(v) {
                    Some(c) if code.is(c + 1, "=") => v = c + 2,
                    _ => continue,
                }
            }
            if code.is(v, "{") {
                outer_inits(code, e, v, dims - 1, site, found);
            }
        }
        return;
    }
    let mut cur = 0usize;
    for el in &els {
        let mut v = el.start;
        if code.is(v, ".") && code.is_ident(v + 1) {
            let name = code.at(v + 1);
            cur = e
                .members
                .iter()
                .position(|n| n.as_deref() == Some(name))
                .unwrap_or(usize::MAX);
            // `.member = value`; `.member.x = ...` names inside it: no brace of ours.
            if !code.is(v + 2, "=") {
                cur = cur.saturating_add(1);
                continue;
            }
            v += 3;
        }
        if let Some(&(_, d)) = e.embeds.iter().find(|(i, _)| *i == cur) {
            if code.is(v, "{") {
                found.push((v, d, site));
            }
        }
        cur = cur.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Field, Placement, Struct};

    /// `struct s { long a; long b; char mark[0]; long c; int d; }`.
    fn members() -> Members {
        let mut fields = Vec::new();
        let mut off = 0;
        for (name, size) in [("a", 8), ("b", 8), ("mark", 0), ("c", 8), ("d", 4)] {
            let ty = match size {
                0 => "char[0]",
                4 => "int",
                _ => "long",
            };
            let mut f = Field::new(name, ty, size, if size == 0 { 1 } else { size });
            f.original_offset = Some(off);
            off += size;
            fields.push(f);
        }
        let mut s = Struct::new("s", fields);
        crate::segments::assign(&mut s, crate::segments::Keep::default());
        let declared = crate::layout::Layout::declared(&s, 32, 8, 64, Placement::Aligned).unwrap();
        Members::new(&s, &declared, &crate::access::MemberNames::new())
    }

    fn needs(src: &str) -> Vec<(SiteKind, Need)> {
        let code = Code::new(src);
        let mut sp = Spelling::new("s");
        sp.learn_typedefs(&code);
        let mut m = members();
        m.learn_macros(&code);
        let e = embedders(&code, &sp);
        let mut macros = AssertMacros::default();
        macros.learn(&code, 0, &assert_words());
        find(&code, 0, &sp, &m, &e, &macros)
            .into_iter()
            .map(|f| (f.kind, f.need))
            .collect()
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn declarators_pointers_and_functions() {
        // A pointer, then a real one.
        let n = needs("struct s *p = &x, v = { 1, 2 };");
        assert_eq!(
            n,
            [(
                SiteKind::PositionalInitializer,
                Need::First(names(&["a", "b"]))
            )]
        );
        // A function returning the struct: its body's literal is the site.
        let n = needs("struct s f(void) { return (struct s){ 0 }; }");
        assert_eq!(n, [(SiteKind::ZeroInitializer, Need::None)]);
        // A struct copy is no initializer list.
        assert!(needs("struct s v = *p;").is_empty());
    }

    #[test]
    fn elided_braces_and_old_designators_are_positional_enough() {
        // Braces elided over an array of structs: the values fill members in order.
        let n = needs("struct s t[] = { 1, 2, 3 };");
        assert_eq!(
            n,
            [(
                SiteKind::ArrayOfInitializers,
                Need::First(names(&["a", "b", "mark"]))
            )]
        );
        // `b: 1, 2`: the old GNU designator, then a value for the member after it.
        let n = needs("struct s v = { b: 1, 2 };");
        assert_eq!(
            n,
            [(
                SiteKind::PositionalInitializer,
                Need::Run(names(&["b", "mark"]))
            )]
        );
    }

    #[test]
    fn ranges_by_offset_and_what_keeps_them() {
        let n = needs("memcpy(d, s, sizeof(*d) - offsetof(struct s, c));");
        assert_eq!(n, [(SiteKind::OffsetRange, Need::Last(names(&["c", "d"])))]);
        let n = needs("n = offsetofend(struct s, c) - offsetof(struct s, b);");
        assert_eq!(
            n,
            [(SiteKind::OffsetRange, Need::Run(names(&["b", "mark", "c"])))]
        );
        // From the marker (a wall) to the end: kept by the walls.
        let n = needs("len = obj_size - offsetof(struct s, mark);");
        assert!(
            matches!(&n[..], [(SiteKind::OffsetRange, Need::KeptBy(_))]),
            "{n:?}"
        );
        // The marker alone: what follows it stays next to it.
        let n = needs("#define MARK_OFF offsetof(struct s, mark)\n");
        assert_eq!(
            n,
            [(SiteKind::MarkerOffset, Need::Run(names(&["mark", "c"])))]
        );
        // A member macro names the member it expands to.
        let n = needs("#define s_tail d\nx = offsetof(struct s, s_tail) - offsetof(struct s, c);");
        assert_eq!(n, [(SiteKind::OffsetRange, Need::Run(names(&["c", "d"])))]);
        // container_of arithmetic is no range.
        assert!(needs("p = (void *)q - offsetof(struct s, c);").is_empty());
    }

    /// The kinds and whether each refuses.
    fn refusing(src: &str) -> Vec<(SiteKind, bool)> {
        needs(src)
            .into_iter()
            .map(|(k, n)| (k, matches!(n, Need::Refuse(_))))
            .collect()
    }

    #[test]
    fn an_offset_of_one_member_is_a_name() {
        // A load of the member's width, or narrower, at its offset.
        for src in [
            "i = BPF_LDX_MEM(BPF_W, 1, 2, offsetof(struct s, c));",
            "i = BPF_LDX_MEM(BPF_DW, 1, 2, offsetof(struct s, c));",
            "i = BPF_LDX_MEM(BPF_W, 1, 2, offsetof(struct s, d));",
            "i = BPF_STX_MEM(BPF_FIELD_SIZEOF(struct s, c), 1, 2, offsetof(struct s, c));",
            "i = BPF_LDX_MEM(BPF_SIZE(si->code), 1, 2, offsetof(struct s, c));",
            "i = BPF_LDX_MEM(BPF_W, 1, 2, offsetof(struct s, c) + offsetof(struct t, v));",
            "i = BPF_LDX_MEM(BPF_W, 1, 2, offsetof(struct s, c) + sizeof_field(struct t, v));",
            "i = BPF_LDX_MEM(BPF_W, 1, 2, offsetof(struct s, c) + 4);",
            "i = BPF_ALU64_IMM(BPF_ADD, 1, offsetof(struct s, d));",
            "switch (off) { case bpf_ctx_range(struct s, c): return 1; }",
            "switch (off) { case bpf_ctx_range_till(struct s, c, c): return 1; }",
        ] {
            assert_eq!(refusing(src), [(SiteKind::BpfOffset, false)], "{src}");
        }
        // A case label and a load through a cast that names one member.
        assert!(needs("switch (off) { case offsetof(struct s, c): break; }").is_empty());
        for src in [
            "x = *(long *)((char *)p + offsetof(struct s, c));",
            "x = *(u32 *)((char *)p + offsetof(struct s, d));",
        ] {
            assert_eq!(refusing(src), [(SiteKind::OffsetLoad, false)], "{src}");
        }
        assert_eq!(
            needs("case offsetof(struct s, c) ... offsetofend(struct s, c) - 1:"),
            [(SiteKind::OffsetRange, Need::None)]
        );
    }

    #[test]
    fn what_depends_on_relative_position_refuses_or_is_kept() {
        for (src, kind) in [
            // Wider than the member, or past it.
            (
                "i = BPF_LDX_MEM(BPF_DW, 1, 2, offsetof(struct s, c) + 4);",
                SiteKind::BpfOffset,
            ),
            (
                "i = BPF_LDX_MEM(BPF_W, 1, 2, offsetof(struct s, c) + 8);",
                SiteKind::BpfOffset,
            ),
            (
                "i = BPF_LDX_MEM(BPF_W, 1, 2, offsetofend(struct s, c));",
                SiteKind::BpfOffset,
            ),
            // A sum not bounded, a second member of the struct.
            (
                "i = BPF_LDX_MEM(BPF_W, 1, 2, offsetof(struct s, c) + off);",
                SiteKind::BpfOffset,
            ),
            (
                "i = BPF_LDX_MEM(BPF_W, 1, 2, offsetof(struct s, c) + offsetof(struct s, a));",
                SiteKind::BpfOffset,
            ),
            (
                "i = BPF_LDX_MEM(BPF_W, 1, 2, offsetof(struct s, c) + sizeof_field(struct s, a));",
                SiteKind::BpfOffset,
            ),
            // Spans of two members.
            (
                "switch (off) { case bpf_ctx_range_till(struct s, a, c): return 1; }",
                SiteKind::BpfOffset,
            ),
            (
                "case offsetof(struct s, a) ... offsetofend(struct s, b) - 1:",
                SiteKind::OffsetRange,
            ),
            (
                "x = *(__u64 *)((char *)p + offsetof(struct s, d));",
                SiteKind::OffsetLoad,
            ),
            (
                "i = BPF_LDX_MEM(BPF_DW, 1, 2, offsetof(struct s, d));",
                SiteKind::BpfOffset,
            ),
        ] {
            let n = refusing(src);
            assert!(n.contains(&(kind, true)), "{src}: {n:?}");
        }
        // A range to a member this pass does not find may span members;
        // one member is one member, whatever its name.
        assert_eq!(
            refusing("case bpf_ctx_range_till(struct s, a, zz):"),
            [(SiteKind::BpfOffset, true)]
        );
        assert_eq!(
            refusing("case bpf_ctx_range(struct s, zz):"),
            [(SiteKind::BpfOffset, false)]
        );
        // The marker's offset: the member after it stays next to it (the
        // masks over its bit-fields hold).
        assert_eq!(
            needs("i = BPF_LDX_MEM(BPF_B, 1, 2, offsetof(struct s, mark));"),
            [(SiteKind::MarkerOffset, Need::Run(names(&["mark", "c"])))]
        );
        // Another struct's offsets are none of this one's business.
        assert!(needs("i = BPF_LDX_MEM(BPF_DW, 1, 2, offsetof(struct t, c));").is_empty());
    }

    #[test]
    fn assertions_wrapped_in_a_macro_of_the_tree_are_kept() {
        // Two definitions in turn, each for the uses after it.
        let n = needs(
            "#define MATCH(o, f) static_assert(offsetof(struct o, f) == offsetof(struct s, f))\n\
             MATCH(t, b);\nMATCH(t, c);\n#undef MATCH\n\
             #define MATCH(f, n) \\\n\tBUILD_BUG_ON(offsetof(struct s, f) != n)\nMATCH(d, 24);\n",
        );
        assert_eq!(
            n,
            [
                (SiteKind::BuildAssertion, Need::Pin(names(&["b"]))),
                (SiteKind::BuildAssertion, Need::Pin(names(&["c"]))),
                (SiteKind::BuildAssertion, Need::Pin(names(&["d"]))),
            ]
        );
        // A wrapped group assertion and a wrapped size assertion.
        let n = needs(
            "#define GRP(g) CACHELINE_ASSERT_GROUP_SIZE(struct s, g, 64)\nGRP(hot);\n\
             #define FITS(t) static_assert(sizeof(t) <= 64)\nFITS(struct s);\nFITS(struct t);\n",
        );
        assert_eq!(
            n,
            [
                (
                    SiteKind::GroupAssertion,
                    Need::GroupSize {
                        group: "hot".into(),
                        bytes: Some(64)
                    }
                ),
                (SiteKind::SizeAssertion, Need::Size),
            ]
        );
        // A macro that asserts nothing of the struct adds nothing.
        assert!(needs("#define M(x) BUILD_BUG_ON(sizeof(x) > 8)\nM(int);\n").is_empty());
    }

    #[test]
    fn assertions_typedefs_and_embedders() {
        let n = needs(
            "typedef struct s s_t;\nBUILD_BUG_ON(offsetof(s_t, c) != 16 || sizeof(s_t) > 64);",
        );
        assert_eq!(
            n,
            [
                (SiteKind::BuildAssertion, Need::Pin(names(&["c"]))),
                (SiteKind::SizeAssertion, Need::Size),
            ]
        );
        let n = needs(
            "struct o { int x; struct s in[2]; };\nstruct o v = { .in = { { 1 }, [1] = { .d = 2 } } };",
        );
        assert_eq!(
            n,
            [(SiteKind::NestedInitializer, Need::First(names(&["a"])))]
        );
    }
}
