//! `cachelayout scan`: every struct of a BTF file at once. With `--packable`,
//! the structs that reordering alone makes smaller (like `pahole -P`);
//! without it, the structs whose lockless fields share cache lines with
//! other data, most exposed first.

use super::EXIT_OK;
use clap::{Args, ValueEnum};
use layout_core::scan::{self, PackScan, Ranked};
use layout_core::{Diagnostic, Target};
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ScanArgs {
    /// The BTF to scan: /sys/kernel/btf/vmlinux, or an object built with `gcc -gbtf`.
    #[arg(long, value_name = "PATH")]
    pub btf: PathBuf,
    /// List the structs that reordering alone makes smaller, like `pahole -P`: name, size,
    /// best size, saving. Members with an `aligned` attribute, zero-size markers
    /// (CACHELINE_PADDING, __cacheline_group_begin/end) and a flexible array stay where
    /// they are, and members move only between the same two of them.
    #[arg(long)]
    pub packable: bool,
    #[arg(long, value_enum, default_value_t = ScanFormat::Table)]
    pub format: ScanFormat,
    /// TOML access file: the structs it names take their classes from it; the others are
    /// classed by member type (atomic_t, atomic_long_t, atomic64_t, refcount_t: lockless;
    /// spinlock_t, struct mutex, ...: a lock word; the rest: cold).
    #[arg(long, value_name = "FILE", conflicts_with = "packable")]
    pub access: Option<PathBuf>,
    /// Cache line size in bytes: 32, 64, 128 or 256.
    #[arg(long, default_value_t = 64, value_name = "BYTES")]
    pub line: u64,
    /// Show only the first N structs of the ranking.
    #[arg(long, value_name = "N", conflicts_with = "packable")]
    pub top: Option<usize>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanFormat {
    /// Tab-separated lines (with --packable, exactly pahole -P's columns).
    Table,
    /// `{"structs": [{"struct", "size", "best_size", ...}]}`.
    Json,
}

pub fn run(a: &ScanArgs) -> Result<u8, Diagnostic> {
    let target = Target::new(a.line)
        .map_err(|m| Diagnostic::new(m).help("pass --line 64 (the default) or 128"))?;
    let access_file = match &a.access {
        Some(path) => Some(super::files::access(path)?),
        None => None,
    };
    let db = super::files::btf(&a.btf)?;
    let out = io::stdout().lock();
    let mut out = BufWriter::with_capacity(1 << 16, out);
    let written = if a.packable {
        let found = scan::packable(&db);
        let written = write_packable(&mut out, &found, a.format);
        for (name, e) in &found.refused {
            eprintln!(
                "warning: struct {name}: packed layout refused by the checks ({e}); left out"
            );
        }
        // Freeing thousands of small allocations costs more than the scan.
        std::mem::forget(found);
        written
    } else {
        let ranked = scan::rank(&db, access_file.as_ref(), target.line)?;
        let shown = a.top.unwrap_or(ranked.len()).min(ranked.len());
        let written = write_ranking(&mut out, &ranked[..shown], a.format, target.line);
        std::mem::forget(ranked);
        written
    };
    std::mem::forget(db);
    // A closed pipe (`cachelayout scan ... | head`) ends the output quietly.
    match written.and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(Diagnostic::new(format!("cannot write to stdout: {e}"))
                .help("check the disk has room, or where stdout is redirected"))
        }
        _ => Ok(EXIT_OK),
    }
}

fn write_packable(out: &mut impl Write, scan: &PackScan<'_>, format: ScanFormat) -> io::Result<()> {
    match format {
        ScanFormat::Table => {
            for p in &scan.structs {
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}",
                    p.agg.name,
                    p.agg.size,
                    p.best_size,
                    p.saving()
                )?;
            }
        }
        ScanFormat::Json => {
            write!(out, "{{\"structs\": [")?;
            for (i, p) in scan.structs.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                write!(
                    out,
                    "{sep}\n  {{\"struct\": {}, \"size\": {}, \"best_size\": {}, \"saving\": {}, \"optimal\": {}}}",
                    json_string(&p.agg.name),
                    p.agg.size,
                    p.best_size,
                    p.saving(),
                    p.optimal
                )?;
            }
            writeln!(
                out,
                "\n], \"scanned\": {}, \"packable\": {}, \"total_saving\": {}}}",
                scan.scanned,
                scan.structs.len(),
                scan.total_saving()
            )?;
        }
    }
    Ok(())
}

fn write_ranking(
    out: &mut impl Write,
    ranked: &[Ranked],
    format: ScanFormat,
    line: u64,
) -> io::Result<()> {
    match format {
        ScanFormat::Table => {
            writeln!(
                out,
                "# Lockless fields sharing {line}-byte lines with other data, most exposed first \
(a heuristic: lines counted from the struct's start; classes by type unless an access file names the struct)"
            )?;
            writeln!(out, "# shared_bytes\tread_mostly_bytes\tlines\tsize\tbest_size\tclasses\tstruct\tlockless fields")?;
            for r in ranked {
                let e = &r.exposure;
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    e.shared_bytes,
                    e.read_mostly_bytes,
                    e.lines,
                    e.size,
                    r.best_size,
                    r.classes.name(),
                    e.name,
                    e.lockless.join(",")
                )?;
            }
        }
        ScanFormat::Json => {
            write!(out, "{{\"structs\": [")?;
            for (i, r) in ranked.iter().enumerate() {
                let e = &r.exposure;
                let sep = if i == 0 { "" } else { "," };
                let lockless: Vec<String> = e.lockless.iter().map(|n| json_string(n)).collect();
                write!(
                    out,
                    "{sep}\n  {{\"struct\": {}, \"size\": {}, \"best_size\": {}, \"shared_bytes\": {}, \
\"read_mostly_bytes\": {}, \"lines\": {}, \"classes\": {}, \"lockless\": [{}]}}",
                    json_string(&e.name),
                    e.size,
                    r.best_size,
                    e.shared_bytes,
                    e.read_mostly_bytes,
                    e.lines,
                    json_string(r.classes.name()),
                    lockless.join(", ")
                )?;
            }
            writeln!(out, "\n], \"line\": {line}, \"heuristic\": true}}")?;
        }
    }
    Ok(())
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}
