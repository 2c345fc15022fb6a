//! The author's cache-line groups, paddings, zero-size markers and first
//! member as segments: what the C, BTF
//! and DWARF front-ends assign, what `verify` refuses, what the C diff keeps,
//! and what the JSON shows. gcc is the oracle for offsets.

use crate::support;

use layout_core::c::{parse_header, CStruct, Defines, TypeTable};
use layout_core::emit::{c_diff, CStyle};
use layout_core::report::layout_json;
use layout_core::segments::{self, Keep};
use layout_core::verify::{check_structure, verify, VerifyError};
use layout_core::{Access, Layout, Placement, Slot, Struct};
use std::path::Path;
use support::{apply, assert_gcc_layout_with, scratch_dir};

/// The kernel's definitions of the markers (include/linux/cache.h), so that
/// gcc sees the members the front-end models.
const PRELUDE: &str = "\
#include <stddef.h>
typedef unsigned char __u8;
#define SMP_CACHE_BYTES 64
#define ____cacheline_aligned_in_smp __attribute__((__aligned__(SMP_CACHE_BYTES)))
struct cacheline_padding { char x[0]; } ____cacheline_aligned_in_smp;
#define CACHELINE_PADDING(name) struct cacheline_padding name
#define __cacheline_group_begin(GROUP) __u8 __cacheline_group_begin__##GROUP[0]
#define __cacheline_group_end(GROUP) __u8 __cacheline_group_end__##GROUP[0]
#define __cacheline_group_begin_aligned(GROUP, ...) \\
\t__cacheline_group_begin(GROUP) __attribute__((__aligned__((__VA_ARGS__ + 0) ? : SMP_CACHE_BYTES)))
#define __cacheline_group_end_aligned(GROUP, ...) \\
\t__cacheline_group_end(GROUP) __attribute__((__aligned__(sizeof(long)))); \\
\tstruct { } __cacheline_group_pad__##GROUP __attribute__((__aligned__((__VA_ARGS__ + 0) ? : SMP_CACHE_BYTES)))
";

const PATH: &str = "include/grp.h";

const HEADER: &str = "\
#ifndef GRP_H
#define GRP_H
struct grp {
\tlong first;
\tlong a;
\tCACHELINE_PADDING(_pad1_);
\t__cacheline_group_begin_aligned(hot);
\tint b;
\tlong c;
\tint d;
\t__cacheline_group_end_aligned(hot);
\tlong e;
\tchar headers_start[0];
\tint f;
\tlong g;
\tchar headers_end[0];
\tint h;
\tlong wide ____cacheline_aligned_in_smp;
\tint tail;
};
#endif
";

fn read() -> CStruct {
    parse_header(
        Path::new(PATH),
        HEADER,
        &Defines::default(),
        &TypeTable::default(),
    )
    .and_then(|h| h.find_struct("grp"))
    .unwrap_or_else(|e| panic!("{e}"))
}

fn declared(c: &CStruct) -> Layout {
    Layout::declared(&c.model, c.size, c.align, 64, Placement::Aligned).unwrap()
}

/// Places the fields in `order` (all of them) one after the other as C does.
fn sequential(s: &Struct, order: &[&str], size_align: u64) -> Layout {
    let mut at = 0u64;
    let mut slots = Vec::new();
    for name in order {
        let i = s
            .field_index(name)
            .unwrap_or_else(|| panic!("no field {name}"));
        let f = &s.fields[i];
        at = at.div_ceil(f.align) * f.align;
        slots.push(Slot {
            field: i,
            offset: at,
        });
        at += f.size;
    }
    assert_eq!(slots.len(), s.fields.len(), "every field placed");
    Layout {
        slots,
        size: at.div_ceil(size_align) * size_align,
        align: size_align,
        line: 64,
        placement: Placement::Aligned,
    }
}

const DECLARED_ORDER: [&str; 17] = [
    "first",
    "a",
    "_pad1_",
    "__cacheline_group_begin__hot",
    "b",
    "c",
    "d",
    "__cacheline_group_end__hot",
    "__cacheline_group_pad__hot",
    "e",
    "headers_start",
    "f",
    "g",
    "headers_end",
    "h",
    "wide",
    "tail",
];

fn declared_order() -> Vec<&'static str> {
    DECLARED_ORDER.to_vec()
}

