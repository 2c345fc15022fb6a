//! `cachelayout propose`: solve, verify, and print the fix as a diff, a
//! table or JSON, with what it costs and what it proves.

use super::args::{ProposeArgs, ProposeFormat};
use super::{input, EXIT_OK};
use layout_core::emit::{self, CStyle, ChangelogNotes};
use layout_core::solve::{self, Preset, Solution, SolveOptions};
use layout_core::{layout, report, Diagnostic, Placement};
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Duration;

pub fn run(a: &ProposeArgs) -> Result<u8, Diagnostic> {
    let loaded = input::load(&a.input)?;
    let s = &loaded.model;
    let preset: Preset = a.objective.parse().map_err(Diagnostic::new)?;
    let style: CStyle = a
        .style
        .parse()
        .map_err(|e| Diagnostic::new(e).help("use --style aligned, padding or groups"))?;
    if !(a.time_limit > 0.0 && a.time_limit.is_finite()) {
        return Err(Diagnostic::new(format!(
            "--time-limit {} is not a positive number of seconds",
            a.time_limit
        )));
    }
    let opts = SolveOptions {
        line: loaded.target.line,
        placement: loaded.placement,
        time_limit: Duration::from_secs_f64(a.time_limit),
        preset,
        separate_soft: a.separate_locked,
        ..SolveOptions::default()
    };
    let solved = solve_or_explain(s, &opts, &loaded.origin)?;
    // When lockless fields still share lines with locked ones, price separating them too.
    let separated = if a.separate_locked {
        None
    } else {
        solve::solve(
            s,
            &SolveOptions {
                separate_soft: true,
                ..opts.clone()
            },
        )
        .ok()
        .filter(|alt| alt.layout.size > solved.layout.size)
    };
    let before = &loaded.declared;
    let assertion = emit::phase_assertion(&s.name, a.container.as_deref(), &solved.layout);
    let changelog = a.changelog.then(|| {
        let notes = ChangelogNotes {
            lower_bound: solved.lower_bound,
            optimal: solved.optimal,
            separated_size: separated.as_ref().map(|alt| alt.layout.size),
            phase_assertion: assertion.clone(),
        };
        emit::changelog(s, before, &solved.layout, &notes)
    });
    let growth = if a.growth {
        Some(super::growth::for_proposal(&a.input, s, &solved.layout)?)
    } else {
        None
    };
    let mut out = String::new();
    match a.format {
        ProposeFormat::Diff => {
            let source = loaded.source.as_ref().ok_or_else(|| {
                loaded.source_error.clone().unwrap_or_else(|| {
                    Diagnostic::new("a diff needs the C header that defines the struct").help(
                        "pass the header as well as --btf/--dwarf, or use --format table or json",
                    )
                })
            })?;
            if let Some(text) = &changelog {
                // A commit message, then the patch: what `git am` and `patch -p1` both read.
                let _ = write!(out, "{text}\n---\n");
            }
            if !same_layout(before, &solved.layout) {
                out.push_str(&emit::c_diff(source, &solved.layout, style)?);
            }
        }
        ProposeFormat::Table => {
            let lines = report::conflict_lines(s, before);
            let _ = writeln!(out, "Before:\n{}", report::table(s, before));
            if !lines.is_empty() {
                let _ = writeln!(out, "{}", report::diagram(s, before, &lines));
            }
            let _ = writeln!(out, "After:\n{}", report::table(s, &solved.layout));
            if !lines.is_empty() {
                let _ = writeln!(out, "{}", report::diagram(s, &solved.layout, &lines));
            }
            out.push_str(&summary(
                s,
                before,
                &solved,
                separated.as_ref(),
                assertion.as_deref(),
            ));
            if let Some(text) = &changelog {
                let _ = write!(out, "\nChangelog:\n{text}");
            }
            if let Some(g) = &growth {
                let _ = write!(out, "\nGrowth:\n{}", g.text());
            }
        }
        ProposeFormat::Json => {
            let mut v = serde_json::json!({
                "before": report::layout_json(s, before),
                "after": report::layout_json(s, &solved.layout),
                "optimal": solved.optimal,
                "lower_bound": solved.lower_bound,
                "solve_ms": solved.solve_ms,
            });
            if let Some(text) = &assertion {
                v["phase_assertion"] = serde_json::Value::from(text.as_str());
            }
            if let Some(alt) = &separated {
                v["separated_locked_size"] = serde_json::Value::from(alt.layout.size);
            }
            if let Some(text) = &changelog {
                v["changelog"] = serde_json::Value::from(text.as_str());
            }
            if let Some(g) = &growth {
                v["growth"] = g.json();
            }
            out = serde_json::to_string_pretty(&v).expect("JSON values always serialise");
            out.push('\n');
        }
    }
    write_output(a, &out)?;
    if a.format == ProposeFormat::Diff {
        eprint!(
            "{}",
            summary(s, before, &solved, separated.as_ref(), assertion.as_deref())
        );
        if let Some(g) = &growth {
            eprint!("\nGrowth:\n{}", g.text());
        }
    }
    Ok(EXIT_OK)
}

