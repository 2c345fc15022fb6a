//! Where inputs come from: [`bounded`] reads an input file within a byte
//! limit, and [`StructSource`] keeps where a struct came from in a C header,
//! so that the diff emitter can move declarations and leave every other
//! byte of the file as it was.

use std::ops::Range;
use std::path::PathBuf;

/// The text of a header and the byte ranges of one struct inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructSource {
    /// The header path as given on the command line (used in diff headers).
    pub path: PathBuf,
    /// The whole file text.
    pub text: String,
    /// From the `struct` keyword to the closing `}` (exclusive of `;`).
    pub definition: Range<usize>,
    /// Between `{` and `}`, exclusive.
    pub body: Range<usize>,
    /// Members in source order.
    pub members: Vec<MemberSource>,
}

#[cfg(test)]
impl StructSource {
    /// A test's struct: the first `struct` to the last `}` of `text`, with
    /// no member ranges.
    pub(crate) fn of_text(path: &str, text: &str) -> StructSource {
        let open = text.find('{').unwrap();
        let close = text.rfind('}').unwrap();
        StructSource {
            path: path.into(),
            text: text.to_string(),
            definition: text.find("struct").unwrap()..close + 1,
            body: open + 1..close,
            members: Vec::new(),
        }
    }
}

/// One member declaration inside a struct body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberSource {
    /// Index into `Struct::fields`; `None` for body lines that are not fields
    /// (a `CACHELINE_PADDING(...)` line, a preprocessor block kept in place).
    pub field: Option<usize>,
    /// Whole lines: the leading comment, the declaration and a trailing
    /// comment on its last line, through the final newline.
    pub lines: Range<usize>,
    /// The declaration itself, from its first token to its `;` inclusive.
    pub decl: Range<usize>,
    /// The declarator name.
    pub name: Range<usize>,
    /// Leading whitespace of the declaration's first line.
    pub indent: String,
}

/// Reading an input file within a byte limit: regular files are read (a
/// device such as `/dev/zero` or a FIFO is refused before it is opened, so
/// nothing blocks or streams forever), and, for inputs read once, pipes
/// ([`bounded::read_stream`]); never more than the limit.
pub mod bounded {
    use std::io::Read as _;
    use std::path::Path;

    /// Default limit for text inputs: headers, access files, `.config` files.
    pub const TEXT_LIMIT: u64 = 16 << 20;
    /// Default limit for object files: BTF, DWARF (a `vmlinux` with full
    /// debug information is several hundred MiB).
    pub const OBJECT_LIMIT: u64 = 1 << 30;

    /// Why a file could not be read.
    #[derive(Debug)]
    pub enum ReadError {
        /// The operating system refused (missing file, permissions, ...).
        Io(std::io::Error),
        /// Not a regular file: what it is instead (`a directory`, `a FIFO`, ...).
        NotRegular(&'static str),
        /// The file holds more than `limit` bytes.
        TooLarge { limit: u64 },
    }

    impl std::fmt::Display for ReadError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self {
                ReadError::Io(e) => write!(f, "cannot read it: {e}"),
                ReadError::NotRegular(what) => {
                    write!(f, "it is {what}, not a regular file")
                }
                ReadError::TooLarge { limit } => {
                    write!(f, "it is larger than the limit of {}", bytes(*limit))
                }
            }
        }
    }

    /// `n` bytes in the largest binary unit that divides it.
    pub fn bytes(n: u64) -> String {
        for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if n >= 1 << shift && n.is_multiple_of(1 << shift) {
                return format!("{} {unit} ({n} bytes)", n >> shift);
            }
        }
        format!("{n} bytes")
    }

    /// What a file that is not regular is, for messages.
    #[cfg(unix)]
    fn kind_of(t: std::fs::FileType) -> &'static str {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_char_device() {
            "a character device"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "a special file"
        }
    }

    #[cfg(not(unix))]
    fn kind_of(t: std::fs::FileType) -> &'static str {
        if t.is_dir() {
            "a directory"
        } else {
            "a special file"
        }
    }

    /// The bytes of the regular file or pipe at `path` (symbolic links
    /// followed: `/dev/fd/63` of a shell's `<(...)`, `/dev/stdin` on a
    /// pipe, a FIFO from `mkfifo`), at most `limit` of them: a pipe is read
    /// until its writer closes it or `limit + 1` bytes came (then it is too
    /// large). Opening a FIFO waits for its writer, as `cat` does.
    /// Directories, devices and sockets are refused before they are opened.
    pub fn read_stream(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
        let meta = std::fs::metadata(path).map_err(ReadError::Io)?;
        if is_pipe(&meta.file_type()) {
            let file = std::fs::File::open(path).map_err(ReadError::Io)?;
            let mut out = Vec::new();
            file.take(limit.saturating_add(1))
                .read_to_end(&mut out)
                .map_err(ReadError::Io)?;
            if out.len() as u64 > limit {
                return Err(ReadError::TooLarge { limit });
            }
            return Ok(out);
        }
        read(path, limit)
    }

    #[cfg(unix)]
    fn is_pipe(t: &std::fs::FileType) -> bool {
        use std::os::unix::fs::FileTypeExt as _;
        t.is_fifo()
    }

    #[cfg(not(unix))]
    fn is_pipe(_: &std::fs::FileType) -> bool {
        false
    }

    /// The bytes of the regular file at `path` (symbolic links followed), at
    /// most `limit` of them.
    pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
        let meta = std::fs::metadata(path).map_err(ReadError::Io)?;
        if !meta.is_file() {
            return Err(ReadError::NotRegular(kind_of(meta.file_type())));
        }
        if meta.len() > limit {
            return Err(ReadError::TooLarge { limit });
        }
        let file = std::fs::File::open(path).map_err(ReadError::Io)?;
        // Files under /proc and /sys may state a size of 0: read up to the
        // limit whatever the size says, and one byte more to notice excess.
        let mut out = Vec::with_capacity(meta.len() as usize);
        file.take(limit.saturating_add(1))
            .read_to_end(&mut out)
            .map_err(ReadError::Io)?;
        if out.len() as u64 > limit {
            return Err(ReadError::TooLarge { limit });
        }
        Ok(out)
    }
}
