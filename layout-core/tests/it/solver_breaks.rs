//! The solver under the author's line breaks (`CACHELINE_PADDING()`,
//! line-aligned members) and `#if` blocks: every objective keeps every
//! block between the breaks it was declared between, and every layout it
//! returns passes the verifier.

use layout_core::model::{Access, Field, PathUse, Struct};
use layout_core::segments::{assign, Keep};
use layout_core::solve::{solve, Preset, SolveOptions};
use layout_core::verify::verify;

fn member(name: &str, size: u64, align: u64, access: Access) -> Field {
    Field::new(name, "t", size, align).with_access(access)
}

fn padding(name: &str) -> Field {
    Field::new(name, "struct cacheline_padding", 0, 64)
}

/// Offsets of the C layout of the declaration order.
fn with_offsets(mut s: Struct) -> Struct {
    let mut at = 0u64;
    for f in &mut s.fields {
        at = at.div_ceil(f.align) * f.align;
        f.original_offset = Some(at);
        at += f.size;
    }
    s
}

/// A path of the access file over the named members (their whole bytes).
fn add_path(s: &mut Struct, name: &str, members: &[&str]) {
    let path = s.paths.len() as u32;
    s.paths.push(name.to_string());
    for m in members {
        let i = s.field_index(m).unwrap();
        let size = s.fields[i].size;
        s.fields[i].paths.push(PathUse {
            path,
            bytes: 0..size,
        });
    }
}

/// `head` and `a` (read-mostly) on one hot path, a cold 56-byte member in a
/// one-member `#if` block between them, the padding before `a`: moving the
/// block after the padding would put the path on one line, but the block
/// stays in its part (the verifier refuses it elsewhere).
fn one_member_block_before_a_padding() -> Struct {
    let mut s = with_offsets(Struct::new(
        "s",
        vec![
            member("head", 8, 8, Access::ReadMostly),
            member("x", 56, 8, Access::Cold),
            padding("_pad1_"),
            member("a", 8, 8, Access::ReadMostly),
            member("ctr", 8, 8, Access::Lockless { group: None }),
        ],
    ));
    assign(&mut s, Keep::default());
    s.blocks = vec![vec![1]];
    add_path(&mut s, "rx", &["head", "a"]);
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
