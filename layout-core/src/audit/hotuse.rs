//! How much the fast paths' code uses each struct, from the audited
//! sources' text alone (pass 1 parses nothing): the functions each source
//! defines in kernel style, the names each one calls and the structs it
//! names; from the hot roots, the functions their calls reach within
//! [`MAX_DEPTH`] calls; and per struct, the times those functions name it
//! (`struct NAME`), each weighed by how near the root its function is
//! (half per call level: a helper four calls down runs on a share of the
//! root's passes). A struct the fast path's helpers use in another file
//! (a packet's pool freed three calls below the receive root, in a file
//! that defines no root) counts as much as one the root's own file names.
//!
//! The call names are read as the text spells them: a call through a
//! pointer is not followed, and a macro that looks like a call is one
//! more name. It is an estimate for an order, never a class: pass 2
//! decides from libclang's walk.

use crate::lex::{self, Tok, TokKind};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Call levels below a root that still count.
pub const MAX_DEPTH: u32 = 4;

/// The weight of a mention in a root's own body; each call level halves it.
pub const ROOT_WEIGHT: u64 = 1 << MAX_DEPTH;

/// One function's calls and the structs it names.
#[derive(Clone, Debug, Default)]
struct Function {
    calls: BTreeSet<String>,
    structs: BTreeMap<String, u64>,
}

/// The functions of the audited sources, by name (the definitions of one
/// name in several files joined).
#[derive(Clone, Debug, Default)]
pub struct HotCode {
    functions: BTreeMap<String, Function>,
}

/// Words that look like a call and are not one.
const NOT_CALLS: [&str; 8] = [
    "if",
    "for",
    "while",
    "switch",
    "return",
    "sizeof",
    "typeof",
    "__attribute__",
];

impl HotCode {
    /// Reads the function definitions of one source: a line in column 0
    /// (not a directive, a brace or a comment) that names a function
    /// followed by `(` and does not end in `;`, whose body opens with a
    /// `{` in column 0 within a few lines and ends at the next `}` in
    /// column 0.
    pub fn add(&mut self, text: &str) {
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let Some(name) = defined_name(lines[i]) else {
                i += 1;
                continue;
            };
            let Some(open) = (i..lines.len().min(i + 12)).find(|&j| lines[j].starts_with('{'))
            else {
                i += 1;
                continue;
            };
            let Some(close) = (open + 1..lines.len()).find(|&j| lines[j].starts_with('}')) else {
                break;
            };
            let f = self.functions.entry(name.to_string()).or_default();
            for l in &lines[i..=close] {
                read_line(l, f);
            }
            // The definition's own name is no call of its body.
            f.calls.remove(name);
            i = close + 1;
        }
    }

    /// Per struct name, its weighed mentions in the functions the `roots`
    /// reach within [`MAX_DEPTH`] calls: [`ROOT_WEIGHT`] in a root, half
    /// of it per call level below (the nearest root counts).
    pub fn uses(&self, roots: &[String]) -> BTreeMap<String, u64> {
        let mut depth: BTreeMap<&str, u32> = BTreeMap::new();
        let mut queue: VecDeque<(&str, u32)> = roots
            .iter()
            .filter(|r| self.functions.contains_key(r.as_str()))
            .map(|r| (r.as_str(), 0))
            .collect();
        while let Some((f, d)) = queue.pop_front() {
            if depth.contains_key(f) {
                continue;
            }
            depth.insert(f, d);
            if d == MAX_DEPTH {
                continue;
            }
            for c in &self.functions[f].calls {
                if self.functions.contains_key(c.as_str()) && !depth.contains_key(c.as_str()) {
                    queue.push_back((c.as_str(), d + 1));
                }
            }
        }
        let mut out: BTreeMap<String, u64> = BTreeMap::new();
        for (f, d) in depth {
            let w = ROOT_WEIGHT >> d;
            for (s, n) in &self.functions[f].structs {
                *out.entry(s.clone()).or_default() += n * w;
            }
        }
        out
    }
}

