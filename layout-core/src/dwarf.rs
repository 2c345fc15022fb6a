//! DWARF reader: the structs and unions of an ELF file built with `-g`
//! (objects, executables, a kernel `vmlinux`), via gimli.
//!
//! Every unit's type entries become one type graph (see [`crate::typedb`]);
//! identical aggregates repeated in several units are kept once. Relocatable
//! objects (`gcc -g -c`) get their `.debug_*` relocations applied first.
//! `DW_AT_alignment` gives explicit alignments (gcc emits it for every
//! `aligned` attribute, and for structs and members that inherit one, except
//! with `-gdwarf-4 -gstrict-dwarf`; other producers from DWARF 5 on); when a
//! unit may lack it (DWARF 4 or older from a non-GNU producer or strict gcc),
//! alignment is also inferred from offsets as for BTF and
//! [`TypeDb::align_inferred`] says so.
//!
//! Type units (`-fdebug-types-section`, DWARF 4 `.debug_types` or DWARF 5)
//! are followed by signature. Not read: compressed debug sections
//! (decompress them with `objcopy --decompress-debug-sections`), split DWARF
//! (`.dwo`), C++ base classes.

use crate::error::Diagnostic;
use crate::typedb::graph::{Node, Qualifier, RawMember, Span, TypeGraph, TypeId};
pub use crate::typedb::TypeDb;
use gimli::{constants as dw, AttributeValue, EndianSlice, RunTimeEndian};
use object::{Object, ObjectSection};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

type Reader<'a> = EndianSlice<'a, RunTimeEndian>;

/// Marks offsets in `.debug_types` (DWARF 4 type units) apart from `.debug_info` ones.
const DEBUG_TYPES: u64 = 1 << 63;

/// Loads the structs and unions of the DWARF in an ELF file.
pub fn load_dwarf(path: &Path) -> Result<TypeDb, Diagnostic> {
    use crate::source::bounded;
    let bytes = bounded::read(path, bounded::OBJECT_LIMIT).map_err(|e| {
        Diagnostic::new(format!("cannot read the DWARF: {e}"))
            .in_file(path)
            .help("give the path of an object or executable built with -g")
    })?;
    parse_dwarf(&bytes, path)
}

/// Parses the DWARF of an ELF file in memory; `source` names it in errors and
/// in [`TypeDb::source`].
pub fn parse_dwarf(bytes: &[u8], source: &Path) -> Result<TypeDb, Diagnostic> {
    let fail = |message: String| {
        Diagnostic::new(message)
            .in_file(source)
            .help("give an ELF object or executable built with -g (gcc -g -c file.c)")
    };
    let file =
        object::File::parse(bytes).map_err(|e| fail(format!("not a readable ELF file: {e}")))?;
    let sections = load_sections(&file).map_err(fail)?;
    if sections.get(".debug_info").is_none_or(|d| d.is_empty()) {
        return Err(fail(
            "no DWARF debug info: the file has no .debug_info section".into(),
        ));
    }
    let endian = if file.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let dwarf = gimli::Dwarf::load(|id| -> Result<Reader<'_>, ()> {
        let data = sections.get(id.name()).map_or(&[][..], |d| &d[..]);
        Ok(EndianSlice::new(data, endian))
    })
    .map_err(|()| fail("cannot load the DWARF sections".into()))?;
    let mut reader = GraphReader::new(endian);
    reader
        .read(&dwarf)
        .map_err(|e| fail(format!("corrupt DWARF: {e}")))?;
    crate::typedb::build(&reader.graph, source).map_err(fail)
}

/// The `.debug_*` sections, decompressed and (in relocatable objects) relocated.
fn load_sections<'d>(file: &object::File<'d>) -> Result<HashMap<String, Cow<'d, [u8]>>, String> {
    let relocatable = file.kind() == object::ObjectKind::Relocatable;
    let mut out = HashMap::new();
    for section in file.sections() {
        let Ok(name) = section.name() else { continue };
        if !name.starts_with(".debug_") {
            continue;
        }
        let data = section.uncompressed_data().map_err(|e| {
            format!("cannot read section {name}: {e} (compressed debug sections: decompress them with objcopy --decompress-debug-sections)")
        })?;
        let data = if relocatable {
            relocate(file, &section, data)
        } else {
            data
        };
        // gcc -g3 puts .debug_macro in COMDAT groups too; those are not read.
        let read = matches!(name, ".debug_info" | ".debug_types" | ".debug_abbrev")
            || name.starts_with(".debug_str");
        if out.insert(name.to_string(), data).is_some() && read {
            return Err(format!(
                "the file has several {name} sections (type units in COMDAT groups, from -fdebug-types-section): link it first, or build it without -fdebug-types-section"
            ));
        }
    }
    Ok(out)
}

