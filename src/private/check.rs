//! The compile-time checks. Each returns `None` when all is well, or the
//! error message; the generated `const` item panics with it, so rustc shows
//! the message at the field it is about.
//!
//! These run inside rustc's const evaluator on the real offsets and sizes:
//! they are the reason the guarantee does not depend on the macro's size
//! model. They share no code with the solver.

use super::class::must_not_share;
use super::sweep::{breaks, neighbours, Reach, Sorted};
use super::{Class, FieldFacts, Info, Message, Plan};

/// The phases an instance can start at step by the struct's alignment (one
/// phase, 0, when the alignment is a whole line or more).
const fn phase_step(align: usize, line: usize) -> usize {
    if align == 0 {
        1
    } else if align >= line {
        line
    } else {
        align
    }
}

/// The first phase (offset of the struct's start within a line, a multiple
/// of `align`) at which `a` and `b` have bytes on one cache line, and that
/// line, counted from the line the struct starts on. Zero-sized fields hold
/// no bytes and share nothing.
pub const fn first_shared_line(
    a: &FieldFacts,
    b: &FieldFacts,
    align: usize,
    line: usize,
) -> Option<(usize, usize)> {
    if a.size == 0 || b.size == 0 || line == 0 {
        return None;
    }
    let step = phase_step(align, line);
    let mut phase = 0;
    while phase < line {
        let (a0, a1) = (
            (phase + a.offset) / line,
            (phase + a.offset + a.size - 1) / line,
        );
        let (b0, b1) = (
            (phase + b.offset) / line,
            (phase + b.offset + b.size - 1) / line,
        );
        if a0 <= b1 && b0 <= a1 {
            return Some((phase, if a0 > b0 { a0 } else { b0 }));
        }
        phase += step;
    }
    None
}

/// Whether lockless `a` and `b` share a line when the struct starts `phase`
/// bytes into a line; the line, counted from the struct's first.
const fn shared_at(a: &FieldFacts, b: &FieldFacts, phase: usize, line: usize) -> Option<usize> {
    if a.size == 0 || b.size == 0 || line == 0 {
        return None;
    }
    let (a0, a1) = (
        (phase + a.offset) / line,
        (phase + a.offset + a.size - 1) / line,
    );
    let (b0, b1) = (
        (phase + b.offset) / line,
        (phase + b.offset + b.size - 1) / line,
    );
    if a0 <= b1 && b0 <= a1 {
        Some(if a0 > b0 { a0 } else { b0 })
    } else {
        None
    }
}

/// Checks the whole struct at every phase `align` allows: one message for
/// the first phase where the rule breaks, naming every lockless field that
/// shares a line there and the fields it shares with, why a field whose
/// class came from the compiler (not its attribute or type name) has it,
/// and the struct's advice (the order the solver suggests).
///
/// Compares every pair of fields at every phase: the reference, for the
/// report and the tests. The generated checks call [`rule_check`].
pub const fn rule_message(info: &Info, align: usize) -> Option<Message> {
    let step = phase_step(align, info.line);
    let mut phase = 0;
    while phase < info.line {
        if let Some(m) = rule_message_at::<0>(info, phase, None) {
            return Some(m);
        }
        phase += step;
    }
    None
}

/// [`rule_message`] in O(n log n) steps when the rule holds (and about O(n)
/// per phase plus the message when it does not), for a struct of `N`
/// fields: what the generated checks call, so that rustc's const evaluator
/// can check structs of thousands of fields. Decides exactly what
/// [`rule_message`] decides, and gives the same message.
pub const fn rule_check<const N: usize>(info: &Info, align: usize) -> Option<Message> {
    if info.fields.len() != N || info.line == 0 {
        return rule_message(info, align);
    }
    let sorted = Sorted::<N>::new(info.fields);
    let step = phase_step(align, info.line);
    let line = info.line;
    if !breaks(info.fields, &sorted, Reach::AnyPhase { step, line }) {
        return None;
    }
    let mut phase = 0;
    while phase < line {
        if breaks(info.fields, &sorted, Reach::At { phase, line }) {
            return rule_message_at(info, phase, Some(&sorted));
        }
        phase += step;
    }
    None
}

/// The message for `phase`, or `None` when the rule holds there. With
/// `sorted`, a lockless field is compared with every other field only when
/// a field it must not share with sits next to it (the message is the same).
const fn rule_message_at<const N: usize>(
    info: &Info,
    phase: usize,
    sorted: Option<&Sorted<N>>,
) -> Option<Message> {
    let mut m = Message::new()
        .str("cachelayout: ")
        .code(info.name)
        .str(" breaks the rule when it starts ");
    m = if phase == 0 {
        m.str("at a ").num(info.line).str("-byte line boundary")
    } else {
        m.num(phase)
            .str(" bytes into a ")
            .num(info.line)
            .str("-byte line")
    };
    m = m.str(": ");
    let mut broken = false;
    let mut i = 0;
    while i < info.fields.len() {
        if broken && m.is_full() {
            // Nothing more would show.
            break;
        }
        let a = &info.fields[i];
        let mut partners = 0;
        let mut j = if a.size == 0 || !matches!(a.rule(), Class::Lockless(_)) {
            // It carries no check: must_not_share is false for every `b`.
            info.fields.len()
        } else if let Some(sorted) = sorted {
            if has_partner(info, sorted, i, phase) {
                0
            } else {
                info.fields.len()
            }
        } else {
            0
        };
        while j < info.fields.len() {
            let b = &info.fields[j];
            if must_not_share(a, i, b, j) {
                if let Some(line) = shared_at(a, b, phase, info.line) {
                    if partners == 0 {
                        if broken {
                            m = m.str("; ");
                        }
                        m = describe(m, a)
                            .str(" shares cache line ")
                            .num(line)
                            .str(" with ");
                        m = describe(m, b);
                    } else {
                        m = m.str(", ").code(b.name);
                    }
                    partners += 1;
                    broken = true;
                }
            }
            j += 1;
        }
        i += 1;
    }
    if !broken {
        return None;
    }
    m = class_notes(m, info);
    if let Some(plan) = info.plan {
        m = plan_mismatch(m, info, &plan);
    }
    if !info.advice.is_empty() {
        m = m.str("; ").str(info.advice);
    }
    Some(m)
}

