//! `cachelayout infer`: the access classes of a struct from perf profiles
//! and the C sources (layout-core's `infer`), as an access file or JSON.

use crate::exit::EXIT_OK;
use crate::input;
use crate::input_args::InputArgs;
use clap::{Args, ValueEnum};
use layout_core::files::{self, Input};
use layout_core::infer::{self, profile, render, sites::Site, Rules};
use layout_core::{Diagnostic, Placement};
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
cachelayout infer include/linux/page_counter.h --struct page_counter --kbuild /usr/src/linux-headers-$(uname -r) \\\n    \
--source mm/page_counter.c --source mm/memcontrol.c --hot page_counter_try_charge --hot page_counter_uncharge > pc.toml\n  \
cachelayout infer --btf /sys/kernel/btf/vmlinux --struct page_counter --perf-mem types.txt --perf-c2c c2c.txt --base 0xffff888104a3c000\n\n\
The access file goes to stdout; check it, then: cachelayout propose HEADER --struct NAME --access pc.toml")]
pub struct InferArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// The address of an instance of the struct in the profiled run (hex), to map the cache
    /// lines of --perf-c2c to members. Repeatable.
    #[arg(long, value_name = "ADDR", value_parser = parse_address)]
    pub base: Vec<u64>,
    /// A C file whose accesses to the struct are analysed (libclang), compiled with the flags
    /// of --kbuild / --compile-commands / --cc. Repeatable.
    #[arg(long = "source", value_name = "FILE.c")]
    pub sources: Vec<PathBuf>,
    /// An entry point of a fast path (page fault, charge, LRU add): what it reaches is hot.
    #[arg(long = "hot", value_name = "FUNC")]
    pub hot: Vec<String>,
    /// An entry point of a slow path: what only it reaches is cold.
    #[arg(long = "cold", value_name = "FUNC")]
    pub cold: Vec<String>,
    /// A function that takes the lock its first argument points to (like spin_lock), e.g.
    /// compact_lock_irqsave; FUNC=LOCK for one that finds the lock itself
    /// (folio_lruvec_lock_irq=lru_lock). A FUNC named *unlock* releases it. Repeatable.
    #[arg(long = "lock-wrapper", value_name = "FUNC[=LOCK]")]
    pub lock_wrappers: Vec<String>,
    /// The text of `perf c2c report --stdio` (needs --base). Repeatable.
    #[arg(long = "perf-c2c", value_name = "FILE")]
    pub perf_c2c: Vec<PathBuf>,
    /// The text of `perf report -s type,typeoff --stdio [-n]` or `perf annotate --data-type
    /// --stdio` (Linux 6.8+). Repeatable.
    #[arg(long = "perf-mem", value_name = "FILE")]
    pub perf_mem: Vec<PathBuf>,
    /// Split the lockless members into writer groups by context: members some hot root
    /// writes both of share a group (named after its first root); the groups are kept
    /// on separate lines by propose.
    #[arg(long)]
    pub writer_groups: bool,
    /// Fewest samples of a member for the profile to decide its write fraction.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub min_samples: u64,
    #[arg(long, value_enum, default_value_t = InferFormat::Toml)]
    pub format: InferFormat,
    #[cfg(feature = "infer-clang")]
    #[command(flatten)]
    pub unit_limits: crate::limits::UnitLimitArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum InferFormat {
    /// The access file, with the evidence as comments.
    Toml,
    /// Every member's verdict, counts and sites.
    Json,
}

fn parse_address(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let hex = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    u64::from_str_radix(hex, 16)
        .map_err(|_| format!("`{s}` is not a hex address (e.g. 0xffff888104a3c000)"))
}

pub fn run(a: &InferArgs) -> Result<u8, Diagnostic> {
    if a.sources.is_empty() && a.perf_c2c.is_empty() && a.perf_mem.is_empty() {
        return Err(Diagnostic::new("infer needs evidence: no --source, --perf-c2c or --perf-mem given")
            .help("give the C files that use the struct (--source mm/page_counter.c) and/or perf profiles"));
    }
    let (model, phase, line, names) = layout(a)?;
    let model = &model;
    let at = profile::Placement {
        bases: a.base.clone(),
        offset: a.input.offset.first().copied(),
        // For data-type profiles of the container: rows of `struct
        // CONTAINER` at --offset and after are the struct's.
        container: a
            .input
            .container
            .first()
            .map(|c| c.split('.').next().unwrap_or(c).to_string()),
    };
    let mut hits = Vec::new();
    let mut inputs = render::Inputs {
        struct_name: a.input.struct_name.clone(),
        offset: a.input.offset.first().copied(),
        hot: a.hot.clone(),
        cold: a.cold.clone(),
        ..Default::default()
    };
    for path in &a.perf_c2c {
        let text = files::text(path, Input::Profile)?;
        let report = infer::c2c::parse(path, &text)?;
        let name = path.display().to_string();
        let (h, unmapped) = profile::from_c2c(model, &report, &name, &at)?;
        if h.is_empty() {
            inputs.notes.push(format!(
                "{name}: none of its {} offset rows falls on struct {} at the --base address(es)",
                report.rows.len(),
                model.name
            ));
        } else if unmapped.rows > 0 {
            inputs.notes.push(format!(
                "{name}: {} row(s), {} samples, on other objects or padding",
                unmapped.rows, unmapped.samples
            ));
        }
        hits.extend(h);
        inputs.profiles.push(name);
    }
    for path in &a.perf_mem {
        let text = files::text(path, Input::Profile)?;
        let rows = infer::data_type::parse(path, &text)?;
        let name = path.display().to_string();
        let (h, unmapped) = profile::from_data_type(model, &rows, &name, &at);
        if h.is_empty() {
            inputs
                .notes
                .push(format!("{name}: no row of struct {}", model.name));
        }
        if unmapped.rows > 0 {
            inputs.notes.push(format!(
                "{name}: {} row(s), {} samples, in padding",
                unmapped.rows, unmapped.samples
            ));
        }
        hits.extend(h);
        inputs.profiles.push(name);
    }
    let sites = static_sites(a, model, &names, line, &mut inputs)?;
    let rules = Rules {
        min_samples: a.min_samples,
        line,
        phase,
        have_roots: !a.hot.is_empty(),
        have_sources: !a.sources.is_empty(),
        ..Rules::default()
    };
    let mut verdicts = infer::classify(model, &hits, &sites, &rules);
    if a.writer_groups {
        infer::classify::writer_groups(&mut verdicts, &a.hot);
    }
    let out = match a.format {
        InferFormat::Toml => {
            let text = render::access_file(&inputs, &verdicts);
            // What we print must be an access file propose takes: check it here.
            let parsed = layout_core::access::parse(std::path::Path::new("<infer output>"), &text)
                .and_then(|f| f.apply_with(&mut model.clone(), &names).map(|_| ()));
            if let Err(e) = parsed {
                return Err(Diagnostic::new(format!(
                    "the inferred access file does not load: {e}"
                ))
                .help(
                    "this is a bug in cachelayout infer: please report it with the command line",
                ));
            }
            text
        }
        InferFormat::Json => {
            let mut s = serde_json::to_value(render::json(&inputs, &verdicts))
                .and_then(|v| serde_json::to_string_pretty(&v))
                .map_err(|e| {
                    Diagnostic::new(format!("cannot write the JSON: {e}")).help(
                        "this is a bug in cachelayout infer: please report it with the command line",
                    )
                })?;
            s.push('\n');
            s
        }
    };
    crate::output::print_stdout(&out)?;
    Ok(EXIT_OK)
}

