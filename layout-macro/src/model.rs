//! The layout-core model of a parsed struct: every field with a size and
//! alignment (from its hint, else the size model, else a stand-in block of
//! one full cache line) and its access class (explicit, else from its type).

use crate::attr::{Errors, Input, Mode, MAX_SIZE};
use crate::defaults::default_access;
use crate::size_model::{self, SizeAlign};
use crate::types::{display, maybe_unsized_params, mentions};
use layout_core::model::PathUse;
use layout_core::place::{Cursor, Kind, Member};
use layout_core::{Access, Field, Struct};

/// The model and what the macro knows about each field's size.
pub struct Model {
    pub strukt: Struct,
    /// Per field (declaration order): the size and alignment the plan assumes,
    /// or `None` when the size is unknown and the field stands in the model
    /// as a block of one line, aligned to the line.
    pub known: Vec<Option<SizeAlign>>,
    /// Per field: of unknown size, and no field must keep off its lines (its
    /// class has no hard conflict with any other field's): it needs no
    /// lines of its own. The solver lays out the other fields; free fields
    /// follow them all, where their real size moves no other field. In
    /// `strukt` a free field has size 0 and alignment 1.
    pub free: Vec<bool>,
    /// Per field: every class the compile-time checks may give it (see
    /// `possible_classes`); the first is the model's.
    pub classes: Vec<Vec<Access>>,
    /// The cache line size the model is laid out for.
    pub line: u64,
}

/// Build the model of `input`.
///
/// A pinned field keeps the offset it has in the struct as declared, laid
/// out as `#[repr(C)]`; that offset needs the sizes of every field before it.
/// `#[cachelayout::optimize]` reports a pinned field whose offset cannot be
/// known; the derive (which only suggests) drops the pin instead.
pub fn build(input: &Input, mode: Mode) -> syn::Result<Model> {
    let line = input.options.line;
    let mut errors = Errors::default();
    let unsized_params = maybe_unsized_params(&input.generics);
    let known: Vec<Option<SizeAlign>> = input
        .fields
        .iter()
        .map(|f| match f.hint {
            Some(h) => Some(SizeAlign {
                size: h.size,
                align: h.align,
            }),
            // `&T`, `Box<T>` with `T: ?Sized` may be thin or fat.
            None if mentions(&f.ty, &unsized_params) => None,
            None => size_model::size_of(&f.ty),
        })
        .collect();
    check_total_size(input, &known, line)?;
    let mut path_names: Vec<String> = Vec::new();
    for f in &input.fields {
        for p in &f.paths {
            if !path_names.contains(p) {
                path_names.push(p.clone());
            }
        }
    }
    let declared = declared_offsets(&known);
    let mut fields = Vec::with_capacity(input.fields.len());
    for (i, f) in input.fields.iter().enumerate() {
        let sa = known[i].unwrap_or(SizeAlign {
            size: line,
            align: line,
        });
        let mut field = Field::new(f.name.clone(), display(&f.ty), sa.size, sa.align).with_access(
            f.access
                .clone()
                .unwrap_or_else(|| default_access(&f.ty, &f.name)),
        );
        field.original_offset = declared[i];
        field.paths = f
            .paths
            .iter()
            .map(|p| PathUse {
                path: path_names.iter().position(|n| n == p).unwrap_or(0) as u32,
                bytes: 0..sa.size,
            })
            .collect();
        if f.pinned {
            match declared[i] {
                Some(_) => field.pinned = true,
                None if mode == Mode::Optimize => {
                    let blocker = (0..=i).find(|&j| known[j].is_none()).unwrap_or(i);
                    errors.at(
                        f.span,
                        format!(
                            "pinned field `{}` keeps its offset as declared, but the macro does not know \
                             the size of `{}`; add `#[layout(size = N, align = M)]` to `{}`",
                            f.name, input.fields[blocker].name, input.fields[blocker].name
                        ),
                    );
                }
                None => {}
            }
        }
        fields.push(field);
    }
    errors.finish()?;
    // A lock's own word is written by every locker: flagged before the
    // free fields are chosen, since it must keep off read-mostly lines.
    for (m, f) in fields.iter_mut().zip(&input.fields) {
        m.lock_word = m.access.lock().is_some() && crate::lock_words::is_lock(&f.ty);
    }
    let classes = possible_classes(input, &fields);
    // What the hard rule sees: a lock word as a writer of its own.
    let rule_classes: Vec<Vec<Access>> = fields
        .iter()
        .zip(&classes)
        .map(|(f, c)| {
            let mut c = c.clone();
            if f.lock_word {
                c.push(f.rule_access().into_owned());
            }
            c
        })
        .collect();
    let free = free_fields(&known, &fields, &rule_classes);
    for (f, _) in fields.iter_mut().zip(&free).filter(|(_, free)| **free) {
        f.size = 0;
        f.align = 1;
        f.paths.clear();
    }
    let mut strukt = Struct::new(input.ident.to_string(), fields);
    strukt.min_align = input.repr.align.unwrap_or(1);
    strukt.paths = path_names;
    Ok(Model {
        strukt,
        known,
        free,
        classes,
        line,
    })
}

