//! The BTF and DWARF readers against the compiler.
//!
//! `tests/fixtures/bin/layouts.c` is compiled with `gcc -g -c` (DWARF) and
//! `gcc -gbtf -c` (a `.BTF` section); an oracle program generated from the
//! fixture's types prints gcc's own `sizeof`, `_Alignof` and `offsetof` for
//! every struct and member, and both databases must agree with it. Needs gcc
//! (12 or later for -gbtf) and objcopy (binutils). The kernel tests run where
//! `/sys/kernel/btf/vmlinux` exists; the pahole cross-check where pahole does.

#![cfg(all(feature = "btf", feature = "dwarf"))]

use layout_core::btf::{load_btf, parse_btf};
use layout_core::dwarf::{load_dwarf, parse_dwarf};
use layout_core::typedb::{Aggregate, AggregateKind, Member, NameKind, TypeDb};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bin")
}

fn work_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("btf_dwarf");
    std::fs::create_dir_all(&dir).expect("create the test's work directory");
    dir
}

fn run(cmd: &mut Command) -> Vec<u8> {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (install gcc and binutils)"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn gcc(flags: &[&str], source: &Path, output: &Path) {
    run(Command::new("gcc")
        .args(flags)
        .arg("-c")
        .arg(source)
        .arg("-o")
        .arg(output));
}

/// The fixture objects, compiled once.
struct Objects {
    dwarf: PathBuf,
    /// DWARF 4: bitfields as `DW_AT_bit_offset`.
    dwarf4: PathBuf,
    /// DWARF 4 without `DW_AT_alignment`: alignment must be inferred.
    dwarf4_strict: PathBuf,
    /// layouts.c and second_unit.c linked: two units repeating types.
    program: PathBuf,
    /// The same with type units (`-fdebug-types-section`), DWARF 5 and 4.
    program_type_units: PathBuf,
    program_type_units4: PathBuf,
    /// An object with type units in COMDAT sections (not readable unlinked).
    type_units_object: PathBuf,
    /// -g3: macro sections in COMDAT groups, which the reader skips.
    with_macros: PathBuf,
    btf: PathBuf,
    /// The raw `.BTF` section of `btf`.
    raw_btf: PathBuf,
    /// An object with neither BTF nor DWARF.
    plain: PathBuf,
}

fn objects() -> &'static Objects {
    static OBJECTS: OnceLock<Objects> = OnceLock::new();
    OBJECTS.get_or_init(|| {
        let dir = work_dir();
        let source = fixtures().join("layouts.c");
        let objects = Objects {
            dwarf: dir.join("layouts.dwarf.o"),
            dwarf4: dir.join("layouts.dwarf4.o"),
            dwarf4_strict: dir.join("layouts.dwarf4-strict.o"),
            program: dir.join("layouts-program"),
            program_type_units: dir.join("layouts-program-tu"),
            program_type_units4: dir.join("layouts-program-tu4"),
            type_units_object: dir.join("layouts.tu.o"),
            with_macros: dir.join("layouts.g3.o"),
            btf: dir.join("layouts.btf.o"),
            raw_btf: dir.join("layouts.btf"),
            plain: dir.join("layouts.plain.o"),
        };
        gcc(&["-g"], &source, &objects.dwarf);
        gcc(&["-gdwarf-4"], &source, &objects.dwarf4);
        gcc(
            &["-gdwarf-4", "-gstrict-dwarf"],
            &source,
            &objects.dwarf4_strict,
        );
        let link = |flags: &[&str], output: &Path| {
            run(Command::new("gcc")
                .args(flags)
                .arg(&source)
                .arg(fixtures().join("second_unit.c"))
                .arg("-o")
                .arg(output));
        };
        link(&["-g"], &objects.program);
        link(
            &["-g", "-fdebug-types-section"],
            &objects.program_type_units,
        );
        link(
            &["-gdwarf-4", "-fdebug-types-section"],
            &objects.program_type_units4,
        );
        gcc(
            &["-g", "-fdebug-types-section"],
            &source,
            &objects.type_units_object,
        );
        gcc(&["-g3"], &source, &objects.with_macros);
        gcc(&["-gbtf"], &source, &objects.btf);
        gcc(&[], &source, &objects.plain);
        let dump = format!(".BTF={}", objects.raw_btf.display());
        run(Command::new("objcopy")
            .arg("--dump-section")
            .arg(dump)
            .arg(&objects.btf));
        objects
    })
}

fn dwarf_db() -> &'static TypeDb {
    static DB: OnceLock<TypeDb> = OnceLock::new();
    DB.get_or_init(|| load_dwarf(&objects().dwarf).unwrap_or_else(|e| panic!("{e}")))
}

fn btf_db() -> &'static TypeDb {
    static DB: OnceLock<TypeDb> = OnceLock::new();
    DB.get_or_init(|| load_btf(&objects().btf).unwrap_or_else(|e| panic!("{e}")))
}

fn dwarf4_db() -> &'static TypeDb {
    static DB: OnceLock<TypeDb> = OnceLock::new();
    DB.get_or_init(|| load_dwarf(&objects().dwarf4).unwrap_or_else(|e| panic!("{e}")))
}

