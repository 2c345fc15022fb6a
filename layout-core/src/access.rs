//! The access file: which fields of a struct are read-mostly, written under
//! which lock, written locklessly, or cold; plus the type sizes and
//! constants a C header does not define.
//!
//! ```toml
//! [types]                                  # sizes of types the header does not define
//! "struct foo" = { size = 16, align = 8 }
//! [defines]                                # constants the header does not define
//! MAX_NR_ZONES = 5
//! [struct.lru_gen_folio]
//! offset = 304                             # optional default for --offset
//! read_mostly = ["max_seq", "enabled"]
//! lockless_atomic = ["evicted", "refaulted"]   # or writer groups:
//! #   [struct.NAME.lockless_atomic]  tx = [...]  rx = [...]
//! locked_write.lru_lock = ["folios", "nr_pages"]
//! cold = ["failcnt"]                       # unlisted fields are cold
//! pinned = []
//! [struct.lru_gen_folio.paths]             # hot paths: the members each touches
//! reclaim = ["max_seq", "folios", "nr_pages"]
//! ```
//!
//! Names: a field's own name; a member of an anonymous struct or union or of
//! a `struct_group` by its own name; a single bitfield; a sub-member of an
//! embedded struct as a dotted path (`rx_opt.rcv_tsval`) — see [`names`].
//! When several names land in one field (members of one union, bitfields of
//! one storage unit, sub-members of one embedded struct), the field gets the
//! strongest of their classes: lockless, then locked, then read-mostly, then
//! cold. A hot path counts only the bytes of the names it lists; the field
//! still moves as one.
//!
//! The class keywords and their aliases are the access vocabulary's
//! ([`crate::class`]), the same the `#[layout(..)]` attribute accepts:
//! `lockless` is another name for `lockless_atomic`.
//!
//! Every error names the access file and the line of the offending key or
//! name.

pub mod names;

pub use names::{InnerName, MemberNames};

use crate::class::{Class, Param};
use crate::error::Diagnostic;
pub use crate::header_inputs::{Defines, TypeTable};
use crate::model::{Access, PathUse, Struct};
use crate::suggest::close_names;
use names::{NameTable, Named};
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml_edit::{ImDocument, Item, TableLike, Value};

/// Where a name was written in the access file (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

/// One field named under a class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassEntry {
    pub field: String,
    pub access: Access,
    /// The key it was listed under: `read_mostly`, `locked_write.lru_lock`,
    /// `lockless_atomic.tx`, `cold`.
    pub key: String,
    pub at: Location,
}

/// The `[struct.NAME]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructAccess {
    pub name: String,
    pub offset: Option<u64>,
    /// In file order.
    pub classes: Vec<ClassEntry>,
    /// Fields that keep their offset.
    pub pinned: Vec<(String, Location)>,
    /// Hot paths in file order: `[struct.NAME.paths]`.
    pub paths: Vec<PathEntry>,
    /// The table header's location.
    pub at: Location,
}

/// One hot path: `tx = ["snd_nxt", "write_seq"]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathEntry {
    pub name: String,
    /// The names it lists, in order, with where each is written.
    pub members: Vec<(String, Location)>,
    /// The key's location.
    pub at: Location,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessFile {
    pub path: PathBuf,
    pub types: TypeTable,
    pub defines: Defines,
    /// By struct name.
    pub structs: BTreeMap<String, StructAccess>,
}

const TOP_KEYS: &[&str] = &["types", "defines", "struct"];
/// The keys of `[struct.NAME]`: `offset`, every class keyword and alias
/// ([`crate::class`]), `pinned`, `paths`.
fn struct_keys() -> Vec<&'static str> {
    let mut keys = vec!["offset"];
    keys.extend(Class::keywords());
    keys.extend(["pinned", "paths"]);
    keys
}

/// Reads and parses the access file at `path`.
pub fn load(path: &Path) -> Result<AccessFile, Diagnostic> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Diagnostic::new(format!("cannot read access file: {e}"))
            .in_file(path)
            .help("check the path given to --access")
    })?;
    parse(path, &text)
}

