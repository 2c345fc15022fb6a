//! The C header front-end on hand-written headers: the lru_gen struct, the
//! byte ranges the diff emitter relies on, preprocessor conditionals,
//! attributes, unions, anonymous members, declarator lists, typedefs, and
//! every error with its line.

#![cfg(feature = "c-header")]

use layout_core::c::{load_header, parse_header, CStruct, Defines, Header, TypeTable};
use layout_core::{Access, Diagnostic};
use std::path::Path;

const SEED: &str = include_str!("../fixtures/lru_gen.h");

fn header_with(text: &str, defines: &Defines, types: &TypeTable) -> Header {
    parse_header(Path::new("t.h"), text, defines, types).unwrap_or_else(|e| panic!("{e}"))
}

fn header(text: &str) -> Header {
    header_with(text, &Defines::default(), &TypeTable::default())
}

fn layout(text: &str, name: &str) -> CStruct {
    header(text)
        .find_struct(name)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn error(text: &str, name: &str) -> Diagnostic {
    match parse_header(
        Path::new("t.h"),
        text,
        &Defines::default(),
        &TypeTable::default(),
    ) {
        Ok(h) => h.find_struct(name).expect_err("expected an error"),
        Err(e) => e,
    }
}

/// (name, offset, size, align) of every field.
fn fields(s: &CStruct) -> Vec<(String, u64, u64, u64)> {
    s.model
        .fields
        .iter()
        .map(|f| (f.name.clone(), f.original_offset.unwrap(), f.size, f.align))
        .collect()
}

fn offset(s: &CStruct, name: &str) -> u64 {
    let i = s
        .model
        .field_index(name)
        .unwrap_or_else(|| panic!("no field {name}"));
    s.model.fields[i].original_offset.unwrap()
}

fn names(s: &CStruct) -> Vec<&str> {
    s.model.fields.iter().map(|f| f.name.as_str()).collect()
}

#[test]
fn seed_struct_has_gcc_offsets() {
    let s = layout(SEED, "lru_gen_folio");
    assert_eq!((s.size, s.align), (1360, 8));
    assert_eq!(offset(&s, "refaulted"), 1272);
    assert_eq!(offset(&s, "enabled"), 1336);
    assert_eq!(offset(&s, "list"), 1344);
    assert_eq!(
        names(&s),
        [
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
            "list"
        ]
    );
    let f = &s.model.fields;
    assert_eq!(
        f[3].ty,
        "struct list_head[MAX_NR_GENS][ANON_AND_FILE][MAX_NR_ZONES]"
    );
    assert_eq!((f[3].size, f[3].align), (640, 8));
    assert_eq!(
        f[9].ty,
        "atomic_long_t[NR_HIST_GENS][ANON_AND_FILE][MAX_NR_TIERS]"
    );
    assert_eq!(f[10].ty, "_Bool");
    assert_eq!((f[13].size, f[13].align), (16, 8));
    assert!(f.iter().all(|x| x.access == Access::Cold && !x.pinned));
    assert_eq!(s.model.name, "lru_gen_folio");
    assert_eq!(s.model.min_align, 1);
    let span = f[9].span.as_ref().unwrap();
    assert_eq!(span.file.as_deref(), Some(Path::new("t.h")));
    assert_eq!(
        SEED.lines().nth(span.line - 1).unwrap().trim(),
        "atomic_long_t refaulted[NR_HIST_GENS][ANON_AND_FILE][MAX_NR_TIERS];"
    );
}

#[test]
fn seed_struct_follows_the_config() {
    let mut d = Defines::default();
    d.insert("CONFIG_LRU_GEN_STATS", 1);
    let s = header_with(SEED, &d, &TypeTable::default())
        .find_struct("struct lru_gen_folio")
        .unwrap();
    // protected, evicted and refaulted grow from 1 to 4 history generations.
    assert_eq!(s.size, 1360 + 3 * 3 * 64);
    assert_eq!(s.model.fields[9].size, 256);
}

#[test]
fn seed_ranges_cover_comments_and_lines() {
    let s = layout(SEED, "lru_gen_folio");
    let src = &s.source;
    let text = |r: &std::ops::Range<usize>| &src.text[r.clone()];
    assert!(text(&src.definition).starts_with("struct lru_gen_folio {"));
    assert!(text(&src.definition).ends_with('}'));
    assert_eq!(
        &src.text[src.definition.end - 1..src.definition.end + 1],
        "};"
    );
    assert_eq!(
        src.body,
        src.definition.start + "struct lru_gen_folio {".len()..src.definition.end - 1
    );
    assert_eq!(src.members.len(), 14);
    let m = &src.members[0];
    assert_eq!(m.field, Some(0));
    assert_eq!(
        text(&m.lines),
        "\t/* youngest generation; aging bumps it */\n\tunsigned long max_seq;\n"
    );
    assert_eq!(text(&m.decl), "unsigned long max_seq;");
    assert_eq!(text(&m.name), "max_seq");
    assert_eq!(m.indent, "\t");
    // avg_total has no comment of its own: the one above avg_refaulted stays there.
    let avg_total = &src.members[6];
    assert_eq!(
        text(&avg_total.lines),
        "\tunsigned long avg_total[ANON_AND_FILE][MAX_NR_TIERS];\n"
    );
    assert!(text(&src.members[5].lines).starts_with("\t/* moving averages"));
    // Members tile the body from the first comment to the last newline.
    for w in src.members.windows(2) {
        assert_eq!(w[0].lines.end, w[1].lines.start, "members are adjacent");
    }
    assert_eq!(src.members.last().unwrap().lines.end, src.body.end);
    for (i, m) in src.members.iter().enumerate() {
        assert_eq!(m.field, Some(i));
        assert!(text(&m.decl).ends_with(';'));
        assert_eq!(s.model.fields[i].span.as_ref().unwrap().bytes, m.lines);
    }
}

#[test]
fn conditionals_in_bodies() {
    let text = "\
#define LEVEL 5
struct cfg {
	long always;
#ifdef CONFIG_A
	int a;
#else
	/* without A */
	int not_a;
	int not_a2;
#endif
#if defined(CONFIG_A) && LEVEL > 3
	int a_and_level;
#elif IS_ENABLED(CONFIG_B)
	int b;
#endif
#ifndef CONFIG_A
	char no_a;
#endif
};
";
    let s = layout(text, "cfg");
    assert_eq!(names(&s), ["always", "not_a", "not_a2", "no_a"]);
    assert_eq!(s.size, 24);

    let mut d = Defines::default();
    d.insert("CONFIG_A", 1);
    let s = header_with(text, &d, &TypeTable::default())
        .find_struct("cfg")
        .unwrap();
    assert_eq!(names(&s), ["always", "a", "a_and_level"]);
    assert_eq!(s.size, 16);

    let mut d = Defines::default();
    d.insert("CONFIG_B_MODULE", 1);
    let s = header_with(text, &d, &TypeTable::default())
        .find_struct("cfg")
        .unwrap();
    assert_eq!(names(&s), ["always", "not_a", "not_a2", "b", "no_a"]);

    // Directive lines and skipped groups are members without a field.
    let s = layout(text, "cfg");
    let src = &s.source;
    let decls: Vec<(Option<usize>, &str)> = src
        .members
        .iter()
        .map(|m| (m.field, &src.text[m.decl.clone()]))
        .collect();
    assert_eq!(
        decls,
        [
            (Some(0), "long always;"),
            (None, "#ifdef CONFIG_A"),
            (None, "\tint a;"),
            (None, "#else"),
            (Some(1), "int not_a;"),
            (Some(2), "int not_a2;"),
            (None, "#endif"),
            (None, "#if defined(CONFIG_A) && LEVEL > 3"),
            (None, "\tint a_and_level;"),
            (None, "#elif IS_ENABLED(CONFIG_B)"),
            (None, "\tint b;"),
            (None, "#endif"),
            (None, "#ifndef CONFIG_A"),
            (Some(3), "char no_a;"),
            (None, "#endif"),
        ]
    );
    assert_eq!(
        &src.text[src.members[4].lines.clone()],
        "\t/* without A */\n\tint not_a;\n"
    );
    assert_eq!(&src.text[src.members[2].lines.clone()], "\tint a;\n");
}

#[test]
fn kernel_attributes_on_fields_and_structs() {
    let text = "\
struct hot {
	unsigned long config;
	unsigned long hits ____cacheline_aligned_in_smp;
	int x __aligned(16);
	struct list_head __rcu *p;
	char tail;
} __aligned(32) __randomize_layout;
";
    let s = layout(text, "hot");
    assert_eq!(
        fields(&s),
        [
            ("config".to_string(), 0, 8, 8),
            ("hits".to_string(), 64, 8, 64),
            ("x".to_string(), 80, 4, 16),
            ("p".to_string(), 88, 8, 8),
            ("tail".to_string(), 96, 1, 1),
        ]
    );
    assert_eq!((s.size, s.align), (128, 64));
    assert_eq!(s.model.min_align, 32);
    assert_eq!(s.model.fields[3].ty, "struct list_head *");
}

