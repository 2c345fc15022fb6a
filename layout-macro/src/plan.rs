//! From the model to a plan: run the solver within the macro's work budget,
//! and turn its layout into the sequence of fields, aligned markers and
//! padding that `#[repr(C)]` lays out at exactly the solver's offsets.

use crate::attr::{Input, Options};
use crate::model::Model;
use layout_core::place::{align_up, Cursor, Extent, Kind, Member};
use layout_core::{solve, Layout, Placement, Slot, Solution, SolveOptions};
use std::time::Duration;

/// The solver's deterministic work budget when the struct sets no
/// `work_limit`: the layout depends only on the struct and this number, never
/// on the machine or its load. Sized so that a debug build (proc-macro
/// dependencies unoptimised, as in a user's crate) expands a 32-field struct
/// in about 30 ms; see the `timing` module.
pub const DEFAULT_WORK_LIMIT: u64 = 50_000;

/// The safety stop when the struct sets no `time_limit_ms`: far above what
/// the work budget takes. If it fires, the expansion is a compile error,
/// never a different layout.
pub const DEFAULT_TIME_LIMIT_MS: u64 = 10_000;

/// Largest alignment of a marker type (`Align536870912`): the largest
/// rustc accepts, so a marker exists for every `repr(align(N))`.
const MAX_MARKER: u64 = crate::attr::MAX_ALIGN;

/// One item of the rewritten struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// The field with this declaration index.
    Field(usize),
    /// `[AlignN; 0]`: the next item starts at a multiple of N.
    Marker(u64),
    /// `[u8; N]`.
    Pad(u64),
}

/// The solver's answer for the model.
pub fn solve_model(model: &Model, options: &Options) -> Result<Solution, String> {
    let opts = SolveOptions {
        line: model.line,
        placement: Placement::Aligned,
        time_limit: Duration::from_millis(options.time_limit_ms.unwrap_or(DEFAULT_TIME_LIMIT_MS)),
        work_limit: options.work_limit.unwrap_or(DEFAULT_WORK_LIMIT),
        preset: options.preset,
        ..SolveOptions::default()
    };
    if !model.free.contains(&true) {
        let solution = solve(&model.strukt, &opts).map_err(|e| e.to_string())?;
        return reject_timed_out(solution, &opts);
    }
    // The free fields stay out of the solve and follow every other field.
    let kept: Vec<usize> = (0..model.free.len()).filter(|&i| !model.free[i]).collect();
    let mut sub = model.strukt.clone();
    sub.fields = kept
        .iter()
        .map(|&i| model.strukt.fields[i].clone())
        .collect();
    let mut solution = solve(&sub, &opts).map_err(|e| e.to_string())?;
    let planned = solution.layout.layout();
    let end = planned
        .slots
        .iter()
        .map(|s| s.offset + sub.fields[s.field].size)
        .max()
        .unwrap_or(0);
    let mut slots: Vec<Slot> = planned
        .slots
        .iter()
        .map(|s| Slot {
            field: kept[s.field],
            offset: s.offset,
        })
        .collect();
    slots.extend(
        (0..model.free.len())
            .filter(|&i| model.free[i])
            .map(|field| Slot { field, offset: end }),
    );
    let full = Layout {
        slots,
        ..planned.clone()
    };
    solution.layout = layout_core::verify(&model.strukt, &full).map_err(|e| {
        format!("cachelayout internal error: the layout with the free fields after the others does not verify ({e}); please report this")
    })?;
    reject_timed_out(solution, &opts)
}

/// A solution the safety stop cut short depends on the machine's speed:
/// an error, never a layout.
fn reject_timed_out(solution: Solution, opts: &SolveOptions) -> Result<Solution, String> {
    if solution.stopped_by_time {
        return Err(format!(
            "the solver hit its {} ms safety stop before its work budget of {} was spent (the machine \
             is overloaded, or the budget is too large for it); the layout would depend on the \
             machine's speed, so none is written; lower #[layout(work_limit = N)] or raise \
             #[layout(time_limit_ms = N)]",
            opts.time_limit.as_millis(),
            opts.work_limit
        ));
    }
    Ok(solution)
}

