//! What a compilation database may make cachelayout run.
//!
//! A `compile_commands.json` arrives with a cloned repository: it is input
//! data written by someone else, not a command the user typed. So:
//!
//! - the compiler it names runs only when it has a compiler's name (`gcc`,
//!   `cc`, `clang`, `x86_64-linux-gnu-gcc-12`, ... see [`compiler`]), and
//!   then the program of that name on the user's `PATH`, never a path the
//!   database gives (`./evil.sh`, `tools/gcc`); `--cc` names any other;
//! - flags that run a program or load code into the compiler (`-wrapper`,
//!   `-fplugin=`, `-B`, `-specs=`, `-Xclang`, `--config`, ...) are refused
//!   with an error that names them, whichever compiler runs;
//! - flags that write files or do not compile to an object (`-fdump-*`,
//!   `-save-temps`, `-MJ`, `-gsplit-dwarf`, `-###`, ...) and words that are
//!   not flags (other source files) are dropped;
//! - a response file (`@FILE`) is read by cachelayout itself, within the
//!   project (the database's directory or the entry's), and its words go
//!   through the same rules: the compiler never sees an `@`.

use super::words;
use crate::source::bounded;
use std::path::{Path, PathBuf};

/// Programs that run the compiler named after them (`ccache gcc -c ...`).
const LAUNCHERS: [&str; 4] = ["ccache", "sccache", "distcc", "icecc"];

/// The names of C compiler drivers, after an optional target prefix
/// (`aarch64-linux-gnu-`) and before an optional version (`-12`, `-14.0`).
const DRIVERS: [&str; 8] = ["gcc", "cc", "clang", "c89", "c99", "g++", "c++", "clang++"];

/// Whether `name` (a file name, no directory) is a compiler driver's name.
pub fn is_compiler_name(name: &str) -> bool {
    let without_version = match name.rsplit_once('-') {
        Some((stem, v))
            if !v.is_empty()
                && v.chars().all(|c| c.is_ascii_digit() || c == '.')
                && v.starts_with(|c: char| c.is_ascii_digit()) =>
        {
            stem
        }
        _ => name,
    };
    DRIVERS.iter().any(|d| {
        without_version.strip_suffix(d).is_some_and(|prefix| {
            prefix.is_empty()
                || prefix.ends_with('-')
                    && prefix.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && prefix
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        })
    })
}

/// The compiler a database entry names, as the program cachelayout will
/// run: its file name (looked up on `PATH`), after any launcher. `argv` is
/// the entry's command; returns the compiler and the index of its first
/// flag. A name that is not a compiler's is refused: the help says to
/// choose one with `--cc`.
pub fn compiler(argv: &[String]) -> Result<(String, usize), String> {
    let mut i = 0;
    while i + 1 < argv.len() && LAUNCHERS.contains(&file_name(&argv[i])) {
        i += 1;
    }
    let named = argv.get(i).ok_or("an empty command")?;
    let name = file_name(named);
    if !is_compiler_name(name) {
        return Err(format!(
            "the command names `{named}`, which is not a C compiler's name: a compilation database is not trusted to run programs"
        ));
    }
    Ok((name.to_string(), i + 1))
}

fn file_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// What happens to one flag of an untrusted command.
#[derive(Debug, PartialEq, Eq)]
enum Rule {
    /// Passed to the compiler, with this many words after it.
    Keep(usize),
    /// Left out, with this many words after it.
    Drop(usize),
    /// Not run at all: the flag runs a program or loads code.
    Refuse,
}

/// Flags whose value is the next word, and that are kept.
const KEPT_WITH_VALUE: [&str; 17] = [
    "-I",
    "-D",
    "-U",
    "-include",
    "-imacros",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-iprefix",
    "-iwithprefix",
    "-iwithprefixbefore",
    "-isysroot",
    "--sysroot",
    "-x",
    "-target",
    "--target",
    "-arch",
];

/// Flags whose value is the next word, and that are dropped with it
/// (outputs, dependency files, linking).
const DROPPED_WITH_VALUE: [&str; 14] = [
    "-o",
    "-MF",
    "-MT",
    "-MQ",
    "-MJ",
    "-aux-info",
    "-dumpdir",
    "-dumpbase",
    "-dumpbase-ext",
    "-L",
    "-l",
    "-T",
    "-u",
    "-z",
];

/// Flags (exact) that are dropped: they choose another output than an
/// object, or print instead of compiling.
const DROPPED: [&str; 20] = [
    "-c",
    "-S",
    "-E",
    "-M",
    "-MM",
    "-MD",
    "-MMD",
    "-MP",
    "-MG",
    "-v",
    "-###",
    "-fsyntax-only",
    "-save-temps",
    "-gsplit-dwarf",
    "-fstack-usage",
    "-ftest-coverage",
    "-fprofile-arcs",
    "--coverage",
    "-time",
    "-pipe",
];