#[test]
fn gnu_attributes_and_header_defined_attribute_macros() {
    let text = "\
#define SMP_CACHE_BYTES 128
#define ____cacheline_aligned_in_smp __attribute__((__aligned__(SMP_CACHE_BYTES)))
struct __attribute__((packed)) wire {
	char tag;
	unsigned int len;
	unsigned long long id __attribute__((aligned(4)));
};
struct big {
	char c;
	long stat ____cacheline_aligned_in_smp;
};
";
    let s = layout(text, "wire");
    assert_eq!(
        fields(&s),
        [
            ("tag".into(), 0, 1, 1),
            ("len".into(), 1, 4, 1),
            ("id".into(), 8, 8, 4)
        ]
    );
    assert_eq!((s.size, s.align), (16, 4));
    let s = layout(text, "big");
    assert_eq!(offset(&s, "stat"), 128, "the header's own definition wins");
    assert_eq!(s.size, 256);
}

#[test]
fn padding_markers_and_groups() {
    let text = "\
struct grouped {
	long a;
	CACHELINE_PADDING(_pad1_);
	long b;
	__cacheline_group_begin_aligned(hot);
	int c;
	__cacheline_group_end_aligned(hot);
	int d;
};
";
    let s = layout(text, "grouped");
    // The markers are zero-size fields named as the kernel's macros name
    // them: the pad of an aligned end follows the end
    // marker, which sits right after `c` (aligned to a long).
    assert_eq!(
        names(&s),
        [
            "a",
            "_pad1_",
            "b",
            "__cacheline_group_begin__hot",
            "c",
            "__cacheline_group_end__hot",
            "__cacheline_group_pad__hot",
            "d"
        ]
    );
    assert_eq!(offset(&s, "_pad1_"), 64);
    assert_eq!(offset(&s, "__cacheline_group_begin__hot"), 128);
    assert_eq!(offset(&s, "__cacheline_group_end__hot"), 136);
    assert_eq!(offset(&s, "__cacheline_group_pad__hot"), 192);
    let segments: Vec<u32> = s.model.fields.iter().map(|f| f.segment).collect();
    // The padding is a line break, not a wall: it shares `b`'s segment.
    assert_eq!(segments, [0, 1, 1, 2, 3, 4, 5, 6]);
    assert_eq!(s.model.breaks, [1]);
    assert_eq!(offset(&s, "b"), 64);
    assert_eq!(offset(&s, "c"), 128);
    assert_eq!(offset(&s, "d"), 192);
    assert_eq!((s.size, s.align), (256, 64));
    let src = &s.source;
    let pad = &src.members[1];
    assert_eq!(pad.field, None);
    assert_eq!(&src.text[pad.decl.clone()], "CACHELINE_PADDING(_pad1_);");
    assert_eq!(&src.text[pad.name.clone()], "_pad1_");
    assert_eq!(src.members.iter().filter(|m| m.field.is_none()).count(), 3);
}

