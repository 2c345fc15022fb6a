//! The kernel idioms of the C diff (`CStyle::Aligned`, `Padding`, `Groups`)
//! and the changelog, on the lru_gen header (examples/kernel/lru_gen.h) read by
//! the C front-end and solved by the solver, and on headers that already have
//! paddings, attributes and groups in the wrong places. Every diff is applied
//! with `patch -p1` and compiled with gcc, which must place every member at
//! its verified offset; the patched header is read back by the front-end,
//! which must see the same layout, and diffed again, which must give nothing.
//!
//! Needs `gcc` and `patch` on PATH.

#![cfg(feature = "c-header")]

use crate::support;

use layout_core::access;
use layout_core::c::{parse_header, CStruct, Defines, TypeTable};
use layout_core::emit::{c_diff, changelog, phase_assertions, CStyle, ChangelogNotes};
use layout_core::layout::Slot;
use layout_core::solve::{solve, Solution, SolveOptions};
use layout_core::{verify, Access, Layout, Placement, Struct, VerifiedLayout};
use std::path::Path;
use support::*;

const LRU_GEN: &str = include_str!("../../../examples/kernel/lru_gen.h");
const LRU_GEN_TOML: &str = include_str!("../../../examples/kernel/lru_gen.toml");
const LRU_GEN_PATH: &str = "include/linux/lru_gen.h";

const STYLES: [CStyle; 3] = [CStyle::Aligned, CStyle::Padding, CStyle::Groups];

