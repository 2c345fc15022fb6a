//! One translation unit's accesses to the struct's members, function by
//! function: each access's kind (read, write, read-modify-write), its form
//! (plain, `READ_ONCE`, `atomic_long_add`, `set_bit`, `list_del`, ...), the
//! locks held there (lock calls in statement order, per branch), and
//! whether it sits on an `unlikely()` branch; and every function's callees.

use super::ffi::{Cursor, Place, Unit};
use super::lock_effects::{self, Assigned, Effect, FnLocks, LockRef, Return};
use super::locks;
use super::param_use;
use super::site_kind;
use crate::infer::sites::Kind;
use clang_sys::*;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// An access found in the sources.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct RawSite {
    /// Byte offset of the accessed (outermost) member in the struct.
    pub offset: u64,
    /// The member as the code names it (`usage.counter`).
    pub member: String,
    pub file: String,
    pub line: u32,
    pub function: String,
    pub kind: Kind,
    pub how: String,
    pub locks: Vec<String>,
    /// `unlikely()` when the site is on such a branch.
    pub cold_branch: Option<String>,
    /// How many loops of its function enclose it.
    pub loop_depth: u32,
    /// How many branches of its function enclose it (`if` arms, `switch`
    /// bodies): each halves how often it runs, by the static estimate.
    pub conds: u32,
    /// The function with no arguments whose result the access goes
    /// through (`current->flags` is `get_current()->flags`): an accessor
    /// of the running context, whose instance is the running CPU's.
    #[serde(default)]
    pub accessor: Option<String>,
    /// A store skipped when the member already holds the value: under a
    /// test that it differs (`if (x->m != v) x->m = v;`, or after `if
    /// (x->m == v) continue;`).
    #[serde(default)]
    pub on_change: bool,
    /// Part of an update that only takes back what the member holds,
    /// down to zero (`x->m -= min(x->m, d)`): the store and its read.
    #[serde(default)]
    pub drains: bool,
}

/// A function handed to a call as a pointer: `caller` calls `callee`
/// with it as an argument (`folio_batch_move_lru(fbatch, lru_add_fn)`,
/// `walk_page_range(..., &mm_walk_ops, ...)`), holding `locks`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Callback {
    pub caller: String,
    pub callee: String,
    pub handed: Handed,
    pub locks: Vec<String>,
    /// On an `unlikely()` branch or error path.
    pub cold: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Handed {
    /// A function (by name).
    Function(String),
    /// The caller's own pointer parameter, passed on.
    Parameter,
    /// A function a global table handed over (`&mm_walk_ops`) installs:
    /// it runs when the callee calls through the table's member, which
    /// [`MemberCall`] resolves by the member's struct.
    Table(String),
}

/// A call through a member of an ops table: `caller` calls what its
/// `member` points to, holding `locks`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct MemberCall {
    pub caller: String,
    /// The struct that declares the member (`net_device_ops`), empty
    /// when libclang does not say.
    pub record: String,
    pub member: String,
    pub locks: Vec<String>,
    /// On an `unlikely()` branch or error path.
    pub cold: bool,
    /// The canonical type of the function the member points to (`int
    /// (struct sk_buff *, ...)`), empty when libclang does not say.
    #[serde(default)]
    pub fn_type: String,
}

/// A macro use the analysis reads: its range in its file and its name.
struct MacroUse {
    file: String,
    start: u32,
    end: u32,
    name: String,
    /// For `lockdep_assert_held(&x->lock)`: `lock`.
    lock: Option<String>,
}

fn interesting_macro(name: &str) -> bool {
    matches!(
        name,
        "READ_ONCE"
            | "WRITE_ONCE"
            | "data_race"
            | "smp_load_acquire"
            | "smp_store_release"
            | "xchg"
            | "cmpxchg"
            | "try_cmpxchg"
            | "cmpxchg64"
            | "cmpxchg_relaxed"
            | "xchg_relaxed"
    ) || name.starts_with("this_cpu_")
        || name.starts_with("__this_cpu_")
        || name.starts_with("raw_cpu_")
        || name == "per_cpu_ptr"
        || locks::asserts_held(name)
}

pub struct Walker<'u, 'i> {
    unit: &'u Unit<'i>,
    /// The structs whose members are looked for.
    targets: &'u [String],
    wrappers: &'u [String],
    macros: Vec<MacroUse>,
    /// Uses of the macros that print a diagnostic and of constants that
    /// name a rare event (read by the branch rules).
    marks: Vec<MacroUse>,
    /// Every access found, with the index of its struct in `targets`.
    pub sites: Vec<(usize, RawSite)>,
    /// Function name → its callees (calls off `unlikely()` branches and error paths).
    pub calls: BTreeMap<String, BTreeSet<String>>,
    /// Function name → the callees it calls only on a cold branch
    /// (`unlikely()`, an error path): what runs there is not hot either.
    pub cold_calls: BTreeMap<String, BTreeSet<String>>,
    /// Per struct of `targets`: whether it was seen (a member access or its definition).
    pub saw_struct: Vec<bool>,
    /// Every call off cold branches: caller, callee, the branches of the
    /// caller that enclose it.
    pub call_conds: Vec<(String, String, u32)>,
    /// Every call: caller, callee, the locks held there.
    pub call_sites: Vec<(String, String, Vec<String>)>,
    /// Calls through a pointer (`move_fn(lruvec, folio)`): the function
    /// and the locks held there.
    pub indirect: Vec<(String, Vec<String>)>,
    /// Functions handed to a call as a pointer (a callback, an ops table's
    /// functions, or a pointer parameter passed on).
    pub callbacks: Vec<Callback>,
    /// Calls through an ops member (`ops->cong_avoid(...)`).
    pub member_calls: Vec<MemberCall>,
    /// The functions global initializers install as members
    /// (`.cong_avoid = cubictcp_cong_avoid` in a `struct
    /// tcp_congestion_ops`): (struct, member, function).
    pub ops_members: Vec<(String, String, String)>,
    /// The functions whose address the unit takes (handed to a call,
    /// stored, named in a global's initializer or any expression other
    /// than a call), with their canonical type.
    pub address_taken: BTreeMap<String, String>,
    /// Functions marked `__init`, `__meminit`, `__exit` or `__cold`: never hot.
    pub cold_marked: BTreeSet<String>,
    /// The `static inline` functions of headers (defined in every unit that
    /// includes them, called or not).
    pub header_inline: BTreeSet<String>,
    /// The functions with external linkage (callable from other files).
    pub external: BTreeSet<String>,
    // The function being walked.
    function: String,
    held: Vec<String>,
    /// Locks taken by `guard()`: the block depth they end with.
    guards: Vec<(usize, String)>,
    depth: usize,
    loops: u32,
    conds: u32,
    /// The arms of `?:` around the walk: branches for the calls only.
    arm_calls: u32,
    cold: Option<String>,
    stack: Vec<Cursor>,
    /// Set by an `if` one arm of which leaves with a computed result while
    /// the other goes on ([`exit_with_result`]): `Some(None)` for a
    /// return, `Some(Some(label))` for a goto to a label that returns it.
    result_exit: Option<Option<String>>,
    /// The members (target, member) the walk is under a test that they
    /// differ from a value: a store to one of them here is on change.
    on_change: Vec<(usize, String)>,
    /// Set by `if (x->m == v) continue;` (an arm that leaves the block
    /// when the member holds the value): the members compared.
    change_rest: Vec<(usize, String)>,
    /// How deep the walk is in the current function's statements and
    /// expressions, and the first place it went past [`MAX_NESTING`].
    nesting: usize,
    pub too_deep: Option<(Place, String)>,
    /// What calling a function of the unit does to locks, read from its
    /// body ([`lock_effects`]) or learned from a caller.
    effects: HashMap<String, Effect>,
    /// The lock bookkeeping of the function being walked.
    fl: FnLocks,
    /// How many bodies are being read for their effect only (nothing
    /// recorded), and which.
    summarising: u32,
    in_progress: BTreeSet<String>,
    /// The variables of the function being walked that point into a
    /// struct of `targets` (`sk`, cast to a `struct tcp_sock *`), with its
    /// index: accesses through them (`sk->sk_rx_dst`,
    /// `inet_csk(sk)->icsk_ack`) are accesses of the struct's members.
    tvars: Vec<(String, usize)>,
    /// The definitions of the structs of `targets`, where a cast to one is seen.
    target_defs: Vec<Option<Cursor>>,
    /// Per function name: whether its body returns its parameter cast to
    /// another struct pointer (`inet_csk()`).
    cast_fns: HashMap<String, bool>,
    /// Per (target, struct): where the struct sits in the target, by value,
    /// when it sits there once (bit offset, member path).
    embeds: HashMap<(usize, String), Option<(i64, String)>>,
    /// Per (function, parameter): whether its body only reads through
    /// the pointer ([`param_use`]).
    param_reads: RefCell<HashMap<(String, u32), bool>>,
}

/// The most bodies read for their lock effect, one inside another (a
/// wrapper that calls a wrapper ...), before a call's effect is taken as none.
const MAX_SUMMARY_DEPTH: u32 = 8;

/// The deepest nesting of statements and expressions walked (parentheses,
/// operators, `if`s, blocks): deeper, the unit is an error naming the
/// place, not a stack overflow. Kernel code stays below a few hundred.
pub const MAX_NESTING: usize = 4096;

impl<'u, 'i> Walker<'u, 'i> {
    /// A walk of `unit` for the members of each struct named in `targets`.
    pub fn new(unit: &'u Unit<'i>, targets: &'u [String], wrappers: &'u [String]) -> Self {
        Walker {
            unit,
            targets,
            wrappers,
            macros: Vec::new(),
            marks: Vec::new(),
            sites: Vec::new(),
            calls: BTreeMap::new(),
            cold_calls: BTreeMap::new(),
            indirect: Vec::new(),
            callbacks: Vec::new(),
            saw_struct: vec![false; targets.len()],
            call_sites: Vec::new(),
            header_inline: BTreeSet::new(),
            external: BTreeSet::new(),
            cold_marked: BTreeSet::new(),
            member_calls: Vec::new(),
            call_conds: Vec::new(),
            ops_members: Vec::new(),
            address_taken: BTreeMap::new(),
            function: String::new(),
            held: Vec::new(),
            guards: Vec::new(),
            depth: 0,
            loops: 0,
            conds: 0,
            arm_calls: 0,
            cold: None,
            stack: Vec::new(),
            result_exit: None,
            on_change: Vec::new(),
            change_rest: Vec::new(),
            nesting: 0,
            too_deep: None,
            effects: HashMap::new(),
            fl: FnLocks::default(),
            summarising: 0,
            in_progress: BTreeSet::new(),
            tvars: Vec::new(),
            target_defs: vec![None; targets.len()],
            cast_fns: HashMap::new(),
            embeds: HashMap::new(),
            param_reads: RefCell::new(HashMap::new()),
        }
    }

