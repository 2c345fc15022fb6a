//! Helpers shared by the CLI integration tests: run the binary, compile C with
//! gcc, read JSON layouts.

#![allow(dead_code)]

#[path = "../../../../layout-core/tests/it/support/break_oracles.rs"]
pub mod break_oracles;
#[path = "../../../../layout-core/tests/it/support/sweep.rs"]
pub mod sweep;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository's root (the CLI package is its `cli/` directory).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the cli package lies inside the repository")
        .to_path_buf()
}

pub fn example(rel: &str) -> PathBuf {
    repo().join("examples").join(rel)
}

/// The probe cache of this test process (`XDG_CACHE_HOME` of every run
/// that names no cache of its own): empty when the process starts, so a
/// run never reads or fills the user's `~/.cache`, and every run of the
/// suite starts cold, as on a fresh machine.
pub fn process_cache() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// Run `cachelayout ARGS` in `dir`.
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cachelayout"))
        .current_dir(dir)
        .env("XDG_CACHE_HOME", process_cache())
        .args(args)
        .output()
        .expect("the cachelayout binary runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            stdout(o),
            stderr(o)
        )
    })
}

/// The members of hot root `root`'s path in an infer JSON report
/// (`paths[].members`), empty when the report has no such path.
pub fn path_members<'a>(j: &'a serde_json::Value, root: &str) -> Vec<&'a str> {
    j["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["root"] == root)
        .map(|p| {
            p["members"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m.as_str().unwrap())
                .collect()
        })
        .unwrap_or_default()
}

/// `(name, offset)` of every field of a JSON layout object, in its order.
pub fn field_offsets(layout: &serde_json::Value) -> Vec<(String, u64)> {
    layout["fields"]
        .as_array()
        .expect("fields is an array")
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["offset"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Compile and run a C program in `dir`; returns its stdout.
pub fn gcc_run(dir: &Path, source: &str) -> String {
    let c = dir.join("oracle.c");
    std::fs::write(&c, source).unwrap();
    let exe = dir.join("oracle");
    let out = Command::new("gcc")
        .arg("-std=gnu11")
        .arg("-I")
        .arg(dir)
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("gcc runs");
    assert!(
        out.status.success(),
        "gcc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success());
    String::from_utf8_lossy(&run.stdout).into_owned()
}

/// `/usr/src/linux-headers-*-amd64` (the newest), the configured build tree
/// of Debian's `linux-headers-amd64`, which `.ci/run` installs.
pub fn kbuild_tree() -> Option<PathBuf> {
    let mut trees: Vec<PathBuf> = std::fs::read_dir("/usr/src")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("linux-headers-") && !n.ends_with("-common"))
        })
        .filter(|p| p.join(".config").is_file())
        .collect();
    trees.sort();
    trees.pop()
}

/// Debian's 6.1 headers as `linux-headers-amd64` installs them: the
/// configured build tree `/usr/src/linux-headers-6.1.0-N-amd64` and the
/// headers' sources `/usr/src/linux-headers-6.1.0-N-common` it points to,
/// for the newest ABI number `N` that has both (the number moves with
/// Debian's point releases; the tests take whichever is installed).
pub fn debian_61_headers() -> Option<(PathBuf, PathBuf)> {
    let abi = |name: &str| -> Option<u32> {
        name.strip_prefix("linux-headers-6.1.0-")?
            .strip_suffix("-amd64")?
            .parse()
            .ok()
    };
    let newest = std::fs::read_dir("/usr/src")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| abi(&n))
        .filter(|n| {
            let src = Path::new("/usr/src");
            src.join(format!("linux-headers-6.1.0-{n}-amd64/.config"))
                .is_file()
                && src.join(format!("linux-headers-6.1.0-{n}-common")).is_dir()
        })
        .max()?;
    Some((
        PathBuf::from(format!("/usr/src/linux-headers-6.1.0-{newest}-amd64")),
        PathBuf::from(format!("/usr/src/linux-headers-6.1.0-{newest}-common")),
    ))
}

/// Where Debian's linux-source-6.1 package puts the kernel's sources.
pub const KERNEL_TARBALL: &str = "/usr/src/linux-source-6.1.tar.xz";

