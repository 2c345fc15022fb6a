//! The objective as a sort key, computed in one pass over a placed order.
//!
//! The key lists the preset's goals ([`super::Preset::goals`]) in order,
//! compared lexicographically, with two additions: the struct alignment sits
//! right after the size (at equal size, a raised alignment only costs the
//! structs that embed this one), and the key starts with the bytes over the
//! size cap (0 unless the preset caps the size, see
//! [`super::Preset::MinDiff`]).
//!
//! This is the solver's fast twin of [`crate::cost::cost_of`] (which works
//! on a [`crate::layout::Layout`]); the tests check that they agree.

use super::geometry::{Geometry, Phases};
use super::place::Placed;
use super::problem::{Problem, SoftRole};
use super::{Goal, Preset};
use crate::cost::{Cost, SoftWeights};

pub(crate) const KEY_LEN: usize = 8;
pub(crate) type Key = [u64; KEY_LEN];
/// The first term of a late order's key ([`Evaluator::key`]): above any
/// size over a cap, and small enough to add to.
pub(crate) const LATE: u64 = u64::MAX >> 2;

/// What one position of the key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Term {
    /// Bytes of size over the cap.
    OverCap,
    Goal(Goal),
    /// The struct alignment (right after the size).
    Align,
    /// Unused (always 0).
    Pad,
}

/// The terms of the key of `preset`, in order.
pub(crate) fn terms(preset: Preset) -> [Term; KEY_LEN] {
    let mut out = [Term::Pad; KEY_LEN];
    out[0] = Term::OverCap;
    let mut at = 1;
    for &g in preset.goals() {
        out[at] = Term::Goal(g);
        at += 1;
        if g == Goal::Size {
            out[at] = Term::Align;
            at += 1;
        }
    }
    out
}

/// Position of `term` in the key of `preset`.
pub(crate) fn slot(preset: Preset, term: Term) -> Option<usize> {
    terms(preset).iter().position(|&t| t == term)
}

pub(crate) fn key_of(c: &Cost, align: u64, cap: u64, preset: Preset) -> Key {
    let mut k = [0; KEY_LEN];
    for (slot, t) in terms(preset).iter().enumerate() {
        k[slot] = match t {
            Term::OverCap => c.size.saturating_sub(cap),
            Term::Align => align,
            Term::Pad => 0,
            Term::Goal(g) => g.value(c),
        };
    }
    k
}

pub(crate) struct Evaluator<'p> {
    p: &'p Problem,
    w: SoftWeights,
    preset: Preset,
    /// Size cap of the preset (`u64::MAX`: none).
    pub cap: u64,
    /// Is the churn part of the key (else [`Evaluator::cost`] leaves it 0)?
    need_churn: bool,
    fenwick: Vec<u32>,
    tails: Vec<usize>,
    spans: Vec<(u64, u64)>,
    /// Scratch for [`Evaluator::path_lines`]: the fields it counts.
    placed: Vec<bool>,
}

/// What is on the line being scanned.
#[derive(Clone, Copy, Default)]
struct LineState {
    read: bool,
    lockless: bool,
    lock: Option<u32>,
    two_locks: bool,
}

impl LineState {
    fn add(&mut self, role: SoftRole) {
        match role {
            SoftRole::Read => self.read = true,
            SoftRole::Lockless => self.lockless = true,
            SoftRole::Locked(k) => match self.lock {
                None => self.lock = Some(k),
                Some(j) if j != k => self.two_locks = true,
                Some(_) => {}
            },
            SoftRole::Cold => {}
        }
    }

    fn cost(&self, w: &SoftWeights) -> u64 {
        let locked = self.lock.is_some();
        (if locked && self.lockless {
            w.lockless_locked
        } else {
            0
        }) + (if locked && self.read {
            w.locked_read
        } else {
            0
        }) + (if self.two_locks { w.locked_locked } else { 0 })
    }
}

