//! The compile-time check (`__private::rule_message`, which the
//! generated `const` item calls) against layout-core's independent
//! verifier, on random well-formed layouts: both must find a broken rule on
//! exactly the same layouts.

use cachelayout::__private::{rule_message, Class, FieldFacts, Info};
use cachelayout::core::{verify, Access, Field, Layout, Placement, Slot, Struct, VerifyError};
use proptest::prelude::*;

fn class_of(k: u8) -> Class {
    match k % 6 {
        0 | 1 => Class::ReadMostly,
        2 => Class::Lockless(None),
        3 => Class::Lockless(Some("g")),
        4 => Class::LockedWrite("m"),
        _ => Class::Cold,
    }
}

fn access_of(c: Class) -> Access {
    match c {
        Class::ReadMostly => Access::ReadMostly,
        Class::LockedWrite(l) => Access::LockedWrite { lock: l.into() },
        Class::Lockless(g) => Access::Lockless {
            group: g.map(Into::into),
        },
        Class::Cold => Access::Cold,
    }
}

/// A field as (size, alignment exponent, class, gap before it).
type FieldSpec = (usize, u32, u8, usize);

/// Fields laid out in order, an extra struct alignment exponent, the line size.
fn layout_strategy() -> impl Strategy<Value = (Vec<FieldSpec>, u32, usize)> {
    (
        prop::collection::vec((0usize..80, 0u32..4, any::<u8>(), 0usize..70), 1..8),
        0u32..8,
        prop::sample::select(vec![32usize, 64, 128]),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn const_check_agrees_with_verify((fields, extra_align, line) in layout_strategy()) {
        let mut facts = Vec::new();
        let mut end = 0usize;
        let mut align = 1usize << extra_align;
        for (i, &(size, a, k, gap)) in fields.iter().enumerate() {
            let a = 1usize << a;
            let size = size.next_multiple_of(a);
            let offset = (end + gap).next_multiple_of(a);
            end = offset + size;
            align = align.max(a);
            facts.push(FieldFacts {
                name: Box::leak(format!("f{i}").into_boxed_str()),
                ty: "T",
                offset,
                size,
                align: a,
                class: class_of(k),
                guess: class_of(k),
                explicit: true,
                pinned: false,
            });
        }
        let size = end.next_multiple_of(align);
        let facts: &'static [FieldFacts] = Box::leak(facts.into_boxed_slice());
        let info = Info { name: "S", line, fields: facts, checked: true, advice: "", plan: None };

        // What the generated code asserts: one check for the struct.
        let broken = rule_message(&info, align).is_some();
        let access: Vec<Access> = facts.iter().map(|f| access_of(f.class)).collect();

        let s = Struct::new("S", facts.iter().zip(&access).map(|(f, a)| {
            Field::new(f.name, "T", f.size as u64, f.align as u64).with_access(a.clone())
        }).collect());
        let l = Layout {
            slots: facts.iter().enumerate().map(|(field, f)| Slot { field, offset: f.offset as u64 }).collect(),
            size: size as u64,
            align: align as u64,
            line: line as u64,
            placement: Placement::Aligned,
        };
        let verdict = verify(&s, &l);
        prop_assert!(matches!(verdict, Ok(_) | Err(VerifyError::HardRule { .. })), "{verdict:?}");
        prop_assert_eq!(broken, verdict.is_err());
    }
}

#[test]
fn message_names_fields_line_and_phase() {
    static FIELDS: [FieldFacts; 2] = [
        FieldFacts {
            name: "config",
            ty: "u64",
            offset: 0,
            size: 8,
            align: 8,
            class: Class::ReadMostly,
            guess: Class::ReadMostly,
            explicit: true,
            pinned: false,
        },
        FieldFacts {
            name: "hits",
            ty: "AtomicU64",
            offset: 64,
            size: 8,
            align: 8,
            class: Class::Lockless(None),
            guess: Class::Lockless(None),
            explicit: true,
            pinned: false,
        },
    ];
    let info = Info {
        name: "Stats",
        line: 64,
        fields: &FIELDS,
        checked: true,
        advice: "advice",
        plan: None,
    };
    // 0..8 and 64..72 lie on lines 0 and 1 at every phase, line-aligned or
    // 8-byte aligned.
    assert!(rule_message(&info, 64).is_none());
    assert!(rule_message(&info, 8).is_none());
    static NEAR: [FieldFacts; 2] = [
        FieldFacts {
            name: "config",
            ty: "u64",
            offset: 0,
            size: 8,
            align: 8,
            class: Class::ReadMostly,
            guess: Class::ReadMostly,
            explicit: true,
            pinned: false,
        },
        FieldFacts {
            name: "hits",
            ty: "AtomicU64",
            offset: 56,
            size: 8,
            align: 8,
            class: Class::Lockless(Some("w")),
            guess: Class::Lockless(Some("w")),
            explicit: true,
            pinned: false,
        },
    ];
    let info = Info {
        name: "Stats",
        line: 64,
        fields: &NEAR,
        checked: true,
        advice: "suggested order: x",
        plan: None,
    };
    let m = rule_message(&info, 8).expect("they share line 0");
    assert_eq!(
        m.as_str(),
        "cachelayout: `Stats` breaks the rule when it starts at a 64-byte line boundary: lockless \
         `hits` (writer group `w`, bytes 56..64) shares cache line 0 with read-mostly `config` \
         (bytes 0..8); suggested order: x"
    );
}
