//! A small view of a `syn::Type`: what kind of type it is, its last path
//! segment's name and generic arguments. The size model and the default
//! access classes both read types through this view.

use syn::{Expr, GenericArgument, Lit, PathArguments, Type};

/// The shape of a type as written.
pub enum Shape<'a> {
    /// A path type, by the name of its last segment (`std::sync::Mutex<T>` is
    /// `Mutex` with the type argument `T`).
    Named { name: String, args: Vec<&'a Type> },
    /// `[T; N]`; `len` is `None` when `N` is not an integer literal.
    Array { elem: &'a Type, len: Option<u64> },
    /// `&T` or `&mut T`.
    Reference { elem: &'a Type },
    /// `*const T` or `*mut T`.
    Pointer { elem: &'a Type },
    /// `[T]`: unsized.
    Slice,
    /// `dyn Trait` (or a bare trait object): unsized.
    TraitObject,
    /// `(A, B, ..)`; `()` has no elements.
    Tuple(Vec<&'a Type>),
    /// `fn(..) -> ..`.
    FnPointer,
    /// Anything else (macros, `impl Trait`, `_`, `!`).
    Other,
}

/// The shape of `ty`, looking through parentheses and invisible groups.
pub fn shape(ty: &Type) -> Shape<'_> {
    match ty {
        Type::Group(g) => shape(&g.elem),
        Type::Paren(p) => shape(&p.elem),
        Type::Path(p) if p.qself.is_none() => match p.path.segments.last() {
            Some(seg) => Shape::Named {
                name: seg.ident.to_string(),
                args: type_args(&seg.arguments),
            },
            None => Shape::Other,
        },
        Type::Array(a) => Shape::Array {
            elem: &a.elem,
            len: literal_len(&a.len),
        },
        Type::Reference(r) => Shape::Reference { elem: &r.elem },
        Type::Ptr(p) => Shape::Pointer { elem: &p.elem },
        Type::Slice(_) => Shape::Slice,
        Type::TraitObject(_) => Shape::TraitObject,
        Type::Tuple(t) => Shape::Tuple(t.elems.iter().collect()),
        Type::FnPtr(_) => Shape::FnPointer,
        _ => Shape::Other,
    }
}

/// The first type argument of a named type (`T` of `Option<T>`).
pub fn first_arg<'a>(args: &[&'a Type]) -> Option<&'a Type> {
    args.first().copied()
}

/// True for types that are known to be unsized (`str`, `[T]`, `dyn Trait`,
/// and the std path/string slices): pointers to them are fat.
pub fn is_unsized(ty: &Type) -> bool {
    match shape(ty) {
        Shape::Slice | Shape::TraitObject => true,
        Shape::Named { name, args } => {
            args.is_empty() && matches!(name.as_str(), "str" | "OsStr" | "Path" | "CStr")
        }
        _ => false,
    }
}

