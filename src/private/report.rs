//! The runtime side of `CacheLayout`: the layout-core model of a struct from
//! its real offsets and sizes, and the report printed from it.

use super::{Class, Info};
use crate::CacheLayout;
use layout_core::layout::reported_conflicts;
use layout_core::{Access, Field, Layout, Placement, Slot, Struct};

/// The struct (fields in declaration order, real sizes) and its real layout.
pub fn model<T: CacheLayout>() -> (Struct, Layout) {
    let info: Info = T::__INFO;
    let fields = info
        .fields
        .iter()
        .map(|f| {
            let mut field = Field::new(f.name, f.ty, f.size as u64, f.align as u64)
                .with_access(access(f.class));
            field.pinned = f.pinned;
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

/// The pahole-style table, then how the rule was checked and, for
/// `#[cachelayout::optimize]`, how the layout was chosen.
pub fn report<T: CacheLayout>() -> String {
    let info: Info = T::__INFO;
    let (s, l) = model::<T>();
    let mut out = layout_core::report::table(&s, &l);
    let placements = l.phases().len();
    let broken = !reported_conflicts(&s, &l).is_empty();
    let where_ = if placements == 1 {
        "wherever an instance sits, as it always starts on a cache line boundary".to_string()
    } else {
        format!(
            "at all {placements} offsets within a {}-byte line that its {}-byte alignment lets an instance start at",
            l.line, l.align
        )
    };
    let verdict = match (info.checked, broken) {
        (true, _) => format!("the rule holds {where_}; asserted at compile time"),
        (false, false) => {
            format!("the rule holds {where_}; report_only: not asserted at compile time")
        }
        (false, true) => {
            "the rule is broken on the lines marked !!! (report_only: not asserted at compile \
             time); #[cachelayout::optimize] writes a layout that keeps it"
                .to_string()
        }
    };
    out.push_str(&format!("cachelayout: {verdict}\n"));
    if let Some(plan) = info.plan {
        out.push_str(&format!("cachelayout: {}\n", plan.note));
        let moved: Vec<&str> = info
            .fields
            .iter()
            .zip(plan.fields)
            .filter(|(real, planned)| real.offset != planned.offset)
            .map(|(real, _)| real.name)
            .collect();
        if !moved.is_empty() || plan.size != l.size as usize {
            out.push_str(&format!(
                "cachelayout: planned size {} B, real size {} B; offsets differ from the plan for: {} \
                 (sizes the macro estimated differ from rustc's; #[layout(size = .., align = ..)] hints fix the plan)\n",
                plan.size,
                l.size,
                if moved.is_empty() { "none".to_string() } else { moved.join(", ") }
            ));
        }
    }
    out
}

fn access(class: Class) -> Access {
    match class {
        Class::ReadMostly => Access::ReadMostly,
        Class::LockedWrite(lock) => Access::LockedWrite {
            lock: lock.to_string(),
        },
        Class::Lockless(group) => Access::Lockless {
            group: group.map(str::to_string),
        },
        Class::Cold => Access::Cold,
    }
}
