//! Growth reports: the lru_gen case's three lines from the headers before and after
//! its fix, the same numbers from a new size alone, the
//! allocator's size classes, bad input, and the running kernel's BTF.

#![cfg(feature = "c-header")]

use layout_core::c::{load_header, Defines, TypeTable};
use layout_core::growth::{self, header_types, HeaderTypes, Instances, Part, Shape};
use layout_core::typedb::{Aggregate, AggregateKind, Member, NameKind, TypeDb};
use std::path::Path;

/// The lru_gen header, shared with the README and the CLI tests.
const BEFORE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/kernel/lru_gen.h");
/// The same header after the hand fix.
const AFTER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/growth/lru_gen_after.h"
);

fn types(path: &str) -> HeaderTypes {
    let header = load_header(Path::new(path), &Defines::default(), &TypeTable::default())
        .unwrap_or_else(|e| panic!("{e}"));
    header_types(&header)
}

const SEED_LINES: [&str; 3] = [
    "lru_gen_folio 1360 -> 1408 (+48, hole before evicted[])",
    "lruvec 1624 -> 1728 (+104, lrugen moves from offset 176 to 192, plus tail padding to 64)",
    "mem_cgroup_per_node 2048 -> 2112 (+64, 40 bytes of padding after lruvec absorb part of the growth)",
];

#[test]
fn header_types_have_gcc_layouts_and_embedding_links() {
    let t = types(BEFORE);
    assert!(t.skipped.is_empty(), "{:?}", t.skipped);
    let lruvec = t.db.find("lruvec").unwrap();
    assert_eq!((lruvec.size, lruvec.align), (1624, 8));
    let lrugen = lruvec.members.iter().find(|m| m.name == "lrugen").unwrap();
    assert_eq!(lrugen.offset, 176);
    assert_eq!(lrugen.aggregate.as_deref(), Some("struct lru_gen_folio"));
    let folio = t.db.find("lru_gen_folio").unwrap();
    let evicted = folio.members.iter().find(|m| m.name == "evicted").unwrap();
    assert_eq!(evicted.aggregate.as_deref(), Some("atomic_long_t"));
    assert_eq!(evicted.count, 8);
    let list = lruvec.members.iter().find(|m| m.name == "lists").unwrap();
    assert_eq!(
        (list.aggregate.as_deref(), list.count),
        (Some("struct list_head"), 5)
    );
    let embedders: Vec<&str> =
        t.db.embedders("lru_gen_folio")
            .iter()
            .map(|(a, _)| a.name.as_str())
            .collect();
    assert_eq!(embedders, ["lruvec"]);
    // Pointers do not embed.
    assert!(t
        .db
        .embedders("mem_cgroup_reclaim_iter")
        .iter()
        .all(|(a, _)| a.name == "mem_cgroup_per_node"));
    let pcn = t.db.find("mem_cgroup_per_node").unwrap();
    assert_eq!((pcn.size, pcn.align), (2048, 64));
}

#[test]
fn before_and_after_headers_give_the_seed_lines() {
    let report = growth::compare_headers(&types(BEFORE), &types(AFTER), "lru_gen_folio").unwrap();
    let lines: Vec<&str> = report.entries.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(lines, SEED_LINES);
    let text = report.text();
    assert!(text.starts_with(&(SEED_LINES.join("\n") + "\n")), "{text}");
    assert!(
        text.contains("\nmem_cgroup_per_node: kmalloc-2k -> kmalloc-4k, +2048 bytes per object\n"),
        "{text}"
    );
    // The other two stay in kmalloc-2k and are not flagged.
    assert_eq!(text.matches("kmalloc-").count(), 2, "{text}");
}

