//! The reading of an undecided member the evidence favours. The rules
//! leave a member undecided when only the write frequency separates two
//! classes (written under a lock on a hot path and read without it; read
//! on the fast path and written only on a slow one). The static estimate
//! prices it: each hot site weighs 1/2^branches (every branch taken half
//! the time, as the hot set's own rule), and a member whose hot writes
//! weigh at most a fifth of its hot accesses ([`MAX_WRITE_SHARE`]) reads
//! as read-mostly; one written more often, or with no hot site, keeps the
//! class the rules gave it (the safe side: written).

use crate::infer::classify::{Class, Verdict};
use crate::infer::sites::Heat;

/// A member is read-mostly by the estimate when its hot writes weigh at
/// most 1/`MAX_WRITE_SHARE` of its hot accesses.
pub const MAX_WRITE_SHARE: u32 = 5;

/// The hot sites' weights by the static estimate: (writes, reads), each
/// site 2^(8 - branches) (branches capped at 8), so that a site under no
/// branch weighs 256 and one under three weighs 32.
pub fn hot_weights(v: &Verdict) -> (u64, u64) {
    let mut w = 0u64;
    let mut r = 0u64;
    for s in v.sites.iter().filter(|s| s.heat == Heat::Hot) {
        let weight = 1u64 << (8 - s.branches.unwrap_or(0).min(8));
        if s.kind.writes() {
            w += weight;
        } else {
            r += weight;
        }
    }
    (w, r)
}

/// Whether the evidence favours reading the undecided member `v` as
/// read-mostly.
pub fn favours_read_mostly(v: &Verdict) -> bool {
    let (w, r) = hot_weights(v);
    w + r > 0 && w * u64::from(MAX_WRITE_SHARE) <= w + r
}

/// The verdicts with every undecided member in the reading the evidence
/// favours (decided: no longer ambiguous), and the members read as
/// read-mostly that the rules had kept written.
pub fn favoured(verdicts: &[Verdict]) -> (Vec<Verdict>, Vec<String>) {
    let mut flipped = Vec::new();
    let out = verdicts
        .iter()
        .map(|v| {
            let mut v = v.clone();
            if let Some(why) = v.ambiguous.take() {
                if v.class != Class::ReadMostly && favours_read_mostly(&v) {
                    flipped.push(v.name.clone());
                    v.class = Class::ReadMostly;
                    v.reason = format!("read-mostly by the static estimate of its hot sites ({why})");
                }
            }
            v
        })
        .collect();
    (out, flipped)
}
