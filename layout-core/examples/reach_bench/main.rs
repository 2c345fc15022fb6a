//! How often `--objective balanced` reaches the optimum, and whether every
//! size it claims minimal is: generated sets, each instance solved under
//! the default work budget and compared with a reference.
//!
//! The sets (deterministic: the same instances on every machine):
//!
//! - `random`: the uniform instances of `exact_bench` (5 to 120 members,
//!   random classes, one to three writer groups, lines of 64 and 128
//!   bytes, aligned mode and random phases);
//! - `shapes`: the kernel shapes of `exact_bench` (16/32/64-byte alignment
//!   with flexible tails, several locks, pins, walls among flags and
//!   arrays, 60 to 150 members);
//! - `breaks`: kernel-like structs with the author's line breaks: 20 to 40
//!   members (a quarter 60 to 120), two `CACHELINE_PADDING()` markers,
//!   lock words and the members they protect, two to four writer groups,
//!   members aligned to 16, 32 or 64 bytes (half of the 64-byte ones line
//!   breaks, as `____cacheline_aligned_in_smp` makes them), now and then a
//!   flexible tail;
//! - `wide`: the same kind of struct shaped like the misses of held-out
//!   kernel-like structs: 60 to 120 members, two or three lock words,
//!   members aligned to 16, 32 or 64 bytes, a flexible tail in half.
//!
//! The reference of an instance is the smallest verified layout of:
//!
//! - an exhaustive search over every order (each member placed as early as
//!   its alignment and the hard rule allow, at every phase; the layout
//!   judged by the verifier alone; the lowest segment first, identical
//!   members of a part in one order), where the struct has at most
//!   `EXHAUSTIVE` members with bytes and no pins: the optimum
//!   ([`break_oracles::exhaustive_min_size_with`]);
//! - the solver with `--factor` times the work budget (20 by default);
//! - the solver on `--shuffles` declarations of the struct shuffled among
//!   the members that may trade places (6 by default);
//! - with line breaks, the struct without its paddings solved alone and the
//!   paddings put back at every choice of line starts the verifier accepts
//!   (members crossing the breaks as the rule allows;
//!   [`break_oracles::with_paddings_put_back_placed`]);
//! - with paddings as the only breaks (aligned, no flexible tail), the
//!   struct solved without its groups and breaks, its chains of lines
//!   given parts between the breaks in every way the guide allows, the
//!   verifier judging each layout
//!   ([`break_oracles::lines_given_parts_placed`]).
//!
//! The exhaustive search and the two second formulations are the oracles
//! of layout-core's and the command line's tests, one copy included by
//! path from `tests/it/support/break_oracles.rs`.
//!
//! A default run above the reference is a miss; a size claimed minimal
//! above it, or a lower bound above it, a false claim; a layout the
//! verifier refuses, invalid.
//!
//! ```text
//! nice cargo run --release -p layout-core --no-default-features --example reach_bench -- \
//!     [--random 300] [--shapes 0] [--breaks 150] [--wide 0] [--seed 1] [--factor 20] [--shuffles 6] \
//!     [--list] [--only ID] [--dump FILE]
//! ```
//!
//! `--dump` writes one line per instance (id, set, band, size, claimed,
//! bound, reference, which reference, work, milliseconds), to compare two builds against the
//! better of their references (`reach_bench --compare`).
//!

#[path = "../../tests/it/support/break_oracles.rs"]
mod break_oracles;
mod compare;
#[path = "../exact_bench/instance.rs"]
mod instance;
#[path = "../exact_bench/kernel.rs"]
#[allow(dead_code)]
mod kernel;
#[path = "../exact_bench/uniform.rs"]
mod uniform;