/// Prefixes of flags that are dropped: they write files beside the object
/// (dumps, reports, profiles, link-time bytecode) or only change warnings.
const DROPPED_PREFIXES: [&str; 16] = [
    "-Werror",
    "-fdump-",
    "-save-temps=",
    "-ftime-trace",
    "-ftime-report",
    "-fcallgraph-info",
    "-fprofile-generate",
    "-fprofile-instr-generate",
    "-fsave-optimization-record",
    "-foptimization-record-file",
    "-fopt-info",
    "-fdiagnostics-format",
    "-fcompare-debug",
    "-flto",
    "-fuse-ld=",
    "-Wp,-M",
];

/// Prefixes of flags that run another program or load code into the
/// compiler, and exact spellings of such flags.
const REFUSED_PREFIXES: [&str; 17] = [
    "-fplugin",
    "-fpass-plugin",
    "-iplugindir",
    "-specs",
    "--specs",
    "-B",
    "--prefix",
    "-wrapper",
    "-Xclang",
    "-Xpreprocessor",
    "-Xassembler",
    "-Xlinker",
    "-Wa,",
    "-Wl,",
    "-mllvm",
    "--config",
    "-ccc-",
];

fn rule(flag: &str) -> Rule {
    if REFUSED_PREFIXES.iter().any(|p| flag.starts_with(p)) || flag == "-load" {
        return Rule::Refuse;
    }
    // -Wp, passes words to the preprocessor: only its dependency-file
    // options are known to be harmless (and are dropped).
    if flag.starts_with("-Wp,") && !flag.starts_with("-Wp,-M") {
        return Rule::Refuse;
    }
    if KEPT_WITH_VALUE.contains(&flag) {
        return Rule::Keep(1);
    }
    if DROPPED_WITH_VALUE.contains(&flag) {
        return Rule::Drop(1);
    }
    if DROPPED.contains(&flag) || DROPPED_PREFIXES.iter().any(|p| flag.starts_with(p)) {
        return Rule::Drop(0);
    }
    // Joined outputs: -ofile, -MFfile, -MTtarget, -MQtarget, -MJfile.
    if ["-o", "-MF", "-MT", "-MQ", "-MJ"]
        .iter()
        .any(|p| flag.starts_with(p) && flag.len() > p.len())
    {
        return Rule::Drop(0);
    }
    Rule::Keep(0)
}

/// Where response files may be read from, and how much of them.
pub struct Project<'a> {
    /// Directories a response file must lie in (after symbolic links).
    pub roots: &'a [PathBuf],
    /// The directory relative names are resolved in (the entry's).
    pub directory: &'a Path,
}

/// How deep response files may name other response files.
const MAX_RESPONSE_DEPTH: usize = 8;

/// The flags of an untrusted command (after the compiler), safe to run:
/// response files expanded, flags that run programs refused, outputs and
/// other inputs (the entry's own source among them) dropped.
pub fn flags(args: &[String], project: &Project) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut read = 0u64;
    expand(args, project, 0, &mut read, &mut out)?;
    Ok(out)
}

fn expand(
    args: &[String],
    project: &Project,
    depth: usize,
    read: &mut u64,
    out: &mut Vec<String>,
) -> Result<(), String> {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        if let Some(file) = a.strip_prefix('@') {
            let words = response_file(file, project, depth, read)?;
            expand(&words, project, depth + 1, read, out)?;
            continue;
        }
        if !a.starts_with('-') || a == "-" {
            // The unit's source, or another input: not compiled here.
            continue;
        }
        match rule(a) {
            Rule::Refuse => {
                return Err(format!(
                    "the flag `{a}` runs another program or loads code into the compiler: a compilation database is not trusted to do that"
                ))
            }
            Rule::Keep(n) => {
                out.push(a.to_string());
                for _ in 0..n {
                    if let Some(v) = args.get(i) {
                        // The driver reads any word that starts with `@`
                        // as a response file, a flag's value too.
                        if v.starts_with('@') {
                            return Err(format!(
                                "the value `{v}` of `{a}` would be read by the compiler as a response file: a compilation database is not trusted to do that"
                            ));
                        }
                        out.push(v.clone());
                        i += 1;
                    }
                }
            }
            Rule::Drop(n) => i += n,
        }
    }
    Ok(())
}

