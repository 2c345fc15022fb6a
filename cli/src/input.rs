//! Loading what every subcommand needs: the header and/or the compiler's
//! layout (BTF, DWARF, or a probe compiled with `--kbuild`,
//! `--compile-commands` or `--cc`), the access file, the defines, and from
//! them the struct model with its declared layout.

use crate::input_args::InputArgs;
use layout_core::access::{AccessFile, MemberNames};
use layout_core::c::{Defines, TypeTable};
use layout_core::containers::EmbeddingPath;
use layout_core::files;
use layout_core::scan::infer::TypeDefaults;
use layout_core::source::StructSource;
use layout_core::typedb::{self, TypeDb};
use layout_core::{Diagnostic, Layout, Placement, Struct, Target};
use std::path::{Path, PathBuf};

/// A struct with classes applied, its declared layout, and how to judge it.
pub struct Loaded {
    pub model: Struct,
    /// Without an access file: the classes the member types gave (said in
    /// the output with [`TypeDefaults::note`]).
    pub type_defaults: Option<TypeDefaults>,
    /// The kernel configuration the struct was read in (`--config`, or the
    /// `.config` of a `--kbuild` tree).
    pub configuration: Option<String>,
    /// Where the struct's text is, when a header was given (needed for diffs).
    pub source: Option<StructSource>,
    /// Why `source` is missing although a header was given: with a compiler
    /// probe the layout does not need the header's text, only a diff does.
    pub source_error: Option<Diagnostic>,
    /// The file the layout came from (header, BTF or DWARF), for messages.
    pub origin: PathBuf,
    pub target: Target,
    pub placement: Placement,
    /// The layout as declared.
    pub declared: Layout,
    /// The container path (`--container`) of each offset of `placement`,
    /// where one was given.
    pub containers: Vec<Option<String>>,
    /// Where the type graph (BTF, DWARF, a probe) embeds the struct, when
    /// one was read.
    pub embedders: Option<Vec<EmbeddingPath>>,
    /// Every macro the compiler probe saw (`None` without a probe): the
    /// idioms a diff may write.
    pub macro_names: Option<Vec<String>>,
    /// The names inside the fields (members of anonymous unions and
    /// `struct_group`s, single bitfields), as the front-end listed them.
    pub names: MemberNames,
}

/// The container offsets a run asks for, and the `--container` path of each.
struct ContainerOffsets {
    offsets: Vec<u64>,
    names: Vec<Option<String>>,
}