/// Every file of the 6.1 source tarball the tests read (paths under the
/// tree's root, `*` matching within the path): `xz` decompresses the whole
/// archive to find any of them, so they are extracted together, once.
/// infer_sources: mm/ (the headers and the C files of its structs);
/// infer_net: net/ipv4 and net/core (the TCP, IP, device and qdisc paths,
/// af_inet.c's packet type);
/// cli_tree_safety: the BPF builders, skbuff.c, sock.c, tcp_cubic.c and a
/// uapi header; audit: mm/ and the two headers it patches;
/// cli_patch_review and audit: checkpatch.pl and its data files.
const KERNEL_SOURCE_MEMBERS: &[&str] = &[
    "mm/*.h",
    "mm/swap.c",
    "mm/page_counter.c",
    "mm/memcontrol.c",
    "mm/vmscan.c",
    "mm/workingset.c",
    "mm/page_alloc.c",
    "mm/compaction.c",
    "mm/vmstat.c",
    "net/ipv4/*.h",
    "net/core/*.h",
    "net/ipv4/tcp.c",
    "net/ipv4/tcp_input.c",
    "net/ipv4/tcp_output.c",
    "net/ipv4/tcp_ipv4.c",
    "net/ipv4/tcp_timer.c",
    "net/ipv4/tcp_cong.c",
    "net/ipv4/tcp_rate.c",
    "net/ipv4/tcp_recovery.c",
    "net/ipv4/tcp_cubic.c",
    "net/ipv4/tcp_minisocks.c",
    "net/ipv4/ip_input.c",
    "net/ipv4/ip_output.c",
    "net/ipv4/udp.c",
    "net/ipv4/icmp.c",
    "net/ipv4/route.c",
    "net/ipv4/sysctl_net_ipv4.c",
    "net/ipv4/af_inet.c",
    "net/core/dev.c",
    "net/core/net_namespace.c",
    "net/core/gro.c",
    "net/core/net-sysfs.c",
    "net/core/filter.c",
    "net/core/skbuff.c",
    "net/core/sock.c",
    "net/sched/sch_generic.c",
    "include/uapi/linux/tcp.h",
    "include/linux/mmzone.h",
    "include/linux/page_counter.h",
    "scripts/checkpatch.pl",
    "scripts/spelling.txt",
    "scripts/const_structs.checkpatch",
];

/// The files of Debian's 6.1 sources the tests read
/// (`KERNEL_SOURCE_MEMBERS`), extracted once per test process into a
/// temporary directory: its `linux-source-6.1`. The tests only read it (a
/// test that writes writes into a scratch directory of its own). `None`,
/// with a note saying why the caller's test is skipped, when the tarball or
/// linux-headers-amd64 is missing.
pub fn kernel_source() -> Option<&'static Path> {
    static DIR: std::sync::OnceLock<Option<(tempfile::TempDir, PathBuf)>> =
        std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let d = extract_kernel_source(KERNEL_SOURCE_MEMBERS)?;
        let src = d.path().join("linux-source-6.1");
        Some((d, src))
    });
    if dir.is_none() {
        eprintln!(
            "note: skipped: needs linux-source-6.1 ({KERNEL_TARBALL}) and linux-headers-amd64"
        );
    }
    dir.as_ref().map(|(_, src)| src.as_path())
}

/// Extracts `members` of the 6.1 source tarball into a new temporary
/// directory, as `DIR/linux-source-6.1/PATH`; `None` when the tarball or
/// linux-headers-amd64 is missing. Tests call `kernel_source()`, which
/// extracts every member they need in one pass.
fn extract_kernel_source(members: &[&str]) -> Option<tempfile::TempDir> {
    let tarball = Path::new(KERNEL_TARBALL);
    if !tarball.is_file() || kbuild_tree().is_none() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let ok = Command::new("tar")
        .current_dir(dir.path())
        .args(["-xJf", KERNEL_TARBALL, "--wildcards"])
        .args(members.iter().map(|m| format!("linux-source-6.1/{m}")))
        .status()
        .unwrap()
        .success();
    assert!(
        ok,
        "tar could not extract {members:?} from {KERNEL_TARBALL}"
    );
    Some(dir)
}

/// The `-common` sibling of a Debian build tree: its sources.
pub fn srctree(tree: &Path) -> PathBuf {
    let name = tree.file_name().unwrap().to_str().unwrap();
    let (stem, _) = name.rsplit_once('-').unwrap();
    tree.with_file_name(format!("{stem}-common"))
}

