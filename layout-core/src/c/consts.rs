//! Integer constant expressions: macro expansion (object-like and simple
//! function-like macros) and evaluation with C's 64-bit preprocessor
//! arithmetic (`intmax_t` / `uintmax_t`).
//!
//! Two modes: in `#if` lines an identifier left after expansion is 0 (as in
//! C); in array sizes, bit-field widths and attribute arguments it must be a
//! macro or an enumerator, else evaluation fails with "missing constant".

use super::lex::{tokenize, TokKind};
use std::collections::HashMap;

/// A token of a macro body or an expression, owning its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PTok {
    Ident(String),
    Number(String),
    CharLit(String),
    Punct(String),
    /// String literals and bytes C does not know; never valid in a constant.
    Other(String),
}

impl PTok {
    fn is_punct(&self, p: &str) -> bool {
        matches!(self, PTok::Punct(q) if q == p)
    }

    fn text(&self) -> &str {
        match self {
            PTok::Ident(s)
            | PTok::Number(s)
            | PTok::CharLit(s)
            | PTok::Punct(s)
            | PTok::Other(s) => s,
        }
    }
}

/// Tokens of `src` without comments and newlines.
pub(crate) fn ptokens(src: &str) -> Vec<PTok> {
    tokenize(src)
        .into_iter()
        .filter_map(|t| {
            let s = t.text(src).to_string();
            match t.kind {
                TokKind::Ident => Some(PTok::Ident(s)),
                TokKind::Number => Some(PTok::Number(s)),
                TokKind::CharLit => Some(PTok::CharLit(s)),
                TokKind::Punct => Some(PTok::Punct(s)),
                TokKind::StrLit | TokKind::Other => Some(PTok::Other(s)),
                TokKind::Comment | TokKind::Newline => None,
            }
        })
        .collect()
}

/// Joins tokens back into text with single spaces between words.
pub(crate) fn join(toks: &[PTok]) -> String {
    let mut s = String::new();
    for t in toks {
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        if word(s.chars().last()) && word(t.text().chars().next()) {
            s.push(' ');
        }
        s.push_str(t.text());
    }
    s
}

/// A `#define`: object-like when `params` is `None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Macro {
    pub params: Option<Vec<String>>,
    pub variadic: bool,
    pub body: Vec<PTok>,
}

impl Macro {
    pub fn object(body: Vec<PTok>) -> Self {
        Macro {
            params: None,
            variadic: false,
            body,
        }
    }

    pub fn function(params: &[&str], body: &str) -> Self {
        Macro {
            params: Some(params.iter().map(|p| p.to_string()).collect()),
            variadic: false,
            body: ptokens(body),
        }
    }
}

/// The macros in force: built-ins, then `-D`/`[defines]`, then the header's
/// own `#define`s (later definitions replace earlier ones, as in C).
#[derive(Clone, Debug, Default)]
pub(crate) struct MacroTable {
    map: HashMap<String, Macro>,
}

impl MacroTable {
    pub fn define(&mut self, name: impl Into<String>, m: Macro) {
        self.map.insert(name.into(), m);
    }

    pub fn undef(&mut self, name: &str) {
        self.map.remove(name);
    }

    pub fn get(&self, name: &str) -> Option<&Macro> {
        self.map.get(name)
    }

    pub fn is_defined(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    /// Identifiers the macro bodies mention.
    pub fn body_idents(&self) -> impl Iterator<Item = &str> {
        self.map.values().flat_map(|m| {
            m.body.iter().filter_map(|t| match t {
                PTok::Ident(s) => Some(s.as_str()),
                _ => None,
            })
        })
    }
}

/// Why a constant could not be computed; the caller adds the location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EvalError {
    pub message: String,
    pub help: Option<String>,
    /// The name of the constant that was missing, if that was the problem.
    pub missing: Option<String>,
}

impl EvalError {
    pub fn new(message: impl Into<String>) -> Self {
        EvalError {
            message: message.into(),
            help: None,
            missing: None,
        }
    }

    fn missing(name: &str) -> Self {
        EvalError {
            message: format!("constant {name} is not defined"),
            help: Some(format!(
                "pass -D {name}=VALUE or add it under [defines] in the access file"
            )),
            missing: Some(name.to_string()),
        }
    }
}

