//! Soft costs and the secondary objective terms of a layout.

/// Weights of the soft costs (DESIGN.md §2). Each is charged once per line on
/// which the two kinds of field meet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftWeights {
    /// A lockless field next to a locked field.
    pub lockless_locked: u64,
    /// A locked field next to a read-mostly field.
    pub locked_read: u64,
    /// Fields under different locks on one line.
    pub locked_locked: u64,
}

impl Default for SoftWeights {
    fn default() -> Self {
        SoftWeights { lockless_locked: 4, locked_read: 2, locked_locked: 1 }
    }
}

/// The objective terms of one layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    pub size: u64,
    pub soft: u64,
    pub read_lines: u64,
    pub movement: u64,
}
