//! `cachelayout propose`: solve, verify, and print the fix as a diff, a
//! table or JSON, with what it costs and what it proves.

use crate::exit::EXIT_OK;
use crate::input;
use crate::input_args::InputArgs;
use clap::{Args, ValueEnum};
use layout_core::emit::{self, CStyle, ChangelogNotes};
use layout_core::propose::{self, Proposal, ProposeOptions, Subject};
use layout_core::report::{LayoutView, ProposalView, ProposeJson, TreeSafetyJson};
use layout_core::solve::{self, Preset, Solution};
use layout_core::tree_safety::{self, Need, TreeScan};
use layout_core::{segments, Diagnostic, Placement};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ProposeArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[arg(long, value_enum, default_value_t = ProposeFormat::Diff)]
    pub format: ProposeFormat,
    /// A safety stop: the search is counted in work, not time, so the answer is the
    /// same on every machine; when this many seconds pass first, the best verified
    /// layout found is returned with its proven bound, and the summary says the answer
    /// may differ with a larger limit.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub time_limit: f64,
    /// What matters most, then next (the goals compare in order). Default: min-diff for a
    /// struct whose author laid out its lines (a CACHELINE_PADDING(), a line-aligned member,
    /// a cache-line group), saying what balanced would buy on top; balanced otherwise.
    #[arg(long, value_enum, value_name = "PRESET")]
    pub objective: Option<Preset>,
    /// Also keep lockless fields off the lines of locked fields (the soft cost), even when
    /// that costs bytes. Without it, the price of doing so is reported.
    #[arg(long)]
    pub separate_locked: bool,
    /// Write the output to this new file instead of stdout (refuses to overwrite).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Allow --output to overwrite an existing file.
    #[arg(long)]
    pub force: bool,
    /// How the diff spells a line break. Markers and attributes already in the header
    /// are reused or removed, never duplicated.
    #[arg(long, value_enum, default_value_t = CStyle::Aligned, value_name = "STYLE")]
    pub style: CStyle,
    /// Print a commit-message paragraph (what shared which line, the line tables before
    /// and after, the size change and its proof): before the diff, separated by `---` as
    /// `git am` reads it; after the table; as "changelog" in JSON.
    #[arg(long)]
    pub changelog: bool,
    /// Also report how the new size spreads to the structs that embed this one (from the
    /// same header, BTF or DWARF): on stderr with a diff, appended to a table, or as
    /// "growth" in JSON.
    #[arg(long)]
    pub growth: bool,
    /// Rebuild the cache-line groups: drop the author's groups and CACHELINE_PADDING()
    /// lines (members may then cross them) and, with --style groups, write new groups
    /// named from the classes and hot paths. The summary lists what was dissolved.
    #[arg(long)]
    pub regroup: bool,
    /// Let the first member leave offset 0 (by default it stays first: code casts the
    /// struct to it, like tcp_sk()).
    #[arg(long)]
    pub move_first: bool,
    /// Check the declared layout and the proposal in every configuration that changes the
    /// struct: the one read, and each CONFIG_ option of the struct's #if lines flipped
    /// (compiled again with the compiler front-end: --kbuild, --compile-commands or --cc).
    /// Size and hard conflicts per configuration go in the summary, the changelog and the
    /// JSON ("configurations").
    #[arg(long)]
    pub check_configs: bool,
    /// With --format patch: end the changelog with `Signed-off-by:` from git's
    /// user.name and user.email.
    #[arg(long)]
    pub signoff: bool,
    /// Before proposing, read the tree's code that uses the struct (C files,
    /// directories walked for their .c and .h files, or a compile_commands.json for the
    /// units it names; repeatable: --safety-scan net/ipv4 --safety-scan net/core/skbuff.c)
    /// and keep what depends on the member order:
    /// positional initializers keep their members first and in order, offset ranges
    /// keep theirs together, offsets asserted at build time stay (also through a macro
    /// the tree defines); an offset of one member is a name and needs nothing; a span
    /// over two members, a load wider than its member, include/uapi/ and __packed
    /// refuse a reorder at the site; __randomize_layout allows any order, with a note.
    #[arg(long = "safety-scan", value_name = "PATH")]
    pub safety_scan: Vec<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProposeFormat {
    Diff,
    Table,
    Json,
    /// A mail as `git format-patch` writes it (From, Subject, the changelog,
    /// the diffstat and the diff, paths relative to the tree root), for `git am`.
    Patch,
}

