//! BTF reader: `/sys/kernel/btf/vmlinux` (raw BTF), the `.BTF` section of an
//! ELF file (`gcc -gbtf` objects, a `vmlinux` built with `CONFIG_DEBUG_INFO_BTF`),
//! and split BTF (kernel modules) on top of its base.
//!
//! The format (kernel `Documentation/bpf/btf.rst`): a header (magic `0xeB9F`,
//! version 1, then the offsets and lengths of the type and string sections
//! after the header), a type section of `btf_type` records (name offset, info
//! word with vlen, kind and kind_flag, size-or-type) each followed by a
//! kind-specific trailer, and a string section of NUL-terminated names. Type
//! ids count from 1 in record order; 0 is `void`. Either byte order is read.
//! Every kind up to `ENUM64` (19) is handled; struct members use the
//! kind_flag encoding (`bitfield_size << 24 | bit_offset`) or, without it,
//! the bit offset and width of an `INT` member type.
//!
//! BTF states no alignment: see [`crate::typedb`] for how it is inferred.

use crate::error::Diagnostic;
use crate::typedb::graph::{Node, Qualifier, RawMember, Span, TypeGraph, TypeId};
pub use crate::typedb::TypeDb;
use std::borrow::Cow;
use std::path::Path;

const MAGIC: u16 = 0xeb9f;
const HEADER_LEN: usize = 24;

/// Loads the structs and unions of a raw BTF file or of the `.BTF` section of
/// an ELF file.
pub fn load_btf(path: &Path) -> Result<TypeDb, Diagnostic> {
    let bytes = read(path)?;
    parse_btf(&bytes, path)
}

/// Loads split BTF (a module's `/sys/kernel/btf/MODULE`) on top of its base
/// (`/sys/kernel/btf/vmlinux`). The database holds both.
pub fn load_btf_split(base: &Path, path: &Path) -> Result<TypeDb, Diagnostic> {
    let base_bytes = read(base)?;
    let split_bytes = read(path)?;
    parse_btf_split(&base_bytes, base, &split_bytes, path)
}

/// [`load_btf_split`] from memory; `base_source` and `source` name the blobs.
pub fn parse_btf_split(
    base_bytes: &[u8],
    base_source: &Path,
    bytes: &[u8],
    source: &Path,
) -> Result<TypeDb, Diagnostic> {
    let base_blob = blob(base_bytes).map_err(|m| failure(base_source, m))?;
    let split_blob = blob(bytes).map_err(|m| failure(source, m))?;
    let base_parts = sections(base_blob).map_err(|m| failure(base_source, m))?;
    let split_parts = sections(split_blob).map_err(|m| failure(source, m))?;
    let mut strings = Vec::with_capacity(base_parts.strings.len() + split_parts.strings.len());
    strings.extend_from_slice(base_parts.strings);
    strings.extend_from_slice(split_parts.strings);
    let mut g = empty_graph(Cow::Owned(strings));
    parse_types(&base_parts, &mut g).map_err(|m| failure(base_source, m))?;
    parse_types(&split_parts, &mut g).map_err(|m| failure(source, m))?;
    finish(&mut g).map_err(|m| failure(source, m))?;
    crate::typedb::build(&g, source).map_err(|m| failure(source, m))
}

/// Parses BTF from memory: raw BTF or an ELF file with a `.BTF` section.
/// `source` names the data in errors and in [`TypeDb::source`].
pub fn parse_btf(bytes: &[u8], source: &Path) -> Result<TypeDb, Diagnostic> {
    let data = blob(bytes).map_err(|m| failure(source, m))?;
    let parts = sections(data).map_err(|m| failure(source, m))?;
    let mut g = empty_graph(Cow::Borrowed(parts.strings));
    parse_types(&parts, &mut g).map_err(|m| failure(source, m))?;
    finish(&mut g).map_err(|m| failure(source, m))?;
    crate::typedb::build(&g, source).map_err(|m| failure(source, m))
}

/// The file's bytes, within [`crate::source::bounded::OBJECT_LIMIT`].
fn read(path: &Path) -> Result<Vec<u8>, Diagnostic> {
    use crate::source::bounded;
    bounded::read(path, bounded::OBJECT_LIMIT).map_err(|e| {
        Diagnostic::new(format!("cannot read the BTF: {e}"))
            .in_file(path)
            .help("give the path of a BTF file (/sys/kernel/btf/vmlinux) or an object built with -gbtf")
    })
}

