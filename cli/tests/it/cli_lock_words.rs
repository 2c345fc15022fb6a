//! Lock words through the CLI: a kernel lock under `locked_write` next to
//! read-mostly members breaks the hard rule (every CPU taking the lock
//! writes its word), and `propose` moves it off their line, while the
//! member it guards may stay with it.

use crate::support;

use support::{json, run_in, stderr, stdout};

const CFG: &str = "\
struct cfg {
\tlong limit;
\tspinlock_t lock;
\tint count;
\tlong timeout;
};
";

const CFG_ACCESS: &str = "\
[types]
\"spinlock_t\" = { size = 4, align = 4 }
[struct.cfg]
read_mostly = [\"limit\", \"timeout\"]
locked_write.lock = [\"lock\", \"count\"]
";

#[test]
fn a_spinlock_is_kept_off_read_mostly_lines() {
    let dir =
        std::env::temp_dir().join(format!("cachelayout-cli-lock-words-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cfg.h"), CFG).unwrap();
    std::fs::write(dir.join("cfg.toml"), CFG_ACCESS).unwrap();
    let args = ["cfg.h", "--struct", "cfg", "--access", "cfg.toml"];
    let show = run_in(&dir, &[&["show"][..], &args].concat());
    assert_eq!(show.status.code(), Some(1), "{}", stderr(&show));
    let table = stdout(&show);
    assert!(table.contains("writes its lock word lock"), "{table}");
    assert!(
        table.contains("line 0: lock word lock shares with read-mostly limit, timeout"),
        "{table}"
    );
    let out = run_in(
        &dir,
        &[&["propose"][..], &args, &["--format", "json"]].concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    assert!(!v["before"]["hard_conflicts"].as_array().unwrap().is_empty());
    assert!(v["after"]["hard_conflicts"].as_array().unwrap().is_empty());
    let offset = |name: &str| {
        v["after"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap()["offset"]
            .as_u64()
            .unwrap()
    };
    assert_ne!(offset("lock") / 64, offset("limit") / 64);
    assert_ne!(offset("lock") / 64, offset("timeout") / 64);
    assert_eq!(offset("lock") / 64, offset("count") / 64);
}
