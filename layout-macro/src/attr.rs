//! Parse the annotated item and its `#[layout(...)]` attributes into the
//! macro's own AST ([`Input`]). Every problem becomes a `syn::Error` at the
//! tokens it is about; errors are collected, so one build shows them all.

use layout_core::class::{Class, ClassInfo, Param, CLASSES};
use layout_core::solve::Preset;
use layout_core::Access;
use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Ident, LitInt, LitStr, Member, Type, Visibility};

/// Which macro is reading the item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `#[derive(CacheLayout)]`: checks the struct as written.
    Derive,
    /// `#[cachelayout::optimize]`: rewrites the struct.
    Optimize,
}

/// A struct the macros accept.
pub struct Input {
    pub ident: Ident,
    pub vis: Visibility,
    /// Lifetime, type and const parameters and the where clause.
    pub generics: syn::Generics,
    /// The item's attributes other than `#[layout(..)]` and `#[repr(..)]`.
    pub attrs: Vec<Attribute>,
    pub fields: Vec<FieldInput>,
    pub options: Options,
    pub repr: Repr,
    /// The item derives serde's `Serialize` or `Deserialize`.
    pub derives_serde: bool,
    /// Derives (below `optimize`) whose meaning follows the field order.
    pub order_sensitive: Vec<crate::derives::OrderSensitive>,
    /// How generated code names the cachelayout crate (`::cachelayout`,
    /// its name in `Cargo.toml`, or `#[layout(crate = "..")]`).
    pub krate: TokenStream,
}

/// Struct-level options (`#[layout(line = 64, objective = "min-diff")]`).
#[derive(Clone, Debug)]
pub struct Options {
    pub line: u64,
    /// `#[layout(line = "target")]`: one layout per target line size, each
    /// under the `cfg` of the targets that use it (`target_line`).
    pub per_target: bool,
    /// `#[layout(isolated)]`: the struct starts and ends on a line boundary
    /// (aligned to the line, its size a whole number of lines), so no
    /// neighbour in memory shares its first or last line (`isolation`).
    pub isolated: bool,
    pub preset: Preset,
    /// Derive only: report, do not assert.
    pub report_only: bool,
    /// The solver's safety stop in milliseconds, when the user set one: if
    /// it fires, the expansion is an error (never a different layout).
    pub time_limit_ms: Option<u64>,
    /// The solver's deterministic work budget, when the user set one.
    pub work_limit: Option<u64>,
    /// `#[layout(contains = "lockless")]`: the access class the type carries
    /// when it is a field of another struct, instead of its fields' strongest.
    pub contains: Option<Access>,
    /// Name of the constructor `optimize` generates; `None` under
    /// `#[layout(constructor = false)]`.
    pub constructor: Option<String>,
    /// `#[layout(crate = "path")]`: how generated code names cachelayout.
    pub krate: Option<TokenStream>,
    /// `optimize` only: reorder although a derive serializes the fields in
    /// order (`reorder_serialized`).
    pub reorder_serialized: bool,
    /// `optimize` only: reorder although `PartialOrd`/`Ord` are derived
    /// (`reorder_ord`).
    pub reorder_ord: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            line: layout_core::place::DataLayout::X86_64.line_bytes,
            per_target: false,
            isolated: false,
            preset: Preset::Balanced,
            report_only: false,
            time_limit_ms: None,
            work_limit: None,
            contains: None,
            constructor: Some("new".to_string()),
            krate: None,
            reorder_serialized: false,
            reorder_ord: false,
        }
    }
}

/// What the item's `#[repr(..)]` attributes ask for.
#[derive(Clone, Debug, Default)]
pub struct Repr {
    pub c: bool,
    /// `repr(packed)` or `repr(packed(N))`.
    pub packed: bool,
    /// `repr(align(N))`.
    pub align: Option<u64>,
}

/// One field with its parsed attributes.
pub struct FieldInput {
    /// How to name the field in `offset_of!` and field access.
    pub member: Member,
    /// The name in reports and messages (`0` for the first tuple field).
    pub name: String,
    pub vis: Visibility,
    pub ty: Type,
    /// Attributes other than `#[layout(..)]`, kept verbatim.
    pub attrs: Vec<Attribute>,
    /// The explicit access class, if any.
    pub access: Option<Access>,
    pub pinned: bool,
    pub hint: Option<SizeHint>,
    /// The hot paths (`#[layout(path = "tx")]`) that touch the field.
    pub paths: Vec<String>,
    /// `#[layout(per_element)]`: every element of the array on lines of its
    /// own (`element_arrays`).
    pub per_element: Option<Span>,
    /// Where messages about this field point.
    pub span: Span,
}

/// The largest alignment rustc accepts (`repr(align(N))`, 2^29).
pub const MAX_ALIGN: u64 = 1 << 29;

