//! What a C header needs from outside itself: constants (`-D`, the access
//! file's `[defines]`, a kernel `.config`) and the sizes of types it uses
//! without defining them (the access file's `[types]`). The access file and
//! the CLI fill them; the C front-end ([`crate::c`]) and the probe read them.

use std::collections::BTreeMap;

/// Integer constants for the C front-end: name → value. Built from the
/// access file's `[defines]`; the CLI adds `-D` flags on top.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Defines(BTreeMap<String, i64>);

impl Defines {
    /// Adds or replaces a constant.
    pub fn insert(&mut self, name: impl Into<String>, value: i64) {
        self.0.insert(name.into(), value);
    }

    pub fn get(&self, name: &str) -> Option<i64> {
        self.0.get(name).copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<S: Into<String>> FromIterator<(S, i64)> for Defines {
    fn from_iter<I: IntoIterator<Item = (S, i64)>>(iter: I) -> Self {
        Defines(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

/// Sizes of types a C header uses without defining: `"struct foo"` or
/// `"foo_t"` → (size, align). Names are kept with single spaces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TypeTable(BTreeMap<String, (u64, u64)>);

fn normalize_type_name(name: &str) -> String {
    name.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl TypeTable {
    pub fn insert(&mut self, name: &str, size: u64, align: u64) {
        self.0.insert(normalize_type_name(name), (size, align));
    }

    /// (size, align) of `name` (`struct foo`, `foo_t`).
    pub fn get(&self, name: &str) -> Option<(u64, u64)> {
        self.0.get(&normalize_type_name(name)).copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, (u64, u64))> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
