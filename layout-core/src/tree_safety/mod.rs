//! The tree-safety pass: before a reorder is proposed, find the code of the
//! tree that depends on the struct's member order, and keep each use
//! intact with a constraint the solver keeps and the verifier checks, or
//! refuse the reorder naming the site.
//!
//! The pass reads the files `propose --safety-scan` names (C files,
//! directories, the units of a `compile_commands.json`; `sources.rs`) and
//! the struct's header as tokens (`crate::lex`: comments and literals are
//! no code), and finds (`sites.rs`):
//!
//! - positional initializers: `struct S v = { a, b }`, arrays of them,
//!   compound literals `(struct S){ .. }`, the struct's braces inside an
//!   initializer of a struct that embeds it, typedef names of the struct
//!   ([`Spelling`]) too; a designated initializer and `{ 0 }` are safe;
//! - ranges by offset: `offsetof(S, b) - offsetof(S, a)` (also with
//!   `offsetofend` and `sizeof`), a `mem*()` length that is one offset,
//!   and the offset of a zero-size marker alone (code reads what follows
//!   it); a range between two zero-size walls (`headers_start[0]` ..
//!   `headers_end[0]`) is kept by them already;
//! - build-time assertions (`BUILD_BUG_ON`, `static_assert`) on offsets
//!   (their members keep their offsets) and on the size (it must not
//!   change), and `CACHELINE_ASSERT_GROUP_*` (kept by the group's markers;
//!   a group's asserted size is checked);
//! - BPF instructions and context ranges built from the struct's offsets:
//!   an offset of one member is a name (the compiler computes it again),
//!   what depends on relative positions is refused (a range or sum over
//!   two members, a load wider than the member) or kept (a marker's offset
//!   keeps the bit-fields after it); the same for `*(T *)((char *)p +
//!   offsetof(S, m))` and GNU case ranges;
//! - the definition's own facts (`definition.rs`): `include/uapi/` and
//!   `__packed` refuse; `__randomize_layout` allows any order, with the
//!   note of `randstruct.rs`.
//!
//! [`constrain`] turns the sites into [`TreeConstraint`]s (one per distinct
//! need, with every site that needs it), which [`TreeConstraint::apply`]
//! writes into the model as the ordering constraints it already has: the
//! first members kept first (a segment cut and a declared-together list),
//! members kept together in order (a list), members kept last, pinned
//! members. [`crate::propose`] applies them, prices each, and refuses
//! ([`Refusal`]) a proposal that moves members when a site forbids it;
//! [`crate::verify::check_tree_needs`] checks every need again from the
//! offsets alone.
//!
//! Limits: the scan reads tokens, not a preprocessed translation unit. A
//! use hidden behind a macro whose parameters are the type or the member
//! (`DEFINE_X(struct S, m)` expanding to `offsetof`) is not seen, nor an
//! embedding struct's initializer whose braces are elided, nor
//! `sizeof(*p)` except in a range with an offset of the struct, nor ranges
//! spelled as pointer differences (`(char *)&p->b - (char *)&p->a`); a
//! macro among positional values is taken as one value (conservative).

pub mod apply;
mod definition;
mod macros;
mod members;
pub mod randstruct;
mod sites;
mod sources;
mod spelling;
mod tokens;

pub use apply::{constrain, Refusal, TreeConstraint};
pub use members::Members;
pub use spelling::Spelling;

use crate::source::StructSource;
use crate::Diagnostic;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What a site is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SiteKind {
    PositionalInitializer,
    ArrayOfInitializers,
    CompoundLiteral,
    /// An initializer of a struct that embeds this one.
    NestedInitializer,
    DesignatedInitializer,
    ZeroInitializer,
    OffsetRange,
    MarkerOffset,
    BuildAssertion,
    SizeAssertion,
    GroupAssertion,
    BpfOffset,
    /// A load through a cast at an offset (`*(T *)((char *)p + offsetof(S, m))`).
    OffsetLoad,
    Uapi,
    Packed,
    RandomizedLayout,
}

