//! The proc-macros of [cachelayout](https://docs.rs/cachelayout): use them
//! through the `cachelayout` crate, which documents them and provides the
//! `CacheLayout` trait and the runtime support the generated code needs.
//!
//! The crate is a thin shell over layout-core: `attr` parses the item,
//! `model` builds layout-core's model with `size_model` and `defaults`,
//! `plan` runs the solver within its budget, `codegen` writes the
//! assertions, the trait impl and the rewritten struct; `expand` ties them.

mod attr;
mod codegen;
mod defaults;
mod expand;
mod model;
mod plan;
mod size_model;
#[cfg(test)]
mod timing;
mod types;

use proc_macro::TokenStream;

/// Checks a struct as written: fails the build when a lockless field shares
/// a cache line with a read-mostly one (or with a lockless field of another
/// writer group), and implements `cachelayout::CacheLayout`.
///
/// See the `cachelayout` crate for the `#[layout(..)]` attributes and the
/// defaults.
#[proc_macro_derive(CacheLayout, attributes(layout))]
pub fn derive_cache_layout(item: TokenStream) -> TokenStream {
    expand::derive(item.into()).into()
}

/// Rewrites a struct into `#[repr(C)]` in the solver's order, with
/// zero-sized aligned markers where fields must start a new line, checks the
/// result at compile time, and implements `cachelayout::CacheLayout`.
///
/// Arguments are the struct options: `#[cachelayout::optimize(line = 128)]`.
#[proc_macro_attribute]
pub fn optimize(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::optimize(args.into(), item.into()).into()
}
