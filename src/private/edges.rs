//! The struct's edges in the report: the rule is about the struct's own
//! fields, but its first and last lines may also hold bytes of whatever
//! sits next to it in memory (an `Arc`'s reference counts before it, the
//! previous or next element of a `Vec`). A field written there makes those
//! neighbours' lines bounce too. A struct aligned to the line
//! (`#[layout(isolated)]`, like `CachePadded`) starts and ends on line
//! boundaries, and shares no line with anything.

use super::{Class, FieldFacts, Info};

/// Which written fields (lockless or locked) can share a line with the bytes
/// just before the struct, and which with the bytes just after it, at some
/// start offset its alignment allows; both empty when the struct is aligned
/// to the line.
pub fn exposed(info: &Info, size: usize, align: usize) -> (Vec<&FieldFacts>, Vec<&FieldFacts>) {
    let line = info.line;
    let (mut first, mut last) = (Vec::new(), Vec::new());
    if line == 0 || align >= line {
        return (first, last);
    }
    let step = align.max(1);
    let written = |f: &&FieldFacts| {
        f.size > 0 && matches!(f.class, Class::Lockless(_) | Class::LockedWrite(_))
    };
    for f in info.fields.iter().filter(written) {
        let end = f.offset + f.size;
        let before = (step..line)
            .step_by(step)
            .any(|p| (p + f.offset) / line == (p - 1) / line);
        let after = (0..line)
            .step_by(step)
            .any(|p| (p + end - 1) / line == (p + size) / line);
        if before {
            first.push(f);
        }
        if after {
            last.push(f);
        }
    }
    (first, last)
}

/// The report's note on unisolated edges, or `None`.
pub fn note(info: &Info, size: usize, align: usize) -> Option<String> {
    let (first, last) = exposed(info, size, align);
    if first.is_empty() && last.is_empty() {
        return None;
    }
    let names = |fs: &[&FieldFacts]| {
        fs.iter()
            .map(|f| format!("`{}`", f.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if !first.is_empty() {
        parts.push(format!(
            "its first cache line holds written {} and may hold the end of whatever precedes it in \
             memory (an `Arc`'s reference counts, the previous element of a `Vec`)",
            names(&first)
        ));
    }
    if !last.is_empty() {
        parts.push(format!(
            "its last cache line holds written {} and may hold the start of whatever follows it (the \
             next element of a `Vec` or array)",
            names(&last)
        ));
    }
    Some(format!(
        "`{}` is not isolated ({align}-byte aligned, {size} B): {}; #[layout(isolated)] starts and ends \
         it on a {}-byte line boundary, as `CachePadded` does (with the derive: #[repr(align({}))])",
        info.name,
        parts.join("; "),
        info.line,
        info.line
    ))
}