#[test]
fn unions_and_anonymous_members() {
    let text = "\
union val { int i; double d; char bytes[12]; };
struct node {
	char kind;
	union val v;
	union {
		struct list_head lru;
		struct {
			void *filler;
			unsigned int count;
		};
	};
	struct {
		short x, y;
	} pos;
	struct inner { char q; } in;
};
";
    let s = layout(text, "node");
    assert_eq!(
        fields(&s),
        [
            ("kind".into(), 0, 1, 1),
            ("v".into(), 8, 16, 8),
            ("lru".into(), 24, 16, 8),
            ("pos".into(), 40, 4, 2),
            ("in".into(), 44, 1, 1),
        ]
    );
    assert_eq!(s.size, 48);
    assert_eq!(s.model.fields[2].ty, "union {...}");
    assert_eq!(s.model.fields[3].ty, "struct {...}");
    assert_eq!(s.model.fields[4].ty, "struct inner");
    // The anonymous union is one member: its whole text moves together.
    let m = &s.source.members[2];
    assert!(s.source.text[m.decl.clone()].starts_with("union {"));
    assert!(s.source.text[m.decl.clone()].ends_with("};"));
    // A struct defined inside another is visible by its tag.
    assert_eq!(layout(text, "inner").size, 1);
    let e = error(text, "val");
    assert!(e.message.contains("union"), "{e}");
}

#[test]
fn declarator_lists_share_member_ranges() {
    let text = "struct pt {\n\t/* both */\n\tint x, *px, arr[3];\n\tvoid (*cb)(int, char *);\n};\n";
    let s = layout(text, "pt");
    assert_eq!(
        fields(&s),
        [
            ("x".into(), 0, 4, 4),
            ("px".into(), 8, 8, 8),
            ("arr".into(), 16, 12, 4),
            ("cb".into(), 32, 8, 8)
        ]
    );
    let tys: Vec<&str> = s.model.fields.iter().map(|f| f.ty.as_str()).collect();
    assert_eq!(tys, ["int", "int *", "int[3]", "void (*)(int, char *)"]);
    let m = &s.source.members;
    assert_eq!(m.len(), 4);
    assert_eq!(
        (m[0].lines.clone(), m[0].decl.clone()),
        (m[1].lines.clone(), m[1].decl.clone())
    );
    assert_eq!(m[2].lines, m[0].lines);
    let name = |i: usize| &s.source.text[m[i].name.clone()];
    assert_eq!((name(0), name(1), name(2)), ("x", "px", "arr"));
    assert_eq!(
        m.iter().map(|x| x.field).collect::<Vec<_>>(),
        [Some(0), Some(1), Some(2), Some(3)]
    );
}

#[test]
fn typedef_names_find_structs() {
    let text = "\
typedef struct { unsigned long a; char b; } anon_t;
struct tagged { short s; };
typedef struct tagged tagged_t;
typedef tagged_t again_t;
typedef unsigned int u32;
typedef u32 my_arr[4];
struct user { anon_t an; my_arr arr; tagged_t t; };
";
    let h = header(text);
    assert_eq!(
        h.struct_names(),
        ["anon_t", "tagged", "tagged_t", "again_t", "user"]
    );
    let s = h.find_struct("anon_t").unwrap();
    assert_eq!((s.size, s.model.name.as_str()), (16, "anon_t"));
    assert_eq!(h.find_struct("again_t").unwrap().size, 2);
    let u = h.find_struct("user").unwrap();
    assert_eq!(
        fields(&u),
        [
            ("an".into(), 0, 16, 8),
            ("arr".into(), 16, 16, 4),
            ("t".into(), 32, 2, 2)
        ]
    );
    assert_eq!(u.size, 40);
}

#[test]
fn bitfields_form_one_field_per_run() {
    let text = "struct flags {\n\tunsigned int a:1, b:2;\n\tunsigned int c:5;\n\tlong after;\n\tchar x;\n\tunsigned short d:3;\n};\n";
    let s = layout(text, "flags");
    assert_eq!(names(&s), ["a", "after", "x", "d"]);
    assert_eq!(fields(&s)[0], ("a".into(), 0, 1, 4));
    assert_eq!(
        s.model.fields[0].ty,
        "unsigned int a:1; unsigned int b:2; unsigned int c:5"
    );
    assert_eq!(fields(&s)[3], ("d".into(), 17, 1, 1));
    assert_eq!(s.size, 24);
    let m = &s.source.members;
    assert_eq!(
        m.iter().map(|x| x.field).collect::<Vec<_>>(),
        [Some(0), Some(0), Some(1), Some(2), Some(3)]
    );
}

