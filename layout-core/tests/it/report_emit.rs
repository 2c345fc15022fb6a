//! Reports and emitters on hand-built structs and layouts: the lru_gen case
//! (struct lru_gen_folio) before and after, and small headers whose
//! diffs are applied with `patch -p1` and compiled with gcc.
//!
//! Needs `gcc` and `patch` on PATH.

use crate::support;

use layout_core::emit::{c_diff, phase_assertions, unpinned_offsets, CStyle};
use layout_core::emit::{changelog_of, ChangelogNotes};
use layout_core::layout::Slot;
use layout_core::report::json::ConflictJson;
use layout_core::report::{
    conflict_lines, diagram, layout_json, table, LayoutJson, LayoutView, MovedRun, ProposalView,
};
use layout_core::source::{MemberSource, StructSource};
use layout_core::{verify, Access, Field, Layout, Placement, Struct, VerifiedLayout};
use std::path::{Path, PathBuf};
use support::{assert_gcc_layout_with, scratch_dir};

// ---------------------------------------------------------------------------
// The lru_gen case.

fn r() -> Access {
    Access::ReadMostly
}
fn lru() -> Access {
    Access::LockedWrite {
        lock: "lru_lock".into(),
    }
}
fn a() -> Access {
    Access::Lockless { group: None }
}

/// struct lru_gen_folio, x86_64, CONFIG_LRU_GEN_STATS=n.
fn seed_struct() -> Struct {
    let f = |name: &str, ty: &str, size, align, access| {
        Field::new(name, ty, size, align).with_access(access)
    };
    Struct::new(
        "lru_gen_folio",
        vec![
            f("max_seq", "unsigned long", 8, 8, r()),
            f("min_seq", "unsigned long[2]", 16, 8, r()),
            f("timestamps", "unsigned long[4]", 32, 8, r()),
            f("folios", "struct list_head[4][2][5]", 640, 8, lru()),
            f("nr_pages", "long[4][2][5]", 320, 8, lru()),
            f("avg_refaulted", "unsigned long[2][4]", 64, 8, lru()),
            f("avg_total", "unsigned long[2][4]", 64, 8, lru()),
            f("protected", "unsigned long[1][2][4]", 64, 8, lru()),
            f("evicted", "atomic_long_t[1][2][4]", 64, 8, a()),
            f("refaulted", "atomic_long_t[1][2][4]", 64, 8, a()),
            f("enabled", "bool", 1, 1, r()),
            f("gen", "u8", 1, 1, r()),
            f("seg", "u8", 1, 1, r()),
            f("list", "struct hlist_nulls_node", 16, 8, r()),
        ],
    )
}

/// C's sequential placement of `order` (field names); no extra alignment.
fn sequential(s: &Struct, order: &[&str], placement: Placement) -> Layout {
    let mut pos = 0u64;
    let mut slots = Vec::new();
    for name in order {
        let i = s.field_index(name).unwrap();
        let f = &s.fields[i];
        pos = pos.div_ceil(f.align) * f.align;
        slots.push(Slot {
            field: i,
            offset: pos,
        });
        pos += f.size;
    }
    let align = s.natural_align();
    Layout {
        slots,
        size: pos.div_ceil(align) * align,
        align,
        line: 64,
        placement,
    }
}

fn at(s: &Struct, offsets: &[(&str, u64)], size: u64, align: u64, placement: Placement) -> Layout {
    let mut slots: Vec<Slot> = offsets
        .iter()
        .map(|&(name, offset)| Slot {
            field: s.field_index(name).unwrap(),
            offset,
        })
        .collect();
    slots.sort_by_key(|sl| sl.offset);
    Layout {
        slots,
        size,
        align,
        line: 64,
        placement,
    }
}

const SEED_ORDER: &[&str] = &[
    "max_seq",
    "min_seq",
    "timestamps",
    "folios",
    "nr_pages",
    "avg_refaulted",
    "avg_total",
    "protected",
    "evicted",
    "refaulted",
    "enabled",
    "gen",
    "seg",
    "list",
];

/// Before the fix: lrugen at offset 304 of mem_cgroup_per_node.
fn seed_before() -> (Struct, Layout) {
    let s = seed_struct();
    let l = sequential(&s, SEED_ORDER, Placement::Offset(304));
    assert_eq!(l.size, 1360);
    (s, l)
}

/// The hand fix: read-mostly fields up front, evicted/refaulted in their
/// own line-aligned group at the end; lrugen at offset 320.
fn seed_after() -> VerifiedLayout {
    let s = seed_struct();
    let l = at(
        &s,
        &[
            ("max_seq", 0),
            ("min_seq", 8),
            ("timestamps", 24),
            ("enabled", 56),
            ("gen", 57),
            ("seg", 58),
            ("list", 64),
            ("folios", 80),
            ("nr_pages", 720),
            ("avg_refaulted", 1040),
            ("avg_total", 1104),
            ("protected", 1168),
            ("evicted", 1280),
            ("refaulted", 1344),
        ],
        1408,
        64,
        Placement::Offset(320),
    );
    verify(&s, &l).expect("the hand fix is verified")
}

fn position(haystack: &str, needle: &str) -> usize {
    haystack
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not found in:\n{haystack}"))
}

// ---------------------------------------------------------------------------
// Table.

#[test]
fn seed_table_before_marks_line_25() {
    let (s, l) = seed_before();
    let t = table(&s, &l);
    println!("{t}");
    let boundary = position(
        &t,
        "\t/* --- cacheline 25 boundary (1600 bytes) was 40 bytes ago --- */\n",
    );
    let mark = position(
        &t,
        "\t/* !!! line 25: lockless refaulted shares with read-mostly enabled, gen, seg, list */\n",
    );
    let refaulted = position(&t, "refaulted[1][2][4];");
    let enabled = position(&t, "\tbool ");
    assert!(
        refaulted < boundary && boundary < mark && mark < enabled,
        "{t}"
    );
    // Container lines: struct byte 0 is container 304 (line 4).
    assert!(
        t.contains("/* --- cacheline 5 boundary (320 bytes) was 8 bytes ago --- */"),
        "{t}"
    );
    assert!(t.contains("\t/* XXX 5 bytes hole, try to pack */\n"), "{t}");
    assert!(t.contains(
        "/* size: 1360, cachelines: 22, members: 14, sum members: 1355, holes: 1, sum holes: 5, padding: 0 */"
    ));
    assert!(t.contains("\t/* hard conflicts: 1 */\n"), "{t}");
    assert!(
        t.starts_with("struct lru_gen_folio {\n") && t.ends_with("};\n"),
        "{t}"
    );
    // C array declarators and the class column.
    let nr_pages = t.lines().find(|l| l.contains("nr_pages")).unwrap();
    assert!(nr_pages.starts_with("\tlong "), "{nr_pages}");
    assert!(nr_pages.contains(" nr_pages[4][2][5];"), "{nr_pages}");
    assert!(nr_pages.contains("/*   696   320 */"), "{nr_pages}");
    assert!(nr_pages.ends_with("  L(lru_lock)"), "{nr_pages}");
    let evicted = t.lines().find(|l| l.contains("evicted")).unwrap();
    assert!(evicted.ends_with(" A"), "{evicted}");
    // Offsets and classes line up in columns.
    let comment_columns: Vec<usize> = t
        .lines()
        .filter(|l| !l.starts_with("\t/*") && l.contains(" */  "))
        .map(|l| l.find("/*").unwrap())
        .collect();
    assert_eq!(comment_columns.len(), 14);
    assert!(comment_columns.windows(2).all(|w| w[0] == w[1]), "{t}");
}

