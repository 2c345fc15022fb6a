//! The `Groups` style's groups: which members each group holds, its name,
//! and whether its markers are the line-aligned ones.
//!
//! Groups are the runs of members between alignment breaks, cut further
//! wherever the access class changes (cold fields join the run before them),
//! so that every group holds one class and its name says which: a group
//! named `read_mostly` that held fields under a lock would tell the next
//! reader the wrong thing. Members on hot paths name their group after
//! the paths too (`read_tx`, `write_rx`, `read_txrx`). Cuts can only fall between top-level declarations
//! or `#if` blocks of the body: a break inside one is an error, a class cut
//! inside one is dropped, and the group is then named after its hard class
//! (read-mostly or lockless; the one with the most bytes if both).
//!
//! Markers: on a line-aligned struct, a group that starts at a break (or at
//! the start of the struct) begins with `__cacheline_group_begin_aligned`,
//! and one followed by a break (or by the end of the struct) ends with
//! `__cacheline_group_end_aligned`, which pads to the next line: both add no
//! byte the layout does not already have. Every other marker is the plain
//! zero-size one.

use crate::class::{colouring, identifier, Colouring, Role, Style};
use crate::error::Diagnostic;
use crate::layout::Layout;
use crate::model::{Access, Struct};
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Group {
    pub name: String,
    /// Fields in layout order.
    pub fields: Vec<usize>,
    pub aligned_begin: bool,
    pub aligned_end: bool,
}

impl Group {
    pub(crate) fn begin_line(&self) -> String {
        let suffix = if self.aligned_begin { "_aligned" } else { "" };
        format!("__cacheline_group_begin{suffix}({});", self.name)
    }

    pub(crate) fn end_line(&self) -> String {
        let suffix = if self.aligned_end { "_aligned" } else { "" };
        format!("__cacheline_group_end{suffix}({});", self.name)
    }
}

/// One member in layout order, as the plan and the body see it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Member {
    pub field: usize,
    pub line_break: bool,
    /// The top-level body node (declaration or `#if` block) that holds it.
    pub carrier: usize,
}

/// Cuts `members` (layout order) into groups. `old_group[f]`: the group field
/// `f` sat in in the header, whose name a group made at least half of its old
/// members keeps (the first such group, in layout order).
pub(crate) fn plan_groups(
    s: &Struct,
    l: &Layout,
    members: &[Member],
    old_group: &[Option<String>],
) -> Result<Vec<Group>, Diagnostic> {
    let mut runs: Vec<Vec<Member>> = Vec::new();
    for (k, m) in members.iter().enumerate() {
        if k > 0 && m.line_break {
            let prev = members[k - 1];
            if prev.carrier == m.carrier {
                return Err(Diagnostic::new(format!(
                    "the layout starts a new line at `{}`, which shares a declaration or an \
                     `#if` block with `{}`: the groups style cannot put a group marker between them",
                    s.fields[m.field].name, s.fields[prev.field].name
                ))
                .help("use --style aligned, or declare the fields apart"));
            }
            runs.push(Vec::new());
        }
        if runs.is_empty() {
            runs.push(Vec::new());
        }
        runs.last_mut().expect("pushed above").push(*m);
    }
    let cut: Vec<Vec<Member>> = runs.iter().flat_map(|run| cut_by_class(s, run)).collect();
    let line_aligned = l.align >= l.line;
    let n = cut.len();
    let starts_line = |g: &[Member]| g.first().is_some_and(|m| m.line_break);
    let mut names = Names::new(s);
    let mut groups = Vec::with_capacity(n);
    for (k, g) in cut.iter().enumerate() {
        let fields: Vec<usize> = g.iter().map(|m| m.field).collect();
        let name = names.pick(reused_name(&fields, old_group), || class_name(s, &fields));
        groups.push(Group {
            name,
            aligned_begin: line_aligned && (k == 0 || starts_line(g)),
            aligned_end: line_aligned && (k + 1 == n || starts_line(&cut[k + 1])),
            fields,
        });
    }
    Ok(groups)
}

