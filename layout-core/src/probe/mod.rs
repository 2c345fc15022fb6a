//! The compiler front-end: the exact layout of every type a header reaches,
//! under the real configuration, from the DWARF of a probe translation unit
//! that includes it, compiled with the project's own flags:
//!
//! - `--kbuild DIR`: a configured kernel tree; the flags are Kbuild's
//!   ([`kbuild`]);
//! - `--compile-commands FILE`: a translation unit's flags from a
//!   compilation database ([`compile_commands`]);
//! - `--cc 'CMD ...'`: the compiler and its flags, for any other C project
//!   (with the two above, only the compiler and extra flags).
//!
//! Probes are cached ([`cache`]) unless `--no-probe-cache` is given.

mod batch;
pub(crate) mod cache;
mod compile;
mod compile_commands;
mod conditions;
mod definitions;
mod embedders;
pub(crate) mod hash;
mod kbuild;
mod prelude;
mod trust;
mod words;

pub use batch::probe_tree;
pub use compile::Toolchain;
pub use embedders::run_with_embedders;
pub use kbuild::KbuildTree;

use crate::c::Defines;
use crate::typedb::TypeDb;
use crate::Diagnostic;
use std::path::{Path, PathBuf};

/// Which compiler front-end to use, and how (the command line's
/// `--kbuild`, `--compile-commands`, `--cc`, `--no-probe-cache`).
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ProbeArgs {
    /// Take the layout from the compiler: compile a probe that includes the header with
    /// the flags of this configured kernel tree (a build directory, or
    /// /usr/src/linux-headers-$(uname -r)) and read its DWARF. The header's text is used
    /// for the diff only, and its .config for the header's #if blocks.
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR"))]
    pub kbuild: Option<PathBuf>,
    /// Take the layout from the compiler with the flags of a compile_commands.json entry
    /// (the translation unit that includes the header, or the closest one). The database is
    /// untrusted: only a compiler's name runs (from PATH), flags that run programs are
    /// refused, and response files are read only inside the project.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "FILE", conflicts_with = "kbuild")
    )]
    pub compile_commands: Option<PathBuf>,
    /// The compiler and its flags, e.g. --cc 'gcc -Iinclude -DNDEBUG' (any C project); with
    /// --kbuild or --compile-commands, the compiler to use instead (e.g. --cc clang).
    #[cfg_attr(feature = "clap", arg(long, value_name = "'CMD ...'"))]
    pub cc: Option<String>,
    /// Compile the probe again even when the probe cache holds it, and do not store it.
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_probe_cache: bool,
    /// Configuration options to set (`true`) or unset (`false`) before the
    /// header, for the layout in another configuration (`--check-configs`).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub flip: Vec<(String, bool)>,
}

impl ProbeArgs {
    /// Whether a compiler front-end was asked for.
    pub fn is_set(&self) -> bool {
        self.kbuild.is_some() || self.compile_commands.is_some() || self.cc.is_some()
    }
}

/// A compiled probe: every struct and union the headers reach, the
/// integer macros they define, and the tree's `.config` for the header text.
pub struct Probe {
    pub db: TypeDb,
    pub macros: Vec<(String, i64)>,
    /// The macros defined as nothing (`#define SPLIT_RSS_COUNTING`).
    flags: Vec<String>,
    /// The name of every macro the compiler saw, function-like ones too:
    /// which idioms a diff may write.
    pub macro_names: Vec<String>,
    pub config: Option<PathBuf>,
    /// How it was compiled: the toolchain and the probed headers (absolute,
    /// the prelude's first).
    toolchain: Option<Toolchain>,
    probed: Vec<PathBuf>,
    /// The headers included before the header, when it does not compile alone.
    pub prelude: prelude::Prelude,
}