fn strict_db() -> &'static TypeDb {
    static DB: OnceLock<TypeDb> = OnceLock::new();
    DB.get_or_init(|| load_dwarf(&objects().dwarf4_strict).unwrap_or_else(|e| panic!("{e}")))
}

/// Every reading of the fixture, named for messages.
fn all_dbs() -> [(&'static TypeDb, &'static str); 4] {
    [
        (dwarf_db(), "DWARF 5"),
        (dwarf4_db(), "DWARF 4"),
        (strict_db(), "strict DWARF 4"),
        (btf_db(), "BTF"),
    ]
}

/// gcc's answers: `S type size align` and `M type path offset size align`.
struct Oracle {
    structs: Vec<(String, u64, u64)>,
    members: Vec<(String, String, u64, u64, u64)>,
}

/// Named members reachable from `agg` through anonymous members, with their
/// offsets from the start of `agg` (what `offsetof` can name).
fn reachable<'a>(db: &'a TypeDb, agg: &'a Aggregate, base: u64, out: &mut Vec<(&'a Member, u64)>) {
    for (i, m) in agg.members.iter().enumerate() {
        if m.name.is_empty() {
            if let Some(inner) = db.member_aggregate(agg, i) {
                reachable(db, inner, base + m.offset, out);
            }
        } else {
            out.push((m, base + m.offset));
        }
    }
}

fn oracle() -> &'static Oracle {
    static ORACLE: OnceLock<Oracle> = OnceLock::new();
    ORACLE.get_or_init(|| {
        let db = dwarf_db();
        let mut c = String::from(
            "#include <stdio.h>\n#include <stddef.h>\n#include \"layouts.h\"\nint main(void)\n{\n",
        );
        for agg in db.aggregates().filter(|a| !a.is_anonymous()) {
            let t = agg.display_name();
            writeln!(c, "\tprintf(\"S {t}|%zu|%zu\\n\", sizeof({t}), _Alignof({t}));").unwrap();
            let mut members = Vec::new();
            reachable(db, agg, 0, &mut members);
            for (m, _) in members.into_iter().filter(|(m, _)| !m.is_bitfield()) {
                let n = &m.name;
                let size = if m.count == 0 {
                    "(size_t)0".to_string()
                } else {
                    format!("sizeof((({t} *)0)->{n})")
                };
                writeln!(
                    c,
                    "\tprintf(\"M {t}|{n}|%zu|%zu|%zu\\n\", offsetof({t}, {n}), {size}, (size_t)__alignof__((({t} *)0)->{n}));"
                )
                .unwrap();
            }
        }
        c.push_str("\treturn 0;\n}\n");
        let dir = work_dir();
        let source = dir.join("oracle.c");
        std::fs::write(&source, c).expect("write oracle.c");
        let exe = dir.join("oracle");
        run(Command::new("gcc")
            .arg("-I")
            .arg(fixtures())
            .arg(&source)
            .arg("-o")
            .arg(&exe));
        let text = String::from_utf8(run(&mut Command::new(&exe))).expect("oracle output is text");
        let mut oracle = Oracle { structs: Vec::new(), members: Vec::new() };
        for line in text.lines() {
            let (kind, rest) = line.split_at(2);
            let f: Vec<&str> = rest.split('|').collect();
            let num = |i: usize| f[i].parse::<u64>().expect("oracle prints numbers");
            match kind {
                "S " => oracle.structs.push((f[0].to_string(), num(1), num(2))),
                _ => oracle.members.push((f[0].to_string(), f[1].to_string(), num(2), num(3), num(4))),
            }
        }
        oracle
    })
}

/// The member called `path` of `agg`, looking through anonymous members,
/// with its offset from the start of `agg`.
fn member<'a>(db: &'a TypeDb, agg: &'a Aggregate, path: &str) -> (&'a Member, u64) {
    let mut all = Vec::new();
    reachable(db, agg, 0, &mut all);
    all.into_iter()
        .find(|(m, _)| m.name == path)
        .unwrap_or_else(|| panic!("{} has no member {path}", agg.display_name()))
}

fn get<'a>(db: &'a TypeDb, name: &str) -> &'a Aggregate {
    db.find_struct(name).unwrap_or_else(|e| panic!("{e}"))
}

/// Alignment of a member as `__alignof__` reports it.
fn member_align(agg: &Aggregate, m: &Member) -> u64 {
    let attr = m.attr_align.unwrap_or(1);
    if agg.packed {
        attr
    } else {
        m.align.max(attr)
    }
}

/// Where BTF inference cannot match gcc, and what it infers instead
/// (see the alignment rules in layout_core::typedb).
const BTF_ALIGN_EXCEPTIONS: &[(&str, u64, u64)] = &[
    // (type, gcc's alignment, inferred): attributes that left no padding.
    ("struct aligned_invisible", 64, 8),
    ("struct line_padding", 64, 1),
    // Tail padding 40 -> 64 is explained by 32 or 64; inference takes 64.
    ("struct aligned32", 32, 64),
    // Packed to size 6, aligned(4) pads to 8: explained by 4 or 8.
    ("struct packed_aligned", 4, 8),
];