pub fn run(a: &ProposeArgs) -> Result<u8, Diagnostic> {
    let r = render(a)?;
    write_output(a, &r.out)?;
    eprint!("{}", r.summary);
    Ok(EXIT_OK)
}

/// What `propose` prints: the output, and the summary for stderr (with a
/// diff or a patch; empty otherwise).
pub struct Rendered {
    pub out: String,
    pub summary: String,
    /// The tree-safety pass's lines (what was read, found and kept), empty
    /// without `--safety-scan`.
    pub tree: String,
}

/// The proposal as `run` prints it, without printing it (for `audit --series`).
pub fn render(a: &ProposeArgs) -> Result<Rendered, Diagnostic> {
    if a.signoff && a.format != ProposeFormat::Patch {
        return Err(
            Diagnostic::new("--signoff signs a mail: it goes with --format patch")
                .help("add --format patch, or drop --signoff"),
        );
    }
    let loaded = input::load(&a.input)?;
    if let Some(d) = &loaded.type_defaults {
        eprintln!("{}", d.note());
    }
    let tree = tree_scan(a, &loaded)?;
    let subject = Subject {
        model: loaded.model,
        declared: loaded.declared,
        source: loaded.source,
    };
    let opts = ProposeOptions {
        objective: a.objective,
        regroup: a.regroup,
        move_first: a.move_first,
        separate_locked: a.separate_locked,
        time_limit: time_limit(a.time_limit)?,
        line: loaded.target.line,
        placement: loaded.placement,
        configuration: loaded.configuration.clone(),
        price_constraints: true,
        tree: tree.as_ref().map(|(scan, _)| scan.clone()),
    };
    let solved = propose::propose(subject, &opts).map_err(|e| {
        let d = e.diagnostic();
        match d.file {
            Some(_) => d,
            None => d.in_file(&loaded.origin),
        }
    })?;
    if let Some((scan, _)) = &tree {
        positional_style(scan, &solved, a.style)?;
    }
    let tree_text = tree
        .as_ref()
        .map(|(scan, _)| tree_text(scan, &solved))
        .unwrap_or_default();
    let s = &solved.subject.model;
    let before = &solved.subject.declared;
    let separated = solved.separated.as_ref();
    let dissolved = solved.dissolved.as_ref();
    let regroup_note = regroup_note(&solved.groups_kept_for);
    let view = ProposalView::new(s, before, &solved.layout);
    let containers: Vec<Option<&str>> = loaded.containers.iter().map(Option::as_deref).collect();
    let assertion = emit::phase_assertions(&containers, &solved.layout);
    let unpinned = emit::unpinned_offsets(&containers, &solved.layout);
    let placement_note = layout_core::containers::placement_note(
        loaded.embedders.as_deref(),
        &solved.layout.placement,
        solved.layout.line,
        &unpinned,
        true,
    );
    let configurations = if a.check_configs {
        // Without the header's text (none given, or its struct could not
        // be read from it: then that is the error) no configuration can be
        // compiled.
        let source = solved.subject.source.as_ref().ok_or_else(|| {
            loaded.source_error.clone().unwrap_or_else(|| {
                Diagnostic::new("--check-configs needs the header's text").help("give the header")
            })
        })?;
        let diff = if solved.moves_nothing() {
            String::new()
        } else {
            tree_diff(
                loaded.macro_names.as_deref(),
                source,
                &solved.layout,
                a.style,
                None,
            )?
            .diff
        };
        Some(crate::configs::check(
            &a.input,
            s,
            before,
            &solved.layout,
            source,
            &diff,
        )?)
    } else {
        None
    };
    let configs_text = configurations
        .as_deref()
        .map(layout_core::configs::report)
        .unwrap_or_default();
    // The diff first: the summary and the changelog name what it adds
    // and removes besides moving members. A diff or a mail must have it; a
    // table or JSON names its changes when the header can take it.
    let writes_diff = matches!(a.format, ProposeFormat::Diff | ProposeFormat::Patch);
    let source = solved.subject.source.as_ref();
    let header = a
        .input
        .header
        .as_deref()
        .or(source.map(|src| src.path.as_path()));
    let kbuild = a.input.probe.kbuild.as_deref();
    let mail_path = match (a.format, header) {
        (ProposeFormat::Patch, Some(h)) if !solved.moves_nothing() => {
            Some(crate::mail::tree_path(h, kbuild)?)
        }
        _ => None,
    };
    let diff = match source {
        Some(source) if !solved.moves_nothing() => {
            let shown = match &mail_path {
                Some(p) => Some(p.clone()),
                None => header.and_then(|h| crate::mail::shown_path(h, kbuild).ok()),
            };
            let d = tree_diff(
                loaded.macro_names.as_deref(),
                source,
                &solved.layout,
                a.style,
                shown.as_deref(),
            );
            if writes_diff {
                Some(d?)
            } else {
                d.ok()
            }
        }
        _ => None,
    };
    let markup: &[emit::MarkupChange] = diff.as_ref().map_or(&[], |d| d.changes.as_slice());
    let changelog = (a.changelog || a.format == ProposeFormat::Patch).then(|| {
        let notes = ChangelogNotes {
            lower_bound: solved.lower_bound,
            // The changelog speaks of size only: proven when it meets the bound
            // (under hot-lines or min-diff an optimal layout may be larger).
            optimal: solved.layout.size <= solved.lower_bound,
            separated_size: separated.map(|alt| alt.layout.size),
            phase_assertion: assertion.clone(),
            kept: solved.constraints.iter().map(|c| c.text()).collect(),
            prices: solved
                .constraints
                .iter()
                .filter_map(|c| c.price_text())
                .collect(),
            markup: markup.to_vec(),
            notes: solved.notes.clone(),
        };
        let mut text = emit::changelog_of(&view, &notes);
        if !configs_text.is_empty() {
            text.push('\n');
            text.push_str(&configs_text);
        }
        text
    });
    let growth = if a.growth {
        Some(crate::growth::for_proposal(&a.input, s, &solved.layout)?)
    } else {
        None
    };
    let mut out = String::new();
    let mut check_function = String::new();
    match a.format {
        ProposeFormat::Diff => {
            if source.is_none() {
                return Err(loaded.source_error.clone().unwrap_or_else(|| {
                    Diagnostic::new("a diff needs the C header that defines the struct").help(
                        "pass the header as well as --btf/--dwarf, or use --format table or json",
                    )
                }));
            }
            if let Some(text) = &changelog {
                // A commit message, then the patch: what `git am` and `patch -p1` both read.
                let _ = write!(out, "{text}\n---\n");
            }
            if let Some(d) = &diff {
                out.push_str(&d.diff);
                check_function = check_function_note(&s.name, a.style, d.check_function.clone());
            }
        }
        ProposeFormat::Patch => {
            if source.is_none() {
                return Err(loaded.source_error.clone().unwrap_or_else(|| {
                    Diagnostic::new("a patch needs the C header that defines the struct")
                        .help("pass the header as well as --btf/--dwarf")
                }));
            }
            if let (Some(d), Some(path), Some(header)) = (&diff, &mail_path, header) {
                check_function = check_function_note(&s.name, a.style, d.check_function.clone());
                let dir = std::fs::canonicalize(header)
                    .ok()
                    .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
                    .unwrap_or_else(|| std::path::PathBuf::from("."));
                let author = crate::mail::author(&dir)?;
                let subject = format!(
                    "{}: reorder struct {} {}",
                    emit::subsystem(path),
                    s.name,
                    subject_purpose(&view)
                );
                out = emit::patch_mail(&emit::Mail {
                    author: &author,
                    subject: &subject,
                    body: changelog.as_deref().unwrap_or(""),
                    signoff: a.signoff,
                    path,
                    diff: &d.diff,
                });
            }
        }
        ProposeFormat::Table => {
            let lines = view.before.conflict_lines();
            let _ = writeln!(out, "Before:\n{}", view.before.table());
            if !lines.is_empty() {
                let _ = writeln!(out, "{}", view.before.diagram(&lines));
            }
            let _ = writeln!(out, "After:\n{}", view.after.table());
            if !lines.is_empty() {
                let _ = writeln!(out, "{}", view.after.diagram(&lines));
            }
            out.push_str(&summary(&view, &solved, assertion.as_deref(), markup));
            out.push_str(&tree_text);
            out.push_str(&configs_text);
            out.push_str(&dissolved_note(dissolved));
            out.push_str(&regroup_note);
            out.push_str(&placement_note);
            if let Some(text) = &changelog {
                let _ = write!(out, "\nChangelog:\n{text}");
            }
            if let Some(g) = &growth {
                let _ = write!(out, "\nGrowth:\n{}", g.text());
            }
        }
        ProposeFormat::Json => {
            let sol = solved.solution.as_ref();
            out = ProposeJson {
                before: view.before.json(),
                after: view.after.json(),
                objective: solved.objective.name().to_string(),
                nothing_to_do: solved.nothing_to_do,
                optimal: solved.optimal,
                proven: sol.map(|sol| {
                    sol.goals[..sol.proven_goals]
                        .iter()
                        .filter(|g| **g != layout_core::solve::Goal::Movement)
                        .map(|g| g.name())
                        .collect()
                }),
                lower_bound: solved.lower_bound,
                size_proven_minimal: solved.layout.size == solved.lower_bound,
                cost: sol.map(|sol| sol.cost),
                churn_bound: sol.map_or(0, |sol| sol.churn_bound),
                solve_ms: solved.solve_ms,
                stopped_by_time: solved.stopped_by_time(),
                phase_assertion: assertion.clone(),
                dissolved_groups: dissolved.map(|d| d.groups.clone()),
                dissolved_paddings: dissolved.map(|d| d.paddings.clone()),
                dissolved_line_aligned: dissolved.map(|d| d.line_aligned.clone()),
                separated_locked_size: separated.map(|alt| alt.layout.size),
                balanced_size: solved.smaller.as_ref().map(|alt| alt.layout.size),
                constraints: solved.constraints.clone(),
                configurations: configurations.clone(),
                balanced_moved: solved.smaller.as_ref().map(|alt| alt.cost.churn),
                markup: diff.as_ref().map(|d| d.changes.clone()),
                diff: diff.as_ref().map(|d| d.diff.clone()),
                changelog: changelog.clone(),
                growth: growth.clone(),
                notes: solved.notes.clone(),
                tree_safety: tree.as_ref().map(|(scan, ms)| TreeSafetyJson {
                    scan: scan.clone(),
                    constraints_added: solved.tree_constraints.clone(),
                    scan_ms: *ms,
                }),
            }
            .to_pretty();
        }
    }
    let mut stderr = String::new();
    if matches!(a.format, ProposeFormat::Diff | ProposeFormat::Patch) {
        let _ = write!(
            stderr,
            "{}{}",
            summary(&view, &solved, assertion.as_deref(), markup) + &tree_text + &configs_text,
            dissolved_note(dissolved) + &regroup_note + &placement_note
        );
        if let Some(g) = &growth {
            let _ = write!(stderr, "\nGrowth:\n{}", g.text());
        }
        stderr.push_str(&check_function);
    }
    Ok(Rendered {
        out,
        summary: stderr,
        tree: tree_text,
    })
}

