//! The kernel's C idioms for cache-line layout, named once: the attribute
//! macros and what each does to a layout, the struct-body marker macros and
//! the zero-size members they declare, and the line size they stand for.
//!
//! The C front-end ([`crate::c`]) reads headers with these tables; the
//! emitters ([`crate::emit`]) find, reuse and write the same names; the
//! model ([`crate::segments`]) recognises the markers' members by the names
//! built here. To teach the tool a new idiom, add it to a table below.
//!
//! This module builds without the C front-end (the emitters need it for BTF
//! and DWARF input too).

/// The line size the kernel's cacheline macros stand for on x86_64
/// (`SMP_CACHE_BYTES`, with CONFIG_SMP=y): the alignment of
/// `____cacheline_aligned_in_smp`, `CACHELINE_PADDING()` and the aligned
/// group markers without an explicit alignment.
pub const SMP_CACHE_BYTES: u64 = crate::place::DataLayout::X86_64.smp_cache_bytes;

/// What an attribute macro (or attribute-like keyword) does to a layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrMeaning {
    /// Aligns to the cache line ([`SMP_CACHE_BYTES`]): a line break the
    /// emitters may reuse or remove.
    CachelineAligned,
    /// `NAME(n)`: aligns to `n`.
    AlignArg,
    /// Aligns to the biggest alignment (`__aligned_largest`, 16 on x86_64).
    Biggest,
    /// `packed`.
    Packed,
    /// No layout effect (sparse annotations, section and function
    /// attributes, `__randomize_layout`: layouts are computed as without
    /// CONFIG_RANDSTRUCT).
    NoEffect,
    /// `NAME(...)` with no layout effect (`__counted_by(n)`).
    NoEffectWithArgs,
}

/// Every attribute macro the tool knows, with its meaning. A header's own
/// `#define` of a name wins over this table.
pub const ATTRIBUTES: &[(&str, AttrMeaning)] = {
    use AttrMeaning::*;
    &[
        ("____cacheline_aligned_in_smp", CachelineAligned),
        ("____cacheline_aligned", CachelineAligned),
        ("__cacheline_aligned_in_smp", CachelineAligned),
        ("__cacheline_aligned", CachelineAligned),
        ("____cacheline_internodealigned_in_smp", CachelineAligned),
        ("__aligned", AlignArg),
        ("_Alignas", AlignArg),
        ("alignas", AlignArg),
        ("__aligned_largest", Biggest),
        ("__packed", Packed),
        ("__randomize_layout", NoEffect),
        ("__no_randomize_layout", NoEffect),
        ("__rcu", NoEffect),
        ("__percpu", NoEffect),
        ("__user", NoEffect),
        ("__iomem", NoEffect),
        ("__kernel", NoEffect),
        ("__force", NoEffect),
        ("__nocast", NoEffect),
        ("__safe", NoEffect),
        ("__private", NoEffect),
        ("__bitwise", NoEffect),
        ("__bitwise__", NoEffect),
        ("__must_check", NoEffect),
        ("__read_mostly", NoEffect),
        ("__ro_after_init", NoEffect),
        ("__maybe_unused", NoEffect),
        ("__always_unused", NoEffect),
        ("__used", NoEffect),
        ("__weak", NoEffect),
        ("__cold", NoEffect),
        ("__hot", NoEffect),
        ("__designated_init", NoEffect),
        ("__data_racy", NoEffect),
        ("__nonstring", NoEffect),
        ("__deprecated", NoEffect),
        ("__noreturn", NoEffect),
        ("__always_inline", NoEffect),
        ("noinline", NoEffect),
        ("__init", NoEffect),
        ("__exit", NoEffect),
        ("__visible", NoEffect),
        ("notrace", NoEffect),
        ("asmlinkage", NoEffect),
        ("__pure", NoEffect),
        ("__attribute_const__", NoEffect),
        ("__malloc", NoEffect),
        ("__latent_entropy", NoEffect),
        ("__extension__", NoEffect),
        ("__inline", NoEffect),
        ("__inline__", NoEffect),
        ("__restrict", NoEffect),
        ("__restrict__", NoEffect),
        ("__no_sanitize_address", NoEffect),
        ("__noclone", NoEffect),
        ("__flatten", NoEffect),
        ("__counted_by", NoEffectWithArgs),
        ("__counted_by_le", NoEffectWithArgs),
        ("__counted_by_be", NoEffectWithArgs),
        ("__guarded_by", NoEffectWithArgs),
        ("__pt_guarded_by", NoEffectWithArgs),
        ("__section", NoEffectWithArgs),
        ("__alias", NoEffectWithArgs),
        ("__printf", NoEffectWithArgs),
        ("__scanf", NoEffectWithArgs),
        ("__cleanup", NoEffectWithArgs),
        ("__must_hold", NoEffectWithArgs),
        ("__acquires", NoEffectWithArgs),
        ("__releases", NoEffectWithArgs),
        ("__cond_acquires", NoEffectWithArgs),
    ]
};