/// The largest size of any Rust type: `isize::MAX` bytes (of the machine the
/// macro runs on; rustc checks the target's).
pub const MAX_SIZE: u64 = isize::MAX as u64;

/// `#[layout(size = N, align = M)]`.
#[derive(Clone, Copy, Debug)]
pub struct SizeHint {
    pub size: u64,
    pub align: u64,
    pub span: Span,
}

/// The field keys that are not class keywords (those are the vocabulary's,
/// [`Class::keywords`]).
const OTHER_FIELD_KEYS: &[&str] = &["pinned", "size", "align", "path", "per_element"];

/// Every field key: the class keywords and aliases, then the others.
fn field_keys() -> Vec<&'static str> {
    Class::keywords()
        .chain(OTHER_FIELD_KEYS.iter().copied())
        .collect()
}
const STRUCT_KEYS: &[&str] = &[
    "line",
    "isolated",
    "objective",
    "report_only",
    "time_limit_ms",
    "work_limit",
    "contains",
    "constructor",
    "crate",
    "reorder_serialized",
    "reorder_ord",
];
/// `expected one of `read_mostly`, `locked_write = "lock"`, ...`: each
/// class as the attribute declares it, then the other keys.
fn field_help() -> String {
    let mut forms: Vec<String> = Vec::new();
    for c in CLASSES {
        let kw = c.attribute;
        match c.param {
            Param::None => forms.push(format!("`{kw}`")),
            Param::Lock => forms.push(format!("`{kw} = \"lock\"`")),
            Param::Group => {
                forms.push(format!("`{kw}`"));
                forms.push(format!("`{kw}(group = \"name\")`"));
            }
        }
    }
    forms.extend(
        [
            "`pinned`",
            "`size = N, align = M`",
            "`path = \"tx\"`",
            "`per_element`",
        ]
        .map(String::from),
    );
    format!("expected one of {}", forms.join(", "))
}
const STRUCT_HELP: &str =
    "expected one of `line = 64` (or `line = \"target\"`), `objective = \"balanced\"`, `report_only`, \
`isolated`, `time_limit_ms = N`, `work_limit = N`, `contains = \"lockless\"`, `constructor = \"new\"`, \
`crate = \"path\"`, `reorder_serialized`, `reorder_ord`";

/// Collects errors so that one expansion reports all of them.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    pub fn at(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.push(syn::Error::new(span, msg));
    }

    pub fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// Parse `item` for `mode`; `args` are the tokens inside `#[optimize(..)]`.
pub fn parse(item: DeriveInput, mode: Mode, args: TokenStream) -> syn::Result<Input> {
    let mut errors = Errors::default();
    let fields = match &item.data {
        Data::Struct(s) => &s.fields,
        Data::Enum(e) => {
            return Err(syn::Error::new(
                e.enum_token.span,
                "cachelayout lays out the fields of a struct, not an enum: rustc decides where each \
                 variant's data goes and `offset_of!` cannot check it; put the enum in a field of a \
                 struct instead",
            ))
        }
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span,
                "cachelayout lays out the fields of a struct, not a union: all fields of a union start \
                 at offset 0, so there is no order to choose; put the union in a field of a struct \
                 (with `#[layout(size = N, align = M)]` if the macro cannot size it)",
            ))
        }
    };
    let repr = parse_repr(&item.attrs, mode, &mut errors);
    let mut options = Options::default();
    let mut seen = Vec::new();
    if !args.is_empty() {
        let parser =
            syn::meta::parser(|meta| struct_key(&meta, mode, &mut options, &mut seen, &mut errors));
        if let Err(e) = syn::parse::Parser::parse2(parser, args) {
            errors.push(e);
        }
    }
    let mut attrs = Vec::new();
    let mut derives_serde = false;
    let mut order_sensitive = Vec::new();
    for attr in &item.attrs {
        if attr.path().is_ident("layout") {
            let res = attr.parse_nested_meta(|meta| {
                struct_key(&meta, mode, &mut options, &mut seen, &mut errors)
            });
            if let Err(e) = res {
                errors.push(e);
            }
        } else if attr.path().is_ident("repr") {
            // Re-emitted from `repr` by the rewrite; kept as-is by the derive.
            if mode == Mode::Derive {
                attrs.push(attr.clone());
            }
        } else {
            if attr.path().is_ident("derive") {
                derives_serde |= check_derives(attr, mode, &mut errors, &mut order_sensitive);
            }
            if mode == Mode::Derive && is_optimize(attr) {
                errors.at(
                    attr.span(),
                    "#[derive(CacheLayout)] runs before #[cachelayout::optimize] here, on the struct as \
                     written, and optimize implements `CacheLayout` itself for the struct it rewrites: \
                     remove `CacheLayout` from the derive, and put the derive below the attribute (derives \
                     above it cannot see the fields the rewrite adds)",
                );
            }
            attrs.push(attr.clone());
        }
    }
    let maybe_unsized = crate::types::maybe_unsized_params(&item.generics);
    let fields = match fields {
        Fields::Named(f) => parse_fields(f.named.iter(), mode, &maybe_unsized, &mut errors),
        Fields::Unnamed(f) => {
            if mode == Mode::Optimize {
                errors.at(
                    f.paren_token.span.join(),
                    "#[cachelayout::optimize] does not reorder tuple structs: moving fields would change \
                     what `.0`, `.1`, ... refer to; give the fields names, or use #[derive(CacheLayout)] \
                     to check the struct as it is",
                );
            }
            parse_fields(f.unnamed.iter(), mode, &maybe_unsized, &mut errors)
        }
        Fields::Unit => Vec::new(),
    };
    check_lock_names(&fields, &mut errors);
    errors.finish()?;
    let krate = options
        .krate
        .clone()
        .unwrap_or_else(|| quote::ToTokens::into_token_stream(crate::krate::default_path()));
    Ok(Input {
        krate,
        ident: item.ident,
        vis: item.vis,
        generics: item.generics,
        attrs,
        fields,
        options,
        repr,
        derives_serde,
        order_sensitive,
    })
}

