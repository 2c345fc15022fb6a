//! The names inside a struct's fields that an access file may use
//! ([`crate::access::names`]): members of anonymous structs and unions and
//! of `struct_group`s by their own names, single bitfields, sub-members
//! of embedded structs as dotted paths, and the elements of small
//! one-dimensional arrays by index (`data[3]`), with gcc's offsets; and
//! `anon_union@OFFSET` / `anon_struct@OFFSET` for a top-level anonymous
//! member, the name the BTF and DWARF models give it (this front-end names
//! the field after its first member), so one access file serves both.

use super::parse::{Derived, RecordKind, TypeRef};
use super::types::{Item, Resolver};
use super::Header;
use crate::access::names::{MemberNames, MAX_DEPTH};
use crate::error::Diagnostic;

impl Header {
    /// Every [`crate::access::InnerName`] of struct `name` (as
    /// [`Header::find_struct`] names it), with byte ranges from the struct's
    /// start.
    pub fn member_names(&self, name: &str) -> Result<MemberNames, Diagnostic> {
        let name = name.trim();
        let name = name.strip_prefix("struct ").map_or(name, str::trim);
        let idx = match self.index.records.get(name) {
            Some(&i) if self.ast.records[i].kind == RecordKind::Struct => Some(i),
            Some(_) => None,
            None => self.typedef_record(name, 0),
        };
        let mut out = MemberNames::new();
        if let Some(idx) = idx {
            let resolver = Resolver::new(self);
            walk(self, &resolver, idx, 0, None, 0, &mut out)?;
            run_names(self, &resolver, idx, &mut out)?;
        }
        Ok(out)
    }

    /// The record a member's type stands for when it is one by value.
    fn record_of(&self, ty: &TypeRef) -> Option<usize> {
        let mut ty = ty.clone();
        for _ in 0..16 {
            match ty {
                TypeRef::Record { def: Some(i), .. } => return Some(i),
                TypeRef::Record { tag: Some(t), .. } => return self.index.records.get(&t).copied(),
                TypeRef::Name(n) => {
                    let td = &self.ast.typedefs[*self.index.typedefs.get(&n)?];
                    if !td.declarator.derived.is_empty() {
                        return None;
                    }
                    ty = td.ty.clone();
                }
                _ => return None,
            }
        }
        None
    }
}

/// The names BTF and DWARF give the struct's bit-field runs: the named
/// bit-fields of each run of storage units joined with `:`
/// (`save_syn:syn_data`), or `bitfield@OFFSET` for a run without names. A
/// bit-field joins the run when its storage unit (the aligned unit of its
/// type that holds its first bit) starts before the run's units end, as
/// `crate::typedb` groups them.
fn run_names(
    h: &Header,
    r: &Resolver,
    idx: usize,
    out: &mut MemberNames,
) -> Result<(), Diagnostic> {
    let rec = &h.ast.records[idx];
    let layout = r.record(idx, rec.specifier.start)?;
    // (names, first bit, end bit, end of the units) of the open run.
    let mut run: Option<(Vec<String>, u64, u64, u64)> = None;
    let close = |run: &mut Option<(Vec<String>, u64, u64, u64)>, out: &mut MemberNames| {
        if let Some((names, first, end, _)) = run.take() {
            let bytes = first / 8..end.div_ceil(8);
            let name = match names.is_empty() {
                true => format!("bitfield@{}", bytes.start),
                false => names.join(":"),
            };
            out.push(name, bytes);
        }
    };
    for p in &layout.placed {
        let width = match (&p.item, p.bits) {
            (Item::Field { .. }, Some(w)) if w > 0 => w,
            _ => {
                close(&mut run, out);
                continue;
            }
        };
        let Item::Field { member, declarator } = p.item else {
            continue;
        };
        let name = declarator.and_then(|k| rec.members[member].declarators[k].name.clone());
        let size = p.size.max(1);
        let unit = p.bit_offset / (size * 8) * size;
        if run.as_ref().is_some_and(|r| unit >= r.3) {
            close(&mut run, out);
        }
        let r = run.get_or_insert((Vec::new(), p.bit_offset, p.bit_offset, 0));
        r.0.extend(name);
        r.1 = r.1.min(p.bit_offset);
        r.2 = r.2.max(p.bit_offset + width);
        r.3 = r.3.max(unit + size);
    }
    close(&mut run, out);
    Ok(())
}

/// Lists the members of record `idx` laid out at `base` under `prefix`
/// (`None`: the struct's own scope). Top-level named members are fields.
fn walk(
    h: &Header,
    r: &Resolver,
    idx: usize,
    base: u64,
    prefix: Option<&str>,
    depth: usize,
    out: &mut MemberNames,
) -> Result<(), Diagnostic> {
    let rec = &h.ast.records[idx];
    let layout = r.record(idx, rec.specifier.start)?;
    let dotted = |name: &str| match prefix {
        Some(p) => format!("{p}.{name}"),
        None => name.to_string(),
    };
    for p in &layout.placed {
        let Item::Field { member, declarator } = p.item else {
            continue;
        };
        let f = &rec.members[member];
        let start = base + p.bit_offset / 8;
        let Some(k) = declarator else {
            // An anonymous struct or union, or a struct_group.
            let Some(inner) = h.record_of(&f.ty) else {
                continue;
            };
            if depth >= MAX_DEPTH {
                continue;
            }
            if prefix.is_none() && depth == 0 && f.group.is_none() {
                // The name BTF and DWARF models give this field.
                let kind = h.ast.records[inner].kind.keyword();
                if !out.push(format!("anon_{kind}@{start}"), start..start + p.size) {
                    return Ok(());
                }
            }
            if let Some(g) = &f.group {
                let group = dotted(g);
                if prefix.is_some() && !out.push(group.clone(), start..start + p.size) {
                    return Ok(());
                }
                walk(h, r, inner, start, Some(&group), depth + 1, out)?;
            }
            walk(h, r, inner, start, prefix, depth + 1, out)?;
            continue;
        };
        let d = &f.declarators[k];
        let Some(n) = &d.name else { continue };
        let name = dotted(n);
        if let Some(width) = p.bits {
            if width > 0 {
                let bytes = base + p.bit_offset / 8..base + (p.bit_offset + width).div_ceil(8);
                if !out.push(name, bytes) {
                    return Ok(());
                }
            }
            continue;
        }
        if (prefix.is_some() || depth > 0) && !out.push(name.clone(), start..start + p.size) {
            return Ok(());
        }
        if let [Derived::Array(Some(len))] = d.derived.as_slice() {
            let count = r
                .eval_range(len.clone())
                .ok()
                .and_then(|n| u64::try_from(n).ok());
            if !out.push_elements(&name, start..start + p.size, count.unwrap_or(0)) {
                return Ok(());
            }
        }
        if d.derived.is_empty() && depth < MAX_DEPTH {
            if let Some(inner) = h.record_of(&f.ty) {
                walk(h, r, inner, start, Some(&name), depth + 1, out)?;
            }
        }
    }
    Ok(())
}
