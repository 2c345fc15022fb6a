//! Oracles for the solver under the author's line breaks, which know
//! nothing of its model: an exhaustive search over every order judged by
//! the verifier alone (small structs), and two second formulations of
//! larger ones (the struct solved without its paddings, the paddings put
//! back at every choice of line starts; its lines cut into chains and the
//! chains given parts), plus the generator of kernel-like structs. Shared
//! by layout-core's `solver_breaks.rs`, the command line's `cli_claims.rs`
//! and the `reach_bench` example (the latter two include this file by
//! path), so it
//! names nothing of either test crate nor of the example: the one copy of
//! these oracles. The example's instances take a placement (aligned or
//! fixed offsets) and its own cuts of the search ([`Cuts::Segments`]): the
//! `_with` and `_placed` functions; the tests call the plain ones.

#![allow(dead_code)]

use layout_core::layout::{Layout, Slot};
use layout_core::model::{Access, Field, Placement, Struct};
use layout_core::segments::{assign, Keep};
use layout_core::solve::{solve, Goal, Solution, SolveOptions};
use layout_core::verify::verify;

pub fn member(name: &str, size: u64, align: u64, access: Access) -> Field {
    Field::new(name, "t", size, align).with_access(access)
}

pub fn padding(name: &str, line: u64) -> Field {
    Field::new(name, "struct cacheline_padding", 0, line)
}

/// Offsets of the C layout of the declaration order.
pub fn with_offsets(mut s: Struct) -> Struct {
    let mut at = 0u64;
    for f in &mut s.fields {
        at = at.div_ceil(f.align) * f.align;
        f.original_offset = Some(at);
        at += f.size;
    }
    s
}

// ---------------------------------------------------------------------------
// The exhaustive oracle: every order of every field, each placed at the
// earliest offset its alignment and the hard rule allow (at every phase of
// the struct's alignment), judged by the verifier.

/// The hard rule as the guide states it: lockless against read-mostly, and
/// lockless members of different writer groups; a lock word is a writer
/// group of its own.
pub fn must_not_share(a: &Field, b: &Field) -> bool {
    let rule = |f: &Field| match &f.access {
        Access::LockedWrite { .. } if f.lock_word => Access::Lockless {
            group: Some(format!("lock word {}", f.name)),
        },
        x => x.clone(),
    };
    match (rule(a), rule(b)) {
        (Access::Lockless { group: x }, Access::Lockless { group: y }) => x != y,
        (Access::Lockless { .. }, Access::ReadMostly)
        | (Access::ReadMostly, Access::Lockless { .. }) => true,
        _ => false,
    }
}

/// Which orders the exhaustive search leaves out, to stay small (the
/// breaks keep their order under either).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cuts {
    /// The first member first: what the tests' structs (blocks, hot paths)
    /// allow.
    FirstMember,
    /// The members of the lowest segment left first, and of identical
    /// members of one part ([`same`]) one order only: `reach_bench`'s
    /// instances (no blocks, no hot paths).
    Segments,
}

/// What the exhaustive search searches.
#[derive(Clone, Copy, Debug)]
pub struct ExhaustiveOptions {
    pub line: u64,
    /// Aligned: every struct alignment from the natural one up to the line,
    /// each at every phase; fixed offsets: the natural alignment, at their
    /// phases.
    pub placement: Placement,
    pub cuts: Cuts,
}

struct Exhaustive<'a> {
    s: &'a Struct,
    line: u64,
    align: u64,
    placement: Placement,
    cuts: Cuts,
    phases: Vec<u64>,
    placed: Vec<(usize, u64)>,
    used: Vec<bool>,
    /// The breaks placed so far (they keep their order).
    breaks_placed: usize,
    best: Option<u64>,
    /// The part (between two line breaks) each field was declared in.
    parts: Vec<usize>,
}