/// Parses the text of an access file; `path` is used in errors.
pub fn parse(path: &Path, text: &str) -> Result<AccessFile, Diagnostic> {
    let lines = LineIndex::new(text);
    let p = FileParser {
        path,
        lines: &lines,
    };
    let doc = ImDocument::parse(text).map_err(|e| {
        let (line, col) = e.span().map_or((0, 0), |s| lines.line_col(s.start));
        let message = e
            .message()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(", ");
        Diagnostic::new(format!("invalid TOML: {message}"))
            .in_file(path)
            .at(line, col)
            .help("fix the TOML syntax here")
    })?;
    let root = doc.as_table();
    let mut file = AccessFile {
        path: path.to_path_buf(),
        ..AccessFile::default()
    };
    for (key, item) in root.iter() {
        match key {
            "types" => file.types = p.types(root, item)?,
            "defines" => file.defines = p.defines(root, item)?,
            "struct" => {
                let t = p.table(root, key, item)?;
                for (name, st) in t.iter() {
                    let s = p.struct_access(t, name, st)?;
                    file.structs.insert(name.to_string(), s);
                }
            }
            _ => return Err(p.unknown_key(root, key, "at the top level", TOP_KEYS)),
        }
    }
    Ok(file)
}

/// The start of every line of a text, to turn byte offsets into lines and
/// columns without rescanning the text for each (an access file may list
/// tens of thousands of names).
struct LineIndex {
    starts: Vec<usize>,
    len: usize,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        LineIndex {
            starts,
            len: text.len(),
        }
    }

    /// 1-based line and byte column of `byte`, as [`crate::error::line_col`] gives them.
    fn line_col(&self, byte: usize) -> (usize, usize) {
        let byte = byte.min(self.len);
        let line = self.starts.partition_point(|&s| s <= byte);
        (line, byte - self.starts[line - 1] + 1)
    }
}

struct FileParser<'a> {
    path: &'a Path,
    lines: &'a LineIndex,
}