impl SiteKind {
    /// The words the summary uses.
    pub fn words(self) -> &'static str {
        match self {
            SiteKind::PositionalInitializer => "positional initializer",
            SiteKind::ArrayOfInitializers => "array of positional initializers",
            SiteKind::CompoundLiteral => "positional compound literal",
            SiteKind::NestedInitializer => "positional initializer of an embedding struct",
            SiteKind::DesignatedInitializer => "designated initializer",
            SiteKind::ZeroInitializer => "zero initializer",
            SiteKind::OffsetRange => "offset range",
            SiteKind::MarkerOffset => "offset of a zero-size marker",
            SiteKind::BuildAssertion => "build assertion on offsets",
            SiteKind::SizeAssertion => "build assertion on the size",
            SiteKind::GroupAssertion => "cache-line group assertion",
            SiteKind::BpfOffset => "BPF access by offset",
            SiteKind::OffsetLoad => "load through a cast at an offset",
            SiteKind::Uapi => "user-space ABI (include/uapi/)",
            SiteKind::Packed => "__packed format",
            SiteKind::RandomizedLayout => "randomized layout",
        }
    }
}

/// What keeps a site intact, by the model's member names.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Need {
    /// Nothing: the site does not depend on the order.
    None,
    /// These members stay the first ones, in this order.
    First(Vec<String>),
    /// These members stay next to each other, in this order.
    Run(Vec<String>),
    /// These members stay the last ones, in this order.
    Last(Vec<String>),
    /// These members keep their offsets.
    Pin(Vec<String>),
    /// The struct's size must not change.
    Size,
    /// The members of this cache-line group stay between its markers.
    Group { group: String },
    /// The group's span stays within `bytes` (unknown: it must not grow).
    GroupSize { group: String, bytes: Option<u64> },
    /// Kept by the model's structure already (the words say by what).
    KeptBy(String),
    /// No reorder keeps it: why.
    Refuse(String),
}

/// One site: where, what, what keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Site {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub kind: SiteKind,
    pub need: Need,
}

