//! Each translation unit parsed and walked in a child process, within
//! limits: libclang opens the unit's includes itself, so a hostile header
//! (a link to `/dev/zero`, a file of gigabytes, an expression nested past
//! what the parser's stack holds) would otherwise take the whole run, and
//! the machine, down with it.
//!
//! The caller (the command line) names its own executable; the child is
//! that program run with the hidden first argument [`CHILD_ARG`], which
//! reads one [`ChildRequest`] (JSON) on stdin, runs
//! [`super::walk_unit`] and writes the result on stdout in the format the
//! audit cache keeps ([`super::UnitGraph`], [`super::StructSites`]). The
//! parent sets the child's limits before it starts: address space
//! (`RLIMIT_AS`, [`Limits::memory_mb`]), CPU time (`RLIMIT_CPU`,
//! [`Limits::cpu_seconds`]), no core file; it reads the child's output
//! within [`MAX_REPLY`] bytes. A wall-clock stop ([`Limits::wall_seconds`])
//! is a safety net only (a child that waits on something): it is reported
//! as an error, and it decides no result.
//!
//! Before the child starts, the unit's includes are checked
//! ([`super::includes`]): one that is not a regular file, or too large, is
//! an error naming it, and the unit is not parsed.

use super::{walk_unit, Source, StructSites, UnitGraph};
use crate::Diagnostic;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The hidden first argument that makes the command line a unit's child.
pub const CHILD_ARG: &str = "__cachelayout-walk-unit";
/// The most bytes of a child's reply read (its graph and sites).
pub const MAX_REPLY: u64 = 1 << 30;
/// The most bytes of a request read by the child.
const MAX_REQUEST: u64 = 64 << 20;
/// The most bytes of a child's stderr kept (libclang's last words).
const MAX_STDERR: u64 = 64 << 10;
/// The stack of the thread that parses and walks, at most (the walks are
/// bounded in depth, [`super::walk::MAX_NESTING`]): an eighth of the
/// address-space limit, at least [`MIN_STACK`].
const WALK_STACK: u64 = 256 << 20;
const MIN_STACK: u64 = 16 << 20;

/// The limits of one unit's child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Address space, MiB.
    pub memory_mb: u64,
    /// CPU time, seconds.
    pub cpu_seconds: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_mb: 2048,
            cpu_seconds: 300,
        }
    }
}

impl Limits {
    /// The wall-clock safety stop: twice the CPU limit and a minute.
    pub fn wall_seconds(&self) -> u64 {
        self.cpu_seconds.saturating_mul(2).saturating_add(60)
    }
}

/// How units are isolated: the program to run as the child, and its limits.
#[derive(Clone, Debug)]
pub struct Isolation {
    pub exe: PathBuf,
    pub limits: Limits,
}

/// A unit that could not be walked.
#[derive(Clone, Debug)]
pub struct UnitFailure {
    pub diagnostic: Diagnostic,
    /// Whether the same unit, flags and headers fail the same way again (a
    /// parse error), so that a cache may keep the failure. A limit, a
    /// crash, a stop or a refused include is never kept.
    pub repeatable: bool,
}

impl UnitFailure {
    fn once(diagnostic: Diagnostic) -> Self {
        UnitFailure {
            diagnostic,
            repeatable: false,
        }
    }
}

impl std::fmt::Display for UnitFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.diagnostic.fmt(f)
    }
}

/// What the child is asked.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ChildRequest {
    pub path: PathBuf,
    pub args: Vec<String>,
    pub structs: Vec<String>,
    pub wrappers: Vec<String>,
    pub max_input_bytes: Option<u64>,
    /// The walking thread's stack, bytes.
    pub stack: u64,
}

/// A [`Diagnostic`] as the child sends it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct WireDiagnostic {
    file: Option<PathBuf>,
    line: usize,
    column: usize,
    message: String,
    help: Option<String>,
}

impl From<Diagnostic> for WireDiagnostic {
    fn from(d: Diagnostic) -> Self {
        WireDiagnostic {
            file: d.file,
            line: d.line,
            column: d.column,
            message: d.message,
            help: d.help,
        }
    }
}

impl From<WireDiagnostic> for Diagnostic {
    fn from(w: WireDiagnostic) -> Self {
        Diagnostic {
            file: w.file,
            line: w.line,
            column: w.column,
            message: w.message,
            help: w.help,
        }
    }
}

