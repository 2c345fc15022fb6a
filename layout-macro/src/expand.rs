//! The two expansions, on `proc_macro2` tokens so tests and the timing
//! harness can call them outside a compiler.

use crate::attr::{self, Input, Mode};
use crate::codegen::{self, Planned};
use crate::model::{self, Model};
use crate::plan;
use crate::prove;
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::DeriveInput;

/// `#[derive(CacheLayout)]` on `item`. On error the type still gets an
/// (empty, unchecked) impl, so its uses add no second error.
pub fn derive(item: TokenStream) -> TokenStream {
    try_derive(item.clone()).unwrap_or_else(|e| {
        let mut out = e.to_compile_error();
        if let Ok(item) = syn::parse2::<DeriveInput>(item) {
            let krate = crate::krate::lenient(&item.attrs, &TokenStream::new()).into_token_stream();
            out.extend(placeholder_impls(&item, &krate));
        }
        out
    })
}

/// `CacheLayout` and `AccessClass` for a struct the macro rejected: no
/// fields, not checked; only there to keep the error the only one.
fn placeholder_impls(item: &DeriveInput, krate: &TokenStream) -> TokenStream {
    // `optimize` below the derive implements the traits itself.
    let derives_it = item.attrs.iter().any(|a| {
        (a.path().is_ident("derive")
            && a.meta.to_token_stream().to_string().contains("CacheLayout"))
            || attr::is_optimize(a)
    });
    let syn::Data::Struct(data) = &item.data else {
        return TokenStream::new();
    };
    // `CacheLayout: Sized`: an impl for an unsized struct would be an error too.
    let maybe_unsized = crate::types::maybe_unsized_params(&item.generics);
    if derives_it
        || data.fields.iter().any(|f| {
            crate::types::is_unsized(&f.ty)
                || crate::types::holds_maybe_unsized(&f.ty, &maybe_unsized)
        })
    {
        return TokenStream::new();
    }
    let name = &item.ident;
    let name_str = name.to_string();
    let (impl_generics, ty_generics, where_clause) = item.generics.split_for_impl();
    quote::quote! {
        impl #impl_generics #krate::CacheLayout for #name #ty_generics #where_clause {
            const LINE_SIZE: usize = 64;
            #[doc(hidden)]
            const __INFO: #krate::__private::Info = #krate::__private::Info {
                name: #name_str,
                line: 64,
                fields: &[],
                checked: false,
                advice: "",
                plan: ::core::option::Option::None,
            };
        }
        impl #impl_generics #krate::AccessClass for #name #ty_generics #where_clause {
            const ACCESS: #krate::Access = #krate::Access::ReadMostly;
        }
    }
}

/// `#[cachelayout::optimize(args)]` on `item`. On error the struct is kept
/// as written (without its `#[layout]` attributes) next to the error, so the
/// error is the only one the user sees.
pub fn optimize(args: TokenStream, item: TokenStream) -> TokenStream {
    match try_optimize(args.clone(), item.clone()) {
        Ok(out) => out,
        Err(e) => {
            let mut out = e.to_compile_error();
            if let Ok(mut item) = syn::parse2::<DeriveInput>(item) {
                let krate = crate::krate::lenient(&item.attrs, &args).into_token_stream();
                strip_layout_attrs(&mut item);
                item.to_tokens(&mut out);
                out.extend(placeholder_impls(&item, &krate));
            }
            out
        }
    }
}

fn try_derive(item: TokenStream) -> syn::Result<TokenStream> {
    let item: DeriveInput = syn::parse2(item)?;
    let input = attr::parse(item.clone(), Mode::Derive, TokenStream::new())?;
    if input.options.per_target {
        return crate::target_line::per_target(&input.krate.clone(), |line| {
            let mut input = attr::parse(item.clone(), Mode::Derive, TokenStream::new())?;
            input.options.line = line;
            derive_input(input)
        });
    }
    derive_input(input)
}

fn derive_input(mut input: Input) -> syn::Result<TokenStream> {
    crate::element_arrays::apply(&mut input, Mode::Derive)?;
    let model = model::build(&input, Mode::Derive)?;
    let advice = if input.options.report_only || !model.strukt.has_hard_pairs() {
        String::new()
    } else {
        suggestion(&input, &model)
    };
    // A generic struct is proven for every instantiation here, where
    // `cargo check` sees it, not only per instantiation.
    if codegen::is_generic(&input) && !input.options.report_only {
        if let Err(e) = prove::check(&input, &model, &advice) {
            // The impls stay, unchecked: the error is the only one.
            input.options.report_only = true;
            let mut out = e.to_compile_error();
            out.extend(codegen::derive(&input, &model, &advice));
            out.extend(crate::element_arrays::warnings(&input));
            return Ok(out);
        }
    }
    let mut out = codegen::derive(&input, &model, &advice);
    out.extend(crate::element_arrays::warnings(&input));
    Ok(out)
}