fn failure(path: &Path, message: String) -> Diagnostic {
    Diagnostic::new(message)
        .in_file(path)
        .help("give raw BTF (/sys/kernel/btf/vmlinux) or an ELF object with a .BTF section (gcc -gbtf, pahole -J)")
}

/// The BTF bytes: the file itself, or its ELF `.BTF` section.
fn blob(bytes: &[u8]) -> Result<&[u8], String> {
    if !bytes.starts_with(b"\x7fELF") {
        return Ok(bytes);
    }
    use object::{Object, ObjectSection};
    let file = object::File::parse(bytes).map_err(|e| format!("not a readable ELF file: {e}"))?;
    let section = file
        .section_by_name(".BTF")
        .ok_or_else(|| "the ELF file has no .BTF section (build it with gcc -gbtf, or add BTF with pahole -J; for -g objects use DWARF)".to_string())?;
    section
        .data()
        .map_err(|e| format!("cannot read the .BTF section: {e}"))
}

/// The parts of a BTF blob.
struct Parts<'a> {
    swap: bool,
    types: &'a [u8],
    strings: &'a [u8],
}

fn sections(data: &[u8]) -> Result<Parts<'_>, String> {
    if data.len() < HEADER_LEN {
        return Err(format!(
            "not BTF: {} bytes, shorter than the {HEADER_LEN}-byte BTF header",
            data.len()
        ));
    }
    let magic = u16::from_ne_bytes([data[0], data[1]]);
    let swap = match magic {
        MAGIC => false,
        m if m == MAGIC.swap_bytes() => true,
        _ => {
            return Err(format!(
                "not BTF: magic {:02x}{:02x}, expected eb9f",
                data[1], data[0]
            ))
        }
    };
    if data[2] != 1 {
        return Err(format!(
            "BTF version {} is not supported (only version 1)",
            data[2]
        ));
    }
    let word = |at: usize| read_u32(data, at, swap).unwrap_or(0) as usize;
    let header_len = word(4);
    let (type_off, type_len, str_off, str_len) = (word(8), word(12), word(16), word(20));
    if header_len < HEADER_LEN || header_len > data.len() {
        return Err(format!(
            "corrupt BTF header: header length {header_len} of a {}-byte file",
            data.len()
        ));
    }
    let body = &data[header_len..];
    let section = |off: usize, len: usize, what: &str| {
        off.checked_add(len)
            .and_then(|end| body.get(off..end))
            .ok_or_else(|| format!("truncated BTF: the {what} section ({len} bytes at {off}) ends past the end of the data ({} bytes)", body.len()))
    };
    let types = section(type_off, type_len, "type")?;
    let strings = section(str_off, str_len, "string")?;
    if strings.last().is_some_and(|&b| b != 0) {
        return Err("corrupt BTF: the string section does not end with NUL".into());
    }
    Ok(Parts {
        swap,
        types,
        strings,
    })
}

fn read_u32(data: &[u8], at: usize, swap: bool) -> Option<u32> {
    let bytes: [u8; 4] = data.get(at..at.checked_add(4)?)?.try_into().ok()?;
    let v = u32::from_ne_bytes(bytes);
    Some(if swap { v.swap_bytes() } else { v })
}

