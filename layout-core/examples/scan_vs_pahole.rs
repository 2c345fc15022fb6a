//! `cachelayout scan --packable` against `pahole -P` on the same BTF, in the
//! same run: wall time of each as a process (median of N runs, alternating),
//! the library in-process, and a per-struct comparison of the best sizes.
//!
//! ```text
//! cargo build --release && cargo run --release --example scan_vs_pahole -- \
//!     [--btf /sys/kernel/btf/vmlinux] [--runs 21] [--bin target/release/cachelayout] \
//!     [--pahole /usr/bin/pahole] [--explain STRUCT]
//! ```
//!
//! Structs whose name occurs twice in either output are left out of the
//! per-struct comparison (and counted). Where pahole's best size is smaller,
//! the struct is packed again under relaxed rules to say why:
//! pahole's size is not a multiple of the struct's alignment (it drops tail
//! padding the alignment asks for: rounded up, it is no smaller than ours),
//! or pahole moves members across
//! cache-line groups (aligned members, CACHELINE_PADDING, group markers), or
//! pahole caps alignment at 8 bytes. Anything else is counted as unexplained.

use layout_core::scan::pack::{self, Rules};
use layout_core::typedb::{Aggregate, TypeDb};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

struct Options {
    btf: PathBuf,
    runs: usize,
    bin: PathBuf,
    pahole: PathBuf,
    explain: Option<String>,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        btf: "/sys/kernel/btf/vmlinux".into(),
        runs: 21,
        bin: "target/release/cachelayout".into(),
        pahole: "pahole".into(),
        explain: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--btf" => o.btf = value()?.into(),
            "--runs" => o.runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--bin" => o.bin = value()?.into(),
            "--pahole" => o.pahole = value()?.into(),
            "--explain" => o.explain = Some(value()?),
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    Ok(o)
}

/// Runs a command, returns its wall time and stdout (stderr is discarded:
/// pahole 1.24 warns about BTF kinds it does not know).
fn timed(program: &PathBuf, args: &[&str]) -> Result<(Duration, String), String> {
    let start = Instant::now();
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    let wall = start.elapsed();
    if !out.status.success() {
        return Err(format!(
            "{} {} failed: {}",
            program.display(),
            args.join(" "),
            out.status
        ));
    }
    Ok((wall, String::from_utf8_lossy(&out.stdout).into_owned()))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// name -> every (size, best) line of a `name\tsize\tbest\tsaving` listing.
fn parse_listing(text: &str) -> HashMap<String, Vec<(u64, u64)>> {
    let mut m: HashMap<String, Vec<(u64, u64)>> = HashMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 3 {
            continue;
        }
        if let (Ok(size), Ok(best)) = (f[1].trim().parse(), f[2].trim().parse()) {
            m.entry(f[0].trim().to_string())
                .or_default()
                .push((size, best));
        }
    }
    m
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Why {
    TailPadding,
    CrossesGroups,
    WideAlignment,
    Unexplained,
}

impl Why {
    fn text(self) -> &'static str {
        match self {
            Why::TailPadding => "pahole's size is not a multiple of the struct's alignment (no layout has it; rounded up, it is ours)",
            Why::CrossesGroups => "pahole moves members across cache-line groups (aligned members, CACHELINE_PADDING, group markers; sizes rounded up to the alignment)",
            Why::WideAlignment => "pahole caps alignment at 8 bytes (ignores aligned attributes and cache-line aligned types)",
            Why::Unexplained => "unexplained",
        }
    }
}

fn why_pahole_smaller(agg: &Aggregate, pahole_best: u64, ours: u64) -> Why {
    // No struct of this alignment has pahole's size; the next one that does:
    let align = agg.align.max(1);
    let pahole_best = pahole_best.div_ceil(align) * align;
    if ours <= pahole_best {
        return Why::TailPadding;
    }
    let free = pack::pack_with(
        agg,
        Rules {
            keep_groups: false,
            keep_wide_alignment: true,
        },
    );
    if free.best_size <= pahole_best {
        return Why::CrossesGroups;
    }
    let loose = pack::pack_with(
        agg,
        Rules {
            keep_groups: false,
            keep_wide_alignment: false,
        },
    );
    if loose.best_size <= pahole_best {
        return Why::WideAlignment;
    }
    Why::Unexplained
}

