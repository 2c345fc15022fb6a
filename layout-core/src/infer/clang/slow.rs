//! Functions whose names say they are a slow path: connection setup and
//! teardown, state changes, errors, timers, configuration and loss
//! recovery. A hot root that calls one does not make it hot: it runs once
//! per connection, per state change or per error, not per operation.
//! The words are the kernel's vocabulary for such paths, matched against
//! the whole words of a function's name (`tcp_rcv_synsent_state_process`:
//! `synsent`, `state`), never against member names.

/// The words, each with the kind of slow path it names (for the evidence).
const WORDS: &[(&str, &str)] = &[
    // Setup and teardown.
    ("init", "setup"),
    ("setup", "setup"),
    ("create", "setup"),
    ("register", "setup"),
    ("connect", "setup"),
    ("listen", "setup"),
    ("accept", "setup"),
    ("open", "setup"),
    ("destroy", "teardown"),
    ("unregister", "teardown"),
    ("uninit", "teardown"),
    ("disconnect", "teardown"),
    ("close", "teardown"),
    ("shutdown", "teardown"),
    ("stop", "teardown"),
    // Connection state changes.
    ("state", "a state change"),
    ("syn", "connection setup"),
    ("synsent", "connection setup"),
    ("synack", "connection setup"),
    ("req", "connection setup"),
    ("fin", "connection teardown"),
    ("timewait", "connection teardown"),
    ("rst", "an error"),
    // Errors.
    ("err", "an error"),
    ("error", "an error"),
    ("fail", "an error"),
    ("abort", "an error"),
    ("drop", "an error"),
    ("warn", "an error"),
    ("bug", "an error"),
    // Timers and probes.
    ("timer", "a timer"),
    ("timeout", "a timer"),
    ("watchdog", "a timer"),
    ("keepalive", "a timer"),
    ("probe", "a probe"),
    // A restart after idle or a failure (`tcp_cwnd_restart`).
    ("restart", "a restart"),
    // Configuration and reporting.
    ("mtu", "a configuration change"),
    ("pmtu", "a configuration change"),
    ("sync", "a configuration change"),
    ("change", "a configuration change"),
    ("sysctl", "configuration"),
    ("ioctl", "configuration"),
    ("sockopt", "configuration"),
    ("setsockopt", "configuration"),
    ("getsockopt", "configuration"),
    ("notify", "configuration"),
    ("carrier", "a link change"),
    ("info", "reporting"),
    ("dump", "reporting"),
    ("show", "reporting"),
    // Loss recovery and rare protocol events.
    ("loss", "loss recovery"),
    ("recovery", "loss recovery"),
    ("undo", "loss recovery"),
    ("reduction", "loss recovery"),
    ("retrans", "loss recovery"),
    ("retransmit", "loss recovery"),
    ("sacktag", "loss recovery"),
    ("lost", "loss recovery"),
    ("reorder", "loss recovery"),
    ("reordering", "loss recovery"),
    ("dsack", "loss recovery"),
    ("reneg", "loss recovery"),
    ("ofo", "out-of-order data"),
    ("prune", "memory pressure"),
    ("collapse", "memory pressure"),
    ("pressure", "memory pressure"),
    ("urg", "urgent data"),
    ("repair", "socket repair"),
    ("fastopen", "fast open"),
    ("md5", "signatures"),
    ("challenge", "an error"),
    // A wait: the task sleeps until memory, data or a page's I/O comes
    // (`sock_wait_for_wmem`, `sk_wait_data`, `folio_wait_locked`); the
    // CPU runs other work meanwhile, and the fast path is the one that
    // finds what it needs at once. (Waking a sleeper is no wait:
    // `wake_up`, and `waitqueue_active` is another word.)
    ("wait", "a blocking wait"),
    // The allocator's own slow path and the out-of-memory killer.
    ("slowpath", "a slow path"),
    ("oom", "an out-of-memory kill"),
];

