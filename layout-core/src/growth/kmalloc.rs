//! kmalloc size classes (SLUB on x86_64 with 4 KiB pages): the bytes an
//! object really takes when it is allocated with `kmalloc`.
//!
//! Requests up to 8 KiB (`KMALLOC_MAX_CACHE_SIZE`, two pages) come from the
//! caches `kmalloc-8` .. `kmalloc-8k` (96 and 192 included); larger ones go
//! to the page allocator, which rounds up to a power-of-two number of pages
//! (the order). `kmalloc(0)` allocates nothing.

use serde::Serialize;

/// The general kmalloc caches, smallest first.
pub const CACHES: [u64; 13] = [
    8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
];

/// Page size of the page allocator behind kmalloc's large requests.
pub const PAGE_SIZE: u64 = 4096;

/// Where a request of some size is served from, and how many bytes it takes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SizeClass {
    /// `kmalloc-96`, `kmalloc-2k`, `page order 2 (16k)`, or `none` for 0 bytes.
    pub name: String,
    /// Bytes the allocator hands out for the request.
    pub bytes: u64,
}

/// The size class of a `kmalloc(size)` request.
pub fn class_of(size: u64) -> SizeClass {
    if size == 0 {
        return SizeClass {
            name: "none".into(),
            bytes: 0,
        };
    }
    if let Some(&bytes) = CACHES.iter().find(|&&c| c >= size) {
        return SizeClass {
            name: format!("kmalloc-{}", short_bytes(bytes)),
            bytes,
        };
    }
    let pages = size.div_ceil(PAGE_SIZE);
    let order = pages.next_power_of_two().trailing_zeros();
    let bytes = PAGE_SIZE << order;
    SizeClass {
        name: format!("page order {order} ({})", short_bytes(bytes)),
        bytes,
    }
}

/// `96`, `2k`, `16k`, `4M`: whole multiples of 1024 get a suffix.
fn short_bytes(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{}M", bytes >> 20)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{}k", bytes >> 10)
    } else {
        bytes.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_sizes_round_up_to_the_next_cache() {
        assert_eq!(
            class_of(1),
            SizeClass {
                name: "kmalloc-8".into(),
                bytes: 8
            }
        );
        assert_eq!(class_of(8).bytes, 8);
        assert_eq!(class_of(9).bytes, 16);
        assert_eq!(class_of(65).name, "kmalloc-96");
        assert_eq!(class_of(97).name, "kmalloc-128");
        assert_eq!(class_of(129).name, "kmalloc-192");
        assert_eq!(class_of(193).name, "kmalloc-256");
        assert_eq!(class_of(257).name, "kmalloc-512");
    }

    #[test]
    fn the_seed_sizes() {
        assert_eq!(
            class_of(2048),
            SizeClass {
                name: "kmalloc-2k".into(),
                bytes: 2048
            }
        );
        assert_eq!(
            class_of(2112),
            SizeClass {
                name: "kmalloc-4k".into(),
                bytes: 4096
            }
        );
        assert_eq!(class_of(1360).name, "kmalloc-2k");
        assert_eq!(class_of(1408).name, "kmalloc-2k");
    }

    #[test]
    fn large_sizes_go_to_page_orders() {
        assert_eq!(class_of(8192).name, "kmalloc-8k");
        assert_eq!(
            class_of(8193),
            SizeClass {
                name: "page order 2 (16k)".into(),
                bytes: 16384
            }
        );
        assert_eq!(class_of(16385).name, "page order 3 (32k)");
        assert_eq!(class_of(4 << 20).name, "page order 10 (4M)");
    }

    #[test]
    fn zero_allocates_nothing() {
        assert_eq!(class_of(0).bytes, 0);
        assert_eq!(class_of(0).name, "none");
    }
}
