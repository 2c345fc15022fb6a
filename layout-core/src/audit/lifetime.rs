//! How each struct lives, from the audited sources' tokens: made one per
//! object (allocated: `kmem_cache_create(..., sizeof(struct NAME), ...)`,
//! `KMEM_CACHE(NAME, ...)`, `kzalloc(sizeof(*p))` with `struct NAME *p`,
//! `struct_size(p, ...)`), or a singleton (a file-scope instance: `static
//! struct NAME x;`, `const struct NAME ops = {...}`, an array of them,
//! `DEFINE_PER_CPU(struct NAME, x)`). A struct embedded by value in a
//! per-object struct is per-object too; one embedded only in singletons
//! is a singleton. A struct the sources neither allocate nor define at
//! file scope, but declare by value inside functions (`struct vm_fault vmf
//! = {...};`, a by-value parameter), lives on a stack: one CPU's, just
//! written. A struct whose fast paths reach it through an accessor of
//! the running context (most of its hot sites go through a call with no
//! arguments: `current->mm` is `get_current()->mm`) is the running CPU's
//! own instance while they run: [`running_context`]. The ranking weighs a
//! struct's misses by it
//! ([`super::cost`]): a per-object struct's lines are fetched cold on
//! every new object a fast path meets, a singleton's stay cached unless
//! some CPU writes them.

use crate::infer::sites::{Heat, Site};
use crate::typedb::{Aggregate, TypeDb};
use serde::Serialize;
use std::collections::BTreeMap;

/// How a struct's instances live.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "evidence", rename_all = "snake_case")]
pub enum Lifetime {
    /// Made one per object; the evidence (`net/core/dev.c: sizeof(struct
    /// net_device)`, or the per-object struct that embeds it).
    PerObject(String),
    /// File-scope instances only (static, per-CPU, a const table).
    Singleton(String),
    /// Only declared by value inside functions: on the stack of the CPU
    /// that runs it; the evidence (`mm/memory.c: struct vm_fault vmf`).
    Local(String),
    /// Reached by its fast paths through an accessor of the running
    /// context: the CPU's own instance while they run; the evidence
    /// ([`running_context`]).
    Running(String),
    /// The sources show neither.
    Unknown,
}

impl Lifetime {
    pub fn word(&self) -> &'static str {
        match self {
            Lifetime::PerObject(_) => "per-object",
            Lifetime::Singleton(_) => "singleton",
            Lifetime::Local(_) => "on a stack",
            Lifetime::Running(_) => "the running context's",
            Lifetime::Unknown => "lifetime unknown",
        }
    }
}

/// What the sources show per struct name: the first allocation and the
/// first file-scope instance seen (file and form).
#[derive(Clone, Debug, Default)]
pub struct Lifetimes {
    allocated: BTreeMap<String, String>,
    instances: BTreeMap<String, String>,
    locals: BTreeMap<String, String>,
}

/// Embedding levels looked up through.
const MAX_UP: usize = 8;

impl Lifetimes {
    /// Reads one source's tokens.
    pub fn add(&mut self, file: &str, text: &str) {
        let t = tokens(text);
        let at = |i: usize| t.get(i).map(String::as_str).unwrap_or("");
        let mut depth = 0i64;
        for i in 0..t.len() {
            match at(i) {
                "{" | "(" => depth += 1,
                "}" | ")" => depth -= 1,
                _ => {}
            }
            // sizeof(struct NAME)
            if at(i) == "sizeof" && at(i + 1) == "(" && at(i + 2) == "struct" && at(i + 4) == ")" {
                self.alloc(at(i + 3), file, format!("sizeof(struct {})", at(i + 3)));
            }
            // KMEM_CACHE(NAME, flags)
            if at(i) == "KMEM_CACHE" && at(i + 1) == "(" && at(i + 3) == "," {
                self.alloc(at(i + 2), file, format!("KMEM_CACHE({}, ...)", at(i + 2)));
            }
            // sizeof(*p), struct_size(p, ...): p's declared struct.
            let sized =
                if at(i) == "sizeof" && at(i + 1) == "(" && at(i + 2) == "*" && at(i + 4) == ")" {
                    Some((at(i + 3), "sizeof(*"))
                } else if at(i) == "struct_size" && at(i + 1) == "(" && at(i + 3) == "," {
                    Some((at(i + 2), "struct_size("))
                } else {
                    None
                };
            if let Some((var, form)) = sized.filter(|(v, _)| ident(v)) {
                if let Some(name) = declared_struct(&t, i, var) {
                    let close = if form == "sizeof(*" { ")" } else { ", ...)" };
                    self.alloc(
                        &name,
                        file,
                        format!("{form}{var}{close} of a struct {name} *"),
                    );
                }
            }
            // DEFINE_PER_CPU(struct NAME, x) and its variants.
            if at(i).starts_with("DEFINE_PER_CPU") && at(i + 1) == "(" && at(i + 2) == "struct" {
                self.instance(
                    at(i + 3),
                    file,
                    format!("{}(struct {}, ...)", at(i), at(i + 3)),
                );
            }
            // A file-scope `struct NAME x` (=, ;, [, or an attribute after
            // it); inside a function (or its parameters), a local.
            if at(i) == "struct" && ident(at(i + 1)) && ident(at(i + 2)) {
                let next = at(i + 3);
                let form = format!("struct {} {}", at(i + 1), at(i + 2));
                if depth == 0 && (matches!(next, "=" | ";" | "[" | ",") || next.starts_with("__")) {
                    self.instance(at(i + 1), file, form);
                } else if depth > 0 && matches!(next, "=" | ";" | "[" | "," | ")") {
                    self.locals
                        .entry(at(i + 1).to_string())
                        .or_insert_with(|| format!("{file}: {form}"));
                }
            }
        }
    }