#[test]
fn seed_entries_carry_the_numbers() {
    let report = growth::compare_headers(&types(BEFORE), &types(AFTER), "lru_gen_folio").unwrap();
    let [folio, lruvec, pcn] = &report.entries[..] else {
        panic!("{:?}", report.entries)
    };
    assert_eq!(
        (folio.old, folio.new),
        (
            Shape {
                size: 1360,
                align: 8
            },
            Shape {
                size: 1408,
                align: 64
            }
        )
    );
    assert_eq!(
        folio.parts,
        [Part::Hole {
            member: "evicted[]".into(),
            bytes: 48
        }]
    );

    assert_eq!(lruvec.delta, 104);
    assert_eq!(lruvec.embeds.len(), 1);
    let e = &lruvec.embeds[0];
    assert_eq!(
        (e.member.as_str(), e.old_offset, e.new_offset, e.moved),
        ("lrugen", 176, 192, 16)
    );
    assert_eq!((e.old_align, e.new_align), (8, 64));
    assert_eq!(
        e.reason.as_deref(),
        Some("struct lru_gen_folio is now 64-byte aligned (was 8)")
    );
    assert_eq!(
        (
            lruvec.padding.tail_old,
            lruvec.padding.tail_new,
            lruvec.padding.added
        ),
        (0, 40, 56)
    );
    assert_eq!(lruvec.padding.absorbed, 0);

    assert_eq!(pcn.delta, 64);
    assert_eq!(pcn.padding.absorbed, 40);
    assert_eq!(pcn.embeds[0].old_offset, 128);
    assert_eq!(pcn.embeds[0].new_offset, 128);
    assert!(pcn.allocation.crosses);
    assert_eq!(pcn.allocation.per_object, 2048);
    assert!(!lruvec.allocation.crosses && !folio.allocation.crosses);
    assert!(
        pcn.why.iter().any(|w| w.contains("changes in steps of 64")),
        "{:?}",
        pcn.why
    );
}

#[test]
fn a_new_size_alone_gives_the_same_embedder_lines() {
    let t = types(BEFORE);
    let report = growth::grow(
        &t.db,
        "lru_gen_folio",
        Shape {
            size: 1408,
            align: 64,
        },
    )
    .unwrap();
    let lines: Vec<&str> = report.entries.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(
        lines,
        [
            "lru_gen_folio 1360 -> 1408 (+48)",
            SEED_LINES[1],
            SEED_LINES[2]
        ]
    );
    // The relayout agrees with gcc on the header after the fix.
    let after = types(AFTER);
    for e in &report.entries {
        let gcc = after.db.find(&e.name).unwrap();
        assert_eq!(
            (e.new.size, e.new.align),
            (gcc.size, gcc.align),
            "{}",
            e.name
        );
    }
}

#[test]
fn instances_multiply_the_real_bytes_per_object() {
    let t = types(BEFORE);
    let mut report = growth::grow(
        &t.db,
        "lru_gen_folio",
        Shape {
            size: 1408,
            align: 64,
        },
    )
    .unwrap();
    let spec = Instances::parse("mem_cgroup_per_node=4:per memcg, 4 nodes").unwrap();
    report.apply_instances(&[spec]).unwrap();
    let text = report.text();
    assert!(
        text.contains("mem_cgroup_per_node: kmalloc-2k -> kmalloc-4k, +2048 bytes per object, x4 (per memcg, 4 nodes): +8192 bytes"),
        "{text}"
    );
    let unknown = Instances::parse("mem_cgroup=2").unwrap();
    let err = report.apply_instances(&[unknown]).unwrap_err().to_string();
    assert!(
        err.contains("`mem_cgroup`") && err.contains("mem_cgroup_per_node"),
        "{err}"
    );
    assert!(Instances::parse("lruvec").is_err());
    assert!(Instances::parse("lruvec=many").is_err());
}

#[test]
fn padding_can_absorb_all_of_the_growth() {
    // lruvec +16 (still 8-aligned): the 40 bytes after it in
    // mem_cgroup_per_node take all of it.
    let t = types(BEFORE);
    let report = growth::grow(
        &t.db,
        "lruvec",
        Shape {
            size: 1640,
            align: 8,
        },
    )
    .unwrap();
    let lines: Vec<&str> = report.entries.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(
        lines,
        [
            "lruvec 1624 -> 1640 (+16)",
            "mem_cgroup_per_node 2048 -> 2048 (+0, 16 bytes of padding after lruvec absorb the growth)",
        ]
    );
    assert!(report.text().contains("No kmalloc size class changes."));
}

#[test]
fn shrinking_is_reported_as_shrinkage() {
    let t = types(BEFORE);
    let lines = |size: u64| -> Vec<String> {
        let report = growth::grow(&t.db, "lru_gen_folio", Shape { size, align: 8 }).unwrap();
        report.entries.iter().map(|e| e.line.clone()).collect()
    };
    // stat_cache keeps its line: the padding before it grows.
    assert_eq!(
        lines(1344),
        [
            "lru_gen_folio 1360 -> 1344 (-16)",
            "lruvec 1624 -> 1608 (-16)",
            "mem_cgroup_per_node 2048 -> 2048 (+0, padding after lruvec grows by 16 bytes)",
        ]
    );
    // stat_cache moves up a line: a whole line less.
    assert_eq!(
        lines(1328),
        [
            "lru_gen_folio 1360 -> 1328 (-32)",
            "lruvec 1624 -> 1592 (-32)",
            "mem_cgroup_per_node 2048 -> 1984 (-64, 32 bytes of padding after lruvec are gone)",
        ]
    );
}

