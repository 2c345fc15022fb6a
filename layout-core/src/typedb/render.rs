//! C type text of a type, as a declaration without the declared name:
//! `struct list_head`, `unsigned long[4][2]`, `struct page *`,
//! `void (*)(struct rcu_head *)`, `const char *const`.
//!
//! The declarator (`*`, `[4]`, `(*)(int)`) is built in place while walking
//! from the type to its base type, then the base is written in front.

use super::graph::{Node, Qualifier, TypeGraph, TypeId};
use std::fmt::Write as _;

/// Deepest declarator nesting rendered; deeper means a cycle in corrupt input.
const MAX_DEPTH: u32 = 48;

/// Appends the C spelling of `id` to `out`; `scratch` is working space.
pub(crate) fn write_type(g: &TypeGraph<'_>, id: TypeId, out: &mut String, scratch: &mut String) {
    scratch.clear();
    declare(g, id, scratch, out, 0);
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

pub(crate) fn keyword(union: bool) -> &'static str {
    if union {
        "union"
    } else {
        "struct"
    }
}

/// Walks from `id` to its base type, building the declarator in `inner`;
/// then appends qualifiers, the base and the declarator to `out`.
fn declare(g: &TypeGraph<'_>, mut id: TypeId, inner: &mut String, out: &mut String, depth: u32) {
    let mut prefix = Qualifiers::default();
    for _ in 0..MAX_DEPTH {
        match g.node(id) {
            Node::Ptr { to } => {
                inner.insert(0, '*');
                id = to;
            }
            Node::Array { elem, count } => {
                parenthesize(inner);
                if count == 0 {
                    inner.push_str("[]");
                } else {
                    let _ = write!(inner, "[{count}]");
                }
                id = elem;
            }
            Node::Func {
                ret,
                params,
                variadic,
            } => {
                parenthesize(inner);
                inner.push('(');
                let list = g.params_of(params);
                if depth >= MAX_DEPTH {
                    inner.push('?');
                } else {
                    let mut param_inner = String::new();
                    for (i, &p) in list.iter().enumerate() {
                        if i > 0 {
                            inner.push_str(", ");
                        }
                        param_inner.clear();
                        declare(g, p, &mut param_inner, inner, depth + 1);
                    }
                }
                match (list.is_empty(), variadic) {
                    (true, false) => inner.push_str("void"),
                    (true, true) => inner.push_str("..."),
                    (false, true) => inner.push_str(", ..."),
                    (false, false) => {}
                }
                inner.push(')');
                id = ret;
            }
            Node::Qual { .. } => {
                let (quals, to) = Qualifiers::of(g, id);
                if matches!(g.node(to), Node::Ptr { .. }) {
                    // `int *const`: the qualifier follows the star.
                    let mut words = String::new();
                    quals.write(&mut words);
                    if !words.is_empty() {
                        if !inner.is_empty() {
                            words.push(' ');
                        }
                        inner.insert_str(0, &words);
                    }
                } else {
                    prefix.add(quals);
                }
                id = to;
            }
            base => {
                prefix.write(out);
                if !prefix.is_empty() {
                    out.push(' ');
                }
                write_base(g, base, out);
                if !inner.is_empty() {
                    if !inner.starts_with('[') {
                        out.push(' ');
                    }
                    out.push_str(inner);
                }
                return;
            }
        }
    }
    out.push('?');
    out.push_str(inner);
}

fn write_base(g: &TypeGraph<'_>, base: Node, out: &mut String) {
    let (keyword, name) = match base {
        Node::Int { name, .. } | Node::Float { name, .. } => {
            out.push_str(c_base_name(g.name(name)));
            return;
        }
        Node::Typedef { name, .. } => {
            out.push_str(g.name(name));
            return;
        }
        Node::Enum { name, .. } => ("enum", g.name(name)),
        Node::Aggregate { union, name, .. } | Node::Fwd { union, name } => {
            (keyword(union), g.name(name))
        }
        _ => {
            out.push_str("void");
            return;
        }
    };
    out.push_str(keyword);
    if name.is_empty() {
        out.push_str(" {...}");
    } else {
        out.push(' ');
        out.push_str(name);
    }
}

/// `*p` becomes `(*p)` before an array or parameter list binds to it.
fn parenthesize(inner: &mut String) {
    if inner.starts_with('*') {
        inner.insert(0, '(');
        inner.push(')');
    }
}

/// A set of C qualifiers, written in C's usual order (`const volatile`)
/// whatever order the producer chained them in. Type tags are not shown.
#[derive(Clone, Copy, Default)]
struct Qualifiers([bool; 4]);

impl Qualifiers {
    const ORDER: [Qualifier; 4] = [
        Qualifier::Const,
        Qualifier::Volatile,
        Qualifier::Restrict,
        Qualifier::Atomic,
    ];

    /// The qualifiers of the run of qualifier nodes at `id`, and the type under them.
    fn of(g: &TypeGraph<'_>, mut id: TypeId) -> (Qualifiers, TypeId) {
        let mut quals = Qualifiers::default();
        for _ in 0..MAX_DEPTH {
            let Node::Qual { qual, to } = g.node(id) else {
                break;
            };
            if let Some(slot) = Self::ORDER.iter().position(|&q| q == qual) {
                quals.0[slot] = true;
            }
            id = to;
        }
        (quals, id)
    }

    fn add(&mut self, other: Qualifiers) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine |= theirs;
        }
    }

    fn is_empty(&self) -> bool {
        !self.0.iter().any(|&q| q)
    }

    fn write(&self, out: &mut String) {
        let mut first = true;
        for (q, on) in Self::ORDER.iter().zip(self.0) {
            if let (true, Some(word)) = (on, q.keyword()) {
                if !first {
                    out.push(' ');
                }
                out.push_str(word);
                first = false;
            }
        }
    }
}
