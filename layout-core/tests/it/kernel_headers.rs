//! The C front-end on every struct of a real kernel include tree: Debian's
//! `linux-headers-amd64` (installed by `.ci/run`), configured with the
//! build's own `.config`. Each struct gives a layout or a located error
//! (file:line) that names the missing type or constant; nothing panics.
//! The counts are printed (`cargo test -p layout-core --test it kernel_headers:: -- --nocapture`)
//! and the success ratio has a floor so that regressions fail.
//!
//! Skipped with a message when the headers are not installed.

#![cfg(feature = "c-header")]

use layout_core::c::{load_header, load_kernel_config, parse_header, Defines, TypeTable};
use layout_core::Diagnostic;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The share of structs that must lay out (measured: see the printout).
const MIN_OK_RATIO: f64 = 0.85;

/// `(common tree, arch build tree)`: the `-common` package holds the
/// headers, the `-amd64` one the `.config`.
fn installed() -> Option<(PathBuf, PathBuf)> {
    let mut common: Vec<PathBuf> = std::fs::read_dir("/usr/src")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("linux-headers-") && n.ends_with("-common"))
        })
        .collect();
    common.sort();
    let common = common.pop()?;
    let name = common.file_name()?.to_str()?.to_string();
    let build = PathBuf::from("/usr/src").join(name.replace("-common", "-amd64"));
    Some((common, build))
}