    /// Walks every function definition of the unit (the file's and its
    /// headers' inline ones).
    pub fn run(&mut self) {
        let top = self.unit.cursor().children();
        for c in &top {
            if c.kind() == CXCursor_MacroExpansion {
                let name = c.spelling();
                if is_print_macro(&name) || is_rare_constant(&name) || is_static_key(&name) {
                    let (s, e) = c.extent();
                    self.marks.push(MacroUse {
                        file: s.file,
                        start: s.offset,
                        end: e.offset,
                        name: name.clone(),
                        lock: None,
                    });
                }
                if interesting_macro(&name) {
                    let (s, e) = c.extent();
                    let lock = if locks::asserts_held(&name) {
                        lock_from_tokens(&self.unit.tokens(*c))
                    } else {
                        None
                    };
                    self.macros.push(MacroUse {
                        file: s.file,
                        start: s.offset,
                        end: e.offset,
                        name,
                        lock,
                    });
                }
            }
        }
        for c in top {
            match c.kind() {
                CXCursor_FunctionDecl if c.is_definition() => self.function(c),
                CXCursor_StructDecl if c.is_definition() => {
                    let name = c.spelling();
                    if let Some(i) = self.targets.iter().position(|t| *t == name) {
                        self.saw_struct[i] = true;
                    }
                }
                CXCursor_VarDecl if c.is_definition() && c.in_main_file() => {
                    let record = c.record_of_type();
                    let mut budget = 4096u32;
                    self.initializer_functions(c, 0, &mut budget);
                    for (member, f) in designated_functions(&self.unit.tokens(c)) {
                        let owner = record
                            .and_then(|r| member_owner(r, &member))
                            .unwrap_or_default();
                        self.ops_members.push((owner, member, f));
                    }
                }
                _ => {}
            }
        }
    }

    fn function(&mut self, f: Cursor) {
        self.function = f.spelling();
        self.calls.entry(self.function.clone()).or_default();
        self.reset_function_state();
        if self.too_deep.is_some() {
            return;
        }
        if f.is_internal() && !f.in_main_file() {
            self.header_inline.insert(self.function.clone());
        }
        if !f.is_internal() {
            self.external.insert(self.function.clone());
        }
        let Some((body, header)) = self.body_and_header(f) else {
            return;
        };
        if header
            .iter()
            .any(|t| matches!(t.as_str(), "__init" | "__meminit" | "__exit" | "__cold"))
        {
            self.cold_marked.insert(self.function.clone());
        }
        let effect = self.walk_body(f, body, &header);
        // A body read earlier for its effect (a call before the
        // definition), or an effect a caller taught, is kept.
        let e = self.effects.entry(self.function.clone()).or_default();
        for a in effect.acquires {
            if !e.acquires.contains(&a) {
                e.acquires.push(a);
            }
        }
        for r in effect.releases {
            if !e.releases.contains(&r) {
                e.releases.push(r);
            }
        }
    }

    fn reset_function_state(&mut self) {
        self.tvars.clear();
        self.held.clear();
        self.guards.clear();
        self.depth = 0;
        self.loops = 0;
        self.conds = 0;
        self.arm_calls = 0;
        self.cold = None;
        self.stack.clear();
        self.nesting = 0;
    }

    /// A function definition's body and the tokens of its header (its
    /// annotations: `__init` and friends, `__must_hold(lock)`).
    fn body_and_header(&self, f: Cursor) -> Option<(Cursor, Vec<String>)> {
        let body = f
            .children()
            .into_iter()
            .find(|c| c.kind() == CXCursor_CompoundStmt)?;
        let header = f.tokens_until(self.unit, body);
        Some((body, header))
    }

    /// Walks a function's body from a reset state: its effect on its
    /// callers' locks ([`lock_effects`]).
    fn walk_body(&mut self, f: Cursor, body: Cursor, header: &[String]) -> Effect {
        for (i, t) in header.iter().enumerate() {
            if t == "__must_hold" {
                if let Some(l) = lock_from_tokens(&header[i..]) {
                    self.held.push(l);
                }
            }
        }
        let params: Vec<String> = f
            .children()
            .into_iter()
            .filter(|c| c.kind() == CXCursor_ParmDecl)
            .map(|c| c.spelling())
            .collect();
        self.fl = FnLocks::new(params, self.held.clone());
        if !self.walk(body) {
            self.record_return(None);
        }
        self.fl.effect()
    }

    /// The effect of calling `name` (declared by `decl`): known, or read
    /// now from its body when the unit defines it and it was not walked
    /// yet (nothing is recorded from that reading).
    fn effect_of(&mut self, name: &str, decl: Option<Cursor>) -> Option<Effect> {
        if let Some(e) = self.effects.get(name) {
            return Some(e.clone());
        }
        if self.summarising >= MAX_SUMMARY_DEPTH || self.in_progress.contains(name) {
            return None;
        }
        let def = decl?.definition()?;
        let (body, header) = self.body_and_header(def)?;
        let saved = (
            std::mem::replace(&mut self.function, name.to_string()),
            std::mem::take(&mut self.held),
            std::mem::take(&mut self.guards),
            self.depth,
            self.loops,
            self.conds,
            std::mem::take(&mut self.arm_calls),
            self.cold.take(),
            std::mem::take(&mut self.stack),
            self.nesting,
            std::mem::take(&mut self.fl),
            std::mem::take(&mut self.tvars),
        );
        self.reset_function_state();
        self.summarising += 1;
        self.in_progress.insert(name.to_string());
        let effect = self.walk_body(def, body, &header);
        self.in_progress.remove(name);
        self.summarising -= 1;
        (
            self.function,
            self.held,
            self.guards,
            self.depth,
            self.loops,
            self.conds,
            self.arm_calls,
            self.cold,
            self.stack,
            self.nesting,
            self.fl,
            self.tvars,
        ) = saved;
        self.effects.insert(name.to_string(), effect.clone());
        Some(effect)
    }

    /// The locks held where the function returns (`var`: what it returns),
    /// those a `guard()` releases on the way out aside.
    fn record_return(&mut self, var: Option<String>) {
        let held = self
            .held
            .iter()
            .filter(|h| !self.guards.iter().any(|(_, g)| g == *h))
            .cloned()
            .collect();
        self.fl.returns.push(Return {
            held,
            var,
            cold: self.cold.is_some(),
        });
    }

    /// The locks held here, for a record (the marks of locks released
    /// unheld left out).
    fn held_now(&self) -> Vec<String> {
        self.held
            .iter()
            .filter(|h| !lock_effects::is_mark(h))
            .cloned()
            .collect()
    }

    /// Where the walk's records stand (see [`Assigned`]).
    fn marks(&self) -> [usize; 5] {
        [
            self.sites.len(),
            self.call_sites.len(),
            self.indirect.len(),
            self.callbacks.len(),
            self.member_calls.len(),
        ]
    }

    /// Adds `lock` to everything recorded since `marks`.
    fn held_since(&mut self, marks: [usize; 5], lock: &str) {
        let add = |locks: &mut Vec<String>| {
            if !locks.iter().any(|l| l == lock) {
                locks.push(lock.to_string());
                locks.sort();
            }
        };
        for (_, s) in self.sites.iter_mut().skip(marks[0]) {
            add(&mut s.locks);
        }
        for (_, _, l) in self.call_sites.iter_mut().skip(marks[1]) {
            add(l);
        }
        for (_, l) in self.indirect.iter_mut().skip(marks[2]) {
            add(l);
        }
        for c in self.callbacks.iter_mut().skip(marks[3]) {
            add(&mut c.locks);
        }
        for m in self.member_calls.iter_mut().skip(marks[4]) {
            add(&mut m.locks);
        }
    }

    /// Takes `lock`, on the object of the variable `base` (empty: a
    /// wrapper's call took it).
    fn take_lock(&mut self, lock: String, base: String) {
        if !self.held.contains(&lock) {
            self.fl.bases.insert(lock.clone(), base);
            self.held.push(lock);
        }
    }

    /// Releases `lock` (None: the last one taken), on the object of the
    /// variable `object`. A lock not held here was held by the caller (a
    /// mark for the function's effect), or by a call that returned the
    /// object: that call took it, and what was recorded since held it.
    fn release_lock(&mut self, lock: Option<String>, object: Option<String>) {
        let Some(l) = lock else {
            if let Some(i) = self.held.iter().rposition(|h| !lock_effects::is_mark(h)) {
                self.held.remove(i);
            }
            return;
        };
        if self.held.contains(&l) {
            self.held.retain(|h| *h != l);
            return;
        }
        let source = object.and_then(|o| {
            self.fl
                .assigned
                .iter()
                .rev()
                .find(|a| a.var == o)
                .map(|a| (a.callee.clone(), a.visible, a.marks))
        });
        match source {
            Some((callee, visible, marks)) => {
                // A body out of sight: its other callers hold the lock
                // after it too.
                if !visible {
                    let e = self.effects.entry(callee).or_default();
                    let named = LockRef::Named(l.clone());
                    if !e.acquires.contains(&named) {
                        e.acquires.push(named);
                    }
                }
                if self.summarising == 0 {
                    self.held_since(marks, &l);
                }
            }
            None => {
                let mark = lock_effects::released_mark(&l);
                if !self.held.contains(&mark) {
                    self.held.push(mark);
                }
            }
        }
    }

    /// A call whose pointer result a variable keeps (`v = f(...)`,
    /// `struct lruvec *v = f(...)`): the variable.
    fn assigned_var(&self, call: Cursor) -> Option<String> {
        if !call.type_is_pointer() {
            return None;
        }
        let parent = self.stack.iter().rev().find(|a| {
            !matches!(
                a.kind(),
                CXCursor_ParenExpr | CXCursor_UnexposedExpr | CXCursor_CStyleCastExpr
            )
        })?;
        match parent.kind() {
            CXCursor_VarDecl => Some(parent.spelling()),
            // `=` (a comparison's type is an int; pointer + pointer is no C).
            CXCursor_BinaryOperator if parent.type_is_pointer() => {
                let lhs = through_parens(*parent.children().first()?)?;
                let var = lhs.kind() == CXCursor_DeclRefExpr
                    && lhs
                        .referenced()
                        .is_some_and(|d| matches!(d.kind(), CXCursor_VarDecl | CXCursor_ParmDecl));
                var.then(|| lhs.spelling())
            }
            _ => None,
        }
    }