#[test]
fn seed_table_after_has_no_conflict_and_shows_the_hole() {
    let v = seed_after();
    let t = table(v.strukt(), &v);
    println!("{t}");
    assert!(
        t.contains("\t/* XXX 48 bytes hole, try to pack */\n"),
        "{t}"
    );
    // evicted starts line 25 exactly: boundary without "was ... ago".
    let boundary = position(&t, "/* --- cacheline 25 boundary (1600 bytes) --- */");
    assert!(boundary < position(&t, "evicted"), "{t}");
    assert!(t.contains("\t/* hard conflicts: 0 */\n"), "{t}");
    assert!(
        t.contains("\t/* align: 64 (natural alignment 8) */\n"),
        "{t}"
    );
    assert!(!t.contains("!!!"), "{t}");
}

#[test]
fn small_table_golden() {
    let s = Struct::new(
        "counter",
        vec![
            Field::new("usage", "atomic_long_t", 8, 8).with_access(a()),
            Field::new("max", "unsigned long", 8, 8).with_access(r()),
            Field::new("parent", "struct counter *", 8, 8).with_access(r()),
            Field::new("flags", "int", 4, 4),
        ],
    );
    let l = at(
        &s,
        &[("max", 0), ("parent", 8), ("flags", 16), ("usage", 64)],
        128,
        64,
        Placement::Aligned,
    );
    let want = "\
struct counter {
\tunsigned long    max;     /*     0     8 */  R
\tstruct counter * parent;  /*     8     8 */  R
\tint              flags;   /*    16     4 */  C

\t/* XXX 44 bytes hole, try to pack */

\t/* --- cacheline 1 boundary (64 bytes) --- */
\tatomic_long_t    usage;   /*    64     8 */  A

\t/* XXX 56 bytes tail padding */

\t/* size: 128, cachelines: 2, members: 4, sum members: 28, holes: 1, sum holes: 44, padding: 56 */
\t/* align: 64 (natural alignment 8) */
\t/* hard conflicts: 0 */
};
";
    assert_eq!(table(&s, &l), want);
}

#[test]
fn aligned_mode_conflict_at_another_phase_is_listed_on_top() {
    let s = Struct::new(
        "s",
        vec![
            Field::new("hot", "unsigned long", 8, 8).with_access(r()),
            Field::new("hits", "atomic_long_t", 8, 8).with_access(a()),
        ],
    );
    // At phase 0 hot is on line 0 and hits on line 1; 8 bytes later they share line 1.
    let l = at(&s, &[("hot", 56), ("hits", 64)], 72, 8, Placement::Aligned);
    let t = table(&s, &l);
    assert!(
        t.contains(
            "\t/* !!! when the struct starts 8 bytes into a line, line 1: lockless hits shares with read-mostly hot */\n"
        ),
        "{t}"
    );
    assert!(t.contains("\t/* hard conflicts: 1 */\n"), "{t}");
    assert_eq!(conflict_lines(&s, &l), vec![1]);
}

#[test]
fn rust_types_print_in_rust_syntax() {
    let s = Struct::new(
        "Stats",
        vec![
            Field::new("config", "u64", 8, 8).with_access(r()),
            Field::new("counts", "[AtomicU64; 4]", 32, 8).with_access(a()),
        ],
    );
    let l = at(
        &s,
        &[("config", 0), ("counts", 64)],
        128,
        64,
        Placement::Aligned,
    );
    let t = table(&s, &l);
    assert!(t.contains("\tconfig: "), "{t}");
    assert!(t.contains(" [AtomicU64; 4],"), "{t}");
    assert!(t.ends_with("\n}\n"), "{t}");
}

#[test]
fn writer_groups_are_marked() {
    let s = Struct::new(
        "ring",
        vec![
            Field::new("head", "unsigned int", 4, 4).with_access(Access::Lockless {
                group: Some("prod".into()),
            }),
            Field::new("tail", "unsigned int", 4, 4).with_access(Access::Lockless {
                group: Some("cons".into()),
            }),
        ],
    );
    let l = at(&s, &[("head", 0), ("tail", 4)], 8, 4, Placement::Aligned);
    let t = table(&s, &l);
    assert!(
        t.contains("  A(prod)\n") && t.contains("  A(cons)\n"),
        "{t}"
    );
    assert!(
        t.contains(
            "/* !!! line 0: lockless head shares with lockless tail of another writer group */"
        ),
        "{t}"
    );
    let d = diagram(&s, &l, &[0]);
    assert!(d.contains("the line bounces"), "{d}");
}

// ---------------------------------------------------------------------------
// Diagram.

#[test]
fn seed_diagram_line_25_before() {
    let (s, l) = seed_before();
    let d = diagram(&s, &l, &[25]);
    println!("{d}");
    let want_box = "\
line 25 (1600-1663)
+------------+-----------------+-----------+-------------+
| refaulted  | enabled,gen,seg | pad       | list        |
| <1600-1639 | 1640-1642       | 1643-1647 | 1648-1663   |
| lockless   | read-mostly     |           | read-mostly |
+------------+-----------------+-----------+-------------+
";
    assert!(d.starts_with(want_box), "{d}");
    assert!(d.contains("CPU A (atomic, no lock)"), "{d}");
    assert!(d.contains("reads enabled, gen, seg, list -> miss"), "{d}");
    assert!(
        d.contains("CPU B doesn't need refaulted, but it keeps missing on line 25."),
        "{d}"
    );
    assert!(d.lines().all(|l| l.len() <= 100), "{d}");
}