impl Probe {
    /// Defines for reading the text of `header`: the `.config`'s options,
    /// then the integer macros the compiler saw, except those the header
    /// defines itself (its own `#define`s are read where they are).
    pub fn defines(&self, header: &Path) -> Result<Defines, Diagnostic> {
        let mut d = match &self.config {
            Some(c) => crate::c::load_kernel_config(c)?,
            None => Defines::default(),
        };
        let text = crate::files::text(header, crate::files::Input::Header).unwrap_or_default();
        let own: std::collections::HashSet<&str> = text
            .lines()
            .filter_map(|l| {
                let rest = l.trim_start().strip_prefix('#')?.trim_start();
                let rest = rest.strip_prefix("define")?;
                rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .find(|w| !w.is_empty())
            })
            .collect();
        for (name, value) in &self.macros {
            if !own.contains(name.as_str()) {
                d.insert(name.clone(), *value);
            }
        }
        // A flag the header tests (`#ifdef SPLIT_RSS_COUNTING`) is defined;
        // others (`__rcu`, empty attribute macros) are no constants.
        let tested = conditional_names(&text);
        for name in &self.flags {
            if tested.contains(name.as_str()) && !own.contains(name.as_str()) {
                d.insert(name.clone(), 1);
            }
        }
        Ok(d)
    }

    /// Why struct `name` of `header` (as the user named it) is not in the
    /// probe, when its definition is in an `#if` this configuration leaves
    /// out; `None` otherwise.
    pub fn missing_struct(&self, header: &Path, name: &str) -> Option<Diagnostic> {
        let tc = self.toolchain.as_ref()?;
        let absolute = header.canonicalize().ok()?;
        conditions::explain_missing(
            tc,
            &self.probed,
            &absolute,
            header,
            name,
            self.config.as_deref(),
        )
    }
}

/// The toolchain and, for a kernel tree, its `.config`; with
/// [`ProbeArgs::flip`], the probe sets those options before the header.
pub fn toolchain(
    args: &ProbeArgs,
    header: &Path,
) -> Result<(Toolchain, Option<PathBuf>), Diagnostic> {
    let (mut tc, config) = toolchain_of(args, header)?;
    tc.prologue = flip_prologue(&args.flip)?;
    Ok((tc, config))
}

/// `#undef NAME` (off) or `#define NAME 1` (on) for each option to flip,
/// after the compiler's forced includes (a kernel's `autoconf.h`) and before
/// the header. Only identifiers are taken.
fn flip_prologue(flip: &[(String, bool)]) -> Result<String, Diagnostic> {
    let mut out = String::new();
    for (name, on) in flip {
        let ident = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident {
            return Err(
                Diagnostic::new(format!("`{name}` is not a configuration option's name"))
                    .help("name an option such as CONFIG_NUMA"),
            );
        }
        if *on {
            out.push_str(&format!("#undef {name}\n#define {name} 1\n"));
        } else {
            out.push_str(&format!("#undef {name}\n"));
        }
    }
    Ok(out)
}

fn toolchain_of(
    args: &ProbeArgs,
    header: &Path,
) -> Result<(Toolchain, Option<PathBuf>), Diagnostic> {
    let cc_words = match &args.cc {
        Some(cmd) => {
            let w = words::split(cmd).ok_or_else(|| {
                Diagnostic::new(format!("--cc '{cmd}': a quote is not closed"))
                    .help("write --cc 'gcc -Iinclude -DX=1'")
            })?;
            if w.is_empty() {
                return Err(Diagnostic::new("--cc is empty").help("write --cc 'gcc -Iinclude'"));
            }
            Some(w)
        }
        None => None,
    };
    if let Some(dir) = &args.kbuild {
        let tree = KbuildTree::locate(dir)?;
        let compiler = cc_words.unwrap_or_else(|| vec!["gcc".into()]);
        let mut tc = Toolchain {
            compiler,
            flags: Vec::new(),
            directory: tree.objtree.clone(),
            prologue: String::new(),
        };
        let own = tc.own_include_dir();
        tc.flags = tree.flags(own.as_deref());
        return Ok((tc, Some(tree.config)));
    }
    if let Some(db) = &args.compile_commands {
        let e = compile_commands::flags_for(db, header)?;
        if cc_words.is_none() && e.named != e.compiler {
            eprintln!(
                "note: running `{}` from PATH, not `{}` as the compilation database says (choose the compiler with --cc)",
                e.compiler, e.named
            );
        }
        let compiler = cc_words.unwrap_or_else(|| vec![e.compiler.clone()]);
        return Ok((
            Toolchain {
                compiler,
                flags: e.flags,
                directory: e.directory,
                prologue: String::new(),
            },
            None,
        ));
    }
    let words = cc_words.ok_or_else(|| {
        Diagnostic::new("no compiler front-end")
            .help("pass --kbuild DIR, --compile-commands FILE or --cc 'CMD'")
    })?;
    let directory = std::env::current_dir()
        .map_err(|e| Diagnostic::new(format!("cannot read the current directory: {e}")))?;
    Ok((
        Toolchain {
            compiler: words,
            flags: Vec::new(),
            directory,
            prologue: String::new(),
        },
        None,
    ))
}

