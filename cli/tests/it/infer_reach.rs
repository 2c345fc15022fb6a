//! What each hot root's own fast path runs (fixtures/infer/ops_reach.c):
//! a call through an ops member reaches only the functions stored into
//! that member of that struct's tables, a function handed to a callee
//! that only stores it is not run there, and a root's path holds what it
//! reaches within its own branch budget, up to another hot root; a call
//! picked by `?:` is one branch down (fixtures/infer/choose.c), a short
//! block that hands over a drop reason is an error path (drops.c), the
//! code after an exit with a computed result is one branch down (exits.c),
//! and a test of a local a callee sets only on an unlikely branch is
//! unlikely (setrarely.c).

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

/// The sites of `infer stats.h --struct stats --source SOURCE --hot ROOT`
/// (fixtures/infer), by member: (line, heat, branches, cold_because).
/// `infer` of `struct stats` (fixtures/infer/stats.h) from `source`,
/// compiled by `cc`, with `root` hot: its JSON.
fn stats_json(source: &str, cc: &str, root: &str) -> serde_json::Value {
    let o = run_in(
        &repo().join("cli/tests/fixtures/infer"),
        &[
            "infer", "stats.h", "--struct", "stats", "--source", source, "--cc", cc, "--hot", root,
            "--format", "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    json(&o)
}

fn stats_sites(source: &str, root: &str) -> Vec<(String, u64, String, Option<u64>, String)> {
    let j = stats_json(source, "gcc -I.", root);
    let mut out = Vec::new();
    for m in j["members"].as_array().unwrap() {
        for s in m["sites"].as_array().unwrap() {
            out.push((
                m["name"].as_str().unwrap().to_string(),
                s["line"].as_u64().unwrap(),
                s["heat"].as_str().unwrap().to_string(),
                s["branches"].as_u64(),
                s["cold_because"].as_str().unwrap_or("").to_string(),
            ));
        }
    }
    out
}

fn site_of<'a>(
    sites: &'a [(String, u64, String, Option<u64>, String)],
    member: &str,
) -> &'a (String, u64, String, Option<u64>, String) {
    sites
        .iter()
        .find(|s| s.0 == member)
        .unwrap_or_else(|| panic!("no site of {member}: {sites:?}"))
}

#[test]
fn a_call_picked_by_a_conditional_expression_is_one_branch_down() {
    // fixtures/infer/choose.c: `which == 1 ? add_fast(s) : which == 2 ?
    // add_slow(s) : add_other(s)` picks one call by two tests (as
    // INDIRECT_CALL_2 does): each callee one branch down, not two for the
    // nested arm; a value `?:` picks is read at the expression's own
    // depth (three `if`s: hot), a call it picks there is four down (warm).
    let sites = stats_sites("choose.c", "stats_pick");
    for m in ["nr_items", "failcnt", "flags"] {
        let s = site_of(&sites, m);
        assert_eq!((s.2.as_str(), s.3), ("hot", Some(1)), "{m}: {s:?}");
    }
    let limit = site_of(&sites, "limit");
    assert_eq!((limit.1, limit.2.as_str(), limit.3), (33, "hot", Some(3)));
    let deep = site_of(&sites, "created");
    assert_eq!(deep.2, "warm", "{deep:?}");
    assert!(deep.4.starts_with("4 branches"), "{deep:?}");
}

#[test]
fn a_short_block_that_hands_over_a_drop_reason_is_an_error_path() {
    // fixtures/infer/drops.c: a block of at most three statements that
    // hands over (or stores) an enum constant whose name says a drop or
    // failure (`PUT_DROP_NO_HANDLER`, as `SKB_DROP_REASON_IP_NOPROTO`) is
    // an error path, its branch cold; the other arm, which hands over the
    // usual outcome (`PUT_DONE`), stays hot, as does a longer block that
    // works before it drops.
    let sites = stats_sites("drops.c", "stats_deliver");
    let hot = site_of(&sites, "nr_items");
    assert_eq!((hot.2.as_str(), hot.3), ("hot", Some(1)), "{hot:?}");
    for (m, constant) in [
        ("failcnt", "PUT_DROP_NO_HANDLER"),
        ("misc", "PUT_DROP_POLICY"),
    ] {
        let s = site_of(&sites, m);
        assert_eq!(s.2, "cold", "{m}: {s:?}");
        assert!(s.4.contains(constant), "{m}: {s:?}");
    }
    let long = site_of(&sites, "created");
    assert_eq!(long.2, "hot", "{long:?}");
}

