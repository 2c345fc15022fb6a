//! The proc-macros of [cachelayout](https://docs.rs/cachelayout): use them
//! through the `cachelayout` crate, which documents them and provides the
//! `CacheLayout` trait and the runtime support the generated code needs.
//!
//! The crate is a thin shell over layout-core: `attr` parses the item
//! (`derives` names the derives whose meaning follows the field order),
//! `model` builds layout-core's model with `size_model` and `defaults`,
//! `plan` runs the solver within its budget, `prove` proves a generic
//! struct's rule for every instantiation at its definition, `codegen`
//! writes the assertions, the trait impl and the rewritten struct; `expand`
//! ties them.
//! What `CachePadded` gives beyond the rule has a module each:
//! `writer_groups` (the cost of an atomic's own default group),
//! `target_line` (`line = "target"`), `isolation` (`isolated`),
//! `element_arrays` (`per_element`, the warning on arrays of atomics) and
//! `lock_words` (locks kept off read-mostly lines).

mod attr;
mod codegen;
mod defaults;
mod derives;
#[cfg(test)]
mod determinism;
mod element_arrays;
mod expand;
mod isolation;
mod krate;
mod lock_words;
mod model;
mod plan;
mod prove;
mod size_model;
mod target_line;
#[cfg(test)]
mod timing;
mod types;
mod writer_groups;

use proc_macro::TokenStream;

/// Checks a struct as written: fails the build when a lockless field shares
/// a cache line with a read-mostly one (or with a lockless field of another
/// writer group) at any offset `align_of::<Self>()` lets an instance start
/// at, and implements `cachelayout::CacheLayout`.
///
/// The check is one `const` item per struct, evaluated by rustc with
/// `offset_of!` and `size_of`, so it judges the struct as rustc really lays
/// it out (for a generic struct: `CacheLayout::__CHECK`, per instantiation).
/// A generic struct is also proven at its definition for every
/// instantiation, with any size and alignment for the fields whose size
/// depends on the parameters: if the macro cannot prove the rule (without
/// `#[repr(C)]` rustc may put any two fields side by side), the error is at
/// the struct, under `cargo check` too, and names the fields that may share
/// a line and the fixes. The one error names every lockless field that shares a line, the fields
/// it shares with, the line and the phase, and the layout the solver
/// suggests as Rust:
///
/// ```text
/// error[E0080]: evaluation panicked: cachelayout: `ServerStats` breaks the rule when it
/// starts at a 64-byte line boundary: lockless `requests` (bytes 8..16) shares cache line 0
/// with read-mostly `max_body_bytes` (bytes 0..8), `timeout_ms`; suggested layout ...:
/// #[repr(C)] struct ServerStats { pub max_body_bytes: u64, pub timeout_ms: u32, _pad0: [u8; 60], pub requests: AtomicU64 }
/// ```
///
/// # Field attributes
///
/// `#[layout(read_mostly)]`, `#[layout(locked_write = "lock")]`,
/// `#[layout(lockless)]` (alias `lockless_atomic`),
/// `#[layout(lockless(group = "producer"))]`, `#[layout(cold)]`,
/// `#[layout(pinned)]`, `#[layout(size = N, align = M)]` (checked against the
/// real size and alignment), `#[layout(path = "tx")]` (repeatable: the hot
/// paths that touch the field), `#[layout(per_element)]` (`optimize` only:
/// each element of an array on lines of its own, as
/// `cachelayout::LinePadded<T>`; an array of atomics without an attribute
/// is warned about).
///
/// # Defaults
///
/// A field without an access attribute gets its class from its type:
/// `Atomic*` (also in arrays, `CachePadded`, `ManuallyDrop`) is `lockless`
/// in a writer group of its own, named after the field (different threads
/// write different atomics; `#[layout(lockless(group = "g"))]` groups the
/// ones one thread writes together); `Mutex<T>` / `RwLock<T>` (std, parking_lot) is
/// `locked_write` under a lock named after the field, and a lock word (its
/// state is written by every locker, so it may not share a line with
/// read-mostly fields; the fields it guards may); anything else is
/// `read_mostly`, because a struct shared as `&S` changes only through
/// interior mutability.
///
/// # Struct attributes
///
/// `#[layout(line = 64)]` (32, 64, 128, 256; `line = "target"`: the size
/// `CachePadded` uses on the target, one expansion per size under `cfg`),
/// `#[layout(isolated)]` (line-aligned start and end: `optimize` aligns the
/// struct to the line, the derive asserts it is), `#[layout(objective =
/// "balanced" | "min-diff" | "compact-hot")]`, `#[layout(work_limit = N)]`
/// (the solver's deterministic budget, for the suggestion),
/// `#[layout(time_limit_ms = N)]` (its safety stop), `#[layout(contains =
/// "lockless")]` (the class the type carries into other structs),
/// `#[layout(report_only)]` (report, do not assert), `#[layout(crate =
/// "my_facade::cachelayout")]` (the path generated code names cachelayout
/// by, when it comes through a re-export; a dependency renamed in
/// `Cargo.toml` is found without it).
///
/// Accepts named and tuple structs, lifetime, type and const parameters,
/// where clauses and `repr(packed)`; rejects enums, unions and fields that
/// hold a `?Sized` type parameter in place with an error that says why.
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
/// markers are private fields; build values with the generated `const fn
/// new(..)` (every field in declaration order; rename it with
/// `#[layout(constructor = "name")]`, or `constructor = false`), or with
/// `#[derive(Default)]` below the attribute, which becomes an impl that
/// fills them (`#[derive(Debug)]` likewise prints only the user's fields).
/// A field whose size the macro does not know (a `Mutex`, a type from
/// another crate, a type parameter) gets cache lines of its own unless it
/// has a `#[layout(size = N, align = M)]` hint (a wrong hint is a compile
/// error that gives the real size), or no field must keep off its lines:
/// then it goes after every other field, with no padding.
///
/// Derives below the attribute whose meaning follows the field order
/// (serde's `Serialize`/`Deserialize`, borsh, bincode's `Encode`/`Decode`,
/// rkyv, zerocopy, bytemuck, `PartialOrd`/`Ord`) are an error when the
/// layout moves fields, unless the author opts in with
/// `#[cachelayout::optimize(reorder_serialized)]` or `reorder_ord`.
///
/// Takes the same `#[layout(..)]` attributes and defaults as the derive
/// (except `report_only`); the struct options may also be its arguments:
/// `#[cachelayout::optimize(line = 128, objective = "min-diff")]`. The solver
/// runs within a deterministic work budget (`work_limit`), so the same
/// source gives the same layout on every machine; its time limit is a
/// safety stop that turns into a compile error, never a different layout.
///
/// Rejects enums, unions, tuple structs, `repr(packed)`,
/// `repr(transparent)`, and `#[cfg]` fields or `#[cfg_attr(..,
/// layout(..))]` (it runs before `cfg` is evaluated), each with an error
/// that says why. Derives go below the attribute: above it they run on the
/// struct before the rewrite (`Default` or `Clone` there fail with rustc's
/// "missing field `__cachelayout_..`"). A `new` of your own collides with
/// the generated constructor (rustc's "duplicate definitions"): rename
/// that with `constructor = "from_fields"`.
#[proc_macro_attribute]
pub fn optimize(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::optimize(args.into(), item.into()).into()
}