#[test]
fn constants_from_enums_sizeof_and_macros() {
    let text = "\
enum zone { ZONE_DMA, ZONE_NORMAL, ZONE_MOVABLE, __MAX_NR_ZONES };
#define NR_X (__MAX_NR_ZONES * 2)
#define ROUND(n, d) (((n) + (d) - 1) / (d))
struct c {
	long per_zone[__MAX_NR_ZONES];
	char buf[sizeof(struct list_head) + NR_X];
	unsigned long bits[ROUND(100, BITS_PER_LONG)];
	enum zone z;
};
";
    let s = layout(text, "c");
    assert_eq!(
        fields(&s),
        [
            ("per_zone".into(), 0, 24, 8),
            ("buf".into(), 24, 22, 1),
            ("bits".into(), 48, 16, 8),
            ("z".into(), 64, 4, 4)
        ]
    );
}

#[test]
fn type_table_and_defines_fill_the_gaps() {
    let text = "struct t {\n\tstruct mystery m;\n\tmystery_t n;\n\tlong a[NR_CPUS];\n\tatomic_t builtin;\n\tspinlock_t lock;\n};\n";
    let mut types = TypeTable::default();
    types.insert("struct mystery", 24, 8);
    types.insert("mystery_t", 2, 2);
    types.insert("spinlock_t", 64, 8);
    let mut d = Defines::default();
    d.insert("NR_CPUS", 3);
    let s = header_with(text, &d, &types).find_struct("t").unwrap();
    assert_eq!(
        fields(&s),
        [
            ("m".into(), 0, 24, 8),
            ("n".into(), 24, 2, 2),
            ("a".into(), 32, 24, 8),
            ("builtin".into(), 56, 4, 4),
            ("lock".into(), 64, 64, 8),
        ]
    );
    // A header definition beats both tables.
    let text2 = "typedef struct { long x[3]; } atomic_t;\nstruct t { atomic_t a; };\n";
    let mut types = TypeTable::default();
    types.insert("atomic_t", 4, 4);
    let s = header_with(text2, &Defines::default(), &types)
        .find_struct("t")
        .unwrap();
    assert_eq!(s.size, 24);
}

#[test]
fn unknown_struct_lists_close_names() {
    let e = error(SEED, "lru_gen_foli");
    assert_eq!(e.file.as_deref(), Some(Path::new("t.h")));
    assert_eq!(e.line, 0);
    assert!(e.message.contains("lru_gen_foli"), "{e}");
    assert!(
        e.help.as_deref().unwrap().contains("`lru_gen_folio`"),
        "{e}"
    );
    let e = error(SEED, "nothing_like_it");
    assert!(
        e.help.as_deref().unwrap().contains("list_head"),
        "lists what exists: {e}"
    );
}

#[test]
fn unknown_type_names_its_line_and_the_fix() {
    let e = error(
        "struct counters {\n\tunsigned long config;\n\tstruct mystery m;\n};\n",
        "counters",
    );
    assert_eq!((e.line, e.column), (3, 2));
    assert!(e.message.contains("struct mystery"), "{e}");
    let help = e.help.unwrap();
    assert!(
        help.contains("[types]") && help.contains("\"struct mystery\" = { size = N, align = M }"),
        "{help}"
    );
    let e = error("struct c {\n\tint a;\n\tfoo_t x;\n};\n", "c");
    assert_eq!(e.line, 3);
    assert!(e.message.contains("foo_t"), "{e}");
    // through a typedef: the error is where the unknown type is written
    let e = error(
        "typedef struct nope nope_t;\nstruct c {\n\tnope_t x;\n};\n",
        "c",
    );
    assert_eq!(e.line, 1, "{e}");
    assert!(e.message.contains("struct nope"));
    // pointers to unknown types are fine
    assert_eq!(
        layout("struct c { struct nope *p; nope_t *q; };", "c").size,
        16
    );
}

#[test]
fn missing_constant_names_its_line() {
    let e = error(
        "struct counters {\n\tlong hits[NR_SLOTS];\n};\n",
        "counters",
    );
    assert_eq!(e.line, 2);
    assert!(e.message.contains("NR_SLOTS"), "{e}");
    assert!(e.help.unwrap().contains("-D NR_SLOTS=VALUE"));
    // NR_CPUS is the configuration's: without one, that is what is missing.
    let e = error("struct counters {\n\tlong hits[NR_CPUS];\n};\n", "counters");
    assert_eq!(e.line, 2);
    assert!(e.message.contains("CONFIG_NR_CPUS"), "{e}");
    let e = error(
        "#define N (M * 2)\nstruct c {\n\tint a;\n\tint b[N];\n};\n",
        "c",
    );
    assert_eq!(e.line, 4);
    assert!(e.message.contains('M'), "{e}");
    let e = error("struct c {\n\tint a : W;\n};\n", "c");
    assert_eq!(e.line, 2);
}

