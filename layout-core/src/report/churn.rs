//! Churn: how many members a layout moves relative to the declaration.
//!
//! `churn = n − (the longest subsequence of the layout's member order that
//! is in declaration order)`: the fewest members that must be cut and pasted
//! elsewhere to turn the declaration into the layout. A layout in declaration
//! order has churn 0; moving one member anywhere costs 1, however far it
//! goes. Zero-size members count like any other.

use crate::layout::{Layout, Slot};
use crate::model::Struct;

/// Members of `s` that `l` moves (see the module docs).
pub fn churn(s: &Struct, l: &Layout) -> u64 {
    of_rows(&super::ordered_slots(s, l))
}

/// The churn of a layout's rows in reading order ([`super::LayoutView::rows`]).
pub(super) fn of_rows(rows: &[Slot]) -> u64 {
    let order: Vec<usize> = rows.iter().map(|sl| sl.field).collect();
    (order.len() - longest_increasing(&order)) as u64
}

/// Length of the longest strictly increasing subsequence (patience sorting).
fn longest_increasing(seq: &[usize]) -> usize {
    let mut tails: Vec<usize> = Vec::new();
    for &x in seq {
        let k = tails.partition_point(|&t| t < x);
        if k == tails.len() {
            tails.push(x);
        } else {
            tails[k] = x;
        }
    }
    tails.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_increasing_subsequences() {
        assert_eq!(longest_increasing(&[]), 0);
        assert_eq!(longest_increasing(&[0, 1, 2, 3]), 4);
        // Moving 3 to the front moves one member.
        assert_eq!(longest_increasing(&[3, 0, 1, 2]), 3);
        assert_eq!(longest_increasing(&[3, 2, 1, 0]), 1);
        assert_eq!(longest_increasing(&[1, 0, 3, 2]), 2);
    }

    /// Against all subsequences of every permutation of 6 members.
    #[test]
    fn matches_exhaustive_search() {
        fn best(seq: &[usize]) -> usize {
            (0u32..1 << seq.len())
                .filter_map(|mask| {
                    let kept: Vec<usize> = (0..seq.len())
                        .filter(|i| mask >> i & 1 == 1)
                        .map(|i| seq[i])
                        .collect();
                    kept.windows(2).all(|w| w[0] < w[1]).then_some(kept.len())
                })
                .max()
                .unwrap_or(0)
        }
        let mut perm: Vec<usize> = (0..6).collect();
        // Heap's algorithm over all 720 permutations.
        let mut c = [0usize; 6];
        assert_eq!(longest_increasing(&perm), best(&perm));
        let mut i = 0;
        while i < 6 {
            if c[i] < i {
                let j = if i % 2 == 0 { 0 } else { c[i] };
                perm.swap(j, i);
                assert_eq!(longest_increasing(&perm), best(&perm), "{perm:?}");
                c[i] += 1;
                i = 0;
            } else {
                c[i] = 0;
                i += 1;
            }
        }
    }
}
