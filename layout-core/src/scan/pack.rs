//! The smallest size a compiled struct can have by reordering its members
//! alone (`pahole -P`), without breaking what the source asked for:
//!
//! - the first member stays first: C code casts a pointer to the struct to
//!   its first member (`struct sock sk;` at the start of `struct unix_sock`,
//!   `struct trace_entry ent;` in trace events), and pahole keeps it too;
//! - a member with an `aligned` attribute above its type's alignment
//!   (`____cacheline_aligned_in_smp`) starts a cache-line group: it stays
//!   where it is in the member sequence, and so does every zero-size marker
//!   (`CACHELINE_PADDING()`, `__cacheline_group_begin/end()`, other
//!   zero-length arrays) and the flexible array at the end. Members move only
//!   within the run between two such *fixed* members;
//! - the bitfields of a run become one *pool* ([`super::bits`]): declared
//!   next to each other in the order that packs their bits tightest;
//! - an anonymous struct or union member moves as one piece;
//! - zero-size members that are not markers (empty structs) go anywhere in
//!   their run.
//!
//! Each run is laid out so that it ends as early as possible. Every later
//! offset only grows with that end, so run by run is optimal for the whole
//! struct. In a run that starts at a multiple of its largest alignment, the
//! members sorted by decreasing alignment leave no hole (their sizes are
//! multiples of their alignments); otherwise small members first fill up to
//! that multiple, a subset chosen to leave the least padding. The result is
//! marked optimal when every run meets a lower bound on its end (its bytes
//! plus the least padding before its first most-aligned member).
//!
//! A member keeps its type's alignment, except where its offset proves the
//! type less aligned (a `__packed` member type, which BTF does not mark).
//! Unions are reported as they are.

use super::bits::{self, Bit, Pool};
use crate::layout::{Layout, Slot};
use crate::model::{Field, Placement, Struct};
use crate::place::{self, align_up, Cursor};
use crate::typedb::{Aggregate, AggregateKind, Member};
use crate::verify::{check_structure, VerifyError};
use std::fmt;

/// One piece of a packed struct: a member, or a pool of bitfields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub kind: PieceKind,
    pub size: u64,
    pub align: u64,
    /// Kept at its place in the member sequence (see the module docs).
    pub fixed: bool,
    /// Index of the run of movable pieces it belongs to; fixed pieces end runs.
    pub run: usize,
    /// Where it starts in the struct as compiled.
    pub original_offset: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PieceKind {
    /// One member (plain, array, anonymous struct or union, marker).
    Member(usize),
    /// Bitfield members, declared next to each other in this order.
    Bits(Vec<usize>),
}

/// A struct packed by reordering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packing {
    /// Size as compiled.
    pub size: u64,
    /// Size after packing (never more than `size`).
    pub best_size: u64,
    pub align: u64,
    /// No reordering of these pieces can do better.
    pub optimal: bool,
    /// In declaration order.
    pub pieces: Vec<Piece>,
    /// New offset of each piece; empty when the struct is kept as it is.
    pub offsets: Vec<u64>,
}

impl Packing {
    pub fn saving(&self) -> u64 {
        self.size - self.best_size
    }

    /// The pieces as a layout [`Struct`] (names as `to_model` gives them,
    /// bitfield pools with the alignment they need), and the packed layout,
    /// or `None` when the struct is kept as it is.
    pub fn model_and_layout(&self, agg: &Aggregate, line: u64) -> Option<(Struct, Layout)> {
        self.model_and_layout_named(agg, line, true)
    }

