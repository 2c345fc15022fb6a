//! Emitters: a verified proposal as source text. They render a layout; they
//! never compute one.
//!
//! - [`c_diff`]: a unified diff of a C header that reorders a struct's members
//!   into the verified layout's order and adds exactly the alignment and
//!   padding that make gcc place every member at its verified offset, in one
//!   of the kernel's three idioms ([`CStyle`]).
//! - [`changelog`]: a commit-message paragraph with the numbers (the mm changelogs'
//!   style): what shared which line, what moved, the line table before and
//!   after, the size change and the proof.
//! - [`phase_assertions`]: the C lines that pin the phases a layout was made for.
//! - [`c_diff_in`]: the C diff written only with the idioms the translation
//!   unit defines ([`TreeIdioms`]), the `Groups` style's check function apart.
//! - [`patch_mail`]: the changelog and the diff as a `git format-patch` mail.
//!
//! The C diff is built in steps, so that the styles share the placement logic:
//! 1. `plan` replays C's sequential member placement over the layout's order
//!    and says, member by member, what C needs to hit the verified offset: a
//!    start on a new line of the struct (an alignment break), or explicit
//!    padding bytes (a gap no alignment can express, e.g. a line boundary of
//!    the container in phase mode); and whether the struct itself needs an
//!    `aligned` attribute.
//! 2. `groups` (the `Groups` style only) cuts the members into named groups
//!    at the breaks and at changes of access class.
//! 3. `render` writes the members in that order, moving each one's source
//!    lines as a unit, and spells every break in the chosen [`CStyle`],
//!    recording what C will see.
//! 4. `replay` places that record as C does and refuses the diff unless every
//!    member lands on its verified offset, with the verified size and
//!    alignment.

mod assertion;
mod attribute;
mod body;
mod cdiff;
mod changelog;
mod check_fn;
mod groups;
mod line_diff;
mod mail;
mod markup;
mod plan;
mod render;
mod replay;
mod tree_idioms;

pub use assertion::{phase_assertions, unpinned_offsets};
pub use cdiff::{c_diff, c_diff_in, CDiff};
pub use changelog::{changelog, changelog_of, ChangelogNotes};
pub use mail::{patch_mail, rfc2822, subsystem, Author, Mail};
pub use markup::{MarkupChange, Place};
pub use tree_idioms::TreeIdioms;

use std::fmt;
use std::str::FromStr;

/// How a C diff expresses "this member starts a new cache line of the struct".
///
/// The placement plan is the same for every style; only the spelling of an
/// alignment break differs. Cacheline attributes, `CACHELINE_PADDING()` lines
/// and group markers already in the header are reused where the style needs
/// one at that place and removed elsewhere, never duplicated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum CStyle {
    /// `____cacheline_aligned_in_smp` on the first member of each new line.
    ///
    /// The attribute goes after the member's declarator (the kernel's
    /// `<linux/cache.h>` attribute, assumed to align to the layout's line
    /// size, `SMP_CACHE_BYTES`).
    #[default]
    Aligned,
    /// A `CACHELINE_PADDING(_padN_);` line before the first member of each
    /// new line.
    ///
    /// A zero-size, line-aligned member, as `mmzone.h` and `page_counter.h`
    /// write it; nothing on !SMP, like the attribute. The member must be the
    /// first of its declaration.
    Padding,
    /// Each group of members in `__cacheline_group_begin/end` markers, and a
    /// `CACHELINE_ASSERT_GROUP_MEMBER` check function.
    ///
    /// Every run of members between breaks, cut further where the access
    /// class changes if it holds fields of two classes that must not share a
    /// line, becomes a group named after its class (`read_mostly`,
    /// `lockless`, `lockless_<writer group>`, `<lock>_locked`, `cold`):
    /// `__cacheline_group_begin_aligned(g)` / `__cacheline_group_end_aligned(g)`
    /// where the group starts and ends on lines of a line-aligned struct,
    /// `__cacheline_group_begin(g)` / `__cacheline_group_end(g)` (which add no
    /// bytes) where it does not; plus a generated
    /// `static void __maybe_unused NAME_struct_check(void)` with a
    /// `CACHELINE_ASSERT_GROUP_MEMBER` for every member, after the struct.
    Groups,
}

impl CStyle {
    /// Whether the style writes cache-line groups of its own: it then
    /// rewrites the header's group markers (the other styles keep them, and
    /// refuse a layout that moves members across them), cuts the members
    /// into groups from the struct's start, and needs the struct to start
    /// a line.
    pub(crate) fn writes_groups(self) -> bool {
        match self {
            CStyle::Aligned | CStyle::Padding => false,
            CStyle::Groups => true,
        }
    }

    /// Whether the diff also writes (or rewrites) a check function after
    /// the struct.
    pub(crate) fn writes_check_function(self) -> bool {
        match self {
            CStyle::Aligned | CStyle::Padding => false,
            CStyle::Groups => true,
        }
    }

    /// The name `--style` takes: `aligned`, `padding` or `groups`.
    pub fn name(self) -> &'static str {
        match self {
            CStyle::Aligned => "aligned",
            CStyle::Padding => "padding",
            CStyle::Groups => "groups",
        }
    }
}

impl fmt::Display for CStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CStyle {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "aligned" => Ok(CStyle::Aligned),
            "padding" => Ok(CStyle::Padding),
            "groups" => Ok(CStyle::Groups),
            _ => Err(format!(
                "unknown C style `{s}`: use aligned, padding or groups"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CStyle;

    #[test]
    fn style_names_round_trip() {
        for style in [CStyle::Aligned, CStyle::Padding, CStyle::Groups] {
            assert_eq!(style.name().parse::<CStyle>(), Ok(style));
        }
        assert_eq!(CStyle::default(), CStyle::Aligned);
        assert!("Aligned"
            .parse::<CStyle>()
            .unwrap_err()
            .contains("aligned, padding or groups"));
    }
}