/// What an expression may look up besides macros.
pub(crate) trait Env {
    fn macros(&self) -> &MacroTable;
    /// An enumerator's value (constant mode only).
    fn enumerator(&self, _name: &str) -> Option<i64> {
        None
    }
    /// `sizeof(type-name)`; `None` means sizeof is not available here.
    fn size_of(&self, _type_name: &str) -> Option<Result<u64, EvalError>> {
        None
    }
    /// `__alignof__(type-name)`; `None` means it is not available here.
    fn align_of(&self, _type_name: &str) -> Option<Result<u64, EvalError>> {
        None
    }
    /// `offsetof(type-name, member)`; `None` means it is not available here.
    fn offset_of(&self, _type_name: &str, _member: &str) -> Option<Result<u64, EvalError>> {
        None
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `#if`: unknown identifiers are 0.
    Directive,
    /// Array sizes and the like: unknown identifiers are errors.
    Constant,
}

/// Evaluates `src` (C expression text).
pub(crate) fn eval(src: &str, env: &dyn Env, mode: Mode) -> Result<i64, EvalError> {
    eval_tokens(&ptokens(src), env, mode)
}

pub(crate) fn eval_tokens(toks: &[PTok], env: &dyn Env, mode: Mode) -> Result<i64, EvalError> {
    let expanded = expand(toks, env, &mut Vec::new(), 0)?;
    let mut p = Parser {
        depth: 0,
        toks: &expanded,
        pos: 0,
        env,
        mode,
    };
    if expanded.is_empty() {
        return Err(EvalError::new("empty constant expression"));
    }
    let v = p.ternary(true)?;
    if let Some(t) = p.toks.get(p.pos) {
        return Err(EvalError::new(format!(
            "unexpected `{}` in constant expression `{}`",
            t.text(),
            join(toks)
        )));
    }
    Ok(v.as_i64())
}

/// A value has at most 64 bits; `unsigned` values are kept in 0..2^64.
#[derive(Clone, Copy, Debug)]
struct Val {
    v: i128,
    unsigned: bool,
}

impl Val {
    fn signed(v: i128) -> Self {
        Val { v, unsigned: false }
    }

    fn unsigned(v: i128) -> Self {
        Val {
            v: v.rem_euclid(1i128 << 64),
            unsigned: true,
        }
    }

    fn truthy(self) -> bool {
        self.v != 0
    }

    /// The two's complement bit pattern, as C stores it.
    fn as_i64(self) -> i64 {
        self.v as i64
    }
}

const IS_ENABLED_FAMILY: &[&str] = &["IS_ENABLED", "IS_BUILTIN", "IS_MODULE", "IS_REACHABLE"];

/// gcc's feature tests in `#if` lines.
const HAS_FAMILY: &[&str] = &[
    "__has_attribute",
    "__has_builtin",
    "__has_include",
    "__has_include_next",
    "__has_c_attribute",
    "__has_cpp_attribute",
    "__has_feature",
    "__has_extension",
];

/// Attributes gcc 12 has that kernel headers test with `__has_attribute`
/// (the layout never depends on the answer; the guarded macros do).
const GCC_ATTRIBUTES: &[&str] = &[
    "aligned",
    "alias",
    "alloc_size",
    "always_inline",
    "assume_aligned",
    "cold",
    "const",
    "copy",
    "designated_init",
    "error",
    "externally_visible",
    "fallthrough",
    "flatten",
    "format",
    "gnu_inline",
    "hot",
    "malloc",
    "mode",
    "no_instrument_function",
    "no_stack_protector",
    "noclone",
    "noinline",
    "nonnull",
    "nonstring",
    "noreturn",
    "no_sanitize_address",
    "no_sanitize_undefined",
    "packed",
    "pure",
    "section",
    "unused",
    "used",
    "warn_unused_result",
    "warning",
    "weak",
    "zero_call_used_regs",
    "no_profile_instrument_function",
    "access",
];

/// The answer gcc 12 gives to `__has_attribute(x)` and friends: known
/// attributes yes; builtins, includes and features no (the conservative
/// branch is the one without them).
fn feature_test(name: &str, arg: &[PTok]) -> bool {
    match (name, arg) {
        ("__has_attribute" | "__has_c_attribute", [PTok::Ident(a)]) => {
            let a = a.trim_start_matches("__").trim_end_matches("__");
            GCC_ATTRIBUTES.contains(&a)
        }
        _ => false,
    }
}
const MAX_DEPTH: usize = 64;

/// Expands macros in `toks`. `defined X` and the kernel's `IS_ENABLED(X)`
/// family are answered here, before `X` could be expanded.
fn expand(
    toks: &[PTok],
    env: &dyn Env,
    disabled: &mut Vec<String>,
    depth: usize,
) -> Result<Vec<PTok>, EvalError> {
    if depth > MAX_DEPTH {
        return Err(EvalError::new("macro expansion nests too deeply"));
    }
    let macros = env.macros();
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let PTok::Ident(name) = &toks[i] else {
            out.push(toks[i].clone());
            i += 1;
            continue;
        };
        if name == "defined" {
            let (operand, next) = defined_operand(toks, i + 1)?;
            out.push(bool_tok(macros.is_defined(&operand)));
            i = next;
        } else if HAS_FAMILY.contains(&name.as_str())
            && toks.get(i + 1).is_some_and(|t| t.is_punct("("))
        {
            let (args, next) = collect_args(toks, i + 1)?;
            let arg = args.first().map_or(&[][..], Vec::as_slice);
            out.push(bool_tok(feature_test(name, arg)));
            i = next;
        } else if IS_ENABLED_FAMILY.contains(&name.as_str())
            && toks.get(i + 1).is_some_and(|t| t.is_punct("("))
        {
            let (args, next) = collect_args(toks, i + 1)?;
            let [arg] = args.as_slice() else {
                return Err(EvalError::new(format!("{name} takes one argument")));
            };
            let option = match arg.as_slice() {
                [PTok::Ident(s)] => s.clone(),
                _ => return Err(EvalError::new(format!("{name} takes a CONFIG_ name"))),
            };
            out.push(bool_tok(config_test(name, &option, env, disabled, depth)?));
            i = next;
        } else if let Some(m) = macros.get(name).filter(|_| !disabled.contains(name)) {
            match &m.params {
                None => {
                    disabled.push(name.clone());
                    let e = expand(&m.body, env, disabled, depth + 1);
                    disabled.pop();
                    out.extend(e?);
                    i += 1;
                }
                Some(params) if toks.get(i + 1).is_some_and(|t| t.is_punct("(")) => {
                    let (args, next) = collect_args(toks, i + 1)?;
                    let body = substitute(
                        name, params, m.variadic, &m.body, &args, env, disabled, depth,
                    )?;
                    disabled.push(name.clone());
                    let e = expand(&body, env, disabled, depth + 1);
                    disabled.pop();
                    out.extend(e?);
                    i = next;
                }
                Some(_) => {
                    out.push(toks[i].clone());
                    i += 1;
                }
            }
        } else {
            out.push(toks[i].clone());
            i += 1;
        }
    }
    Ok(out)
}

