//! cachelayout: struct layouts for multi-core machines, proven free of false
//! sharing at the smallest cost.
//!
//! Mark how each field is accessed, and the macros keep lockless (atomic)
//! fields off the cache lines of read-mostly fields — checked by rustc with
//! the real sizes and offsets:
//!
//! * [`#[derive(CacheLayout)]`](derive@CacheLayout) checks a struct as you
//!   wrote it, and fails the build (naming the fields, the line and a better
//!   order) when a lockless field shares a line with a read-mostly one.
//! * [`#[cachelayout::optimize]`](macro@optimize) rewrites the struct into
//!   `#[repr(C)]` in the order the solver picks, with zero-sized aligned
//!   markers where a field must start a new line, and checks the result the
//!   same way.
//!
//! ```
//! use std::sync::atomic::AtomicU64;
//!
//! #[cachelayout::optimize]
//! pub struct Stats {
//!     name: &'static str,   // read_mostly (default for plain fields)
//!     hits: AtomicU64,      // lockless (default for atomics)
//!     max_conn: u32,        // read_mostly
//!     misses: AtomicU64,    // lockless
//! }
//!
//! use cachelayout::CacheLayout;
//! println!("{}", Stats::layout_report());
//! ```
//!
//! # Access classes
//!
//! | attribute | class | meaning |
//! |---|---|---|
//! | `#[layout(read_mostly)]` | R | read on hot paths by many CPUs, written rarely |
//! | `#[layout(locked_write = "lock")]` | L(lock) | read and written only while holding `lock` |
//! | `#[layout(lockless)]` (alias `lockless_atomic`) | A | written without a lock by many CPUs |
//! | `#[layout(lockless(group = "producer"))]` | A(producer) | as above; fields of different writer groups must not share a line either |
//! | `#[layout(cold)]` | C | rarely touched; may fill any line |
//! | `#[layout(pinned)]` | | keeps the offset it has in the struct as declared (as `repr(C)`) |
//! | `#[layout(size = N, align = M)]` | | size and alignment of a type the macro cannot size (checked at compile time) |
//! | `#[layout(per_element)]` | | `optimize`, on an array: each element on lines of its own (the element type becomes [`LinePadded<T>`](LinePadded)) |
//!
//! **The rule:** no cache line holds bytes of a lockless field and of a
//! read-mostly field, nor of lockless fields of different writer groups, at
//! any offset the struct's alignment lets an instance start at.
//!
//! # Defaults
//!
//! A struct shared as `&S` across threads changes only through interior
//! mutability, so a field without an access attribute gets its class from its
//! type:
//!
//! | field type | default class |
//! |---|---|
//! | `Atomic*`, also inside arrays, `CachePadded<..>`, `ManuallyDrop<..>` | `lockless`, a writer group of its own named after the field |
//! | `Mutex<T>`, `RwLock<T>` (std, parking_lot, ...) | `locked_write` under a lock named after the field, and a lock word |
//! | anything else | `read_mostly` |
//!
//! Different atomics are usually written by different threads (a queue's
//! `head` by consumers, its `tail` by producers), so by default no two of
//! them share a cache line; `optimize`'s report says what that costs. Put
//! the atomics one thread writes together in one group with
//! `#[layout(lockless(group = "name"))]` (naming a field's name joins that
//! field's default group).
//!
//! A lock word (a `locked_write` field whose type is a lock: its state is
//! written by every locker) may not share a line with read-mostly fields,
//! like a lockless field of a writer group of its own; the fields it guards
//! may share its line.
//!
//! An array of atomics without an attribute is warned about: different
//! threads usually write different elements, which sit on shared lines;
//! `#[layout(per_element)]` (with `optimize`) or a named writer group says
//! which is meant.
//!
//! An explicit attribute always wins. Mark fields under a lock with
//! `#[layout(locked_write = "lock_field")]` to let them share the lock's line.
//!
//! # Struct options
//!
//! `#[layout(line = 64)]` (32, 64, 128 or 256; default 64 on every target,
//! so the layout depends on the source alone; `line = "target"` takes the
//! size `crossbeam_utils::CachePadded` uses on the target, 128 on x86_64
//! and aarch64, where adjacent-line prefetch pairs lines),
//! `#[layout(isolated)]` (the struct starts and ends on a line boundary, as
//! a `CachePadded` does, so no neighbour in memory shares its edge lines;
//! the report says when a written field sits on an unisolated edge line),
//! `#[layout(objective = "balanced" | "min-diff" | "compact-hot")]` (see
//! layout-core's `Preset`), `#[layout(work_limit = N)]` (the solver's
//! deterministic budget: the same layout on every machine),
//! `#[layout(time_limit_ms = N)]` (a safety stop that can only turn into a
//! compile error), `#[layout(contains = "lockless")]` (what the type carries
//! into structs that hold it, see [`AccessClass`]),
//! `#[layout(crate = "my_facade::cachelayout")]` (the path the generated
//! code names this crate by, when it comes through a re-export; a
//! dependency renamed in `Cargo.toml` is found without it), for `optimize`
//! `#[layout(constructor = "name")]`, and for the derive only
//! `#[layout(report_only)]` (report the layout, do not fail the build). With
//! `optimize` the options can also go in its arguments:
//! `#[cachelayout::optimize(line = 128)]`.