fn try_optimize(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let item: DeriveInput = syn::parse2(item)?;
    let input = attr::parse(item.clone(), Mode::Optimize, args.clone())?;
    if input.options.per_target {
        return crate::target_line::per_target(&input.krate.clone(), |line| {
            let mut input = attr::parse(item.clone(), Mode::Optimize, args.clone())?;
            input.options.line = line;
            optimize_input(input)
        });
    }
    optimize_input(input)
}

fn optimize_input(mut input: Input) -> syn::Result<TokenStream> {
    let warnings = crate::element_arrays::warnings(&input);
    crate::element_arrays::apply(&mut input, Mode::Optimize)?;
    crate::isolation::apply(&mut input);
    let model = model::build(&input, Mode::Optimize)?;
    let solution = plan::solve_model(&model, &input.options)
        .map_err(|e| syn::Error::new(input.ident.span(), format!("cachelayout: {e}")))?;
    let items = plan::items(&model, &solution.layout);
    check_items(&model, &solution.layout, &items)
        .map_err(|e| syn::Error::new(input.ident.span(), e))?;
    check_order_sensitive(&input, &items)?;
    let mut note = plan::note(&solution, &input.options);
    if let Some(groups) =
        crate::writer_groups::cost_note(&input, &model, &input.options, solution.layout.size)
    {
        // The report prints each line of the note after `cachelayout: `.
        note.push_str("\ncachelayout: ");
        note.push_str(&groups);
    }
    let planned = Planned {
        layout: &solution.layout,
        items: &items,
        note: &note,
    };
    let mut out = codegen::optimize(&input, &model, &planned);
    out.extend(warnings);
    Ok(out)
}

/// A derive whose meaning follows the field order (serde, `Ord`, ..) is an
/// error when the layout moves fields, unless the author opted in.
fn check_order_sensitive(input: &Input, items: &[plan::Item]) -> syn::Result<()> {
    let order: Vec<usize> = items
        .iter()
        .filter_map(|item| match *item {
            plan::Item::Field(i) => Some(i),
            _ => None,
        })
        .collect();
    let Some(w) = order.windows(2).find(|w| w[0] > w[1]) else {
        return Ok(());
    };
    let moved = format!(
        "`{}` before `{}`",
        input.fields[w[0]].name, input.fields[w[1]].name
    );
    let mut errors = attr::Errors::default();
    for d in &input.order_sensitive {
        let accepted = match d.why {
            crate::derives::Sensitivity::Serialized => input.options.reorder_serialized,
            crate::derives::Sensitivity::Ordering => input.options.reorder_ord,
        };
        if !accepted {
            errors.push(crate::derives::refusal(d, &input.ident.to_string(), &moved));
        }
    }
    errors.finish()
}

/// The end of a derive's conflict message: the order the solver suggests.
fn suggestion(input: &Input, model: &Model) -> String {
    match plan::solve_model(model, &input.options) {
        Ok(solution) => {
            let items = plan::items(model, &solution.layout);
            format!(
                "suggested layout (sizes estimated by the macro), or let #[cachelayout::optimize] \
                 write it: {}",
                plan::rust_struct(input, model, &items)
            )
        }
        Err(e) => format!("the solver found no layout that keeps the rule: {e}"),
    }
}

/// The items must give the solver's offsets under the model's sizes; if they
/// do not, that is a bug here, and the user gets an error, not a struct.
fn check_items(
    model: &Model,
    layout: &layout_core::Layout,
    items: &[plan::Item],
) -> Result<(), String> {
    let (offsets, size, align) = plan::repr_c(model, items);
    let planned = layout.offsets_by_field(model.strukt.fields.len());
    if offsets.iter().zip(&planned).all(|(a, b)| Some(*a) == *b)
        && size == layout.size
        && align == layout.align
    {
        Ok(())
    } else {
        Err(format!(
            "cachelayout internal error: the rewritten struct would not match the planned layout \
             (offsets {offsets:?} vs {planned:?}, size {size} vs {}, align {align} vs {}); please report this",
            layout.size, layout.align
        ))
    }
}