/// `--safety-scan`: the tree's sites for the struct (and the scan's
/// milliseconds, for the JSON), or `None` when no path is given.
fn tree_scan(
    a: &ProposeArgs,
    loaded: &crate::input::Loaded,
) -> Result<Option<(TreeScan, u64)>, Diagnostic> {
    if a.safety_scan.is_empty() {
        return Ok(None);
    }
    let started = std::time::Instant::now();
    let members = tree_safety::Members::new(&loaded.model, &loaded.declared, &loaded.names);
    let scan = tree_safety::scan(
        &a.safety_scan,
        &loaded.model.name,
        loaded.source.as_ref(),
        &members,
    )?;
    Ok(Some((scan, started.elapsed().as_millis() as u64)))
}

/// `--style padding` and `--style groups` write members (a
/// `CACHELINE_PADDING()`, group markers) where lines break, and a member
/// added takes a value of a positional initializer: with one found, a
/// proposal that moves members is written only with `--style aligned`
/// (attributes, which take none).
fn positional_style(
    scan: &TreeScan,
    solved: &Proposal,
    style: emit::CStyle,
) -> Result<(), Diagnostic> {
    if style == emit::CStyle::Aligned || solved.moves_nothing() {
        return Ok(());
    }
    let positional = scan.sites.iter().find(|site| {
        matches!(site.need, Need::First(_) | Need::Run(_))
            && layout_core::propose::constraints::Kept::of_site(site.kind)
                == layout_core::propose::constraints::Kept::PositionalInitializer
    });
    match positional {
        None => Ok(()),
        Some(site) => Err(Diagnostic::new(format!(
            "struct {}: this {} sets members by position, and --style {} adds members where lines \
             break, which would take its values",
            solved.subject.model.name,
            site.kind.words(),
            if style == emit::CStyle::Padding { "padding" } else { "groups" }
        ))
        .in_file(&site.file)
        .at(site.line, site.column)
        .help("use --style aligned (attributes add no member), or designate the initializer's members")),
    }
}

