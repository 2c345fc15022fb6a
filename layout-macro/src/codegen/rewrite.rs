//! The struct `optimize` writes: `#[repr(C)]`, fields in the solver's order
//! with their attributes and visibility, and zero-sized aligned markers or
//! padding where the layout inserts room. Markers and padding are private,
//! hidden, implement every std derive (and are skipped by serde); users
//! build the struct with the generated constructor or `Default`.

use super::construct::split_derives;
use crate::attr::Input;
use crate::plan::Item;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

/// The hidden fields of `items` in order, with the expression that builds
/// each.
pub fn hidden_fields(items: &[Item], krate: &TokenStream) -> Vec<(syn::Ident, TokenStream)> {
    let (mut markers, mut pads) = (0usize, 0usize);
    items
        .iter()
        .filter_map(|item| match *item {
            Item::Field(_) => None,
            Item::Marker(_) => {
                let field =
                    format_ident!("__cachelayout_align_{}", markers, span = Span::call_site());
                markers += 1;
                Some((field, quote!([])))
            }
            Item::Pad(_) => {
                let field = format_ident!("__cachelayout_pad_{}", pads, span = Span::call_site());
                pads += 1;
                Some((field, quote!(#krate::__private::Padding::new())))
            }
        })
        .collect()
}

pub fn rewrite(input: &Input, items: &[Item]) -> TokenStream {
    let (name, vis, generics, krate) = (&input.ident, &input.vis, &input.generics, &input.krate);
    let (attrs, _, _) = split_derives(&input.attrs);
    let where_clause = &generics.where_clause;
    let serde_skip = if input.derives_serde {
        quote!(#[serde(skip)])
    } else {
        TokenStream::new()
    };
    let mut hidden = hidden_fields(items, krate).into_iter();
    let body = items.iter().map(|item| match *item {
        Item::Field(i) => {
            let f = &input.fields[i];
            let (attrs, vis, member, ty) = (&f.attrs, &f.vis, &f.member, &f.ty);
            quote!(#(#attrs)* #vis #member: #ty,)
        }
        Item::Marker(align) => {
            let (field, _) = hidden.next().expect("one hidden field per marker");
            let marker = format_ident!("Align{}", align);
            quote! {
                #[doc(hidden)]
                #[allow(dead_code)]
                #serde_skip
                #field: [#krate::__private::#marker; 0],
            }
        }
        Item::Pad(bytes) => {
            let (field, _) = hidden.next().expect("one hidden field per padding");
            let bytes = bytes as usize;
            quote! {
                #[doc(hidden)]
                #[allow(dead_code)]
                #serde_skip
                #field: #krate::__private::Padding<#bytes>,
            }
        }
    });
    let body: Vec<TokenStream> = body.collect();
    let repr = match input.repr.align {
        Some(n) => {
            let n = proc_macro2::Literal::u64_unsuffixed(n);
            quote!(#[repr(C, align(#n))])
        }
        None => quote!(#[repr(C)]),
    };
    quote! {
        #(#attrs)*
        #repr
        #vis struct #name #generics #where_clause {
            #(#body)*
        }
    }
}
