//! How an expression that names a member uses it: read, write or
//! read-modify-write, and in which form, from the expression's ancestors in
//! the AST (`&`, `*`, casts, subscripts, assignments, calls, asm).
//! libclang 14 has no operator kinds: operators come from tokens or, inside
//! macros it does not tokenize, from the types.

use super::ffi::{Cursor, Unit};
use crate::infer::sites::Kind;
use clang_sys::*;

/// How the expression `c` that names the member `name` uses it, from its
/// `ancestors` (innermost last): its kind, its form, and the member as the
/// code names it (`usage.counter`); `None` in `sizeof`/`typeof`.
/// `in_store_macro` says whether `c` sits in `WRITE_ONCE` or
/// `smp_store_release`, for an assignment libclang does not tokenize.
pub fn access(
    unit: &Unit,
    ancestors: &[Cursor],
    c: Cursor,
    name: String,
    in_store_macro: &dyn Fn() -> bool,
    reads_through: &dyn Fn(Cursor, u32) -> bool,
) -> Option<(Kind, String, String)> {
    let mut member = name;
    let mut addr = 0i32;
    let mut volatile = false;
    let mut child = c;
    // The innermost ancestor-or-self that is not an implicit cast or parentheses.
    let mut typed = c;
    let plain = |v: bool| {
        if v {
            "volatile".to_string()
        } else {
            "plain".to_string()
        }
    };
    for anc in ancestors.iter().rev().copied() {
        match anc.kind() {
            CXCursor_UnaryExpr => return None,
            CXCursor_ParenExpr | CXCursor_UnexposedExpr | CXCursor_StmtExpr => {}
            CXCursor_MemberRefExpr => {
                if child.type_is_pointer() {
                    return Some((Kind::Read, "deref".into(), member));
                }
                member = format!("{member}.{}", anc.spelling());
            }
            CXCursor_CStyleCastExpr => {
                // A member named in the cast's type (`typeof(x)`) is not evaluated.
                if !anc.children().last().is_some_and(|k| k.same(child)) {
                    return None;
                }
                if addr > 0 && anc.points_to_volatile() {
                    volatile = true;
                }
            }
            CXCursor_ArraySubscriptExpr => {
                // An element of an array member (its decay to a pointer
                // is an implicit cast) is the member; an index, or a
                // pointer member subscripted, is a read of it.
                let kids = anc.children();
                let base = kids.first().is_some_and(|b| b.same(child));
                if !base || !typed.type_is_array() {
                    return Some((Kind::Read, "index".into(), member));
                }
                // An index the compiler computes (`data[IPV4_DEVCONF_FORWARDING
                // - 1]`) names its element; any other stands for the whole.
                if let Some(k) = kids.get(1).and_then(|i| i.eval_int()).filter(|k| *k >= 0) {
                    member = format!("{member}[{k}]");
                }
            }
            CXCursor_UnaryOperator => {
                // libclang 14 has no operator kinds: the first (prefix) or
                // last (postfix) token, or, inside a macro whose tokens
                // libclang does not give, the types (`&x` points to x's type).
                let t = unit.tokens(anc);
                let mut first = t.first().map(String::as_str).unwrap_or("");
                let last = t.last().map(String::as_str).unwrap_or("");
                let operator = ["&", "*", "++", "--", "!", "-", "~", "+"];
                if !operator.contains(&first) && last != "++" && last != "--" {
                    let (mine, my_pointee) = child.type_keys();
                    let (whole, whole_pointee) = anc.type_keys();
                    if whole_pointee
                        .as_deref()
                        .is_some_and(|p| strip_quals(p) == strip_quals(&mine))
                    {
                        first = "&";
                    } else if my_pointee
                        .as_deref()
                        .is_some_and(|p| strip_quals(p) == strip_quals(&whole))
                    {
                        first = "*";
                    }
                }
                let incdec = |s: &str| s == "++" || s == "--";
                if incdec(first) || incdec(last) {
                    return Some((
                        if addr == 0 { Kind::Rmw } else { Kind::Read },
                        "++/--".into(),
                        member,
                    ));
                } else if first == "&" {
                    addr += 1;
                } else if first == "*" {
                    if addr == 0 {
                        return Some((Kind::Read, "deref".into(), member));
                    }
                    addr -= 1;
                } else {
                    return Some((Kind::Read, plain(volatile), member));
                }
            }
            CXCursor_BinaryOperator | CXCursor_CompoundAssignOperator => {
                let kids = anc.children();
                let lhs = kids.first().is_some_and(|k| k.same(child));
                if !lhs || addr > 0 {
                    // `lrugen = &lruvec->lrugen`: only the address.
                    let how = if addr > 0 {
                        "address taken".into()
                    } else {
                        plain(volatile)
                    };
                    return Some((Kind::Read, how, member));
                }
                if anc.kind() == CXCursor_CompoundAssignOperator {
                    return Some((Kind::Rmw, "op=".into(), member));
                }
                // The operator is the token after the left operand's.
                let whole = unit.tokens(anc);
                let left = unit.tokens(kids[0]).len();
                let assign = match whole.get(left) {
                    Some(t) => t == "=",
                    // Inside a macro libclang does not tokenize: the stores it is known for.
                    None => in_store_macro(),
                };
                return Some((
                    if assign { Kind::Write } else { Kind::Read },
                    plain(volatile),
                    member,
                ));
            }
            CXCursor_CallExpr => {
                let callee_side = anc.children().first().is_some_and(|k| k.same(child));
                if callee_side || addr == 0 {
                    return Some((Kind::Read, plain(volatile), member));
                }
                let f = anc.spelling();
                // A parameter that points to const data is only read
                // (`read_pnet(&dev->nd_net)`).
                let index = anc.children().iter().position(|k| k.same(child));
                let decl = anc
                    .referenced()
                    .filter(|d| d.kind() == CXCursor_FunctionDecl);
                let param = index.filter(|i| *i > 0).map(|i| i as u32 - 1);
                let reads_only =
                    param.is_some_and(|i| decl.is_some_and(|d| d.param_points_to_const(i)));
                if reads_only && addr == 1 {
                    return Some((Kind::Read, f, member));
                }
                if let Some(k) = known_callee_kind(&f) {
                    return Some((k, f, member));
                }
                // A function whose body only reads through the pointer
                // (`param_use`).
                let body_reads =
                    addr == 1 && param.is_some_and(|i| decl.is_some_and(|d| reads_through(d, i)));
                let kind = if body_reads { Kind::Read } else { Kind::Rmw };
                return Some((kind, f, member));
            }
            // An asm operand: a pointer member's value is an input (the
            // per-CPU address of this_cpu_ptr()), any other member is
            // read and written (this_cpu_add(), the arch atomics).
            CXCursor_AsmStmt => {
                let pointer = addr == 0 && typed.type_is_pointer();
                return Some((
                    if pointer { Kind::Read } else { Kind::Rmw },
                    "asm".into(),
                    member,
                ));
            }
            _ => {
                return Some((
                    Kind::Read,
                    if addr > 0 {
                        "address taken".into()
                    } else {
                        plain(volatile)
                    },
                    member,
                ));
            }
        }
        child = anc;
        if !matches!(anc.kind(), CXCursor_UnexposedExpr | CXCursor_ParenExpr) {
            typed = anc;
        }
    }
    Some((Kind::Read, plain(volatile), member))
}