impl Exhaustive<'_> {
    /// Bytes a field holds for the rule (a flexible tail: its first element).
    fn extent(&self, i: usize) -> u64 {
        if Some(i) == self.s.flexible_tail() {
            1
        } else {
            self.s.fields[i].size
        }
    }

    fn earliest(&self, i: usize, from: u64) -> u64 {
        let f = &self.s.fields[i];
        let mut x = from.div_ceil(f.align) * f.align;
        if self.extent(i) > 0 {
            for &(j, o) in &self.placed {
                let g = &self.s.fields[j];
                if self.extent(j) == 0 || !must_not_share(f, g) {
                    continue;
                }
                for &p in &self.phases {
                    let last_line = (p + o + self.extent(j) - 1) / self.line;
                    x = x.max((last_line + 1) * self.line - p);
                }
            }
            x = x.div_ceil(f.align) * f.align;
        }
        x
    }

    fn layout(&self, size: u64) -> Layout {
        let mut slots: Vec<Slot> = self
            .placed
            .iter()
            .map(|&(field, offset)| Slot { field, offset })
            .collect();
        slots.sort_by_key(|sl| (sl.offset, sl.field));
        Layout {
            slots,
            size,
            align: self.align,
            line: self.line,
            placement: self.placement,
        }
    }

    fn dfs(&mut self, end: u64, left: u64) {
        let n = self.s.fields.len();
        let round = |x: u64| x.div_ceil(self.align) * self.align;
        if self.placed.len() == n {
            let size = round(end);
            if self.best.is_none_or(|b| size < b) && verify(self.s, &self.layout(size)).is_ok() {
                self.best = Some(size);
            }
            return;
        }
        if self.best.is_some_and(|b| round(end + left) >= b) {
            return;
        }
        let min_segment = (0..n)
            .filter(|&i| !self.used[i])
            .map(|i| self.s.fields[i].segment)
            .min()
            .unwrap_or(0);
        for i in 0..n {
            // Necessary for the rule, to keep the search small: the first
            // member (or the lowest segment) first, the breaks in their
            // order.
            if self.used[i] {
                continue;
            }
            let first = self.placed.is_empty();
            match self.cuts {
                Cuts::FirstMember if first && i != 0 => continue,
                Cuts::Segments if self.s.fields[i].segment != min_segment => continue,
                _ => {}
            }
            let is_break = self.s.breaks.contains(&i);
            if is_break && self.s.breaks.get(self.breaks_placed) != Some(&i) {
                continue;
            }
            // Identical members (same everything) in a row: one order.
            let f = &self.s.fields[i];
            if self.cuts == Cuts::Segments
                && (0..i).any(|j| {
                    !self.used[j] && self.parts[j] == self.parts[i] && same(&self.s.fields[j], f)
                })
            {
                continue;
            }
            let x = self.earliest(i, end);
            let size = self.s.fields[i].size;
            self.used[i] = true;
            self.breaks_placed += usize::from(is_break);
            self.placed.push((i, x));
            self.dfs(x.max(end) + size, left - size);
            self.placed.pop();
            self.breaks_placed -= usize::from(is_break);
            self.used[i] = false;
        }
    }
}

/// Two members the rule cannot tell apart (a padding never is one: breaks
/// keep their order; the caller also asks for the same part: which member
/// sits in a part decides whether the part keeps one of its own).
fn same(a: &Field, b: &Field) -> bool {
    a.size == b.size
        && a.align == b.align
        && a.access == b.access
        && a.segment == b.segment
        && !a.lock_word
        && !b.lock_word
        && a.size > 0
        && !a.line_break
        && !b.line_break
}

/// The smallest size of any layout the verifier accepts (aligned mode, the
/// struct's first member kept first), over every struct alignment from the
/// natural one up to the line.
pub fn exhaustive_min_size(s: &Struct, line: u64) -> Option<u64> {
    exhaustive_min_size_with(
        s,
        &ExhaustiveOptions {
            line,
            placement: Placement::Aligned,
            cuts: Cuts::FirstMember,
        },
    )
}

/// The smallest size of any layout the verifier accepts, over every struct
/// alignment the placement allows.
pub fn exhaustive_min_size_with(s: &Struct, opts: &ExhaustiveOptions) -> Option<u64> {
    let line = opts.line;
    let mut best = None;
    let mut align = s.natural_align();
    loop {
        let phases: Vec<u64> = match opts.placement {
            Placement::Aligned => (0..line).step_by(align.min(line) as usize).collect(),
            p => p.offsets().iter().map(|o| o % line).collect(),
        };
        let mut e = Exhaustive {
            s,
            line,
            align,
            placement: opts.placement,
            cuts: opts.cuts,
            phases,
            placed: Vec::new(),
            used: vec![false; s.fields.len()],
            breaks_placed: 0,
            best,
            parts: declared_parts(s),
        };
        e.dfs(0, s.fields.iter().map(|f| f.size).sum());
        best = e.best;
        if align >= line || opts.placement != Placement::Aligned {
            return best;
        }
        align *= 2;
    }
}

