//! Kernel macros that declare struct members, rewritten in place (same
//! length, newlines kept) into C that tree-sitter parses, with a record of
//! what the rewrite stands for:
//!
//! - `DECLARE_BITMAP(name, bits)` → `unsigned long name` plus a note that
//!   the declarator is an array of `BITS_TO_LONGS(bits)`;
//! - `DECLARE_HASHTABLE(name, bits)` → `struct hlist_head name` plus a
//!   note that the declarator is an array of `1 << (bits)`. (Its sibling
//!   `DECLARE_READ_MOSTLY_HASHTABLE` adds a section attribute, which gcc
//!   rejects on a member: it is not read.)
//! - `NET_DEV_STAT(name)` (netdevice.h's `struct net_device_stats`) →
//!   `long name` plus a note that the type is `unsigned long`. The
//!   kernel's expansion, `union { unsigned long name; atomic_long_t
//!   __name; }`, has the size and alignment of `unsigned long`, and `name`
//!   is the member code reads;
//! - `DECLARE_FLEX_ARRAY(TYPE, name)` and the UAPI `__DECLARE_FLEX_ARRAY`
//!   → `TYPE name` plus a note that it is a flexible array (the kernel's
//!   expansion, an anonymous struct around `TYPE name[]`, has the same
//!   size and alignment);
//! - `struct_group(NAME, MEMBERS...)`, `struct_group_attr(NAME, ATTRS, ...)`,
//!   `struct_group_tagged(TAG, NAME, ...)`, `__struct_group(TAG, NAME,
//!   ATTRS, ...)` → `struct [TAG] [ATTRS] { MEMBERS }`. The kernel's
//!   expansion is a union of an anonymous struct of the members and a
//!   struct of the same members named NAME: the members are addressed one
//!   by one and as a whole (`memcpy(&p->NAME, ...)`), so their order and
//!   offsets inside the group are part of the contract. The group is
//!   therefore ONE field named NAME, moved as a whole; its members are
//!   never reordered individually.
//!
//! The header's own `#define` of these names is not read: their meaning is
//! fixed by the kernel.

use super::macros::PTok;
use crate::lex::Tok;
use std::ops::Range;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MacroMemberKind {
    /// An array of `BITS_TO_LONGS(bits)` unsigned longs; `text` is the
    /// `bits` expression as written.
    Bitmap { bits: Range<usize>, text: String },
    /// An array of `1 << (bits)` `struct hlist_head`; `text` is the `bits`
    /// expression as written.
    Hashtable { bits: Range<usize>, text: String },
    /// `NET_DEV_STAT(name)`: an `unsigned long` (rewritten as `long`).
    NetDevStat,
    /// A flexible array member.
    FlexArray,
    /// A `struct_group`: one field named `name`.
    Group { name: String },
}

/// One rewritten member macro.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MacroMember {
    pub kind: MacroMemberKind,
    /// The macro name's first byte: where the member declaration starts.
    pub start: usize,
    /// Just after the closing `)`: where an attribute for the whole
    /// member goes.
    pub after_call: usize,
}

/// The top-level arguments of the call whose `(` is token `open`: token
/// index ranges, the commas between them, and the index of the `)`.
struct Call {
    args: Vec<Range<usize>>,
    commas: Vec<usize>,
    close: usize,
}

fn call(toks: &[PTok], open: usize) -> Option<Call> {
    let is = |k: usize, p: &str| matches!(toks.get(k), Some(PTok::Punct(q)) if q == p);
    if !is(open, "(") {
        return None;
    }
    let mut depth = 0usize;
    let mut args = Vec::new();
    let mut commas = Vec::new();
    let mut start = open + 1;
    for k in open + 1..toks.len() {
        if is(k, "(") || is(k, "[") || is(k, "{") {
            depth += 1;
        } else if is(k, ")") || is(k, "]") || is(k, "}") {
            if depth == 0 {
                if !is(k, ")") {
                    return None;
                }
                args.push(start..k);
                return Some(Call {
                    args,
                    commas,
                    close: k,
                });
            }
            depth -= 1;
        } else if is(k, ",") && depth == 0 {
            args.push(start..k);
            commas.push(k);
            start = k + 1;
        }
    }
    None
}