fn parse_repr(attrs: &[Attribute], mode: Mode, errors: &mut Errors) -> Repr {
    let mut repr = Repr::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("repr")) {
        let res = attr.parse_nested_meta(|meta| {
            let key = meta.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
            match key.as_str() {
                "C" => repr.c = true,
                "packed" => {
                    if meta.input.peek(syn::token::Paren) {
                        let content;
                        syn::parenthesized!(content in meta.input);
                        content.parse::<LitInt>()?;
                    }
                    repr.packed = true;
                    if mode == Mode::Optimize {
                        errors.at(
                            meta.path.span(),
                            "#[cachelayout::optimize] cannot lay out a `repr(packed)` struct: a packed \
                             struct cannot hold the aligned markers that start fields on a new cache \
                             line, and its instances may start at any byte; remove `packed`, or use \
                             #[derive(CacheLayout)] to check the packed struct as it is",
                        );
                    }
                }
                "align" => {
                    let content;
                    syn::parenthesized!(content in meta.input);
                    let n: LitInt = content.parse()?;
                    let align: u64 = n.base10_parse()?;
                    if align.is_power_of_two() && align <= MAX_ALIGN {
                        repr.align = Some(align);
                    } else if mode == Mode::Optimize {
                        errors.at(
                            n.span(),
                            format!("`align({align})` must be a power of two no larger than {MAX_ALIGN} (2^29)"),
                        );
                    }
                    // The derive keeps the attribute as written: rustc reports it.
                }
                "transparent" if mode == Mode::Optimize => errors.at(
                    meta.path.span(),
                    "#[cachelayout::optimize] cannot rewrite a `repr(transparent)` struct: its layout \
                     must stay that of its one non-zero-sized field",
                ),
                _ => {
                    // `Rust`, `transparent` (derive) and integer reprs (an error
                    // rustc reports itself) need nothing from us.
                    if meta.input.peek(syn::token::Paren) {
                        let content;
                        syn::parenthesized!(content in meta.input);
                        content.parse::<TokenStream>()?;
                    }
                }
            }
            Ok(())
        });
        if let Err(e) = res {
            errors.push(e);
        }
    }
    repr
}

/// `#[cachelayout::optimize]` (or `#[optimize]`, or through a renamed or
/// re-exported cachelayout): an attribute the derive sees when it is
/// listed above it.
pub fn is_optimize(attr: &Attribute) -> bool {
    let names: Vec<String> = attr
        .path()
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let Some((last, prefix)) = names.split_last() else {
        return false;
    };
    if last != "optimize" {
        return false;
    }
    let own_name = crate::krate::default_path()
        .segments
        .last()
        .map(|s| s.ident.to_string());
    prefix.is_empty()
        || prefix
            .iter()
            .any(|s| s.contains("cachelayout") || own_name.as_ref() == Some(s))
}