// ---------------------------------------------------------------------------
// The second formulation: the struct without its paddings, solved on its
// own, with the paddings put back at every choice of line starts (in their
// order) that the verifier accepts. Any such layout keeps the rule, and it
// is where members cross the breaks.

/// The layouts of `s` made from a layout of `s` without its line breaks
/// (paddings out, line-aligned members plain aligned ones), the paddings
/// put back: the smallest one the verifier accepts, if any (aligned mode).
pub fn with_paddings_put_back(s: &Struct, line: u64, work_limit: u64) -> Option<u64> {
    with_paddings_put_back_placed(s, line, Placement::Aligned, work_limit)
}

/// [`with_paddings_put_back`] under `placement`: the line starts in the
/// struct's own offsets.
pub fn with_paddings_put_back_placed(
    s: &Struct,
    line: u64,
    placement: Placement,
    work_limit: u64,
) -> Option<u64> {
    let pads: Vec<usize> = s
        .breaks
        .iter()
        .copied()
        .filter(|&i| s.fields[i].size == 0)
        .collect();
    if s.breaks.is_empty() {
        return None;
    }
    let keep: Vec<usize> = (0..s.fields.len()).filter(|i| !pads.contains(i)).collect();
    // Without its breaks: the paddings out, a line-aligned member kept as
    // an aligned member (members cross it in the layouts found).
    let mut relaxed = Struct::new(
        "relaxed",
        keep.iter()
            .map(|&i| {
                let mut f = s.fields[i].clone();
                f.line_break = false;
                f
            })
            .collect(),
    );
    relaxed.paths.clone_from(&s.paths);
    relaxed.blocks = s
        .blocks
        .iter()
        .map(|b| {
            b.iter()
                .filter_map(|f| keep.iter().position(|k| k == f))
                .collect::<Vec<usize>>()
        })
        .filter(|b| !b.is_empty())
        .collect();
    assign(&mut relaxed, Keep::default());
    let sol = solve(
        &relaxed,
        &SolveOptions {
            line,
            placement,
            work_limit,
            ..SolveOptions::default()
        },
    )
    .ok()?;
    let l = sol.layout.layout();
    let align = match placement {
        Placement::Aligned => l.align.max(line),
        _ => l.align,
    };
    let size = l.size.div_ceil(align) * align;
    let slots: Vec<Slot> = l
        .slots
        .iter()
        .map(|sl| Slot {
            field: keep[sl.field],
            offset: sl.offset,
        })
        .collect();
    // Line starts in the struct's own offsets (after its start).
    let base = placement.offsets().first().map_or(0, |o| o % line);
    let starts: Vec<u64> = (0..=(size + base) / line)
        .map(|k| k * line)
        .filter(|&x| x > base && x - base <= size)
        .map(|x| x - base)
        .collect();
    if starts.is_empty() {
        return None;
    }
    // Every nondecreasing choice of line starts, one per padding.
    let mut choice = vec![0usize; pads.len()];
    loop {
        let mut all = slots.clone();
        for (k, &pad) in pads.iter().enumerate() {
            all.push(Slot {
                field: pad,
                offset: starts[choice[k]],
            });
        }
        all.sort_by_key(|sl| (sl.offset, sl.field));
        let layout = Layout {
            slots: all,
            size,
            align,
            line,
            placement,
        };
        if verify(s, &layout).is_ok() {
            return Some(size);
        }
        // The next choice.
        let mut k = pads.len();
        loop {
            if k == 0 {
                return None;
            }
            k -= 1;
            if choice[k] + 1 < starts.len() {
                choice[k] += 1;
                for j in k + 1..pads.len() {
                    choice[j] = choice[k];
                }
                break;
            }
        }
    }
}

/// The size `sol` claims minimal, if it claims one: size is its preset's
/// first goal and proven.
pub fn claimed_size(sol: &Solution) -> Option<u64> {
    (sol.goals.first() == Some(&Goal::Size) && sol.proven_goals >= 1).then_some(sol.layout.size)
}

