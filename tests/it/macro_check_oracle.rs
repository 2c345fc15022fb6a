//! The compile-time check (`__private::rule_message`, which the
//! generated `const` item calls) against layout-core's independent
//! verifier, on random well-formed layouts: both must find a broken rule on
//! exactly the same layouts; and, for every pair of access classes, the
//! vocabulary, the verifier, the solver, the macros' code generation and
//! the runtime's rule agree.

use cachelayout::__private::{rule_check, rule_message, Class, FieldFacts, Info};
use cachelayout::core::{verify, Access, Field, Layout, Placement, Slot, Struct, VerifyError};
use proptest::prelude::*;

/// A class drawn from [`EveryClass`], which holds a field of every class
/// (the pair test below checks it), so a new class is drawn as soon as it
/// has its field there; read-mostly is drawn twice as often, as the fields
/// lockless ones must avoid.
fn class_of(k: u8) -> Class {
    let every = <EveryClass as cachelayout::CacheLayout>::__INFO.fields;
    match (k as usize) % (every.len() + 1) {
        i if i < every.len() => every[i].class,
        _ => Class::ReadMostly,
    }
}

fn access_of(c: Class) -> Access {
    c.to_model()
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
    #![proptest_config(crate::sweep::proptest_config(2000, 400))]
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
                // Some locks are lock words (only locked fields are).
                lock_word: k % 12 == 4,
            });
        }
        let size = end.next_multiple_of(align);
        let facts: &'static [FieldFacts] = Box::leak(facts.into_boxed_slice());
        let info = Info { name: "S", line, fields: facts, checked: true, advice: "", plan: None };

        // What the generated code asserts: one check for the struct.
        let broken = rule_message(&info, align).is_some();
        let access: Vec<Access> = facts.iter().map(|f| access_of(f.class)).collect();

        let s = Struct::new("S", facts.iter().zip(&access).map(|(f, a)| {
            let mut field = Field::new(f.name, "T", f.size as u64, f.align as u64).with_access(a.clone());
            field.lock_word = f.lock_word;
            field
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

/// `rule_check::<N>`, the generated checks' sweep, for `info`'s length.
fn fast_check(info: &Info, align: usize) -> Option<String> {
    macro_rules! by_len {
        ($($n:literal)*) => {
            match info.fields.len() {
                $($n => rule_check::<$n>(info, align),)*
                n => panic!("no case for {n} fields"),
            }
        };
    }
    by_len!(0 1 2 3 4 5 6 7 8 9 10 11 12).map(|m| m.as_str().to_string())
}

/// Fields laid out in order, the declaration order as a rotation and a
/// reversal of it, the struct's alignment exponent, the line size.
type SweepCase = (Vec<FieldSpec>, usize, bool, u32, usize);

fn sweep_strategy() -> impl Strategy<Value = SweepCase> {
    (
        prop::collection::vec((0usize..80, 0u32..4, any::<u8>(), 0usize..70), 0..12),
        0usize..12,
        any::<bool>(),
        0u32..9,
        prop::sample::select(vec![32usize, 64, 128, 256]),
    )
}

proptest! {
    #![proptest_config(crate::sweep::proptest_config(3000, 500))]
    /// The sweep the generated checks run decides exactly what the reference
    /// (every pair at every phase) decides, in any declaration order, and
    /// gives the same message.
    #[test]
    fn sweep_agrees_with_every_pair((fields, rotate, reverse, align, line) in sweep_strategy()) {
        let mut facts = Vec::new();
        let mut end = 0usize;
        for (i, &(size, a, k, gap)) in fields.iter().enumerate() {
            let a = 1usize << a;
            let size = size.next_multiple_of(a);
            let offset = (end + gap).next_multiple_of(a);
            end = offset + size;
            let class = match k % 8 {
                6 => Class::Lockless(Some("h")),
                _ => class_of(k),
            };
            facts.push(FieldFacts {
                name: Box::leak(format!("f{i}").into_boxed_str()),
                ty: "T",
                offset,
                size,
                align: a,
                class,
                guess: class,
                explicit: true,
                pinned: false,
                // Some locks are lock words (only locked fields are).
                lock_word: k % 12 == 4,
            });
        }
        if !facts.is_empty() {
            let r = rotate % facts.len();
            facts.rotate_left(r);
        }
        if reverse {
            facts.reverse();
        }
        let facts: &'static [FieldFacts] = Box::leak(facts.into_boxed_slice());
        let info = Info { name: "S", line, fields: facts, checked: true, advice: "advice", plan: None };
        let align = 1usize << align;
        let reference = rule_message(&info, align).map(|m| m.as_str().to_string());
        prop_assert_eq!(fast_check(&info, align), reference);
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
            lock_word: false,
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
            lock_word: false,
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
            lock_word: false,
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
            lock_word: false,
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

/// One field of every class the vocabulary has, each through its own
/// keyword or alias (a class with a parameter twice, with two values; the
/// writer group also absent). `report_only`: the rule is broken on purpose.
#[allow(dead_code)]
#[derive(cachelayout::CacheLayout)]
#[layout(report_only)]
struct EveryClass {
    #[layout(read_mostly)]
    r: u64,
    #[layout(locked_write = "x")]
    lx: u64,
    #[layout(locked_write = "y")]
    ly: u64,
    #[layout(lockless)]
    a: u64,
    #[layout(lockless(group = "x"))]
    ax: u64,
    #[layout(lockless_atomic(group = "y"))]
    ay: u64,
    #[layout(cold)]
    c: u64,
}

/// Two 8-byte fields of classes `a` and `b` at offsets 0 and 8.
fn pair_struct(a: &Access, b: &Access) -> Struct {
    Struct::new(
        "Pair",
        vec![
            Field::new("first", "u64", 8, 8).with_access(a.clone()),
            Field::new("second", "u64", 8, 8).with_access(b.clone()),
        ],
    )
}

/// Walks every ordered pair of classes (with equal and different
/// parameters) and asserts that five statements of the hard rule agree:
/// the vocabulary (`class.rs`), the verifier (`verify::must_not_share`,
/// through `verify`), the solver (its colouring: the two fields end up on
/// different lines exactly when they conflict), and what the macros
/// generate (`#[derive(CacheLayout)]`'s runtime classes) checked by the
/// runtime's rule (`__private::rule_message`), which must also pick the
/// field the vocabulary says carries the check.
#[test]
fn every_pair_of_classes_agrees_across_vocabulary_verifier_solver_and_macros() {
    use cachelayout::core::class::Class as CoreClass;
    let info = <EveryClass as cachelayout::CacheLayout>::__INFO;
    let covered: std::collections::BTreeSet<CoreClass> = info
        .fields
        .iter()
        .map(|f| f.class.to_model().class())
        .collect();
    let all: std::collections::BTreeSet<CoreClass> = CoreClass::all().collect();
    assert_eq!(covered, all, "EveryClass needs a field of every class");
    // The macros kept every parameter.
    let expected = [
        Access::ReadMostly,
        Access::LockedWrite { lock: "x".into() },
        Access::LockedWrite { lock: "y".into() },
        Access::Lockless { group: None },
        Access::Lockless {
            group: Some("x".into()),
        },
        Access::Lockless {
            group: Some("y".into()),
        },
        Access::Cold,
    ];
    let generated: Vec<Access> = info.fields.iter().map(|f| f.class.to_model()).collect();
    assert_eq!(generated, expected);

    let mut conflicts = 0;
    for fa in info.fields {
        for fb in info.fields {
            let (a, b) = (fa.class.to_model(), fb.class.to_model());
            let vocabulary = a.hard_conflict(&b);

            let s = pair_struct(&a, &b);
            let l = Layout {
                slots: vec![
                    Slot {
                        field: 0,
                        offset: 0,
                    },
                    Slot {
                        field: 1,
                        offset: 8,
                    },
                ],
                size: 16,
                align: 8,
                line: 64,
                placement: Placement::Aligned,
            };
            let verifier = match verify(&s, &l) {
                Ok(_) => false,
                Err(VerifyError::HardRule { .. }) => true,
                Err(e) => panic!("{a} vs {b}: {e:?}"),
            };

            let solved = cachelayout::core::solve(&s, &Default::default())
                .unwrap_or_else(|e| panic!("{a} vs {b}: {e:?}"));
            let solver = solved.layout.layout().size > 16;

            let facts: &'static [FieldFacts] = Box::leak(Box::new([
                FieldFacts {
                    name: "first",
                    offset: 0,
                    size: 8,
                    align: 8,
                    ..*fa
                },
                FieldFacts {
                    name: "second",
                    offset: 8,
                    size: 8,
                    align: 8,
                    ..*fb
                },
            ]));
            let pair = Info {
                name: "Pair",
                line: 64,
                fields: facts,
                checked: true,
                advice: "",
                plan: None,
            };
            let message = rule_message(&pair, 8).map(|m| m.as_str().to_string());
            let runtime = message.is_some();
            // The sweep the generated checks run states the rule once more.
            assert_eq!(fast_check(&pair, 8), message, "{a} vs {b}: the sweep");

            assert_eq!(
                (verifier, solver, runtime),
                (vocabulary, vocabulary, vocabulary),
                "{a} vs {b}: vocabulary {vocabulary}, verifier {verifier}, solver {solver}, runtime {runtime}"
            );
            if let Some(m) = message {
                conflicts += 1;
                let carrier = if a.class().carries_check(b.class(), true) {
                    "first"
                } else {
                    "second"
                };
                let (head, _) = m.split_once(" shares cache line").expect("a rule message");
                assert!(
                    head.contains(&format!("`{carrier}`")),
                    "{a} vs {b}: the vocabulary says `{carrier}` carries the check: {m}"
                );
            }
        }
    }
    // Every conflicting pair of the vocabulary was found (today: R against
    // the three lockless fields both ways, and the lockless fields of
    // different groups pairwise, 12), counted from the vocabulary so that
    // a new class needs no change here.
    let expected = info
        .fields
        .iter()
        .flat_map(|a| info.fields.iter().map(move |b| (a, b)))
        .filter(|(a, b)| a.class.to_model().hard_conflict(&b.class.to_model()))
        .count();
    assert!(expected > 0);
    assert_eq!(conflicts, expected);
}

/// A lock word against a field of every class, in both orders: the model's
/// `rule_access`, the verifier, the solver and the runtime's rule (and its
/// sweep) agree, and the conflicts are exactly the read-mostly field and
/// the lockless fields (none of which is in the lock word's group).
#[test]
fn lock_words_agree_across_model_verifier_solver_and_runtime() {
    let info = <EveryClass as cachelayout::CacheLayout>::__INFO;
    let lock = FieldFacts {
        name: "lk",
        ty: "Mutex<u64>",
        offset: 0,
        size: 8,
        align: 8,
        class: Class::LockedWrite("lk"),
        guess: Class::LockedWrite("lk"),
        explicit: false,
        pinned: false,
        lock_word: true,
    };
    let mut conflicts = 0;
    for other in info.fields {
        for lock_first in [true, false] {
            let (fa, fb) = if lock_first {
                (lock, *other)
            } else {
                (*other, lock)
            };
            let model = |f: &FieldFacts, name: &str| {
                let mut field = Field::new(name, "u64", 8, 8).with_access(f.class.to_model());
                field.lock_word = f.lock_word;
                field
            };
            let s = Struct::new("Pair", vec![model(&fa, "first"), model(&fb, "second")]);
            let expected = matches!(other.class, Class::ReadMostly | Class::Lockless(_));
            let vocabulary = s.fields[0]
                .rule_access()
                .hard_conflict(&s.fields[1].rule_access());
            let l = Layout {
                slots: vec![
                    Slot {
                        field: 0,
                        offset: 0,
                    },
                    Slot {
                        field: 1,
                        offset: 8,
                    },
                ],
                size: 16,
                align: 8,
                line: 64,
                placement: Placement::Aligned,
            };
            let verifier = verify(&s, &l).is_err();
            let solved = cachelayout::core::solve(&s, &Default::default()).unwrap();
            let solver = solved.layout.layout().size > 16;
            let facts: &'static [FieldFacts] = Box::leak(Box::new([
                FieldFacts {
                    name: "first",
                    offset: 0,
                    ..fa
                },
                FieldFacts {
                    name: "second",
                    offset: 8,
                    ..fb
                },
            ]));
            let pair = Info {
                name: "Pair",
                line: 64,
                fields: facts,
                checked: true,
                advice: "",
                plan: None,
            };
            let message = rule_message(&pair, 8).map(|m| m.as_str().to_string());
            assert_eq!(fast_check(&pair, 8), message, "{other:?}: the sweep");
            assert_eq!(
                (vocabulary, verifier, solver, message.is_some()),
                (expected, expected, expected, expected),
                "lock word vs {:?} (lock first: {lock_first})",
                other.class
            );
            conflicts += usize::from(expected);
        }
    }
    // R and the three lockless fields, both ways.
    assert_eq!(conflicts, 8);
}
