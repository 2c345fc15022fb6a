//! `cachelayout audit`: every false-sharing risk of a tree, ranked with
//! its evidence.
//!
//! - [`roots`]: the roots file (per subsystem: sources, hot and cold roots);
//! - [`candidates`]: pass 1, the structs the audited headers define, ranked
//!   by their types alone (atomics, refcounts, locks next to other data);
//! - [`analyse`] (feature `infer-clang`): pass 2, `infer`'s analysis of the
//!   first candidates within a work budget, each translation unit parsed
//!   once for all of them and kept in [`cache`];
//! - [`finding`]: per struct, the lines where a lockless writer shares a
//!   line with read-mostly members, with the sites that say so and how hot
//!   each side is; [`report`]: the ranking as a table, JSON and a cover
//!   letter; [`lifetime`]: how each struct lives (per object or a
//!   singleton), from the audited sources and the slab caches made anywhere
//!   in the tree ([`tree_allocs`]), and [`cost`]: the weights the ranking
//!   puts on its misses.

pub mod cache;
pub mod candidates;
pub mod cost;
pub mod finding;
pub mod glob;
pub mod hotuse;
pub mod lifetime;
pub mod reading;
pub mod report;
pub mod roots;
pub mod series;
pub mod tree_allocs;

#[cfg(feature = "infer-clang")]
mod pass2;
#[cfg(feature = "infer-clang")]
pub use pass2::{analyse, Audit, Progress, Unit};