#[test]
fn syntax_errors_point_at_the_line() {
    let e = error(
        "struct counters {\n\tunsigned long config;\n\tlong hits[4]\n\tint @@@;\n};\n",
        "counters",
    );
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("syntax"), "{e}");
    let e = error("struct c {\n\tint a;\n\tint b c;\n};\n", "c");
    assert_eq!((e.line, e.column), (3, 8), "{e}");
    // An unknown attribute macro after a field name.
    let e = error("struct c {\n\tint a;\n\tint b __my_attr;\n};\n", "c");
    assert_eq!(e.line, 3, "{e}");
    assert!(e.to_string().contains("#define __my_attr"), "{e}");
    // The word after the declarator is the suspect, not the `__name` field.
    let e = error(
        "struct c {\n\tint a;\n\tvoid *__ctx[] CRYPTO_MINALIGN_ATTR;\n};\n",
        "c",
    );
    assert_eq!(e.line, 3, "{e}");
    assert!(
        e.to_string().contains("#define CRYPTO_MINALIGN_ATTR"),
        "{e}"
    );
    // A struct swallowed by an error is reported as the error.
    let e = error("struct a { int x; }\nstruct c { int b; };\n", "c");
    assert!(e.message.contains("syntax"), "{e}");
    // Errors elsewhere do not block a struct that parses.
    let ok = "static inline int f(void) { return @@@; }\nstruct c { int b; };\n";
    assert_eq!(layout(ok, "c").size, 4);
}

#[test]
fn preprocessor_errors_have_lines() {
    let e = error("struct c {\n#if 1\n\tint a;\n};\n", "c");
    assert_eq!(e.line, 2);
    assert!(e.help.unwrap().contains("#endif"));
    // An #error or a condition that cannot be evaluated stops only the
    // structs whose body holds it (without the included headers, a
    // condition may reach an #error the real build never reaches).
    let text = "#ifndef CONFIG_X\n#error needs CONFIG_X\n#endif\n#if FOO(\n#endif\nstruct c { int a; };\nstruct d {\n#error no d\n\tint a;\n};\nstruct e {\n#if FOO(1) > 2\n\tint a;\n#endif\n};\n";
    assert_eq!(layout(text, "c").size, 4);
    let e = error(text, "d");
    assert_eq!((e.line, e.message.as_str()), (8, "#error no d"));
    let e = error(text, "e");
    assert_eq!(e.line, 12, "{e}");
    assert!(e.message.contains("FOO() is not defined"), "{e}");
    assert!(e.help.unwrap().contains("decides which members"));
}

#[test]
fn other_layout_errors() {
    let e = error("struct c {\n\tint a;\n\tvoid v;\n};\n", "c");
    assert_eq!(e.line, 3);
    let e = error("struct c {\n\tstruct c inner;\n};\n", "c");
    assert!(e.message.contains("contains itself"), "{e}");
    let e = error("struct c {\n\tint a[-1];\n};\n", "c");
    assert_eq!(e.line, 2);
    let e = error(
        "struct c {\n\tint a __attribute__((aligned(3)));\n};\n",
        "c",
    );
    assert!(e.message.contains("power of two"), "{e}");
    let e = error("struct c {\n\tDECLARE_KFIFO(fifo, int, 4);\n};\n", "c");
    assert_eq!(e.line, 2, "{e}");
    assert!(e.message.contains("DECLARE_KFIFO"), "{e}");
    let e = error("struct c {\n\tint x __attribute__((mode(DI)));\n};\n", "c");
    assert!(e.message.contains("mode"), "{e}");
}

#[test]
fn never_panics_on_truncated_or_mangled_input() {
    let step = 7;
    for cut in (0..SEED.len()).step_by(step) {
        if !SEED.is_char_boundary(cut) {
            continue;
        }
        let text = &SEED[..cut];
        if let Ok(h) = parse_header(
            Path::new("t.h"),
            text,
            &Defines::default(),
            &TypeTable::default(),
        ) {
            let _ = h.find_struct("lru_gen_folio");
            let _ = h.struct_names();
        }
    }
    // Swap bytes around: braces, brackets and operators in odd places.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let specials = b"{}[]();,*#:/\n\\\"'_0@";
    for _ in 0..150 {
        let mut bytes = SEED.as_bytes().to_vec();
        for _ in 0..8 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state % bytes.len() as u64) as usize;
            bytes[at] = specials[(state >> 40) as usize % specials.len()];
        }
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        if let Ok(h) = parse_header(
            Path::new("t.h"),
            &text,
            &Defines::default(),
            &TypeTable::default(),
        ) {
            let _ = h.find_struct("lru_gen_folio");
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let n = 3000;
    let structs = format!(
        "struct deep {{ {} int x; {} }};\n",
        "struct { ".repeat(n),
        "} a;".repeat(n)
    );
    if let Ok(h) = parse_header(
        Path::new("t.h"),
        &structs,
        &Defines::default(),
        &TypeTable::default(),
    ) {
        assert!(h.find_struct("deep").is_err());
    }
    let parens = format!(
        "struct p {{ int a[{}1{}]; }};\n",
        "(".repeat(n),
        ")".repeat(n)
    );
    let e = error(&parens, "p");
    assert!(e.message.contains("deeply"), "{e}");
    let directive = format!(
        "struct q {{\n#if {}1{}\n#endif\nint a; }};\n",
        "(".repeat(n),
        ")".repeat(n)
    );
    let e = error(&directive, "q");
    assert_eq!(e.line, 2, "{e}");
    let unary = format!("struct r {{ int a[{}1]; }};\n", "- ".repeat(n));
    assert!(parse_header(
        Path::new("t.h"),
        &unary,
        &Defines::default(),
        &TypeTable::default()
    )
    .is_ok());
    assert!(error(&unary, "r").message.contains("deeply"));
    let macros: String = (0..200)
        .map(|i| format!("#define M{i} (M{} + 1)\n", i + 1))
        .collect();
    let e = error(
        &format!("{macros}#define M200 1\nstruct m {{ int a[M0]; }};\n"),
        "m",
    );
    assert!(e.message.contains("deeply"), "{e}");
}

