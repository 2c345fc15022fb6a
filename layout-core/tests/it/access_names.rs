//! Names inside fields (members of anonymous unions and structs and of
//! `struct_group`s, single bitfields, dotted sub-members) and hot paths in
//! the access file: what the C header front-end and DWARF list (checked
//! against gcc's `offsetof` and against each other), how names resolve to
//! fields and bytes, the strongest-class rule, the errors, and a 40,000-name
//! file.

#![cfg(all(feature = "c-header", feature = "dwarf"))]

use crate::support;

use layout_core::access::{self, AccessFile, MemberNames};
use layout_core::model::PathUse;
use layout_core::{Access, Diagnostic, Field, Struct};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use support::scratch_dir;

const HEADER: &str = "\
struct opts {
\tunsigned int tsval;
\tunsigned int tsecr;
\tunsigned short mss;
\tunsigned char wscale:4, sack:1;
};

struct conn {
\tunsigned long cfg;
\tunion {
\t\tunsigned long seq;
\t\tstruct {
\t\t\tunsigned int lo;
\t\t\tunsigned int hi;
\t\t};
\t};
\tunsigned int is_open:1;
\tunsigned int is_fast:1;
\tunsigned int spare:30;
\tstruct opts rx_opt;
\tunion {
\t\tstruct {
\t\t\tunsigned short sport;
\t\t\tunsigned short dport;
\t\t};
\t\tstruct {
\t\t\tunsigned short sport;
\t\t\tunsigned short dport;
\t\t} ports;
\t};
\tunsigned long hits;
\tunsigned short ids[4];
\tunsigned int grid[2][3];
\tstruct opts hist[2];
};
";

fn parse(text: &str) -> AccessFile {
    access::parse(Path::new("a.toml"), text).unwrap_or_else(|e| panic!("{e}"))
}

fn c_struct() -> (Struct, MemberNames) {
    let h = layout_core::c::parse_header(
        Path::new("conn.h"),
        HEADER,
        &Default::default(),
        &Default::default(),
    )
    .unwrap();
    (
        h.find_struct("conn").unwrap().model,
        h.member_names("conn").unwrap(),
    )
}

fn by_name(names: &MemberNames) -> BTreeMap<String, (u64, u64)> {
    names
        .iter()
        .map(|n| (n.name.clone(), (n.bytes.start, n.bytes.end)))
        .collect()
}