use break_oracles::{
    claimed_size, declared_parts, exhaustive_min_size_with, lines_given_parts_placed, member,
    padding, with_offsets, with_paddings_put_back_placed, Cuts, ExhaustiveOptions,
};
use layout_core::layout::Layout;
use layout_core::model::{Access, Field, Placement, Struct};
use layout_core::segments::{assign, Keep};
use layout_core::solve::{solve, SolveOptions, DEFAULT_WORK_LIMIT};
use layout_core::verify::verify;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub use instance::{Instance, Rng};

/// What `--help` prints.
const USAGE: &str =
    "usage: reach_bench [--random N] [--shapes N] [--breaks N] [--wide N] [--seed N] \
[--factor N] [--shuffles N] [--work-limit N] [--list] [--only ID] [--dump FILE]
       reach_bench --compare BEFORE.tsv AFTER.tsv ...
  --random, --shapes, --breaks, --wide: instances of each set (300, 0, 150, 0)
  --seed: which instances (1); --factor: the reference's work budget, times the default (20)
  --shuffles: solves of the declaration shuffled, for the reference (6)
  --work-limit: the default run's work budget; --list: the instances' ids
  --only ID: one instance, its layouts and the struct as a test fixture
  --dump FILE: one line per instance, to compare builds (reach_bench --compare)
  --compare A B ...: dumps of two or more builds, each against the better reference of all";

/// Up to this many members with bytes (and no pins), the reference is the
/// exhaustive search.
const EXHAUSTIVE: usize = 8;

// ---------------------------------------------------------------------------
// The `breaks` set.

/// A kernel-like struct with two paddings: a read-mostly head, lock words
/// with the members they protect, writer groups, flags, pointers,
/// counters, arrays, members aligned to `big`, and now and then a
/// flexible tail.
fn kernel_like(n: usize, rng: &mut Rng) -> Instance {
    kernel_like_mixed(n, rng, &BREAKS)
}

/// What a kernel-like set draws from: how many lock words, the alignments
/// of the big members, how often a flexible tail.
struct Mix {
    /// The fewest lock words, and how many more at most.
    locks: (u64, u64),
    /// The big members' alignment, one drawn per struct.
    big: &'static [u64],
    /// A flexible tail in one struct of this many.
    tail_one_in: u64,
    /// The set's name.
    shape: &'static str,
}

/// The `breaks` set: one to three lock words, big members aligned to 8 to
/// 64 bytes, a flexible tail in a third.
const BREAKS: Mix = Mix {
    locks: (1, 2),
    big: &[8, 16, 32, 64],
    tail_one_in: 3,
    shape: "breaks",
};

/// The `wide` set, shaped like the misses of the held-out kernel-like
/// structs: two or three lock words, big members aligned to 16, 32 or 64
/// bytes, a flexible tail in half (60 to 120 members).
const WIDE: Mix = Mix {
    locks: (2, 1),
    big: &[16, 32, 64],
    tail_one_in: 2,
    shape: "wide",
};