fn bool_tok(b: bool) -> PTok {
    PTok::Number(if b { "1" } else { "0" }.into())
}

/// `IS_ENABLED(CONFIG_X)`: CONFIG_X or CONFIG_X_MODULE is defined to a
/// non-zero value (`=y` or `=m`).
fn config_test(
    family: &str,
    option: &str,
    env: &dyn Env,
    disabled: &mut Vec<String>,
    depth: usize,
) -> Result<bool, EvalError> {
    let mut value_of = |name: &str| -> Result<bool, EvalError> {
        match env.macros().get(name) {
            Some(m) if m.params.is_none() => {
                let toks = expand(&m.body, env, disabled, depth + 1)?;
                let mut p = Parser {
                    depth: 0,
                    toks: &toks,
                    pos: 0,
                    env,
                    mode: Mode::Directive,
                };
                Ok(!toks.is_empty() && p.ternary(true)?.truthy())
            }
            _ => Ok(false),
        }
    };
    let builtin = value_of(option)?;
    let module = value_of(&format!("{option}_MODULE"))?;
    Ok(match family {
        "IS_BUILTIN" => builtin,
        "IS_MODULE" => module,
        _ => builtin || module,
    })
}

fn defined_operand(toks: &[PTok], i: usize) -> Result<(String, usize), EvalError> {
    match (toks.get(i), toks.get(i + 1), toks.get(i + 2)) {
        (Some(PTok::Ident(n)), _, _) => Ok((n.clone(), i + 1)),
        (Some(open), Some(PTok::Ident(n)), Some(close))
            if open.is_punct("(") && close.is_punct(")") =>
        {
            Ok((n.clone(), i + 3))
        }
        _ => Err(EvalError::new("`defined` needs a macro name")),
    }
}

/// Arguments of a macro call whose `(` is at `open`: top-level comma
/// separated token lists, and the index after the `)`.
pub(crate) fn collect_args(
    toks: &[PTok],
    open: usize,
) -> Result<(Vec<Vec<PTok>>, usize), EvalError> {
    let mut args = vec![Vec::new()];
    let mut depth = 0usize;
    let mut i = open + 1;
    while let Some(t) = toks.get(i) {
        if t.is_punct("(") {
            depth += 1;
        } else if t.is_punct(")") {
            if depth == 0 {
                if args.len() == 1 && args[0].is_empty() {
                    args.clear();
                }
                return Ok((args, i + 1));
            }
            depth -= 1;
        } else if t.is_punct(",") && depth == 0 {
            args.push(Vec::new());
            i += 1;
            continue;
        }
        if let Some(last) = args.last_mut() {
            last.push(t.clone());
        }
        i += 1;
    }
    Err(EvalError::new("unterminated macro argument list"))
}