/// layout-core (model, solver, verifier, reports), with the `model` feature
/// (on by default; off with `default-features = false`).
#[cfg(feature = "model")]
pub use layout_core as core;
pub use layout_macro::{optimize, CacheLayout};

mod access;
pub use access::{Access, AccessClass};

mod line_padded;
pub use line_padded::LinePadded;

/// Zero-sized types of every alignment rustc accepts (2 to 2^29): a
/// `[Align64; 0]` field starts the next `#[repr(C)]` field on a 64-byte
/// boundary. The suggestions of
/// `#[derive(CacheLayout)]` use them where a field of unknown size comes
/// before the boundary.
pub mod align {
    pub use crate::__private::{
        Align1024, Align1048576, Align128, Align131072, Align134217728, Align16, Align16384,
        Align16777216, Align2, Align2048, Align2097152, Align256, Align262144, Align268435456,
        Align32, Align32768, Align33554432, Align4, Align4096, Align4194304, Align512, Align524288,
        Align536870912, Align64, Align65536, Align67108864, Align8, Align8192, Align8388608,
    };
}

/// Evaluates the compile-time checks of `T` (for a generic struct, of this
/// instantiation): `const _: () = cachelayout::assert_layout::<Ring<u64>>();`
/// fails the build if `Ring<u64>` breaks the rule. Non-generic structs are
/// checked where they are declared. A generic struct under the derive is
/// proven at its definition for every instantiation; the checks of one
/// instantiation, with its real offsets (and its size hints), run when it
/// is built with the generated constructor or `Default`, asked for its
/// report, held in a checked struct, or named here.
pub const fn assert_layout<T: CacheLayout>() {
    #[allow(clippy::let_unit_value)]
    let () = T::__CHECK;
}

/// Puts the `#[cfg(..)]` it starts with on every item after it: the
/// expansion of `#[layout(line = "target")]`, one per line size.
#[doc(hidden)]
#[macro_export]
macro_rules! __cfg_items {
    (#[cfg($pred:meta)] $($item:item)*) => {
        $(#[cfg($pred)] $item)*
    };
}

#[doc(hidden)]
#[path = "private/mod.rs"]
pub mod __private;

/// A struct whose layout was checked (or written) by cachelayout's macros.
///
/// Implemented by `#[derive(CacheLayout)]` and `#[cachelayout::optimize]`;
/// do not implement it by hand. Fields without an access attribute get
/// their class from their type: `Atomic*` are lockless, `Mutex`/`RwLock`
/// are locked under a lock named after the field, everything else is
/// read-mostly (see the [crate documentation](crate) for all attributes).
pub trait CacheLayout: Sized {
    /// The cache line size the layout was checked for (`#[layout(line = ..)]`).
    const LINE_SIZE: usize;

    /// Cache lines an instance spans when it starts on a line boundary.
    const LINES: usize = ::core::mem::size_of::<Self>().div_ceil(Self::LINE_SIZE);

    #[doc(hidden)]
    const __INFO: __private::Info;

    /// The checks of a generic struct, evaluated per instantiation (see
    /// [`assert_layout`]); non-generic structs are checked at their
    /// declaration and leave this empty.
    #[doc(hidden)]
    const __CHECK: () = ();

    /// The layout in Rust syntax with the real offsets and sizes (from
    /// `offset_of!` and `size_of`), each field's access class and cache
    /// line, the lines that break the rule if any, how the layout was chosen,
    /// and the fields whose size the macro had to guess.
    fn layout_report() -> String {
        #[allow(clippy::let_unit_value)]
        let () = Self::__CHECK;
        __private::report::<Self>()
    }

    /// The layout as layout-core sees it: the fields with their real sizes
    /// and access classes (in declaration order), and their real offsets.
    #[cfg(feature = "model")]
    fn layout_model() -> (core::Struct, core::Layout) {
        __private::model::<Self>()
    }
}
