//! The struct in its tree, as a property: random small C structs with `#if`
//! blocks (taken and not taken, nested), `CACHELINE_PADDING()` lines,
//! line-aligned members, declarator lists (`int a, b;`), zero-length array
//! markers, empty structs and every access class, with and without `--regroup`. Every layout the solver returns
//! passes the verifier, has a diff (in the `aligned` and `padding` styles),
//! the diff applies with `patch -p1`, and the C front-end reads the patched header
//! back with exactly the proposed offsets and size: what `--format json`
//! reports is what the diff writes.

use crate::support::scratch_dir;
use layout_core::c::parse_header;
use layout_core::emit::{c_diff, CStyle};
use layout_core::header_inputs::{Defines, TypeTable};
use layout_core::model::Access;
use layout_core::{solve, verify, SolveOptions};
use std::path::Path;

/// A small deterministic generator (64-bit LCG): the same cases on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const TYPES: [&str; 6] = ["char", "short", "int", "long", "long", "unsigned int"];

/// One member declaration line, named `mK`.
fn member(rng: &mut Rng, k: &mut usize, indent: &str) -> String {
    let ty = TYPES[rng.below(TYPES.len() as u64) as usize];
    let name = format!("m{k}");
    *k += 1;
    if rng.below(8) == 0 {
        // A declarator list: the diff moves it only whole.
        let second = format!("m{k}");
        *k += 1;
        return format!("{indent}{ty} {name}, {second};\n");
    }
    let array = match rng.below(6) {
        0 => "[3]",
        1 => "[5]",
        _ => "",
    };
    let aligned = if rng.below(12) == 0 {
        " ____cacheline_aligned_in_smp"
    } else {
        ""
    };
    format!("{indent}{ty} {name}{array}{aligned};\n")
}

/// A body of `items` top-level items: members, `#ifdef` blocks (of
/// `CONFIG_ON`, defined, or `CONFIG_OFF`, not), paddings.
fn body(rng: &mut Rng, items: usize, k: &mut usize, pads: &mut usize, depth: u32) -> String {
    let mut out = String::new();
    for _ in 0..items {
        match rng.below(10) {
            // Now and then at the top: a zero-length array (a wall the
            // members keep their side of) or an empty struct (a member
            // like any other).
            0 if depth == 0 && rng.below(4) == 0 => {
                let kind = rng.below(2);
                out.push_str(&if kind == 0 {
                    format!("\tchar mark{k}[0];\n")
                } else {
                    format!("\tstruct {{ }} empty{k};\n")
                });
                *k += 1;
            }
            0..=4 => out.push_str(&member(rng, k, "\t")),
            5..=7 => {
                let on = rng.below(4) != 0;
                out.push_str(if on {
                    "#ifdef CONFIG_ON\n"
                } else {
                    "#ifdef CONFIG_OFF\n"
                });
                let n = 1 + rng.below(3) as usize;
                // Nested blocks only in a taken one: the diff's reading of
                // the body does not see directives inside a skipped group.
                if on && depth == 0 && rng.below(4) == 0 {
                    out.push_str(&body(rng, n, k, pads, depth + 1));
                } else {
                    for _ in 0..n {
                        out.push_str(&member(rng, k, "\t"));
                    }
                }
                out.push_str("#endif\n");
            }
            _ if depth == 0 => {
                out.push_str(&format!("\tCACHELINE_PADDING(_pad{pads}_);\n"));
                *pads += 1;
            }
            _ => out.push_str(&member(rng, k, "\t")),
        }
    }
    out
}

fn header(rng: &mut Rng) -> String {
    let mut k = 0;
    let mut pads = 1;
    let items = 3 + rng.below(7) as usize;
    let mut text = String::from("struct s {\n\tlong first;\n");
    text.push_str(&body(rng, items, &mut k, &mut pads, 0));
    text.push_str("};\n");
    text
}

fn class(rng: &mut Rng) -> Access {
    match rng.below(6) {
        0 | 1 => Access::ReadMostly,
        2 => Access::Lockless { group: None },
        3 => Access::Lockless {
            group: Some("b".into()),
        },
        4 => Access::LockedWrite { lock: "l".into() },
        _ => Access::Cold,
    }
}