impl FileParser<'_> {
    fn loc(&self, span: Option<Range<usize>>) -> Location {
        let (line, column) = span.map_or((0, 0), |s| self.lines.line_col(s.start));
        Location { line, column }
    }

    fn error_at(&self, at: &Location, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(message)
            .in_file(self.path)
            .at(at.line, at.column)
    }

    fn key_loc(&self, parent: &dyn TableLike, key: &str) -> Location {
        self.loc(parent.key(key).and_then(|k| k.span()))
    }

    fn unknown_key(
        &self,
        parent: &dyn TableLike,
        key: &str,
        place: &str,
        valid: &[&str],
    ) -> Diagnostic {
        let close = close_names(key, valid.iter().copied());
        let mut help = format!("valid keys {place}: {}", valid.join(", "));
        if let Some(c) = close.first() {
            help = format!("did you mean `{c}`? {help}");
        }
        self.error_at(
            &self.key_loc(parent, key),
            format!("unknown key `{key}` {place}"),
        )
        .help(help)
    }

    fn table<'i>(
        &self,
        parent: &dyn TableLike,
        key: &str,
        item: &'i Item,
    ) -> Result<&'i dyn TableLike, Diagnostic> {
        item.as_table_like().ok_or_else(|| {
            self.error_at(
                &self.key_loc(parent, key),
                format!("`{key}` must be a table"),
            )
            .help(format!("write [{key}] followed by its entries"))
        })
    }

    fn uint(
        &self,
        parent: &dyn TableLike,
        key: &str,
        item: &Item,
        what: &str,
    ) -> Result<u64, Diagnostic> {
        item.as_integer()
            .and_then(|v| u64::try_from(v).ok())
            .ok_or_else(|| {
                let at = match item.span() {
                    Some(s) => self.loc(Some(s)),
                    None => self.key_loc(parent, key),
                };
                self.error_at(
                    &at,
                    format!("`{key}` must be a non-negative integer ({what})"),
                )
            })
    }

    fn types(&self, root: &dyn TableLike, item: &Item) -> Result<TypeTable, Diagnostic> {
        let t = self.table(root, "types", item)?;
        let mut out = TypeTable::default();
        for (name, v) in t.iter() {
            let at = self.key_loc(t, name);
            let help = format!("write \"{name}\" = {{ size = N, align = M }}");
            let entry = v.as_table_like().ok_or_else(|| {
                self.error_at(&at, format!("[types] \"{name}\" must be a table"))
                    .help(help.clone())
            })?;
            for (k, _) in entry.iter() {
                if k != "size" && k != "align" {
                    return Err(self.unknown_key(
                        entry,
                        k,
                        &format!("in [types] \"{name}\""),
                        &["size", "align"],
                    ));
                }
            }
            let get = |k: &str| -> Result<u64, Diagnostic> {
                match entry.get(k) {
                    Some(i) => self.uint(entry, k, i, "bytes"),
                    None => Err(self
                        .error_at(&at, format!("[types] \"{name}\" lacks `{k}`"))
                        .help(help.clone())),
                }
            };
            let (size, align) = (get("size")?, get("align")?);
            if !align.is_power_of_two() {
                let at = self.loc(entry.get("align").and_then(Item::span));
                return Err(self.error_at(
                    &at,
                    format!("[types] \"{name}\": align {align} is not a power of two"),
                ));
            }
            if size % align != 0 {
                return Err(self
                    .error_at(
                        &at,
                        format!(
                            "[types] \"{name}\": size {size} is not a multiple of align {align}"
                        ),
                    )
                    .help("C sizes are multiples of their alignment"));
            }
            out.insert(name, size, align);
        }
        Ok(out)
    }

    fn defines(&self, root: &dyn TableLike, item: &Item) -> Result<Defines, Diagnostic> {
        let t = self.table(root, "defines", item)?;
        let mut out = Defines::default();
        for (name, v) in t.iter() {
            let value = match v.as_value() {
                Some(Value::Integer(i)) => *i.value(),
                Some(Value::Boolean(b)) => i64::from(*b.value()),
                _ => {
                    return Err(self
                        .error_at(
                            &self.key_loc(t, name),
                            format!("[defines] {name} must be an integer"),
                        )
                        .help(format!(
                            "write {name} = 5, or {name} = true for a CONFIG_ option"
                        )))
                }
            };
            out.insert(name, value);
        }
        Ok(out)
    }

    /// A list of field names with the location of each.
    fn names(
        &self,
        parent: &dyn TableLike,
        key: &str,
        item: &Item,
    ) -> Result<Vec<(String, Location)>, Diagnostic> {
        let bad = || {
            self.error_at(
                &self.key_loc(parent, key),
                format!("`{key}` must be a list of field names"),
            )
            .help(format!("write {key} = [\"field\", ...]"))
        };
        let arr = item.as_array().ok_or_else(bad)?;
        arr.iter()
            .map(|v| match v {
                Value::String(s) => Ok((s.value().clone(), self.loc(v.span()))),
                _ => Err(self
                    .error_at(
                        &self.loc(v.span()),
                        format!("`{key}` lists something that is not a field name"),
                    )
                    .help("field names are quoted strings")),
            })
            .collect()
    }

    /// `[struct.NAME.paths]`: path name → list of member names.
    fn paths(&self, parent: &dyn TableLike, item: &Item) -> Result<Vec<PathEntry>, Diagnostic> {
        let t = item.as_table_like().ok_or_else(|| {
            self.error_at(&self.key_loc(parent, "paths"), "`paths` must be a table")
                .help("write [struct.NAME.paths] followed by tx = [\"field\", ...]")
        })?;
        t.iter()
            .map(|(name, list)| {
                Ok(PathEntry {
                    name: name.to_string(),
                    members: self.names(t, name, list)?,
                    at: self.key_loc(t, name),
                })
            })
            .collect()
    }

    fn struct_access(
        &self,
        parent: &dyn TableLike,
        name: &str,
        item: &Item,
    ) -> Result<StructAccess, Diagnostic> {
        let t = self.table(parent, name, item)?;
        let mut s = StructAccess {
            name: name.to_string(),
            offset: None,
            classes: Vec::new(),
            pinned: Vec::new(),
            paths: Vec::new(),
            at: self.key_loc(parent, name),
        };
        let place = format!("in [struct.{name}]");
        for (key, v) in t.iter() {
            let mut add = |names: Vec<(String, Location)>, access: Access, key: String| {
                s.classes
                    .extend(names.into_iter().map(|(field, at)| ClassEntry {
                        field,
                        access: access.clone(),
                        key: key.clone(),
                        at,
                    }));
            };
            match key {
                "offset" => {
                    s.offset = Some(self.uint(t, key, v, "the struct's offset in its container")?)
                }
                "pinned" => s.pinned = self.names(t, key, v)?,
                "paths" => s.paths = self.paths(t, v)?,
                _ => match Class::from_keyword(key) {
                    Some(class) => {
                        for (names, access, key) in self.class_entries(t, key, v, class)? {
                            add(names, access, key);
                        }
                    }
                    None => return Err(self.unknown_key(t, key, &place, &struct_keys())),
                },
            }
        }
        Ok(s)
    }

    /// The entries of one class key: `key = [names]` for a class without a
    /// parameter (or an optional one), `key.PARAM = [names]` for a class
    /// with one; each with its access and the key it was listed under.
    #[allow(clippy::type_complexity)]
    fn class_entries(
        &self,
        t: &dyn TableLike,
        key: &str,
        v: &Item,
        class: Class,
    ) -> Result<Vec<(Vec<(String, Location)>, Access, String)>, Diagnostic> {
        let param = class.info().param;
        if v.is_array() || param == Param::None {
            if let Some(access) = class.with(None) {
                return Ok(vec![(self.names(t, key, v)?, access, key.into())]);
            }
        }
        let groups = v.as_table_like().ok_or_else(|| {
            let example = match param {
                Param::Lock => format!("{key}.LOCK = [\"field\", ...]"),
                Param::Group => format!("{key} = [\"field\", ...] or {key}.GROUP = [...]"),
                Param::None => format!("{key} = [\"field\", ...]"),
            };
            self.error_at(
                &self.key_loc(t, key),
                format!("`{key}` has the wrong shape"),
            )
            .help(format!("write {example}"))
        })?;
        let mut out = Vec::new();
        for (group, list) in groups.iter() {
            let names = self.names(groups, group, list)?;
            if let Some(access) = class.with(Some(group.to_string())) {
                out.push((names, access, format!("{key}.{group}")));
            }
        }
        Ok(out)
    }
}

