//! The `CacheLayout` impl: line size, and the hidden `__INFO` with every
//! field's real offset, size and alignment (`offset_of!`, `size_of`,
//! `align_of`), access class, and the planned layout.

use super::Planned;
use crate::attr::Input;
use crate::model::Model;
use layout_core::class::Param;
use layout_core::Access;
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

/// `advice` ends the messages of broken-rule checks (see `checks`).
pub fn impl_cache_layout(
    input: &Input,
    model: &Model,
    planned: Option<&Planned<'_>>,
    advice: &str,
    check: Option<TokenStream>,
) -> TokenStream {
    let (name, krate) = (&input.ident, &input.krate);
    let name_str = name.to_string();
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let line = model.line as usize;
    let checked = !input.options.report_only;
    let facts = input.fields.iter().zip(&model.strukt.fields).map(|(f, m)| {
        let (field_name, member, ty) = (&f.name, &f.member, &f.ty);
        let ty_str = &m.ty;
        let class = class(&m.access, krate);
        let explicit = f.access.is_some();
        let pinned = m.pinned;
        let lock_word = m.lock_word;
        quote! {
            #krate::__private::FieldFacts {
                name: #field_name,
                ty: #ty_str,
                offset: ::core::mem::offset_of!(Self, #member),
                size: ::core::mem::size_of::<#ty>(),
                align: ::core::mem::align_of::<#ty>(),
                class: #krate::__private::effective(#class, #explicit, {
                    #[allow(unused_imports)]
                    use #krate::__private::NoAccessClass as _;
                    #krate::__private::Probe::<#ty>::ACCESS
                }, #field_name),
                guess: #class,
                explicit: #explicit,
                pinned: #pinned,
                lock_word: #lock_word,
            }
        }
    });
    let check = check.map(|body| quote!(#[doc(hidden)] const __CHECK: () = #body;));
    let plan = match planned {
        Some(p) => plan(model, p, krate),
        None => quote!(::core::option::Option::None),
    };
    quote! {
        impl #impl_generics #krate::CacheLayout for #name #ty_generics #where_clause {
            const LINE_SIZE: usize = #line;
            #[doc(hidden)]
            const __INFO: #krate::__private::Info = #krate::__private::Info {
                name: #name_str,
                line: #line,
                fields: &[#(#facts),*],
                checked: #checked,
                advice: #advice,
                plan: #plan,
            };
            #check
        }
    }
}

/// `AccessClass`: what the struct carries into a struct that holds it —
/// `#[layout(contains = "..")]`, else its fields' strongest class. For a
/// generic struct, asking evaluates the instantiation's checks.
pub fn impl_access_class(input: &Input) -> TokenStream {
    let (name, krate) = (&input.ident, &input.krate);
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let value = match input
        .options
        .contains
        .as_ref()
        .and_then(|a| a.info().carried)
    {
        Some(variant) => {
            let variant = Ident::new(variant, Span::call_site());
            quote!(#krate::Access::#variant)
        }
        None => quote! {
            #krate::__private::strongest(
                <Self as #krate::CacheLayout>::__INFO.fields,
            )
        },
    };
    quote! {
        impl #impl_generics #krate::AccessClass for #name #ty_generics #where_clause {
            const ACCESS: #krate::Access = {
                #[allow(clippy::let_unit_value)]
                let () = <Self as #krate::CacheLayout>::__CHECK;
                #value
            };
        }
    }
}

fn plan(model: &Model, planned: &Planned<'_>, krate: &TokenStream) -> TokenStream {
    let offsets = planned.layout.offsets_by_field(model.strukt.fields.len());
    let fields = model.strukt.fields.iter().enumerate().map(|(i, f)| {
        let offset = offsets[i].unwrap_or(0) as usize;
        let align = f.align as usize;
        let size = match model.known[i] {
            Some(_) => {
                let size = f.size as usize;
                quote!(::core::option::Option::Some(#size))
            }
            None => quote!(::core::option::Option::None),
        };
        let alone = model.known[i].is_none() && !model.free[i];
        quote!(#krate::__private::PlannedField { offset: #offset, size: #size, align: #align, alone: #alone })
    });
    let size = planned.layout.size as usize;
    let align = planned.layout.align as usize;
    let note = planned.note;
    quote! {
        ::core::option::Option::Some(#krate::__private::Plan {
            fields: &[#(#fields),*],
            size: #size,
            align: #align,
            note: #note,
        })
    }
}

/// The runtime `__private::Class` of `access`: the vocabulary's variant
/// name, with the lock, or the optional writer group, as its argument.
fn class(access: &Access, krate: &TokenStream) -> TokenStream {
    let info = access.info();
    let variant = Ident::new(info.runtime, Span::call_site());
    let path = quote!(#krate::__private::Class::#variant);
    match (info.param, access.param()) {
        (Param::None, _) => path,
        (Param::Lock, lock) => {
            let lock = lock.unwrap_or_default();
            quote!(#path(#lock))
        }
        (Param::Group, Some(g)) => quote!(#path(::core::option::Option::Some(#g))),
        (Param::Group, None) => quote!(#path(::core::option::Option::None)),
    }
}