#[test]
fn an_access_through_a_call_with_no_arguments_names_its_accessor() {
    // fixtures/infer/running.c: `running->nr_items` is
    // `get_running()->nr_items`, as the kernel's `current->flags` is
    // `get_current()->flags`: the running context's instance; an object
    // handed in as a parameter (`other->misc`) has no accessor.
    let j = stats_json("running.c", "gcc -I.", "stats_tick");
    let accessor = |name: &str| -> Vec<Option<String>> {
        j["members"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["name"] == name)
            .flat_map(|m| m["sites"].as_array().unwrap().iter())
            .map(|s| s["accessor"].as_str().map(str::to_string))
            .collect()
    };
    for m in ["nr_items", "limit", "flags"] {
        assert_eq!(accessor(m), [Some("get_running".to_string())], "{m}: {j:#}");
    }
    for m in ["misc", "failcnt"] {
        assert_eq!(accessor(m), [None], "{m}: {j:#}");
    }
}

#[test]
fn a_call_through_a_member_runs_what_the_code_stores_there() {
    // fixtures/infer/stored.c: `r->output = queue_out;` at run time (as
    // `dst->output = ip_output;`) and `WRITE_ONCE(p->ready, wake_reader)`
    // install as a global initializer does: `p->rt->output(p)` runs
    // queue_out, `p->ready(p)` runs wake_reader. The `.output` of another
    // struct (timer_out) and a function only compared with (other_out)
    // are not run.
    let o = run_in(
        &repo().join("cli/tests/fixtures/infer"),
        &[
            "infer",
            "stored.h",
            "--struct",
            "pkt",
            "--source",
            "stored.c",
            "--cc",
            "gcc -I.",
            "--hot",
            "send_root",
            "--hot",
            "recv_root",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(
        path_members(&j, "send_root"),
        ["rt", "ready", "qlen", "drops", "woken"],
        "{j:#}"
    );
    // `p->hook->func(p, 64)`: no table or store fills `hook.func`, so it
    // may run any function of its type whose address the sources take
    // (deliver, handed to register_hook), not one only ever called
    // (direct_only) nor one of another type (other_type).
    assert_eq!(
        path_members(&j, "recv_root"),
        ["hook", "delivered"],
        "{j:#}"
    );
}

#[test]
fn two_unrelated_roots_share_only_the_members_their_code_shares() {
    // fixtures/infer/unrelated.c: a packet root and a page root run their
    // own hooks (`o->nh->output`, `o->mh->output`, members of the same
    // name and type in two structs, each stored at run time), the packet
    // root a member no store fills (`o->release`, resolved by its type to
    // net_release, whose address is taken; mm_scan's is of another type);
    // both call shared_charge. Their paths share `charged` alone.
    let o = run_in(
        &repo().join("cli/tests/fixtures/infer"),
        &[
            "infer",
            "unrelated.h",
            "--struct",
            "obj",
            "--source",
            "unrelated.c",
            "--cc",
            "gcc -I.",
            "--hot",
            "net_root",
            "--hot",
            "mm_root",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let net = path_members(&j, "net_root");
    let mm = path_members(&j, "mm_root");
    assert_eq!(
        net,
        ["nh", "release", "charged", "net_bytes", "net_freed"],
        "{j:#}"
    );
    assert_eq!(mm, ["mh", "charged", "mm_pages"], "{j:#}");
    let shared: Vec<&&str> = net.iter().filter(|m| mm.contains(m)).collect();
    assert_eq!(shared, [&"charged"]);
}

#[test]
fn a_member_of_a_null_pointer_is_no_access_and_a_path_names_the_sub_member() {
    // fixtures/infer/null_base.c: container_of's type check names
    // `((struct nb_outer *)0)->inner` and a typeof names
    // `((struct nb_outer *)0)->y`: neither is read. The fast path reads x
    // and inner.tail, which its path lists by its dotted name (its own 8
    // bytes, not the embedded struct's 216), and stores the address of
    // inner, which reads none of its 216 bytes.
    let o = run_in(
        &repo().join("cli/tests/fixtures/infer"),
        &[
            "infer",
            "null_base.h",
            "--struct",
            "nb_outer",
            "--source",
            "null_base.c",
            "--cc",
            "gcc -I.",
            "--hot",
            "nb_rx",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json(&o);
    let sites = |name: &str| -> Vec<String> {
        j["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {j:#}"))["sites"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["member"].as_str().unwrap().to_string())
            .collect()
    };
    // `*last = &o->inner` takes its address: a site, no bytes of the path.
    assert_eq!(sites("inner"), ["inner", "inner.tail"], "{j:#}");
    let hows: Vec<&str> = j["members"][0]["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["how"].as_str().unwrap())
        .collect();
    assert_eq!(hows, ["address taken", "plain"], "{j:#}");
    assert_eq!(sites("x"), ["x"], "{j:#}");
    assert!(sites("y").is_empty(), "{j:#}");
    assert_eq!(path_members(&j, "nb_rx"), ["inner.tail", "x"], "{j:#}");
    // The access file infer prints loads with its dotted path name.
    let o = run_in(
        &repo().join("cli/tests/fixtures/infer"),
        &[
            "infer",
            "null_base.h",
            "--struct",
            "nb_outer",
            "--source",
            "null_base.c",
            "--cc",
            "gcc -I.",
            "--hot",
            "nb_rx",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("nb_rx = [\"inner.tail\", \"x\"]"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn code_after_a_branch_that_returns_a_computed_result_is_one_branch_down() {
    // fixtures/infer/exits.c: `if (a) return READ_ONCE(s->limit);` ends
    // one case with its result, so what follows runs in the other case
    // only (as an `else` arm would); the guards that return a constant
    // (`if (!s) return 0;`, `return -22;`) and one that hands back its
    // parameters (`return (long)a & ~1L;`) count nothing; a goto to a
    // label that returns a computed result leaves as such a return does,
    // up to its label.
    let sites = stats_sites("exits.c", "stats_exit");
    let at = |m: &str| {
        let s = site_of(&sites, m);
        (s.2.clone(), s.3)
    };
    assert_eq!(at("nr_items"), ("hot".into(), Some(0)), "{sites:?}");
    assert_eq!(at("limit"), ("hot".into(), Some(1)), "{sites:?}");
    assert_eq!(at("misc"), ("hot".into(), Some(1)), "{sites:?}");
    assert_eq!(at("flags"), ("hot".into(), Some(2)), "{sites:?}");
    // Three branches to the call, one in the callee: past the budget.
    let deep = site_of(&sites, "created");
    assert_eq!(deep.2, "warm", "{deep:?}");
    assert!(deep.4.starts_with("4 branches"), "{deep:?}");
    // Guards only: two branches, as written.
    let sites = stats_sites("exits.c", "stats_guards");
    let s = site_of(&sites, "failcnt");
    assert_eq!((s.2.as_str(), s.3), ("hot", Some(2)), "{s:?}");
    // `if (a) goto done;` where `done:` returns a computed result: the
    // code it skips is one branch down, the code at the label is not.
    let sites = stats_sites("exits.c", "stats_goto");
    let at = |m: &str| {
        let s = site_of(&sites, m);
        (s.2.clone(), s.3)
    };
    assert_eq!(at("misc"), ("hot".into(), Some(1)), "{sites:?}");
    assert_eq!(at("flags"), ("hot".into(), Some(0)), "{sites:?}");
    assert_eq!(at("limit"), ("hot".into(), Some(0)), "{sites:?}");
    let deep = site_of(&sites, "created");
    assert!(deep.4.starts_with("4 branches"), "{deep:?}");
}

#[test]
fn code_after_a_label_named_the_slow_path_is_one_branch_down() {
    // fixtures/infer/exits.c: `stats_slow_label`'s fast arm returns a
    // constant (no computed result), so without the label the code after
    // it would be as hot as the function; `slow_path:` puts it one branch
    // down, and the label after it (`step5:`) does not take that back.
    let sites = stats_sites("exits.c", "stats_slow_label");
    let at = |m: &str| {
        let s = site_of(&sites, m);
        (s.2.clone(), s.3)
    };
    assert_eq!(at("nr_items"), ("hot".into(), Some(1)), "{sites:?}");
    assert_eq!(at("misc"), ("hot".into(), Some(1)), "{sites:?}");
    assert_eq!(at("flags"), ("hot".into(), Some(1)), "{sites:?}");
    // A label of another name is no branch: stats_goto's `done:` above.
    let sites = stats_sites("exits.c", "stats_goto");
    assert_eq!(site_of(&sites, "limit").3, Some(0), "{sites:?}");
}

#[test]
fn a_test_of_a_local_a_callee_sets_only_on_an_unlikely_branch_is_unlikely() {
    // fixtures/infer/setrarely.c: `key` is handed by its address to
    // find_rare, which stores a constant into it and anything else only
    // under `unlikely()`: `if (key)` after the call is as rare as that
    // branch (its arm cold). `other`, set by find_any on a plain branch,
    // and `flag`, set to 1 (not zero) by check on a plain branch, say
    // nothing: their arms stay hot.
    let sites = stats_sites("setrarely.c", "stats_send");
    for m in ["misc", "limit"] {
        let s = site_of(&sites, m);
        assert_eq!(s.2, "cold", "{m}: {sites:?}");
        assert!(
            s.4.contains("`key` is set only on an unlikely() branch of find_rare"),
            "{s:?}"
        );
    }
    for m in ["failcnt", "created"] {
        let s = site_of(&sites, m);
        assert_eq!((s.2.as_str(), s.3), ("hot", Some(1)), "{m}: {sites:?}");
    }
}

#[test]
fn an_operand_after_an_unlikely_test_is_as_rare_as_its_branch() {
    // fixtures/infer/shortcircuit.c: `unlikely(a) && READ_ONCE(s->limit)`
    // reads the limit only when the rare test holds, `likely(a > 1) ||
    // s->created` reads it only when the likely test fails: both cold,
    // with the test that makes them so. A static key is a switch, not a
    // likelihood: `static_branch_unlikely(&key) && s->failcnt` reads it
    // on every call once the key is on (hot, one branch down, as the
    // operand after a plain test).
    let sites = stats_sites("shortcircuit.c", "stats_short");
    let limit = site_of(&sites, "limit");
    assert_eq!(limit.2, "cold", "{sites:?}");
    assert!(limit.4.contains("after unlikely() in `&&`"), "{limit:?}");
    let created = site_of(&sites, "created");
    assert_eq!(created.2, "cold", "{sites:?}");
    assert!(created.4.contains("after likely() in `||`"), "{created:?}");
    for m in ["failcnt", "nr_items"] {
        let s = site_of(&sites, m);
        assert_eq!((s.2.as_str(), s.3), ("hot", Some(1)), "{m}: {sites:?}");
    }
}

#[test]
fn a_pointer_read_on_the_way_to_a_this_cpu_operand_is_only_read() {
    // fixtures/infer/percpu_through.c: `__this_cpu_add(s->parent->misc,
    // n)` writes the running CPU's copy of the struct `parent` points to;
    // `parent` itself is read (read-mostly), and the operand (`misc`, and
    // `failcnt` in `__this_cpu_add(s->failcnt, 1)`) is written.
    let j = stats_json("percpu_through.c", "gcc -I.", "stats_account");
    let member = |name: &str| crate::infer_sources::member(&j, name);
    let parent = member("parent");
    assert_eq!(parent["class"], "read_mostly", "{parent}");
    assert_eq!(parent["sites"][0]["kind"], "read", "{parent}");
    assert_eq!(parent["sites"][0]["how"], "deref", "{parent}");
    for name in ["misc", "failcnt"] {
        let m = member(name);
        assert_eq!(m["class"], "lockless_atomic", "{m}");
        assert_eq!(m["sites"][0]["how"], "__this_cpu_add", "{m}");
    }
}

#[test]
fn a_counter_added_to_only_on_slow_paths_is_cold() {
    // fixtures/infer/rarecount.c: `hits` is written only with atomics and
    // by no hot path. Its one write is on a link event the root calls
    // under unlikely(): cold. With a caller elsewhere that the roots do
    // not name adding to it too (-DCOUNT_ELSEWHERE), it is a counter
    // others add to concurrently: lockless, citing that caller.
    let hits = |cc: &str| {
        let j = stats_json("rarecount.c", cc, "stats_rx");
        let m = j["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "hits")
            .unwrap()
            .clone();
        (
            m["class"].as_str().unwrap().to_string(),
            m["reason"].as_str().unwrap().to_string(),
        )
    };
    let (class, reason) = hits("gcc -I.");
    assert_eq!(class, "cold", "{reason}");
    assert!(reason.contains("only written, on slow paths"), "{reason}");
    let (class, reason) = hits("gcc -I. -DCOUNT_ELSEWHERE");
    assert_eq!(class, "lockless_atomic", "{reason}");
    assert!(reason.contains("stats_count_hits"), "{reason}");
}