/// The hard-rule colour of a field: its access when the vocabulary
/// colours its class (read-mostly, lockless of a writer group), else `None`.
fn colour(a: &Access) -> Option<Access> {
    (colouring(a.class(), false) != Colouring::Free).then(|| a.clone())
}

/// Runs of one access class; cold fields join the run before them (the
/// first run when they lead). Cuts inside a carrier are dropped.
fn cut_by_class(s: &Struct, run: &[Member]) -> Vec<Vec<Member>> {
    let mut out: Vec<(Option<Access>, Vec<Member>)> = Vec::new();
    for m in run {
        let a = &s.fields[m.field].access;
        let class = (a.role() != Role::Idle).then(|| a.clone());
        match out.last_mut() {
            Some((current, members))
                if class.is_none()
                    || current.is_none()
                    || *current == class
                    || members.last().is_some_and(|p| p.carrier == m.carrier) =>
            {
                if current.is_none() {
                    *current = class;
                }
                members.push(*m);
            }
            _ => out.push((class, vec![*m])),
        }
    }
    out.into_iter().map(|(_, members)| members).collect()
}

/// The old group at least half of `fields` come from.
fn reused_name(fields: &[usize], old_group: &[Option<String>]) -> Option<String> {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for &f in fields {
        if let Some(Some(g)) = old_group.get(f) {
            *count.entry(g.as_str()).or_default() += 1;
        }
    }
    count
        .into_iter()
        .filter(|&(_, c)| 2 * c >= fields.len())
        .max_by_key(|&(_, c)| c)
        .map(|(g, _)| g.to_string())
}

/// `read_mostly`, `lockless`, `lockless_<group>`, `<lock>_locked` or `cold`:
/// the group's hard class (the one with the most bytes if it has two), else
/// its lock with the most bytes, else `cold`.
///
/// When members of the group are on hot paths ([`Struct::paths`]), the name
/// says how and on which: `read_` (read-mostly or cold members) or `write_`
/// (written members: locked or lockless) followed by the paths' names in
/// the order the struct lists them, `read_tx`, `write_rx`, `read_txrx`.
fn class_name(s: &Struct, fields: &[usize]) -> String {
    let class = plain_class(s, fields);
    let base = class.label(Style::Ident);
    let mut on = vec![false; s.paths.len()];
    for &i in fields {
        for u in &s.fields[i].paths {
            if let Some(p) = on.get_mut(u.path as usize) {
                *p = true;
            }
        }
    }
    let paths: String = s
        .paths
        .iter()
        .zip(&on)
        .filter(|(_, &o)| o)
        .map(|(p, _)| identifier(p))
        .collect::<Vec<_>>()
        .join("");
    if paths.is_empty() {
        return base;
    }
    let written = matches!(class.role(), Role::LocklessWriter | Role::LockedWriter);
    format!("{}_{paths}", if written { "write" } else { "read" })
}

/// The class that names a group of `fields`: its hard class with the most
/// bytes, else its lock with the most bytes, else cold.
fn plain_class(s: &Struct, fields: &[usize]) -> Access {
    let mut hard: BTreeMap<Access, u64> = BTreeMap::new();
    let mut locks: BTreeMap<Access, u64> = BTreeMap::new();
    for &i in fields {
        let f = &s.fields[i];
        if let Some(c) = colour(&f.access) {
            *hard.entry(c).or_default() += f.size;
        } else if f.access.lock().is_some() {
            *locks.entry(f.access.clone()).or_default() += f.size;
        }
    }
    // Ties go to the first in order (read-mostly first).
    for classes in [hard, locks] {
        let most = classes.values().copied().max().unwrap_or(0);
        if let Some((c, _)) = classes.into_iter().find(|&(_, b)| b == most) {
            return c;
        }
    }
    Access::Cold
}

