//! Which structs most likely suffer false sharing: a heuristic ranking by
//! the bytes of other data that sit on the cache lines of lockless fields.
//!
//! Lines are counted from the struct's start (as if it started a line, as
//! pahole draws them). On every line that holds bytes of a lockless field,
//! the bytes of fields that are neither lockless nor a lock or locked under
//! one are *shared bytes*: each lockless write invalidates them for their
//! readers. Lock words and locked fields are left out (sharing with them is
//! a soft cost, not the bug), and so are lockless fields
//! of another writer group (they are counted on their own lines).
//! Read-mostly bytes among the shared ones break the hard rule; they are
//! known only from an access file and rank first.

use crate::class::Role;
use crate::model::Struct;
use serde::Serialize;

/// How exposed one struct's lockless fields are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Exposure {
    #[serde(rename = "struct")]
    pub name: String,
    pub size: u64,
    /// Lockless fields that share a line with other data, in offset order.
    pub lockless: Vec<String>,
    /// Bytes of other fields on lines that hold lockless bytes.
    pub shared_bytes: u64,
    /// The read-mostly part of `shared_bytes` (hard-rule conflicts).
    pub read_mostly_bytes: u64,
    /// Lines that hold lockless bytes and other bytes.
    pub lines: u64,
}

impl Exposure {
    /// Sort key: hard-rule bytes, then shared bytes, most first.
    pub fn rank_key(&self) -> (std::cmp::Reverse<u64>, std::cmp::Reverse<u64>) {
        (
            std::cmp::Reverse(self.read_mostly_bytes),
            std::cmp::Reverse(self.shared_bytes),
        )
    }
}

/// The exposure of `s` laid out at its fields' original offsets, or `None`
/// when no lockless field shares a line with other data. `size` is the
/// struct's size.
///
/// Work and memory grow with the number of fields, not with the size: only
/// the lines that hold bytes of a lockless field are counted, and a field
/// adds its bytes to each of those lines by arithmetic. Lines past `size`
/// (fields of corrupt input that end past the struct) count like any other.
pub fn exposure(s: &Struct, size: u64, line: u64) -> Option<Exposure> {
    let line = line.max(1);
    // (start, end, field index) of every placed field with bytes.
    let mut placed: Vec<(u64, u64, usize)> = s
        .fields
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let start = f.original_offset?;
            let end = start.checked_add(f.size)?;
            (f.size > 0).then_some((start, end, i))
        })
        .collect();
    placed.sort_unstable();
    // The lines that hold lockless bytes, as sorted disjoint ranges of line numbers.
    let mut lockless_lines: Vec<std::ops::Range<u64>> = placed
        .iter()
        .filter(|&&(_, _, i)| s.fields[i].access.role() == Role::LocklessWriter)
        .map(|&(start, end, _)| start / line..(end - 1) / line + 1)
        .collect();
    lockless_lines.sort_unstable_by_key(|r| r.start);
    let mut merged: Vec<std::ops::Range<u64>> = Vec::new();
    for r in lockless_lines {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    // Per line holding lockless bytes: lockless, other and read-mostly bytes.
    // A line whose only bytes belong to one field is never shared, so only
    // lines where some field starts or ends can be: those are counted.
    let mut per_line: std::collections::BTreeMap<u64, (u64, u64, u64)> = Default::default();
    let holds_lockless = |l: u64| {
        let at = merged.partition_point(|r| r.end <= l);
        merged.get(at).is_some_and(|r| r.contains(&l))
    };
    for &(start, end, _) in &placed {
        for l in [start / line, (end - 1) / line] {
            if holds_lockless(l) {
                per_line.entry(l).or_default();
            }
        }
    }
    let lines: Vec<u64> = per_line.keys().copied().collect();
    for &(start, end, i) in &placed {
        let k = s.fields[i].access.role();
        let first = lines.partition_point(|&l| l < start / line);
        for &l in lines[first..]
            .iter()
            .take_while(|&&l| l <= (end - 1) / line)
        {
            let n = end.min((l + 1) * line) - start.max(l * line);
            let slot = per_line.get_mut(&l).expect("lines are per_line's keys");
            match k {
                Role::LocklessWriter => slot.0 += n,
                Role::Reader => {
                    slot.1 += n;
                    slot.2 += n;
                }
                Role::Idle => slot.1 += n,
                Role::LockedWriter => {}
            }
        }
    }
    let shared = |l: u64| per_line.get(&l).is_some_and(|c| c.0 > 0 && c.1 > 0);
    let (mut shared_bytes, mut read_mostly_bytes, mut count) = (0, 0, 0);
    for (&l, &(_, other, read)) in &per_line {
        if shared(l) {
            shared_bytes += other;
            read_mostly_bytes += read;
            count += 1;
        }
    }
    if count == 0 {
        return None;
    }
    let lockless = placed
        .iter()
        .filter(|&&(start, end, i)| {
            s.fields[i].access.is_lockless()
                && per_line
                    .range(start / line..=(end - 1) / line)
                    .any(|(&l, _)| shared(l))
        })
        .map(|&(_, _, i)| s.fields[i].name.clone())
        .collect();
    Some(Exposure {
        name: s.name.clone(),
        size,
        lockless,
        shared_bytes,
        read_mostly_bytes,
        lines: count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Access;
    use crate::model::Field;

    fn field(name: &str, offset: u64, size: u64, access: Access) -> Field {
        let mut f = Field::new(name, "long", size, 8).with_access(access);
        f.original_offset = Some(offset);
        f
    }

    #[test]
    fn counts_other_bytes_on_lockless_lines_only() {
        let s = Struct::new(
            "s",
            vec![
                field("count", 0, 8, Access::Lockless { group: None }),
                field("a", 8, 8, Access::Cold),
                field(
                    "lock",
                    16,
                    4,
                    Access::LockedWrite {
                        lock: "lock".into(),
                    },
                ),
                field("b", 64, 8, Access::Cold),
            ],
        );
        let e = exposure(&s, 128, 64).unwrap();
        assert_eq!((e.shared_bytes, e.read_mostly_bytes, e.lines), (8, 0, 1));
        assert_eq!(e.lockless, vec!["count".to_string()]);
    }

    #[test]
    fn read_mostly_neighbours_are_hard_conflicts() {
        let s = Struct::new(
            "s",
            vec![
                field("r", 0, 8, Access::ReadMostly),
                field("n", 56, 16, Access::Lockless { group: None }),
                field("c", 72, 8, Access::Cold),
            ],
        );
        let e = exposure(&s, 128, 64).unwrap();
        assert_eq!((e.shared_bytes, e.read_mostly_bytes, e.lines), (16, 8, 2));
    }

    #[test]
    fn a_lockless_field_alone_on_its_line_is_not_exposed() {
        let s = Struct::new(
            "s",
            vec![
                field("a", 0, 8, Access::Cold),
                field("n", 64, 8, Access::Lockless { group: None }),
                field(
                    "lock",
                    72,
                    4,
                    Access::LockedWrite {
                        lock: "lock".into(),
                    },
                ),
            ],
        );
        assert_eq!(exposure(&s, 128, 64), None);
    }
}