#[test]
fn c_markers_are_fields_at_gcc_offsets_with_segments() {
    let c = read();
    let names: Vec<&str> = c.model.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, declared_order());
    let seg: Vec<u32> = c.model.fields.iter().map(|f| f.segment).collect();
    // first | a _pad1_ | begin | b c d | end | pad | e | headers_start |
    // f g | headers_end | h wide tail: the padding and `wide` (aligned to
    // the line) are line breaks members may cross, in their order.
    assert_eq!(seg, [0, 1, 1, 2, 3, 3, 3, 4, 5, 6, 7, 8, 8, 9, 10, 10, 10]);
    let breaks: Vec<&str> = c.model.breaks.iter().map(|&i| names[i]).collect();
    assert_eq!(breaks, ["_pad1_", "wide"]);
    let l = declared(&c);
    check_structure(&c.model, &l).unwrap();
    let v = verify(&c.model, &l).unwrap();
    let dir = scratch_dir("declared");
    std::fs::create_dir_all(dir.join("include")).unwrap();
    std::fs::write(dir.join(PATH), HEADER).unwrap();
    // gcc agrees on every member's offset, markers included.
    assert_gcc_layout_with(&dir, PRELUDE, PATH, &v, &[], &[]);
}

/// gcc's DWARF and BTF of the same header give the same members (markers
/// included), offsets and segments as the C front-end.
#[test]
fn dwarf_and_btf_markers_and_segments_match_the_c_front_end() {
    let c = read();
    let dir = scratch_dir("dwarf");
    std::fs::create_dir_all(dir.join("include")).unwrap();
    std::fs::write(dir.join(PATH), HEADER).unwrap();
    let source = format!("{PRELUDE}#include \"{PATH}\"\nstruct grp grp_instance;\n");
    std::fs::write(dir.join("grp.c"), source).unwrap();
    let facts = |s: &Struct| -> Vec<(String, u64, u32)> {
        s.fields
            .iter()
            .map(|f| (f.name.clone(), f.original_offset.unwrap(), f.segment))
            .collect()
    };
    for (flag, object) in [("-g", "grp-dwarf.o"), ("-gbtf", "grp-btf.o")] {
        let out = std::process::Command::new("gcc")
            .args(["-std=gnu11", "-c", flag, "-I", ".", "grp.c", "-o", object])
            .current_dir(&dir)
            .output()
            .expect("gcc runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let db = if flag == "-g" {
            layout_core::dwarf::load_dwarf(&dir.join(object))
        } else {
            layout_core::btf::load_btf(&dir.join(object))
        }
        .unwrap_or_else(|e| panic!("{flag}: {e}"));
        let agg = db.find_struct("grp").unwrap();
        let model = db.to_model(agg);
        assert_eq!(facts(&model), facts(&c.model), "{flag}");
    }
}

#[test]
fn verify_refuses_a_member_leaving_its_group() {
    let c = read();
    let s = &c.model;
    let mut order = declared_order();
    // `e` moves into the group `hot`, before its end marker.
    let e = order.iter().position(|n| *n == "e").unwrap();
    order.remove(e);
    order.insert(6, "e");
    let err = verify(s, &sequential(s, &order, 64)).unwrap_err();
    assert!(
        matches!(&err, VerifyError::Segment { after, .. } if after == "e"),
        "{err}"
    );
    assert!(err.to_string().contains("cache-line group"), "{err}");
}

#[test]
fn verify_refuses_a_begin_marker_after_its_end() {
    let c = read();
    let s = &c.model;
    let mut order = declared_order();
    let b = order
        .iter()
        .position(|n| *n == "__cacheline_group_begin__hot")
        .unwrap();
    order.remove(b);
    order.insert(7, "__cacheline_group_begin__hot");
    let err = verify(s, &sequential(s, &order, 64)).unwrap_err();
    assert!(matches!(err, VerifyError::Segment { .. }), "{err}");
}

#[test]
fn verify_keeps_the_first_member_at_offset_zero_unless_released() {
    let c = read();
    let mut s = c.model.clone();
    let mut order = declared_order();
    order.swap(0, 1);
    let l = sequential(&s, &order, 64);
    let err = verify(&s, &l).unwrap_err();
    assert!(
        matches!(&err, VerifyError::Segment { before, after } if before == "first" && after == "a"),
        "{err}"
    );
    // A hole before the first member is refused too.
    let mut shifted = declared(&c);
    for sl in &mut shifted.slots {
        if sl.field == 0 {
            sl.offset = 8;
        }
        if s.fields[sl.field].name == "a" {
            sl.offset = 0;
        }
    }
    shifted.slots.sort_by_key(|sl| sl.offset);
    let err = verify(&s, &shifted).unwrap_err();
    assert!(matches!(err, VerifyError::Segment { .. }), "{err}");
    segments::release_first(&mut s);
    verify(&s, &l).expect("--move-first lets the first member move");
}