    /// Walks a statement or expression; true when it ends its block
    /// (`return`, `goto`, `break`, `continue`). Past [`MAX_NESTING`] levels
    /// the walk stops and records where ([`Walker::too_deep`]).
    fn walk(&mut self, c: Cursor) -> bool {
        if self.too_deep.is_some() {
            return false;
        }
        if self.nesting >= MAX_NESTING {
            self.too_deep = Some((c.place(), self.function.clone()));
            return false;
        }
        self.nesting += 1;
        let ended = self.walk_node(c);
        self.nesting -= 1;
        ended
    }

    fn walk_node(&mut self, c: Cursor) -> bool {
        match c.kind() {
            // sizeof, alignof: not evaluated; nor is a static assertion
            // (container_of's type check `__same_type(*(ptr),
            // ((type *)0)->member)`).
            CXCursor_UnaryExpr | CXCursor_StaticAssert => false,
            CXCursor_IfStmt => self.if_stmt(c),
            CXCursor_CompoundStmt => {
                self.depth += 1;
                let block_cold = self.cold.clone();
                let mut ended = false;
                // `if (c) return r;` with a computed result: what follows
                // runs only when `c` is false, one branch down.
                // Each: the label it ends at (None: the block's end).
                let mut exits: Vec<Option<String>> = Vec::new();
                // A label the author names a slow path: what follows it is
                // one branch down, to the block's end.
                let mut slow_label = false;
                let changes = self.on_change.len();
                let kids = c.children();
                for (i, &s) in kids.iter().enumerate() {
                    if s.kind() == CXCursor_LabelStmt {
                        // The code at a label a goto with a result jumps
                        // to runs on that path too.
                        let name = s.spelling();
                        let back = exits
                            .iter()
                            .filter(|e| e.as_deref() == Some(name.as_str()))
                            .count();
                        exits.retain(|e| e.as_deref() != Some(name.as_str()));
                        self.conds -= back as u32;
                        if !slow_label && is_slow_path_label(&name) {
                            slow_label = true;
                            self.conds += 1;
                        }
                        ended = false;
                        // `err:`, `fail:`, `out_free:` ... : what follows is an error path.
                        self.cold = if is_error_label(&s.spelling()) {
                            Some("error path".into())
                        } else {
                            block_cold.clone()
                        };
                    }
                    self.assertions(s);
                    self.result_exit = None;
                    self.change_rest.clear();
                    if self.walk(s) {
                        ended = true;
                    }
                    if through_labels(s).kind() == CXCursor_IfStmt {
                        if let Some(exit) = self.result_exit.take() {
                            let later = |l: &String| {
                                kids[i + 1..]
                                    .iter()
                                    .any(|k| k.kind() == CXCursor_LabelStmt && k.spelling() == *l)
                            };
                            self.conds += 1;
                            exits.push(exit.filter(later));
                        }
                        let rest = std::mem::take(&mut self.change_rest);
                        self.on_change.extend(rest);
                    }
                }
                self.conds -= exits.len() as u32 + u32::from(slow_label);
                self.on_change.truncate(changes);
                // A guard() releases its lock where its block ends.
                let depth = self.depth;
                let ending: Vec<String> = self
                    .guards
                    .iter()
                    .filter(|(d, _)| *d == depth)
                    .map(|(_, l)| l.clone())
                    .collect();
                self.guards.retain(|(d, _)| *d != depth);
                self.held.retain(|h| !ending.contains(h));
                self.cold = block_cold;
                self.depth -= 1;
                ended
            }
            // A loop leaves the locks as it found them: a body that drops
            // and retakes a lock (cond_resched) or leaves by goto changes nothing after it.
            // `do { ... } while (0)` is a macro's block, not a loop.
            CXCursor_DoStmt if c.children().last().and_then(|k| k.eval_int()) == Some(0) => {
                self.children(c);
                false
            }
            CXCursor_ForStmt | CXCursor_WhileStmt | CXCursor_DoStmt => {
                let before = self.held.clone();
                self.loops += 1;
                self.children(c);
                self.loops -= 1;
                self.held = before;
                false
            }
            // `c ? a : b` picking a call is an `if`: the calls in its arms
            // are one branch down, however `?:`s nest
            // (`INDIRECT_CALL_2(f, tcp_v4_rcv, udp_rcv, skb)` picks one of
            // its expected calls by two tests); `c ?: b`'s second arm too.
            // A value it picks is read where the expression is
            // (`hoplimit == 0 ? READ_ONCE(sysctl) : hoplimit`): no branch
            // for the sites.
            CXCursor_ConditionalOperator => {
                let kids = c.children();
                self.stack.push(c);
                for (i, k) in kids.iter().enumerate() {
                    let arm = u32::from(i > 0);
                    self.arm_calls += arm;
                    self.walk(*k);
                    self.arm_calls -= arm;
                }
                self.stack.pop();
                false
            }
            CXCursor_SwitchStmt => {
                self.conds += 1;
                self.children(c);
                self.conds -= 1;
                false
            }
            CXCursor_ReturnStmt => {
                self.children(c);
                let var = c.children().first().and_then(|e| first_variable(*e));
                self.record_return(var);
                true
            }
            CXCursor_GotoStmt | CXCursor_BreakStmt | CXCursor_ContinueStmt => {
                self.children(c);
                true
            }
            CXCursor_MemberRefExpr => {
                self.member(c);
                self.children(c);
                false
            }
            CXCursor_CallExpr => {
                self.note_target_cast(c);
                self.children(c);
                self.call(c);
                false
            }
            CXCursor_CStyleCastExpr | CXCursor_StmtExpr => {
                self.note_target_cast(c);
                self.children(c);
                false
            }
            CXCursor_BinaryOperator => {
                self.note_stored_function(c);
                self.children(c);
                false
            }
            CXCursor_DeclRefExpr => {
                self.note_address_taken(c);
                self.children(c);
                false
            }
            _ => {
                self.children(c);
                false
            }
        }
    }

    fn children(&mut self, c: Cursor) {
        self.stack.push(c);
        for k in c.children() {
            self.walk(k);
        }
        self.stack.pop();
    }

    /// `lockdep_assert_held()` at the start of statement `s`: the lock is held from here on.
    fn assertions(&mut self, s: Cursor) {
        if self.macros.iter().all(|m| m.lock.is_none()) {
            return;
        }
        let p = s.place();
        let lock = self
            .macros
            .iter()
            .find(|m| {
                m.lock.is_some() && m.file == p.file && m.start <= p.offset && p.offset <= m.end
            })
            .and_then(|m| m.lock.clone());
        if let Some(l) = lock {
            if !self.fl.asserted.contains(&l) {
                self.fl.asserted.push(l.clone());
            }
            if !self.held.contains(&l) {
                self.held.push(l);
            }
        }
    }

    fn if_stmt(&mut self, c: Cursor) -> bool {
        let kids = c.children();
        let Some(cond) = kids.first() else {
            return false;
        };
        self.stack.push(c);
        let mark = self.sites.len();
        self.walk_condition(*cond, 0);
        // `x->m != v` / `x->m == v`: the members the test reads.
        let differs = equality_test(self.unit, *cond);
        let compared: Vec<(usize, String)> = match differs {
            Some(_) => self.sites[mark..]
                .iter()
                .filter(|(_, r)| r.kind == Kind::Read)
                .map(|(t, r)| (*t, r.member.clone()))
                .collect(),
            None => Vec::new(),
        };
        let expect = expectation(self.unit, *cond)
            .or_else(|| self.tests_rare_event(*cond))
            .or_else(|| super::set_rarely::expectation(self.unit, *cond));
        // A branch that prints a diagnostic (`pr_debug("Leak ...")`,
        // `net_dbg_ratelimited()`, `WARN()`) is an error or debug path:
        // the other one is expected.
        // So is one that drops or fails by a constant it hands over or
        // stores (`kfree_skb_reason(skb, SKB_DROP_REASON_IP_NOPROTO)`).
        let expect = expect.or_else(|| {
            let reports = |b: Option<&Cursor>| b.and_then(|b| self.reports_directly(*b));
            match (reports(kids.get(1)), reports(kids.get(2))) {
                (Some(why), None) => Some((false, why)),
                (None, Some(why)) => Some((true, why)),
                _ => None,
            }
        });
        let why = expect.as_ref().map(|(_, w)| w.clone()).unwrap_or_default();
        let expect = expect.map(|(v, _)| v);
        let before = self.held.clone();
        let cold_before = self.cold.clone();
        let branch =
            |w: &mut Self, b: Option<&Cursor>, cold: bool, changed: bool| -> (bool, Vec<String>) {
                let changes = w.on_change.len();
                if changed {
                    w.on_change.extend(compared.iter().cloned());
                }
                w.held = before.clone();
                w.cold = if cold {
                    Some(why.clone())
                } else {
                    cold_before.clone()
                };
                w.conds += 1;
                let ended = b.is_some_and(|b| w.walk(*b));
                w.conds -= 1;
                w.on_change.truncate(changes);
                (ended, w.held.clone())
            };
        let (t_end, t_held) = branch(
            self,
            kids.get(1),
            expect == Some(false),
            differs == Some(true),
        );
        let (e_end, e_held) = branch(
            self,
            kids.get(2),
            expect == Some(true),
            differs == Some(false),
        );
        self.cold = cold_before;
        self.stack.pop();
        // One arm returns a computed result and the other goes on: the
        // code after the `if` is the other arm's, one branch down (a
        // guard that returns a constant, `return -EINVAL;`, `return;`,
        // or an arm the condition expects not taken, is not).
        let exits = |b: Option<&Cursor>| b.and_then(|b| exit_with_result(*b));
        self.result_exit = match (t_end, e_end) {
            _ if expect.is_some() => None,
            (true, false) => exits(kids.get(1)),
            (false, true) => exits(kids.get(2)),
            _ => None,
        };
        // `if (x->m == v) continue;`: the rest of the block runs when it differs.
        self.change_rest = if differs == Some(false) && t_end && !e_end {
            compared
        } else {
            Vec::new()
        };
        self.held = match (t_end, e_end) {
            (true, true) => before,
            (true, false) => e_held,
            (false, true) => t_held,
            // Both branches go on: a lock either took is taken after the
            // `if` (the kernel pairs `if (x) lock(); ... if (x) unlock();`),
            // one either released is released.
            (false, false) => {
                let mut held: Vec<String> = t_held
                    .iter()
                    .filter(|l| e_held.contains(l) || !before.contains(l))
                    .cloned()
                    .collect();
                for l in e_held {
                    if !before.contains(&l) && !held.contains(&l) {
                        held.push(l);
                    }
                }
                held
            }
        };
        t_end && e_end
    }