#[test]
fn seed_diagram_after_keeps_lockless_lines_apart() {
    let v = seed_after();
    let d = diagram(v.strukt(), &v, &[5, 25, 26]);
    println!("{d}");
    assert!(
        d.contains(
            "line 25 (1600-1663)\n+-----------+\n| evicted   |\n| 1600-1663 |\n| lockless  |\n"
        ),
        "{d}"
    );
    assert!(
        d.contains("Only CPU A writes line 25, and no read-mostly field shares it"),
        "{d}"
    );
    // Line 5 starts at the struct: nothing outside it; the read-mostly
    // fields share one cell, their names wrapped.
    assert!(
        d.contains(
            "line 5 (320-383)\n\
             +-------------------------+---------+\n\
             | max_seq,min_seq,        | pad     |\n\
             | timestamps,enabled,gen, |         |\n\
             | seg                     |         |\n\
             | 320-378                 | 379-383 |\n\
             | read-mostly             |         |\n"
        ),
        "{d}"
    );
    assert!(!d.contains("miss"), "{d}");
    assert!(d.lines().all(|l| l.len() <= 100), "{d}");
}

#[test]
fn diagram_shows_bytes_outside_the_struct_and_lines_it_does_not_touch() {
    let (s, l) = seed_before();
    let d = diagram(&s, &l, &[4, 40]);
    assert!(
        d.contains("| outside | max_seq,min_seq |\n| 256-303 | 304-319>        |\n"),
        "{d}"
    );
    assert!(
        d.contains(
            "CPU A (reader)\nreads max_seq, min_seq\n\nLine 4 is only read: no false sharing.\n"
        ),
        "{d}"
    );
    assert!(
        d.contains("line 40 (2560-2623)\n  holds no byte of struct lru_gen_folio (lines 4-25)\n"),
        "{d}"
    );
}

#[test]
fn diagram_wraps_many_cells_into_several_boxes() {
    let fields: Vec<Field> = (0..16)
        .map(|i| {
            let access = if i % 2 == 0 {
                lru()
            } else {
                Access::LockedWrite {
                    lock: "other_lock".into(),
                }
            };
            Field::new(format!("field_{i}"), "unsigned int", 4, 4).with_access(access)
        })
        .collect();
    let s = Struct::new("many", fields);
    let order: Vec<String> = s.fields.iter().map(|f| f.name.clone()).collect();
    let order: Vec<&str> = order.iter().map(String::as_str).collect();
    let l = sequential(&s, &order, Placement::Aligned);
    let d = diagram(&s, &l, &[0]);
    println!("{d}");
    assert!(d.lines().all(|l| l.len() <= 100), "{d}");
    assert!(
        d.matches("+\n|").count() >= 2,
        "expected several boxes:\n{d}"
    );
    for i in 0..16 {
        assert!(d.contains(&format!("| field_{i} ")), "{d}");
    }
}

// ---------------------------------------------------------------------------
// JSON and conflict lines.