/// `--offset` (or the access file's `offset`) and `--container`: the N-th
/// container goes with the N-th offset; with a type graph a container's
/// offset comes from it (and a given one must agree).
fn container_offsets(
    a: &InputArgs,
    file: Option<&AccessFile>,
    db: Option<&TypeDb>,
) -> Result<ContainerOffsets, Diagnostic> {
    if a.container.is_empty() {
        let offsets = match a.offset.is_empty() {
            true => file
                .and_then(|f| f.struct_offset(&a.struct_name))
                .into_iter()
                .collect(),
            false => a.offset.clone(),
        };
        let names = vec![None; offsets.len()];
        return Ok(ContainerOffsets { offsets, names });
    }
    if !a.offset.is_empty() && a.offset.len() != a.container.len() {
        return Err(Diagnostic::new(format!(
            "{} --container but {} --offset: give one offset per container, in the same order",
            a.container.len(),
            a.offset.len()
        ))
        .help(
            "or leave --offset out with --btf, --dwarf or a compiler probe, which know the offsets",
        ));
    }
    let mut offsets = Vec::new();
    for (i, c) in a.container.iter().enumerate() {
        let given = a.offset.get(i).copied();
        let known = match db {
            Some(db) => {
                let (at, holds) = layout_core::containers::container_offset(db, c)?;
                if holds != a.struct_name.trim().trim_start_matches("struct ").trim() {
                    return Err(Diagnostic::new(format!(
                        "--container {c} holds struct {holds}, not struct {}",
                        a.struct_name
                    )));
                }
                Some(at)
            }
            None => None,
        };
        offsets.push(match (given, known) {
            (Some(g), Some(k)) if g != k => {
                return Err(Diagnostic::new(format!(
                    "--container {c} is at offset {k} in the types, not {g}"
                ))
                .help("leave --offset out to take the offset from the types"))
            }
            (Some(o), _) | (None, Some(o)) => o,
            (None, None) => {
                return Err(Diagnostic::new(format!(
                    "--container {c}: its offset is unknown from a header alone"
                ))
                .help("give --offset for each --container, or use --btf, --dwarf or --kbuild"))
            }
        });
    }
    Ok(ContainerOffsets {
        offsets,
        names: a.container.iter().cloned().map(Some).collect(),
    })
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
    let target = a.line;
    let access_file = match &a.access {
        Some(path) => Some(files::access(path)?),
        None => None,
    };
    let probe = load_probe(a)?;
    let mut defines = match &probe {
        Some(p) => p.defines(a.header.as_deref().unwrap_or(Path::new("")))?,
        None => Defines::default(),
    };
    // --config, then [defines], then -D on top of the compiler's macros.
    for (name, value) in all_defines(a, access_file.as_ref())?.iter() {
        defines.insert(name, value);
    }
    let types = access_file
        .as_ref()
        .map(|f| f.types.clone())
        .unwrap_or_default();
    let from_probe = probe.is_some();
    let configuration = probe
        .as_ref()
        .and_then(|p| p.config.clone())
        .or_else(|| a.config.clone())
        .map(|c| c.display().to_string());
    // A struct the probe lacks: say which #if of the header left it out.
    if let (Some(p), Some(h)) = (&probe, &a.header) {
        if p.db.find(&a.struct_name).is_none() {
            if let Some(d) = p.missing_struct(h, &a.struct_name) {
                return Err(d);
            }
        }
    }
    let macro_names = probe.as_ref().map(|p| p.macro_names.clone());
    let db = match probe {
        Some(p) => Some(p.db),
        None => load_typedb(a)?,
    };
    let mut source_error = None;
    let (read, origin) = match (&db, &a.header) {
        (None, None) => {
            return Err(
                Diagnostic::new("no input: give a C header, or --btf PATH / --dwarf FILE")
                    .help("e.g. cachelayout show include/linux/mmzone.h --struct zone"),
            )
        }
        (None, Some(h)) => (
            read_header(h, &a.struct_name, &defines, &types, false)?,
            h.clone(),
        ),
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
                Some(h) if from_probe => {
                    let (size, align) = (exact.size, exact.align);
                    let model = exact.model.clone();
                    let names = MemberNames::from_typedb(db, agg);
                    match with_header_source(
                        exact,
                        agg,
                        h,
                        &a.struct_name,
                        &defines,
                        types,
                        macro_names.as_deref().unwrap_or(&[]),
                    ) {
                        Ok(r) => r,
                        Err(e) => {
                            source_error = Some(e);
                            Read {
                                model,
                                size,
                                align,
                                source: None,
                                names,
                            }
                        }
                    }
                }
                Some(h) => with_header_source(
                    exact,
                    agg,
                    h,
                    &a.struct_name,
                    &defines,
                    types,
                    macro_names.as_deref().unwrap_or(&[]),
                )?,
            };
            let origin = match header {
                Some(h) if from_probe => h.clone(),
                _ => db.source().to_path_buf(),
            };
            (read, origin)
        }
    };
    let Read {
        mut model,
        size,
        align,
        source,
        names,
    } = read;
    if let Some(source) = &source {
        layout_core::blocks::keep_conditional_blocks(&mut model, source);
        layout_core::blocks::keep_declarator_lists(&mut model, source);
    }
    let type_defaults = match &access_file {
        Some(f) => {
            f.apply_with(&mut model, &names)?;
            None
        }
        None => Some(layout_core::scan::infer::type_defaults(&mut model)),
    };
    let offsets = container_offsets(a, access_file.as_ref(), db.as_ref())?;
    for &o in &offsets.offsets {
        if o > MAX_OFFSET || o.checked_add(size).is_none_or(|end| end > MAX_OFFSET) {
            return Err(Diagnostic::new(format!(
                "offset {o} puts struct {} past 2^48 bytes, the largest address space",
                a.struct_name
            ))
            .help("give the struct's offset inside its container (e.g. --offset 304)"));
        }
        if o % align != 0 {
            return Err(Diagnostic::new(format!(
                "offset {o} is not a multiple of the alignment of struct {} ({align})",
                a.struct_name
            ))
            .help("give the struct's real offset inside its container"));
        }
    }
    let placement = Placement::at_offsets(&offsets.offsets).map_err(|e| {
        Diagnostic::new(e).help("give the containers whose phases differ; equal phases need one")
    })?;
    // Listed with containers only (the summary's note), so computed then.
    let embedders = db
        .as_ref()
        .filter(|_| !offsets.offsets.is_empty())
        .and_then(|db| {
            let agg = db.find_struct(&a.struct_name).ok()?;
            Some(layout_core::containers::embedding_paths(db, agg))
        });
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
        type_defaults,
        configuration,
        source,
        source_error,
        origin,
        target,
        placement,
        containers: offsets.names,
        embedders,
        declared,
        macro_names,
        names,
    })
}

