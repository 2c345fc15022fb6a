//! Loading what every subcommand needs: the header, the access file, the
//! defines, and from them the struct model with its declared layout.

use super::args::InputArgs;
use layout_core::access::{self, AccessFile};
use layout_core::c::{self, CStruct, Defines};
use layout_core::{Diagnostic, Layout, Placement, Target};

/// A struct read from a header, with classes applied, and how to judge it.
pub struct Loaded {
    pub cstruct: CStruct,
    pub target: Target,
    pub placement: Placement,
    /// The layout as declared.
    pub declared: Layout,
}

pub fn load(a: &InputArgs) -> Result<Loaded, Diagnostic> {
    let target = Target::new(a.line)
        .map_err(|m| Diagnostic::new(m).help("pass --line 64 (the default) or 128"))?;
    let access_file = match &a.access {
        Some(path) => Some(access::load(path)?),
        None => None,
    };
    let defines = merged_defines(access_file.as_ref(), &a.defines)?;
    let types = access_file.as_ref().map(|f| f.types.clone()).unwrap_or_default();
    let text = std::fs::read_to_string(&a.header).map_err(|e| {
        Diagnostic::new(format!("cannot read header: {e}"))
            .in_file(&a.header)
            .help("check the path")
    })?;
    let header = c::parse_header(&a.header, &text, &defines, &types)?;
    let mut cstruct = header.find_struct(&a.struct_name)?;
    if let Some(f) = &access_file {
        f.apply(&mut cstruct.model)?;
    }
    let offset = a
        .offset
        .or_else(|| access_file.as_ref().and_then(|f| f.struct_offset(&a.struct_name)));
    let placement = match offset {
        Some(o) => {
            if o % cstruct.align != 0 {
                return Err(Diagnostic::new(format!(
                    "offset {o} is not a multiple of the alignment of struct {} ({})",
                    a.struct_name, cstruct.align
                ))
                .help("give the struct's real offset inside its container"));
            }
            Placement::Offset(o)
        }
        None => Placement::Aligned,
    };
    let declared = Layout::declared(&cstruct.model, cstruct.size, cstruct.align, target.line, placement)
        .ok_or_else(|| Diagnostic::new("the header front-end gave a field without an offset"))?;
    layout_core::verify::check_structure(&cstruct.model, &declared).map_err(|e| {
        Diagnostic::new(format!("the declared layout of struct {} is inconsistent: {e}", a.struct_name))
            .in_file(&a.header)
    })?;
    Ok(Loaded { cstruct, target, placement, declared })
}

/// The access file's [defines], then -D flags on top (a flag without a value means 1).
fn merged_defines(file: Option<&AccessFile>, flags: &[String]) -> Result<Defines, Diagnostic> {
    let mut defines = file.map(|f| f.defines.clone()).unwrap_or_default();
    for flag in flags {
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n.trim(), v.trim()),
            None => (flag.trim(), "1"),
        };
        let valid_name = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        let value = parse_int(value);
        match (valid_name, value) {
            (true, Some(v)) => defines.insert(name, v),
            _ => {
                return Err(Diagnostic::new(format!("bad -D {flag}"))
                    .help("write -D NAME=INTEGER, e.g. -D MAX_NR_ZONES=5, or -D CONFIG_X"))
            }
        }
    }
    Ok(defines)
}

fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let v = if let Some(hex) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        i64::from_str_radix(hex, 16).ok()?
    } else {
        digits.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}
