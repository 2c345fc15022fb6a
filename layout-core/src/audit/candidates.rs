//! Pass 1 of an audit: every struct defined in the audited headers, ranked
//! by its types alone (cheap: no source is parsed).
//!
//! A struct is a candidate when a member is lockless by its type (atomics,
//! refcounts) or a lock word (spinlocks, mutexes, ...: every locker writes
//! it), as [`crate::scan::infer`] classes them, and such a member shares a
//! cache line with other data ([`crate::scan::rank::exposure`], lines
//! counted from the struct's start); or when it spans more than one line
//! (plain members written without a lock show only in the sources). Pass 2
//! ([`super::analyse`]) weighs each by how widely the audited sources use
//! it ([`Candidate::key`]) and analyses the first of them.

use crate::model::Access;
use crate::scan::{self, rank::Exposure};
use crate::typedb::TypeDb;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where a struct is defined: its header and the line of `struct NAME {`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Definition {
    pub header: PathBuf,
    pub line: usize,
}

/// The definitions in a header's text: a line that starts with
/// `struct NAME {` (or `struct NAME` with the `{` on the next line), the
/// shape of a top-level definition in kernel style. First one wins.
pub fn definitions(header: &Path, text: &str, out: &mut BTreeMap<String, Definition>) {
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let Some(rest) = l.strip_prefix("struct ") else {
            continue;
        };
        let rest = rest.trim_start();
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let (name, after) = rest.split_at(end);
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let after = after.trim();
        let opens = after.starts_with('{')
            || (after.is_empty()
                && lines
                    .get(i + 1)
                    .is_some_and(|n| n.trim_start().starts_with('{')));
        if opens {
            out.entry(name.to_string()).or_insert(Definition {
                header: header.to_path_buf(),
                line: i + 1,
            });
        }
    }
}

/// Which structs each source names (`struct NAME` anywhere in its text).
#[derive(Clone, Debug, Default)]
pub struct Mentions {
    /// Struct name → the sources (indices) that name it, and how often.
    by_struct: BTreeMap<String, BTreeMap<usize, u64>>,
}

impl Mentions {
    /// Records the `struct NAME` words of source `index`.
    pub fn add(&mut self, index: usize, text: &str) {
        let mut words = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty());
        while let Some(w) = words.next() {
            if w == "struct" {
                if let Some(name) = words.next() {
                    *self
                        .by_struct
                        .entry(name.to_string())
                        .or_default()
                        .entry(index)
                        .or_default() += 1;
                }
            }
        }
    }

    /// The sources that name struct `name`.
    pub fn of(&self, name: &str) -> Vec<usize> {
        self.by_struct
            .get(name)
            .map(|s| s.keys().copied().collect())
            .unwrap_or_default()
    }

    /// How often the sources of `units` name struct `name`.
    pub fn count_in(&self, name: &str, units: &BTreeSet<usize>) -> u64 {
        self.by_struct.get(name).map_or(0, |s| {
            s.iter()
                .filter(|(u, _)| units.contains(u))
                .map(|(_, n)| *n)
                .sum()
        })
    }
}

/// Whether a source's text defines function `name`, in kernel style: a
/// line that starts in column 0 (not a directive, not a brace) names it
/// followed by `(`, and does not end as a declaration (`;`).
pub fn defines_function(text: &str, name: &str) -> bool {
    text.lines().any(|l| {
        let first = l.chars().next();
        if first.is_none_or(|c| c.is_whitespace() || matches!(c, '#' | '}' | '{' | '/' | '*')) {
            return false;
        }
        if l.trim_end().ends_with(';') {
            return false;
        }
        l.match_indices(name).any(|(at, _)| {
            let before = l[..at].chars().next_back();
            let after = l[at + name.len()..].trim_start();
            before.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
                && after.starts_with('(')
        })
    })
}

/// What one audited unit that uses a struct adds to its pass-2 order: as
/// much as a mention two calls below a hot root. Naming a struct, or a
/// struct that embeds it, says the code may touch it; hot code naming it
/// says the fast paths do, and that decides the order (every struct
/// embedded in `struct net` is named by each unit that names `net`, most
/// of them never on a fast path).
pub const UNIT_WEIGHT: u64 = super::hotuse::ROOT_WEIGHT >> 2;