/// The compiler probe of the header, when --kbuild, --compile-commands or --cc asks for one.
fn load_probe(a: &InputArgs) -> Result<Option<layout_core::probe::Probe>, Diagnostic> {
    if !a.probe.is_set() {
        return Ok(None);
    }
    if a.btf.is_some() || a.dwarf.is_some() {
        return Err(Diagnostic::new(
            "--kbuild, --compile-commands and --cc compile the layout: they take no --btf or --dwarf",
        )
        .help("give either a compiler front-end or the BTF/DWARF of a build"));
    }
    let header = a.header.as_ref().ok_or_else(|| {
        Diagnostic::new("the compiler front-end needs the header that defines the struct")
            .help("e.g. cachelayout show include/linux/tcp.h --struct tcp_sock --kbuild /usr/src/linux-headers-$(uname -r)")
    })?;
    // With containers asked for, the types of the tree's headers that embed
    // the struct too: the containers and the embedders listed come from them.
    if !a.container.is_empty() || !a.offset.is_empty() {
        let (probe, _) = layout_core::probe::run_with_embedders(&a.probe, header, &a.struct_name)?;
        return Ok(Some(probe));
    }
    layout_core::probe::run(&a.probe, std::slice::from_ref(header)).map(Some)
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
    compiled: bool,
) -> Result<Read, Diagnostic> {
    let header = files::header(path, defines, types)?;
    let header = if compiled {
        header.with_compiler_layout()
    } else {
        header
    };
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
    renamed: &[String],
) -> Result<Read, Diagnostic> {
    // A member named by a macro (`#define rcu_head callback_head`) has the
    // expansion's name in the compiler's layout.
    let same_field = |h: &str, e: &str| same_field(h, e) || renamed.iter().any(|m| m == h);
    for m in &agg.members {
        let base = m.ty.split('[').next().unwrap_or(&m.ty).trim();
        if m.count > 0 && !base.is_empty() && !base.contains('{') && types.get(base).is_none() {
            types.insert(base, m.size / m.count, m.align);
        }
    }
    let from_header = read_header(header, name, defines, &types, true)?;
    let mut model = from_header.model;
    let help = "pass the header of the same build (and the same -D / --config) as the BTF or DWARF";
    // Zero-size members the header writes as markers (CACHELINE_PADDING,
    // __cacheline_group_begin/end) are not fields of the header's model.
    // Zero-size members (those, flexible arrays) are matched by name, the
    // others by position.
    let exact_fields: Vec<&layout_core::Field> =
        exact.model.fields.iter().filter(|e| e.size > 0).collect();
    // A run of bit-fields is one field of the header's model, but as many
    // of the compiler's as it has storage units: the header's field spans them.
    let is_bits = |e: &layout_core::Field| {
        e.name.starts_with("bitfield@")
            || e.name.split(':').next().is_some_and(|first| {
                agg.members
                    .iter()
                    .any(|m| m.is_bitfield() && m.name == first)
            })
    };
    let names: Vec<String> = model.fields.iter().map(|f| f.name.clone()).collect();
    let mut k = 0;
    for (i, f) in model.fields.iter_mut().enumerate() {
        if f.size == 0 {
            let named = exact
                .model
                .fields
                .iter()
                .find(|e| e.size == 0 && e.name == f.name);
            match named {
                Some(e) => {
                    f.align = e.align;
                    f.original_offset = e.original_offset;
                }
                None if exact_fields
                    .get(k)
                    .is_some_and(|e| same_field(&f.name, &e.name)) => {}
                None => {
                    // A marker the compiler does not name: it sits where the next member starts.
                    f.original_offset = Some(
                        exact_fields
                            .get(k)
                            .and_then(|e| e.original_offset)
                            .unwrap_or(exact.size),
                    );
                    continue;
                }
            }
            if named.is_some() {
                continue;
            }
        }
        let Some(e) = exact_fields.get(k).filter(|e| same_field(&f.name, &e.name)) else {
            return Err(Diagnostic::new(format!(
                "field `{}` of struct {name} is in the header but not in the compiler's layout",
                f.name
            ))
            .in_file(header)
            .help(help));
        };
        let mut end = k + 1;
        if is_bits(e) {
            while let Some(n) = exact_fields.get(end) {
                let next_is_header_field = names
                    .get(i + 1)
                    .is_some_and(|h| h == &n.name || n.name.split(':').any(|p| p == h));
                if !is_bits(n) || next_is_header_field {
                    break;
                }
                end += 1;
            }
        }
        let span = &exact_fields[k..end];
        let start = e.original_offset.unwrap_or(0);
        let stop = span
            .iter()
            .map(|x| x.original_offset.unwrap_or(0) + x.size)
            .max()
            .unwrap_or(start);
        f.size = stop - start;
        f.align = span_align(span, start);
        f.original_offset = e.original_offset;
        k = end;
    }
    if k != exact_fields.len() {
        let missing: Vec<&str> = exact_fields[k..].iter().map(|e| e.name.as_str()).collect();
        return Err(Diagnostic::new(format!(
            "struct {name} in the header lacks fields the compiler laid out: {}",
            missing.join(", ")
        ))
        .in_file(header)
        .help(help));
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

/// The alignment of one header field that spans several of the compiler's
/// fields (a run of bit-fields the compiler splits by storage unit), starting
/// at `start`: the widest of theirs, but no more than `start` shows. A run
/// whose first bits share a unit with the fields before it (`unsigned a:1;
/// u8 b; unsigned c:5, ...` puts `c` at byte 2 of `a`'s unit) starts at a
/// byte its type's alignment does not divide, although a later unit of the
/// run is aligned; the run keeps its bits' phase only when it moves by what
/// its start shows.
fn span_align(span: &[&layout_core::Field], start: u64) -> u64 {
    let widest = span.iter().map(|x| x.align).max().unwrap_or(1).max(1);
    let shown = match start {
        0 => widest,
        s => 1 << s.trailing_zeros(),
    };
    widest.min(shown)
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

/// Whether a header's field and the compiler's field at the same position
/// are the same member: the same name, a bit-field run the compiler names
/// `a:b:c` and the header after `a`, or an anonymous struct or union (named
/// after its offset by the compiler, after its first member by the header).
fn same_field(header: &str, exact: &str) -> bool {
    header == exact
        || exact.split(':').any(|part| part == header)
        || exact.starts_with("anon_") && exact.contains('@')
        || exact.starts_with("bitfield@")
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