#[allow(clippy::too_many_arguments)]
fn substitute(
    name: &str,
    params: &[String],
    variadic: bool,
    body: &[PTok],
    args: &[Vec<PTok>],
    env: &dyn Env,
    disabled: &mut Vec<String>,
    depth: usize,
) -> Result<Vec<PTok>, EvalError> {
    let fixed = params.len();
    let ok = if variadic {
        args.len() >= fixed
    } else {
        args.len() == fixed || (fixed == 1 && args.is_empty())
    };
    if !ok {
        return Err(EvalError::new(format!(
            "macro {name} takes {fixed} argument(s), {} given",
            args.len()
        )));
    }
    let mut expanded_args = Vec::with_capacity(args.len());
    for a in args {
        expanded_args.push(expand(a, env, disabled, depth + 1)?);
    }
    let mut out = Vec::new();
    for t in body {
        match t {
            PTok::Punct(p) if p == "#" || p == "##" => {
                return Err(EvalError::new(format!(
                    "macro {name} uses `{p}`, which constants here cannot use"
                )))
            }
            PTok::Ident(id) if id == "__VA_ARGS__" && variadic => {
                for (k, a) in expanded_args.iter().enumerate().skip(fixed) {
                    if k > fixed {
                        out.push(PTok::Punct(",".into()));
                    }
                    out.extend(a.iter().cloned());
                }
            }
            PTok::Ident(id) => match params.iter().position(|p| p == id) {
                Some(k) => out.extend(expanded_args.get(k).cloned().unwrap_or_default()),
                None => out.push(t.clone()),
            },
            _ => out.push(t.clone()),
        }
    }
    Ok(out)
}

/// Scalar type words a cast may use, with (bytes, signed).
fn cast_type(words: &[&str]) -> Option<(u32, bool)> {
    let unsigned = words.contains(&"unsigned");
    let rest: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !matches!(*w, "unsigned" | "signed" | "const" | "volatile"))
        .collect();
    let (bytes, signed) = match rest.as_slice() {
        [] | ["int"] => (4, true),
        ["char"] => (1, true),
        ["short"] | ["short", "int"] => (2, true),
        ["long"] | ["long", "int"] | ["long", "long"] | ["long", "long", "int"] => (8, true),
        ["_Bool"] | ["bool"] => (1, false),
        [w] => match *w {
            "u8" | "__u8" | "uint8_t" => (1, false),
            "s8" | "__s8" | "int8_t" => (1, true),
            "u16" | "__u16" | "uint16_t" => (2, false),
            "s16" | "__s16" | "int16_t" => (2, true),
            "u32" | "__u32" | "uint32_t" => (4, false),
            "s32" | "__s32" | "int32_t" => (4, true),
            "u64" | "__u64" | "uint64_t" | "size_t" | "uintptr_t" => (8, false),
            "s64" | "__s64" | "int64_t" | "ssize_t" | "intptr_t" | "ptrdiff_t" => (8, true),
            _ => return None,
        },
        _ => return None,
    };
    Some((bytes, signed && !unsigned))
}

/// How deeply parentheses and unary operators may nest.
const MAX_NESTING: usize = 256;