/// Applies the absolute relocations DWARF uses (string and section offsets)
/// to a section of a relocatable object; others are left alone.
fn relocate<'d>(
    file: &object::File<'d>,
    section: &object::Section<'d, '_>,
    data: Cow<'d, [u8]>,
) -> Cow<'d, [u8]> {
    let relocations: Vec<_> = section.relocations().collect();
    if relocations.is_empty() {
        return data;
    }
    let mut data = data.into_owned();
    let little = file.is_little_endian();
    for (offset, relocation) in relocations {
        let width = usize::from(relocation.size() / 8);
        let mut map = object::read::RelocationMap::default();
        if map.add(file, offset, relocation).is_err() {
            continue;
        }
        let Some(bytes) = usize::try_from(offset)
            .ok()
            .and_then(|at| data.get_mut(at..at.checked_add(width)?))
        else {
            continue;
        };
        let value = match (width, little) {
            (4, true) => u64::from(u32::from_le_bytes(bytes.try_into().unwrap_or([0; 4]))),
            (4, false) => u64::from(u32::from_be_bytes(bytes.try_into().unwrap_or([0; 4]))),
            (8, true) => u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8])),
            (8, false) => u64::from_be_bytes(bytes.try_into().unwrap_or([0; 8])),
            _ => continue,
        };
        let value = map.relocate(offset, value);
        match (width, little) {
            (4, true) => bytes.copy_from_slice(&(value as u32).to_le_bytes()),
            (4, false) => bytes.copy_from_slice(&(value as u32).to_be_bytes()),
            (8, true) => bytes.copy_from_slice(&value.to_le_bytes()),
            _ => bytes.copy_from_slice(&value.to_be_bytes()),
        }
    }
    Cow::Owned(data)
}

/// An entry whose children are being read.
enum Open {
    Aggregate {
        id: TypeId,
        members: Vec<RawMember>,
    },
    Array {
        id: TypeId,
        elem: TypeId,
        dims: Vec<u64>,
    },
    Func {
        id: TypeId,
        ret: TypeId,
        params: Vec<TypeId>,
        variadic: bool,
    },
    /// Anything else with children (units, functions, lexical blocks, enums).
    Other,
}

struct GraphReader {
    graph: TypeGraph<'static>,
    /// Type id of each type entry, by section offset ([`DEBUG_TYPES`] set
    /// for `.debug_types`).
    ids: HashMap<u64, TypeId>,
    /// Section offset of the type of each type unit, by signature.
    signatures: HashMap<u64, u64>,
    /// Interned names.
    names: HashMap<Vec<u8>, u32>,
    little_endian: bool,
}

impl GraphReader {
    fn new(endian: RunTimeEndian) -> Self {
        GraphReader {
            graph: TypeGraph {
                strings: Cow::Owned(vec![0]),
                nodes: vec![Node::Void],
                members: Vec::new(),
                params: Vec::new(),
                pointer_size: 8,
                infer_align: false,
                may_repeat: false,
            },
            ids: HashMap::new(),
            signatures: HashMap::new(),
            names: HashMap::new(),
            little_endian: matches!(endian, RunTimeEndian::Little),
        }
    }

    /// The type id of the entry at `.debug_info` offset `offset`, allocated on
    /// first mention (the entry may come later).
    fn id_at(&mut self, offset: u64) -> TypeId {
        if let Some(&id) = self.ids.get(&offset) {
            return id;
        }
        let id = self.graph.nodes.len() as TypeId;
        self.graph.nodes.push(Node::Void);
        self.ids.insert(offset, id);
        id
    }

    fn intern(&mut self, name: &[u8]) -> u32 {
        if name.is_empty() {
            return 0;
        }
        if let Some(&at) = self.names.get(name) {
            return at;
        }
        let strings = self.graph.strings.to_mut();
        let at = strings.len() as u32;
        strings.extend_from_slice(name);
        strings.push(0);
        self.names.insert(name.to_vec(), at);
        at
    }

    fn read(&mut self, dwarf: &gimli::Dwarf<Reader<'_>>) -> gimli::Result<()> {
        self.find_type_units(dwarf)?;
        let mut unit_count = 0;
        let mut pointer_size = None;
        let mut units = dwarf.units();
        while let Some(header) = units.next()? {
            let unit = dwarf.unit(header)?;
            unit_count += 1;
            pointer_size.get_or_insert(u64::from(unit.header.address_size()));
            self.read_unit(dwarf, &unit, 0)?;
        }
        let mut type_units = dwarf.type_units();
        while let Some(header) = type_units.next()? {
            let unit = dwarf.unit(header)?;
            unit_count += 1;
            self.read_unit(dwarf, &unit, DEBUG_TYPES)?;
        }
        self.graph.pointer_size = pointer_size.unwrap_or(8);
        self.graph.may_repeat = unit_count > 1;
        Ok(())
    }

