//! `#[cachelayout::optimize]`: the rewritten struct keeps what the user
//! wrote (visibility, docs, derives, other attributes), honours the options,
//! hints and pins, and gives fields of unknown size lines of their own.

use cachelayout::CacheLayout;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

mod stats {
    /// Counters and the configuration they count.
    // `reorder_ord`: the derived comparisons follow the solver's order.
    #[cachelayout::optimize(constructor = "from_fields", reorder_ord)]
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub struct Stats {
        /// Requests served.
        #[layout(lockless)]
        pub requests: u64,
        pub max_conn: u32,
        pub(crate) name: String,
        #[layout(lockless)]
        pub errors: u64,
        timeout_ms: u32,
    }

    impl Stats {
        pub fn new(name: &str) -> Stats {
            Stats {
                name: name.into(),
                timeout_ms: 30,
                ..Default::default()
            }
        }
        pub fn timeout_ms(&self) -> u32 {
            self.timeout_ms
        }
    }
}

#[cachelayout::optimize(line = 128, objective = "min-diff")]
#[repr(align(32))]
#[derive(Default)]
pub struct Wide {
    pub hits: AtomicU64,
    pub config: u64,
}

// Its fields are there for their layout; no test reads them.
#[allow(dead_code)]
pub struct Histogram {
    pub buckets: [u64; 3],
}

#[cachelayout::optimize]
#[repr(C)]
pub struct Mixed<'a> {
    #[layout(pinned)]
    pub magic: u8,
    pub name: &'a str,
    pub hits: AtomicU64,
    pub lock: Mutex<u64>,
    #[layout(size = 24, align = 8)]
    pub latency: Histogram,
    pub marker: PhantomData<u8>,
    pub r#type: u16,
}

#[cachelayout::optimize]
pub struct Empty {}

/// `cfg_attr` on the struct itself is evaluated before the macro runs.
#[cachelayout::optimize]
#[cfg_attr(target_pointer_width = "64", layout(line = 128))]
#[cfg_attr(not(target_pointer_width = "64"), layout(line = 32))]
pub struct Configured {
    pub hits: AtomicU64,
}

fn offset(s: &cachelayout::core::Struct, l: &cachelayout::core::Layout, name: &str) -> u64 {
    l.slot_of(s.field_index(name).unwrap()).unwrap().offset
}

#[test]
fn keeps_what_the_user_wrote() {
    let a = stats::Stats::new("api");
    let b = a.clone();
    assert_eq!(a, b);
    assert_eq!(a.timeout_ms(), 30);
    assert_eq!(a.name, "api");
    let debug = format!("{a:?}");
    assert!(
        debug.starts_with("Stats {")
            && debug.contains("requests: 0")
            && debug.contains("name: \"api\""),
        "{debug}"
    );
    let (s, l) = stats::Stats::layout_model();
    cachelayout::core::verify(&s, &l).unwrap();
    // The counters sit on a line of their own.
    assert_eq!(
        offset(&s, &l, "requests") / 64,
        offset(&s, &l, "errors") / 64
    );
    assert_ne!(
        offset(&s, &l, "requests") / 64,
        offset(&s, &l, "max_conn") / 64
    );
}

#[test]
fn options_and_repr_align() {
    assert_eq!(Wide::LINE_SIZE, 128);
    assert!(std::mem::align_of::<Wide>() >= 32);
    let (s, l) = Wide::layout_model();
    cachelayout::core::verify(&s, &l).unwrap();
    let report = Wide::layout_report();
    assert!(
        report.contains("layout by #[cachelayout::optimize]"),
        "{report}"
    );
    let w = Wide {
        hits: AtomicU64::new(1),
        config: 2,
        ..Default::default()
    };
    assert_eq!(w.hits.load(Ordering::Relaxed) + w.config, 3);
}

#[test]
fn pins_hints_unknown_sizes() {
    let (s, l) = Mixed::layout_model();
    cachelayout::core::verify(&s, &l).unwrap();
    assert_eq!(offset(&s, &l, "magic"), 0);
    // The Mutex, of unknown size, has its lines to itself.
    let lock = offset(&s, &l, "lock");
    assert_eq!(lock % 64, 0);
    let size = std::mem::size_of::<Mutex<u64>>() as u64;
    for f in &s.fields {
        let o = offset(&s, &l, &f.name);
        if f.name != "lock" && f.size > 0 {
            assert!(
                o + f.size <= lock || o >= (lock + size).next_multiple_of(64),
                "{}",
                Mixed::layout_report()
            );
        }
    }
    assert!(s.field_index("type").is_some());
}

#[test]
fn struct_level_cfg_attr() {
    let line = if cfg!(target_pointer_width = "64") {
        128
    } else {
        32
    };
    assert_eq!(Configured::LINE_SIZE, line);
}

#[test]
fn empty_struct() {
    assert_eq!(std::mem::size_of::<Empty>(), 0);
    assert!(Empty::layout_report().contains("size 0 B"));
}

/// Any `repr(align(N))` rustc accepts: the trailing marker is `AlignN`.
#[cachelayout::optimize]
#[repr(align(512))]
pub struct Page {
    pub hits: AtomicU64,
    pub config: u64,
    pub lock: Mutex<u64>,
}

#[cachelayout::optimize(constructor = false)]
#[repr(align(536870912))]
pub struct Huge {
    pub hits: AtomicU64,
    pub config: u64,
}

#[test]
fn repr_align_up_to_rustcs_largest() {
    assert_eq!(std::mem::align_of::<Page>(), 512);
    assert_eq!(std::mem::size_of::<Page>(), 512);
    assert_ne!(
        std::mem::offset_of!(Page, hits) / 64,
        std::mem::offset_of!(Page, config) / 64
    );
    let page = Page::new(AtomicU64::new(1), 2, Mutex::new(3));
    assert_eq!(page.config, 2);
    assert_eq!(std::mem::align_of::<Huge>(), 1 << 29);
    let (s, l) = Huge::layout_model();
    assert!(cachelayout::core::verify(&s, &l).is_ok());
}

// ---- derives whose meaning follows the field order (issue 21, item 4) ----

mod serialized {
    use serde::{Deserialize, Serialize};

    /// The author opted in: no data written with the declared order is read.
    #[cachelayout::optimize(reorder_serialized)]
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    pub struct Record {
        pub name: u64,
        #[layout(lockless)]
        pub hits: u64,
        pub limit: u64,
    }
}

#[test]
fn reorder_serialized_opts_in_and_serde_skips_the_markers() {
    let r = serialized::Record::new(1, 2, 3);
    let fields: Vec<&str> = <serialized::Record as CacheLayout>::__INFO
        .fields
        .iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(fields, ["name", "hits", "limit"]);
    // Reordered: `limit` now comes before `hits` in memory and in serde's order.
    let json = serde_json::to_string(&r).unwrap();
    assert_eq!(json, r#"{"name":1,"limit":3,"hits":2}"#);
    let back: serialized::Record = serde_json::from_str(&json).unwrap();
    assert_eq!(back, r);
}
