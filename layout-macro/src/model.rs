//! The layout-core model of a parsed struct: every field with a size and
//! alignment (from its hint, else the size model, else a stand-in block of
//! one full cache line) and its access class (explicit, else from its type).

use crate::attr::{Errors, Input, Mode, MAX_SIZE};
use crate::defaults::default_access;
use crate::size_model::{self, SizeAlign};
use crate::types::{display, maybe_unsized_params, mentions};
use layout_core::model::PathUse;
use layout_core::place::{Cursor, Kind, Member};
use layout_core::{Field, Struct};

/// The model and what the macro knows about each field's size.
pub struct Model {
    pub strukt: Struct,
    /// Per field (declaration order): the size and alignment the plan assumes,
    /// or `None` when the size is unknown and the field stands in the model
    /// as a block of one line, aligned to the line.
    pub known: Vec<Option<SizeAlign>>,
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
    let mut strukt = Struct::new(input.ident.to_string(), fields);
    strukt.min_align = input.repr.align.unwrap_or(1);
    strukt.paths = path_names;
    Ok(Model {
        strukt,
        known,
        line,
    })
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
    use layout_core::Access;

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
        assert_eq!((f[2].size, f[2].align), (64, 64));
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
