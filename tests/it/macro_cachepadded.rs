//! What `crossbeam_utils::CachePadded` gives that the macros must give too,
//! measured with `offset_of!`, `size_of` and `align_of`: separate lines for
//! atomics that different threads write (writer groups), the line size,
//! line-aligned edges against neighbours (`isolated`), per-element
//! isolation for arrays of atomics, and lock words off read-mostly lines.

use cachelayout::CacheLayout;
use std::mem::{align_of, offset_of, size_of};
use std::sync::atomic::{AtomicU64, AtomicUsize};

/// The line a byte offset falls on.
fn line_of(offset: usize, line: usize) -> usize {
    offset / line
}

/// A bounded MPMC queue's indices: producers write `tail`, consumers
/// `head`. No attribute: each atomic is its own writer group by default.
#[cachelayout::optimize]
pub struct Mpmc {
    pub buffer: Box<[u64]>,
    pub mask: usize,
    pub head: AtomicUsize,
    pub tail: AtomicUsize,
}

#[test]
fn atomics_default_to_writer_groups_of_their_own() {
    let (h, t) = (offset_of!(Mpmc, head), offset_of!(Mpmc, tail));
    assert_ne!(line_of(h, 64), line_of(t, 64), "head {h}, tail {t}");
    for rm in [offset_of!(Mpmc, buffer), offset_of!(Mpmc, mask)] {
        assert_ne!(line_of(rm, 64), line_of(h, 64));
        assert_ne!(line_of(rm, 64), line_of(t, 64));
    }
    let report = Mpmc::layout_report();
    assert!(
        report.contains(
            "2 atomic fields without a writer group (`head`, `tail`) each got one of their own"
        ),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "{} B, where one shared group would take 96 B",
            size_of::<Mpmc>()
        )),
        "{report}"
    );
}

/// Grouped by the author: one line for both.
#[cachelayout::optimize]
pub struct Grouped {
    pub mask: usize,
    #[layout(lockless(group = "stats"))]
    pub hits: AtomicU64,
    #[layout(lockless(group = "stats"))]
    pub misses: AtomicU64,
}

#[test]
fn grouped_atomics_share_a_line() {
    assert_eq!(
        line_of(offset_of!(Grouped, hits), 64),
        line_of(offset_of!(Grouped, misses), 64)
    );
    assert!(size_of::<Grouped>() <= 128);
    assert!(!Grouped::layout_report().contains("without a writer group"));
}

/// The derive holds a struct as written to the same default.
#[derive(cachelayout::CacheLayout)]
#[layout(report_only)]
pub struct HeadTail {
    pub head: AtomicUsize,
    pub tail: AtomicUsize,
}

#[test]
fn the_derive_sees_two_writers_on_one_line() {
    let report = HeadTail::layout_report();
    assert!(report.contains("!!! breaks the rule"), "{report}");
    assert!(
        report.contains("lockless `head` (writer group `head`, bytes 0..8) shares cache line 0 with lockless `tail`"),
        "{report}"
    );
}

// ---- line size ---------------------------------------------------------------

/// 128-byte lines: the counter stays 128 bytes from the configuration, as
/// `CachePadded` keeps it on x86_64.
#[cachelayout::optimize(line = 128)]
pub struct Wide128 {
    pub config: u64,
    pub hits: AtomicU64,
    pub limit: u32,
}

/// The line `CachePadded` uses on the target.
#[cachelayout::optimize(line = "target")]
pub struct ForTarget {
    pub config: u64,
    pub hits: AtomicU64,
}

#[derive(cachelayout::CacheLayout)]
#[layout(line = "target")]
#[repr(C, align(256))]
pub struct DerivedForTarget {
    pub hits: AtomicU64,
    #[layout(cold)]
    pub spare: [u8; 248],
    pub config: u64,
}

/// Whether byte ranges `a` and `b` (offset, size) of a struct aligned to
/// `align` have bytes on one `line`-byte line at some start offset.
fn share_a_line(a: (usize, usize), b: (usize, usize), line: usize, align: usize) -> bool {
    (0..line).step_by(align.min(line)).any(|phase| {
        let lines =
            |(off, size): (usize, usize)| ((phase + off) / line, (phase + off + size - 1) / line);
        let ((a0, a1), (b0, b1)) = (lines(a), lines(b));
        a0 <= b1 && b0 <= a1
    })
}

#[test]
fn line_128_keeps_writers_128_bytes_from_readers() {
    assert_eq!(Wide128::LINE_SIZE, 128);
    let align = align_of::<Wide128>();
    let hits = (offset_of!(Wide128, hits), 8);
    for rm in [
        (offset_of!(Wide128, config), 8),
        (offset_of!(Wide128, limit), 4),
    ] {
        assert!(!share_a_line(hits, rm, 128, align), "{hits:?} {rm:?}");
    }
    // 64-byte lines would have let them closer: the 128 is what moved them.
    assert!(size_of::<Wide128>() > 128, "{}", size_of::<Wide128>());
}

#[test]
fn line_target_follows_cache_padded() {
    let padded = align_of::<crossbeam_utils::CachePadded<u8>>().max(32);
    assert_eq!(ForTarget::LINE_SIZE, padded);
    assert_eq!(DerivedForTarget::LINE_SIZE, padded);
    assert_ne!(
        line_of(offset_of!(ForTarget, hits), padded),
        line_of(offset_of!(ForTarget, config), padded)
    );
    assert!(ForTarget::layout_report().contains(&format!("of {padded} B")));
}

// ---- neighbours: isolated ----------------------------------------------------

