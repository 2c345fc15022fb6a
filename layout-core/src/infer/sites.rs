//! What the static analysis says about one access of a member.

use serde::{Deserialize, Serialize};

/// The locks a subsystem's callers take before they call its entry points
/// (the socket layer owns `struct sock`'s `sk_lock` before it calls the
/// protocol): a function of unknown context (its callers are elsewhere)
/// is not taken to run without them.
pub const OWNER_LOCKS: &[&str] = &["sk_lock"];

/// How a site touches its member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Read,
    Write,
    /// A read-modify-write (`++`, `+=`, an atomic add, a bit op, `xchg`).
    Rmw,
}

impl Kind {
    pub fn writes(self) -> bool {
        matches!(self, Kind::Write | Kind::Rmw)
    }

    pub fn word(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Rmw => "rmw",
        }
    }
}

/// How often a site runs, from the call graph and the hot and cold roots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Heat {
    /// Reached from a hot root, not on a cold branch.
    Hot,
    /// Runs, but no hot root reaches it (or only through a call on an
    /// `unlikely()` branch): reached from another entry of the sources (a
    /// sysctl or sysfs handler, an ops table, a caller in another file),
    /// not `__init` code, not on a cold branch.
    Warm,
    /// On an `unlikely()` branch or error path, only printed, or reached
    /// only from a cold root or `__init` code (or an unused header helper).
    Cold,
}

/// One access of a member of the struct, in the sources.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Site {
    /// Index of the struct's (top-level) field.
    pub field: usize,
    /// The member as the code names it (`usage.counter`).
    pub member: String,
    pub file: String,
    pub line: u32,
    pub function: String,
    pub kind: Kind,
    /// `plain`, `READ_ONCE`, `WRITE_ONCE`, `atomic_long_add`, `set_bit`, `list_del`, ...
    pub how: String,
    /// The locks held, by member name (`lock`, `lru_lock`).
    pub locks: Vec<String>,
    pub heat: Heat,
    /// Why it is not hot: `unlikely()`, `error path`, `printed`, `not reached from a hot root`, ...
    pub cold_because: Option<String>,
    /// How a hot root reaches it: `root > caller > function`.
    pub hot_via: Option<String>,
    /// Every hot root that reaches it, in command-line order.
    pub hot_roots: Vec<String>,
    /// How many loops of its function enclose it (a weight for the reviewer).
    pub loop_depth: u32,
    /// For a hot site: the branches (`if` arms, `switch` bodies) on the
    /// fewest-branch way from the nearest hot root, its own function's
    /// included. By the static estimate (each branch taken half the time)
    /// it runs on 1/2^N of that root's calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branches: Option<u32>,
    /// Not hot, but a hot root reaches it through a slow path, an
    /// `unlikely()` branch or an error path (a rare event of a hot path).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub near_hot: bool,
    /// Its function's name says it is a slow path (setup, a timer, a
    /// sysctl handler, loss recovery).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub slow_name: bool,
    /// No call in the sources reaches its function: the locks its callers
    /// hold are unknown.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub context_unknown: bool,
    /// The function with no arguments its object comes from (`current` is
    /// `get_current()`): the running context's instance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accessor: Option<String>,
    /// A store skipped when the member already holds the value (under a
    /// test that it differs: `if (x->m != v) x->m = v;`): it writes only
    /// when the value changes.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub on_change: bool,
}

#[cfg(test)]
impl Site {
    /// A site of member `m` in `f` at x.c:1, read plainly, no lock, no
    /// root: what a unit test changes the fields it is about from.
    pub(crate) fn for_test(kind: Kind, heat: Heat) -> Site {
        Site {
            field: 0,
            member: "m".into(),
            file: "x.c".into(),
            line: 1,
            function: "f".into(),
            kind,
            how: "plain".into(),
            locks: Vec::new(),
            heat,
            cold_because: None,
            hot_via: None,
            hot_roots: Vec::new(),
            loop_depth: 0,
            branches: None,
            near_hot: false,
            slow_name: false,
            context_unknown: false,
            accessor: None,
            on_change: false,
        }
    }
}

impl Site {
    /// `mm/page_counter.c:120 page_counter_charge rmw atomic_long_add_return lock=-`
    pub fn cite(&self) -> String {
        let lock = if self.locks.is_empty() {
            "no lock".to_string()
        } else {
            format!("under {}", self.locks.join("+"))
        };
        let in_loop = match self.loop_depth {
            0 => String::new(),
            d => format!(" in loop depth {d}"),
        };
        format!(
            "{}:{} {} {} {} {}{in_loop}",
            self.file,
            self.line,
            self.function,
            self.kind.word(),
            self.how,
            lock
        )
    }
}
