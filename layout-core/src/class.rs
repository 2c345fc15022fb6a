//! The access vocabulary: the one definition of the access classes.
//!
//! Everything layout-core and the macros say about a class is read from
//! [`CLASSES`] (one row per class) and the [`Access`] enum beside it: the
//! keywords the access file and the `#[layout(..)]` attribute accept
//! (aliases included, the same in both), the JSON name, the tag and the
//! labels the reports and emitters print, the role the class plays on a
//! line (which the soft costs, the diagrams and the scans read), the hard
//! rule (which pairs may never share a line), the solver's colouring
//! derived from that rule, and which field of a hard pair carries the
//! macros' compile-time check.
//!
//! Two statements of the rule are kept apart on purpose, as oracles:
//! `verify.rs` and the runtime checks of the `cachelayout` crate
//! (`src/private/class.rs`). A test walks every pair of classes and asserts
//! that they, the solver and the macros agree with this table.

use serde::Serialize;
use std::fmt;

/// How a field is accessed by concurrent code: a class and its parameter.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Access {
    /// Read on hot paths by many CPUs, written rarely.
    ReadMostly,
    /// Read and written only while holding the named lock.
    LockedWrite { lock: String },
    /// Written without a lock by many CPUs. Fields of different writer groups
    /// must not share a line either.
    Lockless { group: Option<String> },
    /// Rarely touched; may fill any line.
    Cold,
}

/// An access class without its parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    ReadMostly,
    LockedWrite,
    Lockless,
    Cold,
}

/// What a class's parameter names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// No parameter.
    None,
    /// The lock that guards the field; required.
    Lock,
    /// The writer group; optional (no group is one shared group).
    Group,
}

/// What CPUs do to a line that holds a field of the class. The soft costs
/// (`cost.rs`, the solver's evaluation), the line diagrams and the scans
/// read the role, not the class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Many CPUs read it.
    Reader,
    /// CPUs write it holding the lock named by the parameter.
    LockedWriter,
    /// Many CPUs write it without a lock.
    LocklessWriter,
    /// Nobody touches it often.
    Idle,
}

/// How two fields of one class with different parameters get along.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distinct {
    /// They may share a line.
    Share,
    /// The hard rule: they must not share a line.
    Hard,
}

/// A label with and without the parameter: `with` holds one `{}` where the
/// parameter goes.
#[derive(Clone, Copy, Debug)]
pub struct Label {
    pub bare: &'static str,
    pub with: &'static str,
}

const fn same(text: &'static str) -> Label {
    Label {
        bare: text,
        with: text,
    }
}

/// Which label an output prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Line diagrams: `read-mostly`, `under lock`, `lockless(tx)`.
    Diagram,
    /// Sentences (the changelog): `lockless atomic`, `lockless (tx)`.
    Prose,
    /// Part of a C identifier (cache-line group names): `read_mostly`,
    /// `lock_locked`, `lockless_tx`; the parameter is made an identifier.
    Ident,
}

/// One class: everything the program says about it.
#[derive(Debug)]
pub struct ClassInfo {
    pub class: Class,
    /// The keywords the access file and the `#[layout(..)]` attribute both
    /// accept; the first is the access file's and JSON's spelling.
    pub keywords: &'static [&'static str],
    /// The keyword the macros' documentation and suggestions use.
    pub attribute: &'static str,
    /// The tag in tables and summaries (`R`, then `R(param)` with one).
    pub tag: &'static str,
    pub param: Param,
    pub role: Role,
    /// A field holding members of several classes takes the strongest.
    pub strength: u8,
    /// The classes whose bytes may never share a line with this one's (the
    /// relation is symmetric; each pair is listed once, on the class that
    /// carries the macros' check).
    pub hard_with: &'static [Class],
    /// Two fields of this class with different parameters.
    pub distinct: Distinct,
    pub diagram: Label,
    pub prose: Label,
    pub ident: Label,
    /// The variant of the runtime `cachelayout::__private::Class` the
    /// macros emit (its parameter follows [`ClassInfo::param`]).
    pub runtime: &'static str,
    /// The variant of `cachelayout::Access` a type of this class carries
    /// into structs that hold it (`#[layout(contains = "..")]`); `None` when
    /// no type carries it.
    pub carried: Option<&'static str>,
}

