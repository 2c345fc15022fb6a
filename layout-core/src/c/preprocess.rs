//! The part of the C preprocessor a layout needs, done without moving a
//! byte: conditionals are evaluated, `#define`s collected, and directive
//! lines, skipped groups and attributes are blanked with spaces (newlines
//! kept) in a copy of the text that tree-sitter then parses. Byte offsets
//! and line numbers in that copy are those of the original header.
//!
//! Member macros (`DECLARE_BITMAP`, `struct_group`, ...) are respelled in
//! place as the declarations they stand for ([`super::macro_members`]).
//!
//! Not done: `#include` (types from other headers come from the built-in
//! table or the access file's `[types]`), and expansion of other macros
//! (see [`super::attrs`]). A condition that cannot be evaluated (it tests
//! a macro from an included header) skips its whole group and is recorded;
//! an `#error` is recorded, not fatal (see [`Preprocessed::refusals`]).

use super::attrs::{self, Attr, MarkerKind};
use super::eval::{self, Env, Mode};
use super::macro_members::{self, MacroMember};
use super::macros::{self, collect_args, Macro, MacroTable, PTok};
use super::Defines;
use crate::error::{line_col, Diagnostic};
use crate::lex::{tokenize, Tok, TokKind};
use std::ops::Range;
use std::path::Path;

/// An attribute that was blanked, and what it meant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AttrUse {
    pub range: Range<usize>,
    pub attrs: Vec<Attr>,
}

/// A blanked struct-body marker macro such as `CACHELINE_PADDING(_pad1_);`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Marker {
    pub kind: MarkerKind,
    /// From the macro name through the `;` (or `)` when no `;` follows).
    pub range: Range<usize>,
    /// The first argument (the padding or group name).
    pub name: Range<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RegionKind {
    /// A directive line of an active conditional context (`#ifdef`,
    /// `#endif`, `#define`, ...), from the line start to before its newline.
    Directive,
    /// Consecutive lines of skipped groups.
    Inactive,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    pub kind: RegionKind,
    pub range: Range<usize>,
}

/// A conditional group whose condition could not be evaluated (it uses a
/// macro from a header this one includes): all its branches are skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Undecided {
    /// From the start of the `#if` (or `#elif`) line to the end of the
    /// group's `#endif` line.
    pub range: Range<usize>,
    /// Why: the evaluation error, at the directive's line.
    pub error: Diagnostic,
}

/// `#pragma pack` state: from `at` on, members are aligned to at most
/// `max_align` (`None`: no limit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PackChange {
    pub at: usize,
    pub max_align: Option<u64>,
}

#[derive(Clone, Debug)]
pub(crate) struct Preprocessed {
    /// The header with directives, skipped groups, attributes and markers
    /// blanked.
    pub parse_text: String,
    /// Macros at the end of the header.
    pub macros: MacroTable,
    pub attributes: Vec<AttrUse>,
    pub markers: Vec<Marker>,
    /// Where a `_` was written into the parse text to name an unnamed
    /// bit-field (`unsigned short : 4` → `unsigned short _:4`): tree-sitter
    /// cannot parse an unnamed bit-field after a multi-word type.
    pub unnamed_bitfields: Vec<usize>,
    /// Member macros rewritten in place (`DECLARE_BITMAP`, `struct_group`,
    /// ...), in order.
    pub macro_members: Vec<MacroMember>,
    pub regions: Vec<Region>,
    /// Header `#define`s and `#undef`s the command line overrode.
    pub overridden: Vec<Overridden>,
    pub undecided: Vec<Undecided>,
    /// Active `#error` directives. Without the headers this one includes,
    /// conditions that test their macros see 0 and may reach an `#error`
    /// the real build never reaches, so an `#error` only stops a struct
    /// whose body holds it.
    pub refusals: Vec<(Range<usize>, Diagnostic)>,
    pub packs: Vec<PackChange>,
}

impl Preprocessed {
    /// The `#pragma pack` limit in force at byte `at`.
    pub fn pack_at(&self, at: usize) -> Option<u64> {
        let k = self.packs.partition_point(|p| p.at <= at);
        k.checked_sub(1).and_then(|k| self.packs[k].max_align)
    }
}

