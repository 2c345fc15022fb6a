//! The C header front-end: reads a header (x86_64, LP64, as gcc lays it
//! out) and gives one struct as a [`Struct`] model with the byte ranges the
//! diff emitter needs.
//!
//! ```text
//! text ─► preprocess (conditionals, #defines, attributes blanked in place)
//!      ─► parse (tree-sitter-c) ─► types (gcc layout) ─► CStruct
//! ```
//!
//! What the front-end reads (conditionals, `.config`, attributes, markers,
//! member macros, bit-fields, constant expressions, what gcc refuses) is
//! listed once, for users and contributors alike, in GUIDE.md's section
//! "What the C front-end reads"; the kernel idioms themselves are tables in
//! [`crate::idioms`], and ARCHITECTURE.md maps the modules below.
//!
//! The model's fields: one per declarator (`int a, b;` gives two fields
//! whose [`MemberSource`](crate::source::MemberSource)s share `lines` and `decl` and differ in `name`);
//! one per anonymous struct or union member, named after the first named
//! field inside it; one per run of adjacent bit-fields (they share storage
//! units), named after its first named bit-field, whose member declarations
//! all point at it; one per `struct_group`, named after the group, whose
//! members are never reordered one by one (code addresses them as a block).
//! For a member written as a macro call (`DECLARE_BITMAP(...)`,
//! `struct_group(...)`), the `MemberSource`'s `decl` is the whole call
//! through its `;`, and `name` is the empty range after the call's `)`:
//! where an attribute for the member goes.
//!
//! Macros: gcc's x86_64 predefined macros and a few kernel constants
//! (`BITS_PER_LONG`, `SMP_CACHE_BYTES`, `PAGE_SIZE`, `DIV_ROUND_UP`,
//! `BITS_TO_LONGS`, `BIT`, `ALIGN`, ABI sizes such as `ETH_ALEN` and
//! `IFNAMSIZ`, `NR_CPUS` from `CONFIG_NR_CPUS`) come first, and the
//! header's own `#define`s replace them. [`Defines`] (`-D`, `[defines]`,
//! the kernel config) win over both: the header's `#define` or `#undef` of
//! such a name is ignored, and [`Header::overridden_defines`] says so.
//!
//! Syntax errors are reported by [`Header::find_struct`] when they lie in
//! the struct or a type it uses (or when the struct cannot be found), so
//! that an unparsable inline function elsewhere in a big header does not
//! stop the work.
//!
//! Known limits: `aligned` on a typedef of a struct does not raise the
//! alignment reported for that struct; cache-line macros always mean 64
//! bytes; function-like macros in struct bodies other than the ones above
//! are not expanded (a located error says which).

mod abi;
mod attrs;
mod checks;
mod config;
mod eval;
mod kernel_types;
mod macro_members;
mod macros;
mod names;
mod parse;
mod preprocess;
mod ranges;
mod structs;
mod types;

pub use crate::header_inputs::{Defines, TypeTable};
pub use config::{load_kernel_config, parse_kernel_config};

use crate::error::Diagnostic;
use crate::model::Struct;
use crate::source::StructSource;
use parse::{Ast, RecordKind, TypeRef};
use preprocess::Preprocessed;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The most fields a struct may have (the largest kernel structs have a
/// few hundred): beyond it the layout search is refused, not started.
pub const MAX_FIELDS: usize = 10_000;

/// A parsed header. Cheap to query many times: each [`Header::find_struct`]
/// lays out only what the struct needs.
#[derive(Clone, Debug)]
pub struct Header {
    path: PathBuf,
    text: String,
    pre: Preprocessed,
    ast: Ast,
    types: TypeTable,
    index: Index,
    /// The compiler lays the struct out ([`Header::with_compiler_layout`]):
    /// a type or a constant the header lacks is a placeholder.
    placeholders: bool,
}

/// Names defined in the header (the first definition of each wins).
#[derive(Clone, Debug, Default)]
struct Index {
    /// struct and union tags
    records: HashMap<String, usize>,
    typedefs: HashMap<String, usize>,
    enums: HashMap<String, usize>,
    /// enumerator name -> (enum index, position)
    enumerators: HashMap<String, (usize, usize)>,
}

impl Index {
    fn build(ast: &Ast) -> Self {
        let mut ix = Index::default();
        for (i, r) in ast.records.iter().enumerate() {
            if let Some(t) = &r.tag {
                ix.records.entry(t.clone()).or_insert(i);
            }
        }
        for (i, t) in ast.typedefs.iter().enumerate() {
            if let Some(n) = &t.declarator.name {
                ix.typedefs.entry(n.clone()).or_insert(i);
            }
        }
        for (i, e) in ast.enums.iter().enumerate() {
            if let Some(t) = &e.tag {
                ix.enums.entry(t.clone()).or_insert(i);
            }
            for (k, en) in e.enumerators.iter().enumerate() {
                ix.enumerators.entry(en.name.clone()).or_insert((i, k));
            }
        }
        ix
    }
}

/// One struct as gcc lays it out, with where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CStruct {
    /// Fields in declaration order with gcc's offsets in `original_offset`;
    /// every access class is `Cold` until an access file is applied;
    /// `min_align` is the struct's own `aligned` attribute (1 if none).
    pub model: Struct,
    /// `sizeof` and `_Alignof` as gcc computes them.
    pub size: u64,
    pub align: u64,
    pub source: StructSource,
}