/// Every class, in [`Class`] order.
pub const CLASSES: &[ClassInfo] = &[
    ClassInfo {
        class: Class::ReadMostly,
        keywords: &["read_mostly"],
        attribute: "read_mostly",
        tag: "R",
        param: Param::None,
        role: Role::Reader,
        strength: 1,
        hard_with: &[],
        distinct: Distinct::Share,
        diagram: same("read-mostly"),
        prose: same("read-mostly"),
        ident: same("read_mostly"),
        runtime: "ReadMostly",
        carried: Some("ReadMostly"),
    },
    ClassInfo {
        class: Class::LockedWrite,
        keywords: &["locked_write"],
        attribute: "locked_write",
        tag: "L",
        param: Param::Lock,
        role: Role::LockedWriter,
        strength: 2,
        hard_with: &[],
        distinct: Distinct::Share,
        diagram: Label {
            bare: "locked",
            with: "under {}",
        },
        prose: Label {
            bare: "locked",
            with: "under {}",
        },
        ident: Label {
            bare: "locked",
            with: "{}_locked",
        },
        runtime: "LockedWrite",
        carried: Some("LockedWrite"),
    },
    ClassInfo {
        class: Class::Lockless,
        keywords: &["lockless_atomic", "lockless"],
        attribute: "lockless",
        tag: "A",
        param: Param::Group,
        role: Role::LocklessWriter,
        strength: 3,
        hard_with: &[Class::ReadMostly],
        distinct: Distinct::Hard,
        diagram: Label {
            bare: "lockless",
            with: "lockless({})",
        },
        prose: Label {
            bare: "lockless atomic",
            with: "lockless ({})",
        },
        ident: Label {
            bare: "lockless",
            with: "lockless_{}",
        },
        runtime: "Lockless",
        carried: Some("Lockless"),
    },
    ClassInfo {
        class: Class::Cold,
        keywords: &["cold"],
        attribute: "cold",
        tag: "C",
        param: Param::None,
        role: Role::Idle,
        strength: 0,
        hard_with: &[],
        distinct: Distinct::Share,
        diagram: same("cold"),
        prose: same("cold"),
        ident: same("cold"),
        runtime: "Cold",
        carried: None,
    },
];

impl Class {
    /// Every class, in order.
    pub fn all() -> impl Iterator<Item = Class> {
        CLASSES.iter().map(|c| c.class)
    }

    /// This class's row of [`CLASSES`].
    pub fn info(self) -> &'static ClassInfo {
        let info = &CLASSES[self as usize];
        debug_assert_eq!(info.class, self);
        info
    }

    /// The class a keyword (or alias) names, in the access file or the
    /// `#[layout(..)]` attribute alike.
    pub fn from_keyword(word: &str) -> Option<Class> {
        CLASSES
            .iter()
            .find(|c| c.keywords.contains(&word))
            .map(|c| c.class)
    }

    /// Every keyword and alias, in table order.
    pub fn keywords() -> impl Iterator<Item = &'static str> {
        CLASSES.iter().flat_map(|c| c.keywords.iter().copied())
    }

    /// The class with this parameter; `None` when the class needs a
    /// parameter and has none, or takes none and got one.
    pub fn with(self, param: Option<String>) -> Option<Access> {
        match (self, param) {
            (Class::ReadMostly, None) => Some(Access::ReadMostly),
            (Class::LockedWrite, Some(lock)) => Some(Access::LockedWrite { lock }),
            (Class::Lockless, group) => Some(Access::Lockless { group }),
            (Class::Cold, None) => Some(Access::Cold),
            (Class::ReadMostly | Class::LockedWrite | Class::Cold, _) => None,
        }
    }

    /// Do fields of `self` and `other` (with different parameters when the
    /// classes are the same) fall under the hard rule?
    pub fn hard_pair(self, other: Class, same_param: bool) -> bool {
        if self == other {
            return !same_param && self.info().distinct == Distinct::Hard;
        }
        self.info().hard_with.contains(&other) || other.info().hard_with.contains(&self)
    }

    /// Whether a field of `self` carries the macros' check against a field
    /// of `other` that falls under the hard rule with it: the class that
    /// lists the other in [`ClassInfo::hard_with`]; between two fields of one
    /// class, the one declared first (`first`).
    pub fn carries_check(self, other: Class, first: bool) -> bool {
        if self == other {
            first
        } else {
            self.info().hard_with.contains(&other)
        }
    }
}