impl AccessFile {
    /// The `offset` given for `name`, the default for `--offset`.
    pub fn struct_offset(&self, name: &str) -> Option<u64> {
        self.structs.get(name).and_then(|s| s.offset)
    }

    fn error_at(&self, at: &Location, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(message)
            .in_file(&self.path)
            .at(at.line, at.column)
    }

    /// Sets the access classes and pins of the struct named `s.name` from
    /// its `[struct.NAME]` table. Unlisted fields keep their class (`Cold`
    /// from the C front-end). A file without a table for the struct changes
    /// nothing, unless it has a table with a close name (a typo).
    pub fn apply(&self, s: &mut Struct) -> Result<(), Diagnostic> {
        self.apply_with(s, &MemberNames::default())
    }

    /// [`AccessFile::apply`], where names may also be the front-end's
    /// [`MemberNames`] (members of anonymous aggregates, single bitfields,
    /// dotted sub-members); sets [`Struct::paths`] and every
    /// [`crate::model::Field::paths`] when the table has `paths`.
    pub fn apply_with(&self, s: &mut Struct, names: &MemberNames) -> Result<(), Diagnostic> {
        let Some(sa) = self.structs.get(&s.name) else {
            let close = close_names(&s.name, self.structs.keys().map(String::as_str));
            if let Some(c) = close.first() {
                let at = &self.structs[c].at;
                return Err(self
                    .error_at(
                        at,
                        format!("[struct.{c}] does not match struct `{}`", s.name),
                    )
                    .help(format!("rename the table to [struct.{}]", s.name)));
            }
            return Ok(());
        };
        let table = NameTable::new(s, names);
        let lookup = |name: &str, at: &Location| -> Result<Named, Diagnostic> {
            table.get(name).ok_or_else(|| {
                self.error_at(at, format!("struct {} has no field `{name}`", s.name))
                    .help(table.help_for_unknown(name))
            })
        };
        let mut seen: HashMap<&str, &ClassEntry> = HashMap::new();
        // Per field: the entry that gave its strongest class so far.
        let mut strongest: BTreeMap<usize, &ClassEntry> = BTreeMap::new();
        for e in &sa.classes {
            if let Some(first) = seen.get(e.field.as_str()) {
                let message = if first.key == e.key {
                    format!("field `{}` is listed twice in {}", e.field, e.key)
                } else {
                    format!(
                        "field `{}` is in two classes: {} (line {}) and {}",
                        e.field, first.key, first.at.line, e.key
                    )
                };
                return Err(self
                    .error_at(&e.at, message)
                    .help("give each field one class"));
            }
            seen.insert(&e.field, e);
            let i = lookup(&e.field, &e.at)?.field;
            let Some(prev) = strongest.get(&i) else {
                strongest.insert(i, e);
                continue;
            };
            let (a, b) = (prev.access.strength(), e.access.strength());
            if a == b && prev.access != e.access {
                let unit = &s.fields[i].name;
                return Err(self
                    .error_at(
                        &e.at,
                        format!(
                            "`{}` ({}) and `{}` ({}, line {}) share field `{unit}`, which moves and is written as one",
                            e.field, e.key, prev.field, prev.key, prev.at.line
                        ),
                    )
                    .help(format!(
                        "give the members of `{unit}` one lock or writer group"
                    )));
            }
            if b > a {
                strongest.insert(i, e);
            }
        }
        let mut pins = Vec::new();
        for (name, at) in &sa.pinned {
            pins.push(lookup(name, at)?.field);
        }
        let paths = if sa.paths.is_empty() {
            None
        } else {
            Some(self.path_uses(sa, &lookup)?)
        };
        for (i, e) in strongest {
            s.fields[i].access = e.access.clone();
        }
        for i in pins {
            s.fields[i].pinned = true;
        }
        // A kernel lock under locked_write is a lock word (`lock_word`).
        crate::lock_word::mark_c(s);
        if let Some(uses) = paths {
            s.paths = sa.paths.iter().map(|p| p.name.clone()).collect();
            for f in &mut s.fields {
                f.paths.clear();
            }
            for (f, u) in s.fields.iter_mut().zip(uses) {
                f.paths = u;
            }
        }
        Ok(())
    }

