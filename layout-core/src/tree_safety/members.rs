//! The struct's members as the scan names them: a member designator
//! (`offsetof(S, a.b[2])`, `.a = ...`) becomes the model field that holds
//! it; the fields' facts the finders need (which are zero-size walls).

use crate::access::MemberNames;
use crate::layout::Layout;
use crate::model::Struct;
use crate::segments::{self, Marker};
use std::collections::HashMap;

/// The model's fields by name, and the inner names (members of anonymous
/// unions and `struct_group`s, single bitfields) by the field holding them.
#[derive(Clone, Debug)]
pub struct Members {
    /// The model's field names, in declaration order.
    pub names: Vec<String>,
    /// Per field: a zero-size marker that is a segment of its own (a
    /// zero-length array such as `headers_start[0]`): a wall every layout
    /// keeps in place among its neighbours.
    pub wall: Vec<bool>,
    /// Per field: a zero-size marker that is no cache-line group's.
    pub plain_marker: Vec<bool>,
    /// Per field: its size in bytes (a member named inside it is no
    /// larger).
    pub sizes: Vec<u64>,
    by_name: HashMap<String, usize>,
}

impl Members {
    /// The members of `s`, whose declared layout is `declared`; `inner`
    /// names what lies inside its fields.
    pub fn new(s: &Struct, declared: &Layout, inner: &MemberNames) -> Members {
        let n = s.fields.len();
        let mut by_name: HashMap<String, usize> = HashMap::new();
        let offsets: Vec<Option<u64>> = {
            let mut o = vec![None; n];
            for sl in &declared.slots {
                if let Some(x) = o.get_mut(sl.field) {
                    *x = Some(sl.offset);
                }
            }
            o
        };
        for name in inner.iter() {
            let holder = (0..n).find(|&f| {
                let (Some(off), size) = (offsets[f], s.fields[f].size) else {
                    return false;
                };
                size > 0 && name.bytes.start >= off && name.bytes.start < off + size
            });
            if let Some(f) = holder {
                by_name.entry(name.name.clone()).or_insert(f);
            }
        }
        for (i, f) in s.fields.iter().enumerate() {
            by_name.insert(f.name.clone(), i);
            // A run of bitfields is named by each of its bitfields too.
            for part in f.name.split(':').filter(|p| !p.is_empty()) {
                by_name.entry(part.to_string()).or_insert(i);
            }
        }
        let own_segment = |i: usize| {
            let seg = s.fields[i].segment;
            s.fields
                .iter()
                .enumerate()
                .all(|(j, g)| j == i || g.segment != seg)
        };
        Members {
            names: s.fields.iter().map(|f| f.name.clone()).collect(),
            wall: (0..n)
                .map(|i| segments::is_wall(&s.fields[i]) && own_segment(i))
                .collect(),
            plain_marker: s
                .fields
                .iter()
                .map(|f| Marker::of(f) == Some(Marker::ZeroSize))
                .collect(),
            sizes: s.fields.iter().map(|f| f.size).collect(),
            by_name,
        }
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The field a designator's first name stands for.
    pub fn field(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Adds the member macros of `code` (`#define sk_dontcopy_begin
    /// __sk_common.skc_dontcopy_begin`): a name defined as a path whose
    /// first name is a member stands for that member's field.
    pub(crate) fn learn_macros(&mut self, code: &super::tokens::Code) {
        for i in 0..code.len() {
            if !(code.is(i, "#") && code.is(i + 1, "define") && code.is_ident(i + 2)) {
                continue;
            }
            let line = code.line_col(i + 1).0;
            let Some(f) = code
                .is_ident(i + 3)
                .then(|| self.field(code.at(i + 3)))
                .flatten()
            else {
                continue;
            };
            // The definition is the path alone, on the `#define`'s line.
            let mut j = i + 4;
            while code.is(j, ".") && code.is_ident(j + 1) && code.line_col(j + 1).0 == line {
                j += 2;
            }
            let ends = j >= code.len() || code.line_col(j).0 != line;
            let name = code.at(i + 2);
            if ends && code.line_col(i + 3).0 == line && !self.by_name.contains_key(name) {
                self.by_name.insert(name.to_string(), f);
            }
        }
    }

    /// The names of fields `range`.
    pub fn span(&self, range: std::ops::Range<usize>) -> Vec<String> {
        self.names[range.start.min(self.len())..range.end.min(self.len())].to_vec()
    }
}