struct Parser<'a> {
    depth: usize,
    toks: &'a [PTok],
    pos: usize,
    env: &'a dyn Env,
    mode: Mode,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&PTok> {
        self.toks.get(self.pos)
    }

    fn peek_punct(&self, p: &str) -> bool {
        self.peek().is_some_and(|t| t.is_punct(p))
    }

    fn expect(&mut self, p: &str) -> Result<(), EvalError> {
        if self.peek_punct(p) {
            self.pos += 1;
            Ok(())
        } else {
            Err(EvalError::new(match self.peek() {
                Some(t) => format!(
                    "expected `{p}` in constant expression, found `{}`",
                    t.text()
                ),
                None => format!("expected `{p}` at the end of the constant expression"),
            }))
        }
    }

    /// `live` is false in branches that C does not evaluate (`0 && x`):
    /// their errors do not count.
    fn ternary(&mut self, live: bool) -> Result<Val, EvalError> {
        let cond = self.binary(0, live)?;
        if !self.peek_punct("?") {
            return Ok(cond);
        }
        self.pos += 1;
        if self.peek_punct(":") {
            // GNU `a ?: b`
            self.pos += 1;
            let other = self.ternary(live && !cond.truthy())?;
            return Ok(if cond.truthy() { cond } else { other });
        }
        let a = self.ternary(live && cond.truthy())?;
        self.expect(":")?;
        let b = self.ternary(live && !cond.truthy())?;
        Ok(if cond.truthy() { a } else { b })
    }

    fn binary(&mut self, min_prec: u8, live: bool) -> Result<Val, EvalError> {
        let mut lhs = self.unary(live)?;
        while let Some(PTok::Punct(op)) = self.peek() {
            let op = op.clone();
            let Some(prec) = precedence(&op) else { break };
            if prec < min_prec {
                break;
            }
            self.pos += 1;
            let rhs_live = match op.as_str() {
                "&&" => live && lhs.truthy(),
                "||" => live && !lhs.truthy(),
                _ => live,
            };
            let rhs = self.binary(prec + 1, rhs_live)?;
            lhs = match apply(&op, lhs, rhs) {
                Ok(v) => v,
                Err(e) if live => return Err(e),
                Err(_) => Val::signed(0),
            };
        }
        Ok(lhs)
    }

    fn unary(&mut self, live: bool) -> Result<Val, EvalError> {
        if self.depth >= MAX_NESTING {
            return Err(EvalError::new("constant expression nests too deeply"));
        }
        self.depth += 1;
        let v = self.unary_inner(live);
        self.depth -= 1;
        v
    }

    fn unary_inner(&mut self, live: bool) -> Result<Val, EvalError> {
        let Some(t) = self.peek().cloned() else {
            return Err(EvalError::new("constant expression ends too early"));
        };
        self.pos += 1;
        match t {
            PTok::Punct(p) => match p.as_str() {
                "-" => {
                    let v = self.unary(live)?;
                    if v.unsigned {
                        Ok(Val::unsigned(-v.v))
                    } else {
                        checked_signed(-v.v, live)
                    }
                }
                "+" => self.unary(live),
                "~" => {
                    let v = self.unary(live)?;
                    Ok(if v.unsigned {
                        Val::unsigned(!(v.v as u64) as i128)
                    } else {
                        Val::signed(!(v.v as i64) as i128)
                    })
                }
                "!" => {
                    let v = self.unary(live)?;
                    Ok(Val::signed(i128::from(!v.truthy())))
                }
                "(" => {
                    if let Some((bytes, signed, close)) = self.cast_ahead() {
                        self.pos = close + 1;
                        let v = self.unary(live)?;
                        return Ok(cast(v, bytes, signed));
                    }
                    let v = self.ternary(live)?;
                    self.expect(")")?;
                    Ok(v)
                }
                _ => Err(EvalError::new(format!(
                    "unexpected `{p}` in constant expression"
                ))),
            },
            PTok::Number(n) => parse_number(&n),
            PTok::CharLit(c) => parse_char(&c),
            PTok::Ident(name) if name == "sizeof" && self.mode == Mode::Constant => {
                self.size_of(live)
            }
            PTok::Ident(name)
                if matches!(
                    name.as_str(),
                    "__alignof__" | "__alignof" | "_Alignof" | "alignof"
                ) && self.mode == Mode::Constant =>
            {
                self.align_of(live)
            }
            PTok::Ident(name)
                if matches!(name.as_str(), "offsetof" | "__builtin_offsetof")
                    && self.mode == Mode::Constant =>
            {
                self.offset_of(live)
            }
            PTok::Ident(name) => self.identifier(&name, live),
            PTok::Other(o) => Err(EvalError::new(format!(
                "`{o}` cannot appear in a constant expression"
            ))),
        }
    }

    fn identifier(&mut self, name: &str, live: bool) -> Result<Val, EvalError> {
        match self.mode {
            // `FOO(x)` with FOO not defined: C would fail on `0(x)`; the
            // macro most likely comes from a header this one includes.
            Mode::Directive if live && self.peek_punct("(") => Err(EvalError {
                message: format!("function-like macro {name}() is not defined"),
                help: Some(format!(
                    "{name} comes from a header this one includes (includes are not followed): \
                     pass -D with the value of the whole condition's macros, or lay the struct out from BTF"
                )),
                missing: Some(name.to_string()),
            }),
            Mode::Directive if self.peek_punct("(") => {
                let (_, close) = self.parenthesized(name)?;
                self.pos = close + 1;
                Ok(Val::signed(0))
            }
            Mode::Directive => Ok(Val::signed(0)),
            Mode::Constant => {
                if let Some(v) = self.env.enumerator(name) {
                    return Ok(Val::signed(i128::from(v)));
                }
                match name {
                    "true" => Ok(Val::signed(1)),
                    "false" => Ok(Val::signed(0)),
                    _ if !live => Ok(Val::signed(0)),
                    _ => Err(EvalError::missing(name)),
                }
            }
        }
    }

    /// After `(`: is this a cast to a scalar type? Returns its size,
    /// signedness and the index of `)`.
    fn cast_ahead(&self) -> Option<(u32, bool, usize)> {
        let mut words = Vec::new();
        let mut i = self.pos;
        let mut pointer = false;
        loop {
            match self.toks.get(i)? {
                PTok::Ident(w) if !pointer => words.push(w.as_str()),
                PTok::Punct(p) if p == "*" => pointer = true,
                PTok::Punct(p) if p == ")" => break,
                _ => return None,
            }
            i += 1;
        }
        if words.is_empty() {
            return None;
        }
        if pointer {
            return Some((8, false, i));
        }
        let (bytes, signed) = cast_type(&words)?;
        Some((bytes, signed, i))
    }

    /// `__alignof__(type-name)`.
    fn align_of(&mut self, live: bool) -> Result<Val, EvalError> {
        let (open, close) = self.parenthesized("__alignof__")?;
        let name = join(&self.toks[open + 1..close]);
        self.pos = close + 1;
        match self.env.align_of(&name) {
            Some(Ok(n)) => Ok(Val::unsigned(i128::from(n))),
            Some(Err(e)) if live => Err(e),
            Some(Err(_)) => Ok(Val::unsigned(0)),
            None => Err(EvalError::new("__alignof__ cannot be used here")),
        }
    }

    /// `offsetof(type-name, member)`.
    fn offset_of(&mut self, live: bool) -> Result<Val, EvalError> {
        let (open, close) = self.parenthesized("offsetof")?;
        let inner = &self.toks[open + 1..close];
        self.pos = close + 1;
        let Some(comma) = inner.iter().rposition(|t| t.is_punct(",")) else {
            return Err(EvalError::new("offsetof needs a type and a member"));
        };
        let (ty, member) = (join(&inner[..comma]), join(&inner[comma + 1..]));
        match self.env.offset_of(&ty, &member) {
            Some(Ok(n)) => Ok(Val::unsigned(i128::from(n))),
            Some(Err(e)) if live => Err(e),
            Some(Err(_)) => Ok(Val::unsigned(0)),
            None => Err(EvalError::new("offsetof cannot be used here")),
        }
    }

    /// The `(` at the current position and its matching `)`.
    fn parenthesized(&self, what: &str) -> Result<(usize, usize), EvalError> {
        if !self.peek_punct("(") {
            return Err(EvalError::new(format!(
                "{what} needs a parenthesized argument here"
            )));
        }
        let open = self.pos;
        let mut depth = 0usize;
        for (k, t) in self.toks.iter().enumerate().skip(open) {
            if t.is_punct("(") {
                depth += 1;
            } else if t.is_punct(")") {
                depth -= 1;
                if depth == 0 {
                    return Ok((open, k));
                }
            }
        }
        Err(EvalError::new(format!("unbalanced `(` after {what}")))
    }

    fn size_of(&mut self, live: bool) -> Result<Val, EvalError> {
        if !self.peek_punct("(") {
            return Err(EvalError::new(
                "sizeof needs a parenthesized type name here",
            ));
        }
        let open = self.pos;
        let mut depth = 0usize;
        let mut close = None;
        for (k, t) in self.toks.iter().enumerate().skip(open) {
            if t.is_punct("(") {
                depth += 1;
            } else if t.is_punct(")") {
                depth -= 1;
                if depth == 0 {
                    close = Some(k);
                    break;
                }
            }
        }
        let close = close.ok_or_else(|| EvalError::new("unbalanced `(` after sizeof"))?;
        let inner = &self.toks[open + 1..close];
        self.pos = close + 1;
        // `sizeof("text" "more")`: the bytes of the literals plus the NUL.
        if !inner.is_empty()
            && inner
                .iter()
                .all(|t| matches!(t, PTok::Other(s) if s.starts_with('"')))
        {
            let mut bytes = 1u64;
            for t in inner {
                bytes += string_literal_len(t.text()).ok_or_else(|| {
                    EvalError::new(format!("cannot read the string {}", t.text()))
                })?;
            }
            return Ok(Val::unsigned(i128::from(bytes)));
        }
        let name = join(inner);
        match self.env.size_of(&name) {
            Some(Ok(n)) => Ok(Val::unsigned(i128::from(n))),
            Some(Err(e)) if live => Err(e),
            Some(Err(_)) => Ok(Val::unsigned(0)),
            None => Err(EvalError::new("sizeof cannot be used here")),
        }
    }
}

