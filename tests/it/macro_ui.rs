//! The exact compile errors of the macros (trybuild). Regenerate the
//! `.stderr` files with `TRYBUILD=overwrite CACHELAYOUT_SWEEPS=full cargo
//! test -p cachelayout --test it macro_ui`, then read them. The fast suite
//! compiles every third case (in file-name order); `CACHELAYOUT_SWEEPS=full`
//! compiles them all.

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
    println!("ui cases: {}", crate::sweep::describe(3));
    let t = trybuild::TestCases::new();
    for case in crate::sweep::sample(cases, 3) {
        t.compile_fail(case);
    }
}