/// [`kernel_like`] drawing from `mix`.
fn kernel_like_mixed(n: usize, rng: &mut Rng, mix: &Mix) -> Instance {
    let groups = 2 + rng.below(3);
    let locks = mix.locks.0 + rng.below(mix.locks.1 + 1);
    let big = mix.big[rng.below(mix.big.len() as u64) as usize];
    let tail = rng.below(mix.tail_one_in) == 0;
    let body = if tail { n - 1 } else { n };
    let mut pads = [
        2 + rng.below(body as u64 - 4),
        2 + rng.below(body as u64 - 4),
    ];
    pads.sort_unstable();
    let mut words_left: Vec<u64> = (0..locks).collect();
    let mut fields = Vec::new();
    let class = |rng: &mut Rng, i: usize| {
        if i == 0 {
            return Access::ReadMostly;
        }
        match rng.below(20) {
            0..=6 => Access::ReadMostly,
            7..=10 => Access::Lockless {
                group: Some(format!("g{}", rng.below(groups))),
            },
            11..=13 => Access::LockedWrite {
                lock: format!("lock{}", rng.below(locks)),
            },
            _ => Access::Cold,
        }
    };
    for i in 0..body {
        for (k, &p) in pads.iter().enumerate() {
            if p as usize == i {
                fields.push(padding(&format!("_pad{}_", k + 1), 64));
            }
        }
        let (size, align) = match rng.below(12) {
            0 => (8 * (2 + rng.below(15)), 8),
            1 => (16 * (1 + rng.below(3)), 16),
            2 if big > 8 => (big * (1 + rng.below(2)), big),
            3 | 4 => (4, 4),
            5 => (
                [1u64, 2][rng.below(2) as usize],
                [1u64, 2][rng.below(2) as usize],
            ),
            _ => (8, 8),
        };
        let size = size.max(align);
        if i > 0 && !words_left.is_empty() && rng.below(body as u64) < 2 * locks {
            let l = words_left.remove(rng.below(words_left.len() as u64) as usize);
            let mut f = Field::new(format!("lock{l}"), "spinlock_t", 4, 4).with_access(
                Access::LockedWrite {
                    lock: format!("lock{l}"),
                },
            );
            f.lock_word = true;
            fields.push(f);
            continue;
        }
        let access = class(rng, i);
        let mut f = member(&format!("f{i}"), size, align, access);
        // A line-aligned member is one of the author's line breaks when
        // the source says `____cacheline_aligned_in_smp` on it: half of
        // them here.
        f.line_break = i > 0 && align == 64 && rng.below(2) == 0;
        fields.push(f);
    }
    if tail {
        let align = [4u64, 8, big.min(64)][rng.below(3) as usize];
        let access = class(rng, 1);
        fields.push(Field::new(format!("f{body}"), "u8[]", 0, align).with_access(access));
    }
    let mut s = with_offsets(Struct::new("kernel_like", fields));
    assign(&mut s, Keep::default());
    let placement = if rng.below(4) == 0 {
        Placement::Offset(8 * rng.below(8) / s.natural_align() * s.natural_align())
    } else {
        Placement::Aligned
    };
    Instance {
        s,
        line: 64,
        placement,
        shape: mix.shape.into(),
    }
}

// ---------------------------------------------------------------------------
// The same problem declared in another order.

/// `inst` with its members shuffled among the members they may trade
/// places with without changing the problem: those of one segment and one
/// part (between two line breaks), neither pinned, nor a line break, nor
/// the first member, nor a flexible tail, nor in a block or a declaration
/// list. The rule, the parts and the optimum are the same; the search's
/// constructions, which start from the declaration order, are not.
fn shuffled(inst: &Instance, rng: &mut Rng) -> Instance {
    let s = &inst.s;
    let part = declared_parts(s);
    let movable = |i: usize| {
        let f = &s.fields[i];
        i > 0
            && !f.pinned
            && !s.breaks.contains(&i)
            && s.flexible_tail() != Some(i)
            && f.size > 0
            && !s.blocks.iter().any(|b| b.contains(&i))
            && !s.lists.iter().any(|l| l.contains(&i))
    };
    let mut perm: Vec<usize> = (0..s.fields.len()).collect();
    let mut i = 0;
    while i < perm.len() {
        if !movable(i) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < perm.len()
            && movable(j)
            && part[j] == part[i]
            && s.fields[j].segment == s.fields[i].segment
        {
            j += 1;
        }
        // Fisher-Yates on i..j.
        for k in (i + 1..j).rev() {
            let r = i + rng.below((k - i + 1) as u64) as usize;
            perm.swap(k, r);
        }
        i = j;
    }
    let mut out = s.clone();
    out.fields = perm.iter().map(|&k| s.fields[k].clone()).collect();
    Instance {
        s: out,
        line: inst.line,
        placement: inst.placement,
        shape: inst.shape.clone(),
    }
}

// ---------------------------------------------------------------------------