/// The C front-end's names against gcc's `offsetof`/`sizeof` of every
/// non-bitfield name, and against the names DWARF gives for the same struct.
#[test]
fn c_and_dwarf_list_the_same_names_at_gccs_offsets() {
    let (_, names) = c_struct();
    let mut c = by_name(&names);
    for wanted in [
        "seq",
        "lo",
        "hi",
        "is_open",
        "is_fast",
        "spare",
        "rx_opt.tsval",
        "rx_opt.tsecr",
        "rx_opt.mss",
        "rx_opt.wscale",
        "rx_opt.sack",
        "sport",
        "dport",
        "ports",
        "ports.sport",
        "ports.dport",
        // One-dimensional arrays: each element by its index; not the
        // elements of a two-dimensional one, nor their sub-members.
        "ids[0]",
        "ids[3]",
        "hist[1]",
    ] {
        assert!(c.contains_key(wanted), "{wanted} missing from {c:?}");
    }
    assert!(
        !c.contains_key("cfg") && !c.contains_key("hits"),
        "fields are not inner names"
    );
    assert!(
        !c.keys()
            .any(|k| k.starts_with("grid[") || k.starts_with("hist[0].") || k == "ids[4]"),
        "{c:?}"
    );
    // The BTF/DWARF names of the anonymous unions, as aliases.
    assert_eq!(c.remove("anon_union@8"), Some((8, 16)));
    assert_eq!(c.remove("anon_union@32"), Some((32, 36)));

    let dir = scratch_dir("names");
    std::fs::write(dir.join("conn.h"), HEADER).unwrap();
    let mut check =
        String::from("#include <stddef.h>\n#include \"conn.h\"\nstruct conn the_conn;\n");
    for (name, (start, end)) in &c {
        let bitfield = [
            "is_open",
            "is_fast",
            "spare",
            "rx_opt.wscale",
            "rx_opt.sack",
        ];
        // Bit-fields, and runs of them (`is_open:is_fast:spare`), have no offsetof.
        if bitfield.contains(&name.as_str()) || name.contains(':') {
            continue;
        }
        check.push_str(&format!(
            "_Static_assert(offsetof(struct conn, {name}) == {start}, \"{name}\");\n\
             _Static_assert(sizeof(((struct conn *)0)->{name}) == {}, \"{name} size\");\n",
            end - start
        ));
    }
    std::fs::write(dir.join("check.c"), &check).unwrap();
    let out = Command::new("gcc")
        .args([
            "-std=gnu11",
            "-g",
            "-c",
            "-I",
            ".",
            "check.c",
            "-o",
            "check.o",
        ])
        .current_dir(&dir)
        .output()
        .expect("gcc runs");
    assert!(
        out.status.success(),
        "{}\n{check}",
        String::from_utf8_lossy(&out.stderr)
    );
    let db = layout_core::dwarf::load_dwarf(&dir.join("check.o")).unwrap();
    let agg = db.find("struct conn").unwrap();
    let mut dwarf = by_name(&MemberNames::from_typedb(&db, agg));
    // BTF and DWARF list the same aliases.
    assert_eq!(dwarf.remove("anon_union@8"), Some((8, 16)));
    assert_eq!(dwarf.remove("anon_union@32"), Some((32, 36)));
    assert_eq!(c, dwarf, "C header and DWARF disagree");
    // Bitfields: the bytes their bits touch.
    assert_eq!(c["is_fast"], (16, 17));
    assert_eq!(c["spare"], (16, 20));
    assert_eq!(c["rx_opt.sack"], (30, 31));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn names_inside_fields_take_the_strongest_class() {
    let (mut s, names) = c_struct();
    let f = parse(
        "[struct.conn]\n\
         read_mostly = [\"hi\", \"is_open\", \"rx_opt.tsval\"]\n\
         lockless_atomic = [\"lo\", \"hits\"]\n\
         locked_write.sk = [\"rx_opt.mss\"]\n\
         cold = [\"ports.sport\"]\n\
         pinned = [\"dport\"]\n",
    );
    f.apply_with(&mut s, &names).unwrap();
    let field = |n: &str| &s.fields[s.field_index(n).unwrap()];
    // The union holding lo (lockless) and hi (read-mostly) is lockless.
    let union = s
        .fields
        .iter()
        .find(|x| x.original_offset == Some(8))
        .unwrap();
    assert_eq!(union.access, Access::Lockless { group: None });
    assert_eq!(field("is_open").access, Access::ReadMostly);
    assert_eq!(
        field("rx_opt").access,
        Access::LockedWrite { lock: "sk".into() },
        "locked beats read-mostly"
    );
    let ports = s
        .fields
        .iter()
        .find(|x| x.original_offset == Some(32))
        .unwrap();
    assert!(ports.pinned && ports.access == Access::Cold);
    assert_eq!(field("cfg").access, Access::Cold);
}

#[test]
fn a_storage_unit_cannot_take_two_locks() {
    let (mut s, names) = c_struct();
    let f =
        parse("[struct.conn]\nlocked_write.a = [\"is_open\"]\nlocked_write.b = [\"is_fast\"]\n");
    let e = f.apply_with(&mut s, &names).unwrap_err();
    assert_eq!((e.line, e.column > 0), (3, true), "{e}");
    assert!(
        e.message.contains("is_fast") && e.message.contains("is_open"),
        "{e}"
    );
    assert!(e.help.unwrap().contains("one lock or writer group"));
}

#[test]
fn paths_record_the_bytes_of_each_name() {
    let (mut s, names) = c_struct();
    let f = parse(
        "[struct.conn.paths]\n\
         tx = [\"cfg\", \"hi\", \"rx_opt.mss\", \"rx_opt.tsval\"]\n\
         rx = [\"is_fast\", \"anon_union@32\"]\n",
    );
    let sa = &f.structs["conn"];
    assert_eq!(sa.paths.len(), 2);
    assert_eq!(sa.paths[0].name, "tx");
    assert_eq!(sa.paths[1].members[1].0, "anon_union@32");
    assert_eq!(sa.paths[1].at.line, 3);
    // anon_union@OFFSET, the BTF and DWARF name, works with a header too.
    let mut t = s.clone();
    f.apply_with(&mut t, &names).unwrap();
    let union = t
        .fields
        .iter()
        .find(|x| x.original_offset == Some(32))
        .unwrap();
    assert_eq!(
        union.paths,
        [PathUse {
            path: 1,
            bytes: 0..4
        }]
    );

    let f = parse(
        "[struct.conn.paths]\n\
         tx = [\"cfg\", \"hi\", \"rx_opt.mss\", \"rx_opt.tsval\"]\n\
         rx = [\"is_fast\", \"ports\"]\n",
    );
    f.apply_with(&mut s, &names).unwrap();
    assert_eq!(s.paths, ["tx", "rx"]);
    let uses = |n: &str| s.fields[s.field_index(n).unwrap()].paths.clone();
    let u = |path: u32, bytes: std::ops::Range<u64>| PathUse { path, bytes };
    assert_eq!(uses("cfg"), [u(0, 0..8)]);
    // hi is bytes 4..8 of the union at 8.
    assert_eq!(uses("seq"), [u(0, 4..8)]);
    // rx_opt at 20: tsval 0..4, mss 8..10 — kept apart.
    assert_eq!(uses("rx_opt"), [u(0, 0..4), u(0, 8..10)]);
    // is_fast: byte 16 = byte 0 of the run.
    assert_eq!(uses("is_open"), [u(1, 0..1)]);
    // `ports` of the union at 32 is its whole 4 bytes.
    let union = s
        .fields
        .iter()
        .find(|x| x.original_offset == Some(32))
        .unwrap();
    assert_eq!(union.paths, [u(1, 0..4)]);
    assert!(uses("hits").is_empty());
}

fn seed_struct(n: usize) -> Struct {
    Struct::new(
        "big",
        (0..n)
            .map(|i| Field::new(format!("member_{i}"), "long", 8, 8))
            .collect(),
    )
}

/// 40,000 names (about 1.1 MB): every location found without rescanning the
/// file, every name without a linear search of the fields. Quadratic work
/// here took over a minute; this test only checks the answers.
#[test]
fn forty_thousand_entries() {
    const N: usize = 40_000;
    let mut text = String::from("[struct.big]\nread_mostly = [\n");
    for i in 0..N {
        text.push_str(&format!("  \"member_{i}\",\n"));
    }
    text.push_str("]\n[struct.big.paths]\nhot = [\n");
    for i in (0..N).step_by(2) {
        text.push_str(&format!("  \"member_{i}\",\n"));
    }
    text.push_str("  \"member_x\",\n]\n");
    let f = parse(&text);
    let classes = &f.structs["big"].classes;
    assert_eq!(classes.len(), N);
    assert_eq!(classes[N - 1].at.line, N + 2);
    assert_eq!(classes[N - 1].at.column, 3);
    let mut s = seed_struct(N);
    let e: Diagnostic = f.apply(&mut s).unwrap_err();
    // The bad name is on the last line of the paths list.
    assert_eq!((e.line, e.column), (N + 6 + N / 2, 3), "{e}");
    assert!(e.message.contains("member_x"), "{e}");
    assert!(
        e.help.as_deref().unwrap().len() < 2_000,
        "bounded help: {e}"
    );
    let f = parse(&text.replace("  \"member_x\",\n", ""));
    f.apply(&mut s).unwrap();
    assert!(s.fields.iter().all(|x| x.access == Access::ReadMostly));
    assert_eq!(
        s.fields.iter().filter(|x| !x.paths.is_empty()).count(),
        N / 2
    );
}

#[test]
fn paths_must_be_a_table_of_lists() {
    for (text, word) in [
        ("[struct.s]\npaths = [\"a\"]\n", "must be a table"),
        ("[struct.s.paths]\ntx = \"a\"\n", "list of field names"),
        ("[struct.s.paths]\ntx = [1]\n", "not a field name"),
    ] {
        let e = access::parse(Path::new("a.toml"), text).unwrap_err();
        assert_eq!(e.line, 2, "{text}: {e}");
        assert!(e.message.contains(word), "{text}: {e}");
    }
}