/// Checks a `#[derive(..)]` list; returns true if it derives serde traits.
/// Collects the derives whose meaning follows the field order.
fn check_derives(
    attr: &Attribute,
    mode: Mode,
    errors: &mut Errors,
    order_sensitive: &mut Vec<crate::derives::OrderSensitive>,
) -> bool {
    let Ok(paths) = attr.parse_args_with(Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
    else {
        return false;
    };
    let mut serde = false;
    for path in paths {
        let Some(last) = path.segments.last() else {
            continue;
        };
        if last.ident == "CacheLayout" && mode == Mode::Optimize {
            errors.at(
                path.span(),
                "#[cachelayout::optimize] already implements `CacheLayout`; remove `CacheLayout` from \
                 this derive",
            );
        }
        serde |= last.ident == "Serialize" || last.ident == "Deserialize";
        order_sensitive.extend(crate::derives::classify(&path));
    }
    serde
}

fn struct_key(
    meta: &ParseNestedMeta<'_>,
    mode: Mode,
    options: &mut Options,
    seen: &mut Vec<String>,
    errors: &mut Errors,
) -> syn::Result<()> {
    let key = key_name(meta)?;
    if field_keys().contains(&key.as_str()) {
        skip_value(meta)?;
        errors.at(
            meta.path.span(),
            format!(
                "`{key}` is a field attribute: put `#[layout({key})]` on the fields it applies to"
            ),
        );
        return Ok(());
    }
    if !STRUCT_KEYS.contains(&key.as_str()) {
        return Err(meta.error(unknown_key(&key, STRUCT_KEYS, STRUCT_HELP)));
    }
    if seen.contains(&key) {
        errors.at(meta.path.span(), format!("`{key}` is given twice"));
    }
    seen.push(key.clone());
    match key.as_str() {
        "line" => {
            let value = meta.value()?;
            if value.peek(LitStr) {
                let lit: LitStr = value.parse()?;
                if lit.value() == "target" {
                    options.per_target = true;
                } else {
                    errors.at(
                        lit.span(),
                        format!(
                            "`line = \"{}\"`: expected a line size (32, 64, 128 or 256) or \"target\" \
                             (the size `CachePadded` uses on the target: 128 on x86_64, aarch64 and \
                             powerpc64, 256 on s390x, 32 on arm, mips, sparc and hexagon, 64 elsewhere)",
                            lit.value()
                        ),
                    );
                }
            } else {
                let lit: LitInt = value.parse()?;
                let line: u64 = lit.base10_parse()?;
                match layout_core::Target::new(line) {
                    Ok(t) => options.line = t.line,
                    Err(msg) => errors.at(lit.span(), msg),
                }
            }
        }
        "objective" => {
            let lit: LitStr = meta.value()?.parse()?;
            match lit.value().parse::<Preset>() {
                Ok(p) => options.preset = p,
                Err(msg) => errors.at(lit.span(), msg),
            }
        }
        "reorder_serialized" | "reorder_ord" => {
            if mode == Mode::Derive {
                errors.at(
                    meta.path.span(),
                    format!(
                        "`{key}` applies to #[cachelayout::optimize]; #[derive(CacheLayout)] never \
                         reorders fields"
                    ),
                );
            }
            if key == "reorder_ord" {
                options.reorder_ord = true;
            } else {
                options.reorder_serialized = true;
            }
        }
        "isolated" => options.isolated = true,
        "report_only" => {
            if mode == Mode::Optimize {
                errors.at(
                    meta.path.span(),
                    "`report_only` applies to #[derive(CacheLayout)]; #[cachelayout::optimize] always \
                     checks the layout it writes",
                );
            }
            options.report_only = true;
        }
        "work_limit" => {
            let lit: LitInt = meta.value()?.parse()?;
            let work: u64 = lit.base10_parse()?;
            if work == 0 {
                errors.at(lit.span(), "`work_limit` must be at least 1");
            }
            options.work_limit = Some(work.max(1));
        }
        "contains" => {
            let lit: LitStr = meta.value()?.parse()?;
            options.contains = Some(match contained_class(&lit.value()) {
                Some(access) => access,
                None => {
                    errors.at(
                        lit.span(),
                        format!(
                            "unknown class `{}` for `contains`: expected {} (the strongest access any of the type's \
                             data gets when it is a field of another struct)",
                            lit.value(),
                            carried_keywords()
                        ),
                    );
                    Access::ReadMostly
                }
            });
        }
        "constructor" => {
            if meta.input.peek(syn::Token![=]) {
                let value = meta.value()?;
                if value.peek(syn::LitBool) {
                    let b: syn::LitBool = value.parse()?;
                    if b.value {
                        options.constructor = Some("new".to_string());
                    } else {
                        options.constructor = None;
                    }
                } else {
                    let lit: LitStr = value.parse()?;
                    match syn::parse_str::<Ident>(&lit.value()) {
                        Ok(ident) => options.constructor = Some(ident.to_string()),
                        Err(_) => errors.at(
                            lit.span(),
                            format!("`constructor` needs a function name, not `{}`", lit.value()),
                        ),
                    }
                }
            } else {
                options.constructor = Some("new".to_string());
            }
        }
        "crate" => {
            let lit: LitStr = meta.value()?.parse()?;
            match crate::krate::parse_value(&lit) {
                Ok(path) => options.krate = Some(quote::ToTokens::into_token_stream(path)),
                Err(e) => errors.push(e),
            }
        }
        "time_limit_ms" => {
            let lit: LitInt = meta.value()?.parse()?;
            let ms: u64 = lit.base10_parse()?;
            if ms == 0 {
                errors.at(lit.span(), "`time_limit_ms` must be at least 1");
            }
            options.time_limit_ms = Some(ms.max(1));
        }
        _ => unreachable!("STRUCT_KEYS lists every key handled above"),
    }
    Ok(())
}

/// `maybe_unsized`: the type parameters declared `?Sized`.
fn parse_fields<'a>(
    fields: impl Iterator<Item = &'a syn::Field>,
    mode: Mode,
    maybe_unsized: &[String],
    errors: &mut Errors,
) -> Vec<FieldInput> {
    fields
        .enumerate()
        .map(|(index, field)| {
            let (member, name, span) = match &field.ident {
                Some(ident) => (Member::Named(ident.clone()), ident.unraw().to_string(), ident.span()),
                None => (Member::Unnamed(syn::Index { index: index as u32, span: field.ty.span() }), index.to_string(), field.ty.span()),
            };
            if crate::types::is_unsized(&field.ty) {
                errors.at(
                    field.ty.span(),
                    format!("field `{name}` is unsized: cachelayout needs every field's size; store it behind a pointer (`Box<..>`, `&..`)"),
                );
            }
            if let Some(param) = maybe_unsized
                .iter()
                .find(|p| crate::types::holds_maybe_unsized(&field.ty, std::slice::from_ref(*p)))
            {
                let ty = crate::types::display(&field.ty);
                let holds = if ty == *param {
                    format!("its type `{param}` is declared `?Sized`")
                } else {
                    format!("its type `{ty}` holds `{param}`, which is declared `?Sized`")
                };
                errors.at(
                    field.ty.span(),
                    format!(
                        "field `{name}` may be unsized: {holds}; cachelayout needs every field's size (its \
                         checks use `size_of` and `offset_of!`): remove `?Sized` from `{param}`, or store \
                         the field behind a pointer (`Box<{ty}>`, `&'a {ty}`)"
                    ),
                );
            }
            if mode == Mode::Optimize {
                check_cfg(&field.attrs, &name, errors);
            }
            let mut parsed = FieldAttrs::default();
            let mut attrs = Vec::new();
            for attr in &field.attrs {
                if attr.path().is_ident("layout") {
                    if let Err(e) = attr.parse_nested_meta(|meta| parsed.key(&meta, &name, errors)) {
                        errors.push(e);
                    }
                } else {
                    attrs.push(attr.clone());
                }
            }
            let hint = parsed.hint(errors);
            FieldInput {
                member,
                name,
                vis: field.vis.clone(),
                ty: field.ty.clone(),
                attrs,
                access: parsed.access.map(|(a, _)| a),
                pinned: parsed.pinned.is_some(),
                hint,
                paths: parsed.paths,
                per_element: parsed.per_element,
                span,
            }
        })
        .collect()
}

