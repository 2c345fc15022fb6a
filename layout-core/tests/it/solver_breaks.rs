//! The solver under the author's line breaks (`CACHELINE_PADDING()`,
//! line-aligned members) and `#if` blocks, against oracles that know
//! nothing of its model:
//!
//! - every objective keeps every block between the breaks it was declared
//!   between, and every layout it returns passes the verifier (never an
//!   internal error);
//! - every size it claims minimal is: on small structs an exhaustive search
//!   over every order, each order placed as early as the hard rule allows
//!   and judged by the verifier alone (the rule as the guide states it);
//!   on larger ones a second formulation, the struct without its breaks
//!   solved on its own and the breaks put back on every choice of line
//!   starts, which finds the layouts where members cross the breaks as the
//!   rule allows.

use layout_core::model::{Access, Field, PathUse, Struct};
use layout_core::segments::{assign, Keep};
use layout_core::solve::{solve, Preset, SolveOptions, DEFAULT_WORK_LIMIT};
use layout_core::verify::verify;
use proptest::prelude::*;

use crate::support::break_oracles::{
    claimed_size, exhaustive_min_size, kernel_like, lines_given_parts, member, padding,
    with_offsets, with_paddings_put_back, Rng,
};

/// A path of the access file over the named members (their whole bytes).
fn add_path(s: &mut Struct, name: &str, members: &[usize]) {
    let path = s.paths.len() as u32;
    s.paths.push(name.to_string());
    for &i in members {
        let size = s.fields[i].size;
        s.fields[i].paths.push(PathUse {
            path,
            bytes: 0..size,
        });
    }
}

// ---------------------------------------------------------------------------
// Fixtures.

/// `head` and `a` (read-mostly) on one hot path, a cold 56-byte member in a
/// one-member `#if` block between them, the padding before `a`: moving the
/// block after the padding would let `a` join the head and save a line, but
/// the block stays in its part (the verifier refuses it elsewhere).
fn one_member_block_before_a_padding() -> Struct {
    let mut s = with_offsets(Struct::new(
        "s",
        vec![
            member("head", 8, 8, Access::ReadMostly),
            member("x", 56, 8, Access::Cold),
            padding("_pad1_", 64),
            member("a", 8, 8, Access::ReadMostly),
            member("ctr", 8, 8, Access::Lockless { group: None }),
        ],
    ));
    assign(&mut s, Keep::default());
    s.blocks = vec![vec![1]];
    add_path(&mut s, "rx", &[0, 3]);
    s
}

#[test]
fn a_one_member_block_stays_in_its_part_under_every_objective() {
    let s = one_member_block_before_a_padding();
    for preset in Preset::ALL {
        let opts = SolveOptions {
            preset,
            ..SolveOptions::default()
        };
        let sol = solve(&s, &opts).unwrap_or_else(|e| panic!("{preset}: {e}"));
        verify(&s, sol.layout.layout()).unwrap_or_else(|e| panic!("{preset}: {e}"));
        let off = sol.layout.offsets_by_field(s.fields.len());
        assert!(off[1].unwrap() < off[2].unwrap(), "{preset}: {off:?}");
        // The search itself keeps the block in its part: its best layout
        // is the one returned, proven (not a fallback after the verifier
        // refused a better one).
        assert!(sol.optimal, "{preset}: {sol:?}");
        if preset != Preset::MinDiff {
            assert_eq!(sol.layout.size, 192, "{preset}: {sol:?}");
        }
    }
}

/// The same struct without the block: `x` crosses the padding, `a` joins
/// the head, and the struct takes two lines. A padding is a line break, not
/// a wall: the bound of the parts solved alone (three lines) is no bound.
#[test]
fn a_padding_is_no_wall_for_the_bound() {
    let mut s = one_member_block_before_a_padding();
    s.blocks.clear();
    let sol = solve(&s, &SolveOptions::default()).unwrap();
    verify(&s, sol.layout.layout()).unwrap();
    assert_eq!(sol.layout.size, 128, "{sol:?}");
    assert!(sol.optimal && sol.lower_bound == 128, "{sol:?}");
}

// ---------------------------------------------------------------------------
// Random structs with paddings, line-aligned members, `#if` blocks, lock
// words, writer groups and hot paths.

