//! The exact compile errors of the macros (trybuild). Regenerate the
//! `.stderr` files with `TRYBUILD=overwrite CACHELAYOUT_SWEEPS=full cargo
//! test -p cachelayout --test it macro_ui`, then read them. trybuild builds
//! the crate and its dependencies once more, apart (about 40 s on two
//! cores): the cases run with `CACHELAYOUT_SWEEPS=full` (the second test
//! command, which CI runs too), not in the fast suite.

#[test]
fn ui() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui");
    let mut cases: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/ui is readable")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 20, "the UI cases are there: {}", cases.len());
    if !crate::sweep::full() {
        println!(
            "{} ui cases: run with CACHELAYOUT_SWEEPS=full (trybuild's own build is most of the fast suite's time)",
            cases.len()
        );
        return;
    }
    // Relative paths, as trybuild normalises them (an absolute one loses
    // the line numbers of its spans in the expected output).
    let t = trybuild::TestCases::new();
    for case in cases {
        let name = case.file_name().expect("a file").to_string_lossy();
        t.compile_fail(format!("tests/ui/{name}"));
    }
}
