//! `cachelayout infer --source` on networking structs it was not tuned on:
//! `tcp_sock`, `net_device` and `netns_ipv4` of Debian's linux-source-6.1
//! (the Kbuild flags of linux-headers-amd64), with one list of roots for
//! all three, as a networking maintainer names them (TX: tcp_sendmsg,
//! tcp_write_xmit, __dev_queue_xmit, dev_hard_start_xmit; RX: tcp_v4_rcv,
//! tcp_rcv_established, tcp_ack, __netif_receive_skb_core,
//! napi_gro_receive; a root the given sources do not define is left out
//! with a warning).
//!
//! The ground truth was written down from the 6.1 code before the rules
//! were tuned: every third member of each struct in declaration order
//! (the first, the fourth, ...), alternately in the part the rules were
//! developed on and in a held-out part whose misses were not looked at.
//! Classes: written (`locked_write.sk_lock` for tcp_sock, whose state the
//! socket lock protects; `lockless_atomic` for counters drivers bump),
//! read-mostly (read on the TX or RX fast path, written rarely), cold (not
//! on a fast path). Both parts are scored and printed per class
//! (the confusion matrix written / read-mostly / cold).
//!
//! Also here: the mm structs with one list of roots for all of them (the
//! networking roots and every mm root the guide names).

use crate::infer_sources::{classes, kernel_mm, member, score, score_structs, Truth};
use crate::infer_sources::{
    LRUVEC_TRUTH, LRU_GEN_TRUTH, PAGE_COUNTER_TRUTH, PCP_TRUTH, ZONE_TRUTH,
};
use crate::support::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

/// TCP: the protocol (tcp.c: sendmsg and the socket calls; tcp_input.c,
/// tcp_output.c, tcp_ipv4.c: the segment paths; tcp_timer.c), the
/// congestion control it calls per ACK (tcp_cong.c, the default
/// tcp_cubic.c, tcp_rate.c, tcp_recovery.c) and request/child sockets
/// (tcp_minisocks.c).
const TCP_SOURCES: &[&str] = &[
    "net/ipv4/tcp.c",
    "net/ipv4/tcp_input.c",
    "net/ipv4/tcp_output.c",
    "net/ipv4/tcp_ipv4.c",
    "net/ipv4/tcp_timer.c",
    "net/ipv4/tcp_cong.c",
    "net/ipv4/tcp_rate.c",
    "net/ipv4/tcp_recovery.c",
    "net/ipv4/tcp_cubic.c",
    "net/ipv4/tcp_minisocks.c",
];

/// net_device: the core (dev.c: xmit and receive; gro.c: GRO), the qdisc
/// layer's generic part (sch_generic.c: dev_watchdog, carrier, qdisc
/// setup) and sysfs (net-sysfs.c: what configuration reads and writes).
const NET_DEVICE_SOURCES: &[&str] = &[
    "net/core/dev.c",
    "net/core/gro.c",
    "net/sched/sch_generic.c",
    "net/core/net-sysfs.c",
];

/// netns_ipv4: the sysctls' readers (TCP, IP input and output, UDP, ICMP),
/// the sysctl table (sysctl_net_ipv4.c), and the way a received packet
/// comes to IP: `__netif_receive_skb_core` (net/core/dev.c, a root of the
/// list) calls the packet type's `.func`, which af_inet.c installs
/// (`.func = ip_rcv` in a `struct packet_type`).
const NETNS_IPV4_EXTRA: &[&str] = &[
    "net/core/dev.c",
    "net/ipv4/af_inet.c",
    "net/ipv4/ip_input.c",
    "net/ipv4/ip_output.c",
    "net/ipv4/udp.c",
    "net/ipv4/icmp.c",
    "net/ipv4/sysctl_net_ipv4.c",
];

/// The fast-path roots, one list for the three structs.
const NET_ROOTS: &[&str] = &[
    "tcp_sendmsg",
    "tcp_write_xmit",
    "__dev_queue_xmit",
    "dev_hard_start_xmit",
    "tcp_v4_rcv",
    "tcp_rcv_established",
    "tcp_ack",
    "__netif_receive_skb_core",
    "napi_gro_receive",
];

/// Debian's 6.1 sources (net/ among them), extracted once for every test
/// of the binary: `support::kernel_source`.
fn kernel_net() -> Option<&'static Path> {
    crate::support::kernel_source()
}

