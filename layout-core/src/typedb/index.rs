//! Aggregates by name, without an allocation per name: the names live in one
//! arena, hashed with FNV-1a (names come from the file, not from an
//! adversary choosing collisions; a collision only costs a longer chain).

use super::KeySpace;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    start: u32,
    len: u32,
    space: KeySpace,
    aggregate: u32,
    /// Next entry with the same hash.
    next: u32,
}

#[derive(Debug, Default)]
pub(crate) struct NameIndex {
    arena: String,
    entries: Vec<Entry>,
    heads: HashMap<u64, u32, BuildHasherDefault<Prehashed>>,
}

impl NameIndex {
    pub(crate) fn with_capacity(names: usize) -> Self {
        NameIndex {
            arena: String::with_capacity(names * 16),
            entries: Vec::with_capacity(names),
            heads: HashMap::with_capacity_and_hasher(names, Default::default()),
        }
    }

    /// Adds `name` in `space` for `aggregate`, unless the name is taken there
    /// (the first one added wins).
    pub(crate) fn insert(&mut self, space: KeySpace, name: &str, aggregate: u32) {
        let hash = fnv(space, name);
        let head = self.heads.get(&hash).copied().unwrap_or(NONE);
        if self.chain(head, space, name).is_some() {
            return;
        }
        let entry = Entry {
            start: self.arena.len() as u32,
            len: name.len() as u32,
            space,
            aggregate,
            next: head,
        };
        self.arena.push_str(name);
        self.heads.insert(hash, self.entries.len() as u32);
        self.entries.push(entry);
    }

    pub(crate) fn get(&self, space: KeySpace, name: &str) -> Option<u32> {
        let head = *self.heads.get(&fnv(space, name))?;
        self.chain(head, space, name)
    }

    fn chain(&self, mut at: u32, space: KeySpace, name: &str) -> Option<u32> {
        while let Some(e) = self.entries.get(at as usize) {
            if e.space == space && self.text(e) == name {
                return Some(e.aggregate);
            }
            at = e.next;
        }
        None
    }

    fn text(&self, e: &Entry) -> &str {
        self.arena
            .get(e.start as usize..(e.start + e.len) as usize)
            .unwrap_or("")
    }

    /// Every name, in the order added.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| self.text(e))
    }
}

fn fnv(space: KeySpace, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in [space as u8].iter().chain(name.as_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Keys are hashes already.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_name_wins_per_space() {
        let mut index = NameIndex::with_capacity(4);
        index.insert(KeySpace::Struct, "page", 1);
        index.insert(KeySpace::Struct, "page", 2);
        index.insert(KeySpace::Union, "page", 3);
        index.insert(KeySpace::Other, "atomic_t", 4);
        assert_eq!(index.get(KeySpace::Struct, "page"), Some(1));
        assert_eq!(index.get(KeySpace::Union, "page"), Some(3));
        assert_eq!(index.get(KeySpace::Other, "page"), None);
        assert_eq!(index.get(KeySpace::Other, "atomic_t"), Some(4));
        assert_eq!(
            index.names().collect::<Vec<_>>(),
            ["page", "page", "atomic_t"]
        );
    }
}
