//! "Did you mean ...?": names close to a misspelt one, for the help of an
//! error. One edit distance for the whole workspace (the macros use it too).

/// The Levenshtein distance between `a` and `b`, in characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    strsim::levenshtein(a, b)
}

/// Up to three of `candidates` that look like `name` (typos, case,
/// prefixes), closest first.
pub fn close_names<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Vec<String> {
    let lower = name.to_lowercase();
    let limit = name.chars().count() / 3;
    let mut scored: Vec<(usize, String)> = candidates
        .filter(|c| *c != name)
        .filter_map(|c| {
            let cl = c.to_lowercase();
            let d = edit_distance(&lower, &cl);
            let contains =
                lower.len() >= 3 && cl.len() >= 3 && (cl.contains(&lower) || lower.contains(&cl));
            (d <= limit || contains).then(|| (d, c.to_string()))
        })
        .collect();
    scored.sort();
    scored.dedup();
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_count_single_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("page_countr", "page_counter"), 1);
        assert_eq!(edit_distance("lruvec", "lurvec"), 2);
        assert_eq!(edit_distance("é", "e"), 1);
    }
}