/// The type as a short string for reports: `Option<&'a str>`, `[u64; 4]`.
pub fn display(ty: &Type) -> String {
    display_tokens(&quote::quote!(#ty))
}

/// Tokens as compact text (`<'a, T: Copy>`, `pub(crate)`).
pub fn display_tokens(tokens: &proc_macro2::TokenStream) -> String {
    // Tokens print separated by spaces (`Option < & 'a str >`): drop the
    // spaces after openers and before closers and separators.
    // Long streams may print with line breaks: one line, like any space.
    let raw = tokens.to_string().replace('\n', " ");
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' {
            let glue_after = matches!(out.chars().last(), Some('<' | '&' | '(' | '[' | ':' | '*'));
            let glue_before = matches!(
                chars.peek(),
                Some('<' | '>' | ',' | ')' | ']' | ':' | ';' | '(')
            );
            if glue_after || glue_before {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// True when `ty` names any of `idents` (a generic parameter) anywhere.
pub fn mentions(ty: &Type, idents: &[String]) -> bool {
    fn walk(tokens: proc_macro2::TokenStream, idents: &[String]) -> bool {
        tokens.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => idents.iter().any(|n| i == n),
            proc_macro2::TokenTree::Group(g) => walk(g.stream(), idents),
            _ => false,
        })
    }
    !idents.is_empty() && walk(quote::quote!(#ty), idents)
}

/// Type parameters declared `?Sized` (in the parameter list or the where
/// clause): a pointer to one may be thin or fat, so its size is unknown.
pub fn maybe_unsized_params(generics: &syn::Generics) -> Vec<String> {
    let is_maybe = |bounds: &syn::punctuated::Punctuated<syn::TypeParamBound, syn::Token![+]>| {
        bounds
            .iter()
            .any(|b| matches!(b, syn::TypeParamBound::Trait(t) if t.maybe.is_some()))
    };
    let mut out: Vec<String> = generics
        .type_params()
        .filter(|t| is_maybe(&t.bounds))
        .map(|t| t.ident.to_string())
        .collect();
    if let Some(w) = &generics.where_clause {
        for p in &w.predicates {
            if let syn::WherePredicate::Type(t) = p {
                if is_maybe(&t.bounds) {
                    let ty = &t.bounded_ty;
                    out.push(quote::quote!(#ty).to_string());
                }
            }
        }
    }
    out
}

/// True when `ty` holds a value of one of `params` (type parameters that
/// may be unsized) in place, so that it may be unsized itself: the
/// parameter, or a std wrapper that stores its argument inline (`Cell<T>`,
/// `UnsafeCell<T>`, `ManuallyDrop<T>`, `Mutex<T>`, `RwLock<T>`, ..). Behind a
/// pointer (`&T`, `Box<T>`, `Arc<T>`, ..) it is sized; other types are
/// left to rustc.
pub fn holds_maybe_unsized(ty: &Type, params: &[String]) -> bool {
    match shape(ty) {
        Shape::Named { name, args } if args.is_empty() => {
            params.contains(&name) && is_bare_ident(ty)
        }
        Shape::Named { name, args } => {
            matches!(
                name.as_str(),
                "Cell" | "UnsafeCell" | "SyncUnsafeCell" | "ManuallyDrop" | "Mutex" | "RwLock"
            ) && args.iter().any(|a| holds_maybe_unsized(a, params))
        }
        _ => false,
    }
}

/// True when rustc can give `ty` no class of its own through
/// `cachelayout::AccessClass`, whatever the instantiation: a type parameter
/// `params` names (in the generic impl its bound cannot be proven), a plain
/// scalar, a pointer, reference, `Box`, `Arc`, `Rc`, `Weak`, `NonNull`,
/// `Vec` or `String` (what they point to is not in the struct), or an array, `Option`, `ManuallyDrop`,
/// `UnsafeCell`, `Cell`, `MaybeUninit` or `PhantomData` of those. A field
/// without an attribute of any other type may count as lockless or locked
/// in the checks (its type's `AccessClass`).
pub fn carries_no_class(ty: &Type, params: &[String]) -> bool {
    match shape(ty) {
        Shape::Named { name, args } if args.is_empty() => {
            (params.contains(&name) && is_bare_ident(ty))
                || matches!(
                    name.as_str(),
                    "bool"
                        | "char"
                        | "f32"
                        | "f64"
                        | "u8"
                        | "u16"
                        | "u32"
                        | "u64"
                        | "u128"
                        | "usize"
                        | "i8"
                        | "i16"
                        | "i32"
                        | "i64"
                        | "i128"
                        | "isize"
                )
        }
        // Pointers: what they point to is not in the struct's lines.
        Shape::Named { name, .. }
            if matches!(
                name.as_str(),
                "Box" | "Arc" | "Rc" | "Weak" | "NonNull" | "Vec" | "String"
            ) =>
        {
            true
        }
        Shape::Named { name, args } => {
            matches!(
                name.as_str(),
                "Option" | "ManuallyDrop" | "UnsafeCell" | "Cell" | "MaybeUninit" | "PhantomData"
            ) && args.iter().all(|a| carries_no_class(a, params))
        }
        Shape::Array { elem, .. } => carries_no_class(elem, params),
        Shape::Reference { .. } | Shape::Pointer { .. } | Shape::FnPointer => true,
        Shape::Tuple(elems) => elems.is_empty(),
        _ => false,
    }
}

/// The type parameters not bound by `AccessClass` (in the parameter list
/// or the where clause): in the generic impls the checks live in, a
/// parameter without that bound carries no class. With it, the checks ask
/// the instantiation's type.
pub fn params_without_access_class(generics: &syn::Generics) -> Vec<String> {
    let names_it = |tokens: proc_macro2::TokenStream| mentions_ident(tokens, "AccessClass");
    generics
        .type_params()
        .filter(|t| {
            let bounds = &t.bounds;
            let inline = names_it(quote::quote!(#bounds));
            let in_where = generics
                .where_clause
                .iter()
                .flat_map(|w| &w.predicates)
                .any(|p| {
                    matches!(p, syn::WherePredicate::Type(pt)
                    if is_ident(&pt.bounded_ty, &t.ident) && {
                        let b = &pt.bounds;
                        names_it(quote::quote!(#b))
                    })
                });
            !inline && !in_where
        })
        .map(|t| t.ident.to_string())
        .collect()
}

fn mentions_ident(tokens: proc_macro2::TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == name,
        proc_macro2::TokenTree::Group(g) => mentions_ident(g.stream(), name),
        _ => false,
    })
}

fn is_ident(ty: &Type, ident: &syn::Ident) -> bool {
    match ty {
        Type::Path(p) => p.qself.is_none() && p.path.is_ident(ident),
        Type::Group(g) => is_ident(&g.elem, ident),
        Type::Paren(p) => is_ident(&p.elem, ident),
        _ => false,
    }
}

/// `T`: a path of one segment, no arguments.
fn is_bare_ident(ty: &Type) -> bool {
    match ty {
        Type::Group(g) => is_bare_ident(&g.elem),
        Type::Paren(p) => is_bare_ident(&p.elem),
        Type::Path(p) => p.qself.is_none() && p.path.get_ident().is_some(),
        _ => false,
    }
}

fn type_args(args: &PathArguments) -> Vec<&Type> {
    match args {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|arg| match arg {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn literal_len(len: &Expr) -> Option<u64> {
    match len {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i.base10_parse().ok(),
            _ => None,
        },
        Expr::Group(g) => literal_len(&g.expr),
        Expr::Paren(p) => literal_len(&p.expr),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(s: &str) -> Type {
        syn::parse_str(s).unwrap()
    }

    #[test]
    fn display_is_compact() {
        assert_eq!(display(&ty("Option < & 'a str >")), "Option<&'a str>");
        assert_eq!(display(&ty("[u64; 4]")), "[u64; 4]");
        assert_eq!(
            display(&ty("std::sync::Mutex<Vec<u8>>")),
            "std::sync::Mutex<Vec<u8>>"
        );
        assert_eq!(display(&ty("*mut u8")), "*mut u8");
        assert_eq!(display(&ty("&mut [u8]")), "&mut [u8]");
        assert_eq!(display(&ty("(u8, u16)")), "(u8, u16)");
    }

    #[test]
    fn maybe_unsized_fields() {
        let params = vec!["T".to_string()];
        for held in [
            "T",
            "UnsafeCell<T>",
            "std::cell::Cell<T>",
            "Mutex<ManuallyDrop<T>>",
        ] {
            assert!(holds_maybe_unsized(&ty(held), &params), "{held}");
        }
        for sized in [
            "Box<T>",
            "&'a T",
            "*const T",
            "Arc<T>",
            "PhantomData<T>",
            "U",
            "Wrapper<T>",
            "u8",
        ] {
            assert!(!holds_maybe_unsized(&ty(sized), &params), "{sized}");
        }
        let generics: syn::Generics = syn::parse_str("<T: ?Sized, U, V: Send + ?Sized>").unwrap();
        for fixed in [
            "T",
            "Box<[AtomicU64]>",
            "UnsafeCell<T>",
            "[Option<T>; 4]",
            "u8",
            "&'a Config",
            "PhantomData<T>",
        ] {
            assert!(carries_no_class(&ty(fixed), &params), "{fixed}");
        }
        for carried in [
            "Counters",
            "Slot<T>",
            "UnsafeCell<AtomicU64>",
            "Mutex<T>",
            "U",
        ] {
            assert!(!carries_no_class(&ty(carried), &params), "{carried}");
        }
        assert_eq!(maybe_unsized_params(&generics), vec!["T", "V"]);
    }

    #[test]
    fn shapes() {
        assert!(matches!(
            shape(&ty("[u8; 3]")),
            Shape::Array { len: Some(3), .. }
        ));
        assert!(matches!(
            shape(&ty("[u8; N]")),
            Shape::Array { len: None, .. }
        ));
        assert!(
            matches!(shape(&ty("::core::sync::atomic::AtomicU64")), Shape::Named { ref name, .. } if name == "AtomicU64")
        );
        assert!(is_unsized(&ty("str")));
        assert!(is_unsized(&ty("dyn Fn()")));
        assert!(!is_unsized(&ty("u8")));
    }
}