/// Reads the header at `path` and parses it ([`parse_header`]).
pub fn load_header(
    path: &Path,
    defines: &Defines,
    types: &TypeTable,
) -> Result<Header, Diagnostic> {
    let bytes = std::fs::read(path).map_err(|e| {
        Diagnostic::new(format!("cannot read header: {e}"))
            .in_file(path)
            .help("check the path")
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let good = String::from_utf8_lossy(&e.as_bytes()[..valid]).into_owned();
        let (line, column) = crate::error::line_col(&good, valid);
        Diagnostic::new("the header is not valid UTF-8")
            .in_file(path)
            .at(line, column)
            .help("convert it to UTF-8 (e.g. with iconv)")
    })?;
    parse_header(path, &text, defines, types)
}

/// Parses `text` (the contents of `path`). Fails on preprocessor errors
/// (unterminated `#if`, a bad `#if` expression, an active `#error`).
pub fn parse_header(
    path: &Path,
    text: &str,
    defines: &Defines,
    types: &TypeTable,
) -> Result<Header, Diagnostic> {
    let pre = preprocess::run(path, text, defines)?;
    let ast = parse::parse(
        &pre.parse_text,
        &pre.attributes,
        &pre.unnamed_bitfields,
        &pre.macro_members,
    )
    .map_err(|m| {
        Diagnostic::new(m)
            .in_file(path)
            .at(1, 1)
            .help("the C parser could not start; check that the file is a C header")
    })?;
    let index = Index::build(&ast);
    Ok(Header {
        path: path.to_path_buf(),
        text: text.to_string(),
        pre,
        ast,
        types: types.clone(),
        index,
        placeholders: false,
    })
}