fn blank(bytes: &mut [u8], range: Range<usize>) {
    for b in &mut bytes[range] {
        if *b != b'\n' {
            *b = b' ';
        }
    }
}

fn single_ident(toks: &[PTok], r: &Range<usize>) -> bool {
    r.len() == 1 && matches!(toks[r.start], PTok::Ident(_))
}

/// Rewrites the member macro whose name is token `i`, if it is one.
/// Returns what it stands for and the token index where scanning resumes
/// (inside the call, so that attributes and keywords in its arguments are
/// still read).
/// `MACRO(name, bits)` declaring an array of `keyword`s whose length is
/// given by `bits` (`DECLARE_BITMAP`, `DECLARE_HASHTABLE`): the macro name
/// and `(` become `keyword` (which must fit in them), the rest of the call
/// after the name is blanked, and `kind` records the length expression.
fn array_member(
    bytes: &mut [u8],
    toks: &[PTok],
    code: &[Tok],
    c: &Call,
    start: usize,
    keyword: &[u8],
    kind: impl FnOnce(Range<usize>, String) -> MacroMemberKind,
) -> Option<(MacroMember, usize)> {
    let [n, bits] = c.args.as_slice() else {
        return None;
    };
    if !single_ident(toks, n) || bits.is_empty() {
        return None;
    }
    let after_call = code[c.close].range.end;
    let name_start = code[n.start].range.start;
    blank(bytes, start..name_start);
    bytes[start..start + keyword.len()].copy_from_slice(keyword);
    let bits = code[bits.start].range.start..code[bits.end - 1].range.end;
    let text = String::from_utf8_lossy(&bytes[bits.clone()]).into_owned();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    blank(bytes, code[n.start].range.end..after_call);
    let member = MacroMember {
        kind: kind(bits, text),
        start,
        after_call,
    };
    Some((member, c.close + 1))
}