    /// Where each type unit's type is (`-fdebug-types-section`: members then
    /// refer to types by signature).
    fn find_type_units(&mut self, dwarf: &gimli::Dwarf<Reader<'_>>) -> gimli::Result<()> {
        let mut add = |header: &gimli::UnitHeader<Reader<'_>>, section: u64| {
            if let gimli::UnitType::Type {
                type_signature,
                type_offset,
            } = header.type_()
            {
                let at = type_offset.to_unit_section_offset(header).0 as u64 | section;
                self.signatures.insert(type_signature.0, at);
            }
        };
        let mut units = dwarf.units();
        while let Some(header) = units.next()? {
            add(&header, 0);
        }
        let mut type_units = dwarf.type_units();
        while let Some(header) = type_units.next()? {
            add(&header, DEBUG_TYPES);
        }
        Ok(())
    }

    /// Reads the entries of one unit; `section` is 0 for `.debug_info` and
    /// [`DEBUG_TYPES`] for `.debug_types`.
    fn read_unit(
        &mut self,
        dwarf: &gimli::Dwarf<Reader<'_>>,
        unit: &gimli::Unit<Reader<'_>>,
        section: u64,
    ) -> gimli::Result<()> {
        let mut stack: Vec<(isize, Open)> = Vec::new();
        let mut entries = unit.entries();
        while let Some(entry) = entries.next_dfs()? {
            let depth = entry.depth();
            while stack.last().is_some_and(|(d, _)| *d >= depth) {
                if let Some((_, open)) = stack.pop() {
                    self.close(open);
                }
            }
            let offset = entry.offset().to_unit_section_offset(&unit.header).0 as u64 | section;
            let tag = entry.tag();
            if tag == dw::DW_TAG_compile_unit || tag == dw::DW_TAG_partial_unit {
                self.note_producer(dwarf, unit, entry);
            }
            let name = match entry.attr_value(dw::DW_AT_name) {
                Some(v) => match dwarf.attr_string(unit, v) {
                    Ok(s) => self.intern(s.slice()),
                    Err(_) => 0,
                },
                None => 0,
            };
            // A stub for a type that lives in a type unit: an alias of it.
            if let Some(AttributeValue::DebugTypesRef(signature)) =
                entry.attr_value(dw::DW_AT_signature)
            {
                if let Some(&at) = self.signatures.get(&signature.0) {
                    let (id, to) = (self.id_at(offset), self.id_at(at));
                    if id != to {
                        self.graph.nodes[id as usize] = Node::Qual {
                            qual: Qualifier::TypeTag,
                            to,
                        };
                    }
                }
                if entry.has_children() {
                    stack.push((depth, Open::Other));
                }
                continue;
            }
            let target = self.type_ref(unit, section, entry.attr_value(dw::DW_AT_type));
            let byte_size = udata(entry.attr_value(dw::DW_AT_byte_size));
            let align =
                udata(entry.attr_value(dw::DW_AT_alignment)).map_or(0, |a| a.min(1 << 30) as u32);
            let declaration = matches!(
                entry.attr_value(dw::DW_AT_declaration),
                Some(AttributeValue::Flag(true))
            );
            let opened = match tag {
                dw::DW_TAG_structure_type | dw::DW_TAG_union_type | dw::DW_TAG_class_type => {
                    let id = self.id_at(offset);
                    let union = tag == dw::DW_TAG_union_type;
                    if declaration {
                        self.graph.nodes[id as usize] = Node::Fwd { name, union };
                        Open::Other
                    } else {
                        self.graph.nodes[id as usize] = Node::Aggregate {
                            union,
                            name,
                            size: byte_size.unwrap_or(0),
                            members: Span::default(),
                            align,
                        };
                        Open::Aggregate {
                            id,
                            members: Vec::new(),
                        }
                    }
                }
                dw::DW_TAG_member => {
                    if let Some(member) = self.member(entry, name, target, align) {
                        if let Some((_, Open::Aggregate { members, .. })) = stack.last_mut() {
                            members.push(member);
                        }
                    }
                    Open::Other
                }
                dw::DW_TAG_array_type => {
                    let id = self.id_at(offset);
                    Open::Array {
                        id,
                        elem: target,
                        dims: Vec::new(),
                    }
                }
                dw::DW_TAG_subrange_type => {
                    if let Some((_, Open::Array { dims, .. })) = stack.last_mut() {
                        dims.push(subrange_count(entry));
                    }
                    Open::Other
                }
                dw::DW_TAG_subroutine_type => {
                    let id = self.id_at(offset);
                    Open::Func {
                        id,
                        ret: target,
                        params: Vec::new(),
                        variadic: false,
                    }
                }
                dw::DW_TAG_formal_parameter => {
                    if let Some((_, Open::Func { params, .. })) = stack.last_mut() {
                        params.push(target);
                    }
                    Open::Other
                }
                dw::DW_TAG_unspecified_parameters => {
                    if let Some((_, Open::Func { variadic, .. })) = stack.last_mut() {
                        *variadic = true;
                    }
                    Open::Other
                }
                _ => {
                    if let Some(node) =
                        simple_node(tag, name, target, byte_size, align, declaration)
                    {
                        let id = self.id_at(offset);
                        self.graph.nodes[id as usize] = node;
                    }
                    Open::Other
                }
            };
            if entry.has_children() {
                stack.push((depth, opened));
            } else {
                self.close(opened);
            }
        }
        while let Some((_, open)) = stack.pop() {
            self.close(open);
        }
        Ok(())
    }

    /// Alignment must be inferred when a unit's producer may omit
    /// `DW_AT_alignment`: before DWARF 5, gcc writes it unless told
    /// `-gstrict-dwarf`; other producers are not relied on.
    fn note_producer(
        &mut self,
        dwarf: &gimli::Dwarf<Reader<'_>>,
        unit: &gimli::Unit<Reader<'_>>,
        entry: &gimli::DebuggingInformationEntry<Reader<'_>>,
    ) {
        let producer = entry
            .attr_value(dw::DW_AT_producer)
            .and_then(|v| dwarf.attr_string(unit, v).ok())
            .map(|s| s.slice())
            .unwrap_or_default();
        let strict = producer.windows(15).any(|w| w == b"-gstrict-dwarf ")
            || producer.ends_with(b"-gstrict-dwarf");
        let gcc_states_alignment = producer.starts_with(b"GNU ") && !strict;
        if unit.header.version() < 5 && !gcc_states_alignment {
            self.graph.infer_align = true;
        }
    }

    fn type_ref(
        &mut self,
        unit: &gimli::Unit<Reader<'_>>,
        section: u64,
        value: Option<AttributeValue<Reader<'_>>>,
    ) -> TypeId {
        let offset = match value {
            Some(AttributeValue::UnitRef(o)) => {
                Some(o.to_unit_section_offset(&unit.header).0 as u64 | section)
            }
            Some(AttributeValue::DebugInfoRef(o)) => Some(o.0 as u64),
            Some(AttributeValue::DebugTypesRef(signature)) => {
                self.signatures.get(&signature.0).copied()
            }
            _ => None,
        };
        offset.map_or(0, |o| self.id_at(o))
    }

    fn member(
        &self,
        entry: &gimli::DebuggingInformationEntry<Reader<'_>>,
        name: u32,
        ty: TypeId,
        align: u32,
    ) -> Option<RawMember> {
        let is_static = matches!(
            entry.attr_value(dw::DW_AT_external),
            Some(AttributeValue::Flag(true))
        ) || matches!(
            entry.attr_value(dw::DW_AT_declaration),
            Some(AttributeValue::Flag(true))
        );
        if is_static {
            return None;
        }
        let bit_size = udata(entry.attr_value(dw::DW_AT_bit_size)).unwrap_or(0);
        let byte_offset =
            member_location(entry.attr_value(dw::DW_AT_data_member_location)).unwrap_or(0);
        let bit_offset = if let Some(bits) = udata(entry.attr_value(dw::DW_AT_data_bit_offset)) {
            bits
        } else if let Some(from_msb) = udata(entry.attr_value(dw::DW_AT_bit_offset)) {
            // DWARF 2-4: bits counted from the most significant bit of a
            // storage unit of DW_AT_byte_size bytes at the member location.
            let unit_bits = udata(entry.attr_value(dw::DW_AT_byte_size))
                .unwrap_or(0)
                .saturating_mul(8);
            let within = if self.little_endian {
                unit_bits.saturating_sub(from_msb).saturating_sub(bit_size)
            } else {
                from_msb
            };
            byte_offset.saturating_mul(8).saturating_add(within)
        } else {
            byte_offset.saturating_mul(8)
        };
        Some(RawMember {
            name,
            ty,
            bit_offset,
            bit_size: u32::try_from(bit_size).unwrap_or(0),
            align,
        })
    }

    fn close(&mut self, open: Open) {
        match open {
            Open::Aggregate { id, members } => {
                let start = self.graph.members.len() as u32;
                let len = members.len() as u32;
                self.graph.members.extend(members);
                if let Some(Node::Aggregate { members: span, .. }) =
                    self.graph.nodes.get_mut(id as usize)
                {
                    *span = Span { start, len };
                }
            }
            Open::Array { id, elem, dims } => {
                // int a[4][2]: the entry is int[2][...] four times over.
                let mut inner = elem;
                for &count in dims.iter().skip(1).rev() {
                    self.graph.nodes.push(Node::Array { elem: inner, count });
                    inner = self.graph.nodes.len() as TypeId - 1;
                }
                let count = dims.first().copied().unwrap_or(0);
                self.graph.nodes[id as usize] = Node::Array { elem: inner, count };
            }
            Open::Func {
                id,
                ret,
                params,
                variadic,
            } => {
                let start = self.graph.params.len() as u32;
                let len = params.len() as u32;
                self.graph.params.extend(params);
                self.graph.nodes[id as usize] = Node::Func {
                    ret,
                    params: Span { start, len },
                    variadic,
                };
            }
            Open::Other => {}
        }
    }
}

