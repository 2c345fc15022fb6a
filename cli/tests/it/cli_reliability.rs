//! Hostile and broken input to the command line: outputs that lead to an
//! input, numbers near 2^64, devices and FIFOs, corrupt BTF, packed structs,
//! and a proptest mutator over access files. Every case ends in exit 0/1 or
//! in exit 2 with one line `FILE[:LINE:COL]: error: ...; help: ...`, never a
//! panic, a hang or an unbounded read. Tests are named after the items of
//! the reliability issue they cover.

use crate::support;

use proptest::prelude::*;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;
use support::*;

const HEADER: &str = "struct counters {\n\
\tunsigned long config;\n\
\tlong hits;\n\
\tunsigned int flags;\n\
#ifdef CONFIG_EXTRA\n\
\tlong extra;\n\
#endif\n\
};\n\
struct holder {\n\
\tstruct counters c;\n\
\tlong tail;\n\
};\n";

const ACCESS: &str = "[struct.counters]\n\
read_mostly = [\"config\"]\n\
lockless_atomic = [\"hits\"]\n";

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.h"), HEADER).unwrap();
    std::fs::write(dir.path().join("a.toml"), ACCESS).unwrap();
    dir
}

/// Checks the promise for a failed run: exit 2, one line on stderr in the
/// form `[FILE[:LINE[:COL]]: ]error: MESSAGE; help: HINT`, no panic; returns it.
fn bad_input(out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "expected exit 2, stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line:\n{err}");
    let line = lines[0];
    assert!(line.contains("error: "), "{line}");
    assert!(line.contains("; help: "), "no help: {line}");
    assert!(line.len() < 2000, "{} bytes of error", line.len());
    line.to_string()
}

/// The outcome a run may have: 0 or 1, or a well-formed exit 2.
fn well_behaved(out: &Output) {
    match out.status.code() {
        Some(0) | Some(1) => assert!(!stderr(out).contains("panicked"), "{}", stderr(out)),
        _ => {
            bad_input(out);
        }
    }
}

/// Runs under a 512 MiB address-space limit (`ulimit -v`): an attempt to
/// allocate more aborts the run, which the caller's checks then reject.
fn run_in_512_mib(dir: &Path, args: &[&str]) -> Output {
    let bin = env!("CARGO_BIN_EXE_cachelayout");
    Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 524288 && exec \"$0\" \"$@\"")
        .arg(bin)
        .args(args)
        .current_dir(dir)
        .env("XDG_CACHE_HOME", crate::support::process_cache())
        .output()
        .unwrap()
}

// ---------------------------------------------------------------- BTF blobs

/// A raw BTF blob under construction (little-endian).
struct Btf {
    types: Vec<u8>,
    strings: Vec<u8>,
}

impl Btf {
    fn new() -> Self {
        Btf {
            types: Vec::new(),
            strings: vec![0],
        }
    }
    fn name(&mut self, s: &str) -> u32 {
        if s.is_empty() {
            return 0;
        }
        let at = self.strings.len() as u32;
        self.strings.extend_from_slice(s.as_bytes());
        self.strings.push(0);
        at
    }
    fn word(&mut self, v: u32) -> &mut Self {
        self.types.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn ty(&mut self, name: &str, kind: u32, vlen: u32, size_or_type: u32) -> &mut Self {
        let name = self.name(name);
        self.word(name).word((kind << 24) | vlen).word(size_or_type)
    }
    fn member(&mut self, name: &str, ty: u32, bit_offset: u32) -> &mut Self {
        let name = self.name(name);
        self.word(name).word(ty).word(bit_offset)
    }
    fn bytes(&self) -> Vec<u8> {
        let mut out = vec![0x9f, 0xeb, 1, 0];
        let (t, s) = (self.types.len() as u32, self.strings.len() as u32);
        for v in [24, 0, t, t, s] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.types);
        out.extend_from_slice(&self.strings);
        out
    }
}

const INT: u32 = 1;
const ARRAY: u32 = 3;
const STRUCT: u32 = 4;
const TYPEDEF: u32 = 8;

