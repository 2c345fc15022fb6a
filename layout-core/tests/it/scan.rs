//! The scan: padding-only packing of compiled structs and the lockless
//! ranking, on a fixture that gcc compiles to BTF (`gcc -gbtf`, needs gcc
//! 12 or later) and, when present, on the running kernel's BTF. Every
//! packed fixture layout is written back as C and gcc confirms its size.

use layout_core::scan::{self, infer, pack, rank};
use layout_core::typedb::{Aggregate, TypeDb};
use layout_core::Access;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scan/structs.c")
}

fn work_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scan");
    std::fs::create_dir_all(&dir).expect("create the test's work directory");
    dir
}

fn gcc(args: &[&str], cwd: &Path) {
    let out = Command::new("gcc")
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run gcc: {e} (install gcc 12 or later)"));
    assert!(
        out.status.success(),
        "gcc {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn db() -> &'static TypeDb {
    static DB: OnceLock<TypeDb> = OnceLock::new();
    DB.get_or_init(|| {
        let obj = work_dir().join("structs.o");
        let src = fixture();
        gcc(
            &[
                "-gbtf",
                "-c",
                src.to_str().unwrap(),
                "-o",
                obj.to_str().unwrap(),
            ],
            &work_dir(),
        );
        layout_core::btf::load_btf(&obj).expect("gcc's BTF loads")
    })
}

fn get(name: &str) -> &'static Aggregate {
    db().find(name)
        .unwrap_or_else(|| panic!("fixture struct {name}"))
}

/// (size, best size) of every fixture struct that packs smaller.
fn expected() -> HashMap<&'static str, (u64, u64)> {
    HashMap::from([
        ("holes", (32, 16)),
        ("padded", (192, 128)),
        ("grouped", (192, 128)),
        ("flags", (48, 32)),
        ("flex", (24, 16)),
        ("with_union", (24, 16)),
        ("derived", (24, 16)),
    ])
}

#[test]
fn best_sizes_of_the_fixture_are_exact() {
    let found = scan::packable(db());
    assert!(found.refused.is_empty(), "{:?}", found.refused);
    let got: HashMap<&str, (u64, u64)> = found
        .structs
        .iter()
        .map(|p| (p.agg.name.as_str(), (p.agg.size, p.best_size)))
        .collect();
    assert_eq!(got, expected());
    assert!(found.structs.iter().all(|p| p.optimal));
    assert_eq!(found.total_saving(), 16 + 64 + 64 + 16 + 8 + 8 + 8);
}

#[test]
fn tight_and_ambiguous_structs_are_left_as_they_are() {
    for name in ["tight", "counters", "quiet"] {
        let p = pack::pack_padding_only(get(name));
        assert_eq!(p.best_size, p.size, "{name}");
    }
    // BTF cannot tell `struct pk __packed` inside a plain struct from a
    // packed struct whose `b` has an aligned(16) attribute; the type
    // database infers the latter, and under it 32 is already the best.
    let p = pack::pack_padding_only(get("uses_packed"));
    assert_eq!(p.best_size, 32);
}

#[test]
fn groups_markers_first_member_and_flexible_array_stay() {
    for name in expected().keys() {
        let agg = get(name);
        let p = pack::pack_padding_only(agg);
        pack::check(agg, &p).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (model, layout) = p.model_and_layout(agg, 64).expect("a packed layout");
        // The first member keeps offset 0.
        assert_eq!(layout.slots[0].offset, 0, "{name}");
        assert_eq!(model.fields[layout.slots[0].field].original_offset, Some(0));
        // Fixed pieces keep their order.
        let fixed: Vec<usize> = layout
            .slots
            .iter()
            .filter(|s| p.pieces[s.field].fixed)
            .map(|s| s.field)
            .collect();
        assert!(fixed.windows(2).all(|w| w[0] < w[1]), "{name}: {fixed:?}");
    }
    let offsets = |name: &str| -> HashMap<String, u64> {
        let agg = get(name);
        let p = pack::pack_padding_only(agg);
        let (model, layout) = p.model_and_layout(agg, 64).unwrap();
        layout
            .slots
            .iter()
            .map(|s| (model.fields[s.field].name.clone(), s.offset))
            .collect()
    };
    let padded = offsets("padded");
    assert_eq!(padded["_pad1_"], 64);
    assert!(padded["b"] < 64);
    assert!(["c", "d", "e", "f", "g", "h", "i", "j", "k"]
        .iter()
        .all(|f| padded[*f] >= 64));
    let grouped = offsets("grouped");
    assert_eq!(grouped["hot"], 64);
    assert!(grouped["b"] < 64 && grouped["c"] > 64);
    let flex = offsets("flex");
    assert_eq!(flex["data"], 16);
    let flags = offsets("flags");
    assert_eq!(flags["a:b:c"], 24);
}

/// C declaration of a member: `TYPE NAME[dims]`, `TYPE NAME:WIDTH`, with
/// its aligned attribute.
fn declaration(agg: &Aggregate, member: usize) -> String {
    let m = &agg.members[member];
    let (base, dims) = match m.ty.find('[') {
        Some(i) => (&m.ty[..i], &m.ty[i..]),
        None => (m.ty.as_str(), ""),
    };
    let mut d = format!("{base} {}{dims}", m.name);
    if let Some(w) = m.bit_size {
        d.push_str(&format!(":{w}"));
    }
    if let Some(a) = m.attr_align.filter(|&a| a > m.align) {
        d.push_str(&format!(" __attribute__((aligned({a})))"));
    }
    d
}

