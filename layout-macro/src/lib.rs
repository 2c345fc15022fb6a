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
#[cfg(test)]
mod determinism;
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
/// writer group) at any offset `align_of::<Self>()` lets an instance start
/// at, and implements `cachelayout::CacheLayout`.
///
/// The check is one `const` item per lockless field, evaluated by rustc with
/// `offset_of!` and `size_of`, so it judges the struct as rustc really lays
/// it out. The error names the two fields, the line and the phase, and the
/// order the solver suggests:
///
/// ```text
/// error[E0080]: evaluation panicked: cachelayout: lockless `requests` (bytes 8..16) and
/// read-mostly `max_body_bytes` (bytes 0..8) share cache line 0 of `ServerStats` when it
/// starts at a 64-byte line boundary; suggested order (with #[repr(C)]; ...): ...
/// ```
///
/// # Field attributes
///
/// `#[layout(read_mostly)]`, `#[layout(locked_write = "lock")]`,
/// `#[layout(lockless)]` (alias `lockless_atomic`),
/// `#[layout(lockless(group = "producer"))]`, `#[layout(cold)]`,
/// `#[layout(pinned)]`, `#[layout(size = N, align = M)]` (checked against the
/// real size and alignment).
///
/// # Defaults
///
/// A field without an access attribute gets its class from its type:
/// `Atomic*` (also in arrays, `CachePadded`, `ManuallyDrop`) is `lockless`
/// (one shared writer group); `Mutex<T>` / `RwLock<T>` (std, parking_lot) is
/// `locked_write` under a lock named after the field; anything else is
/// `read_mostly`, because a struct shared as `&S` changes only through
/// interior mutability.
///
/// # Struct attributes
///
/// `#[layout(line = 64)]` (32, 64, 128, 256), `#[layout(objective =
/// "balanced" | "min-diff" | "compact-hot")]`, `#[layout(time_limit_ms = N)]`
/// (for the suggestion), `#[layout(report_only)]` (report, do not assert).
///
/// Accepts named and tuple structs, lifetime parameters and `repr(packed)`;
/// rejects enums, unions and type or const parameters with an error that
/// says why.
#[proc_macro_derive(CacheLayout, attributes(layout))]
pub fn derive_cache_layout(item: TokenStream) -> TokenStream {
    expand::derive(item.into()).into()
}

/// Rewrites a struct into `#[repr(C)]` in the order the solver picks (the
/// smallest size that keeps the rule), with zero-sized aligned markers
/// (`[Align64; 0]`) or padding where a field must start further on, checks
/// the result at compile time like `#[derive(CacheLayout)]` does, and
/// implements `cachelayout::CacheLayout`.
///
/// Keeps visibility, doc comments, other attributes and derives. The
/// markers are private fields: build values inside the struct's module
/// (with `#[derive(Default)]`, `S { a, b, ..Default::default() }`). A field
/// whose size the macro does not know (a `Mutex`, a type from another crate)
/// gets cache lines of its own unless it has a `#[layout(size = N, align =
/// M)]` hint; a wrong hint is a compile error that gives the real size.
///
/// Takes the same `#[layout(..)]` attributes and defaults as the derive
/// (except `report_only`); the struct options may also be its arguments:
/// `#[cachelayout::optimize(line = 128, objective = "min-diff")]`. The solver
/// runs within `time_limit_ms` (default 15); past it the best verified
/// heuristic layout is used and `layout_report()` says so.
///
/// Rejects enums, unions, tuple structs, `repr(packed)`,
/// `repr(transparent)`, type or const parameters, and `#[cfg]` fields or
/// `#[cfg_attr(.., layout(..))]` (it runs before `cfg` is evaluated), each
/// with an error that says why.
#[proc_macro_attribute]
pub fn optimize(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::optimize(args.into(), item.into()).into()
}
