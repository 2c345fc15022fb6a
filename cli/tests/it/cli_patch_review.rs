//! Issue 20, items 1-6: the patch a reviewer reads, on the real 6.1
//! headers of Debian's `linux-headers-amd64` (installed by `.ci/run`) read
//! with `--kbuild`.
//!
//! - Text stays with what it describes: blank lines, `#define`s and section
//!   comments keep their places in the body (the body's skeleton is the
//!   same before and after), a member's own comment moves with it, and the
//!   diff shows no blank line moving.
//! - checkpatch: `scripts/checkpatch.pl --no-tree --strict`, extracted at
//!   test time from `/usr/src/linux-source-6.1.tar.xz`, finds nothing on an
//!   added line that the original line did not already carry.
//! - Idioms: `--style groups` is refused on 6.1, which has no group
//!   markers; a plain C header gets `__attribute__((__aligned__(N)))` and
//!   compiles with plain gcc after the patch.
//! - A mail: `--format patch --signoff` is taken by `git am`.
//!
//! Each part is skipped with a message when what it needs is missing.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use support::*;

/// `cachelayout ARGS` in `dir` with its probe cache under `cache`.
fn run_cached(dir: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(dir)
        .env("XDG_CACHE_HOME", cache)
        .args(args)
        .output()
        .expect("the cachelayout binary runs")
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

/// The configured 6.1 tree, or `None` (with a message) when it, gcc or git
/// is missing.
fn kernel_tree() -> Option<PathBuf> {
    match kbuild_tree() {
        Some(t) if have("gcc") && have("git") && srctree(&t).join("include/linux").is_dir() => {
            Some(t)
        }
        _ => {
            println!(
                "SKIPPED: needs /usr/src/linux-headers-*-amd64 with its -common sibling \
                 (Debian's linux-headers-amd64, as .ci/run installs), gcc and git"
            );
            None
        }
    }
}

/// The structs of the issue: header, struct, access file.
fn cases() -> Vec<(&'static str, &'static str, String)> {
    let zone = std::fs::read_to_string(example("kernel/zone.toml")).unwrap();
    vec![
        (
            "include/linux/tcp.h",
            "tcp_sock",
            "[struct.tcp_sock]\n\
             read_mostly = [\"tcp_header_len\", \"gso_segs\", \"max_window\", \"mss_cache\", \"window_clamp\", \"advmss\", \"syn_smc\", \"is_mptcp\"]\n\
             lockless_atomic = [\"segs_in\", \"bytes_received\", \"smc_hs_congested\"]\n\
             [struct.tcp_sock.paths]\n\
             tx = [\"mss_cache\", \"gso_segs\", \"tcp_header_len\", \"syn_smc\"]\n\
             rx = [\"segs_in\", \"bytes_received\", \"window_clamp\", \"smc_hs_congested\"]\n"
                .to_string(),
        ),
        (
            "include/linux/netdevice.h",
            "net_device",
            "[struct.net_device]\n\
             read_mostly = [\"flags\", \"mtu\", \"netdev_ops\", \"header_ops\", \"core_stats\"]\n\
             lockless_atomic = [\"carrier_up_count\", \"carrier_down_count\"]\n\
             [struct.net_device.paths]\n\
             tx = [\"_tx\", \"num_tx_queues\", \"real_num_tx_queues\", \"qdisc\", \"xps_maps\", \"flags\", \"mtu\", \"netdev_ops\"]\n\
             rx = [\"dev_addr\", \"rx_handler\", \"rx_handler_data\", \"ingress_queue\", \"flags\", \"mtu\", \"gro_max_size\"]\n"
                .to_string(),
        ),
        (
            "include/net/netns/ipv4.h",
            "netns_ipv4",
            "[struct.netns_ipv4]\n\
             read_mostly = [\"fib_has_custom_local_routes\", \"fib_offload_disabled\", \"rules_ops\", \"fib_main\", \"sysctl_ip_default_ttl\"]\n\
             lockless_atomic = [\"fib_has_custom_rules\", \"fib_rules_require_fldissect\", \"dev_addr_genid\"]\n\
             [struct.netns_ipv4.paths]\n\
             tx = [\"fib_main\", \"fib_default\", \"sysctl_ip_default_ttl\"]\n\
             rx = [\"rules_ops\", \"fib_has_custom_local_routes\", \"fib_offload_disabled\"]\n"
                .to_string(),
        ),
        (
            "include/linux/mmzone.h",
            "zone",
            format!(
                "{zone}\n[struct.zone.paths]\n\
                 alloc = [\"_watermark\", \"watermark_boost\", \"zone_pgdat\", \"lock\", \"free_area\", \"vm_stat\"]\n\
                 compact = [\"compact_cached_free_pfn\", \"compact_cached_migrate_pfn\", \"zone_start_pfn\", \"spanned_pages\"]\n"
            ),
        ),
        (
            "include/linux/mmzone.h",
            "lru_gen_struct",
            "[struct.lru_gen_struct]\n\
             read_mostly = [\"max_seq\", \"min_seq\", \"timestamps\", \"enabled\"]\n\
             lockless_atomic = [\"evicted\", \"refaulted\"]\n\
             locked_write.lru_lock = [\"folios\", \"nr_pages\", \"avg_refaulted\", \"avg_total\", \"protected\"]\n\
             [struct.lru_gen_struct.paths]\n\
             evict = [\"min_seq\", \"folios\", \"nr_pages\", \"evicted\"]\n\
             add = [\"enabled\", \"max_seq\", \"folios\"]\n"
                .to_string(),
        ),
    ]
}

const MODES: [(&str, &[&str]); 3] = [
    ("default", &[]),
    ("min-diff", &["--objective", "min-diff"]),
    ("regroup", &["--regroup", "--objective", "hot-lines"]),
];

/// A copy of `header` from the tree's sources under a new directory.
fn copy_of(tree: &Path, header: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join(header);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(srctree(tree).join(header), to).unwrap();
    dir
}

/// `propose HEADER --struct NAME --kbuild TREE --access ACCESS ARGS` in `dir`.
fn propose(
    dir: &Path,
    cache: &Path,
    tree: &Path,
    (header, name, access): (&str, &str, &Path),
    args: &[&str],
) -> Output {
    let base = [
        "propose",
        header,
        "--struct",
        name,
        "--kbuild",
        tree.to_str().unwrap(),
        "--access",
        access.to_str().unwrap(),
    ];
    run_cached(dir, cache, &[&base[..], args].concat())
}

// ---- The body's skeleton (item 1) ----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Blank,
    Define,
    Section,
    Member,
}