/// Runs `cachelayout ARGS` in `dir` with the environment variables `env`;
/// panics when it still runs after `deadline` (a backstop against a hang or
/// work that grows too fast, not a measure of speed). Both pipes are read
/// while it runs, so a large output cannot stall it.
pub fn run_with_deadline(
    dir: &Path,
    env: &[(&str, &Path)],
    args: &[&str],
    deadline: std::time::Duration,
) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cachelayout"));
    command
        .current_dir(dir)
        .env("XDG_CACHE_HOME", process_cache())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("the cachelayout binary runs");
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`cachelayout {}` still runs after {deadline:?}",
                args.join(" ")
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Writes `diff` to `dir/fix.patch` and applies it with `patch -p1`;
/// panics, naming `what`, when it does not apply.
pub fn apply_p1(dir: &Path, diff: &str, what: &str) {
    std::fs::write(dir.join("fix.patch"), diff).unwrap();
    let applied = Command::new("patch")
        .current_dir(dir)
        .args(["-p1", "--batch", "-i", "fix.patch"])
        .output()
        .expect("`patch` runs (.ci/run installs it)");
    assert!(
        applied.status.success(),
        "{what}: patch -p1 failed: {}{}",
        String::from_utf8_lossy(&applied.stdout),
        String::from_utf8_lossy(&applied.stderr)
    );
}

/// Members of a struct's `__cacheline_group_begin__NAME_{read,write}_{tx,rx,txrx}`
/// groups (tcp_sock, net_device, netns_ipv4), as access-file names:
/// bitfields one by one, anonymous members by `anon_union@OFFSET`. Returns
/// (access file, member byte ranges per path).
pub fn group_access(
    db: &layout_core::typedb::TypeDb,
    name: &str,
) -> (String, [Vec<(u64, u64)>; 2]) {
    let agg = db
        .find(&format!("struct {name}"))
        .expect("the struct is in BTF");
    let mut group: Option<String> = None;
    let mut read = Vec::new();
    let mut write = Vec::new();
    let mut paths: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    let mut bytes: [Vec<(u64, u64)>; 2] = [Vec::new(), Vec::new()];
    for m in &agg.members {
        if let Some(g) = m.name.strip_prefix("__cacheline_group_begin__") {
            group = Some(g.to_string());
            continue;
        }
        if m.name.starts_with("__cacheline_group_end__") {
            group = None;
            continue;
        }
        let Some(g) = &group else { continue };
        if m.size == 0 || (m.is_bitfield() && m.name.is_empty()) {
            continue;
        }
        let name = m.field_name();
        if g.contains("_read_") {
            read.push(name.clone());
        } else if g.contains("_write_") {
            write.push(name.clone());
        }
        let r = m.byte_range();
        for (k, suffix) in [(0, "tx"), (1, "rx")] {
            if g.ends_with(&format!("_{suffix}")) || g.ends_with("_txrx") {
                paths[k].push(name.clone());
                bytes[k].push((r.start, r.end));
            }
        }
    }
    let list = |v: &[String]| {
        v.iter()
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = format!(
        "[struct.{name}]\nread_mostly = [{}]\nlocked_write.sk_lock = [{}]\n\
         [struct.{name}.paths]\ntx = [{}]\nrx = [{}]\n",
        list(&read),
        list(&write),
        list(&paths[0]),
        list(&paths[1])
    );
    (text, bytes)
}

/// Distinct 64-byte lines of byte ranges at base 0.
pub fn lines_of(ranges: &[(u64, u64)]) -> usize {
    let mut lines: Vec<u64> = ranges
        .iter()
        .filter(|(a, b)| a < b)
        .flat_map(|&(a, b)| a / 64..=(b - 1) / 64)
        .collect();
    lines.sort_unstable();
    lines.dedup();
    lines.len()
}

/// A FIFO at `path` (made with `mkfifo`) and a thread that writes `bytes`
/// into it once a reader opens it: a shell's `<(command)`.
pub struct Fifo {
    path: PathBuf,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Fifo {
    pub fn new(path: &Path, bytes: Vec<u8>) -> Fifo {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo runs");
        assert!(made.success(), "mkfifo {}", path.display());
        let p = path.to_path_buf();
        let writer = std::thread::spawn(move || {
            use std::io::Write as _;
            let mut w = std::fs::OpenOptions::new().write(true).open(p).unwrap();
            // A reader that stops early breaks the pipe: that ends the writer.
            for chunk in bytes.chunks(4096) {
                if w.write_all(chunk).is_err() {
                    break;
                }
            }
        });
        Fifo {
            path: path.to_path_buf(),
            writer: Some(writer),
        }
    }
}

impl Drop for Fifo {
    /// Waits for the writer; one still waiting for a reader (the command
    /// failed before it opened the FIFO) is released by opening it here.
    fn drop(&mut self) {
        let Some(w) = self.writer.take() else { return };
        for _ in 0..50 {
            if w.is_finished() {
                let _ = w.join();
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        drop(std::fs::File::open(&self.path));
        let _ = w.join();
    }
}