/// The number of bytes a plain string literal `"..."` stands for, without
/// the terminating NUL (simple escapes count one byte).
fn string_literal_len(lit: &str) -> Option<u64> {
    let body = lit.strip_prefix('"')?.strip_suffix('"')?;
    let mut n = 0;
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next()? {
                'x' | '0'..='7' | 'u' | 'U' => return None,
                _ => {}
            }
            n += 1;
        } else {
            n += c.len_utf8() as u64;
        }
    }
    Some(n)
}

fn precedence(op: &str) -> Option<u8> {
    Some(match op {
        "||" => 1,
        "&&" => 2,
        "|" => 3,
        "^" => 4,
        "&" => 5,
        "==" | "!=" => 6,
        "<" | ">" | "<=" | ">=" => 7,
        "<<" | ">>" => 8,
        "+" | "-" => 9,
        "*" | "/" | "%" => 10,
        _ => return None,
    })
}

fn checked_signed(v: i128, live: bool) -> Result<Val, EvalError> {
    if i64::try_from(v).is_ok() || !live {
        Ok(Val::signed(v))
    } else {
        Err(EvalError::new("integer overflow in constant expression"))
    }
}

fn cast(v: Val, bytes: u32, signed: bool) -> Val {
    let bits = bytes * 8;
    let mask: i128 = if bits >= 64 {
        (1i128 << 64) - 1
    } else {
        (1i128 << bits) - 1
    };
    let low = v.v & mask;
    if !signed {
        return Val::unsigned(low);
    }
    let sign = 1i128 << (bits - 1);
    Val::signed(if low & sign != 0 {
        low - (mask + 1)
    } else {
        low
    })
}

