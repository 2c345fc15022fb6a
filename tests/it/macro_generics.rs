//! Generic structs through both macros (issue: real library code): an SPSC
//! ring `Ring<T>` with `Box<[T]>`, an MPMC queue with `[Slot<T>; N]` and a
//! where clause, and a struct with a lifetime and a type parameter — each
//! instantiated with a small and a large `T`, and checked against an oracle
//! that reads rustc's `offset_of!`/`size_of` at every offset the struct's
//! alignment lets an instance start at. Also: nested types carry their class
//! (`Outer { counters: Counters }`, `type Counter = AtomicU64`), and the
//! generated constructor, `Default` and `Debug`.

use cachelayout::align::Align64;
use cachelayout::{Access, AccessClass, CacheLayout};
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::mem::{align_of, offset_of, size_of, MaybeUninit};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// How a field is written, for the oracle.
#[derive(Clone, Copy, PartialEq, Debug)]
enum C {
    /// Read-mostly.
    R,
    /// Lockless, with its writer group.
    A(&'static str),
}

/// The rule by brute force: at every phase `0, align, 2·align, ..` below the
/// line, no line holds bytes of a lockless field and of a read-mostly one,
/// nor of lockless fields of different groups.
fn assert_rule(what: &str, fields: &[(&str, usize, usize, C)], align: usize) {
    let line = 64;
    let lines = |off: usize, size: usize, phase: usize| {
        (phase + off) / line..=(phase + off + size - 1) / line
    };
    let mut phase = 0;
    while phase < line {
        for a in fields {
            for b in fields {
                let clash = match (a.3, b.3) {
                    (C::A(_), C::R) => true,
                    (C::A(x), C::A(y)) => x != y,
                    _ => false,
                };
                if !clash || a.2 == 0 || b.2 == 0 {
                    continue;
                }
                let (la, lb) = (lines(a.1, a.2, phase), lines(b.1, b.2, phase));
                assert!(
                    la.end() < lb.start() || lb.end() < la.start(),
                    "{what}: `{}` ({}..{}) and `{}` ({}..{}) share a line at phase {phase}",
                    a.0,
                    a.1,
                    a.1 + a.2,
                    b.0,
                    b.1,
                    b.1 + b.2
                );
            }
        }
        phase += align.min(line);
    }
}

macro_rules! facts {
    ($ty:ty { $($f:ident: $fty:ty => $c:expr),* $(,)? }) => {
        (
            vec![$((stringify!($f), offset_of!($ty, $f), size_of::<$fty>(), $c)),*],
            align_of::<$ty>(),
        )
    };
}

// ---- SPSC ring --------------------------------------------------------------

mod ring_optimize {
    use super::*;

    #[cachelayout::optimize]
    #[derive(Debug)]
    pub struct Ring<T> {
        pub buf: Box<[UnsafeCell<MaybeUninit<T>>]>,
        pub mask: usize,
        #[layout(lockless(group = "producer"))]
        pub tail: AtomicUsize,
        #[layout(lockless(group = "producer"))]
        pub cached_head: AtomicUsize,
        #[layout(lockless(group = "consumer"))]
        pub head: AtomicUsize,
        #[layout(lockless(group = "consumer"))]
        pub cached_tail: AtomicUsize,
    }

    impl<T> Ring<T> {
        pub fn with_capacity(capacity: usize) -> Self {
            let buf = (0..capacity)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect();
            Ring::new(
                buf,
                capacity - 1,
                AtomicUsize::new(0),
                AtomicUsize::new(0),
                AtomicUsize::new(0),
                AtomicUsize::new(0),
            )
        }
    }
}

mod ring_derive {
    use super::*;