/// Types 1..=3: `long`, `struct { long counter; }`, `typedef ... atomic_long_t`.
fn btf_with_atomic() -> Btf {
    let mut b = Btf::new();
    b.ty("long", INT, 0, 8).word(64); // 1
    b.ty("", STRUCT, 1, 8).member("counter", 1, 0); // 2
    b.ty("atomic_long_t", TYPEDEF, 0, 2); // 3
    b
}

// ------------------------------------------------------------------- item 5

#[test]
fn item_05_output_never_overwrites_an_input() {
    let dir = setup();
    let d = dir.path();
    let args = |out: &str, force: bool| {
        let mut v = vec![
            "propose", "c.h", "--struct", "counters", "--access", "a.toml", "-o",
        ];
        v.push(Box::leak(out.to_string().into_boxed_str()));
        if force {
            v.push("--force");
        }
        v
    };
    // The header, the access file, a symbolic link to each, a hard link:
    // refused with and without --force, and the inputs are untouched.
    std::os::unix::fs::symlink("c.h", d.join("link.patch")).unwrap();
    std::os::unix::fs::symlink(d.join("a.toml"), d.join("abs-link.patch")).unwrap();
    std::fs::hard_link(d.join("c.h"), d.join("hard.patch")).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    for target in [
        "c.h",
        "a.toml",
        "./c.h",
        "sub/../c.h",
        "link.patch",
        "abs-link.patch",
        "hard.patch",
    ] {
        for force in [false, true] {
            let line = bad_input(&run_in(d, &args(target, force)));
            assert!(line.contains("input"), "{target}: {line}");
        }
    }
    assert_eq!(std::fs::read_to_string(d.join("c.h")).unwrap(), HEADER);
    assert_eq!(std::fs::read_to_string(d.join("a.toml")).unwrap(), ACCESS);
    // A new file is written; an existing one only with --force, replaced whole.
    let ok = run_in(d, &args("fix.patch", false));
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let diff = std::fs::read_to_string(d.join("fix.patch")).unwrap();
    assert!(diff.starts_with("--- a/c.h"), "{diff}");
    let line = bad_input(&run_in(d, &args("fix.patch", false)));
    assert!(line.contains("--force"), "{line}");
    std::fs::write(d.join("old.patch"), "x".repeat(100_000)).unwrap();
    let ok = run_in(d, &args("old.patch", true));
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert_eq!(std::fs::read_to_string(d.join("old.patch")).unwrap(), diff);
    // Through a symbolic link to a file that is not an input: the link stays
    // and its target gets the text.
    std::fs::write(d.join("target.patch"), "old").unwrap();
    std::os::unix::fs::symlink("target.patch", d.join("via.patch")).unwrap();
    let ok = run_in(d, &args("via.patch", true));
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert!(std::fs::symlink_metadata(d.join("via.patch"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read_to_string(d.join("target.patch")).unwrap(),
        diff
    );
    // No temporary file is left behind.
    let left: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

// ------------------------------------------------------------------- item 6

#[test]
fn item_06_numbers_near_2_64_are_refused_not_wrapped() {
    let dir = setup();
    let d = dir.path();
    let show = |offset: &str| {
        run_in(
            d,
            &["show", "c.h", "--struct", "counters", "--offset", offset],
        )
    };
    for offset in [
        "18446744073709551600",
        "18446744073709551615",
        "281474976710656",
    ] {
        let line = bad_input(&show(offset));
        assert!(line.contains("2^48"), "{line}");
    }
    // A large offset that fits is laid out, with honest line numbers.
    let big = show("1099511627776");
    assert!(
        matches!(big.status.code(), Some(0) | Some(1)),
        "{}",
        stderr(&big)
    );
    assert!(stdout(&big).contains("cacheline"), "{}", stdout(&big));
    let growth = |extra: &[&str]| {
        let mut args = vec!["growth", "--header", "c.h", "--struct", "counters"];
        args.extend_from_slice(extra);
        run_in(d, &args)
    };
    let line = bad_input(&growth(&["--size", "9223372036854775808"]));
    assert!(line.contains("2^48"), "{line}");
    let line = bad_input(&growth(&["--size", "18446744073709551615"]));
    assert!(line.contains("2^48"), "{line}");
    // The help never suggests a size that is then refused.
    let line = bad_input(&growth(&["--size", "40", "--align", "9223372036854775808"]));
    assert!(!line.contains("--size 0"), "{line}");
    let line = bad_input(&growth(&["--size", "40", "--align", "281474976710656"]));
    assert!(!line.contains("--size 0"), "{line}");
    let line = bad_input(&growth(&[
        "--size",
        "24",
        "--instances",
        "counters=18446744073709551615",
    ]));
    assert!(line.contains("2^40"), "{line}");
    assert!(!line.contains("-64"), "{line}");
    // Counts that fit multiply exactly.
    let ok = growth(&["--size", "48", "--instances", "counters=1000000000"]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert!(
        stdout(&ok).contains("+32000000000 bytes"),
        "{}",
        stdout(&ok)
    );
}

// ------------------------------------------------------------ items 8 and 10

#[test]
fn item_08_scan_refuses_a_struct_smaller_than_its_members() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut b = btf_with_atomic();
    // struct t { long a; atomic_long_t n; atomic_long_t far; } of 16 bytes,
    // `far` at 128: the struct is smaller than its members' extent.
    b.ty("t", STRUCT, 3, 16)
        .member("a", 1, 0)
        .member("n", 3, 64)
        .member("far", 3, 1024);
    std::fs::write(d.join("t.btf"), b.bytes()).unwrap();
    for args in [
        &["scan", "--btf", "t.btf"][..],
        &["scan", "--btf", "t.btf", "--packable"],
        &["show", "--btf", "t.btf", "--struct", "t"],
        &["growth", "--btf", "t.btf", "--struct", "t", "--size", "64"],
    ] {
        let line = bad_input(&run_in(d, args));
        assert!(
            line.starts_with("t.btf: error: corrupt")
                && line.contains("member `far` ends at byte 136"),
            "{line}"
        );
    }
}

#[test]
fn item_10_a_4_gib_struct_in_btf_scans_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut b = btf_with_atomic();
    b.ty("char", INT, 0, 1).word(8); // 4
    b.ty("", ARRAY, 0, 0).word(4).word(4).word(0xffff_ff00); // 5: char[4 GiB - 256]
                                                             // struct big { atomic_long_t n; long x; char pad[4 GiB - 256]; ... } of 4 GiB - 64.
    b.ty("big", STRUCT, 3, 0xffff_ffc0)
        .member("n", 3, 0)
        .member("x", 1, 64)
        .member("pad", 5, 128);
    std::fs::write(d.join("big.btf"), b.bytes()).unwrap();
    let ranked = run_in_512_mib(d, &["scan", "--btf", "big.btf"]);
    assert_eq!(ranked.status.code(), Some(0), "{}", stderr(&ranked));
    let row = stdout(&ranked)
        .lines()
        .find(|l| l.contains("\tbig\t"))
        .map(str::to_string)
        .unwrap_or_default();
    // n shares line 0 with x and 48 bytes of pad: 56 shared bytes on 1 line.
    assert!(row.starts_with("56\t0\t1\t4294967232\t"), "{row}");
    let packed = run_in_512_mib(d, &["scan", "--btf", "big.btf", "--packable"]);
    assert_eq!(packed.status.code(), Some(0), "{}", stderr(&packed));
    // A `char` of 2^31 bytes is not a C type: refused at once.
    let mut b = Btf::new();
    b.ty("char", INT, 0, 1 << 31).word(8);
    b.ty("s", STRUCT, 1, 0xffff_fff0).member("c", 1, 24);
    std::fs::write(d.join("char.btf"), b.bytes()).unwrap();
    let out = run_with_deadline(
        d,
        &[],
        &["scan", "--btf", "char.btf", "--packable"],
        Duration::from_secs(30),
    );
    let line = bad_input(&out);
    assert!(line.contains("INT of 2147483648 bytes"), "{line}");
}

// ------------------------------------------------------------------- item 9

#[test]
fn item_09_devices_fifos_and_oversized_inputs_are_refused() {
    let dir = setup();
    let d = dir.path();
    let fifo = d.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    for special in ["/dev/zero", "/dev/urandom", "fifo", "."] {
        // An access file may be a pipe (`--access <(cachelayout infer ...)`):
        // below, and in infer_sources; devices and directories are refused.
        let access = vec!["show", "c.h", "--struct", "counters", "--access", special];
        for args in [
            vec!["show", special, "--struct", "counters"],
            access,
            vec!["show", "c.h", "--struct", "counters", "--config", special],
            vec!["show", "--btf", special, "--struct", "counters"],
            vec!["show", "--dwarf", special, "--struct", "counters"],
            vec!["scan", "--btf", special],
            vec![
                "growth", "--dwarf", special, "--struct", "counters", "--size", "64",
            ],
        ] {
            if special == "fifo" && args.contains(&"--access") {
                continue;
            }
            let out = run_with_deadline(d, &[], &args, Duration::from_secs(20));
            let line = bad_input(&out);
            assert!(
                line.starts_with(&format!("{special}: error: cannot read the "))
                    && line.contains("not a regular file"),
                "{line}"
            );
        }
    }
    // A pipe that holds more than the limit: refused once the limit is
    // passed (the writer is not waited for), naming the limit and the flag.
    std::fs::remove_file(&fifo).unwrap();
    let feed = Fifo::new(&fifo, vec![b'#'; 1 << 20]);
    let out = run_with_deadline(
        d,
        &[],
        &[
            "show",
            "c.h",
            "--struct",
            "counters",
            "--access",
            "fifo",
            "--max-input-bytes",
            "1000",
        ],
        Duration::from_secs(20),
    );
    drop(feed);
    let line = bad_input(&out);
    assert!(
        line.starts_with(
            "fifo: error: cannot read the access file: it is larger than the limit of 1000 bytes"
        ) && line.contains("--max-input-bytes"),
        "{line}"
    );
    // Over the limit: refused, naming the limit and the flag that raises it.
    let big = format!("{HEADER}/*{}*/\n", "x".repeat(17 << 20));
    std::fs::write(d.join("big.h"), big).unwrap();
    let line = bad_input(&run_in(d, &["show", "big.h", "--struct", "counters"]));
    assert!(line.starts_with("big.h: error: "), "{line}");
    assert!(
        line.contains("16 MiB") && line.contains("--max-input-bytes"),
        "{line}"
    );
    let small = ["show", "c.h", "--struct", "counters", "--max-input-bytes"];
    let line = bad_input(&run_in(d, &[&small[..], &["100"]].concat()));
    assert!(
        line.contains("limit of 100 bytes") && line.contains("--max-input-bytes"),
        "{line}"
    );
    let ok = run_in(d, &[&small[..], &["1000"]].concat());
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
}

// ------------------------------------------------------------------ item 12

#[test]
fn item_12_propose_growth_reads_the_config_like_the_struct() {
    let dir = setup();
    let d = dir.path();
    std::fs::write(d.join("config"), "CONFIG_EXTRA=y\n").unwrap();
    let out = run_in(
        d,
        &[
            "propose", "c.h", "--struct", "counters", "--access", "a.toml", "--config", "config",
            "--growth", "--format", "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let names: Vec<String> = field_offsets(&v["after"])
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert!(names.contains(&"extra".to_string()), "{names:?}");
    let growth = v["growth"].to_string();
    assert!(growth.contains("holder"), "{growth}");
}

// ------------------------------------------------------------------ item 13

const PACKED: &str = "struct whole {\n\
\tchar a;\n\
\tint b;\n\
\tlong c;\n\
\tshort d;\n\
} __attribute__((packed));\n\
struct one {\n\
\tchar a;\n\
\tlong b __attribute__((packed));\n\
\tint c;\n\
\tshort d;\n\
};\n";

#[test]
fn item_13_packed_structs_from_dwarf_and_btf_are_read_and_proposed_right() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.h"), PACKED).unwrap();
    std::fs::write(
        d.join("p.c"),
        "#include \"p.h\"\nstruct whole w; struct one o;\n",
    )
    .unwrap();
    for (flag, obj) in [("-g", "p.o"), ("-gbtf", "pb.o")] {
        let st = Command::new("gcc")
            .args(["-c", flag, "p.c", "-o", obj])
            .current_dir(d)
            .status()
            .unwrap();
        assert!(st.success());
    }
    let access = "[struct.whole]\nread_mostly = [\"a\"]\nlockless_atomic = [\"d\"]\n\
[struct.one]\nread_mostly = [\"a\"]\nlockless_atomic = [\"d\"]\n";
    std::fs::write(d.join("a.toml"), access).unwrap();
    for (source, obj) in [("--dwarf", "p.o"), ("--btf", "pb.o")] {
        for name in ["whole", "one"] {
            let out = run_in(
                d,
                &["show", source, obj, "--struct", name, "--format", "json"],
            );
            assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
            // The proposal, patched into the header, is what gcc compiles.
            let out = run_in(
                d,
                &[
                    "propose", "p.h", source, obj, "--struct", name, "--access", "a.toml",
                    "--format", "json",
                ],
            );
            assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
            let after = json(&out)["after"].clone();
            let diff = run_in(
                d,
                &[
                    "propose", "p.h", source, obj, "--struct", name, "--access", "a.toml",
                ],
            );
            assert_eq!(diff.status.code(), Some(0), "{}", stderr(&diff));
            let work = tempfile::tempdir().unwrap();
            let patched = apply_patch(work.path(), "p.h", PACKED, &stdout(&diff));
            std::fs::write(work.path().join("p.h"), &patched).unwrap();
            let mut prog = String::from(
                "#include <stdio.h>\n#include <stddef.h>\n#include \"p.h\"\nint main(void) {\n",
            );
            prog.push_str(&format!(
                "printf(\"size %zu\\n\", sizeof(struct {name}));\n"
            ));
            for (field, _) in field_offsets(&after) {
                if field.starts_with("__") {
                    continue;
                }
                prog.push_str(&format!(
                    "printf(\"{field} %zu\\n\", offsetof(struct {name}, {field}));\n"
                ));
            }
            prog.push_str("return 0; }\n");
            let got = gcc_run(work.path(), &prog);
            let mut want = format!("size {}\n", after["size"]);
            for (field, offset) in field_offsets(&after) {
                if !field.starts_with("__") {
                    want.push_str(&format!("{field} {offset}\n"));
                }
            }
            assert_eq!(got, want, "{name} from {obj}:\n{patched}");
        }
    }
}

/// Writes `text` at `dir/path`, applies `diff` with `patch -p1`, returns the result.
fn apply_patch(dir: &Path, path: &str, text: &str, diff: &str) -> String {
    std::fs::write(dir.join(path), text).unwrap();
    std::fs::write(dir.join("fix.patch"), diff).unwrap();
    let out = Command::new("patch")
        .args(["-p1", "--batch", "-i", "fix.patch"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{diff}",
        String::from_utf8_lossy(&out.stdout)
    );
    std::fs::read_to_string(dir.join(path)).unwrap()
}

// ------------------------------------------------------------------ item 14

#[test]
fn item_14_self_referencing_types_and_overflowing_members_are_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // typedef T T; struct s { long a; T t; }
    let mut b = Btf::new();
    b.ty("long", INT, 0, 8).word(64); // 1
    b.ty("T", TYPEDEF, 0, 2); // 2: refers to itself
    b.ty("s", STRUCT, 2, 16)
        .member("a", 1, 0)
        .member("t", 2, 64);
    std::fs::write(d.join("typedef.btf"), b.bytes()).unwrap();
    // An array of itself.
    let mut b = Btf::new();
    b.ty("long", INT, 0, 8).word(64); // 1
    b.ty("", ARRAY, 0, 0).word(2).word(1).word(4); // 2: element type 2
    b.ty("s", STRUCT, 2, 16)
        .member("a", 1, 0)
        .member("t", 2, 64);
    std::fs::write(d.join("array.btf"), b.bytes()).unwrap();
    // Structs that contain themselves by value: s holding an s (at offset 0,
    // so that it fits in the size), and s holding a t that holds an s.
    let mut b = Btf::new();
    b.ty("long", INT, 0, 8).word(64); // 1
    b.ty("s", STRUCT, 2, 16)
        .member("a", 1, 0)
        .member("self", 2, 0); // 2
    std::fs::write(d.join("self.btf"), b.bytes()).unwrap();
    let mut b = Btf::new();
    b.ty("long", INT, 0, 8).word(64); // 1
    b.ty("t", STRUCT, 2, 16).member("a", 1, 0).member("u", 3, 0); // 2
    b.ty("s", STRUCT, 2, 16).member("a", 1, 0).member("t", 2, 0); // 3
    std::fs::write(d.join("loop.btf"), b.bytes()).unwrap();
    for file in ["self.btf", "loop.btf"] {
        for args in [
            vec!["show", "--btf", file, "--struct", "s"],
            vec!["growth", "--btf", file, "--struct", "s", "--size", "32"],
            vec!["scan", "--btf", file],
        ] {
            let line = bad_input(&run_in(d, &args));
            assert!(line.contains("contains itself by value"), "{line}");
        }
    }
    for file in ["typedef.btf", "array.btf"] {
        for args in [
            vec!["show", "--btf", file, "--struct", "s"],
            vec!["growth", "--btf", file, "--struct", "s", "--size", "32"],
            vec!["scan", "--btf", file, "--packable"],
        ] {
            let line = bad_input(&run_in(d, &args));
            assert!(line.contains("refers to itself"), "{line}");
        }
    }
    // growth no longer takes a struct smaller than its members.
    let mut b = Btf::new();
    b.ty("long", INT, 0, 8).word(64);
    b.ty("s", STRUCT, 2, 8).member("a", 1, 0).member("b", 1, 64);
    std::fs::write(d.join("small.btf"), b.bytes()).unwrap();
    let line = bad_input(&run_in(
        d,
        &[
            "growth",
            "--btf",
            "small.btf",
            "--struct",
            "s",
            "--size",
            "32",
        ],
    ));
    assert!(
        line.contains("struct s is 8 bytes, but member `b` ends at byte 16"),
        "{line}"
    );
}

// ------------------------------------------------------------------ item 16

#[test]
fn item_16_messages_are_one_clipped_line_with_help_and_place() {
    let dir = setup();
    let d = dir.path();
    // A 10 MB field name in the access file is not echoed in full.
    let name = "n".repeat(10 << 20);
    std::fs::write(
        d.join("long.toml"),
        format!("[struct.counters]\nread_mostly = [\"{name}\"]\n"),
    )
    .unwrap();
    let line = bad_input(&run_in(
        d,
        &[
            "show",
            "c.h",
            "--struct",
            "counters",
            "--access",
            "long.toml",
        ],
    ));
    assert!(line.starts_with("long.toml:2:"), "{line}");
    assert!(line.contains("bytes]"), "{line}");
    // A 10 MB config value likewise.
    std::fs::write(
        d.join("config"),
        format!("CONFIG_X={}\n", "9".repeat(10 << 20)),
    )
    .unwrap();
    let out = run_in(
        d,
        &["show", "c.h", "--struct", "counters", "--config", "config"],
    );
    well_behaved(&out);
    assert!(stderr(&out).len() < 2000);
    // Invalid UTF-8 says what and where, not "check the path".
    std::fs::write(
        d.join("bad.toml"),
        b"[struct.counters]\nread_mostly = [\"con\xfffig\"]\n",
    )
    .unwrap();
    let line = bad_input(&run_in(
        d,
        &[
            "show", "c.h", "--struct", "counters", "--access", "bad.toml",
        ],
    ));
    assert!(
        line.starts_with("bad.toml:2:20: error: the access file is not valid UTF-8: byte 0xff"),
        "{line}"
    );
    assert!(!line.contains("check the path"), "{line}");
    let line = bad_input(&run_in(
        d,
        &[
            "show",
            "c.h",
            "--struct",
            "counters",
            "--access",
            "missing.toml",
        ],
    ));
    assert!(
        line.starts_with("missing.toml: error: cannot read the access file"),
        "{line}"
    );
}

// ------------------------------------------------- fuzz: access TOML (CLI)

/// Edits of an access file: overwrite, insert or delete bytes from a
/// dictionary of TOML and access-file tokens, or single raw bytes.
fn mutate(seed: &[u8], edits: &[(usize, u8, usize)]) -> Vec<u8> {
    const TOKENS: &[&str] = &[
        "[",
        "]",
        "[[",
        "\"",
        "'",
        "=",
        ",",
        "\n",
        "#",
        "{",
        "}",
        ".",
        "[struct.counters]",
        "[types]",
        "[defines]",
        "read_mostly",
        "lockless_atomic",
        "locked_write.lock",
        "cold",
        "pinned",
        "offset",
        "config",
        "hits",
        "flags",
        "9223372036854775807",
        "-1",
        "0x",
        "1e400",
        "\"\"\"",
        "\\u0000",
        "\u{feff}",
        "\u{ff}",
        "counters.config",
        "hits:0",
    ];
    let mut out = seed.to_vec();
    for &(at, op, pick) in edits {
        let at = if out.is_empty() {
            0
        } else {
            at % (out.len() + 1)
        };
        match op % 4 {
            0 => {
                let t = TOKENS[pick % TOKENS.len()].as_bytes();
                out.splice(at..at, t.iter().copied());
            }
            1 => {
                let end = (at + 1 + pick % 8).min(out.len());
                out.drain(at.min(end)..end);
            }
            2 => {
                if at < out.len() {
                    out[at] = pick as u8;
                }
            }
            _ => {
                let t = TOKENS[pick % TOKENS.len()].as_bytes();
                let end = (at + t.len()).min(out.len());
                out.splice(at..end, t.iter().copied());
            }
        }
    }
    out
}

const FUZZ_ACCESS: &str = "offset = 0\n\
[struct.counters]\n\
read_mostly = [\"config\"]\n\
lockless_atomic = [\"hits\"]\n\
locked_write.lock = [\"flags\"]\n\
pinned = [\"config\"]\n\
[types]\n\
atomic_t = { size = 4, align = 4 }\n\
[defines]\n\
CONFIG_EXTRA = 1\n";

proptest! {
    // Each case runs the binary twice (show, propose): 128 cases take about
    // 15 s in a debug build.
    #![proptest_config(crate::support::sweep::proptest_config(128, 32))]

    #[test]
    fn fuzz_access_toml_gives_a_layout_or_one_line(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<usize>()), 1..6)
    ) {
        let dir = setup();
        let d = dir.path();
        std::fs::write(d.join("f.toml"), mutate(FUZZ_ACCESS.as_bytes(), &edits)).unwrap();
        for cmd in ["show", "propose"] {
            let out = run_with_deadline(
                d,
                &[],
                &[cmd, "c.h", "--struct", "counters", "--access", "f.toml", "--format", "json"],
                Duration::from_secs(60),
            );
            well_behaved(&out);
            if out.status.code() == Some(0) && cmd == "propose" {
                // A proposal is a layout: every field placed once, in the size.
                let v = json(&out);
                let size = v["after"]["size"].as_u64().unwrap();
                for (field, offset) in field_offsets(&v["after"]) {
                    prop_assert!(offset < size.max(1), "{field} at {offset} of {size}");
                }
            }
        }
    }
}

// ------------------------------------------------------- fuzz: BTF (CLI)

const FUZZ_C: &str = "typedef struct { int counter; } atomic_t;\n\
typedef struct { long counter; } atomic_long_t;\n\
struct inner { short s; char c; };\n\
struct hot {\n\
\tlong config;\n\
\tatomic_t refs;\n\
\tunsigned int a:3, b:9, c:20;\n\
\tstruct inner in[3];\n\
\tatomic_long_t count;\n\
\tchar name[13];\n\
\tvoid *ptr;\n\
\tlong tail[];\n\
};\n\
struct outer { struct hot h; long x; } __attribute__((aligned(64)));\n\
struct outer o;\n";

/// Raw BTF of [`FUZZ_C`] (`gcc -gbtf`, then `objcopy --dump-section`).
fn fuzz_btf_seed() -> &'static [u8] {
    static SEED: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    SEED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("f.c"), FUZZ_C).unwrap();
        let ok = Command::new("gcc")
            .args(["-gbtf", "-c", "f.c", "-o", "f.o"])
            .current_dir(d)
            .status()
            .unwrap();
        assert!(ok.success());
        let ok = Command::new("objcopy")
            .args(["--dump-section", ".BTF=f.btf", "f.o"])
            .current_dir(d)
            .status()
            .unwrap();
        assert!(ok.success());
        std::fs::read(d.join("f.btf")).unwrap()
    })
}

