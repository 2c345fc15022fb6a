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
use std::collections::{BTreeMap, BTreeSet};

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
    /// Per-CPU instances its fast paths reach as the running CPU's own
    /// (`this_cpu_ptr`, `per_cpu_ptr(p, smp_processor_id())`): no other
    /// CPU touches them there; the evidence ([`Lifetimes::per_cpu`]).
    PerCpu(String),
    /// Per-CPU instances a fast path also reaches for another CPU
    /// (`per_cpu(x, cpu)`, `per_cpu_ptr(p, cpu)`: a remote enqueue):
    /// written across CPUs; the evidence ([`Lifetimes::per_cpu`]).
    PerCpuShared(String),
    /// The sources show neither.
    Unknown,
}

impl Lifetime {
    /// The evidence, when the sources show any.
    pub fn evidence(&self) -> Option<&str> {
        match self {
            Lifetime::PerObject(e)
            | Lifetime::Singleton(e)
            | Lifetime::Local(e)
            | Lifetime::Running(e)
            | Lifetime::PerCpu(e)
            | Lifetime::PerCpuShared(e) => Some(e),
            Lifetime::Unknown => None,
        }
    }

    pub fn word(&self) -> &'static str {
        match self {
            Lifetime::PerObject(_) => "per-object",
            Lifetime::Singleton(_) => "singleton",
            Lifetime::Local(_) => "on a stack",
            Lifetime::Running(_) => "the running context's",
            Lifetime::PerCpu(_) => "per-CPU, the running CPU's own",
            Lifetime::PerCpuShared(_) => "per-CPU, written across CPUs",
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
    /// Per-CPU variables (`DEFINE_PER_CPU(struct NAME, var)`): var to NAME.
    percpu_vars: BTreeMap<String, String>,
    /// Per function: the per-CPU instances it obtains, and how.
    obtains: BTreeMap<String, Vec<Obtain>>,
    /// Per (caller, callee): the argument positions where the caller
    /// hands the running CPU (`smp_processor_id()`, or a local set from it).
    cpu_args: BTreeMap<(String, String), BTreeSet<usize>>,
}

/// A per-CPU instance a function obtains: the struct its result is
/// assigned to a pointer of, or the per-CPU variable it names; whether it
/// is the running CPU's own; the form, for the evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Obtain {
    /// `struct NAME *x = ...` or `x = ...` with `x` such a pointer.
    assigned: Option<String>,
    /// The per-CPU variable named (`&softnet_data`, `softnet_data.processed`).
    var: Option<String>,
    own: bool,
    /// Another CPU's by the accessor, its CPU the function's parameter at
    /// this position: the caller decides whose ([`Lifetimes::cpu_args`]).
    cpu_param: Option<usize>,
    form: String,
}

/// The accessors of a per-CPU instance of the running CPU: any name that
/// starts with one of these (`this_cpu_ptr`, `__this_cpu_read`,
/// `raw_cpu_ptr`, `get_cpu_ptr`, `get_cpu_var`).
const OWN_PREFIXES: [&str; 5] = [
    "this_cpu_",
    "__this_cpu_",
    "raw_cpu_",
    "get_cpu_",
    "__get_cpu_",
];

/// The accessors of a chosen CPU's instance: the running CPU's own when
/// the CPU is `smp_processor_id()`, another's otherwise.
const ANY_CPU: [&str; 2] = ["per_cpu_ptr", "per_cpu"];

