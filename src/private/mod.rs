//! Support for the code the macros generate. Not a public API: names and
//! shapes change without notice.
//!
//! - [`Info`]: what the generated `CacheLayout` impl knows about the struct —
//!   every field's real offset, size and alignment (`offset_of!`, `size_of`,
//!   `align_of`), its access class, and the layout the solver planned.
//! - `check`: `const fn`s the generated compile-time assertions call; they
//!   return the error message when the rule is broken.
//! - `report`: the runtime report behind `CacheLayout::layout_report`.
//! - `Align2` .. `Align536870912`: zero-sized types of every alignment
//!   rustc accepts; a `[Align64; 0]` field starts the next field on a
//!   64-byte boundary; [`Padding`] where no marker lands on the planned
//!   offset.

mod check;
mod class;
mod edges;
mod message;
mod report;
mod sweep;

pub use check::{
    first_shared_line, hint_message, hint_mismatch, pinned_message, rule_check, rule_message,
};
pub use class::Class;
pub use message::Message;
#[cfg(feature = "model")]
pub use report::model;
pub use report::report;

/// One field as rustc laid it out.
#[derive(Clone, Copy, Debug)]
pub struct FieldFacts {
    pub name: &'static str,
    /// The type as written.
    pub ty: &'static str,
    pub offset: usize,
    pub size: usize,
    pub align: usize,
    /// The class the checks use: the attribute's, else the stronger of the
    /// macro's guess from the type name and the type's `AccessClass`.
    pub class: Class,
    /// The macro's class: the attribute's, or its guess from the type name.
    pub guess: Class,
    /// The class came from a `#[layout(..)]` attribute.
    pub explicit: bool,
    pub pinned: bool,
    /// A lock (`Mutex`, `RwLock`, a spin lock) whose own state every locker
    /// writes: the rule judges it as a lockless writer of a group of its
    /// own ([`FieldFacts::rule`]).
    pub lock_word: bool,
}

impl FieldFacts {
    /// The class the rule judges the field by: a lock word's is lockless, in
    /// a writer group named after the field; every other field's is its
    /// class.
    pub const fn rule(&self) -> Class {
        match self.class {
            Class::LockedWrite(_) if self.lock_word => Class::Lockless(Some(self.name)),
            class => class,
        }
    }
}

/// A field as the solver planned it.
#[derive(Clone, Copy, Debug)]
pub struct PlannedField {
    pub offset: usize,
    /// The size the plan assumed; `None` for a field of unknown size.
    pub size: Option<usize>,
    pub align: usize,
    /// A field of unknown size planned as a block of whole lines of its
    /// own; false for one no field must keep off its lines, planned after
    /// every other field.
    pub alone: bool,
}

/// The layout `#[cachelayout::optimize]` planned with its size model.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// In declaration order.
    pub fields: &'static [PlannedField],
    pub size: usize,
    pub align: usize,
    /// How the layout was chosen (solver method, time, optimality).
    pub note: &'static str,
}

/// Everything the generated impl records about a struct.
#[derive(Clone, Copy, Debug)]
pub struct Info {
    pub name: &'static str,
    pub line: usize,
    /// In declaration order.
    pub fields: &'static [FieldFacts],
    /// False under `#[layout(report_only)]`: nothing is asserted.
    pub checked: bool,
    /// The end of a broken-rule message: the order the solver suggests
    /// (derive), or empty.
    pub advice: &'static str,
    pub plan: Option<Plan>,
}

/// The class of a field as the checks use it: `declared` (from an
/// attribute, when `explicit`, or guessed from the type name), raised to
/// what the field's type carries (`carried`, its `AccessClass` if it has
/// one): data written without a lock makes the field lockless in a writer
/// group of its own (named after the field, as the macros' default for
/// atomics), a lock makes it locked under a lock named after the field.
pub const fn effective(
    declared: Class,
    explicit: bool,
    carried: Option<crate::Access>,
    field: &'static str,
) -> Class {
    if explicit {
        return declared;
    }
    let raised = match carried {
        Some(crate::Access::Lockless) => Class::Lockless(Some(field)),
        Some(crate::Access::LockedWrite) => Class::LockedWrite(field),
        Some(crate::Access::ReadMostly) | None => return declared,
    };
    if raised.rank() > declared.rank() {
        raised
    } else {
        declared
    }
}