    /// Walks an `if` condition: an operand of `&&` or `||` runs only as
    /// the operands before it decide, one branch more for each (`if (syn
    /// && !estab && READ_ONCE(sysctl))`: the read sits under two). The
    /// operands the condition chains.
    fn walk_condition(&mut self, c: Cursor, depth: u32) -> u32 {
        if depth < 16 {
            match c.kind() {
                CXCursor_ParenExpr | CXCursor_UnexposedExpr => {
                    if let [inner] = c.children().as_slice() {
                        self.stack.push(c);
                        let n = self.walk_condition(*inner, depth + 1);
                        self.stack.pop();
                        return n;
                    }
                }
                CXCursor_BinaryOperator => {
                    let kids = c.children();
                    if let [l, r] = kids.as_slice() {
                        let mut between = self.unit.tokens_between(*l, *r);
                        if between.len() > 1 {
                            between.pop(); // the right operand's first token
                        }
                        if let Some(op) = logical_operator(&between) {
                            self.stack.push(c);
                            let left = self.walk_condition(*l, depth + 1);
                            self.conds += left;
                            let cold_before = self.cold.clone();
                            let static_key = self.mark_within(*l, |m| is_static_key(&m.name));
                            if self.cold.is_none() && static_key.is_none() {
                                self.cold = rare_right_operand(self.unit, op, *l);
                            }
                            let right = self.walk_condition(*r, depth + 1);
                            self.cold = cold_before;
                            self.conds -= left;
                            self.stack.pop();
                            return left + right;
                        }
                    }
                }
                _ => {}
            }
        }
        self.walk(c);
        1
    }

    /// A macro use of `marks` that `pred` accepts within `c`'s extent.
    fn mark_within(&self, c: Cursor, pred: impl Fn(&MacroUse) -> bool) -> Option<&MacroUse> {
        if self.marks.is_empty() {
            return None;
        }
        let (s, e) = c.extent();
        self.marks
            .iter()
            .find(|m| m.file == s.file && s.offset <= m.start && m.start <= e.offset && pred(m))
    }

    /// [`rare_constant`] on a condition that names such a constant, as a
    /// macro (`TCPCB_LOST`) or an enum constant (`TCP_CA_Loss`): only
    /// then are its tokens read.
    fn tests_rare_event(&self, cond: Cursor) -> Option<(bool, String)> {
        let named = self
            .mark_within(cond, |m| is_rare_constant(&m.name))
            .is_some()
            || rare_enum_constant(cond, 0);
        if !named {
            return None;
        }
        rare_constant(&self.unit.tokens(cond))
    }

    /// Whether a branch is a short error or diagnostic block, and why: at
    /// most three statements, one of them a use of a macro that prints a
    /// diagnostic ([`is_print_macro`]) or an expression that hands over or
    /// stores an enum constant whose name says an error or a drop
    /// ([`super::slow::error_constant`]: `kfree_skb_reason(skb,
    /// SKB_DROP_REASON_IP_NOPROTO)`, `reason = SKB_DROP_REASON_...`; a
    /// nested `if` or loop is no such expression). A longer block that
    /// prints or drops somewhere does work before it (a transmit that
    /// reports a busy queue at its end).
    fn reports_directly(&self, branch: Cursor) -> Option<String> {
        let statements = if branch.kind() == CXCursor_CompoundStmt {
            branch.children()
        } else {
            vec![branch]
        };
        if statements.len() > 3 {
            return None;
        }
        let prints = statements.iter().any(|s| {
            let start = s.extent().0;
            self.marks
                .iter()
                .any(|m| m.file == start.file && m.start == start.offset && is_print_macro(&m.name))
        });
        if prints {
            return Some("a branch that prints a diagnostic".into());
        }
        statements.iter().find_map(|s| {
            let c = error_enum_constant(*s, 0)?;
            Some(format!(
                "a branch that hands over {c}, an error or a drop by its name"
            ))
        })
    }

    fn call(&mut self, c: Cursor) {
        let name = c.spelling();
        let decl = c.referenced().filter(|d| d.kind() == CXCursor_FunctionDecl);
        let direct = decl.is_some();
        let record = self.summarising == 0;
        if !direct && record {
            self.indirect.push((self.function.clone(), self.held_now()));
            // `icsk->icsk_ca_ops->cong_avoid(...)`: a call through an ops member.
            let member = c
                .children()
                .first()
                .and_then(|k| through_parens(*k))
                .filter(|k| k.kind() == CXCursor_MemberRefExpr);
            if let Some(m) = member {
                let field = m.referenced().filter(|f| f.kind() == CXCursor_FieldDecl);
                let record = field.and_then(named_record_of_field).unwrap_or_default();
                let fn_type = field.and_then(|f| f.type_keys().1).unwrap_or_default();
                self.member_calls.push(MemberCall {
                    caller: self.function.clone(),
                    record,
                    member: m.spelling(),
                    locks: self.held_now(),
                    cold: self.cold.is_some(),
                    fn_type,
                });
            }
        } else if record {
            // Functions handed over as pointers, run by the callee.
            for arg in c.children().into_iter().skip(1) {
                for handed in handed_functions(arg) {
                    self.callbacks.push(Callback {
                        caller: self.function.clone(),
                        callee: name.clone(),
                        handed,
                        locks: self.held_now(),
                        cold: self.cold.is_some(),
                    });
                }
            }
        }
        if name.is_empty() {
            return;
        }
        if !record {
            // Only the locks.
        } else if self.cold.is_some() {
            self.cold_calls
                .entry(self.function.clone())
                .or_default()
                .insert(name.clone());
        } else {
            self.calls
                .entry(self.function.clone())
                .or_default()
                .insert(name.clone());
            self.call_conds.push((
                self.function.clone(),
                name.clone(),
                self.conds + u32::from(self.arm_calls > 0),
            ));
        }
        if record {
            self.call_sites
                .push((self.function.clone(), name.clone(), self.held_now()));
        }
        let args = c.children();
        let first = args.get(1).copied();
        if let Some(l) = locks::asserts_by_call(&name) {
            // sock_owned_by_me(sk): the lock is held from here on.
            if !self.fl.asserted.iter().any(|h| h == l) {
                self.fl.asserted.push(l.to_string());
            }
            if !self.held.iter().any(|h| h == l) {
                self.held.push(l.to_string());
            }
        } else if locks::is_guard(&name) {
            // guard(spinlock)(&x->lock): held to the end of the block;
            // scoped_guard(): to the end of its for statement.
            if let Some(l) = first.and_then(lock_name) {
                if !self.held.contains(&l) {
                    self.held.push(l.clone());
                    self.guards.push((self.depth, l));
                }
            }
        } else if let Some(named) = locks::acquires(&name, self.wrappers) {
            let l = named
                .map(str::to_string)
                .or_else(|| first.and_then(lock_name))
                .unwrap_or_else(|| name.clone());
            let base = first.and_then(first_variable).unwrap_or_else(|| "?".into());
            self.take_lock(l, base);
        } else if let Some(named) = locks::releases(&name, self.wrappers) {
            let l = named
                .map(str::to_string)
                .or_else(|| first.and_then(lock_name));
            self.release_lock(l, first.and_then(first_variable));
        } else if let Some(e) = direct.then(|| self.effect_of(&name, decl)).flatten() {
            // A wrapper by its body: released first, then taken.
            let arg_lock = |r: &LockRef| -> Option<(String, Option<String>)> {
                match r {
                    LockRef::Param(i) => {
                        let a = args.get(i + 1).copied()?;
                        Some((lock_name(a)?, first_variable(a)))
                    }
                    LockRef::Named(n) => Some((
                        n.clone(),
                        args.iter().skip(1).find_map(|a| first_variable(*a)),
                    )),
                }
            };
            for r in &e.releases {
                if let Some((l, object)) = arg_lock(r) {
                    self.release_lock(Some(l), object);
                }
            }
            for r in &e.acquires {
                if let Some((l, _)) = arg_lock(r) {
                    self.take_lock(l, String::new());
                }
            }
        }
        // The call's result kept in a variable: if the function releases
        // a lock on it later without taking it, this call took it.
        if let Some(var) = self.assigned_var(c) {
            let marks = self.marks();
            self.fl.assigned.push(Assigned {
                var,
                callee: name,
                visible: decl.and_then(|d| d.definition()).is_some(),
                marks,
            });
        }
    }

    /// `dst->output = ip_output;`, `WRITE_ONCE(sk->sk_data_ready, f)`: a
    /// function stored at run time into a member of a struct, which a
    /// call through that member may then run, as a global initializer's
    /// `.output = ip_output` does. An assignment's type is its left
    /// side's (a function pointer), a comparison's an int: no token needed
    /// inside macros.
    fn note_stored_function(&mut self, c: Cursor) {
        if self.summarising > 0 || !c.type_is_function_pointer() {
            return;
        }
        let kids = c.children();
        let [lhs, rhs] = kids.as_slice() else {
            return;
        };
        let Some(f) = stored_function(*rhs) else {
            return;
        };
        let Some(m) = stored_member(*lhs) else {
            return;
        };
        let Some(field) = m.referenced().filter(|d| d.kind() == CXCursor_FieldDecl) else {
            return;
        };
        let record = named_record_of_field(field).unwrap_or_default();
        self.ops_members.push((record, m.spelling(), f));
    }

