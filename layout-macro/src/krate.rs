//! The path generated code names the cachelayout crate by:
//! `#[layout(crate = "..")]` when the struct gives one (the macros used
//! through a re-export, `crate = "my_facade::cachelayout"`), else the name
//! the user's `Cargo.toml` gives the dependency (a renamed dependency,
//! `cl = { package = "cachelayout", .. }`, found as `proc-macro-crate`
//! finds it), else `::cachelayout`.

use proc_macro2::{Span, TokenStream};
use proc_macro_crate::{crate_name, FoundCrate};
use syn::{parse_quote, Attribute, Ident, LitStr, Path};

/// The crate's path when the struct names none.
pub fn default_path() -> Path {
    match crate_name("cachelayout") {
        Ok(FoundCrate::Name(name)) => from_name(&name),
        // `Itself`: the package's own examples, benches and doctests, which
        // link the library as `cachelayout`; `Err`: no manifest to read.
        Ok(FoundCrate::Itself) | Err(_) => from_name("cachelayout"),
    }
}

/// `::name`.
fn from_name(name: &str) -> Path {
    let ident = Ident::new(name, Span::call_site());
    parse_quote!(::#ident)
}

/// The value of `crate = "path"`, or the error that says what it must be.
pub fn parse_value(lit: &LitStr) -> syn::Result<Path> {
    lit.parse::<Path>().map_err(|_| {
        syn::Error::new(
            lit.span(),
            format!(
                "`crate` needs the path of the cachelayout crate, like \"::cachelayout\" or \
                 \"my_facade::cachelayout\", not `{}`",
                lit.value()
            ),
        )
    })
}

/// For an item the macro rejected: the crate's path from its attributes and
/// the attribute's arguments, read leniently (their errors are reported
/// already), so that the placeholder impls name the crate the user named.
pub fn lenient(attrs: &[Attribute], args: &TokenStream) -> Path {
    let mut found = None;
    let mut read = |meta: syn::meta::ParseNestedMeta<'_>| {
        if meta.path.is_ident("crate") {
            if let Ok(path) = meta.value().and_then(|v| v.parse::<LitStr>()) {
                found = parse_value(&path).ok();
            }
        } else if meta.input.peek(syn::Token![=]) {
            meta.value()?.parse::<syn::Expr>()?;
        } else if meta.input.peek(syn::token::Paren) {
            let content;
            syn::parenthesized!(content in meta.input);
            content.parse::<TokenStream>()?;
        }
        Ok(())
    };
    let _ = syn::parse::Parser::parse2(syn::meta::parser(&mut read), args.clone());
    for attr in attrs.iter().filter(|a| a.path().is_ident("layout")) {
        let _ = attr.parse_nested_meta(&mut read);
    }
    found.unwrap_or_else(default_path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn paths() {
        let text = |p: Path| quote!(#p).to_string();
        // No cachelayout dependency in this crate's manifest.
        assert_eq!(text(default_path()), ":: cachelayout");
        let lit: LitStr = parse_quote!("crate::facade::cachelayout");
        assert_eq!(
            text(parse_value(&lit).unwrap()),
            "crate :: facade :: cachelayout"
        );
        assert!(parse_value(&parse_quote!("not a path")).is_err());
        let attrs: Vec<Attribute> =
            vec![parse_quote!(#[layout(line = 128, crate = "renamed", report_only)])];
        assert_eq!(text(lenient(&attrs, &TokenStream::new())), "renamed");
        let args = quote!(objective = "min-diff", crate = "x::cl");
        assert_eq!(text(lenient(&[], &args)), "x :: cl");
    }
}