pub(crate) fn rewrite(
    toks: &[PTok],
    code: &[Tok],
    i: usize,
    bytes: &mut [u8],
) -> Option<(MacroMember, usize)> {
    let PTok::Ident(name) = &toks[i] else {
        return None;
    };
    // The name first: finding a call's end reads to its `)`, and doing
    // that for every word would cost the square of the nesting.
    const MEMBER_MACROS: [&str; 9] = [
        "DECLARE_BITMAP",
        "DECLARE_HASHTABLE",
        "NET_DEV_STAT",
        "DECLARE_FLEX_ARRAY",
        "__DECLARE_FLEX_ARRAY",
        "struct_group",
        "struct_group_attr",
        "struct_group_tagged",
        "__struct_group",
    ];
    if !MEMBER_MACROS.contains(&name.as_str()) {
        return None;
    }
    let c = call(toks, i + 1)?;
    let start = code[i].range.start;
    let after_call = code[c.close].range.end;
    let span = |r: &Range<usize>| code[r.start].range.start..code[r.end - 1].range.end;
    match name.as_str() {
        // `DECLARE_BITMAP(` is 15 bytes, `unsigned long ` 14.
        "DECLARE_BITMAP" => array_member(
            bytes,
            toks,
            code,
            &c,
            start,
            b"unsigned long",
            |bits, text| MacroMemberKind::Bitmap { bits, text },
        ),
        // `DECLARE_HASHTABLE(` is 18 bytes, `struct hlist_head ` 18.
        "DECLARE_HASHTABLE" => array_member(
            bytes,
            toks,
            code,
            &c,
            start,
            b"struct hlist_head",
            |bits, text| MacroMemberKind::Hashtable { bits, text },
        ),
        "NET_DEV_STAT" => {
            // Only as a member: `NET_DEV_STAT(name)` then `;` or an
            // attribute, not in an expression.
            let [n] = c.args.as_slice() else {
                return None;
            };
            let member_end = match toks.get(c.close + 1) {
                Some(PTok::Punct(p)) => p == ";",
                Some(PTok::Ident(_)) => true,
                _ => false,
            };
            if !single_ident(toks, n) || !member_end {
                return None;
            }
            // `unsigned long` does not fit before the name with a space
            // (`NET_DEV_STAT(` is 13 bytes): `long` parses, and the note
            // makes it `unsigned long`.
            blank(bytes, start..code[n.start].range.start);
            bytes[start..start + 4].copy_from_slice(b"long");
            blank(bytes, code[c.close].range.clone());
            let member = MacroMember {
                kind: MacroMemberKind::NetDevStat,
                start,
                after_call,
            };
            Some((member, c.close + 1))
        }
        "DECLARE_FLEX_ARRAY" | "__DECLARE_FLEX_ARRAY" => {
            let [ty, n] = c.args.as_slice() else {
                return None;
            };
            if !single_ident(toks, n) || ty.is_empty() {
                return None;
            }
            blank(bytes, start..code[i + 1].range.end);
            blank(bytes, code[c.commas[0]].range.clone());
            blank(bytes, code[c.close].range.clone());
            let member = MacroMember {
                kind: MacroMemberKind::FlexArray,
                start,
                after_call,
            };
            Some((member, i + 2))
        }
        "struct_group" | "struct_group_attr" | "struct_group_tagged" | "__struct_group" => {
            // (tag, name, attrs) argument positions; members follow.
            let (tag, name_arg, attrs, fixed) = match name.as_str() {
                "struct_group" => (None, 0, None, 1),
                "struct_group_attr" => (None, 0, Some(1), 2),
                "struct_group_tagged" => (Some(0), 1, None, 2),
                _ => (Some(0), 1, Some(2), 3),
            };
            if c.args.len() < fixed || !single_ident(toks, &c.args[name_arg]) {
                return None;
            }
            if tag.is_some_and(|t| !(c.args[t].is_empty() || single_ident(toks, &c.args[t]))) {
                return None;
            }
            let PTok::Ident(group) = &toks[c.args[name_arg].start] else {
                return None;
            };
            // `struct` over the macro name (at least 12 bytes long); TAG and
            // ATTRS stay where they are; `{` over the comma before the
            // members, `}` over the `)`.
            let kept: Vec<Range<usize>> = [tag, attrs]
                .into_iter()
                .flatten()
                .map(|k| c.args[k].clone())
                .filter(|r| !r.is_empty())
                .map(|r| span(&r))
                .collect();
            let open_at = match c.commas.get(fixed - 1) {
                Some(&k) => code[k].range.clone(),
                None => return None,
            };
            let mut pos = start;
            for r in kept.iter().chain(std::iter::once(&open_at)) {
                blank(bytes, pos..r.start);
                pos = r.end;
            }
            bytes[start..start + 6].copy_from_slice(b"struct");
            bytes[open_at.start] = b'{';
            bytes[code[c.close].range.start] = b'}';
            let member = MacroMember {
                kind: MacroMemberKind::Group {
                    name: group.clone(),
                },
                start,
                after_call,
            };
            Some((member, i + 2))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::macros::ptokens;
    use super::*;
    use crate::lex::{tokenize, TokKind};

    /// The rewritten text and the member found at the first token.
    fn run(src: &str) -> Option<(String, MacroMember)> {
        let code: Vec<Tok> = tokenize(src)
            .into_iter()
            .filter(|t| !matches!(t.kind, TokKind::Comment | TokKind::Newline))
            .collect();
        let toks: Vec<PTok> = code.iter().flat_map(|t| ptokens(t.text(src))).collect();
        let mut bytes = src.as_bytes().to_vec();
        let (m, _) = rewrite(&toks, &code, 0, &mut bytes)?;
        Some((String::from_utf8(bytes).unwrap(), m))
    }

    #[test]
    fn bitmaps() {
        let src = "DECLARE_BITMAP(flags, NR_F + 1);";
        let (text, m) = run(src).unwrap();
        assert_eq!(text, "unsigned long  flags           ;");
        assert_eq!(text.len(), src.len());
        let MacroMemberKind::Bitmap { bits, text } = &m.kind else {
            panic!("{m:?}")
        };
        assert_eq!(&src[bits.clone()], "NR_F + 1");
        assert_eq!(text, "NR_F + 1");
        assert_eq!(m.after_call, src.len() - 1);
        assert!(run("DECLARE_BITMAP(a, b, c);").is_none());
        assert!(run("DECLARE_BITMAP(a);").is_none());
    }

    #[test]
    fn hashtables() {
        let src = "DECLARE_HASHTABLE\t(qdisc_hash, 4);";
        let (text, m) = run(src).unwrap();
        assert_eq!(text, "struct hlist_head  qdisc_hash    ;");
        assert_eq!(text.len(), src.len());
        let MacroMemberKind::Hashtable { bits, text } = &m.kind else {
            panic!("{m:?}")
        };
        assert_eq!(&src[bits.clone()], "4");
        assert_eq!(text, "4");
        assert_eq!(m.after_call, src.len() - 1);
        let (text, _) = run("DECLARE_HASHTABLE(h, N + 1);").unwrap();
        assert_eq!(text, "struct hlist_head h        ;");
        assert!(run("DECLARE_READ_MOSTLY_HASHTABLE(h, 4);").is_none());
        assert!(run("DECLARE_HASHTABLE(a);").is_none());
        assert!(run("DECLARE_HASHTABLE(a.b, 4);").is_none());
    }

    #[test]
    fn net_dev_stats() {
        let src = "NET_DEV_STAT(rx_packets);";
        let (text, m) = run(src).unwrap();
        assert_eq!(text, "long         rx_packets ;");
        assert_eq!(m.kind, MacroMemberKind::NetDevStat);
        assert_eq!(m.after_call, src.len() - 1);
        // Not a member: a call in an expression, or two arguments.
        assert!(run("NET_DEV_STAT(a) + 1;").is_none());
        assert!(run("NET_DEV_STAT(a, b);").is_none());
    }

    #[test]
    fn flex_arrays() {
        let (text, m) = run("DECLARE_FLEX_ARRAY(struct foo, items);").unwrap();
        assert_eq!(text, "                   struct foo  items ;");
        assert_eq!(m.kind, MacroMemberKind::FlexArray);
        let (text, _) = run("__DECLARE_FLEX_ARRAY(__u8, data);").unwrap();
        assert_eq!(text, "                     __u8  data ;");
    }

    #[test]
    fn groups() {
        let src = "struct_group(addrs,\n\t__be32 saddr;\n\t__be32 daddr;\n);";
        let (text, m) = run(src).unwrap();
        assert_eq!(
            text,
            "struct            {\n\t__be32 saddr;\n\t__be32 daddr;\n};"
        );
        assert_eq!(
            m.kind,
            MacroMemberKind::Group {
                name: "addrs".into()
            }
        );
        for (src, want) in [
            (
                "struct_group_tagged(tag, name, int a; int b;);",
                "struct              tag      { int a; int b;};",
            ),
            (
                "struct_group_attr(name, __packed, int a;);",
                "struct                  __packed{ int a;};",
            ),
            (
                "__struct_group(, name, __aligned(8), int a;);",
                "struct                 __aligned(8){ int a;};",
            ),
        ] {
            let (text, _) = run(src).unwrap();
            assert_eq!(text, want);
            assert_eq!(text.len(), src.len());
        }
        assert!(run("struct_group(a.b, int x;);").is_none());
        assert!(run("struct_group_tagged(t);").is_none());
    }
}