    /// With `named` false the fields have empty names and types (no
    /// allocation per field: enough for the structural checks).
    fn model_and_layout_named(
        &self,
        agg: &Aggregate,
        line: u64,
        named: bool,
    ) -> Option<(Struct, Layout)> {
        if self.offsets.is_empty() || self.offsets.len() != self.pieces.len() {
            return None;
        }
        let fields: Vec<Field> = self
            .pieces
            .iter()
            .map(|p| {
                let (name, ty) = if named {
                    piece_name(agg, p)
                } else {
                    (String::new(), String::new())
                };
                let mut f = Field::new(name, ty, p.size, p.align);
                f.original_offset = Some(p.original_offset);
                f
            })
            .collect();
        let mut model = Struct::new(agg.name.clone(), fields);
        model.min_align = agg.attr_align.unwrap_or(1);
        let mut slots: Vec<Slot> = self
            .offsets
            .iter()
            .enumerate()
            .map(|(field, &offset)| Slot { field, offset })
            .collect();
        slots.sort_by_key(|s| (s.offset, self.pieces[s.field].size, s.field));
        let layout = Layout {
            slots,
            size: self.best_size,
            align: self.align,
            line,
            placement: Placement::Aligned,
        };
        Some((model, layout))
    }
}

fn piece_name(agg: &Aggregate, p: &Piece) -> (String, String) {
    match &p.kind {
        PieceKind::Member(i) => {
            let m = &agg.members[*i];
            (m.field_name(), m.ty.clone())
        }
        PieceKind::Bits(members) => {
            let names: Vec<&str> = members
                .iter()
                .map(|&i| agg.members[i].name.as_str())
                .filter(|n| !n.is_empty())
                .collect();
            let name = if names.is_empty() {
                format!("bitfield@{}", p.original_offset)
            } else {
                names.join(":")
            };
            (name, "bitfields".to_string())
        }
    }
}

/// Why a packed layout was refused (a bug in the packer, never bad input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PackError {
    Structure(VerifyError),
    /// A piece left its run, or fixed pieces changed order.
    Group(String),
    /// A pool of bitfields would not fit its bytes at its new offset.
    Bits(String),
}

impl fmt::Display for PackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PackError::Structure(e) => write!(f, "{e}"),
            PackError::Group(m) | PackError::Bits(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for PackError {}

/// Checks a packing from scratch: [`check_structure`] on its model (every
/// piece placed once, aligned, no overlap, size a multiple of the
/// alignment), fixed pieces in their order with every movable piece between
/// the same two of them, and every bitfield pool fitting its bytes where it
/// now starts. A packing that keeps the struct as it is passes.
pub fn check(agg: &Aggregate, packing: &Packing) -> Result<(), PackError> {
    let Some((model, layout)) = packing.model_and_layout_named(agg, 64, false) else {
        return Ok(());
    };
    if check_structure(&model, &layout).is_err() {
        // Again with names, for the message.
        if let Some((model, layout)) = packing.model_and_layout(agg, 64) {
            check_structure(&model, &layout).map_err(PackError::Structure)?;
        }
    }
    let mut by_offset: Vec<usize> = (0..packing.pieces.len()).collect();
    by_offset.sort_by_key(|&i| (packing.offsets[i], packing.pieces[i].size, i));
    // Walking the new order, the run index counts fixed pieces passed.
    let mut fixed_seen = 0;
    let mut last_fixed: Option<usize> = None;
    for &i in &by_offset {
        let p = &packing.pieces[i];
        if p.fixed {
            if last_fixed.is_some_and(|l| l > i) {
                return Err(PackError::Group(format!(
                    "fixed member `{}` moved before an earlier fixed member",
                    piece_name(agg, p).0
                )));
            }
            last_fixed = Some(i);
            fixed_seen += 1;
        } else if p.run != fixed_seen {
            return Err(PackError::Group(format!(
                "`{}` left its cache-line group",
                piece_name(agg, p).0
            )));
        }
        if let PieceKind::Bits(members) = &p.kind {
            let bits: Vec<Bit> = members.iter().map(|&m| Bit::of(&agg.members, m)).collect();
            let o = packing.offsets[i];
            if bits::end_bit(&bits, 8 * o) > 8 * (o + p.size) {
                return Err(PackError::Bits(format!(
                    "bitfields `{}` do not fit {} bytes at offset {o}",
                    piece_name(agg, p).0,
                    p.size
                )));
            }
        }
    }
    Ok(())
}

/// A lower bound on the packed size that takes no allocation: every byte of
/// every member and every bit of every bitfield, rounded up to the
/// alignment. A struct already that small cannot be packed.
pub fn quick_bound(agg: &Aggregate) -> u64 {
    let mut bytes = 0u64;
    let mut bits = 0u64;
    for m in &agg.members {
        match m.bit_size {
            Some(w) => bits += w,
            None => bytes += m.size,
        }
    }
    let align = agg.align.max(1);
    align_up(bytes + bits.div_ceil(8), align)
}

/// The struct as it is: nothing to reorder.
fn unchanged(agg: &Aggregate) -> Packing {
    Packing {
        size: agg.size,
        best_size: agg.size,
        align: agg.align.max(1),
        optimal: false,
        pieces: Vec::new(),
        offsets: Vec::new(),
    }
}

/// What packing keeps. The default keeps everything the source asked for;
/// the relaxations exist to explain where `pahole -P` finds a smaller size
/// by not keeping it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    /// Members move only within their cache-line group (between the same two
    /// fixed members). Off: only the first member and the flexible array
    /// stay.
    pub keep_groups: bool,
    /// Alignment above the word size (`aligned` attributes on members and on
    /// the struct, cache-line aligned member types) is kept. Off: every
    /// alignment is capped at 8 and attributes are ignored, as pahole does.
    pub keep_wide_alignment: bool,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            keep_groups: true,
            keep_wide_alignment: true,
        }
    }
}

