//! Where a struct came from in a C header, kept so that the diff emitter can
//! move declarations and leave every other byte of the file as it was.

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