/// The body of `struct NAME { ... }` as lines.
fn body_lines<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("struct {name} {{");
    let start = text
        .lines()
        .position(|l| l.starts_with(&open))
        .unwrap_or_else(|| panic!("struct {name} in the header"));
    text.lines()
        .skip(start + 1)
        .take_while(|l| !l.starts_with("}"))
        .collect()
}

fn is_directive(l: &str) -> bool {
    l.trim_start().starts_with('#')
}

/// A line without its comments (a comment's continuation line is empty).
fn code_of(l: &str) -> String {
    let t = l.trim_start();
    if t.starts_with('*') || t.starts_with("/*") && !t.contains("*/") {
        return String::new();
    }
    let mut code = String::new();
    let mut rest = t;
    while let Some(open) = rest.find("/*") {
        code.push_str(&rest[..open]);
        rest = rest[open..]
            .find("*/")
            .map_or("", |c| &rest[open + c + 2..]);
    }
    code.push_str(rest.split("//").next().unwrap_or(""));
    code
}

/// Declarations a code line ends (`;` outside comments).
fn semicolons(l: &str) -> usize {
    code_of(l).matches(';').count()
}

/// Each body line's kind, read independently of the emitter: a section
/// comment opens a paragraph (blank line, directive or the body's start
/// before it) and is followed by another comment or by a paragraph of two
/// or more declarations; lines inside `#if` blocks belong to the block.
fn classify(lines: &[&str], known: Option<&[String]>) -> Vec<Kind> {
    let mut kinds = vec![Kind::Member; lines.len()];
    // Lines inside a nested struct or union belong to its member.
    let mut braces = 0i32;
    // (inside a nested body before the line, depth after it)
    let braces_at: Vec<(bool, i32)> = lines
        .iter()
        .map(|l| {
            let inside = braces > 0;
            let code = code_of(l);
            braces += code.matches('{').count() as i32 - code.matches('}').count() as i32;
            (inside, braces)
        })
        .collect();
    let nested: Vec<bool> = braces_at.iter().map(|d| d.0).collect();
    let mut depth = 0i32;
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim();
        if nested[i] {
            i += 1;
            continue;
        }
        if t.starts_with("#if") {
            depth += 1;
        } else if t.starts_with("#endif") {
            depth -= 1;
        }
        if depth > 0 || t.starts_with("#endif") {
            i += 1;
            continue;
        }
        if t.is_empty() {
            kinds[i] = Kind::Blank;
        } else if t.starts_with("#define") {
            kinds[i] = Kind::Define;
            while lines[i].trim_end().ends_with('\\') && i + 1 < lines.len() {
                i += 1;
                kinds[i] = Kind::Define;
            }
        } else if t.starts_with("/*") || t.starts_with("//") {
            let opens = i == 0 || lines[i - 1].trim().is_empty() || is_directive(lines[i - 1]);
            let mut end = i;
            if t.starts_with("/*") {
                while !lines[end].contains("*/") && end + 1 < lines.len() {
                    end += 1;
                }
            }
            let next = lines.get(end + 1).map_or("", |l| l.trim());
            let another_comment = next.starts_with("/*") || next.starts_with("//");
            // Top-level declarations: a nested body counts once.
            let decls: usize = (end + 1..lines.len())
                .take_while(|&k| {
                    !lines[k].trim().is_empty() && (braces_at[k].0 || !is_directive(lines[k]))
                })
                .filter(|&k| braces_at[k].1 == 0)
                .map(|k| semicolons(lines[k]))
                .sum();
            let section = match known {
                // The patched text: the section comments of the original,
                // by their text (what follows them may differ now).
                Some(known) => lines[i..=end]
                    .iter()
                    .all(|l| known.iter().any(|k| k == l.trim_end())),
                None => opens && (another_comment || decls >= 2),
            };
            if section {
                for k in &mut kinds[i..=end] {
                    *k = Kind::Section;
                }
            }
            i = end;
        }
        i += 1;
    }
    kinds
}

