//! `#[derive(CacheLayout)]` on structs that keep the rule: what compiles,
//! what the impl reports, and the default access classes.

// `Defaults::counters`, an array of atomics without an attribute, is warned
// about (through a deprecated item) on purpose.
#![allow(deprecated)]

use cachelayout::core::Access;
use cachelayout::CacheLayout;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::{Mutex, RwLock};

/// Laid out by hand: the counter is a line away from the configuration at
/// every offset an 8-byte aligned instance can start at.
#[derive(CacheLayout)]
#[repr(C)]
pub struct ByHand {
    pub hits: AtomicU64,
    #[layout(cold)]
    pub spare: [u8; 56],
    pub config: u64,
}

#[derive(CacheLayout)]
#[repr(C)]
pub struct Pair(AtomicU64, #[layout(cold)] [u8; 56], u64);

#[derive(CacheLayout)]
#[layout(report_only)]
pub struct Defaults {
    pub counter: AtomicU64,
    pub counters: [AtomicU32; 2],
    pub state: Mutex<Vec<u8>>,
    pub table: RwLock<u64>,
    pub config: u64,
    #[layout(locked_write = "state")]
    pub generation: u64,
    #[layout(lockless(group = "producer"))]
    pub tail: AtomicU64,
    pub marker: PhantomData<u8>,
}

#[derive(CacheLayout)]
#[layout(report_only, line = 128)]
pub struct Named<'a> {
    pub name: &'a str,
    pub hits: AtomicU64,
}

#[derive(CacheLayout)]
#[repr(C, packed)]
#[layout(report_only)]
pub struct Packed {
    pub tag: u8,
    pub value: u64,
}

#[derive(CacheLayout)]
pub struct Unit;

#[test]
fn rule_checked_and_reported() {
    assert_eq!(ByHand::LINE_SIZE, 64);
    assert_eq!(ByHand::LINES, 2);
    let report = ByHand::layout_report();
    assert!(!report.contains("!!!"), "{report}");
    assert!(
        report.contains("the rule holds at all 8 offsets within a 64-byte line that its 8-byte alignment lets an instance start at; asserted at compile time"),
        "{report}"
    );
    let (s, l) = Pair::layout_model();
    assert_eq!(
        s.fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
        ["0", "1", "2"]
    );
    assert_eq!(
        l.slots.iter().map(|sl| sl.offset).collect::<Vec<_>>(),
        [0, 8, 64]
    );
}

#[test]
fn defaults_follow_the_type() {
    let (s, _) = Defaults::layout_model();
    let access = |name: &str| s.fields[s.field_index(name).unwrap()].access.clone();
    // Each atomic in a writer group of its own, named after the field.
    assert_eq!(
        access("counter"),
        Access::Lockless {
            group: Some("counter".into())
        }
    );
    assert_eq!(
        access("counters"),
        Access::Lockless {
            group: Some("counters".into())
        }
    );
    assert_eq!(
        access("state"),
        Access::LockedWrite {
            lock: "state".into()
        }
    );
    assert_eq!(
        access("table"),
        Access::LockedWrite {
            lock: "table".into()
        }
    );
    assert_eq!(access("config"), Access::ReadMostly);
    assert_eq!(
        access("generation"),
        Access::LockedWrite {
            lock: "state".into()
        }
    );
    assert_eq!(
        access("tail"),
        Access::Lockless {
            group: Some("producer".into())
        }
    );
    assert_eq!(access("marker"), Access::ReadMostly);
    assert_eq!(
        s.fields[s.field_index("state").unwrap()].size,
        std::mem::size_of::<Mutex<Vec<u8>>>() as u64
    );
}

#[test]
fn report_only_shows_what_breaks() {
    assert_eq!(Named::LINE_SIZE, 128);
    let report = Named::layout_report();
    assert!(
        report.contains("!!! breaks the rule")
            && report.contains("lockless `hits`")
            && report.contains("with read-mostly `name`"),
        "{report}"
    );
    assert!(
        report.contains("report_only: not asserted at compile time"),
        "{report}"
    );
    let (s, l) = Packed::layout_model();
    assert_eq!(l.align, 1);
    assert_eq!(
        l.slot_of(s.field_index("value").unwrap()).unwrap().offset,
        1
    );
    assert!(
        Packed::layout_report().contains("the rule holds at all 64 offsets"),
        "{}",
        Packed::layout_report()
    );
}

#[test]
fn empty_structs() {
    assert_eq!(Unit::LINES, 0);
    assert!(
        Unit::layout_report().contains("size 0 B"),
        "{}",
        Unit::layout_report()
    );
}
