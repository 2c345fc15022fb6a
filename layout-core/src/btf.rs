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
    let base_blob = blob(&base_bytes).map_err(|m| failure(base, m))?;
    let split_blob = blob(&split_bytes).map_err(|m| failure(path, m))?;
    let base_parts = sections(base_blob).map_err(|m| failure(base, m))?;
    let split_parts = sections(split_blob).map_err(|m| failure(path, m))?;
    let mut strings = Vec::with_capacity(base_parts.strings.len() + split_parts.strings.len());
    strings.extend_from_slice(base_parts.strings);
    strings.extend_from_slice(split_parts.strings);
    let mut g = empty_graph(Cow::Owned(strings));
    parse_types(&base_parts, &mut g).map_err(|m| failure(base, m))?;
    parse_types(&split_parts, &mut g).map_err(|m| failure(path, m))?;
    finish(&mut g).map_err(|m| failure(path, m))?;
    Ok(crate::typedb::build(&g, path))
}

/// Parses BTF from memory: raw BTF or an ELF file with a `.BTF` section.
/// `source` names the data in errors and in [`TypeDb::source`].
pub fn parse_btf(bytes: &[u8], source: &Path) -> Result<TypeDb, Diagnostic> {
    let data = blob(bytes).map_err(|m| failure(source, m))?;
    let parts = sections(data).map_err(|m| failure(source, m))?;
    let mut g = empty_graph(Cow::Borrowed(parts.strings));
    parse_types(&parts, &mut g).map_err(|m| failure(source, m))?;
    finish(&mut g).map_err(|m| failure(source, m))?;
    Ok(crate::typedb::build(&g, source))
}

fn read(path: &Path) -> Result<Vec<u8>, Diagnostic> {
    std::fs::read(path).map_err(|e| {
        Diagnostic::new(format!("cannot read {}: {e}", path.display()))
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
