//! `#[layout(isolated)]`: the struct starts and ends on a cache line
//! boundary, as a `CachePadded` does, so nothing next to it in memory (an
//! `Arc`'s reference counts before it, the previous and next element of a
//! `Vec` or an array, another allocation) shares its first or last line.
//! The rule itself is about the struct's own fields; this is about its
//! neighbours.
//!
//! `optimize` raises the struct's `repr(align(..))` to the line, which also
//! rounds its size up to whole lines; the derive, which writes nothing,
//! asserts that the struct as written is aligned so, and says what to add.

use crate::attr::Input;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

/// For `optimize`: align the struct to at least the line.
pub fn apply(input: &mut Input) {
    if input.options.isolated {
        let line = input.options.line;
        input.repr.align = Some(input.repr.align.unwrap_or(1).max(line));
    }
}

/// For the derive: the statement that fails the build when an `isolated`
/// struct is aligned to less than the line (`ty` names the struct).
pub fn check(input: &Input, ty: &TokenStream) -> Option<TokenStream> {
    if !input.options.isolated {
        return None;
    }
    let line = input.options.line as usize;
    let message = format!(
        "cachelayout: `{name}` is #[layout(isolated)], so it must start and end on a {line}-byte line \
         boundary, but it is aligned to less: add #[repr(align({line}))] to it (#[derive(CacheLayout)] \
         checks the struct as written; #[cachelayout::optimize] adds the alignment itself)",
        name = input.ident
    );
    let panic = quote_spanned!(input.ident.span()=> ::core::panic!(#message));
    Some(quote! {
        if ::core::mem::align_of::<#ty>() < #line {
            #panic
        }
    })
}