/// One struct of pass 1.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub name: String,
    pub definition: Definition,
    pub size: u64,
    /// Exposure of its atomic, refcount and lock members by type.
    pub exposure: Exposure,
}

impl Candidate {
    /// Pass 2's order, given how many audited units use the struct
    /// (`units`: they name it or a struct that embeds it) and how much the
    /// fast paths' code names it (`hot_uses`: the mentions in the units
    /// that define a hot root, and [`super::hotuse::HotCode::uses`], each
    /// [`super::hotuse::ROOT_WEIGHT`] a mention in a root's own body): the
    /// units at [`UNIT_WEIGHT`] each plus the hot uses, times one more than
    /// the lines its atomics and locks share with other data, most first;
    /// then the bytes on those lines; then the name.
    pub fn key(
        &self,
        units: usize,
        hot_uses: u64,
    ) -> (std::cmp::Reverse<u64>, std::cmp::Reverse<u64>, String) {
        let uses = units as u64 * UNIT_WEIGHT + hot_uses;
        (
            std::cmp::Reverse(uses * (1 + self.exposure.lines)),
            std::cmp::Reverse(self.exposure.shared_bytes),
            self.name.clone(),
        )
    }
}

/// Pass 1 over `db`: the scanned structs of `defined`, ranked (most
/// exposed first, then by name). A name the database lacks (its
/// definition is in an `#if` the configuration leaves out) is skipped.
pub fn rank(db: &TypeDb, defined: &BTreeMap<String, Definition>, line: u64) -> Vec<Candidate> {
    let mut out = Vec::new();
    for (name, def) in defined {
        let Some(agg) = db
            .find_all(name)
            .into_iter()
            .find(|a| scan::is_scanned(a) && a.name == *name)
        else {
            continue;
        };
        let mut model = scan::infer::infer_model(db, agg);
        // A lock word bounces its line like an atomic: every locker writes it.
        for f in &mut model.fields {
            if let Access::LockedWrite { lock } = &f.access {
                if *lock == f.name || f.name.starts_with("anon_") {
                    f.access = Access::Lockless { group: None };
                }
            }
        }
        let exposure = scan::rank::exposure(&model, agg.size, line).or_else(|| {
            (agg.size > line).then(|| Exposure {
                name: name.clone(),
                size: agg.size,
                lockless: Vec::new(),
                shared_bytes: 0,
                read_mostly_bytes: 0,
                lines: 0,
            })
        });
        if let Some(exposure) = exposure {
            out.push(Candidate {
                name: name.clone(),
                definition: def.clone(),
                size: agg.size,
                exposure,
            });
        }
    }
    out.sort_by(|a, b| {
        a.exposure
            .rank_key()
            .cmp(&b.exposure.rank_key())
            .then_with(|| a.name.cmp(&b.name))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_definitions_only() {
        let text = "struct a {\n\tint x;\n};\nstruct b;\nstruct c\n{\n};\n\tstruct d {\nstruct e *f(void);\nstruct g{ int y; };\n";
        let mut m = BTreeMap::new();
        definitions(Path::new("x.h"), text, &mut m);
        let names: Vec<&str> = m.keys().map(String::as_str).collect();
        assert_eq!(names, ["a", "c", "g"]);
        assert_eq!(m["c"].line, 5);
    }

    #[test]
    fn mentions_by_struct_word() {
        let mut m = Mentions::default();
        m.add(0, "struct tcp_sock *tp = tcp_sk(sk); struct  sock *s;");
        m.add(1, "int struct_x; struct sock x;");
        assert_eq!(m.of("tcp_sock"), [0]);
        assert_eq!(m.of("sock"), [0, 1]);
        assert!(m.of("x").is_empty());
        let both: BTreeSet<usize> = [0, 1].into();
        assert_eq!(m.count_in("sock", &both), 2);
        assert_eq!(m.count_in("sock", &[1].into()), 1);
    }

    #[test]
    fn a_definition_in_kernel_style() {
        let text = "static int helper(void);
int xmit(struct sk_buff *skb,
	 struct net_device *dev)
{
	return helper();
}
EXPORT_SYMBOL(xmit);
";
        assert!(defines_function(text, "xmit"));
        assert!(!defines_function(text, "helper"));
        assert!(!defines_function(text, "mit"));
        assert!(!defines_function(
            "	foo(1);
",
            "foo"
        ));
    }
}
