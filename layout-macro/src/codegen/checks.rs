//! The compile-time assertions: `const` items that rustc evaluates with the
//! real offsets and sizes, and that fail the build with a message naming
//! the fields. Each is spanned at the field (or hint) it is about.

use super::static_type;
use crate::attr::Input;
use crate::model::Model;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};

/// One item per lockless field that has fields it must not share a line
/// with: the read-mostly fields, and the lockless fields of other writer
/// groups declared after it (the earlier one of a pair carries the check;
/// `hard_rule_message` finds them from the classes in `__INFO`).
pub fn hard_rule(input: &Input, model: &Model) -> TokenStream {
    let ty = static_type(input);
    let fields = &model.strukt.fields;
    let checks = fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.access.is_lockless())
        .filter_map(|(i, a)| {
            let has_partner = fields.iter().enumerate().any(|(j, b)| {
                a.access.hard_conflict(&b.access) && (b.access.is_read_mostly() || j > i)
            });
            if !has_partner {
                return None;
            }
            let call = quote! {
                ::cachelayout::__private::hard_rule_message(
                    &<#ty as ::cachelayout::CacheLayout>::__INFO,
                    ::core::mem::align_of::<#ty>(),
                    #i,
                )
            };
            Some(assertion(call, input.fields[i].span))
        });
    quote!(#(#checks)*)
}

/// One item per `#[layout(size = N, align = M)]`: the hint must be the type's
/// real size and alignment.
pub fn hints(input: &Input) -> TokenStream {
    let ty = static_type(input);
    let checks = input.fields.iter().enumerate().filter_map(|(i, f)| {
        let hint = f.hint?;
        let (size, align) = (hint.size as usize, hint.align as usize);
        let call = quote! {
            ::cachelayout::__private::hint_message(
                &<#ty as ::cachelayout::CacheLayout>::__INFO, #i, #size, #align,
            )
        };
        Some(assertion(call, hint.span))
    });
    quote!(#(#checks)*)
}

/// For `optimize`: every pinned field sits where the struct as declared
/// (as `repr(C)`) has it. A copy of the declared struct inside the `const`
/// item gives that offset with the real sizes.
pub fn pins(input: &Input) -> TokenStream {
    if !input.fields.iter().any(|f| f.pinned) {
        return TokenStream::new();
    }
    let ty = static_type(input);
    let generics = &input.generics;
    let statics: Vec<TokenStream> = input
        .generics
        .lifetimes()
        .map(|_| quote!('static))
        .collect();
    let declared_ty = if statics.is_empty() {
        quote!(__Declared)
    } else {
        quote!(__Declared<#(#statics),*>)
    };
    let decl_fields = input.fields.iter().map(|f| {
        let (member, ty) = (&f.member, &f.ty);
        quote!(#member: #ty)
    });
    let checks = input
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.pinned)
        .map(|(i, f)| {
            let member = &f.member;
            let call = quote! {
                ::cachelayout::__private::pinned_message(
                    &<#ty as ::cachelayout::CacheLayout>::__INFO,
                    #i,
                    ::core::mem::offset_of!(#declared_ty, #member),
                )
            };
            let span = f.span;
            let panic = quote_spanned!(span=> ::core::panic!("{}", message.as_str()));
            quote! {
                if let ::core::option::Option::Some(message) = #call {
                    #panic
                }
            }
        });
    quote! {
        #[allow(non_snake_case, dead_code)]
        const _: () = {
            #[repr(C)]
            struct __Declared #generics { #(#decl_fields),* }
            #(#checks)*
        };
    }
}

/// `const _: () = if let Some(message) = CALL { panic!("{}", message) };`
/// with the panic at `span`, so rustc points at the field.
fn assertion(call: TokenStream, span: Span) -> TokenStream {
    let panic = quote_spanned!(span=> ::core::panic!("{}", message.as_str()));
    quote! {
        const _: () = {
            if let ::core::option::Option::Some(message) = #call {
                #panic
            }
        };
    }
}
