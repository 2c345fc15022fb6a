//! Emitters: a verified proposal as source text. They render a layout; they
//! never compute one.
//!
//! - [`c_diff`]: a unified diff of a C header that reorders a struct's members
//!   into the verified layout's order and adds exactly the alignment and
//!   padding that make gcc place every member at its verified offset.
//! - [`phase_assertion`]: the C line that pins the phase a layout was made for.
//!
//! The C diff is built in two steps, so that the kernel's other idioms can be
//! added as styles without touching the placement logic:
//! 1. `plan` replays C's sequential member placement over the layout's order
//!    and says, member by member, what C needs to hit the verified offset: a
//!    start on a new line of the struct (an alignment break), or explicit
//!    padding bytes (a gap no alignment can express, e.g. a line boundary of
//!    the container in phase mode).
//! 2. `cdiff` writes the members in that order, moving each one's source
//!    lines as a unit, and spells every alignment break in the chosen
//!    [`CStyle`].

mod assertion;
mod attribute;
mod body;
mod cdiff;
mod plan;

pub use assertion::phase_assertion;
pub use cdiff::c_diff;

/// How a C diff expresses "this member starts a new cache line of the struct".
///
/// The placement plan is the same for every style; only the spelling of an
/// alignment break differs. Styles still to come:
/// - `Padding`: a `CACHELINE_PADDING(_padN_);` line before the member (a
///   zero-size, line-aligned member; nothing on !SMP, like the attribute).
/// - `Groups`: each run of members between breaks wrapped in
///   `__cacheline_group_begin_aligned(g)` / `__cacheline_group_end_aligned(g)`,
///   plus a generated `CACHELINE_ASSERT_GROUP_MEMBER` check function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CStyle {
    /// ` ____cacheline_aligned_in_smp` after the declarator of the first
    /// member of each new line (the kernel's `<linux/cache.h>` attribute,
    /// assumed to align to the layout's line size, `SMP_CACHE_BYTES`).
    #[default]
    Aligned,
}
