//! How often `--objective balanced` reaches the optimum, and whether every
//! size it claims minimal is: generated sets, each instance solved under
//! the default work budget and compared with a reference.
//!
//! The sets (deterministic: the same instances on every machine):
//!
//! - `random`: the uniform instances of `exact_bench` (5 to 120 members,
//!   random classes, one to three writer groups, lines of 64 and 128
//!   bytes, aligned mode and random phases);
//! - `shapes`: the kernel shapes of `exact_bench` (16/32/64-byte alignment
//!   with flexible tails, several locks, pins, walls among flags and
//!   arrays, 60 to 150 members);
//! - `breaks`: kernel-like structs with the author's line breaks: 20 to 40
//!   members (a quarter 60 to 120), two `CACHELINE_PADDING()` markers,
//!   lock words and the members they protect, two to four writer groups,
//!   members aligned to 16, 32 or 64 bytes (half of the 64-byte ones line
//!   breaks, as `____cacheline_aligned_in_smp` makes them), now and then a
//!   flexible tail;
//! - `wide`: the same kind of struct shaped like the misses of held-out
//!   kernel-like structs: 60 to 120 members, two or three lock words,
//!   members aligned to 16, 32 or 64 bytes, a flexible tail in half.
//!
//! The reference of an instance is the smallest verified layout of:
//!
//! - an exhaustive search over every order (each member placed as early as
//!   its alignment and the hard rule allow, at every phase; the layout
//!   judged by the verifier alone), where the struct has at most
//!   `EXHAUSTIVE` members with bytes and no pins: the optimum;
//! - the solver with `--factor` times the work budget (20 by default);
//! - with line breaks, the struct without its paddings solved alone and the
//!   paddings put back at every choice of line starts the verifier accepts
//!   (members crossing the breaks as the rule allows);
//! - with paddings as the only breaks (aligned, no flexible tail), the
//!   struct solved without its groups and breaks, its chains of lines
//!   given parts between the breaks in every way the guide allows, the
//!   verifier judging each layout ([`lines_given_parts`]).
//!
//! A default run above the reference is a miss; a size claimed minimal
//! above it, or a lower bound above it, a false claim; a layout the
//! verifier refuses, invalid.
//!
//! ```text
//! nice cargo run --release -p layout-core --no-default-features --example reach_bench -- \
//!     [--random 300] [--shapes 0] [--breaks 150] [--wide 0] [--seed 1] [--factor 20] [--shuffles 6] \
//!     [--list] [--only ID] [--dump FILE]
//! ```
//!
//! `--dump` writes one line per instance (id, set, band, size, claimed,
//! bound, reference, which reference, work, milliseconds), to compare two builds against the
//! better of their references (`reach_bench --compare`).
//!

mod compare;
#[path = "../exact_bench/instance.rs"]
mod instance;
#[path = "../exact_bench/kernel.rs"]
#[allow(dead_code)]
mod kernel;
#[path = "../exact_bench/uniform.rs"]
mod uniform;

use layout_core::layout::{Layout, Slot};
use layout_core::model::{Access, Field, Placement, Struct};
use layout_core::segments::{assign, Keep};
use layout_core::solve::{solve, Goal, Solution, SolveOptions, DEFAULT_WORK_LIMIT};
use layout_core::verify::verify;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub use instance::{Instance, Rng};

/// What `--help` prints.
const USAGE: &str =
    "usage: reach_bench [--random N] [--shapes N] [--breaks N] [--wide N] [--seed N] \
[--factor N] [--shuffles N] [--work-limit N] [--list] [--only ID] [--dump FILE]
       reach_bench --compare BEFORE.tsv AFTER.tsv ...
  --random, --shapes, --breaks, --wide: instances of each set (300, 0, 150, 0)
  --seed: which instances (1); --factor: the reference's work budget, times the default (20)
  --shuffles: solves of the declaration shuffled, for the reference (6)
  --work-limit: the default run's work budget; --list: the instances' ids
  --only ID: one instance, its layouts and the struct as a test fixture
  --dump FILE: one line per instance, to compare builds (reach_bench --compare)
  --compare A B ...: dumps of two or more builds, each against the better reference of all";

