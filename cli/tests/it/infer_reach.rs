//! What each hot root's own fast path runs (fixtures/infer/ops_reach.c):
//! a call through an ops member reaches only the functions stored into
//! that member of that struct's tables, a function handed to a callee
//! that only stores it is not run there, and a root's path holds what it
//! reaches within its own branch budget, up to another hot root.

use crate::support::*;

#[test]
fn each_root_reaches_only_what_its_own_fast_path_runs() {
    let o = run_in(
        &repo().join("cli/tests/fixtures/infer"),
        &[
            "infer",
            "ops_reach.h",
            "--struct",
            "conn",
            "--source",
            "ops_reach.c",
            "--cc",
            "gcc -I.",
            "--hot",
            "dev_root",
            "--hot",
            "page_root",
            "--hot",
            "stack_root",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    // `c->dops->xmit(c)` runs loop_xmit (a `struct dev_ops` table's
    // `.xmit`), never proto_xmit (the `.xmit` of a `struct proto_ops`).
    assert_eq!(
        path_members(&j, "dev_root"),
        ["dops", "tx_bytes", "tx_packets", "deep"],
        "{j:#}"
    );
    // run_now calls what it is handed: count_page runs on page_root's
    // path; call_later (not in the sources) only stores free_deferred;
    // deep_helper is four branches down from page_root.
    assert_eq!(path_members(&j, "page_root"), ["pages"], "{j:#}");
    // stack_root calls dev_root, another hot root: its own path ends
    // there (dev_root's members are dev_root's path).
    assert_eq!(path_members(&j, "stack_root"), ["later"], "{j:#}");
    // The two roots share no member: their code shares none.
    let dev = path_members(&j, "dev_root");
    assert!(path_members(&j, "page_root")
        .iter()
        .all(|m| !dev.contains(m)));
}
