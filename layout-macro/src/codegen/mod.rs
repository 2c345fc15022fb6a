//! The code the macros emit: the `CacheLayout` impl ([`info`]), the
//! compile-time assertions ([`checks`]) and, for `optimize`, the rewritten
//! struct ([`rewrite`]). Generated code names the facade crate by
//! `Input::krate` (see `krate`) and the standard library as `::core`.

mod checks;
mod construct;
mod info;
mod rewrite;

use crate::attr::Input;
use crate::model::Model;
use crate::plan::Item;
use layout_core::Layout;
use proc_macro2::TokenStream;
use quote::quote;

/// What `optimize` planned: the solver's layout, the items that realise it,
/// and the report's note on how it was chosen.
pub struct Planned<'a> {
    pub layout: &'a Layout,
    pub items: &'a [Item],
    pub note: &'a str,
}

/// `#[derive(CacheLayout)]`: the impls and, unless `report_only`, the
/// assertions. `advice` ends the conflict message.
pub fn derive(input: &Input, model: &Model, advice: &str) -> TokenStream {
    let (in_impl, free) = checks_for(input, false);
    let info = info::impl_cache_layout(input, model, None, advice, in_impl);
    let access = info::impl_access_class(input);
    quote! { #info #access #free }
}

/// `#[cachelayout::optimize]`: the rewritten struct, its constructor and the
/// impls it intercepted from its derives, its `CacheLayout` and
/// `AccessClass` impls and its assertions.
pub fn optimize(input: &Input, model: &Model, planned: &Planned<'_>) -> TokenStream {
    let strukt = rewrite::rewrite(input, planned.items);
    let constructors = construct::constructors(input, planned.items);
    let declared = checks::declared_struct(input);
    let (in_impl, free) = checks_for(input, true);
    // No advice: the message says which planned size was wrong instead.
    let info = info::impl_cache_layout(input, model, Some(planned), "", in_impl);
    let access = info::impl_access_class(input);
    quote! { #strukt #constructors #declared #info #access #free }
}

/// A struct with type or const parameters: its checks depend on the
/// arguments, so they run per instantiation.
pub fn is_generic(input: &Input) -> bool {
    input.generics.type_params().next().is_some() || input.generics.const_params().next().is_some()
}

/// The checks as the body of `__CHECK` (generic structs) or as free `const`
/// items (others); none under `report_only`.
fn checks_for(input: &Input, pins: bool) -> (Option<TokenStream>, TokenStream) {
    if input.options.report_only {
        return (None, TokenStream::new());
    }
    if is_generic(input) {
        let mut stmts = checks::statements(input, &quote!(Self), pins);
        stmts.extend(crate::isolation::check(input, &quote!(Self)));
        let at_definition = checks::definition_hints(input);
        (Some(quote!({ #(#stmts)* })), quote!(#(#at_definition)*))
    } else {
        let ty = static_type(input);
        let mut stmts = checks::statements(input, &ty, pins);
        stmts.extend(crate::isolation::check(input, &ty));
        (None, quote!(#(const _: () = { #stmts };)*))
    }
}

/// `Name` with `'static` for every lifetime parameter: the struct's type in
/// the free `const` items that hold the assertions of a non-generic struct.
fn static_type(input: &Input) -> TokenStream {
    let name = &input.ident;
    let lifetimes: Vec<TokenStream> = input
        .generics
        .lifetimes()
        .map(|_| quote!('static))
        .collect();
    if lifetimes.is_empty() {
        quote!(#name)
    } else {
        quote!(#name<#(#lifetimes),*>)
    }
}