#[test]
fn issue12_7_zero_size_markers_are_not_crossed() {
    let c = read();
    let s = &c.model;
    let mut order = declared_order();
    // `f` moves before `headers_start`: outside the region code copies.
    let f = order.iter().position(|n| *n == "f").unwrap();
    order.remove(f);
    order.insert(f - 1, "f");
    let err = verify(s, &sequential(s, &order, 64)).unwrap_err();
    assert!(
        matches!(&err, VerifyError::Segment { before, after }
            if before == "headers_start" && after == "f"),
        "{err}"
    );
    // Inside the region, the members may be reordered.
    let mut order = declared_order();
    let f = order.iter().position(|n| *n == "f").unwrap();
    order.swap(f, f + 1);
    verify(s, &sequential(s, &order, 64)).unwrap();
}

#[test]
fn issue12_7_json_lists_zero_size_members() {
    let mut c = read();
    let i = c.model.field_index("f").unwrap();
    c.model.fields[i].access = Access::ReadMostly;
    let l = declared(&c);
    let j = layout_json(&c.model, &l);
    let fields = j["fields"].as_array().unwrap();
    let names: Vec<&str> = fields.iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, declared_order());
    let by_name = |n: &str| fields.iter().find(|f| f["name"] == n).unwrap();
    assert_eq!(by_name("headers_start")["access"], "marker");
    assert_eq!(by_name("headers_start")["type"], "char[0]");
    assert_eq!(by_name("_pad1_")["access"], "marker");
    assert_eq!(by_name("_pad1_")["offset"], 64);
    assert_eq!(by_name("f")["access"], "read_mostly");
    assert_eq!(by_name("f")["type"], "int");
    assert_eq!(by_name("c")["cacheline_group"], "hot");
    assert_eq!(by_name("e")["cacheline_group"], serde_json::Value::Null);
    assert_eq!(
        j["cacheline_groups"],
        serde_json::json!([{"name": "hot", "begin": 64, "end": 88, "size": 24,
                            "members": ["b", "c", "d"]}])
    );
}

/// A layout that reorders members inside their segments: the diff keeps
/// every marker line where it is, and gcc compiles the patched header to
/// exactly the verified offsets.
#[test]
fn diff_reorders_inside_groups_and_keeps_the_markers() {
    let c = read();
    let s = &c.model;
    let mut order = declared_order();
    let pos = |o: &Vec<&str>, n: &str| o.iter().position(|x| *x == n).unwrap();
    let (b, cc) = (pos(&order, "b"), pos(&order, "c"));
    order.swap(b, cc); // c, b, d inside `hot`: 4 bytes less padding
    let (f, g) = (pos(&order, "f"), pos(&order, "g"));
    order.swap(f, g); // g, f between headers_start and headers_end
    let l = sequential(s, &order, 64);
    let v = verify(s, &l).unwrap();
    for style in [CStyle::Aligned, CStyle::Padding] {
        let diff = c_diff(&c.source, &v, style).unwrap();
        let dir = scratch_dir(&format!("reorder-{style}"));
        let patched = apply(&dir, PATH, HEADER, &diff);
        for line in [
            "CACHELINE_PADDING(_pad1_);",
            "__cacheline_group_begin_aligned(hot);",
            "__cacheline_group_end_aligned(hot);",
            "char headers_start[0];",
            "char headers_end[0];",
        ] {
            assert_eq!(patched.matches(line).count(), 1, "{line} in\n{patched}");
        }
        let at = |n: &str| patched.find(n).unwrap();
        assert!(at("__cacheline_group_begin_aligned(hot)") < at("long c;"));
        assert!(at("long c;") < at("int b;"));
        assert!(at("int d;") < at("__cacheline_group_end_aligned(hot)"));
        // The kept markers spell the line breaks: no attribute is added.
        assert!(!patched.contains("long c ____") && !patched.contains("long e ____"));
        assert_gcc_layout_with(&dir, PRELUDE, PATH, &v, &[], &[]);
    }
    // The groups style would rewrite the author's group: it says so.
    let err = c_diff(&c.source, &v, CStyle::Groups).unwrap_err();
    assert!(err.to_string().contains("--regroup"), "{err}");
}

#[test]
fn regroup_dissolves_groups_and_paddings_but_keeps_other_markers() {
    let mut c = read();
    let d = segments::dissolve_groups(&mut c.model, Keep::default());
    assert_eq!(d.groups, ["hot"]);
    assert_eq!(d.paddings, ["_pad1_"]);
    let names: Vec<&str> = c.model.fields.iter().map(|f| f.name.as_str()).collect();
    assert!(!names
        .iter()
        .any(|n| n.starts_with("__cacheline_group") || *n == "_pad1_"));
    assert!(names.contains(&"headers_start") && names.contains(&"headers_end"));
    assert!(segments::first_is_kept(&c.model));
}