#[test]
fn fixture_objects_have_all_types() {
    for db in [dwarf_db(), btf_db()] {
        for name in [
            "arrays",
            "nested",
            "anonymous",
            "bitfields",
            "bits_after_char",
            "counter_like",
            "member_aligned",
            "struct_aligned",
            "aligned32",
            "aligned_invisible",
            "aligned16_big",
            "embeds_aligned16",
            "packed_misaligned",
            "packed_odd_size",
            "packed_aligned",
            "holds_packed",
            "pointers",
            "wide_types",
            "plain_union",
            "aligned_union",
            "embedder_a",
            "embedder_b",
            "line_padding",
            "list_node",
            "atomic64_like_t",
        ] {
            assert!(
                db.find(name).is_some(),
                "{name} missing from {}",
                db.source().display()
            );
        }
        assert_eq!(get(db, "bitfields").members.len(), 9);
        assert_eq!(get(db, "anonymous").members.len(), 4);
        assert_eq!(get(db, "counter_like").members.len(), 8);
    }
}

#[test]
fn sizes_and_alignments_match_gcc() {
    let oracle = oracle();
    assert!(
        oracle.structs.len() >= 25,
        "oracle saw {} types",
        oracle.structs.len()
    );
    for (db, reader) in all_dbs() {
        for (ty, size, align) in &oracle.structs {
            let agg = get(db, ty);
            assert_eq!(agg.size, *size, "{reader}: sizeof({ty})");
            let expected = match BTF_ALIGN_EXCEPTIONS.iter().find(|e| e.0 == ty) {
                Some(&(_, gcc, inferred)) if db.align_inferred() => {
                    assert_eq!(*align, gcc, "the exception list is out of date for {ty}");
                    inferred
                }
                _ => *align,
            };
            assert_eq!(agg.align, expected, "{reader}: _Alignof({ty})");
        }
    }
    assert!(!dwarf_db().align_inferred());
    assert!(!dwarf4_db().align_inferred());
    assert!(strict_db().align_inferred());
    assert!(btf_db().align_inferred());
}

#[test]
fn member_offsets_sizes_and_alignments_match_gcc() {
    let oracle = oracle();
    assert!(
        oracle.members.len() >= 80,
        "oracle saw {} members",
        oracle.members.len()
    );
    for (db, reader) in all_dbs() {
        for (ty, name, offset, size, align) in &oracle.members {
            let agg = get(db, ty);
            let (m, at) = member(db, agg, name);
            assert_eq!(at, *offset, "{reader}: offsetof({ty}, {name})");
            assert_eq!(m.size, *size, "{reader}: sizeof({ty}.{name})");
            // A member whose alignment BTF cannot see keeps its type's inferred one.
            let exception = BTF_ALIGN_EXCEPTIONS.iter().find(|e| m.ty == e.0);
            match exception {
                Some(&(_, _, inferred)) if db.align_inferred() => assert_eq!(m.align, inferred),
                _ => assert_eq!(
                    member_align(agg, m),
                    *align,
                    "{reader}: __alignof__({ty}.{name})"
                ),
            }
        }
    }
}

#[test]
fn both_readers_agree_on_every_member() {
    let (dwarf, btf) = (dwarf_db(), btf_db());
    for d in dwarf.aggregates() {
        let b = btf
            .find(&d.name)
            .unwrap_or_else(|| panic!("BTF lacks {}", d.display_name()));
        assert_eq!(
            (b.kind, b.size, b.name_kind),
            (d.kind, d.size, d.name_kind),
            "{}",
            d.name
        );
        assert_eq!(b.members.len(), d.members.len(), "{}", d.name);
        for (bm, dm) in b.members.iter().zip(&d.members) {
            let what = format!("{}.{}", d.name, dm.name);
            assert_eq!(bm.name, dm.name, "{what}");
            assert_eq!(bm.offset, dm.offset, "{what}");
            assert_eq!(
                (bm.bit_offset, bm.bit_size),
                (dm.bit_offset, dm.bit_size),
                "{what}"
            );
            assert_eq!((bm.size, bm.count), (dm.size, dm.count), "{what}");
            assert_eq!(bm.aggregate, dm.aggregate, "{what}");
        }
        let (bs, ds) = (btf.to_model(b), dwarf.to_model(d));
        // Fields of a type whose alignment BTF cannot see may differ in alignment only.
        let facts = |s: &layout_core::Struct| -> Vec<_> {
            s.fields
                .iter()
                .map(|f| {
                    let unseen = BTF_ALIGN_EXCEPTIONS.iter().any(|e| f.ty == e.0);
                    let align = if unseen { None } else { Some(f.align) };
                    (
                        f.name.clone(),
                        same_dims(&f.ty),
                        f.size,
                        align,
                        f.original_offset,
                    )
                })
                .collect()
        };
        assert_eq!(facts(&bs), facts(&ds), "to_model({})", d.name);
        if !BTF_ALIGN_EXCEPTIONS.iter().any(|e| e.0 == d.display_name()) {
            assert_eq!(bs.min_align, ds.min_align, "to_model({}).min_align", d.name);
        }
    }
}