/// A lock name that is neither a field's name nor shared by two fields, and
/// is close to one of those, is a typo (`locked_write = "lokc"`): it would
/// put the field in a lock group of its own, where it may share no line with
/// the lock it is really written under.
fn check_lock_names(fields: &[FieldInput], errors: &mut Errors) {
    let lock_of = |f: &FieldInput| f.access.as_ref().and_then(Access::lock).map(str::to_string);
    let locks: Vec<String> = fields.iter().filter_map(lock_of).collect();
    let uses = |name: &str| locks.iter().filter(|l| *l == name).count();
    let known: Vec<&str> = fields
        .iter()
        .map(|f| f.name.as_str())
        .chain(locks.iter().filter(|l| uses(l) > 1).map(String::as_str))
        .collect();
    for f in fields {
        let Some(lock) = lock_of(f) else { continue };
        if known.contains(&lock.as_str()) {
            continue;
        }
        // Short names are too close to everything: `m` is not a typo of `f0`.
        let limit = if lock.chars().count() >= 4 { 2 } else { 1 };
        let close = known
            .iter()
            .map(|k| (edit_distance(&lock, k), k))
            .filter(|&(d, _)| d <= limit && d < lock.chars().count())
            .min_by_key(|&(d, _)| d)
            .map(|(_, k)| k);
        if let Some(close) = close {
            errors.at(
                f.span,
                format!(
                    "field `{}` is written under lock `{lock}`, which no other field names or uses: did you \
                     mean `{close}`? write #[layout(locked_write = \"{close}\")]",
                    f.name
                ),
            );
        }
    }
}

