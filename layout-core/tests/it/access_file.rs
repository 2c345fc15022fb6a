//! The access file: parsing, applying it to a struct, and every error with
//! the file and the exact line of the offending key or name.

use layout_core::access::{self, AccessFile};
use layout_core::{Access, Diagnostic, Field, Struct};
use std::path::Path;

fn parse(text: &str) -> Result<AccessFile, Diagnostic> {
    access::parse(Path::new("a.toml"), text)
}

fn parsed(text: &str) -> AccessFile {
    parse(text).unwrap_or_else(|e| panic!("{e}"))
}

/// The struct of the lru_gen case, with made-up sizes (only names matter here).
fn lru_gen_folio() -> Struct {
    let names = [
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
    Struct::new(
        "lru_gen_folio",
        names.iter().map(|n| Field::new(*n, "long", 8, 8)).collect(),
    )
}

fn access_of(s: &Struct, name: &str) -> Access {
    s.fields[s.field_index(name).unwrap()].access.clone()
}

/// Applies `text` to the lru_gen struct and returns the error.
fn apply_error(text: &str) -> Diagnostic {
    let f = parsed(text);
    f.apply(&mut lru_gen_folio())
        .expect_err("expected an error")
}

fn assert_at(e: &Diagnostic, line: usize) {
    assert_eq!(e.file.as_deref(), Some(Path::new("a.toml")), "{e}");
    assert_eq!(e.line, line, "{e}");
    assert!(e.column > 0, "{e}");
    assert!(!e.to_string().contains('\n'), "one line: {e}");
}

const SEED: &str = r#"
# lru_gen_folio in mem_cgroup_per_node: phase 48
[types]
"struct mystery" = { size = 24, align = 8 }
atomic_long_t = { size = 8, align = 8 }

[defines]
MAX_NR_ZONES = 5
CONFIG_LRU_GEN_STATS = false
CONFIG_SMP = true

[struct.lru_gen_folio]
offset = 304
read_mostly = [
    "max_seq", "min_seq", "timestamps",
    "enabled", "gen", "seg", "list",
]
lockless_atomic = ["evicted", "refaulted"]
locked_write.lru_lock = ["folios", "nr_pages", "avg_refaulted", "avg_total", "protected"]
pinned = ["max_seq"]

[struct.other]
cold = ["x"]
"#;

#[test]
fn parses_tables_and_applies_classes() {
    let f = parsed(SEED);
    assert_eq!(f.types.get("struct mystery"), Some((24, 8)));
    assert_eq!(f.types.get("atomic_long_t"), Some((8, 8)));
    assert_eq!(f.defines.get("MAX_NR_ZONES"), Some(5));
    assert_eq!(f.defines.get("CONFIG_LRU_GEN_STATS"), Some(0));
    assert_eq!(f.defines.get("CONFIG_SMP"), Some(1));
    assert_eq!(f.struct_offset("lru_gen_folio"), Some(304));
    assert_eq!(f.struct_offset("other"), None);
    assert_eq!(f.struct_offset("nope"), None);

    let mut s = lru_gen_folio();
    f.apply(&mut s).unwrap();
    assert_eq!(access_of(&s, "enabled"), Access::ReadMostly);
    assert_eq!(access_of(&s, "refaulted"), Access::Lockless { group: None });
    assert_eq!(
        access_of(&s, "nr_pages"),
        Access::LockedWrite {
            lock: "lru_lock".into()
        }
    );
    let pinned: Vec<&str> = s
        .fields
        .iter()
        .filter(|x| x.pinned)
        .map(|x| x.name.as_str())
        .collect();
    assert_eq!(pinned, ["max_seq"]);
    let lines: Vec<usize> = f.structs["lru_gen_folio"]
        .classes
        .iter()
        .map(|c| c.at.line)
        .collect();
    assert_eq!(
        &lines[..8],
        [15, 15, 15, 16, 16, 16, 16, 18],
        "each name has its own line"
    );
    assert_eq!(
        f.structs["lru_gen_folio"].classes[9].key,
        "locked_write.lru_lock"
    );
}

#[test]
fn writer_groups_and_inline_tables() {
    let f = parsed(
        "[struct.lru_gen_folio]\n\
         cold = [\"list\"]\n\
         locked_write = { lru_lock = [\"folios\"], other_lock = [\"nr_pages\"] }\n\
         [struct.lru_gen_folio.lockless_atomic]\n\
         tx = [\"evicted\"]\n\
         rx = [\"refaulted\"]\n",
    );
    let mut s = lru_gen_folio();
    s.fields[13].access = Access::ReadMostly;
    f.apply(&mut s).unwrap();
    assert_eq!(
        access_of(&s, "evicted"),
        Access::Lockless {
            group: Some("tx".into())
        }
    );
    assert_eq!(
        access_of(&s, "refaulted"),
        Access::Lockless {
            group: Some("rx".into())
        }
    );
    assert_eq!(
        access_of(&s, "folios"),
        Access::LockedWrite {
            lock: "lru_lock".into()
        }
    );
    assert_eq!(
        access_of(&s, "nr_pages"),
        Access::LockedWrite {
            lock: "other_lock".into()
        }
    );
    assert_eq!(
        access_of(&s, "list"),
        Access::Cold,
        "cold overrides what was there"
    );
    assert_eq!(
        access_of(&s, "max_seq"),
        Access::Cold,
        "unlisted fields keep their class"
    );
}

/// The access file takes every keyword and alias of the vocabulary, the
/// same the `#[layout(..)]` attribute takes: `lockless` is `lockless_atomic`.
#[test]
fn every_class_keyword_and_alias_is_a_key() {
    use layout_core::class::{Class, Param};
    for class in Class::all() {
        for kw in class.info().keywords {
            let (entry, expected) = match class.info().param {
                Param::Lock => (format!("{kw}.l = [\"gen\"]"), class.with(Some("l".into()))),
                Param::None | Param::Group => (format!("{kw} = [\"gen\"]"), class.with(None)),
            };
            let f = parsed(&format!("[struct.lru_gen_folio]\n{entry}\n"));
            let mut s = lru_gen_folio();
            f.apply(&mut s).unwrap_or_else(|e| panic!("{kw}: {e}"));
            assert_eq!(Some(access_of(&s, "gen")), expected, "{kw}");
        }
    }
    let f = parsed("[struct.lru_gen_folio.lockless]\ntx = [\"seg\"]\n");
    let mut s = lru_gen_folio();
    f.apply(&mut s).unwrap();
    assert_eq!(
        access_of(&s, "seg"),
        Access::Lockless {
            group: Some("tx".into())
        }
    );
}

#[test]
fn files_without_the_struct_change_nothing() {
    let f = parsed("[types]\n\"struct a\" = { size = 8, align = 8 }\n[struct.unrelated_thing]\ncold = [\"x\"]\n");
    let mut s = lru_gen_folio();
    f.apply(&mut s).unwrap();
    assert_eq!(s, lru_gen_folio());
    let f = parsed("");
    assert!(f.structs.is_empty() && f.types.is_empty() && f.defines.is_empty());
}

#[test]
fn a_field_the_struct_lacks_names_its_line_and_close_names() {
    let e =
        apply_error("[struct.lru_gen_folio]\nread_mostly = [\n  \"max_seq\",\n  \"enabeld\",\n]\n");
    assert_at(&e, 4);
    assert!(
        e.message.contains("lru_gen_folio") && e.message.contains("enabeld"),
        "{e}"
    );
    assert!(e.help.as_deref().unwrap().contains("`enabled`"), "{e}");
    let e = apply_error("[struct.lru_gen_folio]\npinned = [\"zzz\"]\n");
    assert_at(&e, 2);
    assert!(
        e.help.as_deref().unwrap().contains("max_seq"),
        "lists the fields: {e}"
    );
}

#[test]
fn a_field_in_two_classes_names_both() {
    let e = apply_error(
        "[struct.lru_gen_folio]\nread_mostly = [\"gen\"]\n\nlockless_atomic = [\"seg\", \"gen\"]\n",
    );
    assert_at(&e, 4);
    assert!(
        e.message.contains("gen")
            && e.message.contains("read_mostly")
            && e.message.contains("lockless_atomic"),
        "{e}"
    );
    assert!(e.message.contains("line 2"), "{e}");
    let e = apply_error(
        "[struct.lru_gen_folio]\nlocked_write.a = [\"gen\"]\nlocked_write.b = [\"gen\"]\n",
    );
    assert_at(&e, 3);
    assert!(
        e.message.contains("locked_write.a") && e.message.contains("locked_write.b"),
        "{e}"
    );
    let e = apply_error("[struct.lru_gen_folio]\ncold = [\"gen\", \"gen\"]\n");
    assert!(e.message.contains("twice"), "{e}");
}

#[test]
fn unknown_keys_list_the_valid_ones() {
    let e = parse("[struct.lru_gen_folio]\nread_mostly = []\nlockles_atomic = [\"evicted\"]\n")
        .unwrap_err();
    assert_at(&e, 3);
    assert!(e.message.contains("lockles_atomic"), "{e}");
    let help = e.help.unwrap();
    assert!(help.contains("did you mean `lockless_atomic`"), "{help}");
    assert!(
        help.contains("read_mostly, locked_write, lockless_atomic, lockless, cold, pinned"),
        "{help}"
    );
    let e = parse("\n[structs.x]\ncold = []\n").unwrap_err();
    assert_at(&e, 2);
    assert!(e.help.unwrap().contains("`struct`"));
    let e = parse("[types]\n\"struct a\" = { size = 8, alignment = 8 }\n").unwrap_err();
    assert_at(&e, 2);
    assert!(e.message.contains("alignment"), "{e}");
}

#[test]
fn a_struct_table_with_a_close_name_is_a_typo() {
    let e = apply_error("# classes\n[struct.lru_gen_folios]\ncold = []\n");
    assert_at(&e, 2);
    assert!(
        e.message.contains("lru_gen_folios") && e.help.unwrap().contains("[struct.lru_gen_folio]")
    );
}

#[test]
fn bad_values_name_their_line() {
    let cases = [
        ("[types]\n\"struct a\" = { size = 8 }\n", 2, "align"),
        (
            "[types]\n\n\"struct a\" = { size = 8, align = 3 }\n",
            3,
            "power of two",
        ),
        (
            "[types]\n\"struct a\" = { size = 12, align = 8 }\n",
            2,
            "multiple",
        ),
        (
            "[types]\n\"struct a\" = { size = -8, align = 8 }\n",
            2,
            "non-negative",
        ),
        ("[types]\n\"struct a\" = 8\n", 2, "table"),
        ("[defines]\nN = \"five\"\n", 2, "integer"),
        ("[struct.s]\noffset = -4\n", 2, "non-negative"),
        ("[struct.s]\n\nread_mostly = \"a\"\n", 3, "list"),
        ("[struct.s]\nread_mostly = [\"a\",\n 3]\n", 3, "field name"),
        ("[struct.s]\nlocked_write = [\"a\"]\n", 2, "shape"),
        ("types = 3\n", 1, "table"),
        ("[struct]\ns = 1\n", 2, "table"),
    ];
    for (text, line, word) in cases {
        let e = parse(text).expect_err(text);
        assert_at(&e, line);
        assert!(e.to_string().contains(word), "{text:?}: {e}");
    }
}

#[test]
fn toml_syntax_errors_have_a_line() {
    let e = parse("[struct.counters]\nread_mostly = [\"config\"\n").unwrap_err();
    assert_eq!(e.file.as_deref(), Some(Path::new("a.toml")));
    assert!(e.line >= 2, "{e}");
    assert!(e.message.contains("TOML"), "{e}");
    let e = parse("[struct.a]\ncold = []\ncold = []\n").unwrap_err();
    assert_eq!(e.line, 3, "{e}");
}

#[test]
fn load_reads_files_and_names_unreadable_ones() {
    let dir = std::env::temp_dir().join(format!("access_file_test_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("a.toml");
    std::fs::write(&path, SEED).unwrap();
    let f = access::load(&path).unwrap();
    assert_eq!(f.path, path);
    assert_eq!(f.struct_offset("lru_gen_folio"), Some(304));
    let missing = dir.join("missing.toml");
    let e = access::load(&missing).unwrap_err();
    assert_eq!(e.file.as_deref(), Some(missing.as_path()));
    assert!(e.message.contains("cannot read"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(feature = "c-header")]
#[test]
fn tables_feed_the_c_front_end() {
    let f = parsed("[types]\n\"struct mystery\" = { size = 24, align = 8 }\n[defines]\nNR = 3\n");
    let text = "struct t {\n\tstruct mystery m;\n\tint a[NR];\n};\n";
    let h = layout_core::c::parse_header(Path::new("t.h"), text, &f.defines, &f.types).unwrap();
    let s = h.find_struct("t").unwrap();
    assert_eq!(s.size, 40);
}