/// Whether the call `name` obtains the running CPU's per-CPU instance.
fn own_accessor(name: &str) -> bool {
    OWN_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Calls whose `sizeof` argument is the length of bytes an existing
/// object already has (`memset(p, 0, sizeof(*p))`, a copy, a compare) or
/// a check at build time: no allocation.
fn sizes_no_allocation(call: &str) -> bool {
    let c = call.trim_start_matches('_');
    c.starts_with("mem")
        || c.contains("copy")
        || c.contains("cmp")
        || c.starts_with("BUILD_BUG")
        || c == "static_assert"
}

/// Function-like macros of one source whose body obtains the running
/// CPU's per-CPU instance (`#define pcp_spin_trylock(ptr) ...
/// this_cpu_ptr(ptr) ...`, also through another such macro): calls of
/// them are own accessors too.
fn own_macros(text: &str) -> Vec<String> {
    let mut defs: Vec<(String, String)> = Vec::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        let t = l.trim_start();
        let Some(rest) = t.strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("define") else {
            continue;
        };
        let rest = rest.trim_start();
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || !rest[name.len()..].starts_with('(') {
            continue;
        }
        let mut body = rest[name.len()..].to_string();
        let mut cont = l.trim_end().ends_with('\\');
        while cont {
            let Some(n) = lines.next() else { break };
            body.push(' ');
            body.push_str(n);
            cont = n.trim_end().ends_with('\\');
        }
        defs.push((name, body));
    }
    let mut own: Vec<String> = Vec::new();
    loop {
        let before = own.len();
        for (name, body) in &defs {
            if own.contains(name) {
                continue;
            }
            let uses = tokens(body)
                .iter()
                .any(|w| (own_accessor(w) && w.ends_with("ptr")) || own.iter().any(|o| o == w));
            if uses {
                own.push(name.clone());
            }
        }
        if own.len() == before {
            break;
        }
    }
    own
}

/// Embedding levels looked up through.
const MAX_UP: usize = 8;