fn empty_graph(strings: Cow<'_, [u8]>) -> TypeGraph<'_> {
    TypeGraph {
        strings,
        nodes: vec![Node::Void],
        members: Vec::new(),
        params: Vec::new(),
        pointer_size: 8,
        infer_align: true,
        may_repeat: false,
    }
}

/// BTF kinds (`BTF_KIND_*`).
mod kind {
    pub const INT: u32 = 1;
    pub const PTR: u32 = 2;
    pub const ARRAY: u32 = 3;
    pub const STRUCT: u32 = 4;
    pub const UNION: u32 = 5;
    pub const ENUM: u32 = 6;
    pub const FWD: u32 = 7;
    pub const TYPEDEF: u32 = 8;
    pub const VOLATILE: u32 = 9;
    pub const CONST: u32 = 10;
    pub const RESTRICT: u32 = 11;
    pub const FUNC: u32 = 12;
    pub const FUNC_PROTO: u32 = 13;
    pub const VAR: u32 = 14;
    pub const DATASEC: u32 = 15;
    pub const FLOAT: u32 = 16;
    pub const DECL_TAG: u32 = 17;
    pub const TYPE_TAG: u32 = 18;
    pub const ENUM64: u32 = 19;
}

/// Appends the types of `parts` to `g` (ids continue from `g.nodes.len()`).
fn parse_types(parts: &Parts<'_>, g: &mut TypeGraph<'_>) -> Result<(), String> {
    let data = parts.types;
    let swap = parts.swap;
    let word = |at: usize| read_u32(data, at, swap);
    g.nodes.reserve(data.len() / 16);
    // Members of structs without kind_flag: their bitfield width lives in the INT type.
    let mut int_encoded: Vec<std::ops::Range<usize>> = Vec::new();
    let mut ints: Vec<(TypeId, u32)> = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let id = g.nodes.len();
        let record = pos;
        let truncated =
            || format!("truncated BTF: type {id} at byte {record} of the type section is cut off");
        let (name, info, size_or_type) = match (word(pos), word(pos + 4), word(pos + 8)) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => return Err(truncated()),
        };
        pos += 12;
        let vlen = (info & 0xffff) as usize;
        let kind = (info >> 24) & 0x1f;
        let kind_flag = info >> 31 != 0;
        let trailer = match kind {
            kind::INT | kind::VAR | kind::DECL_TAG => 4,
            kind::ARRAY => 12,
            kind::STRUCT | kind::UNION | kind::DATASEC | kind::ENUM64 => 12 * vlen,
            kind::ENUM | kind::FUNC_PROTO => 8 * vlen,
            kind::PTR | kind::FWD | kind::TYPEDEF | kind::VOLATILE | kind::CONST | kind::RESTRICT
            | kind::FUNC | kind::FLOAT | kind::TYPE_TAG => 0,
            other => {
                return Err(format!(
                    "unknown BTF kind {other} at type {id}: this reader knows kinds 1 to 19 (up to ENUM64)"
                ))
            }
        };
        let body = pos
            .checked_add(trailer)
            .and_then(|end| data.get(pos..end))
            .ok_or_else(truncated)?;
        let at = |i: usize| read_u32(body, i, swap).unwrap_or(0);
        check_scalar_size(kind, size_or_type, vlen, id)?;
        let node = match kind {
            kind::INT => {
                let encoding = at(0);
                let (bit_offset, bits) = ((encoding >> 16) & 0xff, encoding & 0xff);
                if bit_offset != 0 || u64::from(bits) != u64::from(size_or_type) * 8 {
                    ints.push((id as TypeId, encoding));
                }
                Node::Int {
                    name,
                    size: size_or_type,
                }
            }
            kind::PTR => Node::Ptr { to: size_or_type },
            kind::ARRAY => Node::Array {
                elem: at(0),
                count: u64::from(at(8)),
            },
            kind::STRUCT | kind::UNION => {
                let start = g.members.len();
                for i in 0..vlen {
                    let offset = at(12 * i + 8);
                    let (bit_offset, bit_size) = if kind_flag {
                        (offset & 0x00ff_ffff, offset >> 24)
                    } else {
                        (offset, 0)
                    };
                    g.members.push(RawMember {
                        name: at(12 * i),
                        ty: at(12 * i + 4),
                        bit_offset: u64::from(bit_offset),
                        bit_size,
                        align: 0,
                    });
                }
                if !kind_flag {
                    int_encoded.push(start..g.members.len());
                }
                Node::Aggregate {
                    union: kind == kind::UNION,
                    name,
                    size: u64::from(size_or_type),
                    members: Span {
                        start: start as u32,
                        len: vlen as u32,
                    },
                    align: 0,
                }
            }
            kind::ENUM | kind::ENUM64 => Node::Enum {
                name,
                size: size_or_type,
            },
            kind::FWD => Node::Fwd {
                name,
                union: kind_flag,
            },
            kind::TYPEDEF => Node::Typedef {
                name,
                to: size_or_type,
                align: 0,
            },
            kind::VOLATILE => Node::Qual {
                qual: Qualifier::Volatile,
                to: size_or_type,
            },
            kind::CONST => Node::Qual {
                qual: Qualifier::Const,
                to: size_or_type,
            },
            kind::RESTRICT => Node::Qual {
                qual: Qualifier::Restrict,
                to: size_or_type,
            },
            kind::TYPE_TAG => Node::Qual {
                qual: Qualifier::TypeTag,
                to: size_or_type,
            },
            kind::FUNC_PROTO => {
                let start = g.params.len();
                let mut variadic = false;
                for i in 0..vlen {
                    let (param_name, ty) = (at(8 * i), at(8 * i + 4));
                    if i + 1 == vlen && param_name == 0 && ty == 0 {
                        variadic = true;
                    } else {
                        g.params.push(ty);
                    }
                }
                let len = (g.params.len() - start) as u32;
                Node::Func {
                    ret: size_or_type,
                    params: Span {
                        start: start as u32,
                        len,
                    },
                    variadic,
                }
            }
            kind::FLOAT => Node::Float {
                name,
                size: size_or_type,
            },
            _ => Node::NotAType,
        };
        g.nodes.push(node);
        pos += trailer;
    }
    apply_int_bitfields(g, &int_encoded, &ints);
    Ok(())
}