/// Nodes of entries without children that matter.
fn simple_node(
    tag: gimli::DwTag,
    name: u32,
    target: TypeId,
    byte_size: Option<u64>,
    align: u32,
    declaration: bool,
) -> Option<Node> {
    let size = byte_size.map_or(0, |s| u32::try_from(s).unwrap_or(0));
    let qual = |qual| Some(Node::Qual { qual, to: target });
    match tag {
        dw::DW_TAG_base_type => Some(Node::Int { name, size }),
        dw::DW_TAG_enumeration_type if declaration => Some(Node::Fwd { name, union: false }),
        dw::DW_TAG_enumeration_type => Some(Node::Enum { name, size }),
        dw::DW_TAG_pointer_type
        | dw::DW_TAG_reference_type
        | dw::DW_TAG_rvalue_reference_type
        | dw::DW_TAG_ptr_to_member_type => Some(Node::Ptr { to: target }),
        dw::DW_TAG_typedef => Some(Node::Typedef {
            name,
            to: target,
            align,
        }),
        dw::DW_TAG_const_type => qual(Qualifier::Const),
        dw::DW_TAG_volatile_type => qual(Qualifier::Volatile),
        dw::DW_TAG_restrict_type => qual(Qualifier::Restrict),
        dw::DW_TAG_atomic_type => qual(Qualifier::Atomic),
        dw::DW_TAG_unspecified_type => Some(Node::Void),
        _ => None,
    }
}