#[test]
fn a_struct_nothing_embeds_is_reported_alone() {
    let t = types(BEFORE);
    let report = growth::grow(
        &t.db,
        "mem_cgroup_per_node",
        Shape {
            size: 2112,
            align: 64,
        },
    )
    .unwrap();
    assert_eq!(report.entries.len(), 1);
    assert_eq!(
        report.entries[0].line,
        "mem_cgroup_per_node 2048 -> 2112 (+64)"
    );
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("nothing in") && n.contains("embeds struct mem_cgroup_per_node")),
        "{:?}",
        report.notes
    );
    assert!(report
        .text()
        .contains("mem_cgroup_per_node: kmalloc-2k -> kmalloc-4k, +2048 bytes per object"));
}

#[test]
fn bad_input_gets_one_line_errors() {
    let t = types(BEFORE);
    let err = |name: &str, size: u64, align: u64| {
        growth::grow(&t.db, name, Shape { size, align })
            .unwrap_err()
            .to_string()
    };
    let e = err("lru_gen_foli", 1408, 64);
    assert!(
        e.contains("no struct or union named `lru_gen_foli`") && e.contains("lru_gen_folio"),
        "{e}"
    );
    let e = err("lru_gen_folio", 1400, 64);
    assert!(
        e.contains("not a multiple of the alignment 64") && e.contains("--size 1408"),
        "{e}"
    );
    let e = err("lru_gen_folio", 1408, 48);
    assert!(e.contains("not a power of two"), "{e}");
    let e = err("lru_gen_folio", 1360, 8);
    assert!(e.contains("nothing changes"), "{e}");
    let e = err("lru_gen_folio", 0, 8);
    assert!(e.contains("size of 0"), "{e}");
    for e in [err("x", 8, 8), err("lruvec", 1, 8)] {
        assert!(!e.contains('\n'), "{e}");
    }
    let e = growth::compare_headers(&t, &types(AFTER), "lruvecs")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`lruvecs`") && e.contains("lruvec"), "{e}");
}

#[test]
fn same_size_in_both_headers_says_so() {
    let report = growth::compare_headers(&types(BEFORE), &types(BEFORE), "lruvec").unwrap();
    assert_eq!(report.entries.len(), 1);
    assert_eq!(report.entries[0].line, "lruvec 1624 -> 1624 (+0)");
    assert!(
        report.notes[0].contains("keeps its size (1624) and alignment (8)"),
        "{:?}",
        report.notes
    );
}

#[test]
fn table_and_json_carry_every_struct() {
    let report = growth::compare_headers(&types(BEFORE), &types(AFTER), "lru_gen_folio").unwrap();
    let table = report.table();
    let rows: Vec<&str> = table.lines().collect();
    assert!(
        rows[0].starts_with("struct") && rows[0].contains("kmalloc"),
        "{table}"
    );
    let lruvec = rows.iter().find(|r| r.starts_with("lruvec ")).unwrap();
    for cell in [
        "1624 -> 1728",
        "+104",
        "8 -> 64",
        "lrugen",
        "176 -> 192",
        "+16",
        "0 -> 40",
    ] {
        assert!(lruvec.contains(cell), "{cell} missing: {lruvec}");
    }
    let pcn = rows
        .iter()
        .find(|r| r.starts_with("mem_cgroup_per_node"))
        .unwrap();
    assert!(
        pcn.contains("kmalloc-2k -> kmalloc-4k") && pcn.contains("+2048"),
        "{pcn}"
    );
    let v = report.json();
    assert_eq!(v["mode"], "compare");
    assert_eq!(v["entries"][1]["line"], SEED_LINES[1]);
    assert_eq!(v["entries"][1]["embeds"][0]["new_offset"], 192);
    assert_eq!(v["entries"][2]["padding"]["absorbed"], 40);
    assert_eq!(v["entries"][2]["allocation"]["new"]["name"], "kmalloc-4k");
    assert_eq!(v["entries"][0]["parts"][0]["kind"], "hole");
}