/// `(name, offset)` of every member with bytes, sorted, and the size.
fn offsets_of(model: &layout_core::Struct, size: u64) -> (Vec<(String, u64)>, u64) {
    let mut v: Vec<(String, u64)> = model
        .fields
        .iter()
        .filter(|f| f.size > 0)
        .map(|f| (f.name.clone(), f.original_offset.unwrap()))
        .collect();
    v.sort();
    (v, size)
}

fn apply(dir: &Path, diff: &str) -> bool {
    std::fs::write(dir.join("fix.patch"), diff).unwrap();
    std::process::Command::new("patch")
        .current_dir(dir)
        .args(["-p1", "--batch", "--quiet", "-i", "fix.patch"])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn every_layout_of_a_struct_with_blocks_and_paddings_has_a_diff_that_gives_it() {
    if std::process::Command::new("patch")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("SKIPPED: needs patch");
        return;
    }
    let mut defines = Defines::default();
    defines.insert("CONFIG_ON", 1);
    let types = TypeTable::default();
    let dir = scratch_dir("tree_props");
    let mut rng = Rng(0x7ee5_eed5);
    let mut moved_across = 0;
    // 600 cases with CACHELAYOUT_SWEEPS=full; the first 75 in the fast
    // suite (each solves, writes a diff, applies it and compiles it).
    let cases = crate::support::sweep::cases(600, 75);
    for case in 0..cases {
        let regroup = case % 3 == 2;
        let text = header(&mut rng);
        let path = Path::new("s.h");
        let h = parse_header(path, &text, &defines, &types)
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        let mut cs = h.find_struct("s").unwrap();
        for f in cs.model.fields.iter_mut().filter(|f| f.size > 0) {
            f.access = class(&mut rng);
        }
        // A declarator list shares one class: C puts its fields next to
        // each other, which the hard rule could forbid.
        for list in cs.model.lists.clone() {
            let access = cs.model.fields[list[0]].access.clone();
            for &f in &list[1..] {
                cs.model.fields[f].access = access.clone();
            }
        }
        if regroup {
            // --regroup: the paddings leave the model; the blocks stay.
            let d = layout_core::segments::dissolve_groups(
                &mut cs.model,
                layout_core::segments::Keep::default(),
            );
            layout_core::segments::remap_source(&mut cs.source, &d);
        }
        let s = &cs.model;
        let sol = solve(s, &SolveOptions::default())
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        let v = verify(s, &sol.layout).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        let style = if case % 2 == 0 {
            CStyle::Aligned
        } else {
            CStyle::Padding
        };
        let diff = c_diff(&cs.source, &v, style)
            .unwrap_or_else(|e| panic!("case {case}: no diff for the layout: {e}\n{text}"));
        let off = sol.layout.offsets_by_field(s.fields.len());
        let mut want: Vec<(String, u64)> = s
            .fields
            .iter()
            .zip(&off)
            .filter(|(f, _)| f.size > 0)
            .map(|(f, o)| (f.name.clone(), o.unwrap()))
            .collect();
        want.sort();
        if diff.is_empty() {
            if !regroup {
                assert_eq!(
                    offsets_of(s, cs.size),
                    (want, sol.layout.size),
                    "case {case}"
                );
            }
            continue;
        }
        std::fs::write(dir.join("s.h"), &text).unwrap();
        assert!(
            apply(&dir, &diff),
            "case {case}: patch -p1 failed\n{text}\n{diff}"
        );
        let patched = std::fs::read_to_string(dir.join("s.h")).unwrap();
        let again = parse_header(path, &patched, &defines, &types)
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{patched}"));
        let back = again.find_struct("s").unwrap();
        let (got, size) = offsets_of(&back.model, back.size);
        // The diff may add padding members of its own.
        let got: Vec<(String, u64)> = got
            .into_iter()
            .filter(|(n, _)| want.iter().any(|(w, _)| w == n))
            .collect();
        assert_eq!(
            (got, size),
            (want, sol.layout.size),
            "case {case}: the patched header is not the proposed layout\n{text}\n{diff}"
        );
        // A padding line moved or was written: members crossed a break.
        if !s.breaks.is_empty() && diff.contains("+\tCACHELINE_PADDING") {
            moved_across += 1;
        }
    }
    println!("{cases} cases; {moved_across} diffs of structs with breaks write a padding line");
}