struct Args {
    random: usize,
    shapes: usize,
    breaks: usize,
    wide: usize,
    seed: u64,
    factor: u64,
    shuffles: usize,
    work_limit: u64,
    list: bool,
    only: Option<String>,
    dump: Option<String>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        random: 300,
        shapes: 0,
        breaks: 150,
        wide: 0,
        seed: 1,
        factor: 20,
        shuffles: 6,
        work_limit: DEFAULT_WORK_LIMIT,
        list: false,
        only: None,
        dump: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut value = || it.next().ok_or(format!("{k} needs a value"));
        let num = |v: String| v.parse::<u64>().map_err(|e| format!("{k}: {e}"));
        match k.as_str() {
            "--random" => a.random = num(value()?)? as usize,
            "--shapes" => a.shapes = num(value()?)? as usize,
            "--breaks" => a.breaks = num(value()?)? as usize,
            "--wide" => a.wide = num(value()?)? as usize,
            "--seed" => a.seed = num(value()?)?,
            "--factor" => a.factor = num(value()?)?,
            "--shuffles" => a.shuffles = num(value()?)? as usize,
            "--work-limit" => a.work_limit = num(value()?)?,
            "--list" => a.list = true,
            "--only" => a.only = Some(value()?),
            "--dump" => a.dump = Some(value()?),
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other} (--help lists them)")),
        }
    }
    Ok(a)
}

/// The instances: `(id, set, band, instance)`.
fn instances(a: &Args) -> Vec<(String, &'static str, String, Instance)> {
    let mut out = Vec::new();
    let stream = |k: u64| Rng((a.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (k << 40)) | 1);
    let mut rng = stream(1);
    for k in 0..a.random {
        let (lo, hi) = uniform::BANDS[k % uniform::BANDS.len()];
        let n = lo + rng.below((hi - lo + 1) as u64) as usize;
        out.push((
            format!("r{}-{k}", a.seed),
            "random",
            format!("{lo}-{hi}"),
            uniform::instance(n, &mut rng),
        ));
    }
    let mut rng = stream(2);
    const BANDS: [(usize, usize); 4] = [(5, 10), (11, 20), (21, 40), (60, 150)];
    for k in 0..a.shapes {
        let shape = kernel::SHAPES[k % kernel::SHAPES.len()];
        let (lo, hi) = if shape == "large" {
            BANDS[3]
        } else {
            BANDS[(k / kernel::SHAPES.len()) % BANDS.len()]
        };
        let n = lo + rng.below((hi - lo + 1) as u64) as usize;
        let inst = kernel::instance(shape, n, &mut rng);
        out.push((
            format!("k{}-{k}", a.seed),
            "shapes",
            format!("{shape} {lo}-{hi}"),
            inst,
        ));
    }
    let mut rng = stream(3);
    for k in 0..a.breaks {
        let (lo, hi) = if k % 4 == 3 { (60, 120) } else { (20, 40) };
        let n = lo + rng.below((hi - lo + 1) as u64) as usize;
        out.push((
            format!("b{}-{k}", a.seed),
            "breaks",
            format!("{lo}-{hi}"),
            kernel_like(n, &mut rng),
        ));
    }
    let mut rng = stream(4);
    for k in 0..a.wide {
        let n = 60 + rng.below(61) as usize;
        out.push((
            format!("w{}-{k}", a.seed),
            "wide",
            "60-120".to_string(),
            kernel_like_mixed(n, &mut rng, &WIDE),
        ));
    }
    out
}

/// Prints a layout: each member's offset, size, alignment, class and the
/// part it was declared in.
fn show(s: &Struct, l: &Layout) {
    let part = declared_parts(s);
    println!("size {} align {} {:?}", l.size, l.align, l.placement);
    for sl in &l.slots {
        let f = &s.fields[sl.field];
        println!(
            "  {:5} {:>4} {:>3} {:<10} {}{} part {}",
            sl.offset,
            f.size,
            f.align,
            f.name,
            f.access.tag(),
            if f.lock_word { "*" } else { "" },
            part[sl.field]
        );
    }
}

