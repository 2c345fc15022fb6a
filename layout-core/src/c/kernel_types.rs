//! Sizes of types kernel headers use without defining them: the C and
//! kernel scalar typedefs, and kernel structs whose layout the usual
//! configuration does not change.
//!
//! The values are those of an x86_64 build without lock debugging
//! (CONFIG_DEBUG_SPINLOCK, CONFIG_DEBUG_LOCK_ALLOC, CONFIG_LOCKDEP and
//! CONFIG_DEBUG_OBJECTS off, CONFIG_MUTEX_SPIN_ON_OWNER and
//! CONFIG_RWSEM_SPIN_ON_OWNER on, CONFIG_NET_NS on, reference trackers off),
//! as in Debian's 6.1 amd64 build. Each struct was laid out by this
//! front-end from the 6.1 headers with that build's `.config`, and
//! compared with `pahole` on a 6.18 kernel where the type did not change
//! (`struct semaphore`, `struct maple_tree` and `kernel_cap_t` did: the 6.1
//! values are given). The access file's `[types]` overrides any of them;
//! BTF of the real build is exact.

use super::abi::TyLayout;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Size and alignment of a type named `name` (`u32`, `struct list_head`).
pub(crate) fn builtin_type(name: &str) -> Option<TyLayout> {
    static BY_NAME: OnceLock<HashMap<&'static str, TyLayout>> = OnceLock::new();
    let by_name = BY_NAME.get_or_init(|| {
        let mut map = HashMap::new();
        for row in BUILTIN_TYPES {
            for &n in row.names {
                map.entry(n).or_insert(TyLayout {
                    size: row.size,
                    align: row.align,
                });
            }
        }
        map
    });
    by_name.get(name).copied()
}

/// Types of one size and alignment.
struct Row {
    size: u64,
    align: u64,
    names: &'static [&'static str],
}

