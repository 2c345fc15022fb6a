//! Whether a function only reads through a pointer parameter, from its
//! body: an address handed to it (`deliver_ptype_list_skb(...,
//! &dev->ptype_specific)`, which walks the list) is then a read of the
//! member, not a write. Every use of the parameter must be a read: a
//! member read through it, a test or comparison of it, or an argument a
//! callee only reads through (a `const` pointer, a known reading family,
//! or this rule a few calls down). Anything else (a write through it, an
//! assignment, a copy into a variable, a return) is taken as a write. A
//! branch the condition expects not taken (`unlikely()`) is left out:
//! the last reference's release is not what a put does each time.

use super::ffi::{Cursor, Unit};
use super::site_kind;
use clang_sys::*;

/// How many calls down a parameter is followed (`f(p)` hands `p` to `g`).
const MAX_DEPTH: u32 = 3;

/// The most nodes of a body looked at: a longer function is taken as
/// writing.
const MAX_NODES: u32 = 20_000;

/// Whether the function `decl` (its definition in the unit) only reads
/// through its `index`-th parameter.
pub fn only_reads(unit: &Unit, decl: Cursor, index: u32, depth: u32) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let Some((param, body)) = decl.param_and_body(index) else {
        return false;
    };
    if !param.type_is_pointer() {
        return false;
    }
    let mut budget = MAX_NODES;
    let mut ancestors = Vec::new();
    uses_only_read(unit, body, param, depth, &mut ancestors, &mut budget)
}

fn uses_only_read(
    unit: &Unit,
    c: Cursor,
    param: Cursor,
    depth: u32,
    ancestors: &mut Vec<Cursor>,
    budget: &mut u32,
) -> bool {
    if *budget == 0 || ancestors.len() > 512 {
        return false;
    }
    *budget -= 1;
    if c.kind() == CXCursor_DeclRefExpr && c.referenced().is_some_and(|d| d.same(param)) {
        return a_read(unit, c, ancestors, depth);
    }
    let mut kids = c.children();
    // A branch the condition expects not taken (`else if
    // (unlikely(atomic_long_sub_and_test(...))) ref->data->release(ref);`,
    // the last put of `percpu_ref_put`) is not what a call does: a use
    // there (a hand-off to a release callback) makes no write.
    if c.kind() == CXCursor_IfStmt && kids.len() > 1 {
        match super::walk::expectation(unit, kids[0]) {
            Some((false, _)) => {
                kids.remove(1);
            }
            Some((true, _)) if kids.len() > 2 => {
                kids.remove(2);
            }
            _ => {}
        }
    }
    ancestors.push(c);
    let ok = kids
        .into_iter()
        .all(|k| uses_only_read(unit, k, param, depth, ancestors, budget));
    ancestors.pop();
    ok
}

/// Whether the use `c` of the parameter (its ancestors innermost last)
/// only reads through it.
fn a_read(unit: &Unit, c: Cursor, ancestors: &[Cursor], depth: u32) -> bool {
    let mut child = c;
    for (i, anc) in ancestors.iter().enumerate().rev() {
        match anc.kind() {
            CXCursor_ParenExpr | CXCursor_UnexposedExpr | CXCursor_CStyleCastExpr => {}
            // sizeof, typeof: not evaluated.
            CXCursor_UnaryExpr => return true,
            CXCursor_MemberRefExpr => {
                let through = |f: Cursor, j: u32| only_reads(unit, f, j, depth + 1);
                let kind = site_kind::access(
                    unit,
                    &ancestors[..i],
                    *anc,
                    anc.spelling(),
                    &|| false,
                    &through,
                );
                return kind.is_none_or(|(k, _, _)| !k.writes());
            }
            // A comparison or test (an int), not an assignment or pointer
            // arithmetic (a pointer).
            CXCursor_BinaryOperator => return !anc.type_is_pointer(),
            CXCursor_UnaryOperator => {
                return unit.tokens(*anc).first().is_some_and(|t| t == "!");
            }
            CXCursor_IfStmt | CXCursor_WhileStmt | CXCursor_DoStmt | CXCursor_ForStmt => {
                return true;
            }
            CXCursor_ConditionalOperator => {
                return anc.children().first().is_some_and(|k| k.same(child));
            }
            CXCursor_CallExpr => {
                let kids = anc.children();
                let Some(j) = kids.iter().position(|k| k.same(child)) else {
                    return false;
                };
                if j == 0 {
                    return false;
                }
                let Some(f) = anc
                    .referenced()
                    .filter(|d| d.kind() == CXCursor_FunctionDecl)
                else {
                    return false;
                };
                let j = j as u32 - 1;
                return f.param_points_to_const(j)
                    || site_kind::known_callee_kind(&f.spelling()).is_some_and(|k| !k.writes())
                    || only_reads(unit, f, j, depth + 1);
            }
            _ => return false,
        }
        child = *anc;
    }
    false
}