impl Header {
    /// The header read for a struct the compiler lays out (a `--kbuild`,
    /// `--cc` or compilation-database probe, BTF, DWARF): its text says
    /// only where each member is, for the diff; every size, alignment and
    /// offset comes from the compiler. A type the header does not define
    /// (one of another header) and a constant it does not define
    /// (`IPV4_DEVCONF_MAX`, an enumerator of another header) are
    /// placeholders, and a type `types` names (the compiler's) wins over
    /// the header's definition, so that no other header's text is needed.
    pub fn with_compiler_layout(mut self) -> Header {
        self.placeholders = true;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// One line per `#define` or `#undef` of the header that a `-D` flag,
    /// the access file's `[defines]` or the kernel config overrode (the
    /// command line wins): `file:line:col: note: ...`, for the CLI to print.
    pub fn overridden_defines(&self) -> Vec<String> {
        self.pre
            .overridden
            .iter()
            .map(|o| {
                let (line, col) = crate::error::line_col(&self.text, o.at);
                format!(
                    "{}:{line}:{col}: note: the header's definition of {} is ignored: \
                     -D, [defines] or the kernel config set it to {} (the command line wins)",
                    self.path.display(),
                    o.name,
                    o.value
                )
            })
            .collect()
    }

    /// Structs [`Header::find_struct`] can lay out, in source order: struct
    /// tags, and typedef names of structs.
    pub fn struct_names(&self) -> Vec<String> {
        let mut named: Vec<(usize, String)> = Vec::new();
        for r in &self.ast.records {
            if let (RecordKind::Struct, Some(t)) = (r.kind, &r.tag) {
                named.push((r.specifier.start, t.clone()));
            }
        }
        for td in &self.ast.typedefs {
            if let Some(n) = &td.declarator.name {
                if td.declarator.derived.is_empty() && self.typedef_record(n, 0).is_some() {
                    named.push((td.declarator.range.start, n.clone()));
                }
            }
        }
        named.sort();
        let mut seen = std::collections::HashSet::new();
        named
            .into_iter()
            .filter(|(_, n)| seen.insert(n.clone()))
            .map(|(_, n)| n)
            .collect()
    }

    /// The struct (not union) a typedef name stands for.
    fn typedef_record(&self, name: &str, depth: usize) -> Option<usize> {
        let td = &self.ast.typedefs[*self.index.typedefs.get(name)?];
        if depth > 16 || !td.declarator.derived.is_empty() {
            return None;
        }
        let idx = match &td.ty {
            TypeRef::Record { def: Some(i), .. } => *i,
            TypeRef::Record { tag: Some(t), .. } => *self.index.records.get(t)?,
            TypeRef::Name(n) => return self.typedef_record(n, depth + 1),
            _ => return None,
        };
        (self.ast.records[idx].kind == RecordKind::Struct).then_some(idx)
    }

    /// Lays out one struct, named by its tag (`lru_gen_folio` or
    /// `struct lru_gen_folio`) or by a typedef name.
    pub fn find_struct(&self, name: &str) -> Result<CStruct, Diagnostic> {
        let name = name.trim();
        let name = name.strip_prefix("struct ").map_or(name, str::trim);
        let resolver = types::Resolver::new(self);
        if let Some(at) = checks::stray_closing_brace(&self.pre.parse_text) {
            return Err(resolver
                .error(at, "`}` closes no `{`")
                .help("remove the extra `}` (gcc rejects the header)"));
        }
        let idx = match self.index.records.get(name) {
            Some(&i) if self.ast.records[i].kind == RecordKind::Union => {
                let at = self.ast.records[i].specifier.start;
                return Err(resolver
                    .error(
                        at,
                        format!("`{name}` is a union; only structs can be laid out"),
                    )
                    .help("pick the struct that embeds it"));
            }
            Some(&i) => i,
            None => match self.typedef_record(name, 0) {
                Some(i) => i,
                None => return Err(self.unknown_struct(name, &resolver)),
            },
        };
        let c = structs::build(self, &resolver, name, idx)?;
        if c.model.fields.len() > MAX_FIELDS {
            let at = self.ast.records[idx].specifier.start;
            return Err(resolver
                .error(
                    at,
                    format!(
                        "struct `{name}` has {} members, over the limit of {MAX_FIELDS}",
                        c.model.fields.len()
                    ),
                )
                .help("the limit keeps the search bounded; lay out a smaller struct"));
        }
        Ok(c)
    }

    fn unknown_struct(&self, name: &str, resolver: &types::Resolver) -> Diagnostic {
        let names = self.struct_names();
        let close = crate::suggest::close_names(name, names.iter().map(String::as_str));
        let d = Diagnostic::new(format!("no struct `{name}` in the header")).in_file(&self.path);
        if let Some(help) = resolver.skipped_definition(name, self.text.len()) {
            return d.help(help);
        }
        if !close.is_empty() {
            return d.help(format!("did you mean {}?", quote_list(&close)));
        }
        if let Some(e) = self.ast.errors.first() {
            let mut s = resolver.syntax_diagnostic(e);
            s.help = Some(format!(
                "struct `{name}` was not found, maybe because of this error; {}",
                s.help.unwrap_or_default()
            ));
            return s;
        }
        if names.is_empty() {
            d.help("the header defines no struct (inactive #if branches do not count)")
        } else {
            let shown: Vec<String> = names.iter().take(12).cloned().collect();
            d.help(format!("structs in this header: {}", quote_list(&shown)))
        }
    }
}

/// Evaluates an integer constant expression as array sizes and bit-field
/// widths are evaluated (C's types and conversions, x86_64 LP64), without
/// macros, enumerators or `sizeof`: the value and its C type (`int`,
/// `unsigned int`, `long`, `unsigned long`), or why it has none.
pub fn evaluate_constant(expr: &str) -> Result<(i128, &'static str), String> {
    struct NoNames(macros::MacroTable);
    impl eval::Env for NoNames {
        fn macros(&self) -> &macros::MacroTable {
            &self.0
        }
    }
    let env = NoNames(macros::MacroTable::default());
    eval::eval_typed(&macros::ptokens(expr), &env, eval::Mode::Constant)
        .map(|v| (v.v, v.ty.name()))
        .map_err(|e| e.message)
}

fn quote_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