/// The smallest size `agg` can have by reordering its members (see the
/// module docs), with the new offsets. Structs that [`quick_bound`] shows
/// cannot shrink, packed structs and unions come back unchanged.
pub fn pack_padding_only(agg: &Aggregate) -> Packing {
    pack_with(agg, Rules::default())
}

/// [`pack_padding_only`] under other [`Rules`]. Under relaxed rules the
/// result may not be a layout the compiler would produce: it is for
/// comparisons only ([`check`] may refuse it).
pub fn pack_with(agg: &Aggregate, rules: Rules) -> Packing {
    if agg.kind == AggregateKind::Union || agg.members.is_empty() {
        return unchanged(agg);
    }
    if rules.keep_wide_alignment && quick_bound(agg) >= agg.size {
        return Packing {
            optimal: true,
            ..unchanged(agg)
        };
    }
    let Some(mut pieces) = pieces(agg, rules.keep_groups) else {
        return unchanged(agg);
    };
    let align = if rules.keep_wide_alignment {
        agg.align.max(1)
    } else {
        for p in &mut pieces {
            p.align = p.align.min(WORD);
        }
        pieces.iter().map(|p| p.align).max().unwrap_or(1)
    };
    let (offsets, end, optimal) = place(&pieces);
    let best = align_up(end, align);
    if best >= agg.size {
        return Packing {
            pieces,
            ..unchanged(agg)
        };
    }
    Packing {
        size: agg.size,
        best_size: best,
        align,
        optimal,
        pieces,
        offsets,
    }
}

/// The alignment a member keeps: its type's, or less where its offset in a
/// packed struct proves the type less aligned (a `__packed` member type
/// BTF cannot show), and at least its `aligned` attribute.
fn member_align(m: &Member) -> u64 {
    let ty = m.align.max(1);
    let shown = if m.offset == 0 {
        ty
    } else {
        ty.min(1 << m.offset.trailing_zeros())
    };
    shown.max(m.attr_align.unwrap_or(1))
}

/// Zero-size members that mark group boundaries or line starts.
fn is_marker(m: &Member) -> bool {
    m.size == 0
        && (m.count == 0
            || m.attr_align.is_some()
            || m.name.starts_with("__cacheline_group")
            || m.ty.contains("cacheline_padding"))
}