/// The words a constant's name (`TCPCB_LOST`, `TCP_CA_Loss`, `TCP_LISTEN`,
/// `IS_ERR`) may carry for a branch that tests it to be a rare event: loss
/// recovery, connection setup and teardown, errors and timers. Narrower
/// than [`WORDS`]: a state constant named `..._Open` or `..._INIT` is as
/// often the usual state as not.
const EVENT_WORDS: &[&str] = &[
    "loss", "lost", "recovery", "retrans", "reneg", "dsack", "reorder", "undo", "listen", "syn",
    "synsent", "fin", "close", "rst", "err", "error", "fail", "abort", "warn", "bug", "timeout",
    "probe", "urg", "repair", "fastopen",
];

/// The kind of rare event a constant's name says a test of it is, if any
/// (by whole words, as [`slow_path`]).
pub fn rare_event(constant: &str) -> Option<&'static str> {
    constant
        .split('_')
        .filter(|w| EVENT_WORDS.contains(w))
        .find_map(|w| WORDS.iter().find(|(k, _)| *k == w).map(|(_, why)| *why))
}

/// The words an enum constant handed over or stored in a short block
/// (`kfree_skb_reason(skb, SKB_DROP_REASON_IP_NOPROTO)`, `reason =
/// SKB_DROP_REASON_PKT_TOO_SMALL`) may carry for that block to be an
/// error path: a drop or a failure. Narrower than [`EVENT_WORDS`]: a
/// block that records a loss or a state is often the usual work.
const ERROR_WORDS: &[&str] = &["drop", "err", "error", "fail", "abort"];

/// Whether an enum constant's name (lower case, by whole words) says an
/// error or a drop: a block that hands it over reports one.
pub fn error_constant(constant: &str) -> bool {
    constant.split('_').any(|w| ERROR_WORDS.contains(&w))
}

/// The kind of slow path `function`'s name says it is, if any.
pub fn slow_path(function: &str) -> Option<&'static str> {
    function
        .split('_')
        .filter(|w| !w.is_empty())
        .find_map(|w| WORDS.iter().find(|(k, _)| *k == w).map(|(_, why)| *why))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_of_the_name() {
        assert_eq!(
            slow_path("tcp_rcv_synsent_state_process"),
            Some("connection setup")
        );
        assert_eq!(slow_path("tcp_sync_mss"), Some("a configuration change"));
        assert_eq!(slow_path("tcp_write_timer_handler"), Some("a timer"));
        assert_eq!(slow_path("tcp_enter_loss"), Some("loss recovery"));
        assert_eq!(slow_path("__alloc_pages_slowpath"), Some("a slow path"));
        assert_eq!(slow_path("mem_cgroup_oom"), Some("an out-of-memory kill"));
        assert_eq!(slow_path("tcp_cwnd_restart"), Some("a restart"));
        assert_eq!(slow_path("tcp_cwnd_reduction"), Some("loss recovery"));
        assert_eq!(slow_path("sock_wait_for_wmem"), Some("a blocking wait"));
        assert_eq!(slow_path("folio_wait_locked"), Some("a blocking wait"));
        // A constant's words: rare events only, not a usual state.
        assert_eq!(rare_event("tcpcb_lost"), Some("loss recovery"));
        assert_eq!(rare_event("tcp_listen"), Some("setup"));
        assert_eq!(rare_event("is_err"), Some("an error"));
        // A drop reason names an error; a usual result does not.
        assert!(error_constant("skb_drop_reason_ip_noproto"));
        assert!(error_constant("compact_fail"));
        for usual in ["skb_consumed", "compact_success", "tcp_ca_open", "dropped"] {
            assert!(!error_constant(usual), "{usual}");
        }
        for usual in [
            "tcp_ca_open",
            "tcp_established",
            "zone_boosted_watermark",
            "alloc_cma",
        ] {
            assert_eq!(rare_event(usual), None, "{usual}");
        }
        for hot in [
            "tcp_rcv_established",
            "tcp_ack",
            "tcp_write_xmit",
            "__dev_queue_xmit",
            "dev_hard_start_xmit",
            "napi_gro_receive",
            "tcp_event_data_recv",
            "tcp_current_mss",
            "lru_add_fn",
            "get_page_from_freelist",
            "waitqueue_active",
            "__wake_up",
        ] {
            assert_eq!(slow_path(hot), None, "{hot}");
        }
    }
}