/// Removes `#[layout(..)]`, also inside `#[cfg_attr]`, which nothing would
/// read once the macro gave up on the item.
fn strip_layout_attrs(item: &mut DeriveInput) {
    let is_layout = |a: &syn::Attribute| {
        a.path().is_ident("layout")
            || (a.path().is_ident("cfg_attr") && attr::cfg_attr_has_layout(a))
    };
    item.attrs.retain(|a| !is_layout(a));
    if let syn::Data::Struct(s) = &mut item.data {
        for f in s.fields.iter_mut() {
            f.attrs.retain(|a| !is_layout(a));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(src: &str) -> (String, String) {
        let item: TokenStream = src.parse().unwrap();
        (
            derive(item.clone()).to_string(),
            optimize(TokenStream::new(), item).to_string(),
        )
    }

    #[test]
    fn huge_hints_are_errors_not_panics() {
        for src in [
            "struct S { #[layout(size = 18446744073709551615, align = 1)] a: Foo, b: u8 }",
            "struct S { a: u64, #[layout(size = 18446744073709551615, align = 1)] b: Foo }",
            "struct S { a: [u8; 18446744073709551615], b: std::sync::atomic::AtomicU64 }",
            "struct S { #[layout(size = 0, align = 9223372036854775808)] a: Foo, b: u8 }",
            "struct S { #[layout(size = 4611686018427387904, align = 8)] a: Foo, \
             #[layout(size = 4611686018427387904, align = 8)] b: Foo, c: u8 }",
        ] {
            let (derived, optimized) = both(src);
            for out in [derived, optimized] {
                assert!(out.contains("compile_error"), "{src}: {out}");
            }
        }
        // Huge but possible: laid out, no error.
        let (derived, optimized) = both(
            "struct S { #[layout(size = 1152921504606846976, align = 8)] a: Foo, \
             #[layout(size = 1152921504606846976, align = 8)] b: Foo, c: u8, \
             d: std::sync::atomic::AtomicU64 }",
        );
        for out in [derived, optimized] {
            assert!(!out.contains("compile_error"), "{out}");
        }
    }

    #[test]
    fn every_repr_align_rustc_accepts() {
        for align in [512u64, 4096, 1 << 29] {
            let src = format!(
                "#[repr(align({align}))] struct S {{ a: u64, b: std::sync::atomic::AtomicU64, c: Mutex<u8> }}"
            );
            let out = optimize(TokenStream::new(), src.parse().unwrap()).to_string();
            assert!(!out.contains("compile_error"), "{out}");
            assert!(
                out.contains(&format!("Align{align}")) || out.contains("Align64"),
                "{out}"
            );
        }
        let out = optimize(
            TokenStream::new(),
            "#[repr(align(1073741824))] struct S { a: u64 }"
                .parse()
                .unwrap(),
        )
        .to_string();
        assert!(out.contains("no larger than 536870912"), "{out}");
    }

    #[test]
    fn generated_code_names_the_crate_as_told() {
        let src = "#[layout(crate = \"my::facade::cl\")] struct S { #[layout(pinned)] a: u8, \
                   #[layout(size = 8, align = 8)] b: Foo, c: std::sync::atomic::AtomicU64, d: Mutex<u8> }";
        let (derived, optimized) = both(src);
        for out in [derived, optimized] {
            assert!(!out.contains("compile_error"), "{out}");
            assert!(!out.contains(":: cachelayout"), "{out}");
            assert!(out.contains("my :: facade :: cl :: __private"), "{out}");
        }
        let optimized = optimize(
            quote::quote!(crate = "my::cl"),
            "struct S { a: u8, c: std::sync::atomic::AtomicU64 }"
                .parse()
                .unwrap(),
        )
        .to_string();
        assert!(!optimized.contains(":: cachelayout"), "{optimized}");
        // The placeholder impls of a rejected struct too.
        let (derived, _) =
            both("#[layout(crate = \"my::cl\")] struct S { #[layout(bogus)] a: u8 }");
        assert!(
            derived.contains("compile_error") && !derived.contains(":: cachelayout"),
            "{derived}"
        );
        assert!(derived.contains("my :: cl :: CacheLayout"), "{derived}");
    }
}

#[cfg(test)]
mod generic_tests {
    use super::*;

    fn derived(src: &str) -> String {
        derive(src.parse().unwrap()).to_string()
    }

    #[test]
    fn a_generic_struct_is_proven_at_its_definition() {
        let out = derived("struct Pair<T> { val: T, hot: std::sync::atomic::AtomicU64 }");
        assert!(out.contains("compile_error"), "{out}");
        assert!(
            out.contains("read-mostly `val` and lockless `hot` may share"),
            "{out}"
        );
        // The suggested layout is proven.
        let start = out.find("#[repr(C)] struct Pair").unwrap();
        let end = start + out[start..].find('}').unwrap() + 1;
        let suggested = out[start..end].replace("\\\"", "\"");
        let again = derived(&suggested);
        assert!(!again.contains("compile_error"), "{suggested}\n{again}");
        // A marker between, under repr(C): proven.
        let fine = derived(
            "#[repr(C)] struct Pair<T> { val: T, _a: [cachelayout::align::Align64; 0], \
             hot: std::sync::atomic::AtomicU64 }",
        );
        assert!(!fine.contains("compile_error"), "{fine}");
    }
}