impl Lifetimes {
    /// Reads one source's tokens.
    pub fn add(&mut self, file: &str, text: &str) {
        let (t, in_directive) = tokens_marked(text);
        let at = |i: usize| t.get(i).map(String::as_str).unwrap_or("");
        let own_macros = own_macros(text);
        let mut depth = 0i64;
        // The calls enclosing each open parenthesis (empty: no call).
        let mut calls: Vec<&str> = Vec::new();
        // The function being defined: the first name followed by `(` at
        // file scope since the last `;`, `=` or `}` there, once its body
        // opens.
        let mut pending: Option<(&str, usize)> = None;
        let mut function: Option<&str> = None;
        // The function's parameters, and its locals set from the running CPU.
        let mut params: Vec<&str> = Vec::new();
        let mut own_cpus: Vec<&str> = Vec::new();
        for i in 0..t.len() {
            let outer = depth;
            // A directive's tokens are no code: they open no function,
            // and a macro body's parentheses nest nothing of the code.
            let code = !in_directive.get(i).copied().unwrap_or(false);
            match at(i) {
                _ if !code => {}
                "(" => {
                    if outer == 0 && pending.is_none() && ident(at(i.wrapping_sub(1))) {
                        pending = Some((at(i - 1), i));
                    }
                    calls.push(if i > 0 && ident(at(i - 1)) {
                        at(i - 1)
                    } else {
                        ""
                    });
                    depth += 1;
                }
                "{" => {
                    if outer == 0 {
                        let opened = pending.filter(|_| at(i - 1) == ")" || ident(at(i - 1)));
                        function = opened.map(|(f, _)| f);
                        params = opened.map_or_else(Vec::new, |(_, open)| parameters(&t, open));
                        own_cpus.clear();
                    }
                    depth += 1;
                }
                ")" => {
                    calls.pop();
                    depth -= 1;
                }
                "}" => {
                    depth -= 1;
                    if depth <= 0 {
                        function = None;
                        pending = None;
                    }
                }
                ";" | "=" if outer == 0 => pending = None,
                _ => {}
            }
            // A size that no allocation takes: the innermost call around
            // it, past the size arithmetic, copies, sets or checks bytes.
            let sizing = || {
                !calls
                    .iter()
                    .rev()
                    .find(|c| !c.is_empty() && !is_size_math(c))
                    .is_some_and(|c| sizes_no_allocation(c))
            };
            // sizeof(struct NAME)
            if at(i) == "sizeof"
                && at(i + 1) == "("
                && at(i + 2) == "struct"
                && at(i + 4) == ")"
                && sizing()
            {
                self.alloc(at(i + 3), file, format!("sizeof(struct {})", at(i + 3)));
            }
            // alloc_percpu(struct NAME): one instance per CPU.
            if at(i).starts_with("alloc_percpu") && at(i + 1) == "(" && at(i + 2) == "struct" {
                self.instance(
                    at(i + 3),
                    file,
                    format!("{}(struct {}, ...)", at(i), at(i + 3)),
                );
            }
            // A per-CPU instance obtained in a function.
            if let Some(f) = function.filter(|_| code) {
                // `cpu = smp_processor_id()`: a local that names the running CPU.
                if running_cpu(&t, i)
                    && at(i.wrapping_sub(1)) == "="
                    && ident(at(i.wrapping_sub(2)))
                {
                    own_cpus.push(at(i - 2));
                }
                // A call that hands the running CPU on.
                if ident(at(i)) && at(i + 1) == "(" && !own_accessor(at(i)) {
                    let positions: BTreeSet<usize> = arguments(&t, i)
                        .iter()
                        .enumerate()
                        .filter(|(_, a)| is_running_cpu(a, &own_cpus))
                        .map(|(k, _)| k)
                        .collect();
                    if !positions.is_empty() {
                        self.cpu_args
                            .entry((f.to_string(), at(i).to_string()))
                            .or_default()
                            .extend(positions);
                    }
                }
                let own_call = own_accessor(at(i)) || own_macros.iter().any(|m| m == at(i));
                if at(i + 1) == "(" && (own_call || ANY_CPU.contains(&at(i))) {
                    if let Some(o) = obtain(&t, i, own_call, &own_cpus, &params) {
                        let list = self.obtains.entry(f.to_string()).or_default();
                        if !list.contains(&o) {
                            list.push(o);
                        }
                    }
                }
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
            if let Some((var, form)) = sized.filter(|(v, _)| ident(v) && sizing()) {
                if let Some(name) = declared_struct(&t, i, var) {
                    let close = if form == "sizeof(*" { ")" } else { ", ...)" };
                    self.alloc(
                        &name,
                        file,
                        format!("{form}{var}{close} of a struct {name} *"),
                    );
                }
            }
            // DEFINE_PER_CPU(struct NAME, x) and its variants; not
            // DEFINE_PER_CPU(struct NAME *, x), a pointer per CPU.
            if at(i).starts_with("DEFINE_PER_CPU")
                && at(i + 1) == "("
                && at(i + 2) == "struct"
                && at(i + 4) == ","
            {
                if ident(at(i + 3)) && ident(at(i + 5)) {
                    self.percpu_vars
                        .entry(at(i + 5).to_string())
                        .or_insert_with(|| at(i + 3).to_string());
                }
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

    /// Whether the sources make instances of struct `name` of its own (an
    /// allocation of its size, a file-scope or stack instance), rather than
    /// only inside the structs that embed it.
    pub fn has_own_instances(&self, name: &str) -> bool {
        self.allocated.contains_key(name)
            || self.instances.contains_key(name)
            || self.locals.contains_key(name)
    }

    /// How `agg` lives: by the nearest evidence, its own allocations or
    /// file-scope instances, else those of the structs that embed it (a
    /// few levels up, the nearest first), else its declarations inside
    /// functions.
    pub fn of(&self, db: &TypeDb, agg: &Aggregate) -> Lifetime {
        let mut level: Vec<&Aggregate> = vec![agg];
        let mut seen: Vec<String> = vec![agg.name.clone()];
        let evidence = |a: &Aggregate, e: &String| {
            if a.name == agg.name {
                e.clone()
            } else {
                format!("embedded in struct {} ({e})", a.name)
            }
        };
        for _ in 0..MAX_UP {
            // The nearest evidence decides: a struct the sources allocate,
            // or define at file scope, lives so whatever the structs that
            // embed it do (`ipv4_dst_ops` is the `dst_ops` IPv4 reaches,
            // not the copies inside each namespace); at one level an
            // allocation outweighs a file-scope instance.
            if let Some((a, e)) = level
                .iter()
                .find_map(|a| self.allocated.get(&a.name).map(|e| (a, e)))
            {
                return Lifetime::PerObject(evidence(a, e));
            }
            if let Some((a, e)) = level
                .iter()
                .find_map(|a| self.instances.get(&a.name).map(|e| (a, e)))
            {
                return Lifetime::Singleton(evidence(a, e));
            }
            let mut next = Vec::new();
            for a in &level {
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
        match self.locals.get(&agg.name) {
            // Embedded in nothing that lives elsewhere, declared in functions.
            Some(e) => Lifetime::Local(e.clone()),
            None => Lifetime::Unknown,
        }
    }
}

/// Arithmetic around a size that leaves it a size (`struct_size`,
/// `size_add`, `array_size`, `ALIGN`, `max`).
fn is_size_math(call: &str) -> bool {
    let c = call.to_ascii_lowercase();
    c.contains("size")
        || c.contains("align")
        || matches!(
            c.as_str(),
            "max" | "min" | "max_t" | "min_t" | "roundup" | "round_up"
        )
}

/// The per-CPU instance the accessor call at token `i` obtains (`own`:
/// the accessor is the running CPU's own; `per_cpu(x, cpu)` and
/// `per_cpu_ptr(p, cpu)` are, when `cpu` is `smp_processor_id()`).
fn obtain(t: &[String], i: usize, own: bool, own_cpus: &[&str], params: &[&str]) -> Option<Obtain> {
    let at = |k: usize| t.get(k).map(String::as_str).unwrap_or("");
    let args = arguments(t, i);
    if args.is_empty() {
        return None;
    }
    let cpu = args.get(1);
    let own = own || cpu.is_some_and(|a| is_running_cpu(a, own_cpus));
    let cpu_param = match cpu.map(Vec::as_slice) {
        Some([c]) if !own => params.iter().position(|p| p == c),
        _ => None,
    };
    // The per-CPU variable named by the first argument.
    let first: Vec<&str> = args[0]
        .iter()
        .copied()
        .skip_while(|w| matches!(*w, "&" | "("))
        .collect();
    let var = first
        .first()
        .filter(|w| ident(w) && matches!(first.get(1).copied(), None | Some(".") | Some(")")))
        .map(|w| w.to_string());
    // An operation on a member of a per-CPU pointer's instance
    // (`__this_cpu_write(pcp->expire, 0)` with `struct NAME __percpu *pcp`).
    // (The tokens split `->` in two.)
    let arrow = first.get(1).copied() == Some("-") && first.get(2).copied() == Some(">");
    let through = (own && !at(i).ends_with("ptr") && arrow)
        .then(|| declared_struct(t, i, first[0]))
        .flatten();
    // The pointer the result is assigned to (`x = &per_cpu(v, cpu)`).
    let mut k = i;
    while k > 0 && matches!(at(k - 1), "&" | "(") {
        k -= 1;
    }
    let assigned = (k >= 2 && at(k - 1) == "=" && ident(at(k - 2)))
        .then(|| declared_struct(t, k - 1, at(k - 2)))
        .flatten()
        .or(through);
    let form = format!(
        "{}({})",
        at(i),
        args.iter()
            .map(|a| a.concat())
            .collect::<Vec<_>>()
            .join(", ")
    );
    (assigned.is_some() || var.is_some()).then_some(Obtain {
        assigned,
        var,
        own,
        cpu_param,
        form,
    })
}

/// The arguments of the call whose name is token `i`, each its tokens,
/// split at the call's own commas (none when no `(` follows).
fn arguments(t: &[String], i: usize) -> Vec<Vec<&str>> {
    let at = |k: usize| t.get(k).map(String::as_str).unwrap_or("");
    if at(i + 1) != "(" {
        return Vec::new();
    }
    let mut args: Vec<Vec<&str>> = vec![Vec::new()];
    let mut depth = 0i64;
    let mut j = i + 1;
    loop {
        let w = at(j);
        match w {
            "" => return Vec::new(),
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            break;
        }
        if !(depth == 1 && w == "(" && j == i + 1) {
            if depth == 1 && w == "," {
                args.push(Vec::new());
            } else if let Some(a) = args.last_mut() {
                a.push(w);
            }
        }
        j += 1;
    }
    args
}

/// The calls that name the running CPU.
const RUNNING_CPU: [&str; 3] = ["smp_processor_id", "raw_smp_processor_id", "get_cpu"];

/// Whether token `i` starts a call that names the running CPU.
fn running_cpu(t: &[String], i: usize) -> bool {
    RUNNING_CPU.contains(&t[i].as_str())
        && t.get(i + 1).is_some_and(|w| w == "(")
        && t.get(i + 2).is_some_and(|w| w == ")")
}

/// Whether an argument's tokens name the running CPU: such a call, or a
/// local set from one.
fn is_running_cpu(arg: &[&str], own_cpus: &[&str]) -> bool {
    match arg {
        [c, "(", ")"] => RUNNING_CPU.contains(c),
        [v] => own_cpus.contains(v),
        _ => false,
    }
}

/// The parameter names of the function whose parameter list opens at
/// token `open` (the last identifier of each, `void` none).
fn parameters(t: &[String], open: usize) -> Vec<&str> {
    arguments(t, open.saturating_sub(1))
        .into_iter()
        .map(|a| {
            a.iter()
                .rev()
                .find(|w| ident(w))
                .copied()
                .filter(|w| *w != "void")
                .unwrap_or("")
        })
        .collect()
}

impl Lifetimes {
    /// Whether `name`'s instances are per-CPU, and whose its fast paths
    /// reach: each hot site is decided by the nearest function on its way
    /// from the root (`hot_via`, the site's own function last) that
    /// obtains a per-CPU instance of it. One that obtains another CPU's
    /// (`per_cpu(x, cpu)`, `per_cpu_ptr(p, cpu)`) makes the struct
    /// written across CPUs ([`Lifetime::PerCpuShared`]); otherwise, when
    /// at least [`RUNNING_SHARE`] of its hot sites reach the running
    /// CPU's own (`this_cpu_ptr`, `raw_cpu_ptr`, `get_cpu_var`, a macro of
    /// the source that wraps one, `per_cpu_ptr(p, smp_processor_id())`),
    /// the fast paths touch only the CPU's own instance
    /// ([`Lifetime::PerCpu`]). `None`: neither.
    pub fn per_cpu(&self, name: &str, sites: &[Site]) -> Option<Lifetime> {
        let mine = |o: &Obtain| {
            o.assigned.as_deref() == Some(name)
                || o.var
                    .as_ref()
                    .and_then(|v| self.percpu_vars.get(v))
                    .is_some_and(|s| s == name)
        };
        let hot: Vec<&Site> = sites.iter().filter(|s| s.heat == Heat::Hot).collect();
        let mut own = 0usize;
        let mut remote = 0usize;
        let mut own_at: Option<(String, String)> = None;
        let mut remote_at: Option<(String, String)> = None;
        for s in &hot {
            let mut chain: Vec<&str> = s
                .hot_via
                .as_deref()
                .map(|v| v.split(" > ").collect())
                .unwrap_or_default();
            if chain.last() != Some(&s.function.as_str()) {
                chain.push(&s.function);
            }
            // A this-CPU operation on the member itself
            // (`__this_cpu_inc(softnet_data.processed)`) acts on the
            // running CPU's instance, whatever obtained the address.
            if self.declared_per_cpu(name) && this_cpu_operation(&s.how) {
                own += 1;
                own_at.get_or_insert_with(|| {
                    (format!("{}({})", s.how, s.member), s.function.clone())
                });
                continue;
            }
            for f in chain.iter().rev() {
                let Some(list) = self.obtains.get(*f) else {
                    continue;
                };
                let got: Vec<&Obtain> = list.iter().filter(|o| mine(o)).collect();
                if got.is_empty() {
                    continue;
                }
                // Another CPU's by the accessor, unless the caller on the
                // way hands this function the running CPU.
                let caller = chain
                    .iter()
                    .position(|c| c == f)
                    .and_then(|k| k.checked_sub(1))
                    .map(|k| chain[k]);
                let handed = |o: &Obtain| {
                    o.cpu_param.zip(caller).is_some_and(|(p, c)| {
                        self.cpu_args
                            .get(&(c.to_string(), f.to_string()))
                            .is_some_and(|set| set.contains(&p))
                    })
                };
                if let Some(o) = got.iter().find(|o| !o.own && !handed(o)) {
                    remote += 1;
                    remote_at.get_or_insert_with(|| (o.form.clone(), f.to_string()));
                } else {
                    own += 1;
                    own_at.get_or_insert_with(|| {
                        let o = got[0];
                        let from = match caller.filter(|_| !o.own) {
                            Some(c) => format!("{f}, the running CPU from {c}"),
                            None => f.to_string(),
                        };
                        (o.form.clone(), from)
                    });
                }
                break;
            }
        }
        let (num, den) = RUNNING_SHARE;
        if let Some((form, f)) = remote_at {
            return Some(Lifetime::PerCpuShared(format!(
                "{remote} of its {} hot sites reach another CPU's instance: {form} in {f}",
                hot.len()
            )));
        }
        let (form, f) = own_at?;
        (own * den >= hot.len() * num).then(|| {
            Lifetime::PerCpu(format!(
                "{own} of its {} hot sites reach the running CPU's instance: {form} in {f}",
                hot.len()
            ))
        })
    }

    /// Whether the sources define per-CPU instances of `name`
    /// (`DEFINE_PER_CPU(struct NAME, x)`).
    fn declared_per_cpu(&self, name: &str) -> bool {
        self.percpu_vars.values().any(|s| s == name)
    }
}

/// Whether an access's `how` is a this-CPU operation (`this_cpu_read`,
/// `__this_cpu_inc`, `raw_cpu_add`, ...): it names the running CPU's copy.
fn this_cpu_operation(how: &str) -> bool {
    let h = how.trim_start_matches('_');
    h.starts_with("this_cpu_") || h.starts_with("raw_cpu_")
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
        if j < 3 || t[j] != var || t[j - 1] != "*" {
            return None;
        }
        // `struct NAME *var`, or `struct NAME __percpu *var`.
        let k = if t[j - 2].starts_with("__") && j >= 4 {
            j - 3
        } else {
            j - 2
        };
        (t[k - 1] == "struct" && ident(&t[k])).then(|| t[k].clone())
    })
}

/// C tokens: identifiers and numbers whole, every other character alone;
/// comments, string and character literals dropped.
fn tokens(text: &str) -> Vec<String> {
    tokens_marked(text).0
}

/// [`tokens`], each marked when it is part of a preprocessor directive
/// (a line that starts with `#`, with its continuation lines).
fn tokens_marked(text: &str) -> (Vec<String>, Vec<bool>) {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut marks = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    let mut directive = false;
    let mut last = b'\n';
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            if c == b'\n' {
                if last != b'\\' {
                    directive = false;
                }
                line_start = true;
            }
            i += 1;
            continue;
        }
        if c == b'#' && line_start {
            directive = true;
        }
        line_start = false;
        last = c;
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
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
            marks.push(directive);
        } else {
            // One byte; a multi-byte character (in a comment-free place) whole.
            let s = i;
            i += 1;
            while i < b.len() && !text.is_char_boundary(i) {
                i += 1;
            }
            out.push(text[s..i].to_string());
            marks.push(directive);
        }
    }
    (out, marks)
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
             static DEFINE_PER_CPU(struct sock *, icmp_sk);\n\
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
    fn a_size_a_memset_or_a_copy_takes_is_no_allocation() {
        let l = seen(
            "void reset(struct pcp *pcp) { memset(pcp, 0, sizeof(*pcp)); }\n\
             void init(struct vec *v) { memset(v, 0, sizeof(struct vec)); }\n\
             void cp(struct hdr *h, void *from) { memcpy(h, from, sizeof(*h)); }\n\
             void chk(void) { BUILD_BUG_ON(sizeof(struct small) > 64); }\n\
             struct conn *mk(int n) { struct conn *c = kzalloc(size_add(sizeof(*c), n), 0); return c; }\n\
             static struct proto p = { .obj_size = sizeof(struct tsock) };\n",
        );
        for s in ["pcp", "vec", "hdr", "small"] {
            assert!(!l.allocated.contains_key(s), "{s}: {l:?}");
        }
        // Inside size arithmetic of an allocation, or a size a table
        // hands to an allocator, it still is one.
        assert!(l.allocated.contains_key("conn") && l.allocated.contains_key("tsock"));
    }

    fn via(function: &str, hot_via: &str) -> Site {
        Site {
            function: function.into(),
            hot_via: Some(hot_via.into()),
            ..hot_site(None)
        }
    }

    #[test]
    fn per_cpu_instances_are_the_running_cpus_own_unless_a_fast_path_reaches_anothers() {
        let src = "DEFINE_PER_CPU_ALIGNED(struct queue, queues);\n\
             struct pool *pool_new(void) { return alloc_percpu(struct pool); }\n\
             #define pool_lock(ptr) \\\n\
             ({ struct pool *_p = this_cpu_ptr(ptr); spin_lock(&_p->lock); _p; })\n\
             void take(struct zone *z) {\n\
                 struct pool *pool;\n\
                 pool = pool_lock(z->pools);\n\
                 use(pool);\n\
             }\n\
             void rx(void) { struct queue *q = this_cpu_ptr(&queues); q->n++; }\n\
             void count(void) { __this_cpu_inc(queues.processed); }\n\
             void drain(struct zone *z, int cpu) {\n\
                 struct pool *pool = per_cpu_ptr(z->pools, cpu);\n\
             }\n\
             void steer(struct sk_buff *skb, int cpu) {\n\
                 struct queue *q;\n\
                 q = &per_cpu(queues, cpu);\n\
                 q->n++;\n\
             }\n\
             void mine(struct zone *z) { struct pool *p = per_cpu_ptr(z->pools, smp_processor_id()); }\n\
             void drain_local(struct zone *z) { int cpu = smp_processor_id(); drain(z, cpu); }\n\
             void drain_all(struct zone *z, int cpu) { drain(z, cpu); }\n\
             void expire(struct zone *z) {\n\
                 struct pool __percpu *pcp = z->pools;\n\
                 __this_cpu_write(pcp->expire, 0);\n\
             }\n";
        let l = seen(src);
        assert_eq!(
            l.percpu_vars.get("queues").map(String::as_str),
            Some("queue")
        );
        assert!(l.instances["pool"].contains("alloc_percpu(struct pool"));
        // The pool: reached through the macro and a helper it calls; the
        // drain of another CPU's pool is on no fast path.
        let pool = [
            via("use", "take > use"),
            via("take", "take"),
            via("mine", "mine"),
        ];
        let got = l.per_cpu("pool", &pool);
        assert_eq!(
            got,
            Some(Lifetime::PerCpu(
                "3 of its 3 hot sites reach the running CPU's instance: pool_lock(z->pools) in take"
                    .into()
            ))
        );
        // The queue: one fast path enqueues to another CPU's.
        let queue = [via("rx", "rx"), via("count", "count")];
        assert!(matches!(
            l.per_cpu("queue", &queue),
            Some(Lifetime::PerCpu(_))
        ));
        let queue = [
            via("rx", "rx"),
            via("count", "count"),
            via("steer", "rx2 > steer"),
        ];
        let got = l.per_cpu("queue", &queue);
        assert_eq!(
            got,
            Some(Lifetime::PerCpuShared(
                "1 of its 3 hot sites reach another CPU's instance: per_cpu(queues, cpu) in steer"
                    .into()
            ))
        );
        // A struct no per-CPU accessor obtains is none of this.
        assert_eq!(l.per_cpu("zone", &[via("take", "take")]), None);
        // Another CPU's by the accessor, but the caller on the way hands
        // the running CPU; an operation on a per-CPU pointer's member.
        let pool = [via("drain", "drain_local > drain"), via("expire", "expire")];
        assert_eq!(
            l.per_cpu("pool", &pool),
            Some(Lifetime::PerCpu(
                "2 of its 2 hot sites reach the running CPU's instance: per_cpu_ptr(z->pools, cpu) in drain, the running CPU from drain_local"
                    .into()
            ))
        );
        let pool = [via("drain", "drain_all > drain"), via("expire", "expire")];
        assert_eq!(
            l.per_cpu("pool", &pool),
            Some(Lifetime::PerCpuShared(
                "1 of its 2 hot sites reach another CPU's instance: per_cpu_ptr(z->pools, cpu) in drain"
                    .into()
            ))
        );
        // Too few of the hot sites through the running CPU's: undecided.
        let pool = [via("take", "take"), via("x", "x"), via("y", "y")];
        assert_eq!(l.per_cpu("pool", &pool), None);
        // A this-CPU operation on the member in a header's inline, which
        // no source defines (`__this_cpu_inc(softnet_data.xmit.recursion)`
        // in netdevice.h): the running CPU's copy, without an accessor on
        // the way. Not for a struct with no per-CPU variable of its own.
        let this_cpu = |f: &str, how: &str| Site {
            how: how.into(),
            member: "xmit.recursion".into(),
            ..via(f, &format!("xmit > {f}"))
        };
        let queue = [
            this_cpu("recursion_inc", "__this_cpu_inc"),
            this_cpu("recursion", "__this_cpu_read"),
            this_cpu("more", "this_cpu_write"),
            via("x", "x"),
        ];
        assert_eq!(
            l.per_cpu("queue", &queue),
            Some(Lifetime::PerCpu(
                "3 of its 4 hot sites reach the running CPU's instance: __this_cpu_inc(xmit.recursion) in recursion_inc"
                    .into()
            ))
        );
        let pool = [
            this_cpu("a", "__this_cpu_inc"),
            this_cpu("b", "raw_cpu_add"),
        ];
        assert_eq!(l.per_cpu("pool", &pool), None);
        assert!(this_cpu_operation("raw_cpu_add") && !this_cpu_operation("atomic_inc"));
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

    /// A hand-made database: `ops` inside `ns`, `ns` inside `net`, `refs`
    /// inside `conn`.
    fn embedding_db() -> TypeDb {
        use crate::typedb::{AggregateKind, Member, NameKind};
        let member = |name: &str, agg: &str, offset: u64, size: u64| Member {
            name: name.into(),
            ty: format!("struct {agg}"),
            offset,
            bit_offset: None,
            bit_size: None,
            size,
            align: 8,
            attr_align: None,
            aggregate: Some(agg.into()),
            count: 1,
        };
        let word = |name: &str| Member {
            ty: "long".into(),
            aggregate: None,
            ..member(name, "", 0, 8)
        };
        let agg = |name: &str, size: u64, members: Vec<Member>| Aggregate {
            name: name.into(),
            name_kind: NameKind::Tag,
            kind: AggregateKind::Struct,
            size,
            align: 8,
            members,
            packed: false,
            attr_align: None,
        };
        TypeDb::from_aggregates(
            "embedding",
            vec![
                agg("ops", 8, vec![word("check")]),
                agg("refs", 8, vec![word("count")]),
                agg("ns", 8, vec![member("ops", "ops", 0, 8)]),
                agg("net", 8, vec![member("ns", "ns", 0, 8)]),
                agg("conn", 8, vec![member("refs", "refs", 0, 8)]),
            ],
            false,
        )
    }

    #[test]
    fn the_nearest_evidence_decides_how_a_struct_lives() {
        let db = embedding_db();
        let l = seen(
            "static struct ops ipv4_ops = { .check = ipv4_check };\n\
             struct net *net_alloc(void) { return kzalloc(sizeof(struct net), 0); }\n\
             struct conn *conn_new(void) { return kzalloc(sizeof(struct conn), 0); }\n\
             static struct refs spare_refs;\n",
        );
        let of = |name: &str| l.of(&db, db.find(name).unwrap());
        // Its own file-scope instance is what the code names, not the
        // copies inside each allocated `net`.
        assert_eq!(
            of("ops"),
            Lifetime::Singleton("x.c: struct ops ipv4_ops".into())
        );
        // No evidence of its own: the nearest embedder's, two levels up.
        assert_eq!(
            of("ns"),
            Lifetime::PerObject("embedded in struct net (x.c: sizeof(struct net))".into())
        );
        // Its own instance is nearer than its embedder's allocation.
        assert!(matches!(of("refs"), Lifetime::Singleton(_)));
        assert!(matches!(of("conn"), Lifetime::PerObject(_)));
    }
}