    /// Each field's [`PathUse`]s from `[struct.NAME.paths]`: per path, the
    /// bytes its names cover, as disjoint ranges in increasing order.
    fn path_uses(
        &self,
        sa: &StructAccess,
        lookup: &dyn Fn(&str, &Location) -> Result<Named, Diagnostic>,
    ) -> Result<Vec<Vec<PathUse>>, Diagnostic> {
        let mut per_field: BTreeMap<usize, Vec<(u32, Range<u64>)>> = BTreeMap::new();
        for (k, p) in sa.paths.iter().enumerate() {
            let mut listed: HashMap<&str, &Location> = HashMap::new();
            for (name, at) in &p.members {
                if let Some(first) = listed.insert(name, at) {
                    return Err(self
                        .error_at(
                            at,
                            format!(
                                "`{name}` is listed twice in paths.{} (first on line {})",
                                p.name, first.line
                            ),
                        )
                        .help("list each member once per path"));
                }
                let n = lookup(name, at)?;
                per_field
                    .entry(n.field)
                    .or_default()
                    .push((k as u32, n.bytes));
            }
        }
        let n_fields = per_field.keys().next_back().map_or(0, |&i| i + 1);
        let mut out = vec![Vec::new(); n_fields];
        for (i, mut uses) in per_field {
            uses.sort_by_key(|(p, r)| (*p, r.start, r.end));
            let mut merged: Vec<PathUse> = Vec::new();
            for (path, bytes) in uses {
                match merged.last_mut() {
                    Some(last) if last.path == path && bytes.start <= last.bytes.end => {
                        last.bytes.end = last.bytes.end.max(bytes.end)
                    }
                    _ => merged.push(PathUse { path, bytes }),
                }
            }
            out[i] = merged;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_find_typos_and_prefixes() {
        let c = ["counters", "lru_gen_folio", "lruvec", "hits"];
        assert_eq!(close_names("counter", c.iter().copied()), vec!["counters"]);
        assert_eq!(close_names("hitz", c.iter().copied()), vec!["hits"]);
        assert_eq!(
            close_names("lru_gen", c.iter().copied()),
            vec!["lru_gen_folio"]
        );
        assert!(close_names("zzz", c.iter().copied()).is_empty());
    }

    #[test]
    fn tables_normalize_names() {
        let mut t = TypeTable::default();
        t.insert("struct   foo", 16, 8);
        assert_eq!(t.get("struct foo"), Some((16, 8)));
        let d: Defines = [("A", 1)].into_iter().collect();
        assert_eq!(d.get("A"), Some(1));
    }
}