/// Writes every packed fixture struct back as C (members in their new
/// order, bitfields in their pool order) and lets gcc check sizes and
/// offsets with static assertions: the size is the best size, and no
/// member lands after the offset the packing gave it.
#[test]
fn gcc_lays_out_every_packed_fixture_at_its_best_size() {
    let mut c = format!(
        "#include <stddef.h>\n#include \"{}\"\n",
        fixture().display()
    );
    for name in expected().keys() {
        let agg = get(name);
        if agg.members.iter().any(|m| m.name.is_empty()) {
            continue; // anonymous members cannot be written from BTF
        }
        let p = pack::pack_padding_only(agg);
        let mut order: Vec<usize> = (0..p.pieces.len()).collect();
        order.sort_by_key(|&i| (p.offsets[i], p.pieces[i].size, i));
        let mut body = String::new();
        let mut asserts = String::new();
        for i in order {
            let members = match &p.pieces[i].kind {
                pack::PieceKind::Member(m) => vec![*m],
                pack::PieceKind::Bits(ms) => ms.clone(),
            };
            for m in members {
                body.push_str(&format!("\t{};\n", declaration(agg, m)));
                if !agg.members[m].is_bitfield() {
                    asserts.push_str(&format!(
                        "_Static_assert(offsetof(struct {name}_packed, {}) <= {}, \"{name}.{}\");\n",
                        agg.members[m].name, p.offsets[i], agg.members[m].name
                    ));
                }
            }
        }
        c.push_str(&format!(
            "struct {name}_packed {{\n{body}}};\n_Static_assert(sizeof(struct {name}_packed) == {}, \"{name} size\");\n{asserts}",
            p.best_size
        ));
    }
    let dir = work_dir();
    let file = dir.join("packed.c");
    std::fs::write(&file, c).unwrap();
    gcc(
        &[
            "-c",
            file.to_str().unwrap(),
            "-o",
            dir.join("packed.o").to_str().unwrap(),
        ],
        &dir,
    );
}

#[test]
fn types_give_classes() {
    let counters = infer::infer_model(db(), get("counters"));
    let class = |n: &str| {
        counters.fields[counters.field_index(n).unwrap()]
            .access
            .clone()
    };
    assert_eq!(class("hits"), Access::Lockless { group: None });
    assert_eq!(class("name"), Access::Cold);
    let quiet = infer::infer_model(db(), get("quiet"));
    let lock = quiet.fields[quiet.field_index("lock").unwrap()]
        .access
        .clone();
    assert_eq!(
        lock,
        Access::LockedWrite {
            lock: "lock".into()
        }
    );
    assert!(infer::has_lockless(db(), get("quiet")));
    assert!(!infer::has_lockless(db(), get("holes")));
}

#[test]
fn the_ranking_lists_an_atomic_among_plain_fields_only() {
    let ranked = scan::rank(db(), None, 64).unwrap();
    let names: Vec<&str> = ranked.iter().map(|r| r.exposure.name.as_str()).collect();
    assert_eq!(names, ["counters"]);
    let e = &ranked[0].exposure;
    assert_eq!(e.lockless, ["hits"]);
    // name 8 + limit 8 + flags 4 share the line with hits.
    assert_eq!((e.shared_bytes, e.read_mostly_bytes, e.lines), (20, 0, 1));
    assert_eq!(ranked[0].classes, scan::Classes::Inferred);
}

#[test]
fn an_access_file_overrides_the_inference() {
    let dir = work_dir();
    let path = dir.join("counters.toml");
    std::fs::write(
        &path,
        "[struct.counters]\nread_mostly = [\"name\", \"limit\"]\nlockless_atomic = [\"hits\"]\n",
    )
    .unwrap();
    let file = layout_core::access::load(&path).unwrap();
    let ranked = scan::rank(db(), Some(&file), 64).unwrap();
    assert_eq!(ranked.len(), 1);
    assert_eq!(ranked[0].classes, scan::Classes::AccessFile);
    assert_eq!(ranked[0].exposure.read_mostly_bytes, 16);

    std::fs::write(&path, "[struct.no_such_struct]\ncold = [\"x\"]\n").unwrap();
    let file = layout_core::access::load(&path).unwrap();
    let err = scan::rank(db(), Some(&file), 64).unwrap_err().to_string();
    assert!(
        err.contains("no_such_struct") && err.contains("counters.toml"),
        "{err}"
    );
}

#[test]
fn exposure_is_per_line_from_the_start() {
    let quiet = infer::infer_model(db(), get("quiet"));
    assert_eq!(rank::exposure(&quiet, get("quiet").size, 64), None);
    // With 128-byte lines `other` joins the counter's line.
    let e = rank::exposure(&quiet, get("quiet").size, 128).expect("shared at 128");
    assert_eq!(e.shared_bytes, 8);
}

/// The running kernel: every packing passes the checks, nothing grows, and
/// the scan of ~10k structs stays fast.
#[test]
fn the_kernel_scan_is_checked_and_never_grows() {
    if !Path::new(VMLINUX).exists() {
        eprintln!("skipped: {VMLINUX} is not there");
        return;
    }
    let db = layout_core::btf::load_btf(Path::new(VMLINUX)).unwrap();
    let found = scan::packable(&db);
    assert!(found.refused.is_empty(), "{:?}", found.refused);
    assert!(found.scanned > 1000);
    for p in &found.structs {
        assert!(p.best_size < p.agg.size);
        assert_eq!(p.best_size % p.agg.align.max(1), 0, "{}", p.agg.name);
    }
    // The ranking finds structs with atomics next to other data.
    let ranked = scan::rank(&db, None, 64).unwrap();
    assert!(!ranked.is_empty());
    assert!(ranked
        .windows(2)
        .all(|w| w[0].exposure.rank_key() <= w[1].exposure.rank_key()));
}
