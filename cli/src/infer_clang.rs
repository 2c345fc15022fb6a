//! `infer --source`: the translation units' flags from the compiler
//! front-end (`--kbuild`, `--compile-commands`, `--cc`), then layout-core's
//! libclang analysis.

use layout_core::infer::clang::{self, flags, Request, Source};
use layout_core::infer::render;
use layout_core::infer::sites::Site;
use layout_core::{probe, Diagnostic, Struct};
use std::path::PathBuf;

/// What `infer` asks of its `--source` files: the struct, the files, the
/// compiler front-end that gives their flags, and the roots of the walk.
pub struct SourceQuery<'a> {
    pub probe: &'a probe::ProbeArgs,
    pub struct_name: &'a str,
    pub sources: &'a [PathBuf],
    pub hot: &'a [String],
    pub cold: &'a [String],
    pub lock_wrappers: &'a [String],
    pub unit_limits: &'a crate::limits::UnitLimitArgs,
}

/// Each `--source` with the flags libclang gets for it.
pub fn sources(
    a: &SourceQuery<'_>,
    inputs: &mut render::Inputs,
) -> Result<Vec<Source>, Diagnostic> {
    if !a.probe.is_set() {
        return Err(Diagnostic::new("--source needs the flags its files are compiled with")
            .help("give --kbuild DIR (a configured kernel tree), --compile-commands FILE, or --cc 'cc -Iinclude ...'"));
    }
    let mut sources = Vec::new();
    for path in a.sources {
        let (tc, _config) = probe::toolchain(a.probe, path)?;
        // With --cc alone the words after the compiler are its flags.
        let mut all = tc.compiler[1..].to_vec();
        all.extend(tc.flags.iter().cloned());
        sources.push(Source {
            path: path.clone(),
            args: flags::for_libclang(&all, &tc.directory),
        });
        inputs.sources.push(path.display().to_string());
    }
    Ok(sources)
}

pub fn sites(
    a: &SourceQuery<'_>,
    model: &Struct,
    names: &layout_core::access::MemberNames,
    line: u64,
    inputs: &mut render::Inputs,
) -> Result<Vec<Site>, Diagnostic> {
    if a.sources.is_empty() {
        return Ok(Vec::new());
    }
    let sources = sources(a, inputs)?;
    let req = Request {
        struct_name: a.struct_name.to_string(),
        sources,
        hot: a.hot.to_vec(),
        cold: a.cold.to_vec(),
        lock_wrappers: a.lock_wrappers.to_vec(),
    };
    let analysis = clang::analyse_isolated(model, &req, &a.unit_limits.isolation()?)?;
    for w in &analysis.warnings {
        eprintln!("warning: {w}");
        inputs.notes.push(w.clone());
    }
    for (file, secs) in &analysis.seconds {
        eprintln!("note: analysed {file} in {secs:.2} s");
    }
    inputs.notes.extend(analysis.notes);
    // Members by their access-file name (a bit-field run by its first
    // bit-field, a sub-member of an embedded struct by its dotted name).
    inputs.paths = render::path_names(model, names, line, &analysis.paths, &analysis.sites);
    Ok(analysis.sites)
}
