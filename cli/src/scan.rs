//! `cachelayout scan`: every struct of a BTF file, of a DWARF file, or of
//! the headers a compiler probe reaches (`--kbuild`) at once. With `--packable`,
//! the structs that reordering alone makes smaller (like `pahole -P`);
//! without it, the structs whose lockless fields share cache lines with
//! other data, most exposed first.

use crate::exit::EXIT_OK;
use crate::input_args::line_size;
use clap::{Args, ValueEnum};
use layout_core::probe;
use layout_core::report::scan_json;
use layout_core::scan::{self, PackScan, Ranked};
use layout_core::typedb::TypeDb;
use layout_core::{Diagnostic, Target};
use std::collections::HashSet;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct ScanArgs {
    /// The BTF to scan: /sys/kernel/btf/vmlinux, or an object built with `gcc -gbtf`.
    #[arg(long, value_name = "PATH", conflicts_with = "dwarf")]
    pub btf: Option<PathBuf>,
    /// The DWARF to scan: an object or binary built with `-g` (C, or Rust: its DWARF
    /// holds rustc's own layout of every struct).
    #[arg(long, value_name = "FILE")]
    pub dwarf: Option<PathBuf>,
    #[command(flatten)]
    pub probe: probe::ProbeArgs,
    /// With --kbuild, --compile-commands or --cc: the headers to compile, or directories
    /// of headers (searched recursively). Default with --kbuild: the tree's include/linux/*.h.
    #[arg(value_name = "HEADER")]
    pub headers: Vec<PathBuf>,
    /// List the structs that reordering alone makes smaller, like `pahole -P`: name, size,
    /// best size, saving. Members with an `aligned` attribute, zero-size markers
    /// (CACHELINE_PADDING, __cacheline_group_begin/end) and a flexible array stay where
    /// they are, and members move only between the same two of them.
    #[arg(long)]
    pub packable: bool,
    /// List every struct with its size and alignment (`NAME<TAB>SIZE<TAB>ALIGN`, like
    /// `pahole --sizes`), each checked as a layout (fields inside the struct, no two
    /// overlapping); a struct that fails the checks is named on stderr.
    #[arg(long, conflicts_with_all = ["packable", "access", "top"])]
    pub sizes: bool,
    #[arg(long, value_enum, default_value_t = ScanFormat::Table)]
    pub format: ScanFormat,
    /// TOML access file: the structs it names take their classes from it; the others are
    /// classed by member type (atomic_t, atomic_long_t, atomic64_t, refcount_t: lockless;
    /// spinlock_t, struct mutex, ...: a lock word; the rest: cold).
    #[arg(long, value_name = "FILE", conflicts_with = "packable")]
    pub access: Option<PathBuf>,
    /// Cache line size in bytes: 32, 64, 128 or 256.
    #[arg(long, default_value = "64", value_name = "BYTES", value_parser = line_size)]
    pub line: Target,
    /// Show only the first N structs of the ranking.
    #[arg(long, value_name = "N", conflicts_with = "packable")]
    pub top: Option<usize>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanFormat {
    /// Tab-separated lines (with --packable, exactly pahole -P's columns).
    Table,
    /// `{"structs": [{"struct", "size", "best_size", ...}]}`, one struct a line (docs/json.md).
    Json,
}

pub fn run(a: &ScanArgs) -> Result<u8, Diagnostic> {
    let target = a.line;
    let access_file = match &a.access {
        Some(path) => Some(layout_core::files::access(path)?),
        None => None,
    };
    let db = load_db(a)?;
    let out = io::stdout().lock();
    let mut out = BufWriter::with_capacity(1 << 16, out);
    let written = if a.sizes {
        write_sizes(&mut out, &db, target.line)
    } else if a.packable {
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

/// `NAME\tSIZE\tALIGN` for every scanned struct that lays out, sorted by name.
fn write_sizes(out: &mut impl Write, db: &TypeDb, line: u64) -> io::Result<()> {
    let mut rows: Vec<(&str, u64, u64)> = Vec::new();
    for agg in db.aggregates().filter(|a| scan::is_scanned(a)) {
        let model = db.to_model(agg);
        let checked = layout_core::Layout::declared(
            &model,
            agg.size,
            agg.align,
            line,
            layout_core::Placement::Aligned,
        )
        .ok_or_else(|| "a member without an offset".to_string())
        .and_then(|l| layout_core::verify::check_structure(&model, &l).map_err(|e| e.to_string()));
        match checked {
            Ok(()) => rows.push((&agg.name, agg.size, agg.align)),
            Err(e) => eprintln!("warning: struct {}: cannot be laid out: {e}", agg.name),
        }
    }
    rows.sort();
    rows.dedup();
    for (name, size, align) in rows {
        writeln!(out, "{name}\t{size}\t{align}")?;
    }
    Ok(())
}

/// The types to scan: BTF, DWARF, or the probes of headers.
fn load_db(a: &ScanArgs) -> Result<TypeDb, Diagnostic> {
    let sources = [a.btf.is_some(), a.dwarf.is_some(), a.probe.is_set()];
    if sources.iter().filter(|&&s| s).count() != 1 {
        return Err(Diagnostic::new(
            "give one of --btf PATH, --dwarf FILE, or --kbuild DIR (--compile-commands FILE, --cc CMD) with headers",
        )
        .help("e.g. cachelayout scan --btf /sys/kernel/btf/vmlinux"));
    }
    if !a.probe.is_set() && !a.headers.is_empty() {
        return Err(Diagnostic::new(
            "headers are scanned with --kbuild, --compile-commands or --cc",
        )
        .help("give the compiler front-end, or only --btf / --dwarf"));
    }
    if let Some(p) = &a.btf {
        return layout_core::files::btf(p);
    }
    if let Some(p) = &a.dwarf {
        return layout_core::files::dwarf(p);
    }
    let headers = scanned_headers(a)?;
    probe_headers(&a.probe, &headers)
}

/// Every type of `headers` (not empty), compiled by the front-end of
/// `args` in batches (the probe cache unless `--no-probe-cache`); what
/// did not compile alone is said on stderr.
pub fn probe_headers(args: &probe::ProbeArgs, headers: &[PathBuf]) -> Result<TypeDb, Diagnostic> {
    let first = headers[0].clone();
    let (tc, _config) = probe::toolchain(args, &first)?;
    let kernel = args.kbuild.is_some();
    let tree = probe::probe_tree(&tc, headers, !args.no_probe_cache, kernel)?;
    eprintln!(
        "scanned {} headers in {} probes ({} compiled now, {} from the cache)",
        headers.len(),
        tree.probes,
        tree.compiled,
        tree.probes - tree.compiled
    );
    for (h, p) in &tree.preluded {
        eprintln!(
            "note: {} needs other headers first: scanned after the prelude {p}",
            h.display()
        );
    }
    for (h, e) in &tree.failed {
        eprintln!(
            "warning: {} does not compile alone, left out: {e}",
            h.display()
        );
    }
    Ok(tree.db)
}

/// The headers a probe scan compiles: the arguments (directories searched
/// recursively for `*.h`), or a kernel tree's include/linux/*.h; sorted.
fn scanned_headers(a: &ScanArgs) -> Result<Vec<PathBuf>, Diagnostic> {
    header_list(&a.headers, a.probe.kbuild.as_deref())
}

/// The headers named (directories searched recursively for `*.h`), or
/// with none, the `--kbuild` tree's include/linux/*.h; sorted.
pub fn header_list(named: &[PathBuf], kbuild: Option<&Path>) -> Result<Vec<PathBuf>, Diagnostic> {
    let mut roots = named.to_vec();
    let mut recursive = true;
    if roots.is_empty() {
        let Some(dir) = kbuild else {
            return Err(Diagnostic::new("no headers to scan")
                .help("give the headers (or directories of headers) after the options"));
        };
        let tree = probe::KbuildTree::locate(dir)?;
        roots.push(tree.srctree.join("include/linux"));
        recursive = false;
    }
    let mut walk = HeaderWalk {
        recursive,
        ..HeaderWalk::default()
    };
    for r in &roots {
        if r.is_dir() {
            walk.directory(r).map_err(|e| {
                Diagnostic::new(format!("cannot list the directory: {e}")).in_file(r)
            })?;
        } else if r.is_file() {
            walk.header(r.clone());
        } else {
            return Err(Diagnostic::new("no such header or directory")
                .in_file(r)
                .help("check the path"));
        }
    }
    let mut out = walk.headers;
    out.sort();
    if out.is_empty() {
        return Err(
            Diagnostic::new("no headers to scan: the directories hold no .h files")
                .help("give the headers (or directories of headers) after the options"),
        );
    }
    Ok(out)
}

/// The `*.h` files under the scanned directories, each directory walked and
/// each file kept once however many paths (symbolic links, a link to `.`,
/// directories linking to each other) lead to it: a directory or file is
/// known by its canonical path.
#[derive(Default)]
struct HeaderWalk {
    recursive: bool,
    visited_dirs: HashSet<PathBuf>,
    seen_files: HashSet<PathBuf>,
    headers: Vec<PathBuf>,
}

impl HeaderWalk {
    /// Walks `dir` unless an earlier path already led to it.
    fn directory(&mut self, dir: &Path) -> io::Result<()> {
        if !self.visited_dirs.insert(std::fs::canonicalize(dir)?) {
            return Ok(());
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
            .map(|e| e.map(|e| e.path()))
            .collect::<io::Result<_>>()?;
        // Sorted, so the path kept for a file reached twice is always the same.
        entries.sort();
        for p in entries {
            if p.is_dir() {
                if self.recursive {
                    self.directory(&p)?;
                }
            } else if p.extension().is_some_and(|e| e == "h") {
                self.header(p);
            }
        }
        Ok(())
    }

    /// Keeps `file` unless an earlier path led to the same file (a dangling
    /// link is kept as named: the probe says what is wrong with it).
    fn header(&mut self, file: PathBuf) {
        let id = std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
        if self.seen_files.insert(id) {
            self.headers.push(file);
        }
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
        ScanFormat::Json => scan_json::write_rows(out, &scan_json::PackableJson::of(scan))?,
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
        ScanFormat::Json => scan_json::write_rows(out, &scan_json::RankingJson::of(ranked, line))?,
    }
    Ok(())
}