/// Up to this many members with bytes (and no pins), the reference is the
/// exhaustive search.
const EXHAUSTIVE: usize = 8;

// ---------------------------------------------------------------------------
// The `breaks` set.

fn padding(name: &str) -> Field {
    Field::new(name, "struct cacheline_padding", 0, 64)
}

/// A kernel-like struct with two paddings: a read-mostly head, lock words
/// with the members they protect, writer groups, flags, pointers,
/// counters, arrays, members aligned to `big`, and now and then a
/// flexible tail.
fn kernel_like(n: usize, rng: &mut Rng) -> Instance {
    kernel_like_mixed(n, rng, &BREAKS)
}

/// What a kernel-like set draws from: how many lock words, the alignments
/// of the big members, how often a flexible tail.
struct Mix {
    /// The fewest lock words, and how many more at most.
    locks: (u64, u64),
    /// The big members' alignment, one drawn per struct.
    big: &'static [u64],
    /// A flexible tail in one struct of this many.
    tail_one_in: u64,
    /// The set's name.
    shape: &'static str,
}

/// The `breaks` set: one to three lock words, big members aligned to 8 to
/// 64 bytes, a flexible tail in a third.
const BREAKS: Mix = Mix {
    locks: (1, 2),
    big: &[8, 16, 32, 64],
    tail_one_in: 3,
    shape: "breaks",
};

/// The `wide` set, shaped like the misses of the held-out kernel-like
/// structs: two or three lock words, big members aligned to 16, 32 or 64
/// bytes, a flexible tail in half (60 to 120 members).
const WIDE: Mix = Mix {
    locks: (2, 1),
    big: &[16, 32, 64],
    tail_one_in: 2,
    shape: "wide",
};