/// Whether lockless field `i` shares a line at `phase` with a field it must
/// not share with: only its neighbours in `sorted` can.
const fn has_partner<const N: usize>(
    info: &Info,
    sorted: &Sorted<N>,
    i: usize,
    phase: usize,
) -> bool {
    let line = info.line;
    let (from, to) = neighbours(info.fields, sorted, i, Reach::At { phase, line });
    let mut k = from;
    while k < to {
        let j = sorted.order[k];
        if must_not_share(&info.fields[i], i, &info.fields[j], j) {
            return true;
        }
        k += 1;
    }
    false
}

/// Explains each field whose class the compiler's answer (its type's
/// `AccessClass`) raised above the macro's guess from the type name.
const fn class_notes(mut m: Message, info: &Info) -> Message {
    let mut i = 0;
    while i < info.fields.len() {
        let f = &info.fields[i];
        if !f.explicit && f.class.rank() > f.guess.rank() {
            m = m
                .str("; ")
                .code(f.name)
                .str(" counts as ")
                .str(f.class.word())
                .str(" because its type ")
                .code(f.ty)
                .str(" holds such data (its `cachelayout::AccessClass`), though the type's name made the macro guess ")
                .str(f.guess.word())
                .str(": write ")
                .str(f.class.attribute())
                .str(" on it and give it lines of its own (#[cachelayout::optimize] does both)");
        }
        i += 1;
    }
    m
}

/// Checks `#[layout(size = .., align = ..)]` on `field` against its real
/// size and alignment.
pub const fn hint_message(info: &Info, field: usize, size: usize, align: usize) -> Option<Message> {
    let f = &info.fields[field];
    hint_mismatch(f.name, f.ty, f.size, f.align, size, align)
}

/// [`hint_message`] from the field's name and type and rustc's size and
/// alignment of the type: what a generic struct's definition checks for a
/// hint on a field whose type does not depend on the parameters.
pub const fn hint_mismatch(
    name: &str,
    ty: &str,
    real_size: usize,
    real_align: usize,
    size: usize,
    align: usize,
) -> Option<Message> {
    if real_size == size && real_align == align {
        return None;
    }
    let m = Message::new()
        .str("cachelayout: wrong size hint on ")
        .code(name)
        .str(": ")
        .code(ty)
        .str(" has size ")
        .num(real_size)
        .str(" and alignment ")
        .num(real_align)
        .str(", the hint says size = ")
        .num(size)
        .str(", align = ")
        .num(align)
        .str("; write #[layout(size = ")
        .num(real_size)
        .str(", align = ")
        .num(real_align)
        .str(")]");
    Some(m)
}

/// Checks that pinned `field` sits at `declared`, its offset in the struct
/// as declared (laid out as `repr(C)`).
pub const fn pinned_message(info: &Info, field: usize, declared: usize) -> Option<Message> {
    let f = &info.fields[field];
    if f.offset == declared {
        return None;
    }
    let mut m = Message::new()
        .str("cachelayout: pinned field ")
        .code(f.name)
        .str(" must stay at offset ")
        .num(declared)
        .str(", where the struct as declared (repr(C)) has it, but the layout puts it at offset ")
        .num(f.offset);
    if let Some(plan) = info.plan {
        m = plan_mismatch(m, info, &plan);
    }
    Some(m)
}

/// `read-mostly `config` (bytes 16..48)`, `lockless `tail` (writer group
/// `producer`, bytes 8..16)`.
const fn describe(m: Message, f: &FieldFacts) -> Message {
    let word = if f.lock_word {
        "lock word"
    } else {
        f.class.word()
    };
    let mut m = m.str(word).str(" ").code(f.name).str(" (");
    if let Class::Lockless(Some(group)) = f.class {
        m = m.str("writer group ").code(group).str(", ");
    }
    m.str("bytes ")
        .num(f.offset)
        .str("..")
        .num(f.offset + f.size)
        .str(")")
}

/// Why a planned layout can break at compile time: a field whose real size
/// or alignment differs from what the plan assumed.
const fn plan_mismatch(m: Message, info: &Info, plan: &Plan) -> Message {
    let mut i = 0;
    while i < info.fields.len() && i < plan.fields.len() {
        let real = &info.fields[i];
        let planned = &plan.fields[i];
        if let Some(size) = planned.size {
            if size != real.size || planned.align != real.align {
                return m
                    .str("; #[cachelayout::optimize] planned this layout assuming ")
                    .code(real.name)
                    .str(" has size ")
                    .num(size)
                    .str(" and alignment ")
                    .num(planned.align)
                    .str(", but rustc gives it size ")
                    .num(real.size)
                    .str(" and alignment ")
                    .num(real.align)
                    .str(": add #[layout(size = ")
                    .num(real.size)
                    .str(", align = ")
                    .num(real.align)
                    .str(")] to it");
            }
        }
        i += 1;
    }
    m.str("; the planned sizes all match rustc's, so this is a cachelayout bug: please report it")
}
