//! The greedy placer: given the order of the unpinned fields, put each at
//! the smallest offset that is
//!
//! - at or after the end of the previous unpinned field,
//! - a multiple of its alignment,
//! - on a later line (at every phase of the geometry) than every earlier
//!   field of a conflicting colour,
//! - clear of the pinned fields: no overlap, and no shared line with a
//!   pinned field of a conflicting colour on either side;
//! - after every pinned field of a lower segment ([`Problem::floor`]).
//!
//! A field must also end by the start of every pinned field of a higher
//! segment ([`Problem::ceil`]): an upper bound, which placing as early as
//! possible meets whenever the order can. An order that cannot is *late*
//! ([`Placed::late`]): it breaks the author's order, and its key is the
//! worst ([`super::eval`]).
//!
//! Every constraint is a lower bound that only grows when an earlier field
//! moves later, and the forbidden offsets around a pinned field form an
//! interval, so placing each field as early as possible is optimal for its
//! order: the smallest layout is the best placement of the best order.
//!
//! Only the latest-ending earlier field of another colour matters, so the
//! state ([`Cursor`]) is tiny: the end so far, and the largest end of each of
//! the two most recent colours. With `soft_sep`, the same is tracked for
//! classes and different classes are also kept on different lines at the
//! report phase (used by constructions that aim at zero soft cost).

use super::geometry::{align_up, Geometry};
use super::problem::Problem;

/// Placement state after a prefix of the order.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Cursor {
    /// End of the last placed unpinned field.
    pub end: u64,
    /// Largest end of any placed field, pinned fields included.
    pub max_end: u64,
    /// Some placed field ends after the start of a pinned field of a
    /// higher segment ([`Problem::ceil`]).
    pub late: bool,
    color: Last,
    class: Last,
}

impl Cursor {
    /// Largest end of a placed unpinned field whose colour is not `color`.
    pub fn end_of_other_colors(&self, color: u32) -> u64 {
        self.color.end_of_others(color)
    }

    /// The colour of the latest-ending placed unpinned field of a non-zero
    /// colour, and its end (0, 0 before any).
    pub fn last_color(&self) -> (u32, u64) {
        (self.color.id, self.color.end)
    }
}

/// The colour (or class) of the latest-ending field and the largest end of
/// any field of another colour.
#[derive(Clone, Copy, Debug, Default)]
struct Last {
    id: u32,
    end: u64,
    other_end: u64,
}

impl Last {
    fn end_of_others(&self, id: u32) -> u64 {
        if id == self.id {
            self.other_end
        } else {
            self.end
        }
    }

    /// Record a field ending at `end`, later than every field recorded so far.
    fn push(&mut self, id: u32, end: u64) {
        if id != self.id {
            self.other_end = self.end;
            self.id = id;
        }
        self.end = end;
    }
}

struct Pin {
    start: u64,
    end: u64,
    color: u32,
}

pub(crate) struct Placer<'p> {
    pub p: &'p Problem,
    pub g: Geometry,
    soft_sep: bool,
    pins: Vec<Pin>,
    pin_end: u64,
}