/// [`kernel_like`] drawing from `mix`.
fn kernel_like_mixed(n: usize, rng: &mut Rng, mix: &Mix) -> Instance {
    let groups = 2 + rng.below(3);
    let locks = mix.locks.0 + rng.below(mix.locks.1 + 1);
    let big = mix.big[rng.below(mix.big.len() as u64) as usize];
    let tail = rng.below(mix.tail_one_in) == 0;
    let body = if tail { n - 1 } else { n };
    let mut pads = [
        2 + rng.below(body as u64 - 4),
        2 + rng.below(body as u64 - 4),
    ];
    pads.sort_unstable();
    let mut words_left: Vec<u64> = (0..locks).collect();
    let mut fields = Vec::new();
    let class = |rng: &mut Rng, i: usize| {
        if i == 0 {
            return Access::ReadMostly;
        }
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
    for i in 0..body {
        for (k, &p) in pads.iter().enumerate() {
            if p as usize == i {
                fields.push(padding(&format!("_pad{}_", k + 1)));
            }
        }
        let (size, align) = match rng.below(12) {
            0 => (8 * (2 + rng.below(15)), 8),
            1 => (16 * (1 + rng.below(3)), 16),
            2 if big > 8 => (big * (1 + rng.below(2)), big),
            3 | 4 => (4, 4),
            5 => (
                [1u64, 2][rng.below(2) as usize],
                [1u64, 2][rng.below(2) as usize],
            ),
            _ => (8, 8),
        };
        let size = size.max(align);
        if i > 0 && !words_left.is_empty() && rng.below(body as u64) < 2 * locks {
            let l = words_left.remove(rng.below(words_left.len() as u64) as usize);
            let mut f = Field::new(format!("lock{l}"), "spinlock_t", 4, 4).with_access(
                Access::LockedWrite {
                    lock: format!("lock{l}"),
                },
            );
            f.lock_word = true;
            fields.push(f);
            continue;
        }
        let access = class(rng, i);
        let mut f = Field::new(format!("f{i}"), "t", size, align).with_access(access);
        // A line-aligned member is one of the author's line breaks when
        // the source says `____cacheline_aligned_in_smp` on it: half of
        // them here.
        f.line_break = i > 0 && align == 64 && rng.below(2) == 0;
        fields.push(f);
    }
    if tail {
        let align = [4u64, 8, big.min(64)][rng.below(3) as usize];
        let access = class(rng, 1);
        fields.push(Field::new(format!("f{body}"), "u8[]", 0, align).with_access(access));
    }
    let mut at = 0u64;
    for f in &mut fields {
        at = at.div_ceil(f.align) * f.align;
        f.original_offset = Some(at);
        at += f.size;
    }
    let mut s = Struct::new("kernel_like", fields);
    assign(&mut s, Keep::default());
    let placement = if rng.below(4) == 0 {
        Placement::Offset(8 * rng.below(8) / s.natural_align() * s.natural_align())
    } else {
        Placement::Aligned
    };
    Instance {
        s,
        line: 64,
        placement,
        shape: mix.shape.into(),
    }
}

// ---------------------------------------------------------------------------
// The exhaustive reference.

/// The hard rule as the guide states it: lockless against read-mostly, and
/// lockless members of different writer groups; a lock word is a writer
/// group of its own.
fn must_not_share(a: &Field, b: &Field) -> bool {
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

struct Exhaustive<'a> {
    s: &'a Struct,
    line: u64,
    align: u64,
    placement: Placement,
    phases: Vec<u64>,
    placed: Vec<(usize, u64)>,
    used: Vec<bool>,
    breaks_placed: usize,
    best: Option<u64>,
    /// The part (between two line breaks) each field was declared in.
    parts: Vec<usize>,
}

impl Exhaustive<'_> {
    /// Bytes a field holds for the rule (a flexible tail: its first element).
    fn extent(&self, i: usize) -> u64 {
        let f = &self.s.fields[i];
        if Some(i) == self.s.flexible_tail() {
            1
        } else {
            f.size
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

    fn dfs(&mut self, end: u64, left: u64) {
        let n = self.s.fields.len();
        let round = |x: u64| x.div_ceil(self.align) * self.align;
        if self.placed.len() == n {
            let size = round(end);
            if self.best.is_none_or(|b| size < b) {
                let mut slots: Vec<Slot> = self
                    .placed
                    .iter()
                    .map(|&(field, offset)| Slot { field, offset })
                    .collect();
                slots.sort_by_key(|sl| (sl.offset, sl.field));
                let l = Layout {
                    slots,
                    size,
                    align: self.align,
                    line: self.line,
                    placement: self.placement,
                };
                if verify(self.s, &l).is_ok() {
                    self.best = Some(size);
                }
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
            // Necessary for the rule, to keep the search small: the lowest
            // segment first, the breaks in their order.
            if self.used[i] || self.s.fields[i].segment != min_segment {
                continue;
            }
            let is_break = self.s.breaks.contains(&i);
            if is_break && self.s.breaks.get(self.breaks_placed) != Some(&i) {
                continue;
            }
            // Identical members (same everything) in a row: one order.
            let f = &self.s.fields[i];
            if (0..i).any(|j| {
                !self.used[j] && self.parts[j] == self.parts[i] && same(&self.s.fields[j], f)
            }) {
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

/// The part (between two line breaks) each field was declared in.
fn parts(s: &Struct) -> Vec<usize> {
    let mut k = 0;
    (0..s.fields.len())
        .map(|i| {
            if i != 0 && s.breaks.contains(&i) {
                k += 1;
            }
            k
        })
        .collect()
}

/// The smallest size of any layout the verifier accepts, over every struct
/// alignment the placement allows.
fn exhaustive_min_size(inst: &Instance) -> Option<u64> {
    let s = &inst.s;
    let mut best = None;
    let mut align = s.natural_align().max(s.min_align);
    loop {
        let phases: Vec<u64> = match inst.placement {
            Placement::Aligned => (0..inst.line)
                .step_by(align.min(inst.line) as usize)
                .collect(),
            p => p.offsets().iter().map(|o| o % inst.line).collect(),
        };
        let mut e = Exhaustive {
            s,
            line: inst.line,
            align,
            placement: inst.placement,
            phases,
            placed: Vec::new(),
            used: vec![false; s.fields.len()],
            breaks_placed: 0,
            best,
            parts: parts(s),
        };
        e.dfs(0, s.fields.iter().map(|f| f.size).sum());
        best = e.best;
        if align >= inst.line || !matches!(inst.placement, Placement::Aligned) {
            return best;
        }
        align *= 2;
    }
}

// ---------------------------------------------------------------------------
// The second formulation: without the paddings, the paddings put back.

fn with_paddings_put_back(inst: &Instance, work_limit: u64) -> Option<u64> {
    let s = &inst.s;
    let line = inst.line;
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
    // Without its breaks: the paddings out, the line-aligned members kept
    // as aligned members.
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
    assign(&mut relaxed, Keep::default());
    let sol = solve(
        &relaxed,
        &SolveOptions {
            line,
            placement: inst.placement,
            work_limit,
            ..SolveOptions::default()
        },
    )
    .ok()?;
    let l = sol.layout.layout();
    let align = match inst.placement {
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
    let base = inst.placement.offsets().first().map_or(0, |o| o % line);
    // Line starts in the struct's own offsets.
    let starts: Vec<u64> = (0..=(size + base) / line)
        .map(|k| k * line)
        .filter(|&x| x >= base && x - base <= size && x > base)
        .map(|x| x - base)
        .collect();
    if starts.is_empty() {
        return None;
    }
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
            placement: inst.placement,
        };
        if verify(s, &layout).is_ok() {
            return Some(size);
        }
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

/// The struct solved without its groups and line breaks, its lines cut
/// into chains (runs of lines the members across a boundary tie together)
/// and every assignment of the chains to the parts between the breaks
/// tried (at most 20 000 layouts): a chain goes to a part only where each
/// of its members may lie as the guide states it, chains in their order
/// inside a part, each part from a new line, the paddings between; the
/// smallest layout the verifier accepts. Aligned structs whose breaks are
/// all paddings, without a flexible tail.
fn lines_given_parts(inst: &Instance, work_limit: u64) -> Option<u64> {
    let s = &inst.s;
    let line = inst.line;
    if s.breaks.is_empty()
        || inst.placement != Placement::Aligned
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
    let declared = parts(s);
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
struct Chain {
    first: u64,
    last: u64,
    /// (offset, field), by offset.
    members: Vec<(u64, usize)>,
}

/// Every assignment of chains to parts ([`lines_given_parts`]).
struct Chains<'a> {
    s: &'a Struct,
    line: u64,
    chains: &'a [Chain],
    may: &'a [Vec<bool>],
    part: Vec<usize>,
    best: Option<u64>,
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

// ---------------------------------------------------------------------------
// The same problem declared in another order.

/// `inst` with its members shuffled among the members they may trade
/// places with without changing the problem: those of one segment and one
/// part (between two line breaks), neither pinned, nor a line break, nor
/// the first member, nor a flexible tail, nor in a block or a declaration
/// list. The rule, the parts and the optimum are the same; the search's
/// constructions, which start from the declaration order, are not.
fn shuffled(inst: &Instance, rng: &mut Rng) -> Instance {
    let s = &inst.s;
    let part = parts(s);
    let movable = |i: usize| {
        let f = &s.fields[i];
        i > 0
            && !f.pinned
            && !s.breaks.contains(&i)
            && s.flexible_tail() != Some(i)
            && f.size > 0
            && !s.blocks.iter().any(|b| b.contains(&i))
            && !s.lists.iter().any(|l| l.contains(&i))
    };
    let mut perm: Vec<usize> = (0..s.fields.len()).collect();
    let mut i = 0;
    while i < perm.len() {
        if !movable(i) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < perm.len()
            && movable(j)
            && part[j] == part[i]
            && s.fields[j].segment == s.fields[i].segment
        {
            j += 1;
        }
        // Fisher-Yates on i..j.
        for k in (i + 1..j).rev() {
            let r = i + rng.below((k - i + 1) as u64) as usize;
            perm.swap(k, r);
        }
        i = j;
    }
    let mut out = s.clone();
    out.fields = perm.iter().map(|&k| s.fields[k].clone()).collect();
    Instance {
        s: out,
        line: inst.line,
        placement: inst.placement,
        shape: inst.shape.clone(),
    }
}

// ---------------------------------------------------------------------------

struct Args {
    random: usize,
    shapes: usize,
    breaks: usize,
    wide: usize,
    seed: u64,
    factor: u64,
    shuffles: usize,
    work_limit: u64,
    list: bool,
    only: Option<String>,
    dump: Option<String>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        random: 300,
        shapes: 0,
        breaks: 150,
        wide: 0,
        seed: 1,
        factor: 20,
        shuffles: 6,
        work_limit: DEFAULT_WORK_LIMIT,
        list: false,
        only: None,
        dump: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut value = || it.next().ok_or(format!("{k} needs a value"));
        let num = |v: String| v.parse::<u64>().map_err(|e| format!("{k}: {e}"));
        match k.as_str() {
            "--random" => a.random = num(value()?)? as usize,
            "--shapes" => a.shapes = num(value()?)? as usize,
            "--breaks" => a.breaks = num(value()?)? as usize,
            "--wide" => a.wide = num(value()?)? as usize,
            "--seed" => a.seed = num(value()?)?,
            "--factor" => a.factor = num(value()?)?,
            "--shuffles" => a.shuffles = num(value()?)? as usize,
            "--work-limit" => a.work_limit = num(value()?)?,
            "--list" => a.list = true,
            "--only" => a.only = Some(value()?),
            "--dump" => a.dump = Some(value()?),
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other} (--help lists them)")),
        }
    }
    Ok(a)
}

/// The instances: `(id, set, band, instance)`.
fn instances(a: &Args) -> Vec<(String, &'static str, String, Instance)> {
    let mut out = Vec::new();
    let stream = |k: u64| Rng((a.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (k << 40)) | 1);
    let mut rng = stream(1);
    for k in 0..a.random {
        let (lo, hi) = uniform::BANDS[k % uniform::BANDS.len()];
        let n = lo + rng.below((hi - lo + 1) as u64) as usize;
        out.push((
            format!("r{}-{k}", a.seed),
            "random",
            format!("{lo}-{hi}"),
            uniform::instance(n, &mut rng),
        ));
    }
    let mut rng = stream(2);
    const BANDS: [(usize, usize); 4] = [(5, 10), (11, 20), (21, 40), (60, 150)];
    for k in 0..a.shapes {
        let shape = kernel::SHAPES[k % kernel::SHAPES.len()];
        let (lo, hi) = if shape == "large" {
            BANDS[3]
        } else {
            BANDS[(k / kernel::SHAPES.len()) % BANDS.len()]
        };
        let n = lo + rng.below((hi - lo + 1) as u64) as usize;
        let inst = kernel::instance(shape, n, &mut rng);
        out.push((
            format!("k{}-{k}", a.seed),
            "shapes",
            format!("{shape} {lo}-{hi}"),
            inst,
        ));
    }
    let mut rng = stream(3);
    for k in 0..a.breaks {
        let (lo, hi) = if k % 4 == 3 { (60, 120) } else { (20, 40) };
        let n = lo + rng.below((hi - lo + 1) as u64) as usize;
        out.push((
            format!("b{}-{k}", a.seed),
            "breaks",
            format!("{lo}-{hi}"),
            kernel_like(n, &mut rng),
        ));
    }
    let mut rng = stream(4);
    for k in 0..a.wide {
        let n = 60 + rng.below(61) as usize;
        out.push((
            format!("w{}-{k}", a.seed),
            "wide",
            "60-120".to_string(),
            kernel_like_mixed(n, &mut rng, &WIDE),
        ));
    }
    out
}

/// Prints a layout: each member's offset, size, alignment, class and the
/// part it was declared in.
fn show(s: &Struct, l: &Layout) {
    let part = parts(s);
    println!("size {} align {} {:?}", l.size, l.align, l.placement);
    for sl in &l.slots {
        let f = &s.fields[sl.field];
        println!(
            "  {:5} {:>4} {:>3} {:<10} {}{} part {}",
            sl.offset,
            f.size,
            f.align,
            f.name,
            f.access.tag(),
            if f.lock_word { "*" } else { "" },
            part[sl.field]
        );
    }
}

/// FNV-1a of an instance's id: its shuffles' seed.
fn fnv(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The size `sol` claims minimal, if any.
fn claimed(sol: &Solution) -> Option<u64> {
    (sol.goals.first() == Some(&Goal::Size) && sol.proven_goals >= 1).then_some(sol.layout.size)
}

#[derive(Default)]
struct Row {
    total: usize,
    reached: usize,
    exhaustive: usize,
    claims: usize,
    false_claims: usize,
    invalid: usize,
    gaps: BTreeMap<u64, usize>,
    ms: f64,
}

fn main() -> Result<(), String> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().is_some_and(|a| a == "--compare") {
        return compare::run(&argv[1..]);
    }
    let a = args()?;
    let started = Instant::now();
    let mut rows: BTreeMap<(String, String), Row> = BTreeMap::new();
    let mut misses = Vec::new();
    let mut errors = Vec::new();
    // One line per instance: id, set, band, size, size claimed minimal
    // (0/1), lower bound, reference, how.
    let mut dump = String::new();
    for (id, set, band, inst) in instances(&a) {
        if a.only.as_ref().is_some_and(|o| *o != id) {
            continue;
        }
        let opts = |work_limit: u64| SolveOptions {
            line: inst.line,
            placement: inst.placement,
            work_limit,
            time_limit: Duration::from_secs(3600),
            ..SolveOptions::default()
        };
        let t = Instant::now();
        let sol = match solve(&inst.s, &opts(a.work_limit)) {
            Ok(sol) => sol,
            Err(layout_core::SolveError::Infeasible(why)) if !why.contains("internal") => {
                continue;
            }
            Err(e) => {
                errors.push(format!("{id}: {e}"));
                continue;
            }
        };
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if a.only.is_some() {
            println!("{sol:?}");
            show(&inst.s, sol.layout.layout());
            // The members as a fixture: (size, align, class tag, lock word,
            // padding before).
            let spec: Vec<String> = inst
                .s
                .fields
                .iter()
                .map(|f| {
                    format!(
                        "({}, {}, \"{}\", {})",
                        f.size,
                        f.align,
                        if f.size == 0 && f.ty.contains("padding") {
                            "pad".to_string()
                        } else if f.is_flexible_array() {
                            format!("tail {}", f.access.tag())
                        } else {
                            f.access.tag()
                        },
                        f.lock_word
                    )
                })
                .collect();
            println!("spec: [{}]", spec.join(", "));
        }
        let row = rows.entry((set.to_string(), band.clone())).or_default();
        row.total += 1;
        row.ms += ms;
        let valid = verify(&inst.s, sol.layout.layout()).is_ok();
        if !valid {
            row.invalid += 1;
        }
        let members = inst.s.fields.iter().filter(|f| f.size > 0).count();
        let pinned = inst.s.fields.iter().any(|f| f.pinned);
        let (reference, how) = if members <= EXHAUSTIVE && !pinned {
            (exhaustive_min_size(&inst), "exhaustive")
        } else {
            let mut r: Option<u64> = None;
            let mut how = "own";
            let mut better = |size: u64, by: &'static str, r: &mut Option<u64>| {
                if r.is_none_or(|r| size < r) {
                    *r = Some(size);
                    how = by;
                }
            };
            if a.factor > 1 {
                if let Ok(long) = solve(&inst.s, &opts(a.work_limit * a.factor)) {
                    if verify(&inst.s, long.layout.layout()).is_ok() {
                        better(long.layout.size, "long", &mut r);
                    }
                }
            }
            let mut rng = Rng(0x5EED ^ (id.len() as u64) << 20 ^ fnv(&id));
            for _ in 0..a.shuffles {
                let other = shuffled(&inst, &mut rng);
                if let Ok(o) = solve(&other.s, &opts(a.work_limit)) {
                    // Judged on the original struct: the same members at
                    // the same offsets.
                    let l = o.layout.layout();
                    let map: Vec<usize> = other
                        .s
                        .fields
                        .iter()
                        .map(|f| {
                            inst.s
                                .fields
                                .iter()
                                .position(|g| g.name == f.name)
                                .unwrap_or(0)
                        })
                        .collect();
                    let mut back = l.clone();
                    for sl in &mut back.slots {
                        sl.field = map[sl.field];
                    }
                    if verify(&inst.s, &back).is_ok() {
                        if a.only.is_some() && back.size < sol.layout.size {
                            println!("a smaller layout, from a shuffled declaration:");
                            show(&inst.s, &back);
                        }
                        better(back.size, "shuffled", &mut r);
                    }
                }
            }
            if let Some(o) = with_paddings_put_back(&inst, a.work_limit) {
                better(o, "put back", &mut r);
            }
            if let Some(o) = lines_given_parts(&inst, a.work_limit) {
                better(o, "parts", &mut r);
            }
            (r, how)
        };
        if how == "exhaustive" {
            row.exhaustive += 1;
        }
        let size = sol.layout.size;
        let reference = reference.unwrap_or(size).min(size);
        dump.push_str(&format!(
            "{id}\t{set}\t{band}\t{size}\t{}\t{}\t{reference}\t{how}\t{}\t{ms:.2}\n",
            u8::from(claimed(&sol).is_some()),
            sol.lower_bound,
            sol.work
        ));
        let gap = size - reference;
        *row.gaps.entry(gap).or_default() += 1;
        if gap == 0 {
            row.reached += 1;
        } else {
            misses.push(format!(
                "{id} ({set} {band}, {} members, {:?}): {size} > {reference} ({how}), bound {}",
                inst.s.fields.len(),
                inst.placement,
                sol.lower_bound
            ));
        }
        if claimed(&sol).is_some() {
            row.claims += 1;
        }
        if claimed(&sol).is_some_and(|c| c > reference) || sol.lower_bound > reference {
            row.false_claims += 1;
            misses.push(format!(
                "{id}: FALSE CLAIM {size} (bound {}) > {reference} ({how})",
                sol.lower_bound
            ));
        }
    }
    println!(
        "| set | members | instances | reached | exhaustive refs | sizes claimed | false claims | invalid | gaps (bytes: count) | mean ms |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut totals: BTreeMap<String, (usize, usize, usize, usize)> = BTreeMap::new();
    for ((set, band), r) in &rows {
        let gaps: Vec<String> = r
            .gaps
            .iter()
            .filter(|(g, _)| **g > 0)
            .map(|(g, c)| format!("{g}: {c}"))
            .collect();
        println!(
            "| {set} | {band} | {} | {} | {} | {} | {} | {} | {} | {:.0} |",
            r.total,
            r.reached,
            r.exhaustive,
            r.claims,
            r.false_claims,
            r.invalid,
            if gaps.is_empty() {
                "—".to_string()
            } else {
                gaps.join(", ")
            },
            r.ms / r.total.max(1) as f64
        );
        let t = totals.entry(set.clone()).or_default();
        t.0 += r.total;
        t.1 += r.reached;
        t.2 += r.false_claims;
        t.3 += r.invalid;
    }
    for (set, (total, reached, false_claims, invalid)) in &totals {
        println!(
            "{set}: {reached} of {total} reached, {false_claims} false claims, {invalid} invalid"
        );
    }
    if a.list || misses.len() <= 40 {
        for m in &misses {
            println!("  {m}");
        }
    }
    for e in &errors {
        println!("  ERROR {e}");
    }
    if let Some(path) = &a.dump {
        std::fs::write(path, dump).map_err(|e| format!("{path}: {e}"))?;
    }
    eprintln!("{:.1} s", started.elapsed().as_secs_f64());
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("{} errors", errors.len()))
    }
}
