//! The compiler front-end as an attack surface, and its cache: a
//! compilation database from a cloned repository runs nothing but a
//! compiler, probes live in private directories, `--output` never replaces a
//! file the run read, the cache is never stale and never loses an entry a
//! concurrent run reads, and every input is read within a bound.

use crate::support::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn have_gcc() -> bool {
    Command::new("gcc").arg("--version").output().is_ok()
}

macro_rules! require_gcc {
    () => {
        if !have_gcc() {
            println!("SKIPPED: no gcc");
            return;
        }
    };
}

/// `cachelayout ARGS` in `dir`, with the probe cache under `cache` and the
/// temporary directory `tmp` (when given).
fn run_env(dir: &Path, cache: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cachelayout"));
    c.current_dir(dir)
        .env("XDG_CACHE_HOME", cache)
        .args(args)
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the cachelayout binary runs")
}

/// Runs with a deadline: a run that reads a device or a FIFO forever is a
/// failure, not a hung test.
fn run_bounded(dir: &Path, cache: &Path, args: &[&str]) -> Output {
    run_with_deadline(
        dir,
        &[("XDG_CACHE_HOME", cache)],
        args,
        Duration::from_secs(60),
    )
}

fn write(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(p, text).unwrap();
}

/// A script that leaves `marker` when anything runs it.
fn trap(dir: &Path, name: &str, marker: &Path) -> PathBuf {
    let script = dir.join(name);
    write(
        &script,
        &format!("#!/bin/sh\ntouch '{}'\nexec gcc \"$@\"\n", marker.display()),
    );
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

const WIDE: &str =
    "struct wide {\n\tchar tag;\n#ifdef WIDE\n\tlong value;\n#else\n\tchar value;\n#endif\n};\n";

fn show_json(dir: &Path, cache: &Path, header: &str, extra: &[&str]) -> Output {
    let mut args = vec!["show", header, "--struct", "wide", "--format", "json"];
    args.extend_from_slice(extra);
    run_env(dir, cache, &[], &args)
}

fn size(o: &Output) -> u64 {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    json(o)["size"].as_u64().unwrap()
}

// ---- 1. A compilation database runs only a compiler ----

#[test]
fn a_database_command_that_is_not_a_compiler_never_runs() {
    require_gcc!();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = dir.path();
    let marker = p.join("ran");
    trap(p, "evil.sh", &marker);
    write(&p.join("wide.h"), WIDE);
    let db = serde_json::json!([
        {"directory": p, "file": "wide.c", "command": "./evil.sh -DWIDE -c wide.c"},
    ]);
    write(&p.join("compile_commands.json"), &db.to_string());
    // Twice: the second run must not ask the program for --version either.
    for _ in 0..2 {
        let out = show_json(
            p,
            cache.path(),
            "wide.h",
            &["--compile-commands", "compile_commands.json"],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("not a C compiler's name"), "{err}");
        assert!(err.contains("--cc"), "the help names --cc: {err}");
        assert!(!marker.exists(), "the database's program ran");
    }
    // A compiler's name given as a path in the repository runs the
    // compiler of that name from PATH, never the file.
    let gcc_trap = trap(p, "gcc", &marker);
    let db = serde_json::json!([
        {"directory": p, "file": "wide.c",
         "arguments": [gcc_trap, "-DWIDE", "-c", "wide.c"]},
    ]);
    write(&p.join("compile_commands.json"), &db.to_string());
    let out = show_json(
        p,
        cache.path(),
        "wide.h",
        &["--compile-commands", "compile_commands.json"],
    );
    assert_eq!(size(&out), 16, "the entry's -DWIDE is used");
    assert!(!marker.exists(), "the repository's ./gcc ran");
    assert!(stderr(&out).contains("from PATH"), "{}", stderr(&out));
    // The user's --cc is the user's choice: it runs.
    let out = show_json(
        p,
        cache.path(),
        "wide.h",
        &[
            "--compile-commands",
            "compile_commands.json",
            "--cc",
            &gcc_trap.display().to_string(),
        ],
    );
    assert_eq!(size(&out), 16);
    assert!(marker.exists(), "--cc names the program to run");
}

#[test]
fn flags_that_run_programs_are_refused_even_with_cc() {
    require_gcc!();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = dir.path();
    let marker = p.join("ran");
    trap(p, "w.sh", &marker);
    write(&p.join("wide.h"), WIDE);
    for (flags, named) in [
        (vec!["-wrapper", "./w.sh"], "-wrapper"),
        (vec!["-B./bin"], "-B./bin"),
        (vec!["-fplugin=./p.so"], "-fplugin=./p.so"),
        (vec!["-specs=./x.specs"], "-specs=./x.specs"),
        (vec!["-Xclang", "-load"], "-Xclang"),
    ] {
        let mut args = vec!["gcc"];
        args.extend(&flags);
        args.extend(["-c", "wide.c"]);
        let db = serde_json::json!([{"directory": p, "file": "wide.c", "arguments": args}]);
        write(&p.join("compile_commands.json"), &db.to_string());
        let out = show_json(
            p,
            cache.path(),
            "wide.h",
            &["--compile-commands", "compile_commands.json", "--cc", "gcc"],
        );
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("`{named}`")),
            "{}",
            stderr(&out)
        );
        assert!(!marker.exists(), "{flags:?} ran a program");
    }
}