/// The kernel macros the patched headers use (those the lru_gen header defines
/// too spelled as it does, so that gcc sees no redefinition), written from
/// their semantics
/// in `<linux/cache.h>`, `<linux/build_bug.h>` and `<linux/stddef.h>`:
/// `CACHELINE_PADDING` is a zero-size member aligned to the line; a group
/// begin marker is a zero-length `__u8` array (line-aligned in the `_aligned`
/// form); the `_aligned` end marker is aligned to a long and followed by an
/// empty member aligned to the line; `CACHELINE_ASSERT_GROUP_MEMBER` fails the
/// build unless the member lies between its group's markers.
const PRELUDE: &str = "\
#include <stddef.h>
#define SMP_CACHE_BYTES 64
#define __aligned(x) __attribute__((__aligned__(x)))
#define ____cacheline_aligned_in_smp __aligned(SMP_CACHE_BYTES)
#define ____cacheline_internodealigned_in_smp __aligned(SMP_CACHE_BYTES)
#define __maybe_unused __attribute__((__unused__))
typedef unsigned char __u8;
struct cacheline_padding { char x[0]; } __aligned(SMP_CACHE_BYTES);
#define CACHELINE_PADDING(name) struct cacheline_padding name
#define __cacheline_group_begin(g) __u8 __cacheline_group_begin__##g[0]
#define __cacheline_group_end(g) __u8 __cacheline_group_end__##g[0]
#define __cacheline_group_begin_aligned(g) __cacheline_group_begin(g) __aligned(SMP_CACHE_BYTES)
#define __cacheline_group_end_aligned(g) \\
\t__cacheline_group_end(g) __aligned(sizeof(long)); \\
\tstruct { } __cacheline_group_pad__##g __aligned(SMP_CACHE_BYTES)
#define BUILD_BUG_ON(cond) _Static_assert(!(cond), #cond)
#define sizeof_field(T, m) sizeof(((T *)0)->m)
#define offsetofend(T, m) (offsetof(T, m) + sizeof_field(T, m))
#define CACHELINE_ASSERT_GROUP_MEMBER(T, g, m) \\
\tBUILD_BUG_ON(!(offsetof(T, m) >= offsetofend(T, __cacheline_group_begin__##g) && \\
\t\t       offsetofend(T, m) <= offsetof(T, __cacheline_group_end__##g)))
#define __static_assert(expr, msg, ...) _Static_assert(expr, msg)
#define static_assert(expr, ...) __static_assert(expr, ##__VA_ARGS__, #expr)
";

// ---------------------------------------------------------------------------
// Helpers.

fn read(path: &str, text: &str, name: &str) -> CStruct {
    parse_header(
        Path::new(path),
        text,
        &Defines::default(),
        &TypeTable::default(),
    )
    .and_then(|h| h.find_struct(name))
    .map(free)
    .unwrap_or_else(|e| panic!("{e}"))
}

/// These tests exercise how the emitter rewrites markers under any layout:
/// the model without the author's groups and paddings, every member free
/// (what `--regroup --move-first` gives; `tests/it/segments.rs` covers the
/// default, which keeps them).
fn free(mut c: CStruct) -> CStruct {
    layout_core::segments::free_all(&mut c.model, Some(&mut c.source));
    c
}

/// struct lru_gen_folio from the lru_gen header, classified by the example's
/// access file.
fn seed() -> CStruct {
    let mut c = read(LRU_GEN_PATH, LRU_GEN, "lru_gen_folio");
    let file = access::parse(Path::new("lru_gen.toml"), LRU_GEN_TOML).unwrap();
    file.apply(&mut c.model).unwrap();
    c
}

fn declared(c: &CStruct, placement: Placement) -> Layout {
    Layout::declared(&c.model, c.size, c.align, 64, placement).unwrap()
}

/// The three solver configurations of the lru_gen case: aligned mode, phase mode
/// (offset 304 of mem_cgroup_per_node) and aligned mode with lockless fields
/// kept off the locked fields' lines too.
fn seed_solutions(s: &Struct) -> Vec<(&'static str, Solution)> {
    let opts = |placement, separate_soft| SolveOptions {
        placement,
        separate_soft,
        ..SolveOptions::default()
    };
    [
        ("aligned", opts(Placement::Aligned, false)),
        ("phase", opts(Placement::Offset(304), false)),
        ("separate", opts(Placement::Aligned, true)),
    ]
    .into_iter()
    .map(|(name, o)| (name, solve(s, &o).unwrap_or_else(|e| panic!("{name}: {e}"))))
    .collect()
}

/// The front-end reads the patched header back: same fields at the same
/// offsets, same size and alignment; and a second diff is empty.
fn assert_round_trip(path: &str, patched: &str, v: &VerifiedLayout, style: CStyle) {
    let s = v.strukt();
    let back = read(path, patched, &s.name);
    assert_eq!((back.size, back.align), (v.size, v.align), "{patched}");
    for sl in &v.slots {
        let name = &s.fields[sl.field].name;
        let i = back.model.field_index(name).unwrap();
        assert_eq!(
            back.model.fields[i].original_offset,
            Some(sl.offset),
            "front-end offset of {name} in\n{patched}"
        );
    }
    // The same layout over the patched header's own model, whose padding
    // arrays are cold fields where gcc put them.
    let mut model = back.model.clone();
    let mut offsets: Vec<(&str, u64)> = Vec::new();
    for f in &mut model.fields {
        match s.field_index(&f.name) {
            Some(i) => {
                f.access = s.fields[i].access.clone();
                offsets.push((&f.name, v.slot_of(i).unwrap().offset));
            }
            None => {
                assert!(f.name.starts_with("__cacheline_pad"), "{}", f.name);
                offsets.push((&f.name, f.original_offset.unwrap()));
            }
        }
    }
    let offsets: Vec<(String, u64)> = offsets
        .into_iter()
        .map(|(n, o)| (n.to_string(), o))
        .collect();
    let offsets: Vec<(&str, u64)> = offsets.iter().map(|(n, o)| (n.as_str(), *o)).collect();
    let again = verify(&model, &at(&model, &offsets, v.size, v.align, v.placement)).unwrap();
    let second = c_diff(&back.source, &again, style).unwrap();
    assert_eq!(second, "", "a second {style} diff of\n{patched}");
}

fn at(s: &Struct, offsets: &[(&str, u64)], size: u64, align: u64, placement: Placement) -> Layout {
    let mut slots: Vec<Slot> = offsets
        .iter()
        .map(|&(name, offset)| Slot {
            field: s
                .field_index(name)
                .unwrap_or_else(|| panic!("no field {name}")),
            offset,
        })
        .collect();
    slots.sort_by_key(|sl| (sl.offset, sl.field));
    Layout {
        slots,
        size,
        align,
        line: 64,
        placement,
    }
}

/// The text with its line breaks (and runs of blanks) as single spaces.
fn unwrapped(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// How many `CACHELINE_ASSERT_GROUP_MEMBER(...)` calls of the patched
/// header name `field` as the member.
fn asserted(patched: &str, field: &str) -> usize {
    patched
        .match_indices("CACHELINE_ASSERT_GROUP_MEMBER(")
        .filter(|(at, _)| {
            let call = &patched[*at..];
            let call = &call[..call.find(';').unwrap_or(call.len())];
            let args: Vec<&str> = call.split(',').map(str::trim).collect();
            args.last() == Some(&format!("{field})").as_str())
        })
        .count()
}

/// Applies the `style` diff of `v` to `text`, checks it with gcc (calling the
/// check function when there is one) and the front-end, returns the patched
/// header and the diff.
fn check_style(
    name: &str,
    path: &str,
    text: &str,
    src: &layout_core::source::StructSource,
    v: &VerifiedLayout,
    style: CStyle,
    extra: &[String],
) -> (String, String) {
    let diff = c_diff(src, v, style).unwrap_or_else(|e| panic!("{name} {style}: {e}"));
    let dir = scratch_dir(&format!("{name}-{style}"));
    let patched = apply(&dir, path, text, &diff);
    let mut extra = extra.to_vec();
    if style == CStyle::Groups {
        extra.push(format!(
            "void call_check(void) {{ {}_struct_check(); }}",
            v.strukt().name
        ));
    }
    assert_gcc_layout_with(&dir, PRELUDE, path, v, &extra, &["-Wall", "-Werror"]);
    assert_round_trip(path, &patched, v, style);
    (patched, diff)
}

// ---------------------------------------------------------------------------
// The seed, through the front-end and the solver, in every style.

#[test]
fn seed_layouts_in_every_style_compile_to_the_verified_offsets() {
    let c = seed();
    for (config, sol) in seed_solutions(&c.model) {
        let v = &sol.layout;
        let pin = phase_assertions(&[Some("mem_cgroup_per_node.lruvec.lrugen")], v);
        let extra: Vec<String> = pin.into_iter().collect();
        for style in STYLES {
            let (patched, diff) = check_style(
                &format!("seed-{config}"),
                LRU_GEN_PATH,
                LRU_GEN,
                &c.source,
                v,
                style,
                &extra,
            );
            println!("=== {config} {style}\n{diff}");
            match style {
                CStyle::Aligned => {
                    assert_eq!(count(&patched, "CACHELINE_PADDING"), 0);
                    assert_eq!(count(&patched, "__cacheline_group"), 0);
                }
                CStyle::Padding => {
                    assert_eq!(count(&patched, "__cacheline_group"), 0);
                    // The header defines the attribute; no member carries it.
                    assert_eq!(
                        count(&patched, "____cacheline_aligned_in_smp"),
                        count(LRU_GEN, "____cacheline_aligned_in_smp")
                    );
                }
                CStyle::Groups => {
                    assert_eq!(
                        count(&patched, "____cacheline_aligned_in_smp"),
                        count(LRU_GEN, "____cacheline_aligned_in_smp")
                    );
                    for f in &c.model.fields {
                        assert_eq!(asserted(&patched, &f.name), 1, "{}\n{patched}", f.name);
                    }
                    // The lockless fields have a group of their own, and the
                    // read-mostly fields one.
                    for g in ["lockless", "read_mostly"] {
                        let plain = format!("__cacheline_group_begin({g});");
                        let aligned = format!("__cacheline_group_begin_aligned({g});");
                        assert!(
                            patched.contains(&plain) || patched.contains(&aligned),
                            "{g}\n{patched}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn seed_with_locked_fields_separated_has_a_break_that_each_style_spells() {
    // The hand fix: evicted/refaulted in a line-aligned
    // group at the end, 1408 bytes, alignment 64. The solver prefers a
    // smaller alignment at equal size; this is the layout the hand patch chose.
    let c = seed();
    let s = &c.model;
    let offsets = [
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
    ];
    let v = verify(s, &at(s, &offsets, 1408, 64, Placement::Aligned)).unwrap();
    let mut patched = Vec::new();
    for style in STYLES {
        let (p, diff) = check_style("seed-fix", LRU_GEN_PATH, LRU_GEN, &c.source, &v, style, &[]);
        println!("=== {style}\n{diff}");
        patched.push(p);
    }
    // One line would take 102 columns: the attribute goes on a
    // continuation line, as checkpatch wants at most 100.
    assert!(patched[0].contains("\tatomic_long_t evicted[NR_HIST_GENS][ANON_AND_FILE][MAX_NR_TIERS]\n\t\t____cacheline_aligned_in_smp;\n"), "{}", patched[0]);
    assert!(
        patched[1].contains("\n\tCACHELINE_PADDING(_pad1_);\n\n\t/* can be modified without holding the LRU lock */\n\tatomic_long_t evicted["),
        "{}",
        patched[1]
    );
    let groups = &patched[2];
    for line in [
        "\t__cacheline_group_begin_aligned(read_mostly);\n\t/* the aging increments the youngest generation number */\n\tunsigned long max_seq;\n",
        "\tstruct hlist_nulls_node list;\n\t__cacheline_group_end(read_mostly);\n",
        "\t__cacheline_group_begin(lru_lock_locked);\n",
        "\t__cacheline_group_end_aligned(lru_lock_locked);\n\n\t__cacheline_group_begin_aligned(lockless);\n",
        "\tatomic_long_t refaulted[NR_HIST_GENS][ANON_AND_FILE][MAX_NR_TIERS];\n\t__cacheline_group_end_aligned(lockless);\n};\n",
        "static void __maybe_unused lru_gen_folio_struct_check(void)\n{\n\tCACHELINE_ASSERT_GROUP_MEMBER(struct lru_gen_folio, read_mostly, max_seq);\n",
    ] {
        assert!(groups.contains(line), "{line}\nnot in\n{groups}");
    }
}

// ---------------------------------------------------------------------------
// Paddings, attributes and groups already in the header.

/// A page_counter-like struct with a padding line and attributes in the
/// wrong places, and a padding line where one is needed.
const COUNTER: &str = "\
/* the cacheline macros come from <linux/cache.h> */

struct page_counter {
\t/* written on every charge */
\tatomic_long_t usage ____cacheline_aligned_in_smp;
\tunsigned long failcnt;

\tCACHELINE_PADDING(_pad1_);

\tunsigned long emin;
\tatomic_long_t min_usage;
\tunsigned long low ____cacheline_aligned_in_smp;

\tCACHELINE_PADDING(_pad2_);

\t/* read on every charge */
\tstruct page_counter *parent;
\tunsigned long max;
};
";

const COUNTER_PRELUDE_TYPES: &str = "typedef struct { long counter; } atomic_long_t;\n";

fn counter() -> CStruct {
    let text = format!("{COUNTER_PRELUDE_TYPES}{COUNTER}");
    let mut c = read("include/linux/page_counter.h", &text, "page_counter");
    let classes = [
        ("usage", Access::Lockless { group: None }),
        ("min_usage", Access::Lockless { group: None }),
        ("parent", Access::ReadMostly),
        ("max", Access::ReadMostly),
        ("emin", Access::ReadMostly),
    ];
    for (name, a) in classes {
        let i = c.model.field_index(name).unwrap();
        c.model.fields[i].access = a;
    }
    // The front-end folds the attributes into the fields' alignment; a
    // caller that lets the solver move them resets it to the type's.
    for name in ["usage", "low"] {
        let i = c.model.field_index(name).unwrap();
        c.model.fields[i].align = 8;
    }
    c
}

/// The counter's fields in the new order: the read-mostly ones first, then
/// the lockless ones on the next line.
fn counter_layout(s: &Struct) -> VerifiedLayout {
    let offsets = [
        ("parent", 0),
        ("max", 8),
        ("emin", 16),
        ("failcnt", 24),
        ("low", 32),
        ("usage", 64),
        ("min_usage", 72),
    ];
    verify(s, &at(s, &offsets, 128, 64, Placement::Aligned)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn existing_paddings_and_attributes_are_reused_or_removed_never_duplicated() {
    let c = counter();
    let text = format!("{COUNTER_PRELUDE_TYPES}{COUNTER}");
    let path = "include/linux/page_counter.h";
    let v = counter_layout(&c.model);
    let mut out = Vec::new();
    for style in STYLES {
        let (patched, diff) = check_style("counter", path, &text, &c.source, &v, style, &[]);
        println!("=== {style}\n{diff}");
        out.push(patched);
    }
    // Aligned: one break (usage), spelled by the padding line before the
    // declaration that now starts that line; both attributes go.
    let aligned = &out[0];
    assert_eq!(count(aligned, "CACHELINE_PADDING("), 1, "{aligned}");
    assert_eq!(
        count(aligned, "____cacheline_aligned_in_smp"),
        0,
        "{aligned}"
    );
    // Padding: the same.
    assert_eq!(out[1], out[0]);
    // Groups: no padding line, no attribute; two aligned groups.
    let groups = &out[2];
    assert_eq!(count(groups, "CACHELINE_PADDING("), 0, "{groups}");
    assert_eq!(count(groups, "____cacheline_aligned_in_smp"), 0, "{groups}");
    assert!(
        groups.contains("\t__cacheline_group_begin_aligned(read_mostly);\n"),
        "{groups}"
    );
    assert!(
        groups.contains("\t__cacheline_group_end_aligned(read_mostly);\n"),
        "{groups}"
    );
    assert!(
        groups.contains("\t__cacheline_group_begin_aligned(lockless);\n"),
        "{groups}"
    );
}

#[test]
fn the_internode_attribute_is_a_cacheline_attribute_to_the_diff_too() {
    // The C front-end and the diff read one table of idioms: an attribute
    // the front-end aligns by is one the diff reuses or removes.
    let text = format!("{COUNTER_PRELUDE_TYPES}{COUNTER}").replace(
        "usage ____cacheline_aligned_in_smp",
        "usage ____cacheline_internodealigned_in_smp",
    );
    let path = "include/linux/page_counter.h";
    let mut c = read(path, &text, "page_counter");
    let plain = counter();
    for (f, p) in c.model.fields.iter_mut().zip(&plain.model.fields) {
        f.access = p.access.clone();
        f.align = p.align;
    }
    let v = counter_layout(&c.model);
    let (patched, _) = check_style(
        "internode",
        path,
        &text,
        &c.source,
        &v,
        CStyle::Aligned,
        &[],
    );
    assert_eq!(
        count(&patched, "____cacheline_internodealigned_in_smp"),
        0,
        "{patched}"
    );
    assert_eq!(count(&patched, "CACHELINE_PADDING("), 1, "{patched}");
}

#[test]
fn an_attribute_where_the_break_is_needed_is_kept_in_the_padding_style() {
    // usage keeps its attribute (it still starts a line); low loses its.
    let text = "\
/* the cacheline macros come from <linux/cache.h> */

struct page_counter {
\tunsigned long max;
\tunsigned long low ____cacheline_aligned_in_smp;
\t/* written on every charge */
\tatomic_long_t usage ____cacheline_aligned_in_smp;
\tstruct page_counter *parent;
};
";
    let text = format!("{COUNTER_PRELUDE_TYPES}{text}");
    let path = "include/linux/page_counter.h";
    let mut c = read(path, &text, "page_counter");
    for (name, a) in [
        ("usage", Access::Lockless { group: None }),
        ("max", Access::ReadMostly),
        ("parent", Access::ReadMostly),
    ] {
        let i = c.model.field_index(name).unwrap();
        c.model.fields[i].access = a;
    }
    // low's attribute is in the wrong place: free it (usage keeps the
    // alignment the front-end folded in).
    let low = c.model.field_index("low").unwrap();
    assert_eq!(c.model.fields[low].align, 64);
    c.model.fields[low].align = 8;
    let s = &c.model;
    let offsets = [("max", 0), ("low", 8), ("parent", 16), ("usage", 64)];
    let v = verify(s, &at(s, &offsets, 128, 64, Placement::Aligned)).unwrap();
    let (patched, _) = check_style(
        "keep-attr",
        path,
        &text,
        &c.source,
        &v,
        CStyle::Padding,
        &[],
    );
    assert_eq!(count(&patched, "CACHELINE_PADDING("), 0, "{patched}");
    assert!(patched.contains("\tunsigned long low;\n"), "{patched}");
    assert!(
        patched.contains("\tatomic_long_t usage ____cacheline_aligned_in_smp;\n"),
        "{patched}"
    );
}

#[test]
fn a_new_padding_line_reuses_a_removed_name_and_never_clashes() {
    let text = "\
/* the cacheline macros come from <linux/cache.h> */

struct stats {
\tunsigned long hits;

\tCACHELINE_PADDING(_pad1_);

\tunsigned long max;
\tunsigned long _pad2_;
\tunsigned long flags;
};
";
    let path = "stats.h";
    let mut c = read(path, text, "stats");
    for (name, a) in [
        ("hits", Access::Lockless { group: None }),
        ("max", Access::ReadMostly),
        ("flags", Access::ReadMostly),
    ] {
        let i = c.model.field_index(name).unwrap();
        c.model.fields[i].access = a;
    }
    let s = &c.model;
    // max, _pad2_ and flags first; hits moves to the next line.
    let offsets = [("max", 0), ("_pad2_", 8), ("flags", 16), ("hits", 64)];
    let v = verify(s, &at(s, &offsets, 128, 64, Placement::Aligned)).unwrap();
    let (patched, diff) = check_style("pad-names", path, text, &c.source, &v, CStyle::Padding, &[]);
    println!("{diff}");
    assert_eq!(count(&patched, "CACHELINE_PADDING("), 1, "{patched}");
    assert!(
        patched.contains(
            "\tunsigned long flags;\n\n\tCACHELINE_PADDING(_pad1_);\n\n\tunsigned long hits;\n"
        ),
        "{patched}"
    );
}

/// A struct with groups already: names are kept for groups made mostly of
/// their old members, markers are rewritten, the check function replaced.
const NETDEV: &str = "\
/* the cacheline macros come from <linux/cache.h> */

struct netdev {
\t__cacheline_group_begin(netdev_read_tx);
\tunsigned long priv_flags;
\tatomic_long_t tx_dropped;
\tunsigned int mtu;
\t__cacheline_group_end(netdev_read_tx);

\t__cacheline_group_begin_aligned(netdev_rx);
\tatomic_long_t rx_dropped;
\tunsigned int flags;
\t__cacheline_group_end_aligned(netdev_rx);

\tunsigned long state;
};

static void __maybe_unused netdev_struct_check(void)
{
\tCACHELINE_ASSERT_GROUP_MEMBER(struct netdev, netdev_read_tx, priv_flags);
}
";

fn netdev() -> CStruct {
    let text = format!("{COUNTER_PRELUDE_TYPES}{NETDEV}");
    let mut c = read("include/linux/netdevice.h", &text, "netdev");
    for (name, a) in [
        ("priv_flags", Access::ReadMostly),
        ("mtu", Access::ReadMostly),
        (
            "tx_dropped",
            Access::Lockless {
                group: Some("tx".into()),
            },
        ),
        (
            "rx_dropped",
            Access::Lockless {
                group: Some("rx".into()),
            },
        ),
        ("flags", Access::ReadMostly),
    ] {
        let i = c.model.field_index(name).unwrap();
        c.model.fields[i].access = a;
    }
    c
}

#[test]
fn the_front_end_reads_existing_group_markers_as_gcc_does() {
    let c = netdev();
    let s = &c.model;
    let offsets: Vec<(&str, u64)> = s
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.original_offset.unwrap()))
        .collect();
    // rx_dropped starts line 1 (begin_aligned), state line 2 (end_aligned).
    assert_eq!(
        offsets,
        [
            ("priv_flags", 0),
            ("tx_dropped", 8),
            ("mtu", 16),
            ("rx_dropped", 64),
            ("flags", 72),
            ("state", 128)
        ]
    );
    assert_eq!((c.size, c.align), (192, 64));
    let v = verify(s, &at(s, &offsets, 192, 64, Placement::Aligned));
    // The declared layout breaks the rule (tx_dropped next to priv_flags), so
    // check the offsets with gcc through the structural checks only.
    assert!(v.is_err());
    let dir = scratch_dir("netdev-declared");
    std::fs::write(
        dir.join("netdev.h"),
        format!("{COUNTER_PRELUDE_TYPES}{NETDEV}"),
    )
    .unwrap();
    let mut check = format!("{PRELUDE}#include \"netdev.h\"\n");
    for (name, off) in &offsets {
        check.push_str(&format!(
            "_Static_assert(offsetof(struct netdev, {name}) == {off}, \"{name}\");\n"
        ));
    }
    check.push_str("_Static_assert(sizeof(struct netdev) == 192, \"size\");\n");
    std::fs::write(dir.join("check.c"), check).unwrap();
    let out = gcc_check_c(&dir, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn existing_groups_are_rewritten_with_class_names_and_the_check_function_replaced() {
    let c = netdev();
    let s = &c.model;
    let text = format!("{COUNTER_PRELUDE_TYPES}{NETDEV}");
    let path = "include/linux/netdevice.h";
    // Read-mostly fields together; each writer group on its own line.
    let offsets = [
        ("priv_flags", 0),
        ("mtu", 8),
        ("flags", 12),
        ("state", 16),
        ("tx_dropped", 64),
        ("rx_dropped", 128),
    ];
    let v = verify(s, &at(s, &offsets, 192, 64, Placement::Aligned)).unwrap();
    let (patched, diff) = check_style("netdev", path, &text, &c.source, &v, CStyle::Groups, &[]);
    println!("{diff}");
    assert!(
        patched.contains(
            "\t__cacheline_group_begin_aligned(read_mostly);\n\tunsigned long priv_flags;\n"
        ),
        "{patched}"
    );
    assert!(
        patched.contains(
            "\t__cacheline_group_begin_aligned(lockless_tx);\n\tatomic_long_t tx_dropped;\n"
        ),
        "{patched}"
    );
    // The author's names are not reused (the groups were dissolved): a
    // group is named after its class.
    assert!(!patched.contains("netdev_rx") && !patched.contains("netdev_read_tx"));
    assert!(
        patched.contains(
            "\t__cacheline_group_begin_aligned(lockless_rx);\n\tatomic_long_t rx_dropped;\n"
        ),
        "{patched}"
    );
    assert_eq!(count(&patched, "netdev_struct_check"), 1, "{patched}");
    assert_eq!(
        count(&patched, "CACHELINE_ASSERT_GROUP_MEMBER"),
        6,
        "{patched}"
    );
    assert_eq!(count(&patched, "__cacheline_group_begin"), 3, "{patched}");
    assert_eq!(count(&patched, "__cacheline_group_end"), 3, "{patched}");

    // The other styles refuse group markers and point to this one.
    let err = c_diff(&c.source, &v, CStyle::Aligned).unwrap_err();
    assert!(err.to_string().contains("use --style groups"), "{err}");
    let marker = text
        .find("__cacheline_group_begin(netdev_read_tx)")
        .unwrap();
    assert_eq!(err.line, text[..marker].matches('\n').count() + 1, "{err}");
    assert_eq!(err.column, 2, "{err}");
}

// ---------------------------------------------------------------------------
// Layouts a style cannot express.

#[test]
fn a_break_inside_an_if_block_is_refused_by_the_groups_style_only() {
    let text = "\
/* the cacheline macros come from <linux/cache.h> */

struct stats {
\tunsigned long max;
#ifdef CONFIG_STATS
\tunsigned long flags;
\tatomic_long_t hits;
#endif
};
";
    let mut defines = Defines::default();
    defines.insert("CONFIG_STATS", 1);
    let path = "stats.h";
    let mut c = parse_header(Path::new(path), text, &defines, &TypeTable::default())
        .and_then(|h| h.find_struct("stats"))
        .map(free)
        .unwrap();
    for (name, a) in [
        ("hits", Access::Lockless { group: None }),
        ("max", Access::ReadMostly),
        ("flags", Access::ReadMostly),
    ] {
        let i = c.model.field_index(name).unwrap();
        c.model.fields[i].access = a;
    }
    let s = &c.model;
    let v = verify(
        s,
        &at(
            s,
            &[("max", 0), ("flags", 8), ("hits", 64)],
            128,
            64,
            Placement::Aligned,
        ),
    )
    .unwrap();
    let err = c_diff(&c.source, &v, CStyle::Groups).unwrap_err();
    assert!(err.to_string().contains("`hits`"), "{err}");
    assert!(
        err.help.as_deref().unwrap().contains("--style aligned"),
        "{err}"
    );
    assert!(c_diff(&c.source, &v, CStyle::Aligned).is_ok());
    // Padding puts its line inside the block, before hits.
    let diff = c_diff(&c.source, &v, CStyle::Padding).unwrap();
    assert!(diff.contains("+\tCACHELINE_PADDING(_pad1_);"), "{diff}");
}

#[test]
fn a_packed_struct_cannot_use_padding_lines() {
    let text = "\
/* the cacheline macros come from <linux/cache.h> */

struct wire {
\tunsigned long max;
\tatomic_long_t hits;
} __attribute__((packed));
";
    let text = format!("{COUNTER_PRELUDE_TYPES}{text}");
    let mut c = read("wire.h", &text, "wire");
    for (name, a) in [
        ("hits", Access::Lockless { group: None }),
        ("max", Access::ReadMostly),
    ] {
        let i = c.model.field_index(name).unwrap();
        c.model.fields[i].access = a;
    }
    let s = &c.model;
    let v = verify(
        s,
        &at(s, &[("max", 0), ("hits", 64)], 128, 64, Placement::Aligned),
    )
    .unwrap();
    let err = c_diff(&c.source, &v, CStyle::Padding).unwrap_err();
    assert!(
        err.to_string()
            .contains("gcc would place `hits` at offset 8, not at 64"),
        "{err}"
    );
    assert!(
        err.help.as_deref().unwrap().contains("--style aligned"),
        "{err}"
    );
    // The attribute and the group markers keep their alignment in a packed
    // struct.
    for style in [CStyle::Aligned, CStyle::Groups] {
        let (patched, _) = check_style("wire", "wire.h", &text, &c.source, &v, style, &[]);
        assert!(patched.contains("} __attribute__((packed));"));
    }
}

// ---------------------------------------------------------------------------
// The changelog.

#[test]
fn seed_changelog_has_the_numbers_and_fits_72_columns() {
    let c = seed();
    let before = declared(&c, Placement::Offset(304));
    for (config, sol) in seed_solutions(&c.model) {
        let separated = (config != "separate").then(|| {
            let o = SolveOptions {
                placement: sol.layout.placement,
                separate_soft: true,
                ..SolveOptions::default()
            };
            solve(&c.model, &o).unwrap().layout.size
        });
        let notes = ChangelogNotes {
            lower_bound: sol.lower_bound,
            optimal: sol.optimal,
            separated_size: separated,
            phase_assertion: phase_assertions(
                &[Some("mem_cgroup_per_node.lruvec.lrugen")],
                &sol.layout,
            ),
            ..ChangelogNotes::default()
        };
        let text = changelog(&c.model, &before, &sol.layout, &notes);
        println!("=== {config}\n{text}");
        for line in text.lines() {
            assert!(line.chars().count() <= 72, "{} columns: {line}", line.len());
            assert_eq!(line, line.trim_end(), "trailing blank");
        }
        // What shared which line, at which offsets (container offsets: the
        // struct starts at 304).
        assert!(
            unwrapped(&text)
                .contains("On cacheline 25, refaulted[] sits with enabled, gen, seg and list."),
            "{text}"
        );
        assert!(
            text.contains("  refaulted[]      1576-1639  24-25  lockless atomic"),
            "{text}"
        );
        assert!(
            text.contains("  enabled/gen/seg  1640-1642  25     read-mostly"),
            "{text}"
        );
        assert!(
            text.contains("  list             1648-1663  25     read-mostly"),
            "{text}"
        );
        assert!(text.contains("Before:\n\n  field"), "{text}");
        assert!(text.contains("After:\n\n  field"), "{text}");
        let size = sol.layout.size;
        let prose = unwrapped(&text);
        if size == 1360 {
            assert!(
                prose.contains("This keeps struct lru_gen_folio at 1360 bytes"),
                "{text}"
            );
        } else {
            assert!(
                prose.contains(&format!("from 1360 to {size} bytes")),
                "{text}"
            );
        }
        if sol.optimal {
            let proof = format!(
                "No smaller layout obeys the rule: lower bound {} bytes.",
                sol.lower_bound
            );
            assert!(prose.contains(&proof), "{text}");
        }
        assert_eq!(
            text.contains("static_assert(offsetof(struct"),
            config == "phase",
            "{text}"
        );
        if let Some(sep) = separated.filter(|&sep| sep > size) {
            let price = format!("would cost {} more bytes ({sep} bytes)", sep - size);
            assert!(unwrapped(&text).contains(&price), "{text}");
        }
    }
}

#[test]
fn changelog_of_the_seed_fix_matches_the_hand_written_one() {
    // Seed 000's fix at its own placement (offset 320 after the change):
    // evicted[]/refaulted[] own lines 25 and 26.
    let c = seed();
    let before = declared(&c, Placement::Offset(304));
    let s = &c.model;
    let offsets = [
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
    ];
    let v = verify(s, &at(s, &offsets, 1408, 64, Placement::Offset(320))).unwrap();
    let notes = ChangelogNotes {
        lower_bound: 1360,
        optimal: false,
        separated_size: None,
        phase_assertion: None,
        ..ChangelogNotes::default()
    };
    let text = changelog(s, &before, &v, &notes);
    println!("{text}");
    let prose = unwrapped(&text);
    for part in [
        "On cacheline 25, refaulted[] sits with enabled, gen, seg and list.",
        "in which struct lru_gen_folio starts at offset 304",
        "After the change, the struct starts at offset 320",
        "Move enabled, gen, seg and list from cacheline 25 to cachelines 5-6 after timestamps[], \
         which is read-mostly as well (offsets 376-399): they no longer share cacheline 25 with \
         the lockless writes to refaulted[].",
        "48 bytes stay free before evicted[] so that it starts cacheline 25.",
        "evicted[] and refaulted[] now sit on cachelines 25-26, which they have to themselves",
        "This grows struct lru_gen_folio from 1360 to 1408 bytes (+48) and raises its alignment from 8 to 64 bytes.",
        "A smaller layout may exist: the lower bound is 1360 bytes, 48 below this one.",
    ] {
        assert!(prose.contains(part), "{part}\nnot in\n{text}");
    }
    // Seed 000's after table: the read-mostly fields on line 5, list on 6,
    // the lockless arrays on lines of their own.
    for row in [
        "  timestamps[]/enabled/gen/seg  344-378    5      read-mostly\n",
        "  list                          384-399    6      read-mostly\n",
        "  evicted[]/refaulted[]         1600-1727  25-26  lockless atomic\n",
    ] {
        assert!(text.contains(row), "{row}\nnot in\n{text}");
    }
    assert!(text.lines().all(|l| l.chars().count() <= 72), "{text}");
}

// ---------------------------------------------------------------------------
// Random headers and layouts, every style, twice over.

const RANDOM_TYPES: &[(&str, u64)] = &[
    ("char", 1),
    ("short", 2),
    ("int", 4),
    ("long", 8),
    ("long nr[3]", 8),
    ("char tag[5]", 1),
    ("int v[3]", 4),
];

/// A header of `n` members, one per line, some with comments, blank lines,
/// the cacheline attribute or a `CACHELINE_PADDING()` line before them.
/// Returns the text and each member's natural alignment.
fn random_header(rng: &mut Lcg, case: usize, n: usize) -> (String, Vec<u64>) {
    let mut text = format!("/* case {case} */\nstruct s{case} {{\n");
    let mut natural = Vec::new();
    for i in 0..n {
        if rng.next(4) == 0 {
            text.push('\n');
        }
        if rng.next(6) == 0 {
            text.push_str(&format!("\tCACHELINE_PADDING(_pad{}_);\n", 1 + rng.next(3)));
        }
        if rng.next(3) == 0 {
            text.push_str(&format!("\t/* member {i} */\n"));
        }
        let (ty, align) = RANDOM_TYPES[rng.next(RANDOM_TYPES.len() as u64) as usize];
        let (base, dims) = ty.split_once(' ').unwrap_or((ty, ""));
        let dims = dims.trim_start_matches(|c: char| c.is_alphabetic());
        let attr = if rng.next(6) == 0 {
            " ____cacheline_aligned_in_smp"
        } else {
            ""
        };
        text.push_str(&format!("\t{base} f{i}{dims}{attr};\n"));
        natural.push(align);
    }
    text.push_str("};\n");
    // Padding lines must have distinct names.
    let mut k = 0;
    while let Some(at) = text.find("CACHELINE_PADDING(_pad") {
        let end = at + text[at..].find(");").unwrap();
        text.replace_range(at..end, &format!("CACHELINE_PADDING(_p{k}_"));
        k += 1;
    }
    (
        text.replace("CACHELINE_PADDING(_p", "CACHELINE_PADDING(_pad"),
        natural,
    )
}

/// A random verified layout of `s`: a random order with random breaks,
/// holes, tail padding and struct alignment, in aligned or phase mode.
/// Fields get random non-lockless classes (so every layout obeys the rule).
fn random_layout(rng: &mut Lcg, s: &mut Struct) -> VerifiedLayout {
    let n = s.fields.len();
    for f in &mut s.fields {
        f.access = match rng.next(4) {
            0 => Access::ReadMostly,
            1 => Access::LockedWrite { lock: "a".into() },
            2 => Access::LockedWrite { lock: "b".into() },
            _ => Access::Cold,
        };
    }
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
        // Sometimes more than the members need: a struct attribute.
        natural.max(1 << rng.next(6))
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
    verify(s, &l).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `style` over random headers and layouts, then over the patched
/// headers with new random layouts: every diff applies, gcc puts every
/// member where the layout says (and compiles every check function), the
/// front-end reads the same layout back, and a second diff is empty.
fn random_round(style: CStyle, seed: u64) -> RandomStats {
    let mut rng = Lcg(seed);
    let dir = scratch_dir(&format!("random-{style}"));
    let mut check = PRELUDE.to_string();
    let mut calls = String::new();
    let mut stats = RandomStats::default();
    for case in 0..60 {
        let n = 2 + rng.next(7) as usize;
        let (mut text, natural) = random_header(&mut rng, case, n);
        let path = format!("h{case}.h");
        for round in 0..2 {
            let mut c = read(&path, &text, &format!("s{case}"));
            // Some attributes are in the wrong place: let the layout move
            // their members (the front-end folded them into the alignment).
            for f in &mut c.model.fields {
                // Padding arrays of the first round are not in `natural`.
                let Some(k) = f
                    .name
                    .strip_prefix('f')
                    .and_then(|k| k.parse::<usize>().ok())
                else {
                    continue;
                };
                if f.align == 64 && rng.next(2) == 0 {
                    f.align = natural[k];
                }
            }
            let v = random_layout(&mut rng, &mut c.model);
            let diff = c_diff(&c.source, &v, style)
                .unwrap_or_else(|e| panic!("case {case} round {round}: {e}\n{text}"));
            stats.count(&diff, style);
            let patched = if diff.is_empty() {
                text.clone()
            } else {
                apply(&dir, &path, &text, &diff)
            };
            for twice in [
                "____cacheline_aligned_in_smp ____cacheline_aligned_in_smp",
                ");\n\tCACHELINE_PADDING(",
                ");\n\n\tCACHELINE_PADDING(",
            ] {
                assert!(!patched.contains(twice), "{twice}\n{patched}");
            }
            assert_round_trip(&path, &patched, &v, style);
            if round == 1 {
                std::fs::write(dir.join(&path), &patched).unwrap();
                push_case_asserts(&mut check, case, &path, &v);
                if style == CStyle::Groups {
                    calls.push_str(&format!("\ts{case}_struct_check();\n"));
                }
                stats.cases += 1;
            } else {
                // The second round starts from the patched header.
                text = patched;
            }
        }
    }
    check.push_str(&format!("void call_checks(void)\n{{\n{calls}}}\n"));
    std::fs::write(dir.join("check.c"), &check).unwrap();
    let out = gcc_check_c(&dir, &["-Wall", "-Werror"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{style}: {stats:?}");
    stats
}

/// What the random diffs did, so that a test that stopped exercising
/// something fails.
#[derive(Debug, Default)]
struct RandomStats {
    cases: usize,
    changed: usize,
    /// Diffs that spell a new break in the style.
    breaks_added: usize,
    /// Diffs that remove an attribute or a padding line.
    breaks_removed: usize,
    /// Diffs that set the struct's own alignment.
    struct_aligned: usize,
    /// Diffs that add explicit padding bytes.
    padded: usize,
}

impl RandomStats {
    fn count(&mut self, diff: &str, style: CStyle) {
        let added = |needle: &str| {
            diff.lines()
                .any(|l| l.starts_with('+') && !l.starts_with("+++") && l.contains(needle))
        };
        let removed = |needle: &str| {
            diff.lines()
                .any(|l| l.starts_with('-') && !l.starts_with("---") && l.contains(needle))
        };
        self.changed += usize::from(!diff.is_empty());
        let spelling = match style {
            CStyle::Aligned => "____cacheline_aligned_in_smp",
            CStyle::Padding => "CACHELINE_PADDING(",
            CStyle::Groups => "__cacheline_group_begin_aligned(",
        };
        self.breaks_added += usize::from(added(spelling));
        self.breaks_removed +=
            usize::from(removed("____cacheline_aligned_in_smp") || removed("CACHELINE_PADDING("));
        self.struct_aligned += usize::from(
            diff.lines()
                .any(|l| l.starts_with("+}") && l.contains("aligned")),
        );
        self.padded += usize::from(added("__cacheline_pad"));
    }

    fn assert_exercised(&self) {
        assert_eq!(self.cases, 60, "{self:?}");
        assert!(self.changed > 60, "{self:?}");
        assert!(self.breaks_added > 5, "{self:?}");
        assert!(self.breaks_removed > 5, "{self:?}");
        assert!(self.struct_aligned > 5, "{self:?}");
        assert!(self.padded > 5, "{self:?}");
    }
}

#[test]
fn random_layouts_in_the_aligned_style() {
    random_round(CStyle::Aligned, 0xa11).assert_exercised();
}

#[test]
fn random_layouts_in_the_padding_style() {
    random_round(CStyle::Padding, 0xbad).assert_exercised();
}

#[test]
fn random_layouts_in_the_groups_style() {
    random_round(CStyle::Groups, 0x6a).assert_exercised();
}
