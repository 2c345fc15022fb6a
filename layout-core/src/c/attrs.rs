//! Attributes and kernel attribute macros.
//!
//! tree-sitter-c does not know `int x ____cacheline_aligned_in_smp;` or
//! `__aligned(8)`, so the preprocessor blanks every attribute (keeping byte
//! offsets) and records what it meant here. Struct-body macros such as
//! `CACHELINE_PADDING(_pad1_);` are blanked the same way and become
//! non-field members with a layout effect.
//!
//! The names it knows and what they mean are the table of
//! [`crate::idioms::ATTRIBUTES`] (the header's own `#define` of a name
//! wins): the cacheline macros, `__aligned(n)`, `_Alignas(n)`,
//! `__aligned_largest`, `__packed`, and annotations with no layout effect.
//!
//! Header macros whose expansion is only attributes (or nothing) are
//! treated as attributes too: `#define __rcu` or
//! `#define __my_align __attribute__((aligned(32)))`.

use super::macros::{collect_args_within, MacroTable, PTok};
use crate::idioms::{self, AttrMeaning};

/// What one attribute does to a layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Attr {
    /// `aligned(expr)`; `None` for a bare `aligned` (the biggest alignment, 16).
    Aligned(Option<Vec<PTok>>),
    Packed,
    /// An attribute that changes sizes in ways this tool does not model
    /// (`mode`, `vector_size`): an error if it applies to a laid-out member.
    Unsupported(String),
}

pub(crate) use crate::idioms::SMP_CACHE_BYTES;

/// A struct-body marker as the C front-end reads it: the alignment
/// argument stays tokens until the layout evaluates it.
pub(crate) type MarkerKind = crate::idioms::MarkerKind<Vec<PTok>>;

/// The marker macro `name` called with `args`.
pub(crate) fn marker_kind(name: &str, args: &[Vec<PTok>]) -> Option<MarkerKind> {
    MarkerKind::from_macro(name, || args.get(1).cloned().filter(|a| !a.is_empty()))
}

/// The result of reading an attribute at token `i`: its meaning and the
/// index after its last token.
pub(crate) struct Reading {
    pub attrs: Vec<Attr>,
    pub next: usize,
}

const MAX_DEPTH: usize = 32;
/// The most tokens an attribute's arguments span (a longer call is not
/// read as one, and costs no more than this to try).
const MAX_ARG_TOKENS: usize = 256;

/// Reads one attribute (or attribute macro) starting at `toks[i]`.
/// `None` when `toks[i]` does not start one.
pub(crate) fn read_one(toks: &[PTok], i: usize, macros: &MacroTable) -> Option<Reading> {
    read_at(toks, i, macros, 0)
}

fn read_at(toks: &[PTok], i: usize, macros: &MacroTable, depth: usize) -> Option<Reading> {
    if depth > MAX_DEPTH {
        return None;
    }
    let PTok::Ident(name) = toks.get(i)? else {
        return None;
    };
    let paren_next = toks
        .get(i + 1)
        .is_some_and(|t| matches!(t, PTok::Punct(p) if p == "("));
    if name == "__attribute__" || name == "__attribute" {
        if !paren_next {
            return None;
        }
        let (args, next) = collect_args_within(toks, i + 1, MAX_ARG_TOKENS).ok()?;
        // __attribute__((a, b(1))): one argument, itself parenthesized.
        let [inner] = args.as_slice() else {
            return None;
        };
        let list = match inner.as_slice() {
            [PTok::Punct(o), rest @ .., PTok::Punct(c)] if o == "(" && c == ")" => rest,
            _ => return None,
        };
        return Some(Reading {
            attrs: gnu_list(list),
            next,
        });
    }
    if let Some(m) = macros.get(name) {
        let (body, next) = match &m.params {
            None => (m.body.clone(), i + 1),
            Some(params) if paren_next => {
                let (args, next) = collect_args_within(toks, i + 1, MAX_ARG_TOKENS).ok()?;
                (substitute(params, m.variadic, &m.body, &args), next)
            }
            Some(_) => return None,
        };
        let attrs = read_all(&body, macros, depth + 1)?;
        return Some(Reading { attrs, next });
    }
    match idioms::attribute(name)? {
        AttrMeaning::CachelineAligned => Some(Reading {
            attrs: vec![Attr::Aligned(Some(vec![PTok::Number(
                SMP_CACHE_BYTES.to_string(),
            )]))],
            next: i + 1,
        }),
        AttrMeaning::Biggest => Some(Reading {
            attrs: vec![Attr::Aligned(None)],
            next: i + 1,
        }),
        AttrMeaning::Packed => Some(Reading {
            attrs: vec![Attr::Packed],
            next: i + 1,
        }),
        AttrMeaning::NoEffect => Some(Reading {
            attrs: Vec::new(),
            next: i + 1,
        }),
        AttrMeaning::AlignArg | AttrMeaning::NoEffectWithArgs if !paren_next => None,
        AttrMeaning::AlignArg => {
            let (args, next) = collect_args_within(toks, i + 1, MAX_ARG_TOKENS).ok()?;
            let [arg] = args.as_slice() else { return None };
            Some(Reading {
                attrs: vec![Attr::Aligned(Some(arg.clone()))],
                next,
            })
        }
        AttrMeaning::NoEffectWithArgs => {
            let (_, next) = collect_args_within(toks, i + 1, MAX_ARG_TOKENS).ok()?;
            Some(Reading {
                attrs: Vec::new(),
                next,
            })
        }
    }
}