    /// A function named anywhere but as the callee of a call (`f`, `&f`,
    /// an argument, a store, `INDIRECT_CALL_2(p->func, ip_rcv, ...)`'s
    /// comparison): its address is taken, so a pointer of its type may
    /// hold it.
    fn note_address_taken(&mut self, c: Cursor) {
        if self.summarising > 0 {
            return;
        }
        let Some(d) = c.referenced().filter(|d| d.kind() == CXCursor_FunctionDecl) else {
            return;
        };
        // The callee of a call: `f(...)` is the call's first child,
        // through implicit casts and parentheses.
        let mut child = c;
        for anc in self.stack.iter().rev() {
            match anc.kind() {
                CXCursor_UnexposedExpr | CXCursor_ParenExpr => child = *anc,
                CXCursor_CallExpr => {
                    if anc.children().first().is_some_and(|k| k.same(child)) {
                        return;
                    }
                    break;
                }
                _ => break,
            }
        }
        self.note_function_type(d);
    }

    fn note_function_type(&mut self, d: Cursor) {
        self.address_taken
            .entry(d.spelling())
            .or_insert_with(|| d.type_keys().0);
    }

    /// The functions a global's initializer names, a few levels deep and
    /// a few thousand nodes at most.
    fn initializer_functions(&mut self, c: Cursor, depth: u32, budget: &mut u32) {
        if depth > 4 {
            return;
        }
        for k in c.children() {
            if *budget == 0 {
                return;
            }
            *budget -= 1;
            if k.kind() == CXCursor_DeclRefExpr {
                if let Some(f) = k.referenced().filter(|f| f.kind() == CXCursor_FunctionDecl) {
                    self.note_function_type(f);
                    continue;
                }
            }
            self.initializer_functions(k, depth + 1, budget);
        }
    }

    /// The record of a struct of `targets` this field belongs to (through
    /// anonymous members), with its index, if any.
    fn target_record(&self, field: Cursor) -> Option<(Cursor, usize)> {
        let mut p = field.semantic_parent()?;
        while matches!(p.kind(), CXCursor_StructDecl | CXCursor_UnionDecl) && p.is_anonymous() {
            p = p.semantic_parent()?;
        }
        if !matches!(p.kind(), CXCursor_StructDecl) {
            return None;
        }
        let name = p.spelling();
        let i = self.targets.iter().position(|t| *t == name)?;
        Some((p, i))
    }

    fn member(&mut self, c: Cursor) {
        if self.summarising > 0 {
            return;
        }
        let Some(field) = c.referenced().filter(|f| f.kind() == CXCursor_FieldDecl) else {
            return;
        };
        // `((struct T *)0)->member`: a member of no object, named for its
        // type or offset (`typeof`, a type check, `offsetof` by hand); no
        // code reads it.
        if null_based(c) {
            return;
        }
        let direct = self.target_record(field);
        if let Some((record, target)) = direct {
            self.saw_struct[target] = true;
            if let Some(bits) = record.member_bit_offset(&field.spelling()) {
                self.record_member(c, field, target, bits, None);
            }
        }
        if !self.tvars.is_empty() {
            self.embedded_member(c, field, direct.map(|(_, t)| t));
        }
    }

    /// An access of a member of a struct that a target embeds, through a
    /// variable that points into the target (`sk->sk_rx_dst` and
    /// `inet_csk(sk)->icsk_ack` where `sk` is cast to a `struct tcp_sock
    /// *`): an access of the target's member that holds it.
    fn embedded_member(&mut self, c: Cursor, field: Cursor, direct: Option<usize>) {
        let Some(var) = c.children().first().and_then(|b| self.object_variable(*b)) else {
            return;
        };
        let Some(record) = named_record(field) else {
            return;
        };
        let rname = record.spelling();
        let targets: Vec<usize> = self
            .tvars
            .iter()
            .filter(|(v, t)| *v == var && Some(*t) != direct && self.targets[*t] != rname)
            .map(|(_, t)| *t)
            .collect();
        for t in targets {
            let Some((at, path)) = self.embedding(t, &rname) else {
                continue;
            };
            let Some(bits) = record.member_bit_offset(&field.spelling()) else {
                continue;
            };
            self.saw_struct[t] = true;
            self.record_member(c, field, t, at + bits, Some(path));
        }
    }

    /// The variable an access's object expression names: `v`, `(T *)v`,
    /// or a cast function's call on it (`inet_csk(v)`).
    fn object_variable(&mut self, base: Cursor) -> Option<String> {
        let mut b = base;
        loop {
            b = through_parens(b)?;
            match b.kind() {
                CXCursor_CStyleCastExpr => b = *b.children().last()?,
                CXCursor_CallExpr => {
                    let decl = b
                        .referenced()
                        .filter(|d| d.kind() == CXCursor_FunctionDecl)?;
                    if !self.is_cast_function(decl) {
                        return None;
                    }
                    b = *b.children().get(1)?;
                }
                CXCursor_DeclRefExpr => {
                    let d = b.referenced()?;
                    return matches!(d.kind(), CXCursor_VarDecl | CXCursor_ParmDecl)
                        .then(|| b.spelling());
                }
                _ => return None,
            }
        }
    }

    /// Whether a function's body is one `return` of its parameter cast to
    /// a struct pointer (`return (struct inet_connection_sock *)sk;`).
    fn is_cast_function(&mut self, decl: Cursor) -> bool {
        let name = decl.spelling();
        if let Some(&v) = self.cast_fns.get(&name) {
            return v;
        }
        let v = (|| {
            let def = decl.definition()?;
            let body = def
                .children()
                .into_iter()
                .find(|c| c.kind() == CXCursor_CompoundStmt)?;
            let stmts = body.children();
            let [ret] = stmts.as_slice() else {
                return None;
            };
            if ret.kind() != CXCursor_ReturnStmt {
                return None;
            }
            let cast = through_parens(*ret.children().first()?)?;
            if cast.kind() != CXCursor_CStyleCastExpr || cast.record_of_type().is_none() {
                return None;
            }
            let arg = through_parens(*cast.children().last()?)?;
            let parm = arg.kind() == CXCursor_DeclRefExpr
                && arg
                    .referenced()
                    .is_some_and(|d| d.kind() == CXCursor_ParmDecl);
            parm.then_some(())
        })()
        .is_some();
        self.cast_fns.insert(name, v);
        v
    }

    /// A cast of one variable to a pointer to a target (`(struct tcp_sock
    /// *)sk`, `container_of(sk, struct tcp_sock, ...)`, a cast function's
    /// call): the variable points into the target from here on.
    fn note_target_cast(&mut self, c: Cursor) {
        if self.summarising > 0 || self.targets.is_empty() || !c.type_is_pointer() {
            return;
        }
        let Some(rec) = c.record_of_type() else {
            return;
        };
        let name = rec.spelling();
        let Some(t) = self.targets.iter().position(|x| *x == name) else {
            return;
        };
        let var = if c.kind() == CXCursor_CallExpr {
            let Some(decl) = c.referenced().filter(|d| d.kind() == CXCursor_FunctionDecl) else {
                return;
            };
            if !self.is_cast_function(decl) {
                return;
            }
            c.children().get(1).and_then(|a| self.object_variable(*a))
        } else {
            cast_variable(c)
        };
        let Some(var) = var else {
            return;
        };
        if self.target_defs[t].is_none() {
            self.target_defs[t] = Some(rec);
        }
        if !self.tvars.iter().any(|(v, x)| *v == var && *x == t) {
            self.tvars.push((var, t));
        }
    }

    /// Where the struct named `inner` sits by value in target `t`, when it
    /// sits there once: its bit offset and member path.
    fn embedding(&mut self, t: usize, inner: &str) -> Option<(i64, String)> {
        let key = (t, inner.to_string());
        if let Some(v) = self.embeds.get(&key) {
            return v.clone();
        }
        let mut found = Vec::new();
        if let Some(def) = self.target_defs[t] {
            find_embedded(def, inner, 0, String::new(), 0, &mut found);
        }
        let v = match found.as_slice() {
            [one] => Some(one.clone()),
            _ => None,
        };
        self.embeds.insert(key, v.clone());
        v
    }

    /// Records an access of target `target`'s member at `bits`; `prefix`:
    /// the path to the embedded struct the field belongs to.
    fn record_member(
        &mut self,
        c: Cursor,
        field: Cursor,
        target: usize,
        bits: i64,
        prefix: Option<String>,
    ) {
        let name = field.spelling();
        let in_store = || {
            self.innermost_macro(&c.place())
                .is_some_and(|m| matches!(m, "WRITE_ONCE" | "smp_store_release"))
        };
        let Some((kind, how, member)) =
            site_kind::access(self.unit, &self.stack, c, name, &in_store, &|d, i| {
                self.reads_through(d, i)
            })
        else {
            return; // in sizeof / typeof
        };
        let member = match prefix {
            Some(p) => format!("{p}.{member}"),
            None => member,
        };
        let p = c.place();
        let (kind, how) = self.macro_form(&p, kind, how);
        let mut held = self.held_now();
        // A lock word handed to any function (`compact_unlock_should_abort(&zone->lock, ...)`)
        // is operated by that function as a lock.
        let lock_word = kind.writes() && is_lock_type(&field.type_name());
        let op = locks::acquires(&how, self.wrappers).or(locks::releases(&how, self.wrappers));
        if lock_word || how == "spinlock_check" || locks::is_guard(&how) || op.is_some() {
            // The lock word itself is written by whoever holds it; an
            // owner-lock call's object (`lock_sock(&c->sk)`) by its lock.
            let lock = match op {
                Some(Some(l)) => l.to_string(),
                _ => member
                    .split(['.', '['])
                    .next()
                    .unwrap_or(&member)
                    .to_string(),
            };
            held.push(lock);
        }
        held.sort();
        held.dedup();
        // A value read only to be printed (`seq_printf(m, "%s", zone->name)`,
        // `pr_info()`) is a report, not work: cold wherever it runs.
        let printed = kind == Kind::Read && self.innermost_call().is_some_and(|n| is_report(&n));
        let cold_branch = match &self.cold {
            Some(c) => Some(c.clone()),
            None if printed => Some("printed".to_string()),
            None => None,
        };
        let on_change = kind == Kind::Write
            && self
                .on_change
                .iter()
                .any(|(t, m)| *t == target && *m == member);
        self.sites.push((
            target,
            RawSite {
                offset: (bits / 8) as u64,
                member,
                file: p.file,
                line: p.line,
                function: self.function.clone(),
                kind,
                how,
                locks: held,
                cold_branch,
                loop_depth: self.loops,
                conds: self.conds,
                accessor: context_accessor(c),
                on_change,
                drains: self.drains(field),
            },
        ));
    }