// ---------------------------------------------------------------------------
// Kernel-like structs: 20 to 40 members, two paddings, lock words, several
// writer groups.

/// A small deterministic generator (xorshift64*): the same set everywhere.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) % n
    }
}

/// A struct like the kernel's hand-laid ones: a read-mostly head, two
/// `CACHELINE_PADDING()` lines, one to three locks each with its lock word
/// and the members it protects, two to four lockless writer groups, flags,
/// pointers, counters and a few arrays.
pub fn kernel_like(rng: &mut Rng) -> Struct {
    let n = 20 + rng.below(21) as usize;
    let groups = 2 + rng.below(3);
    let locks = 1 + rng.below(3);
    let mut pads = [2 + rng.below(n as u64 - 4), 2 + rng.below(n as u64 - 4)];
    pads.sort_unstable();
    let mut words_left: Vec<u64> = (0..locks).collect();
    let mut fields = Vec::new();
    for i in 0..n {
        for (k, &p) in pads.iter().enumerate() {
            if p as usize == i {
                fields.push(padding(&format!("_pad{}_", k + 1), 64));
            }
        }
        let (size, align) = match rng.below(10) {
            0 => (8 * (2 + rng.below(15)), 8),
            1 => (16 * (1 + rng.below(3)), 16),
            2 | 3 => (4, 4),
            4 => (
                [1u64, 2][rng.below(2) as usize],
                [1u64, 2][rng.below(2) as usize],
            ),
            _ => (8, 8),
        };
        let size = size.max(align);
        if i > 0 && !words_left.is_empty() && rng.below(n as u64) < 2 * locks {
            let l = words_left.remove(rng.below(words_left.len() as u64) as usize);
            let mut f = member(
                &format!("lock{l}"),
                4,
                4,
                Access::LockedWrite {
                    lock: format!("lock{l}"),
                },
            );
            f.lock_word = true;
            fields.push(f);
            continue;
        }
        let access = if i == 0 {
            Access::ReadMostly
        } else {
            match rng.below(20) {
                0..=6 => Access::ReadMostly,
                7..=10 => Access::Lockless {
                    group: Some(format!("g{}", rng.below(groups))),
                },
                11..=13 => Access::LockedWrite {
                    lock: format!("lock{}", rng.below(locks)),
                },
                _ => Access::Cold,
            }
        };
        fields.push(member(&format!("f{i}"), size, align, access));
    }
    let mut s = with_offsets(Struct::new("kernel_like", fields));
    assign(&mut s, Keep::default());
    s
}

/// The part (between two line breaks) each field of `s` was declared in.
pub fn declared_parts(s: &Struct) -> Vec<usize> {
    let mut k = 0;
    (0..s.fields.len())
        .map(|i| {
            k += usize::from(i != 0 && s.breaks.contains(&i));
            k
        })
        .collect()
}

/// The second formulation: the struct solved without its groups and line
/// breaks (what the tool prices as "without"), its lines cut into chains
/// (runs of lines the members across a boundary tie together), and every
/// assignment of the chains to the parts between the breaks (at most
/// 20 000 layouts judged), chains in their order inside a part, each part
/// from a new line, the paddings between: the smallest layout the verifier
/// accepts, if any. Independent of the solver's tree: a chain may go to a
/// part only when each of its members may lie there as the guide states it
/// (its own part, a part declared with a member of its class, anywhere when
/// cold), and the verifier judges the whole. Aligned structs with breaks,
/// all of them paddings, and no flexible tail.
pub fn lines_given_parts(s: &Struct, line: u64, work_limit: u64) -> Option<u64> {
    lines_given_parts_placed(s, line, Placement::Aligned, work_limit)
}

