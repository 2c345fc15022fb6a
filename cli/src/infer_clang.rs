//! `infer --source`: the translation units' flags from the compiler
//! front-end (`--kbuild`, `--compile-commands`, `--cc`), then layout-core's
//! libclang analysis.

use super::infer::InferArgs;
use layout_core::infer::clang::{self, flags, Request, Source};
use layout_core::infer::render;
use layout_core::infer::sites::Site;
use layout_core::{probe, Diagnostic, Struct};

/// Each `--source` with the flags libclang gets for it.
pub fn sources(a: &InferArgs, inputs: &mut render::Inputs) -> Result<Vec<Source>, Diagnostic> {
    if !a.input.probe.is_set() {
        return Err(Diagnostic::new("--source needs the flags its files are compiled with")
            .help("give --kbuild DIR (a configured kernel tree), --compile-commands FILE, or --cc 'cc -Iinclude ...'"));
    }
    let mut sources = Vec::new();
    for path in &a.sources {
        let (tc, _config) = probe::toolchain(&a.input.probe, path)?;
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
    a: &InferArgs,
    model: &Struct,
    inputs: &mut render::Inputs,
) -> Result<Vec<Site>, Diagnostic> {
    if a.sources.is_empty() {
        return Ok(Vec::new());
    }
    let sources = sources(a, inputs)?;
    let req = Request {
        struct_name: a.input.struct_name.clone(),
        sources,
        hot: a.hot.clone(),
        cold: a.cold.clone(),
        lock_wrappers: a.lock_wrappers.clone(),
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
    // Members by their access-file name (a bit-field run by its first bit-field).
    let name = |i: usize| {
        let n = &model.fields[i].name;
        n.split(':').next().unwrap_or(n).to_string()
    };
    inputs.paths = analysis
        .paths
        .iter()
        .map(|(root, fields)| {
            let mut names: Vec<String> = fields.iter().map(|&i| name(i)).collect();
            names.dedup();
            (root.clone(), names)
        })
        .collect();
    Ok(analysis.sites)
}