fn hot(roots: &[&'static str]) -> Vec<&'static str> {
    roots.iter().flat_map(|r| ["--hot", *r]).collect()
}

/// Runs infer on a struct of the kernel (JSON) under `src`: its verdicts,
/// stderr and the seconds it took.
fn infer_kernel(
    src: &Path,
    header: &str,
    name: &str,
    sources: &[&str],
    extra: &[&str],
) -> (serde_json::Value, String, f64) {
    let tree = kbuild_tree().unwrap();
    let header = srctree(&tree).join("include").join(header);
    let t = tree.to_str().unwrap().to_string();
    let mut args: Vec<&str> = vec![
        "infer",
        header.to_str().unwrap(),
        "--struct",
        name,
        "--kbuild",
        &t,
        "--format",
        "json",
    ];
    for s in sources {
        args.extend(["--source", s]);
    }
    args.extend(extra);
    let t0 = Instant::now();
    let o = run_in(src, &args);
    let secs = t0.elapsed().as_secs_f64();
    assert!(o.status.success(), "{name}: {}", stderr(&o));
    (json(&o), stderr(&o), secs)
}

/// The class a member's key names: written, read_mostly or cold.
fn kind(class: &str) -> &'static str {
    if class.starts_with("locked_write") || class.starts_with("lockless") {
        "written"
    } else if class == "read_mostly" {
        "read_mostly"
    } else {
        "cold"
    }
}

const KINDS: [&str; 3] = ["written", "read_mostly", "cold"];

/// Members right by kind (written / read-mostly / cold) and the confusion
/// matrix (truth by row), printed.
/// Right and scored rows of `truth` (a row whose member the installed
/// point release of 6.1 does not have is left out, with a note).
fn confusion(what: &str, truth: &Truth, j: &serde_json::Value) -> (u32, u32) {
    let mut m: BTreeMap<(&str, &str), u32> = BTreeMap::new();
    let mut right = 0;
    let mut scored = 0;
    let members = j["members"].as_array().unwrap();
    for (name, class, _) in truth {
        if !members.iter().any(|m| m["name"] == *name) {
            eprintln!("{what}: {name} is not a member in the installed sources: not scored");
            continue;
        }
        scored += 1;
        let got = member(j, name)["class"].as_str().unwrap().to_string();
        *m.entry((kind(class), kind(&got))).or_default() += 1;
        right += u32::from(kind(class) == kind(&got));
    }
    eprintln!(
        "{what}: {right} of {scored} right by kind ({:.0}%); truth by row, verdict by column (written, read_mostly, cold):",
        100.0 * right as f64 / scored.max(1) as f64
    );
    for t in KINDS {
        let row: Vec<u32> = KINDS
            .iter()
            .map(|g| m.get(&(t, *g)).copied().unwrap_or(0))
            .collect();
        eprintln!("  {t:<12} {row:?}");
    }
    (right, scored)
}

/// tcp_sock, the part the rules were developed on (see the module's rustdoc for the sample).
const TCP_SOCK_DEV: &Truth = &[
    ("inet_conn", "locked_write.sk_lock", "the struct sock and inet/icsk state inside: written on every segment under the socket lock (sk_rx_dst, icsk_ack in tcp_rcv_established, net/ipv4/tcp_input.c)"),
    ("data_segs_in", "locked_write.sk_lock", "include/net/tcp.h:2303 tcp_segs_in WRITE_ONCE, from tcp_v4_rcv after bh_lock_sock_nested (net/ipv4/tcp_ipv4.c), every segment"),
    ("data_segs_out", "locked_write.sk_lock", "net/ipv4/tcp_output.c:1383 __tcp_transmit_skb WRITE_ONCE, every data segment sent"),
    ("rcv_tstamp", "locked_write.sk_lock", "net/ipv4/tcp_input.c:3996 tcp_ack, every ACK"),
    ("tsorted_sent_queue", "locked_write.sk_lock", "net/ipv4/tcp_output.c:1222 tcp_update_skb_after_send list_move_tail, every segment sent"),
    ("rcv_ssthresh", "read_mostly", "net/ipv4/tcp_input.c:547 tcp_grow_window only while the window grows (room > 0), 616 tcp_clamp_window under memory pressure; read by __tcp_select_window on every ACK sent"),
    ("chrono_stat", "cold", "net/ipv4/tcp_output.c:2580 tcp_chrono_set on a chrono type change only; read by tcp_get_info_chrono_stats (net/ipv4/tcp.c:3889)"),
    ("tcp_tx_delay", "read_mostly", "net/ipv4/tcp.c:3858 do_tcp_setsockopt; read by tcp_small_queue_check (net/ipv4/tcp_output.c:2542) per segment in tcp_write_xmit"),
    ("mdev_max_us", "locked_write.sk_lock", "net/ipv4/tcp_input.c:891 tcp_rtt_estimator per RTT sample (tcp_ack > tcp_clean_rtx_queue > tcp_ack_update_rtt)"),
    ("max_packets_out", "locked_write.sk_lock", "net/ipv4/tcp_output.c:1895 tcp_cwnd_validate after each tcp_write_xmit burst"),
    ("reord_seen", "cold", "net/ipv4/tcp_input.c:1078 tcp_check_sack_reordering on reordering; read by tcp_rack_reo_wnd in loss detection only"),
    ("snd_cwnd_clamp", "read_mostly", "net/ipv4/tcp.c:445 tcp_init_sock, tcp_metrics.c:488; read by tcp_slow_start / tcp_cong_avoid_ai (net/ipv4/tcp_cong.c:411) per ACK"),
    ("delivered", "locked_write.sk_lock", "net/ipv4/tcp_input.c tcp_newly_delivered / tcp_clean_rtx_queue per ACK"),
    ("rate_delivered", "locked_write.sk_lock", "net/ipv4/tcp_rate.c:187 tcp_rate_gen per ACK"),
    ("lost_out", "read_mostly", "net/ipv4/tcp_input.c:1124 tcp_mark_skb_lost, 3381 only for lost skbs: written in loss recovery; read by tcp_packets_in_flight (include/net/tcp.h) on every ACK and send"),
    ("out_of_order_queue", "read_mostly", "rb root changed only when out-of-order segments arrive (tcp_data_queue_ofo); RB_EMPTY_ROOT tested by tcp_data_queue / tcp_ack_snd_check per segment"),
    ("lost_cnt_hint", "cold", "net/ipv4/tcp_input.c:1423 tcp_sacktag_one, 2386 tcp_mark_head_lost: SACK and loss processing only"),
    ("bytes_retrans", "cold", "net/ipv4/tcp_output.c:3292 __tcp_retransmit_skb; read by tcp_get_info"),
    ("bpf_sock_ops_cb_flags", "read_mostly", "set by BPF sock_ops; BPF_SOCK_OPS_TEST_FLAG in tcp_established_options / tcp_ack on every segment (include/linux/tcp.h:397)"),
    ("rcvq_space", "cold", "tcp_rcv_space_adjust from tcp_recvmsg (not a root here) and tcp_init_buffer_space at setup (net/ipv4/tcp_input.c:571)"),
    ("af_specific", "cold", "net/ipv4/tcp_ipv4.c:2261 tcp_v4_init_sock; read only for MD5 (static_branch_unlikely(&tcp_md5_needed)) and setsockopt"),
];

/// tcp_sock, held out: its misses were not looked at while the rules were developed.
const TCP_SOCK_HELD: &Truth = &[
    ("pred_flags", "read_mostly", "net/ipv4/tcp_input.c:6019 tcp_rcv_established reads it per segment; cleared on window changes, ofo, urgent data (3650, 4943, 5785)"),
    ("rcv_wup", "locked_write.sk_lock", "net/ipv4/tcp_output.c tcp_select_window sets rcv_wup = rcv_nxt on every segment sent"),
    ("dsack_dups", "cold", "net/ipv4/tcp_input.c:1026 tcp_dsack_seen on D-SACK only; stats"),
    ("compressed_ack_rcv_nxt", "cold", "net/ipv4/tcp_input.c:5678 __tcp_ack_snd_check only with an out-of-order queue"),
    ("max_window", "read_mostly", "net/ipv4/tcp_input.c:3657 tcp_ack_update_window only when the peer's window exceeds the max; read by forced_push (net/ipv4/tcp.c:660) per sendmsg"),
    ("compressed_ack", "read_mostly", "net/ipv4/tcp_output.c:187 tcp_event_ack_sent clears it only if set (unlikely); read there on every ACK sent"),
    ("repair_queue", "cold", "net/ipv4/tcp.c:1282 read in tcp_sendmsg_locked only under unlikely(tp->repair)"),
    ("tcp_mstamp", "locked_write.sk_lock", "net/ipv4/tcp_output.c:58 tcp_mstamp_refresh, every send and receive"),
    ("rtt_min", "locked_write.sk_lock", "net/ipv4/tcp_input.c:3161 tcp_update_rtt_min per RTT sample"),
    ("ecn_flags", "read_mostly", "tested on every send (tcp_ecn_send) and receive; changed on ECN events only (net/ipv4/tcp_input.c:328-377)"),
    ("snd_ssthresh", "read_mostly", "written on loss / leaving slow start (tcp_enter_loss, tcp_init_cwnd_reduction); read by tcp_slow_start per ACK (net/ipv4/tcp_cong.c:408)"),
    ("prior_cwnd", "cold", "net/ipv4/tcp_input.c:2171, 2676: set on loss, read on undo"),
    ("app_limited", "locked_write.sk_lock", "net/ipv4/tcp_rate.c:125 tcp_rate_gen per ACK, 206 tcp_rate_check_app_limited per sendmsg"),
    ("write_seq", "locked_write.sk_lock", "net/ipv4/tcp.c:1429 tcp_sendmsg_locked WRITE_ONCE, every sendmsg"),
    ("compressed_ack_timer", "cold", "hrtimer touched only with an out-of-order queue or a pending compressed ACK (net/ipv4/tcp_input.c:5686, tcp_output.c:188 under unlikely)"),
    ("selective_acks", "cold", "net/ipv4/tcp_input.c:4956 tcp_data_queue_ofo, 4767 tcp_sack_remove: out-of-order data only"),
    ("retrans_stamp", "cold", "set on retransmission, cleared in recovery (net/ipv4/tcp_input.c:2511, 2760); read by tcp_packet_delayed"),
    ("keepalive_time", "cold", "net/ipv4/tcp.c:3479 setsockopt; read by keepalive_time_when in the keepalive timer"),
    ("rcv_ooopack", "cold", "net/ipv4/tcp_input.c:4946 tcp_data_queue_ofo; read by tcp_get_info"),
    ("is_mptcp", "read_mostly", "set at socket creation; sk_is_mptcp() tested on every segment (tcp_established_options, tcp_data_queue)"),
    ("fastopen_rsk", "cold", "fast open only: tcp_rcv_state_process, tcp_check_req, tcp_done"),
];

/// net_device, the part the rules were developed on (see the module's rustdoc for the sample).
const NET_DEVICE_DEV: &Truth = &[
    ("name", "cold", "printed in errors (net/core/dev.c __dev_queue_xmit net_crit_ratelimited) and looked up by name in control paths (dev_get_by_name, netdev_name_node_alloc)"),
    ("state", "read_mostly", "test_bit(__LINK_STATE_START/XOFF) on the xmit and receive paths (netif_running, netif_xmit_stopped); set_bit on open, close and carrier changes (net/core/dev.c:1495)"),
    ("ptype_specific", "read_mostly", "net/core/dev.c:5595 __netif_receive_skb_core walks it per packet; changed by dev_add_pack only"),
    ("gflags", "cold", "net/core/dev.c:8698 __dev_change_flags, 8537 __dev_set_allmulti: configuration only"),
    ("hw_features", "cold", "net/core/dev.c:10222 register_netdevice, netdev_get_wanted_features: configuration only"),
    ("min_mtu", "cold", "net/core/dev.c:8794 dev_validate_mtu: MTU changes only"),
    ("stats", "lockless_atomic", "legacy counters drivers increment on their xmit/receive paths (dev->stats.tx_packets++); in the given sources only read by dev_get_stats (net/core/dev.c:10645)"),
    ("ethtool_ops", "cold", "net/core/dev.c:10739 netdev_set_default_ethtool_ops; read by register_netdevice and ethtool"),
    ("operstate", "cold", "include/linux/netdevice.h:4253 netif_oper_up, link watch and sysfs only"),
    ("addr_len", "cold", "net/core/dev.c:940 dev_addr_cmp, 8957 dev_set_mac_address: configuration"),
    ("padded", "cold", "set by alloc_netdev_mqs, read by netdev_freemem (net/core/dev.c:10745)"),
    ("queues_kset", "cold", "net/core/net-sysfs.c:1764 register_queue_kobjects: sysfs"),
    ("vlan_info", "cold", "no access in the given sources (net/8021q)"),
    ("mpls_ptr", "cold", "MPLS only, no access in the given sources"),
    ("gro_flush_timeout", "read_mostly", "net/core/dev.c:6196 napi_complete_done READ_ONCE at the end of each NAPI poll; written by sysfs (net-sysfs.c:391)"),
    ("ingress_queue", "cold", "tc ingress setup (dev_ingress_queue_create), freed in free_netdev"),
    ("num_tx_queues", "cold", "set by alloc_netdev_mqs; read by queue configuration (netif_set_real_num_tx_queues, XPS setup)"),
    ("xps_maps", "read_mostly", "get_xps_queue (netdev_pick_tx) rcu_dereference per packet when XPS is set; written by __netif_set_xps_queue (net/core/dev.c:2733)"),
    ("watchdog_lock", "cold", "net/sched/sch_generic.c:544 dev_watchdog, a timer"),
    ("reg_state", "cold", "register/unregister (net/core/dev.c:10268, 11027) and todo processing"),
    ("nd_net", "read_mostly", "dev_net() on every packet (read_pnet, include/linux/netdevice.h:2547); set by dev_net_set at allocation and namespace moves"),
    ("mrp_port", "cold", "MRP only, no access in the given sources"),
    ("gso_max_size", "read_mostly", "net/core/dev.c:3620 gso_features_check per GSO packet; set at allocation and by netif_set_gso_max_size"),
    ("tc_to_txq", "cold", "netif_setup_tc / netdev_reset_tc (net/core/dev.c:2395); read by skb_tx_hash only with traffic classes"),
    ("qdisc_tx_busylock", "cold", "lockdep class set at setup (netdev_for_each_tx_queue users), read by qdisc setup"),
    ("udp_tunnel_nic", "cold", "no access in the given sources"),
];

/// net_device, held out: its misses were not looked at while the rules were developed.
const NET_DEVICE_HELD: &Truth = &[
    ("mem_end", "cold", "no access in the given sources"),
    ("unreg_list", "cold", "net/core/dev.c:10979 unregister_netdevice_queue, 11011: unregistration"),
    ("priv_flags", "read_mostly", "net/core/dev.c:4343 __dev_queue_xmit tests IFF_XMIT_DST_RELEASE per packet; set at setup (attach_default_qdiscs, netif_keep_dst)"),
    ("needed_headroom", "read_mostly", "LL_RESERVED_SPACE on every output packet (ip_finish_output2, not in the sources); set by drivers at setup"),
    ("hw_enc_features", "read_mostly", "net/core/dev.c:3677 netif_skb_features per encapsulated TX packet; set in register_netdevice"),
    ("min_header_len", "cold", "include/linux/netdevice.h:3140 dev_validate_header, packet sockets"),
    ("carrier_down_count", "cold", "net/sched/sch_generic.c:631 netif_carrier_off atomic_inc, link events"),
    ("xfrmdev_ops", "cold", "IPsec offload setup only"),
    ("dma", "cold", "no access"),
    ("neigh_priv_len", "cold", "no access in the given sources"),
    ("uc", "cold", "unicast address lists: __dev_set_rx_mode, configuration"),
    ("uc_promisc", "cold", "net/core/dev.c:8608 __dev_set_rx_mode"),
    ("ax25_ptr", "cold", "no access"),
    ("num_rx_queues", "cold", "set by alloc_netdev_mqs; read by queue configuration"),
    ("rx_handler", "read_mostly", "net/core/dev.c:5526 __netif_receive_skb_core rcu_dereference per packet; set by netdev_rx_handler_register"),
    ("rx_cpu_rmap", "cold", "accelerated RFS steering (set_rps_cpu) only"),
    ("tx_queue_len", "cold", "net/core/dev.c:8880 dev_change_tx_queue_len, qdisc init"),
    ("qdisc_hash", "cold", "hash_init at allocation; qdisc lookups in control paths"),
    ("todo_list", "cold", "net/core/dev.c:9699 net_set_todo, 10552 netdev_run_todo"),
    ("needs_free_netdev", "cold", "net/core/dev.c:10576 netdev_run_todo"),
    ("pcpu_stat_type", "cold", "net/core/dev.c:10113 netdev_do_alloc_pcpu_stats, registration"),
    ("sysfs_groups", "cold", "sysfs registration"),
    ("tso_max_segs", "cold", "net/core/dev.c:3101 netif_set_tso_max_segs, configuration"),
    ("priomap", "read_mostly", "net/core/dev.c:4033 skb_update_prio from __dev_queue_xmit per packet (cgroup netprio); written by netprio configuration"),
    ("net_notifier_list", "cold", "net/core/dev.c:1958 register_netdevice_notifier_dev_net"),
    ("offload_xstats_l3", "cold", "net/core/dev.c:8061 netdev_offload_xstats_enable_l3, configuration"),
];

/// netns_ipv4, the part the rules were developed on (see the module's rustdoc for the sample).
const NETNS_IPV4_DEV: &Truth = &[
    ("tcp_death_row", "read_mostly", "net/ipv4/tcp_ipv4.c tcp_v4_rcv looks the socket up in net->ipv4.tcp_death_row.hashinfo per packet; tw_refcount changes on close only"),
    ("devconf_all", "read_mostly", "IPV4_DEVCONF_ALL() on route input per packet; set by devinet_init_net (net/ipv4/devinet.c:2751)"),
    ("fib_default", "cold", "net/ipv4/fib_frontend.c:99 fib4_rules_init, 141 fib_replace_table: setup"),
    ("fib_num_tclassid_users", "cold", "net/ipv4/fib_frontend.c:1619 fib_net_init; route classid users only"),
    ("sysctl_icmp_echo_ignore_all", "cold", "net/ipv4/icmp.c:1064 icmp_echo"),
    ("sysctl_icmp_ratemask", "cold", "net/ipv4/icmp.c:286 icmpv4_mask_allow, sending ICMP errors"),
    ("ip_rt_mtu_expires", "cold", "net/ipv4/route.c:1079 __ip_rt_update_pmtu, PMTU updates"),
    ("sysctl_ip_no_pmtu_disc", "cold", "net/ipv4/af_inet.c:341 inet_create, icmp.c:951 icmp_unreach"),
    ("sysctl_ip_early_demux", "read_mostly", "net/ipv4/ip_input.c:334 ip_rcv_finish_core per received packet"),
    ("sysctl_tcp_fwmark_accept", "cold", "inet_request_mark (include/net/inet_sock.h) on connection requests"),
    ("sysctl_tcp_probe_threshold", "cold", "net/ipv4/tcp_output.c:2386 tcp_mtu_probe, only while MTU probing"),
    ("sysctl_tcp_synack_retries", "cold", "net/ipv4/tcp_timer.c:417 tcp_fastopen_synack_timer, reqsk timer"),
    ("sysctl_tcp_retries2", "cold", "net/ipv4/tcp_timer.c:249 tcp_write_timeout, tcp_output.c:4183 tcp_send_probe0: timers"),
    ("sysctl_tcp_window_scaling", "cold", "net/ipv4/tcp_input.c:4206 tcp_parse_options only when !estab (SYN), tcp_output.c:798 tcp_syn_options"),
    ("sysctl_tcp_retrans_collapse", "cold", "net/ipv4/tcp_output.c:3177 tcp_retrans_try_collapse, retransmission"),
    ("sysctl_tcp_adv_win_scale", "read_mostly", "include/net/tcp.h:1466 tcp_win_from_space, from tcp_space / __tcp_select_window on every ACK sent"),
    ("sysctl_tcp_moderate_rcvbuf", "cold", "net/ipv4/tcp_input.c:748 tcp_rcv_space_adjust, from recvmsg (not a root here)"),
    ("sysctl_tcp_min_tso_segs", "read_mostly", "net/ipv4/tcp_output.c:2005 tcp_tso_segs from tcp_write_xmit"),
    ("sysctl_tcp_pacing_ca_ratio", "read_mostly", "net/ipv4/tcp_input.c:935 tcp_update_pacing_rate from tcp_ack per ACK"),
    ("sysctl_max_syn_backlog", "cold", "net/ipv4/tcp_input.c:7131 tcp_conn_request"),
    ("tfo_active_disable_stamp", "cold", "net/ipv4/tcp_fastopen.c:503, 540: fast open"),
    ("sysctl_udp_l3mdev_accept", "cold", "UDP lookups with l3mdev, not on the TCP paths"),
    ("dev_addr_genid", "cold", "net/ipv4/fib_frontend.c:1458 fib_inetaddr_event atomic_inc, address changes"),
    ("sysctl_fib_multipath_use_neigh", "cold", "multipath route selection only, no access in the given sources"),
    ("rt_genid", "read_mostly", "net/ipv4/route.c:403 rt_is_expired from ipv4_dst_check per transmitted packet (__sk_dst_check); bumped atomically on route flushes"),
];

/// netns_ipv4, held out: its misses were not looked at while the rules were developed.
const NETNS_IPV4_HELD: &Truth = &[
    ("ipv4_hdr", "cold", "sysctl table header, registration only"),
    ("ra_mutex", "cold", "router alert sockets, configuration"),
    ("fib_has_custom_local_routes", "cold", "net/ipv4/fib_frontend.c:436 fib_validate_source on slow route input; set by inet_rtm_newroute"),
    ("mc_autojoin_sk", "cold", "net/ipv4/devinet.c:637 ip_mc_autojoin_config, igmp_net_init"),
    ("sysctl_icmp_ignore_bogus_error_responses", "cold", "net/ipv4/icmp.c:1004 icmp_unreach"),
    ("icmp_global_credit", "cold", "net/ipv4/icmp.c:242 icmp_global_allow, ICMP rate limiting"),
    ("sysctl_tcp_ecn", "cold", "net/ipv4/tcp_output.c:325 tcp_ecn_send_syn, tcp_input.c:6904 tcp_ecn_create_request: SYN only"),
    ("sysctl_ip_nonlocal_bind", "cold", "include/net/inet_sock.h:389 inet_can_nonlocal_bind, bind()"),
    ("sysctl_udp_early_demux", "read_mostly", "net/ipv4/ip_input.c:348 ip_rcv_finish_core per received packet"),
    ("sysctl_tcp_mtu_probe_floor", "cold", "net/ipv4/tcp_timer.c:171 tcp_mtu_probing, a timer"),
    ("sysctl_tcp_keepalive_intvl", "cold", "include/net/tcp.h:1558 keepalive_intvl_when, keepalive timer"),
    ("sysctl_tcp_comp_sack_nr", "cold", "net/ipv4/tcp_input.c:5674 __tcp_ack_snd_check only with an out-of-order queue"),
    ("sysctl_tcp_fin_timeout", "cold", "include/net/tcp.h:1596 tcp_fin_time, closing"),
    ("sysctl_tcp_recovery", "read_mostly", "net/ipv4/tcp_recovery.c:191 tcp_rack_update_reo_wnd from tcp_ack (tcp_input.c:4004) per ACK"),
    ("sysctl_tcp_abort_on_overflow", "cold", "net/ipv4/tcp_minisocks.c:816 tcp_check_req, accept queue overflow"),
    ("sysctl_tcp_frto", "cold", "net/ipv4/tcp_input.c:2198 tcp_enter_loss"),
    ("sysctl_tcp_limit_output_bytes", "read_mostly", "net/ipv4/tcp_output.c:2538 tcp_small_queue_check per skb in tcp_write_xmit"),
    ("sysctl_tcp_reflect_tos", "cold", "net/ipv4/tcp_ipv4.c:1035 tcp_v4_send_synack, 1556 tcp_v4_conn_request"),
    ("sysctl_tcp_child_ehash_entries", "cold", "net/ipv4/tcp_ipv4.c:3284 tcp_set_hashinfo, namespace creation"),
    ("tcp_fastopen_ctx", "cold", "net/ipv4/tcp_fastopen.c:14, 86: fast open keys"),
    ("sysctl_udp_wmem_min", "cold", "UDP memory accounting setup, not on the TCP paths"),
    ("sysctl_igmp_max_msf", "cold", "net/ipv4/igmp.c:2407 ip_mc_source, setsockopt"),
    ("mr_tables", "cold", "net/ipv4/ipmr.c multicast routing"),
    ("fib_seq", "cold", "FIB notifier sequence, no access in the given sources"),
];

#[test]
fn tcp_sock_net_device_and_netns_ipv4_with_one_list_of_roots() {
    if !crate::support::sweep::full() {
        println!("the networking structs: CACHELAYOUT_SWEEPS=full");
        return;
    }
    let Some(net) = kernel_net() else {
        return;
    };
    let src = net;
    let roots = hot(NET_ROOTS);
    let netns_sources: Vec<&str> = TCP_SOURCES
        .iter()
        .chain(NETNS_IPV4_EXTRA)
        .copied()
        .collect();
    let runs = [
        (
            "tcp_sock",
            "linux/tcp.h",
            TCP_SOURCES,
            TCP_SOCK_DEV,
            TCP_SOCK_HELD,
        ),
        (
            "net_device",
            "linux/netdevice.h",
            NET_DEVICE_SOURCES,
            NET_DEVICE_DEV,
            NET_DEVICE_HELD,
        ),
        (
            "netns_ipv4",
            "net/netns/ipv4.h",
            &netns_sources[..],
            NETNS_IPV4_DEV,
            NETNS_IPV4_HELD,
        ),
    ];
    let (mut dev_right, mut dev_all, mut held_right, mut held_all) = (0, 0, 0, 0);
    let mut outputs = Vec::new();
    for (name, header, sources, dev, held) in runs {
        let (j, err, secs) = infer_kernel(src, header, name, sources, &roots);
        eprintln!("time: {name} {secs:.1} s");
        // Each struct's sources leave some roots out, with a warning.
        assert!(err.contains("warning: --hot"), "{name}: {err}");
        let (right, scored) = confusion(&format!("{name} (developed on)"), dev, &j);
        (dev_right, dev_all) = (dev_right + right, dev_all + scored);
        let (right, scored) = confusion(&format!("{name} (held out)"), held, &j);
        (held_right, held_all) = (held_right + right, held_all + scored);
        // Every class carries its evidence: a site, or cold for none.
        for m in j["members"].as_array().unwrap() {
            let touched = !m["sites"].as_array().unwrap().is_empty();
            assert!(
                touched || m["class"] == "cold" || m["ambiguous"].is_string(),
                "{name}.{}: a class without evidence",
                m["name"]
            );
        }
        outputs.push((name, j));
    }
    eprintln!(
        "all three: developed on {dev_right} of {dev_all}, held out {held_right} of {held_all}"
    );
    // The exact classes (per lock) and the misses of the part developed on.
    for (name, truth, j) in [
        ("tcp_sock", TCP_SOCK_DEV, &outputs[0].1),
        ("net_device", NET_DEVICE_DEV, &outputs[1].1),
        ("netns_ipv4", NETNS_IPV4_DEV, &outputs[2].1),
    ] {
        let got = classes(j);
        let present: Vec<_> = truth
            .iter()
            .filter(|(m, _, _)| got.contains_key(*m))
            .copied()
            .collect();
        let _ = score(name, &present, &got);
    }
    // Measured (see GUIDE.md): one more miss in either part fails.
    assert!(
        dev_all - dev_right <= DEV_MISSES,
        "{dev_right} of {dev_all}"
    );
    assert!(
        held_all - held_right <= HELD_MISSES,
        "{held_right} of {held_all}"
    );
    // Each root's path is what its own code reads: the device queueing
    // root reads no TCP sysctl of the namespace, whatever the TCP roots
    // beside it read.
    let netns = &outputs[2].1;
    let tcp_sysctls: Vec<&str> = path_members(netns, "__dev_queue_xmit")
        .into_iter()
        .filter(|m| m.starts_with("sysctl_tcp_"))
        .collect();
    assert!(
        tcp_sysctls.is_empty(),
        "__dev_queue_xmit reads TCP sysctls: {tcp_sysctls:?}"
    );
    // Every written tcp_sock member the socket lock protects: under it.
    let tcp = &outputs[0].1;
    for (m, class, why) in TCP_SOCK_DEV.iter().chain(TCP_SOCK_HELD) {
        let got = member(tcp, m)["class"].as_str().unwrap();
        if *class == "locked_write.sk_lock" && kind(got) == "written" {
            assert_eq!(got, *class, "tcp_sock.{m}: {why}");
        }
    }
}

/// Measured right on the mm structs with one list of roots.
const MM_ONE_LIST_RIGHT: u32 = 70;

/// Measured misses by kind, both parts together: developed on (65 of 72
/// right with linux-headers-6.1.0-57; a point release without
/// `net_device.watchdog_lock`, cold and right, scores one fewer of 71),
/// held out (63 of 71 right).
const DEV_MISSES: u32 = 7;
const HELD_MISSES: u32 = 8;

#[test]
fn tcp_sock_writes_are_under_the_socket_lock() {
    // The socket lock in its forms: lock_sock() in tcp_sendmsg,
    // bh_lock_sock_nested() (spin_lock of sk->sk_lock.slock) in
    // tcp_v4_rcv, lifted through every caller (tcp_rcv_established from
    // tcp_v4_do_rcv); tcp_release_cb under release_sock(); callers of
    // unknown context (no caller in the sources) do not veto it.
    // tcp_sock from ten TCP sources: CACHELAYOUT_SWEEPS=full only.
    if !crate::support::sweep::full() {
        println!("CACHELAYOUT_SWEEPS=full runs tcp_sock under the socket lock");
        return;
    }
    let Some(net) = kernel_net() else {
        return;
    };
    let src = net;
    let (j, err, secs) = infer_kernel(src, "linux/tcp.h", "tcp_sock", TCP_SOURCES, &hot(NET_ROOTS));
    eprintln!("time: tcp_sock {secs:.1} s");
    assert!(
        err.contains("warning: --hot __dev_queue_xmit: not defined in the given sources"),
        "{err}"
    );
    let mut table = Vec::new();
    for m in j["members"].as_array().unwrap() {
        let class = m["class"].as_str().unwrap();
        if kind(class) != "written" {
            continue;
        }
        let sites = m["sites"].as_array().unwrap();
        let first = sites
            .iter()
            .find(|s| s["kind"] != "read")
            .unwrap_or(&sites[0]);
        table.push(format!(
            "  {:<24} {:<22} {}:{} {}",
            m["name"].as_str().unwrap(),
            class,
            first["file"].as_str().unwrap().rsplit('/').next().unwrap(),
            first["line"],
            first["function"].as_str().unwrap()
        ));
        // Written on a hot path: under the socket lock, never lockless.
        assert_eq!(class, "locked_write.sk_lock", "{m:#}");
    }
    eprintln!(
        "tcp_sock, written members and the lock found:\n{}",
        table.join("\n")
    );
    assert!(table.len() >= 30, "{}", table.len());
    // The lock where it is taken: bh_lock_sock_nested in tcp_v4_rcv.
    let segs = member(&j, "data_segs_in");
    assert!(
        segs["sites"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["function"] == "tcp_segs_in" && s["locks"][0] == "sk_lock"),
        "{segs:#}"
    );
    // An address given to a function's const pointer parameter is read.
    let (dev, _, _) = infer_kernel(
        src,
        "linux/netdevice.h",
        "net_device",
        &["net/core/dev.c"],
        &hot(NET_ROOTS),
    );
    let nd = member(&dev, "nd_net");
    assert!(
        nd["sites"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["how"] == "read_pnet" && s["kind"] == "read"),
        "{nd:#}"
    );
}

#[test]
fn the_mm_structs_with_one_list_of_roots() {
    if !crate::support::sweep::full() {
        println!("the mm structs with one list of roots: CACHELAYOUT_SWEEPS=full");
        return;
    }
    let Some(mm) = kernel_mm() else {
        return;
    };
    let src = mm;
    // Every root the guide names for mm, and the networking ones.
    let mut roots: Vec<&'static str> = NET_ROOTS.to_vec();
    roots.extend([
        "page_counter_try_charge",
        "page_counter_charge",
        "page_counter_uncharge",
        "try_charge_memcg",
        "mem_cgroup_uncharge_list",
        "mem_cgroup_calculate_protection",
        "evict_folios",
        "lru_gen_refault",
        "lru_gen_eviction",
        "lru_gen_look_around",
        "get_page_from_freelist",
        "free_unref_page",
        "free_unref_page_list",
        "__free_pages_ok",
        "compact_zone",
        "try_to_compact_pages",
        "refresh_cpu_vm_stats",
        "shrink_node",
        "folio_add_lru",
        "workingset_eviction",
        "workingset_refault",
    ]);
    // No --lock-wrapper: the lock wrappers are read from their bodies.
    let extra = hot(&roots);
    let mm_sources =
        |files: &[&str]| -> Vec<String> { files.iter().map(|f| format!("mm/{f}")).collect() };
    let runs: [(&str, &str, Vec<String>, &Truth); 5] = [
        (
            "page_counter",
            "linux/page_counter.h",
            mm_sources(&["page_counter.c", "memcontrol.c"]),
            PAGE_COUNTER_TRUTH,
        ),
        (
            "lru_gen_struct",
            "linux/mmzone.h",
            mm_sources(&["vmscan.c", "workingset.c"]),
            LRU_GEN_TRUTH,
        ),
        (
            "zone",
            "linux/mmzone.h",
            mm_sources(&["page_alloc.c", "compaction.c", "vmstat.c", "vmscan.c"]),
            ZONE_TRUTH,
        ),
        (
            "lruvec",
            "linux/mmzone.h",
            mm_sources(&["vmscan.c", "workingset.c", "swap.c"]),
            LRUVEC_TRUTH,
        ),
        (
            "per_cpu_pages",
            "linux/mmzone.h",
            mm_sources(&["page_alloc.c", "vmstat.c"]),
            PCP_TRUTH,
        ),
    ];
    let mut outputs = Vec::new();
    for (name, header, sources, _) in &runs {
        let s: Vec<&str> = sources.iter().map(String::as_str).collect();
        let (j, _, secs) = infer_kernel(src, header, name, &s, &extra);
        eprintln!("time: {name} {secs:.1} s");
        outputs.push(j);
    }
    let structs: Vec<(&str, &Truth, &serde_json::Value)> = runs
        .iter()
        .zip(&outputs)
        .map(|((name, _, _, truth), j)| (*name, *truth, j))
        .collect();
    let (right, all, per_class) = score_structs(&structs);
    crate::infer_sources::print_classes("the mm structs, one list of roots", &per_class);
    eprintln!(
        "the mm structs, one list of roots: {right} of {all} classes right ({:.0}%)",
        100.0 * right as f64 / all as f64
    );
    // Measured: 70 of 74 (95 %; see GUIDE.md for the misses and why).
    assert!(right >= MM_ONE_LIST_RIGHT, "{right} of {all}");
}