/// The classes the compile-time checks may give each field: its class
/// when an attribute gives it or its type can carry none (a type
/// parameter, a scalar, ..: `types::carries_no_class`); else also lockless
/// and locked, which its type may carry through `AccessClass`.
fn possible_classes(input: &Input, fields: &[Field]) -> Vec<Vec<Access>> {
    let params = crate::types::params_without_access_class(&input.generics);
    input
        .fields
        .iter()
        .zip(fields)
        .map(|(f, m)| {
            if f.access.is_some() || crate::types::carries_no_class(&f.ty, &params) {
                vec![m.access.clone()]
            } else {
                let mut classes = vec![m.access.clone()];
                for raised in [
                    Access::Lockless { group: None },
                    Access::LockedWrite {
                        lock: f.name.clone(),
                    },
                ] {
                    if !classes.contains(&raised) {
                        classes.push(raised);
                    }
                }
                classes
            }
        })
        .collect()
}

/// Whether some class `a` may have must not share a line with some class
/// `b` may have.
pub fn may_conflict(a: &[Access], b: &[Access]) -> bool {
    a.iter().any(|x| b.iter().any(|y| x.hard_conflict(y)))
}

/// The fields of unknown size that need no lines of their own: no other
/// field may have a class that must not share a line with one theirs may
/// have.
fn free_fields(
    known: &[Option<SizeAlign>],
    fields: &[Field],
    classes: &[Vec<Access>],
) -> Vec<bool> {
    (0..fields.len())
        .map(|i| {
            known[i].is_none()
                && !fields[i].pinned
                && !(0..fields.len()).any(|j| j != i && may_conflict(&classes[i], &classes[j]))
        })
        .collect()
}

