//! What a proposal is proven under, and what each of those constraints
//! costs: the author's structure the layout keeps (the first member, the
//! cache-line groups and line breaks, the `#if` blocks, pinned members)
//! and the one configuration the struct was read in. A proof holds only
//! under them; a reviewer weighs each by its price, the smallest size
//! without it against the smallest size with everything kept.

use crate::model::Struct;
use crate::segments::{self, Keep, Marker};
use crate::solve::{self, Preset, SolveOptions};
use serde::Serialize;

/// What kind of constraint is kept (JSON: its words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Kept {
    #[serde(rename = "first member")]
    FirstMember,
    #[serde(rename = "groups and line breaks")]
    GroupsAndLineBreaks,
    #[serde(rename = "#if blocks")]
    IfBlocks,
    #[serde(rename = "pinned members")]
    PinnedMembers,
    #[serde(rename = "one configuration")]
    OneConfiguration,
    /// Tree safety: code initializes the struct by position.
    #[serde(rename = "positional initializer")]
    PositionalInitializer,
    /// Tree safety: code spans members by offset (a copy, a clear).
    #[serde(rename = "offset range")]
    OffsetRange,
    /// Tree safety: an offset asserted at build time.
    #[serde(rename = "build assertion")]
    BuildAssertion,
}

impl Kept {
    /// The words the summary, the changelog and the JSON use.
    pub fn words(self) -> &'static str {
        match self {
            Kept::FirstMember => "first member",
            Kept::GroupsAndLineBreaks => "groups and line breaks",
            Kept::IfBlocks => "#if blocks",
            Kept::PinnedMembers => "pinned members",
            Kept::OneConfiguration => "one configuration",
            Kept::PositionalInitializer => "positional initializer",
            Kept::OffsetRange => "offset range",
            Kept::BuildAssertion => "build assertion",
        }
    }

    /// The kind of constraint a tree-safety site needs.
    pub fn of_site(kind: crate::tree_safety::SiteKind) -> Kept {
        use crate::tree_safety::SiteKind as K;
        match kind {
            K::PositionalInitializer
            | K::ArrayOfInitializers
            | K::CompoundLiteral
            | K::NestedInitializer
            | K::DesignatedInitializer
            | K::ZeroInitializer => Kept::PositionalInitializer,
            K::BuildAssertion | K::SizeAssertion | K::GroupAssertion => Kept::BuildAssertion,
            _ => Kept::OffsetRange,
        }
    }

    /// Whether the tree-safety pass adds it.
    pub fn is_tree(self) -> bool {
        matches!(
            self,
            Kept::PositionalInitializer | Kept::OffsetRange | Kept::BuildAssertion
        )
    }
}

/// One constraint the proposal holds under.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Constraint {
    /// What is kept.
    pub kept: Kept,
    /// The members, groups or blocks it names.
    pub names: Vec<String>,
    /// The price, when it was computed: the smallest size with this
    /// constraint relaxed and everything else kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub without: Option<Price>,
    /// For the tree-safety pass: the site that needs it
    /// (`net/foo.c:12:3`, `and N more`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// For the tree-safety pass: what it keeps (`members `a`..`c` stay
    /// first, in order`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keeps: Option<String>,
}

/// The smallest size without a constraint, against the smallest with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Price {
    /// The smallest size found with the constraint relaxed.
    pub size: u64,
    /// The smallest size found with every constraint kept.
    pub kept_size: u64,
    /// Both sizes proven minimal: the price is exact.
    pub proven: bool,
}

impl Price {
    /// Bytes the constraint costs (0 when relaxing it gains nothing).
    pub fn bytes(&self) -> u64 {
        self.kept_size.saturating_sub(self.size)
    }
}

impl Constraint {
    /// `the first member (lock)`, `3 #if blocks (CONFIG_NUMA, ...)`.
    pub fn text(&self) -> String {
        if let (Some(site), Some(keeps)) = (&self.site, &self.keeps) {
            return format!("{} at {site} ({keeps})", self.kept.words());
        }
        let names = if self.names.len() > 4 {
            format!(
                "{}, ... {} in all",
                self.names[..3].join(", "),
                self.names.len()
            )
        } else {
            self.names.join(", ")
        };
        if names.is_empty() {
            self.kept.words().to_string()
        } else {
            format!("{} ({names})", self.kept.words())
        }
    }

    /// What it costs, for the summary and the changelog: only a proven
    /// price (both sizes proven minimal), and only when it is not zero.
    pub fn price_text(&self) -> Option<String> {
        if self.kept.is_tree() {
            let price = match self.without {
                Some(p) if p.proven => format!(": {:+} bytes", p.bytes()),
                Some(p) => format!(": {:+} bytes (not proven)", p.bytes()),
                None => String::new(),
            };
            return Some(format!("kept: {}{price}", self.text()));
        }
        let p = self.without.filter(|p| p.proven && p.bytes() > 0)?;
        Some(format!(
            "keeping the {} costs {} bytes: the smallest layout is {} bytes with it, {} bytes without (both proven)",
            self.kept.words(),
            p.bytes(),
            p.kept_size,
            p.size,
        ))
    }
}