/// True when the proposal places every field where it already is: then there is
/// nothing to patch.
fn same_layout(a: &layout_core::Layout, b: &layout_core::Layout) -> bool {
    let placed = |l: &layout_core::Layout| {
        let mut v: Vec<(usize, u64)> = l.slots.iter().map(|s| (s.field, s.offset)).collect();
        v.sort_unstable();
        v
    };
    a.size == b.size && a.align == b.align && placed(a) == placed(b)
}

fn solve_or_explain(
    s: &layout_core::Struct,
    opts: &SolveOptions,
    header: &std::path::Path,
) -> Result<Solution, Diagnostic> {
    solve::solve(s, opts).map_err(|e| {
        Diagnostic::new(format!("struct {}: {e}", s.name))
            .in_file(header)
            .help("unpin fields in the access file (`pinned = [...]`) or change their classes")
    })
}

/// The few lines a reviewer wants: sizes, conflicts, proof, price, assertion.
fn summary(
    s: &layout_core::Struct,
    before: &layout_core::Layout,
    solved: &Solution,
    separated: Option<&Solution>,
    assertion: Option<&str>,
) -> String {
    let after = &solved.layout;
    let n_before = layout::reported_conflicts(s, before).len();
    let n_after = layout::reported_conflicts(s, after).len();
    let mut t = String::new();
    let delta = after.size as i64 - before.size as i64;
    let where_ = match after.placement {
        Placement::Offset(o) => format!("at offset {o} (phase {})", o % after.line),
        Placement::Aligned => "at every placement".to_string(),
    };
    let _ = writeln!(
        t,
        "struct {}: {} -> {} bytes ({delta:+}), align {} -> {}; hard conflicts {n_before} -> {n_after} {where_}",
        s.name, before.size, after.size, before.align, after.align
    );
    if same_layout(before, after) {
        let _ = writeln!(
            t,
            "the layout as declared is already the best: nothing to change"
        );
    }
    if solved.optimal {
        let _ = writeln!(
            t,
            "proven optimal: no layout obeying the rule is smaller than {} bytes (solved in {} ms)",
            solved.lower_bound, solved.solve_ms
        );
    } else {
        let _ = writeln!(
            t,
            "best found in {} ms, not proven optimal: lower bound {} bytes (gap {} bytes)",
            solved.solve_ms,
            solved.lower_bound,
            after.size.saturating_sub(solved.lower_bound)
        );
    }
    if let Some(alt) = separated {
        let _ = writeln!(
            t,
            "lockless fields still share a line with locked fields (true sharing under the lock is allowed); \
keeping them apart too costs {:+} bytes ({} bytes): pass --separate-locked",
            alt.layout.size as i64 - after.size as i64,
            alt.layout.size
        );
    }
    if let Some(a) = assertion {
        let _ = writeln!(t, "the layout relies on the struct's phase; pin it:\n  {a}");
    }
    t
}

fn write_output(a: &ProposeArgs, text: &str) -> Result<(), Diagnostic> {
    match &a.output {
        None => super::print_stdout(text),
        Some(path) => {
            let mut options = std::fs::OpenOptions::new();
            options.write(true);
            if a.force {
                options.create(true).truncate(true);
            } else {
                options.create_new(true);
            }
            let mut file = options.open(path).map_err(|e| {
                let help = if e.kind() == std::io::ErrorKind::AlreadyExists {
                    "choose a new file name, or pass --force to overwrite it"
                } else {
                    "check the directory exists and is writable"
                };
                Diagnostic::new(format!("cannot write output: {e}"))
                    .in_file(path)
                    .help(help)
            })?;
            file.write_all(text.as_bytes())
                .map_err(|e| Diagnostic::new(format!("cannot write output: {e}")).in_file(path))
        }
    }
}
