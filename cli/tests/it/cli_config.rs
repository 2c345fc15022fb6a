//! `--config` reads a kernel .config for the `#ifdef CONFIG_*` blocks in
//! struct bodies; `-D` wins over it.

use crate::support;

use support::*;

const HEADER: &str = "struct stats {\n\
\tunsigned long hits;\n\
#ifdef CONFIG_STATS_EXTRA\n\
\tunsigned long extra[4];\n\
#endif\n\
#if CONFIG_NR_SLOTS > 2\n\
\tunsigned long slots[CONFIG_NR_SLOTS];\n\
#endif\n\
};\n";

fn size(dir: &std::path::Path, extra: &[&str]) -> u64 {
    let mut args = vec!["show", "s.h", "--struct", "stats", "--format", "json"];
    args.extend_from_slice(extra);
    let out = run_in(dir, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    json(&out)["size"].as_u64().unwrap()
}

#[test]
fn config_switches_blocks_and_values() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.h"), HEADER).unwrap();
    std::fs::write(
        dir.path().join(".config"),
        "# a kernel config\nCONFIG_STATS_EXTRA=y\nCONFIG_NR_SLOTS=3\n# CONFIG_OTHER is not set\n",
    )
    .unwrap();
    assert_eq!(size(dir.path(), &["-D", "CONFIG_NR_SLOTS=0"]), 8);
    assert_eq!(size(dir.path(), &["--config", ".config"]), 8 + 32 + 24);
    assert_eq!(
        size(
            dir.path(),
            &["--config", ".config", "-D", "CONFIG_NR_SLOTS=4"]
        ),
        8 + 32 + 32
    );
}

#[test]
fn a_bad_config_line_is_located() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.h"), HEADER).unwrap();
    std::fs::write(
        dir.path().join("bad.config"),
        "CONFIG_A=y\nthis is not a config line\n",
    )
    .unwrap();
    let out = run_in(
        dir.path(),
        &["show", "s.h", "--struct", "stats", "--config", "bad.config"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("bad.config:2"), "{}", stderr(&out));
}