#[test]
fn response_files_are_read_within_the_project_and_key_the_cache() {
    require_gcc!();
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(&p.join("wide.h"), WIDE);
    write(&p.join("opts.rsp"), "-DWIDE=1\n");
    let db = serde_json::json!([
        {"directory": p, "file": "wide.c", "arguments": ["gcc", "@opts.rsp", "-c", "wide.c"]},
    ]);
    write(&p.join("compile_commands.json"), &db.to_string());
    let args = ["--compile-commands", "compile_commands.json"];
    assert_eq!(size(&show_json(p, cache.path(), "wide.h", &args)), 16);
    // The response file is edited: the cached probe is not used.
    write(&p.join("opts.rsp"), "-UWIDE\n");
    assert_eq!(size(&show_json(p, cache.path(), "wide.h", &args)), 2);
    // A response file outside the project is not read.
    write(&outside.path().join("o.rsp"), "-DWIDE\n");
    let at = format!("@{}", outside.path().join("o.rsp").display());
    let db = serde_json::json!([
        {"directory": p, "file": "wide.c", "arguments": ["gcc", at, "-c", "wide.c"]},
    ]);
    write(&p.join("compile_commands.json"), &db.to_string());
    let out = show_json(p, cache.path(), "wide.h", &args);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("outside the project"),
        "{}",
        stderr(&out)
    );
}

// ---- 2. Private probe directories ----