/// The meaning of attribute macro `name`, if the tool knows it.
pub fn attribute(name: &str) -> Option<AttrMeaning> {
    ATTRIBUTES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, meaning)| meaning)
}

/// Whether `name` aligns a member to the cache line
/// (`____cacheline_aligned_in_smp` and friends).
pub fn is_cacheline_attribute(name: &str) -> bool {
    attribute(name) == Some(AttrMeaning::CachelineAligned)
}

/// The cacheline attribute the emitters write for a line break.
pub const LINE_BREAK_ATTRIBUTE: &str = "____cacheline_aligned_in_smp";

/// Which of the kernel's attribute macros a header can spell: those its
/// text uses or defines, and all of them when it includes a kernel header
/// (`<linux/...>`, `<net/...>`, `<asm/...>`: its includes reach
/// `<linux/cache.h>` and `<linux/compiler_attributes.h>`). A plain C
/// header gets `__attribute__((__aligned__(N)))` instead.
/// A header in a kernel tree's `include/linux/` or `include/net/` counts as
/// including them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSpellings {
    /// `____cacheline_aligned_in_smp` (and the other cacheline macros).
    pub line_attribute: bool,
    /// `__aligned(N)`.
    pub aligned: bool,
}

impl KernelSpellings {
    /// What `text` (a whole header) can spell.
    pub fn of(text: &str) -> Self {
        Self::of_header(std::path::Path::new(""), text)
    }

    /// What the header at `path` can spell: a header under a kernel tree's
    /// `include/linux/`, `include/net/` or `arch/*/include/` reaches the
    /// kernel's macros through its includes too.
    pub fn of_header(path: &std::path::Path, text: &str) -> Self {
        let p = path.to_string_lossy().replace('\\', "/");
        let kernel_path = ["include/linux/", "include/net/", "include/asm-generic/"]
            .iter()
            .any(|d| p.starts_with(d) || p.contains(&format!("/{d}")));
        let in_tree = kernel_path
            || ["#include <linux/", "#include <net/", "#include <asm/"]
                .iter()
                .any(|i| text.contains(i));
        let names = |w: &str| {
            text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|t| t == w)
        };
        KernelSpellings {
            line_attribute: in_tree || names(LINE_BREAK_ATTRIBUTE),
            aligned: in_tree || names("__aligned"),
        }
    }
}

/// Words that make a struct `packed` when they appear in its attributes:
/// the macro and the GNU attribute's two spellings.
pub fn is_packed_word(word: &str) -> bool {
    matches!(word, "packed" | "__packed__") || attribute(word) == Some(AttrMeaning::Packed)
}

/// GNU spellings of keywords, with the keyword padded to the same length
/// (the C front-end rewrites them in place).
pub fn keyword_respelling(name: &str) -> Option<&'static str> {
    Some(match name {
        "__signed__" => "signed    ",
        "__signed" => "signed  ",
        "__volatile__" => "volatile    ",
        "__volatile" => "volatile  ",
        "__const__" => "const    ",
        "__const" => "const  ",
        _ => return None,
    })
}

