//! Whether a test of a local variable is expected false because the
//! variable gets a value only where a callee sets it on an unlikely
//! branch: `struct key *md5;` handed by its address to a function that
//! stores `*md5 = NULL;` and, only under
//! `static_branch_unlikely(&key)`, a looked-up key; `if (md5) { ... }`
//! after the call then runs as rarely as that branch. The local must be
//! assigned nothing but zero (`NULL`, `0`, `false`) in its own function,
//! every function its address is handed to must be defined in the unit,
//! and each must use that parameter only to store through it (`*p = ...`)
//! or to read through it: a store of anything but zero off an unlikely
//! branch (a flag set to `true` where the code does not say how often),
//! or any other use (the pointer passed on, kept, returned), and the rule
//! says nothing.

use super::ffi::{Cursor, Unit};
use clang_sys::*;

/// The most nodes of a body looked at.
const MAX_NODES: u32 = 20_000;

/// For a condition that is a local variable (through parentheses and
/// implicit casts, or its negation `!v`): `Some((expected, why))` when
/// the variable is set to anything but zero only on unlikely branches of
/// the callees it is handed to by its address.
pub fn expectation(unit: &Unit, cond: Cursor) -> Option<(bool, String)> {
    let mut c = cond;
    let mut negated = false;
    for _ in 0..8 {
        match c.kind() {
            CXCursor_ParenExpr | CXCursor_UnexposedExpr => {
                c = single_child(c)?;
            }
            CXCursor_UnaryOperator if unit.tokens(c).first().is_some_and(|t| t == "!") => {
                negated = !negated;
                c = single_child(c)?;
            }
            _ => break,
        }
    }
    if c.kind() != CXCursor_DeclRefExpr {
        return None;
    }
    let var = c.referenced().filter(|d| d.kind() == CXCursor_VarDecl)?;
    let function = var
        .semantic_parent()
        .filter(|f| f.kind() == CXCursor_FunctionDecl)?;
    let body = function
        .children()
        .into_iter()
        .find(|k| k.kind() == CXCursor_CompoundStmt)?;
    // The local's own initializer and assignments: zero only.
    if let Some(init) = var.children().into_iter().find(is_expression) {
        if !zero(init) {
            return None;
        }
    }
    let mut handed: Vec<(Cursor, u32)> = Vec::new();
    let mut budget = MAX_NODES;
    let mut ancestors = Vec::new();
    if !uses_of_local(unit, body, var, &mut ancestors, &mut handed, &mut budget) {
        return None;
    }
    if handed.is_empty() {
        return None;
    }
    for (f, i) in &handed {
        if !sets_only_when_unlikely(unit, *f, *i) {
            return None;
        }
    }
    let names: Vec<String> = handed.iter().map(|(f, _)| f.spelling()).collect();
    Some((
        negated,
        format!(
            "`{}` is set only on an unlikely() branch of {}",
            var.spelling(),
            names.join(", ")
        ),
    ))
}