/// The pieces in declaration order; `None` when members overlap or go
/// backwards (not a plain struct layout).
fn pieces(agg: &Aggregate, keep_groups: bool) -> Option<Vec<Piece>> {
    let members = &agg.members;
    let mut out: Vec<Piece> = Vec::with_capacity(members.len());
    let mut run = 0;
    let mut pool: Vec<Bit> = Vec::new();
    let mut pool_offset = 0;
    let mut end = 0u64;
    let last = members.len() - 1;
    for (i, m) in members.iter().enumerate() {
        if m.is_bitfield() {
            let r = m.byte_range();
            if pool.is_empty() {
                pool_offset = r.start;
            }
            pool.push(Bit::of(members, i));
            end = end.max(r.end);
            continue;
        }
        if m.offset < end {
            return None;
        }
        end = m.offset + m.size;
        let align = member_align(m);
        let fixed = i == 0
            || (m.size == 0 && i == last)
            || (keep_groups
                && ((m.size == 0 && is_marker(m)) || m.attr_align.is_some_and(|a| a > m.align)));
        if fixed {
            flush_pool(&mut out, &mut pool, pool_offset, run);
            run += 1;
        }
        out.push(Piece {
            kind: PieceKind::Member(i),
            size: m.size,
            align,
            fixed,
            run: if fixed { usize::MAX } else { run },
            original_offset: m.offset,
        });
    }
    flush_pool(&mut out, &mut pool, pool_offset, run);
    Some(out)
}

fn flush_pool(out: &mut Vec<Piece>, pool: &mut Vec<Bit>, offset: u64, run: usize) {
    if pool.is_empty() {
        return;
    }
    let Pool { bits, len, align } = bits::pool(std::mem::take(pool));
    out.push(Piece {
        kind: PieceKind::Bits(bits.iter().map(|b| b.member).collect()),
        size: len,
        align,
        fixed: false,
        run,
        original_offset: offset,
    });
}

/// The largest alignment whose residues [`run_bound`] and [`best_fill`]
/// search (work and memory grow with it); larger ones (page-aligned members)
/// get the plain bound and no fill.
const SEARCHED_ALIGN: u64 = 4096;

/// The word size pahole caps alignment at.
const WORD: u64 = 8;

/// Offsets of all pieces, the end of the last one, and whether every run
/// ended at its start plus its bytes.
fn place(pieces: &[Piece]) -> (Vec<u64>, u64, bool) {
    let mut offsets = vec![0u64; pieces.len()];
    let mut at = 0u64;
    let mut optimal = true;
    let mut run: Vec<usize> = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        if !p.fixed {
            run.push(i);
            continue;
        }
        let (end, tight) = place_run(pieces, &run, at, &mut offsets);
        optimal &= tight;
        run.clear();
        let mut c = Cursor::at(end);
        offsets[i] = c.place(&place::Member::new(p.size, p.align));
        at = c.end();
    }
    let (end, tight) = place_run(pieces, &run, at, &mut offsets);
    (offsets, end, optimal && tight)
}

/// Lays the movable pieces `run` out from `start`, ending as early as the
/// candidate orders allow; writes their offsets and returns the end and
/// whether it meets [`run_bound`].
fn place_run(pieces: &[Piece], run: &[usize], start: u64, offsets: &mut [u64]) -> (u64, bool) {
    if run.is_empty() {
        return (start, true);
    }
    let bytes: u64 = run.iter().map(|&i| pieces[i].size).sum();
    let (sized, empty): (Vec<usize>, Vec<usize>) =
        run.iter().copied().partition(|&i| pieces[i].size > 0);
    let bound = run_bound(pieces, &sized, start, bytes);
    let mut best: Option<(u64, Vec<usize>)> = None;
    for order in candidate_orders(pieces, &sized, start) {
        let end = lay(pieces, &order, start, None);
        if best.as_ref().is_none_or(|(e, _)| end < *e) {
            best = Some((end, order));
        }
        if end == bound {
            break;
        }
    }
    let (_, order) = best.unwrap_or((start, Vec::new()));
    let mut end = lay(pieces, &order, start, Some(offsets));
    // Zero-size pieces: at the first boundary of the run that suits them.
    for &z in &empty {
        let a = pieces[z].align;
        let spot = std::iter::once(start)
            .chain(order.iter().map(|&i| offsets[i] + pieces[i].size))
            .find(|o| o % a == 0);
        offsets[z] = match spot {
            Some(o) => o,
            None => {
                let o = align_up(end, a);
                end = o;
                o
            }
        };
    }
    (end, end <= bound)
}