/// The anchored lines in order, each run of member lines as one `M`.
fn skeleton(lines: &[&str], known: Option<&[String]>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (l, k) in lines.iter().zip(classify(lines, known)) {
        match k {
            Kind::Member if out.last().is_some_and(|m| m == "M") => {}
            Kind::Member => out.push("M".into()),
            Kind::Blank => out.push(String::new()),
            Kind::Define | Kind::Section => out.push(l.trim_end().to_string()),
        }
    }
    out
}

/// Each top-level own comment (a comment that is no section comment) with
/// the line right after it.
fn own_comments(lines: &[&str]) -> Vec<(String, String)> {
    let kinds = classify(lines, None);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        if kinds[i] == Kind::Member && (t.starts_with("/*") || t.starts_with("//")) {
            let mut end = i;
            while !lines[end].contains("*/") && !t.starts_with("//") && end + 1 < lines.len() {
                end += 1;
            }
            if let Some(next) = lines.get(end + 1) {
                if !next.trim().is_empty() && !is_directive(next) {
                    out.push((lines[i..=end].join("\n"), next.to_string()));
                }
            }
            i = end;
        }
        i += 1;
    }
    out
}

/// `(+ lines, - lines, + blank lines, - blank lines)` of a diff.
fn counts(diff: &str) -> (usize, usize, usize, usize) {
    let mut c = (0, 0, 0, 0);
    for l in diff.lines() {
        if l.starts_with("+++") || l.starts_with("---") {
            continue;
        }
        if let Some(rest) = l.strip_prefix('+') {
            c.0 += 1;
            c.2 += usize::from(rest.trim().is_empty());
        } else if let Some(rest) = l.strip_prefix('-') {
            c.1 += 1;
            c.3 += usize::from(rest.trim().is_empty());
        }
    }
    c
}