/// A struct-body macro that stands for zero-size members with an
/// alignment. `A` is how its optional alignment argument is kept: tokens
/// in the C front-end (evaluated later), a number in the emitters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerKind<A = u64> {
    /// `CACHELINE_PADDING(name);`: a zero-size member aligned to the line
    /// (of type `struct cacheline_padding`, named `name`).
    Padding,
    /// `__cacheline_group_begin(g)`: the zero-size member
    /// `__cacheline_group_begin__g`, unaligned.
    GroupBegin,
    /// `__cacheline_group_end(g)`: `__cacheline_group_end__g`, unaligned.
    GroupEnd,
    /// `__cacheline_group_begin_aligned(g[, align])`: the begin member,
    /// aligned to `align` (default: the line).
    GroupBeginAligned(Option<A>),
    /// `__cacheline_group_end_aligned(g[, align])`: the end member (aligned
    /// to 8), then `__cacheline_group_pad__g` aligned to `align` (default:
    /// the line).
    GroupEndAligned(Option<A>),
}

impl<A> MarkerKind<A> {
    /// The marker macro called `name`; `align` gives its alignment argument
    /// (asked only for the `_aligned` group markers).
    pub fn from_macro(name: &str, align: impl FnOnce() -> Option<A>) -> Option<Self> {
        Some(match name {
            "CACHELINE_PADDING" => MarkerKind::Padding,
            "__cacheline_group_begin" => MarkerKind::GroupBegin,
            "__cacheline_group_end" => MarkerKind::GroupEnd,
            "__cacheline_group_begin_aligned" => MarkerKind::GroupBeginAligned(align()),
            "__cacheline_group_end_aligned" => MarkerKind::GroupEndAligned(align()),
            _ => return None,
        })
    }

    /// A cache-line group's begin or end marker (not a padding).
    pub fn is_group(&self) -> bool {
        !matches!(self, MarkerKind::Padding)
    }

    /// The name of the zero-size member the marker declares, as the kernel's
    /// macro (and so BTF and DWARF) calls it: `arg` for a padding,
    /// `__cacheline_group_begin__arg`, `__cacheline_group_end__arg`.
    pub fn field_name(&self, arg: &str) -> String {
        match self {
            MarkerKind::Padding => arg.to_string(),
            MarkerKind::GroupBegin | MarkerKind::GroupBeginAligned(_) => {
                format!("{BEGIN_PREFIX}{arg}")
            }
            MarkerKind::GroupEnd | MarkerKind::GroupEndAligned(_) => format!("{END_PREFIX}{arg}"),
        }
    }
}

/// `__cacheline_group_begin__` + group name: the member
/// `__cacheline_group_begin(NAME)` declares.
pub const BEGIN_PREFIX: &str = "__cacheline_group_begin__";
/// `__cacheline_group_end__` + group name.
pub const END_PREFIX: &str = "__cacheline_group_end__";
/// `__cacheline_group_pad__` + group name: the line-aligned member that
/// `__cacheline_group_end_aligned(NAME)` adds after the end marker.
pub const PAD_PREFIX: &str = "__cacheline_group_pad__";
/// The type of the member `CACHELINE_PADDING(name)` declares.
pub const PADDING_TYPE: &str = "struct cacheline_padding";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_listed_once() {
        let mut names: Vec<&str> = ATTRIBUTES.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before);
    }

    #[test]
    fn cacheline_attributes_include_the_internode_one() {
        assert!(is_cacheline_attribute("____cacheline_aligned_in_smp"));
        assert!(is_cacheline_attribute(
            "____cacheline_internodealigned_in_smp"
        ));
        assert!(is_cacheline_attribute(LINE_BREAK_ATTRIBUTE));
        assert!(!is_cacheline_attribute("__aligned"));
        assert!(!is_cacheline_attribute("__rcu"));
    }

    #[test]
    fn markers_and_their_members() {
        let k = MarkerKind::<u64>::from_macro("__cacheline_group_end_aligned", || Some(128));
        assert_eq!(k, Some(MarkerKind::GroupEndAligned(Some(128))));
        let k = k.unwrap();
        assert!(k.is_group());
        assert_eq!(k.field_name("rx"), "__cacheline_group_end__rx");
        let p = MarkerKind::<u64>::from_macro("CACHELINE_PADDING", || unreachable!());
        assert_eq!(
            p.as_ref().map(|p| p.field_name("_pad1_")),
            Some("_pad1_".into())
        );
        assert!(MarkerKind::<u64>::from_macro("DECLARE_BITMAP", || None).is_none());
        assert!(is_packed_word("__packed") && is_packed_word("packed"));
        assert!(!is_packed_word("pack"));
    }
}