/// The summary's lines of the tree-safety pass: what was read and found,
/// and the sites the model keeps already (the constraints added are in
/// the constraints' lines, with their prices).
fn tree_text(scan: &TreeScan, solved: &Proposal) -> String {
    let mut t = scan.text(&solved.subject.model.name, solved.tree_constraints.len());
    if let Some(line) = solved
        .tree_price
        .as_ref()
        .and_then(tree_safety::apply::together_text)
    {
        t.push_str(&line);
        t.push('\n');
    }
    for site in &scan.sites {
        let by = match &site.need {
            Need::KeptBy(by) => by.clone(),
            Need::Group { group } => format!("cache-line group {group}'s markers"),
            Need::GroupSize {
                group,
                bytes: Some(b),
            } => {
                format!("cache-line group {group} within {b} bytes (checked)")
            }
            Need::GroupSize { group, bytes: None } => {
                format!("cache-line group {group} not grown (checked)")
            }
            Need::Size => "the size unchanged (checked)".into(),
            _ => continue,
        };
        let _ = writeln!(
            t,
            "kept by {by}: {} at {}: +0 bytes",
            site.kind.words(),
            site.at()
        );
    }
    t
}

/// The diff of `layout`, spelled with the idioms the translation unit
/// defines: the probe's macros (`macros`), else the header's own text.
fn tree_diff(
    macros: Option<&[String]>,
    source: &layout_core::source::StructSource,
    layout: &layout_core::VerifiedLayout,
    style: emit::CStyle,
    shown_path: Option<&str>,
) -> Result<emit::CDiff, Diagnostic> {
    let idioms = match macros {
        Some(names) => emit::TreeIdioms::of_macros(names),
        None => emit::TreeIdioms::of_header(&source.path, &source.text),
    };
    emit::c_diff_in(source, layout, style, &idioms, shown_path)
}