impl Access {
    /// The class, without its parameter.
    pub fn class(&self) -> Class {
        match self {
            Access::ReadMostly => Class::ReadMostly,
            Access::LockedWrite { .. } => Class::LockedWrite,
            Access::Lockless { .. } => Class::Lockless,
            Access::Cold => Class::Cold,
        }
    }

    /// The parameter: the lock, or the writer group when there is one.
    pub fn param(&self) -> Option<&str> {
        match self {
            Access::LockedWrite { lock } => Some(lock),
            Access::Lockless { group } => group.as_deref(),
            Access::ReadMostly | Access::Cold => None,
        }
    }

    pub fn info(&self) -> &'static ClassInfo {
        self.class().info()
    }

    /// The JSON name of the class: `read_mostly`, `locked_write`, `lockless_atomic`, `cold`.
    pub fn class_name(&self) -> &'static str {
        self.info().keywords[0]
    }

    /// A short tag for tables: `R`, `L(lock)`, `A`, `A(group)`, `C`.
    pub fn tag(&self) -> String {
        let tag = self.info().tag;
        match self.param() {
            Some(p) => format!("{tag}({p})"),
            None => tag.to_string(),
        }
    }

    /// The label an output prints for the class (see [`Style`]).
    pub fn label(&self, style: Style) -> String {
        let info = self.info();
        let label = match style {
            Style::Diagram => info.diagram,
            Style::Prose => info.prose,
            Style::Ident => info.ident,
        };
        match self.param() {
            Some(p) if style == Style::Ident => label.with.replacen("{}", &identifier(p), 1),
            Some(p) => label.with.replacen("{}", p, 1),
            None => label.bare.to_string(),
        }
    }

    /// The `#[layout(..)]` attribute that declares the class:
    /// `read_mostly`, `locked_write = "lock"`, `lockless(group = "tx")`.
    pub fn attribute(&self) -> String {
        let info = self.info();
        match (info.param, self.param()) {
            (Param::Lock, Some(lock)) => format!("{} = \"{lock}\"", info.attribute),
            (Param::Group, Some(group)) => format!("{}(group = \"{group}\")", info.attribute),
            (Param::None | Param::Lock | Param::Group, _) => info.attribute.to_string(),
        }
    }

    /// What CPUs do to a line holding the field.
    pub fn role(&self) -> Role {
        self.info().role
    }

    /// A field holding members of several classes takes the strongest.
    pub fn strength(&self) -> u8 {
        self.info().strength
    }

    pub fn is_read_mostly(&self) -> bool {
        self.role() == Role::Reader
    }

    pub fn is_lockless(&self) -> bool {
        self.role() == Role::LocklessWriter
    }

    /// The lock of a locked field.
    pub fn lock(&self) -> Option<&str> {
        match self.info().param {
            Param::Lock => self.param(),
            Param::None | Param::Group => None,
        }
    }

    /// The writer group of a lockless field, when it has one.
    pub fn group(&self) -> Option<&str> {
        match self.info().param {
            Param::Group => self.param(),
            Param::None | Param::Lock => None,
        }
    }

    /// The hard rule, read from [`CLASSES`]: may bytes of `self` and
    /// `other` never share a line?
    ///
    /// True for lockless vs read-mostly, and for lockless fields of different
    /// writer groups (no group counts as one shared group).
    pub fn hard_conflict(&self, other: &Access) -> bool {
        self.class()
            .hard_pair(other.class(), self.param() == other.param())
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tag())
    }
}

