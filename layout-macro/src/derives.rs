//! Derives whose meaning follows the order of the fields: serialization
//! formats that write fields by position (serde with bincode or postcard,
//! borsh, bincode's own traits), byte views of the struct (zerocopy,
//! bytemuck) and the lexicographic comparisons of `PartialOrd` and `Ord`.
//! `#[cachelayout::optimize]` sees the derives below it; when its layout
//! moves fields it refuses such a derive unless the author opted in
//! (`reorder_serialized`, `reorder_ord`). `Debug` (output order), `Hash`
//! (the value, not what equality means) and `PartialEq`/`Eq` keep their
//! meaning and are allowed.

use proc_macro2::Span;

/// Why a derive depends on the field order, and the option that accepts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sensitivity {
    /// Writes or reads the fields in declaration order.
    Serialized,
    /// Compares the fields in declaration order.
    Ordering,
}

impl Sensitivity {
    /// The struct option that accepts a reorder anyway.
    pub fn option(self) -> &'static str {
        match self {
            Sensitivity::Serialized => "reorder_serialized",
            Sensitivity::Ordering => "reorder_ord",
        }
    }
}

/// A derive the macro saw: its last path segment, its crate as the message
/// names it, and where it was written.
#[derive(Clone, Debug)]
pub struct OrderSensitive {
    pub name: String,
    pub family: &'static str,
    pub why: Sensitivity,
    pub span: Span,
}

/// Derive names (the last path segment) whose output follows field order.
const TABLE: &[(&str, &str, Sensitivity)] = &[
    ("Serialize", "serde", Sensitivity::Serialized),
    ("Deserialize", "serde", Sensitivity::Serialized),
    ("BorshSerialize", "borsh", Sensitivity::Serialized),
    ("BorshDeserialize", "borsh", Sensitivity::Serialized),
    (
        "Encode",
        "bincode or parity-scale-codec",
        Sensitivity::Serialized,
    ),
    (
        "Decode",
        "bincode or parity-scale-codec",
        Sensitivity::Serialized,
    ),
    ("BorrowDecode", "bincode", Sensitivity::Serialized),
    ("Archive", "rkyv", Sensitivity::Serialized),
    ("IntoBytes", "zerocopy", Sensitivity::Serialized),
    ("AsBytes", "zerocopy", Sensitivity::Serialized),
    ("FromBytes", "zerocopy", Sensitivity::Serialized),
    ("Pod", "bytemuck", Sensitivity::Serialized),
    ("PartialOrd", "std", Sensitivity::Ordering),
    ("Ord", "std", Sensitivity::Ordering),
];

/// The entry for a derive path, if its meaning follows field order.
pub fn classify(path: &syn::Path) -> Option<OrderSensitive> {
    let last_ident = &path.segments.last()?.ident;
    let last = last_ident.to_string();
    let (name, family, why) = TABLE.iter().find(|(n, _, _)| *n == last)?;
    // `serde::Serialize` is serde whatever the table's guess for the name.
    let first = path.segments.first().map(|s| s.ident.to_string());
    let family = match first.as_deref() {
        Some(krate) if path.segments.len() > 1 && *family != "std" => match krate {
            "serde" => "serde",
            "borsh" => "borsh",
            "bincode" => "bincode",
            "zerocopy" => "zerocopy",
            "bytemuck" => "bytemuck",
            "rkyv" => "rkyv",
            _ => family,
        },
        _ => family,
    };
    Some(OrderSensitive {
        name: (*name).to_string(),
        family,
        why: *why,
        span: last_ident.span(),
    })
}

/// The error for a derive the layout would change the meaning of; `moved`
/// names the fields the layout puts out of declaration order.
pub fn refusal(d: &OrderSensitive, strukt: &str, moved: &str) -> syn::Error {
    let option = d.why.option();
    let msg = match d.why {
        Sensitivity::Serialized => format!(
            "#[cachelayout::optimize] would reorder the fields of `{strukt}` ({moved}), and `{}` \
             ({}) follows the order of the fields: formats that write fields by position (bincode, \
             postcard, ...) would write them in the new order, and data written before the change \
             would decode into the wrong fields; keep the order and check it with \
             #[derive(CacheLayout)] instead, or, if no data written with the old order is ever read, \
             opt in with #[cachelayout::optimize({option})]",
            d.name, d.family
        ),
        Sensitivity::Ordering => format!(
            "#[cachelayout::optimize] would reorder the fields of `{strukt}` ({moved}), and derived \
             `{}` compares fields in declaration order: after the rewrite it would compare them in \
             the new order, and `a < b` could change; implement `{}` by hand in the order you mean, \
             keep the order and check it with #[derive(CacheLayout)], or, if the order of comparison \
             does not matter, opt in with #[cachelayout::optimize({option})]",
            d.name, d.name
        ),
    };
    syn::Error::new(d.span, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(path: &str) -> Option<(String, &'static str, Sensitivity)> {
        classify(&syn::parse_str(path).unwrap()).map(|d| (d.name, d.family, d.why))
    }

    #[test]
    fn order_sensitive_derives() {
        assert_eq!(
            of("Serialize"),
            Some(("Serialize".into(), "serde", Sensitivity::Serialized))
        );
        assert_eq!(of("serde::Deserialize").unwrap().1, "serde");
        assert_eq!(of("bincode::Encode").unwrap().1, "bincode");
        assert_eq!(of("borsh::BorshSerialize").unwrap().1, "borsh");
        assert_eq!(of("Ord").unwrap().2, Sensitivity::Ordering);
        assert_eq!(
            of("core::cmp::PartialOrd").unwrap().2,
            Sensitivity::Ordering
        );
        for fine in ["Debug", "Hash", "PartialEq", "Eq", "Clone", "Default"] {
            assert_eq!(of(fine), None, "{fine}");
        }
    }
}
