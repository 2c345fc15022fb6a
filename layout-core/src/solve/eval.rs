//! The objective as a sort key, computed in one pass over a placed order.
//!
//! The key is `[size, align, t1, t2, t3]`, compared lexicographically, where
//! `t1..t3` are soft cost, read lines and movement in the preset's order. The
//! struct alignment sits right after the size: at equal size, a raised
//! alignment only costs the structs that embed this one.
//!
//! This is the solver's fast twin of [`crate::cost::cost_of`] (which works
//! on a [`crate::layout::Layout`]); the tests check that they agree.

use super::geometry::Geometry;
use super::place::Placed;
use super::problem::{Problem, SoftRole};
use super::Preset;
use crate::cost::{Cost, SoftWeights};

pub(crate) type Key = [u64; 5];

pub(crate) fn key_of(c: &Cost, align: u64, preset: Preset) -> Key {
    let (s, r, m) = (c.soft, c.read_lines, c.movement);
    match preset {
        Preset::Balanced | Preset::HotLines => [c.size, align, s, r, m],
        Preset::MinDiff => [c.size, align, m, s, r],
        Preset::CompactHot => [c.size, align, r, s, m],
    }
}

/// Position of the movement term in the key.
pub(crate) fn movement_slot(preset: Preset) -> usize {
    match preset {
        Preset::Balanced | Preset::CompactHot | Preset::HotLines => 4,
        Preset::MinDiff => 2,
    }
}

pub(crate) struct Evaluator<'p> {
    p: &'p Problem,
    w: SoftWeights,
    preset: Preset,
    fenwick: Vec<u32>,
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
            fenwick: vec![0; p.n + 1],
        }
    }

    pub fn preset(&self) -> Preset {
        self.preset
    }

    pub fn key(&mut self, placed: &Placed, g: &Geometry) -> Key {
        let c = self.cost(placed, g);
        key_of(&c, g.align, self.preset)
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

    pub fn cost(&mut self, placed: &Placed, g: &Geometry) -> Cost {
        let (soft, read_lines) = self.lines(&placed.order, &placed.offset, g);
        Cost {
            size: placed.size,
            soft,
            read_lines,
            movement: self.movement(&placed.order),
        }
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