/// The solver's line colouring of the hard rule: fields of two different
/// non-free colours must not share a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colouring {
    /// Colour 0: conflicts with nothing.
    Free,
    /// One colour shared by every class coloured so.
    Shared,
    /// A colour per parameter value (each writer group its own).
    PerParam,
}

/// The colouring of `class`, derived from the hard rule. With
/// `separate_locked`, locked writers must also avoid lockless writers (the
/// strongest soft cost made hard), which puts them in the shared colour.
///
/// A line colouring can state the rule only when every pair of non-free
/// classes of different colour conflicts; the vocabulary's tests check that.
pub fn colouring(class: Class, separate_locked: bool) -> Colouring {
    let info = class.info();
    if info.distinct == Distinct::Hard {
        return Colouring::PerParam;
    }
    let hard = Class::all().any(|other| other != class && class.hard_pair(other, false));
    let separated = separate_locked && info.role == Role::LockedWriter;
    if hard || separated {
        Colouring::Shared
    } else {
        Colouring::Free
    }
}

/// `name` with every character C does not allow in an identifier as `_`.
pub fn identifier(name: &str) -> String {
    let mut id: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if id.is_empty() || id.starts_with(|c: char| c.is_ascii_digit()) {
        id.insert(0, '_');
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One field of every class, with two parameters where it takes one.
    fn samples() -> Vec<Access> {
        Class::all()
            .flat_map(|c| match c.info().param {
                Param::None => vec![c.with(None)],
                Param::Lock => vec![c.with(Some("x".into())), c.with(Some("y".into()))],
                Param::Group => vec![
                    c.with(None),
                    c.with(Some("x".into())),
                    c.with(Some("y".into())),
                ],
            })
            .map(|a| a.expect("a valid parameter"))
            .collect()
    }

    #[test]
    fn table_is_in_class_order_and_keywords_are_unique() {
        for (i, c) in CLASSES.iter().enumerate() {
            assert_eq!(c.class as usize, i);
        }
        let mut words: Vec<&str> = Class::keywords().collect();
        let n = words.len();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), n, "a keyword names two classes");
        for c in CLASSES {
            assert!(c.keywords.contains(&c.attribute));
            assert_eq!(Class::from_keyword(c.attribute), Some(c.class));
        }
    }

    #[test]
    fn every_sample_round_trips_through_its_class_and_param() {
        for a in samples() {
            let back = a.class().with(a.param().map(str::to_string));
            assert_eq!(back.as_ref(), Some(&a));
        }
    }

    /// The colouring is a faithful statement of the hard rule: two fields
    /// conflict exactly when both have non-free colours that differ.
    #[test]
    fn colouring_states_the_hard_rule() {
        let colour = |a: &Access| match colouring(a.class(), false) {
            Colouring::Free => None,
            Colouring::Shared => Some((None, None)),
            Colouring::PerParam => Some((Some(a.class()), a.param().map(str::to_string))),
        };
        for a in samples() {
            for b in samples() {
                let coloured = match (colour(&a), colour(&b)) {
                    (Some(x), Some(y)) => x != y,
                    _ => false,
                };
                assert_eq!(coloured, a.hard_conflict(&b), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn labels_keep_their_spellings() {
        let a = |g: Option<&str>| Access::Lockless {
            group: g.map(str::to_string),
        };
        let l = Access::LockedWrite { lock: "k".into() };
        assert_eq!(a(None).tag(), "A");
        assert_eq!(a(Some("tx")).tag(), "A(tx)");
        assert_eq!(l.tag(), "L(k)");
        assert_eq!(a(Some("tx")).label(Style::Diagram), "lockless(tx)");
        assert_eq!(a(None).label(Style::Prose), "lockless atomic");
        assert_eq!(a(Some("t x")).label(Style::Ident), "lockless_t_x");
        assert_eq!(l.label(Style::Ident), "k_locked");
        assert_eq!(l.attribute(), "locked_write = \"k\"");
        assert_eq!(a(Some("tx")).attribute(), "lockless(group = \"tx\")");
        assert_eq!(a(None).class_name(), "lockless_atomic");
    }
}
