// Derived `PartialOrd`/`Ord` compare fields in declaration order: reordering
// them would change what `a < b` means. `Hash`, `Debug` and `PartialEq` are
// fine.
#[cachelayout::optimize]
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Version {
    pub major: u64,
    #[layout(lockless)]
    pub uses: u64,
    pub minor: u64,
}

fn main() {}