/// What a subject line says the reorder is for: fewer lines on the hot
/// paths, or no lockless write on a read-mostly line.
fn subject_purpose(view: &ProposalView) -> &'static str {
    let fewer = view
        .before
        .paths
        .iter()
        .zip(&view.after.paths)
        .any(|(o, n)| n.lines < o.lines);
    if fewer {
        "for fewer hot-path cache lines"
    } else if view.after.conflicts.len() < view.before.conflicts.len() {
        "to keep lockless writes off read-mostly lines"
    } else {
        "for fewer cache lines"
    }
}

/// The `Groups` style's check function, printed apart from the diff: it
/// belongs in the `.c` file that uses the struct, as the kernel keeps them.
fn check_function_note(name: &str, style: emit::CStyle, function: Option<String>) -> String {
    match function {
        Some(f) => format!(
            "\nthe check function, for the .c file that uses struct {name} (as \
             net_dev_struct_check() lives in net/core/dev.c):\n{f}"
        ),
        None if style == emit::CStyle::Groups => format!(
            "no check function for struct {name}: the tree has no CACHELINE_ASSERT_GROUP_MEMBER\n"
        ),
        None => String::new(),
    }
}

/// The summary line that says why `--regroup` kept the author's groups.
fn regroup_note(worse: &[String]) -> String {
    if worse.is_empty() {
        return String::new();
    }
    format!(
        "--regroup: dissolving the author's groups would make {} touch more lines than declared; the groups are kept\n",
        worse.join(", ")
    )
}