fn apply_check(dir: &Path, diff: &str, what: &str) {
    std::fs::write(dir.join("check.patch"), diff).unwrap();
    let out = Command::new("git")
        .current_dir(dir)
        .args(["apply", "--check", "check.patch"])
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "{what}: git apply --check: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_file(dir.join("check.patch")).unwrap();
}

/// tcp_sock and net_device, default proposal: the body's skeleton (blank
/// lines, `#define`s, section comments, runs of members) is the same before
/// and after, every own comment still sits right above its member, and the
/// diff adds and removes no blank line.
#[test]
fn comments_defines_and_blank_lines_stay_where_they_are() {
    let Some(tree) = kernel_tree() else { return };
    let cache = tempfile::tempdir().unwrap();
    let access_dir = tempfile::tempdir().unwrap();
    for (header, name, access) in cases().into_iter().take(2) {
        let a = access_dir.path().join(format!("{name}.toml"));
        std::fs::write(&a, &access).unwrap();
        let copy = copy_of(&tree, header);
        let c = copy.path();
        let out = propose(c, cache.path(), &tree, (header, name, &a), &[]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let diff = stdout(&out);
        assert!(!diff.is_empty(), "struct {name}: a change to write");
        let original = std::fs::read_to_string(c.join(header)).unwrap();
        apply_p1(c, &diff, name);
        let patched = std::fs::read_to_string(c.join(header)).unwrap();
        let (old, new) = (body_lines(&original, name), body_lines(&patched, name));
        let sections: Vec<String> = old
            .iter()
            .zip(classify(&old, None))
            .filter(|(_, k)| *k == Kind::Section)
            .map(|(l, _)| l.trim_end().to_string())
            .collect();
        let old_skeleton = skeleton(&old, None);
        let new_skeleton = skeleton(&new, Some(&sections));
        let anchored = old_skeleton.iter().filter(|l| *l != "M").count();
        assert!(
            old_skeleton.iter().any(|l| l.starts_with("#define")) || name != "net_device",
            "net_device has #defines in its body"
        );
        if let Some(k) = (0..old_skeleton.len().max(new_skeleton.len()))
            .find(|&k| old_skeleton.get(k) != new_skeleton.get(k))
        {
            let around = |v: &[String]| v[k.saturating_sub(3)..(k + 4).min(v.len())].to_vec();
            panic!(
                "struct {name}: blank lines, #defines and section comments keep their places; \
                 first difference at {k}:\nbefore {:?}\nafter  {:?}",
                around(&old_skeleton),
                around(&new_skeleton)
            );
        }
        let own = own_comments(&old);
        assert!(
            !own.is_empty(),
            "struct {name} has comments of its own members"
        );
        let joined = new.join("\n");
        for (comment, member) in &own {
            assert!(
                joined.contains(&format!("{comment}\n{member}")),
                "struct {name}: `{comment}` no longer above `{member}`"
            );
        }
        let (plus, minus, blank_plus, blank_minus) = counts(&diff);
        assert_eq!(
            (blank_plus, blank_minus),
            (0, 0),
            "struct {name}: no blank line moves:\n{diff}"
        );
        println!(
            "struct {name}: +{plus} -{minus}, 0 blank lines moved, {anchored} anchored lines \
             and {} own comments in place",
            own.len()
        );
    }
}

// ---- checkpatch (item 6) ----

/// `scripts/checkpatch.pl` of Debian's linux-source-6.1 (extracted once for
/// every test of the binary, `support::kernel_source`).
fn checkpatch() -> Option<&'static Path> {
    static SCRIPT: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
    let found = SCRIPT.get_or_init(|| {
        let script = crate::support::kernel_source()?.join("scripts/checkpatch.pl");
        (have("perl") && script.is_file()).then_some(script)
    });
    if found.is_none() {
        println!(
            "SKIPPED: no /usr/src/linux-source-6.1.tar.xz (Debian's linux-source-6.1, as \
             .ci/run installs), no linux-headers-amd64 or no perl"
        );
    }
    found.as_deref()
}