/// A hand-made database: `inner` embedded in arrays, in a union and
/// several levels deep, and an aligned member the database does not know
/// about (a zero-size marker's doing).
fn nested_db() -> TypeDb {
    let m = |name: &str,
             ty: &str,
             offset: u64,
             size: u64,
             align: u64,
             agg: Option<&str>,
             count: u64| Member {
        name: name.into(),
        ty: ty.into(),
        offset,
        bit_offset: None,
        bit_size: None,
        size,
        align,
        attr_align: None,
        aggregate: agg.map(str::to_string),
        count,
    };
    let s =
        |name: &str, kind: AggregateKind, size: u64, align: u64, members: Vec<Member>| Aggregate {
            name: name.into(),
            name_kind: NameKind::Tag,
            kind,
            size,
            align,
            members,
            packed: false,
            attr_align: None,
        };
    TypeDb::from_aggregates(
        "nested",
        vec![
            s(
                "inner",
                AggregateKind::Struct,
                24,
                8,
                vec![m("a", "long[3]", 0, 24, 8, None, 3)],
            ),
            s(
                "pair",
                AggregateKind::Struct,
                56,
                8,
                vec![
                    m("n", "int", 0, 4, 4, None, 1),
                    m("two", "struct inner[2]", 8, 48, 8, Some("struct inner"), 2),
                ],
            ),
            s(
                "either",
                AggregateKind::Union,
                64,
                8,
                vec![
                    m("one", "struct inner", 0, 24, 8, None, 1),
                    m("raw", "char[64]", 0, 64, 1, None, 64),
                ],
            ),
            s(
                "outer",
                AggregateKind::Struct,
                192,
                64,
                vec![
                    m("p", "struct pair", 0, 56, 8, Some("struct pair"), 1),
                    m("u", "union either", 56, 64, 8, Some("union either"), 1),
                    // At 128 although natural placement gives 120: aligned(64).
                    m("hot", "long", 128, 8, 8, None, 1),
                ],
            ),
        ],
        false,
    )
}

#[test]
fn nested_arrays_unions_and_inferred_alignment() {
    let mut db = nested_db();
    // `one` in the union embeds inner too.
    let aggs: Vec<Aggregate> = db
        .aggregates()
        .cloned()
        .map(|mut a| {
            for m in &mut a.members {
                if m.name == "one" {
                    m.aggregate = Some("struct inner".into());
                }
            }
            a
        })
        .collect();
    db = TypeDb::from_aggregates("nested", aggs, false);
    let report = growth::grow(&db, "inner", Shape { size: 40, align: 8 }).unwrap();
    let lines: Vec<&str> = report.entries.iter().map(|e| e.line.as_str()).collect();
    assert_eq!(
        lines,
        [
            "inner 24 -> 40 (+16)",
            "pair 56 -> 88 (+32, two[] grows by 32)",
            "either 64 -> 64 (+0, the growth fits beside larger members)",
            "outer 192 -> 256 (+64, hot moves from offset 128 to 192)",
        ]
    );
    let outer = &report.entries[3];
    assert!(
        outer.why.iter().any(|w| w.contains(
            "outer.hot: offset 128 lies past its natural place 120: assumed __aligned(64)"
        )),
        "{:?}",
        outer.why
    );
    let pair = &report.entries[1];
    assert_eq!(pair.embeds[0].count, 2);
}

#[test]
fn an_alignment_change_that_moves_nothing() {
    // mem_cgroup_reclaim_iter sits at 32: 16-byte alignment moves nothing.
    let t = types(BEFORE);
    let report = growth::grow(
        &t.db,
        "mem_cgroup_reclaim_iter",
        Shape {
            size: 16,
            align: 16,
        },
    )
    .unwrap();
    assert_eq!(
        report.entries[0].line,
        "mem_cgroup_reclaim_iter 16 -> 16 (+0)"
    );
    assert_eq!(
        report.entries[0].why,
        ["mem_cgroup_reclaim_iter is now 16-byte aligned (was 8)"]
    );
    let pcn = &report.entries[1];
    assert_eq!(pcn.line, "mem_cgroup_per_node 2048 -> 2048 (+0)");
    assert_eq!(pcn.embeds[0].moved, 0);
}

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

#[cfg(feature = "btf")]
fn vmlinux() -> Option<TypeDb> {
    if !Path::new(VMLINUX).exists() {
        eprintln!("{VMLINUX} does not exist: kernel BTF growth tests skipped");
        return None;
    }
    Some(layout_core::btf::load_btf(Path::new(VMLINUX)).unwrap_or_else(|e| panic!("{e}")))
}