/// One member of a random struct: size, alignment, access, whether it is a
/// lock word, whether it opens a one- or two-member `#if` block, and the
/// paths (bits) it is on.
type Spec = (u64, u64, Access, bool, u8, u8);

fn access() -> impl Strategy<Value = Access> {
    prop_oneof![
        3 => Just(Access::ReadMostly),
        2 => Just(Access::LockedWrite { lock: "a".into() }),
        1 => Just(Access::LockedWrite { lock: "b".into() }),
        2 => Just(Access::Lockless { group: None }),
        1 => Just(Access::Lockless { group: Some("g".into()) }),
        1 => Just(Access::Lockless { group: Some("h".into()) }),
        3 => Just(Access::Cold),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    let align =
        prop_oneof![1 => Just(1u64), 1 => Just(2), 3 => Just(4), 4 => Just(8), 1 => Just(16)];
    (
        align,
        1u64..=10,
        access(),
        prop::bool::weighted(0.15),
        0u8..6,
        0u8..4,
    )
        .prop_map(|(align, k, access, lock_word, block, paths)| {
            let size = if k > 8 {
                8 * align * k
            } else {
                align * k.min(4)
            };
            let size = size.min(96).max(align);
            let access = match (lock_word, access) {
                (true, Access::LockedWrite { lock }) => Access::LockedWrite { lock },
                (_, a) => a,
            };
            let lock_word = lock_word && matches!(access, Access::LockedWrite { .. });
            (size, align, access, lock_word, block, paths)
        })
}

/// A struct of `specs` with the paddings (and a line-aligned member when
/// `aligned_member`) at the given places among them: member 0 first.
fn build(specs: &[Spec], pads_at: &[usize], aligned_member: Option<usize>, line: u64) -> Struct {
    let mut fields = Vec::new();
    let mut blocks: Vec<Vec<usize>> = Vec::new();
    let mut open: Option<(usize, u8)> = None;
    let mut pads = 0;
    let mut paths: Vec<Vec<usize>> = vec![Vec::new(); 2];
    for (i, (size, align, access, lock_word, block, on)) in specs.iter().enumerate() {
        if pads_at.contains(&i) {
            pads += 1;
            fields.push(padding(&format!("_pad{pads}_"), line));
            open = None;
        }
        let at = fields.len();
        let name = if *lock_word {
            match access {
                Access::LockedWrite { lock } => lock.clone(),
                _ => format!("m{i}"),
            }
        } else {
            format!("m{i}")
        };
        let mut f = member(&name, *size, *align, access.clone());
        f.lock_word = *lock_word;
        if aligned_member == Some(i) && i > 0 {
            f.align = line;
            f.line_break = true;
            open = None;
        }
        fields.push(f);
        // A block: one member, or two (this one and the next).
        match open.take() {
            Some((b, 2)) => blocks[b].push(at),
            _ if i > 0 && *block < 2 => {
                blocks.push(vec![at]);
                open = Some((blocks.len() - 1, block + 1));
            }
            _ => {}
        }
        for (p, path) in paths.iter_mut().enumerate() {
            if on & (1 << p) != 0 {
                path.push(at);
            }
        }
    }
    // Lock words name their lock: one word per lock.
    let mut seen = Vec::new();
    for f in &mut fields {
        if f.lock_word {
            if seen.contains(&f.name) {
                f.lock_word = false;
                f.name.push_str("_again");
            } else {
                seen.push(f.name.clone());
            }
        }
    }
    for (k, f) in fields.iter_mut().enumerate() {
        if !f.lock_word && f.size > 0 {
            f.name = format!("f{k}");
        }
    }
    let mut s = with_offsets(Struct::new("s", fields));
    assign(&mut s, Keep::default());
    s.blocks = blocks;
    for (p, members) in paths.iter().enumerate() {
        if !members.is_empty() {
            add_path(&mut s, &format!("path{p}"), members);
        }
    }
    s
}

/// A random struct: `members` members, one to three paddings, now and then
/// a line-aligned member, on 64- or 128-byte lines.
fn tree_case(members: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = (Struct, u64)> {
    (
        prop::collection::vec(spec(), members),
        prop::collection::vec(1usize..40, 1..=3),
        prop::option::weighted(0.2, 1usize..40),
        prop_oneof![4 => Just(64u64), 1 => Just(128)],
    )
        .prop_map(|(specs, pads, aligned, line)| {
            let n = specs.len();
            let pads: Vec<usize> = pads.into_iter().map(|p| 1 + p % (n - 1).max(1)).collect();
            let aligned = aligned.map(|a| 1 + a % (n - 1).max(1));
            (build(&specs, &pads, aligned, line), line)
        })
}

/// What an oracle knows of the smallest layout of a struct.
#[derive(Clone, Copy, Debug)]
enum Oracle {
    /// The smallest size (the exhaustive search).
    Smallest(u64),
    /// The size of some layout that keeps the rule (the second formulation).
    Layout(u64),
}

/// Every preset on `s`: a verified layout (never an internal error), its
/// bound below any layout the oracle knows, and a size claimed minimal
/// only when no layout is smaller.
fn check_every_preset(
    s: &Struct,
    line: u64,
    oracle: Option<Oracle>,
    work_limit: u64,
) -> Result<(), TestCaseError> {
    for preset in Preset::ALL {
        let opts = SolveOptions {
            line,
            preset,
            work_limit,
            ..SolveOptions::default()
        };
        let sol = match solve(s, &opts) {
            Ok(sol) => sol,
            Err(e) => return Err(TestCaseError::fail(format!("{preset}: {e}\n{s:?}"))),
        };
        let l = sol.layout.layout();
        prop_assert!(verify(s, l).is_ok(), "{}: {:?}", preset, verify(s, l));
        let (known, exact) = match oracle {
            Some(Oracle::Smallest(b)) => (b, true),
            Some(Oracle::Layout(b)) => (b, false),
            None => continue,
        };
        if exact {
            prop_assert!(
                l.size >= known,
                "{}: {} below the oracle's {}",
                preset,
                l.size,
                known
            );
            // Small structs are searched exactly: every goal is proven.
            // (An order the search kept that the verifier then refused
            // would leave a fallback, unproven.)
            prop_assert!(sol.optimal, "{}: not proven\n{:?}\n{:?}", preset, sol, s);
        }
        prop_assert!(
            sol.lower_bound <= known,
            "{}: bound {} above a layout of {} bytes\n{:?}",
            preset,
            sol.lower_bound,
            known,
            s
        );
        if let Some(claimed) = claimed_size(&sol) {
            prop_assert!(
                claimed <= known && (claimed == known || !exact),
                "{}: {} bytes claimed minimal, the oracle has {}\n{:?}\n{:?}",
                preset,
                claimed,
                known,
                sol,
                s
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(crate::support::sweep::proptest_config(300, 24))]

    /// Small structs with paddings, blocks, lock words, writer groups and
    /// hot paths, under every preset: each layout verifies, and each size
    /// claimed minimal is the exhaustive minimum under the verifier's rule.
    #[test]
    fn small_structs_with_breaks_and_blocks_keep_the_rule_and_the_claims((s, line) in tree_case(3..=6)) {
        let smallest = exhaustive_min_size(&s, line);
        prop_assert!(smallest.is_some(), "no layout at all: {:?}", s);
        check_every_preset(&s, line, smallest.map(Oracle::Smallest), DEFAULT_WORK_LIMIT)?;
    }
}

proptest! {
    #![proptest_config(crate::support::sweep::proptest_config(120, 6))]

    /// Larger structs of the same kind, under every preset: each layout
    /// verifies, and no size is claimed minimal above a layout the second
    /// formulation finds.
    #[test]
    fn larger_structs_with_breaks_and_blocks_keep_the_rule_and_the_claims((s, line) in tree_case(10..=18)) {
        let other = with_paddings_put_back(&s, line, DEFAULT_WORK_LIMIT / 20);
        // A smaller budget: a claim must hold under any.
        check_every_preset(&s, line, other.map(Oracle::Layout), DEFAULT_WORK_LIMIT / 20)?;
    }
}

/// Kernel-like structs, `balanced`: no size is claimed minimal above a
/// layout the second formulations find (members crossing the paddings as
/// the rule allows: the paddings put back at line starts, and the lines
/// given parts). The whole set of 290 runs under
/// `CACHELAYOUT_SWEEPS=full`.
#[test]
fn kernel_like_size_claims_hold_under_line_breaks() {
    let count = if crate::support::sweep::full() {
        290
    } else {
        3
    };
    let mut rng = Rng(0x38_5EED_0001);
    let (mut claims, mut beaten) = (0, 0);
    let (mut false_claims, mut false_bounds) = (Vec::new(), Vec::new());
    for case in 0..count {
        let s = kernel_like(&mut rng);
        let sol =
            solve(&s, &SolveOptions::default()).unwrap_or_else(|e| panic!("case {case}: {e}"));
        verify(&s, sol.layout.layout()).unwrap_or_else(|e| panic!("case {case}: {e}"));
        let other = [
            with_paddings_put_back(&s, 64, DEFAULT_WORK_LIMIT),
            lines_given_parts(&s, 64, DEFAULT_WORK_LIMIT),
        ]
        .into_iter()
        .flatten()
        .min();
        if other.is_some_and(|o| o < sol.layout.size) {
            beaten += 1;
        }
        if let Some(claimed) = claimed_size(&sol) {
            claims += 1;
            if let Some(o) = other.filter(|&o| o < claimed) {
                false_claims.push((case, claimed, o));
            }
        }
        if let Some(o) = other.filter(|&o| o < sol.lower_bound) {
            false_bounds.push((case, sol.lower_bound, o));
        }
    }
    println!(
        "{count} kernel-like structs: {claims} sizes claimed minimal, {} false; {} bounds above \
         a layout; the second formulation beat {beaten} layouts",
        false_claims.len(),
        false_bounds.len()
    );
    assert!(
        false_claims.is_empty(),
        "false claims (case, claimed, found): {false_claims:?}"
    );
    assert!(
        false_bounds.is_empty(),
        "false bounds (case, bound, found): {false_bounds:?}"
    );
}

// ---------------------------------------------------------------------------
// Fixed cases from `examples/reach_bench.rs` (the `breaks` set, seed 1),
// where `balanced` stopped a line above the optimum.

/// A member of a fixture: size, alignment, class tag (`R`, `C`, `A(g)`,
/// `L(lock)`; `pad` a `CACHELINE_PADDING()`, `tail X` a flexible array of
/// class `X`), lock word.
type Member = (u64, u64, &'static str, bool);

fn class_of(tag: &str) -> Access {
    let param = || tag[2..tag.len() - 1].to_string();
    match tag.as_bytes()[0] {
        b'R' => Access::ReadMostly,
        b'A' => Access::Lockless {
            group: (tag.len() > 1).then(param),
        },
        b'L' => Access::LockedWrite { lock: param() },
        _ => Access::Cold,
    }
}

/// The struct of `members`, declared in that order, first member and line
/// breaks kept (the defaults).
fn from_spec(members: &[Member]) -> Struct {
    let fields = members
        .iter()
        .enumerate()
        .map(|(i, &(size, align, tag, lock_word))| {
            if tag == "pad" {
                return padding(&format!("_pad{i}_"), align);
            }
            if let Some(class) = tag.strip_prefix("tail ") {
                return Field::new(format!("f{i}"), "u8[]", 0, align).with_access(class_of(class));
            }
            let mut f = member(&format!("f{i}"), size, align, class_of(tag));
            if lock_word {
                if let Access::LockedWrite { lock } = &f.access {
                    f.name = lock.clone();
                }
                f.lock_word = true;
            }
            f
        })
        .collect();
    let mut s = with_offsets(Struct::new("kernel_like", fields));
    assign(&mut s, Keep::default());
    s
}

/// `balanced` on `s` reaches `size`, proven minimal, and the layout verifies.
fn reaches(s: &Struct, size: u64) {
    let sol = solve(s, &SolveOptions::default()).unwrap();
    verify(s, sol.layout.layout()).unwrap();
    assert_eq!(sol.layout.size, size, "{sol:?}");
    assert_eq!(claimed_size(&sol), Some(size), "{sol:?}");
}

/// Line packing finds the lines of these structs without the breaks (its
/// finding used to run only on structs without the author's order); given
/// parts between the breaks, each chain of lines where its members may
/// lie, they keep the tree: 704 → 640 and 768 → 704 bytes, the bounds.
#[test]
fn lines_found_without_the_breaks_are_given_parts() {
    let b1_40: &[Member] = &[
        (8, 8, "R", false),
        (4, 4, "R", false),
        (4, 4, "L(lock1)", true),
        (4, 4, "R", false),
        (48, 16, "C", false),
        (8, 8, "C", false),
        (8, 8, "C", false),
        (32, 32, "A(g0)", false),
        (8, 8, "A(g1)", false),
        (32, 32, "L(lock0)", false),
        (8, 8, "L(lock1)", false),
        (8, 8, "L(lock1)", false),
        (8, 8, "R", false),
        (0, 64, "pad", false),
        (4, 4, "L(lock0)", true),
        (0, 64, "pad", false),
        (8, 8, "C", false),
        (8, 8, "C", false),
        (64, 32, "L(lock1)", false),
        (8, 8, "R", false),
        (8, 8, "A(g2)", false),
        (8, 8, "A(g1)", false),
        (4, 4, "C", false),
        (8, 8, "R", false),
        (8, 8, "A(g1)", false),
        (1, 1, "A(g2)", false),
        (64, 32, "R", false),
        (80, 8, "A(g1)", false),
        (104, 8, "R", false),
        (2, 2, "A(g1)", false),
        (8, 8, "L(lock0)", false),
        (8, 8, "R", false),
        (32, 16, "L(lock0)", false),
        (0, 32, "tail A(g1)", false),
    ];
    reaches(&from_spec(b1_40), 640);
    let b1_73: &[Member] = &[
        (32, 16, "R", false),
        (2, 2, "C", false),
        (0, 64, "pad", false),
        (8, 8, "R", false),
        (48, 16, "R", false),
        (4, 4, "C", false),
        (8, 8, "L(lock1)", false),
        (8, 8, "R", false),
        (4, 4, "L(lock1)", true),
        (4, 4, "L(lock0)", true),
        (56, 8, "R", false),
        (8, 8, "R", false),
        (4, 4, "L(lock2)", false),
        (8, 8, "C", false),
        (16, 16, "C", false),
        (4, 4, "L(lock2)", true),
        (8, 8, "L(lock0)", false),
        (16, 16, "A(g1)", false),
        (8, 8, "A(g0)", false),
        (8, 8, "A(g1)", false),
        (8, 8, "R", false),
        (80, 8, "L(lock1)", false),
        (104, 8, "R", false),
        (4, 4, "C", false),
        (8, 8, "C", false),
        (88, 8, "C", false),
        (8, 8, "R", false),
        (32, 16, "A(g1)", false),
        (2, 2, "A(g1)", false),
        (8, 8, "R", false),
        (8, 8, "C", false),
        (2, 2, "C", false),
        (4, 4, "A(g0)", false),
        (0, 64, "pad", false),
        (8, 8, "R", false),
        (8, 8, "R", false),
        (8, 8, "A(g0)", false),
        (4, 4, "R", false),
        (32, 16, "R", false),
        (1, 1, "R", false),
        (0, 16, "tail C", false),
    ];
    reaches(&from_spec(b1_73), 704);
}

/// The first solve ends at 448 bytes with a tenth of its budget spent and
/// the size above its bound (384); solved again declared in other orders
/// (members shuffled among those of their part), it reaches 384: one
/// read-mostly line with members of all three parts, the lone `A(g2)`
/// byte pair on a line of locked members before the first padding.
#[test]
fn a_struct_left_unproven_is_solved_again_declared_in_other_orders() {
    let b1_57: &[Member] = &[
        (8, 8, "R", false),
        (2, 2, "A(g2)", false),
        (8, 8, "C", false),
        (8, 8, "L(lock0)", false),
        (8, 8, "C", false),
        (8, 8, "C", false),
        (64, 8, "A(g1)", false),
        (8, 8, "L(lock0)", false),
        (8, 8, "R", false),
        (4, 4, "R", false),
        (8, 8, "R", false),
        (4, 4, "C", false),
        (16, 16, "L(lock0)", false),
        (0, 64, "pad", false),
        (8, 8, "L(lock0)", false),
        (8, 8, "R", false),
        (2, 2, "L(lock0)", false),
        (4, 4, "L(lock0)", false),
        (8, 8, "A(g1)", false),
        (8, 8, "L(lock0)", false),
        (0, 64, "pad", false),
        (8, 8, "L(lock0)", false),
        (32, 8, "C", false),
        (1, 1, "L(lock0)", false),
        (64, 32, "C", false),
        (2, 2, "R", false),
        (4, 4, "C", false),
        (8, 8, "R", false),
        (16, 8, "R", false),
        (8, 8, "C", false),
        (8, 8, "R", false),
        (2, 1, "C", false),
        (8, 8, "A(g0)", false),
        (0, 8, "tail C", false),
    ];
    reaches(&from_spec(b1_57), 384);
}

/// A wide struct (76 members, two paddings, three locks with their lock
/// words, two writer groups): the first solve and four restarts ended at 1024
/// bytes, above the bound of 960; the restarts now go on while the budget
/// lasts, their local searches moving runs of neighbours as one, and the
/// solve reaches 960, its bound, so the size is proven minimal.
#[test]
fn restarts_go_on_while_the_budget_lasts() {
    let w1_15: &[Member] = &[
        (8, 8, "R", false),
        (2, 1, "A(g0)", false),
        (8, 8, "R", false),
        (8, 8, "L(lock0)", false),
        (8, 8, "A(g0)", false),
        (0, 64, "pad", false),
        (8, 8, "L(lock0)", false),
        (8, 8, "L(lock2)", false),
        (8, 8, "L(lock1)", false),
        (8, 8, "C", false),
        (2, 2, "A(g1)", false),
        (4, 4, "A(g1)", false),
        (8, 8, "R", false),
        (2, 2, "R", false),
        (32, 16, "R", false),
        (32, 16, "L(lock2)", false),
        (4, 4, "C", false),
        (8, 8, "R", false),
        (8, 8, "R", false),
        (8, 8, "L(lock0)", false),
        (128, 8, "L(lock2)", false),
        (8, 8, "A(g1)", false),
        (32, 16, "A(g0)", false),
        (8, 8, "C", false),
        (8, 8, "R", false),
        (8, 8, "R", false),
        (32, 16, "A(g1)", false),
        (8, 8, "R", false),
        (8, 8, "R", false),
        (8, 8, "R", false),
        (8, 8, "A(g1)", false),
        (2, 2, "L(lock1)", false),
        (8, 8, "L(lock0)", false),
        (8, 8, "R", false),
        (56, 8, "A(g0)", false),
        (8, 8, "R", false),
        (8, 8, "L(lock0)", false),
        (8, 8, "R", false),
        (48, 16, "R", false),
        (8, 8, "A(g0)", false),
        (4, 4, "C", false),
        (0, 64, "pad", false),
        (8, 8, "C", false),
        (1, 1, "C", false),
        (2, 2, "A(g1)", false),
        (4, 4, "C", false),
        (8, 8, "L(lock0)", false),
        (8, 8, "C", false),
        (8, 8, "A(g0)", false),
        (4, 4, "L(lock1)", true),
        (48, 16, "R", false),
        (2, 2, "L(lock0)", false),
        (32, 16, "A(g0)", false),
        (32, 16, "R", false),
        (4, 4, "L(lock2)", true),
        (8, 8, "C", false),
        (8, 8, "C", false),
        (32, 16, "R", false),
        (8, 8, "L(lock2)", false),
        (4, 4, "L(lock0)", true),
        (8, 8, "R", false),
        (8, 8, "R", false),
        (16, 16, "R", false),
        (8, 8, "L(lock2)", false),
        (8, 8, "A(g1)", false),
        (32, 16, "A(g1)", false),
        (4, 4, "L(lock1)", false),
        (8, 8, "L(lock1)", false),
        (8, 8, "A(g1)", false),
        (8, 8, "A(g1)", false),
        (4, 4, "L(lock0)", false),
        (8, 8, "L(lock1)", false),
        (4, 4, "C", false),
        (16, 16, "A(g1)", false),
        (4, 4, "C", false),
        (4, 4, "C", false),
    ];
    reaches(&from_spec(w1_15), 960);
}

/// A wide struct (74 members, two paddings, three locks with their lock
/// words, three writer groups) where every restart ended a line above the
/// bound (1344 bytes, 1280 the bound; 20 times the budget did no better):
/// the members of two lines of the best layout taken out and put back one
/// by one where the layout ends earliest, again and again, reach the bound.
#[test]
fn the_members_of_two_lines_are_taken_out_and_put_back() {
    let w1_81: &[Member] = &[
        (8, 8, "R", false),
        (8, 8, "C", false),
        (8, 8, "R", false),
        (4, 4, "C", false),
        (8, 8, "A(g1)", false),
        (0, 64, "pad", false),
        (8, 8, "R", false),
        (8, 8, "R", false),
        (8, 8, "A(g2)", false),
        (8, 8, "R", false),
        (2, 1, "R", false),
        (8, 8, "A(g1)", false),
        (16, 16, "L(lock1)", false),
        (32, 16, "R", false),
        (8, 8, "C", false),
        (72, 8, "L(lock1)", false),
        (8, 8, "C", false),
        (4, 4, "R", false),
        (8, 8, "R", false),
        (4, 4, "A(g2)", false),
        (8, 8, "R", false),
        (8, 8, "C", false),
        (8, 8, "C", false),
        (8, 8, "R", false),
        (4, 4, "R", false),
        (4, 4, "A(g2)", false),
        (8, 8, "R", false),
        (8, 8, "R", false),
        (80, 8, "C", false),
        (4, 4, "R", false),
        (4, 4, "R", false),
        (8, 8, "R", false),
        (4, 4, "L(lock0)", false),
        (24, 8, "L(lock0)", false),
        (8, 8, "C", false),
        (56, 8, "C", false),
        (32, 16, "C", false),
        (8, 8, "R", false),
        (4, 4, "C", false),
        (128, 8, "R", false),
        (4, 4, "L(lock1)", true),
        (4, 4, "L(lock0)", true),
        (4, 4, "L(lock2)", true),
        (8, 8, "R", false),
        (16, 16, "A(g2)", false),
        (8, 8, "A(g0)", false),
        (4, 4, "C", false),
        (8, 8, "R", false),
        (0, 64, "pad", false),
        (104, 8, "A(g0)", false),
        (32, 16, "R", false),
        (8, 8, "L(lock2)", false),
        (8, 8, "R", false),
        (8, 8, "A(g0)", false),
        (4, 4, "R", false),
        (48, 16, "L(lock1)", false),
        (8, 8, "R", false),
        (4, 4, "C", false),
        (72, 8, "L(lock0)", false),
        (1, 1, "A(g2)", false),
        (8, 8, "R", false),
        (4, 4, "R", false),
        (40, 8, "R", false),
        (2, 2, "C", false),
        (8, 8, "C", false),
        (8, 8, "R", false),
        (4, 4, "A(g2)", false),
        (120, 8, "L(lock2)", false),
        (8, 8, "C", false),
        (8, 8, "R", false),
        (48, 16, "A(g0)", false),
        (8, 8, "C", false),
        (4, 4, "R", false),
        (8, 8, "A(g1)", false),
    ];
    reaches(&from_spec(w1_81), 1280);
}

// ---------------------------------------------------------------------------
// Several paddings, lock words and writer groups, no `#if` blocks: every
// size claimed minimal against the exhaustive search where the struct is
// small, and against a second formulation where it is not.

/// One member of a struct of this shape: size, alignment, class, whether it
/// is its lock's word.
type Plain = (u64, u64, Access, bool);

fn plain() -> impl Strategy<Value = Plain> {
    let class = prop_oneof![
        7 => Just(Access::ReadMostly),
        2 => (0u8..4).prop_map(|g| Access::Lockless { group: Some(format!("g{g}")) }),
        1 => Just(Access::Lockless { group: None }),
        3 => (0u8..3).prop_map(|l| Access::LockedWrite { lock: format!("lock{l}") }),
        6 => Just(Access::Cold),
    ];
    let shape = prop_oneof![
        6 => Just((8u64, 8u64)),
        3 => Just((4, 4)),
        1 => (1u64..=2).prop_map(|k| (k, k)),
        1 => (2u64..=16).prop_map(|k| (8 * k, 8)),
        1 => (1u64..=3).prop_map(|k| (16 * k, 16)),
        1 => (1u64..=2).prop_map(|k| (32 * k, 32)),
    ];
    (shape, class, prop::bool::weighted(0.3)).prop_map(|((size, align), access, word)| {
        let word = word && matches!(access, Access::LockedWrite { .. });
        let (size, align) = if word { (4, 4) } else { (size, align) };
        (size, align, access, word)
    })
}

/// The struct of `members` with a `CACHELINE_PADDING()` before each member
/// index in `pads_at` (two may stand together), first member kept, one word
/// per lock.
fn plain_struct(members: &[Plain], pads_at: &[usize], line: u64) -> Struct {
    let mut fields = Vec::new();
    let mut words: Vec<String> = Vec::new();
    for (i, (size, align, access, word)) in members.iter().enumerate() {
        for _ in pads_at.iter().filter(|&&p| p == i) {
            fields.push(padding(&format!("_pad{}_", fields.len()), line));
        }
        let mut f = member(&format!("f{i}"), *size, *align, access.clone());
        if let (true, Access::LockedWrite { lock }) = (*word, access) {
            if !words.contains(lock) {
                words.push(lock.clone());
                f.name = lock.clone();
                f.lock_word = true;
            }
        }
        fields.push(f);
    }
    let mut s = with_offsets(Struct::new("s", fields));
    assign(&mut s, Keep::default());
    s
}

/// `members` members (the first read-mostly, as a head), two or three
/// paddings after the first member, on 64-byte lines.
fn plain_case(members: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Struct> {
    (
        prop::collection::vec(plain(), members),
        prop::collection::vec(1usize..64, 2..=3),
    )
        .prop_map(|(mut specs, pads)| {
            specs[0] = (8, 8, Access::ReadMostly, false);
            let n = specs.len();
            let mut pads: Vec<usize> = pads.into_iter().map(|p| 1 + p % (n - 1)).collect();
            pads.sort_unstable();
            plain_struct(&specs, &pads, 64)
        })
}

proptest! {
    #![proptest_config(crate::support::sweep::proptest_config(300, 12))]

    /// Small structs of this shape: each size claimed minimal is the
    /// exhaustive minimum under the verifier's rule, and no bound is above
    /// it.
    #[test]
    fn small_structs_with_several_paddings_keep_their_claims(s in plain_case(4..=6)) {
        let smallest = exhaustive_min_size(&s, 64);
        prop_assert!(smallest.is_some(), "no layout at all: {:?}", s);
        check_every_preset(&s, 64, smallest.map(Oracle::Smallest), DEFAULT_WORK_LIMIT)?;
    }
}

proptest! {
    #![proptest_config(crate::support::sweep::proptest_config(200, 2))]

    /// Structs of 20 to 40 members of this shape, `balanced` (size first):
    /// no size claimed minimal, and no bound, above a layout the second
    /// formulations find (the lines of the struct solved without its
    /// breaks given parts; the paddings put back at line starts).
    #[test]
    fn large_structs_with_several_paddings_keep_their_claims(s in plain_case(20..=40)) {
        let work = DEFAULT_WORK_LIMIT / 20;
        let sol = solve(&s, &SolveOptions { work_limit: work, ..SolveOptions::default() })
            .map_err(|e| TestCaseError::fail(format!("{e}\n{s:?}")))?;
        prop_assert!(verify(&s, sol.layout.layout()).is_ok());
        let other = [
            lines_given_parts(&s, 64, work),
            with_paddings_put_back(&s, 64, work),
        ]
        .into_iter()
        .flatten()
        .min();
        if let Some(found) = other {
            prop_assert!(sol.lower_bound <= found, "bound {} above a layout of {found}\n{s:?}", sol.lower_bound);
            if let Some(claimed) = claimed_size(&sol) {
                prop_assert!(claimed <= found, "{claimed} claimed minimal, a layout of {found} keeps the rule\n{s:?}");
            }
        }
    }
}
