//! Integer constant expressions evaluated as C does it, after the macros
//! are expanded ([`super::macros`]).
//!
//! In array sizes, bit-field widths and attribute arguments every value has
//! a C type (`int`, `unsigned int`, `long`, `unsigned long`; x86_64 LP64):
//! literals take the first type their value and suffix allow, `sizeof` is
//! `unsigned long`, operands go through the usual arithmetic conversions,
//! unsigned arithmetic wraps at the type's width, shifts have the type of
//! their promoted left operand, `?:` has the common type of its branches.
//! What C leaves undefined or gcc diagnoses (signed overflow, a shift count
//! negative or not below the width, a left shift of a negative value or one
//! that loses bits, division by zero) is an error, unless it lies in a
//! branch C does not evaluate. In `#if` lines every value is `intmax_t` or
//! `uintmax_t` (64 bits), as in the preprocessor.
//!
//! Two modes: in `#if` lines an identifier left after expansion is 0 (as in
//! C); in array sizes, bit-field widths and attribute arguments it must be a
//! macro or an enumerator, else evaluation fails with "missing constant".

pub(crate) use super::macros::EvalError;
use super::macros::{expand, Expander};
use super::macros::{join, ptokens, MacroTable, PTok};

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
/// The value is exact in its C type: `-2^63..2^63` for signed types,
/// `0..2^64` for unsigned ones.
pub(crate) fn eval(src: &str, env: &dyn Env, mode: Mode) -> Result<i128, EvalError> {
    eval_tokens(&ptokens(src), env, mode)
}

pub(crate) fn eval_tokens(toks: &[PTok], env: &dyn Env, mode: Mode) -> Result<i128, EvalError> {
    eval_typed(toks, env, mode).map(|v| v.v)
}

/// The value and its C type.
pub(crate) fn eval_typed(toks: &[PTok], env: &dyn Env, mode: Mode) -> Result<Val, EvalError> {
    // `IS_ENABLED(CONFIG_X)`: whether CONFIG_X's value is non-zero.
    let truthy = |value: &[PTok]| -> Result<bool, EvalError> {
        let mut p = Parser {
            depth: 0,
            toks: value,
            pos: 0,
            env,
            mode: Mode::Directive,
        };
        Ok(!value.is_empty() && p.ternary(true)?.truthy())
    };
    let expander = Expander {
        macros: env.macros(),
        truthy: &truthy,
        work: std::cell::Cell::new(0),
    };
    let expanded = expand(toks, &expander)?;
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
    Ok(v)
}

/// A C integer type after the integer promotions: `int` (32 bits) or
/// `long` (64), signed or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IntTy {
    pub bits: u32,
    pub unsigned: bool,
}

pub(crate) const INT: IntTy = IntTy {
    bits: 32,
    unsigned: false,
};
const UINT: IntTy = IntTy {
    bits: 32,
    unsigned: true,
};
const LONG: IntTy = IntTy {
    bits: 64,
    unsigned: false,
};
const ULONG: IntTy = IntTy {
    bits: 64,
    unsigned: true,
};

impl IntTy {
    fn min(self) -> i128 {
        if self.unsigned {
            0
        } else {
            -(1i128 << (self.bits - 1))
        }
    }

    fn max(self) -> i128 {
        if self.unsigned {
            (1i128 << self.bits) - 1
        } else {
            (1i128 << (self.bits - 1)) - 1
        }
    }

    fn holds(self, v: i128) -> bool {
        (self.min()..=self.max()).contains(&v)
    }

    /// The C spelling, for messages.
    pub fn name(self) -> &'static str {
        match (self.bits, self.unsigned) {
            (32, false) => "int",
            (32, true) => "unsigned int",
            (_, false) => "long",
            (_, true) => "unsigned long",
        }
    }

    /// The usual arithmetic conversions.
    fn common(self, other: IntTy) -> IntTy {
        let bits = self.bits.max(other.bits);
        let unsigned = match (self.unsigned, other.unsigned) {
            (false, false) => false,
            (true, true) => true,
            // The unsigned one wins unless the signed one is wider.
            (true, false) => self.bits >= other.bits,
            (false, true) => other.bits >= self.bits,
        };
        IntTy { bits, unsigned }
    }
}

/// A value of a C integer type, exact: in `ty`'s range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Val {
    pub v: i128,
    pub ty: IntTy,
}

impl Val {
    /// `v` converted to `ty` as C converts: modulo 2^bits for unsigned
    /// types; for signed ones, two's complement (gcc's choice).
    fn convert(v: i128, ty: IntTy) -> Self {
        let m = v.rem_euclid(1i128 << ty.bits);
        let v = if !ty.unsigned && m > ty.max() {
            m - (1i128 << ty.bits)
        } else {
            m
        };
        Val { v, ty }
    }