/// A lower bound on the end of `run` laid from `start`: its bytes, plus the
/// padding before its first piece of the largest alignment `top`. Whatever
/// pieces precede that one, with `s` bytes, it starts at a multiple of `top`
/// at or after `start + s`; only `s` modulo `top` matters, so the reachable
/// residues of subset sums give the least such padding.
fn run_bound(pieces: &[Piece], run: &[usize], start: u64, bytes: u64) -> u64 {
    let top = run.iter().map(|&i| pieces[i].align).max().unwrap_or(1);
    if start.is_multiple_of(top) || top > SEARCHED_ALIGN {
        // Past SEARCHED_ALIGN the residues are not searched: the bytes alone
        // are still a lower bound.
        return start + bytes;
    }
    let mut reach = vec![false; top as usize];
    reach[0] = true;
    for &i in run {
        let p = &pieces[i];
        if p.align >= top {
            continue;
        }
        let step = (p.size % top) as usize;
        let before = reach.clone();
        for (r, &was) in before.iter().enumerate() {
            if was {
                reach[(r + step) % top as usize] = true;
            }
        }
    }
    let least = (0..top as usize)
        .filter(|&r| reach[r])
        .map(|r| {
            let at = start + r as u64;
            align_up(at, top) - at
        })
        .min()
        .unwrap_or(0);
    start + bytes + least
}

/// Places `order` back to back from `start`, each piece at its alignment;
/// returns the end and, given a buffer, writes the offsets.
fn lay(pieces: &[Piece], order: &[usize], start: u64, mut out: Option<&mut [u64]>) -> u64 {
    let mut c = Cursor::at(start);
    for &i in order {
        let o = c.place(&place::Member::new(pieces[i].size, pieces[i].align));
        if let Some(out) = out.as_deref_mut() {
            out[i] = o;
        }
    }
    c.end()
}

/// Orders worth trying, most promising first: the declaration order, by
/// decreasing alignment (pieces whose size is not a multiple of their
/// alignment last in their class), the same with those pieces at the very
/// end, and, when `start` is not a multiple of the largest alignment, the
/// small pieces that fill up to it with the least padding followed by the
/// rest by decreasing alignment.
fn candidate_orders(pieces: &[Piece], run: &[usize], start: u64) -> Vec<Vec<usize>> {
    let irregular = |i: usize| !pieces[i].size.is_multiple_of(pieces[i].align);
    let mut by_align = run.to_vec();
    by_align.sort_by_key(|&i| (std::cmp::Reverse(pieces[i].align), irregular(i)));
    let mut orders = vec![by_align.clone()];
    if run.iter().any(|&i| irregular(i)) {
        let (mut tail, mut head): (Vec<usize>, Vec<usize>) =
            by_align.iter().copied().partition(|&i| irregular(i));
        head.append(&mut tail);
        orders.push(head);
    }
    let top = run.iter().map(|&i| pieces[i].align).max().unwrap_or(1);
    if !start.is_multiple_of(top) {
        if let Some(fill) = best_fill(pieces, run, start, top) {
            let rest: Vec<usize> = by_align
                .iter()
                .copied()
                .filter(|i| !fill.contains(i))
                .collect();
            orders.push(fill.into_iter().chain(rest).collect());
        }
    }
    orders.push(run.to_vec());
    orders
}

