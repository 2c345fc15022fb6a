//! Reading every input file of a run within a byte limit: regular files,
//! and pipes for the inputs read once (an access file, a perf report:
//! `--access <(cachelayout infer ...)`); a device such as `/dev/zero`, a
//! directory, a socket, or a FIFO given as another input, is refused before
//! it is opened. Never more than `--max-input-bytes`, text checked for
//! UTF-8 with the place of the first bad byte. The parsers then get the bytes.

use crate::access::{self, AccessFile};
#[cfg(feature = "c-header")]
use crate::c::{self, Defines, Header, TypeTable};
use crate::source::bounded::{self, ReadError};
#[cfg(any(feature = "btf", feature = "dwarf"))]
use crate::typedb::TypeDb;
use crate::Diagnostic;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// `--max-input-bytes`, when given: the limit for every input file.
static LIMIT: OnceLock<u64> = OnceLock::new();

/// Sets the limit from `--max-input-bytes` (once, before any file is read).
pub fn set_limit(limit: Option<u64>) {
    if let Some(l) = limit {
        let _ = LIMIT.set(l);
    }
}

/// `--max-input-bytes`, if it was given (a child process gets the same).
pub fn limit_given() -> Option<u64> {
    LIMIT.get().copied()
}

/// The byte limit for inputs of `kind`.
pub fn limit_of(kind: Input) -> u64 {
    kind.limit()
}

/// Every file this run has read, for `--output` to refuse (see
/// [`inputs`]): the command line's inputs, the compiler front-end's (the
/// compilation database, `.config`, response and dependency files) and the
/// headers a probe included.
static READ: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Records that this run read `path` (so that `--output` never replaces it).
pub fn note_input(path: &Path) {
    if let Ok(mut read) = READ.lock() {
        read.push(path.to_path_buf());
    }
}

/// The files this run read so far.
pub fn inputs() -> Vec<PathBuf> {
    READ.lock().map(|r| r.clone()).unwrap_or_default()
}

/// The bytes read from pipes, by path: a pipe can be read once, and a
/// command that reads its access file twice gets the same bytes.
static PIPES: Mutex<BTreeMap<PathBuf, Vec<u8>>> = Mutex::new(BTreeMap::new());

/// The kinds of input file, for limits and messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Header,
    Access,
    Config,
    Btf,
    Dwarf,
    CompileCommands,
    /// A perf report's text (`perf c2c report --stdio`, data-type profiles).
    Profile,
    /// A C translation unit given to `infer --source`.
    Source,
    /// A C file of the tree a safety scan reads (`propose --safety-scan`).
    TreeSource,
    /// The hot roots per subsystem of `audit --roots`.
    Roots,
}

/// Default limit for a compilation database (a whole kernel's is ~30 MiB).
const COMPILE_COMMANDS_LIMIT: u64 = 256 << 20;

impl Input {
    fn what(self) -> &'static str {
        match self {
            Input::Header => "header",
            Input::Access => "access file",
            Input::Config => "kernel config",
            Input::Btf => "BTF",
            Input::Dwarf => "DWARF",
            Input::CompileCommands => "compilation database",
            Input::Profile => "perf report",
            Input::Source | Input::TreeSource => "C source file",
            Input::Roots => "roots file",
        }
    }

    /// Whether a pipe may hold it: the inputs only this program reads,
    /// once (a header, `.config`, BTF, DWARF or compilation database may be
    /// read again, by the compiler front-end or for the probe's cache).
    fn streams(self) -> bool {
        matches!(self, Input::Access | Input::Profile | Input::Roots)
    }

    fn limit(self) -> u64 {
        LIMIT.get().copied().unwrap_or(self.default_limit())
    }

    fn default_limit(self) -> u64 {
        match self {
            Input::Btf | Input::Dwarf => bounded::OBJECT_LIMIT,
            Input::CompileCommands => COMPILE_COMMANDS_LIMIT,
            _ => bounded::TEXT_LIMIT,
        }
    }

    fn usual(self) -> &'static str {
        match self {
            Input::Header => "give the path of a C header",
            Input::Access => "give the path of a TOML access file to --access",
            Input::Config => "give the .config of the kernel build to --config",
            Input::Btf => "give /sys/kernel/btf/vmlinux or an object built with -gbtf to --btf",
            Input::Dwarf => "give an object or executable built with -g to --dwarf",
            Input::CompileCommands => {
                "give the compile_commands.json your build wrote to --compile-commands"
            }
            Input::Profile => {
                "give the text of `perf c2c report --stdio` to --perf-c2c, or of `perf report -s type,typeoff --stdio` / `perf annotate --data-type --stdio` to --perf-mem"
            }
            Input::Source => "give a C file (.c) of the program to --source",
            Input::TreeSource => {
                "give the C files or directories of the tree that use the struct to --safety-scan"
            }
            Input::Roots => "give a TOML file of hot roots per subsystem to --roots",
        }
    }
}