#[test]
fn json_shape() {
    let (s, l) = seed_before();
    let j = layout_json(&s, &l);
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = vec![
        "struct",
        "size",
        "align",
        "line",
        "offset",
        "fields",
        "cacheline_groups",
        "hard_conflicts",
        "paths",
        "soft_cost",
        "soft_lines",
        "churn",
    ];
    want.sort_unstable();
    let mut keys_sorted = keys.clone();
    keys_sorted.sort_unstable();
    assert_eq!(keys_sorted, want);
    assert_eq!(j["struct"], "lru_gen_folio");
    assert_eq!(j["size"], 1360);
    assert_eq!(j["offset"], 304);
    let fields = j["fields"].as_array().unwrap();
    assert_eq!(fields.len(), 14);
    assert_eq!(
        fields[4],
        serde_json::json!({"name": "nr_pages",
                           "type": "long[4][2][5]",
                           "offset": 696, "size": 320, "align": 8,
                           "access": "locked_write", "lock": "lru_lock", "group": null,
                           "segment": 0, "cacheline_group": null})
    );
    assert_eq!(fields[9]["access"], "lockless_atomic");
    assert_eq!(fields[9]["lock"], serde_json::Value::Null);
    let offsets: Vec<u64> = fields
        .iter()
        .map(|f| f["offset"].as_u64().unwrap())
        .collect();
    assert!(offsets.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(
        j["hard_conflicts"],
        serde_json::json!([{"line": 25, "phase": 48, "lockless": ["refaulted"],
                            "read_mostly": ["enabled", "gen", "seg", "list"]}])
    );
    // No hot paths; the declared order moves nothing; soft costs at the
    // default weights, line by line.
    assert_eq!(j["paths"], serde_json::json!({}));
    assert_eq!(j["churn"], 0);
    let soft: u64 = j["soft_lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["weight"].as_u64().unwrap())
        .sum();
    assert_eq!(j["soft_cost"], soft);
    assert!(soft > 0, "lockless refaulted next to locked fields");
}

#[test]
fn json_aligned_mode_and_zero_size_fields() {
    let s = Struct::new(
        "s",
        vec![
            Field::new("__group_begin", "char[0]", 0, 1),
            Field::new("x", "int", 4, 4).with_access(Access::Lockless {
                group: Some("g".into()),
            }),
        ],
    );
    let l = at(
        &s,
        &[("__group_begin", 0), ("x", 0)],
        4,
        4,
        Placement::Aligned,
    );
    let j = layout_json(&s, &l);
    assert_eq!(j["offset"], serde_json::Value::Null);
    assert_eq!(
        j["fields"],
        serde_json::json!([{"name": "__group_begin", "type": "char[0]", "offset": 0, "size": 0,
                            "align": 1, "access": "marker", "lock": null, "group": null,
                            "segment": 0, "cacheline_group": null},
                           {"name": "x", "type": "int", "offset": 0, "size": 4, "align": 4,
                            "access": "lockless_atomic", "lock": null, "group": "g",
                            "segment": 0, "cacheline_group": null}])
    );
    assert_eq!(j["hard_conflicts"], serde_json::json!([]));
}

#[test]
fn conflict_lines_before_and_after() {
    let (s, l) = seed_before();
    assert_eq!(conflict_lines(&s, &l), vec![25]);
    let v = seed_after();
    assert_eq!(conflict_lines(v.strukt(), &v), Vec::<u64>::new());
}

/// A view holds each layout's rows in reading order once, and a proposal
/// view the runs of members that leave the declared order.
#[test]
fn a_proposal_view_reads_rows_and_moves_once() {
    let (s, l) = seed_before();
    let after = seed_after();
    let p = ProposalView::new(&s, &l, &after);
    for v in [&p.before, &p.after] {
        let mut fields: Vec<usize> = v.order().collect();
        let offsets: Vec<u64> = v.rows.iter().map(|sl| sl.offset).collect();
        assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
        fields.sort_unstable();
        assert_eq!(fields, (0..s.fields.len()).collect::<Vec<_>>());
        let json_names: Vec<String> = v.json().fields.into_iter().map(|f| f.name).collect();
        let names: Vec<String> = v.order().map(|f| s.fields[f].name.clone()).collect();
        assert_eq!(json_names, names);
    }
    assert_eq!(p.before.conflict_lines(), vec![25]);
    assert!(p.after.conflicts.is_empty());
    // The hand fix moves the read-mostly tail (enabled, gen, seg, list) up
    // behind timestamps; everything else keeps its relative order.
    let idx = |n: &str| s.field_index(n).unwrap();
    assert_eq!(
        p.moves,
        [MovedRun {
            after: Some(idx("timestamps")),
            fields: ["enabled", "gen", "seg", "list"].map(idx).to_vec(),
        }]
    );
    let text = changelog_of(&p, &ChangelogNotes::default());
    assert!(
        text.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains(
            "Move enabled, gen, seg and list from cacheline 25 to cachelines 5-6 after timestamps"
        ),
        "{text}"
    );
}

/// The JSON of a layout is a type: read back, it prints the same bytes.
#[test]
fn layout_json_is_a_type_that_reads_back() {
    let (s, l) = seed_before();
    let j = LayoutView::new(&s, &l).json();
    assert_eq!(
        j.hard_conflicts,
        [ConflictJson {
            line: 25,
            phase: 48,
            lockless: vec!["refaulted".into()],
            read_mostly: ["enabled", "gen", "seg", "list"].map(String::from).to_vec(),
        }]
    );
    assert_eq!(j.fields[4].access, "locked_write");
    assert_eq!(j.fields[4].lock.as_deref(), Some("lru_lock"));
    assert_eq!(j.offset, Some(304));
    let text = j.to_pretty();
    assert!(
        text.starts_with("{\n  \"align\": 8,\n"),
        "keys print sorted:\n{text}"
    );
    assert!(text.ends_with("}\n"));
    let back: LayoutJson = serde_json::from_str(&text).unwrap();
    assert_eq!(back, j);
    assert_eq!(back.to_pretty(), text);
}

// ---------------------------------------------------------------------------
// Phase assertion.

#[test]
fn phase_assertion_forms() {
    let (_, l) = seed_before();
    let named = [Some("mem_cgroup_per_node.lruvec.lrugen")];
    assert_eq!(
        phase_assertions(&named, &l).as_deref(),
        Some("static_assert(offsetof(struct mem_cgroup_per_node, lruvec.lrugen) % 64 == 48);")
    );
    // No placeholder without a container's name: nothing to paste.
    assert_eq!(phase_assertions(&[None], &l), None);
    assert_eq!(unpinned_offsets(&[None], &l), [304]);
    assert!(unpinned_offsets(&named, &l).is_empty());
    let aligned = Layout {
        placement: Placement::Aligned,
        ..l.clone()
    };
    assert_eq!(phase_assertions(&[Some("x.y")], &aligned), None);
    // Two containers: one assertion each, at each one's phase.
    let two = Layout {
        placement: Placement::at_offsets(&[136, 172112]).unwrap(),
        ..l
    };
    assert_eq!(
        phase_assertions(
            &[
                Some("mem_cgroup_per_node.lruvec.lrugen"),
                Some("pglist_data.__lruvec.lrugen")
            ],
            &two
        )
        .as_deref(),
        Some(
            "static_assert(offsetof(struct mem_cgroup_per_node, lruvec.lrugen) % 64 == 8);\n\
             static_assert(offsetof(struct pglist_data, __lruvec.lrugen) % 64 == 16);"
        )
    );
}

// ---------------------------------------------------------------------------
// C diff: applied with patch -p1 and checked with gcc.

/// Builds a StructSource for simple headers: one declaration per line, each
/// optionally preceded by `/* ... */` comment lines.
fn struct_source(path: &str, text: &str, s: &Struct) -> StructSource {
    let def_start = text.find(&format!("struct {} {{", s.name)).unwrap();
    let open = def_start + text[def_start..].find('{').unwrap();
    let close = open + text[open..].find("\n};").unwrap() + 1;
    let mut members = Vec::new();
    let mut comment_start: Option<usize> = None;
    let mut line_start = open + 2;
    while line_start < close {
        let line_end = line_start + text[line_start..].find('\n').unwrap() + 1;
        let line = &text[line_start..line_end];
        let trimmed = line.trim();
        if trimmed.starts_with("/*") || trimmed.starts_with('*') {
            comment_start.get_or_insert(line_start);
        } else if trimmed.contains(';') {
            let indent_len = line.len() - line.trim_start().len();
            let decl_start = line_start + indent_len;
            let decl_end = line_start + line.find(';').unwrap() + 1;
            let decl = &text[decl_start..decl_end];
            let field = s.fields.iter().position(|f| {
                decl.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|w| w == f.name)
                    && !decl.contains('(')
            });
            let name_start = decl_start + decl.find(&s.fields[field.unwrap()].name).unwrap();
            let name_end = name_start + s.fields[field.unwrap()].name.len();
            members.push(MemberSource {
                field,
                lines: comment_start.take().unwrap_or(line_start)..line_end,
                decl: decl_start..decl_end,
                name: name_start..name_end,
                indent: line[..indent_len].to_string(),
            });
        } else {
            comment_start = None;
        }
        line_start = line_end;
    }
    StructSource {
        path: PathBuf::from(path),
        text: text.to_string(),
        definition: def_start..close + 1,
        body: open + 1..close,
        members,
    }
}

/// Kernel types and macros the test headers use.
const PRELUDE: &str = "\
#include <stddef.h>
#include <stdbool.h>
#define ____cacheline_aligned_in_smp __attribute__((__aligned__(64)))
typedef unsigned char u8;
typedef struct { long counter; } atomic_long_t;
struct list_head { struct list_head *next, *prev; };
struct hlist_nulls_node { struct hlist_nulls_node *next, **pprev; };
";

/// [`support::apply`], and `patch` leaves no rejects.
fn apply(dir: &Path, path: &str, text: &str, diff: &str) -> String {
    let patched = support::apply(dir, path, text, diff);
    assert!(!dir.join(format!("{path}.rej")).exists());
    patched
}

/// Compiles `header` with gcc and asserts every field's offset, the size and
/// the alignment of the verified layout.
fn assert_gcc_layout(dir: &Path, header: &str, v: &VerifiedLayout) {
    assert_gcc_layout_with(dir, PRELUDE, header, v, &[], &[]);
}

const MMZONE: &str = "\
/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _LINUX_MMZONE_H
#define _LINUX_MMZONE_H

#define MAX_NR_GENS 4
#define ANON_AND_FILE 2
#define MAX_NR_ZONES 5
#define MAX_NR_TIERS 4
#define NR_HIST_GENS 1

/*
 * The youngest generation number is stored in max_seq for both anon and file
 * types as they are aged on an equal footing.
 */
struct lru_gen_folio {
\t/* the aging increments the youngest generation number */
\tunsigned long max_seq;
\t/* the eviction increments the oldest generation numbers */
\tunsigned long min_seq[ANON_AND_FILE];
\t/* the birth time of each generation in jiffies */
\tunsigned long timestamps[MAX_NR_GENS];
\t/* the multi-gen LRU lists, lazily sorted on eviction */
\tstruct list_head folios[MAX_NR_GENS][ANON_AND_FILE][MAX_NR_ZONES];
\t/* the multi-gen LRU sizes, eventually consistent */
\tlong nr_pages[MAX_NR_GENS][ANON_AND_FILE][MAX_NR_ZONES];
\t/* the exponential moving average of refaulted */
\tunsigned long avg_refaulted[ANON_AND_FILE][MAX_NR_TIERS];
\t/* the exponential moving average of evicted+protected */
\tunsigned long avg_total[ANON_AND_FILE][MAX_NR_TIERS];
\t/* can only be modified under the LRU lock */
\tunsigned long protected[NR_HIST_GENS][ANON_AND_FILE][MAX_NR_TIERS];
\t/* can be modified without holding the LRU lock */
\tatomic_long_t evicted[NR_HIST_GENS][ANON_AND_FILE][MAX_NR_TIERS];
\tatomic_long_t refaulted[NR_HIST_GENS][ANON_AND_FILE][MAX_NR_TIERS];
\t/* whether the multi-gen LRU is enabled */
\tbool enabled;
\t/* the memcg generation this lru_gen_folio belongs to */
\tu8 gen;
\t/* the list segment this lru_gen_folio belongs to */
\tu8 seg;
\t/* per-node lru_gen_folio list for global reclaim */
\tstruct hlist_nulls_node list;
};

#endif /* _LINUX_MMZONE_H */
";

const MMZONE_PATH: &str = "include/linux/mmzone.h";

#[test]
fn seed_diff_moves_members_with_their_comments_and_aligns_the_lockless_group() {
    let v = seed_after();
    let src = struct_source(MMZONE_PATH, MMZONE, v.strukt());
    let diff = c_diff(&src, &v, CStyle::Aligned).unwrap();
    println!("{diff}");
    assert!(
        diff.starts_with("--- a/include/linux/mmzone.h\n+++ b/include/linux/mmzone.h\n@@ -"),
        "{diff}"
    );
    assert!(
        diff.contains(" @@ struct lru_gen_folio {\n"),
        "git-style hunk context:\n{diff}"
    );
    assert!(
        diff.contains(
            "+\tatomic_long_t evicted[NR_HIST_GENS][ANON_AND_FILE][MAX_NR_TIERS]\n+\t\t____cacheline_aligned_in_smp;\n"
        ),
        "{diff}"
    );
    let dir = scratch_dir("seed-after");
    let patched = apply(&dir, MMZONE_PATH, MMZONE, &diff);
    // Each comment still sits right above its member.
    assert!(patched.contains("\t/* whether the multi-gen LRU is enabled */\n\tbool enabled;\n"));
    assert!(patched.contains(
        "\t/* the birth time of each generation in jiffies */\n\tunsigned long timestamps[MAX_NR_GENS];\n\t/* whether the multi-gen LRU is enabled */\n"
    ));
    assert_eq!(patched.matches("____cacheline_aligned_in_smp").count(), 1);
    // Outside the struct nothing changed.
    assert!(patched.starts_with(&MMZONE[..MMZONE.find("struct lru_gen_folio {").unwrap()]));
    assert!(patched.ends_with("};\n\n#endif /* _LINUX_MMZONE_H */\n"));
    assert_gcc_layout(&dir, MMZONE_PATH, &v);
}

#[test]
fn phase_mode_diff_pads_to_a_container_line() {
    // lrugen at 304 (phase 48): evicted starts container line 25 (struct 1296),
    // which no alignment of the struct can express.
    let s = seed_struct();
    let l = at(
        &s,
        &[
            ("max_seq", 0),
            ("min_seq", 8),
            ("timestamps", 24),
            ("enabled", 56),
            ("gen", 57),
            ("seg", 58),
            ("list", 64),
            ("folios", 80),
            ("nr_pages", 720),
            ("avg_refaulted", 1040),
            ("avg_total", 1104),
            ("protected", 1168),
            ("evicted", 1296),
            ("refaulted", 1360),
        ],
        1424,
        8,
        Placement::Offset(304),
    );
    let v = verify(&s, &l).unwrap();
    let src = struct_source(MMZONE_PATH, MMZONE, &s);
    let diff = c_diff(&src, &v, CStyle::Aligned).unwrap();
    println!("{diff}");
    assert!(
        diff.contains(
            "+\tu8 __cacheline_pad0[64];\t/* evicted starts cacheline 25 of the container */\n"
        ),
        "{diff}"
    );
    assert!(!diff.contains("____cacheline_aligned"), "{diff}");
    let dir = scratch_dir("phase");
    apply(&dir, MMZONE_PATH, MMZONE, &diff);
    assert_gcc_layout(&dir, MMZONE_PATH, &v);
}

const COUNTER: &str = "\
#ifndef _COUNTER_H
#define _COUNTER_H

struct counter {
\tlong usage;\t/* charged pages */
\tunsigned long max ____cacheline_aligned_in_smp;
\tstruct counter *parent;

\tint flags;
};
#endif
";

/// The counter with every field cold: any layout is free of conflicts.
fn cold_counter() -> Struct {
    let mut s = counter_struct(8);
    for f in &mut s.fields {
        f.access = Access::Cold;
    }
    s
}

fn counter_struct(max_align: u64) -> Struct {
    Struct::new(
        "counter",
        vec![
            Field::new("usage", "long", 8, 8).with_access(a()),
            Field::new("max", "unsigned long", 8, max_align).with_access(r()),
            Field::new("parent", "struct counter *", 8, 8).with_access(r()),
            Field::new("flags", "int", 4, 4),
        ],
    )
}

#[test]
fn attribute_no_longer_needed_is_removed_and_padding_added() {
    // Phase mode at offset 16: usage must start container line 1 (struct 48).
    let s = counter_struct(8);
    let l = at(
        &s,
        &[("max", 0), ("parent", 8), ("flags", 16), ("usage", 48)],
        56,
        8,
        Placement::Offset(16),
    );
    let v = verify(&s, &l).unwrap();
    let src = struct_source("counter.h", COUNTER, &s);
    let diff = c_diff(&src, &v, CStyle::Aligned).unwrap();
    println!("{diff}");
    let dir = scratch_dir("counter-phase");
    let patched = apply(&dir, "counter.h", COUNTER, &diff);
    assert!(!patched.contains("____cacheline_aligned"), "{patched}");
    // Not a kernel header: portable padding type. The trailing comment moved with usage.
    assert!(patched.contains(
        "\tunsigned char __cacheline_pad0[28];\t/* usage starts cacheline 1 of the container */\n\tlong usage;\t/* charged pages */\n"
    ), "{patched}");
    // The blank line stays between the third and fourth member.
    assert!(
        patched.contains("\tint flags;\n\n\tunsigned char __cacheline_pad0"),
        "{patched}"
    );
    assert_gcc_layout(&dir, "counter.h", &v);
}

#[test]
fn attribute_still_needed_is_kept_once() {
    // The front-end folded the attribute into max's alignment.
    let s = counter_struct(64);
    let l = at(
        &s,
        &[("usage", 0), ("max", 64), ("parent", 72), ("flags", 80)],
        128,
        64,
        Placement::Aligned,
    );
    let v = verify(&s, &l).unwrap();
    let src = struct_source("counter.h", COUNTER, &s);
    assert_eq!(
        c_diff(&src, &v, CStyle::Aligned).unwrap(),
        "",
        "the header already has this layout"
    );
    let dir = scratch_dir("counter-same");
    std::fs::write(dir.join("counter.h"), COUNTER).unwrap();
    assert_gcc_layout(&dir, "counter.h", &v);

    // Reordered: parent and flags go first, max still starts line 1.
    let l = at(
        &s,
        &[("parent", 0), ("flags", 8), ("max", 64), ("usage", 128)],
        192,
        64,
        Placement::Aligned,
    );
    let v = verify(&s, &l).unwrap();
    let diff = c_diff(&src, &v, CStyle::Aligned).unwrap();
    println!("{diff}");
    let dir = scratch_dir("counter-reorder");
    let patched = apply(&dir, "counter.h", COUNTER, &diff);
    assert_eq!(
        patched.matches("____cacheline_aligned_in_smp").count(),
        2,
        "{patched}"
    );
    assert!(
        patched.contains("\tunsigned long max ____cacheline_aligned_in_smp;\n"),
        "{patched}"
    );
    assert!(
        patched.contains("\tlong usage ____cacheline_aligned_in_smp;\t/* charged pages */\n"),
        "{patched}"
    );
    assert_gcc_layout(&dir, "counter.h", &v);
}

#[test]
fn line_aligned_struct_without_a_needed_break_aligns_its_first_member() {
    let s = cold_counter();
    let l = at(
        &s,
        &[("usage", 0), ("max", 8), ("parent", 16), ("flags", 24)],
        64,
        64,
        Placement::Aligned,
    );
    let v = verify(&s, &l).unwrap();
    let src = struct_source("counter.h", COUNTER, &s);
    let diff = c_diff(&src, &v, CStyle::Aligned).unwrap();
    let dir = scratch_dir("counter-first");
    let patched = apply(&dir, "counter.h", COUNTER, &diff);
    assert!(
        patched.contains("\tlong usage ____cacheline_aligned_in_smp;\t/* charged pages */\n"),
        "{patched}"
    );
    assert!(patched.contains("\tunsigned long max;\n"), "{patched}");
    assert_gcc_layout(&dir, "counter.h", &v);
}

#[test]
fn tail_padding_beyond_alignment_is_explicit() {
    let s = cold_counter();
    let l = at(
        &s,
        &[("usage", 0), ("max", 8), ("parent", 16), ("flags", 24)],
        40,
        8,
        Placement::Offset(0),
    );
    let v = verify(&s, &l).unwrap();
    let src = struct_source("counter.h", COUNTER, &s);
    let diff = c_diff(&src, &v, CStyle::Aligned).unwrap();
    let dir = scratch_dir("counter-tail");
    let patched = apply(&dir, "counter.h", COUNTER, &diff);
    assert!(patched.contains("\tint flags;\n\tunsigned char __cacheline_pad0[12];\t/* pads struct counter to 40 bytes */\n};"), "{patched}");
    assert_gcc_layout(&dir, "counter.h", &v);
}

#[test]
fn missing_declaration_is_a_located_error() {
    let s = cold_counter();
    let l = at(
        &s,
        &[("usage", 0), ("max", 8), ("parent", 16), ("flags", 24)],
        32,
        8,
        Placement::Aligned,
    );
    let v = verify(&s, &l).unwrap();
    let mut src = struct_source("counter.h", COUNTER, &s);
    src.members.retain(|m| m.field != Some(3));
    let err = c_diff(&src, &v, CStyle::Aligned).unwrap_err();
    assert_eq!(
        err.to_string(),
        "counter.h:4:1: error: field `flags` of struct `counter` has no declaration in the header; \
         help: a field the diff must move has to come from this header"
    );
}

// ---------------------------------------------------------------------------
// C diff on structs read by the C front-end.

#[cfg(feature = "c-header")]
mod with_front_end {
    use super::support::{gcc_check_c, push_case_asserts, Lcg};
    use super::*;
    use layout_core::c::{parse_header, CStruct, Defines, TypeTable};

    fn read(path: &str, text: &str, name: &str, defines: &Defines) -> CStruct {
        parse_header(Path::new(path), text, defines, &TypeTable::default())
            .and_then(|h| h.find_struct(name))
            .map(|mut c| {
                // These tests exercise how the emitter rewrites markers under
                // any layout: every member free, as `--regroup --move-first`
                // gives (tests/it/segments.rs covers the default).
                layout_core::segments::free_all(&mut c.model, Some(&mut c.source));
                c
            })
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn classify(s: &mut Struct, classes: &[(&str, Access)]) {
        for (name, access) in classes {
            let i = s
                .field_index(name)
                .unwrap_or_else(|| panic!("no field {name}"));
            s.fields[i].access = access.clone();
        }
    }

    const LRU_GEN: &str = include_str!("../../../examples/kernel/lru_gen.h");
    const LRU_GEN_PATH: &str = "include/linux/lru_gen.h";
    /// The kernel's `static_assert`, for the phase assertion.
    const STATIC_ASSERT: &str = "#include <stddef.h>\n\
        #define __static_assert(expr, msg, ...) _Static_assert(expr, msg)\n\
        #define static_assert(expr, ...) __static_assert(expr, ##__VA_ARGS__, #expr)\n";

    fn seed_from_header() -> Struct {
        let mut s = read(LRU_GEN_PATH, LRU_GEN, "lru_gen_folio", &Defines::default()).model;
        let seed = seed_struct();
        for f in &mut s.fields {
            f.access = seed.fields[seed.field_index(&f.name).unwrap()]
                .access
                .clone();
        }
        s
    }

    #[test]
    fn seed_header_phase_layout_applies_and_keeps_the_phase() {
        let s = seed_from_header();
        let src = read(LRU_GEN_PATH, LRU_GEN, "lru_gen_folio", &Defines::default()).source;
        // The phase layout of `phase_mode_diff_pads_to_a_container_line`.
        let mut offsets = vec![
            ("max_seq", 0),
            ("min_seq", 8),
            ("timestamps", 24),
            ("enabled", 56),
            ("gen", 57),
            ("seg", 58),
            ("list", 64),
            ("folios", 80),
            ("nr_pages", 720),
            ("avg_refaulted", 1040),
            ("avg_total", 1104),
            ("protected", 1168),
            ("evicted", 1296),
            ("refaulted", 1360),
        ];
        offsets.sort_by_key(|&(_, o)| o);
        let v = verify(&s, &at(&s, &offsets, 1424, 8, Placement::Offset(304))).unwrap();
        let diff = c_diff(&src, &v, CStyle::Aligned).unwrap();
        let dir = scratch_dir("fe-seed-phase");
        apply(&dir, LRU_GEN_PATH, LRU_GEN, &diff);
        let pin = phase_assertions(&[Some("mem_cgroup_per_node.lruvec.lrugen")], &v).unwrap();
        assert_gcc_layout_with(&dir, STATIC_ASSERT, LRU_GEN_PATH, &v, &[pin], &[]);
    }

    #[test]
    fn seed_header_aligned_layout_applies() {
        let s = seed_from_header();
        let src = read(LRU_GEN_PATH, LRU_GEN, "lru_gen_folio", &Defines::default()).source;
        let after = seed_after();
        let offsets: Vec<(&str, u64)> = after
            .slots
            .iter()
            .map(|sl| (after.strukt().fields[sl.field].name.as_str(), sl.offset))
            .collect();
        let v = verify(&s, &at(&s, &offsets, 1408, 64, Placement::Offset(320))).unwrap();
        let diff = c_diff(&src, &v, CStyle::Aligned).unwrap();
        let dir = scratch_dir("fe-seed-aligned");
        apply(&dir, LRU_GEN_PATH, LRU_GEN, &diff);
        // lrugen moves from 304 to 320 in mem_cgroup_per_node (mm changelogs).
        let moved = "_Static_assert(offsetof(struct mem_cgroup_per_node, lruvec.lrugen) == 320, \"lrugen\");";
        assert_gcc_layout_with(
            &dir,
            STATIC_ASSERT,
            LRU_GEN_PATH,
            &v,
            &[moved.to_string()],
            &[],
        );
    }

    const STATS: &str = "\
struct cacheline_padding {
\tchar x[0];
} __attribute__((__aligned__(64)));
#define CACHELINE_PADDING(name) struct cacheline_padding name
#define ____cacheline_aligned_in_smp __attribute__((__aligned__(64)))
typedef struct {
\tlong counter;
} atomic_long_t;

struct stats {
\t/* hot: read on every lookup */
\tunsigned long flags;
\tatomic_long_t hits;
#ifdef CONFIG_DEBUG_STATS
\tunsigned long debug_a;
\tunsigned long debug_b;
#endif
\tint a, b;

\tCACHELINE_PADDING(_pad1_);

\tunsigned long max;
\tint lock_word;
};
";

    fn stats() -> (Struct, StructSource, Defines) {
        let mut defines = Defines::default();
        defines.insert("CONFIG_DEBUG_STATS", 1);
        let c = read("stats.h", STATS, "stats", &defines);
        let mut s = c.model;
        classify(
            &mut s,
            &[
                ("flags", r()),
                ("max", r()),
                ("hits", a()),
                (
                    "lock_word",
                    Access::LockedWrite {
                        lock: "lock".into(),
                    },
                ),
            ],
        );
        (s, c.source, defines)
    }

    fn stats_layout(s: &Struct, offsets: &[(&str, u64)], size: u64) -> VerifiedLayout {
        verify(s, &at(s, offsets, size, 64, Placement::Aligned)).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn conditional_block_and_declarator_list_move_whole_and_an_unneeded_padding_line_goes() {
        let (s, src, _) = stats();
        let v = stats_layout(
            &s,
            &[
                ("flags", 0),
                ("max", 8),
                ("debug_a", 16),
                ("debug_b", 24),
                ("a", 32),
                ("b", 36),
                ("lock_word", 40),
                ("hits", 64),
            ],
            128,
        );
        let diff = c_diff(&src, &v, CStyle::Aligned).unwrap();
        println!("{diff}");
        let dir = scratch_dir("fe-stats-block");
        let patched = apply(&dir, "stats.h", STATS, &diff);
        assert!(patched.contains(
            "\tunsigned long flags;\n\tunsigned long max;\n#ifdef CONFIG_DEBUG_STATS\n\tunsigned long debug_a;\n\tunsigned long debug_b;\n#endif\n\tint a, b;\n\n\tint lock_word;\n\tatomic_long_t hits ____cacheline_aligned_in_smp;\n};\n"
        ), "{patched}");
        assert_gcc_layout_with(
            &dir,
            "#include <stddef.h>\n",
            "stats.h",
            &v,
            &[],
            &["-DCONFIG_DEBUG_STATS"],
        );
    }

    #[test]
    fn a_padding_line_before_a_member_that_starts_a_line_stays() {
        let (s, src, _) = stats();
        let v = stats_layout(
            &s,
            &[
                ("flags", 0),
                ("lock_word", 8),
                ("debug_a", 16),
                ("debug_b", 24),
                ("a", 32),
                ("b", 36),
                ("hits", 64),
                ("max", 128),
            ],
            192,
        );
        let diff = c_diff(&src, &v, CStyle::Aligned).unwrap();
        println!("{diff}");
        let dir = scratch_dir("fe-stats-marker");
        let patched = apply(&dir, "stats.h", STATS, &diff);
        assert!(patched.contains(
            "\tint a, b;\n\n\tCACHELINE_PADDING(_pad1_);\n\n\tatomic_long_t hits;\n\tunsigned long max ____cacheline_aligned_in_smp;\n"
        ), "{patched}");
        assert_gcc_layout_with(
            &dir,
            "#include <stddef.h>\n",
            "stats.h",
            &v,
            &[],
            &["-DCONFIG_DEBUG_STATS"],
        );
    }

    #[test]
    fn splitting_a_conditional_block_or_a_declarator_list_is_refused() {
        let (s, src, _) = stats();
        let split = [
            ("flags", 0),
            ("max", 8),
            ("debug_a", 16),
            ("a", 24),
            ("b", 28),
            ("lock_word", 32),
            ("debug_b", 40),
            ("hits", 64),
        ];
        // The model knows the block: the verifier refuses the layout...
        let err = verify(&s, &at(&s, &split, 128, 64, Placement::Aligned)).unwrap_err();
        assert!(
            matches!(err, layout_core::VerifyError::SplitBlock { .. }),
            "{err}"
        );
        // ... and the diff refuses it for a model that does not.
        let mut loose = s.clone();
        loose.blocks.clear();
        loose.lists.clear();
        let block = stats_layout(&loose, &split, 128);
        let err = c_diff(&src, &block, CStyle::Aligned)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "stats.h:10:1: error: the layout moves fields between `debug_a`, `debug_b`"
            ),
            "{err}"
        );
        let list = stats_layout(
            &loose,
            &[
                ("flags", 0),
                ("max", 8),
                ("debug_a", 16),
                ("debug_b", 24),
                ("a", 32),
                ("lock_word", 36),
                ("b", 40),
                ("hits", 64),
            ],
            128,
        );
        let err = c_diff(&src, &list, CStyle::Aligned)
            .unwrap_err()
            .to_string();
        assert!(err.contains("separates or reorders `a`, `b`"), "{err}");
        assert!(err.contains("help: declare them one per line"), "{err}");
    }

    #[test]
    fn group_markers_need_the_groups_style() {
        let text = "\
struct g {
\t__cacheline_group_begin(hot);
\tunsigned long x;
\t__cacheline_group_end(hot);
\tunsigned long y;
};
";
        let c = read("g.h", text, "g", &Defines::default());
        let l = sequential(&c.model, &["y", "x"], Placement::Aligned);
        let v = verify(&c.model, &l).unwrap();
        let err = c_diff(&c.source, &v, CStyle::Aligned)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("g.h:2:2: error: struct `g` uses __cacheline_group markers"),
            "{err}"
        );
    }

    /// Random headers and random layouts of them (reordered, with line
    /// breaks, holes, tail padding, aligned and phase placements): every diff
    /// applies and gcc puts every member where the layout says.
    #[test]
    fn random_layouts_apply_and_compile_exactly() {
        const TYPES: &[&str] = &[
            "char",
            "short",
            "int",
            "long",
            "long nr[3]",
            "char tag[5]",
            "int v[3]",
        ];
        let mut rng = Lcg(0x5eed);
        let dir = scratch_dir("random");
        let mut check = String::from("#include <stddef.h>\n");
        let mut cases = 0;
        // Diffs that pad, add an attribute, drop one.
        let (mut padded, mut added, mut dropped) = (0, 0, 0);
        for case in 0..100 {
            // The header: one declaration per line, some with a comment,
            // some after a blank line, some with the attribute already.
            let n = 2 + rng.next(7) as usize;
            let mut text = format!(
                "#define ____cacheline_aligned_in_smp __attribute__((__aligned__(64)))\n\nstruct s{case} {{\n"
            );
            for i in 0..n {
                if rng.next(4) == 0 {
                    text.push('\n');
                }
                if rng.next(3) == 0 {
                    text.push_str(&format!("\t/* member {i} */\n"));
                }
                let ty = TYPES[rng.next(TYPES.len() as u64) as usize];
                let (base, dims) = ty.split_once(' ').map_or((ty, ""), |(b, d)| (b, d));
                let dims = dims.trim_start_matches(|c: char| c.is_alphabetic());
                let attr = if rng.next(6) == 0 {
                    " ____cacheline_aligned_in_smp"
                } else {
                    ""
                };
                text.push_str(&format!("\t{base} f{i}{dims}{attr};\n"));
            }
            text.push_str("};\n");
            let path = format!("h{case}.h");
            let c = read(&path, &text, &format!("s{case}"), &Defines::default());
            let s = c.model;

            // A layout: a random order, placed with random breaks and holes.
            let mut order: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                order.swap(i, rng.next(i as u64 + 1) as usize);
            }
            let phase_mode = rng.next(3) == 0;
            let mut pos = 0u64;
            let mut slots = Vec::new();
            let mut broke = false;
            for &f in &order {
                let fa = s.fields[f].align;
                pos = pos.div_ceil(fa) * fa;
                match rng.next(5) {
                    0 if !phase_mode => {
                        pos = pos.div_ceil(64) * 64;
                        broke = true;
                    }
                    1 => pos += fa * (1 + rng.next(9)),
                    _ => {}
                }
                slots.push(Slot {
                    field: f,
                    offset: pos,
                });
                pos += s.fields[f].size;
            }
            let natural = s.natural_align();
            let align = if broke || natural >= 64 {
                natural.max(64)
            } else {
                natural
            };
            let size = pos.div_ceil(align) * align + align * rng.next(2);
            let placement = if phase_mode {
                Placement::Offset(align * rng.next(16))
            } else {
                Placement::Aligned
            };
            let l = Layout {
                slots,
                size,
                align,
                line: 64,
                placement,
            };
            let v = verify(&s, &l).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
            let diff = c_diff(&c.source, &v, CStyle::Aligned)
                .unwrap_or_else(|e| panic!("case {case}: {e}"));
            let attr_lines = |sign: char| {
                diff.lines()
                    .filter(|l| l.starts_with(sign) && l.contains(" ____cacheline_aligned_in_smp;"))
                    .count()
            };
            padded += usize::from(
                diff.contains("+\tchar __cacheline_pad")
                    || diff.contains("+\tunsigned char __cacheline_pad"),
            );
            added += usize::from(attr_lines('+') > attr_lines('-'));
            dropped += usize::from(attr_lines('-') > attr_lines('+'));
            let patched = if diff.is_empty() {
                std::fs::write(dir.join(&path), &text).unwrap();
                text.clone()
            } else {
                apply(&dir, &path, &text, &diff)
            };
            assert!(
                !patched.contains("____cacheline_aligned_in_smp ____cacheline_aligned_in_smp"),
                "{patched}"
            );
            push_case_asserts(&mut check, case, &path, &v);
            cases += 1;
        }
        assert_eq!(cases, 100);
        eprintln!(
            "random layouts: {padded} padded, {added} gained an attribute, {dropped} lost one"
        );
        assert!(
            padded > 3 && added > 3 && dropped > 0,
            "padded {padded}, added {added}, dropped {dropped}"
        );
        std::fs::write(dir.join("check.c"), &check).unwrap();
        let out = gcc_check_c(&dir, &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