    #[derive(CacheLayout)]
    #[repr(C)]
    pub struct Ring<T> {
        pub buf: Box<[UnsafeCell<MaybeUninit<T>>]>,
        pub mask: usize,
        pub _a0: [Align64; 0],
        #[layout(lockless(group = "producer"))]
        pub tail: AtomicUsize,
        #[layout(lockless(group = "producer"))]
        pub cached_head: AtomicUsize,
        pub _a1: [Align64; 0],
        #[layout(lockless(group = "consumer"))]
        pub head: AtomicUsize,
        #[layout(lockless(group = "consumer"))]
        pub cached_tail: AtomicUsize,
        pub _a2: [Align64; 0],
    }
}

const _: () = cachelayout::assert_layout::<ring_derive::Ring<u8>>();
const _: () = cachelayout::assert_layout::<ring_derive::Ring<[u8; 100]>>();
const _: () = cachelayout::assert_layout::<ring_optimize::Ring<u8>>();
const _: () = cachelayout::assert_layout::<ring_optimize::Ring<[u8; 100]>>();

macro_rules! ring_facts {
    ($ty:ty) => {
        facts!($ty {
            buf: Box<[UnsafeCell<MaybeUninit<u8>>]> => C::R,
            mask: usize => C::R,
            tail: AtomicUsize => C::A("producer"),
            cached_head: AtomicUsize => C::A("producer"),
            head: AtomicUsize => C::A("consumer"),
            cached_tail: AtomicUsize => C::A("consumer"),
        })
    };
}

#[test]
fn spsc_ring_both_macros_small_and_large_t() {
    for (name, (f, align)) in [
        ("optimize Ring<u8>", ring_facts!(ring_optimize::Ring<u8>)),
        (
            "optimize Ring<[u8; 100]>",
            ring_facts!(ring_optimize::Ring<[u8; 100]>),
        ),
        ("derive Ring<u8>", ring_facts!(ring_derive::Ring<u8>)),
        (
            "derive Ring<[u8; 100]>",
            ring_facts!(ring_derive::Ring<[u8; 100]>),
        ),
    ] {
        assert_rule(name, &f, align);
    }
    // The optimized ring packs the producer's and the consumer's pairs on a
    // line each (the configuration shares a line with neither).
    assert!(size_of::<ring_optimize::Ring<u8>>() <= 192);
    let r = ring_optimize::Ring::<u64>::with_capacity(8);
    r.tail.store(3, Ordering::Relaxed);
    assert_eq!(
        (r.mask, r.buf.len(), r.tail.load(Ordering::Relaxed)),
        (7, 8, 3)
    );
    // Debug shows the user's fields only.
    let dbg = format!("{r:?}");
    assert!(
        dbg.starts_with("Ring { buf: ") && !dbg.contains("__cachelayout"),
        "{dbg}"
    );
    let report = ring_optimize::Ring::<[u8; 100]>::layout_report();
    assert!(report.contains("struct Ring<[u8; 100]> {"), "{report}");
}

// ---- MPMC queue ---------------------------------------------------------------

/// A slot of the queue: its stamp is written by every producer and consumer.
// Its fields are there for their layout; no test reads them.
#[allow(dead_code)]
pub struct Slot<T> {
    pub stamp: AtomicUsize,
    pub value: UnsafeCell<MaybeUninit<T>>,
}

impl<T> AccessClass for Slot<T> {
    const ACCESS: Access = Access::Lockless;
}

mod queue_optimize {
    use super::*;

    #[cachelayout::optimize]
    pub struct Queue<T, const N: usize>
    where
        T: Send,
    {
        #[layout(lockless(group = "push"))]
        pub head: AtomicUsize,
        #[layout(lockless(group = "pop"))]
        pub tail: AtomicUsize,
        pub one_lap: usize,
        #[layout(lockless(group = "slots"))]
        pub slots: [Slot<T>; N],
        pub _marker: PhantomData<T>,
    }
}

mod queue_derive {
    use super::*;

