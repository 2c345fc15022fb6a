//! `cachelayout audit`: every false-sharing risk of a tree, ranked with its
//! evidence (layout-core's `audit`), as a table, JSON, or with `--series N`
//! a `git format-patch` series of the first N.

use crate::exit::EXIT_OK;
use crate::input_args::line_size;
use crate::propose::ProposeArgs;
use clap::{Args, Parser, ValueEnum};
use layout_core::audit::{self, cache::Cache, roots, Progress};
use layout_core::infer::clang::flags;
use layout_core::probe;
use layout_core::{Diagnostic, Target};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
cachelayout audit --kbuild /usr/src/linux-headers-$(uname -r) --source-tree ~/linux \\\n    \
--roots examples/kernel/audit-roots.toml include/linux include/net\n  \
cachelayout audit --cc 'gcc -Iinclude' --roots roots.toml include --series 3 -o series/\n\n\
The ranking goes to stdout, progress to stderr; with --series the patches go to the new \
directory given with -o (apply with `git am DIR/0001-*.patch DIR/0002-*.patch ...`).")]
pub struct AuditArgs {
    #[command(flatten)]
    pub probe: probe::ProbeArgs,
    /// The headers whose structs are audited, or directories of headers (searched
    /// recursively). Default with --kbuild: the tree's include/linux/*.h.
    #[arg(value_name = "HEADER")]
    pub headers: Vec<PathBuf>,
    /// TOML file of hot roots per subsystem: [NAME] sources = ["net/ipv4/*.c"],
    /// hot = ["tcp_sendmsg"], cold = [...], lock_wrappers = [...].
    #[arg(long, value_name = "FILE")]
    pub roots: PathBuf,
    /// The directory the roots file's source patterns are under. Default: the --kbuild
    /// tree's source tree, else the current directory.
    #[arg(long, value_name = "DIR")]
    pub source_tree: Option<PathBuf>,
    /// Structs analysed from the sources (pass 2): the first N of pass 1's ranking that
    /// an audited source names. A count of work, so every run gives the same answer.
    #[arg(long, default_value_t = 24, value_name = "N")]
    pub budget: usize,
    /// Show only the first N conflicts of the ranking.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    #[arg(long, value_enum, default_value_t = AuditFormat::Table)]
    pub format: AuditFormat,
    /// Write the first N conflicts as a `git format-patch` series into the new directory
    /// given with -o: a cover letter with the ranked table, then one patch per struct.
    #[arg(long, value_name = "N", requires = "output_dir")]
    pub series: Option<usize>,
    /// The series' directory: created; an existing one must be empty.
    #[arg(short = 'o', long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// With --series: end each changelog with `Signed-off-by:` from git's identity.
    #[arg(long, requires = "series")]
    pub signoff: bool,
    /// The text of `perf report -s type,typeoff --stdio [-n]` or `perf annotate --data-type
    /// --stdio` (Linux 6.8+): a struct's rows decide its members' write fractions, as for
    /// `infer --perf-mem` (an ambiguous member may be settled). Repeatable.
    #[arg(long = "perf-mem", value_name = "FILE")]
    pub perf_mem: Vec<PathBuf>,
    /// Parse every translation unit again, and store nothing.
    #[arg(long)]
    pub no_cache: bool,
    /// The cache of per-unit analyses. Default: $XDG_CACHE_HOME/cachelayout/audit.
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    pub cache_dir: Option<PathBuf>,
    /// Cache line size in bytes: 32, 64, 128 or 256.
    #[arg(long, default_value = "64", value_name = "BYTES", value_parser = line_size)]
    pub line: Target,
    #[command(flatten)]
    pub unit_limits: crate::limits::UnitLimitArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditFormat {
    /// The ranking, then each struct's evidence.
    Table,
    /// Every finding with its conflicts and evidence (docs/json.md).
    Json,
}

pub fn run(a: &AuditArgs) -> Result<u8, Diagnostic> {
    if !a.probe.is_set() {
        return Err(Diagnostic::new("audit compiles the tree: give its compiler front-end")
            .help("give --kbuild DIR (a configured kernel tree), --compile-commands FILE, or --cc 'cc -Iinclude ...'"));
    }
    if a.budget == 0 {
        return Err(Diagnostic::new("--budget 0 analyses nothing")
            .help("give the number of structs to analyse from the sources, e.g. --budget 24"));
    }
    let roots = roots::read(&a.roots)?;
    let mut profiles = Vec::new();
    for path in &a.perf_mem {
        let text = layout_core::files::text(path, layout_core::files::Input::Profile)?;
        let rows = layout_core::infer::data_type::parse(path, &text)?;
        profiles.push((path.display().to_string(), rows));
    }
    let source_tree = source_tree(a)?;
    let headers = crate::scan::header_list(&a.headers, a.probe.kbuild.as_deref())?;
    let db = crate::scan::probe_headers(&a.probe, &headers)?;
    let mut shown_under = vec![source_tree.clone()];
    // The trees a series' cover letter names files under.
    let mut trees = vec![source_tree.clone()];
    if let Some(dir) = &a.probe.kbuild {
        let kbuild = probe::KbuildTree::locate(dir)?;
        shown_under.push(kbuild.srctree.clone());
        trees.extend([kbuild.srctree, kbuild.objtree]);
    }
    let mut defined = BTreeMap::new();
    for h in &headers {
        let Ok(text) = layout_core::files::text(h, layout_core::files::Input::Header) else {
            continue;
        };
        audit::candidates::definitions(h, &text, &mut defined);
    }
    let candidates = audit::candidates::rank(&db, &defined, a.line.line);
    let units = units(a, &roots, &source_tree)?;
    let mut fingerprinted = headers.clone();
    if let Some(dir) = &a.probe.kbuild {
        fingerprinted.push(probe::KbuildTree::locate(dir)?.config);
    }
    let tree = audit::cache::fingerprint(&fingerprinted);
    let mut cache = open_cache(a);
    let input = audit::Audit {
        db: &db,
        candidates: &candidates,
        structs_defined: defined.len(),
        roots: &roots,
        units: &units,
        budget: a.budget,
        line: a.line.line,
        tree,
        profiles: &profiles,
        shown_under,
        isolation: Some(a.unit_limits.isolation()?),
        alloc_tree: Some(source_tree.clone()),
    };
    let mut meter = Meter::new();
    let mut report = audit::analyse(&input, &mut cache, &mut |p| meter.show(p))?;
    meter.done();
    if cache.is_open() {
        eprintln!(
            "audit cache: {} entries read, {} written",
            cache.hits, cache.stored
        );
    }
    if let Some(n) = a.top {
        report.ranked.truncate(n);
    }
    let text = match a.format {
        AuditFormat::Table => report.table(),
        AuditFormat::Json => report.json(),
    };
    crate::output::print_stdout(&text)?;
    if let (Some(n), Some(dir)) = (a.series, &a.output_dir) {
        // The tree-safety pass of each patch reads the audited headers and
        // sources: the code that could depend on a struct's member order.
        let mut scanned = headers.clone();
        scanned.extend(units.iter().map(|u| u.path.clone()));
        write_series(a, &report, n, dir, &scanned, &headers, &trees)?;
    }
    std::mem::forget(db);
    Ok(EXIT_OK)
}

/// Where the roots file's patterns are rooted.
fn source_tree(a: &AuditArgs) -> Result<PathBuf, Diagnostic> {
    let dir = match (&a.source_tree, &a.probe.kbuild) {
        (Some(d), _) => d.clone(),
        (None, Some(k)) => probe::KbuildTree::locate(k)?.srctree,
        (None, None) => std::env::current_dir()
            .map_err(|e| Diagnostic::new(format!("cannot read the current directory: {e}")))?,
    };
    if !dir.is_dir() {
        return Err(Diagnostic::new("the source tree is not a directory")
            .in_file(&dir)
            .help(
                "give the directory the roots file's source patterns are under with --source-tree",
            ));
    }
    // Absolute, so that the units' paths (and the sites libclang reports) are.
    std::fs::canonicalize(&dir)
        .map_err(|e| Diagnostic::new(format!("cannot resolve the source tree: {e}")).in_file(&dir))
}

/// `path` relative to the source tree when under it.
fn shown(path: &Path, tree: &Path) -> String {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (p, t) = (canon(path), canon(tree));
    match p.strip_prefix(&t) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// Every source of every subsystem, once, with its flags and subsystems.
fn units(a: &AuditArgs, roots: &roots::Roots, tree: &Path) -> Result<Vec<audit::Unit>, Diagnostic> {
    let mut by_path: BTreeMap<PathBuf, usize> = BTreeMap::new();
    let mut out: Vec<audit::Unit> = Vec::new();
    for (si, sub) in roots.subsystems.iter().enumerate() {
        let mut matched = 0;
        for pattern in &sub.sources {
            let files = audit::glob::expand(tree, pattern).map_err(|e| {
                Diagnostic::new(format!("cannot list the sources of [{}]: {e}", sub.name))
                    .in_file(tree)
            })?;
            matched += files.len();
            for path in files {
                if let Some(&i) = by_path.get(&path) {
                    if !out[i].subsystems.contains(&si) {
                        out[i].subsystems.push(si);
                    }
                    continue;
                }
                let (tc, _config) = probe::toolchain(&a.probe, &path)?;
                let mut all = tc.compiler[1..].to_vec();
                all.extend(tc.flags.iter().cloned());
                by_path.insert(path.clone(), out.len());
                out.push(audit::Unit {
                    shown: shown(&path, tree),
                    args: flags::for_libclang(&all, &tc.directory),
                    path,
                    subsystems: vec![si],
                });
            }
        }
        if matched == 0 {
            return Err(Diagnostic::new(format!(
                "no file under {} matches the sources of [{}]",
                tree.display(),
                sub.name
            ))
            .in_file(&roots.path)
            .at(sub.line, 1)
            .help("give the tree that holds the .c files with --source-tree DIR (a Debian headers package has none)"));
        }
    }
    Ok(out)
}

fn open_cache(a: &AuditArgs) -> Cache {
    if a.no_cache {
        return Cache::none();
    }
    let Some(root) = a.cache_dir.clone().or_else(audit::cache::default_root) else {
        return Cache::none();
    };
    match Cache::open(&root) {
        Ok(c) => c,
        Err(why) => {
            eprintln!(
                "warning: not using the audit cache {}: {why}",
                root.display()
            );
            Cache::none()
        }
    }
}

/// Progress on stderr: one line updated in place on a terminal, else one
/// plain line per struct (`[3/20] struct tcp_sock`) and per unit parsed.
struct Meter {
    tty: bool,
    drawn: bool,
}

impl Meter {
    fn new() -> Meter {
        Meter {
            tty: std::io::stderr().is_terminal(),
            drawn: false,
        }
    }

    fn show(&mut self, p: Progress<'_>) {
        let line = match &p {
            Progress::Unit {
                index,
                total,
                path,
                structs,
                cached,
            } => {
                if *cached && !self.tty {
                    return;
                }
                format!(
                    "[{index}/{total}] {path} ({structs} struct(s){})",
                    if *cached { ", cached" } else { "" }
                )
            }
            Progress::Struct { index, total, name } => format!("[{index}/{total}] struct {name}"),
        };
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{line}");
            self.drawn = true;
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    fn done(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[2K");
            self.drawn = false;
        }
    }
}

/// `propose` as the command line would parse it, for one patch.
#[derive(Parser, Debug)]
struct ProposeCommand {
    #[command(flatten)]
    args: ProposeArgs,
}

/// The first `n` conflicts as a series in `dir`.
fn write_series(
    a: &AuditArgs,
    report: &audit::report::Report,
    n: usize,
    dir: &Path,
    scanned: &[PathBuf],
    inputs: &[PathBuf],
    trees: &[PathBuf],
) -> Result<(), Diagnostic> {
    let patchable: Vec<&audit::report::Finding> =
        report.ranked.iter().filter(|f| f.patchable()).collect();
    if patchable.is_empty() {
        return Err(Diagnostic::new(
            "--series: no struct has a conflict or a spread hot path to patch",
        )
        .help("raise --budget, or check the roots file's hot roots"));
    }
    make_dir(dir)?;
    let work = tempfile::Builder::new()
        .prefix("cachelayout-audit-")
        .tempdir()
        .map_err(|e| Diagnostic::new(format!("cannot create a private directory: {e}")))?;
    let mut read: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    read.push(&a.roots);
    let header_dir = std::fs::canonicalize(&patchable[0].header)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    let author = crate::mail::author(&header_dir)?;
    // The first `n` structs propose patches for, in rank order: a struct
    // the tree-safety pass refuses (or with nothing to move) gives its
    // place to the next.
    let mut patches: Vec<(&audit::report::Finding, crate::propose::Rendered)> = Vec::new();
    // Why a struct gave no patch: on stderr as it is, in the cover letter
    // with its paths relative to the tree.
    let mut refused: Vec<(String, String)> = Vec::new();
    let mut refused_in_tree: Vec<(String, String)> = Vec::new();
    for f in &patchable {
        if patches.len() == n {
            break;
        }
        let header = f.header.display().to_string();
        let access = work.path().join(format!("{}.toml", f.name));
        std::fs::write(&access, &f.access_file)
            .map_err(|e| Diagnostic::new(format!("cannot write {}: {e}", access.display())))?;
        let mut words: Vec<String> = vec![
            "propose".into(),
            header,
            "--struct".into(),
            f.name.clone(),
            "--access".into(),
            access.display().to_string(),
            "--format".into(),
            "patch".into(),
            "--check-configs".into(),
            "--line".into(),
            a.line.line.to_string(),
            // The work budget alone decides each patch: propose's 10-second
            // safety stop would let a loaded machine write another series.
            "--time-limit".into(),
            "600".into(),
        ];
        if let Some(k) = &a.probe.kbuild {
            words.extend(["--kbuild".into(), k.display().to_string()]);
        }
        if let Some(c) = &a.probe.compile_commands {
            words.extend(["--compile-commands".into(), c.display().to_string()]);
        }
        if let Some(c) = &a.probe.cc {
            words.extend(["--cc".into(), c.clone()]);
        }
        if a.probe.no_probe_cache {
            words.push("--no-probe-cache".into());
        }
        if a.signoff {
            words.push("--signoff".into());
        }
        // No conflict hot code drives, only spread hot paths: pack them (a conflict keeps propose's
        // default, which also counts the hot paths' lines).
        if f.packs_hot_paths() {
            words.extend(["--objective".into(), "hot-lines".into()]);
        }
        for p in scanned {
            words.push("--safety-scan".into());
            words.push(p.display().to_string());
        }
        let cmd = ProposeCommand::try_parse_from(&words).map_err(|e| {
            Diagnostic::new(format!("cannot propose struct {}: {e}", f.name))
                .help("this is a bug in cachelayout audit: please report it with the command line")
        })?;
        match crate::propose::render(&cmd.args) {
            Ok(r) if r.out.starts_with("From ") => patches.push((f, r)),
            Ok(_) => {
                let why = "propose moves nothing".to_string();
                refused.push((f.name.clone(), why.clone()));
                refused_in_tree.push((f.name.clone(), why));
            }
            Err(e) => {
                refused.push((f.name.clone(), e.to_string()));
                refused_in_tree.push((f.name.clone(), crate::mail::in_trees(&e, trees)));
            }
        }
    }
    for (name, why) in &refused {
        eprintln!("note: struct {name}: no patch: {why}");
    }
    if patches.is_empty() {
        return Err(Diagnostic::new(format!(
            "--series: none of the {} struct(s) with a conflict gave a patch",
            patchable.len()
        ))
        .help("the notes above say why for each; run propose on one with its access file from `cachelayout audit --format json`"));
    }
    let n = patches.len();
    for (i, (f, rendered)) in patches.iter().enumerate() {
        let note = audit::series::changelog_note(f, &rendered.tree);
        let mail = audit::series::number(&rendered.out, i + 1, n, &note);
        let subject = audit::series::subject_of(&rendered.out).unwrap_or(&f.name);
        let path = dir.join(audit::series::file_name(i + 1, subject));
        crate::output::write_new(&path, mail.as_bytes(), &read, false)?;
        eprintln!("wrote {}", path.display());
    }
    let chosen: Vec<audit::report::Finding> = patches.iter().map(|(f, _)| (*f).clone()).collect();
    let cover = audit::series::cover_letter(&author, &chosen, &report.ambiguous, &refused_in_tree);
    let path = dir.join("0000-cover-letter.patch");
    crate::output::write_new(&path, cover.as_bytes(), &read, false)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// Creates the series' directory; one that exists must be empty.
fn make_dir(dir: &Path) -> Result<(), Diagnostic> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(Diagnostic::new("the series directory is not empty")
                    .in_file(dir)
                    .help("give a new directory with -o: a series never overwrites files"));
            }
            Ok(())
        }
        Err(_) if std::fs::symlink_metadata(dir).is_ok() => Err(Diagnostic::new(
            "the series directory exists and is not a directory (a file, a device, or a link to none)",
        )
        .in_file(dir)
        .help("give a new directory with -o: a series never overwrites files")),
        Err(_) => std::fs::create_dir_all(dir).map_err(|e| {
            Diagnostic::new(format!("cannot create the series directory: {e}"))
                .in_file(dir)
                .help("check the parent directory exists and is writable")
        }),
    }
}
