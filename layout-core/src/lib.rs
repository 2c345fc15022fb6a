//! layout-core: the engine of cachelayout.
//!
//! The data path reads straight through (ARCHITECTURE.md in the repository
//! has the whole map):
//!
//! - front-ends: [`c`] (a C header read by itself), [`btf`] and [`dwarf`]
//!   (the compiler's layouts, through the type database [`typedb`]),
//!   `probe` (the compiler front-end: a probe compiled with a kernel tree's,
//!   a compilation database's or the user's flags, with the `probe`
//!   feature), all reading their inputs through [`files`] (bounded reads),
//!   and the [`access`] file (classes, locks, hot paths, names);
//! - the [`model::Struct`], with the author's structure as ordering
//!   constraints ([`segments`]) and each member's access class from the
//!   access vocabulary ([`class`]: the one definition of the classes);
//! - [`solve`] (a deterministic, work-budgeted search) → [`layout::Layout`]
//!   → [`verify`] (independent of the solver; the only maker of a
//!   [`VerifiedLayout`]); [`propose`] decides, behind one call, what to
//!   solve and which answer to propose (the author's groups, min-diff,
//!   the price of separating locked fields);
//! - renderers: [`report`] (tables, diagrams, JSON, per-path lines from
//!   [`paths`]), [`emit`] (C diffs, changelogs), [`growth`] (what a size
//!   change does to embedding structs) and [`scan`] (whole-program scans);
//! - [`infer`]: access classes from perf profiles and (feature
//!   `infer-clang`) the C sources, written as an access file to review.
//!
//! Shared by all of them, each defined once:
//!
//! - [`place`]: the one placement engine (C's and `repr(C)`'s rules,
//!   bit-fields included), the one `align_up`, and [`place::DataLayout`]
//!   (pointer width, line size, `SMP_CACHE_BYTES`);
//! - [`idioms`]: the kernel's attribute and marker macros, read by the C
//!   front-end and written by the emitters; one lexer for every scan of C
//!   text (`lex`);
//! - [`header_inputs`] (what a header needs from outside: `-D` defines,
//!   the access file's types) and [`suggest`] ("did you mean" names).

pub mod access;
#[cfg(feature = "probe")]
pub mod audit;
pub mod blocks;
#[cfg(feature = "btf")]
pub mod btf;
#[cfg(feature = "c-header")]
pub mod c;
pub mod class;
pub mod configs;
pub mod containers;
pub mod cost;
#[cfg(feature = "dwarf")]
pub mod dwarf;
pub mod embedder_search;
pub mod emit;
pub mod error;
pub mod files;
pub mod growth;
pub mod header_inputs;
pub mod idioms;
pub mod infer;
pub mod layout;
pub(crate) mod lex;
pub mod lock_word;
pub mod model;
pub mod paths;
pub mod place;
#[cfg(feature = "probe")]
pub mod probe;
pub mod propose;
pub mod report;
pub mod scan;
pub mod segments;
pub mod solve;
pub mod source;
pub mod suggest;
pub mod tree_safety;
pub mod typedb;
pub mod verify;

pub use error::Diagnostic;
pub use layout::{Layout, LineConflict, Slot};
pub use model::{Access, Field, Placement, SourceSpan, Struct, Target};
pub use solve::{solve, Solution, SolveError, SolveOptions};
pub use verify::{verify, VerifiedLayout, VerifyError};