/// page_counter + 64 bytes: mem_cgroup grows by 64 for each page_counter
/// it holds, less padding absorbed, plus padding added.
#[cfg(feature = "btf")]
#[test]
fn kernel_page_counter_growth_reaches_mem_cgroup() {
    let Some(db) = vmlinux() else { return };
    let Some(pc) = db.find("struct page_counter") else {
        eprintln!("this kernel has no struct page_counter: skipped");
        return;
    };
    let (size, align) = (pc.size, pc.align);
    let report = growth::grow(
        &db,
        "page_counter",
        Shape {
            size: size + 64,
            align,
        },
    )
    .unwrap();
    println!("{}", report.text());
    let mcg = report
        .entries
        .iter()
        .find(|e| e.name == "mem_cgroup")
        .expect("mem_cgroup embeds page_counter");
    // Count the page_counter slots of mem_cgroup: direct members (arrays
    // count each element) plus anonymous unions that hold some (one slot
    // each, their members overlap).
    let mem_cgroup = db.find("struct mem_cgroup").unwrap();
    let mut slots = 0;
    for (i, m) in mem_cgroup.members.iter().enumerate() {
        let Some(inner) = db.member_aggregate(mem_cgroup, i) else {
            continue;
        };
        if inner.name == "page_counter" {
            slots += m.count;
        } else if inner.is_anonymous()
            && inner
                .members
                .iter()
                .any(|x| x.aggregate.as_deref() == Some("struct page_counter"))
        {
            slots += 1;
        }
    }
    assert!(slots >= 2, "mem_cgroup has {slots} page_counter slots");
    assert_eq!(mcg.padding.member_growth, 64 * slots as i64, "{}", mcg.line);
    let absorbed = mcg.padding.absorbed as i64;
    assert_eq!(
        mcg.delta,
        64 * slots as i64 - absorbed + mcg.padding.added as i64,
        "{}",
        mcg.line
    );
    assert!(mcg.delta > 0 && mcg.delta % 64 == 0, "{}", mcg.line);
    // Every embedder, direct or not, is in the report once.
    let mut names: Vec<&str> = report.entries.iter().map(|e| e.name.as_str()).collect();
    let n = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n);
    for (agg, _) in db.embedders("struct page_counter") {
        assert!(names.contains(&agg.name.as_str()), "{} missing", agg.name);
    }
}

/// Growing every 40th kernel struct that something embeds by its
/// alignment (and, for some, raising the alignment to 64): every entry's
/// size change is its members' growth plus padding added less padding
/// absorbed, every embedder comes after the types it embeds, and nothing
/// that embeds a changed type by value is left out.
#[cfg(feature = "btf")]
#[test]
fn kernel_growth_accounts_for_every_byte() {
    let Some(db) = vmlinux() else { return };
    let mut checked = 0;
    for (k, agg) in db.aggregates().enumerate().filter(|(k, _)| k % 40 == 0) {
        if db.embedders_of(agg).is_empty() || agg.size == 0 {
            continue;
        }
        let new = if k % 80 == 0 {
            Shape {
                size: (agg.size + 1).next_multiple_of(64),
                align: 64,
            }
        } else {
            Shape {
                size: agg.size + agg.align,
                align: agg.align,
            }
        };
        let report = growth::grow(&db, &agg.display_name(), new)
            .unwrap_or_else(|e| panic!("{}: {e}", agg.name));
        // Each type at most once: a name twice only for two types with one
        // name (the native and the compat `elf_note_info` of binfmt_elf).
        let mut seen: std::collections::HashMap<String, usize> = Default::default();
        for e in &report.entries {
            let times = seen.entry(e.name.clone()).or_default();
            *times += 1;
            let types = db.find_all(&e.name).len().max(1);
            assert!(
                *times <= types,
                "{} {} times of {} types (growing {})",
                e.name,
                times,
                types,
                agg.name
            );
            if e.kind == "struct" && !std::ptr::eq(e, &report.entries[0]) {
                let p = &e.padding;
                assert_eq!(
                    e.delta,
                    p.member_growth + p.added as i64 - p.absorbed as i64,
                    "{}: {}",
                    agg.name,
                    e.line
                );
            }
            assert_eq!(e.new.size % e.new.align, 0, "{}", e.line);
            for m in &e.embeds {
                let ty =
                    m.ty.trim_start_matches("struct ")
                        .trim_start_matches("union ");
                assert!(
                    seen.contains_key(ty),
                    "{}: {} comes before {ty}",
                    agg.name,
                    e.name
                );
            }
        }
        checked += 1;
    }
    assert!(checked > 50, "{checked}");
}
