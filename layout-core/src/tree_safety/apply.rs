//! Turning sites into constraints: one [`TreeConstraint`] per distinct
//! ordering need (with every site that needs it), written into the model
//! as the constraints the solver and the verifier already keep (segment
//! cuts, declared-together lists, pinned members); and the conditions a
//! proposal must meet or be refused ([`refusal`]).

use super::{Need, Site, SiteKind, TreeScan};
use crate::layout::Layout;
use crate::model::Struct;
use crate::propose::constraints::{Constraint, Price};
use crate::segments;
use crate::solve::{self, Preset, SolveOptions};
use serde::Serialize;

/// An ordering need of the tree, with the sites that need it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TreeConstraint {
    /// The kind of its first site.
    pub kind: SiteKind,
    /// [`Need::First`], [`Need::Run`], [`Need::Last`] or [`Need::Pin`].
    pub need: Need,
    /// Every site that needs it (`file:line:col`), in scan order.
    pub sites: Vec<String>,
}

/// The constraints `scan`'s sites need, one per distinct need, in the
/// order their first sites were found.
pub fn constrain(scan: &TreeScan) -> Vec<TreeConstraint> {
    let mut out: Vec<TreeConstraint> = Vec::new();
    for s in &scan.sites {
        if !matches!(
            s.need,
            Need::First(_) | Need::Run(_) | Need::Last(_) | Need::Pin(_)
        ) {
            continue;
        }
        match out.iter_mut().find(|c| c.need == s.need) {
            Some(c) => c.sites.push(s.at()),
            None => out.push(TreeConstraint {
                kind: s.kind,
                need: s.need.clone(),
                sites: vec![s.at()],
            }),
        }
    }
    out
}

fn span_words(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => format!("`{one}`"),
        [a, b] => format!("`{a}`, `{b}`"),
        [a, .., b] => format!("`{a}`..`{b}`"),
    }
}

impl TreeConstraint {
    /// `positional initializer at net/foo.c:12:3`, with how many more.
    pub fn site_text(&self) -> String {
        let more = self.sites.len().saturating_sub(1);
        let first = self.sites.first().cloned().unwrap_or_default();
        if more == 0 {
            first
        } else {
            format!("{first} and {more} more")
        }
    }

    /// What it keeps: `members `a`..`c` stay first, in order`.
    pub fn keeps(&self) -> String {
        match &self.need {
            Need::First(n) if n.len() == 1 => format!("member {} stays first", span_words(n)),
            Need::Last(n) if n.len() == 1 => format!("member {} stays last", span_words(n)),
            Need::First(n) => format!("members {} stay first, in order", span_words(n)),
            Need::Run(n) => format!("members {} stay together, in order", span_words(n)),
            Need::Last(n) => format!("members {} stay last, in order", span_words(n)),
            Need::Pin(n) => format!(
                "{} keep{} {} offset{}",
                n.iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if n.len() == 1 { "s" } else { "" },
                if n.len() == 1 { "its" } else { "their" },
                if n.len() == 1 { "" } else { "s" },
            ),
            _ => String::new(),
        }
    }

    /// The fields it names in `s`, in order; `Err` names one `s` lacks.
    fn fields(&self, s: &Struct) -> Result<Vec<usize>, String> {
        let names = match &self.need {
            Need::First(n) | Need::Run(n) | Need::Last(n) | Need::Pin(n) => n,
            _ => return Ok(Vec::new()),
        };
        names
            .iter()
            .map(|m| {
                s.field_index(m).ok_or_else(|| {
                    format!("member `{m}` it keeps is gone (dissolved by --regroup)")
                })
            })
            .collect()
    }