/// Group names in use, so that each is given once and none makes a marker
/// member clash with a field.
struct Names<'a> {
    s: &'a Struct,
    used: Vec<String>,
}

impl<'a> Names<'a> {
    fn new(s: &'a Struct) -> Self {
        Names {
            s,
            used: Vec::new(),
        }
    }

    fn free(&self, name: &str) -> bool {
        let clashes = |prefix: &str| self.s.field_index(&format!("{prefix}{name}")).is_some();
        !self.used.iter().any(|u| u == name)
            && !clashes("__cacheline_group_begin__")
            && !clashes("__cacheline_group_end__")
            && !clashes("__cacheline_group_pad__")
    }

    /// `reused` if it is free, else the class name, suffixed `_2`, `_3`, ...
    /// until free.
    fn pick(&mut self, reused: Option<String>, class: impl FnOnce() -> String) -> String {
        let name = match reused.filter(|r| self.free(r)) {
            Some(r) => r,
            None => {
                let base = class();
                let mut name = base.clone();
                let mut k = 2;
                while !self.free(&name) {
                    name = format!("{base}_{k}");
                    k += 1;
                }
                name
            }
        };
        self.used.push(name.clone());
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Slot;
    use crate::model::{Field, Placement};

    fn strukt(classes: &[Access]) -> Struct {
        Struct::new(
            "s",
            classes
                .iter()
                .enumerate()
                .map(|(i, a)| Field::new(format!("f{i}"), "long", 8, 8).with_access(a.clone()))
                .collect(),
        )
    }

    fn layout(n: usize, align: u64) -> Layout {
        Layout {
            slots: (0..n)
                .map(|field| Slot {
                    field,
                    offset: 8 * field as u64,
                })
                .collect(),
            size: 8 * n as u64,
            align,
            line: 64,
            placement: Placement::Aligned,
        }
    }

    fn members(breaks: &[bool]) -> Vec<Member> {
        breaks
            .iter()
            .enumerate()
            .map(|(i, &line_break)| Member {
                field: i,
                line_break,
                carrier: i,
            })
            .collect()
    }

    fn lock(l: &str) -> Access {
        Access::LockedWrite { lock: l.into() }
    }
    fn a(g: Option<&str>) -> Access {
        Access::Lockless {
            group: g.map(str::to_string),
        }
    }

    #[test]
    fn runs_between_breaks_are_cut_by_class_and_named_after_it() {
        let s = strukt(&[Access::ReadMostly, lock("lru_lock"), a(None), Access::Cold]);
        let g = plan_groups(
            &s,
            &layout(4, 64),
            &members(&[true, false, true, false]),
            &[],
        )
        .unwrap();
        let names: Vec<&str> = g.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["read_mostly", "lru_lock_locked", "lockless"]);
        assert_eq!(g[2].fields, [2, 3]);
        let flags: Vec<(bool, bool)> = g.iter().map(|g| (g.aligned_begin, g.aligned_end)).collect();
        assert_eq!(flags, [(true, false), (false, true), (true, true)]);
        assert_eq!(
            g[0].begin_line(),
            "__cacheline_group_begin_aligned(read_mostly);"
        );
    }