    #[derive(CacheLayout)]
    #[repr(C)]
    pub struct Queue<T, const N: usize>
    where
        T: Send,
    {
        pub one_lap: usize,
        pub _a0: [Align64; 0],
        #[layout(lockless(group = "push"))]
        pub head: AtomicUsize,
        pub _a1: [Align64; 0],
        #[layout(lockless(group = "pop"))]
        pub tail: AtomicUsize,
        pub _a2: [Align64; 0],
        // No attribute: `Slot<T>` carries `lockless` through `AccessClass`.
        pub slots: [Slot<T>; N],
        pub _a3: [Align64; 0],
        pub _marker: PhantomData<T>,
    }
}

const _: () = cachelayout::assert_layout::<queue_derive::Queue<u8, 4>>();
const _: () = cachelayout::assert_layout::<queue_derive::Queue<[u64; 32], 3>>();
const _: () = cachelayout::assert_layout::<queue_optimize::Queue<u8, 4>>();
const _: () = cachelayout::assert_layout::<queue_optimize::Queue<[u64; 32], 3>>();

macro_rules! queue_facts {
    ($ty:ty, $slots:ty) => {
        facts!($ty {
            head: AtomicUsize => C::A("push"),
            tail: AtomicUsize => C::A("pop"),
            one_lap: usize => C::R,
            slots: $slots => C::A("slots"),
        })
    };
}

#[test]
fn mpmc_queue_both_macros_small_and_large_t() {
    for (name, (f, align)) in [
        (
            "optimize Queue<u8, 4>",
            queue_facts!(queue_optimize::Queue<u8, 4>, [Slot<u8>; 4]),
        ),
        (
            "optimize Queue<[u64; 32], 3>",
            queue_facts!(queue_optimize::Queue<[u64; 32], 3>, [Slot<[u64; 32]>; 3]),
        ),
        (
            "derive Queue<u8, 4>",
            queue_facts!(queue_derive::Queue<u8, 4>, [Slot<u8>; 4]),
        ),
        (
            "derive Queue<[u64; 32], 3>",
            queue_facts!(queue_derive::Queue<[u64; 32], 3>, [Slot<[u64; 32]>; 3]),
        ),
    ] {
        assert_rule(name, &f, align);
    }
    // The derive's `slots` has no attribute: the compiler's answer made it lockless.
    let info = <queue_derive::Queue<u8, 4> as CacheLayout>::__INFO;
    let slots = info.fields.iter().find(|f| f.name == "slots").unwrap();
    // In a writer group of its own, as an atomic without an attribute.
    assert_eq!(
        slots.class,
        cachelayout::__private::Class::Lockless(Some("slots"))
    );
    assert_eq!(slots.guess, cachelayout::__private::Class::ReadMostly);
}

// ---- a lifetime and a type parameter ------------------------------------------

mod view_optimize {
    use super::*;

    #[cachelayout::optimize]
    #[derive(Default)]
    pub struct View<'a, T: Default> {
        pub data: &'a [T],
        pub hits: AtomicU64,
        pub label: &'a str,
        pub last: T,
    }
}

mod view_derive {
    use super::*;

    #[derive(CacheLayout)]
    #[repr(C)]
    pub struct View<'a, T: Default> {
        pub data: &'a [T],
        pub label: &'a str,
        pub last: T,
        pub _a0: [Align64; 0],
        pub hits: AtomicU64,
        pub _a1: [Align64; 0],
    }
}

const _: () = cachelayout::assert_layout::<view_derive::View<'static, u16>>();
const _: () = cachelayout::assert_layout::<view_derive::View<'static, [u64; 20]>>();

macro_rules! view_facts {
    ($ty:ty, $t:ty) => {
        facts!($ty {
            data: &[$t] => C::R,
            hits: AtomicU64 => C::A(""),
            label: &str => C::R,
            last: $t => C::R,
        })
    };
}