/// checkpatch's findings on `args`: (line, type).
fn findings(checkpatch: &Path, args: &[&Path]) -> Vec<(usize, String)> {
    let out = Command::new("perl")
        .arg(checkpatch)
        .args([
            "--no-tree",
            "--strict",
            "--terse",
            "--no-summary",
            "--show-types",
        ])
        .args(args)
        .output()
        .expect("perl runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(4, ':');
            let (_file, line, _level) = (parts.next()?, parts.next()?, parts.next()?);
            let ty = parts.next()?.split(':').next()?.to_string();
            Some((line.trim().parse().ok()?, ty))
        })
        .collect()
}

/// The findings on the added lines of `patch` that the same text did not
/// already carry in the original header (`original_findings`, from
/// [`file_findings`]): (carried, new ones).
fn new_findings(
    checkpatch: &Path,
    original_findings: &[(String, String)],
    patch: &Path,
) -> (usize, Vec<String>) {
    let text = std::fs::read_to_string(patch).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut carried = 0;
    let mut new = Vec::new();
    for (n, ty) in findings(checkpatch, &[patch]) {
        let Some(line) = lines.get(n.wrapping_sub(1)) else {
            continue;
        };
        let Some(added) = line.strip_prefix('+').filter(|_| !line.starts_with("+++")) else {
            continue;
        };
        if original_findings
            .iter()
            .any(|(t, l)| *t == ty && l == added.trim_end())
        {
            carried += 1;
        } else {
            new.push(format!("{ty}: {line}"));
        }
    }
    (carried, new)
}

fn file_findings(checkpatch: &Path, file: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    findings(checkpatch, &[Path::new("-f"), file])
        .into_iter()
        .filter_map(|(n, ty)| Some((ty, lines.get(n.wrapping_sub(1))?.trim_end().to_string())))
        .collect()
}