/// All of `toks` as attributes, or `None` if something else is in there.
fn read_all(toks: &[PTok], macros: &MacroTable, depth: usize) -> Option<Vec<Attr>> {
    let mut attrs = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if matches!(&toks[i], PTok::Punct(p) if p == ";") {
            // `__x(a); struct {} pad` style expansions are not attributes.
            return None;
        }
        let r = read_at(toks, i, macros, depth)?;
        attrs.extend(r.attrs);
        i = r.next;
    }
    Some(attrs)
}

/// The items of `__attribute__((...))`.
fn gnu_list(list: &[PTok]) -> Vec<Attr> {
    let mut items: Vec<&[PTok]> = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (k, t) in list.iter().enumerate() {
        match t {
            PTok::Punct(p) if p == "(" => depth += 1,
            PTok::Punct(p) if p == ")" => depth = depth.saturating_sub(1),
            PTok::Punct(p) if p == "," && depth == 0 => {
                items.push(&list[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    items.push(&list[start..]);
    items.into_iter().filter_map(gnu_item).collect()
}

fn gnu_item(item: &[PTok]) -> Option<Attr> {
    let PTok::Ident(raw) = item.first()? else {
        return None;
    };
    let name = raw.trim_start_matches("__").trim_end_matches("__");
    let arg = match item.get(1..) {
        Some([PTok::Punct(o), inner @ .., PTok::Punct(c)]) if o == "(" && c == ")" => {
            Some(inner.to_vec())
        }
        _ => None,
    };
    match name {
        "aligned" => Some(Attr::Aligned(arg)),
        "packed" => Some(Attr::Packed),
        "mode" | "vector_size" => Some(Attr::Unsupported(name.to_string())),
        _ => None,
    }
}

fn substitute(params: &[String], variadic: bool, body: &[PTok], args: &[Vec<PTok>]) -> Vec<PTok> {
    let mut out = Vec::new();
    for t in body {
        match t {
            PTok::Ident(id) if id == "__VA_ARGS__" && variadic => {
                for (k, a) in args.iter().enumerate().skip(params.len()) {
                    if k > params.len() {
                        out.push(PTok::Punct(",".into()));
                    }
                    out.extend(a.iter().cloned());
                }
            }
            PTok::Ident(id) => match params.iter().position(|p| p == id) {
                Some(k) => out.extend(args.get(k).cloned().unwrap_or_default()),
                None => out.push(t.clone()),
            },
            _ => out.push(t.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::macros::{ptokens, Macro};
    use super::*;

    fn read(src: &str, macros: &MacroTable) -> Option<(Vec<Attr>, usize)> {
        let toks = ptokens(src);
        read_one(&toks, 0, macros).map(|r| (r.attrs, r.next))
    }

    fn aligned(n: &str) -> Attr {
        Attr::Aligned(Some(ptokens(n)))
    }

    #[test]
    fn gnu_attributes() {
        let m = MacroTable::default();
        assert_eq!(
            read("__attribute__((__aligned__(8), packed, unused)) int", &m),
            Some((vec![aligned("8"), Attr::Packed], 13))
        );
        assert_eq!(
            read("__attribute__((aligned)) x", &m),
            Some((vec![Attr::Aligned(None)], 6))
        );
        assert_eq!(
            read("__attribute__((mode(DI)))", &m).unwrap().0,
            vec![Attr::Unsupported("mode".into())]
        );
        assert!(read("__attribute__ x", &m).is_none());
    }

    #[test]
    fn kernel_macros() {
        let m = MacroTable::default();
        assert_eq!(
            read("____cacheline_aligned_in_smp;", &m),
            Some((vec![aligned("64")], 1))
        );
        assert_eq!(
            read("__aligned(2 * 8)", &m),
            Some((vec![aligned("2 * 8")], 6))
        );
        assert_eq!(read("__packed", &m), Some((vec![Attr::Packed], 1)));
        assert_eq!(read("__rcu", &m), Some((vec![], 1)));
        assert_eq!(read("__counted_by(n)", &m), Some((vec![], 4)));
        assert!(
            read("__counted_by", &m).is_none(),
            "a bare name with args missing is left alone"
        );
        assert!(read("list_head", &m).is_none());
    }

    #[test]
    fn header_macros_that_expand_to_attributes() {
        let mut m = MacroTable::default();
        m.define(
            "____cacheline_aligned_in_smp",
            Macro::object(ptokens("__attribute__((__aligned__(SMP_CACHE_BYTES)))")),
        );
        m.define(
            "__my_aligned",
            Macro::function(&["x"], "__attribute__((aligned(x)))"),
        );
        m.define("EMPTY", Macro::object(vec![]));
        m.define("N", Macro::object(ptokens("4")));
        assert_eq!(
            read("____cacheline_aligned_in_smp", &m),
            Some((vec![aligned("SMP_CACHE_BYTES")], 1))
        );
        assert_eq!(read("__my_aligned(32)", &m), Some((vec![aligned("32")], 4)));
        assert_eq!(read("EMPTY", &m), Some((vec![], 1)));
        assert!(read("N", &m).is_none(), "a constant is not an attribute");
    }

    #[test]
    fn markers() {
        let args = vec![ptokens("g"), ptokens("128")];
        assert_eq!(
            marker_kind("__cacheline_group_begin_aligned", &args),
            Some(MarkerKind::GroupBeginAligned(Some(ptokens("128"))))
        );
        assert_eq!(
            marker_kind("CACHELINE_PADDING", &args[..1]),
            Some(MarkerKind::Padding)
        );
        assert_eq!(marker_kind("DECLARE_BITMAP", &args), None);
    }
}
