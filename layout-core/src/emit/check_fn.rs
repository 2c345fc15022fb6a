//! The `Groups` style's check function, as `net/core/dev.c` writes one for
//! `struct net_device`: a `CACHELINE_ASSERT_GROUP_MEMBER` line for every
//! member, so that the build fails when a member leaves its group.
//!
//! It goes right after the struct definition, or replaces the one a previous
//! run wrote (found by its name, `<struct>_struct_check`).

use super::groups::Group;
use super::render::is_padding_member;
use crate::model::Struct;
use std::ops::Range;

/// Lines longer than this (tabs counted as 8; checkpatch's limit) are
/// wrapped after the group.
const WIDTH: usize = 100;

/// `static void __maybe_unused NAME_struct_check(void)` with one assertion
/// per member that `offsetof` can name (bit-fields, flexible arrays and
/// synthetic names cannot be named, and are left out) other than the padding
/// arrays the diff writes. `type_name` is what
/// the assertions call the type: `struct foo`, or a typedef name.
pub(crate) fn check_function(s: &Struct, type_name: &str, groups: &[Group], nl: &str) -> String {
    let mut out = format!(
        "static void __maybe_unused {}(void){nl}{{{nl}",
        function_name(&s.name)
    );
    for g in groups {
        for &f in &g.fields {
            let field = &s.fields[f];
            if !nameable(&field.name, &field.ty) || is_padding_member(&field.name) {
                continue;
            }
            let head = format!("\tCACHELINE_ASSERT_GROUP_MEMBER({type_name}, {},", g.name);
            let tail = format!("{});", field.name);
            if width(&head) + 1 + tail.len() <= WIDTH {
                out.push_str(&format!("{head} {tail}{nl}"));
            } else {
                // Continuation lines line up after the opening parenthesis.
                let open = width("\tCACHELINE_ASSERT_GROUP_MEMBER(");
                let indent = "\t".repeat(open / 8) + &" ".repeat(open % 8);
                out.push_str(&format!("{head}{nl}{indent}{tail}{nl}"));
            }
        }
    }
    out.push_str(&format!("}}{nl}"));
    out
}

/// `lru_gen_folio_struct_check`.
pub(crate) fn function_name(struct_name: &str) -> String {
    format!("{struct_name}_struct_check")
}

/// Where a check function of this name already is in `text`: its whole
/// lines, from `static` to the line of its closing brace.
pub(crate) fn existing(text: &str, struct_name: &str) -> Option<Range<usize>> {
    let name = function_name(struct_name);
    let mut from = 0;
    while let Some(k) = text[from..].find(&name) {
        let at = from + k;
        from = at + name.len();
        let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
        let head = &text[line_start..at];
        let after = &text[at + name.len()..];
        let words: Vec<&str> = head.split_whitespace().collect();
        let declares = words.first() == Some(&"static") && words.contains(&"void");
        let Some(open) = after.find('{') else {
            continue;
        };
        if !declares || !after[..open].trim().starts_with('(') || after[..open].contains(';') {
            continue;
        }
        let body_start = at + name.len() + open;
        let close = matching_brace(text, body_start)?;
        let end = text[close..]
            .find('\n')
            .map_or(text.len(), |p| close + p + 1);
        return Some(line_start..end);
    }
    None
}

/// The `}` that closes the `{` at `open`, skipping comments and literals.
fn matching_brace(text: &str, open: usize) -> Option<usize> {
    let rest = &text[open..];
    let mut depth = 0usize;
    for t in crate::lex::tokenize(rest) {
        if t.kind != crate::lex::TokKind::Punct {
            continue;
        }
        match t.text(rest) {
            "{" => depth += 1,
            "}" => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(open + t.range.start);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether `offsetof(TYPE, name)` and `sizeof` of the member compile.
fn nameable(name: &str, ty: &str) -> bool {
    let identifier = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let bitfield = ty.contains(':');
    let flexible = ty.trim_end().ends_with("[]");
    identifier && !bitfield && !flexible
}

fn width(line: &str) -> usize {
    line.chars().map(|c| if c == '\t' { 8 } else { 1 }).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Field;

    fn group(name: &str, fields: Vec<usize>) -> Group {
        Group {
            name: name.into(),
            fields,
            aligned_begin: true,
            aligned_end: true,
        }
    }

    #[test]
    fn one_assertion_per_nameable_member_wrapped_at_100_columns() {
        let s = Struct::new(
            "lru_gen_folio",
            vec![
                Field::new("max_seq", "unsigned long", 8, 8),
                Field::new("flags", "unsigned int a:3", 1, 1),
                Field::new("avg_refaulted", "unsigned long[2][4]", 64, 8),
                Field::new("tail", "char[]", 0, 1),
            ],
        );
        let f = check_function(
            &s,
            "struct lru_gen_folio",
            &[
                group("read_mostly", vec![0, 1]),
                group("a_rather_long_name_for_the_group_locked", vec![2, 3]),
            ],
            "\n",
        );
        assert_eq!(
            f,
            "static void __maybe_unused lru_gen_folio_struct_check(void)\n{\n\
             \tCACHELINE_ASSERT_GROUP_MEMBER(struct lru_gen_folio, read_mostly, max_seq);\n\
             \tCACHELINE_ASSERT_GROUP_MEMBER(struct lru_gen_folio, a_rather_long_name_for_the_group_locked,\n\
             \t\t\t\t      avg_refaulted);\n\
             }\n"
        );
        assert!(f.lines().all(|l| width(l) <= WIDTH), "{f}");
    }

    #[test]
    fn an_existing_function_is_found_whole() {
        let text = "struct s { int a; };\n\nstatic void __maybe_unused s_struct_check(void)\n{\n\t/* } */\n\tX(a);\n}\n\nint s_struct_check_calls;\n";
        let r = existing(text, "s").unwrap();
        assert_eq!(
            &text[r],
            "static void __maybe_unused s_struct_check(void)\n{\n\t/* } */\n\tX(a);\n}\n"
        );
        assert_eq!(existing("void s_struct_check(void);\n", "s"), None);
        assert_eq!(existing("static void s_struct_check(void);\n", "s"), None);
    }
}
