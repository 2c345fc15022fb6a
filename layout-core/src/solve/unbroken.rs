//! The struct without its paddings: seeds where members cross the
//! author's line breaks.
//!
//! A `CACHELINE_PADDING()` is a line break, not a wall
//! ([`crate::segments`]): members may cross it into a part that holds
//! their class, and cold ones anywhere. The constructions repair their
//! orders to the tree by sending strays back to the part they were
//! declared in, so they seldom find the layouts that use this freedom. This
//! module solves the struct with its paddings taken out (a solve of its
//! own, on a share of the work budget, where nothing keeps a member in its
//! part), and puts the paddings back into that layout's order at every
//! choice of places (in their order) where the next member starts a line:
//! a padding there moves nothing. The orders that keep the tree are seeds
//! of the whole search; the others are repaired like any other candidate.
//! Nothing here is a bound: the seeds are placed, evaluated and verified
//! like any order.

use super::budget::Work;
use super::driver::{solve_at, Pass};
use super::geometry::Geometry;
use super::parts;
use super::problem::Problem;
use super::{Preset, SolveOptions};
use crate::model::{Placement, Struct};
use crate::segments::Marker;

/// Most orders one layout of the struct without paddings gives.
const MAX_SEEDS: usize = 256;

/// Orders of the free fields from a layout of `s` without its paddings,
/// the paddings put back where the next member starts a line; empty when
/// `s` has no padding among its line breaks.
pub(super) fn seeds(
    s: &Struct,
    p: &Problem,
    opts: &SolveOptions,
    pass: Pass,
    work: &mut Work,
) -> Vec<Vec<usize>> {
    let pads: Vec<usize> = s
        .breaks
        .iter()
        .copied()
        .filter(|&i| {
            Marker::of(&s.fields[i]) == Some(Marker::Padding)
                && p.pin[i].is_none()
                && p.tail != Some(i)
        })
        .collect();
    if pads.is_empty() || !work.left() {
        return Vec::new();
    }
    let kept: Vec<usize> = (0..s.fields.len()).filter(|i| !pads.contains(i)).collect();
    let Some(relaxed) = without(s, &kept) else {
        return Vec::new();
    };
    let sub_opts = SolveOptions {
        work_limit: work.remaining() / 4,
        time_limit: work.time_left().unwrap_or(std::time::Duration::MAX),
        preset: match opts.preset {
            Preset::MinDiff => Preset::Balanced,
            other => other,
        },
        ..opts.clone()
    };
    let Ok(sol) = solve_at(&relaxed, &sub_opts, pass) else {
        return Vec::new();
    };
    work.spend(sol.work);
    if sol.stopped_by_time {
        work.mark_timed_out();
    }
    // The layout's order of the free fields, with each one's offset.
    let mut placed: Vec<(u64, usize)> = sol
        .layout
        .layout()
        .slots
        .iter()
        .map(|sl| (sl.offset, kept[sl.field]))
        .filter(|&(_, f)| p.pin[f].is_none() && p.tail != Some(f))
        .collect();
    placed.sort_by_key(|&(o, f)| (o, p.size[f] > 0, f));
    let order: Vec<usize> = placed.iter().map(|&(_, f)| f).collect();
    let mut out = Vec::new();
    // The layout's lines given parts between the breaks ([`super::parts`]):
    // members across the breaks as the tree allows, at the layout's size.
    let l = sol.layout.layout();
    let g = match opts.placement {
        Placement::Aligned => Geometry::aligned(opts.line, l.align),
        Placement::Offset(o) => Geometry::at_offset(opts.line, l.align, o),
        Placement::Offsets(_) => Geometry::aligned(opts.line, 1),
    };
    if parts::applies(p, &g) {
        if let Some(seed) = parts::arrange(p, &g, &placed, work) {
            out.push(seed);
        }
    }
    // Where a padding moves nothing: before a member that starts a line
    // (after the first), or at the end.
    let line = opts.line;
    let mut places: Vec<usize> = (1..order.len())
        .filter(|&k| placed[k].0.is_multiple_of(line) && placed[k].0 > 0)
        .collect();
    places.push(order.len());
    places.dedup();
    let mut choice = vec![0usize; pads.len()];
    loop {
        let mut seed = Vec::with_capacity(order.len() + pads.len());
        let mut next = 0;
        for (k, &f) in order.iter().enumerate() {
            while next < pads.len() && places[choice[next]] == k {
                seed.push(pads[next]);
                next += 1;
            }
            seed.push(f);
        }
        seed.extend_from_slice(&pads[next..]);
        if !p.in_segment_order(&seed) {
            p.to_segment_order(&mut seed);
        }
        if !out.contains(&seed) {
            out.push(seed);
        }
        if out.len() >= MAX_SEEDS || !advance(&mut choice, places.len()) {
            return out;
        }
    }
}

/// The next nondecreasing choice of `choice.len()` places out of `places`;
/// false after the last.
fn advance(choice: &mut [usize], places: usize) -> bool {
    let mut k = choice.len();
    while k > 0 {
        k -= 1;
        if choice[k] + 1 < places {
            choice[k] += 1;
            let v = choice[k];
            choice[k + 1..].iter_mut().for_each(|c| *c = v);
            return true;
        }
    }
    false
}

/// `s` with only the fields `kept` (by index): their segments, blocks,
/// declarations and paths kept, the line breaks gone.
fn without(s: &Struct, kept: &[usize]) -> Option<Struct> {
    let index = |f: usize| kept.iter().position(|&k| k == f);
    let remap = |groups: &[Vec<usize>]| -> Vec<Vec<usize>> {
        groups
            .iter()
            .map(|g| g.iter().filter_map(|&f| index(f)).collect::<Vec<usize>>())
            .filter(|g| !g.is_empty())
            .collect()
    };
    let mut out = Struct::new(
        format!("{}.unbroken", s.name),
        kept.iter().map(|&i| s.fields[i].clone()).collect(),
    );
    // The paddings' alignment stays: the seeds are laid out at it.
    out.min_align = s.natural_align();
    out.paths.clone_from(&s.paths);
    out.blocks = remap(&s.blocks);
    out.lists = remap(&s.lists);
    (!out.fields.is_empty()).then_some(out)
}
