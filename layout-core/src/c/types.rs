//! C type layout as gcc does it on x86_64 (System V, LP64): scalars,
//! pointers, arrays, typedefs, enums, structs and unions with `aligned` and
//! `packed` attributes, bit-fields, and the zero-size struct-body markers.
//!
//! Types are looked up in this order: definitions in the header, the access
//! file's `[types]`, then the built-in table of common kernel types (as
//! configured without lock debugging).

use super::attrs::{Attr, MarkerKind, SMP_CACHE_BYTES};
use super::eval::{self, Env, Mode};
use super::macros::{self, EvalError, MacroTable, PTok};
use super::parse::{Declarator, Derived, FieldDecl, RecordDef, RecordKind, SyntaxError, TypeRef};
use super::Header;
use crate::error::{line_col, Diagnostic};
use crate::place;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;
use std::rc::Rc;

use super::abi::{scalar_layout, TyLayout, POINTER};
use super::kernel_types::builtin_type;

/// Where one member landed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Placed {
    /// The member declaration (index into [`RecordDef::members`]), or a marker.
    pub item: Item,
    /// Offset in bits from the record start.
    pub bit_offset: u64,
    /// Size in bytes (for a bit-field: of its declared type).
    pub size: u64,
    /// The alignment the member asked for (after `packed` and `aligned`).
    pub align: u64,
    /// Width of a bit-field.
    pub bits: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Item {
    /// Declarator `declarator` of member `member`; `None` for an anonymous
    /// struct or union member.
    Field {
        member: usize,
        declarator: Option<usize>,
    },
    /// Index into the header's markers.
    Marker(usize),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RecordLayout {
    pub size: u64,
    pub align: u64,
    /// The largest `aligned` attribute on the record itself (1 if none).
    pub attr_align: u64,
    pub placed: Vec<Placed>,
}

/// Answers layout questions about one header; caches record layouts.
pub(crate) struct Resolver<'h> {
    h: &'h Header,
    records: RefCell<HashMap<usize, Rc<RecordLayout>>>,
    /// Records and typedefs being laid out, to stop on cycles.
    active: RefCell<Vec<String>>,
    enum_values: RefCell<HashMap<(usize, usize), Option<i64>>>,
}

impl super::checks::Context for Resolver<'_> {
    fn header(&self) -> &Header {
        Resolver::header(self)
    }

    fn error(&self, at: usize, message: String) -> Diagnostic {
        Resolver::error(self, at, message)
    }
}

/// Types are limited to 2^48 bytes (256 TiB): what x86_64 can address, and
/// what keeps every offset computation exact.
const MAX_TYPE_SIZE: u64 = 1 << 48;

/// What a type the header lacks is taken as when the compiler lays the
/// struct out: one byte (no member vanishes, none is a marker).
const PLACEHOLDER: TyLayout = TyLayout { size: 1, align: 1 };

const TOO_LARGE_HELP: &str =
    "the limit is 2^48 bytes (what x86_64 addresses); check the size expression";

impl<'h> Resolver<'h> {
    pub fn new(h: &'h Header) -> Self {
        Resolver {
            h,
            records: RefCell::default(),
            active: RefCell::default(),
            enum_values: RefCell::default(),
        }
    }

