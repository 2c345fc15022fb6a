//! The runs of members a proposal moves: the members outside the longest
//! run that keeps the declared relative order, grouped into runs of members
//! adjacent in the proposal, each with the member right before it.

use super::view::LayoutView;

/// A run of members (field indices of the proposal's struct, in its order)
/// that left the declared relative order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MovedRun {
    /// The member right before the run in the proposal (`None`: at the start).
    pub after: Option<usize>,
    pub fields: Vec<usize>,
}

/// The runs `after` moves relative to `before` (fields matched by name).
pub(crate) fn moved_runs(before: &LayoutView, after: &LayoutView) -> Vec<MovedRun> {
    let (before_s, s) = (before.strukt, after.strukt);
    let before_rank: Vec<Option<usize>> = s
        .fields
        .iter()
        .map(|f| {
            before
                .rows
                .iter()
                .position(|sl| before_s.fields[sl.field].name == f.name)
        })
        .collect();
    let order: Vec<usize> = after.order().collect();
    let ranks: Vec<usize> = order
        .iter()
        .map(|&f| before_rank[f].unwrap_or(usize::MAX))
        .collect();
    let kept = longest_increasing(&ranks);
    let mut runs: Vec<MovedRun> = Vec::new();
    for (k, &f) in order.iter().enumerate() {
        if kept[k] {
            continue;
        }
        match runs.last_mut() {
            Some(run) if k > 0 && run.fields.last() == Some(&order[k - 1]) => run.fields.push(f),
            _ => runs.push(MovedRun {
                after: (k > 0).then(|| order[k - 1]),
                fields: vec![f],
            }),
        }
    }
    runs
}

/// Marks the longest strictly increasing subsequence of `v` (the fields that
/// keep their relative order).
fn longest_increasing(v: &[usize]) -> Vec<bool> {
    let n = v.len();
    let mut len = vec![1usize; n];
    let mut prev = vec![usize::MAX; n];
    for i in 0..n {
        for j in 0..i {
            if v[j] < v[i] && len[j] + 1 > len[i] {
                len[i] = len[j] + 1;
                prev[i] = j;
            }
        }
    }
    let mut kept = vec![false; n];
    let mut at = (0..n).max_by_key(|&i| (len[i], std::cmp::Reverse(i)));
    while let Some(i) = at {
        kept[i] = true;
        at = (prev[i] != usize::MAX).then_some(prev[i]);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_increasing_keeps_the_unmoved() {
        assert_eq!(
            longest_increasing(&[0, 1, 2, 10, 11, 3, 4, 5]),
            [true, true, true, false, false, true, true, true]
        );
        assert_eq!(longest_increasing(&[]), Vec::<bool>::new());
    }
}