/// Number of elements of an array dimension (0 when unknown: `x[]`).
fn subrange_count(entry: &gimli::DebuggingInformationEntry<Reader<'_>>) -> u64 {
    if let Some(count) = udata(entry.attr_value(dw::DW_AT_count)) {
        return count;
    }
    let lower = udata(entry.attr_value(dw::DW_AT_lower_bound)).unwrap_or(0);
    match entry.attr_value(dw::DW_AT_upper_bound) {
        // gcc writes -1 (or all ones) for zero-length arrays `x[0]`.
        Some(AttributeValue::Sdata(-1)) => 0,
        Some(v) => match udata(Some(v)) {
            Some(upper) if upper >= lower && upper < u64::from(u32::MAX) * 1024 => {
                upper - lower + 1
            }
            _ => 0,
        },
        None => 0,
    }
}

/// `DW_AT_data_member_location`: a constant, or `DW_OP_plus_uconst N`.
fn member_location(value: Option<AttributeValue<Reader<'_>>>) -> Option<u64> {
    match value? {
        AttributeValue::Exprloc(expr) => {
            let bytes = expr.0.slice();
            match bytes.split_first() {
                Some((&op, rest)) if op == dw::DW_OP_plus_uconst.0 || op == dw::DW_OP_constu.0 => {
                    uleb128(rest)
                }
                _ => None,
            }
        }
        other => udata(Some(other)),
    }
}

fn udata(value: Option<AttributeValue<Reader<'_>>>) -> Option<u64> {
    match value? {
        AttributeValue::Sdata(v) => u64::try_from(v).ok(),
        other => other.udata_value(),
    }
}

fn uleb128(bytes: &[u8]) -> Option<u64> {
    let mut value: u64 = 0;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}