/// The sizes the kernel's BTF verifier accepts for integers (1 to 16 bytes,
/// a power of two), floats (2, 4, 8, 12, 16) and enums (1, 2, 4, 8): a
/// larger one is corrupt, and every later analysis that works per byte or
/// bit of a base type would take that long.
/// A forward-declared enum (no values) may state size 0.
fn check_scalar_size(kind: u32, size: u32, vlen: usize, id: usize) -> Result<(), String> {
    let (ok, what) = match kind {
        kind::INT => (size.is_power_of_two() && size <= 16, "an INT"),
        kind::FLOAT => (matches!(size, 2 | 4 | 8 | 12 | 16), "a FLOAT"),
        kind::ENUM | kind::ENUM64 => (
            (size.is_power_of_two() && size <= 8) || (size == 0 && vlen == 0),
            "an ENUM",
        ),
        _ => (true, ""),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "corrupt BTF: type {id} is {what} of {size} bytes (integers take 1 to 16 bytes, enums 1 to 8, floats 2 to 16)"
        ))
    }
}

/// Structs without kind_flag encode a bitfield in its `INT` type (bits and
/// bit offset in the INT's trailer).
fn apply_int_bitfields(
    g: &mut TypeGraph<'_>,
    ranges: &[std::ops::Range<usize>],
    ints: &[(TypeId, u32)],
) {
    if ints.is_empty() {
        return;
    }
    let encoding: std::collections::HashMap<TypeId, u32> = ints.iter().copied().collect();
    for range in ranges {
        for m in &mut g.members[range.clone()] {
            if let Some(&e) = encoding.get(&m.ty) {
                m.bit_offset += u64::from((e >> 16) & 0xff);
                m.bit_size = e & 0xff;
            }
        }
    }
}