/// How the layout was chosen, for the report.
///
/// The note holds no time: it is part of the expansion, which must be the
/// same on every build.
pub fn note(solution: &Solution, options: &Options) -> String {
    let budget = options.work_limit.unwrap_or(DEFAULT_WORK_LIMIT);
    let size = solution.layout.size;
    if solution.optimal {
        format!(
            "layout by #[cachelayout::optimize]: smallest size that keeps the rule under the macro's size \
             model ({} B; solver: {})",
            size, solution.method
        )
    } else if size <= solution.lower_bound {
        format!(
            "layout by #[cachelayout::optimize]: smallest size that keeps the rule under the macro's size \
             model ({size} B, proven); the solver's work budget ({budget}) ran out before it proved the \
             order best for the other goals (soft costs, read-mostly lines, movement); raise it with \
             #[layout(work_limit = N)]"
        )
    } else {
        format!(
            "layout by #[cachelayout::optimize]: best verified heuristic layout ({} B, no layout under {} B \
             exists): the solver's work budget ({}) ran out; raise it with #[layout(work_limit = N)]",
            size, solution.lower_bound, budget
        )
    }
}

/// Appends `item`, merging a marker into a marker just before it (rounding
/// up to one power of two and then to another is rounding up to the larger).
fn push(out: &mut Vec<Item>, item: Item) {
    if let (Item::Marker(new), Some(Item::Marker(last))) = (item, out.last_mut()) {
        *last = (*last).max(new);
        return;
    }
    out.push(item);
}

/// The items that make `repr(C)` put every field at the layout's offset,
/// under the model's sizes: a marker (or padding, when no marker lands there)
/// wherever the layout leaves more room than the field's own alignment does,
/// line markers around every field of unknown size, and a trailing marker or
/// padding for the layout's alignment and size.
pub fn items(model: &Model, layout: &Layout) -> Vec<Item> {
    let line = model.line;
    let mut out = Vec::with_capacity(layout.slots.len() + 4);
    let mut end = 0u64;
    let mut align = 1u64;
    for slot in &layout.slots {
        let field = &model.strukt.fields[slot.field];
        let target = slot.offset;
        if model.free[slot.field] {
            // After every other field: its real size moves none of them.
            push(&mut out, Item::Field(slot.field));
            continue;
        }
        if model.known[slot.field].is_none() {
            // A block of whole lines of its own, whatever its real size.
            if align_up(end, line) != target {
                push(&mut out, Item::Pad(target - end));
            }
            push(&mut out, Item::Marker(line));
            push(&mut out, Item::Field(slot.field));
            push(&mut out, Item::Marker(line));
            align = align.max(line);
            end = target + field.size;
            continue;
        }
        reach(&mut out, end, target, field.align, layout.align, &mut align);
        push(&mut out, Item::Field(slot.field));
        align = align.max(field.align);
        end = target + field.size;
    }
    if layout.align > align {
        if align_up(end, layout.align) != layout.size {
            push(&mut out, Item::Pad(layout.size - end));
        }
        push(&mut out, Item::Marker(layout.align));
    } else if align_up(end, align) != layout.size {
        push(&mut out, Item::Pad(layout.size - end));
    }
    out
}

/// Items that move the next field, of alignment `field_align`, from `end` to
/// `target`: nothing when its own alignment does it, else the smallest
/// marker that lands exactly there (and does not raise the struct's
/// alignment past the layout's), else padding.
fn reach(
    out: &mut Vec<Item>,
    end: u64,
    target: u64,
    field_align: u64,
    max_align: u64,
    align: &mut u64,
) {
    if align_up(end, field_align) == target {
        return;
    }
    let mut m = field_align.max(1) * 2;
    while m <= max_align.min(MAX_MARKER) {
        if align_up(end, m) == target {
            push(out, Item::Marker(m));
            *align = (*align).max(m);
            return;
        }
        m *= 2;
    }
    push(out, Item::Pad(target - end));
}

/// Offsets (by field index), size and alignment that `repr(C)` gives `items`
/// under the model's sizes.
pub fn repr_c(model: &Model, items: &[Item]) -> (Vec<u64>, u64, u64) {
    let mut offsets = vec![0; model.strukt.fields.len()];
    let mut c = Cursor::new(Kind::Struct);
    for item in items {
        match *item {
            Item::Field(i) => {
                let f = &model.strukt.fields[i];
                offsets[i] = c.place(&Member::new(f.size, f.align));
            }
            Item::Marker(m) => {
                c.place(&Member::new(0, m));
            }
            Item::Pad(n) => {
                c.place(&Member::new(n, 1));
            }
        }
    }
    let Extent { size, align } = c.finish(1);
    (offsets, size, align)
}