    pub fn header(&self) -> &'h Header {
        self.h
    }

    pub fn error(&self, at: usize, message: impl Into<String>) -> Diagnostic {
        let (line, col) = line_col(&self.h.text, at);
        Diagnostic::new(message).in_file(&self.h.path).at(line, col)
    }

    /// A type the header does not define: a placeholder when the compiler
    /// lays the struct out (its sizes replace every one of ours), else an
    /// error.
    fn unknown(&self, name: &str, at: usize) -> Result<TyLayout, Diagnostic> {
        if self.h.placeholders {
            return Ok(PLACEHOLDER);
        }
        Err(self.unknown_type(name, at))
    }

    fn unknown_type(&self, name: &str, at: usize) -> Diagnostic {
        let d = self.error(at, format!("unknown type `{name}`"));
        let tag = name.rsplit(' ').next().unwrap_or(name);
        if let Some(help) = self.skipped_definition(tag, at) {
            return d.help(help);
        }
        d.help(format!(
            "define it in the header, or add it to [types] in the access file: \"{name}\" = {{ size = N, align = M }}"
        ))
    }

    /// A conditional group before `at` that could not be evaluated and
    /// mentions `name`: where its definition was probably skipped.
    pub fn skipped_definition(&self, name: &str, at: usize) -> Option<String> {
        let u = self.h.pre.undecided.iter().rev().find(|u| {
            u.range.end <= at && {
                let text = &self.h.text[u.range.clone()];
                text.match_indices(name).any(|(p, _)| {
                    let before = text[..p].chars().next_back();
                    let after = text[p + name.len()..].chars().next();
                    let word =
                        |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
                    !word(before) && !word(after)
                })
            }
        })?;
        Some(format!(
            "`{name}` is defined under the #if at line {} that was skipped because it could not be evaluated ({}); \
             pass -D for the macros it tests, or give `{name}` with -D / in [types] / [defines]",
            u.error.line, u.error.message
        ))
    }

    /// An `#if` that could not be evaluated, or an active `#error`, inside
    /// a record body.
    fn preprocessor_error_in(&self, body: Range<usize>) -> Option<Diagnostic> {
        if let Some(u) = self
            .h
            .pre
            .undecided
            .iter()
            .find(|u| body.contains(&u.range.start))
        {
            let mut d = u.error.clone();
            d.help = Some(format!(
                "this condition decides which members the struct has; {}",
                d.help.unwrap_or_default()
            ));
            return Some(d);
        }
        self.h
            .pre
            .refusals
            .iter()
            .find(|(r, _)| body.contains(&r.start))
            .map(|(_, d)| d.clone())
    }

    /// The first syntax error inside `range`, as a diagnostic.
    pub fn syntax_error_in(&self, range: Range<usize>) -> Option<Diagnostic> {
        self.h
            .ast
            .errors
            .iter()
            .find(|e| range.contains(&e.at))
            .map(|e| self.syntax_diagnostic(e))
    }

    pub fn syntax_diagnostic(&self, e: &SyntaxError) -> Diagnostic {
        self.error(e.at, e.message.clone()).help(e.help.clone())
    }

    /// Evaluates an integer constant expression written at `range`.
    pub fn eval_range(&self, range: Range<usize>) -> Result<i128, Diagnostic> {
        let v = eval::eval(&self.h.text[range.clone()], self, Mode::Constant);
        self.placeholder_value(v)
            .map_err(|e| self.eval_error(e, range.start))
    }

    pub fn eval_tokens(&self, toks: &[PTok], at: usize) -> Result<i128, Diagnostic> {
        let v = eval::eval_tokens(toks, self, Mode::Constant);
        self.placeholder_value(v)
            .map_err(|e| self.eval_error(e, at))
    }

    /// A constant that names what the header does not define (a macro or
    /// an enumerator of another header) is 1 when the compiler lays the
    /// struct out (an array length, a bit-field width: the compiler's
    /// sizes replace ours).
    fn placeholder_value(&self, v: Result<i128, EvalError>) -> Result<i128, EvalError> {
        match v {
            Err(e) if self.h.placeholders && e.missing.is_some() => Ok(1),
            v => v,
        }
    }

    fn eval_error(&self, e: EvalError, at: usize) -> Diagnostic {
        let d = self.error(at, e.message);
        if let Some(help) = e.missing.and_then(|m| self.skipped_definition(&m, at)) {
            return d.help(help);
        }
        d.help(e.help.unwrap_or_else(|| {
            "integer constants follow C's rules on x86_64 (int is 32 bits, long 64); \
             simplify the expression"
                .into()
        }))
    }

    fn enter(&self, key: String, at: usize) -> Result<(), Diagnostic> {
        if self.active.borrow().contains(&key) {
            return Err(self
                .error(at, format!("{key} contains itself"))
                .help("a struct can hold a pointer to itself, not itself"));
        }
        if self.active.borrow().len() > 64 {
            return Err(self
                .error(at, "types nest too deeply (more than 64 levels)")
                .help("lay the struct out from BTF or DWARF of a real build"));
        }
        self.active.borrow_mut().push(key);
        Ok(())
    }

    fn leave(&self) {
        self.active.borrow_mut().pop();
    }

    /// Layout of the type a specifier names; `at` locates errors.
    pub fn type_ref(&self, ty: &TypeRef, at: usize) -> Result<TyLayout, Diagnostic> {
        match ty {
            TypeRef::Scalar(words) => match scalar_layout(words) {
                Some(l) => Ok(l),
                None if words.iter().any(|w| w == "void") => Err(self
                    .error(at, "a member cannot have type void")
                    .help("did you mean `void *`?")),
                None => self.unknown(&words.join(" "), at),
            },
            TypeRef::Name(name) => self.named(name, at),
            TypeRef::Record { kind, tag, def } => match (def, tag) {
                (Some(idx), _) => self.record(*idx, at).map(|r| TyLayout {
                    size: r.size,
                    align: r.align,
                }),
                (None, Some(tag)) => self.tagged(*kind, tag, at),
                (None, None) => Err(self
                    .error(at, "a struct without tag or body")
                    .help("name the struct, or write its body")),
            },
            TypeRef::Enum { tag, def } => self.enumeration(tag.as_deref(), *def),
            TypeRef::Unsupported(text) => Err(self
                .error(at, format!("cannot lay out type `{text}`"))
                .help("write the type out, or add it to [types] in the access file")),
        }
    }

    /// A typedef name: the header's typedef, `[types]`, then the built-ins.
    fn named(&self, name: &str, at: usize) -> Result<TyLayout, Diagnostic> {
        if self.h.placeholders {
            if let Some((size, align)) = self.h.types.get(name) {
                return Ok(TyLayout { size, align });
            }
        }
        if let Some(&idx) = self.h.index.typedefs.get(name) {
            let td = &self.h.ast.typedefs[idx];
            if let Some(d) = self.syntax_error_in(td.spec_range.start..td.declarator.range.end) {
                return Err(d);
            }
            self.enter(name.to_string(), at)?;
            let r = self.declared(&td.ty, &td.declarator, td.spec_range.start);
            self.leave();
            let mut l = r?;
            // On a typedef, `aligned` sets the alignment (it may lower it).
            for a in &td.declarator.attrs {
                match a {
                    Attr::Aligned(arg) => {
                        l.align = self.align_arg(arg.as_deref(), td.declarator.range.start)?
                    }
                    Attr::Unsupported(what) => {
                        return Err(self.unsupported_attr(what, td.declarator.range.start))
                    }
                    Attr::Packed => {}
                }
            }
            return Ok(l);
        }
        if let Some((size, align)) = self.h.types.get(name) {
            return Ok(TyLayout { size, align });
        }
        if let Some(l) = builtin_type(name) {
            return Ok(l);
        }
        // `#define my_type unsigned long` used as a type.
        if let Some(m) = self.h.pre.macros.get(name).filter(|m| m.params.is_none()) {
            let text = macros::join(&m.body);
            if !text.is_empty() && text != name {
                self.enter(name.to_string(), at)?;
                let r = self.type_name(&text, at);
                self.leave();
                if let Ok(l) = r {
                    return Ok(l);
                }
            }
        }
        self.unknown(name, at)
    }

    /// `struct tag` / `union tag`: the header's definition, `[types]`, built-ins.
    fn tagged(&self, kind: RecordKind, tag: &str, at: usize) -> Result<TyLayout, Diagnostic> {
        let key = format!("{} {tag}", kind.keyword());
        if self.h.placeholders {
            if let Some((size, align)) = self.h.types.get(&key) {
                return Ok(TyLayout { size, align });
            }
        }
        if let Some(&idx) = self.h.index.records.get(tag) {
            let r = self.record(idx, at)?;
            return Ok(TyLayout {
                size: r.size,
                align: r.align,
            });
        }
        if let Some((size, align)) = self.h.types.get(&key) {
            return Ok(TyLayout { size, align });
        }
        match builtin_type(&key) {
            Some(l) => Ok(l),
            None => self.unknown(&key, at),
        }
    }

    fn enumeration(&self, tag: Option<&str>, def: Option<usize>) -> Result<TyLayout, Diagnostic> {
        let def = def.or_else(|| tag.and_then(|t| self.h.index.enums.get(t).copied()));
        let Some(idx) = def else {
            let key = format!("enum {}", tag.unwrap_or(""));
            if let Some((size, align)) = self.h.types.get(&key) {
                return Ok(TyLayout { size, align });
            }
            // An enum declared elsewhere: gcc makes it an int unless its
            // values need more.
            return Ok(TyLayout { size: 4, align: 4 });
        };
        let e = &self.h.ast.enums[idx];
        let packed = e.attrs.contains(&Attr::Packed);
        let mut lo = 0i64;
        let mut hi = 0i64;
        for k in 0..e.enumerators.len() {
            match self.enumerator_value(idx, k) {
                Some(v) => {
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
                None if packed => {
                    return Err(self
                        .error(
                            e.enumerators[k].at,
                            format!("cannot compute the value of {}", e.enumerators[k].name),
                        )
                        .help("define the constants it uses (-D NAME=VALUE or [defines])"))
                }
                None => {}
            }
        }
        let fits = |bytes: u32| {
            let bits = bytes * 8;
            (lo >= 0 && (hi as i128) < (1i128 << bits))
                || ((lo as i128) >= -(1i128 << (bits - 1)) && (hi as i128) < (1i128 << (bits - 1)))
        };
        let size = if packed {
            [1, 2, 4, 8].into_iter().find(|&b| fits(b)).unwrap_or(8)
        } else if fits(4) {
            4
        } else {
            8
        };
        Ok(TyLayout {
            size: u64::from(size),
            align: u64::from(size),
        })
    }

    /// The value of enumerator `k` of enum `idx` (cached; `None` when it
    /// cannot be computed).
    pub fn enumerator_value(&self, idx: usize, k: usize) -> Option<i64> {
        if let Some(v) = self.enum_values.borrow().get(&(idx, k)) {
            return *v;
        }
        // Mark as in progress: a self-reference evaluates to "unknown".
        self.enum_values.borrow_mut().insert((idx, k), None);
        let e = &self.h.ast.enums[idx].enumerators[k];
        let v = match &e.value {
            Some(r) => self
                .eval_range(r.clone())
                .ok()
                .and_then(|v| i64::try_from(v).ok()),
            None if k == 0 => Some(0),
            None => self
                .enumerator_value(idx, k - 1)
                .and_then(|p| p.checked_add(1)),
        };
        self.enum_values.borrow_mut().insert((idx, k), v);
        v
    }

    /// Layout of a declarator applied to a type: pointers, arrays, functions.
    pub fn declared(
        &self,
        ty: &TypeRef,
        d: &Declarator,
        spec_at: usize,
    ) -> Result<TyLayout, Diagnostic> {
        // The innermost derivation is the outermost type constructor.
        // Below a pointer nothing needs a size.
        let start = d.derived.iter().rposition(|x| *x == Derived::Pointer);
        let mut l = match start {
            Some(_) => POINTER,
            None => self.type_ref(ty, spec_at)?,
        };
        let from = start.map_or(0, |p| p + 1);
        for step in &d.derived[from..] {
            match step {
                Derived::Pointer => l = POINTER,
                Derived::Function => {
                    return Err(self
                        .error(d.range.start, "a member cannot be a function")
                        .help("did you mean a function pointer, `(*name)(...)`?"))
                }
                Derived::Array(None) => l.size = 0,
                Derived::Bitmap(r) => {
                    let bits = self.eval_range(r.clone())?;
                    let bits = u64::try_from(bits).map_err(|_| {
                        self.error(r.start, format!("bitmap of {bits} bits is negative"))
                            .help("a bitmap has 0 or more bits")
                    })?;
                    let longs = bits.div_ceil(64);
                    l.size = l
                        .size
                        .checked_mul(longs)
                        .filter(|s| *s < MAX_TYPE_SIZE)
                        .ok_or_else(|| {
                            self.error(r.start, format!("bitmap of {bits} bits is too large"))
                                .help(TOO_LARGE_HELP)
                        })?;
                }
                Derived::Hashtable(r) => {
                    let bits = self.eval_range(r.clone())?;
                    let n = u32::try_from(bits)
                        .ok()
                        .filter(|b| *b < 48)
                        .map(|b| 1u64 << b)
                        .and_then(|n| l.size.checked_mul(n))
                        .filter(|s| *s < MAX_TYPE_SIZE)
                        .ok_or_else(|| {
                            self.error(r.start, format!("hash table of 1 << {bits} buckets is out of range"))
                                .help("the bits of a hash table are 0 or more, and its size under 2^48 bytes")
                        })?;
                    l.size = n;
                }
                Derived::Array(Some(r)) => {
                    let n = self.eval_range(r.clone())?;
                    let n = u64::try_from(n).map_err(|_| {
                        self.error(r.start, format!("array size {n} is negative"))
                            .help("an array has 0 or more elements")
                    })?;
                    l.size = l
                        .size
                        .checked_mul(n)
                        .filter(|s| *s < MAX_TYPE_SIZE)
                        .ok_or_else(|| {
                            self.error(
                                r.start,
                                format!("array of {n} elements of {} bytes is too large", l.size),
                            )
                            .help(TOO_LARGE_HELP)
                        })?;
                }
            }
        }
        Ok(l)
    }

    fn unsupported_attr(&self, what: &str, at: usize) -> Diagnostic {
        self.error(at, format!("attribute `{what}` is not supported"))
            .help("lay out this struct from BTF or DWARF of a real build")
    }

    /// The value of an `aligned(...)` argument: a constant, or a type name
    /// (`_Alignas(long)`); no argument means the biggest alignment, 16.
    fn align_arg(&self, arg: Option<&[PTok]>, at: usize) -> Result<u64, Diagnostic> {
        let Some(toks) = arg else { return Ok(16) };
        let v = match self.eval_tokens(toks, at) {
            Ok(v) => v,
            Err(e) => match self.type_name(&macros::join(toks), at) {
                Ok(l) => i128::from(l.align),
                Err(_) => return Err(e),
            },
        };
        match u64::try_from(v) {
            Ok(a) if a.is_power_of_two() => Ok(a),
            _ => Err(self
                .error(at, format!("alignment {v} is not a power of two"))
                .help("use 1, 2, 4, 8, ... (gcc rejects other alignments)")),
        }
    }

    pub(crate) fn max_align(&self, attrs: &[Attr], at: usize) -> Result<Option<u64>, Diagnostic> {
        let mut best = None;
        for a in attrs {
            match a {
                Attr::Aligned(arg) => {
                    let v = self.align_arg(arg.as_deref(), at)?;
                    best = Some(best.map_or(v, |b: u64| b.max(v)));
                }
                Attr::Unsupported(what) => return Err(self.unsupported_attr(what, at)),
                Attr::Packed => {}
            }
        }
        Ok(best)
    }

    /// A type name as in `sizeof(...)`: keywords, `struct tag`, a typedef
    /// name, followed by `*`s.
    pub fn type_name(&self, text: &str, at: usize) -> Result<TyLayout, Diagnostic> {
        let toks = macros::ptokens(text);
        let mut words = Vec::new();
        let mut pointer = false;
        for t in &toks {
            match t {
                PTok::Ident(w) if !pointer => {
                    if !matches!(w.as_str(), "const" | "volatile" | "_Atomic" | "restrict") {
                        words.push(w.clone());
                    }
                }
                PTok::Punct(p) if p == "*" => pointer = true,
                _ => {
                    return Err(self
                        .error(at, format!("cannot read the type name `{text}`"))
                        .help("write a plain type name: `long`, `struct foo`, `u64 *`"))
                }
            }
        }
        if pointer {
            return Ok(POINTER);
        }
        match words.as_slice() {
            [] => Err(self
                .error(at, "empty type name")
                .help("write a type name: `long`, `struct foo`")),
            [kw, tag] if kw == "struct" || kw == "union" => {
                let kind = if kw == "struct" {
                    RecordKind::Struct
                } else {
                    RecordKind::Union
                };
                self.tagged(kind, tag, at)
            }
            [kw, tag] if kw == "enum" => self.enumeration(Some(tag), None),
            [name] if scalar_layout(&words).is_none() => self.named(name, at),
            _ => match scalar_layout(&words) {
                Some(l) => Ok(l),
                None => self.unknown(text, at),
            },
        }
    }

    /// Layout of the record defined at `idx` (cached); `at` is where it is
    /// used (for "contains itself" errors).
    pub fn record(&self, idx: usize, at: usize) -> Result<Rc<RecordLayout>, Diagnostic> {
        if let Some(r) = self.records.borrow().get(&idx) {
            return Ok(r.clone());
        }
        let rec = &self.h.ast.records[idx];
        if let Some(d) = self.syntax_error_in(rec.specifier.clone()) {
            return Err(d);
        }
        if let Some(d) = self.preprocessor_error_in(rec.body.clone()) {
            return Err(d);
        }
        let key = match &rec.tag {
            Some(t) => format!("{} {t}", rec.kind.keyword()),
            None => format!(
                "the anonymous {} at line {}",
                rec.kind.keyword(),
                line_col(&self.h.text, rec.specifier.start).0
            ),
        };
        self.enter(key, at)?;
        let r = self.lay_out(rec);
        self.leave();
        let r = Rc::new(r?);
        self.records.borrow_mut().insert(idx, r.clone());
        Ok(r)
    }

    /// Members and markers of a record body, in source order.
    fn items(&self, rec: &RecordDef) -> Vec<(usize, Item)> {
        let mut items: Vec<(usize, Item)> = Vec::new();
        for (m, f) in rec.members.iter().enumerate() {
            items.push((
                f.range.start,
                Item::Field {
                    member: m,
                    declarator: None,
                },
            ));
        }
        for (k, mk) in self.h.pre.markers.iter().enumerate() {
            let inside = rec.body.contains(&mk.range.start);
            let in_member = rec
                .members
                .iter()
                .any(|f| f.range.contains(&mk.range.start));
            if inside && !in_member {
                items.push((mk.range.start, Item::Marker(k)));
            }
        }
        items.sort_by_key(|(at, _)| *at);
        items
    }

    fn marker_align(&self, kind: &MarkerKind, at: usize) -> Result<u64, Diagnostic> {
        let arg_or_line = |arg: &Option<Vec<PTok>>| match arg {
            Some(toks) => match self.eval_tokens(toks, at)? {
                0 => Ok(SMP_CACHE_BYTES),
                v => u64::try_from(v)
                    .ok()
                    .filter(|a| a.is_power_of_two())
                    .ok_or_else(|| {
                        self.error(at, format!("alignment {v} is not a power of two"))
                            .help("use 1, 2, 4, 8, ... (gcc rejects other alignments)")
                    }),
            },
            None => Ok(SMP_CACHE_BYTES),
        };
        match kind {
            MarkerKind::Padding => Ok(SMP_CACHE_BYTES),
            MarkerKind::GroupBegin | MarkerKind::GroupEnd => Ok(1),
            MarkerKind::GroupBeginAligned(arg) => arg_or_line(arg),
            MarkerKind::GroupEndAligned(arg) => Ok(arg_or_line(arg)?.max(8)),
        }
    }

    /// Lays `rec` out: this front-end decides each member's alignment
    /// (`packed`, `aligned`, `#pragma pack`) and which bit-fields raise the
    /// record's; [`place::lay_out`] places them.
    fn lay_out(&self, rec: &RecordDef) -> Result<RecordLayout, Diagnostic> {
        super::checks::check_record(self, rec)?;
        let packed = rec.attrs.contains(&Attr::Packed);
        // `#pragma pack(N)` in force at the closing brace caps every
        // member's alignment at N and lets bit-fields straddle units.
        let pack = self.h.pre.pack_at(rec.body.end);
        let cap = |a: u64| pack.map_or(a, |n| a.min(n));
        let attr_align = self.max_align(&rec.attrs, rec.specifier.start)?;
        let mut placed = Vec::new();
        let mut members = Vec::new();
        for (at, item) in self.items(rec) {
            let m = match item {
                Item::Marker(k) => {
                    let kind = &self.h.pre.markers[k].kind;
                    // CACHELINE_PADDING is a member of an aligned type, which
                    // `packed` overrides; the group markers carry `aligned`
                    // attributes of their own, which it does not.
                    let a = if packed && *kind == MarkerKind::Padding {
                        1
                    } else {
                        cap(self.marker_align(kind, at)?)
                    };
                    members.push(place::Member::new(0, a));
                    placed.push(Placed {
                        item,
                        bit_offset: 0,
                        size: 0,
                        align: a,
                        bits: None,
                    });
                    continue;
                }
                Item::Field { member, .. } => member,
            };
            let f = &rec.members[m];
            for (d_idx, slot) in self.slots(f)? {
                let (l, bits, field_align) = match &slot {
                    Slot::Anonymous(l) => (*l, None, if packed { 1 } else { cap(l.align) }),
                    Slot::Declarator(d) => {
                        let l = self.declared(&f.ty, d, f.spec_range.start)?;
                        let field_packed = packed || d.attrs.contains(&Attr::Packed);
                        let bits = match &d.bitfield {
                            Some(w) => {
                                let kind = super::checks::bitfield_type(
                                    self,
                                    &f.ty,
                                    &d.derived,
                                    w.start,
                                    d.name.as_deref().unwrap_or(""),
                                )?;
                                let width = self.bit_width(w.clone(), l, d)?;
                                super::checks::check_bitfield_width(self, kind, width, w.start)?;
                                Some(width)
                            }
                            None => None,
                        };
                        let mut a = if field_packed { 1 } else { l.align };
                        if let Some(x) = self.max_align(&d.attrs, d.range.start)? {
                            a = a.max(x);
                        }
                        (l, bits, cap(a))
                    }
                };
                let item = Item::Field {
                    member: m,
                    declarator: d_idx,
                };
                let (member, align) = match bits {
                    Some(width) => {
                        let named = matches!(&slot, Slot::Declarator(d) if d.name.is_some());
                        let attr_packed = packed
                            || matches!(&slot, Slot::Declarator(d) if d.attrs.contains(&Attr::Packed));
                        // Only a named, unpacked bit-field of some width
                        // aligns the record.
                        let raises = named && !attr_packed && width > 0;
                        let bits = place::Bitfield {
                            width,
                            unit_bits: cap(l.align) * 8,
                            limit_bits: l.size * 8,
                            straddles: attr_packed || pack.is_some(),
                        };
                        let member = place::Member::bitfield(
                            l.size,
                            if raises { field_align } else { 1 },
                            bits,
                        );
                        (member, if attr_packed { 1 } else { cap(l.align) })
                    }
                    None => (place::Member::new(l.size, field_align), field_align),
                };
                members.push(member);
                placed.push(Placed {
                    item,
                    bit_offset: 0,
                    size: l.size,
                    align,
                    bits,
                });
            }
        }
        let kind = match rec.kind {
            RecordKind::Union => place::Kind::Union,
            RecordKind::Struct => place::Kind::Struct,
        };
        let laid = place::lay_out(kind, &members, attr_align.unwrap_or(1));
        for (p, bit) in placed.iter_mut().zip(laid.bit_offsets) {
            p.bit_offset = bit;
        }
        if laid.size >= MAX_TYPE_SIZE {
            let what = match &rec.tag {
                Some(t) => format!("{} {t}", rec.kind.keyword()),
                None => format!("this {}", rec.kind.keyword()),
            };
            return Err(self
                .error(rec.specifier.start, format!("{what} is too large"))
                .help(TOO_LARGE_HELP));
        }
        Ok(RecordLayout {
            size: laid.size,
            align: laid.align,
            attr_align: attr_align.unwrap_or(1),
            placed,
        })
    }

    fn bit_width(&self, w: Range<usize>, l: TyLayout, d: &Declarator) -> Result<u64, Diagnostic> {
        let v = self.eval_range(w.clone())?;
        let v = u64::try_from(v).map_err(|_| {
            self.error(w.start, format!("negative bit-field width {v}"))
                .help("a bit-field width is 0 or more")
        })?;
        if v > l.size * 8 {
            return Err(self
                .error(
                    w.start,
                    format!("bit-field width {v} exceeds its type ({} bits)", l.size * 8),
                )
                .help("use a wider type, or a smaller width"));
        }
        if v == 0 && d.name.is_some() {
            return Err(self
                .error(w.start, "a named bit-field cannot have width 0")
                .help("drop the name (`int : 0;` starts a new unit) or give it a width"));
        }
        Ok(v)
    }

    /// The layout slots a member declaration makes: one per declarator, or
    /// one for an anonymous struct/union, or none (`struct foo;`).
    fn slots<'f>(&self, f: &'f FieldDecl) -> Result<Vec<(Option<usize>, Slot<'f>)>, Diagnostic> {
        if !f.declarators.is_empty() {
            return Ok(f
                .declarators
                .iter()
                .enumerate()
                .map(|(k, d)| (Some(k), Slot::Declarator(d)))
                .collect());
        }
        match &f.ty {
            TypeRef::Record { def: Some(idx), .. } if f.group.is_some() => {
                let r = self.record(*idx, f.range.start)?;
                Ok(vec![(None, Slot::Anonymous(TyLayout { size: r.size, align: r.align }))])
            }
            TypeRef::Record { tag: None, def: Some(idx), .. } => {
                let r = self.record(*idx, f.range.start)?;
                Ok(vec![(None, Slot::Anonymous(TyLayout { size: r.size, align: r.align }))])
            }
            TypeRef::Record { .. } | TypeRef::Enum { .. } => Ok(Vec::new()),
            _ => Err(self
                .error(f.range.start, format!("cannot read the member `{}`", self.h.text[f.range.clone()].trim()))
                .help("macros in struct bodies are not expanded (except CACHELINE_PADDING and __cacheline_group_*): write the member out")),
        }
    }
}