#[test]
fn dwarf_versions_and_repeated_units_read_the_same() {
    let dwarf = dwarf_db();
    // DWARF 4 encodes bitfields from the most significant bit; same layout.
    let dwarf4 = dwarf4_db();
    assert_eq!(dwarf4.len(), dwarf.len());
    for (a, b) in dwarf4.aggregates().zip(dwarf.aggregates()) {
        assert_eq!(a, b);
    }
    // Strict DWARF 4 states no alignment: inferred, it reads like BTF.
    let strict = strict_db();
    for a in strict.aggregates() {
        let b = btf_db().find(&a.name).expect("BTF has every type");
        assert_eq!(
            (a.size, a.align, a.packed, a.attr_align),
            (b.size, b.align, b.packed, b.attr_align),
            "{}",
            a.name
        );
    }
    // Two units repeat the shared types: each is kept once.
    let program = load_dwarf(&objects().program).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(program.len(), dwarf.len());
    for a in program.aggregates() {
        assert_eq!(Some(a), dwarf.find(&a.name), "{}", a.name);
    }
    // Type units (DWARF 5 in .debug_info, DWARF 4 in .debug_types) and -g3 read the same.
    for linked in [
        &objects().program_type_units,
        &objects().program_type_units4,
        &objects().with_macros,
    ] {
        let db = load_dwarf(linked).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(db.len(), dwarf.len(), "{}", linked.display());
        for a in db.aggregates() {
            assert_eq!(
                Some(a),
                dwarf.find(&a.name),
                "{} in {}",
                a.name,
                linked.display()
            );
        }
    }
    let mut found: Vec<String> = program
        .embedders("list_node")
        .into_iter()
        .map(|(a, i)| format!("{}.{}", a.name, a.members[i].name))
        .collect();
    found.sort();
    assert_eq!(found.len(), 6, "{found:?}");
}

#[test]
fn bitfields_sit_in_their_storage_units() {
    for (db, _) in all_dbs() {
        let agg = get(db, "bitfields");
        let bits: Vec<(&str, u64, Option<u64>, Option<u64>)> = agg
            .members
            .iter()
            .map(|m| (m.name.as_str(), m.offset, m.bit_offset, m.bit_size))
            .collect();
        assert_eq!(
            bits,
            [
                ("tag", 0, None, None),
                ("low", 0, Some(8), Some(3)),
                ("mid", 0, Some(11), Some(5)),
                ("wide", 4, Some(32), Some(30)),
                ("next", 8, Some(64), Some(4)),
                ("small", 8, Some(68), Some(4)),
                ("small2", 9, Some(72), Some(4)),
                ("half", 10, Some(80), Some(9)),
                ("tail", 16, None, None),
            ]
        );
        let model = db.to_model(agg);
        let fields: Vec<(&str, u64, u64, Option<u64>)> = model
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.size, f.align, f.original_offset))
            .collect();
        assert_eq!(
            fields,
            [
                ("tag", 1, 1, Some(0)),
                // Shares the unit of `tag`: starts at its first bit's byte.
                ("low:mid", 1, 1, Some(1)),
                ("wide", 4, 4, Some(4)),
                ("next:small:small2:half", 4, 4, Some(8)),
                ("tail", 8, 8, Some(16)),
            ]
        );
    }
}

/// A multi-dimensional array type with its dimensions sorted: gcc 12 writes
/// them innermost first in BTF (the BTF convention, which DWARF and pahole
/// follow, is outermost first), so only the set of dimensions is portable.
fn same_dims(text: &str) -> (String, Vec<String>) {
    let base = text.find('[').map_or(text, |at| &text[..at]).to_string();
    let mut dims: Vec<String> = text.split('[').skip(1).map(str::to_string).collect();
    dims.sort();
    (base, dims)
}

#[test]
fn type_text_is_c() {
    for db in [dwarf_db(), btf_db()] {
        let ty = |agg: &str, name: &str| member(db, get(db, agg), name).0.ty.clone();
        let dims = |text: String| same_dims(&text);
        assert_eq!(
            dims(ty("arrays", "grid")),
            dims("unsigned long[4][2]".into())
        );
        assert_eq!(ty("arrays", "lists"), "struct list_node[5]");
        assert_eq!(
            dims(ty("arrays", "counters")),
            dims("atomic_long_like_t[2][3]".into())
        );
        assert_eq!(ty("arrays", "tail"), "int[]");
        assert_eq!(ty("pointers", "name"), "const char *");
        assert_eq!(ty("pointers", "fixed"), "char *const");
        assert_eq!(
            ty("pointers", "callback"),
            "void (*)(struct pointers *, int)"
        );
        assert_eq!(ty("pointers", "table"), "int (*)[4]");
        assert_eq!(ty("pointers", "reg"), "const volatile unsigned long *");
        assert_eq!(ty("pointers", "vararg"), "int (*)(const char *, ...)");
        assert_eq!(ty("nested", "value"), "union {...}");
        assert_eq!(ty("wide_types", "e"), "enum small_enum");
        assert_eq!(ty("wide_types", "big"), "__int128");
        assert_eq!(ty("wide_types", "w"), "word_t");
    }
}

#[test]
fn arrays_count_elements_and_name_their_aggregate() {
    for db in [dwarf_db(), btf_db()] {
        let agg = get(db, "arrays");
        let facts: Vec<(&str, u64, u64, Option<&str>)> = agg
            .members
            .iter()
            .map(|m| (m.name.as_str(), m.count, m.size, m.aggregate.as_deref()))
            .collect();
        assert_eq!(
            facts,
            [
                ("grid", 8, 64, None),
                ("bytes", 3, 3, None),
                ("lists", 5, 80, Some("struct list_node")),
                ("counters", 6, 48, Some("atomic64_like_t")),
                ("tail", 0, 0, None),
            ]
        );
    }
}

