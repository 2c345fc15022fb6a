//! Flags from a `compile_commands.json` (the kernel's
//! `scripts/clang-tools/gen_compile_commands.py`, CMake and Bear write one):
//! the entry of a translation unit that includes the header, and its flags
//! without what belongs to that one file (the source, `-c`, `-o`, dependency
//! files, `-Werror`).
//!
//! Which entry: the translation units whose dependency file (`.d`, or
//! Kbuild's `.NAME.o.cmd`) names the header (the same file, once both paths
//! are resolved), if any; otherwise the one whose source has the header's
//! name (`foo.c` for `foo.h`), then the one in the directory closest to the
//! header, then the first.
//!
//! The database is untrusted input: it is read within `--max-input-bytes`
//! (regular files only), and the chosen entry's command goes through
//! [`trust`] before anything runs.

use super::trust;
use super::words;
use crate::files;
use crate::source::bounded;
use crate::Diagnostic;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// The compiler, its flags and the directory to run it in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryFlags {
    /// The compiler's name, looked up on `PATH` (see [`trust::compiler`]).
    pub compiler: String,
    /// What the database named (a path, perhaps), for messages.
    pub named: String,
    pub flags: Vec<String>,
    pub directory: PathBuf,
    /// The translation unit the flags were taken from.
    pub file: PathBuf,
}

/// One entry as the file holds it: the command stays raw JSON until the
/// entry is chosen, so a large database costs little more than its bytes.
#[derive(Deserialize)]
struct RawEntry<'a> {
    #[serde(borrow)]
    directory: Cow<'a, str>,
    #[serde(borrow)]
    file: Cow<'a, str>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default)]
    command: Option<&'a RawValue>,
}

impl RawEntry<'_> {
    /// The source file, made absolute with the entry's directory.
    fn unit(&self) -> PathBuf {
        let file = Path::new(&*self.file);
        if file.is_relative() {
            Path::new(&*self.directory).join(file)
        } else {
            file.to_path_buf()
        }
    }
}

pub fn flags_for(db: &Path, header: &Path) -> Result<EntryFlags, Diagnostic> {
    let bad = |m: String| {
        Diagnostic::new(m).in_file(db).help(
            "give a compile_commands.json: a JSON array of {directory, file, command or arguments}",
        )
    };
    let bytes = files::read(db, files::Input::CompileCommands)?;
    let entries: Vec<RawEntry> = serde_json::from_slice(&bytes).map_err(|e| {
        Diagnostic::new(format!("not a compilation database: {e}"))
            .in_file(db)
            .at(e.line(), e.column())
            .help("give the compile_commands.json your build wrote: a JSON array of {directory, file, command or arguments}")
    })?;
    if entries.is_empty() {
        return Err(bad("the compilation database has no entries".into()));
    }
    let header = header
        .canonicalize()
        .unwrap_or_else(|_| header.to_path_buf());
    let pick = choose(&entries, &header);
    let project_root = db
        .canonicalize()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf));
    entry(&entries[pick], project_root).map_err(|m| {
        let d = Diagnostic::new(format!("entry {pick} (for {}): {}", entries[pick].file, m.0))
            .in_file(db);
        match m.1 {
            Some(help) => d.help(help),
            None => d.help("give a compile_commands.json: a JSON array of {directory, file, command or arguments}"),
        }
    })
}