/// The constraints `s` holds the layout to, in the order a reviewer reads
/// them; `configuration` names the configuration the struct was read in
/// (a `.config`), when its text has `#if` blocks.
pub fn kept_by(s: &Struct, configuration: Option<&str>) -> Vec<Constraint> {
    let mut out = Vec::new();
    let c = |kept, names| Constraint {
        kept,
        names,
        without: None,
        site: None,
        keeps: None,
    };
    if segments::first_is_kept(s) {
        out.push(c(Kept::FirstMember, vec![s.fields[0].name.clone()]));
    }
    // The author's line breaks still in the model (`--regroup` dissolves
    // them), and the cache-line groups still marked.
    let mut breaks: Vec<String> = s
        .breaks
        .iter()
        .filter(|&&i| {
            let f = &s.fields[i];
            f.line_break || matches!(Marker::of(f), Some(Marker::Padding))
        })
        .map(|&i| s.fields[i].name.clone())
        .collect();
    breaks.extend(s.fields.iter().filter_map(|f| match Marker::of(f) {
        Some(Marker::GroupBegin(g)) => Some(format!("group {g}")),
        _ => None,
    }));
    if !breaks.is_empty() {
        out.push(c(Kept::GroupsAndLineBreaks, breaks));
    }
    if !s.blocks.is_empty() {
        let names = s
            .blocks
            .iter()
            .filter_map(|b| {
                b.first()
                    .map(|&f| format!("#if block of {}", s.fields[f].name))
            })
            .collect();
        out.push(c(Kept::IfBlocks, names));
    }
    let pinned: Vec<String> = s
        .fields
        .iter()
        .filter(|f| f.pinned)
        .map(|f| f.name.clone())
        .collect();
    if !pinned.is_empty() {
        out.push(c(Kept::PinnedMembers, pinned));
    }
    if let Some(config) = configuration.filter(|_| !s.blocks.is_empty()) {
        out.push(c(Kept::OneConfiguration, vec![config.to_string()]));
    }
    out
}

/// Prices each relaxable constraint of `kept`: the smallest size
/// (`balanced`, size first) with it relaxed, against the smallest with
/// everything kept. `opts` bounds each solve as it bounds the proposal's.
pub fn price(s: &Struct, kept: &mut [Constraint], opts: &SolveOptions) {
    // A price is told only when proven; on a struct too large to prove,
    // a quarter of the budget per solve keeps the proposal's own time.
    let size_first = SolveOptions {
        preset: Preset::Balanced,
        work_limit: opts.work_limit / 4,
        ..opts.clone()
    };
    let Ok(base) = solve::solve(s, &size_first) else {
        return;
    };
    let base_proven = base.proven_goals >= 1;
    for c in kept.iter_mut() {
        let mut relaxed = s.clone();
        match c.kept {
            Kept::FirstMember => segments::release_first(&mut relaxed),
            Kept::GroupsAndLineBreaks => {
                let keep = Keep {
                    first: segments::first_is_kept(s),
                    ..Keep::default()
                };
                segments::dissolve_groups(&mut relaxed, keep);
            }
            Kept::IfBlocks => relaxed.blocks.clear(),
            Kept::PinnedMembers => relaxed.fields.iter_mut().for_each(|f| f.pinned = false),
            Kept::OneConfiguration => continue,
            // Priced by the tree-safety pass, which knows the model
            // without each of them.
            Kept::PositionalInitializer | Kept::OffsetRange | Kept::BuildAssertion => continue,
        }
        if let Ok(sol) = solve::solve(&relaxed, &size_first) {
            c.without = Some(Price {
                size: sol.layout.size,
                kept_size: base.layout.size,
                proven: base_proven && sol.proven_goals >= 1,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Access, Field};

    fn strukt() -> Struct {
        let long = |n: &str, a: Access| Field::new(n, "long", 8, 8).with_access(a);
        let pad = Field::new("_pad1_", "struct cacheline_padding", 0, 64);
        let mut s = Struct::new(
            "s",
            vec![
                long("head", Access::ReadMostly),
                long("hits", Access::Lockless { group: None }),
                pad,
                long("a", Access::ReadMostly),
                long("b", Access::Cold),
            ],
        );
        crate::segments::assign(&mut s, Keep::default());
        s.blocks = vec![vec![3, 4]];
        s
    }

    #[test]
    fn the_kept_constraints_are_named_in_reading_order() {
        let s = strukt();
        let kept = kept_by(&s, Some(".config"));
        let what: Vec<&str> = kept.iter().map(|c| c.kept.words()).collect();
        assert_eq!(
            what,
            [
                "first member",
                "groups and line breaks",
                "#if blocks",
                "one configuration"
            ]
        );
        assert_eq!(kept[0].text(), "first member (head)");
        assert_eq!(kept[1].names, ["_pad1_"]);
        // Without #if blocks the configuration is not a constraint.
        let mut plain = s.clone();
        plain.blocks.clear();
        assert!(kept_by(&plain, Some(".config"))
            .iter()
            .all(|c| c.kept != Kept::OneConfiguration));
    }

    #[test]
    fn relaxing_a_constraint_never_costs_and_only_proven_prices_are_told() {
        let s = strukt();
        let mut kept = kept_by(&s, None);
        price(&s, &mut kept, &SolveOptions::default());
        for c in &kept {
            let p = c.without.expect("every relaxable constraint is priced");
            assert!(p.size <= p.kept_size || !p.proven, "{c:?}");
            match c.price_text() {
                Some(t) => assert!(p.proven && p.bytes() > 0 && t.contains("both proven")),
                None => assert!(!p.proven || p.bytes() == 0),
            }
        }
        // The first member kept at 0 next to `hits` costs a line: without
        // it, `hits` can go last, after the read-mostly members.
        let first = &kept[0];
        assert_eq!(first.kept, Kept::FirstMember);
    }
}