/// Macros every translation unit sees: gcc's predefined x86_64 LP64 macros
/// and a few kernel constants with their x86_64 values.
fn builtin_macros() -> MacroTable {
    let mut t = MacroTable::default();
    let object = [
        ("__x86_64__", "1"),
        ("__x86_64", "1"),
        ("__LP64__", "1"),
        ("_LP64", "1"),
        ("__GNUC__", "12"),
        ("__CHAR_BIT__", "8"),
        ("__SIZEOF_SHORT__", "2"),
        ("__SIZEOF_INT__", "4"),
        ("__SIZEOF_LONG__", "8"),
        ("__SIZEOF_LONG_LONG__", "8"),
        ("__SIZEOF_POINTER__", "8"),
        ("__SIZEOF_SIZE_T__", "8"),
        ("__BIGGEST_ALIGNMENT__", "16"),
        ("__ORDER_LITTLE_ENDIAN__", "1234"),
        ("__ORDER_BIG_ENDIAN__", "4321"),
        ("__BYTE_ORDER__", "1234"),
        ("__LITTLE_ENDIAN", "1234"),
        ("__LITTLE_ENDIAN_BITFIELD", "1"),
        ("BITS_PER_BYTE", "8"),
        ("BITS_PER_LONG", "64"),
        ("BITS_PER_LONG_LONG", "64"),
        ("L1_CACHE_SHIFT", "6"),
        ("L1_CACHE_BYTES", "64"),
        ("SMP_CACHE_BYTES", "64"),
        ("PAGE_SHIFT", "12"),
        ("PAGE_SIZE", "(1UL << PAGE_SHIFT)"),
        ("PAGE_MASK", "(~(PAGE_SIZE - 1))"),
        // Constants of the kernel ABI that headers take from others they
        // include (UAPI headers, <linux/threads.h>, <linux/numa.h>).
        ("ETH_ALEN", "6"),
        ("ETH_HLEN", "14"),
        ("ETH_ZLEN", "60"),
        ("ETH_DATA_LEN", "1500"),
        ("ETH_FRAME_LEN", "1514"),
        ("ETH_FCS_LEN", "4"),
        ("ETH_GSTRING_LEN", "32"),
        ("IFNAMSIZ", "16"),
        ("IFALIASZ", "256"),
        ("IFHWADDRLEN", "6"),
        ("MAX_ADDR_LEN", "32"),
        ("NAME_MAX", "255"),
        ("PATH_MAX", "4096"),
        ("XATTR_NAME_MAX", "255"),
        ("TASK_COMM_LEN", "16"),
        ("KSYM_NAME_LEN", "512"),
        ("BPF_OBJ_NAME_LEN", "16U"),
        ("CRYPTO_MAX_ALG_NAME", "128"),
        ("ARCH_KMALLOC_MINALIGN", "8"),
        ("ARCH_SLAB_MINALIGN", "8"),
        ("MAX_SKB_FRAGS", "17UL"),
        // From the configuration when one is given (--config).
        ("NR_CPUS", "CONFIG_NR_CPUS"),
        ("NODES_SHIFT", "CONFIG_NODES_SHIFT"),
        ("MAX_NUMNODES", "(1 << NODES_SHIFT)"),
    ];
    for (name, body) in object {
        t.define(name, Macro::object(macros::ptokens(body)));
    }
    t.define(
        "DIV_ROUND_UP",
        Macro::function(&["n", "d"], "(((n) + (d) - 1) / (d))"),
    );
    t.define(
        "BITS_TO_LONGS",
        Macro::function(&["nr"], "DIV_ROUND_UP(nr, 64)"),
    );
    t.define("BIT", Macro::function(&["nr"], "(1UL << (nr))"));
    t.define(
        "__ALIGN_KERNEL_MASK",
        Macro::function(&["x", "mask"], "(((x) + (mask)) & ~(mask))"),
    );
    t.define(
        "__ALIGN_KERNEL",
        Macro::function(&["x", "a"], "__ALIGN_KERNEL_MASK(x, (a) - 1)"),
    );
    t.define(
        "__ALIGN_MASK",
        Macro::function(&["x", "mask"], "__ALIGN_KERNEL_MASK((x), (mask))"),
    );
    t.define(
        "ALIGN",
        Macro::function(&["x", "a"], "__ALIGN_KERNEL((x), (a))"),
    );
    t.define("BIT_ULL", Macro::function(&["nr"], "(1ULL << (nr))"));
    t
}

struct MacroEnv<'a>(&'a MacroTable);

impl Env for MacroEnv<'_> {
    fn macros(&self) -> &MacroTable {
        self.0
    }
}

/// One open `#if` group.
struct Frame {
    /// Was the text around the `#if` active?
    parent_active: bool,
    /// Is the current branch taken?
    branch_active: bool,
    /// Has some branch been taken (then later ones are skipped)?
    taken: bool,
    else_seen: bool,
    /// Byte offset of the `#if`, for "unterminated" errors.
    at: usize,
    /// Index into `Pre::undecided` when a condition of this group could
    /// not be evaluated.
    undecided: Option<usize>,
}

