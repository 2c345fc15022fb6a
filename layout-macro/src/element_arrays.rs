//! Arrays of atomics. `[AtomicU64; 8]` is one field to the model: one
//! writer group, its elements packed on one or two lines. But stripes,
//! per-CPU slots and shard counters exist so that different threads write
//! different elements, and packed they write one line.
//!
//! - `#[layout(per_element)]` on an array field: `optimize` rewrites the
//!   element type `T` to `cachelayout::LinePadded<T, AlignL>` (aligned to
//!   the line `L`, padded to whole lines, dereferencing to `T`, so
//!   `stripes[i].fetch_add(..)` still works), which puts every element on
//!   lines of its own. The derive writes nothing, so there it is an error
//!   that says to write the element type so.
//! - An array of atomics with neither an access attribute nor
//!   `per_element` gets a warning (both macros) that names both fixes: a
//!   proc-macro on stable Rust warns through a use of a deprecated item,
//!   spanned at the field's type.

use crate::attr::{Errors, Input, Mode};
use crate::defaults::default_access;
use crate::types::{shape, Shape};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Type;

/// The element type of an array, `T` of `[T; N]`.
fn element(ty: &Type) -> Option<&Type> {
    match shape(ty) {
        Shape::Array { elem, .. } => Some(elem),
        _ => None,
    }
}

/// Rewrites every `per_element` array's element type to its line-padded
/// wrapper (`optimize`), or reports the attribute (derive). An error on a
/// field that is not an array.
pub fn apply(input: &mut Input, mode: Mode) -> syn::Result<()> {
    let mut errors = Errors::default();
    let krate = input.krate.clone();
    let marker = format_ident!("Align{}", input.options.line);
    for f in input.fields.iter_mut() {
        let Some(span) = f.per_element else { continue };
        let Some(elem) = element(&f.ty).cloned() else {
            errors.at(
                span,
                format!(
                    "`per_element` puts each element of an array on lines of its own, but `{}` is not \
                     an array (`[T; N]`)",
                    f.name
                ),
            );
            continue;
        };
        if mode == Mode::Derive {
            errors.at(
                span,
                format!(
                    "`per_element` rewrites the element type, and #[derive(CacheLayout)] checks the \
                     struct as written: use #[cachelayout::optimize], or write the element type as \
                     `cachelayout::LinePadded<{}>` (each element on a {}-byte line of its own)",
                    crate::types::display(&elem),
                    input.options.line
                ),
            );
            continue;
        }
        if let Type::Array(array) = &mut f.ty {
            let padded: Type = syn::parse_quote!(
                #krate::LinePadded<#elem, #krate::__private::#marker>
            );
            *array.elem = padded;
        } else if let Type::Group(_) | Type::Paren(_) = &f.ty {
            errors.at(
                f.ty.span(),
                "`per_element` needs the array type written out as `[T; N]` here",
            );
        }
    }
    errors.finish()
}

/// A warning for each array of atomics that has neither an access
/// attribute nor `per_element`.
pub fn warnings(input: &Input) -> TokenStream {
    let mut out = TokenStream::new();
    for f in &input.fields {
        if f.access.is_some() || f.per_element.is_some() {
            continue;
        }
        let Some(elem) = element(&f.ty) else { continue };
        if !default_access(elem, &f.name).is_lockless() {
            continue;
        }
        let note = format!(
            "cachelayout: `{name}` is an array of atomics, laid out as one field with its elements \
             side by side on shared cache lines, though different threads usually write different \
             elements; write #[layout(per_element)] on it (#[cachelayout::optimize] then gives each \
             element lines of its own, as `[CachePadded<_>; N]` does), or, when one thread writes \
             them together, #[layout(lockless(group = \"{name}\"))] to say so",
            name = f.name
        );
        let warning = format_ident!("array_of_atomics", span = f.ty.span());
        let use_it = quote_spanned!(f.ty.span()=> let _ = #warning;);
        out.extend(quote! {
            const _: () = {
                #[deprecated(note = #note)]
                #[allow(non_camel_case_types)]
                struct #warning;
                #use_it
            };
        });
    }
    out
}