/// The struct's fields with their offsets, its offset from a line
/// boundary, and the line size: from the header, BTF or DWARF as for
/// `show`, or, with none of them, from the sources as libclang lays it out.
fn layout(
    a: &InferArgs,
) -> Result<
    (
        layout_core::Struct,
        u64,
        u64,
        layout_core::access::MemberNames,
    ),
    Diagnostic,
> {
    let i = &a.input;
    let from_sources =
        i.header.is_none() && i.btf.is_none() && i.dwarf.is_none() && !a.sources.is_empty();
    if from_sources {
        let (model, phase, line) = sources_layout(a)?;
        return Ok((model, phase, line, layout_core::access::MemberNames::new()));
    }
    let loaded = input::load(i)?;
    let phase = match loaded.placement {
        Placement::Offset(o) => o,
        _ => 0,
    };
    Ok((loaded.model, phase, loaded.target.line, loaded.names))
}

#[cfg(feature = "infer-clang")]
fn sources_layout(a: &InferArgs) -> Result<(layout_core::Struct, u64, u64), Diagnostic> {
    let sources = crate::infer_clang::sources(&source_query(a), &mut render::Inputs::default())?;
    let name = &a.input.struct_name;
    let (model, _size, align) = layout_core::infer::clang::record::struct_model(&sources, name)?
        .ok_or_else(|| {
            Diagnostic::new(format!("no --source defines struct {name}"))
                .help("give the header that defines it (or --btf / --dwarf) before the options")
        })?;
    let phase = a.input.offset.first().copied().unwrap_or(0);
    if phase > 1 << 48 {
        return Err(Diagnostic::new(format!(
            "offset {phase} puts struct {name} past 2^48 bytes, the largest address space"
        ))
        .help("give the struct's offset inside its container (e.g. --offset 304)"));
    }
    if !phase.is_multiple_of(align) {
        return Err(Diagnostic::new(format!(
            "offset {phase} is not a multiple of the alignment of struct {name} ({align})"
        ))
        .help("give the struct's real offset inside its container"));
    }
    Ok((model, phase, a.input.line.line))
}

#[cfg(not(feature = "infer-clang"))]
fn sources_layout(_a: &InferArgs) -> Result<(layout_core::Struct, u64, u64), Diagnostic> {
    Err(
        Diagnostic::new("no layout input: give a header, --btf or --dwarf").help(
            "this cachelayout was built without infer-clang, which takes the layout from --source",
        ),
    )
}

#[cfg(not(feature = "infer-clang"))]
fn static_sites(
    a: &InferArgs,
    _model: &layout_core::Struct,
    _names: &layout_core::access::MemberNames,
    _line: u64,
    _inputs: &mut render::Inputs,
) -> Result<Vec<Site>, Diagnostic> {
    if a.sources.is_empty() {
        return Ok(Vec::new());
    }
    Err(Diagnostic::new("--source needs libclang: this cachelayout was built without the infer-clang feature")
        .help("rebuild with `cargo install --path cli` (infer-clang is on by default; it needs libclang-dev)"))
}

#[cfg(feature = "infer-clang")]
fn static_sites(
    a: &InferArgs,
    model: &layout_core::Struct,
    names: &layout_core::access::MemberNames,
    line: u64,
    inputs: &mut render::Inputs,
) -> Result<Vec<Site>, Diagnostic> {
    crate::infer_clang::sites(&source_query(a), model, names, line, inputs)
}

/// The arguments of `--source` for libclang's walk.
#[cfg(feature = "infer-clang")]
fn source_query(a: &InferArgs) -> crate::infer_clang::SourceQuery<'_> {
    crate::infer_clang::SourceQuery {
        probe: &a.input.probe,
        struct_name: &a.input.struct_name,
        sources: &a.sources,
        hot: &a.hot,
        cold: &a.cold,
        lock_wrappers: &a.lock_wrappers,
        unit_limits: &a.unit_limits,
    }
}