#[test]
fn anonymous_aggregates_get_names_that_find_resolves() {
    for db in [dwarf_db(), btf_db()] {
        let agg = get(db, "anonymous");
        let union = agg.members[1]
            .aggregate
            .as_deref()
            .expect("the union is an aggregate");
        assert_eq!(union, "(anon union at anonymous.@8)");
        let inner = get(db, union);
        assert_eq!(inner.kind, AggregateKind::Union);
        assert_eq!(inner.name_kind, NameKind::Anonymous);
        assert_eq!(
            inner.members[1].aggregate.as_deref(),
            Some("(anon struct at anonymous.@8.@0)")
        );
        assert_eq!(
            inner.members[2].aggregate.as_deref(),
            Some("(anon struct at anonymous.@8.@0:1)")
        );
        assert_eq!(member(db, agg, "refcount").1, 16);
        assert_eq!(
            agg.members[2].aggregate.as_deref(),
            Some("(anon struct at anonymous.@24)")
        );
        assert_eq!(
            get(db, "nested").members[2].aggregate.as_deref(),
            Some("(anon union at nested.value)")
        );
        // Typedef'd anonymous structs take the typedef's name; typedefs resolve.
        let atomic = get(db, "atomic_long_like_t");
        assert_eq!(
            (atomic.name.as_str(), atomic.name_kind),
            ("atomic64_like_t", NameKind::Typedef)
        );
        assert_eq!(atomic.display_name(), "atomic64_like_t");
        assert!(db.find("struct atomic64_like_t").is_none());
        assert_eq!(get(db, "struct list_node").name, "list_node");
        assert_eq!(get(db, "union plain_union").kind, AggregateKind::Union);
        let model = db.to_model(agg);
        let names: Vec<&str> = model.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["before", "anon_union@8", "anon_struct@24", "after"]);
    }
}

#[test]
fn alignment_attributes_are_found() {
    for db in [dwarf_db(), btf_db()] {
        let agg = get(db, "member_aligned");
        let attrs: Vec<(&str, Option<u64>)> = agg
            .members
            .iter()
            .map(|m| (m.name.as_str(), m.attr_align))
            .collect();
        assert_eq!(
            attrs,
            [
                ("c", None),
                ("hot", Some(64)),
                ("x", None),
                ("y", Some(16)),
                ("z", None)
            ]
        );
        assert_eq!(get(db, "struct_aligned").attr_align, Some(64));
        // The padding type is 64-aligned; which of type or member carries it
        // differs (BTF cannot tell), the model field is 64-aligned either way.
        let counter = get(db, "counter_like");
        assert_eq!((counter.size, counter.align), (192, 64));
        let model = db.to_model(counter);
        let pad = &model.fields[model.field_index("_pad1_").expect("_pad1_ field")];
        assert_eq!(
            (pad.size, pad.align, pad.original_offset),
            (0, 64, Some(64))
        );
        assert_eq!(model.min_align, 1);
        // An embedding at offset 16 caps the inferred alignment of aligned16_big.
        assert_eq!(get(db, "aligned16_big").align, 16);
    }
    let dwarf = dwarf_db();
    assert_eq!(get(dwarf, "line_padding").align, 64);
    assert_eq!(get(dwarf, "aligned32").attr_align, Some(32));
}

#[test]
fn packed_structs_are_recognised() {
    for db in [dwarf_db(), btf_db()] {
        for name in ["packed_misaligned", "packed_odd_size", "packed_aligned"] {
            assert!(get(db, name).packed, "{name} in {}", db.source().display());
        }
        for name in ["holds_packed", "bitfields", "member_aligned", "wide_types"] {
            assert!(!get(db, name).packed, "{name} in {}", db.source().display());
        }
        assert_eq!(get(db, "packed_misaligned").align, 1);
        assert_eq!(get(db, "packed_odd_size").align, 1);
    }
}

#[test]
fn embedders_are_by_value_only() {
    for db in [dwarf_db(), btf_db()] {
        let mut found: Vec<(String, String)> = db
            .embedders("list_node")
            .into_iter()
            .map(|(agg, i)| (agg.name.clone(), agg.members[i].name.clone()))
            .collect();
        found.sort();
        let expected = [
            ("(anon union at anonymous.@8)", "lru"),
            ("(anon union at embedder_b.@0)", "in_union"),
            ("arrays", "lists"),
            ("embedder_a", "many"),
            ("embedder_a", "one"),
            ("nested", "node"),
        ];
        assert_eq!(found, expected.map(|(a, m)| (a.to_string(), m.to_string())));
        let mut atomics: Vec<String> = db
            .embedders("atomic_long_like_t")
            .into_iter()
            .map(|(agg, i)| format!("{}.{}", agg.name, agg.members[i].name))
            .collect();
        atomics.sort();
        assert_eq!(
            atomics,
            [
                "arrays.counters",
                "counter_like.min_usage",
                "counter_like.usage",
                "embedder_b.counter"
            ]
        );
        assert!(db.embedders("no_such_struct").is_empty());
        let agg = get(db, "list_node");
        assert_eq!(db.embedders_of(agg).len(), 6);
    }
}