/// `#[cachelayout::optimize]` runs before rustc evaluates `#[cfg]` and
/// `#[cfg_attr]` on the fields (those on the struct itself are evaluated
/// first): it cannot know whether a `#[cfg]` field exists, nor whether a
/// `#[cfg_attr(.., layout(..))]` applies. The derive sees the configured
/// struct.
fn check_cfg(attrs: &[Attribute], field: &str, errors: &mut Errors) {
    for attr in attrs {
        if attr.path().is_ident("cfg") {
            errors.at(
                attr.meta.span(),
                format!(
                    "#[cachelayout::optimize] cannot lay out field `{field}` under `#[cfg]`: the macro runs \
                     before `cfg` is evaluated, so it cannot know whether the field exists; move the field to \
                     a struct of its own, or use #[derive(CacheLayout)], which sees the configured struct"
                ),
            );
        } else if attr.path().is_ident("cfg_attr") && cfg_attr_has_layout(attr) {
            errors.at(
                attr.meta.span(),
                "#[cachelayout::optimize] cannot read `#[layout(..)]` inside `#[cfg_attr]`: the macro runs \
                 before `cfg_attr` is evaluated; write the `#[layout(..)]` attribute directly, or use \
                 #[derive(CacheLayout)], which sees the configured struct",
            );
        }
    }
}

/// `#[cfg_attr(pred, .., layout(..), ..)]`.
pub fn cfg_attr_has_layout(attr: &Attribute) -> bool {
    attr.parse_args_with(|input: syn::parse::ParseStream<'_>| {
        input.parse::<syn::Meta>()?;
        input.parse::<syn::Token![,]>()?;
        let attrs = Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated(input)?;
        Ok(attrs.iter().any(|m| m.path().is_ident("layout")))
    })
    .unwrap_or(false)
}

/// The `#[layout(..)]` keys of one field, across all its attributes.
#[derive(Default)]
struct FieldAttrs {
    /// The class and the keyword that gave it.
    access: Option<(Access, &'static str)>,
    pinned: Option<Span>,
    per_element: Option<Span>,
    size: Option<(u64, Span)>,
    align: Option<(u64, Span)>,
    paths: Vec<String>,
}

impl FieldAttrs {
    fn key(
        &mut self,
        meta: &ParseNestedMeta<'_>,
        field: &str,
        errors: &mut Errors,
    ) -> syn::Result<()> {
        let key = key_name(meta)?;
        let span = meta.path.span();
        match key.as_str() {
            word if Class::from_keyword(word).is_some() => {
                let class = Class::from_keyword(word).expect("a class keyword");
                let info = class.info();
                let param = match info.param {
                    Param::None => None,
                    Param::Lock => {
                        if !meta.input.peek(syn::Token![=]) {
                            return Err(meta.error(format!(
                                "`{word}` needs the name of the lock that guards the field: \
                                 `#[layout({word} = \"lock\")]`"
                            )));
                        }
                        Some(non_empty(meta.value()?.parse()?, "lock name")?)
                    }
                    Param::Group => {
                        let mut group = None;
                        if meta.input.peek(syn::token::Paren) {
                            meta.parse_nested_meta(|inner| {
                                if inner.path.is_ident("group") {
                                    group =
                                        Some(non_empty(inner.value()?.parse()?, "writer group")?);
                                    Ok(())
                                } else {
                                    Err(inner.error(
                                        "expected `group = \"name\"`: the writer group of a lockless field",
                                    ))
                                }
                            })?;
                        }
                        group
                    }
                };
                let keyword = info
                    .keywords
                    .iter()
                    .copied()
                    .find(|k| *k == word)
                    .expect("the keyword that named the class");
                if let Some(access) = class.with(param) {
                    self.set_access(access, keyword, span, field, errors);
                }
            }
            "path" => {
                let name = non_empty(meta.value()?.parse()?, "path name")?;
                if self.paths.contains(&name) {
                    errors.at(span, format!("path `{name}` is given twice"));
                } else {
                    self.paths.push(name);
                }
            }
            "pinned" => {
                if self.pinned.replace(span).is_some() {
                    errors.at(span, "`pinned` is given twice");
                }
            }
            "per_element" => {
                if self.per_element.replace(span).is_some() {
                    errors.at(span, "`per_element` is given twice");
                }
            }
            "size" | "align" => {
                let lit: LitInt = meta.value()?.parse()?;
                let value: u64 = lit.base10_parse()?;
                let slot = if key == "size" {
                    &mut self.size
                } else {
                    &mut self.align
                };
                if slot.replace((value, lit.span())).is_some() {
                    errors.at(span, format!("`{key}` is given twice"));
                }
            }
            other if STRUCT_KEYS.contains(&other) => {
                skip_value(meta)?;
                errors.at(
                    span,
                    format!("`{other}` is a struct attribute: put `#[layout({other} = ..)]` on the struct"),
                );
            }
            other => return Err(meta.error(unknown_key(other, &field_keys(), &field_help()))),
        }
        Ok(())
    }

    fn set_access(
        &mut self,
        access: Access,
        keyword: &'static str,
        span: Span,
        field: &str,
        errors: &mut Errors,
    ) {
        match &self.access {
            None => self.access = Some((access, keyword)),
            Some((_, prev)) if *prev == keyword => errors.at(span, format!("`{keyword}` is given twice")),
            Some((prev_access, prev)) if prev_access.class() == access.class() => {
                let canonical = access.info().attribute;
                let alias = if keyword == canonical { *prev } else { keyword };
                errors.at(span, format!("`{keyword}` is given twice (`{alias}` is another name for `{canonical}`)"))
            }
            Some((_, prev)) => errors.at(
                span,
                format!("field `{field}` has two access classes, `{prev}` and `{keyword}`: keep the one that describes how it is written"),
            ),
        }
    }

