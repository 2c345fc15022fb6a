//! `cachelayout growth`: how a struct's new size spreads to every struct that
//! embeds it, and what it costs the allocator; and the same report for
//! `propose --growth`.

use crate::exit::EXIT_OK;
use crate::input;
use crate::input_args::InputArgs;
use clap::{Args, ValueEnum};
use layout_core::c::{Defines, TypeTable};
use layout_core::files;
use layout_core::growth::{self, GrowthReport, HeaderTypes, Instances, Shape};
use layout_core::{Diagnostic, Layout, Struct};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
cachelayout growth --before mmzone.h.orig --after mmzone.h --struct lru_gen_folio\n  \
cachelayout growth --btf /sys/kernel/btf/vmlinux --struct page_counter --size 256\n  \
cachelayout growth --header lru_gen.h --struct lru_gen_folio --size 1408 --align 64 \\\n    \
--instances 'mem_cgroup_per_node=4:per memcg, 4 nodes'")]
pub struct GrowthArgs {
    /// The struct that changes (without the `struct` keyword), or a typedef name.
    #[arg(long = "struct", value_name = "NAME")]
    pub struct_name: String,
    /// The header before the change (with --after): every size comes from the headers.
    #[arg(long, value_name = "OLD.h")]
    pub before: Option<PathBuf>,
    /// The header after the change (with --before).
    #[arg(long, value_name = "NEW.h")]
    pub after: Option<PathBuf>,
    /// The struct's new size in bytes; the embedders are laid out again with C's rules.
    #[arg(long, value_name = "BYTES")]
    pub size: Option<u64>,
    /// The struct's new alignment (with --size; default: the current one).
    #[arg(long, value_name = "BYTES")]
    pub align: Option<u64>,
    /// Types from BTF (/sys/kernel/btf/vmlinux, a -gbtf object), for --size.
    #[arg(long, value_name = "PATH")]
    pub btf: Option<PathBuf>,
    /// Types from DWARF (an object built with -g), for --size.
    #[arg(long, value_name = "FILE")]
    pub dwarf: Option<PathBuf>,
    /// Types from a C header, for --size (with --kbuild, --compile-commands or --cc: the
    /// header the probe compiles, whose every reachable struct is an embedder candidate).
    #[arg(long, value_name = "FILE.h")]
    pub header: Option<PathBuf>,
    #[command(flatten)]
    pub probe: layout_core::probe::ProbeArgs,
    /// COUNT objects of struct NAME are allocated with kmalloc: multiply its real bytes
    /// per object (size class change) by COUNT. NOTE says what the count is, e.g.
    /// --instances 'mem_cgroup_per_node=4:per memcg, 4 nodes'. Repeatable.
    #[arg(long = "instances", value_name = "NAME=COUNT[:NOTE]")]
    pub instances: Vec<String>,
    /// Define a constant or config option for the headers: -D MAX_NR_ZONES=5.
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    pub defines: Vec<String>,
    /// Access file whose [types] and [defines] the headers need.
    #[arg(long, value_name = "FILE")]
    pub access: Option<PathBuf>,
    /// text: one line per struct, ready for a changelog; table; json.
    #[arg(long, value_enum, default_value_t = GrowthFormat::Text)]
    pub format: GrowthFormat,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrowthFormat {
    Text,
    Table,
    Json,
}

pub fn run(a: &GrowthArgs) -> Result<u8, Diagnostic> {
    let instances = a
        .instances
        .iter()
        .map(|spec| Instances::parse(spec))
        .collect::<Result<Vec<_>, _>>()?;
    let mut report = match (&a.before, &a.after) {
        (Some(before), Some(after)) => {
            if a.size.is_some()
                || a.align.is_some()
                || a.btf.is_some()
                || a.dwarf.is_some()
                || a.header.is_some()
                || a.probe.is_set()
            {
                return Err(Diagnostic::new("--before/--after compare two headers: they take no --size, --align, --btf, --dwarf, --header, --kbuild, --compile-commands or --cc")
                    .help("the new sizes come from the --after header"));
            }
            let (defines, types) = header_settings(a.access.as_deref(), &a.defines)?;
            let old = header_types(before, &defines, &types)?;
            let new = header_types(after, &defines, &types)?;
            growth::compare_headers(&old, &new, &a.struct_name)?
        }
        (Some(_), None) | (None, Some(_)) => {
            return Err(Diagnostic::new("--before and --after go together")
                .help("give both headers: --before OLD.h --after NEW.h"))
        }
        (None, None) => grow_by_size(a)?,
    };
    report.apply_instances(&instances)?;
    crate::output::print_stdout(&render(&report, a.format))?;
    Ok(EXIT_OK)
}

/// `--size N [--align A]` on BTF, DWARF or a header.
fn grow_by_size(a: &GrowthArgs) -> Result<GrowthReport, Diagnostic> {
    let Some(size) = a.size else {
        return Err(Diagnostic::new("no change given")
            .help("give --before OLD.h --after NEW.h, or --btf PATH (or --dwarf FILE, --header FILE) with --size N"));
    };
    match [a.btf.is_some(), a.dwarf.is_some(), a.header.is_some()]
        .iter()
        .filter(|&&s| s)
        .count()
    {
        0 => {
            return Err(Diagnostic::new(
                "--size needs the types: --btf PATH, --dwarf FILE or --header FILE",
            )
            .help("e.g. --btf /sys/kernel/btf/vmlinux"))
        }
        1 => {}
        _ => {
            return Err(
                Diagnostic::new("give only one of --btf, --dwarf and --header")
                    .help("they are different sources of the same types"),
            )
        }
    }
    let mut searched = None;
    let (db, skipped) = if let Some(p) = &a.btf {
        (files::btf(p)?, Vec::new())
    } else if let Some(p) = &a.dwarf {
        (files::dwarf(p)?, Vec::new())
    } else if a.probe.is_set() {
        let path = a.header.clone().expect("one source is given");
        let (p, added) = layout_core::probe::run_with_embedders(&a.probe, &path, &a.struct_name)?;
        searched = searched_note(&added);
        (p.db, Vec::new())
    } else {
        let path = a.header.as_deref().expect("one source is given");
        let (defines, types) = header_settings(a.access.as_deref(), &a.defines)?;
        let t = header_types(path, &defines, &types)?;
        t.find_struct(&a.struct_name)?;
        (t.db, t.skipped)
    };
    let root = db.find_struct(&a.struct_name)?;
    let align = a.align.unwrap_or(root.align);
    let mut report = growth::grow(&db, &a.struct_name, Shape { size, align })?;
    report.notes.extend(searched);
    for (name, d) in &skipped {
        report.notes.push(format!(
            "struct {name} could not be laid out, so it is not in this report: {}",
            d.message
        ));
    }
    Ok(report)
}

/// The growth report of a proposal: `layout` places the fields of `model`
/// (the struct `input` names); the embedders come from the same BTF, DWARF
/// or header.
pub fn for_proposal(
    input: &InputArgs,
    model: &Struct,
    layout: &Layout,
) -> Result<GrowthReport, Diagnostic> {
    let mut searched = None;
    let db = if let Some(p) = &input.btf {
        files::btf(p)?
    } else if let Some(p) = &input.dwarf {
        files::dwarf(p)?
    } else if input.probe.is_set() {
        let header = input
            .header
            .clone()
            .ok_or_else(|| Diagnostic::new("--growth needs the header"))?;
        let (p, added) =
            layout_core::probe::run_with_embedders(&input.probe, &header, &input.struct_name)?;
        searched = searched_note(&added);
        p.db
    } else {
        let path = input.header.as_deref().ok_or_else(|| {
            Diagnostic::new("--growth needs the header, --btf or --dwarf")
                .help("give the header that defines the struct, or --btf PATH / --dwarf FILE")
        })?;
        // The same defines the struct was read with: --config, [defines], -D.
        let file = match &input.access {
            Some(p) => Some(files::access(p)?),
            None => None,
        };
        let defines = input::all_defines(input, file.as_ref())?;
        let types = file.map(|f| f.types).unwrap_or_default();
        let t = header_types(path, &defines, &types)?;
        t.find_struct(&input.struct_name)?;
        t.db
    };
    let old = db.find_struct(&input.struct_name)?;
    let new = growth::proposed_layout(old, model, layout)?;
    let mut report = growth::grow_to(&db, &input.struct_name, &new)?;
    report.notes.extend(searched);
    Ok(report)
}

/// The note that says which headers of the tree were compiled in for their
/// embedders.
fn searched_note(added: &[std::path::PathBuf]) -> Option<String> {
    (!added.is_empty()).then(|| {
        let names: Vec<String> = added.iter().map(|p| p.display().to_string()).collect();
        format!(
            "embedders were also searched in the tree's headers that embed the struct: {}",
            names.join(", ")
        )
    })
}

pub fn render(report: &GrowthReport, format: GrowthFormat) -> String {
    match format {
        GrowthFormat::Text => report.text(),
        GrowthFormat::Table => report.table(),
        GrowthFormat::Json => layout_core::report::json::pretty(report),
    }
}

/// Defines and types for reading headers: the access file's, then -D flags.
fn header_settings(
    access_path: Option<&Path>,
    flags: &[String],
) -> Result<(Defines, TypeTable), Diagnostic> {
    let file = match access_path {
        Some(p) => Some(files::access(p)?),
        None => None,
    };
    let defines = input::merged_defines(file.as_ref(), flags)?;
    let types = file.map(|f| f.types).unwrap_or_default();
    Ok((defines, types))
}

fn header_types(
    path: &Path,
    defines: &Defines,
    types: &TypeTable,
) -> Result<HeaderTypes, Diagnostic> {
    let header = files::header(path, defines, types)?;
    Ok(growth::header_types(&header))
}