/// FNV-1a of an instance's id: its shuffles' seed.
fn fnv(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[derive(Default)]
struct Row {
    total: usize,
    reached: usize,
    exhaustive: usize,
    claims: usize,
    false_claims: usize,
    invalid: usize,
    gaps: BTreeMap<u64, usize>,
    ms: f64,
}

fn main() -> Result<(), String> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().is_some_and(|a| a == "--compare") {
        return compare::run(&argv[1..]);
    }
    let a = args()?;
    let started = Instant::now();
    let mut rows: BTreeMap<(String, String), Row> = BTreeMap::new();
    let mut misses = Vec::new();
    let mut errors = Vec::new();
    // One line per instance: id, set, band, size, size claimed minimal
    // (0/1), lower bound, reference, how.
    let mut dump = String::new();
    for (id, set, band, inst) in instances(&a) {
        if a.only.as_ref().is_some_and(|o| *o != id) {
            continue;
        }
        let opts = |work_limit: u64| SolveOptions {
            line: inst.line,
            placement: inst.placement,
            work_limit,
            time_limit: Duration::from_secs(3600),
            ..SolveOptions::default()
        };
        let t = Instant::now();
        let sol = match solve(&inst.s, &opts(a.work_limit)) {
            Ok(sol) => sol,
            Err(layout_core::SolveError::Infeasible(why)) if !why.contains("internal") => {
                continue;
            }
            Err(e) => {
                errors.push(format!("{id}: {e}"));
                continue;
            }
        };
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if a.only.is_some() {
            println!("{sol:?}");
            show(&inst.s, sol.layout.layout());
            // The members as a fixture: (size, align, class tag, lock word,
            // padding before).
            let spec: Vec<String> = inst
                .s
                .fields
                .iter()
                .map(|f| {
                    format!(
                        "({}, {}, \"{}\", {})",
                        f.size,
                        f.align,
                        if f.size == 0 && f.ty.contains("padding") {
                            "pad".to_string()
                        } else if f.is_flexible_array() {
                            format!("tail {}", f.access.tag())
                        } else {
                            f.access.tag()
                        },
                        f.lock_word
                    )
                })
                .collect();
            println!("spec: [{}]", spec.join(", "));
        }
        let row = rows.entry((set.to_string(), band.clone())).or_default();
        row.total += 1;
        row.ms += ms;
        let valid = verify(&inst.s, sol.layout.layout()).is_ok();
        if !valid {
            row.invalid += 1;
        }
        let members = inst.s.fields.iter().filter(|f| f.size > 0).count();
        let pinned = inst.s.fields.iter().any(|f| f.pinned);
        let (reference, how) = if members <= EXHAUSTIVE && !pinned {
            (
                exhaustive_min_size_with(
                    &inst.s,
                    &ExhaustiveOptions {
                        line: inst.line,
                        placement: inst.placement,
                        cuts: Cuts::Segments,
                    },
                ),
                "exhaustive",
            )
        } else {
            let mut r: Option<u64> = None;
            let mut how = "own";
            let mut better = |size: u64, by: &'static str, r: &mut Option<u64>| {
                if r.is_none_or(|r| size < r) {
                    *r = Some(size);
                    how = by;
                }
            };
            if a.factor > 1 {
                if let Ok(long) = solve(&inst.s, &opts(a.work_limit * a.factor)) {
                    if verify(&inst.s, long.layout.layout()).is_ok() {
                        better(long.layout.size, "long", &mut r);
                    }
                }
            }
            let mut rng = Rng(0x5EED ^ (id.len() as u64) << 20 ^ fnv(&id));
            for _ in 0..a.shuffles {
                let other = shuffled(&inst, &mut rng);
                if let Ok(o) = solve(&other.s, &opts(a.work_limit)) {
                    // Judged on the original struct: the same members at
                    // the same offsets.
                    let l = o.layout.layout();
                    let map: Vec<usize> = other
                        .s
                        .fields
                        .iter()
                        .map(|f| {
                            inst.s
                                .fields
                                .iter()
                                .position(|g| g.name == f.name)
                                .unwrap_or(0)
                        })
                        .collect();
                    let mut back = l.clone();
                    for sl in &mut back.slots {
                        sl.field = map[sl.field];
                    }
                    if verify(&inst.s, &back).is_ok() {
                        if a.only.is_some() && back.size < sol.layout.size {
                            println!("a smaller layout, from a shuffled declaration:");
                            show(&inst.s, &back);
                        }
                        better(back.size, "shuffled", &mut r);
                    }
                }
            }
            if let Some(o) =
                with_paddings_put_back_placed(&inst.s, inst.line, inst.placement, a.work_limit)
            {
                better(o, "put back", &mut r);
            }
            if let Some(o) =
                lines_given_parts_placed(&inst.s, inst.line, inst.placement, a.work_limit)
            {
                better(o, "parts", &mut r);
            }
            (r, how)
        };
        if how == "exhaustive" {
            row.exhaustive += 1;
        }
        let size = sol.layout.size;
        let reference = reference.unwrap_or(size).min(size);
        dump.push_str(&format!(
            "{id}\t{set}\t{band}\t{size}\t{}\t{}\t{reference}\t{how}\t{}\t{ms:.2}\n",
            u8::from(claimed_size(&sol).is_some()),
            sol.lower_bound,
            sol.work
        ));
        let gap = size - reference;
        *row.gaps.entry(gap).or_default() += 1;
        if gap == 0 {
            row.reached += 1;
        } else {
            misses.push(format!(
                "{id} ({set} {band}, {} members, {:?}): {size} > {reference} ({how}), bound {}",
                inst.s.fields.len(),
                inst.placement,
                sol.lower_bound
            ));
        }
        if claimed_size(&sol).is_some() {
            row.claims += 1;
        }
        if claimed_size(&sol).is_some_and(|c| c > reference) || sol.lower_bound > reference {
            row.false_claims += 1;
            misses.push(format!(
                "{id}: FALSE CLAIM {size} (bound {}) > {reference} ({how})",
                sol.lower_bound
            ));
        }
    }
    println!(
        "| set | members | instances | reached | exhaustive refs | sizes claimed | false claims | invalid | gaps (bytes: count) | mean ms |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut totals: BTreeMap<String, (usize, usize, usize, usize)> = BTreeMap::new();
    for ((set, band), r) in &rows {
        let gaps: Vec<String> = r
            .gaps
            .iter()
            .filter(|(g, _)| **g > 0)
            .map(|(g, c)| format!("{g}: {c}"))
            .collect();
        println!(
            "| {set} | {band} | {} | {} | {} | {} | {} | {} | {} | {:.0} |",
            r.total,
            r.reached,
            r.exhaustive,
            r.claims,
            r.false_claims,
            r.invalid,
            if gaps.is_empty() {
                "—".to_string()
            } else {
                gaps.join(", ")
            },
            r.ms / r.total.max(1) as f64
        );
        let t = totals.entry(set.clone()).or_default();
        t.0 += r.total;
        t.1 += r.reached;
        t.2 += r.false_claims;
        t.3 += r.invalid;
    }
    for (set, (total, reached, false_claims, invalid)) in &totals {
        println!(
            "{set}: {reached} of {total} reached, {false_claims} false claims, {invalid} invalid"
        );
    }
    if a.list || misses.len() <= 40 {
        for m in &misses {
            println!("  {m}");
        }
    }
    for e in &errors {
        println!("  ERROR {e}");
    }
    if let Some(path) = &a.dump {
        std::fs::write(path, dump).map_err(|e| format!("{path}: {e}"))?;
    }
    eprintln!("{:.1} s", started.elapsed().as_secs_f64());
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("{} errors", errors.len()))
    }
}
