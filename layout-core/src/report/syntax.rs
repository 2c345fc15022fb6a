//! How a member declaration is printed: C (`unsigned long nr_pages[4][2][5];`)
//! or Rust (`nr_pages: [u64; 40],`).
//!
//! Front-ends store a field's type as text. The C front-end writes array types
//! as `T[..]` (`unsigned long[4][2][5]`), pointers as `T *` and function
//! pointers as `R (*)(ARGS)`; the Rust front-end writes Rust types. A struct is
//! printed in Rust syntax when any of its field types can only be Rust
//! (`[T; N]`, generics, paths, references, `usize`, `AtomicU64`, ...); types
//! valid in both (`u64`, `bool`) do not decide it.

use crate::model::Struct;

/// The source language a struct is printed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    C,
    Rust,
}

impl Syntax {
    /// Rust when any field type can only be Rust, C otherwise.
    pub fn detect(s: &Struct) -> Syntax {
        if s.fields.iter().any(|f| is_rust_type(&f.ty)) {
            Syntax::Rust
        } else {
            Syntax::C
        }
    }

    /// A member as two columns: `("unsigned long", "nr_pages[4][2][5];")` in
    /// C, `("nr_pages:", "[u64; 40],")` in Rust.
    pub fn member_columns(self, ty: &str, name: &str) -> (String, String) {
        match self {
            Syntax::Rust => (format!("{name}:"), format!("{},", ty.trim())),
            Syntax::C => {
                let (left, right) = c_declarator(ty, name);
                (left, format!("{right};"))
            }
        }
    }

    /// The closing line of a struct definition.
    pub fn closing(self) -> &'static str {
        match self {
            Syntax::C => "};",
            Syntax::Rust => "}",
        }
    }
}

/// Splits a C type text around the declarator name: `unsigned long[4][2]`,
/// `x` gives `("unsigned long", "x[4][2]")`; `struct foo *`, `p` gives
/// `("struct foo *", "p")`; `void (*)(int)`, `cb` gives `("void", "(*cb)(int)")`.
fn c_declarator(ty: &str, name: &str) -> (String, String) {
    let ty = ty.trim();
    if let Some(pos) = ty.find("(*)") {
        let base = ty[..pos].trim_end();
        let rest = &ty[pos + 3..];
        return (base.to_string(), format!("(*{name}){rest}"));
    }
    let dims_start = trailing_array_suffix(ty);
    let (base, dims) = ty.split_at(dims_start);
    (base.trim_end().to_string(), format!("{name}{dims}"))
}

/// Byte index where a trailing run of `[..]` groups starts (`ty.len()` when
/// there is none).
fn trailing_array_suffix(ty: &str) -> usize {
    let bytes = ty.as_bytes();
    let mut start = bytes.len();
    while start > 0 && bytes[start - 1] == b']' {
        match ty[..start].rfind('[') {
            Some(open) => start = open,
            None => break,
        }
        while start > 0 && bytes[start - 1] == b' ' {
            start -= 1;
        }
    }
    // Keep the space before the name: `unsigned long [4]` splits at `[`.
    start + ty[start..].len() - ty[start..].trim_start().len()
}

/// True when `ty` can only be a Rust type.
pub fn is_rust_type(ty: &str) -> bool {
    let ty = ty.trim();
    const RUST_ONLY: &[&str] = &[
        "usize", "isize", "i8", "i16", "i32", "i64", "i128", "u128", "f32", "f64", "str",
    ];
    let first_word: String = ty
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (ty.starts_with('[') && ty.contains(';'))
        || ty.starts_with('&')
        || ty.starts_with("*const ")
        || ty.starts_with("*mut ")
        || ty.starts_with('(')
        || ty.contains("::")
        || ty.contains('<')
        || RUST_ONLY.contains(&first_word.as_str())
        || (first_word.starts_with("Atomic")
            && first_word[6..].starts_with(|c: char| c.is_ascii_uppercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_arrays_pointers_and_function_pointers() {
        assert_eq!(
            c_declarator("unsigned long[4][2][5]", "nr_pages"),
            ("unsigned long".into(), "nr_pages[4][2][5]".into())
        );
        assert_eq!(
            c_declarator("struct foo *", "next"),
            ("struct foo *".into(), "next".into())
        );
        assert_eq!(
            c_declarator("void (*)(int)", "cb"),
            ("void".into(), "(*cb)(int)".into())
        );
        assert_eq!(c_declarator("u8", "gen"), ("u8".into(), "gen".into()));
    }

    #[test]
    fn rust_detection() {
        assert!(is_rust_type("[AtomicU64; 4]"));
        assert!(is_rust_type("AtomicUsize"));
        assert!(is_rust_type("Option<&'a T>"));
        assert!(is_rust_type("std::sync::Mutex<u32>"));
        assert!(!is_rust_type("u64"));
        assert!(!is_rust_type("atomic_long_t"));
        assert!(!is_rust_type("unsigned long[4]"));
        assert!(!is_rust_type("struct list_head"));
    }
}