struct Pre<'a> {
    path: &'a Path,
    text: &'a str,
    macros: MacroTable,
    stack: Vec<Frame>,
    regions: Vec<Region>,
    /// Active code tokens (no comments, no newlines), in order.
    code: Vec<Tok>,
    undecided: Vec<Undecided>,
    refusals: Vec<(Range<usize>, Diagnostic)>,
    packs: Vec<PackChange>,
    /// `#pragma pack(push)` stack.
    pack_stack: Vec<Option<u64>>,
    /// Macros set by `-D`, `[defines]` or the kernel config: the header's
    /// `#define` and `#undef` of them are ignored (the command line wins).
    fixed: std::collections::HashMap<String, i64>,
    overridden: Vec<Overridden>,
}

/// A header `#define` or `#undef` that a `-D`, `[defines]` or kernel config
/// value overrode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Overridden {
    pub name: String,
    pub value: i64,
    /// Where the directive is.
    pub at: usize,
}

pub(crate) fn run(path: &Path, text: &str, defines: &Defines) -> Result<Preprocessed, Diagnostic> {
    let toks = tokenize(text);
    let mut macros = builtin_macros();
    // Only the defines the header can name matter (a kernel .config has
    // thousands, a header uses a few): its identifiers, and the
    // `CONFIG_X_MODULE` that `IS_ENABLED(CONFIG_X)` looks at.
    let builtin_idents: Vec<String> = macros.body_idents().map(String::from).collect();
    let mut named = std::collections::HashSet::new();
    let mut fixed = std::collections::HashMap::new();
    let idents = toks
        .iter()
        .filter(|t| t.kind == TokKind::Ident)
        .map(|t| t.text(text))
        .chain(builtin_idents.iter().map(String::as_str));
    for name in idents {
        if named.insert(name) {
            let module = format!("{name}_MODULE");
            for n in [name, module.as_str()] {
                if let Some(value) = defines.get(n) {
                    macros.define(n, Macro::object(vec![PTok::Number(value.to_string())]));
                    fixed.insert(n.to_string(), value);
                }
            }
        }
    }
    let mut pre = Pre {
        path,
        text,
        macros,
        stack: Vec::new(),
        regions: Vec::new(),
        code: Vec::new(),
        undecided: Vec::new(),
        refusals: Vec::new(),
        packs: Vec::new(),
        pack_stack: Vec::new(),
        fixed,
        overridden: Vec::new(),
    };
    pre.lines(&toks)?;
    if let Some(open) = pre.stack.last() {
        return Err(pre
            .error(open.at, "unterminated conditional directive")
            .help("add the matching #endif"));
    }
    let mut bytes = text.as_bytes().to_vec();
    for r in &pre.regions {
        blank(&mut bytes, r.range.clone());
    }
    let scan = scan_code(text, &pre.code, &pre.macros, &mut bytes);
    let parse_text = String::from_utf8(bytes).map_err(|_| {
        Diagnostic::new("internal error: blanking broke UTF-8")
            .in_file(path)
            .at(1, 1)
            .help("this is a bug in cachelayout; please report it with the header")
    })?;
    Ok(Preprocessed {
        parse_text,
        macros: pre.macros,
        attributes: scan.attributes,
        markers: scan.markers,
        unnamed_bitfields: scan.unnamed_bitfields,
        macro_members: scan.macro_members,
        regions: pre.regions,
        overridden: pre.overridden,
        undecided: pre.undecided,
        refusals: pre.refusals,
        packs: pre.packs,
    })
}

fn blank(bytes: &mut [u8], range: Range<usize>) {
    for b in &mut bytes[range] {
        if *b != b'\n' {
            *b = b' ';
        }
    }
}