/// The suggested order as Rust to paste: the struct with `#[repr(C)]`, its
/// fields (with their explicit class attributes) in the solver's order, and
/// `[u8; N]` padding or a `[cachelayout::align::AlignN; 0]` marker where the
/// layout leaves room (a marker only after a field of unknown size).
pub fn rust_struct(input: &Input, model: &Model, items: &[Item]) -> String {
    let generics = &input.generics;
    let where_clause = &generics.where_clause;
    let head = crate::types::display_tokens(&quote::quote!(#generics #where_clause));
    let mut out = format!("#[repr(C)] struct {}{} {{ ", input.ident, head);
    // Where `repr(C)` is, while every size so far is known.
    let (mut at, mut pads, mut marks) = (Some(Cursor::new(Kind::Struct)), 0, 0);
    for item in items {
        match *item {
            Item::Field(i) => {
                let f = &input.fields[i];
                if let Some(a) = &f.access {
                    out.push_str(&format!("#[layout({})] ", attribute(a)));
                }
                let vis = &f.vis;
                let vis = crate::types::display_tokens(&quote::quote!(#vis));
                if !vis.is_empty() {
                    out.push_str(&vis);
                    out.push(' ');
                }
                out.push_str(&format!("{}: {}, ", f.name, crate::types::display(&f.ty)));
                let field = &model.strukt.fields[i];
                match (at.as_mut(), model.known[i]) {
                    (Some(c), Some(_)) => {
                        c.place(&Member::new(field.size, field.align));
                    }
                    _ => at = None,
                }
            }
            Item::Marker(m) => match at.as_mut() {
                Some(c) => {
                    let n = align_up(c.end(), m) - c.end();
                    if n > 0 {
                        out.push_str(&format!("_pad{pads}: [u8; {n}], "));
                        pads += 1;
                    }
                    c.place(&Member::new(n, 1));
                }
                None => {
                    out.push_str(&format!(
                        "_align{marks}: [cachelayout::align::Align{m}; 0], "
                    ));
                    marks += 1;
                }
            },
            Item::Pad(n) => {
                out.push_str(&format!("_pad{pads}: [u8; {n}], "));
                pads += 1;
                if let Some(c) = at.as_mut() {
                    c.place(&Member::new(n, 1));
                }
            }
        }
    }
    let mut out = out.trim_end_matches([',', ' ']).to_string();
    out.push_str(" }");
    out
}

/// The `#[layout(..)]` contents of a class (the vocabulary's spelling).
fn attribute(access: &layout_core::Access) -> String {
    access.attribute()
}

#[cfg(test)]
mod tests {
    use super::*;
    use layout_core::{Access, Field, Slot, Struct};

    fn model(fields: Vec<(u64, u64, bool)>, line: u64) -> Model {
        let known = fields
            .iter()
            .map(|&(size, align, known)| {
                known.then_some(crate::size_model::SizeAlign { size, align })
            })
            .collect();
        let strukt = Struct::new(
            "S",
            fields
                .iter()
                .enumerate()
                .map(|(i, &(size, align, _))| {
                    Field::new(format!("f{i}"), "T", size, align).with_access(Access::Cold)
                })
                .collect(),
        );
        Model {
            free: vec![false; strukt.fields.len()],
            classes: strukt
                .fields
                .iter()
                .map(|f| vec![f.access.clone()])
                .collect(),
            strukt,
            known,
            line,
        }
    }

    fn layout(slots: &[(usize, u64)], size: u64, align: u64) -> Layout {
        Layout {
            slots: slots
                .iter()
                .map(|&(field, offset)| Slot { field, offset })
                .collect(),
            size,
            align,
            line: 64,
            placement: Placement::Aligned,
        }
    }

    fn round_trip(m: &Model, l: &Layout) -> Vec<Item> {
        let items = items(m, l);
        let (offsets, size, align) = repr_c(m, &items);
        for s in &l.slots {
            assert_eq!(offsets[s.field], s.offset, "field {} in {items:?}", s.field);
        }
        assert_eq!((size, align), (l.size, l.align), "{items:?}");
        items
    }

    #[test]
    fn markers_where_alignment_is_inserted() {
        // f0 (8 B) at 0, f1 (8 B) on the next line: a 64-byte marker.
        let m = model(vec![(8, 8, true), (8, 8, true)], 64);
        let items = round_trip(&m, &layout(&[(0, 0), (1, 64)], 128, 64));
        assert_eq!(
            items,
            vec![Item::Field(0), Item::Marker(64), Item::Field(1)]
        );
    }

    #[test]
    fn smallest_marker_and_padding() {
        // 1-byte field then a 4-byte field at 16: a 16-byte marker suffices.
        let m = model(vec![(1, 1, true), (4, 4, true)], 64);
        let items = round_trip(&m, &layout(&[(0, 0), (1, 16)], 32, 16));
        assert_eq!(
            items,
            vec![Item::Field(0), Item::Marker(16), Item::Field(1)]
        );
        // No power of two lands on 12 from 1 without raising the alignment.
        let items = round_trip(&m, &layout(&[(0, 0), (1, 12)], 16, 4));
        assert_eq!(items, vec![Item::Field(0), Item::Pad(11), Item::Field(1)]);
    }

    #[test]
    fn unknown_sizes_get_their_own_lines() {
        let m = model(vec![(8, 8, true), (64, 64, false), (1, 1, true)], 64);
        let items = round_trip(&m, &layout(&[(0, 0), (1, 64), (2, 128)], 192, 64));
        assert_eq!(
            items,
            vec![
                Item::Field(0),
                Item::Marker(64),
                Item::Field(1),
                Item::Marker(64),
                Item::Field(2)
            ]
        );
    }

    #[test]
    fn notes_say_how_the_layout_was_chosen() {
        let m = model(vec![(8, 8, true)], 64);
        let verified = layout_core::verify(&m.strukt, &layout(&[(0, 0)], 8, 8)).unwrap();
        let solution = |lower_bound, optimal| Solution {
            layout: verified.clone(),
            cost: Default::default(),
            lower_bound,
            optimal,
            proven_goals: if optimal { 5 } else { 0 },
            goals: layout_core::solve::Preset::Balanced.goals(),
            path_bounds: Vec::new(),
            churn_bound: 0,
            size_cap: None,
            work: 0,
            solve_ms: 3,
            stopped_by_time: false,
            method: layout_core::solve::Method::Exact,
        };
        let opts = Options::default();
        assert_eq!(
            note(&solution(8, true), &opts),
            "layout by #[cachelayout::optimize]: smallest size that keeps the rule under the macro's size \
             model (8 B; solver: exact)"
        );
        assert!(note(&solution(8, false), &opts)
            .contains("(8 B, proven); the solver's work budget (50000) ran out"));
        assert!(note(&solution(4, false), &opts)
            .contains("heuristic layout (8 B, no layout under 4 B exists)"));
    }

    #[test]
    fn the_safety_stop_is_an_error() {
        let m = model(vec![(8, 8, true)], 64);
        let verified = layout_core::verify(&m.strukt, &layout(&[(0, 0)], 8, 8)).unwrap();
        let mut solution = Solution {
            layout: verified,
            cost: Default::default(),
            lower_bound: 8,
            optimal: true,
            proven_goals: 5,
            goals: layout_core::solve::Preset::Balanced.goals(),
            path_bounds: Vec::new(),
            churn_bound: 0,
            size_cap: None,
            work: 0,
            solve_ms: 3,
            stopped_by_time: false,
            method: layout_core::solve::Method::Exact,
        };
        let opts = SolveOptions::default();
        assert!(reject_timed_out(solution.clone(), &opts).is_ok());
        solution.stopped_by_time = true;
        let err = reject_timed_out(solution, &opts).unwrap_err();
        assert!(
            err.contains("safety stop") && err.contains("work_limit"),
            "{err}"
        );
    }

    #[test]
    fn adjacent_unknown_sizes_share_a_marker() {
        let m = model(vec![(64, 64, false), (64, 64, false)], 64);
        let items = round_trip(&m, &layout(&[(0, 0), (1, 64)], 128, 64));
        assert_eq!(
            items,
            vec![
                Item::Marker(64),
                Item::Field(0),
                Item::Marker(64),
                Item::Field(1),
                Item::Marker(64)
            ]
        );
    }

    #[test]
    fn trailing_alignment() {
        let m = model(vec![(8, 8, true)], 64);
        let items = round_trip(&m, &layout(&[(0, 0)], 64, 64));
        assert_eq!(items, vec![Item::Field(0), Item::Marker(64)]);
    }
}