/// A 160-byte queue (align 8 as written): an `Arc` puts its counts in the
/// bytes before it, a `Vec` the previous element's last field.
#[derive(cachelayout::CacheLayout)]
#[layout(report_only)]
#[repr(C)]
pub struct Exposed {
    pub head: AtomicUsize,
    #[layout(cold)]
    pub pad: [u8; 56],
    pub cap: usize,
    pub mask: usize,
    #[layout(cold)]
    pub pad2: [u8; 56],
    pub tail: AtomicUsize,
    #[layout(cold)]
    pub pad3: [u8; 16],
}

#[cachelayout::optimize]
#[layout(isolated)]
pub struct Isolated {
    pub cap: usize,
    pub mask: usize,
    #[layout(lockless(group = "q"))]
    pub head: AtomicUsize,
    #[layout(lockless(group = "q"))]
    pub tail: AtomicUsize,
}

#[derive(cachelayout::CacheLayout)]
#[layout(isolated)]
#[repr(C, align(64))]
pub struct IsolatedByHand {
    pub head: AtomicUsize,
    #[layout(cold)]
    pub pad: [u8; 56],
    pub cap: usize,
}

#[test]
fn isolated_structs_start_and_end_on_a_line() {
    assert_eq!(align_of::<Isolated>(), 64);
    assert_eq!(size_of::<Isolated>() % 64, 0);
    assert_eq!(align_of::<IsolatedByHand>(), 64);
    assert_eq!(size_of::<IsolatedByHand>() % 64, 0);
    for report in [Isolated::layout_report(), IsolatedByHand::layout_report()] {
        assert!(!report.contains("not isolated"), "{report}");
    }
}

#[test]
fn the_report_names_unisolated_edge_lines() {
    assert_eq!(size_of::<Exposed>(), 160);
    let report = Exposed::layout_report();
    assert!(
        report.contains("`Exposed` is not isolated (8-byte aligned, 160 B): its first cache line holds written `head`"),
        "{report}"
    );
    assert!(
        report.contains("its last cache line holds written `tail`"),
        "{report}"
    );
    assert!(report.contains("#[layout(isolated)]"), "{report}");
}

// ---- arrays of atomics ---------------------------------------------------------

/// A striped counter: thread `i` bumps `stripes[i % 8]`.
#[cachelayout::optimize]
#[derive(Default)]
pub struct Striped {
    pub limit: u64,
    #[layout(per_element)]
    pub stripes: [AtomicU64; 8],
}

#[cachelayout::optimize(line = 128)]
#[derive(Default)]
pub struct Striped128 {
    #[layout(per_element)]
    pub stripes: [AtomicU64; 4],
    pub limit: u64,
}

#[test]
fn per_element_puts_each_element_on_a_line_of_its_own() {
    use std::sync::atomic::Ordering::Relaxed;
    let s = Striped::default();
    s.stripes[3].fetch_add(2, Relaxed);
    assert_eq!(s.stripes[3].load(Relaxed), 2);
    let base = &s as *const Striped as usize;
    let at = |i: usize| &*s.stripes[i] as *const AtomicU64 as usize - base;
    assert_eq!(at(0), offset_of!(Striped, stripes));
    for i in 1..8 {
        assert_eq!(at(i) - at(i - 1), 64);
    }
    assert_eq!(size_of::<Striped>(), 64 + 8 * 64);
    assert_ne!(
        line_of(offset_of!(Striped, limit), 64),
        line_of(offset_of!(Striped, stripes), 64)
    );
    let t = Striped128::default();
    let base = &t as *const Striped128 as usize;
    let at = |i: usize| &*t.stripes[i] as *const AtomicU64 as usize - base;
    assert_eq!(at(1) - at(0), 128);
    assert_eq!(align_of::<Striped128>(), 128);
}

// ---- lock words ----------------------------------------------------------------

/// With the hint the report suggests, the solver may pack the `Mutex`: its
/// state word is written by every locker, so it stays off the read-mostly
/// line; `hits`, written under it, may share its line.
#[cachelayout::optimize]
pub struct Locked {
    pub name: &'static str,
    pub limit: u64,
    #[layout(size = 16, align = 8)]
    pub state: std::sync::Mutex<u64>,
    #[layout(locked_write = "state")]
    pub hits: u64,
}

/// As written: the lock word on the configuration's line.
#[derive(cachelayout::CacheLayout)]
#[layout(report_only)]
#[repr(C, align(64))]
pub struct LockedAsWritten {
    pub limit: u64,
    pub state: std::sync::Mutex<u64>,
}

#[test]
fn lock_words_stay_off_read_mostly_lines() {
    let align = align_of::<Locked>();
    let state = (
        offset_of!(Locked, state),
        size_of::<std::sync::Mutex<u64>>(),
    );
    for rm in [
        (offset_of!(Locked, name), 16),
        (offset_of!(Locked, limit), 8),
    ] {
        assert!(!share_a_line(state, rm, 64, align), "{state:?} {rm:?}");
    }
    let (s, l) = Locked::layout_model();
    assert!(cachelayout::core::verify(&s, &l).is_ok());
    assert!(s.fields[s.field_index("state").unwrap()].lock_word);
    // layout-core's verifier, which shares no code with the checks, agrees.
    let (s2, l2) = LockedAsWritten::layout_model();
    assert!(cachelayout::core::verify(&s2, &l2).is_err());
    assert!(!s.fields[s.field_index("hits").unwrap()].lock_word);
    let report = LockedAsWritten::layout_report();
    assert!(report.contains("locked by `state`, lock word"), "{report}");
    assert!(
        report.contains(
            "lock word `state` (bytes 8..24) shares cache line 0 with read-mostly `limit`"
        ),
        "{report}"
    );
}