fn explain(db: &TypeDb, name: &str) {
    for agg in db.find_all(name) {
        let p = pack::pack_padding_only(agg);
        println!(
            "struct {} size {} align {} best {} optimal {}",
            agg.name, agg.size, agg.align, p.best_size, p.optimal
        );
        let Some((model, layout)) = p.model_and_layout(agg, 64) else {
            println!("  kept as it is");
            continue;
        };
        for slot in &layout.slots {
            let f = &model.fields[slot.field];
            let piece = &p.pieces[slot.field];
            println!(
                "  {:>6} {:>5} align {:>3} {} {:<40} (was at {})",
                slot.offset,
                f.size,
                f.align,
                if piece.fixed { "fixed" } else { "     " },
                f.name,
                piece.original_offset
            );
        }
    }
}

fn run() -> Result<(), String> {
    let o = parse_args()?;
    let btf = o
        .btf
        .to_str()
        .ok_or("the BTF path is not UTF-8")?
        .to_string();
    let db = layout_core::btf::load_btf(&o.btf).map_err(|d| d.to_string())?;
    if let Some(name) = &o.explain {
        explain(&db, name);
        return Ok(());
    }
    let pahole_args = ["-P", btf.as_str()];
    let ours_args = ["scan", "--btf", btf.as_str(), "--packable"];
    // One untimed run of each warms the page cache.
    let (_, pahole_out) = timed(&o.pahole, &pahole_args)?;
    let (_, ours_out) = timed(&o.bin, &ours_args)?;
    let (mut pahole_t, mut ours_t, mut lib_t) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..o.runs.max(1) {
        pahole_t.push(timed(&o.pahole, &pahole_args)?.0);
        ours_t.push(timed(&o.bin, &ours_args)?.0);
        let start = Instant::now();
        let fresh = layout_core::btf::load_btf(&o.btf).map_err(|d| d.to_string())?;
        let found = layout_core::scan::packable(&fresh);
        std::hint::black_box(found.structs.len());
        lib_t.push(start.elapsed());
        std::mem::forget(found);
        std::mem::forget(fresh);
    }
    let (pm, om, lm) = (median(pahole_t), median(ours_t), median(lib_t));
    println!(
        "BTF: {btf} ({} aggregates), {} runs each, alternating",
        db.len(),
        o.runs.max(1)
    );
    println!(
        "pahole -P                      median wall {:7.1} ms",
        ms(pm)
    );
    println!(
        "cachelayout scan --packable    median wall {:7.1} ms",
        ms(om)
    );
    println!(
        "  (library in-process: load + pack + check {:7.1} ms)",
        ms(lm)
    );
    println!(
        "ratio pahole / cachelayout: {:.2} (above 1: cachelayout is faster)",
        pm.as_secs_f64() / om.as_secs_f64()
    );

    let found = layout_core::scan::packable(&db);
    println!(
        "cachelayout: {} structs scanned, {} packable, {} of them proven optimal, {} packings refused by the checks",
        found.scanned,
        found.structs.len(),
        found.structs.iter().filter(|p| p.optimal).count(),
        found.refused.len()
    );
    std::mem::forget(found);
    let pahole = parse_listing(&pahole_out);
    let ours = parse_listing(&ours_out);
    let total = |m: &HashMap<String, Vec<(u64, u64)>>| -> u64 {
        m.values()
            .flatten()
            .map(|(s, b)| s.saturating_sub(*b))
            .sum()
    };
    let count = |m: &HashMap<String, Vec<(u64, u64)>>| -> usize { m.values().map(Vec::len).sum() };
    println!(
        "listed: pahole {} structs, total saving {} B; cachelayout {} structs, total saving {} B",
        count(&pahole),
        total(&pahole),
        count(&ours),
        total(&ours)
    );
    let mut duplicates = 0;
    let (mut less, mut equal, mut more) = (0, 0, 0);
    let (mut only_ours, mut only_ours_saving) = (0, 0);
    let mut reasons: HashMap<Why, Vec<String>> = HashMap::new();
    let (mut common_pahole, mut common_ours) = (0u64, 0u64);
    let (mut fair_pahole, mut fair_ours) = (0u64, 0u64);
    // pahole's sizes rounded up to the struct's alignment (the size a
    // struct with its members in pahole's order would have).
    let (mut r_less, mut r_equal, mut r_more, mut r_saving) = (0, 0, 0, 0u64);
    let mut size_mismatch = Vec::new();
    let mut names: Vec<&String> = pahole.keys().chain(ours.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let p = pahole.get(name).map(Vec::as_slice).unwrap_or(&[]);
        let c = ours.get(name).map(Vec::as_slice).unwrap_or(&[]);
        let in_db = db.find_all(name);
        if p.len() > 1 || c.len() > 1 || in_db.len() > 1 {
            duplicates += 1;
            continue;
        }
        let Some(agg) = in_db.first() else {
            continue;
        };
        let (size, pahole_best) = p.first().copied().unwrap_or((agg.size, agg.size));
        let ours_best = c.first().map_or(agg.size, |&(_, b)| b);
        if size != agg.size {
            size_mismatch.push(name.clone());
            continue;
        }
        common_pahole += size - pahole_best;
        common_ours += size - ours_best;
        if p.is_empty() {
            only_ours += 1;
            only_ours_saving += size - ours_best;
        }
        let align = agg.align.max(1);
        let rounded = pahole_best.div_ceil(align) * align;
        r_saving += size - rounded.min(size);
        match ours_best.cmp(&rounded) {
            std::cmp::Ordering::Less => r_less += 1,
            std::cmp::Ordering::Equal => r_equal += 1,
            std::cmp::Ordering::Greater => r_more += 1,
        }
        if ours_best <= pahole_best {
            fair_pahole += size - pahole_best;
            fair_ours += size - ours_best;
        }
        match ours_best.cmp(&pahole_best) {
            std::cmp::Ordering::Less => less += 1,
            std::cmp::Ordering::Equal => equal += 1,
            std::cmp::Ordering::Greater => {
                more += 1;
                reasons
                    .entry(why_pahole_smaller(agg, pahole_best, ours_best))
                    .or_default()
                    .push(format!(
                        "{name} {size}: pahole {pahole_best}, ours {ours_best}"
                    ));
            }
        }
    }
    println!(
        "per struct (unique names, {duplicates} duplicated names left out): ours < pahole {less}, = {equal}, > {more}"
    );
    println!(
        "  with pahole's sizes rounded up to the struct's alignment: ours < pahole {r_less}, = {r_equal}, > {r_more}; \
pahole's total saving then {r_saving} B"
    );
    println!("  listed by cachelayout only (pahole finds no saving): {only_ours}, saving {only_ours_saving} B");
    println!(
        "  total saving over these structs: pahole {common_pahole} B, cachelayout {common_ours} B"
    );
    println!(
        "  total saving where pahole's size is achievable (ours <= pahole): pahole {fair_pahole} B, cachelayout {fair_ours} B"
    );
    if !size_mismatch.is_empty() {
        println!(
            "  sizes differ from the database (left out): {}",
            size_mismatch.join(", ")
        );
    }
    let mut whys: Vec<_> = reasons.into_iter().collect();
    whys.sort();
    for (why, list) in &whys {
        println!("  > because {}: {}", why.text(), list.len());
        for s in list {
            println!("      {s}");
        }
    }
    let unexplained = whys
        .iter()
        .find(|(w, _)| *w == Why::Unexplained)
        .map_or(0, |(_, l)| l.len());
    println!("ours > pahole without a reason above: {unexplained}");
    std::mem::forget(db);
    if unexplained > 0 {
        return Err(format!(
            "{unexplained} structs where pahole packs smaller for no known reason"
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
