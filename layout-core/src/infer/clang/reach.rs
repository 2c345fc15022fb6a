//! The call graph over the given files: which functions the hot roots
//! reach, not going through the cold roots.

use std::collections::{BTreeMap, BTreeSet};

/// The functions reachable from `hot` without entering a function of `cold`.
pub fn hot_functions(
    calls: &BTreeMap<String, BTreeSet<String>>,
    hot: &[String],
    cold: &[String],
) -> BTreeSet<String> {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut todo: Vec<&str> = hot.iter().map(String::as_str).collect();
    while let Some(f) = todo.pop() {
        if cold.iter().any(|c| c == f) || !seen.insert(f.to_string()) {
            continue;
        }
        if let Some(cs) = calls.get(f) {
            todo.extend(cs.iter().map(String::as_str));
        }
    }
    seen
}

/// A help text naming defined functions close to `name`.
pub fn close_names(name: &str, calls: &BTreeMap<String, BTreeSet<String>>) -> String {
    let close = crate::suggest::close_names(name, calls.keys().map(String::as_str));
    match close.first() {
        Some(c) => {
            format!("did you mean `{c}`? give a function defined in one of the --source files")
        }
        None => "give a function defined in one of the --source files".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_roots_cut_the_graph() {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        g.entry("a".into())
            .or_default()
            .extend(["b".to_string(), "c".to_string()]);
        g.entry("c".into()).or_default().insert("d".into());
        let r = hot_functions(&g, &["a".into()], &["c".into()]);
        assert_eq!(r.into_iter().collect::<Vec<_>>(), ["a", "b"]);
    }
}
