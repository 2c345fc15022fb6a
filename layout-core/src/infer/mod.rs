//! `cachelayout infer`: access classes from evidence, for a person to
//! review. Two sources, merged per member:
//!
//! - profiles: [`c2c`] (`perf c2c report --stdio`) and [`data_type`]
//!   (`perf report -s type,typeoff`, `perf annotate --data-type`), mapped
//!   to members by [`profile`]; they decide how often a member is written;
//! - the C sources ([`sites`]: every access with its kind, its form, the lock
//!   held and whether a hot root reaches it; read by libclang with the
//!   `infer-clang` feature, in [`clang`]); they decide the locks.
//!
//! [`classify`] applies the rules and says what it cannot decide;
//! [`render`] writes the access file (each member with its evidence and a
//! confidence, the ambiguous first) and the JSON of every site.

pub mod c2c;
#[cfg(feature = "infer-clang")]
pub mod clang;
pub mod classify;
pub mod data_type;
pub mod profile;
pub mod render;
pub mod sites;
pub mod wilson;

pub use classify::{classify, Class, Confidence, Rules, Verdict};