/// The words of the response file `name`, which must lie in the project.
fn response_file(
    name: &str,
    project: &Project,
    depth: usize,
    read: &mut u64,
) -> Result<Vec<String>, String> {
    if depth >= MAX_RESPONSE_DEPTH {
        return Err(format!(
            "response file @{name}: response files nest more than {MAX_RESPONSE_DEPTH} deep"
        ));
    }
    let path = project.directory.join(name);
    let real = path
        .canonicalize()
        .map_err(|e| format!("cannot read the response file @{name}: {e}"))?;
    let inside = project
        .roots
        .iter()
        .filter_map(|r| r.canonicalize().ok())
        .any(|r| real.starts_with(r));
    if !inside {
        return Err(format!(
            "the response file @{name} is outside the project ({}): a compilation database is not trusted to read it",
            real.display()
        ));
    }
    let left = bounded::TEXT_LIMIT.saturating_sub(*read);
    let bytes = bounded::read(&real, left)
        .map_err(|e| format!("cannot read the response file @{name}: {e}"))?;
    *read += bytes.len() as u64;
    crate::files::note_input(&real);
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("the response file @{name} is not valid UTF-8"))?;
    let mut words = Vec::new();
    for line in text.lines() {
        words.extend(
            words::split(line)
                .ok_or_else(|| format!("response file @{name}: a quote is not closed"))?,
        );
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn compiler_names_are_drivers_with_a_target_and_a_version() {
        for ok in [
            "gcc",
            "cc",
            "clang",
            "clang-14",
            "gcc-12",
            "x86_64-linux-gnu-gcc-12",
            "aarch64-linux-gnu-gcc",
            "clang++",
            "c99",
        ] {
            assert!(is_compiler_name(ok), "{ok}");
        }
        for bad in [
            "evil.sh", "sh", "python3", "gccx", "notgcc", "bash", "", "-gcc",
        ] {
            assert!(!is_compiler_name(bad), "{bad}");
        }
    }

    #[test]
    fn the_compiler_is_run_by_its_name_after_a_launcher() {
        assert_eq!(
            compiler(&s(&["/usr/lib/ccache/ccache", "/opt/x/bin/gcc", "-c"])).unwrap(),
            ("gcc".to_string(), 2)
        );
        assert_eq!(
            compiler(&s(&["./tools/clang", "-c"])).unwrap(),
            ("clang".to_string(), 1)
        );
        assert!(compiler(&s(&["./evil.sh", "-c", "foo.c"])).is_err());
        assert!(compiler(&s(&["ccache", "./evil.sh"])).is_err());
    }

    #[test]
    fn flags_that_run_programs_are_refused_and_outputs_dropped() {
        let dir = std::env::temp_dir();
        let project = Project {
            roots: std::slice::from_ref(&dir),
            directory: &dir,
        };
        for bad in [
            &["-wrapper", "./w.sh"][..],
            &["-fplugin=./p.so"],
            &["-B./bin"],
            &["-B", "./bin"],
            &["-specs=./x.specs"],
            &["-Xclang", "-load"],
            &["--config=./x.cfg"],
            &["-Wp,-imacros,x"],
            &["-Wl,--script=x"],
            &["-mllvm", "-x"],
            &["-I", "@inc.rsp"],
        ] {
            assert!(flags(&s(bad), &project).is_err(), "{bad:?}");
        }
        let kept = flags(
            &s(&[
                "-DX=1",
                "-I",
                "inc",
                "-c",
                "foo.c",
                "other.c",
                "-o",
                "foo.o",
                "-fdump-tree-all",
                "-save-temps",
                "-MJ",
                "x.json",
                "-Wp,-MMD,foo.d",
                "-Werror",
                "-O2",
                "-include",
                "cfg.h",
            ]),
            &project,
        )
        .unwrap();
        assert_eq!(kept, s(&["-DX=1", "-I", "inc", "-O2", "-include", "cfg.h"]));
    }

    #[test]
    fn response_files_are_read_within_the_project_only() {
        let project_dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(
            project_dir.path().join("opts.rsp"),
            "-DWIDE=1 '-DNAME=\"a b\"'\n",
        )
        .unwrap();
        std::fs::write(project_dir.path().join("evil.rsp"), "-wrapper ./w.sh\n").unwrap();
        std::fs::write(outside.path().join("o.rsp"), "-DX\n").unwrap();
        let roots = [project_dir.path().to_path_buf()];
        let project = Project {
            roots: &roots,
            directory: project_dir.path(),
        };
        assert_eq!(
            flags(&s(&["@opts.rsp"]), &project).unwrap(),
            s(&["-DWIDE=1", "-DNAME=\"a b\""])
        );
        assert!(flags(&s(&["@evil.rsp"]), &project).is_err());
        let o = format!("@{}", outside.path().join("o.rsp").display());
        assert!(flags(&s(&[&o]), &project)
            .unwrap_err()
            .contains("outside the project"));
    }
}
