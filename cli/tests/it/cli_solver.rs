//! `propose`'s solver options end to end: `--time-limit` as a safety stop
//! (huge or invalid values), `--objective min-diff` on the
//! lru_gen case, and the proof line (it says
//! exactly what was proven).

use crate::support;

use support::*;

fn propose(extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "propose",
        "lru_gen.h",
        "--struct",
        "lru_gen_folio",
        "--access",
        "lru_gen.toml",
    ];
    args.extend_from_slice(extra);
    run_in(&example("kernel"), &args)
}

#[test]
fn item_8_a_huge_time_limit_is_no_limit() {
    let out = propose(&["--time-limit", "1e20", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["after"]["size"], 1360);
    assert_eq!(v["stopped_by_time"], false);
}

#[test]
fn item_8_invalid_time_limits_are_refused() {
    for bad in ["NaN", "-1", "0", "-inf"] {
        let flag = format!("--time-limit={bad}");
        let out = propose(&[&flag]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("--time-limit") && err.contains("help:") && !err.contains("panicked"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn min_diff_moves_at_most_what_the_hand_patch_moved() {
    let out = propose(&["--objective", "min-diff", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let v = json(&out);
    // The hand patch moved enabled, gen, seg and list.
    let churn = v["cost"]["churn"].as_u64().unwrap();
    assert!(churn <= 4, "{churn}");
    assert_eq!(v["churn_bound"], churn);
    assert!(v["after"]["size"].as_u64().unwrap() <= 1360);
    assert_eq!(v["optimal"], true);
    let proven: Vec<&str> = v["proven"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    assert_eq!(proven[..2], ["members moved", "size"]);
}

#[test]
fn the_proof_line_says_what_was_proven() {
    let out = propose(&["--format", "table"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("proven"))
        .expect("a proof line");
    assert!(
        line.starts_with("proven optimal: size 1360 bytes"),
        "{line}"
    );
    assert!(!line.contains("gap 0"), "{line}");
}
