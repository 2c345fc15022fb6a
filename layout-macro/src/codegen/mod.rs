//! The code the macros emit: the `CacheLayout` impl ([`info`]), the
//! compile-time assertions ([`checks`]) and, for `optimize`, the rewritten
//! struct ([`rewrite`]). Generated code names the facade crate as
//! `::cachelayout` and the standard library as `::core`.

mod checks;
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

/// `#[derive(CacheLayout)]`: the impl and, unless `report_only`, the
/// assertions. `advice` ends every conflict message.
pub fn derive(input: &Input, model: &Model, advice: &str) -> TokenStream {
    let info = info::impl_cache_layout(input, model, None, advice);
    if input.options.report_only {
        return info;
    }
    let hard = checks::hard_rule(input, model);
    let hints = checks::hints(input);
    quote! { #info #hard #hints }
}

/// `#[cachelayout::optimize]`: the rewritten struct, its impl and its
/// assertions.
pub fn optimize(input: &Input, model: &Model, planned: &Planned<'_>) -> TokenStream {
    let strukt = rewrite::rewrite(input, planned.items);
    // No advice: the message says which planned size was wrong instead.
    let info = info::impl_cache_layout(input, model, Some(planned), "");
    let hard = checks::hard_rule(input, model);
    let hints = checks::hints(input);
    let pins = checks::pins(input);
    quote! { #strukt #info #hard #hints #pins }
}

/// `Name` with `'static` for every lifetime parameter: the struct's type in
/// the free `const` items that hold the assertions.
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