enum Slot<'f> {
    Declarator(&'f Declarator),
    Anonymous(TyLayout),
}

impl Env for Resolver<'_> {
    fn macros(&self) -> &MacroTable {
        &self.h.pre.macros
    }

    fn enumerator(&self, name: &str) -> Option<i64> {
        let &(idx, k) = self.h.index.enumerators.get(name)?;
        self.enumerator_value(idx, k)
    }

    fn size_of(&self, type_name: &str) -> Option<Result<u64, EvalError>> {
        Some(self.type_name(type_name, 0).map(|l| l.size).map_err(|d| {
            let mut e = EvalError::new(format!("sizeof({type_name}): {}", d.message));
            e.help = d.help;
            e
        }))
    }

    fn align_of(&self, type_name: &str) -> Option<Result<u64, EvalError>> {
        Some(self.type_name(type_name, 0).map(|l| l.align).map_err(|d| {
            let mut e = EvalError::new(format!("__alignof__({type_name}): {}", d.message));
            e.help = d.help;
            e
        }))
    }

    fn offset_of(&self, type_name: &str, member: &str) -> Option<Result<u64, EvalError>> {
        let fail = |m: String| {
            let mut e = EvalError::new(format!("offsetof({type_name}, {member}): {m}"));
            e.help = Some("define the type in the header, or pass the constant with -D".into());
            e
        };
        let Some(idx) = self.record_named(type_name) else {
            return Some(Err(fail(format!(
                "unknown type `{type_name}` (offsetof needs its definition in this header)"
            ))));
        };
        let mut offset = 0;
        let mut idx = idx;
        let path: Vec<&str> = member.split('.').map(str::trim).collect();
        for (k, segment) in path.iter().enumerate() {
            // `name` or `name[index]` (one index, into a one-dimensional array).
            let (name, index) = match segment.split_once('[') {
                Some((n, rest)) => match rest.strip_suffix(']') {
                    Some(e) if !e.contains('[') => (n.trim(), Some(e)),
                    _ => return Some(Err(fail(format!("cannot read `{segment}`")))),
                },
                None => (*segment, None),
            };
            let found = match self.member_offset(idx, name, 0) {
                Ok(Some(m)) => m,
                Ok(None) => return Some(Err(fail(format!("no member `{name}`")))),
                Err(d) => return Some(Err(fail(d.message))),
            };
            offset += found.offset;
            let ty = match index {
                None => found.ty,
                Some(e) => {
                    let (Some(elem), Ok(i)) = (found.element, eval::eval(e, self, Mode::Constant))
                    else {
                        return Some(Err(fail(format!("cannot index `{name}` with `{e}`"))));
                    };
                    offset += elem * u64::try_from(i).unwrap_or(0);
                    found.element_ty
                }
            };
            if k + 1 < path.len() {
                match ty.and_then(|t| self.record_of_type(&t)) {
                    Some(next) => idx = next,
                    None => return Some(Err(fail(format!("`{name}` is not a struct")))),
                }
            }
        }
        Some(Ok(offset))
    }
}

