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
                    v.reason =
                        format!("read-mostly by the static estimate of its hot sites ({why})");
                }
            }
            v
        })
        .collect();
    (out, flipped)
}

/// The verdicts with every undecided member read as read-mostly, and
/// those the rules had kept written.
pub fn all_read_mostly(verdicts: &[Verdict]) -> (Vec<Verdict>, Vec<String>) {
    let mut flipped = Vec::new();
    let out = verdicts
        .iter()
        .map(|v| {
            let mut v = v.clone();
            if v.ambiguous.take().is_some() && v.class != Class::ReadMostly {
                flipped.push(v.name.clone());
                v.class = Class::ReadMostly;
            }
            v
        })
        .collect();
    (out, flipped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::classify::{Confidence, Counts};
    use crate::infer::sites::{Kind, Site};

    fn site(kind: Kind, branches: u32, heat: Heat) -> Site {
        Site {
            branches: (heat == Heat::Hot).then_some(branches),
            ..Site::for_test(kind, heat)
        }
    }

    fn verdict(sites: Vec<Site>) -> Verdict {
        Verdict {
            field: 0,
            name: "m".into(),
            class: Class::LockedWrite("lock".into()),
            confidence: Confidence::Low,
            ambiguous: Some("only the write frequency tells".into()),
            reason: String::new(),
            counts: Counts::default(),
            profile: Vec::new(),
            sites,
            victim_of: Vec::new(),
            line: 0,
            group: None,
            offset: 0,
            size: 8,
        }
    }

    #[test]
    fn the_static_estimate_decides_the_reading() {
        // Read under no branch on four paths, written two branches deep:
        // 64 of 1088 by weight, under a fifth: read-mostly.
        let mut s = vec![site(Kind::Read, 0, Heat::Hot); 4];
        s.push(site(Kind::Write, 2, Heat::Hot));
        assert!(favours_read_mostly(&verdict(s.clone())));
        // Written as often as read: the safe side (written) stays.
        s.push(site(Kind::Write, 0, Heat::Hot));
        s.push(site(Kind::Write, 0, Heat::Hot));
        assert!(!favours_read_mostly(&verdict(s)));
        // Sites off the hot paths weigh nothing: no evidence either way.
        let warm = vec![site(Kind::Read, 0, Heat::Warm)];
        assert_eq!(hot_weights(&verdict(warm.clone())), (0, 0));
        assert!(!favours_read_mostly(&verdict(warm)));
        // The favoured verdicts are decided; the flipped are named.
        let mut reads = vec![site(Kind::Read, 0, Heat::Hot); 5];
        reads.push(site(Kind::Write, 3, Heat::Hot));
        let (v, flipped) = favoured(&[verdict(reads)]);
        assert_eq!(flipped, ["m"]);
        assert_eq!(v[0].class, Class::ReadMostly);
        assert!(v[0].ambiguous.is_none());
        let (v, flipped) = all_read_mostly(&[verdict(vec![site(Kind::Write, 0, Heat::Hot)])]);
        assert_eq!((flipped.len(), &v[0].class), (1, &Class::ReadMostly));
    }
}
