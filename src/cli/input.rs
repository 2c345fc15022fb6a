//! Loading what every subcommand needs: the header and/or the compiler's
//! layout (BTF, DWARF), the access file, the defines, and from them the
//! struct model with its declared layout.

use super::args::InputArgs;
use super::files;
use layout_core::access::{AccessFile, MemberNames};
use layout_core::c::{Defines, TypeTable};
use layout_core::source::StructSource;
use layout_core::typedb::{self, TypeDb};
use layout_core::{Diagnostic, Layout, Placement, Struct, Target};
use std::path::{Path, PathBuf};

/// A struct with classes applied, its declared layout, and how to judge it.
pub struct Loaded {
    pub model: Struct,
    /// Where the struct's text is, when a header was given (needed for diffs).
    pub source: Option<StructSource>,
    /// The file the layout came from (header, BTF or DWARF), for messages.
    pub origin: PathBuf,
    pub target: Target,
    pub placement: Placement,
    /// The layout as declared.
    pub declared: Layout,
}

/// A struct as a front-end read it: fields with offsets, size and alignment.
struct Read {
    model: Struct,
    size: u64,
    align: u64,
    source: Option<StructSource>,
    /// Names inside the fields the access file may use.
    names: MemberNames,
}

pub fn load(a: &InputArgs) -> Result<Loaded, Diagnostic> {
    let target = Target::new(a.line)
        .map_err(|m| Diagnostic::new(m).help("pass --line 64 (the default) or 128"))?;
    let access_file = match &a.access {
        Some(path) => Some(files::access(path)?),
        None => None,
    };
    let defines = all_defines(a, access_file.as_ref())?;
    let types = access_file
        .as_ref()
        .map(|f| f.types.clone())
        .unwrap_or_default();
    let db = load_typedb(a)?;
    let (read, origin) = match (&db, &a.header) {
        (None, None) => {
            return Err(
                Diagnostic::new("no input: give a C header, or --btf PATH / --dwarf FILE")
                    .help("e.g. cachelayout show include/linux/mmzone.h --struct zone"),
            )
        }
        (None, Some(h)) => (read_header(h, &a.struct_name, &defines, &types)?, h.clone()),
        (Some(db), header) => {
            let agg = db.find_struct(&a.struct_name)?;
            let exact = Read {
                model: db.to_model(agg),
                size: agg.size,
                align: agg.align,
                source: None,
                names: MemberNames::from_typedb(db, agg),
            };
            let read = match header {
                None => exact,
                Some(h) => with_header_source(exact, agg, h, &a.struct_name, &defines, types)?,
            };
            (read, db.source().to_path_buf())
        }
    };
    let Read {
        mut model,
        size,
        align,
        source,
        names,
    } = read;
    if let Some(f) = &access_file {
        f.apply_with(&mut model, &names)?;
    }
    let offset = a.offset.or_else(|| {
        access_file
            .as_ref()
            .and_then(|f| f.struct_offset(&a.struct_name))
    });
    let placement = match offset {
        Some(o) if o > MAX_OFFSET || o.checked_add(size).is_none_or(|end| end > MAX_OFFSET) => {
            return Err(Diagnostic::new(format!(
                "offset {o} puts struct {} past 2^48 bytes, the largest address space",
                a.struct_name
            ))
            .help("give the struct's offset inside its container (e.g. --offset 304)"))
        }
        Some(o) if o % align != 0 => {
            return Err(Diagnostic::new(format!(
                "offset {o} is not a multiple of the alignment of struct {} ({align})",
                a.struct_name
            ))
            .help("give the struct's real offset inside its container"))
        }
        Some(o) => Placement::Offset(o),
        None => Placement::Aligned,
    };
    let declared =
        Layout::declared(&model, size, align, target.line, placement).ok_or_else(|| {
            Diagnostic::new("the front-end gave a field without an offset")
                .in_file(&origin)
                .help("this is a bug in cachelayout: please report it with the command line")
        })?;
    layout_core::verify::check_structure(&model, &declared).map_err(|e| {
        Diagnostic::new(format!(
            "the declared layout of struct {} is inconsistent: {e}",
            a.struct_name
        ))
        .in_file(&origin)
        .help("the input describes a layout no compiler produces: rebuild the BTF or DWARF, or check the header")
    })?;
    Ok(Loaded {
        model,
        source,
        origin,
        target,
        placement,
        declared,
    })
}