/// A type's spelling without `const` and `volatile`.
fn strip_quals(t: &str) -> String {
    t.split_whitespace()
        .filter(|w| *w != "const" && *w != "volatile")
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a function does to the object its argument points to, by its name.
#[cfg(test)]
fn callee_kind(name: &str) -> Kind {
    known_callee_kind(name).unwrap_or(Kind::Rmw)
}

/// What a function of a known family does to the object its argument
/// points to, by its name; None for any other function.
pub fn known_callee_kind(name: &str) -> Option<Kind> {
    let n = name.trim_start_matches('_');
    let n = n.strip_prefix("arch_").unwrap_or(n);
    let n = n.strip_prefix("raw_").unwrap_or(n);
    // The counter families: atomic_*, refcount_*, percpu_counter_*, local_*.
    let counter = [
        "atomic",
        "refcount_",
        "percpu_counter_",
        "local_",
        "local64_",
    ]
    .iter()
    .any(|p| n.starts_with(p));
    if counter {
        return Some(if n.contains("_read") || n.contains("_sum") {
            Kind::Read
        } else if n.ends_with("_set") || n.contains("_set_release") {
            Kind::Write
        } else {
            Kind::Rmw
        });
    }
    if n.contains("test_bit") && !n.contains("test_and") {
        return Some(Kind::Read);
    }
    if n.starts_with("list_") || n.starts_with("hlist_") {
        let reads = [
            "list_empty",
            "list_is_",
            "list_first",
            "list_last",
            "list_entry",
            "list_count",
            "hlist_empty",
            "hlist_unhashed",
        ];
        return Some(if reads.iter().any(|r| n.starts_with(r)) {
            Kind::Read
        } else {
            Kind::Write
        });
    }
    // Functions that only look: lock and seqcount queries, bitmap and
    // cpumask tests and searches.
    let looks = [
        "read_seq",
        "read_seqcount",
        "seqcount_",
        "lockdep_",
        "spin_is",
        "mutex_is",
        "cpumask_test",
        "cpumask_weight",
        "cpumask_empty",
        "cpumask_first",
        "cpumask_next",
        "bitmap_weight",
        "bitmap_empty",
        "bitmap_full",
        "find_first_bit",
        "find_next_bit",
        "find_first_zero_bit",
        "find_next_zero_bit",
    ];
    if n.ends_with("_is_locked") || looks.iter().any(|p| n.starts_with(p)) {
        return Some(Kind::Read);
    }
    // set_bit, clear_bit, test_and_*_bit, lock calls: they write it.
    let writes = [
        "set_bit",
        "clear_bit",
        "change_bit",
        "test_and_",
        "spin_",
        "mutex_",
        "mem",
    ];
    if writes.iter().any(|p| n.starts_with(p)) {
        return Some(Kind::Rmw);
    }
    // Any other function given the member's address: its body says
    // (`param_use`), else it may write it.
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callees_by_name() {
        for (name, kind) in [
            ("atomic_long_read", Kind::Read),
            ("atomic_long_add_return", Kind::Rmw),
            ("atomic_set", Kind::Write),
            ("arch_atomic64_set_release", Kind::Write),
            ("refcount_read", Kind::Read),
            ("refcount_inc", Kind::Rmw),
            ("percpu_counter_sum_positive", Kind::Read),
            ("test_bit", Kind::Read),
            ("test_and_set_bit", Kind::Rmw),
            ("__set_bit", Kind::Rmw),
            ("list_del", Kind::Write),
            ("list_empty_careful", Kind::Read),
            ("read_seqbegin", Kind::Read),
            ("raw_read_seqcount_begin", Kind::Read),
            ("spin_is_locked", Kind::Read),
            ("cpumask_test_cpu", Kind::Read),
            ("memset", Kind::Rmw),
        ] {
            assert_eq!(callee_kind(name), kind, "{name}");
        }
    }
}