impl Site {
    /// `net/ipv4/tcp.c:12:3`.
    pub fn at(&self) -> String {
        format!("{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// What a scan read and found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TreeScan {
    /// How the tree spells the struct (`struct S`, typedef names).
    pub spellings: Vec<String>,
    /// Files read (the header included).
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Files that name the struct (by a whole word: its tag or a typedef
    /// name); they, and those naming a struct that embeds it, are read as
    /// tokens.
    pub files_with_uses: usize,
    /// Every site, by file and position.
    pub sites: Vec<Site>,
}

impl TreeScan {
    /// The summary's line: what was read, how many sites of each kind.
    pub fn text(&self, strukt: &str, added: usize) -> String {
        let mut kinds: Vec<(SiteKind, usize)> = Vec::new();
        for s in &self.sites {
            match kinds.iter_mut().find(|(k, _)| *k == s.kind) {
                Some((_, n)) => *n += 1,
                None => kinds.push((s.kind, 1)),
            }
        }
        kinds.sort();
        let found = if kinds.is_empty() {
            "no site depends on the member order".to_string()
        } else {
            let n = self.sites.len();
            format!(
                "{n} site{} ({})",
                if n == 1 { "" } else { "s" },
                kinds
                    .iter()
                    .map(|(k, n)| format!("{}: {n}", k.words()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        format!(
            "tree safety: {} files ({}) read for struct {strukt} ({}), {} naming it: {found}; {added} constraint{} added\n",
            self.files,
            size_text(self.bytes),
            self.spellings.join(", "),
            self.files_with_uses,
            if added == 1 { "" } else { "s" },
        )
    }
}

/// Whether `text` holds `word` as a whole identifier.
fn names_word(text: &str, word: &str) -> bool {
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let b = text.as_bytes();
    text.match_indices(word).any(|(at, _)| {
        let end = at + word.len();
        (at == 0 || !ident(b[at - 1])) && (end >= b.len() || !ident(b[end]))
    })
}

/// Whether `text` holds one of `words` as a whole identifier (one pass
/// over its identifiers, whatever the number of words).
fn any_word(text: &str, words: &std::collections::HashSet<&str>) -> bool {
    let b = text.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        if ident(b[i]) {
            let start = i;
            while i < b.len() && ident(b[i]) {
                i += 1;
            }
            if words.contains(&text[start..i]) {
                return true;
            }
        } else {
            i += 1;
        }
    }
    false
}

/// `2.7 MiB`, `169.9 KiB`, `414 bytes`.
fn size_text(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    match bytes as f64 {
        b if b >= KIB * KIB => format!("{:.1} MiB", b / (KIB * KIB)),
        b if b >= KIB => format!("{:.1} KiB", b / KIB),
        _ => format!("{bytes} bytes"),
    }
}

/// Scans `paths` (files, directories) and the struct's header `header`
/// for the sites of struct `tag`, whose members are `members`.
pub fn scan(
    paths: &[PathBuf],
    tag: &str,
    header: Option<&StructSource>,
    members: &Members,
) -> Result<TreeScan, Diagnostic> {
    let listed = sources::list(paths)?;
    let mut texts: Vec<(PathBuf, String)> = Vec::with_capacity(listed.len() + 1);
    let header_path = header.map(|h| h.path.clone());
    if let Some(h) = header {
        texts.push((h.path.clone(), h.text.clone()));
    }
    let same = |a: &Path, b: &Path| {
        a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
    };
    for p in listed {
        if header_path.as_deref().is_some_and(|h| same(h, &p)) {
            continue;
        }
        let text = sources::read(&p)?;
        texts.push((p, text));
    }
    let bytes = texts.iter().map(|(_, t)| t.len() as u64).sum();
    // Each file is tokenized once, when it first names a word the scan
    // looks for (the tag, a typedef name, an embedding struct's tag).
    let mut codes: Vec<Option<tokens::Code>> = texts.iter().map(|_| None).collect();
    let texts = texts;
    fn tokenize<'a>(
        codes: &mut [Option<tokens::Code<'a>>],
        texts: &'a [(PathBuf, String)],
        k: usize,
    ) {
        if codes[k].is_none() {
            codes[k] = Some(tokens::Code::new(&texts[k].1));
        }
    }
    // The typedef names first (a typedef of a typedef may live in another
    // file): from the files that name the tag or a name found so far.
    let mut sp = Spelling::new(tag);
    for _ in 0..4 {
        let mut grew = false;
        for k in 0..texts.len() {
            let text = &texts[k].1;
            if sp.words().any(|w| names_word(text, w)) && names_word(text, "typedef") {
                tokenize(&mut codes, &texts, k);
                grew |= sp.learn_typedefs(codes[k].as_ref().expect("tokenized"));
            }
        }
        if !grew {
            break;
        }
    }
    let uses: Vec<bool> = texts
        .iter()
        .map(|(_, text)| sp.words().any(|w| names_word(text, w)))
        .collect();
    // The macros that wrap a build assertion, from every file that
    // defines one.
    let assert_words = sites::assert_words();
    let asserting: std::collections::HashSet<&str> = assert_words.iter().copied().collect();
    let mut macros = macros::AssertMacros::default();
    for k in 0..texts.len() {
        let text = &texts[k].1;
        if names_word(text, "define") && any_word(text, &asserting) {
            tokenize(&mut codes, &texts, k);
            macros.learn(codes[k].as_ref().expect("tokenized"), k, &assert_words);
        }
    }
    let macro_names: std::collections::HashSet<&str> = macros.names().collect();
    let mut members = members.clone();
    let mut embedders = Vec::new();
    for k in (0..texts.len()).filter(|&k| uses[k]) {
        tokenize(&mut codes, &texts, k);
        let code = codes[k].as_ref().expect("tokenized");
        if names_word(&texts[k].1, "define") {
            members.learn_macros(code);
        }
        // The structs that embed this one, wherever they are defined.
        embedders.extend(sites::embedders(code, &sp));
    }
    let members = &members;
    let mut seen = std::collections::BTreeSet::new();
    embedders.retain(|e: &sites::Embedder| seen.insert(e.spelling.tag.clone()));
    let tags: std::collections::HashSet<&str> =
        embedders.iter().map(|e| e.spelling.tag.as_str()).collect();
    let mut out = Vec::new();
    let mut with_uses = 0;
    for k in 0..texts.len() {
        let text = &texts[k].1;
        let names_embedder = !tags.is_empty() && any_word(text, &tags);
        let names_macro = !macro_names.is_empty() && any_word(text, &macro_names);
        if !uses[k] && !names_embedder && !names_macro {
            continue;
        }
        with_uses += uses[k] as usize;
        tokenize(&mut codes, &texts, k);
        let code = codes[k].as_ref().expect("tokenized");
        for f in sites::find(code, k, &sp, members, &embedders, &macros) {
            let (line, column) = code.line_col(f.tok);
            out.push(Site {
                file: texts[k].0.clone(),
                line,
                column,
                kind: f.kind,
                need: f.need,
            });
        }
    }
    if let Some(h) = header {
        for f in definition::facts(h) {
            let (line, column) = crate::error::line_col(&h.text, f.byte);
            out.push(Site {
                file: h.path.clone(),
                line,
                column,
                kind: f.kind,
                need: f.need,
            });
        }
    }
    Ok(TreeScan {
        spellings: sp.names(),
        files: texts.len(),
        bytes,
        files_with_uses: with_uses,
        sites: out,
    })
}
