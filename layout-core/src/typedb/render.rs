//! C type text of a type, as a declaration without the declared name:
//! `struct list_head`, `unsigned long[4][2]`, `struct page *`,
//! `void (*)(struct rcu_head *)`, `const char *const`.

use super::graph::{Node, Qualifier, TypeGraph, TypeId};

/// Deepest declarator nesting rendered; deeper means a cycle in corrupt input.
const MAX_DEPTH: u32 = 48;

/// The C spelling of `id`.
pub(crate) fn type_text(g: &TypeGraph<'_>, id: TypeId) -> String {
    declare(g, id, String::new(), 0)
}

/// gcc names base types in its own word order (`long unsigned int`); C
/// programmers write `unsigned long`.
pub(crate) fn c_base_name(name: &str) -> &str {
    match name {
        "long unsigned int" => "unsigned long",
        "long int" => "long",
        "long long int" => "long long",
        "long long unsigned int" => "unsigned long long",
        "short int" => "short",
        "short unsigned int" => "unsigned short",
        "__int128 unsigned" => "unsigned __int128",
        other => other,
    }
}

/// Renders `id` around the declarator `inner` (what is already known to be
/// derived from it: `*`, `[4]`, `(*)(int)`).
fn declare(g: &TypeGraph<'_>, id: TypeId, inner: String, depth: u32) -> String {
    if depth > MAX_DEPTH {
        return join("?", &inner);
    }
    match g.node(id) {
        Node::Void | Node::NotAType => join("void", &inner),
        Node::Int { name, .. } | Node::Float { name, .. } => {
            join(c_base_name(g.name(name)), &inner)
        }
        Node::Enum { name, .. } => join(&tagged("enum", g.name(name)), &inner),
        Node::Aggregate { union, name, .. } | Node::Fwd { union, name } => {
            join(&tagged(keyword(union), g.name(name)), &inner)
        }
        Node::Typedef { name, .. } => join(g.name(name), &inner),
        Node::Ptr { to } => declare(g, to, format!("*{inner}"), depth + 1),
        Node::Array { elem, count } => {
            let dim = if count == 0 {
                "[]".to_string()
            } else {
                format!("[{count}]")
            };
            declare(g, elem, format!("{}{dim}", parenthesize(inner)), depth + 1)
        }
        Node::Func {
            ret,
            params,
            variadic,
        } => {
            let mut list: Vec<String> = g
                .params_of(params)
                .iter()
                .map(|&p| declare(g, p, String::new(), depth + 1))
                .collect();
            if variadic {
                list.push("...".into());
            }
            if list.is_empty() {
                list.push("void".into());
            }
            let inner = format!("{}({})", parenthesize(inner), list.join(", "));
            declare(g, ret, inner, depth + 1)
        }
        Node::Qual { .. } => {
            let (keywords, to) = qualifiers(g, id);
            if keywords.is_empty() {
                declare(g, to, inner, depth + 1)
            } else if matches!(g.node(to), Node::Ptr { .. }) {
                let inner = if inner.is_empty() {
                    keywords
                } else {
                    format!("{keywords} {inner}")
                };
                declare(g, to, inner, depth + 1)
            } else {
                format!("{keywords} {}", declare(g, to, inner, depth + 1))
            }
        }
    }
}

pub(crate) fn keyword(union: bool) -> &'static str {
    if union {
        "union"
    } else {
        "struct"
    }
}

/// `struct foo`, or `struct {...}` for an anonymous one.
fn tagged(keyword: &str, name: &str) -> String {
    if name.is_empty() {
        format!("{keyword} {{...}}")
    } else {
        format!("{keyword} {name}")
    }
}

/// The qualifiers of a run of qualifier nodes starting at `id`, in C's usual
/// order (`const volatile`, whatever order the producer chained them in), and
/// the type under them.
fn qualifiers(g: &TypeGraph<'_>, mut id: TypeId) -> (String, TypeId) {
    let mut present = [false; 4];
    for _ in 0..MAX_DEPTH {
        let Node::Qual { qual, to } = g.node(id) else {
            break;
        };
        let slot = match qual {
            Qualifier::Const => Some(0),
            Qualifier::Volatile => Some(1),
            Qualifier::Restrict => Some(2),
            Qualifier::Atomic => Some(3),
            Qualifier::TypeTag => None,
        };
        if let Some(slot) = slot {
            present[slot] = true;
        }
        id = to;
    }
    let order = [
        Qualifier::Const,
        Qualifier::Volatile,
        Qualifier::Restrict,
        Qualifier::Atomic,
    ];
    let words: Vec<&str> = order
        .iter()
        .zip(present)
        .filter(|(_, on)| *on)
        .filter_map(|(q, _)| q.keyword())
        .collect();
    (words.join(" "), id)
}

fn parenthesize(inner: String) -> String {
    if inner.starts_with('*') {
        format!("({inner})")
    } else {
        inner
    }
}

fn join(base: &str, inner: &str) -> String {
    if inner.is_empty() {
        base.to_string()
    } else if inner.starts_with('[') {
        format!("{base}{inner}")
    } else {
        format!("{base} {inner}")
    }
}
