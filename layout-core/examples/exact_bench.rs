//! Random instances for the exact-reference benchmark, solved by cachelayout.
//!
//! Prints one JSON object per line: the instance (fields as
//! `[size, align, colour]`, colour 0 = free, 1 = read-mostly, 2.. = one per
//! lockless writer group; locked and cold fields are free), the line size,
//! the placement, and cachelayout's answer (size, whether the size and
//! every goal are proven optimal, lower bound, time, whether the time limit
//! stopped it). Feed the output to
//! `tools/exact_reference/compare.py`, which solves the same instances with
//! an exact CP-SAT model and prints the table per size band.
//!
//! ```text
//! cargo run --release -p layout-core --no-default-features --example exact_bench -- \
//!     [--per-band 40] [--seed 1] [--time-limit 10] [--work-limit N] [--only ID] > /tmp/ours.jsonl
//! python3 tools/exact_reference/compare.py /tmp/ours.jsonl
//! ```

use layout_core::model::{Access, Field, Placement, Struct};
use layout_core::solve::{solve, SolveOptions};
use std::time::Duration;

/// Size bands of the benchmark: fields per struct, inclusive.
const BANDS: [(usize, usize); 4] = [(5, 10), (11, 20), (21, 40), (60, 120)];

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        // xorshift64*: the instances are the same on every machine.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) % n
    }
}

struct Instance {
    s: Struct,
    colours: Vec<u32>,
    line: u64,
    placement: Placement,
}

/// One random instance with `n` fields: a random mix of classes (1 to 3
/// lockless writer groups, read-mostly, locked, cold), sizes mostly small.
fn instance(n: usize, rng: &mut Rng) -> Instance {
    let groups = 1 + rng.below(3) as u32;
    // Weights of read-mostly, each lockless group, locked, cold.
    let w_read = 1 + rng.below(6);
    let w_lockless = 1 + rng.below(4);
    let w_locked = rng.below(4);
    let w_cold = rng.below(6);
    let total = w_read + w_lockless + w_locked + w_cold;
    let mut fields = Vec::new();
    let mut colours = Vec::new();
    let mut at = 0u64;
    for i in 0..n {
        let r = rng.below(total);
        let (access, colour) = if r < w_read {
            (Access::ReadMostly, 1)
        } else if r < w_read + w_lockless {
            let g = rng.below(u64::from(groups)) as u32;
            (
                Access::Lockless {
                    group: (g > 0).then(|| format!("g{g}")),
                },
                2 + g,
            )
        } else if r < w_read + w_lockless + w_locked {
            (Access::LockedWrite { lock: "l".into() }, 0)
        } else {
            (Access::Cold, 0)
        };
        let align = [1u64, 2, 4, 8, 8, 8, 8, 16][rng.below(8) as usize];
        let units = match rng.below(10) {
            0..=6 => 1,
            7..=8 => 1 + rng.below(4),
            _ => 1 + rng.below(24),
        };
        let size = (align * units).max(1);
        at = at.div_ceil(align) * align;
        let mut f = Field::new(format!("f{i}"), "t", size, align).with_access(access);
        f.original_offset = Some(at);
        at += size;
        fields.push(f);
        colours.push(colour);
    }
    let s = Struct::new("s", fields);
    let line = if rng.below(3) == 0 { 128 } else { 64 };
    let placement = if rng.below(2) == 0 {
        Placement::Aligned
    } else {
        let a = s.natural_align();
        Placement::Offset(rng.below(line / a) * a)
    };
    Instance {
        s,
        colours,
        line,
        placement,
    }
}

fn main() -> Result<(), String> {
    let mut per_band = 40usize;
    let mut seed = 1u64;
    let mut limit = 10.0f64;
    let mut work_limit = layout_core::solve::DEFAULT_WORK_LIMIT;
    let mut only: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--per-band" => per_band = value()?.parse().map_err(|e| format!("{a}: {e}"))?,
            "--seed" => seed = value()?.parse().map_err(|e| format!("{a}: {e}"))?,
            "--time-limit" => limit = value()?.parse().map_err(|e| format!("{a}: {e}"))?,
            "--work-limit" => work_limit = value()?.parse().map_err(|e| format!("{a}: {e}"))?,
            "--only" => only = Some(value()?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    for (band, &(lo, hi)) in BANDS.iter().enumerate() {
        for k in 0..per_band {
            let n = lo + rng.below((hi - lo + 1) as u64) as usize;
            let inst = instance(n, &mut rng);
            if only.as_ref().is_some_and(|id| *id != format!("{band}-{k}")) {
                continue;
            }
            let opts = SolveOptions {
                line: inst.line,
                placement: inst.placement,
                time_limit: Duration::from_secs_f64(limit),
                work_limit,
                ..SolveOptions::default()
            };
            let started = std::time::Instant::now();
            let sol = solve(&inst.s, &opts).map_err(|e| e.to_string())?;
            let ms = started.elapsed().as_secs_f64() * 1e3;
            let fields: Vec<[u64; 3]> = inst
                .s
                .fields
                .iter()
                .zip(&inst.colours)
                .map(|(f, &c)| [f.size, f.align, u64::from(c)])
                .collect();
            let placement = match inst.placement {
                Placement::Aligned => serde_json::json!("aligned"),
                Placement::Offset(o) => serde_json::json!(o),
                Placement::Offsets(o) => serde_json::json!(o.as_slice()),
            };
            let line = serde_json::json!({
                "id": format!("{band}-{k}"),
                "band": format!("{lo}-{hi}"),
                "n": n,
                "line": inst.line,
                "placement": placement,
                "fields": fields,
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
        }
    }
    Ok(())
}