type Reply = Result<(UnitGraph, Vec<StructSites>), WireDiagnostic>;

/// The child's side: reads the request on stdin, walks the unit, writes
/// the reply on stdout. The exit status is 0 when a reply was written.
pub fn child_main() -> u8 {
    let mut input = Vec::new();
    if std::io::stdin()
        .lock()
        .take(MAX_REQUEST)
        .read_to_end(&mut input)
        .is_err()
    {
        return 3;
    }
    let Ok(req) = serde_json::from_slice::<ChildRequest>(&input) else {
        return 3;
    };
    crate::files::set_limit(req.max_input_bytes);
    let worker = std::thread::Builder::new()
        .name("walk-unit".into())
        .stack_size(req.stack as usize)
        .spawn(move || {
            let src = Source {
                path: req.path,
                args: req.args,
            };
            let reply: Reply = walk_unit(&src, &req.structs, &req.wrappers).map_err(Into::into);
            reply
        });
    let Ok(worker) = worker else {
        // No room for the thread's stack within the address-space limit.
        eprintln!("out of memory: cannot start the walk's thread");
        return 4;
    };
    let Ok(reply) = worker.join() else {
        return 4;
    };
    let mut out = std::io::stdout().lock();
    match serde_json::to_writer(&mut out, &reply) {
        Ok(()) if out.flush().is_ok() => 0,
        _ => 5,
    }
}

/// Walks `src` for `structs` in a child process within `iso`'s limits
/// (see the module docs), after checking its includes.
pub fn walk_unit_isolated(
    iso: &Isolation,
    src: &Source,
    structs: &[String],
    wrappers: &[String],
) -> Result<(UnitGraph, Vec<StructSites>), UnitFailure> {
    let text =
        crate::files::text(&src.path, crate::files::Input::Source).map_err(UnitFailure::once)?;
    let limit = crate::files::limit_of(crate::files::Input::Header);
    if let Some(bad) = super::includes::first_bad(&src.path, &text, &src.args, limit) {
        return Err(UnitFailure::once(
            Diagnostic::new(bad.message())
                .in_file(&src.path)
                .help("libclang would read it without bound: replace it with the header it stands for, or leave this unit out"),
        ));
    }
    let req = ChildRequest {
        path: src.path.clone(),
        args: src.args.clone(),
        structs: structs.to_vec(),
        wrappers: wrappers.to_vec(),
        max_input_bytes: crate::files::limit_given(),
        stack: (iso.limits.memory_mb.saturating_mul(1 << 20) / 8).clamp(MIN_STACK, WALK_STACK),
    };
    let run = run_child(iso, &req).map_err(|e| UnitFailure::once(e.in_file(&src.path)))?;
    judge(iso, &src.path, run)
}

/// What came back from a child.
struct Run {
    stdout: Result<Vec<u8>, String>,
    stderr: Vec<u8>,
    status: std::process::ExitStatus,
    stopped: bool,
    seconds: f64,
}