/// Compiles (or finds in the cache) one probe of `headers` and reads it.
pub fn run(args: &ProbeArgs, headers: &[PathBuf]) -> Result<Probe, Diagnostic> {
    let first = headers.first().ok_or_else(|| {
        Diagnostic::new("the compiler front-end needs the header")
            .help("give the header that defines the struct")
    })?;
    let (tc, config) = toolchain(args, first)?;
    let name_as_given = |mut d: Diagnostic| {
        // Name a probed header as the user did.
        if let Some(file) = &d.file {
            if let Some(h) = headers
                .iter()
                .find(|h| h.canonicalize().is_ok_and(|c| &c == file))
            {
                d.file = Some(h.clone());
            }
        }
        d
    };
    let canon = canonical(headers)?;
    let use_cache = !args.no_probe_cache;
    let (dir, prelude) = match object_dir(&tc, &canon, use_cache) {
        Ok(dir) => (dir, prelude::Prelude::default()),
        Err(f) => {
            // A kernel header the kernel only includes after others.
            let single = match canon.as_slice() {
                [h] if args.kbuild.is_some() && prelude::worth_a_prelude(&f) => h,
                _ => return Err(name_as_given(f.diagnostic)),
            };
            match prelude::retry(&tc, single, &f, use_cache) {
                Some((dir, p)) => {
                    let m = &f.diagnostic.message;
                    let why = m.split_once("failed: ").map_or(m.as_str(), |(_, w)| w);
                    eprintln!(
                        "note: {} does not compile alone ({why}); laid out after the prelude {}, as the kernel includes it after other headers",
                        first.display(),
                        p.list()
                    );
                    (dir, p)
                }
                None => return Err(name_as_given(f.diagnostic)),
            }
        }
    };
    let mut probe = match read_probe(&dir.path, config.clone()) {
        // A cached entry that went away while it was read: compile afresh.
        Err(_) if dir.cached && prelude.files.is_empty() => {
            let dir = object_dir(&tc, &canon, false).map_err(|f| name_as_given(f.diagnostic))?;
            read_probe(&dir.path, config)?
        }
        read => read?,
    };
    let mut probed = prelude.files.clone();
    probed.extend(canon);
    probe.toolchain = Some(tc);
    probe.probed = probed;
    probe.prelude = prelude;
    Ok(probe)
}

/// Absolute paths of the headers (the probe includes them from elsewhere).
fn canonical(headers: &[PathBuf]) -> Result<Vec<PathBuf>, Diagnostic> {
    headers
        .iter()
        .map(|h| {
            h.canonicalize().map_err(|e| {
                Diagnostic::new(format!("cannot read header: {e}"))
                    .in_file(h)
                    .help("check the path")
            })
        })
        .collect()
}

/// A directory that holds a compiled probe: a cache entry, or a temporary
/// directory removed when this is dropped.
pub struct ProbeDir {
    pub path: PathBuf,
    pub cached: bool,
    _work: Option<cache::WorkDir>,
}

/// The probe cache's directory, when it is to be used and can be trusted
/// (a warning says why not, once, when it cannot).
fn cache_root(use_cache: bool) -> Option<PathBuf> {
    let root = cache::default_root().filter(|_| use_cache)?;
    match cache::open_root(&root) {
        Ok(()) => {
            static SWEPT: std::sync::Once = std::sync::Once::new();
            SWEPT.call_once(|| cache::sweep(&root));
            Some(root)
        }
        Err(why) => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                eprintln!(
                    "warning: not using the probe cache {}: {why}; probes are compiled in a private temporary directory",
                    root.display()
                )
            });
            None
        }
    }
}