fn apply(op: &str, a: Val, b: Val) -> Result<Val, EvalError> {
    let unsigned = a.unsigned || b.unsigned;
    let bool_val = |x: bool| Ok(Val::signed(i128::from(x)));
    match op {
        "||" => return bool_val(a.truthy() || b.truthy()),
        "&&" => return bool_val(a.truthy() && b.truthy()),
        "<<" | ">>" => {
            if b.v < 0 || b.v >= 64 {
                return Err(EvalError::new(format!(
                    "shift by {} in constant expression",
                    b.v
                )));
            }
            let n = b.v as u32;
            return if a.unsigned {
                let x = a.v as u64;
                Ok(Val::unsigned(
                    if op == "<<" { x << n } else { x >> n } as i128
                ))
            } else if op == "<<" {
                checked_signed(a.v << n, true)
            } else {
                Ok(Val::signed(a.v >> n))
            };
        }
        _ => {}
    }
    // Usual arithmetic conversions: both unsigned if either is.
    let (x, y) = if unsigned {
        (Val::unsigned(a.v).v, Val::unsigned(b.v).v)
    } else {
        (a.v, b.v)
    };
    let arith = |v: i128| {
        if unsigned {
            Ok(Val::unsigned(v))
        } else {
            checked_signed(v, true)
        }
    };
    match op {
        "+" => arith(x + y),
        "-" => arith(x - y),
        "*" => {
            if unsigned {
                Ok(Val::unsigned((x as u64).wrapping_mul(y as u64) as i128))
            } else {
                arith(x * y)
            }
        }
        "/" | "%" => {
            if y == 0 {
                return Err(EvalError::new("division by zero in constant expression"));
            }
            arith(if op == "/" { x / y } else { x % y })
        }
        "&" => arith(x & y),
        "|" => arith(x | y),
        "^" => arith(x ^ y),
        "==" => bool_val(x == y),
        "!=" => bool_val(x != y),
        "<" => bool_val(x < y),
        ">" => bool_val(x > y),
        "<=" => bool_val(x <= y),
        ">=" => bool_val(x >= y),
        _ => Err(EvalError::new(format!(
            "operator `{op}` is not supported in constants"
        ))),
    }
}

fn parse_number(text: &str) -> Result<Val, EvalError> {
    let digits_end = text
        .find(['u', 'U', 'l', 'L'])
        .filter(|&p| {
            text[p..]
                .chars()
                .all(|c| matches!(c, 'u' | 'U' | 'l' | 'L'))
        })
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    let bad = || EvalError::new(format!("`{text}` is not an integer constant"));
    let (radix, body) = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        (16, h)
    } else if let Some(b) = digits
        .strip_prefix("0b")
        .or_else(|| digits.strip_prefix("0B"))
    {
        (2, b)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    let v = u64::from_str_radix(body, radix).map_err(|_| bad())?;
    let unsigned = suffix.contains(['u', 'U']) || v > i64::MAX as u64;
    Ok(if unsigned {
        Val::unsigned(i128::from(v))
    } else {
        Val::signed(i128::from(v))
    })
}

