//! What the struct's own definition says about its layout: declared in
//! `include/uapi/` (the user-space ABI) or `__packed` (a wire or on-disk
//! format), each a site that refuses a reorder; `__randomize_layout` or
//! `randomized_struct_fields_start`, the author's word that no code
//! depends on the order (any order is allowed; the proposal carries the
//! note of `randstruct.rs`).

use super::tokens::Code;
use super::{Need, SiteKind};
use crate::source::StructSource;

/// A fact of the definition: where (byte offset in the header) and what.
pub(crate) struct Fact {
    pub byte: usize,
    pub kind: SiteKind,
    pub need: Need,
}

/// The facts of the definition `src` holds.
pub(crate) fn facts(src: &StructSource) -> Vec<Fact> {
    let mut out = Vec::new();
    let uapi = src.path.components().any(|c| c.as_os_str() == "uapi");
    if uapi {
        out.push(Fact {
            byte: src.definition.start,
            kind: SiteKind::Uapi,
            need: Need::Refuse(
                "the struct is declared under include/uapi/: its layout is the user-space ABI"
                    .into(),
            ),
        });
    }
    // The words outside the body: before `{` and after `}` up to `;`.
    let text = &src.text;
    let head = src.definition.start..src.body.start.min(text.len());
    let tail_end = text[src.body.end.min(text.len())..]
        .find(';')
        .map_or(text.len(), |p| src.body.end + p);
    let tail = src.body.end.min(text.len())..tail_end;
    for range in [head, tail] {
        let code = Code::new(&text[range.clone()]);
        for i in 0..code.len() {
            let w = code.at(i);
            let byte = range.start + code.toks[i].start;
            if w == "__packed" || w == "packed" || w == "__packed__" {
                out.push(Fact {
                    byte,
                    kind: SiteKind::Packed,
                    need: Need::Refuse(
                        "the struct is __packed: a wire or on-disk format whose layout others read"
                            .into(),
                    ),
                });
            } else if w == "__randomize_layout" {
                out.push(Fact {
                    byte,
                    kind: SiteKind::RandomizedLayout,
                    need: Need::None,
                });
            }
        }
    }
    let body = src.body.start.min(text.len())..src.body.end.min(text.len());
    let code = Code::new(&text[body.clone()]);
    if let Some(i) = (0..code.len()).find(|&i| code.is(i, "randomized_struct_fields_start")) {
        out.push(Fact {
            byte: body.start + code.toks[i].start,
            kind: SiteKind::RandomizedLayout,
            need: Need::None,
        });
    }
    out
}