#[test]
fn lifetime_and_type_parameter_both_macros() {
    let data = [1u16, 2, 3];
    let v = view_optimize::View::new(&data[..], AtomicU64::new(0), "v", 9u16);
    assert_eq!((v.data.len(), v.label, v.last), (3, "v", 9));
    let d: view_optimize::View<'_, [u64; 20]> = Default::default();
    assert_eq!(d.last, [0; 20]);
    for (name, (f, align)) in [
        (
            "optimize View<u16>",
            view_facts!(view_optimize::View<'static, u16>, u16),
        ),
        (
            "optimize View<[u64; 20]>",
            view_facts!(view_optimize::View<'static, [u64; 20]>, [u64; 20]),
        ),
        (
            "derive View<u16>",
            view_facts!(view_derive::View<'static, u16>, u16),
        ),
        (
            "derive View<[u64; 20]>",
            view_facts!(view_derive::View<'static, [u64; 20]>, [u64; 20]),
        ),
    ] {
        assert_rule(name, &f, align);
    }
}

// ---- nested types and aliases --------------------------------------------------

/// Counters every request bumps together: one writer group (atomics
/// without one would each get their own line).
#[derive(CacheLayout)]
pub struct Counters {
    #[layout(lockless(group = "requests"))]
    pub hits: AtomicU64,
    #[layout(lockless(group = "requests"))]
    pub misses: AtomicU64,
    #[layout(lockless(group = "requests"))]
    pub evictions: AtomicU64,
}

/// `Counters` is all atomics: `optimize` keeps it off the lines of `limit`
/// and `name` although nothing in `Outer` says so.
#[cachelayout::optimize]
pub struct Outer {
    pub limit: u64,
    pub counters: Counters,
    pub name: &'static str,
}

type Counter = AtomicU64;

#[cachelayout::optimize]
pub struct Aliased {
    pub limit: u64,
    pub served: Counter,
    pub name: &'static str,
}

#[test]
fn nested_types_carry_their_class() {
    assert_eq!(<Counters as AccessClass>::ACCESS, Access::Lockless);
    for (name, (f, align)) in [
        (
            "Outer",
            facts!(Outer { limit: u64 => C::R, counters: Counters => C::A(""), name: &str => C::R }),
        ),
        (
            "Aliased",
            facts!(Aliased { limit: u64 => C::R, served: Counter => C::A(""), name: &str => C::R }),
        ),
    ] {
        assert_rule(name, &f, align);
    }
    let report = Aliased::layout_report();
    assert!(
        report.contains("served: Counter,") && report.contains("lockless"),
        "{report}"
    );
    // `Counter` cannot be sized by the macro: the report gives the hint with rustc's values.
    assert!(
        report.contains("`served` (Counter): up to 56 B; #[layout(size = 8, align = 8)]"),
        "{report}"
    );
}

// ---- proven at the definition for every instantiation (issue 21, item 3) ----

/// `val` and `hot` are apart whatever `T` is: the marker starts `hot` on a
/// line of its own and the trailing one ends the line. The derive proves it
/// at the definition, so a struct literal needs no check of its own.
#[derive(CacheLayout)]
#[repr(C)]
pub struct Isolated<T> {
    pub val: T,
    pub _line: [Align64; 0],
    pub hot: AtomicU64,
}

/// Apart by padding: `hot` ends at 8 and `val` starts at 64 or later, so a
/// line boundary falls between them at every offset an 8-byte-aligned
/// instance can start at.
#[derive(CacheLayout)]
#[repr(C)]
pub struct PaddedAfter<T> {
    pub hot: AtomicU64,
    #[layout(cold)]
    pub _pad: [u8; 56],
    pub val: T,
}

#[test]
fn a_generic_struct_proven_at_its_definition_keeps_the_rule_for_any_t() {
    let padded = PaddedAfter {
        hot: AtomicU64::new(0),
        _pad: [0; 56],
        val: 3u16,
    };
    assert_eq!(padded.val, 3);
    for phase in (0..64).step_by(8) {
        let hot_line = (phase + 7) / 64;
        for val in [
            offset_of!(PaddedAfter<u8>, val),
            offset_of!(PaddedAfter<u128>, val),
        ] {
            assert!((phase + val) / 64 > hot_line, "{phase} {val}");
        }
    }
    // Built with a struct literal: no per-instantiation check runs.
    let small = Isolated {
        val: 1u8,
        _line: [],
        hot: AtomicU64::new(0),
    };
    assert_eq!(small.val, 1);
    assert_eq!(offset_of!(Isolated<u8>, hot), 64);
    assert_eq!(offset_of!(Isolated<[u8; 100]>, hot), 128);
    assert_eq!(size_of::<Isolated<u8>>(), 128);
    for (val_end, hot) in [
        (size_of::<u8>(), offset_of!(Isolated<u8>, hot)),
        (size_of::<[u64; 9]>(), offset_of!(Isolated<[u64; 9]>, hot)),
        (size_of::<u128>(), offset_of!(Isolated<u128>, hot)),
    ] {
        assert!((val_end - 1) / 64 < hot / 64, "{val_end} {hot}");
    }
}

// ---- padding only where an instantiation could break the rule (item 10) ----

/// A sequence lock: `data` is written under `seq`, so no field must stay off
/// its lines; it needs no lines of its own, whatever `T` is.
#[cachelayout::optimize]
pub struct SeqLock<T> {
    pub seq: AtomicUsize,
    #[layout(locked_write = "seq")]
    pub data: UnsafeCell<T>,
}

#[test]
fn a_field_of_unknown_size_that_nothing_conflicts_with_gets_no_padding() {
    // As small as the plain struct (it was 128 B: `data` on a line of its own).
    assert_eq!(size_of::<SeqLock<u8>>(), 16);
    assert_eq!(offset_of!(SeqLock<u8>, seq), 0);
    assert_eq!(offset_of!(SeqLock<u8>, data), 8);
    assert_eq!(size_of::<SeqLock<[u8; 100]>>(), 112);
    assert_eq!(offset_of!(SeqLock<u128>, data), 16);
    let lock = SeqLock::new(AtomicUsize::new(0), UnsafeCell::new(7u32));
    assert_eq!(unsafe { *lock.data.get() }, 7);
    const _: () = cachelayout::assert_layout::<SeqLock<[u64; 9]>>();
    let report = <SeqLock<u8>>::layout_report();
    assert!(
        report.contains("no field must stay off its lines, so it goes after every other field"),
        "{report}"
    );
    assert!(!report.contains("whole lines of their own"), "{report}");
}
