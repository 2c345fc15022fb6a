//! Random instances for the exact-reference benchmark, solved by cachelayout.
//!
//! Prints one JSON object per line: the instance (fields as
//! `[size, align, colour]`, colour 0 = free, then one per colour of the hard
//! rule: the read-mostly members, each lockless writer group, each lock
//! word; the pinned members with their offsets, the segments every layout
//! keeps in order, the flexible array tail, and each member's access class
//! as its tag, `*` after a lock word), the line size, the placement,
//! and cachelayout's answer (size, whether the size and every goal are
//! proven optimal, lower bound, time, whether the time limit stopped it).
//! Feed the output to `tools/exact_reference/compare.py`, which solves the
//! same instances with an exact CP-SAT model and prints the table per shape
//! and size band.
//!
//! Two sets: `uniform` (random classes and sizes, every member free) and
//! `kernel` (the shapes of [`kernel::SHAPES`]: large alignments and
//! flexible tails, several locks, pins, walls among flags and arrays, 60 to
//! 150 members).
//!
//! ```text
//! cargo run --release -p layout-core --no-default-features --example exact_bench -- \
//!     [--set uniform|kernel] [--per-band 40] [--seed 1] [--time-limit 10] \
//!     [--work-limit N] [--only ID] > /tmp/ours.jsonl
//! python3 tools/exact_reference/compare.py /tmp/ours.jsonl
//! ```

mod instance;
mod kernel;
mod uniform;

use layout_core::class::{colouring, Colouring};
use layout_core::model::{Placement, Struct};
use layout_core::solve::{solve, SolveOptions};
use std::time::Duration;

pub use instance::{Instance, Rng};

/// Each field's colour of the hard rule: 0 when free, else one number per
/// colour (a class coloured `Shared` has one, a `PerParam` class one per
/// parameter), numbered in order of first appearance.
fn colours(s: &Struct) -> Vec<u64> {
    let mut seen: Vec<(String, Option<String>)> = Vec::new();
    s.fields
        .iter()
        .map(|f| {
            let a = f.rule_access();
            let class = a.class();
            let key = match colouring(class, false) {
                Colouring::Free => return 0,
                Colouring::Shared => ("shared".to_string(), None),
                Colouring::PerParam => (format!("{class:?}"), a.param().map(str::to_string)),
            };
            let at = seen.iter().position(|k| *k == key).unwrap_or_else(|| {
                seen.push(key);
                seen.len() - 1
            });
            at as u64 + 1
        })
        .collect()
}