fn headers_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            headers_under(&p, out);
        } else if p.extension().is_some_and(|e| e == "h") {
            out.push(p);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Cause {
    MissingType,
    MissingConstant,
    Parse,
    Other,
}

fn cause(d: &Diagnostic) -> Cause {
    let m = d.message.as_str();
    if m.contains("unknown type") {
        Cause::MissingType
    } else if m.contains("is not defined") {
        Cause::MissingConstant
    } else if m.starts_with("syntax error")
        || m.starts_with("cannot read")
        || m.starts_with("cannot lay out type")
        || m.contains("cannot use")
    {
        Cause::Parse
    } else {
        Cause::Other
    }
}

#[derive(Default)]
struct Counts {
    files: usize,
    files_failed: usize,
    ok: usize,
    errors: BTreeMap<Cause, usize>,
    /// message (with names) -> count, for the printout
    top: BTreeMap<String, usize>,
    examples: BTreeMap<Cause, Vec<String>>,
}

impl Counts {
    fn error(&mut self, d: &Diagnostic) {
        let c = cause(d);
        *self.errors.entry(c).or_default() += 1;
        *self.top.entry(d.message.clone()).or_default() += 1;
        let ex = self.examples.entry(c).or_default();
        if ex.len() < 8 {
            ex.push(d.to_string());
        }
    }

    fn structs(&self) -> usize {
        self.ok + self.errors.values().sum::<usize>()
    }
}

/// The fast suite walks every 6th header (sorted by path).
const SAMPLE_EVERY: usize = 6;

#[test]
fn every_struct_of_the_installed_kernel_headers_lays_out_or_says_what_is_missing() {
    let Some((common, build)) = installed() else {
        println!(
            "SKIPPED: no /usr/src/linux-headers-*-common (install Debian's linux-headers-amd64, as .ci/run does)"
        );
        return;
    };
    let defines = match load_kernel_config(&build.join(".config")) {
        Ok(d) => d,
        Err(e) => {
            println!("no build .config ({e}); using only __KERNEL__");
            [("__KERNEL__", 1)].into_iter().collect::<Defines>()
        }
    };
    let types = TypeTable::default();
    let mut files = Vec::new();
    headers_under(&common.join("include"), &mut files);
    headers_under(&common.join("arch/x86/include"), &mut files);
    files.sort();
    let files = crate::support::sweep::sample(files, SAMPLE_EVERY);
    println!("headers: {}", crate::support::sweep::describe(SAMPLE_EVERY));
    let started = std::time::Instant::now();
    let mut n = Counts::default();
    for path in &files {
        n.files += 1;
        let Ok(text) = std::fs::read_to_string(path) else {
            n.files_failed += 1;
            continue;
        };
        let rel = path.strip_prefix(&common).unwrap_or(path);
        let header = match parse_header(rel, &text, &defines, &types) {
            Ok(h) => h,
            Err(e) => {
                assert!(
                    e.file.is_some() && e.line > 0,
                    "a header error without file:line: {e}"
                );
                n.files_failed += 1;
                n.error(&e);
                continue;
            }
        };
        for name in header.struct_names() {
            match header.find_struct(&name) {
                Ok(c) => {
                    // The declared layout keeps its own segments (the
                    // author's groups, paddings, markers, first member).
                    let declared = layout_core::Layout::declared(
                        &c.model,
                        c.size,
                        c.align,
                        64,
                        layout_core::Placement::Aligned,
                    )
                    .expect("every field has an offset");
                    if let Err(e) = layout_core::verify::check_structure(&c.model, &declared) {
                        panic!("struct {name} in {}: {e}", rel.display());
                    }
                    n.ok += 1
                }
                Err(e) => {
                    assert!(
                        e.file.as_deref() == Some(rel) && e.line > 0,
                        "struct {name} in {}: an error without file:line: {e}",
                        rel.display()
                    );
                    n.error(&e);
                }
            }
        }
    }
    let structs = n.structs();
    let ratio = n.ok as f64 / structs.max(1) as f64;
    println!(
        "{} files ({} not parsed), {} structs: {} laid out ({:.1}%), errors {:?}, in {:.1} s",
        n.files,
        n.files_failed,
        structs,
        n.ok,
        ratio * 100.0,
        n.errors,
        started.elapsed().as_secs_f64()
    );
    let mut top: Vec<(&String, &usize)> = n.top.iter().collect();
    top.sort_by(|a, b| b.1.cmp(a.1));
    for (m, c) in top.iter().take(
        std::env::var("KH_TOP")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(40),
    ) {
        println!("{c:6}  {m}");
    }
    for (c, ex) in &n.examples {
        println!("{c:?}:");
        for e in ex {
            println!("    {e}");
        }
    }
    let floor = if crate::support::sweep::full() {
        1000
    } else {
        1000 / SAMPLE_EVERY
    };
    assert!(structs > floor, "too few structs found: {structs}");
    // A sample's share strays from the whole walk's (85.5%, headers of one
    // file go together): two points of slack for it.
    let min_ok = if crate::support::sweep::full() {
        MIN_OK_RATIO
    } else {
        MIN_OK_RATIO - 0.02
    };
    assert!(
        ratio >= min_ok,
        "only {:.1}% of the structs laid out (floor {:.1}%)",
        ratio * 100.0,
        min_ok * 100.0
    );
}

/// Layouts of real structs that exercise the kernel idioms, with the
/// Debian build's .config (and MAX_NR_ZONES from its generated bounds.h);
/// sizes as gcc gives them for that configuration.
#[test]
fn known_structs_of_the_installed_headers() {
    let Some((common, build)) = installed() else {
        println!("SKIPPED: no /usr/src/linux-headers-*-common");
        return;
    };
    let Ok(mut defines) = load_kernel_config(&build.join(".config")) else {
        println!("SKIPPED: no {}/.config", build.display());
        return;
    };
    defines.insert("MAX_NR_ZONES", 5);
    let types = TypeTable::default();
    for (file, name, size, align, fields) in [
        // __struct_group(, addrs, , saddr; daddr;): one field `addrs`.
        ("include/uapi/linux/ip.h", "iphdr", 20, 4, None),
        ("include/uapi/linux/ipv6.h", "ipv6hdr", 40, 4, Some(6)),
        // DECLARE_BITMAP(bits, NR_CPUS) with CONFIG_NR_CPUS=8192.
        ("include/linux/cpumask.h", "cpumask", 1024, 8, Some(1)),
        // A union of a struct and DECLARE_FLEX_ARRAY(void *, ptr).
        ("include/net/netns/generic.h", "net_generic", 24, 8, Some(1)),
        // #pragma pack(1) around the LACP structures.
        ("include/net/bond_3ad.h", "lacpdu", 110, 1, None),
        // CACHELINE_PADDING() twice (zero-size fields `_pad1_`, `_pad2_`),
        // ____cacheline_internodealigned_in_smp.
        (
            "include/linux/page_counter.h",
            "page_counter",
            192,
            64,
            Some(16),
        ),
        // #ifdef CONFIG_* in the body, enums sized by the configuration
        // (MIGRATE_TYPES, NR_VM_ZONE_STAT_ITEMS with CONFIG_ZSMALLOC=m),
        // three CACHELINE_PADDING()s (zero-size fields); the #error at the end of mmzone.h
        // (reached because SECTION_SIZE_BITS comes from another header)
        // does not stop it.
        ("include/linux/mmzone.h", "zone", 1536, 64, Some(37)),
    ] {
        let h = load_header(&common.join(file), &defines, &types)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let s = h
            .find_struct(name)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((s.size, s.align), (size, align), "struct {name} of {file}");
        if let Some(n) = fields {
            assert_eq!(
                s.model.fields.len(),
                n,
                "struct {name}: {:?}",
                s.model.fields
            );
        }
    }
}