/// The bytes of the input file at `path`.
pub fn read(path: &Path, kind: Input) -> Result<Vec<u8>, Diagnostic> {
    let limit = kind.limit();
    note_input(path);
    if kind.streams() {
        if let Some(bytes) = PIPES.lock().ok().and_then(|p| p.get(path).cloned()) {
            return Ok(bytes);
        }
    }
    let got = if kind.streams() {
        bounded::read_stream(path, limit)
    } else {
        bounded::read(path, limit)
    };
    if let (true, Ok(bytes)) = (kind.streams(), &got) {
        let regular = std::fs::metadata(path).is_ok_and(|m| m.is_file());
        if !regular {
            if let Ok(mut p) = PIPES.lock() {
                p.insert(path.to_path_buf(), bytes.clone());
            }
        }
    }
    got.map_err(|e| {
        let help = match &e {
            ReadError::TooLarge { .. } => format!(
                "pass --max-input-bytes with a larger limit to read it anyway (the default for a {} is {})",
                kind.what(),
                bounded::bytes(kind.default_limit())
            ),
            ReadError::NotRegular(_) if kind.streams() => format!(
                "{}: a regular file or a pipe (`<(command)`); devices, sockets and directories are not read",
                kind.usual()
            ),
            ReadError::NotRegular(_) => format!(
                "{}: devices, FIFOs and directories are not read here (only --access and the perf reports may be pipes; copy the data to a file first)",
                kind.usual()
            ),
            ReadError::Io(_) => format!("check the path; {}", kind.usual()),
        };
        Diagnostic::new(format!("cannot read the {}: {e}", kind.what()))
            .in_file(path)
            .help(help)
    })
}

/// The text of the input file at `path`; invalid UTF-8 is an error at the
/// line and column of the first bad byte.
pub fn text(path: &Path, kind: Input) -> Result<String, Diagnostic> {
    let bytes = read(path, kind)?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let good = String::from_utf8_lossy(&bytes[..valid]);
        let (line, column) = crate::error::line_col(&good, valid);
        Diagnostic::new(format!(
            "the {} is not valid UTF-8: byte 0x{:02x} at offset {valid} does not start a UTF-8 character",
            kind.what(),
            bytes[valid]
        ))
        .in_file(path)
        .at(line, column)
        .help("convert the file to UTF-8 (e.g. with iconv), or remove the byte")
    })
}

/// The access file at `path`, parsed.
pub fn access(path: &Path) -> Result<AccessFile, Diagnostic> {
    access::parse(path, &text(path, Input::Access)?)
}

/// The kernel `.config` at `path`, as defines.
#[cfg(feature = "c-header")]
pub fn config(path: &Path) -> Result<Defines, Diagnostic> {
    c::parse_kernel_config(path, &text(path, Input::Config)?)
}

/// The C header at `path`, parsed under `defines` with the types of `types`.
#[cfg(feature = "c-header")]
pub fn header(path: &Path, defines: &Defines, types: &TypeTable) -> Result<Header, Diagnostic> {
    c::parse_header(path, &text(path, Input::Header)?, defines, types)
}

/// The BTF at `path` (a `.BTF` section or raw BTF), as a type database.
#[cfg(feature = "btf")]
pub fn btf(path: &Path) -> Result<TypeDb, Diagnostic> {
    crate::btf::parse_btf(&read(path, Input::Btf)?, path)
}

/// The DWARF of the object or executable at `path`, as a type database.
#[cfg(feature = "dwarf")]
pub fn dwarf(path: &Path) -> Result<TypeDb, Diagnostic> {
    crate::dwarf::parse_dwarf(&read(path, Input::Dwarf)?, path)
}