struct Args {
    set: String,
    per_band: usize,
    seed: u64,
    limit: f64,
    work_limit: u64,
    only: Option<String>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        set: "uniform".into(),
        per_band: 40,
        seed: 1,
        limit: 10.0,
        work_limit: layout_core::solve::DEFAULT_WORK_LIMIT,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut value = || it.next().ok_or(format!("{k} needs a value"));
        let bad = |e: &dyn std::fmt::Display| format!("{k}: {e}");
        match k.as_str() {
            "--set" => a.set = value()?,
            "--per-band" => a.per_band = value()?.parse().map_err(|e| bad(&e))?,
            "--seed" => a.seed = value()?.parse().map_err(|e| bad(&e))?,
            "--time-limit" => a.limit = value()?.parse().map_err(|e| bad(&e))?,
            "--work-limit" => a.work_limit = value()?.parse().map_err(|e| bad(&e))?,
            "--only" => a.only = Some(value()?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.set != "uniform" && a.set != "kernel" {
        return Err(format!("--set {}: uniform or kernel", a.set));
    }
    Ok(a)
}

/// Solve one instance and print its line.
fn run(id: &str, band: (usize, usize), inst: &Instance, a: &Args) -> Result<(), String> {
    let opts = SolveOptions {
        line: inst.line,
        placement: inst.placement,
        time_limit: Duration::from_secs_f64(a.limit),
        work_limit: a.work_limit,
        ..SolveOptions::default()
    };
    let started = std::time::Instant::now();
    let sol = match solve(&inst.s, &opts) {
        Ok(sol) => sol,
        // Pins that conflict at every alignment: no instance.
        Err(layout_core::SolveError::Infeasible(why)) => {
            eprintln!("skipped {id} (infeasible: {why})");
            return Ok(());
        }
        Err(e) => return Err(format!("{id}: {e}")),
    };
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let s = &inst.s;
    let fields: Vec<[u64; 3]> = s
        .fields
        .iter()
        .zip(colours(s))
        .map(|(f, c)| [f.size, f.align, c])
        .collect();
    let pins: Vec<[u64; 2]> = s
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.pinned)
        .map(|(i, f)| [i as u64, f.original_offset.unwrap_or(0)])
        .collect();
    let segments: Vec<u32> = s.fields.iter().map(|f| f.segment).collect();
    // Each field's access class as its tag (`R`, `A(g1)`, `L(lock1)`, `C`),
    // `*` after a lock word: what `--only` needs to rebuild the struct.
    let classes: Vec<String> = s
        .fields
        .iter()
        .map(|f| format!("{}{}", f.access.tag(), if f.lock_word { "*" } else { "" }))
        .collect();
    let placement = match inst.placement {
        Placement::Aligned => serde_json::json!("aligned"),
        Placement::Offset(o) => serde_json::json!(o),
        Placement::Offsets(o) => serde_json::json!(o.as_slice()),
    };
    let line = serde_json::json!({
        "id": id,
        "shape": inst.shape,
        "band": format!("{}-{}", band.0, band.1),
        "n": s.fields.len(),
        "line": inst.line,
        "placement": placement,
        "fields": fields,
        "pins": pins,
        "segments": segments,
        "classes": classes,
        "tail": s.flexible_tail(),
        "ours": {
            "size": sol.layout.size,
            "align": sol.layout.align,
            "optimal": sol.optimal,
            "size_proven": sol.lower_bound == sol.layout.size,
            "lower_bound": sol.lower_bound,
            "ms": ms,
            "stopped_by_time": sol.stopped_by_time,
            "work": sol.work,
            "method": sol.method.name(),
        },
    });
    println!("{line}");
    Ok(())
}

fn main() -> Result<(), String> {
    let a = args()?;
    let mut rng = Rng(a.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut todo: Vec<(String, (usize, usize), Instance)> = Vec::new();
    if a.set == "uniform" {
        for (band, &(lo, hi)) in uniform::BANDS.iter().enumerate() {
            for k in 0..a.per_band {
                let n = lo + rng.below((hi - lo + 1) as u64) as usize;
                todo.push((
                    format!("{band}-{k}"),
                    (lo, hi),
                    uniform::instance(n, &mut rng),
                ));
            }
        }
    } else {
        const BANDS: [(usize, usize); 4] = [(5, 10), (11, 20), (21, 40), (60, 150)];
        for (si, shape) in kernel::SHAPES.iter().copied().enumerate() {
            for (band, &(lo, hi)) in BANDS.iter().enumerate() {
                // A stream of its own per shape and band: a change to one
                // generator leaves the other instances as they were.
                let mut rng = Rng((a.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    ^ ((si as u64 * 8 + band as u64) << 32))
                    | 1);
                // `large` is the 60-150 shape; the others get every band.
                let count = match (shape, band) {
                    ("large", 3) => 2 * a.per_band,
                    ("large", _) => 0,
                    _ => a.per_band,
                };
                for k in 0..count {
                    let n = lo + rng.below((hi - lo + 1) as u64) as usize;
                    let inst = kernel::instance(shape, n, &mut rng);
                    todo.push((format!("s{}-{shape}-{band}-{k}", a.seed), (lo, hi), inst));
                }
            }
        }
    }
    for (id, band, inst) in &todo {
        if a.only.as_ref().is_some_and(|o| o != id) {
            continue;
        }
        run(id, *band, inst, &a)?;
    }
    Ok(())
}
