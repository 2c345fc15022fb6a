//! The runtime side of `CacheLayout`: the report (the layout in Rust syntax
//! with the real offsets, sizes, classes and cache lines), and, with the
//! `model` feature, the layout-core model of the struct. The report needs
//! nothing but this crate, so macro users' runtime stays lean.

use super::check::rule_message;
use super::class::must_not_share;
use super::{FieldFacts, Info};
use crate::CacheLayout;
use std::fmt::Write as _;

/// The struct (fields in declaration order, real sizes) and its real layout.
#[cfg(feature = "model")]
pub fn model<T: CacheLayout>() -> (layout_core::Struct, layout_core::Layout) {
    use layout_core::{Field, Layout, Placement, Slot, Struct};
    let info: Info = T::__INFO;
    let fields = info
        .fields
        .iter()
        .map(|f| {
            let mut field = Field::new(f.name, f.ty, f.size as u64, f.align as u64)
                .with_access(f.class.to_model());
            field.pinned = f.pinned;
            field.lock_word = f.lock_word;
            field
        })
        .collect();
    let strukt = Struct::new(info.name, fields);
    let mut slots: Vec<Slot> = info
        .fields
        .iter()
        .enumerate()
        .map(|(field, f)| Slot {
            field,
            offset: f.offset as u64,
        })
        .collect();
    slots.sort_by_key(|s| (s.offset, s.field));
    let layout = Layout {
        slots,
        size: ::core::mem::size_of::<T>() as u64,
        align: ::core::mem::align_of::<T>() as u64,
        line: info.line as u64,
        placement: Placement::Aligned,
    };
    (strukt, layout)
}

/// `Ring<u64>` from `my_crate::ring::Ring<u64>`: the path of the struct
/// itself dropped, its type arguments as rustc names them.
fn short_name<T>() -> &'static str {
    let full = ::core::any::type_name::<T>();
    let head = full.find('<').unwrap_or(full.len());
    let start = full[..head].rfind("::").map_or(0, |i| i + 2);
    &full[start..]
}

/// Fields that break the rule on `line` (counted from the struct's first)
/// when the struct starts on a line boundary.
fn broken_on_line(info: &Info, line: usize) -> bool {
    let on = |f: &FieldFacts| {
        f.size > 0 && f.offset / info.line <= line && (f.offset + f.size - 1) / info.line >= line
    };
    info.fields.iter().enumerate().any(|(i, a)| {
        on(a)
            && info
                .fields
                .iter()
                .enumerate()
                .any(|(j, b)| on(b) && must_not_share(a, i, b, j))
    })
}