    /// Writes the need into `s` (whose declared layout is `declared`).
    /// `Err` says why it cannot be kept in this model.
    pub fn apply(&self, s: &mut Struct, declared: &Layout) -> Result<(), String> {
        let f = self.fields(s)?;
        let n = s.fields.len();
        let consecutive = f.windows(2).all(|w| w[1] == w[0] + 1);
        match &self.need {
            Need::First(_) => {
                if !consecutive || f.first() != Some(&0) {
                    return Err("the members it initializes are no longer the first ones".into());
                }
                cut_before(s, f.len());
                push_list(s, &f);
            }
            Need::Run(_) => {
                if !consecutive {
                    return Err("the members it spans are no longer declared together".into());
                }
                push_list(s, &f);
            }
            Need::Last(_) => {
                if !consecutive || f.last() != Some(&(n - 1)) {
                    return Err("the members it spans are no longer the last ones".into());
                }
                cut_before(s, f[0]);
                push_list(s, &f);
            }
            Need::Pin(_) => {
                for &i in &f {
                    pin(s, declared, i);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Applies every constraint to `s`, then keeps the model's lists whole:
/// overlapping lists merge, a list that takes part of an `#if` block takes
/// all of it, and a list with a pinned member is pinned whole. `Err`: the
/// constraint that cannot be kept and why.
pub fn apply_all(
    cs: &[TreeConstraint],
    s: &mut Struct,
    declared: &Layout,
) -> Result<(), (usize, String)> {
    for (k, c) in cs.iter().enumerate() {
        c.apply(s, declared).map_err(|e| (k, e))?;
    }
    normalize_lists(s, declared);
    Ok(())
}

/// Makes every field from `i` on start a later segment than the field
/// before `i` (a wall between them); nothing when there is one already.
pub(crate) fn cut_before(s: &mut Struct, i: usize) {
    if i == 0 || i >= s.fields.len() {
        return;
    }
    if s.fields[i].segment <= s.fields[i - 1].segment {
        for f in &mut s.fields[i..] {
            f.segment += 1;
        }
    }
}

fn push_list(s: &mut Struct, f: &[usize]) {
    if f.len() >= 2 {
        s.lists.push(f.to_vec());
    }
}

fn pin(s: &mut Struct, declared: &Layout, i: usize) {
    let at = declared
        .slots
        .iter()
        .find(|sl| sl.field == i)
        .map(|sl| sl.offset);
    let f = &mut s.fields[i];
    if f.original_offset.is_none() {
        f.original_offset = at;
    }
    f.pinned = f.original_offset.is_some();
}

fn normalize_lists(s: &mut Struct, declared: &Layout) {
    let mut lists: Vec<Vec<usize>> = std::mem::take(&mut s.lists);
    loop {
        let mut changed = false;
        // Merge overlapping lists.
        'merge: for a in 0..lists.len() {
            for b in a + 1..lists.len() {
                if lists[a].iter().any(|f| lists[b].contains(f)) {
                    let other = lists.remove(b);
                    lists[a].extend(other);
                    lists[a].sort_unstable();
                    lists[a].dedup();
                    changed = true;
                    break 'merge;
                }
            }
        }
        // A list that takes part of a block takes all of it.
        for l in lists.iter_mut() {
            for b in &s.blocks {
                let shares = b.iter().any(|f| l.contains(f));
                let holds = b.iter().all(|f| l.contains(f));
                let inside = l.iter().all(|f| b.contains(f));
                if shares && !holds && !inside {
                    let (lo, hi) = (
                        *l.iter().chain(b).min().unwrap_or(&0),
                        *l.iter().chain(b).max().unwrap_or(&0),
                    );
                    *l = (lo..=hi).collect();
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    for l in &lists {
        if l.iter().any(|&f| s.fields[f].pinned) {
            for &f in l {
                pin(s, declared, f);
            }
        }
    }
    s.lists = lists;
}

/// Why a proposal cannot be made: the first site that forbids it, and how
/// many others do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub site: Site,
    pub why: String,
    pub more: usize,
}

/// The refusal of a proposal `proposed` of `s` (declared as `declared`;
/// `s` the model it was solved in), when it changes the layout: a site no
/// reorder keeps, a size asserted that changes, a cache-line group
/// assertion whose group was dissolved or outgrows its size.
pub fn refusal(
    scan: &TreeScan,
    s: &Struct,
    declared: &Layout,
    proposed: &Layout,
    changes: bool,
) -> Option<Refusal> {
    if !changes {
        return None;
    }
    let offsets = |l: &Layout| {
        let mut o = vec![None; s.fields.len()];
        for sl in &l.slots {
            if let Some(x) = o.get_mut(sl.field) {
                *x = Some(sl.offset);
            }
        }
        o
    };
    let (before, after) = (offsets(declared), offsets(proposed));
    let groups = segments::author_groups(s);
    let mut refused: Vec<(Site, String)> = Vec::new();
    for site in &scan.sites {
        let why = match &site.need {
            Need::Refuse(why) => Some(why.clone()),
            Need::First(names) | Need::Run(names) if positional(site.kind) => {
                padded_between(s, proposed, names, matches!(site.need, Need::First(_)))
            }
            Need::Size if proposed.size != declared.size => Some(format!(
                "the size is asserted at build time and the proposal changes it ({} -> {} bytes)",
                declared.size, proposed.size
            )),
            Need::Group { group } | Need::GroupSize { group, .. }
                if !groups.iter().any(|g| &g.name == group) =>
            {
                Some(format!(
                    "the assertion names cache-line group {group}, which the proposal dissolves"
                ))
            }
            Need::GroupSize { group, bytes } => {
                let g = groups.iter().find(|g| &g.name == group);
                match (g.and_then(|g| g.span(&before)), g.and_then(|g| g.span(&after)), bytes) {
                    (_, Some(now), Some(max)) if now > *max => Some(format!(
                        "cache-line group {group} grows to {now} bytes, past the {max} its assertion allows"
                    )),
                    (Some(was), Some(now), None) if now > was => Some(format!(
                        "cache-line group {group} grows from {was} to {now} bytes, and its asserted size is not a number this pass reads"
                    )),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(why) = why {
            refused.push((site.clone(), why));
        }
    }
    let more = refused.len().saturating_sub(1);
    refused
        .into_iter()
        .next()
        .map(|(site, why)| Refusal { site, why, more })
}

/// Whether a site initializes members by position: a member the diff
/// adds between them (a padding array, a `CACHELINE_PADDING()`, a marker)
/// would take one of its values.
fn positional(kind: SiteKind) -> bool {
    matches!(
        kind,
        SiteKind::PositionalInitializer
            | SiteKind::ArrayOfInitializers
            | SiteKind::CompoundLiteral
            | SiteKind::NestedInitializer
    )
}

/// Why the layout `l` of `s` may not keep members `names` initialized by
/// position: a gap between two of them (or, for the first ones, before the
/// first) that C's own alignment does not make, which the diff fills with
/// a member or an attribute that a positional value would meet.
fn padded_between(s: &Struct, l: &Layout, names: &[String], first: bool) -> Option<String> {
    let at = |m: &String| {
        let f = s.field_index(m)?;
        let off = l.slots.iter().find(|sl| sl.field == f)?.offset;
        Some((off, s.fields[f].size, s.fields[f].align))
    };
    let placed: Option<Vec<(u64, u64, u64)>> = names.iter().map(at).collect();
    let placed = placed?;
    if first && placed.first().is_some_and(|p| p.0 != 0) {
        return Some(format!(
            "the proposal puts padding before `{}`, the first member it initializes",
            names[0]
        ));
    }
    placed.windows(2).zip(names.windows(2)).find_map(|(w, n)| {
        let natural = crate::place::align_up(w[0].0 + w[0].1, w[1].2.max(1));
        (w[1].0 != natural).then(|| {
            format!(
                "the proposal pads between `{}` and `{}`, which it initializes by position (a padding \
                 member would take a value)",
                n[0], n[1]
            )
        })
    })
}

impl Refusal {
    /// The refusal as the command line prints it: at the site, with what
    /// to do.
    pub fn diagnostic(&self, strukt: &str) -> crate::Diagnostic {
        let more = match self.more {
            0 => String::new(),
            1 => " (1 more site refuses too)".to_string(),
            n => format!(" ({n} more sites refuse too)"),
        };
        crate::Diagnostic::new(format!(
            "struct {strukt}: reordering it breaks this {}: {}{more}",
            self.site.kind.words(),
            self.why
        ))
        .in_file(&self.site.file)
        .at(self.site.line, self.site.column)
        .help(match self.site.kind {
            SiteKind::Uapi | SiteKind::Packed => {
                "the proposal is refused: the definition fixes the layout (propose without \
                 --safety-scan only to see what a reorder would buy)"
            }
            _ => {
                "the proposal is refused; change the code that depends on the layout first, or \
                 leave the file out of --safety-scan if it does not (the pass reads tokens, not types)"
            }
        })
    }
}

/// Most tree constraints priced in one proposal (a solve each); the
/// others are named without a price.
pub const MAX_PRICED: usize = 8;

/// Prices each of `cs` (whose entries in the proposal are `out`, in the
/// same order): the smallest size (`balanced`) of `base` (the model before
/// the tree's needs, declared as `declared`) with every need but that one,
/// against the smallest with all of them.
/// Returns the price of all of them together.
pub fn price(
    base: &Struct,
    declared: &Layout,
    cs: &[TreeConstraint],
    out: &mut [Constraint],
    opts: &SolveOptions,
) -> Option<Price> {
    if cs.is_empty() {
        return None;
    }
    let size_first = SolveOptions {
        preset: Preset::Balanced,
        work_limit: opts.work_limit / 4,
        ..opts.clone()
    };
    let with = |skip: Option<usize>| {
        let mut s = base.clone();
        let kept: Vec<TreeConstraint> = cs
            .iter()
            .enumerate()
            .filter(|(k, _)| Some(*k) != skip)
            .map(|(_, c)| c.clone())
            .collect();
        apply_all(&kept, &mut s, declared).ok()?;
        solve::solve(&s, &size_first).ok()
    };
    let all = with(None)?;
    let together = solve::solve(base, &size_first).ok().map(|sol| Price {
        size: sol.layout.size,
        kept_size: all.layout.size,
        proven: all.proven_goals >= 1 && sol.proven_goals >= 1,
    });
    for (k, c) in out.iter_mut().enumerate().take(cs.len().min(MAX_PRICED)) {
        if let Some(sol) = with(Some(k)) {
            c.without = Some(Price {
                size: sol.layout.size,
                kept_size: all.layout.size,
                proven: all.proven_goals >= 1 && sol.proven_goals >= 1,
            });
        }
    }
    together
}

/// The summary's line for the price of all the tree's constraints
/// together, when they cost bytes.
pub fn together_text(p: &Price) -> Option<String> {
    (p.bytes() > 0).then(|| {
        format!(
            "the tree's constraints together cost {} bytes: the smallest layout is {} bytes with them, {} bytes without{}",
            p.bytes(),
            p.kept_size,
            p.size,
            if p.proven { " (both proven)" } else { " (not proven)" }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Access, Field, Placement};
    use crate::Slot;

    fn strukt() -> (Struct, Layout) {
        let long = |n: &str, a: Access, o: u64| {
            let mut f = Field::new(n, "long", 8, 8).with_access(a);
            f.original_offset = Some(o);
            f
        };
        let mut s = Struct::new(
            "s",
            vec![
                long("a", Access::ReadMostly, 0),
                long("b", Access::Lockless { group: None }, 8),
                long("c", Access::ReadMostly, 16),
                long("d", Access::Cold, 24),
            ],
        );
        crate::segments::assign(
            &mut s,
            crate::segments::Keep {
                first: false,
                ..Default::default()
            },
        );
        let declared = Layout::declared(&s, 32, 8, 64, Placement::Aligned).unwrap();
        (s, declared)
    }

    fn need(kind: SiteKind, need: Need) -> TreeConstraint {
        TreeConstraint {
            kind,
            need,
            sites: vec!["u.c:1:1".into()],
        }
    }

    #[test]
    fn the_first_members_stay_first_and_the_verifier_checks_it_from_offsets() {
        let (mut s, declared) = strukt();
        let first = need(
            SiteKind::PositionalInitializer,
            Need::First(vec!["a".into(), "b".into()]),
        );
        apply_all(std::slice::from_ref(&first), &mut s, &declared).unwrap();
        assert_eq!(s.lists, vec![vec![0, 1]]);
        assert!(s.fields[2].segment > s.fields[1].segment, "a cut after `b`");
        let sol = solve::solve(&s, &SolveOptions::default()).unwrap();
        crate::verify::check_tree_needs(&s, &sol.layout, &declared, std::slice::from_ref(&first))
            .unwrap();
        // `b` before `a`: the independent check refuses it.
        let mut swapped = declared.clone();
        swapped.slots = vec![
            Slot {
                field: 1,
                offset: 0,
            },
            Slot {
                field: 0,
                offset: 8,
            },
            Slot {
                field: 2,
                offset: 16,
            },
            Slot {
                field: 3,
                offset: 24,
            },
        ];
        let e = crate::verify::check_tree_needs(&s, &swapped, &declared, &[first]).unwrap_err();
        assert!(e.to_string().contains("u.c:1:1"), "{e}");
    }

    #[test]
    fn lists_merge_and_a_pinned_member_pins_its_list() {
        let (mut s, declared) = strukt();
        let cs = [
            need(
                SiteKind::OffsetRange,
                Need::Run(vec!["b".into(), "c".into()]),
            ),
            need(
                SiteKind::OffsetRange,
                Need::Run(vec!["c".into(), "d".into()]),
            ),
            need(SiteKind::BuildAssertion, Need::Pin(vec!["d".into()])),
        ];
        apply_all(&cs, &mut s, &declared).unwrap();
        assert_eq!(s.lists, vec![vec![1, 2, 3]]);
        assert!(s.fields[1..].iter().all(|f| f.pinned));
        // A need naming a member the model lacks cannot be kept.
        let gone = need(
            SiteKind::OffsetRange,
            Need::Run(vec!["x".into(), "c".into()]),
        );
        assert!(apply_all(&[gone], &mut s, &declared).is_err());
    }
}