/// [`lines_given_parts`] of a struct placed by `placement`: none unless
/// aligned.
pub fn lines_given_parts_placed(
    s: &Struct,
    line: u64,
    placement: Placement,
    work_limit: u64,
) -> Option<u64> {
    if s.breaks.is_empty()
        || placement != Placement::Aligned
        || s.breaks.iter().any(|&b| s.fields[b].size > 0)
        || s.flexible_tail().is_some()
    {
        return None;
    }
    let mut relaxed = s.clone();
    let dissolved = layout_core::segments::dissolve_groups(&mut relaxed, Keep::default());
    let old: Vec<usize> = (0..s.fields.len())
        .filter(|&i| dissolved.index[i].is_some())
        .collect();
    let sol = solve(
        &relaxed,
        &SolveOptions {
            line,
            work_limit,
            ..SolveOptions::default()
        },
    )
    .ok()?;
    let mut members: Vec<(u64, usize)> = sol
        .layout
        .layout()
        .slots
        .iter()
        .map(|sl| (sl.offset, old[sl.field]))
        .filter(|&(_, f)| s.fields[f].size > 0)
        .collect();
    members.sort_unstable();
    let mut chains: Vec<Chain> = Vec::new();
    for &(at, f) in &members {
        let (lo, hi) = (at / line, (at + s.fields[f].size - 1) / line);
        match chains.last_mut() {
            Some(c) if lo <= c.last => {
                c.last = c.last.max(hi);
                c.members.push((at, f));
            }
            _ => chains.push(Chain {
                first: lo,
                last: hi,
                members: vec![(at, f)],
            }),
        }
    }
    let declared = declared_parts(s);
    let count = s.breaks.len() + 1;
    let held = |k: usize, a: &Access| {
        s.fields
            .iter()
            .enumerate()
            .any(|(i, f)| declared[i] == k && f.size > 0 && &f.access == a)
    };
    let may: Vec<Vec<bool>> = chains
        .iter()
        .map(|c| {
            (0..count)
                .map(|k| {
                    c.members.iter().all(|&(_, f)| {
                        let m = &s.fields[f];
                        declared[f] == k || m.access == Access::Cold || held(k, &m.access)
                    }) && (k == 0 || !c.members.iter().any(|&(_, f)| f == 0))
                })
                .collect()
        })
        .collect();
    let mut search = Chains {
        s,
        line,
        chains: &chains,
        may: &may,
        part: vec![0; chains.len()],
        best: None,
        leaves: 0,
    };
    search.dfs(0);
    search.best
}

/// A run of lines that members across a boundary tie together.
pub struct Chain {
    pub first: u64,
    pub last: u64,
    /// (offset, field), by offset.
    pub members: Vec<(u64, usize)>,
}

/// Every assignment of chains to parts ([`lines_given_parts`]).
struct Chains<'a> {
    s: &'a Struct,
    line: u64,
    chains: &'a [Chain],
    may: &'a [Vec<bool>],
    part: Vec<usize>,
    best: Option<u64>,
    /// Layouts judged so far (at most 20 000).
    leaves: u32,
}

impl Chains<'_> {
    fn dfs(&mut self, c: usize) {
        if self.leaves >= 20_000 {
            return;
        }
        if c < self.chains.len() {
            for k in 0..self.may[c].len() {
                if self.may[c][k] {
                    self.part[c] = k;
                    self.dfs(c + 1);
                }
            }
            return;
        }
        self.leaves += 1;
        let (s, line) = (self.s, self.line);
        let mut slots = Vec::new();
        let mut base = 0u64;
        for k in 0..s.breaks.len() + 1 {
            if k > 0 {
                slots.push(Slot {
                    field: s.breaks[k - 1],
                    offset: base,
                });
            }
            for (chain, _) in self.chains.iter().zip(&self.part).filter(|(_, &p)| p == k) {
                for &(at, f) in &chain.members {
                    slots.push(Slot {
                        field: f,
                        offset: at - chain.first * line + base,
                    });
                }
                base += (chain.last - chain.first + 1) * line;
            }
        }
        let align = s.natural_align().max(line);
        let end = slots
            .iter()
            .map(|sl| sl.offset + s.fields[sl.field].size)
            .max()
            .unwrap_or(0);
        let size = end.div_ceil(align) * align;
        if self.best.is_some_and(|b| b <= size) {
            return;
        }
        slots.sort_by_key(|sl| (sl.offset, s.fields[sl.field].size > 0, sl.field));
        let layout = Layout {
            slots,
            size,
            align,
            line,
            placement: Placement::Aligned,
        };
        if verify(s, &layout).is_ok() {
            self.best = Some(size);
        }
    }
}