fn load_typedb(a: &InputArgs) -> Result<Option<TypeDb>, Diagnostic> {
    match (&a.btf, &a.dwarf) {
        (Some(p), _) => files::btf(p).map(Some),
        (None, Some(p)) => files::dwarf(p).map(Some),
        (None, None) => Ok(None),
    }
}

fn read_header(
    path: &Path,
    name: &str,
    defines: &Defines,
    types: &TypeTable,
) -> Result<Read, Diagnostic> {
    let header = files::header(path, defines, types)?;
    // The command line wins over the header's #define: say so.
    for note in header.overridden_defines() {
        eprintln!("{note}");
    }
    let cs = header.find_struct(name)?;
    Ok(Read {
        model: cs.model,
        size: cs.size,
        align: cs.align,
        source: Some(cs.source),
        names: header.member_names(name)?,
    })
}

/// The compiler's layout with the header's text: the header is read for its
/// byte ranges only; every size, alignment and offset comes from `exact`. The
/// types of the struct's members are taken from the compiler too, so the
/// header needs no types table.
fn with_header_source(
    exact: Read,
    agg: &typedb::Aggregate,
    header: &Path,
    name: &str,
    defines: &Defines,
    mut types: TypeTable,
) -> Result<Read, Diagnostic> {
    for m in &agg.members {
        let base = m.ty.split('[').next().unwrap_or(&m.ty).trim();
        if m.count > 0 && !base.is_empty() && !base.contains('{') && types.get(base).is_none() {
            types.insert(base, m.size / m.count, m.align);
        }
    }
    let from_header = read_header(header, name, defines, &types)?;
    let mut model = from_header.model;
    for f in &mut model.fields {
        let Some(e) = exact.model.fields.iter().find(|e| e.name == f.name) else {
            return Err(Diagnostic::new(format!(
                "field `{}` of struct {name} is in the header but not in the compiler's layout",
                f.name
            ))
            .in_file(header)
            .help("pass the header of the same build (and the same -D / --config) as the BTF or DWARF"));
        };
        f.size = e.size;
        f.align = e.align;
        f.original_offset = e.original_offset;
    }
    if model.fields.len() != exact.model.fields.len() {
        let missing: Vec<&str> = exact
            .model
            .fields
            .iter()
            .filter(|e| !model.fields.iter().any(|f| f.name == e.name))
            .map(|e| e.name.as_str())
            .collect();
        return Err(Diagnostic::new(format!(
            "struct {name} in the header lacks fields the compiler laid out: {}",
            missing.join(", ")
        ))
        .in_file(header)
        .help(
            "pass the header of the same build (and the same -D / --config) as the BTF or DWARF",
        ));
    }
    model.min_align = model.min_align.max(exact.model.min_align);
    Ok(Read {
        model,
        size: exact.size,
        align: exact.align,
        source: from_header.source,
        names: exact.names,
    })
}

/// The largest container offset `--offset` (or `offset` in the access file)
/// may give, struct included: 2^48 bytes, the largest virtual address space
/// of x86_64 and arm64 with 4-level page tables. Line numbers and phases are
/// computed from it without overflow.
const MAX_OFFSET: u64 = 1 << 48;

/// Every define the headers see: the kernel config's, then the access file's
/// [defines], then -D flags on top.
pub(super) fn all_defines(
    a: &InputArgs,
    access_file: Option<&AccessFile>,
) -> Result<Defines, Diagnostic> {
    let mut defines = match &a.config {
        Some(path) => files::config(path)?,
        None => Defines::default(),
    };
    for (name, value) in merged_defines(access_file, &a.defines)?.iter() {
        defines.insert(name, value);
    }
    Ok(defines)
}

/// The access file's [defines], then -D flags on top (a flag without a value means 1).
pub(super) fn merged_defines(
    file: Option<&AccessFile>,
    flags: &[String],
) -> Result<Defines, Diagnostic> {
    let mut defines = file.map(|f| f.defines.clone()).unwrap_or_default();
    for flag in flags {
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n.trim(), v.trim()),
            None => (flag.trim(), "1"),
        };
        let valid_name = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        match (valid_name, parse_int(value)) {
            (true, Some(v)) => defines.insert(name, v),
            _ => {
                return Err(Diagnostic::new(format!("bad -D {flag}"))
                    .help("write -D NAME=INTEGER, e.g. -D MAX_NR_ZONES=5, or -D CONFIG_X"))
            }
        }
    }
    Ok(defines)
}

fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let v = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(hex, 16).ok()?
    } else {
        digits.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}
