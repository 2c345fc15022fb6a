//! What a fast path reaches through a call that picks one of many
//! functions (fixtures/audit_reach/fanout.c): each target runs on a share
//! of the calls, branches by the static estimate as the audit and `infer`
//! count them, so a transmit through a table eight drivers install does
//! not put every driver's members on the root's own path.

use crate::support::*;

#[test]
fn a_call_among_many_implementations_reaches_each_on_a_share_of_its_calls() {
    let o = run_in(
        &repo().join("cli/tests/fixtures/audit_reach"),
        &[
            "infer", "fanout.h", "--struct", "fan_dev", "--source", "fanout.c", "--cc", "gcc -I.",
            "--hot", "fan_root", "--format", "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    // The single driver's counter is one branch down: on the path. Each
    // of the eight is 1/8 of the calls (3 branches) and one more inside.
    assert_eq!(
        path_members(&j, "fan_root"),
        ["ops", "one_tx", "solo"],
        "{j:#}"
    );
    let tx_a = &j["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "tx_a")
        .unwrap()["sites"][0];
    assert_eq!(tx_a["heat"], "warm", "{tx_a:#}");
    assert!(
        tx_a["cold_because"]
            .as_str()
            .unwrap()
            .contains("4 branches"),
        "{tx_a:#}"
    );
}