impl Resolver<'_> {
    /// The record a type name (`struct foo`, `foo_t`) stands for, if the
    /// header defines it.
    fn record_named(&self, type_name: &str) -> Option<usize> {
        let words: Vec<&str> = type_name
            .split_whitespace()
            .filter(|w| !matches!(*w, "const" | "volatile"))
            .collect();
        match words.as_slice() {
            ["struct" | "union", tag] => self.h.index.records.get(*tag).copied(),
            [name] => self.record_of_type(&TypeRef::Name(name.to_string())),
            _ => None,
        }
    }

    fn record_of_type(&self, ty: &TypeRef) -> Option<usize> {
        let mut ty = ty.clone();
        for _ in 0..16 {
            match ty {
                TypeRef::Record { def: Some(i), .. } => return Some(i),
                TypeRef::Record { tag: Some(t), .. } => {
                    return self.h.index.records.get(&t).copied()
                }
                TypeRef::Name(n) => {
                    let td = &self.h.ast.typedefs[*self.h.index.typedefs.get(&n)?];
                    if !td.declarator.derived.is_empty() {
                        return None;
                    }
                    ty = td.ty.clone();
                }
                _ => return None,
            }
        }
        None
    }

    /// Where member `name` is in record `idx` (looking into anonymous
    /// members).
    fn member_offset(
        &self,
        idx: usize,
        name: &str,
        depth: usize,
    ) -> Result<Option<MemberAt>, Diagnostic> {
        if depth > 16 {
            return Ok(None);
        }
        let rec = &self.h.ast.records[idx];
        let layout = self.record(idx, rec.specifier.start)?;
        for p in &layout.placed {
            let Item::Field { member, declarator } = p.item else {
                continue;
            };
            let f = &rec.members[member];
            match declarator {
                Some(k) if f.declarators[k].name.as_deref() == Some(name) => {
                    let d = &f.declarators[k];
                    let (element, element_ty) = match d.derived.as_slice() {
                        [Derived::Array(Some(r))] => {
                            let n = self.eval_range(r.clone())?;
                            let n = u64::try_from(n).unwrap_or(0);
                            ((n > 0).then(|| p.size / n), Some(f.ty.clone()))
                        }
                        _ => (None, None),
                    };
                    return Ok(Some(MemberAt {
                        offset: p.bit_offset / 8,
                        ty: d.derived.is_empty().then(|| f.ty.clone()),
                        element,
                        element_ty,
                    }));
                }
                Some(_) => {}
                None => {
                    if let Some(inner) = self.record_of_type(&f.ty) {
                        if let Some(mut m) = self.member_offset(inner, name, depth + 1)? {
                            m.offset += p.bit_offset / 8;
                            return Ok(Some(m));
                        }
                    }
                }
            }
        }
        Ok(None)
    }
}

/// A member found by name, for `offsetof`.
struct MemberAt {
    offset: u64,
    /// Its type, when it is neither an array nor a pointer.
    ty: Option<TypeRef>,
    /// Element size and type of a one-dimensional array.
    element: Option<u64>,
    element_ty: Option<TypeRef>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn scalars() {
        let sz = |s: &str| scalar_layout(&words(s)).map(|l| (l.size, l.align));
        assert_eq!(sz("unsigned long"), Some((8, 8)));
        assert_eq!(sz("long unsigned int"), Some((8, 8)));
        assert_eq!(sz("long long"), Some((8, 8)));
        assert_eq!(sz("unsigned"), Some((4, 4)));
        assert_eq!(sz("signed char"), Some((1, 1)));
        assert_eq!(sz("short int"), Some((2, 2)));
        assert_eq!(sz("long double"), Some((16, 16)));
        assert_eq!(sz("double"), Some((8, 8)));
        assert_eq!(sz("void"), None);
    }
}
