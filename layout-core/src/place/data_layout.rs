//! The target facts that layouts depend on, in one value: how wide a
//! pointer is, how long a cache line is, and what the kernel's
//! `SMP_CACHE_BYTES` (the line size its cacheline attributes align to) is.
//!
//! Everything that needs one of these facts reads it from a [`DataLayout`]
//! rather than writing the number down: the C front-end (pointers, the
//! cacheline markers and attributes), the type database's inference of
//! cacheline attributes, the emitters' kernel line, and the proc-macro's
//! size model (the host's pointer width).

/// Pointer width, cache line size and `SMP_CACHE_BYTES` of a target, in
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DataLayout {
    /// Size and alignment of a data or function pointer (and of `long` on
    /// LP64 targets).
    pub pointer_bytes: u64,
    /// The hardware cache line.
    pub line_bytes: u64,
    /// The line size the kernel's `____cacheline_aligned_in_smp`,
    /// `CACHELINE_PADDING()` and `__cacheline_group_begin_aligned()` align
    /// to (`L1_CACHE_BYTES` with `CONFIG_SMP=y`).
    pub smp_cache_bytes: u64,
}

impl DataLayout {
    /// x86_64, System V LP64, as the kernel is configured for it.
    pub const X86_64: DataLayout = DataLayout {
        pointer_bytes: 8,
        line_bytes: 64,
        smp_cache_bytes: 64,
    };

    /// The machine this code is compiled for: its pointer width (what a
    /// proc-macro, compiled for the host, sees of the user's target), with
    /// the x86_64 line sizes.
    pub const HOST: DataLayout = DataLayout {
        pointer_bytes: if cfg!(target_pointer_width = "64") {
            8
        } else if cfg!(target_pointer_width = "32") {
            4
        } else {
            2
        },
        ..DataLayout::X86_64
    };
}

impl Default for DataLayout {
    fn default() -> Self {
        DataLayout::X86_64
    }
}