impl Pre<'_> {
    fn error(&self, at: usize, message: impl Into<String>) -> Diagnostic {
        let (line, col) = line_col(self.text, at);
        Diagnostic::new(message).in_file(self.path).at(line, col)
    }

    fn active(&self) -> bool {
        match self.stack.last() {
            Some(f) => f.parent_active && f.branch_active,
            None => true,
        }
    }

    fn push_region(&mut self, kind: RegionKind, range: Range<usize>) {
        if kind == RegionKind::Inactive {
            if let Some(last) = self.regions.last_mut() {
                let between = &self.text[last.range.end..range.start];
                if last.kind == RegionKind::Inactive
                    && between.trim_matches([' ', '\t', '\r']) == "\n"
                {
                    last.range.end = range.end;
                    return;
                }
            }
        }
        self.regions.push(Region { kind, range });
    }

    /// Walks the logical lines of the header.
    fn lines(&mut self, toks: &[Tok]) -> Result<(), Diagnostic> {
        let mut i = 0;
        let mut line_start = 0;
        loop {
            let j = toks[i..]
                .iter()
                .position(|t| t.kind == TokKind::Newline)
                .map_or(toks.len(), |p| i + p);
            let line_end = toks.get(j).map_or(self.text.len(), |t| t.range.start);
            let line = &toks[i..j];
            let first_code = line.iter().position(|t| t.kind != TokKind::Comment);
            let is_directive = first_code
                .is_some_and(|k| line[k].kind == TokKind::Punct && line[k].text(self.text) == "#");
            if is_directive {
                let after_hash = &line[first_code.unwrap_or(0) + 1..];
                let kind = self.directive(after_hash, line_start)?;
                self.push_region(kind, line_start..line_end);
            } else if self.active() {
                self.code
                    .extend(line.iter().filter(|t| t.kind != TokKind::Comment).cloned());
            } else if line_end > line_start {
                self.push_region(RegionKind::Inactive, line_start..line_end);
            }
            match toks.get(j) {
                Some(nl) => {
                    line_start = nl.range.end;
                    i = j + 1;
                }
                None => return Ok(()),
            }
        }
    }

    /// Evaluates a condition; one that cannot be evaluated makes the group
    /// undecided (`None`): none of its branches is taken.
    fn decide(&mut self, name: &str, rest: &[PTok], at: usize) -> Result<Option<bool>, Diagnostic> {
        match self.condition(name, rest, at) {
            Ok(v) => Ok(Some(v)),
            Err(e) if name == "if" => {
                self.undecided.push(Undecided {
                    range: at..self.text.len(),
                    error: e,
                });
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Handles one directive; returns how its line counts.
    fn directive(&mut self, toks: &[Tok], at: usize) -> Result<RegionKind, Diagnostic> {
        let words: Vec<&Tok> = toks.iter().filter(|t| t.kind != TokKind::Comment).collect();
        let name = words.first().map_or("", |t| t.text(self.text));
        let rest: Vec<PTok> = words
            .iter()
            .skip(1)
            .map(|t| macros::ptokens(t.text(self.text)))
            .flat_map(|v| v.into_iter())
            .collect();
        let was_active = self.active();
        let kind_if = |active: bool| {
            if active {
                RegionKind::Directive
            } else {
                RegionKind::Inactive
            }
        };
        match name {
            "if" | "ifdef" | "ifndef" => {
                let decided = if was_active {
                    self.decide(name, &rest, at)?
                } else {
                    Some(false)
                };
                let cond = decided == Some(true);
                self.stack.push(Frame {
                    parent_active: was_active,
                    branch_active: cond,
                    taken: cond || !was_active || decided.is_none(),
                    else_seen: false,
                    at,
                    undecided: decided.is_none().then(|| self.undecided.len() - 1),
                });
                Ok(kind_if(was_active))
            }
            "elif" | "elifdef" | "elifndef" | "else" => {
                let Some(frame) = self.stack.last() else {
                    return Err(self
                        .error(at, format!("#{name} without #if"))
                        .help("remove it, or add the #if it belongs to"));
                };
                if frame.else_seen {
                    return Err(self
                        .error(at, format!("#{name} after #else"))
                        .help("an #if group has one #else, at its end; add the missing #endif"));
                }
                let parent = frame.parent_active;
                let open = parent && !frame.taken;
                let decided = match name {
                    "else" => Some(open),
                    _ if open => self.decide(&name.replace("elif", "if"), &rest, at)?,
                    _ => Some(false),
                };
                let cond = decided == Some(true);
                let new_undecided = decided.is_none().then(|| self.undecided.len() - 1);
                let frame = self.stack.last_mut().expect("checked above");
                frame.branch_active = cond;
                frame.taken |= cond || decided.is_none();
                frame.else_seen = name == "else";
                if frame.undecided.is_none() {
                    frame.undecided = new_undecided;
                }
                Ok(kind_if(parent))
            }
            "endif" => match self.stack.pop() {
                Some(frame) => {
                    if let Some(u) = frame.undecided {
                        let end = self.text[at..]
                            .find('\n')
                            .map_or(self.text.len(), |p| at + p);
                        self.undecided[u].range.end = end;
                    }
                    Ok(kind_if(frame.parent_active))
                }
                None => Err(self
                    .error(at, "#endif without #if")
                    .help("remove it, or add the #if it closes")),
            },
            _ if !was_active => Ok(RegionKind::Inactive),
            "define" => {
                self.define(toks, at)?;
                Ok(RegionKind::Directive)
            }
            "undef" => {
                if let Some(PTok::Ident(n)) = rest.first() {
                    if let Some(&value) = self.fixed.get(n) {
                        self.overridden.push(Overridden {
                            name: n.clone(),
                            value,
                            at,
                        });
                    } else {
                        self.macros.undef(n);
                    }
                }
                Ok(RegionKind::Directive)
            }
            "error" => {
                let end = self.text[at..]
                    .find('\n')
                    .map_or(self.text.len(), |p| at + p);
                let d = self
                    .error(at, format!("#error {}", macros::join(&rest)))
                    .help(
                        "the header refuses this configuration: check the -D flags and [defines]",
                    );
                self.refusals.push((at..end, d));
                Ok(RegionKind::Directive)
            }
            "pragma" if matches!(rest.first(), Some(PTok::Ident(p)) if p == "pack") => {
                self.pragma_pack(&rest[1..], at)?;
                Ok(RegionKind::Directive)
            }
            _ => Ok(RegionKind::Directive),
        }
    }

    /// `#pragma pack(N)`, `pack()`, `pack(push[, N])`, `pack(pop)`.
    fn pragma_pack(&mut self, args: &[PTok], at: usize) -> Result<(), Diagnostic> {
        let bad_pack = self
            .error(at, "cannot read this #pragma pack")
            .help("write #pragma pack(N), pack(push, N), pack(pop) or pack()");
        let bad = || bad_pack.clone();
        let inner = match args {
            [PTok::Punct(o), inner @ .., PTok::Punct(c)] if o == "(" && c == ")" => inner,
            _ => return Err(bad()),
        };
        let items: Vec<&[PTok]> = if inner.is_empty() {
            Vec::new()
        } else {
            inner
                .split(|t| matches!(t, PTok::Punct(p) if p == ","))
                .collect()
        };
        let current = self.packs.last().and_then(|p| p.max_align);
        let value = |toks: &[PTok]| -> Result<Option<u64>, Diagnostic> {
            match toks {
                [PTok::Number(n)] => match n.parse::<u64>() {
                    Ok(v) if v.is_power_of_two() && v <= 16 => Ok(Some(v)),
                    Ok(0) => Ok(None),
                    _ => Err(bad()),
                },
                _ => Err(bad()),
            }
        };
        let next = match items.as_slice() {
            [] => None,
            [[PTok::Ident(w)], rest @ ..] if w == "push" => {
                self.pack_stack.push(current);
                match rest {
                    [] => current,
                    [n] => value(n)?,
                    _ => return Err(bad()),
                }
            }
            [[PTok::Ident(w)]] if w == "pop" => self.pack_stack.pop().unwrap_or(None),
            [n] => value(n)?,
            _ => return Err(bad()),
        };
        self.packs.push(PackChange {
            at,
            max_align: next,
        });
        Ok(())
    }

    fn condition(&self, name: &str, rest: &[PTok], at: usize) -> Result<bool, Diagnostic> {
        match name {
            "ifdef" | "ifndef" => {
                let Some(PTok::Ident(n)) = rest.first() else {
                    return Err(self
                        .error(at, format!("#{name} needs a macro name"))
                        .help(format!("write `#{name} NAME`")));
                };
                Ok(self.macros.is_defined(n) == (name == "ifdef"))
            }
            _ => eval::eval_tokens(rest, &MacroEnv(&self.macros), Mode::Directive)
                .map(|v| v != 0)
                .map_err(|e| {
                    let d = self.error(at, format!("cannot evaluate #{name}: {}", e.message));
                    match e.help {
                        Some(h) => d.help(h),
                        None => d.help("simplify the condition or pass the macros it uses with -D"),
                    }
                }),
        }
    }

    /// `#define NAME body` or `#define NAME(params) body`.
    fn define(&mut self, toks: &[Tok], at: usize) -> Result<(), Diagnostic> {
        let code: Vec<&Tok> = toks.iter().filter(|t| t.kind != TokKind::Comment).collect();
        let Some(name_tok) = code.get(1).filter(|t| t.kind == TokKind::Ident) else {
            return Err(self
                .error(at, "#define needs a macro name")
                .help("write `#define NAME value`"));
        };
        let name = name_tok.text(self.text).to_string();
        if let Some(&value) = self.fixed.get(&name) {
            self.overridden.push(Overridden { name, value, at });
            return Ok(());
        }
        let to_ptoks = |ts: &[&Tok]| -> Vec<PTok> {
            ts.iter()
                .flat_map(|t| macros::ptokens(t.text(self.text)))
                .collect()
        };
        let function_like = code
            .get(2)
            .is_some_and(|t| t.text(self.text) == "(" && t.range.start == name_tok.range.end);
        if !function_like {
            self.macros
                .define(name, Macro::object(to_ptoks(&code[2..])));
            return Ok(());
        }
        let close = code[3..]
            .iter()
            .position(|t| t.text(self.text) == ")")
            .map(|p| p + 3)
            .ok_or_else(|| {
                self.error(at, format!("#define {name}: unterminated parameter list"))
                    .help("close the parameter list with `)`")
            })?;
        let mut params = Vec::new();
        let mut variadic = false;
        for t in &code[3..close] {
            match (t.kind, t.text(self.text)) {
                (TokKind::Ident, p) => params.push(p.to_string()),
                (TokKind::Punct, "...") => variadic = true,
                (TokKind::Punct, ",") => {}
                _ => {
                    return Err(self
                        .error(at, format!("#define {name}: bad parameter list"))
                        .help("parameters are names separated by commas, or `...`"))
                }
            }
        }
        self.macros.define(
            name,
            Macro {
                params: Some(params),
                variadic,
                body: to_ptoks(&code[close + 1..]),
            },
        );
        Ok(())
    }
}

struct Scan {
    attributes: Vec<AttrUse>,
    markers: Vec<Marker>,
    unnamed_bitfields: Vec<usize>,
    macro_members: Vec<MacroMember>,
}

const TYPE_KEYWORDS: &[&str] = &[
    "short", "long", "signed", "unsigned", "int", "char", "_Bool",
];

/// Names an unnamed bit-field right after type keyword `kw` and before
/// `colon` with a `_` in the blanks around the colon; returns where.
fn name_unnamed_bitfield(bytes: &mut [u8], kw: &Tok, colon: &Tok) -> Option<usize> {
    let (a, c) = (kw.range.end, colon.range.start);
    if c >= a + 2 {
        bytes[c - 1] = b'_';
        return Some(c - 1);
    }
    if c == a + 1 && matches!(bytes.get(c + 1), Some(b' ' | b'\t')) {
        bytes[c] = b'_';
        bytes[c + 1] = b':';
        return Some(c);
    }
    None
}

/// `randomized_struct_fields_start` / `_end`: an anonymous struct with
/// CONFIG_RANDSTRUCT, nothing without it.
const RANDSTRUCT_BOUNDS: &[&str] = &[
    "randomized_struct_fields_start",
    "randomized_struct_fields_end",
];

/// Finds attributes, marker macros and GNU keyword spellings in the active
/// code, records them and blanks (or respells) them in `bytes`.
fn scan_code(text: &str, code: &[Tok], macros: &MacroTable, bytes: &mut [u8]) -> Scan {
    let ptoks: Vec<PTok> = code
        .iter()
        .map(|t| match t.kind {
            TokKind::Ident => PTok::Ident(t.text(text).to_string()),
            TokKind::Number => PTok::Number(t.text(text).to_string()),
            TokKind::CharLit => PTok::CharLit(t.text(text).to_string()),
            TokKind::Punct => PTok::Punct(t.text(text).to_string()),
            _ => PTok::Other(t.text(text).to_string()),
        })
        .collect();
    let mut attributes = Vec::new();
    let mut markers = Vec::new();
    let mut unnamed_bitfields = Vec::new();
    let mut macro_members = Vec::new();
    let mut i = 0;
    while i < ptoks.len() {
        let PTok::Ident(name) = &ptoks[i] else {
            i += 1;
            continue;
        };
        let colon_next = matches!(ptoks.get(i + 1), Some(PTok::Punct(p)) if p == ":");
        if colon_next && TYPE_KEYWORDS.contains(&name.as_str()) {
            if let Some(at) = name_unnamed_bitfield(bytes, &code[i], &code[i + 1]) {
                unnamed_bitfields.push(at);
            }
            i += 1;
            continue;
        }
        // The bounds of task_struct's randomizable part: nothing unless
        // CONFIG_RANDSTRUCT (compiler_types.h), as `__randomize_layout`'s
        // attribute is read as nothing; the header's own `#define` wins.
        if RANDSTRUCT_BOUNDS.contains(&name.as_str()) && macros.get(name).is_none() {
            blank(bytes, code[i].range.clone());
            i += 1;
            continue;
        }
        if let Some(spelling) = crate::idioms::keyword_respelling(name) {
            bytes[code[i].range.clone()].copy_from_slice(spelling.as_bytes());
            i += 1;
            continue;
        }
        let paren_next = matches!(ptoks.get(i + 1), Some(PTok::Punct(p)) if p == "(");
        if paren_next {
            if matches!(name.as_str(), "offsetof" | "__builtin_offsetof") {
                // tree-sitter reads `offsetof(T, a.b[1])` badly; the size is
                // evaluated from the header's own text, so the parser only
                // needs a call here: `o_______(0         )`.
                if let Ok((_, next)) = collect_args(&ptoks, i + 1) {
                    let word = code[i].range.clone();
                    bytes[word.start] = b'o';
                    bytes[word.start + 1..word.end].fill(b'_');
                    let inner = code[i + 1].range.end..code[next - 1].range.start;
                    if !inner.is_empty() {
                        blank(bytes, inner.clone());
                        bytes[inner.start] = b'0';
                    }
                    i = next;
                    continue;
                }
            }
            if let Some((member, resume)) = macro_members::rewrite(&ptoks, code, i, bytes) {
                macro_members.push(member);
                i = resume;
                continue;
            }
            // The name first: collecting every call's arguments would cost
            // the square of the nesting (`typeof(typeof(...))`).
            let marker = crate::idioms::MarkerKind::<()>::from_macro(name, || None).is_some();
            if let Some(Ok((args, next))) = marker.then(|| collect_args(&ptoks, i + 1)) {
                if let Some(kind) = attrs::marker_kind(name, &args) {
                    let mut end = code[next - 1].range.end;
                    let mut after = next;
                    if matches!(ptoks.get(next), Some(PTok::Punct(p)) if p == ";") {
                        end = code[next].range.end;
                        after = next + 1;
                    }
                    let start = code[i].range.start;
                    let name_range = match args.first().map(Vec::as_slice) {
                        Some([PTok::Ident(_)]) => code[i + 2].range.clone(),
                        _ => start..start,
                    };
                    blank(bytes, start..end);
                    markers.push(Marker {
                        kind,
                        range: start..end,
                        name: name_range,
                    });
                    i = after;
                    continue;
                }
            }
        }
        if let Some(r) = attrs::read_one(&ptoks, i, macros) {
            let range = code[i].range.start..code[r.next - 1].range.end;
            blank(bytes, range.clone());
            attributes.push(AttrUse {
                range,
                attrs: r.attrs,
            });
            i = r.next;
            continue;
        }
        i += 1;
    }
    Scan {
        attributes,
        markers,
        unnamed_bitfields,
        macro_members,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pre(text: &str) -> Preprocessed {
        let mut d = Defines::default();
        d.insert("CONFIG_ON", 1);
        d.insert("LEVEL", 3);
        run(Path::new("t.h"), text, &d).unwrap()
    }

    fn err(text: &str) -> Diagnostic {
        run(Path::new("t.h"), text, &Defines::default()).unwrap_err()
    }

    #[test]
    fn conditionals_blank_inactive_text_and_keep_offsets() {
        let text = "struct s {\n#ifdef CONFIG_ON\n\tint a;\n#else\n\tint b;\n\tint c;\n#endif\n#if LEVEL > 2 && !defined(CONFIG_OFF)\n\tint d;\n#elif 1\n\tint e;\n#endif\n};\n";
        let p = pre(text);
        assert_eq!(p.parse_text.len(), text.len());
        assert_eq!(p.parse_text.lines().count(), text.lines().count());
        assert!(p.parse_text.contains("int a;"));
        assert!(!p.parse_text.contains("int b;") && !p.parse_text.contains("int c;"));
        assert!(p.parse_text.contains("int d;"));
        assert!(!p.parse_text.contains("int e;"));
        assert!(!p.parse_text.contains('#'));
        let kinds: Vec<RegionKind> = p.regions.iter().map(|r| r.kind).collect();
        use RegionKind::*;
        assert_eq!(
            kinds,
            [
                Directive, Directive, Inactive, Directive, Directive, Directive, Inactive,
                Directive
            ]
        );
        assert_eq!(&text[p.regions[2].range.clone()], "\tint b;\n\tint c;");
    }

    #[test]
    fn nested_groups_inside_skipped_ones_stay_skipped() {
        let p = pre(
            "#ifdef CONFIG_OFF\n#ifdef CONFIG_ON\nint a;\n#else\nint b;\n#endif\n#endif\nint c;\n",
        );
        assert!(!p.parse_text.contains("int a") && !p.parse_text.contains("int b"));
        assert!(p.parse_text.contains("int c"));
        assert_eq!(p.regions.len(), 3, "{:?}", p.regions);
    }

    #[test]
    fn defines_and_undefs() {
        let p = pre("#define A 4\n#define F(x, y) ((x) * (y))\n#define G(...) __VA_ARGS__\n#define B\n#undef B\n#ifndef A\n#define A 5\n#endif\n");
        let env = MacroEnv(&p.macros);
        assert_eq!(eval::eval("F(A, 2)", &env, Mode::Constant), Ok(8));
        assert_eq!(eval::eval("G(3) + 1", &env, Mode::Constant), Ok(4));
        assert!(!p.macros.is_defined("B"));
        assert!(p.macros.is_defined("__x86_64__"));
    }

    #[test]
    fn attributes_and_markers_are_blanked_and_recorded() {
        let text = "struct s {\n\tint a ____cacheline_aligned_in_smp;\n\tCACHELINE_PADDING(_pad1_);\n\tint __rcu *p __attribute__((aligned(16)));\n\t__signed__ char c;\n} __packed;\n";
        let p = pre(text);
        assert_eq!(p.attributes.len(), 4);
        assert_eq!(
            &text[p.attributes[0].range.clone()],
            "____cacheline_aligned_in_smp"
        );
        assert_eq!(p.markers.len(), 1);
        assert_eq!(
            &text[p.markers[0].range.clone()],
            "CACHELINE_PADDING(_pad1_);"
        );
        assert_eq!(&text[p.markers[0].name.clone()], "_pad1_");
        assert!(p
            .parse_text
            .contains("\tint a                             ;\n"));
        assert!(p.parse_text.contains("signed     char c;"));
        assert!(p.parse_text.contains("}         ;"));
    }

    #[test]
    fn directive_errors_have_lines() {
        assert_eq!(err("int a;\n#if 1\n").line, 2);
        assert_eq!(err("#else\n").line, 1);
        assert_eq!(err("#if 1\n#else\n#else\n#endif\n").line, 3);
        assert_eq!(err("#endif\n").line, 1);
        assert_eq!(err("\n#pragma pack(3)\n").line, 2);
        assert_eq!(err("#pragma pack(push, 1, 2)\n").line, 1);
    }

    #[test]
    fn undecided_conditions_skip_every_branch_and_say_why() {
        let text = "int a;\n#if 1 +\nint b;\n#elif 1\nint c;\n#else\nint d;\n#endif\nint e;\n#if X && FOO(3)\nint f;\n#endif\n#if 0\n#elif FOO(1)\n#endif\n";
        let p = pre(text);
        for gone in ["int b", "int c", "int d", "int f"] {
            assert!(!p.parse_text.contains(gone), "{gone}");
        }
        assert!(p.parse_text.contains("int a") && p.parse_text.contains("int e"));
        assert_eq!(
            p.undecided.len(),
            2,
            "X is 0, so FOO(3) is never evaluated; FOO(1) is"
        );
        let u = &p.undecided[0];
        assert_eq!(u.error.line, 2);
        assert_eq!(
            &text[u.range.clone()],
            "#if 1 +\nint b;\n#elif 1\nint c;\n#else\nint d;\n#endif"
        );
        let u = &p.undecided[1];
        assert_eq!(u.error.line, 14);
        assert!(
            u.error.message.contains("FOO() is not defined"),
            "{}",
            u.error.message
        );
    }

    #[test]
    fn error_directives_are_recorded_not_fatal() {
        let p = pre("\n\n#error nope\n#if 0\n#error skipped\n#endif\nint a;\n");
        assert_eq!(p.refusals.len(), 1);
        let (r, e) = &p.refusals[0];
        assert_eq!((e.line, e.message.as_str()), (3, "#error nope"));
        assert_eq!(r.start, 2);
        assert!(p.parse_text.contains("int a;"));
    }

    #[test]
    fn pragma_pack_states() {
        let p = pre("Z\n#pragma pack(push, 2)\nA\n#pragma pack(1)\nB\n#pragma pack(pop)\nC\n#pragma pack(4)\nD\n#pragma pack()\nE\n#pragma pack(push)\nF\n");
        let text = &p.parse_text;
        let at = |s: &str| text.find(s).unwrap();
        assert_eq!(p.pack_at(at("Z")), None);
        assert_eq!(p.pack_at(at("A")), Some(2));
        assert_eq!(p.pack_at(at("B")), Some(1));
        assert_eq!(p.pack_at(at("C")), None);
        assert_eq!(p.pack_at(at("D")), Some(4));
        assert_eq!(p.pack_at(at("E")), None);
        assert_eq!(p.pack_at(at("F")), None);
    }

    #[test]
    fn feature_tests_in_conditions() {
        let p = pre("#if __has_attribute(__aligned__) && !__has_builtin(__builtin_foo) && !__has_include(<linux/x.h>)\nint a;\n#endif\n");
        assert!(p.parse_text.contains("int a;"));
        assert!(p.undecided.is_empty());
    }

    #[test]
    fn comments_and_continuations_in_directives() {
        let p = pre("#define N /* four */ 4 \\\n  + 1\n#if N == 5 /* yes\n  still a comment */\nint a;\n#endif\n");
        assert!(p.parse_text.contains("int a;"));
        assert_eq!(p.regions[0].kind, RegionKind::Directive);
        assert_eq!(p.regions.len(), 3);
    }
}