    /// Whether the access of `field` being recorded is part of an update
    /// that only takes back what the member holds, down to zero: `x->m -=
    /// min(x->m, d)` (its store, and the read inside `min`). Where the
    /// member holds zero, it changes nothing.
    fn drains(&self, field: Cursor) -> bool {
        let Some(op) = self
            .stack
            .iter()
            .rev()
            .find(|a| a.kind() == CXCursor_CompoundAssignOperator)
        else {
            return false;
        };
        let [lhs, _] = op.children()[..] else {
            return false;
        };
        let Some(l) = through_parens(lhs) else {
            return false;
        };
        let same =
            l.kind() == CXCursor_MemberRefExpr && l.referenced().is_some_and(|f| f.same(field));
        if !same {
            return false;
        }
        // `LHS -= min(... LHS ...)`, as the code spells it.
        let lt = self.unit.tokens(lhs);
        let ot = self.unit.tokens(*op);
        let Some(rest) = ot.strip_prefix(lt.as_slice()) else {
            return false;
        };
        !lt.is_empty()
            && rest.first().is_some_and(|t| t == "-=")
            && rest
                .get(1)
                .is_some_and(|t| matches!(t.as_str(), "min" | "min_t" | "umin"))
            && rest.windows(lt.len()).any(|w| w == lt.as_slice())
    }

    /// Whether the function `decl` only reads through its `i`-th parameter.
    fn reads_through(&self, decl: Cursor, i: u32) -> bool {
        let key = (decl.spelling(), i);
        if let Some(&v) = self.param_reads.borrow().get(&key) {
            return v;
        }
        let v = param_use::only_reads(self.unit, decl, i, 0);
        self.param_reads.borrow_mut().insert(key, v);
        v
    }

    /// The name of the innermost call whose arguments hold the walk's position.
    fn innermost_call(&self) -> Option<String> {
        self.stack
            .iter()
            .rev()
            .find(|c| c.kind() == CXCursor_CallExpr)
            .map(|c| c.spelling())
    }

    fn innermost_macro(&self, p: &Place) -> Option<&str> {
        self.macros
            .iter()
            .filter(|m| {
                m.lock.is_none() && m.file == p.file && m.start <= p.offset && p.offset <= m.end
            })
            .min_by_key(|m| m.end - m.start)
            .map(|m| m.name.as_str())
    }

    /// The innermost macro the analysis reads around `p`, which names the form.
    fn macro_form(&self, p: &Place, kind: Kind, how: String) -> (Kind, String) {
        let Some(n) = self.innermost_macro(p) else {
            return (kind, how);
        };
        let percpu = n.starts_with("this_cpu_")
            || n.starts_with("__this_cpu_")
            || n.starts_with("raw_cpu_")
            || n == "per_cpu_ptr";
        // A pointer member read on the way to the operand
        // (`__this_cpu_add(pn->stats_percpu->state[i], v)`: `stats_percpu`
        // is read; the per-CPU copy it points to is what the operation
        // writes) keeps its read.
        let base_pointer = matches!(how.as_str(), "deref" | "index");
        if percpu && !base_pointer {
            // this_cpu_ptr(p), per_cpu_ptr(p, cpu): p is read, its per-CPU copy used.
            let k = if n.ends_with("_read") || n.ends_with("_ptr") {
                Kind::Read
            } else if n.ends_with("_write") {
                Kind::Write
            } else {
                Kind::Rmw
            };
            return (k, n.to_string());
        }
        if n.contains("xchg") {
            // The exchanged object (by address, or an asm operand) is
            // read and written; a value argument is read.
            let on_it = matches!(how.as_str(), "asm" | "address taken");
            return (if on_it { Kind::Rmw } else { kind }, n.to_string());
        }
        if how == "plain" || how == "volatile" || how == "asm" {
            return (kind, n.to_string());
        }
        (kind, how)
    }
}

/// The named struct or union a field belongs to (through anonymous members).
fn named_record(field: Cursor) -> Option<Cursor> {
    let mut p = field.semantic_parent()?;
    while matches!(p.kind(), CXCursor_StructDecl | CXCursor_UnionDecl) && p.is_anonymous() {
        p = p.semantic_parent()?;
    }
    matches!(p.kind(), CXCursor_StructDecl | CXCursor_UnionDecl).then_some(p)
}

/// The one variable a cast or `container_of()` expression converts (`(T
/// *)v`, `({ void *__mptr = (void *)(v); ((T *)(__mptr - ...)); })`):
/// every variable it names but those it declares is `v`, and `v` is a
/// cast's operand. At most a few hundred nodes are looked at.
fn cast_variable(c: Cursor) -> Option<String> {
    let mut declared = BTreeSet::new();
    let mut named = BTreeSet::new();
    let mut cast_operand = BTreeSet::new();
    let mut todo = vec![(c, false)];
    let mut budget = 256u32;
    while let Some((k, under_cast)) = todo.pop() {
        budget = budget.checked_sub(1)?;
        match k.kind() {
            CXCursor_VarDecl => {
                declared.insert(k.spelling());
            }
            CXCursor_DeclRefExpr => {
                let var = k
                    .referenced()
                    .is_some_and(|d| matches!(d.kind(), CXCursor_VarDecl | CXCursor_ParmDecl));
                if var {
                    named.insert(k.spelling());
                    if under_cast {
                        cast_operand.insert(k.spelling());
                    }
                }
            }
            // sizeof, typeof, offsetof: not the object.
            CXCursor_UnaryExpr => continue,
            _ => {}
        }
        let cast = k.kind() == CXCursor_CStyleCastExpr;
        let keep = matches!(k.kind(), CXCursor_ParenExpr | CXCursor_UnexposedExpr);
        for kid in k.children() {
            todo.push((kid, cast || (keep && under_cast)));
        }
    }
    let free: Vec<&String> = named.iter().filter(|n| !declared.contains(*n)).collect();
    match free.as_slice() {
        [v] if cast_operand.contains(*v) => Some((*v).clone()),
        _ => None,
    }
}

/// The places where the struct named `inner` sits by value in `record`
/// (its members, their members, a few levels down): bit offset and path.
fn find_embedded(
    record: Cursor,
    inner: &str,
    base: i64,
    path: String,
    depth: u32,
    out: &mut Vec<(i64, String)>,
) {
    if depth > 5 || out.len() > 1 {
        return;
    }
    for f in record.children() {
        if f.kind() != CXCursor_FieldDecl || f.type_is_pointer() || f.type_is_array() {
            continue;
        }
        let Some(r) = f.record_of_type() else {
            continue;
        };
        let off = f.field_bit_offset();
        if off < 0 {
            continue;
        }
        let name = f.spelling();
        let here = if name.is_empty() || name.contains(' ') {
            path.clone()
        } else if path.is_empty() {
            name
        } else {
            format!("{path}.{name}")
        };
        if r.spelling() == inner {
            out.push((base + off, here));
        } else {
            find_embedded(r, inner, base + off, here, depth + 1, out);
        }
    }
}

/// The functions an argument hands over as pointers: `f`, `&f`, `(cb_t)f`,
/// a pointer parameter passed on, or an ops table (`&ops`: the functions
/// of a global's initializer).
fn handed_functions(arg: Cursor) -> Vec<Handed> {
    let mut c = arg;
    loop {
        match c.kind() {
            CXCursor_UnexposedExpr
            | CXCursor_ParenExpr
            | CXCursor_UnaryOperator
            | CXCursor_CStyleCastExpr => match c.children().last() {
                Some(k) => c = *k,
                None => return Vec::new(),
            },
            CXCursor_DeclRefExpr => break,
            _ => return Vec::new(),
        }
    }
    let Some(d) = c.referenced() else {
        return Vec::new();
    };
    match d.kind() {
        CXCursor_FunctionDecl => vec![Handed::Function(d.spelling())],
        CXCursor_ParmDecl if d.type_is_function_pointer() => vec![Handed::Parameter],
        CXCursor_VarDecl
            if d.semantic_parent()
                .is_some_and(|p| p.kind() == CXCursor_TranslationUnit) =>
        {
            let mut out = Vec::new();
            if let Some(def) = d.definition() {
                table_functions(def, 0, &mut out);
            }
            out
        }
        _ => Vec::new(),
    }
}

/// The functions named in a global's initializer (an ops table), a few
/// levels deep, looking at no more than a few thousand nodes (a large data
/// table costs no more than that).
fn table_functions(c: Cursor, depth: u32, out: &mut Vec<Handed>) {
    let mut budget = 4096u32;
    table_walk(c, depth, out, &mut budget);
}

fn table_walk(c: Cursor, depth: u32, out: &mut Vec<Handed>, budget: &mut u32) {
    if depth > 4 || out.len() >= 64 {
        return;
    }
    for k in c.children() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        if k.kind() == CXCursor_DeclRefExpr {
            if let Some(f) = k.referenced().filter(|f| f.kind() == CXCursor_FunctionDecl) {
                out.push(Handed::Table(f.spelling()));
                continue;
            }
        }
        table_walk(k, depth + 1, out, budget);
    }
}

/// The named struct that declares `field` (through anonymous structs and
/// unions), if any.
fn named_record_of_field(field: Cursor) -> Option<String> {
    let mut p = field.semantic_parent()?;
    while matches!(p.kind(), CXCursor_StructDecl | CXCursor_UnionDecl) && p.is_anonymous() {
        p = p.semantic_parent()?;
    }
    matches!(p.kind(), CXCursor_StructDecl | CXCursor_UnionDecl).then(|| p.spelling())
}

/// The struct of an initializer that holds `member`: `record` itself, or
/// one of its members' structs (a table nested in the global, one level
/// deep, anonymous members looked through), by the field's name.
fn member_owner(record: Cursor, member: &str) -> Option<String> {
    let fields = |r: Cursor| -> Vec<Cursor> {
        r.children()
            .into_iter()
            .filter(|f| f.kind() == CXCursor_FieldDecl)
            .collect()
    };
    let direct = fields(record).into_iter().find(|f| f.spelling() == member);
    if let Some(f) = direct {
        return named_record_of_field(f);
    }
    for f in fields(record) {
        if let Some(inner) = f.record_of_type() {
            if let Some(g) = fields(inner).into_iter().find(|g| g.spelling() == member) {
                return named_record_of_field(g);
            }
        }
    }
    None
}

