//! What a struct's misses cost the fast paths: not every line alike. A
//! line another CPU wrote (a conflict line: a lockless writer next to
//! read-mostly members) is a coherence miss, the dearest; a line of a
//! struct made per object (a socket, a packet, a VMA, a page) is fetched
//! cold each time a fast path meets a new object; a line of a singleton
//! (a static or per-CPU instance, a const ops table) stays in every CPU's
//! cache unless some CPU writes it, so packing one that hot code only
//! reads saves nothing.
//!
//! The weights, per line one pass over the hot roots fetches that a
//! better order would not:
//!
//! | line | weight |
//! |---|---|
//! | a conflict line (each hot root that reaches it, [`super::finding::misses`]) | [`COHERENCE`] = 4 |
//! | a spread line of a per-object struct | [`COLD_FETCH`] = 2 |
//! | a spread line, lifetime unknown | [`UNKNOWN_FETCH`] = 1 |
//! | a spread line of a singleton whose path writes a member | [`CACHED_WRITTEN`] = 1 |
//! | a spread line of a singleton whose path only reads | [`CACHED_READ`] = 0 |
//! | a line of a struct that lives on a stack (spread or conflict) | [`STACK`] = 0 |
//! | a line of the running context's instance (spread or conflict) | [`STACK`] = 0 |
//! | a line of a per-CPU instance its fast paths reach as the running CPU's own (spread or conflict) | [`STACK`] = 0 |
//! | a conflict line of a per-CPU instance a fast path reaches for another CPU | [`COHERENCE`] = 4 |
//! | a spread line of such a per-CPU instance: as a singleton's (written 1, read 0) | [`CACHED_WRITTEN`], [`CACHED_READ`] |
//! | a conflict line of a one-line struct that lives only inside its embedders (no miss of its order: [`super::finding::fixed_outside`]) | 0 |

use super::finding::{Conflict, PathSpread};
use super::lifetime::Lifetime;

/// A coherence miss: the line comes from another CPU's cache.
pub const COHERENCE: u64 = 4;
/// A line of a per-object struct: fetched cold from memory.
pub const COLD_FETCH: u64 = 2;
/// A line of a struct whose lifetime the sources do not show.
pub const UNKNOWN_FETCH: u64 = 1;
/// A line of a singleton its fast path writes: it moves between CPUs.
pub const CACHED_WRITTEN: u64 = 1;
/// A line of a singleton its fast path only reads: it stays cached.
pub const CACHED_READ: u64 = 0;
/// A line of a struct on a stack: one CPU's, just written; no other CPU
/// shares it, so a conflict on it is no coherence miss either.
pub const STACK: u64 = 0;

// The order the ranking rests on, checked when it is built: a coherence
// miss over a cold fetch over a line of unknown lifetime over a cached one.
const _: () = assert!(COHERENCE > COLD_FETCH && COLD_FETCH > UNKNOWN_FETCH);
const _: () = assert!(UNKNOWN_FETCH >= CACHED_WRITTEN && CACHED_WRITTEN > CACHED_READ);

/// The weights a report was ranked by, as its JSON states them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Weights {
    pub coherence: u64,
    pub cold_fetch: u64,
    pub unknown_fetch: u64,
    pub cached_written: u64,
    pub cached_read: u64,
    pub one_cpu: u64,
}

/// The weights of this build.
pub const WEIGHTS: Weights = Weights {
    coherence: COHERENCE,
    cold_fetch: COLD_FETCH,
    unknown_fetch: UNKNOWN_FETCH,
    cached_written: CACHED_WRITTEN,
    cached_read: CACHED_READ,
    one_cpu: STACK,
};

impl Default for Weights {
    fn default() -> Weights {
        WEIGHTS
    }
}

impl Weights {
    /// The legend a table prints: what a line costs by how it lives.
    pub fn legend(&self) -> String {
        format!(
            "# cost per line: conflict (coherence miss, per hot root) {}; spread: per-object {}, lifetime unknown {}, singleton or cross-CPU per-CPU written {}, read only {}; one CPU's (stack, running context, own per-CPU) {}",
            self.coherence,
            self.cold_fetch,
            self.unknown_fetch,
            self.cached_written,
            self.cached_read,
            self.one_cpu
        )
    }
}