#[test]
fn load_header_reads_files_and_names_bad_ones() {
    let dir = std::env::temp_dir().join(format!("c_frontend_load_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("seed.h");
    std::fs::write(&good, SEED).unwrap();
    let h = load_header(&good, &Defines::default(), &TypeTable::default()).unwrap();
    assert_eq!(h.find_struct("lru_gen_folio").unwrap().source.path, good);
    let missing = dir.join("missing.h");
    let e = load_header(&missing, &Defines::default(), &TypeTable::default()).unwrap_err();
    assert_eq!(e.file.as_deref(), Some(missing.as_path()));
    assert!(e.message.contains("cannot read"), "{e}");
    let latin1 = dir.join("latin1.h");
    std::fs::write(&latin1, b"struct a {\n\tint x; /* caf\xe9 */\n};\n").unwrap();
    let e = load_header(&latin1, &Defines::default(), &TypeTable::default()).unwrap_err();
    assert_eq!((e.line, e.column), (2, 15), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- Kernel member macros, #pragma pack, offsetof, conditions from other
// headers: the front-end's numbers are compared with gcc where gcc can
// compile the same text (with the kernel's macro definitions).

/// The kernel's definitions of the member macros, for gcc.
const KERNEL_MACROS: &str = "\
#include <stddef.h>
#define BITS_TO_LONGS(nr) (((nr) + 63) / 64)
#define DECLARE_BITMAP(name, bits) unsigned long name[BITS_TO_LONGS(bits)]
#define __DECLARE_FLEX_ARRAY(TYPE, NAME) struct { struct { } __empty_ ## NAME; TYPE NAME[]; }
#define DECLARE_FLEX_ARRAY(TYPE, NAME) __DECLARE_FLEX_ARRAY(TYPE, NAME)
#define __struct_group(TAG, NAME, ATTRS, MEMBERS...) \\
	union { struct { MEMBERS } ATTRS; struct TAG { MEMBERS } ATTRS NAME; } ATTRS
#define struct_group(NAME, MEMBERS...) __struct_group(/* no tag */, NAME, /* no attrs */, MEMBERS)
#define struct_group_attr(NAME, ATTRS, MEMBERS...) __struct_group(/* no tag */, NAME, ATTRS, MEMBERS)
#define struct_group_tagged(TAG, NAME, MEMBERS...) __struct_group(TAG, NAME, /* no attrs */, MEMBERS)
#define __packed __attribute__((__packed__))
#define __aligned(x) __attribute__((__aligned__(x)))
struct hlist_node { struct hlist_node *next, **pprev; };
struct hlist_head { struct hlist_node *first; };
#define DECLARE_HASHTABLE(name, bits) struct hlist_head name[1 << (bits)]
typedef struct { long counter; } atomic_long_t;
";

/// Compiles `header` (after [`KERNEL_MACROS`]) with gcc and prints
/// `expr` for each of `exprs`; `None` when gcc is not installed.
fn gcc_values(header: &str, exprs: &[&str]) -> Option<Vec<u64>> {
    let gcc_ok = std::process::Command::new("gcc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !gcc_ok {
        eprintln!("SKIPPED the gcc comparison: gcc is not installed");
        return None;
    }
    let dir = std::env::temp_dir().join(format!(
        "c_frontend_gcc_{}_{}",
        std::process::id(),
        exprs.len() + header.len()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut program = format!("{KERNEL_MACROS}\n{header}\n#include <stdio.h>\nint main(void) {{\n");
    for e in exprs {
        program.push_str(&format!("\tprintf(\"%zu\\n\", (size_t)({e}));\n"));
    }
    program.push_str("\treturn 0;\n}\n");
    let c = dir.join("t.c");
    let exe = dir.join("t");
    std::fs::write(&c, program).unwrap();
    let out = std::process::Command::new("gcc")
        .args(["-std=gnu11", "-w", "-o"])
        .arg(&exe)
        .arg(&c)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = std::process::Command::new(&exe).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Some(
        String::from_utf8_lossy(&run.stdout)
            .lines()
            .map(|l| l.parse().unwrap())
            .collect(),
    )
}

#[test]
fn kernel_member_macros_match_gcc() {
    let text = "\
#define NR_FLAGS 70
struct macros {
	char tag;
	DECLARE_BITMAP(flags, NR_FLAGS);
	short s;
	struct_group(addrs,
		unsigned int saddr;
		unsigned int daddr;
	);
	char c;
	struct_group_tagged(pair, both,
		char x;
		long y;
	);
	struct_group_attr(tight, __packed,
		char p;
		int q;
	);
	char d;
	union {
		DECLARE_FLEX_ARRAY(unsigned int, words);
		DECLARE_FLEX_ARRAY(unsigned char, bytes);
	};
};
struct tail {
	int n;
	__DECLARE_FLEX_ARRAY(long, items);
};
";
    let s = layout(text, "macros");
    assert_eq!(
        names(&s),
        ["tag", "flags", "s", "addrs", "c", "both", "tight", "d", "words"]
    );
    let i = s.model.field_index("flags").unwrap();
    assert_eq!(
        (s.model.fields[i].size, s.model.fields[i].ty.as_str()),
        (16, "unsigned long[BITS_TO_LONGS(NR_FLAGS)]")
    );
    let i = s.model.field_index("addrs").unwrap();
    assert_eq!(s.model.fields[i].size, 8, "one field for the whole group");
    let t = layout(text, "tail");
    let exprs = [
        "sizeof(struct macros)",
        "_Alignof(struct macros)",
        "offsetof(struct macros, flags)",
        "offsetof(struct macros, s)",
        "offsetof(struct macros, addrs)",
        "offsetof(struct macros, c)",
        "offsetof(struct macros, both)",
        "offsetof(struct macros, tight)",
        "offsetof(struct macros, d)",
        "offsetof(struct macros, words)",
        "sizeof(struct tail)",
        "offsetof(struct tail, items)",
    ];
    let ours = vec![
        s.size,
        s.align,
        offset(&s, "flags"),
        offset(&s, "s"),
        offset(&s, "addrs"),
        offset(&s, "c"),
        offset(&s, "both"),
        offset(&s, "tight"),
        offset(&s, "d"),
        offset(&s, "words"),
        t.size,
        offset(&t, "items"),
    ];
    if let Some(gcc) = gcc_values(text, &exprs) {
        assert_eq!(ours, gcc, "{exprs:?}");
    }
    // The byte ranges: a member macro is one declaration, from its name to
    // its `;`, and an attribute for it goes after the `)`.
    let src = &s.source;
    let by_field = |name: &str| {
        let f = s.model.field_index(name).unwrap();
        src.members.iter().find(|m| m.field == Some(f)).unwrap()
    };
    let m = by_field("flags");
    assert_eq!(
        &src.text[m.decl.clone()],
        "DECLARE_BITMAP(flags, NR_FLAGS);"
    );
    assert_eq!(m.name.start, m.name.end);
    assert_eq!(&src.text[m.name.start..m.decl.end], ";");
    let m = by_field("addrs");
    assert!(src.text[m.decl.clone()].starts_with("struct_group(addrs,"));
    assert!(src.text[m.decl.clone()].ends_with(");"));
    assert_eq!(&src.text[m.name.start..m.decl.end], ";");
    // struct_group_tagged defines its tag.
    assert_eq!(layout(text, "pair").size, 16);
}

#[test]
fn hashtable_and_net_dev_stat_match_gcc() {
    // As in netdevice.h: NET_DEV_STAT is defined by the header itself.
    let text = "\
#define NET_DEV_STAT(FIELD)\t\t\t\\
\tunion {\t\t\t\t\t\\
\t\tunsigned long FIELD;\t\t\\
\t\tatomic_long_t __##FIELD;\t\\
\t}
struct stats {
\tchar c;
\tNET_DEV_STAT(rx_packets);
\tNET_DEV_STAT(tx_packets);
\tint i;
\tNET_DEV_STAT(rx_bytes) __aligned(32);
};
#undef NET_DEV_STAT
#define QBITS 3
struct tables {
\tchar c;
\tDECLARE_HASHTABLE\t(qdisc_hash, 4);
\tint i;
\tDECLARE_HASHTABLE(by_id, QBITS + 1);
\tshort s;
\tstruct stats stats;
\tDECLARE_HASHTABLE(one, 0);
\tchar tail;
};
";
    let st = layout(text, "stats");
    assert_eq!(
        names(&st),
        ["c", "rx_packets", "tx_packets", "i", "rx_bytes"]
    );
    let i = st.model.field_index("rx_packets").unwrap();
    assert_eq!(
        (st.model.fields[i].size, st.model.fields[i].ty.as_str()),
        (8, "unsigned long")
    );
    let t = layout(text, "tables");
    assert_eq!(
        names(&t),
        ["c", "qdisc_hash", "i", "by_id", "s", "stats", "one", "tail"]
    );
    let i = t.model.field_index("qdisc_hash").unwrap();
    assert_eq!(
        (t.model.fields[i].size, t.model.fields[i].ty.as_str()),
        (128, "struct hlist_head[1 << (4)]")
    );
    let i = t.model.field_index("by_id").unwrap();
    assert_eq!(
        t.model.fields[i].ty.as_str(),
        "struct hlist_head[1 << (QBITS + 1)]"
    );
    let mut exprs = Vec::new();
    let mut ours = Vec::new();
    for s in [&st, &t] {
        let name = &s.model.name;
        exprs.push(format!("sizeof(struct {name})"));
        exprs.push(format!("_Alignof(struct {name})"));
        ours.extend([s.size, s.align]);
        for f in &s.model.fields {
            exprs.push(format!("offsetof(struct {name}, {})", f.name));
            exprs.push(format!("sizeof(((struct {name} *)0)->{})", f.name));
            ours.extend([f.original_offset.unwrap(), f.size]);
        }
    }
    let exprs: Vec<&str> = exprs.iter().map(String::as_str).collect();
    if let Some(gcc) = gcc_values(text, &exprs) {
        assert_eq!(ours, gcc, "{exprs:?}");
    }
    // A member macro is one declaration, from its name to its `;`.
    for (s, name, decl) in [
        (&st, "tx_packets", "NET_DEV_STAT(tx_packets);"),
        (&st, "rx_bytes", "NET_DEV_STAT(rx_bytes) __aligned(32);"),
        (&t, "qdisc_hash", "DECLARE_HASHTABLE\t(qdisc_hash, 4);"),
    ] {
        let src = &s.source;
        let f = s.model.field_index(name).unwrap();
        let m = src.members.iter().find(|m| m.field == Some(f)).unwrap();
        assert_eq!(&src.text[m.decl.clone()], decl);
    }
}

#[test]
fn pragma_pack_matches_gcc() {
    let text = "\
#pragma pack(push, 2)
struct a { char c; int i; long l; int x __attribute__((aligned(16))); };
struct b { char c; int bf : 20; int bf2 : 20; };
struct c { char c; struct { char d; long e; } s; };
#pragma pack(1)
struct d { char c; long l; } __attribute__((aligned(8)));
struct e { char c; int a : 7; int b : 26; };
#pragma pack(pop)
struct f { char c; long l; };
#pragma pack(4)
struct g { char c; long l; double d; long double ld; short t : 4; int u : 30; };
#pragma pack()
struct h { char c; long l; };
";
    let mut ours = Vec::new();
    let mut exprs = Vec::new();
    for name in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        let s = layout(text, name);
        ours.extend([s.size, s.align]);
        exprs.push(format!("sizeof(struct {name})"));
        exprs.push(format!("_Alignof(struct {name})"));
        for f in &s.model.fields {
            if !f.ty.contains(':') {
                ours.push(f.original_offset.unwrap());
                exprs.push(format!("offsetof(struct {name}, {})", f.name));
            }
        }
    }
    let exprs: Vec<&str> = exprs.iter().map(String::as_str).collect();
    if let Some(gcc) = gcc_values(text, &exprs) {
        assert_eq!(ours, gcc, "{exprs:?}");
    }
}

#[test]
fn offsetof_and_alignof_in_constants_match_gcc() {
    let text = "\
struct in { int a; struct { long x; char y[3]; } halg; };
struct out { char head[offsetof(struct in, halg.y[1])]; int z; };
struct out2 { char head[__builtin_offsetof(struct in, a) + 2]; };
struct out3 { char pad[__alignof__(struct in)]; char q[_Alignof(long double)]; };
";
    let ours: Vec<u64> = ["out", "out2", "out3"]
        .iter()
        .map(|n| layout(text, n).size)
        .collect();
    assert_eq!(ours, [24, 2, 24]);
    if let Some(gcc) = gcc_values(
        text,
        &[
            "sizeof(struct out)",
            "sizeof(struct out2)",
            "sizeof(struct out3)",
        ],
    ) {
        assert_eq!(ours, gcc);
    }
    let e = error(
        "struct c { char x[offsetof(struct elsewhere, f)]; };\n",
        "c",
    );
    assert!(e.message.contains("offsetof(struct elsewhere, f)"), "{e}");
}

#[test]
fn conditions_on_macros_from_other_headers() {
    // PAGE_FRAG_CACHE_MAX_SIZE-style: a function-like macro the header
    // does not define. The group is skipped, and a struct that needs what
    // it defined says so.
    let text = "\
#if (PAGE_SIZE < __FOO_MASK(32768, 7))
#define FRAG_BYTES 16
#endif
struct needs { char frag[FRAG_BYTES]; };
struct fine { int a; };
struct guarded {
#if SOME_FN(1)
	int maybe;
#endif
	int b;
};
";
    assert_eq!(layout(text, "fine").size, 4);
    let e = error(text, "needs");
    assert_eq!(e.line, 4, "{e}");
    let help = e.help.unwrap();
    assert!(
        help.contains("line 1") && help.contains("__FOO_MASK"),
        "{help}"
    );
    let e = error(text, "guarded");
    assert_eq!(e.line, 7, "{e}");
    // A struct defined under such a condition is not there, and the error
    // says where it went.
    let e = error("#if FOO(2)\nstruct hidden { int a; };\n#endif\n", "hidden");
    assert!(e.to_string().contains("#if at line 1"), "{e}");
    // gcc's feature tests and kernel constants that come from elsewhere.
    let text = "\
#if __has_attribute(__fallthrough__) && !__has_builtin(__builtin_nope)
struct s { char name[IFNAMSIZ]; unsigned char mac[ETH_ALEN]; };
#endif
";
    assert_eq!(layout(text, "s").size, 22);
}

#[test]
fn kernel_config_files_define_options() {
    let dir = std::env::temp_dir().join(format!("c_frontend_config_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join(".config");
    std::fs::write(
        &cfg,
        "# comment\nCONFIG_A=y\nCONFIG_B=m\n# CONFIG_C is not set\nCONFIG_N=3\nCONFIG_S=\"x\"\n",
    )
    .unwrap();
    let d = layout_core::c::load_kernel_config(&cfg).unwrap();
    let text = "\
struct k {
#ifdef CONFIG_A
	int a;
#endif
#if IS_ENABLED(CONFIG_B)
	int b;
#endif
#if IS_BUILTIN(CONFIG_B)
	int b_builtin;
#endif
#ifdef CONFIG_B
	int b_ifdef;
#endif
#ifdef CONFIG_C
	int c;
#endif
	int n[CONFIG_N];
#ifdef __KERNEL__
	int kernel;
#endif
};
";
    let s = header_with(text, &d, &TypeTable::default())
        .find_struct("k")
        .unwrap();
    // CONFIG_B=m: IS_ENABLED is true, IS_BUILTIN and #ifdef are not (as
    // with Kbuild's autoconf.h).
    assert_eq!(names(&s), ["a", "b", "n", "kernel"]);
    std::fs::write(&cfg, "CONFIG_A=y\nCONFIG_B=maybe\n").unwrap();
    let e = layout_core::c::load_kernel_config(&cfg).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(layout_core::c::load_kernel_config(&dir.join("missing")).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}
