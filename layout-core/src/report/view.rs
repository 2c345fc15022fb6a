//! A layout read once, for every report on it.
//!
//! A [`LayoutView`] holds what the renderers ask of one layout: its rows in
//! reading order, the offset of every field, the hard conflicts, the lines
//! each hot path touches, the read-mostly lines, the soft costs and the
//! churn. The pahole-style table, the box diagrams, the JSON form, the
//! changelog and the `propose` summary all read the same view, so each of
//! these is computed once per layout however many sentences and tables
//! quote it. A [`ProposalView`] pairs the view of the declared layout with
//! the view of a verified proposal, and adds the runs of members the
//! proposal moves.

use super::moves::{moved_runs, MovedRun};
use crate::cost::{self, SoftLine, SoftWeights};
use crate::layout::{reported_conflicts, Layout, LineConflict, Slot};
use crate::model::Struct;
use crate::paths::{self, PathLines};
use crate::verify::VerifiedLayout;

/// Everything the reports read of one layout of one struct, computed once.
#[derive(Clone, Debug)]
pub struct LayoutView<'a> {
    pub strukt: &'a Struct,
    pub layout: &'a Layout,
    /// The slots in the order a reader (and C) sees them: by offset, a
    /// zero-size field before a sized one at the same offset, zero-size
    /// fields at one offset in segment order, ties otherwise in slot order.
    /// Slots that name no field of the struct are dropped.
    pub rows: Vec<Slot>,
    /// The offset of every field, by field index (`None`: not placed).
    pub offsets: Vec<Option<u64>>,
    /// The hard conflicts to report ([`reported_conflicts`]).
    pub conflicts: Vec<LineConflict>,
    /// The lines each hot path touches, in the struct's path order.
    pub paths: Vec<PathLines>,
    /// Distinct lines holding bytes of read-mostly fields ([`cost::read_lines`]).
    pub read_lines: u64,
    /// The soft costs charged line by line, at the default weights.
    pub soft_lines: Vec<SoftLine>,
    /// Members moved from the declaration order ([`super::churn`]).
    pub churn: u64,
}

impl<'a> LayoutView<'a> {
    /// Reads `l`, a layout of `s` (as declared, or a proposal through `Deref`).
    pub fn new(s: &'a Struct, l: &'a Layout) -> Self {
        let rows = ordered_slots(s, l);
        let churn = super::churn::of_rows(&rows);
        LayoutView {
            strukt: s,
            layout: l,
            offsets: l.offsets_by_field(s.fields.len()),
            conflicts: reported_conflicts(s, l),
            paths: paths::path_lines(s, l),
            read_lines: cost::read_lines(s, l),
            soft_lines: cost::soft_lines(s, l, &SoftWeights::default()),
            rows,
            churn,
        }
    }

    /// The lines that break the hard rule, ascending, each once.
    pub fn conflict_lines(&self) -> Vec<u64> {
        let mut lines: Vec<u64> = self.conflicts.iter().map(|c| c.line).collect();
        lines.sort_unstable();
        lines.dedup();
        lines
    }

    /// The total soft cost at the default weights.
    pub fn soft_cost(&self) -> u64 {
        self.soft_lines.iter().map(|sl| sl.weight).sum()
    }

    /// Field indices in reading order.
    pub fn order(&self) -> impl Iterator<Item = usize> + '_ {
        self.rows.iter().map(|sl| sl.field)
    }
}

/// A proposal read once: the declared layout, the verified proposal, and
/// the runs of members that leave the declared order.
#[derive(Clone, Debug)]
pub struct ProposalView<'a> {
    pub before: LayoutView<'a>,
    pub after: LayoutView<'a>,
    /// The proposal, as the verifier passed it.
    pub verified: &'a VerifiedLayout,
    /// Runs of members (of the proposal's struct, in its order) outside the
    /// longest run that keeps the declared relative order.
    pub moves: Vec<MovedRun>,
}

impl<'a> ProposalView<'a> {
    /// `before_s` and `after.strukt()` are the same struct (fields are
    /// matched by name).
    pub fn new(before_s: &'a Struct, before: &'a Layout, after: &'a VerifiedLayout) -> Self {
        let before = LayoutView::new(before_s, before);
        let after_view = LayoutView::new(after.strukt(), after);
        let moves = moved_runs(&before, &after_view);
        ProposalView {
            before,
            after: after_view,
            verified: after,
            moves,
        }
    }
}

/// The slots of `l` in reading order (see [`LayoutView::rows`]).
pub(crate) fn ordered_slots(s: &Struct, l: &Layout) -> Vec<Slot> {
    let mut slots: Vec<Slot> = l
        .slots
        .iter()
        .copied()
        .filter(|sl| sl.field < s.fields.len())
        .collect();
    slots.sort_by_key(|sl| {
        let f = &s.fields[sl.field];
        (sl.offset, f.size != 0, f.segment, sl.field)
    });
    slots
}