    fn hint(&self, errors: &mut Errors) -> Option<SizeHint> {
        match (self.size, self.align) {
            (None, None) => None,
            (Some((_, span)), None) => {
                errors.at(
                    span,
                    "`size` needs `align` as well: `#[layout(size = 24, align = 8)]`",
                );
                None
            }
            (None, Some((_, span))) => {
                errors.at(
                    span,
                    "`align` needs `size` as well: `#[layout(size = 24, align = 8)]`",
                );
                None
            }
            (Some((size, span)), Some((align, align_span))) => {
                if !align.is_power_of_two() {
                    errors.at(
                        align_span,
                        format!("`align = {align}` is not a power of two"),
                    );
                    None
                } else if align > MAX_ALIGN {
                    errors.at(
                        align_span,
                        format!("`align = {align}` is larger than any Rust type's alignment: rustc accepts at most {MAX_ALIGN} (2^29)"),
                    );
                    None
                } else if size > MAX_SIZE {
                    errors.at(
                        span,
                        format!("`size = {size}` is larger than any Rust type can be: at most isize::MAX = {MAX_SIZE} bytes"),
                    );
                    None
                } else if size % align != 0 {
                    errors.at(
                        span,
                        format!("`size = {size}` is not a multiple of `align = {align}`, which every Rust type's size is"),
                    );
                    None
                } else {
                    Some(SizeHint { size, align, span })
                }
            }
        }
    }
}

/// The class a `#[layout(contains = "..")]` names: any keyword of a class
/// that types carry into the structs that hold them.
fn contained_class(word: &str) -> Option<Access> {
    let class = Class::from_keyword(word).filter(|c| c.info().carried.is_some())?;
    class.with(None).or_else(|| class.with(Some(String::new())))
}

/// `"lockless", "locked_write" or "read_mostly"`: the classes types carry,
/// strongest first.
fn carried_keywords() -> String {
    let mut carried: Vec<&ClassInfo> = CLASSES.iter().filter(|c| c.carried.is_some()).collect();
    carried.sort_by_key(|c| std::cmp::Reverse(c.strength));
    let words: Vec<String> = carried
        .iter()
        .map(|c| format!("\"{}\"", c.attribute))
        .collect();
    match words.as_slice() {
        [init @ .., last] if !init.is_empty() => format!("{} or {last}", init.join(", ")),
        _ => words.join(""),
    }
}
fn key_name(meta: &ParseNestedMeta<'_>) -> syn::Result<String> {
    meta.path
        .get_ident()
        .map(|i| i.unraw().to_string())
        .ok_or_else(|| meta.error("expected a layout attribute name, like `read_mostly`"))
}

/// Consume `= value` or `(..)` after a key that is reported as misplaced.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Lit>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

fn non_empty(lit: LitStr, what: &str) -> syn::Result<String> {
    let value = lit.value();
    if value.trim().is_empty() {
        Err(syn::Error::new(
            lit.span(),
            format!("the {what} must not be empty"),
        ))
    } else {
        Ok(value)
    }
}

fn unknown_key(key: &str, known: &[&str], help: &str) -> String {
    match known
        .iter()
        .filter(|k| edit_distance(key, k) <= 2)
        .min_by_key(|k| edit_distance(key, k))
    {
        Some(close) => format!("unknown layout attribute `{key}`: did you mean `{close}`?"),
        None => format!("unknown layout attribute `{key}`: {help}"),
    }
}

use layout_core::suggest::edit_distance;

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(src: &str, mode: Mode) -> syn::Result<Input> {
        parse(syn::parse_str(src).unwrap(), mode, TokenStream::new())
    }

