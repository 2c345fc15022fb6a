//! The compile-time assertions: statements that rustc evaluates in `const`
//! context with the real offsets and sizes, and that fail the build with a
//! message naming the fields. Each is spanned at what it is about (the
//! struct for the rule, the hint, the pinned field). `codegen` puts them in
//! free `const` items (non-generic structs: checked where declared) or in
//! `CacheLayout::__CHECK` (generic structs: checked per instantiation).

use crate::attr::Input;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// The checks of `input`, naming the struct as `ty` (`Self` inside the
/// impl, `Name<'static>` outside it); `pins` for `optimize`, which moves
/// fields (it also emits [`declared_struct`]).
pub fn statements(input: &Input, ty: &TokenStream, pins_too: bool) -> Vec<TokenStream> {
    let mut out = vec![rule(input, ty)];
    out.extend(hints(input, ty));
    if pins_too {
        out.extend(pins(input, ty));
    }
    out
}

/// The rule, for the whole struct: one message listing every lockless field
/// that shares a line with a field it must not share with. `rule_check`
/// takes O(n log n) const-evaluation steps, so large structs stay within
/// rustc's limit.
fn rule(input: &Input, ty: &TokenStream) -> TokenStream {
    let krate = &input.krate;
    let fields = input.fields.len();
    let call = quote! {
        #krate::__private::rule_check::<#fields>(
            &<#ty as #krate::CacheLayout>::__INFO,
            ::core::mem::align_of::<#ty>(),
        )
    };
    assertion(call, input.ident.span())
}

/// One check per `#[layout(size = N, align = M)]`: the hint must be the
/// type's real size and alignment. In a generic struct, a hint on a type
/// that does not depend on the parameters is checked at the definition
/// instead ([`definition_hints`]).
fn hints(input: &Input, ty: &TokenStream) -> Vec<TokenStream> {
    let krate = &input.krate;
    let generic = super::is_generic(input);
    input
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| !(generic && is_concrete(input, &f.ty)))
        .filter_map(|(i, f)| {
            let hint = f.hint?;
            let (size, align) = (hint.size as usize, hint.align as usize);
            let call = quote! {
                #krate::__private::hint_message(
                    &<#ty as #krate::CacheLayout>::__INFO, #i, #size, #align,
                )
            };
            Some(assertion(call, hint.span))
        })
        .collect()
}

/// For a generic struct: the hints on fields whose type does not depend
/// on the parameters, checked where the struct is defined (its proof at
/// the definition relies on them), as free `const` items.
pub fn definition_hints(input: &Input) -> Vec<TokenStream> {
    let krate = &input.krate;
    input
        .fields
        .iter()
        .filter(|f| is_concrete(input, &f.ty))
        .filter_map(|f| {
            let hint = f.hint?;
            let (size, align) = (hint.size as usize, hint.align as usize);
            let (name, ty) = (&f.name, &f.ty);
            let ty_str = crate::types::display(ty);
            let call = quote! {
                #krate::__private::hint_mismatch(
                    #name, #ty_str,
                    ::core::mem::size_of::<#ty>(), ::core::mem::align_of::<#ty>(),
                    #size, #align,
                )
            };
            let check = assertion(call, hint.span);
            Some(quote!(const _: () = { #check };))
        })
        .collect()
}

/// `ty` names none of the struct's parameters (nor `Self`): it can be
/// named outside the struct's impls.
fn is_concrete(input: &Input, ty: &syn::Type) -> bool {
    let names: Vec<String> = input
        .generics
        .params
        .iter()
        .map(|p| match p {
            syn::GenericParam::Type(t) => t.ident.to_string(),
            syn::GenericParam::Const(c) => c.ident.to_string(),
            syn::GenericParam::Lifetime(l) => l.lifetime.ident.to_string(),
        })
        .chain(std::iter::once("Self".to_string()))
        .collect();
    !crate::types::mentions(ty, &names)
}

/// The name of the struct as declared (before `optimize` reorders it), whose
/// `repr(C)` offsets the pinned fields must keep.
pub fn declared_ident(input: &Input) -> syn::Ident {
    format_ident!(
        "__CacheLayoutDeclared{}",
        input.ident,
        span = Span::call_site()
    )
}

/// For `optimize`: the struct as declared, as `repr(C)`, next to the
/// rewritten one; `offset_of!` on it gives a pinned field's offset with the
/// real sizes. Empty when no field is pinned.
pub fn declared_struct(input: &Input) -> TokenStream {
    if !input.fields.iter().any(|f| f.pinned) {
        return TokenStream::new();
    }
    let name = declared_ident(input);
    let generics = &input.generics;
    let where_clause = &generics.where_clause;
    let fields = input.fields.iter().map(|f| {
        let (member, ty) = (&f.member, &f.ty);
        quote!(#member: #ty)
    });
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #[repr(C)]
        struct #name #generics #where_clause { #(#fields),* }
    }
}

/// Every pinned field sits where the struct as declared has it.
fn pins(input: &Input, ty: &TokenStream) -> Vec<TokenStream> {
    let krate = &input.krate;
    let name = declared_ident(input);
    // The declared struct with the same arguments as `ty`.
    let args = if ty.to_string() == "Self" {
        let (_, ty_generics, _) = input.generics.split_for_impl();
        quote!(#ty_generics)
    } else {
        let statics: Vec<TokenStream> = input
            .generics
            .lifetimes()
            .map(|_| quote!('static))
            .collect();
        if statics.is_empty() {
            TokenStream::new()
        } else {
            quote!(<#(#statics),*>)
        }
    };
    input
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.pinned)
        .map(|(i, f)| {
            let member = &f.member;
            let call = quote! {
                #krate::__private::pinned_message(
                    &<#ty as #krate::CacheLayout>::__INFO,
                    #i,
                    ::core::mem::offset_of!(#name #args, #member),
                )
            };
            assertion(call, f.span)
        })
        .collect()
}

/// `if let Some(message) = CALL { panic!("{}", message) }` with the panic at
/// `span`, so rustc points at what the check is about.
///
/// The binding and its use are one identifier: `span` may come from another
/// hygiene context than the macro's call site (a struct declared by a
/// `macro_rules!` macro), where a `message` of its own would not resolve.
fn assertion(call: TokenStream, span: Span) -> TokenStream {
    let message = Ident::new("message", Span::mixed_site());
    let panic = quote_spanned!(span=> ::core::panic!("{}", #message.as_str()));
    quote! {
        if let ::core::option::Option::Some(#message) = #call {
            #panic
        }
    }
}