/// The `.member = function` pairs of an initializer's tokens (at most a
/// few hundred: a large data table costs no more); the caller keeps those
/// whose right side is a function of the sources.
fn designated_functions(tokens: &[String]) -> Vec<(String, String)> {
    let ident = |t: &str| {
        t.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
    };
    tokens
        .windows(5)
        .filter(|w| {
            w[0] == "."
                && ident(&w[1])
                && w[2] == "="
                && ident(&w[3])
                && matches!(w[4].as_str(), "," | "}")
        })
        .take(512)
        .map(|w| (w[1].clone(), w[3].clone()))
        .collect()
}

/// Whether a member's type is a lock (its writes are lock operations).
fn is_lock_type(t: &str) -> bool {
    let t = t
        .trim_start_matches("volatile ")
        .trim_start_matches("const ");
    matches!(
        t,
        "spinlock_t"
            | "raw_spinlock_t"
            | "rwlock_t"
            | "seqlock_t"
            | "struct mutex"
            | "struct rw_semaphore"
            | "struct spinlock"
            | "struct raw_spinlock"
            | "socket_lock_t"
    )
}

/// Whether a function only formats or prints its arguments (`printk` and
/// the `pr_*` macros' `_printk`, `seq_printf`, `seq_put*`, `sysfs_emit`,
/// `snprintf`, `__warn_printk`).
fn is_report(name: &str) -> bool {
    let n = name.trim_start_matches('_');
    n.starts_with("printk")
        || n.starts_with("seq_print")
        || n.starts_with("seq_put")
        || n.starts_with("sysfs_emit")
        || n.starts_with("dev_printk")
        || n.starts_with("warn_printk")
        || n.ends_with("printf")
}

/// Whether a branch leaves the function with a computed result: it is,
/// or its block ends with, `return EXPR` of an expression that is not a
/// constant nor the function's parameters handed back (`return
/// nr_to_scan;`, `return deliver(sk, skb);`; not `return;`, `return 0;`,
/// `return -EINVAL;`, `return NULL;`, `return ERR_PTR(-ENOMEM);`, `return
/// skb;`, `return features & ~MASK;`: the guards of unusual input, which
/// hand back a constant or what they were given), or a `goto` to a label
/// whose statement is such a return. `Some(None)` for a return,
/// `Some(Some(label))` for a goto.
fn exit_with_result(arm: Cursor) -> Option<Option<String>> {
    let last = if arm.kind() == CXCursor_CompoundStmt {
        *arm.children().last()?
    } else {
        arm
    };
    let result = |s: Cursor| {
        s.kind() == CXCursor_ReturnStmt
            && s.children()
                .first()
                .is_some_and(|e| !handed_back(*e, 0, true))
    };
    match last.kind() {
        CXCursor_ReturnStmt => result(last).then_some(None),
        CXCursor_GotoStmt => {
            let label = last
                .children()
                .first()
                .and_then(|r| r.referenced())
                .filter(|l| l.kind() == CXCursor_LabelStmt)?;
            let at = label.children().into_iter().next()?;
            result(through_labels(at)).then(|| Some(label.spelling()))
        }
        _ => None,
    }
}

/// A statement under its labels (`done: return x;` is the return).
fn through_labels(mut s: Cursor) -> Cursor {
    for _ in 0..8 {
        if s.kind() != CXCursor_LabelStmt {
            break;
        }
        match s.children().into_iter().next() {
            Some(inner) => s = inner,
            None => break,
        }
    }
    s
}

/// Whether an expression is made of constants only (a cast of one,
/// `NULL`, an enum constant, a call of constants such as
/// `ERR_PTR(-ENOMEM)`), and with `params`, of the function's parameters
/// too, by value and in arithmetic (`skb`, `features & ~MASK`; not
/// through them, `skb->len`, nor handed to a call, `deliver(skb)`).
fn handed_back(e: Cursor, depth: u32, params: bool) -> bool {
    if depth > 8 {
        return false;
    }
    if e.eval_int().is_some() {
        return true;
    }
    // A cast names its type first (`(struct key *)0`): not a value.
    let all = |kids: Vec<Cursor>, params: bool| {
        let values: Vec<Cursor> = kids
            .into_iter()
            .filter(|k| k.kind() != CXCursor_TypeRef)
            .collect();
        !values.is_empty() && values.iter().all(|k| handed_back(*k, depth + 1, params))
    };
    match e.kind() {
        CXCursor_IntegerLiteral | CXCursor_CharacterLiteral | CXCursor_StringLiteral => true,
        CXCursor_ParenExpr
        | CXCursor_UnexposedExpr
        | CXCursor_CStyleCastExpr
        | CXCursor_UnaryOperator
        | CXCursor_BinaryOperator => all(e.children(), params),
        CXCursor_DeclRefExpr => e.referenced().is_some_and(|d| {
            d.kind() == CXCursor_EnumConstantDecl || (params && d.kind() == CXCursor_ParmDecl)
        }),
        CXCursor_CallExpr => all(e.children().into_iter().skip(1).collect(), false),
        _ => false,
    }
}

/// Whether a label says that the code after it is the slow path
/// (`slow_path:` in `tcp_rcv_established`, after the header-prediction
/// arm that returns; `slow_path_clean:`): the fast path is the code before
/// it, and the rest is one branch down as an `else` arm would be.
fn is_slow_path_label(label: &str) -> bool {
    label
        .to_ascii_lowercase()
        .replace('_', "")
        .contains("slowpath")
}

/// Whether a label names an error path (`err`, `err_free`, `fail`, `out_unlock`
/// is not one: `out` labels are the common exit).
fn is_error_label(label: &str) -> bool {
    let l = label.to_ascii_lowercase();
    ["err", "fail", "abort", "bad"]
        .iter()
        .any(|p| l.starts_with(p))
}

/// Why the right operand of `left op right` runs as rarely as an
/// unlikely branch: it runs only when `left` did not decide, and `left`
/// is expected to decide (`unlikely(tp->repair) && tp->repair_queue ==
/// ...`: the queue is read only when the rare repair mode is on; `||`
/// after a `likely()` operand alike). A static key is no such test: it
/// switches a feature on for every call (`static_branch_unlikely(&key) &&
/// tp->tcp_tx_delay` reads the delay per packet once the key is on).
fn rare_right_operand(unit: &Unit, op: &str, left: Cursor) -> Option<String> {
    let (expected, why) = expectation(unit, left)?;
    let decides = match op {
        "&&" => !expected,
        _ => expected,
    };
    decides.then(|| format!("after {why} in `{op}`"))
}

/// What a branch condition says about its likelihood: `Some((V, why))`
/// when the condition is expected to be V. `__builtin_expect(cond, V)` as
/// the whole condition (`likely`/`unlikely`, and
/// `static_branch_unlikely`'s statement expression); a call of a function
/// whose name says it tests for a slow path (`tcp_under_memory_pressure()`,
/// expected false); a conjunction with an unlikely operand is unlikely
/// (`if (static_branch_unlikely(&key) && ...)`), a disjunction with a
/// likely one likely.
pub(super) fn expectation(unit: &Unit, cond: Cursor) -> Option<(bool, String)> {
    expectation_within(unit, cond, 0)
}

/// [`expectation`], `depth` operators down (at most 32: a longer chain of
/// `&&`/`||` says nothing).
fn expectation_within(unit: &Unit, cond: Cursor, depth: u32) -> Option<(bool, String)> {
    if depth > 32 {
        return None;
    }
    let mut c = cond;
    loop {
        match c.kind() {
            CXCursor_ParenExpr | CXCursor_UnexposedExpr => c = *c.children().first()?,
            // static_branch_unlikely(): ({ ...; unlikely_notrace(branch); })
            CXCursor_StmtExpr => c = *c.children().first()?.children().last()?,
            CXCursor_CallExpr if c.spelling() == "__builtin_expect" => {
                let v = c.children().get(2)?.eval_int()?;
                let word = if v != 0 { "likely()" } else { "unlikely()" };
                return Some((v != 0, word.into()));
            }
            CXCursor_CallExpr => {
                let name = c.spelling();
                let why = super::slow::slow_path(&name)?;
                return Some((false, format!("a test of {name}(), {why} by its name")));
            }
            CXCursor_BinaryOperator => {
                let kids = c.children();
                let (l, r) = (*kids.first()?, *kids.get(1)?);
                // The operator: between the operands where the code is
                // written (libclang 14 has no operator kinds).
                let mut between = unit.tokens_between(l, r);
                if between.len() > 1 {
                    between.pop(); // the right operand's first token
                }
                let op = logical_operator(&between)?;
                let (a, b) = (
                    expectation_within(unit, l, depth + 1),
                    expectation_within(unit, r, depth + 1),
                );
                let pick = |want: bool| {
                    [a.clone(), b.clone()]
                        .into_iter()
                        .flatten()
                        .find(|(v, _)| *v == want)
                };
                return match op {
                    "&&" => pick(false),
                    "||" => pick(true),
                    _ => None,
                };
            }
            _ => return None,
        }
    }
}

/// A condition that tests for a rare state or event by its constant's
/// name: `sacked & TCPCB_LOST`, `icsk_ca_state == TCP_CA_Loss`,
/// `sk_state == TCP_LISTEN`, `IS_ERR(p)`: the constant (an upper-case
/// macro or enum constant, not a `CONFIG_` option) names loss recovery,
/// connection setup or teardown, an error or a timer
/// ([`super::slow::rare_event`]). Only a plain test is read (no `!`,
/// `!=`, `||` or `?`, whose sense the words do not give): its branch is
/// expected not taken.
fn rare_constant(tokens: &[String]) -> Option<(bool, String)> {
    if tokens
        .iter()
        .any(|t| t.starts_with('!') || matches!(t.as_str(), "||" | "?"))
    {
        return None;
    }
    tokens.iter().find_map(|t| {
        if !is_rare_constant(t) {
            return None;
        }
        let why = super::slow::rare_event(&t.to_ascii_lowercase())?;
        Some((false, format!("a test of {t}, {why} by its name")))
    })
}

/// Whether a macro tests a static key (`static_branch_unlikely(&key)`,
/// `static_key_false()`): a feature switched on or off for every call.
fn is_static_key(name: &str) -> bool {
    name.starts_with("static_branch_") || name.starts_with("static_key_")
}