    fn err(src: &str, mode: Mode) -> String {
        match parse_str(src, mode) {
            Ok(_) => panic!("expected an error for {src}"),
            Err(e) => e
                .into_iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    #[test]
    fn reads_field_classes() {
        let input = parse_str(
            r#"#[layout(line = 128, objective = "min-diff")]
            struct S {
                #[layout(read_mostly)] a: u64,
                #[layout(locked_write = "lock")] b: u64,
                #[layout(lockless(group = "producer"))] c: AtomicU64,
                #[layout(lockless_atomic)] d: AtomicU64,
                #[layout(cold, pinned)] e: u8,
                #[layout(size = 24, align = 8)] f: Foo,
                g: u8,
            }"#,
            Mode::Optimize,
        )
        .unwrap();
        assert_eq!(input.options.line, 128);
        assert_eq!(input.options.preset, Preset::MinDiff);
        let access: Vec<_> = input.fields.iter().map(|f| f.access.clone()).collect();
        assert_eq!(
            access,
            vec![
                Some(Access::ReadMostly),
                Some(Access::LockedWrite {
                    lock: "lock".into()
                }),
                Some(Access::Lockless {
                    group: Some("producer".into())
                }),
                Some(Access::Lockless { group: None }),
                Some(Access::Cold),
                None,
                None,
            ]
        );
        assert!(input.fields[4].pinned);
        assert_eq!(
            input.fields[5].hint.map(|h| (h.size, h.align)),
            Some((24, 8))
        );
    }

    #[test]
    fn collects_every_error() {
        let msg = err(
            r#"struct S {
                #[layout(read_mosty)] a: u64,
                #[layout(read_mostly, lockless)] b: u64,
                #[layout(size = 24)] c: Foo,
                #[layout(line = 64)] d: u8,
            }"#,
            Mode::Derive,
        );
        assert_eq!(
            msg,
            "unknown layout attribute `read_mosty`: did you mean `read_mostly`?\n\
             field `b` has two access classes, `read_mostly` and `lockless`: keep the one that describes how it is written\n\
             `size` needs `align` as well: `#[layout(size = 24, align = 8)]`\n\
             `line` is a struct attribute: put `#[layout(line = ..)]` on the struct"
        );
    }

    #[test]
    fn rejects_what_it_cannot_lay_out() {
        assert!(err("enum E { A }", Mode::Derive).contains("not an enum"));
        assert!(err("union U { a: u8 }", Mode::Derive).contains("not a union"));
        assert!(parse_str(
            "struct S<'a, T: Copy, const N: usize> where T: Send { a: [&'a T; N] }",
            Mode::Optimize
        )
        .is_ok());
        assert!(err("struct S(u8, u16);", Mode::Optimize).contains("tuple structs"));
        assert!(err("#[repr(packed)] struct S { a: u8 }", Mode::Optimize).contains("repr(packed)"));
        assert!(
            err("#[layout(line = 48)] struct S { a: u8 }", Mode::Derive).contains("line size 48")
        );
        assert!(parse_str("struct S<'a>(&'a u8, u16);", Mode::Derive).is_ok());
        assert!(
            parse_str("#[repr(C, packed)] struct S { a: u8 }", Mode::Derive)
                .unwrap()
                .repr
                .packed
        );
    }

    #[test]
    fn lock_typos_are_errors() {
        let e = err(
            "struct S { lock: u8, #[layout(locked_write = \"lokc\")] a: u8 }",
            Mode::Derive,
        );
        assert!(e.contains("did you mean `lock`?"), "{e}");
        // An external lock shared by two fields, or far from every name, is fine.
        assert!(parse_str(
            "struct S { #[layout(locked_write = \"q\")] a: u8, #[layout(locked_write = \"q\")] b: u8 }",
            Mode::Derive
        )
        .is_ok());
        assert!(parse_str(
            "struct S { #[layout(locked_write = \"global_table\")] a: u8 }",
            Mode::Derive
        )
        .is_ok());
        assert!(parse_str(
            "struct S { f0: u8, #[layout(locked_write = \"m\")] a: u8 }",
            Mode::Derive
        )
        .is_ok());
    }

    #[test]
    fn paths_and_struct_options() {
        let input = parse_str(
            "#[layout(contains = \"lockless\", work_limit = 5, constructor = \"with\")] struct S { #[layout(path = \"tx\", path = \"rx\")] a: u8 }",
            Mode::Derive,
        )
        .unwrap();
        assert_eq!(input.fields[0].paths, vec!["tx", "rx"]);
        assert_eq!(input.options.work_limit, Some(5));
        assert_eq!(input.options.constructor.as_deref(), Some("with"));
        assert_eq!(
            input.options.contains,
            Some(Access::Lockless { group: None })
        );
    }

    #[test]
    fn sees_optimize_below_the_derive() {
        let is = |src: &str| {
            let item: DeriveInput = syn::parse_str(&format!("{src} struct S {{ a: u8 }}")).unwrap();
            is_optimize(&item.attrs[0])
        };
        assert!(is("#[cachelayout::optimize]"));
        assert!(is("#[optimize(line = 128)]"));
        assert!(is("#[facade::cachelayout::optimize]"));
        assert!(!is("#[other::optimize]"));
        assert!(!is("#[cachelayout::other]"));
        let e = err("#[cachelayout::optimize] struct S { a: u8 }", Mode::Derive);
        assert!(e.contains("remove `CacheLayout` from the derive"), "{e}");
    }

    #[test]
    fn suggests_close_names() {
        assert_eq!(edit_distance("lockles", "lockless"), 1);
        assert!(unknown_key("colde", &field_keys(), &field_help()).contains("`cold`"));
        assert!(unknown_key("zzz", &field_keys(), &field_help()).contains("expected one of"));
    }
}