#[test]
fn unknown_names_get_close_suggestions() {
    let db = btf_db();
    let err = db.find_struct("list_nod").expect_err("no such struct");
    let text = err.to_string();
    assert!(text.contains("layouts.btf.o"), "{text}");
    assert!(text.contains("list_nod"), "{text}");
    assert!(
        err.help.as_deref().is_some_and(|h| h.contains("list_node")),
        "{text}"
    );
}

#[test]
fn raw_btf_and_elf_btf_give_the_same_types() {
    let raw = load_btf(&objects().raw_btf).unwrap_or_else(|e| panic!("{e}"));
    let elf = btf_db();
    assert_eq!(raw.len(), elf.len());
    for (a, b) in raw.aggregates().zip(elf.aggregates()) {
        assert_eq!(a, b);
    }
}

#[test]
fn from_aggregates_resolves_by_name() {
    let dwarf = dwarf_db();
    let picked: Vec<Aggregate> = ["list_node", "embedder_a", "arrays"]
        .iter()
        .map(|n| get(dwarf, n).clone())
        .collect();
    let db = TypeDb::from_aggregates("hand-made", picked, false);
    let mut found: Vec<String> = db
        .embedders("list_node")
        .into_iter()
        .map(|(a, i)| format!("{}.{}", a.name, a.members[i].name))
        .collect();
    found.sort();
    assert_eq!(found, ["arrays.lists", "embedder_a.many", "embedder_a.one"]);
}

fn assert_error_names(result: Result<TypeDb, layout_core::Diagnostic>, path: &Path, words: &str) {
    let err = result.expect_err("bad input must be an error");
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains(words), "expected `{words}` in: {text}");
}

#[test]
fn bad_input_is_a_diagnostic() {
    let dir = work_dir();
    let text = dir.join("not-a-binary.txt");
    std::fs::write(&text, "struct foo { int x; };\n").unwrap();
    assert_error_names(load_btf(&text), &text, "not BTF");
    assert_error_names(load_dwarf(&text), &text, "not a readable ELF file");
    let missing = dir.join("does-not-exist.o");
    assert_error_names(load_btf(&missing), &missing, "cannot read");
    assert_error_names(load_dwarf(&missing), &missing, "cannot read");
    let plain = &objects().plain;
    assert_error_names(load_btf(plain), plain, "no .BTF section");
    assert_error_names(load_dwarf(plain), plain, "no DWARF");
    let tu = &objects().type_units_object;
    assert_error_names(load_dwarf(tu), tu, "-fdebug-types-section");
    // A BTF object read as DWARF and the other way round.
    assert_error_names(load_dwarf(&objects().btf), &objects().btf, "no DWARF");
    assert_error_names(
        load_btf(&objects().dwarf),
        &objects().dwarf,
        "no .BTF section",
    );
    let raw = std::fs::read(&objects().raw_btf).unwrap();
    let cut = dir.join("truncated.btf");
    std::fs::write(&cut, &raw[..raw.len() / 2]).unwrap();
    assert_error_names(load_btf(&cut), &cut, "truncated BTF");
    let short = dir.join("short.btf");
    std::fs::write(&short, &raw[..10]).unwrap();
    assert_error_names(load_btf(&short), &short, "shorter than");
}

/// A small deterministic generator for the fuzz tests.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % below.max(1)
    }
}

