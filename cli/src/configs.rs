//! `propose --check-configs`: the declared layout and the proposal in every
//! configuration that changes the struct, each compiled by the compiler
//! front-end (the proposal as the patched header, written to a private
//! directory). What is checked and how it is reported is layout-core's
//! `configs`; this module runs the loads.

use crate::input;
use crate::input_args::InputArgs;
use layout_core::configs::{self, ConfigCheck, Outcome};
use layout_core::model::{Placement, Struct};
use layout_core::source::StructSource;
use layout_core::{Diagnostic, Layout};
use std::path::{Path, PathBuf};

/// The checks: the configuration read first, then each option flipped.
pub fn check(
    a: &InputArgs,
    base: &Struct,
    declared: &Layout,
    proposed: &Layout,
    source: &StructSource,
    diff: &str,
) -> Result<Vec<ConfigCheck>, Diagnostic> {
    let header = a
        .header
        .as_ref()
        .filter(|_| a.probe.is_set())
        .ok_or_else(|| {
            Diagnostic::new("--check-configs compiles each configuration")
                .help("give the header with --kbuild DIR, --compile-commands FILE or --cc 'CMD'")
        })?;
    let patched = configs::apply_diff(&source.text, diff).ok_or_else(|| {
        Diagnostic::new("--check-configs: the proposal's diff does not apply to the header")
            .in_file(header)
            .help("this is a bug in cachelayout: please report it with the command line")
    })?;
    let dir = tempfile::Builder::new()
        .prefix("cachelayout-configs-")
        .tempdir()
        .map_err(|e| Diagnostic::new(format!("cannot create a private directory: {e}")))?;
    let name = header.file_name().unwrap_or(header.as_os_str());
    let patched_path = dir.path().join(name);
    write_new(&patched_path, &patched)?;

    // The proposal as the compiler lays out the patched header, in the
    // configuration read: it must be the proposal, or the checks below
    // would be about another layout.
    let base_args = for_configuration(a, header, declared.placement, Vec::new());
    let compiled = load_in(&base_args, &patched_path, base)?;
    let (s, l) = compiled.map_err(|why| {
        Diagnostic::new(format!(
            "--check-configs: the patched header does not compile: {why}"
        ))
        .in_file(header)
    })?;
    if !same_offsets(base, proposed, &s, &l) {
        return Err(Diagnostic::new(
            "--check-configs: the compiler did not lay out the patched header as proposed \
             (the header is included before the probe reaches it)",
        )
        .in_file(header)
        .help("check the proposal with --format json and gcc instead"));
    }
    let mut checks = vec![ConfigCheck {
        configuration: "the configuration read".into(),
        declared: Outcome::of(base, declared),
        proposed: Outcome::of(&s, &l),
    }];
    let on = options_on(&base_args, header)?;
    for option in configs::options_in_body(source) {
        let enabled = on.contains(&option);
        let flipped = for_configuration(
            a,
            header,
            declared.placement,
            vec![(option.clone(), !enabled)],
        );
        let load = |h: &Path| match load_in(&flipped, h, base) {
            Ok(r) => r,
            Err(d) => Err(d.message),
        };
        let (old, new) = (load(header), load(&patched_path));
        // A proposal that moves members compiles to another layout in
        // every configuration; the same one means the compiler read the
        // header of the tree instead (an include guard already defined).
        let unseen = matches!((&old, &new), (Ok((a, la)), Ok((b, lb))) if same_offsets(a, la, b, lb))
            && !same_offsets(base, declared, base, proposed);
        let outcome = |r: Result<(Struct, Layout), String>| match r {
            Ok((s, l)) => Outcome::of(&s, &l),
            Err(why) => Outcome::Failed { why },
        };
        let declared_outcome = outcome(old);
        let proposed_outcome = if unseen {
            Outcome::Failed {
                why: "the compiler read the tree's header, not the patched one".into(),
            }
        } else {
            outcome(new)
        };
        checks.push(ConfigCheck {
            configuration: format!("{option}={}", if enabled { "n" } else { "y" }),
            declared: declared_outcome,
            proposed: proposed_outcome,
        });
    }
    Ok(checks)
}

/// The input arguments for one configuration: the compiler front-end with
/// `flip`, no access file (the classes come from the configuration read),
/// the placement kept.
fn for_configuration(
    a: &InputArgs,
    header: &Path,
    placement: Placement,
    flip: Vec<(String, bool)>,
) -> InputArgs {
    let mut args = a.clone();
    args.header = Some(header.to_path_buf());
    args.access = None;
    // Named containers give their offsets from each configuration's types;
    // bare offsets (the access file's too, which is left out) carry over.
    if a.container.is_empty() {
        args.offset = placement.offsets().to_vec();
    }
    args.probe.flip = flip;
    args
}

/// The struct from `header` under `args`, with the classes of `base`;
/// `Ok(Err(why))` when this configuration has no such struct or does not
/// compile.
fn load_in(
    args: &InputArgs,
    header: &Path,
    base: &Struct,
) -> Result<Result<(Struct, Layout), String>, Diagnostic> {
    let mut args = args.clone();
    args.header = Some(header.to_path_buf());
    Ok(match input::load(&args) {
        Ok(loaded) => {
            let mut s = loaded.model;
            configs::carry_classes(base, &mut s);
            Ok((s, loaded.declared))
        }
        Err(d) => Err(d.message),
    })
}

/// The options the configuration read turns on: the probe's macros.
fn options_on(args: &InputArgs, header: &Path) -> Result<Vec<String>, Diagnostic> {
    let probe = layout_core::probe::run(&args.probe, &[header.to_path_buf()])?;
    Ok(probe
        .macros
        .iter()
        .filter(|(n, _)| n.starts_with("CONFIG_"))
        .map(|(n, _)| n.clone())
        .collect())
}

/// Whether every member of `a` laid out as `la` sits where the member of
/// that name sits in `b` laid out as `lb`, at the same size (members only
/// `b` has, the padding arrays a diff adds, do not count).
fn same_offsets(a: &Struct, la: &Layout, b: &Struct, lb: &Layout) -> bool {
    let offset_in = |s: &Struct, l: &Layout, name: &str| {
        l.slots
            .iter()
            .find(|sl| s.fields[sl.field].name == name)
            .map(|sl| sl.offset)
    };
    la.size == lb.size
        && la.slots.iter().all(|sl| {
            let f = &a.fields[sl.field];
            f.size == 0 || offset_in(b, lb, &f.name) == Some(sl.offset)
        })
}

/// Writes `text` to a new file at `path` (never over an existing one).
fn write_new(path: &PathBuf, text: &str) -> Result<(), Diagnostic> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| Diagnostic::new(format!("cannot write the patched header: {e}")).in_file(path))
}
