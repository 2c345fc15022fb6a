//! layout-core: the engine of cachelayout.
//!
//! The data path reads straight through:
//! front-end ([`c`], [`access`]) → [`model::Struct`] → [`solve`] →
//! [`layout::Layout`] → [`verify`] → emitters ([`report`], [`emit`]).

pub mod access;
#[cfg(feature = "btf")]
pub mod btf;
#[cfg(feature = "c-header")]
pub mod c;
pub mod cost;
#[cfg(feature = "dwarf")]
pub mod dwarf;
pub mod emit;
pub mod error;
pub mod growth;
pub mod layout;
pub mod model;
pub mod paths;
pub mod report;
pub mod scan;
pub mod segments;
pub mod solve;
pub mod source;
pub mod typedb;
pub mod verify;

pub use error::Diagnostic;
pub use layout::{Layout, LineConflict, Slot};
pub use model::{Access, Field, Placement, SourceSpan, Struct, Target};
pub use solve::{solve, Solution, SolveError, SolveOptions};
pub use verify::{verify, VerifiedLayout, VerifyError};