/// Every aggregate's members lie within it (what a consumer relies on).
fn members_fit(db: &TypeDb) -> Result<(), String> {
    for agg in db.aggregates() {
        for m in &agg.members {
            let end = m.byte_range().end;
            let flexible = m.count == 0 && m.size == 0;
            if end > agg.size && !flexible {
                return Err(format!(
                    "{}.{} ends at {end}, past {}",
                    agg.name, m.name, agg.size
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn corrupt_btf_never_panics() {
    let source = Path::new("fuzzed.btf");
    let raw = std::fs::read(&objects().raw_btf).unwrap();
    let mut rng = Lcg(0x5eed);
    for len in (0..raw.len()).step_by(7) {
        let _ = parse_btf(&raw[..len], source);
    }
    let elf = std::fs::read(&objects().btf).unwrap();
    for len in (0..elf.len()).step_by(61) {
        let _ = parse_btf(&elf[..len], source);
    }
    let mut parsed = 0;
    for _ in 0..3000 {
        let mut bytes = raw.clone();
        for _ in 0..1 + rng.next(4) {
            let at = rng.next(bytes.len());
            bytes[at] ^= 1 << rng.next(8);
        }
        if let Ok(db) = parse_btf(&bytes, source) {
            parsed += 1;
            for agg in db.aggregates() {
                let _ = db.to_model(agg);
                let _ = db.embedders_of(agg);
            }
        }
    }
    // Flips in names and padding leave valid BTF: some must parse.
    assert!(parsed > 0);
}

#[test]
fn corrupt_dwarf_never_panics() {
    let source = Path::new("fuzzed.o");
    let elf = std::fs::read(&objects().dwarf).unwrap();
    for len in (0..elf.len()).step_by(97) {
        let _ = parse_dwarf(&elf[..len], source);
    }
    let mut rng = Lcg(0xd3a4f);
    for _ in 0..1500 {
        let mut bytes = elf.clone();
        for _ in 0..1 + rng.next(4) {
            let at = rng.next(bytes.len());
            bytes[at] ^= 1 << rng.next(8);
        }
        if let Ok(db) = parse_dwarf(&bytes, source) {
            for agg in db.aggregates() {
                let _ = db.to_model(agg);
            }
        }
    }
}

#[test]
fn deep_nesting_in_btf_is_bounded() {
    // struct t1 { struct t2 m; } ... 5000 deep, hand-made BTF: no stack overflow.
    let depth = 5000u32;
    let mut types = Vec::new();
    let word = |v: u32, out: &mut Vec<u8>| out.extend_from_slice(&v.to_le_bytes());
    // Type 1: int.
    word(1, &mut types);
    word(1 << 24, &mut types);
    word(4, &mut types);
    word(32, &mut types);
    for i in 0..depth {
        let id = 2 + i;
        let inner = if i + 1 == depth { 1 } else { id + 1 };
        word(0, &mut types);
        word((4 << 24) | 1, &mut types);
        word(4, &mut types);
        word(1, &mut types);
        word(inner, &mut types);
        word(0, &mut types);
    }
    let strings = b"\0int\0m\0";
    let mut btf = Vec::new();
    btf.extend_from_slice(&0xeb9fu16.to_le_bytes());
    btf.extend_from_slice(&[1, 0]);
    for v in [
        24,
        0,
        types.len() as u32,
        types.len() as u32,
        strings.len() as u32,
    ] {
        word(v, &mut btf);
    }
    btf.extend_from_slice(&types);
    btf.extend_from_slice(strings);
    let db = parse_btf(&btf, Path::new("deep.btf")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(db.len(), depth as usize);
    assert!(db.aggregates().all(|a| a.size == 4 && a.members.len() == 1));
}

/// The running kernel's BTF, loaded once (None where the kernel has none).
fn vmlinux() -> Option<&'static TypeDb> {
    static DB: OnceLock<Option<TypeDb>> = OnceLock::new();
    DB.get_or_init(|| {
        let path = Path::new(VMLINUX);
        if !path.exists() {
            eprintln!("{VMLINUX} does not exist: kernel BTF tests skipped");
            return None;
        }
        let start = Instant::now();
        let db = load_btf(path).unwrap_or_else(|e| panic!("{e}"));
        let structs = db
            .aggregates()
            .filter(|a| a.kind == AggregateKind::Struct)
            .count();
        eprintln!(
            "{VMLINUX}: {structs} structs, {} unions ({} anonymous) in {:?} (debug build)",
            db.len() - structs,
            db.aggregates().filter(|a| a.is_anonymous()).count(),
            start.elapsed()
        );
        Some(db)
    })
    .as_ref()
}

#[test]
fn kernel_btf_loads_with_sane_layouts() {
    let Some(db) = vmlinux() else { return };
    assert!(db.len() > 5000, "only {} aggregates", db.len());
    assert!(db.align_inferred());
    assert_eq!(db.pointer_size(), 8);
    members_fit(db).unwrap_or_else(|e| panic!("{e}"));
    for agg in db.aggregates() {
        assert!(
            agg.align.is_power_of_two(),
            "{} align {}",
            agg.name,
            agg.align
        );
        assert_eq!(
            agg.size % agg.align,
            0,
            "{}: size {} align {}",
            agg.name,
            agg.size,
            agg.align
        );
    }
    let counter = get(db, "page_counter");
    assert!(
        counter.size >= 64 && counter.size.is_multiple_of(8),
        "page_counter is {} bytes",
        counter.size
    );
    assert!(counter
        .members
        .iter()
        .any(|m| m.name == "usage" && m.ty == "atomic_long_t"));
    let lruvec = get(db, "lruvec");
    assert!(lruvec.size >= 64, "lruvec is {} bytes", lruvec.size);
    let per_node = get(db, "mem_cgroup_per_node");
    assert!(per_node
        .members
        .iter()
        .any(|m| m.aggregate.as_deref() == Some("struct lruvec")));
    let embedders: Vec<&str> = db
        .embedders("page_counter")
        .into_iter()
        .map(|(a, _)| a.name.as_str())
        .collect();
    assert!(embedders.contains(&"mem_cgroup"), "{embedders:?}");
    let atomic = get(db, "atomic_long_t");
    assert_eq!((atomic.size, atomic.align), (8, 8));
    // find() returns the first of several definitions of a tag; find_all() all.
    let all = db.find_all("struct page_counter");
    assert_eq!(all.first().map(|a| std::ptr::eq(*a, counter)), Some(true));
    let i = db
        .index_of(counter)
        .expect("page_counter belongs to the database");
    assert!(std::ptr::eq(db.get(i).expect("get by index"), counter));
    // Synthetic names are unique, and find() resolves each to its aggregate.
    let mut seen = std::collections::HashSet::new();
    for agg in db.aggregates().filter(|a| a.is_anonymous()) {
        assert!(seen.insert(agg.name.as_str()), "{} twice", agg.name);
        assert!(std::ptr::eq(
            db.find(&agg.name).expect("synthetic names resolve"),
            agg
        ));
    }
}

/// Top-level members of each struct in pahole's output: (offset, size), by
/// struct name; structs printed twice (duplicate names) are dropped.
fn pahole_layouts(text: &str) -> HashMap<String, Vec<(u64, u64)>> {
    let mut out: HashMap<String, Vec<(u64, u64)>> = HashMap::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut current: Option<(String, Vec<(u64, u64)>)> = None;
    for line in text.lines() {
        if let Some(rest) = line
            .strip_prefix("struct ")
            .and_then(|r| r.strip_suffix(" {"))
        {
            current = Some((rest.to_string(), Vec::new()));
            continue;
        }
        if line.starts_with('}') {
            if let Some((name, members)) = current.take() {
                *seen.entry(name.clone()).or_default() += 1;
                out.insert(name, members);
            }
            continue;
        }
        let Some((_, members)) = current.as_mut() else {
            continue;
        };
        // Members of the struct itself: one tab deep, `/* offset size */` at the end.
        let depth_one = line.starts_with('\t') && !line.starts_with("\t\t");
        if !depth_one || line.starts_with("\t/*") {
            continue;
        }
        let Some(comment) = line.rfind("/*").map(|at| &line[at + 2..]) else {
            continue;
        };
        let numbers: Vec<u64> = comment
            .trim_end_matches("*/")
            .split(|c: char| c.is_whitespace() || c == ':')
            .filter_map(|w| w.parse().ok())
            .collect();
        match numbers[..] {
            [offset, size] | [offset, _, size] => members.push((offset, size)),
            _ => {}
        }
    }
    out.retain(|name, _| seen[name] == 1);
    out
}

#[test]
fn kernel_btf_matches_pahole() {
    let Some(db) = vmlinux() else { return };
    let Ok(output) = Command::new("pahole").arg(VMLINUX).output() else {
        eprintln!("pahole is not installed: cross-check skipped");
        return;
    };
    let layouts = pahole_layouts(&String::from_utf8_lossy(&output.stdout));
    let mut unique: HashMap<&str, usize> = HashMap::new();
    for agg in db
        .aggregates()
        .filter(|a| a.kind == AggregateKind::Struct && a.name_kind == NameKind::Tag)
    {
        *unique.entry(agg.name.as_str()).or_default() += 1;
    }
    let (mut compared, mut mismatched) = (0, Vec::new());
    for agg in db
        .aggregates()
        .filter(|a| a.kind == AggregateKind::Struct && unique.get(a.name.as_str()) == Some(&1))
    {
        let Some(theirs) = layouts.get(&agg.name) else {
            continue;
        };
        let ours: Vec<(u64, u64)> = agg.members.iter().map(|m| (m.offset, m.size)).collect();
        compared += 1;
        if &ours != theirs {
            mismatched.push(agg.name.clone());
        }
    }
    eprintln!(
        "compared {compared} structs with pahole, {} differ: {mismatched:?}",
        mismatched.len()
    );
    assert!(compared > 1000, "only {compared} structs compared");
    // pahole prints enum bitfields with their enumerators over several lines,
    // which this parser does not follow; allow a handful of such structs.
    assert!(
        mismatched.len() * 1000 < compared,
        "{} of {compared} differ: {mismatched:?}",
        mismatched.len()
    );
}

/// The flat model opens anonymous structs: each of their members is a field
/// at the offset gcc's `offsetof` gives, and no field is an anonymous struct
/// (anonymous unions stay one field: their members share bytes).
#[test]
fn flat_models_put_anonymous_struct_members_where_gcc_does() {
    let oracle = oracle();
    for (db, reader) in all_dbs() {
        let mut opened = 0;
        for agg in db
            .aggregates()
            .filter(|a| !a.is_anonymous() && a.kind == AggregateKind::Struct)
        {
            let ty = agg.display_name();
            let flat = db.to_flat_model(agg);
            let whole = db.to_model(agg);
            for f in &flat.fields {
                assert!(
                    !f.name.starts_with("anon_struct@"),
                    "{reader}: {ty}.{} left whole",
                    f.name
                );
                if f.name.contains(':')
                    || f.name.starts_with("anon_")
                    || member(db, agg, &f.name).0.is_bitfield()
                {
                    continue;
                }
                let gcc = oracle
                    .members
                    .iter()
                    .find(|(t, n, ..)| *t == ty && *n == f.name)
                    .unwrap_or_else(|| panic!("{reader}: gcc has no {ty}.{}", f.name));
                assert_eq!(
                    f.original_offset,
                    Some(gcc.2),
                    "{reader}: offsetof({ty}, {})",
                    f.name
                );
                assert_eq!(f.size, gcc.3, "{reader}: sizeof({ty}.{})", f.name);
            }
            // The same bytes, only split finer (an opened struct's padding is no field).
            let bytes = |s: &layout_core::Struct| -> u64 { s.fields.iter().map(|f| f.size).sum() };
            assert!(bytes(&flat) <= bytes(&whole), "{reader}: {ty}");
            opened += usize::from(flat.fields.len() > whole.fields.len());
        }
        assert!(
            opened >= 1,
            "{reader}: no fixture struct has an anonymous struct member"
        );
    }
}