impl<'p> Evaluator<'p> {
    pub fn new(p: &'p Problem, w: SoftWeights, preset: Preset) -> Evaluator<'p> {
        Evaluator {
            p,
            w,
            preset,
            cap: u64::MAX,
            need_churn: preset.goals().contains(&Goal::Churn),
            fenwick: vec![0; p.n + 1],
            tails: Vec::with_capacity(p.n),
            spans: Vec::new(),
            placed: Vec::new(),
        }
    }

    pub fn preset(&self) -> Preset {
        self.preset
    }

    /// The key of `placed`; a late one (it breaks the author's order
    /// against a pinned field, [`Placed::late`]) gets [`LATE`] first, worse
    /// than any layout.
    pub fn key(&mut self, placed: &Placed, g: &Geometry) -> Key {
        let c = self.cost(placed, g);
        let mut k = key_of(&c, g.align, self.cap, self.preset);
        if placed.late {
            k[0] = LATE;
        }
        k
    }

    /// Soft cost and read lines of the fields of `order` (in offset order),
    /// at the report phase of `g`.
    pub fn lines(&self, order: &[usize], offset: &[u64], g: &Geometry) -> (u64, u64) {
        let p = self.p;
        let mut soft = 0;
        let mut reads = 0;
        let mut last_read_line: Option<u64> = None;
        let mut cur_line = 0;
        let mut state = LineState::default();
        for &f in order {
            let size = p.size[f];
            if size == 0 {
                continue;
            }
            let role = p.role[f];
            let (l0, l1) = (
                g.report_line(offset[f]),
                g.report_line(offset[f] + size - 1),
            );
            if l0 != cur_line {
                soft += state.cost(&self.w);
                state = LineState::default();
                cur_line = l0;
            }
            state.add(role);
            if l1 != l0 {
                soft += state.cost(&self.w);
                state = LineState::default();
                state.add(role);
                cur_line = l1;
            }
            if role == SoftRole::Read {
                reads += l1 - l0 + 1 - u64::from(last_read_line == Some(l0));
                last_read_line = Some(l1);
            }
        }
        soft += state.cost(&self.w);
        (soft, reads)
    }

    /// Lines the hot paths touch, summed over the paths: at the report
    /// phase with a known offset, the worst phase of `g`'s alignment in
    /// aligned mode (see [`crate::cost::path_lines`]). Only fields in
    /// `placed` (all of `fields`) count. Each path reads only its own uses
    /// ([`Problem::by_path`]): the work is [`Problem::path_work`] (times the
    /// phases), not paths times fields.
    pub fn path_lines(&mut self, fields: &[usize], offset: &[u64], g: &Geometry) -> u64 {
        let p = self.p;
        if p.path_names == 0 {
            return 0;
        }
        let phases: Vec<u64> = match (g.placement, g.phases) {
            (crate::model::Placement::Offset(_) | crate::model::Placement::Offsets(_), _) => {
                vec![g.report]
            }
            (_, Phases::One(ph)) => vec![ph],
            (_, Phases::Set(set)) => set.iter().collect(),
            (_, Phases::EveryMultipleOf(a)) => (0..g.line).step_by(a as usize).collect(),
        };
        self.placed.clear();
        self.placed.resize(p.n, false);
        for &f in fields {
            self.placed[f] = true;
        }
        let mut total = 0;
        for uses in &p.by_path {
            self.spans.clear();
            for (f, bytes) in uses {
                if self.placed[*f] {
                    self.spans
                        .push((offset[*f] + bytes.start, offset[*f] + bytes.end));
                }
            }
            self.spans.sort_unstable();
            let worst = phases
                .iter()
                .map(|&ph| distinct_lines(&self.spans, ph, g.line))
                .max()
                .unwrap_or(0);
            total += worst;
        }
        total
    }

    /// The cost of `placed` (churn only when the preset's key holds it).
    pub fn cost(&mut self, placed: &Placed, g: &Geometry) -> Cost {
        let (soft, read_lines) = self.lines(&placed.order, &placed.offset, g);
        let path_lines = self.path_lines(&placed.order, &placed.offset, g);
        Cost {
            size: placed.size,
            soft,
            read_lines,
            path_lines,
            churn: if self.need_churn {
                self.churn(&placed.order)
            } else {
                0
            },
            movement: self.movement(&placed.order),
        }
    }

    /// Members moved: `n` minus the longest subsequence of `order` that
    /// keeps declaration order.
    pub fn churn(&mut self, order: &[usize]) -> u64 {
        self.tails.clear();
        for &f in order {
            let at = self.tails.partition_point(|&t| t < f);
            if at == self.tails.len() {
                self.tails.push(f);
            } else {
                self.tails[at] = f;
            }
        }
        (order.len() - self.tails.len()) as u64
    }

    /// Kendall tau distance of `order` from the declaration order.
    pub fn movement(&mut self, order: &[usize]) -> u64 {
        let n = self.p.n;
        self.fenwick.iter_mut().for_each(|x| *x = 0);
        let mut inv = 0u64;
        for (seen, &f) in order.iter().enumerate() {
            // Count placed fields with index <= f.
            let mut i = f + 1;
            let mut le = 0u64;
            while i > 0 {
                le += u64::from(self.fenwick[i]);
                i &= i - 1;
            }
            inv += seen as u64 - le;
            let mut i = f + 1;
            while i <= n {
                self.fenwick[i] += 1;
                i += i & i.wrapping_neg();
            }
        }
        inv
    }
}

/// Distinct lines holding a byte of the sorted `[start, end)` spans at phase `ph`.
pub(crate) fn distinct_lines(spans: &[(u64, u64)], ph: u64, line: u64) -> u64 {
    let mut count = 0;
    let mut last: Option<u64> = None;
    for &(s, e) in spans {
        let (l0, l1) = ((ph + s) / line, (ph + e - 1) / line);
        let from = match last {
            Some(c) if c >= l0 => c + 1,
            _ => l0,
        };
        if l1 >= from {
            count += l1 - from + 1;
        }
        last = Some(last.map_or(l1, |c| c.max(l1)));
    }
    count
}