/// Whether a macro prints a diagnostic: `printk` and the `pr_*` family,
/// `net_*_ratelimited`, `netdev_*`/`dev_*` messages, `WARN*`.
fn is_print_macro(name: &str) -> bool {
    let n = name.trim_start_matches('_');
    n.starts_with("pr_")
        || n.starts_with("printk")
        || n.starts_with("WARN")
        || (n.starts_with("net_") && n.ends_with("_ratelimited"))
        || ["netdev_", "dev_"].iter().any(|p| {
            n.strip_prefix(p).is_some_and(|r| {
                matches!(r, "err" | "warn" | "dbg" | "info" | "notice" | "crit")
                    || r.ends_with("_ratelimited")
                    || r.ends_with("_once")
            })
        })
}

/// Whether a name is a constant (upper case first, with `_`, not a
/// `CONFIG_` option) whose words name a rare event.
fn is_rare_constant(t: &str) -> bool {
    t.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && t.contains('_')
        && !t.starts_with("CONFIG_")
        && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && super::slow::rare_event(&t.to_ascii_lowercase()).is_some()
}

/// The enum constant whose name says an error or a drop that expression
/// statement `s` hands over or stores (`kfree_skb_reason(skb,
/// SKB_DROP_REASON_IP_NOPROTO)`), if any: not inside a nested statement
/// (an `if`, a loop, a block), whose code may not run.
fn error_enum_constant(s: Cursor, depth: u32) -> Option<String> {
    if depth > 16
        || matches!(
            s.kind(),
            CXCursor_IfStmt
                | CXCursor_CompoundStmt
                | CXCursor_ForStmt
                | CXCursor_WhileStmt
                | CXCursor_DoStmt
                | CXCursor_SwitchStmt
                | CXCursor_StmtExpr
                | CXCursor_ConditionalOperator
        )
    {
        return None;
    }
    if s.kind() == CXCursor_DeclRefExpr {
        return s
            .referenced()
            .filter(|d| d.kind() == CXCursor_EnumConstantDecl)
            .map(|d| d.spelling())
            .filter(|n| super::slow::error_constant(&n.to_ascii_lowercase()));
    }
    s.children()
        .into_iter()
        .find_map(|k| error_enum_constant(k, depth + 1))
}

/// Whether an expression names an enum constant of a rare event
/// (`TCP_CA_Loss`, `TCP_LISTEN`), a few levels deep.
fn rare_enum_constant(c: Cursor, depth: u32) -> bool {
    if c.kind() == CXCursor_DeclRefExpr {
        return c.referenced().is_some_and(|d| {
            d.kind() == CXCursor_EnumConstantDecl && is_rare_constant(&d.spelling())
        });
    }
    depth < 6
        && c.children()
            .into_iter()
            .any(|k| rare_enum_constant(k, depth + 1))
}

/// Whether a condition is an equality test (through parentheses):
/// `Some(true)` for `a != b`, `Some(false)` for `a == b`.
fn equality_test(unit: &Unit, cond: Cursor) -> Option<bool> {
    let mut c = cond;
    while matches!(c.kind(), CXCursor_ParenExpr | CXCursor_UnexposedExpr) {
        match c.children().as_slice() {
            [one] => c = *one,
            _ => return None,
        }
    }
    if c.kind() != CXCursor_BinaryOperator {
        return None;
    }
    let kids = c.children();
    let [l, r] = kids.as_slice() else {
        return None;
    };
    let mut between = unit.tokens_between(*l, *r);
    if between.len() > 1 {
        between.pop(); // the right operand's first token
    }
    let mut depth = 0i32;
    let mut found = None;
    for t in &between {
        match t.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            "!=" if depth == 0 => found = Some(true),
            "==" if depth == 0 => found = Some(false),
            "&&" | "||" if depth == 0 => return None,
            _ => {}
        }
    }
    found
}

/// The logical operator at the top level of a binary expression's tokens
/// (outside parentheses): `&&` or `||`, None for another operator or both.
fn logical_operator(tokens: &[String]) -> Option<&'static str> {
    let mut depth = 0i32;
    let mut found: Option<&'static str> = None;
    for t in tokens {
        match t.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            "&&" | "||" if depth == 0 => {
                let op = if t == "&&" { "&&" } else { "||" };
                if found.is_some_and(|f| f != op) {
                    return None;
                }
                found = Some(op);
            }
            _ => {}
        }
    }
    found
}

/// The lock a lock call's first argument names: the member that holds it
/// (`spinlock_check(&zone->lock)` → `lock`); in a member path, the member
/// nearest the object whose type is a lock (`&sk->sk_lock.slock`, the
/// spinlock of a `socket_lock_t` → `sk_lock`); or else the variable.
fn lock_name(arg: Cursor) -> Option<String> {
    let chain = member_chain(arg);
    chain
        .iter()
        .rev()
        .find(|m| is_lock_type(&m.type_name()))
        .or(chain.first())
        .map(|m| m.spelling())
        .or_else(|| first_variable(arg))
}

/// The member path of the first member expression under `c`, outermost
/// first (`a->b.c` → `c`, `b`).
fn member_chain(c: Cursor) -> Vec<Cursor> {
    let Some(mut at) = first_member(c) else {
        return Vec::new();
    };
    let mut chain = vec![at];
    while let Some(inner) = at
        .children()
        .into_iter()
        .find_map(|k| through_parens(k).filter(|k| k.kind() == CXCursor_MemberRefExpr))
    {
        chain.push(inner);
        at = inner;
    }
    chain
}

/// `c` without the parentheses and implicit casts around it.
/// The function an access's object comes from when it is the result of a
/// call with no arguments (`get_current()->mm`, which `current->mm`
/// expands to): the running context's instance, not one handed in.
fn context_accessor(access: Cursor) -> Option<String> {
    let base = through_parens(*access.children().first()?)?;
    if base.kind() != CXCursor_CallExpr || base.children().len() != 1 {
        return None;
    }
    let decl = base
        .referenced()
        .filter(|d| d.kind() == CXCursor_FunctionDecl)?;
    Some(decl.spelling())
}

/// The function an expression names (`f`, `&f`, `(cast)f`), if any.
fn stored_function(mut c: Cursor) -> Option<String> {
    loop {
        match c.kind() {
            CXCursor_UnexposedExpr
            | CXCursor_ParenExpr
            | CXCursor_UnaryOperator
            | CXCursor_CStyleCastExpr => c = *c.children().last()?,
            CXCursor_DeclRefExpr => break,
            _ => return None,
        }
    }
    let d = c.referenced()?;
    (d.kind() == CXCursor_FunctionDecl).then(|| d.spelling())
}

/// The member an assignment's left side stores into: `x->m`, or
/// `*(volatile T *)&(x->m)` as `WRITE_ONCE` expands.
fn stored_member(mut c: Cursor) -> Option<Cursor> {
    loop {
        match c.kind() {
            CXCursor_MemberRefExpr => return Some(c),
            CXCursor_UnexposedExpr
            | CXCursor_ParenExpr
            | CXCursor_UnaryOperator
            | CXCursor_CStyleCastExpr => c = *c.children().last()?,
            _ => return None,
        }
    }
}

/// Whether the member access `c` is on a null pointer constant
/// (`((struct T *)0)->m`, through parentheses and casts): an access no
/// code makes, in an expression only its type or offset is taken of.
fn null_based(c: Cursor) -> bool {
    let Some(mut b) = c.children().first().copied() else {
        return false;
    };
    loop {
        match b.kind() {
            CXCursor_ParenExpr | CXCursor_UnexposedExpr | CXCursor_CStyleCastExpr => {
                match b.children().last() {
                    Some(k) => b = *k,
                    None => return false,
                }
            }
            CXCursor_IntegerLiteral => return b.eval_int() == Some(0),
            _ => return false,
        }
    }
}

fn through_parens(mut c: Cursor) -> Option<Cursor> {
    while matches!(c.kind(), CXCursor_ParenExpr | CXCursor_UnexposedExpr) {
        c = *c.children().first()?;
    }
    Some(c)
}

/// The first node under `c` (`c` included, depth first, in source order)
/// that `pick` takes: iterative, so any nesting depth is walked.
fn first_under<T>(c: Cursor, pick: impl Fn(Cursor) -> Option<T>) -> Option<T> {
    let mut todo = vec![c];
    while let Some(k) = todo.pop() {
        if let Some(t) = pick(k) {
            return Some(t);
        }
        todo.extend(k.children().into_iter().rev());
    }
    None
}

fn first_member(c: Cursor) -> Option<Cursor> {
    first_under(c, |k| (k.kind() == CXCursor_MemberRefExpr).then_some(k))
}

fn first_variable(c: Cursor) -> Option<String> {
    first_under(c, |k| {
        let is_var = k.kind() == CXCursor_DeclRefExpr
            && k.referenced()
                .is_some_and(|d| matches!(d.kind(), CXCursor_VarDecl | CXCursor_ParmDecl));
        is_var.then(|| k.spelling())
    })
}

/// `lockdep_assert_held ( & zone -> lock )` → `lock`.
fn lock_from_tokens(tokens: &[String]) -> Option<String> {
    let close = tokens.iter().rposition(|t| t == ")")?;
    tokens[..close]
        .iter()
        .rev()
        .find(|t| {
            t.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        })
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::rare_constant;

    fn toks(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn a_test_of_a_rare_events_constant_is_unlikely() {
        let got = rare_constant(&toks("sacked & TCPCB_LOST")).unwrap();
        assert!(!got.0);
        assert!(got.1.contains("TCPCB_LOST"), "{}", got.1);
        assert!(rare_constant(&toks("sk -> sk_state == TCP_LISTEN")).is_some());
        assert!(rare_constant(&toks("IS_ERR ( p )")).is_some());
        // The sense is not read from the words: a negation or `!=` is left alone.
        assert!(rare_constant(&toks("! ( sacked & TCPCB_LOST )")).is_none());
        assert!(rare_constant(&toks("sk -> sk_state != TCP_CLOSE")).is_none());
        assert!(rare_constant(&toks("a || b & TCPCB_LOST")).is_none());
        // A usual state, a configuration option, a lower-case name.
        assert!(rare_constant(&toks("ca_state == TCP_CA_Open")).is_none());
        assert!(rare_constant(&toks("IS_ENABLED ( CONFIG_TCP_FAIL_X )")).is_none());
        assert!(rare_constant(&toks("tcp_lost_x ( sk )")).is_none());
    }
}