/// The weight of one spread line of a path of a struct living as `lifetime`.
pub fn spread_weight(lifetime: &Lifetime, path: &PathSpread) -> u64 {
    match lifetime {
        Lifetime::PerObject(_) => COLD_FETCH,
        Lifetime::Unknown => UNKNOWN_FETCH,
        Lifetime::Singleton(_) | Lifetime::PerCpuShared(_) if path.writes => CACHED_WRITTEN,
        Lifetime::Singleton(_) | Lifetime::PerCpuShared(_) => CACHED_READ,
        Lifetime::Local(_) | Lifetime::Running(_) | Lifetime::PerCpu(_) => STACK,
    }
}

/// The struct's cost: its conflict lines' misses at [`COHERENCE`] (none
/// for one CPU's struct: on a stack, the running context's, a per-CPU
/// instance only its own CPU's fast paths reach), each hot
/// path's lines past the fewest at [`spread_weight`].
pub fn cost(conflicts: &[Conflict], paths: &[PathSpread], lifetime: &Lifetime) -> u64 {
    let shared = !matches!(
        lifetime,
        Lifetime::Local(_) | Lifetime::Running(_) | Lifetime::PerCpu(_)
    );
    let coherence: u64 = if shared {
        conflicts.iter().map(|c| c.misses * COHERENCE).sum()
    } else {
        0
    };
    let spread: u64 = paths
        .iter()
        .map(|p| p.excess() * spread_weight(lifetime, p))
        .sum();
    coherence + spread
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(lines: u64, fewest: u64, writes: bool) -> PathSpread {
        PathSpread {
            root: "r".into(),
            lines,
            fewest,
            bytes: 64,
            members: 3,
            writes,
        }
    }

    #[test]
    fn a_read_only_singleton_costs_nothing_and_a_coherence_miss_most() {
        let obj = Lifetime::PerObject("x.c: sizeof(struct s)".into());
        let single = Lifetime::Singleton("x.c: struct s s".into());
        let read = [path(3, 1, false)];
        let written = [path(3, 1, true)];
        assert_eq!(cost(&[], &read, &single), 0);
        assert_eq!(cost(&[], &written, &single), 2);
        assert_eq!(cost(&[], &read, &Lifetime::Unknown), 2);
        assert_eq!(cost(&[], &read, &obj), 4);
    }

    #[test]
    fn the_legend_states_every_weight() {
        assert_eq!(
            WEIGHTS.legend(),
            "# cost per line: conflict (coherence miss, per hot root) 4; spread: per-object 2, lifetime unknown 1, singleton or cross-CPU per-CPU written 1, read only 0; one CPU's (stack, running context, own per-CPU) 0"
        );
    }

    #[test]
    fn a_per_cpu_instance_costs_by_whose_the_fast_paths_reach() {
        let line = Conflict {
            line: 0,
            writers: Vec::new(),
            victims: Vec::new(),
            exposure: 1,
            misses: 2,
            fixed_outside: None,
        };
        let own = Lifetime::PerCpu("this_cpu_ptr".into());
        let shared = Lifetime::PerCpuShared("per_cpu(x, cpu)".into());
        let conflicts = std::slice::from_ref(&line);
        // The running CPU's own: neither a conflict nor a spread line costs.
        assert_eq!(cost(conflicts, &[path(3, 1, true)], &own), 0);
        // Written across CPUs: the conflict is a coherence miss, a spread
        // line costs as a singleton's.
        assert_eq!(cost(conflicts, &[path(3, 1, true)], &shared), 8 + 2);
        assert_eq!(cost(conflicts, &[path(3, 1, false)], &shared), 8);
    }

    #[test]
    fn a_conflict_on_one_cpus_struct_costs_nothing() {
        let obj = Lifetime::PerObject("x.c: sizeof(struct s)".into());
        let line = Conflict {
            line: 0,
            writers: Vec::new(),
            victims: Vec::new(),
            exposure: 1,
            misses: 3,
            fixed_outside: None,
        };
        assert_eq!(cost(std::slice::from_ref(&line), &[], &obj), 12);
        let stack = Lifetime::Local("x.c: struct s s".into());
        assert_eq!(
            cost(std::slice::from_ref(&line), &[path(3, 1, true)], &stack),
            0
        );
        let running =
            Lifetime::Running("3 of its 4 hot sites reach it through get_current()".into());
        assert_eq!(
            cost(std::slice::from_ref(&line), &[path(3, 1, true)], &running),
            0
        );
    }
}