    /// Slab caches found anywhere in the source tree
    /// ([`super::tree_allocs`]): each struct is made per object unless
    /// the audited sources already showed an allocation of it.
    pub fn add_tree_caches(&mut self, caches: &BTreeMap<String, String>) {
        for (name, evidence) in caches {
            self.allocated
                .entry(name.clone())
                .or_insert_with(|| format!("{evidence} (outside the audited sources)"));
        }
    }

    fn alloc(&mut self, name: &str, file: &str, form: String) {
        if ident(name) {
            self.allocated
                .entry(name.to_string())
                .or_insert_with(|| format!("{file}: {form}"));
        }
    }

    fn instance(&mut self, name: &str, file: &str, form: String) {
        if ident(name) {
            self.instances
                .entry(name.to_string())
                .or_insert_with(|| format!("{file}: {form}"));
        }
    }

    /// How `agg` lives: its own allocations, else those of a struct that
    /// embeds it (a few levels up), else its own or its embedders'
    /// file-scope instances.
    pub fn of(&self, db: &TypeDb, agg: &Aggregate) -> Lifetime {
        let mut level: Vec<&Aggregate> = vec![agg];
        let mut seen: Vec<String> = vec![agg.name.clone()];
        let mut singleton: Option<String> = None;
        for _ in 0..MAX_UP {
            let mut next = Vec::new();
            for a in &level {
                if let Some(e) = self.allocated.get(&a.name) {
                    return Lifetime::PerObject(if a.name == agg.name {
                        e.clone()
                    } else {
                        format!("embedded in struct {} ({e})", a.name)
                    });
                }
                if singleton.is_none() {
                    if let Some(e) = self.instances.get(&a.name) {
                        singleton = Some(if a.name == agg.name {
                            e.clone()
                        } else {
                            format!("embedded in struct {} ({e})", a.name)
                        });
                    }
                }
                for (up, _) in db.embedders_of(a) {
                    if !up.name.is_empty() && !seen.contains(&up.name) {
                        seen.push(up.name.clone());
                        next.push(up);
                    } else if up.name.is_empty() {
                        next.push(up);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        match (singleton, self.locals.get(&agg.name)) {
            (Some(e), _) => Lifetime::Singleton(e),
            // Embedded in nothing that lives elsewhere, declared in functions.
            (None, Some(e)) => Lifetime::Local(e.clone()),
            (None, None) => Lifetime::Unknown,
        }
    }
}

/// Hot sites out of this many through an accessor of the running
/// context make a struct the running context's ([`running_context`]).
pub const RUNNING_SHARE: (usize, usize) = (3, 4);

/// Whether the fast paths reach a struct as the running context's own
/// instance: at least [`RUNNING_SHARE`] of its hot sites go through a
/// call with no arguments (`get_current()`, what `current` expands to);
/// the evidence names the count and the accessor most of them use.
pub fn running_context(sites: &[Site]) -> Option<String> {
    let hot: Vec<&Site> = sites.iter().filter(|s| s.heat == Heat::Hot).collect();
    let mut by: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &hot {
        if let Some(a) = &s.accessor {
            *by.entry(a.as_str()).or_default() += 1;
        }
    }
    let through: usize = by.values().sum();
    let (num, den) = RUNNING_SHARE;
    if hot.is_empty() || through * den < hot.len() * num {
        return None;
    }
    let (accessor, _) = by
        .iter()
        .max_by_key(|(a, n)| (**n, std::cmp::Reverse(**a)))?;
    Some(format!(
        "{through} of its {} hot sites reach it through {accessor}()",
        hot.len()
    ))
}

fn ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The struct `var` is declared a pointer to, by the nearest `struct NAME
/// *var` before token `i` (a few thousand tokens back at most).
fn declared_struct(t: &[String], i: usize, var: &str) -> Option<String> {
    let start = i.saturating_sub(4096);
    (start..i).rev().find_map(|j| {
        (j >= 3 && t[j] == var && t[j - 1] == "*" && t[j - 3] == "struct" && ident(&t[j - 2]))
            .then(|| t[j - 2].clone())
    })
}

/// C tokens: identifiers and numbers whole, every other character alone;
/// comments, string and character literals dropped.
fn tokens(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(text[s..i].to_string());
        } else {
            // One byte; a multi-byte character (in a comment-free place) whole.
            let s = i;
            i += 1;
            while i < b.len() && !text.is_char_boundary(i) {
                i += 1;
            }
            out.push(text[s..i].to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(src: &str) -> Lifetimes {
        let mut l = Lifetimes::default();
        l.add("x.c", src);
        l
    }

    #[test]
    fn allocations_make_a_struct_per_object() {
        let l = seen(
            "static struct kmem_cache *c;\n\
             void init(void) { c = kmem_cache_create(\"c\", sizeof(struct conn), 0, 0, NULL); }\n\
             struct pool *pool_new(void) {\n\
                 struct pool *pool;\n\
                 pool = kzalloc(sizeof(*pool), GFP_KERNEL);\n\
                 return pool;\n\
             }\n\
             struct grp *grp_new(int n) { struct grp *g = kzalloc(struct_size(g, e, n), 0); return g; }\n\
             void f(void) { KMEM_CACHE(vma, 0); }\n",
        );
        for s in ["conn", "pool", "grp", "vma"] {
            assert!(l.allocated.contains_key(s), "{s}: {l:?}");
        }
        assert!(l.allocated["pool"].contains("sizeof(*pool)"));
        // A file-scope pointer is no instance.
        assert!(!l.instances.contains_key("kmem_cache"));
    }

    #[test]
    fn file_scope_instances_make_a_singleton() {
        let l = seen(
            "static const struct ca_ops reno = { .ssthresh = reno_ssthresh, };\n\
             struct hstate hstates[4];\n\
             DEFINE_PER_CPU_ALIGNED(struct queue_data, queue_data);\n\
             struct net init_net __read_mostly = { };\n\
             static struct conn *lookup(struct conn *c, struct key k);\n\
             void f(struct conn c) { struct conn local; }\n\
             /* struct comment_only x; */ const char *s = \"struct in_string y;\";\n",
        );
        let mut names: Vec<&str> = l.instances.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(names, ["ca_ops", "hstate", "net", "queue_data"]);
        assert!(l.allocated.is_empty());
        // By value in a function or its parameters: a local.
        let mut locals: Vec<&str> = l.locals.keys().map(String::as_str).collect();
        locals.sort();
        assert_eq!(locals, ["conn", "key"]);
    }

    fn hot_site(accessor: Option<&str>) -> Site {
        Site {
            hot_roots: vec!["r".into()],
            branches: Some(0),
            accessor: accessor.map(str::to_string),
            ..Site::for_test(crate::infer::sites::Kind::Read, Heat::Hot)
        }
    }

    #[test]
    fn three_hot_sites_in_four_through_an_accessor_make_it_the_running_contexts() {
        let via = |n: usize, of: usize| -> Vec<Site> {
            (0..of)
                .map(|i| hot_site((i < n).then_some("get_current")))
                .collect()
        };
        assert_eq!(
            running_context(&via(3, 4)).as_deref(),
            Some("3 of its 4 hot sites reach it through get_current()")
        );
        assert_eq!(running_context(&via(2, 4)), None);
        assert_eq!(running_context(&[]), None);
        // Cold sites do not count.
        let mut sites = via(3, 4);
        sites.push(Site {
            heat: Heat::Cold,
            ..hot_site(None)
        });
        assert!(running_context(&sites).is_some());
    }

    #[test]
    fn a_struct_only_declared_in_functions_lives_on_a_stack() {
        let l = seen(
            "int fault(struct vma *v) { struct fault f = { .vma = v }; return run(&f); }\n\
             void send(void) { struct msg m; struct conn c[2]; }\n\
             struct conn *conn_new(void) { return kzalloc(sizeof(struct conn), 0); }\n",
        );
        assert!(l.locals.contains_key("fault") && l.locals.contains_key("msg"));
        // An allocation wins over a local: a stack copy of a per-object struct.
        assert!(l.locals.contains_key("conn") && l.allocated.contains_key("conn"));
        assert!(
            !l.locals.contains_key("vma"),
            "a pointer parameter is no local"
        );
    }
}
