//! `#[layout(line = "target")]`: the line size `crossbeam_utils::CachePadded`
//! pads to on the target, instead of the default 64 bytes.
//!
//! A proc-macro runs on the host and does not know the target, so the
//! expansion is made once per line size, each under the `cfg` of the
//! targets that use it; rustc keeps the one for the target it builds for.
//! The sizes follow `CachePadded`: 128 bytes where CPUs fetch lines in
//! pairs or have 128-byte lines (x86_64, aarch64, arm64ec, powerpc64), 256
//! on s390x, 32 on arm, mips, sparc, hexagon and m68k (`CachePadded` takes
//! 16 there; 32 is the smallest line the model has, and keeps any two
//! 16-byte blocks the rule separates apart too), 64 elsewhere.

use proc_macro2::TokenStream;
use quote::quote;

/// The targets whose line is 128 bytes.
fn wide() -> TokenStream {
    quote!(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "arm64ec",
        target_arch = "powerpc64"
    )
}

/// The targets whose line is 32 bytes (or less).
fn narrow() -> TokenStream {
    quote!(
        target_arch = "arm",
        target_arch = "mips",
        target_arch = "mips32r6",
        target_arch = "mips64",
        target_arch = "mips64r6",
        target_arch = "sparc",
        target_arch = "hexagon",
        target_arch = "m68k"
    )
}

/// Every line size with the `cfg` predicate of its targets; the predicates
/// are disjoint and cover every target.
pub fn targets() -> [(u64, TokenStream); 4] {
    let (wide, narrow) = (wide(), narrow());
    [
        (128, quote!(any(#wide))),
        (32, quote!(any(#narrow))),
        (256, quote!(target_arch = "s390x")),
        (64, quote!(not(any(#wide, #narrow, target_arch = "s390x")))),
    ]
}

/// The expansion `expand` makes for each line size, each item under its
/// targets' `cfg` (through `cachelayout::__cfg_items!`, which puts the
/// attribute on every item).
pub fn per_target(
    krate: &TokenStream,
    mut expand: impl FnMut(u64) -> syn::Result<TokenStream>,
) -> syn::Result<TokenStream> {
    let mut out = TokenStream::new();
    for (line, pred) in targets() {
        let items = expand(line)?;
        out.extend(quote!(#krate::__cfg_items! { #[cfg(#pred)] #items }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_size_per_target() {
        let lines: Vec<u64> = targets().iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, [128, 32, 256, 64]);
        let last = targets()[3].1.to_string();
        assert!(last.starts_with("not"), "{last}");
        assert!(last.contains("\"s390x\"") && last.contains("\"x86_64\""));
    }
}
