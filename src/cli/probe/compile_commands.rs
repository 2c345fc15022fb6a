//! Flags from a `compile_commands.json` (the kernel's
//! `scripts/clang-tools/gen_compile_commands.py`, CMake and Bear write one):
//! the entry of a translation unit that includes the header, and its flags
//! without what belongs to that one file (the source, `-c`, `-o`, dependency
//! files, `-Werror`).
//!
//! Which entry: the translation units whose dependency file (`.d`, or
//! Kbuild's `.NAME.o.cmd`) names the header, if any; otherwise the one
//! whose source has the header's name (`foo.c` for `foo.h`), then the one
//! in the directory closest to the header, then the first.

use super::words;
use layout_core::Diagnostic;
use std::path::{Path, PathBuf};

/// The compiler, its flags and the directory to run it in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryFlags {
    pub compiler: String,
    pub flags: Vec<String>,
    pub directory: PathBuf,
    /// The translation unit the flags were taken from.
    pub file: PathBuf,
}

/// Most bytes read from a compile_commands.json (a full kernel's is ~30 MB).
const MAX_BYTES: u64 = 512 << 20;

pub fn flags_for(db: &Path, header: &Path) -> Result<EntryFlags, Diagnostic> {
    let bad = |m: String| {
        Diagnostic::new(m).in_file(db).help(
            "give a compile_commands.json: a JSON array of {directory, file, command or arguments}",
        )
    };
    let meta = std::fs::metadata(db)
        .map_err(|e| bad(format!("cannot read the compilation database: {e}")))?;
    if meta.len() > MAX_BYTES {
        return Err(bad(format!(
            "the compilation database is larger than {} MiB",
            MAX_BYTES >> 20
        )));
    }
    let text = std::fs::read_to_string(db)
        .map_err(|e| bad(format!("cannot read the compilation database: {e}")))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Diagnostic::new(format!("not valid JSON: {e}"))
            .in_file(db)
            .at(e.line(), e.column())
            .help("give the compile_commands.json your build wrote")
    })?;
    let entries = value
        .as_array()
        .ok_or_else(|| bad("the compilation database is not a JSON array".into()))?;
    let mut parsed = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        parsed.push(entry(e).map_err(|m| bad(format!("entry {i}: {m}")))?);
    }
    if parsed.is_empty() {
        return Err(bad("the compilation database has no entries".into()));
    }
    let header = header
        .canonicalize()
        .unwrap_or_else(|_| header.to_path_buf());
    let pick = choose(&parsed, &header);
    Ok(parsed.swap_remove(pick))
}

fn entry(e: &serde_json::Value) -> Result<EntryFlags, String> {
    let directory = PathBuf::from(
        e.get("directory")
            .and_then(|d| d.as_str())
            .ok_or("no \"directory\"")?,
    );
    let file = PathBuf::from(
        e.get("file")
            .and_then(|d| d.as_str())
            .ok_or("no \"file\"")?,
    );
    let file = if file.is_relative() {
        directory.join(file)
    } else {
        file
    };
    let argv: Vec<String> = if let Some(args) = e.get("arguments").and_then(|a| a.as_array()) {
        args.iter()
            .map(|a| {
                a.as_str()
                    .map(String::from)
                    .ok_or("an argument is not a string")
            })
            .collect::<Result<_, _>>()?
    } else if let Some(cmd) = e.get("command").and_then(|c| c.as_str()) {
        words::split(cmd).ok_or("a quote in \"command\" is not closed")?
    } else {
        return Err("no \"arguments\" or \"command\"".into());
    };
    let (compiler, rest) = argv.split_first().ok_or("an empty command")?;
    Ok(EntryFlags {
        compiler: compiler.clone(),
        flags: unit_free_flags(rest, &file),
        directory,
        file,
    })
}

/// The flags without those that name this translation unit's input and outputs.
pub fn unit_free_flags(args: &[String], file: &Path) -> Vec<String> {
    let file_name = file.file_name();
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        match a {
            "-c" | "-S" | "-E" | "-MD" | "-MMD" | "-MP" | "-M" | "-MM" => {}
            "-o" | "-MF" | "-MT" | "-MQ" => i += 1,
            _ if a.starts_with("-Wp,-MD") || a.starts_with("-Wp,-MMD") => {}
            _ if a.starts_with("-Werror") || a.starts_with("-o") && a.len() > 2 => {}
            _ if a.starts_with("-MF") || a.starts_with("-MT") => {}
            _ if !a.starts_with('-') && Path::new(a).file_name() == file_name => {}
            _ => out.push(a.to_string()),
        }
    }
    out
}

fn choose(entries: &[EntryFlags], header: &Path) -> usize {
    let includes = |e: &EntryFlags| {
        dependency_files(e)
            .iter()
            .filter_map(|d| std::fs::read_to_string(d).ok())
            .any(|t| t.contains(&*header.to_string_lossy()))
    };
    if let Some(i) = entries.iter().position(includes) {
        return i;
    }
    let stem = header.file_stem();
    if let Some(i) = entries.iter().position(|e| e.file.file_stem() == stem) {
        return i;
    }
    let shared = |e: &EntryFlags| {
        e.file
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
fn dependency_files(e: &EntryFlags) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(name) = e.file.file_stem().and_then(|s| s.to_str()) {
        let dir = e.file.parent().unwrap_or(Path::new("."));
        out.push(dir.join(format!(".{name}.o.cmd")));
        out.push(dir.join(format!("{name}.d")));
        out.push(dir.join(format!("{name}.o.d")));
        out.push(e.directory.join(format!(".{name}.o.cmd")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn unit_flags_are_dropped() {
        let args = s(&[
            "-Wp,-MMD,fs/.x.o.d",
            "-Iinc",
            "-DX=1",
            "-c",
            "-o",
            "fs/x.o",
            "fs/x.c",
            "-Werror",
            "-include",
            "k.h",
            "-MF",
            "x.d",
            "-std=gnu11",
        ]);
        assert_eq!(
            unit_free_flags(&args, Path::new("/t/fs/x.c")),
            s(&["-Iinc", "-DX=1", "-include", "k.h", "-std=gnu11"])
        );
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
        assert!(err.message.contains("entry 0"), "{err}");
    }
}