#[test]
fn without_a_cache_probes_are_built_in_a_private_directory() {
    require_gcc!();
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(&p.join("wide.h"), WIDE);
    // The old predictable place is taken by a file (or could be a link
    // planted by another user): it is not used at all.
    write(&tmp.path().join("cachelayout-probes"), "planted");
    let out = Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(p)
        .env_remove("HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("TMPDIR", tmp.path())
        .args([
            "show",
            "wide.h",
            "--struct",
            "wide",
            "--cc",
            "gcc -DWIDE",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(size(&out), 16);
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        ["cachelayout-probes"],
        "the probe directory is removed"
    );
}

#[test]
fn a_cache_directory_others_can_write_is_not_used() {
    require_gcc!();
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(&p.join("wide.h"), WIDE);
    let root = cache.path().join("cachelayout/probes");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = show_json(p, cache.path(), "wide.h", &["--cc", "gcc"]);
    assert_eq!(size(&out), 2);
    assert!(
        stderr(&out).contains("not using the probe cache"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_dir(&root).unwrap().count(),
        0,
        "nothing was written into it"
    );
}

// ---- 3. --output never replaces what the run read ----

/// A configured kernel tree of our own: enough for `--kbuild`.
fn fake_kbuild_tree(k: &Path) {
    write(&k.join(".config"), "CONFIG_X86=y\nCONFIG_X86_64=y\n");
    write(&k.join("Makefile"), "# a tree\n");
    write(&k.join("include/linux/kernel.h"), "\n");
    write(&k.join("include/generated/autoconf.h"), "\n");
    write(
        &k.join("include/linux/pair.h"),
        "#include <linux/types2.h>\nstruct pair {\n\tu64a reads;\n\tu64a hits;\n\tchar pad[56];\n};\n",
    );
    write(
        &k.join("include/linux/types2.h"),
        "typedef unsigned long u64a;\n",
    );
}

const PAIR_ACCESS: &str =
    "[struct.pair]\nread_mostly = [\"reads\"]\nlockless_atomic = [\"hits\"]\ncold = [\"pad\"]\n";

#[test]
fn output_refuses_every_file_the_run_read() {
    require_gcc!();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = dir.path();
    let k = p.join("k");
    fake_kbuild_tree(&k);
    write(&p.join("a.toml"), PAIR_ACCESS);
    let config_before = std::fs::read(k.join(".config")).unwrap();
    let types_before = std::fs::read(k.join("include/linux/types2.h")).unwrap();
    for target in ["k/.config", "k/include/linux/types2.h", "k/Makefile"] {
        let out = run_env(
            p,
            cache.path(),
            &[],
            &[
                "propose",
                "k/include/linux/pair.h",
                "--struct",
                "pair",
                "--kbuild",
                "k",
                "--access",
                "a.toml",
                "-o",
                target,
                "--force",
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{target}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("it is the input"),
            "{target}: {}",
            stderr(&out)
        );
    }
    assert_eq!(std::fs::read(k.join(".config")).unwrap(), config_before);
    assert_eq!(
        std::fs::read(k.join("include/linux/types2.h")).unwrap(),
        types_before
    );

    // The compilation database is an input too.
    write(
        &p.join("pair.h"),
        "struct pair {\n\tlong reads;\n\tlong hits;\n\tchar pad[56];\n};\n",
    );
    let db = serde_json::json!([{"directory": p, "file": "pair.c", "command": "gcc -c pair.c"}]);
    write(&p.join("cc.json"), &db.to_string());
    let before = std::fs::read(p.join("cc.json")).unwrap();
    let out = run_env(
        p,
        cache.path(),
        &[],
        &[
            "propose",
            "pair.h",
            "--struct",
            "pair",
            "--compile-commands",
            "cc.json",
            "--access",
            "a.toml",
            "-o",
            "cc.json",
            "--force",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(std::fs::read(p.join("cc.json")).unwrap(), before);
}

// ---- 4. The cache is never stale ----

#[test]
fn a_header_that_appears_earlier_on_the_include_path_is_seen() {
    require_gcc!();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(&p.join("i2/t.h"), "typedef char val_t;\n");
    std::fs::create_dir_all(p.join("i1")).unwrap();
    write(
        &p.join("wide.h"),
        "#include <t.h>\nstruct wide {\n\tchar tag;\n\tval_t value;\n};\n",
    );
    let args = ["--cc", "gcc -Ii1 -Ii2"];
    assert_eq!(size(&show_json(p, cache.path(), "wide.h", &args)), 2);
    write(&p.join("i1/t.h"), "typedef long val_t;\n");
    assert_eq!(
        size(&show_json(p, cache.path(), "wide.h", &args)),
        16,
        "i1/t.h now comes first"
    );
}

#[test]
fn the_compilers_environment_keys_the_cache() {
    require_gcc!();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(&p.join("a/t.h"), "typedef char val_t;\n");
    write(&p.join("b/t.h"), "typedef long val_t;\n");
    write(
        &p.join("wide.h"),
        "#include <t.h>\nstruct wide {\n\tchar tag;\n\tval_t value;\n};\n",
    );
    let args = [
        "show", "wide.h", "--struct", "wide", "--cc", "gcc", "--format", "json",
    ];
    let a = p.join("a").display().to_string();
    let b = p.join("b").display().to_string();
    assert_eq!(size(&run_env(p, cache.path(), &[("CPATH", &a)], &args)), 2);
    assert_eq!(size(&run_env(p, cache.path(), &[("CPATH", &b)], &args)), 16);
}

// ---- 5. The entry of the header, by whole paths ----

#[test]
fn the_entry_is_chosen_by_the_resolved_path_of_the_header() {
    require_gcc!();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(&p.join("inc/s.h"), &WIDE.replace("wide", "s"));
    write(&p.join("inc/s.hpp"), "/* another header */\n");
    // hpp.c includes s.hpp (a name that s.h is a prefix of), with -DWIDE;
    // narrow.c includes s.h, and its .d file names it relatively.
    write(&p.join("src/hpp.d"), "hpp.o: hpp.c ../inc/s.hpp\n");
    write(
        &p.join("src/narrow.d"),
        "narrow.o: narrow.c \\\n ../inc/s.h\n",
    );
    let db = serde_json::json!([
        {"directory": p.join("src"), "file": "hpp.c", "arguments": ["gcc", "-DWIDE", "-c", "hpp.c"]},
        {"directory": p.join("src"), "file": "narrow.c", "arguments": ["gcc", "-c", "narrow.c"]},
    ]);
    write(&p.join("cc.json"), &db.to_string());
    let out = run_env(
        p,
        cache.path(),
        &[],
        &[
            "show",
            "inc/s.h",
            "--struct",
            "s",
            "--compile-commands",
            "cc.json",
            "--format",
            "json",
        ],
    );
    assert_eq!(size(&out), 2, "narrow.c's flags, not hpp.c's -DWIDE");
}

// ---- 6. Paths with quotes, dollars and hashes ----

#[test]
fn header_paths_with_quotes_dollars_and_hashes_probe_that_header() {
    require_gcc!();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = dir.path();
    // A decoy where a mangled quote would lead.
    write(&p.join("a\\\"b/wide.h"), "struct wide { char tag; };\n");
    write(&p.join("a\"b/wide.h"), WIDE);
    let out = show_json(p, cache.path(), "a\"b/wide.h", &["--cc", "gcc -DWIDE"]);
    assert_eq!(size(&out), 16);
    write(&p.join("x$y#z/wide.h"), WIDE);
    for round in 0..2 {
        let out = show_json(p, cache.path(), "x$y#z/wide.h", &["--cc", "gcc -DWIDE"]);
        assert_eq!(size(&out), 16, "round {round}");
        assert!(!stderr(&out).contains("lost an entry"), "{}", stderr(&out));
    }
    let root = cache.path().join("cachelayout/probes");
    let inputs: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path().join("inputs")).ok())
        .collect();
    assert!(
        inputs.iter().any(|i| i.contains("x$y#z/wide.h")),
        "the entry lists the header by its real name: {inputs:?}"
    );
}

// ---- 10. Bounded reads of the front-end's inputs ----

#[test]
fn devices_fifos_and_oversized_databases_are_refused() {
    require_gcc!();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(&p.join("wide.h"), WIDE);
    let fifo = p.join("fifo.json");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for db in ["/dev/zero", "fifo.json"] {
        let out = run_bounded(
            p,
            cache.path(),
            &[
                "show",
                "wide.h",
                "--struct",
                "wide",
                "--compile-commands",
                db,
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{db}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("not a regular file"),
            "{db}: {}",
            stderr(&out)
        );
    }
    // --max-input-bytes holds for the database.
    let db = serde_json::json!([{"directory": p, "file": "wide.c", "command": "gcc -c wide.c"}]);
    write(&p.join("cc.json"), &db.to_string());
    let out = run_bounded(
        p,
        cache.path(),
        &[
            "show",
            "wide.h",
            "--struct",
            "wide",
            "--compile-commands",
            "cc.json",
            "--max-input-bytes",
            "10",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("larger than"), "{}", stderr(&out));
    // A unit's dependency list that is a device is not read.
    std::os::unix::fs::symlink("/dev/zero", p.join(".wide.o.cmd")).unwrap();
    let out = run_bounded(
        p,
        cache.path(),
        &[
            "show",
            "wide.h",
            "--struct",
            "wide",
            "--compile-commands",
            "cc.json",
            "--format",
            "json",
        ],
    );
    assert_eq!(size(&out), 2);
    // A kernel tree whose .config is a device.
    let k = p.join("k");
    fake_kbuild_tree(&k);
    std::fs::remove_file(k.join(".config")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", k.join(".config")).unwrap();
    let out = run_bounded(
        p,
        cache.path(),
        &[
            "show",
            "k/include/linux/pair.h",
            "--struct",
            "pair",
            "--kbuild",
            "k",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a regular file"),
        "{}",
        stderr(&out)
    );
}

// ---- 11. Concurrent runs share the cache ----

#[test]
fn parallel_runs_never_lose_a_cache_entry() {
    require_gcc!();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = dir.path().to_path_buf();
    for round in 0..4 {
        // A new header text each round: every round compiles and stores.
        write(&p.join("wide.h"), &format!("/* round {round} */\n{WIDE}"));
        let runs: Vec<_> = (0..8)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_cachelayout"))
                    .current_dir(&p)
                    .env("XDG_CACHE_HOME", cache.path())
                    .args(["show", "wide.h", "--struct", "wide", "--cc", "gcc -DWIDE"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for r in runs {
            let out = r.wait_with_output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "round {round}: {}",
                stderr(&out)
            );
        }
    }
}

// ---- 12. Interrupted runs leave nothing behind ----

#[test]
fn a_signal_during_a_compile_removes_the_probe_directory() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(&p.join("wide.h"), WIDE);
    let slow = p.join("slowcc");
    write(
        &slow,
        "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --version ] && { echo slowcc 1; exit 0; }; done\nexec sleep 30\n",
    );
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = cache.path().join("cachelayout/probes");
    // A work directory a killed run left behind is swept.
    let planted = "tmp-4000000000-abc";
    std::fs::create_dir_all(root.join(planted)).unwrap();
    let a_day_ago = std::time::SystemTime::now() - Duration::from_secs(86_400);
    std::fs::File::open(root.join(planted))
        .unwrap()
        .set_modified(a_day_ago)
        .unwrap();
    let work_dirs = |d: &Path| -> Vec<String> {
        std::fs::read_dir(d)
            .map(|r| {
                r.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("tmp-") || n.starts_with("cachelayout-probe-"))
                    .filter(|n| n != planted)
                    .collect()
            })
            .unwrap_or_default()
    };
    for (cached, place) in [(true, root.clone()), (false, tmp.path().to_path_buf())] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cachelayout"));
        c.current_dir(p)
            .env("XDG_CACHE_HOME", cache.path())
            .env("TMPDIR", tmp.path())
            .args(["show", "wide.h", "--struct", "wide", "--cc"])
            .arg(&slow)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if !cached {
            c.arg("--no-probe-cache");
        }
        let mut child = c.spawn().unwrap();
        let start = Instant::now();
        while work_dirs(&place).is_empty() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "no work directory appeared in {}",
                place.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        if cached {
            assert!(!root.join(planted).exists(), "the stale one was swept");
        }
        // SAFETY: kill(2) on our own child's pid, with a valid signal.
        let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        assert_eq!(sent, 0, "SIGTERM was sent");
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(143), "ends as a SIGTERM would");
        assert!(
            work_dirs(&place).is_empty(),
            "left behind in {}: {:?}",
            place.display(),
            work_dirs(&place)
        );
    }
}