/// The compiled probe of `headers` (absolute paths): from the cache, or
/// compiled now (and stored, with `use_cache`).
pub fn object_dir(
    tc: &Toolchain,
    headers: &[PathBuf],
    use_cache: bool,
) -> Result<ProbeDir, compile::Failed> {
    cache::remove_work_dirs_on_signal();
    let root = cache_root(use_cache);
    let key = match &root {
        Some(_) => Some(cache::key(tc, &tc.identity()?, headers)?),
        None => None,
    };
    if let (Some(root), Some(key)) = (&root, &key) {
        match cache::lookup(root, key) {
            cache::Found::Compiled(path) => {
                return Ok(ProbeDir {
                    path,
                    cached: true,
                    _work: None,
                })
            }
            cache::Found::Failed(f) => return Err(f),
            cache::Found::Missing => {}
        }
    }
    let work = cache::WorkDir::new(root.as_deref())?;
    if let Err(f) = tc.compile(headers, &work.path) {
        if let (Some(root), Some(key)) = (&root, &key) {
            cache::store_failure(root, key, work, tc, headers, &f);
        }
        return Err(f);
    }
    if let (Some(root), Some(key)) = (&root, &key) {
        match cache::store(root, key, work, tc, headers) {
            Ok(path) => Ok(ProbeDir {
                path,
                cached: false,
                _work: None,
            }),
            // Not stored (another run holds a stale entry, or a file name
            // cannot be recorded): this run uses its own directory.
            Err(work) => Ok(ProbeDir {
                path: work.path.clone(),
                cached: false,
                _work: Some(work),
            }),
        }
    } else {
        note_dependencies(&work.path, tc);
        Ok(ProbeDir {
            path: work.path.clone(),
            cached: false,
            _work: Some(work),
        })
    }
}

/// Records the files a probe included as inputs of this run.
fn note_dependencies(dir: &Path, tc: &Toolchain) {
    if let Ok(deps) = std::fs::read_to_string(dir.join(compile::DEPS)) {
        for d in compile::dependencies(&deps) {
            crate::files::note_input(&tc.directory.join(d));
        }
    }
}

/// The names `text`'s conditionals test for being defined: `#ifdef X`,
/// `#ifndef X`, `defined(X)`, `defined X` on `#if` and `#elif` lines.
fn conditional_names(text: &str) -> std::collections::HashSet<&str> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = std::collections::HashSet::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let rest = rest.trim_start();
        let first = |r: &'static str| rest.strip_prefix(r);
        if let Some(r) = first("ifdef").or_else(|| first("ifndef")) {
            let name = r
                .trim_start()
                .split(|c: char| !ident(c))
                .next()
                .unwrap_or("");
            if !name.is_empty() {
                out.insert(name);
            }
            continue;
        }
        if !(rest.starts_with("if") || rest.starts_with("elif")) {
            continue;
        }
        for (at, _) in rest.match_indices("defined") {
            let r = rest[at + "defined".len()..].trim_start();
            let r = r.strip_prefix('(').unwrap_or(r).trim_start();
            let name = r.split(|c: char| !ident(c)).next().unwrap_or("");
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

/// The text of a file the front-end reads on its own (a header, `.config`):
/// a regular file, within the text limit, recorded as an input of the run.
fn read_text(path: &Path) -> Option<String> {
    let bytes = crate::source::bounded::read(path, crate::source::bounded::TEXT_LIMIT).ok()?;
    crate::files::note_input(path);
    String::from_utf8(bytes).ok()
}

fn read_probe(dir: &Path, config: Option<PathBuf>) -> Result<Probe, Diagnostic> {
    let db = crate::dwarf::load_dwarf(&dir.join(compile::OBJECT))?;
    let macros = std::fs::read_to_string(dir.join(compile::MACROS))
        .map_err(|e| Diagnostic::new(format!("cannot read the probe's macros: {e}")))?;
    Ok(Probe {
        db,
        macros: compile::integer_macros(&macros),
        flags: compile::flag_macros(&macros),
        macro_names: compile::macro_names(&macros),
        config,
        toolchain: None,
        probed: Vec::new(),
        prelude: prelude::Prelude::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::conditional_names;

    #[test]
    fn the_names_a_header_tests_for_being_defined() {
        let text = "#ifdef SPLIT_RSS_COUNTING\n# ifndef B\n#if defined(C) && defined D\n\
                    #elif IS_ENABLED(CONFIG_E) || defined (F)\nint defined_G;\n#define H\n";
        let mut names: Vec<&str> = conditional_names(text).into_iter().collect();
        names.sort();
        assert_eq!(names, ["B", "C", "D", "F", "SPLIT_RSS_COUNTING"]);
    }
}