    #[test]
    fn groups_of_a_struct_that_is_not_line_aligned_have_plain_markers() {
        let s = strukt(&[
            Access::ReadMostly,
            Access::Cold,
            lock("lru_lock"),
            lock("lru_lock"),
            a(Some("tx")),
            Access::ReadMostly,
        ]);
        let g = plan_groups(&s, &layout(6, 8), &members(&[false; 6]), &[]).unwrap();
        let names: Vec<&str> = g.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "read_mostly",
                "lru_lock_locked",
                "lockless_tx",
                "read_mostly_2"
            ]
        );
        assert_eq!(g[0].fields, [0, 1]);
        assert!(g.iter().all(|g| !g.aligned_begin && !g.aligned_end));
        assert_eq!(g[1].end_line(), "__cacheline_group_end(lru_lock_locked);");
    }

    #[test]
    fn only_line_bounded_ends_are_aligned() {
        let s = strukt(&[Access::ReadMostly, lock("l"), a(None), a(None)]);
        let g = plan_groups(
            &s,
            &layout(4, 64),
            &members(&[false, false, false, true]),
            &[],
        )
        .unwrap();
        // Run [R, L, A] is cut by class; [A] starts at a break.
        let flags: Vec<(bool, bool)> = g.iter().map(|g| (g.aligned_begin, g.aligned_end)).collect();
        assert_eq!(
            flags,
            [(true, false), (false, false), (false, true), (true, true)]
        );
        assert_eq!(g[3].name, "lockless_2");
    }

    #[test]
    fn old_names_are_kept_for_groups_made_mostly_of_their_members() {
        let s = strukt(&[Access::ReadMostly, Access::ReadMostly, a(None), a(None)]);
        let hot = Some("hot".to_string());
        let old = vec![hot.clone(), None, hot, None];
        let g = plan_groups(
            &s,
            &layout(4, 64),
            &members(&[false, false, true, false]),
            &old,
        )
        .unwrap();
        // Half of the first group comes from `hot`; the second group's half
        // too, but the name is taken.
        assert_eq!(g[0].name, "hot");
        assert_eq!(g[1].name, "lockless");
    }

    #[test]
    fn a_class_cut_inside_a_carrier_is_dropped() {
        let s = strukt(&[Access::ReadMostly, lock("l"), lock("l"), a(None)]);
        let mut m = members(&[false; 4]);
        m[1].carrier = 0;
        let g = plan_groups(&s, &layout(4, 8), &m, &[]).unwrap();
        let names: Vec<&str> = g.iter().map(|g| g.name.as_str()).collect();
        // f1 cannot leave f0's declaration: it joins the read-mostly group.
        assert_eq!(names, ["read_mostly", "l_locked", "lockless"]);
        assert_eq!(g[0].fields, [0, 1]);
    }

    #[test]
    fn a_break_inside_a_declaration_is_an_error() {
        let s = strukt(&[Access::ReadMostly, a(None)]);
        let mut m = members(&[false, true]);
        m[1].carrier = 0;
        let err = plan_groups(&s, &layout(2, 64), &m, &[]).unwrap_err();
        assert!(err.to_string().contains("use --style aligned"), "{err}");
    }

    #[test]
    fn lock_names_become_identifiers() {
        let s = strukt(&[lock("lruvec->lru_lock")]);
        let g = plan_groups(&s, &layout(1, 8), &members(&[false]), &[]).unwrap();
        assert_eq!(g[0].name, "lruvec__lru_lock_locked");
    }

    #[test]
    fn groups_on_hot_paths_are_named_after_the_paths() {
        use crate::model::PathUse;
        let mut s = strukt(&[
            Access::ReadMostly,
            Access::ReadMostly,
            Access::Lockless { group: None },
            Access::LockedWrite { lock: "l".into() },
            Access::Cold,
        ]);
        s.paths = vec!["tx".into(), "rx".into()];
        let on = |path: u32| PathUse { path, bytes: 0..8 };
        s.fields[0].paths = vec![on(0)];
        s.fields[1].paths = vec![on(0), on(1)];
        s.fields[2].paths = vec![on(1)];
        s.fields[3].paths = vec![on(0)];
        assert_eq!(class_name(&s, &[0]), "read_tx");
        assert_eq!(class_name(&s, &[0, 1]), "read_txrx");
        assert_eq!(class_name(&s, &[2]), "write_rx");
        assert_eq!(class_name(&s, &[3]), "write_tx");
        // No member on a path: the class names the group.
        assert_eq!(class_name(&s, &[4]), "cold");
    }
}