// ---------------------------------------------------------------------------
// The running kernel's BTF.

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// Classes and hot paths from the group names, as the kernel's own
/// fast-path documentation reads them: `*_read_*` read-mostly, `*_write_*`
/// written (under the socket or device lock), other members cold; a group
/// ending in `_tx` is on path tx, `_rx` on rx, `_txrx`/`_rxtx` on both.
fn classes_from_group_names(s: &mut Struct) {
    let of = segments::group_of_fields(s);
    s.paths = vec!["tx".to_string(), "rx".to_string()];
    for (f, g) in s.fields.iter_mut().zip(of) {
        if f.size == 0 {
            continue;
        }
        let Some(g) = g.as_deref() else {
            f.access = Access::Cold;
            continue;
        };
        f.access = if g.contains("_read_") {
            Access::ReadMostly
        } else if g.contains("_write_") {
            Access::LockedWrite {
                lock: "owner".to_string(),
            }
        } else {
            Access::Cold
        };
        let both = g.ends_with("_txrx") || g.ends_with("_rxtx");
        for (k, on) in [
            (0, both || g.ends_with("_tx")),
            (1, both || g.ends_with("_rx")),
        ] {
            if on {
                f.paths.push(layout_core::model::PathUse {
                    path: k,
                    bytes: 0..f.size,
                });
            }
        }
    }
}

fn grouped_structs() -> Option<Vec<(Struct, Layout)>> {
    if !Path::new(VMLINUX).exists() {
        eprintln!("skipped: {VMLINUX} is missing");
        return None;
    }
    let db = layout_core::btf::load_btf(Path::new(VMLINUX)).unwrap();
    let mut out = Vec::new();
    for agg in db.aggregates() {
        if agg.kind != layout_core::typedb::AggregateKind::Struct
            || !agg
                .members
                .iter()
                .any(|m| m.name.starts_with(segments::BEGIN_PREFIX))
        {
            continue;
        }
        let mut s = db.to_model(agg);
        classes_from_group_names(&mut s);
        let l = Layout::declared(&s, agg.size, agg.align, 64, Placement::Aligned).unwrap();
        out.push((s, l));
    }
    Some(out)
}

/// Every member in its group and every begin before its end, by offsets.
fn assert_groups_kept(s: &Struct, l: &Layout) {
    let off = l.offsets_by_field(s.fields.len());
    for g in segments::author_groups(s) {
        let (Some(b), Some(e)) = (g.begin, g.end) else {
            continue;
        };
        let (b, e) = (off[b].unwrap(), off[e].unwrap());
        assert!(b <= e, "{}: group {} begins after its end", s.name, g.name);
        for m in g.members {
            let start = off[m].unwrap();
            assert!(
                b <= start && start + s.fields[m].size <= e,
                "{}: `{}` left group {}",
                s.name,
                s.fields[m].name,
                g.name
            );
        }
    }
}

#[test]
fn btf_groups_become_segments_the_declared_layout_keeps() {
    let Some(structs) = grouped_structs() else {
        return;
    };
    let names: Vec<&str> = structs.iter().map(|(s, _)| s.name.as_str()).collect();
    assert!(names.contains(&"tcp_sock"), "{names:?}");
    for (s, l) in &structs {
        check_structure(s, l).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        assert_groups_kept(s, l);
        assert!(segments::first_is_kept(s), "{}", s.name);
        // Each group's members share one segment, between the markers'.
        for g in segments::author_groups(s) {
            let (Some(b), Some(e)) = (g.begin, g.end) else {
                continue;
            };
            for m in &g.members {
                let seg = s.fields[*m].segment;
                assert!(s.fields[b].segment < seg && seg < s.fields[e].segment);
            }
        }
    }
}

/// Every struct of the running kernel keeps its own segments as declared.
#[test]
fn btf_every_declared_struct_keeps_its_segments() {
    if !Path::new(VMLINUX).exists() {
        eprintln!("skipped: {VMLINUX} is missing");
        return;
    }
    let db = layout_core::btf::load_btf(Path::new(VMLINUX)).unwrap();
    let mut checked = 0;
    for agg in db.aggregates() {
        if agg.kind != layout_core::typedb::AggregateKind::Struct || agg.members.is_empty() {
            continue;
        }
        let s = db.to_model(agg);
        let l = Layout::declared(&s, agg.size, agg.align, 64, Placement::Aligned).unwrap();
        match check_structure(&s, &l) {
            Err(e @ (VerifyError::Segment { .. } | VerifyError::FirstMember { .. })) => {
                panic!("{}: {e}", agg.name)
            }
            _ => checked += 1,
        }
    }
    assert!(checked > 1000, "{checked}");
}