/// Checks references and sets the pointer size.
fn finish(g: &mut TypeGraph<'_>) -> Result<(), String> {
    let count = g.nodes.len() as u64;
    let strings = g.strings.len() as u64;
    for (id, node) in g.nodes.iter().enumerate() {
        let mut bad = None;
        g.references(node, |t| {
            if u64::from(t) >= count && bad.is_none() {
                bad = Some(t);
            }
        });
        if let Some(t) = bad {
            return Err(format!(
                "corrupt or split BTF: type {id} refers to type {t}, but there are only {} types (module BTF needs its base: load_btf_split(vmlinux, module))",
                count - 1
            ));
        }
        let name = match *node {
            Node::Int { name, .. }
            | Node::Float { name, .. }
            | Node::Aggregate { name, .. }
            | Node::Enum { name, .. }
            | Node::Fwd { name, .. }
            | Node::Typedef { name, .. } => name,
            _ => 0,
        };
        if u64::from(name) >= strings.max(1) {
            return Err(format!("corrupt BTF: the name of type {id} is at string offset {name}, past the {strings}-byte string section"));
        }
    }
    if let Some(m) = g
        .members
        .iter()
        .find(|m| u64::from(m.name) >= strings.max(1))
    {
        return Err(format!("corrupt BTF: a member name is at string offset {}, past the {strings}-byte string section", m.name));
    }
    let long = g.nodes.iter().find_map(|n| match *n {
        Node::Int { name, size }
            if matches!(
                g.name(name),
                "long int" | "long unsigned int" | "unsigned long" | "long"
            ) =>
        {
            Some(size)
        }
        _ => None,
    });
    if let Some(size) = long.filter(|&s| s == 4 || s == 8) {
        g.pointer_size = u64::from(size);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BTF blob under construction.
    struct Blob {
        types: Vec<u8>,
        strings: Vec<u8>,
        /// Offset of this blob's strings in the combined string space (split BTF).
        string_base: u32,
        big_endian: bool,
    }

    impl Blob {
        fn new(big_endian: bool) -> Self {
            Blob {
                types: Vec::new(),
                strings: vec![0],
                string_base: 0,
                big_endian,
            }
        }

        fn split_of(base: &Blob) -> Self {
            Blob {
                types: Vec::new(),
                strings: Vec::new(),
                string_base: base.strings.len() as u32,
                big_endian: false,
            }
        }

        fn word(&mut self, v: u32) -> &mut Self {
            let bytes = if self.big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            };
            self.types.extend_from_slice(&bytes);
            self
        }

        fn name(&mut self, s: &str) -> u32 {
            let at = self.string_base + self.strings.len() as u32;
            self.strings.extend_from_slice(s.as_bytes());
            self.strings.push(0);
            at
        }

        /// A type record: name, kind, vlen, kind_flag, size or type.
        fn ty(
            &mut self,
            name: &str,
            kind: u32,
            vlen: u32,
            kind_flag: bool,
            size_or_type: u32,
        ) -> &mut Self {
            let name = if name.is_empty() { 0 } else { self.name(name) };
            let info = (u32::from(kind_flag) << 31) | (kind << 24) | vlen;
            self.word(name).word(info).word(size_or_type)
        }

        fn member(&mut self, name: &str, ty: u32, offset: u32) -> &mut Self {
            let name = self.name(name);
            self.word(name).word(ty).word(offset)
        }

        fn bytes(&self) -> Vec<u8> {
            let w = |v: u32| {
                if self.big_endian {
                    v.to_be_bytes()
                } else {
                    v.to_le_bytes()
                }
            };
            let mut out = Vec::new();
            out.extend_from_slice(&if self.big_endian {
                MAGIC.to_be_bytes()
            } else {
                MAGIC.to_le_bytes()
            });
            out.extend_from_slice(&[1, 0]);
            let (types, strings) = (self.types.len() as u32, self.strings.len() as u32);
            for v in [24, 0, types, types, strings] {
                out.extend_from_slice(&w(v));
            }
            out.extend_from_slice(&self.types);
            out.extend_from_slice(&self.strings);
            out
        }
    }

    /// Types 1..: int, a 3-bit int, a 5-bit int at bit offset 2 (INT
    /// encoding), struct bits { a:3; b:5 } without kind_flag.
    fn int_bitfields(big_endian: bool) -> Vec<u8> {
        let mut b = Blob::new(big_endian);
        b.ty("unsigned int", kind::INT, 0, false, 4).word(32);
        b.ty("unsigned int", kind::INT, 0, false, 4).word(3);
        b.ty("unsigned int", kind::INT, 0, false, 4)
            .word((2 << 16) | 5);
        b.ty("bits", kind::STRUCT, 3, false, 8);
        b.member("a", 2, 0).member("b", 3, 1).member("c", 1, 32);
        b.bytes()
    }

    #[test]
    fn int_encoded_bitfields_without_kind_flag() {
        let db = parse_btf(&int_bitfields(false), Path::new("bits.btf")).unwrap();
        let bits = db.find("bits").unwrap();
        let facts: Vec<_> = bits
            .members
            .iter()
            .map(|m| (m.bit_offset, m.bit_size, m.offset))
            .collect();
        assert_eq!(
            facts,
            [
                (Some(0), Some(3), 0),
                (Some(3), Some(5), 0),
                (None, None, 4)
            ]
        );
        assert_eq!(bits.members[0].ty, "unsigned int");
    }

    #[test]
    fn big_endian_blobs_read_the_same() {
        let little = parse_btf(&int_bitfields(false), Path::new("le.btf")).unwrap();
        let big = parse_btf(&int_bitfields(true), Path::new("be.btf")).unwrap();
        assert_eq!(little.find("bits"), big.find("bits"));
    }

    #[test]
    fn every_kind_is_read() {
        let mut b = Blob::new(false);
        b.ty("int", kind::INT, 0, false, 4).word(32); // 1
        b.ty("", kind::FUNC_PROTO, 2, false, 1); // 2: int (*)(int, ...)
        b.word(0).word(1).word(0).word(0);
        b.ty("", kind::PTR, 0, false, 2); // 3
        b.ty("long double", kind::FLOAT, 0, false, 16); // 4
        b.ty("user", kind::TYPE_TAG, 0, false, 1); // 5
        b.ty("", kind::PTR, 0, false, 5); // 6: int __user *
        b.ty("big", kind::ENUM64, 1, true, 8); // 7
        b.word(0).word(1).word(1);
        b.ty("u", kind::FWD, 0, true, 0); // 8: union u
        b.ty("", kind::PTR, 0, false, 8); // 9
        b.ty("", kind::VOLATILE, 0, false, 1); // 10
        b.ty("", kind::RESTRICT, 0, false, 6); // 11: int *restrict
        b.ty("small", kind::ENUM, 1, false, 4); // 12
        b.word(0).word(0);
        b.ty("all", kind::STRUCT, 8, false, 64); // 13
        b.member("call", 3, 0)
            .member("ld", 4, 128)
            .member("user", 6, 256)
            .member("e", 7, 320);
        b.member("fwd", 9, 384)
            .member("v", 10, 448)
            .member("r", 11, 0)
            .member("s", 12, 480);
        b.ty("f", kind::FUNC, 0, false, 2); // 14
        b.ty("x", kind::VAR, 0, false, 13).word(1); // 15
        b.ty("tag", kind::DECL_TAG, 0, false, 13).word(u32::MAX); // 16
        b.ty(".data", kind::DATASEC, 1, false, 64)
            .word(15)
            .word(0)
            .word(64); // 17
        let db = parse_btf(&b.bytes(), Path::new("kinds.btf")).unwrap();
        let all = db.find("all").unwrap();
        let types: Vec<(&str, u64, u64)> = all
            .members
            .iter()
            .map(|m| (m.ty.as_str(), m.size, m.align))
            .collect();
        assert_eq!(
            types,
            [
                ("int (*)(int, ...)", 8, 8),
                ("long double", 16, 16),
                ("int *", 8, 8),
                ("enum big", 8, 8),
                ("union u *", 8, 8),
                ("volatile int", 4, 4),
                ("int *restrict", 8, 8),
                ("enum small", 4, 4),
            ]
        );
        assert_eq!(db.len(), 1);
    }

    #[test]
    fn split_btf_extends_its_base() {
        let mut base = Blob::new(false);
        base.ty("int", kind::INT, 0, false, 4).word(32); // 1
        base.ty("base_s", kind::STRUCT, 1, false, 4)
            .member("x", 1, 0); // 2
        let mut split = Blob::split_of(&base);
        split.ty("", kind::PTR, 0, false, 1); // 3
        split
            .ty("mod_s", kind::STRUCT, 2, false, 16)
            .member("b", 2, 0)
            .member("p", 3, 64); // 4
        let (base_bytes, split_bytes) = (base.bytes(), split.bytes());
        let db = parse_btf_split(
            &base_bytes,
            Path::new("vmlinux"),
            &split_bytes,
            Path::new("mod"),
        )
        .unwrap();
        let module = db.find("mod_s").unwrap();
        assert_eq!(
            module.members[0].aggregate.as_deref(),
            Some("struct base_s")
        );
        assert_eq!(module.members[1].ty, "int *");
        assert_eq!(db.embedders("base_s").len(), 1);
        let alone = parse_btf(&split_bytes, Path::new("mod")).unwrap_err();
        assert!(alone.to_string().contains("split"), "{alone}");
    }

    #[test]
    fn unknown_kinds_and_bad_headers_are_errors() {
        let mut b = Blob::new(false);
        b.ty("what", 20, 0, false, 0);
        let err = parse_btf(&b.bytes(), Path::new("new.btf"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown BTF kind 20"), "{err}");
        let mut bytes = int_bitfields(false);
        bytes[2] = 2;
        let err = parse_btf(&bytes, Path::new("v2.btf"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("version 2"), "{err}");
        let mut bytes = int_bitfields(false);
        let last = bytes.len() - 1;
        bytes[last] = b'x';
        let err = parse_btf(&bytes, Path::new("nul.btf"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("NUL"), "{err}");
    }
}