/// Every layout of the fields (their sizes, the padding their alignments
/// and cache lines may call for) must fit in the largest size a Rust type can
/// have, `isize::MAX` bytes: a struct that does not cannot exist, and every
/// sum the solver and the rewrite form stays within `u64`. The error points
/// at the field that crosses the limit (its hint, if it has one).
fn check_total_size(input: &Input, known: &[Option<SizeAlign>], line: u64) -> syn::Result<()> {
    let mut total: u64 = 0;
    for (f, sa) in input.fields.iter().zip(known) {
        let sa = sa.unwrap_or(SizeAlign {
            size: line,
            align: line,
        });
        let room = sa
            .size
            .checked_add(sa.align)
            .and_then(|r| r.checked_add(line))
            .and_then(|r| total.checked_add(r))
            .filter(|&t| t <= MAX_SIZE);
        match room {
            Some(t) => total = t,
            None => {
                let span = f.hint.map_or(f.span, |h| h.span);
                return Err(syn::Error::new(
                    span,
                    format!(
                        "`{}` cannot be laid out: with field `{}` its fields need more than isize::MAX \
                         ({MAX_SIZE}) bytes, larger than any Rust type can be",
                        input.ident, f.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Offsets under `#[repr(C)]` in declaration order, while every size so far
/// is known.
fn declared_offsets(known: &[Option<SizeAlign>]) -> Vec<Option<u64>> {
    let mut c = Some(Cursor::new(Kind::Struct));
    known
        .iter()
        .map(|sa| match (c.as_mut(), sa) {
            (Some(c), Some(sa)) => Some(c.place(&Member::new(sa.size, sa.align))),
            _ => {
                c = None;
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::parse;

    fn model(src: &str, mode: Mode) -> syn::Result<Model> {
        let input = parse(syn::parse_str(src).unwrap(), mode, Default::default()).unwrap();
        build(&input, mode)
    }

    #[test]
    fn sizes_classes_and_blocks() {
        let m = model(
            "struct S { a: u8, hits: AtomicU64, lock: Mutex<u64>, #[layout(size = 24, align = 8)] c: Foo }",
            Mode::Optimize,
        )
        .unwrap();
        let f = &m.strukt.fields;
        assert_eq!(
            (f[0].size, f[0].align, f[0].access.clone()),
            (1, 1, Access::ReadMostly)
        );
        assert_eq!(
            f[1].access,
            Access::Lockless {
                group: Some("hits".into())
            }
        );
        // `Mutex<u64>` may carry another class (its `AccessClass`): a block.
        assert_eq!((f[2].size, f[2].align), (64, 64));
        assert_eq!(m.free, vec![false; 4]);
        assert_eq!(
            f[2].access,
            Access::LockedWrite {
                lock: "lock".into()
            }
        );
        assert_eq!((f[3].size, f[3].align), (24, 8));
        assert_eq!(m.known[2], None);
        assert_eq!(f[1].original_offset, Some(8));
        assert_eq!(f[3].original_offset, None);
        // A read-mostly field of unknown size next to an atomic: a block.
        let m = model("struct S { hits: AtomicU64, cfg: Config }", Mode::Optimize).unwrap();
        assert_eq!(
            (m.strukt.fields[1].size, m.strukt.fields[1].align),
            (64, 64)
        );
        assert_eq!(m.free, vec![false, false]);
        // A SeqLock's data, written under the sequence counter: free.
        let m = model(
            "struct SeqLock<T> { seq: AtomicUsize, #[layout(locked_write = \"seq\")] data: UnsafeCell<T> }",
            Mode::Optimize,
        )
        .unwrap();
        assert_eq!(m.free, vec![false, true]);
        assert_eq!((m.strukt.fields[1].size, m.strukt.fields[1].align), (0, 1));
    }

    #[test]
    fn generic_fields_and_paths() {
        let m = model(
            "struct R<T: ?Sized, U> { a: Box<[U]>, b: U, c: *mut T, #[layout(path = \"tx\")] d: PhantomData<U>, #[layout(path = \"rx\", path = \"tx\")] e: u32 }",
            Mode::Optimize,
        )
        .unwrap();
        assert_eq!(m.known[0], Some(SizeAlign { size: 16, align: 8 }));
        assert_eq!((m.known[1], m.known[2]), (None, None));
        assert_eq!(m.strukt.paths, vec!["tx", "rx"]);
        assert_eq!(
            m.strukt.fields[4].paths,
            vec![
                PathUse {
                    path: 1,
                    bytes: 0..4
                },
                PathUse {
                    path: 0,
                    bytes: 0..4
                }
            ]
        );
    }

    #[test]
    fn pinned_after_unknown_size() {
        let err = model(
            "struct S { lock: Mutex<u8>, #[layout(pinned)] a: u8 }",
            Mode::Optimize,
        )
        .err()
        .unwrap();
        assert!(
            err.to_string().contains("does not know the size of `lock`"),
            "{err}"
        );
        let m = model(
            "struct S { lock: Mutex<u8>, #[layout(pinned)] a: u8 }",
            Mode::Derive,
        )
        .unwrap();
        assert!(!m.strukt.fields[1].pinned);
    }
}