impl<'p> Placer<'p> {
    pub fn new(p: &'p Problem, g: Geometry, soft_sep: bool) -> Placer<'p> {
        let pins: Vec<Pin> = p
            .pinned
            .iter()
            .map(|&i| {
                let start = p.pin[i].unwrap_or(0);
                Pin {
                    start,
                    end: start + p.size[i],
                    color: p.color[i],
                }
            })
            .collect();
        let pin_end = pins.iter().map(|q| q.end).max().unwrap_or(0);
        Placer {
            p,
            g,
            soft_sep,
            pins,
            pin_end,
        }
    }

    pub fn start(&self) -> Cursor {
        Cursor {
            max_end: self.pin_end,
            ..Cursor::default()
        }
    }

    /// The offset `f` would get after `cur`, before pinned fields are avoided.
    pub fn earliest(&self, cur: &Cursor, f: usize) -> u64 {
        let p = self.p;
        let mut x = cur.end.max(p.floor[f]);
        if p.color[f] != 0 {
            x = x.max(self.g.sep_start(cur.color.end_of_others(p.color[f])));
        }
        if self.soft_sep && p.class[f] != 0 {
            x = x.max(self.g.report_sep_start(cur.class.end_of_others(p.class[f])));
        }
        align_up(x, p.align[f])
    }

    /// Place `f` after `cur`; returns its offset and advances the cursor.
    pub fn place(&self, cur: &mut Cursor, f: usize) -> u64 {
        let p = self.p;
        let (size, align) = (p.size[f], p.align[f]);
        let mut x = self.earliest(cur, f);
        if !self.pins.is_empty() {
            x = self.clear_of_pins(x, f);
        }
        let end = x + size;
        cur.end = end;
        cur.max_end = cur.max_end.max(end);
        cur.late |= end > p.ceil[f];
        if size > 0 {
            if p.color[f] != 0 {
                cur.color.push(p.color[f], end);
            }
            if p.class[f] != 0 {
                cur.class.push(p.class[f], end);
            }
        }
        debug_assert!(x.is_multiple_of(align));
        x
    }

    /// Smallest aligned offset `>= x` at which `f` is clear of every pin.
    fn clear_of_pins(&self, mut x: u64, f: usize) -> u64 {
        let p = self.p;
        let (size, align, color) = (p.size[f], p.align[f], p.color[f]);
        loop {
            let mut moved = false;
            for q in &self.pins {
                // Overlap: x < q.end and x + size > q.start (zero-size fields
                // may touch but not sit strictly inside).
                let (mut lo, mut hi) = ((q.start + 1).saturating_sub(size), q.end);
                if color != 0 && q.color != 0 && color != q.color && size > 0 && q.end > q.start {
                    // Shared line: f must end by max_end_before(q.start) or
                    // start at sep_start(q.end).
                    let before = self.g.max_end_before(q.start);
                    lo = lo.min((before + 1).saturating_sub(size));
                    hi = hi.max(self.g.sep_start(q.end));
                }
                if x >= lo && x < hi {
                    x = align_up(hi, align);
                    moved = true;
                }
            }
            if !moved {
                return x;
            }
        }
    }

    /// Place the trailing flexible array ([`Problem::tail`]) after `cur`:
    /// after every field, pins included, and on a later line (at every
    /// phase) than any field of a conflicting colour, since its elements
    /// follow it.
    pub fn place_tail(&self, cur: &mut Cursor) -> u64 {
        let p = self.p;
        let Some(t) = p.tail else {
            return cur.max_end;
        };
        let mut x = self.earliest(cur, t).max(cur.max_end);
        for q in &self.pins {
            if p.color[t] != 0 && q.color != 0 && q.color != p.color[t] && q.end > q.start {
                x = x.max(self.g.sep_start(q.end));
            }
        }
        let x = align_up(x, p.align[t]);
        cur.end = x;
        cur.max_end = cur.max_end.max(x);
        cur.late |= x > p.ceil[t];
        x
    }

    /// Place a whole order of unpinned fields.
    pub fn place_all(&self, order: &[usize]) -> Placed {
        let mut placed = Placed {
            offset: vec![0; self.p.n],
            end: 0,
            size: 0,
            late: false,
            order: Vec::with_capacity(self.p.n),
        };
        self.place_into(order, &mut placed);
        placed
    }

    /// [`Placer::place_all`] into a reused buffer.
    pub fn place_into(&self, order: &[usize], out: &mut Placed) {
        let mut cur = self.start();
        out.offset.resize(self.p.n, 0);
        for &f in order {
            out.offset[f] = self.place(&mut cur, f);
        }
        for &i in &self.p.pinned {
            out.offset[i] = self.p.pin[i].unwrap_or(0);
        }
        if let Some(t) = self.p.tail {
            out.offset[t] = self.place_tail(&mut cur);
        }
        out.end = cur.max_end;
        out.size = align_up(cur.max_end, self.g.align);
        out.late = cur.late;
        if self.p.pinned.is_empty() {
            out.order.clear();
            out.order.extend_from_slice(order);
            out.order.extend(self.p.tail);
        } else {
            out.order = self.merge(order, &out.offset);
        }
    }

    /// All fields in layout order: the unpinned order merged with the pins
    /// by offset (a zero-size field before a sized one at the same offset).
    pub fn merge(&self, order: &[usize], offset: &[u64]) -> Vec<usize> {
        let p = self.p;
        if p.pinned.is_empty() {
            let mut out = order.to_vec();
            out.extend(p.tail);
            return out;
        }
        let key = |i: usize| (offset[i], p.size[i] > 0);
        let mut out = Vec::with_capacity(p.n);
        let mut pins = p.pinned.iter().copied().peekable();
        for &f in order {
            while let Some(&q) = pins.peek() {
                if key(q) <= key(f) {
                    out.push(q);
                    pins.next();
                } else {
                    break;
                }
            }
            out.push(f);
        }
        out.extend(pins);
        out.extend(p.tail);
        out
    }
}

/// A placed order.
#[derive(Clone, Debug)]
pub(crate) struct Placed {
    /// Offset of each field, by field index.
    pub offset: Vec<u64>,
    /// End of the last byte of any field (the size before tail padding).
    pub end: u64,
    pub size: u64,
    /// Some field breaks the author's order against a pinned field
    /// ([`Cursor::late`]): not a layout.
    pub late: bool,
    /// All fields (pinned ones included) in layout order.
    pub order: Vec<usize>,
}
