//! Macro expansion for constant expressions: the tokens of a macro body or
//! an expression, the table of macros in force, and the expansion of
//! object-like and simple function-like macros, with `defined X`, the
//! kernel's `IS_ENABLED(CONFIG_X)` family and gcc's `__has_attribute(x)`
//! tests answered on the way. [`super::eval`] evaluates what comes out.

use crate::lex::{tokenize, TokKind};
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
    pub(crate) fn is_punct(&self, p: &str) -> bool {
        matches!(self, PTok::Punct(q) if q == p)
    }

    pub(crate) fn text(&self) -> &str {
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

    pub(crate) fn missing(name: &str) -> Self {
        EvalError {
            message: format!("constant {name} is not defined"),
            help: Some(format!(
                "pass -D {name}=VALUE or add it under [defines] in the access file"
            )),
            missing: Some(name.to_string()),
        }
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
/// How deeply macros may expand inside each other.
const MAX_DEPTH: usize = 64;
/// How many tokens one expression may expand to (a macro that doubles at
/// each level would otherwise take all memory).
pub(crate) const MAX_EXPANDED_TOKENS: usize = 100_000;

/// What expansion reads: the macros, and how a `#if` value is tested
/// (for `IS_ENABLED(CONFIG_X)`: given `CONFIG_X`'s expanded body, whether
/// it is non-zero), which the evaluator supplies.
pub(crate) struct Expander<'a> {
    pub macros: &'a MacroTable,
    pub truthy: &'a dyn Fn(&[PTok]) -> Result<bool, EvalError>,
    /// Tokens of macro arguments collected so far: a call nested in a
    /// call's argument is collected again at each level, so a deep nest of
    /// calls costs its length times its depth ([`MAX_WORK`]).
    pub work: std::cell::Cell<usize>,
}

/// The most argument tokens one expansion collects.
const MAX_WORK: usize = 2_000_000;

impl Expander<'_> {
    fn macros(&self) -> &MacroTable {
        self.macros
    }

    /// Counts `args`' tokens against [`MAX_WORK`].
    fn charge(&self, args: &[Vec<PTok>]) -> Result<(), EvalError> {
        let n = args.iter().map(Vec::len).sum::<usize>();
        let total = self.work.get().saturating_add(n);
        self.work.set(total);
        if total > MAX_WORK {
            let mut e = EvalError::new(format!(
                "macro expansion collects more than {MAX_WORK} argument tokens"
            ));
            e.help = Some(
                "its macro calls nest too deeply: define the constant with -D NAME=VALUE".into(),
            );
            return Err(e);
        }
        Ok(())
    }
}

/// Expands macros in `toks`. `defined X` and the kernel's `IS_ENABLED(X)`
/// family are answered here, before `X` could be expanded.
pub(crate) fn expand(toks: &[PTok], env: &Expander) -> Result<Vec<PTok>, EvalError> {
    expand_in(toks, env, &mut Vec::new(), 0)
}

fn expand_in(
    toks: &[PTok],
    env: &Expander,
    disabled: &mut Vec<String>,
    depth: usize,
) -> Result<Vec<PTok>, EvalError> {
    if depth > MAX_DEPTH {
        let mut e = EvalError::new(format!(
            "macro expansion nests too deeply (more than {MAX_DEPTH} levels)"
        ));
        e.help = Some("a macro probably expands to itself through others; define the constant with -D NAME=VALUE".into());
        return Err(e);
    }
    let macros = env.macros();
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if out.len() > MAX_EXPANDED_TOKENS {
            let mut e = EvalError::new(format!(
                "macro expansion grows past {MAX_EXPANDED_TOKENS} tokens"
            ));
            e.help = Some(
                "define the constant with -D NAME=VALUE (its macros expand without bound)".into(),
            );
            return Err(e);
        }
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
                    let e = expand_in(&m.body, env, disabled, depth + 1);
                    disabled.pop();
                    out.extend(e?);
                    i += 1;
                }
                Some(params) if toks.get(i + 1).is_some_and(|t| t.is_punct("(")) => {
                    let (args, next) = collect_args(toks, i + 1)?;
                    env.charge(&args)?;
                    let body = substitute(
                        name, params, m.variadic, &m.body, &args, env, disabled, depth,
                    )?;
                    disabled.push(name.clone());
                    let e = expand_in(&body, env, disabled, depth + 1);
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
    env: &Expander,
    disabled: &mut Vec<String>,
    depth: usize,
) -> Result<bool, EvalError> {
    let mut value_of = |name: &str| -> Result<bool, EvalError> {
        match env.macros().get(name) {
            Some(m) if m.params.is_none() => {
                let toks = expand_in(&m.body, env, disabled, depth + 1)?;
                (env.truthy)(&toks)
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
    collect_args_within(toks, open, usize::MAX)
}

/// [`collect_args`] of a call whose arguments span at most `max` tokens
/// (an attribute macro's are short): a longer one is an error, found
/// without reading past `max`, so that trying it at every word of a
/// nested expression costs no more than `max` per word.
pub(crate) fn collect_args_within(
    toks: &[PTok],
    open: usize,
    max: usize,
) -> Result<(Vec<Vec<PTok>>, usize), EvalError> {
    if max != usize::MAX {
        // Where the call ends, within `max`, before any token is copied.
        let mut depth = 0usize;
        let mut end = None;
        for (k, t) in toks.iter().enumerate().skip(open + 1).take(max) {
            if t.is_punct("(") {
                depth += 1;
            } else if t.is_punct(")") {
                if depth == 0 {
                    end = Some(k);
                    break;
                }
                depth -= 1;
            }
        }
        let Some(end) = end else {
            return Err(EvalError::new("macro arguments longer than the limit"));
        };
        return collect_args_within(&toks[..=end], open, usize::MAX);
    }
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
    env: &Expander,
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
        expanded_args.push(expand_in(a, env, disabled, depth + 1)?);
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