proptest! {
    // Each case runs the binary three times: 64 cases take about 10 s in a
    // debug build. The library-level targets (layout-core/tests/it/fuzz_btf_dwarf.rs)
    // run many more.
    #![proptest_config(crate::support::sweep::proptest_config(64, 16))]

    #[test]
    fn fuzz_btf_through_the_command_line(
        edits in proptest::collection::vec((any::<usize>(), prop_oneof![
            Just(0u32), Just(1), Just(0x8000_0000), Just(0xffff_ffff), Just(0xffff_ffc0),
            (0u32..32), any::<u32>(),
        ]), 1..5)
    ) {
        let mut bytes = fuzz_btf_seed().to_vec();
        for (at, word) in edits {
            let i = (24 + at % bytes.len().saturating_sub(28).max(1)) & !3;
            if i + 4 <= bytes.len() {
                bytes[i..i + 4].copy_from_slice(&word.to_le_bytes());
            }
        }
        let dir = setup();
        let d = dir.path();
        std::fs::write(d.join("f.btf"), &bytes).unwrap();
        std::fs::write(
            d.join("f.toml"),
            "[struct.hot]\nread_mostly = [\"config\"]\nlockless_atomic = [\"refs\", \"count\"]\n",
        )
        .unwrap();
        for args in [
            &["show", "--btf", "f.btf", "--struct", "hot", "--access", "f.toml"][..],
            &["propose", "--btf", "f.btf", "--struct", "hot", "--access", "f.toml", "--format", "json", "--growth"],
            &["scan", "--btf", "f.btf"],
        ] {
            let out = run_with_deadline(d, &[], args, Duration::from_secs(60));
            well_behaved(&out);
        }
    }
}