/// The table: struct tags with their `struct` keyword.
const BUILTIN_TYPES: &[Row] = &[
    // C and kernel scalar typedefs.
    Row {
        size: 1,
        align: 1,
        names: &[
            "bool",
            "_Bool",
            "u8",
            "s8",
            "__u8",
            "__s8",
            "int8_t",
            "uint8_t",
            "u_int8_t",
            "u_char",
            "unchar",
            "blk_status_t",
        ],
    },
    Row {
        size: 2,
        align: 2,
        names: &[
            "u16",
            "s16",
            "__u16",
            "__s16",
            "int16_t",
            "uint16_t",
            "u_int16_t",
            "__le16",
            "__be16",
            "__sum16",
            "umode_t",
            "wchar_t",
            "char16_t",
            "u_short",
            "ushort",
            "__virtio16",
            "__kernel_sa_family_t",
            "sa_family_t",
            "domid_t",
        ],
    },
    Row {
        size: 4,
        align: 4,
        names: &[
            "u32",
            "s32",
            "__u32",
            "__s32",
            "int32_t",
            "uint32_t",
            "u_int32_t",
            "__le32",
            "__be32",
            "__wsum",
            "gfp_t",
            "fmode_t",
            "pid_t",
            "uid_t",
            "gid_t",
            "kuid_t",
            "kgid_t",
            "kprojid_t",
            "dev_t",
            "char32_t",
            "atomic_t",
            "refcount_t",
            "spinlock_t",
            "raw_spinlock_t",
            "arch_spinlock_t",
            "seqcount_t",
            "seqcount_spinlock_t",
            "seqcount_raw_spinlock_t",
            "__kernel_pid_t",
            "mode_t",
            "u_int",
            "uint",
            "__virtio32",
            "__poll_t",
            "slab_flags_t",
            "vm_fault_t",
            "blk_opf_t",
            "errseq_t",
            "depot_stack_handle_t",
            "clockid_t",
            "__kernel_clockid_t",
            "__kernel_uid32_t",
            "__kernel_gid32_t",
            "__kernel_mode_t",
            "__kernel_daddr_t",
            "__kernel_key_t",
            "key_serial_t",
            "nlink_t",
            "grant_ref_t",
            "compat_int_t",
            "compat_uint_t",
            "compat_long_t",
            "compat_ulong_t",
            "compat_size_t",
            "compat_uptr_t",
            "compat_pid_t",
            "compat_uid_t",
            "compat_gid_t",
            "compat_time_t",
            "compat_off_t",
            "compat_mode_t",
            "compat_caddr_t",
            "phy_interface_t",
        ],
    },
    Row {
        size: 8,
        align: 8,
        names: &[
            "u64",
            "s64",
            "__u64",
            "__s64",
            "int64_t",
            "uint64_t",
            "u_int64_t",
            "__le64",
            "__be64",
            "__aligned_u64",
            "aligned_u64",
            "__aligned_le64",
            "__aligned_be64",
            "size_t",
            "ssize_t",
            "ptrdiff_t",
            "intptr_t",
            "uintptr_t",
            "intmax_t",
            "uintmax_t",
            "loff_t",
            "off_t",
            "time64_t",
            "ktime_t",
            "sector_t",
            "blkcnt_t",
            "phys_addr_t",
            "dma_addr_t",
            "resource_size_t",
            "atomic_long_t",
            "atomic64_t",
            "__kernel_size_t",
            "__kernel_ssize_t",
            "__kernel_long_t",
            "__kernel_ulong_t",
            "pgoff_t",
            "cpumask_var_t",
            "nullptr_t",
            "u_long",
            "ulong",
            "__virtio64",
            "time_t",
            "__kernel_time64_t",
            "__kernel_old_time_t",
            "__kernel_clock_t",
            "__kernel_ino_t",
            "ino_t",
            "irq_hw_number_t",
            "netdev_features_t",
            "fl_owner_t",
            "local_t",
            "local64_t",
            "pgtable_t",
            "possible_net_t",
            "u64_stats_t",
            "gpa_t",
            "gfn_t",
            "hpa_t",
            "hfn_t",
            "xen_pfn_t",
            "acpi_handle",
        ],
    },
    Row {
        size: 8,
        align: 4,
        names: &["seqlock_t", "rwlock_t"],
    },
    Row {
        size: 8,
        align: 4,
        names: &["kernel_cap_t"],
    },
    Row {
        size: 16,
        align: 16,
        names: &["__int128", "__int128_t", "__uint128_t", "s128", "u128"],
    },
    // Byte arrays: addresses and ids.
    Row {
        size: 6,
        align: 1,
        names: &["bdaddr_t"],
    },
    Row {
        size: 16,
        align: 1,
        names: &["guid_t", "uuid_t"],
    },
    Row {
        size: 14,
        align: 1,
        names: &["struct ethhdr"],
    },
    // Empty without lock debugging or on 64-bit.
    Row {
        size: 0,
        align: 1,
        names: &[
            "struct lock_class_key",
            "struct u64_stats_sync",
            "netdevice_tracker",
        ],
    },
    // Network addresses.
    Row {
        size: 4,
        align: 4,
        names: &["struct in_addr"],
    },
    Row {
        size: 16,
        align: 4,
        names: &[
            "struct in6_addr",
            "union nf_inet_addr",
            "struct sockaddr_in",
        ],
    },
    Row {
        size: 28,
        align: 4,
        names: &["struct sockaddr_in6"],
    },
    Row {
        size: 16,
        align: 2,
        names: &["struct sockaddr"],
    },
    Row {
        size: 128,
        align: 8,
        names: &[
            "struct sockaddr_storage",
            "struct __kernel_sockaddr_storage",
        ],
    },
    // Locks and lists.
    Row {
        size: 4,
        align: 4,
        names: &[
            "struct raw_spinlock",
            "struct spinlock",
            "struct qspinlock",
            "struct optimistic_spin_queue",
            "struct seqcount",
            "struct seqcount_spinlock",
            "struct kref",
            "struct refcount_struct",
        ],
    },
    Row {
        size: 8,
        align: 8,
        names: &[
            "struct hlist_head",
            "struct hlist_nulls_head",
            "struct hlist_bl_head",
            "struct llist_node",
            "struct llist_head",
            "struct rb_root",
            "struct lockref",
            "struct rcuwait",
        ],
    },
    Row {
        size: 16,
        align: 8,
        names: &[
            "struct list_head",
            "struct hlist_node",
            "struct hlist_nulls_node",
            "struct callback_head",
            "struct rcu_head",
            "struct rb_root_cached",
            "struct timerqueue_head",
            "struct plist_head",
            "struct xarray",
            "struct radix_tree_root",
            "struct ida",
            "struct percpu_ref",
            "struct path",
            "struct qstr",
            "struct attribute",
            "struct timespec64",
            "struct __kernel_timespec",
            "struct timespec",
            "struct __kernel_old_timeval",
        ],
    },
    Row {
        size: 24,
        align: 8,
        names: &[
            "struct rb_node",
            "wait_queue_head_t",
            "struct wait_queue_head",
            "struct swait_queue_head",
            "struct semaphore",
            "struct notifier_block",
            "struct sk_buff_head",
            "struct idr",
            "struct maple_tree",
        ],
    },
    Row {
        size: 32,
        align: 8,
        names: &[
            "struct mutex",
            "struct work_struct",
            "struct completion",
            "struct timerqueue_node",
        ],
    },
    Row {
        size: 40,
        align: 8,
        names: &[
            "struct timer_list",
            "struct rw_semaphore",
            "struct plist_node",
            "struct wait_queue_entry",
            "struct ratelimit_state",
            "struct percpu_counter",
        ],
    },
    Row {
        size: 48,
        align: 8,
        names: &["struct blocking_notifier_head"],
    },
    Row {
        size: 64,
        align: 8,
        names: &[
            "struct kobject",
            "struct resource",
            "struct hrtimer",
            "struct page",
        ],
    },
    Row {
        size: 88,
        align: 8,
        names: &["struct delayed_work"],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let l = |n| builtin_type(n).map(|l| (l.size, l.align));
        assert_eq!(l("struct list_head"), Some((16, 8)));
        assert_eq!(l("atomic_t"), Some((4, 4)));
        assert_eq!(l("__be32"), Some((4, 4)));
        assert_eq!(l("struct delayed_work"), Some((88, 8)));
        assert_eq!(l("bdaddr_t"), Some((6, 1)));
        assert_eq!(l("struct lock_class_key"), Some((0, 1)));
        assert_eq!(l("struct nope"), None);
        assert_eq!(l("list_head"), None, "struct tags need the keyword");
    }

    #[test]
    fn every_name_is_listed_once() {
        let mut names: Vec<&str> = BUILTIN_TYPES
            .iter()
            .flat_map(|r| r.names.iter().copied())
            .collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all);
        assert!(BUILTIN_TYPES.iter().all(|r| r.align.is_power_of_two()));
    }
}