/// The summary line that says which of the author's groups `--regroup`
/// dissolved.
fn dissolved_note(d: Option<&segments::Dissolved>) -> String {
    let Some(d) = d else {
        return String::new();
    };
    let parts = dissolved_parts(d);
    if parts.is_empty() {
        return "--regroup: the struct had no cache-line groups, paddings or line-aligned \
                members to dissolve\n"
            .into();
    }
    format!(
        "--regroup dissolved the author's {}; members may cross them\n",
        parts.join(" and ")
    )
}

/// Each kind of line break `--regroup` dissolved, with its names: the
/// groups, the `CACHELINE_PADDING()`s and the line-aligned members (whose
/// line breaks go, the members stay).
fn dissolved_parts(d: &segments::Dissolved) -> Vec<String> {
    let mut parts = Vec::new();
    if !d.groups.is_empty() {
        parts.push(format!("groups {}", d.groups.join(", ")));
    }
    if !d.paddings.is_empty() {
        parts.push(format!("CACHELINE_PADDING() {}", d.paddings.join(", ")));
    }
    if !d.line_aligned.is_empty() {
        let n = d.line_aligned.len();
        let s = if n == 1 { "" } else { "s" };
        parts.push(format!(
            "line break{s} of {n} line-aligned member{s} ({})",
            d.line_aligned
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    parts
}

/// The few lines a reviewer wants: sizes, conflicts, what the change buys
/// and costs, lines per hot path, what was proven, price, assertion.
fn summary(
    view: &ProposalView,
    solved: &Proposal,
    assertion: Option<&str>,
    markup: &[emit::MarkupChange],
) -> String {
    let separated = solved.separated.as_ref();
    let (s, before) = (view.before.strukt, view.before.layout);
    let after = &solved.layout;
    let n_before = view.before.conflicts.len();
    let n_after = view.after.conflicts.len();
    let mut t = String::new();
    let delta = after.size as i64 - before.size as i64;
    let where_ = match after.placement {
        Placement::Aligned => "at every placement".to_string(),
        _ => format!("at {}", after.offsets_with_phases().join(" and ")),
    };
    let _ = writeln!(
        t,
        "struct {}: {} -> {} bytes ({delta:+}), align {} -> {}; hard conflicts {n_before} -> {n_after} {where_}",
        s.name, before.size, after.size, before.align, after.align
    );
    if solved.nothing_to_do {
        let _ = writeln!(
            t,
            "nothing to do: the layout as declared keeps the rule, and --objective min-diff moves no member"
        );
    } else if solved.moves_nothing() {
        let _ = writeln!(
            t,
            "the layout as declared is already the best: nothing to change"
        );
    } else {
        t.push_str(&trade(&view.before, &view.after, markup));
        for c in markup {
            let _ = writeln!(t, "the diff {}", c.sentence());
        }
    }
    t.push_str(&LayoutView::paths_text(&view.before, Some(&view.after)));
    if solved.nothing_to_do {
        let _ = writeln!(
            t,
            "proven optimal under --objective min-diff: 0 members moved is the fewest possible"
        );
    } else if let Some(sol) = &solved.solution {
        let _ = writeln!(t, "{}", proof_line(sol));
    }
    if solved.stopped_by_time() {
        let _ = writeln!(
            t,
            "the time limit stopped the search: the answer may differ with a larger --time-limit"
        );
    }
    t.push_str(&constraints_text(&solved.constraints));
    if let Some(alt) = &solved.smaller {
        let _ = writeln!(
            t,
            "the author laid out this struct's lines, so the default is the smallest change (--objective min-diff); \
--objective balanced gives {} bytes ({:+}) with {} members moved",
            alt.layout.size,
            alt.layout.size as i64 - after.size as i64,
            alt.cost.churn
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
        let _ = writeln!(
            t,
            "the layout relies on the struct's phase; pin it:\n  {}",
            a.replace('\n', "\n  ")
        );
    }
    for (g, was, now) in segments::grown_groups(s, &view.before.offsets, &view.after.offsets) {
        let _ = writeln!(
            t,
            "cache-line group {g} grows from {was} to {now} bytes: check its CACHELINE_ASSERT_GROUP_SIZE"
        );
    }
    for n in &solved.notes {
        let _ = writeln!(t, "note: {n}");
    }
    t
}

/// The constraints the proof holds under, and what each costs.
fn constraints_text(kept: &[propose::constraints::Constraint]) -> String {
    if kept.is_empty() {
        return String::new();
    }
    let mut t = format!(
        "proven under the constraints kept: {}\n",
        kept.iter().map(|c| c.text()).collect::<Vec<_>>().join("; ")
    );
    for c in kept {
        if let Some(p) = c.price_text() {
            t.push_str(&p);
            t.push('\n');
        }
    }
    t
}

/// What the change buys and what it costs, so a reviewer can weigh it:
/// bytes, hard conflicts, lines per hot path, read-mostly lines, soft cost,
/// members moved.
fn trade(old: &LayoutView, new: &LayoutView, markup: &[emit::MarkupChange]) -> String {
    let (s, before, after) = (old.strukt, old.layout, new.layout);
    let mut buys: Vec<String> = Vec::new();
    let mut costs: Vec<String> = Vec::new();
    let mut weigh = |what: String, old: u64, new: u64| match new.cmp(&old) {
        std::cmp::Ordering::Less => buys.push(what),
        std::cmp::Ordering::Greater => costs.push(what),
        std::cmp::Ordering::Equal => {}
    };
    weigh(
        format!("{:+} bytes", after.size as i64 - before.size as i64),
        before.size,
        after.size,
    );
    let (c0, c1) = (old.conflicts.len() as u64, new.conflicts.len() as u64);
    weigh(format!("hard conflicts {c0} -> {c1}"), c0, c1);
    for (o, n) in old.paths.iter().zip(&new.paths) {
        weigh(
            format!("{} {} -> {} lines", o.name, o.lines, n.lines),
            o.lines,
            n.lines,
        );
    }
    let (r0, r1) = (old.read_lines, new.read_lines);
    weigh(format!("read-mostly lines {r0} -> {r1}"), r0, r1);
    let (s0, s1) = (old.soft_cost(), new.soft_cost());
    weigh(format!("soft cost {s0} -> {s1}"), s0, s1);
    let moved = new.churn;
    costs.push(format!("{moved} of {} members moved", s.fields.len()));
    let (added, removed) = (
        markup.iter().filter(|c| c.added).count(),
        markup.iter().filter(|c| !c.added).count(),
    );
    let things = |n: usize| {
        if n == 1 {
            "1 attribute, padding or marker".to_string()
        } else {
            format!("{n} attributes, paddings or markers")
        }
    };
    if added > 0 {
        costs.push(format!("{} added", things(added)));
    }
    if removed > 0 {
        costs.push(format!("{} removed", things(removed)));
    }
    let buys = if buys.is_empty() {
        "nothing measured (size, conflicts, hot-path lines, read-mostly lines and soft cost are unchanged or worse)"
            .to_string()
    } else {
        buys.join(", ")
    };
    format!("the change buys: {buys}; it costs: {}\n", costs.join(", "))
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
    // Goals that do not apply (no hot paths named) are left out, and pairs
    // swapped, only minimised by local search, is never claimed.
    let applies = |g: &&Goal| {
        **g != Goal::Movement && (**g != Goal::PathLines || !solved.path_bounds.is_empty())
    };
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
        None => crate::output::print_stdout(text),
        Some(path) => {
            // Every file the run read: the command line's, and those the
            // compiler front-end read (the database, .config, the headers
            // the probe included).
            let read = layout_core::files::inputs();
            let named = [
                &a.input.header,
                &a.input.access,
                &a.input.config,
                &a.input.btf,
                &a.input.dwarf,
                &a.input.probe.compile_commands,
            ];
            let inputs: Vec<&std::path::Path> = named
                .into_iter()
                .flatten()
                .map(|p| p.as_path())
                .chain(read.iter().map(|p| p.as_path()))
                .collect();
            crate::output::write_new(path, text.as_bytes(), &inputs, a.force)
        }
    }
}
