//! Which kernel idioms the translation unit a diff lands in defines: the
//! emitters write only spellings it has.
//!
//! A compiler probe knows every macro the translation unit defines; without
//! one, the header's text tells what it uses or defines, and an include of
//! a kernel header (`<linux/...>`) reaches the attribute macros of
//! `<linux/cache.h>` and `<linux/compiler_attributes.h>` but says nothing
//! of the cache-line group markers, which only newer kernels have.

use crate::idioms::{KernelSpellings, LINE_BREAK_ATTRIBUTE};

/// The idioms a diff may write where it lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeIdioms {
    pub spellings: KernelSpellings,
    /// `__cacheline_group_begin(g)` and `__cacheline_group_end(g)`.
    pub groups: bool,
    /// `__cacheline_group_begin_aligned(g)` and `..._end_aligned(g)`.
    pub aligned_groups: bool,
    /// `CACHELINE_ASSERT_GROUP_MEMBER(TYPE, GROUP, MEMBER)`.
    pub assert_member: bool,
}

const GROUP_BEGIN: &str = "__cacheline_group_begin";
const GROUP_END: &str = "__cacheline_group_end";
const GROUP_BEGIN_ALIGNED: &str = "__cacheline_group_begin_aligned";
const GROUP_END_ALIGNED: &str = "__cacheline_group_end_aligned";
const ASSERT_MEMBER: &str = "CACHELINE_ASSERT_GROUP_MEMBER";

impl TreeIdioms {
    /// What a header's text uses or defines (no compiler probe).
    pub fn of_text(text: &str) -> Self {
        Self::of_header(std::path::Path::new(""), text)
    }

    /// What the header at `path` uses or defines, and reaches through its
    /// place in a kernel tree (see [`KernelSpellings::of_header`]).
    pub fn of_header(path: &std::path::Path, text: &str) -> Self {
        let words: std::collections::HashSet<&str> = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        Self::from_names(KernelSpellings::of_header(path, text), |name| {
            words.contains(name)
        })
    }

    /// What the translation unit defines: `macros` are the names of every
    /// macro the compiler saw (`gcc -dM`), function-like ones included.
    pub fn of_macros<S: AsRef<str>>(macros: &[S]) -> Self {
        let names: std::collections::HashSet<&str> = macros.iter().map(AsRef::as_ref).collect();
        let spellings = KernelSpellings {
            line_attribute: names.contains(LINE_BREAK_ATTRIBUTE),
            aligned: names.contains("__aligned"),
        };
        Self::from_names(spellings, |name| names.contains(name))
    }

    fn from_names(spellings: KernelSpellings, has: impl Fn(&str) -> bool) -> Self {
        TreeIdioms {
            spellings,
            groups: has(GROUP_BEGIN) && has(GROUP_END),
            aligned_groups: has(GROUP_BEGIN_ALIGNED) && has(GROUP_END_ALIGNED),
            assert_member: has(ASSERT_MEMBER),
        }
    }

    /// The group markers the tree lacks, for the error that refuses
    /// `--style groups`.
    pub(crate) fn missing_group_macros(&self, aligned_needed: bool) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if !self.groups {
            missing.extend([GROUP_BEGIN, GROUP_END]);
        }
        if aligned_needed && !self.aligned_groups {
            missing.extend([GROUP_BEGIN_ALIGNED, GROUP_END_ALIGNED]);
        }
        missing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_header_has_no_kernel_spelling() {
        let t = TreeIdioms::of_text("typedef unsigned char u8;\nstruct s { u8 a; };\n");
        assert!(!t.spellings.line_attribute && !t.spellings.aligned && !t.groups);
    }

    #[test]
    fn a_kernel_include_gives_the_attributes_but_not_the_groups() {
        let t = TreeIdioms::of_text("#include <linux/cache.h>\nstruct s { int a; };\n");
        assert!(t.spellings.line_attribute && t.spellings.aligned);
        assert!(!t.groups && !t.aligned_groups && !t.assert_member);
        assert_eq!(
            t.missing_group_macros(true),
            [
                GROUP_BEGIN,
                GROUP_END,
                GROUP_BEGIN_ALIGNED,
                GROUP_END_ALIGNED
            ]
        );
    }

    #[test]
    fn the_probe_names_every_macro() {
        let t = TreeIdioms::of_macros(&[
            "__aligned",
            "____cacheline_aligned_in_smp",
            "__cacheline_group_begin",
            "__cacheline_group_end",
        ]);
        assert!(t.spellings.line_attribute && t.groups);
        assert!(!t.aligned_groups && !t.assert_member);
        assert!(t.missing_group_macros(false).is_empty());
    }
}