/// The patches for the five structs, default, min-diff and `--regroup
/// --objective hot-lines`: each applies (`git apply --check`) and adds no
/// checkpatch finding the original lines did not carry.
#[test]
fn generated_patches_apply_and_add_no_checkpatch_finding() {
    let Some(tree) = kernel_tree() else { return };
    let Some(checkpatch) = checkpatch() else {
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let access_dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (header, name, access) in cases() {
        let a = access_dir.path().join(format!("{name}.toml"));
        std::fs::write(&a, &access).unwrap();
        let copy = copy_of(&tree, header);
        let c = copy.path();
        let original = file_findings(checkpatch, &c.join(header));
        for (mode, args) in MODES {
            let out = propose(c, cache.path(), &tree, (header, name, &a), args);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{name} {mode}: {}",
                stderr(&out)
            );
            let diff = stdout(&out);
            if diff.is_empty() {
                println!("struct {name}, {mode}: nothing to change");
                continue;
            }
            apply_check(c, &diff, &format!("struct {name}, {mode}"));
            let patch = c.join(format!("{name}.{mode}.patch"));
            std::fs::write(&patch, &diff).unwrap();
            let (carried, new) = new_findings(checkpatch, &original, &patch);
            let (plus, minus, bp, bm) = counts(&diff);
            println!(
                "struct {name}, {mode}: +{plus} -{minus}, blank lines +{bp} -{bm}, checkpatch \
                 findings on added lines: {carried} carried from the original, {} new",
                new.len()
            );
            if !new.is_empty() {
                failures.push(format!("struct {name}, {mode}:\n  {}", new.join("\n  ")));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---- Idioms (item 3) ----

/// 6.1 defines no `__cacheline_group_begin`: `--style groups` is refused
/// with the macros it would need, before anything is written.
#[test]
fn groups_style_is_refused_where_the_tree_has_no_group_markers() {
    let Some(tree) = kernel_tree() else { return };
    let cache = tempfile::tempdir().unwrap();
    let access_dir = tempfile::tempdir().unwrap();
    let (header, name, access) = cases().swap_remove(1);
    let a = access_dir.path().join("net_device.toml");
    std::fs::write(&a, &access).unwrap();
    let copy = copy_of(&tree, header);
    let out = propose(
        copy.path(),
        cache.path(),
        &tree,
        (header, name, &a),
        &["--style", "groups"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("__cacheline_group_begin") && err.contains("does not define"),
        "{err}"
    );
    assert!(err.contains("--style aligned"), "{err}");
    assert!(stdout(&out).is_empty());
}

/// A plain C header (no kernel include, no kernel macro) with lines to
/// break: the diff spells the breaks in GNU C, and plain gcc compiles the
/// patched header to the proposed offsets.
#[test]
fn a_plain_c_header_gets_gnu_attributes_and_compiles_with_plain_gcc() {
    if !have("gcc") {
        println!("SKIPPED: needs gcc");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The first member is line-aligned, so the struct is: the lines the
    // layout needs are breaks, not padding.
    let header = "typedef unsigned char u8;\n\
                  typedef struct { long v; } __attribute__((aligned(64))) head_t;\n\
                  struct stats {\n\
                  \thead_t head;\n\
                  \tunsigned long hits;\n\
                  \tunsigned long limit;\n\
                  \tu8 flags;\n\
                  \tunsigned long misses;\n\
                  \tunsigned long mask;\n\
                  };\n";
    std::fs::write(d.join("stats.h"), header).unwrap();
    std::fs::write(
        d.join("stats.toml"),
        "[struct.stats]\nread_mostly = [\"limit\", \"mask\", \"flags\"]\n\
         lockless_atomic = [\"hits\", \"misses\"]\n",
    )
    .unwrap();
    let args = [
        "propose",
        "stats.h",
        "--struct",
        "stats",
        "--access",
        "stats.toml",
    ];
    let out = run_in(d, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let diff = stdout(&out);
    assert!(
        diff.contains("__attribute__((__aligned__(64)))"),
        "a GNU C attribute:\n{diff}"
    );
    assert!(
        !diff.contains("____cacheline_aligned_in_smp") && !diff.contains("__aligned("),
        "no kernel macro in a plain C header:\n{diff}"
    );
    let unsigned = run_in(d, &[&args[..], &["--signoff"]].concat());
    assert_eq!(
        unsigned.status.code(),
        Some(2),
        "--signoff needs --format patch"
    );
    assert!(
        stderr(&unsigned).contains("--format patch"),
        "{}",
        stderr(&unsigned)
    );
    let json = json(&run_in(d, &[&args[..], &["--format", "json"]].concat()));
    apply_p1(d, &diff, "stats.h");
    let mut prog =
        "#include <stdio.h>\n#include <stddef.h>\n#include \"stats.h\"\nint main(void) {\n"
            .to_string();
    let want = field_offsets(&json["after"]);
    for (name, _) in &want {
        prog.push_str(&format!(
            "\tprintf(\"{name} %zu\\n\", offsetof(struct stats, {name}));\n"
        ));
    }
    prog.push_str("\tprintf(\"size %zu\\n\", sizeof(struct stats));\n\treturn 0;\n}\n");
    let got = gcc_run(d, &prog);
    for (name, offset) in &want {
        assert!(
            got.lines().any(|l| l == format!("{name} {offset}")),
            "{name} at {offset}: {got}"
        );
    }
    assert!(
        got.contains(&format!("size {}", json["after"]["size"])),
        "{got}"
    );
}

// ---- A mail (item 4) ----

/// `--format patch --signoff` on a copy of tcp.h in a scratch git
/// repository (the header named by its absolute path): `git am` takes the
/// mail, the commit has the subject, the changelog and the sign-off, the
/// paths are relative to the repository, and checkpatch finds nothing in
/// the mail that the original lines did not carry.
#[test]
fn the_patch_mail_is_taken_by_git_am() {
    let Some(tree) = kernel_tree() else { return };
    let cache = tempfile::tempdir().unwrap();
    let access_dir = tempfile::tempdir().unwrap();
    let (header, name, access) = cases().swap_remove(0);
    let a = access_dir.path().join("tcp_sock.toml");
    std::fs::write(&a, &access).unwrap();
    let repo = copy_of(&tree, header);
    let r = repo.path();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .current_dir(r)
            .args(args)
            .env("GIT_AUTHOR_DATE", "1796144186 +0000")
            .env("GIT_COMMITTER_DATE", "1796144186 +0000")
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q"]);
    git(&["config", "user.name", "Ada Reviewer"]);
    git(&["config", "user.email", "ada@example.org"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "tcp.h as in 6.1"]);
    let absolute = r.join(header);
    let out = Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(access_dir.path())
        .env("XDG_CACHE_HOME", cache.path())
        .env("GIT_AUTHOR_DATE", "1796144186 +0000")
        .args([
            "propose",
            absolute.to_str().unwrap(),
            "--struct",
            name,
            "--kbuild",
            tree.to_str().unwrap(),
            "--access",
            a.to_str().unwrap(),
            "--format",
            "patch",
            "--signoff",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mail = stdout(&out);
    assert!(
        mail.starts_with("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nFrom: Ada Reviewer <ada@example.org>\nDate: Tue, 1 Dec 2026 16:56:26 +0000\nSubject: [PATCH] tcp: reorder struct tcp_sock "),
        "{mail}"
    );
    assert!(mail.contains("\ndiff --git a/include/linux/tcp.h b/include/linux/tcp.h\n--- a/include/linux/tcp.h\n+++ b/include/linux/tcp.h\n"), "{mail}");
    assert!(!mail.contains("a//"), "no absolute path after a/");
    assert!(mail.contains(" include/linux/tcp.h | "), "a diffstat");
    let mail_file = access_dir.path().join("tcp_sock.mail");
    std::fs::write(&mail_file, &mail).unwrap();
    git(&["am", mail_file.to_str().unwrap()]);
    let log = git(&["log", "-1", "--format=%an <%ae>%n%s%n%b"]);
    assert!(
        log.starts_with("Ada Reviewer <ada@example.org>\ntcp: reorder struct tcp_sock "),
        "{log}"
    );
    assert!(
        log.contains("Signed-off-by: Ada Reviewer <ada@example.org>"),
        "{log}"
    );
    assert!(
        log.contains("Before:") && log.contains("After:"),
        "the changelog: {log}"
    );
    let changed = git(&["show", "--stat", "--format="]);
    assert!(changed.contains("include/linux/tcp.h"), "{changed}");
    if let Some(checkpatch) = checkpatch() {
        git(&["checkout", "-q", "HEAD~1"]);
        let original = file_findings(checkpatch, &r.join(header));
        let patch = mail_file;
        let (carried, new) = new_findings(checkpatch, &original, &patch);
        let whole: Vec<String> = findings(checkpatch, &[&patch])
            .into_iter()
            .map(|(_, ty)| ty)
            .filter(|ty| {
                [
                    "COMMIT_MESSAGE",
                    "MISSING_SIGN_OFF",
                    "FROM_SIGN_OFF_MISMATCH",
                    "COMMIT_LOG_LONG_LINE",
                ]
                .contains(&ty.as_str())
            })
            .collect();
        assert!(whole.is_empty(), "the mail itself: {whole:?}");
        assert!(new.is_empty(), "{new:?}");
        println!("tcp_sock mail: git am takes it; checkpatch: {carried} findings carried, 0 new");
    }
}