/// The layout in Rust syntax with a comment per field (offset, size, class),
/// a marker per cache line (`!!!` where the rule breaks), then how the rule
/// was checked, how the layout was chosen, and the fields whose size the
/// macro could not know, with the hint that recovers their cost.
pub fn report<T: CacheLayout>() -> String {
    let info: Info = T::__INFO;
    let (size, align, line) = (
        ::core::mem::size_of::<T>(),
        ::core::mem::align_of::<T>(),
        info.line,
    );
    let lines = size.div_ceil(line);
    let mut out = format!(
        "#[repr(C)] // size {size} B, align {align} B, {lines} line{} of {line} B\nstruct {} {{\n",
        if lines == 1 { "" } else { "s" },
        short_name::<T>()
    );
    let mut order: Vec<usize> = (0..info.fields.len()).collect();
    order.sort_by_key(|&i| (info.fields[i].offset, i));
    let (mut end, mut shown_line) = (0usize, usize::MAX);
    let width = info
        .fields
        .iter()
        .map(|f| f.name.len() + f.ty.len() + 6)
        .max()
        .unwrap_or(0);
    let line_header = |out: &mut String, at: usize, shown: &mut usize| {
        let l = at / line;
        if *shown != l && at < size {
            let mark = if broken_on_line(&info, l) {
                " !!! breaks the rule"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "    // --- line {l} (bytes {}..{}){mark} ---",
                l * line,
                (l + 1) * line
            );
            *shown = l;
        }
    };
    for &i in &order {
        let f = &info.fields[i];
        if f.offset > end {
            line_header(&mut out, end, &mut shown_line);
            let _ = writeln!(out, "    // {} bytes of padding", f.offset - end);
        }
        line_header(&mut out, f.offset, &mut shown_line);
        let decl = format!("{}: {},", f.name, f.ty);
        let _ = writeln!(
            out,
            "    {decl:<width$} // offset {}, size {}, {}{}",
            f.offset,
            f.size,
            f.class.text(),
            if f.lock_word { ", lock word" } else { "" }
        );
        end = end.max(f.offset + f.size);
    }
    if size > end {
        line_header(&mut out, end, &mut shown_line);
        let _ = writeln!(out, "    // {} bytes of padding", size - end);
    }
    out.push_str("}\n");
    let step = if align >= line { line } else { align.max(1) };
    let placements = line / step;
    let where_ = if placements == 1 {
        "wherever an instance sits, as it always starts on a cache line boundary".to_string()
    } else {
        format!(
            "at all {placements} offsets within a {line}-byte line that its {align}-byte alignment lets an instance start at"
        )
    };
    let verdict = match (info.checked, rule_message(&info, align)) {
        (true, _) => format!("the rule holds {where_}; asserted at compile time"),
        (false, None) => {
            format!("the rule holds {where_}; report_only: not asserted at compile time")
        }
        (false, Some(m)) => format!(
            "the rule is broken (report_only: not asserted at compile time): {}",
            m.as_str().trim_start_matches("cachelayout: ")
        ),
    };
    let _ = writeln!(out, "cachelayout: {verdict}");
    if let Some(edges) = super::edges::note(&info, size, align) {
        let _ = writeln!(out, "cachelayout: {edges}");
    }
    if let Some(plan) = info.plan {
        let _ = writeln!(out, "cachelayout: {}", plan.note);
        let moved: Vec<&str> = info
            .fields
            .iter()
            .zip(plan.fields)
            .filter(|(real, planned)| planned.size.is_some() && real.offset != planned.offset)
            .map(|(real, _)| real.name)
            .collect();
        if !moved.is_empty() {
            let _ = writeln!(
                out,
                "cachelayout: planned size {} B, real size {size} B; offsets differ from the plan for: {} \
                 (sizes the macro estimated differ from rustc's; #[layout(size = .., align = ..)] hints fix the plan)",
                plan.size,
                moved.join(", ")
            );
        }
        unknown_sizes(&mut out, &info, &plan, line);
    }
    out
}

/// The fields the macro could not size: each got whole cache lines of its
/// own; with a hint of its real size and alignment the solver packs it.
fn unknown_sizes(out: &mut String, info: &Info, plan: &super::Plan, line: usize) {
    let unknown: Vec<(&FieldFacts, usize)> = info
        .fields
        .iter()
        .zip(plan.fields)
        .filter(|(_, planned)| planned.size.is_none() && planned.alone)
        .map(|(real, _)| {
            let cost = if real.size == 0 {
                line
            } else {
                real.size.next_multiple_of(line) - real.size
            };
            (real, cost)
        })
        .collect();
    let after: Vec<String> = info
        .fields
        .iter()
        .zip(plan.fields)
        .filter(|(_, planned)| planned.size.is_none() && !planned.alone)
        .map(|(real, _)| format!("`{}` ({})", real.name, real.ty))
        .collect();
    if !after.is_empty() {
        let _ = writeln!(
            out,
            "cachelayout: the macro could not size {}; no field must stay off {} lines, so {} after every \
             other field, where {} size moves none of them (no padding)",
            after.join(", "),
            if after.len() == 1 { "its" } else { "their" },
            if after.len() == 1 { "it goes" } else { "they go" },
            if after.len() == 1 { "its" } else { "their" },
        );
    }
    if unknown.is_empty() {
        return;
    }
    let total: usize = unknown.iter().map(|(_, c)| c).sum();
    let _ = writeln!(
        out,
        "cachelayout: the macro could not size {} field{}, placed on whole lines of their own (up to {total} B of padding); \
         hints with rustc's values let the solver pack them:",
        unknown.len(),
        if unknown.len() == 1 { "" } else { "s" }
    );
    for (f, cost) in unknown {
        let _ = writeln!(
            out,
            "  `{}` ({}): up to {cost} B; #[layout(size = {}, align = {})]",
            f.name, f.ty, f.size, f.align
        );
    }
}
