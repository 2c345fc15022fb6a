//! The struct `optimize` writes: `#[repr(C)]`, fields in the solver's order
//! with their attributes and visibility, and zero-sized aligned markers or
//! padding where the layout inserts room. Markers and padding are private,
//! hidden, and implement every std derive (and are skipped by serde).

use crate::attr::Input;
use crate::plan::Item;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

pub fn rewrite(input: &Input, items: &[Item]) -> TokenStream {
    let (name, vis, generics, attrs) = (&input.ident, &input.vis, &input.generics, &input.attrs);
    let where_clause = &generics.where_clause;
    let serde_skip = if input.derives_serde {
        quote!(#[serde(skip)])
    } else {
        TokenStream::new()
    };
    let (mut markers, mut pads) = (0usize, 0usize);
    let body = items.iter().map(|item| match *item {
        Item::Field(i) => {
            let f = &input.fields[i];
            let (attrs, vis, member, ty) = (&f.attrs, &f.vis, &f.member, &f.ty);
            quote!(#(#attrs)* #vis #member: #ty,)
        }
        Item::Marker(align) => {
            let field = format_ident!("__cachelayout_align_{}", markers, span = Span::call_site());
            markers += 1;
            let marker = format_ident!("Align{}", align);
            quote! {
                #[doc(hidden)]
                #[allow(dead_code)]
                #serde_skip
                #field: [::cachelayout::__private::#marker; 0],
            }
        }
        Item::Pad(bytes) => {
            let field = format_ident!("__cachelayout_pad_{}", pads, span = Span::call_site());
            pads += 1;
            let bytes = bytes as usize;
            quote! {
                #[doc(hidden)]
                #[allow(dead_code)]
                #serde_skip
                #field: ::cachelayout::__private::Padding<#bytes>,
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