/// The strongest class of `fields`: what a struct carries into a struct
/// that holds it.
pub const fn strongest(fields: &[FieldFacts]) -> crate::Access {
    let mut best = Class::ReadMostly;
    let mut i = 0;
    while i < fields.len() {
        if fields[i].class.rank() > best.rank() {
            best = fields[i].class;
        }
        i += 1;
    }
    best.carried()
}

/// `Probe::<T>::ACCESS`: `Some(T::ACCESS)` when `T` implements
/// [`AccessClass`](crate::AccessClass), else `None` (from [`NoAccessClass`]).
/// An inherent associated const wins over the trait's when its bound
/// holds, so generated code can ask about any concrete type; in a generic
/// context a bound that cannot be proven gives `None`.
pub struct Probe<T: ?Sized>(::core::marker::PhantomData<T>);

impl<T: ?Sized + crate::AccessClass> Probe<T> {
    pub const ACCESS: Option<crate::Access> = Some(T::ACCESS);
}

/// The fallback of [`Probe`] for types without an `AccessClass`.
pub trait NoAccessClass {
    const ACCESS: Option<crate::Access> = None;
}

impl<T: ?Sized> NoAccessClass for Probe<T> {}

macro_rules! align_markers {
    ($($name:ident = $n:literal),* $(,)?) => {$(
        #[doc = concat!("A zero-sized type aligned to ", stringify!($n), " bytes.")]
        #[repr(align($n))]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name;
    )*};
}

/// `N` bytes of padding that every derive accepts (`Default` included, which
/// `[u8; N]` lacks past 32): all paddings compare equal and hash to nothing.
#[derive(Clone, Copy)]
pub struct Padding<const N: usize>([u8; N]);

impl<const N: usize> Padding<N> {
    pub const fn new() -> Self {
        Padding([0; N])
    }
}

impl<const N: usize> Default for Padding<N> {
    fn default() -> Self {
        Padding([0; N])
    }
}

impl<const N: usize> ::core::fmt::Debug for Padding<N> {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        write!(f, "Padding<{N}>")
    }
}

impl<const N: usize> PartialEq for Padding<N> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<const N: usize> Eq for Padding<N> {}

impl<const N: usize> PartialOrd for Padding<N> {
    fn partial_cmp(&self, other: &Self) -> Option<::core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<const N: usize> Ord for Padding<N> {
    fn cmp(&self, _: &Self) -> ::core::cmp::Ordering {
        ::core::cmp::Ordering::Equal
    }
}

impl<const N: usize> ::core::hash::Hash for Padding<N> {
    fn hash<H: ::core::hash::Hasher>(&self, _: &mut H) {}
}

// Every alignment rustc accepts (`repr(align(N))` up to 2^29): `optimize`
// may need a marker of the struct's own `repr(align(N))`.
align_markers!(
    Align2 = 2,
    Align4 = 4,
    Align8 = 8,
    Align16 = 16,
    Align32 = 32,
    Align64 = 64,
    Align128 = 128,
    Align256 = 256,
    Align512 = 512,
    Align1024 = 1024,
    Align2048 = 2048,
    Align4096 = 4096,
    Align8192 = 8192,
    Align16384 = 16384,
    Align32768 = 32768,
    Align65536 = 65536,
    Align131072 = 131072,
    Align262144 = 262144,
    Align524288 = 524288,
    Align1048576 = 1048576,
    Align2097152 = 2097152,
    Align4194304 = 4194304,
    Align8388608 = 8388608,
    Align16777216 = 16777216,
    Align33554432 = 33554432,
    Align67108864 = 67108864,
    Align134217728 = 134217728,
    Align268435456 = 268435456,
    Align536870912 = 536870912,
);