    fn int(v: bool) -> Self {
        Val {
            v: i128::from(v),
            ty: INT,
        }
    }

    fn truthy(self) -> bool {
        self.v != 0
    }

    fn to(self, ty: IntTy) -> Self {
        Val::convert(self.v, ty)
    }
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
        // 0 bytes: `_Bool`, which converts to 0 or 1.
        ["_Bool"] | ["bool"] => (0, false),
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
    /// In `#if` lines every value is `intmax_t` or `uintmax_t`.
    fn norm(&self, v: Val) -> Val {
        match self.mode {
            Mode::Directive => Val {
                v: v.v,
                ty: IntTy {
                    bits: 64,
                    unsigned: v.ty.unsigned,
                },
            },
            Mode::Constant => v,
        }
    }

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
        self.ternary_inner(live)
    }

    /// A branch of `?:`: `a ? b ? c ... : d : e` nests without a unary
    /// operator between, so the branches count toward the depth.
    fn branch(&mut self, live: bool) -> Result<Val, EvalError> {
        self.too_deep()?;
        self.depth += 1;
        let v = self.ternary_inner(live);
        self.depth -= 1;
        v
    }

    fn too_deep(&self) -> Result<(), EvalError> {
        if self.depth >= MAX_NESTING {
            let mut e = EvalError::new(format!(
                "constant expression nests too deeply (more than {MAX_NESTING} levels)"
            ));
            e.help = Some("simplify the expression".into());
            return Err(e);
        }
        Ok(())
    }

    fn ternary_inner(&mut self, live: bool) -> Result<Val, EvalError> {
        let cond = self.binary(0, live)?;
        if !self.peek_punct("?") {
            return Ok(cond);
        }
        self.pos += 1;
        if self.peek_punct(":") {
            // GNU `a ?: b`
            self.pos += 1;
            let other = self.branch(live && !cond.truthy())?;
            let ty = cond.ty.common(other.ty);
            return Ok(if cond.truthy() { cond } else { other }.to(ty));
        }
        let a = self.branch(live && cond.truthy())?;
        self.expect(":")?;
        let b = self.branch(live && !cond.truthy())?;
        let ty = a.ty.common(b.ty);
        Ok(if cond.truthy() { a } else { b }.to(ty))
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
                Ok(v) => self.norm(v),
                Err(e) if live => return Err(e),
                // Not evaluated: only the type counts.
                Err(_) => self.norm(Val::convert(0, result_type(&op, lhs.ty, rhs.ty))),
            };
        }
        Ok(lhs)
    }

    fn unary(&mut self, live: bool) -> Result<Val, EvalError> {
        self.too_deep()?;
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
                    if v.ty.unsigned {
                        Ok(Val::convert(-v.v, v.ty))
                    } else {
                        checked(-v.v, v.ty, live)
                    }
                }
                "+" => self.unary(live),
                "~" => {
                    let v = self.unary(live)?;
                    Ok(Val::convert(-v.v - 1, v.ty))
                }
                "!" => {
                    let v = self.unary(live)?;
                    Ok(self.norm(Val::int(!v.truthy())))
                }
                "(" => {
                    if let Some((bytes, signed, close)) = self.cast_ahead() {
                        self.pos = close + 1;
                        let v = self.unary(live)?;
                        return Ok(self.norm(cast(v, bytes, signed)));
                    }
                    let v = self.ternary(live)?;
                    self.expect(")")?;
                    Ok(v)
                }
                _ => Err(EvalError::new(format!(
                    "unexpected `{p}` in constant expression"
                ))),
            },
            PTok::Number(n) => parse_number(&n).map(|v| self.norm(v)),
            PTok::CharLit(c) => parse_char(&c).map(|v| self.norm(v)),
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
                Ok(self.norm(Val::int(false)))
            }
            Mode::Directive => Ok(self.norm(Val::int(false))),
            Mode::Constant => {
                if let Some(v) = self.env.enumerator(name) {
                    // An enumerator is an `int`, or `long` beyond its range.
                    let v = i128::from(v);
                    let ty = if INT.holds(v) { INT } else { LONG };
                    return Ok(Val { v, ty });
                }
                match name {
                    "true" => Ok(Val::int(true)),
                    "false" => Ok(Val::int(false)),
                    _ if !live => Ok(Val::int(false)),
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
            Some(Ok(n)) => Ok(Val::convert(i128::from(n), ULONG)),
            Some(Err(e)) if live => Err(e),
            Some(Err(_)) => Ok(Val::convert(0, ULONG)),
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
            Some(Ok(n)) => Ok(Val::convert(i128::from(n), ULONG)),
            Some(Err(e)) if live => Err(e),
            Some(Err(_)) => Ok(Val::convert(0, ULONG)),
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
            return Ok(Val::convert(i128::from(bytes), ULONG));
        }
        let name = join(inner);
        match self.env.size_of(&name) {
            Some(Ok(n)) => Ok(Val::convert(i128::from(n), ULONG)),
            Some(Err(e)) if live => Err(e),
            Some(Err(_)) => Ok(Val::convert(0, ULONG)),
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

/// `v` as a value of the signed type `ty`, or the overflow error.
fn checked(v: i128, ty: IntTy, live: bool) -> Result<Val, EvalError> {
    if ty.holds(v) {
        Ok(Val { v, ty })
    } else if !live {
        Ok(Val::convert(v, ty))
    } else {
        Err(overflow(ty))
    }
}

fn overflow(ty: IntTy) -> EvalError {
    let mut e = EvalError::new(format!(
        "integer overflow in constant expression of type `{}`",
        ty.name()
    ));
    if ty.bits == 32 {
        e.help = Some("write the constants with a `UL` suffix to compute in 64 bits".into());
    }
    e
}

/// A cast to a scalar of `bytes` bytes, then the integer promotions
/// (`(u8)300` is the `int` 44); `_Bool` gives 0 or 1.
fn cast(v: Val, bytes: u32, signed: bool) -> Val {
    if bytes == 0 {
        return Val::int(v.truthy());
    }
    let ty = IntTy {
        bits: (bytes * 8).max(32),
        unsigned: !signed && bytes >= 4,
    };
    let bits = bytes * 8;
    let narrow = Val::convert(
        v.v,
        IntTy {
            bits,
            unsigned: !signed,
        },
    );
    Val::convert(narrow.v, ty)
}

/// The type of `a op b` (for a branch that is not evaluated).
fn result_type(op: &str, a: IntTy, b: IntTy) -> IntTy {
    match op {
        "<<" | ">>" => a,
        "||" | "&&" | "==" | "!=" | "<" | ">" | "<=" | ">=" => INT,
        _ => a.common(b),
    }
}

fn apply(op: &str, a: Val, b: Val) -> Result<Val, EvalError> {
    match op {
        "||" => return Ok(Val::int(a.truthy() || b.truthy())),
        "&&" => return Ok(Val::int(a.truthy() && b.truthy())),
        "<<" | ">>" => return shift(op, a, b),
        _ => {}
    }
    let ty = a.ty.common(b.ty);
    let (x, y) = (a.to(ty).v, b.to(ty).v);
    let arith = |v: i128| {
        if ty.unsigned {
            Ok(Val::convert(v, ty))
        } else {
            checked(v, ty, true)
        }
    };
    match op {
        "+" => arith(x + y),
        "-" => arith(x - y),
        "*" => arith(x * y),
        "/" | "%" => {
            if y == 0 {
                return Err(EvalError::new("division by zero in constant expression"));
            }
            // `INT_MIN / -1` overflows, and so does `INT_MIN % -1` in gcc.
            if !ty.unsigned && x == ty.min() && y == -1 {
                return Err(overflow(ty));
            }
            arith(if op == "/" { x / y } else { x % y })
        }
        "&" => arith(x & y),
        "|" => arith(x | y),
        "^" => arith(x ^ y),
        "==" => Ok(Val::int(x == y)),
        "!=" => Ok(Val::int(x != y)),
        "<" => Ok(Val::int(x < y)),
        ">" => Ok(Val::int(x > y)),
        "<=" => Ok(Val::int(x <= y)),
        ">=" => Ok(Val::int(x >= y)),
        _ => Err(EvalError::new(format!(
            "operator `{op}` is not supported in constants"
        ))),
    }
}

/// `a << b`, `a >> b`: the type of `a`; what C leaves undefined is an error.
fn shift(op: &str, a: Val, b: Val) -> Result<Val, EvalError> {
    let ty = a.ty;
    if b.v < 0 || b.v >= i128::from(ty.bits) {
        let mut e = EvalError::new(format!(
            "shift count {} is {} the width of `{}` ({} bits)",
            b.v,
            if b.v < 0 {
                "negative, not within"
            } else {
                "not below"
            },
            ty.name(),
            ty.bits
        ));
        if ty.bits == 32 {
            e.help = Some("shift a 64-bit value, e.g. `1UL << N`".into());
        }
        return Err(e);
    }
    let n = b.v as u32;
    if op == ">>" {
        // Arithmetic for negative values, as gcc does.
        return Ok(Val { v: a.v >> n, ty });
    }
    if ty.unsigned {
        return Ok(Val::convert(a.v << n, ty));
    }
    if a.v < 0 {
        return Err(EvalError::new(format!(
            "left shift of the negative value {} is undefined in C",
            a.v
        )));
    }
    // Shifting into the sign bit (but no further) is allowed: `1 << 31`.
    let r = a.v << n;
    if r >> ty.bits != 0 {
        return Err(overflow(ty));
    }
    Ok(Val::convert(r, ty))
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
    let v = i128::from(u64::from_str_radix(body, radix).map_err(|_| bad())?);
    let suffix = suffix.to_ascii_lowercase();
    let u = suffix.contains('u');
    let l = suffix.contains('l');
    // C11 6.4.4.1: the first type of the list that holds the value; octal
    // and hex constants may also take the unsigned types.
    let candidates: &[IntTy] = match (u, l, radix == 10) {
        (false, false, true) => &[INT, LONG],
        (false, false, false) => &[INT, UINT, LONG, ULONG],
        (true, false, _) => &[UINT, ULONG],
        (false, true, true) => &[LONG],
        (false, true, false) => &[LONG, ULONG],
        (true, true, _) => &[ULONG],
    };
    match candidates.iter().find(|ty| ty.holds(v)) {
        Some(&ty) => Ok(Val { v, ty }),
        // gcc: "integer constant is so large that it is unsigned".
        None if ULONG.holds(v) => Ok(Val { v, ty: ULONG }),
        None => Err(bad()),
    }
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
    Ok(Val { v, ty: INT })
}

#[cfg(test)]
mod tests {
    use super::super::macros::Macro;
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

    fn c(src: &str) -> Result<i128, EvalError> {
        eval(src, &env(), Mode::Constant)
    }

    fn d(src: &str) -> Result<i128, EvalError> {
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
    fn c_types_and_conversions_item_4() {
        // `unsigned int` is 32 bits wide.
        assert_eq!(c("(~0u >> 28) & 0xff"), Ok(15));
        assert_eq!(c("~0u"), Ok(0xffff_ffff));
        assert_eq!(c("~0UL"), Ok(0xffff_ffff_ffff_ffff));
        // `long` holds every `unsigned int`: the comparison is signed.
        assert_eq!(c("-1L < 0u"), Ok(1));
        assert_eq!(c("-1 < 0u"), Ok(0));
        assert_eq!(c("-1L < 0UL"), Ok(0));
        // Hex literals may be unsigned int; decimal ones become long.
        assert_eq!(c("0xffffffff + 1"), Ok(0));
        assert_eq!(c("4294967295 + 1"), Ok(4_294_967_296));
        assert_eq!(c("-2147483648"), Ok(-2_147_483_648));
        assert_eq!(c("1 ? -1 : 0u"), Ok(0xffff_ffff), "?: has the common type");
        assert_eq!(c("(unsigned char)-1"), Ok(255));
        assert_eq!(c("(_Bool)2"), Ok(1));
        assert_eq!(c("(unsigned)-1 >> 1"), Ok(0x7fff_ffff));
        assert_eq!(c("-7 / 2"), Ok(-3));
        assert_eq!(c("-7 % 2"), Ok(-1));
        assert_eq!(c("-8 >> 1"), Ok(-4));
        assert_eq!(c("1 << 31"), Ok(-2_147_483_648), "into the sign bit");
        assert_eq!(c("sizeof(long) - 9"), Ok(0xffff_ffff_ffff_ffff));
        // What gcc diagnoses is an error.
        for bad in [
            "1 << 40",
            "1 << 32",
            "3 << 31",
            "-1 << 1",
            "1 >> -1",
            "2147483647 + 1",
            "(-2147483647 - 1) / -1",
            "(-2147483647 - 1) % -1",
            "-(-9223372036854775807L - 1)",
            "65536 * 65536",
        ] {
            assert!(c(bad).is_err(), "{bad}");
        }
        assert!(c("1 << 40").unwrap_err().help.unwrap().contains("1UL"));
        assert_eq!(c("1UL << 40"), Ok(1 << 40));
        assert_eq!(c("0 && (1 << 40)"), Ok(0), "not evaluated");
        assert_eq!(c("1 ? 2 : 1 / 0"), Ok(2));
        // `#if` arithmetic is intmax_t.
        assert_eq!(d("1 << 40"), Ok(1 << 40));
        assert_eq!(d("(~0u >> 28) & 0xff"), Ok(0xff), "uintmax_t in #if");
        assert_eq!(d("(1 == 1) << 40"), Ok(1 << 40));
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