/// Pieces of alignment below `top` to lay from `start` before the others
/// (each kind of piece in one stretch, kinds by increasing alignment), so
/// that the padding up to the next multiple of `top` after them, plus the
/// padding among them, is least; `None` when no fill beats none.
fn best_fill(pieces: &[Piece], run: &[usize], start: u64, top: u64) -> Option<Vec<usize>> {
    // Kinds of piece: (align, size) with their members.
    let mut kinds: Vec<(u64, u64, Vec<usize>)> = Vec::new();
    for &i in run {
        let p = &pieces[i];
        if p.align >= top || !p.size.is_multiple_of(p.align) {
            continue;
        }
        match kinds.iter_mut().find(|k| k.0 == p.align && k.1 == p.size) {
            Some(k) => k.2.push(i),
            None => kinds.push((p.align, p.size, vec![i])),
        }
    }
    if kinds.is_empty() || top > SEARCHED_ALIGN {
        return None;
    }
    kinds.sort_by_key(|k| (k.0, k.1));
    let span = (align_up(start, top) - start + 2 * top) as usize;
    // bytes[d]: most fill bytes of a fill ending at start + d; how[d]: its
    // last stretch (kind, count, end of the fill before it).
    let mut bytes: Vec<Option<u64>> = vec![None; span + 1];
    let mut how: Vec<Option<(usize, usize, usize)>> = vec![None; span + 1];
    bytes[0] = Some(0);
    for (k, (align, size, members)) in kinds.iter().enumerate() {
        let before = bytes.clone();
        for (q, b) in before.iter().enumerate() {
            let Some(b) = *b else { continue };
            let first = (align_up(start + q as u64, *align) - start) as usize;
            for count in 1..=members.len() {
                let d = first + count * *size as usize;
                if d > span {
                    break;
                }
                let filled = b + count as u64 * size;
                if bytes[d].is_none_or(|old| filled > old) {
                    bytes[d] = Some(filled);
                    how[d] = Some((k, count, q));
                }
            }
        }
    }
    let padding = |d: usize| align_up(start + d as u64, top) - start - bytes[d].unwrap_or(0);
    let best = (1..=span)
        .filter(|&d| bytes[d].is_some())
        .min_by_key(|&d| (padding(d), d))?;
    if padding(best) >= align_up(start, top) - start {
        return None;
    }
    let mut stretches = Vec::new();
    let mut d = best;
    while let Some((k, count, from)) = how[d] {
        stretches.push((k, count));
        d = from;
    }
    stretches.reverse();
    Some(
        stretches
            .into_iter()
            .flat_map(|(k, count)| kinds[k].2[..count].iter().copied())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typedb::NameKind;

    fn member(name: &str, offset: u64, size: u64, align: u64) -> Member {
        Member {
            name: name.into(),
            ty: "long".into(),
            offset,
            bit_offset: None,
            bit_size: None,
            size,
            align,
            attr_align: None,
            aggregate: None,
            count: 1,
        }
    }

    fn aggregate(members: Vec<Member>, size: u64, align: u64) -> Aggregate {
        Aggregate {
            name: "s".into(),
            name_kind: NameKind::Tag,
            kind: AggregateKind::Struct,
            size,
            align,
            members,
            packed: false,
            attr_align: None,
        }
    }

    /// The smallest end of any order, by trying them all.
    fn brute_force(pieces: &[Piece], run: &[usize], start: u64) -> u64 {
        fn go(pieces: &[Piece], left: &mut Vec<usize>, at: u64, best: &mut u64) {
            if left.is_empty() {
                *best = (*best).min(at);
                return;
            }
            for k in 0..left.len() {
                let i = left.remove(k);
                let o = align_up(at, pieces[i].align);
                go(pieces, left, o + pieces[i].size, best);
                left.insert(k, i);
            }
        }
        let mut best = u64::MAX;
        go(pieces, &mut run.to_vec(), start, &mut best);
        best
    }

    #[test]
    fn holes_close_by_decreasing_alignment() {
        // char a; long b; char c; -> 24, packed 16.
        let agg = aggregate(
            vec![
                member("a", 0, 1, 1),
                member("b", 8, 8, 8),
                member("c", 16, 1, 1),
            ],
            24,
            8,
        );
        let p = pack_padding_only(&agg);
        assert_eq!((p.best_size, p.optimal), (16, true));
        check(&agg, &p).unwrap();
    }

    #[test]
    fn an_aligned_member_keeps_its_group() {
        // char a; long b; [64] long hot __aligned(64); char c; -> 128.
        // a and b may not cross into hot's group, nor c out of it.
        let mut hot = member("hot", 64, 8, 8);
        hot.attr_align = Some(64);
        let agg = aggregate(
            vec![
                member("a", 0, 1, 1),
                member("b", 8, 8, 8),
                hot,
                member("c", 72, 1, 1),
            ],
            128,
            64,
        );
        let p = pack_padding_only(&agg);
        assert_eq!(p.best_size, 128);
        assert_eq!(p.saving(), 0);
    }

    #[test]
    fn markers_stay_and_runs_pack_between_them() {
        // char a; long b; u8 begin[0]; char c; long d; u8 end[0]; char e;
        let mut begin = member("__cacheline_group_begin__g", 16, 0, 1);
        begin.count = 0;
        let mut end = member("__cacheline_group_end__g", 32, 0, 1);
        end.count = 0;
        let agg = aggregate(
            vec![
                member("a", 0, 1, 1),
                member("b", 8, 8, 8),
                begin,
                member("c", 16, 1, 1),
                member("d", 24, 8, 8),
                end,
                member("e", 32, 1, 1),
            ],
            40,
            8,
        );
        let p = pack_padding_only(&agg);
        // b a | d c | e: b 0, a 8, begin 9, d 16, c 24, end 25, e 25 -> 32.
        assert_eq!(p.best_size, 32);
        check(&agg, &p).unwrap();
        let begin_at = p.offsets[2];
        let d_at = p.offsets[4];
        assert!(begin_at <= d_at);
    }

    #[test]
    fn a_flexible_array_stays_last() {
        let mut tail = member("data", 24, 0, 8);
        tail.count = 0;
        let agg = aggregate(
            vec![
                member("a", 0, 1, 1),
                member("b", 8, 8, 8),
                member("c", 16, 4, 4),
                tail,
            ],
            24,
            8,
        );
        let p = pack_padding_only(&agg);
        assert_eq!(p.best_size, 16);
        check(&agg, &p).unwrap();
        let last = p.offsets[3];
        assert!(p.offsets[..3]
            .iter()
            .zip(&p.pieces)
            .all(|(&o, piece)| o + piece.size <= last));
    }

    #[test]
    fn bitfields_of_a_run_share_their_bytes() {
        // unsigned a:1; long x; unsigned b:1; long y; -> 32; packed 24.
        let bit = |name: &str, offset: u64| {
            let mut m = member(name, offset, 4, 4);
            m.bit_offset = Some(8 * offset);
            m.bit_size = Some(1);
            m
        };
        let agg = aggregate(
            vec![
                bit("a", 0),
                member("x", 8, 8, 8),
                bit("b", 16),
                member("y", 24, 8, 8),
            ],
            32,
            8,
        );
        let p = pack_padding_only(&agg);
        assert_eq!(p.best_size, 24);
        check(&agg, &p).unwrap();
        assert!(p
            .pieces
            .iter()
            .any(|pc| pc.kind == PieceKind::Bits(vec![0, 2]) && pc.size == 1));
    }

    #[test]
    fn runs_from_odd_starts_match_brute_force() {
        // Small random runs from every start below 16.
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            (seed >> 33) % n
        };
        for _ in 0..300 {
            let n = 1 + next(6) as usize;
            let pieces: Vec<Piece> = (0..n)
                .map(|_| {
                    let align = 1u64 << next(4);
                    let size = align * (1 + next(3));
                    Piece {
                        kind: PieceKind::Member(0),
                        size,
                        align,
                        fixed: false,
                        run: 0,
                        original_offset: 0,
                    }
                })
                .collect();
            let run: Vec<usize> = (0..n).collect();
            for start in 0..16 {
                let mut offsets = vec![0; n];
                let (end, tight) = place_run(&pieces, &run, start, &mut offsets);
                let best = brute_force(&pieces, &run, start);
                let bytes = pieces.iter().map(|p| p.size).sum();
                assert!(run_bound(&pieces, &run, start, bytes) <= best);
                assert!(end >= best);
                if tight {
                    assert_eq!(end, best);
                }
                assert_eq!(end, best, "{pieces:?} from {start}");
            }
        }
    }
}
