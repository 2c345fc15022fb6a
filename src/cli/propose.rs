//! `cachelayout propose`: solve, verify, and print the fix as a diff, a
//! table or JSON, with what it costs and what it proves.

use super::args::{ProposeArgs, ProposeFormat};
use super::{input, EXIT_OK};
use layout_core::emit::{self, CStyle, ChangelogNotes};
use layout_core::solve::{self, Preset, Solution, SolveOptions};
use layout_core::{layout, report, Diagnostic, Placement};
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, Instant};

pub fn run(a: &ProposeArgs) -> Result<u8, Diagnostic> {
    let loaded = input::load(&a.input)?;
    let s = &loaded.model;
    let preset: Preset = a.objective.parse().map_err(Diagnostic::new)?;
    let style: CStyle = a
        .style
        .parse()
        .map_err(|e| Diagnostic::new(e).help("use --style aligned, padding or groups"))?;
    let time_limit = time_limit(a.time_limit)?;
    let started = Instant::now();
    let opts = SolveOptions {
        line: loaded.target.line,
        placement: loaded.placement,
        time_limit,
        preset,
        separate_soft: a.separate_locked,
        ..SolveOptions::default()
    };
    let solved = solve_or_explain(s, &opts, &loaded.origin)?;
    // When lockless fields still share lines with locked ones, price separating them too.
    let separated = if a.separate_locked {
        None
    } else {
        // The time limit covers the whole command: this solve gets what is left.
        solve::solve(
            s,
            &SolveOptions {
                separate_soft: true,
                time_limit: time_limit.saturating_sub(started.elapsed()),
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
                Diagnostic::new("a diff needs the C header that defines the struct")
                    .help("pass the header as well as --btf/--dwarf, or use --format table or json")
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
                "proven": solved.goals[..solved.proven_goals]
                    .iter()
                    .map(|g| g.name())
                    .collect::<Vec<_>>(),
                "lower_bound": solved.lower_bound,
                "cost": solved.cost,
                "churn_bound": solved.churn_bound,
                "solve_ms": solved.solve_ms,
                "stopped_by_time": solved.stopped_by_time
                    || separated.as_ref().is_some_and(|alt| alt.stopped_by_time),
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
    let _ = writeln!(t, "{}", proof_line(solved));
    if solved.stopped_by_time || separated.is_some_and(|alt| alt.stopped_by_time) {
        let _ = writeln!(
            t,
            "the time limit stopped the search: the answer may differ with a larger --time-limit"
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

/// `--time-limit` as a duration: a clear error for NaN, zero or negative;
/// limits too large for the clock mean no limit.
fn time_limit(secs: f64) -> Result<Duration, Diagnostic> {
    solve::time_limit_from_secs(secs).ok_or_else(|| {
        Diagnostic::new(format!(
            "--time-limit {secs} is not a positive number of seconds"
        ))
        .help("pass a positive number such as --time-limit 10")
    })
}

/// Exactly what was proven: each goal in the preset's order up to the
/// first one that is not, then what is known of that one.
fn proof_line(solved: &Solution) -> String {
    use layout_core::solve::Goal;
    let c = &solved.cost;
    // Goals that do not apply (no hot paths named) are left out.
    let applies = |g: &&Goal| **g != Goal::PathLines || !solved.path_bounds.is_empty();
    let proven: Vec<&Goal> = solved.goals[..solved.proven_goals]
        .iter()
        .filter(applies)
        .collect();
    let describe = |g: &Goal| match g {
        Goal::Size => format!("size {} bytes", c.size),
        Goal::Soft => format!("soft costs {}", c.soft),
        Goal::PathLines => format!("hot-path lines {}", c.path_lines),
        Goal::ReadLines => format!("read-mostly lines {}", c.read_lines),
        Goal::Churn => format!("members moved {}", c.churn),
        Goal::Movement => format!("pairs swapped {}", c.movement),
    };
    let cap = solved
        .size_cap
        .map(|cap| format!(" with the size at most {cap} bytes"))
        .unwrap_or_default();
    let mut t = if proven.is_empty() {
        format!(
            "best found in {} ms{cap}, nothing proven optimal",
            solved.solve_ms
        )
    } else {
        format!(
            "proven optimal{cap}: {} (solved in {} ms)",
            proven
                .iter()
                .map(|g| describe(g))
                .collect::<Vec<_>>()
                .join(", then "),
            solved.solve_ms
        )
    };
    if let Some(next) = solved.goals[solved.proven_goals..].iter().find(applies) {
        let known = match next {
            Goal::Size => format!(
                "size {} bytes, lower bound {} bytes",
                c.size, solved.lower_bound
            ),
            Goal::PathLines => format!(
                "hot-path lines {}, lower bound {}",
                c.path_lines,
                solved.path_bounds.iter().sum::<u64>()
            ),
            Goal::Churn => format!(
                "members moved {}, lower bound {}",
                c.churn, solved.churn_bound
            ),
            other => describe(other),
        };
        if !(solved.optimal && *next == Goal::Movement) {
            t.push_str(&format!("; not proven optimal: {known}"));
        }
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