/// The function a kernel-style definition line names, if it is one.
fn defined_name(l: &str) -> Option<&str> {
    let first = l.chars().next()?;
    if first.is_whitespace() || matches!(first, '#' | '}' | '{' | '/' | '*') {
        return None;
    }
    if l.trim_end().ends_with(';') || l.contains('=') {
        return None;
    }
    let open = l.find('(')?;
    let before = l[..open].trim_end();
    let start = before
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |p| p + 1);
    let name = &before[start..];
    (!name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && !NOT_CALLS.contains(&name)
        && name.chars().any(|c| c.is_ascii_lowercase()))
    .then_some(name)
}

/// The calls (`name (`) and `struct NAME` words of one line, outside
/// comments and literals (the line tokenized as every scan of C text is).
fn read_line(l: &str, f: &mut Function) {
    let toks: Vec<Tok> = lex::tokenize(l)
        .into_iter()
        .filter(|t| t.kind != TokKind::Comment)
        .collect();
    for (k, t) in toks.iter().enumerate() {
        if t.kind != TokKind::Ident {
            continue;
        }
        let w = t.text(l);
        let next = toks.get(k + 1);
        if w == "struct" {
            if let Some(name) = next.filter(|n| n.kind == TokKind::Ident) {
                *f.structs.entry(name.text(l).to_string()).or_default() += 1;
            }
        } else if next.is_some_and(|n| n.text(l) == "(") && !NOT_CALLS.contains(&w) {
            f.calls.insert(w.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_struct_the_roots_helpers_use_in_another_file_counts_by_depth() {
        let mut h = HotCode::default();
        // The root's file: it names `struct pkt`, and calls a helper of
        // another file that frees the packet's pool.
        h.add(
            "int rx_root(struct pkt *p)\n{\n\tstruct pkt *q = p;\n\treturn free_pkt(q);\n}\n\
             static int setup(struct cfg *c)\n{\n\treturn 0;\n}\n",
        );
        h.add(
            "int free_pkt(struct pkt *p)\n{\n\tpool_put(p->pool);\n\treturn 0;\n}\n\
             void pool_put(struct pool *pool)\n{\n\t/* struct cfg in a comment */\n\tpool->n++;\n}\n\
             void pool_deep(struct pool *pool)\n{\n}\n",
        );
        let u = h.uses(&["rx_root".into()]);
        // rx_root names pkt twice (16 each), free_pkt (depth 1) once (8).
        assert_eq!(u["pkt"], 2 * 16 + 8);
        // pool_put is two calls down: 4.
        assert_eq!(u["pool"], 4);
        // setup is not reached; a comment is no mention.
        assert!(!u.contains_key("cfg"), "{u:?}");
    }

    #[test]
    fn calls_past_the_depth_do_not_count() {
        let mut h = HotCode::default();
        let mut text = String::new();
        for d in 0..=MAX_DEPTH + 1 {
            text.push_str(&format!(
                "void f{d}(struct s{d} *x)\n{{\n\tf{}(0);\n}}\n",
                d + 1
            ));
        }
        h.add(&text);
        let u = h.uses(&["f0".into()]);
        assert_eq!(u["s0"], ROOT_WEIGHT);
        assert_eq!(u[&format!("s{MAX_DEPTH}")], 1);
        assert!(!u.contains_key(&format!("s{}", MAX_DEPTH + 1)), "{u:?}");
    }

    #[test]
    fn declarations_and_initializers_are_no_definitions() {
        assert_eq!(defined_name("static int f(void);"), None);
        assert_eq!(defined_name("struct ops o = {"), None);
        assert_eq!(defined_name("\tfoo(1)"), None);
        assert_eq!(defined_name("static void __cold g(struct x *y,"), Some("g"));
        assert_eq!(defined_name("EXPORT_SYMBOL(g)"), None);
    }
}