/// `show` on `header` with `access` (struct `ring`), as JSON.
fn show_ring(header: &str, access: &str) -> (Option<i32>, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("r.h"), header).unwrap();
    std::fs::write(dir.path().join("r.toml"), access).unwrap();
    let args = ["show", "r.h", "--struct", "ring", "--access", "r.toml"];
    let text = run_in(dir.path(), &args);
    let mut with_json = args.to_vec();
    with_json.extend(["--format", "json"]);
    let out = run_in(dir.path(), &with_json);
    assert_eq!(
        out.status.code(),
        text.status.code(),
        "the text and the JSON of show disagree:\n{}",
        stdout(&text)
    );
    (out.status.code(), json(&out))
}

/// The elements of a flexible array start at its offset: the line that
/// holds that offset is shared with the fields before it, and `show`
/// counts the conflict there as `propose` and the verifier do.
#[test]
fn show_counts_a_flexible_array_tail_in_either_direction() {
    let read_mostly_tail =
        "struct ring {\n\tatomic_long_t head;\n\tunsigned int mask;\n\tlong slots[];\n};\n";
    let access = "[struct.ring]\nread_mostly = [\"slots\"]\nlockless_atomic = [\"head\"]\n";
    let (code, v) = show_ring(read_mostly_tail, access);
    assert_eq!(code, Some(1), "{v:#}");
    let conflicts = v["hard_conflicts"].as_array().unwrap();
    assert!(!conflicts.is_empty(), "{v:#}");
    assert_eq!(conflicts[0]["lockless"], serde_json::json!(["head"]));
    assert_eq!(conflicts[0]["read_mostly"], serde_json::json!(["slots"]));

    let lockless_tail = "struct ring {\n\tunsigned long config;\n\tatomic_long_t counts[];\n};\n";
    let access = "[struct.ring]\nread_mostly = [\"config\"]\nlockless_atomic = [\"counts\"]\n";
    let (code, v) = show_ring(lockless_tail, access);
    assert_eq!(code, Some(1), "{v:#}");
    let conflicts = v["hard_conflicts"].as_array().unwrap();
    assert_eq!(conflicts[0]["lockless"], serde_json::json!(["counts"]));
    assert_eq!(conflicts[0]["read_mostly"], serde_json::json!(["config"]));

    // A line apart, nothing is shared.
    let apart =
        "struct ring {\n\tunsigned long config;\n\tlong pad[7];\n\tatomic_long_t counts[];\n};\n";
    let (code, v) = show_ring(apart, access);
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["hard_conflicts"], serde_json::json!([]));
}