/// What is wrong with an entry, and the help when it is about trust.
type EntryError = (String, Option<&'static str>);

const UNTRUSTED_COMPILER: &str = "choose the compiler yourself with --cc (e.g. --cc gcc): the entry's flags are then used with it";
const UNTRUSTED_FLAG: &str = "remove the flag from the compilation database, or give the flags you trust with --cc 'gcc FLAGS ...' instead of --compile-commands (for a kernel tree, --kbuild DIR puts the flags together itself)";

/// The command of the chosen entry, checked by [`trust`].
fn entry(e: &RawEntry, project_root: Option<PathBuf>) -> Result<EntryFlags, EntryError> {
    let plain = |m: &str| (m.to_string(), None);
    let argv: Vec<String> = match (e.arguments, e.command) {
        (Some(args), _) => serde_json::from_str(args.get())
            .map_err(|_| plain("\"arguments\" is not an array of strings"))?,
        (None, Some(cmd)) => {
            let cmd: String = serde_json::from_str(cmd.get())
                .map_err(|_| plain("\"command\" is not a string"))?;
            words::split(&cmd).ok_or_else(|| plain("a quote in \"command\" is not closed"))?
        }
        (None, None) => return Err(plain("no \"arguments\" or \"command\"")),
    };
    let (compiler, first_flag) =
        trust::compiler(&argv).map_err(|m| (m, Some(UNTRUSTED_COMPILER)))?;
    let directory = PathBuf::from(&*e.directory);
    let mut roots = vec![directory.clone()];
    roots.extend(project_root);
    let project = trust::Project {
        roots: &roots,
        directory: &directory,
    };
    let flags =
        trust::flags(&argv[first_flag..], &project).map_err(|m| (m, Some(UNTRUSTED_FLAG)))?;
    Ok(EntryFlags {
        compiler,
        named: argv[first_flag - 1].clone(),
        flags,
        directory,
        file: e.unit(),
    })
}

/// The entry for `header` (canonical): a unit whose dependency list names
/// the header (the same file, once both paths are resolved); otherwise the
/// unit with the header's file stem; otherwise the unit in the directory
/// closest to the header; otherwise the first.
fn choose(entries: &[RawEntry], header: &Path) -> usize {
    let name = header.file_name().map(|n| n.to_string_lossy().into_owned());
    let includes = |e: &RawEntry| {
        let unit = e.unit();
        let directory = Path::new(&*e.directory);
        dependency_files(&unit, directory).iter().any(|d| {
            let Ok(bytes) = bounded::read(d, bounded::TEXT_LIMIT) else {
                return false;
            };
            let text = String::from_utf8_lossy(&bytes);
            // Most lists do not name a file of that name at all.
            if name.as_deref().is_some_and(|n| !text.contains(n)) {
                return false;
            }
            files::note_input(d);
            listed_files(&text).iter().any(|dep| {
                let p = directory.join(dep);
                p.canonicalize().is_ok_and(|p| p == header)
            })
        })
    };
    if let Some(i) = entries.iter().position(includes) {
        return i;
    }
    let stem = header.file_stem();
    if let Some(i) = entries.iter().position(|e| e.unit().file_stem() == stem) {
        return i;
    }
    let shared = |e: &RawEntry| {
        e.unit()
            .components()
            .zip(header.components())
            .take_while(|(a, b)| a == b)
            .count()
    };
    let mut best = 0;
    for (i, e) in entries.iter().enumerate() {
        if shared(e) > shared(&entries[best]) {
            best = i;
        }
    }
    best
}

/// Where make and Kbuild leave the list of headers a unit included.
fn dependency_files(unit: &Path, directory: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(name) = unit.file_stem().and_then(|s| s.to_str()) {
        let dir = unit.parent().unwrap_or(Path::new("."));
        out.push(dir.join(format!(".{name}.o.cmd")));
        out.push(dir.join(format!("{name}.d")));
        out.push(dir.join(format!("{name}.o.d")));
        out.push(directory.join(format!(".{name}.o.cmd")));
    }
    out
}

/// The files a dependency list names: a make rule (`.d`), or Kbuild's
/// `.NAME.o.cmd` (its `deps_NAME.o := ...` variable; `$(wildcard ...)`
/// entries are configuration options, not files).
fn listed_files(text: &str) -> Vec<String> {
    if let Some(at) = text
        .find("\ndeps_")
        .map(|i| i + 1)
        .or_else(|| text.starts_with("deps_").then_some(0))
    {
        let rest = &text[at..];
        let value = rest.split_once(":=").map_or("", |(_, v)| v);
        let value = value.replace("\\\n", " ");
        let value = value.lines().next().unwrap_or("");
        let mut out = Vec::new();
        let mut in_wildcard = false;
        for w in value.split_whitespace() {
            if w.starts_with("$(wildcard") {
                in_wildcard = !w.ends_with(')');
                continue;
            }
            if in_wildcard {
                in_wildcard = !w.ends_with(')');
                continue;
            }
            out.push(w.replace("$$", "$"));
        }
        return out;
    }
    super::compile::dependencies(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn kbuild_cmd_files_list_their_dependencies_without_wildcards() {
        let cmd = "savedcmd_fs/x.o := gcc -Wp,-MMD,fs/.x.o.d -c fs/x.c\n\
source_fs/x.o := fs/x.c\n\
deps_fs/x.o := \\\n  include/linux/compiler-version.h \\\n    $(wildcard include/config/CC_VERSION_TEXT) \\\n  include/linux/s.h \\\n\n\
fs/x.o: $(deps_fs/x.o)\n";
        assert_eq!(
            listed_files(cmd),
            ["include/linux/compiler-version.h", "include/linux/s.h"]
        );
        assert_eq!(listed_files("x.o: x.c ../inc/s.h\n"), ["x.c", "../inc/s.h"]);
    }

    #[test]
    fn entries_read_arguments_or_command_and_prefer_the_matching_unit() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("compile_commands.json");
        std::fs::write(
            &db,
            r#"[{"directory": "/b", "file": "a.c", "arguments": ["cc", "-DA", "-c", "a.c"]},
                {"directory": "/b", "command": "gcc -I'x y' -DB -o foo.o -c src/foo.c", "file": "src/foo.c"}]"#,
        )
        .unwrap();
        let e = flags_for(&db, Path::new("/b/include/foo.h")).unwrap();
        assert_eq!(e.compiler, "gcc");
        assert_eq!(e.flags, s(&["-Ix y", "-DB"]));
        assert_eq!(e.file, PathBuf::from("/b/src/foo.c"));
        let e = flags_for(&db, Path::new("/elsewhere/bar.h")).unwrap();
        assert_eq!(e.flags, s(&["-DA"]));
        std::fs::write(&db, "[{\"file\": 1}]").unwrap();
        let err = flags_for(&db, Path::new("x.h")).unwrap_err();
        assert!(err.message.contains("not a compilation database"), "{err}");
        assert_eq!((err.line, err.column), (1, 11), "{err}");
    }
}