fn run_child(iso: &Isolation, req: &ChildRequest) -> Result<Run, Diagnostic> {
    let request = serde_json::to_vec(req)
        .map_err(|e| Diagnostic::new(format!("cannot encode the unit's request: {e}")))?;
    let mut cmd = Command::new(&iso.exe);
    cmd.arg(CHILD_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    set_limits(&mut cmd, iso.limits);
    let t0 = Instant::now();
    let mut child = cmd.spawn().map_err(|e| {
        Diagnostic::new(format!(
            "cannot start the unit's parser ({}): {e}",
            iso.exe.display()
        ))
    })?;
    let mut stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(s) = stdin.as_mut() {
            let _ = s.write_all(&request);
        }
        drop(stdin);
    });
    let out = child.stdout.take();
    let reader = std::thread::spawn(move || -> Result<Vec<u8>, String> {
        let mut buf = Vec::new();
        let Some(o) = out else {
            return Ok(buf);
        };
        let mut o = o.take(MAX_REPLY + 1);
        o.read_to_end(&mut buf).map_err(|e| e.to_string())?;
        if buf.len() as u64 > MAX_REPLY {
            // Drain the rest so that the child is not blocked on its pipe.
            let _ = std::io::copy(&mut o.into_inner(), &mut std::io::sink());
            return Err(format!(
                "its analysis is larger than {}",
                crate::source::bounded::bytes(MAX_REPLY)
            ));
        }
        Ok(buf)
    });
    let err = child.stderr.take();
    let err_reader = std::thread::spawn(move || {
        let mut keep = Vec::new();
        if let Some(mut e) = err {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = e.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                keep.extend_from_slice(&chunk[..n]);
                if keep.len() as u64 > MAX_STDERR {
                    keep.drain(..keep.len() - MAX_STDERR as usize);
                }
            }
        }
        keep
    });
    let wall = Duration::from_secs(iso.limits.wall_seconds());
    let mut stopped = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if t0.elapsed() > wall => {
                stopped = true;
                let _ = child.kill();
                match child.wait() {
                    Ok(s) => break s,
                    Err(e) => return Err(Diagnostic::new(format!("the unit's parser: {e}"))),
                }
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(Diagnostic::new(format!("the unit's parser: {e}"))),
        }
    };
    let _ = writer.join();
    let stdout = reader
        .join()
        .unwrap_or_else(|_| Err("its output could not be read".into()));
    let stderr = err_reader.join().unwrap_or_default();
    Ok(Run {
        stdout,
        stderr,
        status,
        stopped,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

#[cfg(unix)]
fn set_limits(cmd: &mut Command, limits: Limits) {
    use std::os::unix::process::CommandExt as _;
    let memory = limits.memory_mb.saturating_mul(1 << 20);
    let cpu = limits.cpu_seconds.max(1);
    // SAFETY: setrlimit is async-signal-safe; the closure allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let set = |what, soft: u64, hard: u64| {
                let l = libc::rlimit {
                    rlim_cur: soft as libc::rlim_t,
                    rlim_max: hard as libc::rlim_t,
                };
                if libc::setrlimit(what, &l) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            };
            set(libc::RLIMIT_AS, memory, memory)?;
            // SIGXCPU at the soft limit, SIGKILL a little later.
            set(libc::RLIMIT_CPU, cpu, cpu.saturating_add(5))?;
            set(libc::RLIMIT_CORE, 0, 0)?;
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn set_limits(_: &mut Command, _: Limits) {}

/// Whether the child's last words say an allocation failed.
fn out_of_memory(stderr: &str) -> bool {
    [
        "out of memory",
        "memory allocation of",
        "bad_alloc",
        "Cannot allocate memory",
        "pthread_create failed",
        "failed to map segment",
    ]
    .iter()
    .any(|m| stderr.contains(m))
}

/// The signal that ended the child, if one did.
#[cfg(unix)]
fn signal(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt as _;
    status.signal()
}

#[cfg(not(unix))]
fn signal(_: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// The child's reply, or what went wrong, as the user reads it.
fn judge(
    iso: &Isolation,
    unit: &Path,
    run: Run,
) -> Result<(UnitGraph, Vec<StructSites>), UnitFailure> {
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let last_words = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| format!(" (it said: {})", l.trim()))
        .unwrap_or_default();
    let l = iso.limits;
    let fail = |message: String, help: &str| {
        Err(UnitFailure::once(
            Diagnostic::new(message)
                .in_file(unit)
                .help(help.to_string()),
        ))
    };
    let memory_help = "raise --unit-memory-mb if the unit is genuine, or leave it out";
    if run.stopped {
        return fail(
            format!(
                "unit did not finish parsing in {:.0} s of wall-clock time (stopped; its CPU limit is {} s)",
                run.seconds, l.cpu_seconds
            ),
            "it waits on something (a device or pipe among its includes?): check its headers",
        );
    }
    let sig = signal(&run.status);
    if sig == Some(libc_signal::XCPU) || (sig == Some(libc_signal::KILL) && !run.stopped) {
        return fail(
            format!(
                "unit exceeded {} s of CPU time while parsing",
                l.cpu_seconds
            ),
            "raise --unit-seconds if the unit is genuine, or leave it out",
        );
    }
    if out_of_memory(&stderr) {
        return fail(
            format!("unit exceeded {} MB while parsing", l.memory_mb),
            memory_help,
        );
    }
    if let Some(s) = sig {
        return fail(
            format!("the parser crashed on this unit (signal {s}){last_words}"),
            "the unit or a header it includes is one libclang cannot take (nesting too deep?): leave it out",
        );
    }
    let bytes = match run.stdout {
        Ok(b) => b,
        Err(why) => return fail(format!("the unit's parser failed: {why}"), memory_help),
    };
    if !run.status.success() {
        return fail(
            format!(
                "the unit's parser failed (exit status {}){last_words}",
                run.status.code().unwrap_or(-1)
            ),
            "leave the unit out",
        );
    }
    match serde_json::from_slice::<Reply>(&bytes) {
        Ok(Ok(walked)) => Ok(walked),
        Ok(Err(d)) => Err(UnitFailure {
            diagnostic: d.into(),
            repeatable: true,
        }),
        Err(e) => fail(
            format!("the unit's parser sent a reply that does not read: {e}"),
            "leave the unit out",
        ),
    }
}

/// The signal numbers the judgement needs.
mod libc_signal {
    pub const XCPU: i32 = libc::SIGXCPU;
    pub const KILL: i32 = libc::SIGKILL;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(status: &str, stdout: Result<Vec<u8>, String>, stderr: &str) -> Run {
        let s = std::process::Command::new("sh")
            .args(["-c", status])
            .status()
            .unwrap();
        Run {
            stdout,
            stderr: stderr.as_bytes().to_vec(),
            status: s,
            stopped: false,
            seconds: 0.5,
        }
    }

    fn iso() -> Isolation {
        Isolation {
            exe: PathBuf::from("/nonexistent"),
            limits: Limits {
                memory_mb: 2048,
                cpu_seconds: 7,
            },
        }
    }

    fn message(r: Result<(UnitGraph, Vec<StructSites>), UnitFailure>) -> (String, bool) {
        let e = r.unwrap_err();
        (e.diagnostic.to_string(), e.repeatable)
    }

    #[test]
    fn each_way_a_child_ends_is_told_apart() {
        let u = Path::new("u.c");
        let (m, rep) = message(judge(&iso(), u, run("kill -XCPU $$", Ok(Vec::new()), "")));
        assert_eq!(
            m,
            "u.c: error: unit exceeded 7 s of CPU time while parsing; help: raise --unit-seconds if the unit is genuine, or leave it out"
        );
        assert!(!rep);
        let (m, _) = message(judge(
            &iso(),
            u,
            run(
                "kill -ABRT $$",
                Ok(Vec::new()),
                "LLVM ERROR: out of memory\nAllocation failed\n",
            ),
        ));
        assert!(
            m.starts_with(
                "u.c: error: unit exceeded 2048 MB while parsing; help: raise --unit-memory-mb"
            ),
            "{m}"
        );
        let (m, _) = message(judge(&iso(), u, run("kill -SEGV $$", Ok(Vec::new()), "")));
        assert!(m.contains("crashed on this unit (signal 11)"), "{m}");
        let mut stopped = run("true", Ok(Vec::new()), "");
        stopped.stopped = true;
        let (m, _) = message(judge(&iso(), u, stopped));
        assert!(m.contains("did not finish parsing"), "{m}");
        let (m, _) = message(judge(
            &iso(),
            u,
            run("true", Ok(b"{\"Ok\": 1".to_vec()), ""),
        ));
        assert!(m.contains("does not read"), "{m}");
        let (m, _) = message(judge(&iso(), u, run("exit 3", Ok(Vec::new()), "")));
        assert!(m.contains("exit status 3"), "{m}");
        // A parse error the child reports is the child's diagnostic, and repeatable.
        let reply: Reply = Err(Diagnostic::new("libclang stopped: x").in_file(u).into());
        let bytes = serde_json::to_vec(&reply).unwrap();
        let (m, rep) = message(judge(&iso(), u, run("true", Ok(bytes), "")));
        assert_eq!(m, "u.c: error: libclang stopped: x");
        assert!(rep);
        // A reply round-trips.
        let reply: Reply = Ok((UnitGraph::default(), vec![StructSites::default()]));
        let bytes = serde_json::to_vec(&reply).unwrap();
        let (g, s) = judge(&iso(), u, run("true", Ok(bytes), "")).unwrap();
        assert_eq!((g.file(), s.len()), ("", 1));
    }
}