fn single_child(c: Cursor) -> Option<Cursor> {
    match c.children().as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

fn is_expression(c: &Cursor) -> bool {
    !matches!(
        c.kind(),
        CXCursor_TypeRef | CXCursor_StructDecl | CXCursor_UnionDecl | CXCursor_EnumDecl
    ) && !matches!(c.kind(), CXCursor_ParmDecl)
}

/// Zero: `NULL`, `0`, `false` (the value a local holds until something
/// sets it), through casts.
fn zero(e: Cursor) -> bool {
    if e.eval_int() == Some(0) {
        return true;
    }
    match e.kind() {
        // A cast's children: the type named (`struct key`), then the value.
        CXCursor_ParenExpr | CXCursor_UnexposedExpr | CXCursor_CStyleCastExpr => {
            e.children().last().is_some_and(|v| zero(*v))
        }
        _ => false,
    }
}

/// The operator of a binary expression: the token before its right
/// operand.
fn operator(unit: &Unit, op: Cursor) -> Option<String> {
    let kids = op.children();
    let [l, r] = kids.as_slice() else {
        return None;
    };
    let mut between = unit.tokens_between(*l, *r);
    between.pop(); // the right operand's first token
    between.pop()
}

/// Whether an operator stores into its left operand (`=`, `+=`, `|=`, ...).
fn is_store(op: &str) -> bool {
    op.ends_with('=') && !matches!(op, "==" | "!=" | "<=" | ">=")
}

/// Walks the local's function: each use of `var` must be a read, an
/// assignment of zero, or its address handed to a call of a
/// function of the unit (recorded with the argument's index).
fn uses_of_local(
    unit: &Unit,
    c: Cursor,
    var: Cursor,
    ancestors: &mut Vec<Cursor>,
    handed: &mut Vec<(Cursor, u32)>,
    budget: &mut u32,
) -> bool {
    if *budget == 0 || ancestors.len() > 512 {
        return false;
    }
    *budget -= 1;
    if c.kind() == CXCursor_DeclRefExpr && c.referenced().is_some_and(|d| d.same(var)) {
        return local_use(unit, c, ancestors, handed);
    }
    ancestors.push(c);
    let ok = c
        .children()
        .into_iter()
        .all(|k| uses_of_local(unit, k, var, ancestors, handed, budget));
    ancestors.pop();
    ok
}

fn local_use(
    unit: &Unit,
    c: Cursor,
    ancestors: &[Cursor],
    handed: &mut Vec<(Cursor, u32)>,
) -> bool {
    let mut child = c;
    let mut address = false;
    for anc in ancestors.iter().rev() {
        match anc.kind() {
            CXCursor_ParenExpr | CXCursor_UnexposedExpr | CXCursor_CStyleCastExpr => {}
            CXCursor_UnaryOperator
                if !address && unit.tokens(*anc).first().is_some_and(|t| t == "&") =>
            {
                address = true;
            }
            // `!v`, `*v`, `-v`: a read.
            CXCursor_UnaryOperator if !address => return true,
            CXCursor_CallExpr if address => {
                let kids = anc.children();
                let Some(j) = kids.iter().position(|k| k.same(child)).filter(|j| *j > 0) else {
                    return false;
                };
                let Some(f) = anc
                    .referenced()
                    .filter(|d| d.kind() == CXCursor_FunctionDecl)
                else {
                    return false;
                };
                handed.push((f, j as u32 - 1));
                return true;
            }
            CXCursor_BinaryOperator if !address => {
                let lhs = anc.children().first().is_some_and(|l| l.same(child));
                let op = operator(unit, *anc);
                // `v = NULL`: zero; `v = f()`, `v = true`, `v += 1`: no
                // rule. `v == x`, `x = v`: a read.
                return match op.as_deref() {
                    Some("=") if lhs => anc.children().get(1).is_some_and(|r| zero(*r)),
                    Some(o) if lhs && is_store(o) => false,
                    Some(_) => true,
                    None => false,
                };
            }
            _ if address => return false,
            // A test, an argument by value, a return: a read.
            _ => return true,
        }
        child = *anc;
    }
    !address
}

/// Whether function `f` (defined in the unit) uses its `index`-th
/// parameter only to store through it (`*p = ...`) or read through it,
/// and stores anything but zero only on a branch its condition expects
/// not taken.
fn sets_only_when_unlikely(unit: &Unit, f: Cursor, index: u32) -> bool {
    let Some((param, body)) = f.param_and_body(index) else {
        return false;
    };
    let mut budget = MAX_NODES;
    let mut ancestors = Vec::new();
    let mut stores = 0u32;
    stores_ok(
        unit,
        body,
        param,
        false,
        &mut ancestors,
        &mut stores,
        &mut budget,
    ) && stores > 0
}

fn stores_ok(
    unit: &Unit,
    c: Cursor,
    param: Cursor,
    cold: bool,
    ancestors: &mut Vec<Cursor>,
    stores: &mut u32,
    budget: &mut u32,
) -> bool {
    if *budget == 0 || ancestors.len() > 512 {
        return false;
    }
    *budget -= 1;
    if c.kind() == CXCursor_DeclRefExpr && c.referenced().is_some_and(|d| d.same(param)) {
        return param_use(unit, c, ancestors, cold, stores);
    }
    let kids = c.children();
    // The arms a condition expects not taken are cold.
    let expect = if c.kind() == CXCursor_IfStmt && kids.len() > 1 {
        super::walk::expectation(unit, kids[0]).map(|(v, _)| v)
    } else {
        None
    };
    ancestors.push(c);
    let ok = kids.into_iter().enumerate().all(|(i, k)| {
        let arm_cold = matches!((expect, i), (Some(false), 1) | (Some(true), 2));
        stores_ok(unit, k, param, cold || arm_cold, ancestors, stores, budget)
    });
    ancestors.pop();
    ok
}

/// A use of the pointer parameter: `*p = v` (zero anywhere, anything
/// else only on a cold branch) or a read through it (`if (*p)`, `x =
/// *p`).
fn param_use(unit: &Unit, c: Cursor, ancestors: &[Cursor], cold: bool, count: &mut u32) -> bool {
    let mut child = c;
    let mut deref = false;
    for anc in ancestors.iter().rev() {
        match anc.kind() {
            CXCursor_ParenExpr | CXCursor_UnexposedExpr | CXCursor_CStyleCastExpr => {}
            CXCursor_UnaryOperator
                if !deref && unit.tokens(*anc).first().is_some_and(|t| t == "*") =>
            {
                deref = true;
            }
            CXCursor_UnaryOperator if !deref => return false,
            CXCursor_BinaryOperator if deref => {
                let lhs = anc.children().first().is_some_and(|l| l.same(child));
                return match operator(unit, *anc).as_deref() {
                    Some("=") if lhs => {
                        *count += 1;
                        cold || anc.children().get(1).is_some_and(|r| zero(*r))
                    }
                    Some(o) => !(lhs && is_store(o)),
                    None => false,
                };
            }
            // `!*p`: a test.
            CXCursor_UnaryOperator => {
                return unit.tokens(*anc).first().is_some_and(|t| t == "!");
            }
            // `*p` read: a test, an argument by value, a member of it.
            _ if deref => return true,
            _ => return false,
        }
        child = *anc;
    }
    false
}