/// `propose --btf` on every grouped struct of the running kernel keeps the
/// groups and never grows the struct. A group may span more bytes than it
/// did (the summary then says to check its `CACHELINE_ASSERT_GROUP_SIZE`):
/// the solver does not bound group spans yet, so that is printed, not
/// asserted.
#[test]
fn btf_proposals_keep_every_member_in_its_group() {
    let Some(structs) = grouped_structs() else {
        return;
    };
    for (s, declared) in &structs {
        let opts = layout_core::SolveOptions::default();
        let sol = layout_core::solve(s, &opts).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        assert_groups_kept(s, &sol.layout);
        let n = s.fields.len();
        let grown = segments::grown_groups(
            s,
            &declared.offsets_by_field(n),
            &sol.layout.offsets_by_field(n),
        );
        if !grown.is_empty() {
            eprintln!("{}: groups span more bytes: {grown:?}", s.name);
        }
        let before = layout_core::paths::path_lines(s, declared);
        let after = layout_core::paths::path_lines(s, &sol.layout);
        for (b, a) in before.iter().zip(&after) {
            assert!(
                a.lines <= b.lines,
                "{}: path {} touches {} -> {} lines",
                s.name,
                b.name,
                b.lines,
                a.lines
            );
        }
        assert!(
            sol.layout.size <= declared.size,
            "{}: {} -> {}",
            s.name,
            declared.size,
            sol.layout.size
        );
        eprintln!(
            "{}: {} -> {} bytes ({}, {} ms); {}",
            s.name,
            declared.size,
            sol.layout.size,
            sol.method,
            sol.solve_ms,
            before
                .iter()
                .zip(&after)
                .map(|(b, a)| format!("{} {} -> {} (bound {})", b.name, b.lines, a.lines, a.bound))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

// ---------------------------------------------------------------------------
// struct zone on the installed mmzone.h.

fn installed_mmzone() -> Option<std::path::PathBuf> {
    let dir = std::fs::read_dir("/usr/src").ok()?;
    let mut found: Vec<std::path::PathBuf> = dir
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("include/linux/mmzone.h"))
        .filter(|p| p.exists())
        .collect();
    found.sort();
    found.pop()
}

#[test]
fn zone_proposal_keeps_the_paddings_and_keeps_vm_stat_off_the_lock_line() {
    let Some(header) = installed_mmzone() else {
        eprintln!("skipped: no installed include/linux/mmzone.h");
        return;
    };
    let access_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kernel/zone.toml");
    let access = layout_core::access::load(&access_path).unwrap();
    let mut defines = Defines::default();
    for (n, v) in access.defines.iter() {
        defines.insert(n, v);
    }
    let h = layout_core::c::load_header(&header, &defines, &access.types).unwrap();
    let mut zone = h.find_struct("zone").unwrap();
    access.apply(&mut zone.model).unwrap();
    let s = &zone.model;
    let paddings: Vec<usize> = (0..s.fields.len())
        .filter(|&i| segments::Marker::of(&s.fields[i]) == Some(segments::Marker::Padding))
        .collect();
    assert_eq!(
        paddings.len(),
        3,
        "three CACHELINE_PADDING() in struct zone"
    );
    let sol = layout_core::solve(s, &layout_core::SolveOptions::default()).unwrap();
    let off = sol.layout.offsets_by_field(s.fields.len());
    for &p in &paddings {
        let at = off[p].unwrap();
        assert_eq!(at % 64, 0, "{} is a line break", s.fields[p].name);
        // Nothing with bytes before the padding shares its line.
        for (i, f) in s.fields.iter().enumerate() {
            let o = off[i].unwrap();
            if f.size > 0 && o < at {
                assert!(
                    (o + f.size - 1) / 64 < at / 64,
                    "`{}` shares the line after {}",
                    f.name,
                    s.fields[p].name
                );
            }
        }
    }
    let line_of = |n: &str| {
        let i = s.field_index(n).unwrap();
        let o = off[i].unwrap();
        (o / 64)..=((o + s.fields[i].size - 1) / 64)
    };
    let (vm, lock) = (line_of("vm_stat"), line_of("lock"));
    assert!(
        vm.end() < lock.start() || lock.end() < vm.start(),
        "vm_stat {vm:?} shares a line with lock {lock:?}"
    );
    assert!(sol.layout.size <= zone.size);
}