fn parse_char(text: &str) -> Result<Val, EvalError> {
    let bad = || {
        EvalError::new(format!(
            "`{text}` is not a character constant this tool reads"
        ))
    };
    let inner = text
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .ok_or_else(bad)?;
    let v = match inner.as_bytes() {
        [c] => i128::from(*c),
        [b'\\', esc] => i128::from(match esc {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'0' => 0,
            b'\\' => b'\\',
            b'\'' => b'\'',
            b'"' => b'"',
            _ => return Err(bad()),
        }),
        _ => return Err(bad()),
    };
    Ok(Val::signed(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct TestEnv {
        macros: MacroTable,
    }

    impl Env for TestEnv {
        fn macros(&self) -> &MacroTable {
            &self.macros
        }
        fn enumerator(&self, name: &str) -> Option<i64> {
            (name == "NR_ITEMS").then_some(7)
        }
        fn size_of(&self, type_name: &str) -> Option<Result<u64, EvalError>> {
            Some(match type_name {
                "long" => Ok(8),
                "struct list_head" => Ok(16),
                _ => Err(EvalError::new(format!("unknown type {type_name}"))),
            })
        }
    }

    fn env() -> TestEnv {
        let mut macros = MacroTable::default();
        macros.define("N", Macro::object(ptokens("(2 + 3)")));
        macros.define("CONFIG_A", Macro::object(ptokens("1")));
        macros.define("CONFIG_B_MODULE", Macro::object(ptokens("1")));
        macros.define(
            "DIV_ROUND_UP",
            Macro::function(&["n", "d"], "(((n) + (d) - 1) / (d))"),
        );
        macros.define("SELF", Macro::object(ptokens("SELF + 1")));
        TestEnv { macros }
    }

    fn c(src: &str) -> Result<i64, EvalError> {
        eval(src, &env(), Mode::Constant)
    }

    fn d(src: &str) -> Result<i64, EvalError> {
        eval(src, &env(), Mode::Directive)
    }

    #[test]
    fn arithmetic_with_c_precedence() {
        assert_eq!(c("1 + 2 * 3"), Ok(7));
        assert_eq!(c("(1 + 2) * 3"), Ok(9));
        assert_eq!(c("1 << 4 >> 2"), Ok(4));
        assert_eq!(c("N * N - 1"), Ok(24));
        assert_eq!(c("17 % 5 + -3"), Ok(-1));
        assert_eq!(c("0x10UL | 010 | 0b1"), Ok(25));
        assert_eq!(c("2 > 1 ? 10 : 20"), Ok(10));
        assert_eq!(c("0 ?: 9"), Ok(9));
        assert_eq!(c("~0UL >> 60"), Ok(15));
        assert_eq!(c("-1 < 0"), Ok(1));
        assert_eq!(c("-1 < 0U"), Ok(0), "unsigned comparison as in C");
        assert_eq!(c("'A'"), Ok(65));
    }

    #[test]
    fn macros_enumerators_sizeof_and_casts() {
        assert_eq!(c("DIV_ROUND_UP(10, 4)"), Ok(3));
        assert_eq!(c("NR_ITEMS + 1"), Ok(8));
        assert_eq!(c("sizeof(struct list_head) * 2"), Ok(32));
        assert_eq!(c("(int)sizeof(long)"), Ok(8));
        assert_eq!(c("(unsigned char)300"), Ok(44));
        assert_eq!(c("(s8)255"), Ok(-1));
        assert_eq!(c("true + false"), Ok(1));
        assert!(c("SELF").is_err(), "self reference stops");
    }

    #[test]
    fn sizeof_string_literals() {
        let env = TestEnv {
            macros: MacroTable::default(),
        };
        assert_eq!(eval("sizeof(\" or \")", &env, Mode::Constant), Ok(5));
        assert_eq!(
            eval("sizeof(\"a\\n\" \"bc\") * 2", &env, Mode::Constant),
            Ok(10)
        );
    }

    #[test]
    fn directives_see_defined_and_config_tests() {
        assert_eq!(d("defined(CONFIG_A) && N > 3"), Ok(1));
        assert_eq!(d("defined CONFIG_X"), Ok(0));
        assert_eq!(d("CONFIG_X"), Ok(0), "unknown names are 0 in #if");
        assert_eq!(d("IS_ENABLED(CONFIG_A) + IS_ENABLED(CONFIG_B)"), Ok(2));
        assert_eq!(d("IS_BUILTIN(CONFIG_B) || IS_MODULE(CONFIG_A)"), Ok(0));
        assert_eq!(d("defined(X) && 1 / X"), Ok(0), "unevaluated division");
    }

    #[test]
    fn errors_name_the_problem() {
        let e = c("NR_CPUS * 2").unwrap_err();
        assert_eq!(e.missing.as_deref(), Some("NR_CPUS"));
        assert!(e.help.unwrap().contains("-D NR_CPUS="));
        assert!(c("1 / 0").unwrap_err().message.contains("division by zero"));
        assert!(c("sizeof(struct nope)")
            .unwrap_err()
            .message
            .contains("struct nope"));
        assert!(c("1 +").is_err());
        assert!(c("(1").is_err());
        assert!(c("1 2").is_err());
        assert!(c("").is_err());
        assert!(c("\"s\"").is_err());
        assert!(c("1 << 64").is_err());
        assert!(c("0x7fffffffffffffff + 1").is_err());
        assert!(c("1.5").is_err());
        assert!(d("defined(").is_err());
    }
}
