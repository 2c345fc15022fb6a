//! tree-sitter-c over the preprocessed text, turned into the few things a
//! layout needs: struct/union/enum definitions, typedefs, member
//! declarations with their declarators, comments and syntax errors. All
//! positions are byte offsets into the original header.
//!
//! Function bodies are skipped: a struct's layout never depends on them,
//! and real headers hide much macro magic there.

use super::abi::scalar_layout;
use super::attrs::Attr;
use super::macro_members::{MacroMember, MacroMemberKind};
use super::preprocess::AttrUse;
use crate::lex::{tokenize, TokKind};
use std::ops::Range;
use tree_sitter::{Node, Parser};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecordKind {
    Struct,
    Union,
}

impl RecordKind {
    pub fn keyword(self) -> &'static str {
        match self {
            RecordKind::Struct => "struct",
            RecordKind::Union => "union",
        }
    }
}

/// A type named by a declaration's specifiers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TypeRef {
    /// Keyword scalars: `unsigned long`, `char`, `long double` (words as written).
    Scalar(Vec<String>),
    /// A typedef name, including tree-sitter's built-in names (`size_t`).
    Name(String),
    Record {
        kind: RecordKind,
        tag: Option<String>,
        /// Index into [`Ast::records`] when the body is written right here.
        def: Option<usize>,
    },
    Enum {
        tag: Option<String>,
        def: Option<usize>,
    },
    /// Something this front-end cannot size (`typeof(...)`, a macro call).
    Unsupported(String),
}

/// One step of a declarator, outermost first: `*x[3]` is `[Pointer, Array]`
/// and means "array of 3 pointers".
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Derived {
    Pointer,
    /// The size expression's range; `None` for `[]`.
    Array(Option<Range<usize>>),
    /// `DECLARE_BITMAP`: an array of `BITS_TO_LONGS(bits)` elements; the
    /// range of the `bits` expression.
    Bitmap(Range<usize>),
    /// `DECLARE_HASHTABLE`: an array of `1 << (bits)` elements; the range
    /// of the `bits` expression.
    Hashtable(Range<usize>),
    Function,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Declarator {
    pub name: Option<String>,
    /// The identifier; an empty range at the declarator start when unnamed.
    pub name_range: Range<usize>,
    pub range: Range<usize>,
    pub derived: Vec<Derived>,
    /// The width expression of a bit-field.
    pub bitfield: Option<Range<usize>>,
    pub attrs: Vec<Attr>,
    /// The declarator without its name: `*`, `[4][2]`, `(*)(int)`.
    pub abstract_text: String,
}

/// A member declaration of a struct or union body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FieldDecl {
    /// The whole declaration, through its `;`.
    pub range: Range<usize>,
    pub ty: TypeRef,
    /// The specifiers as written: `const struct foo`, `unsigned long`,
    /// `union {...}` for a body written in place.
    pub spec_text: String,
    /// Where the type specifier is (for "unknown type" errors).
    pub spec_range: Range<usize>,
    /// Attributes before the first declarator that are not the record's own.
    pub declarators: Vec<Declarator>,
    /// A member written as a macro call (`DECLARE_BITMAP(...)`,
    /// `struct_group(...)`): the byte after its `)`.
    pub macro_call_end: Option<usize>,
    /// The name of a `struct_group`: the whole group is one field.
    pub group: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RecordDef {
    pub kind: RecordKind,
    pub tag: Option<String>,
    /// From the `struct` keyword to the closing `}`.
    pub specifier: Range<usize>,
    /// Between the braces, exclusive.
    pub body: Range<usize>,
    pub members: Vec<FieldDecl>,
    /// Attributes on the type (`struct __packed foo {}`, `} __aligned(64);`).
    pub attrs: Vec<Attr>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Enumerator {
    pub name: String,
    pub value: Option<Range<usize>>,
    pub at: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EnumDef {
    pub tag: Option<String>,
    pub specifier: Range<usize>,
    pub enumerators: Vec<Enumerator>,
    pub attrs: Vec<Attr>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TypedefDef {
    pub ty: TypeRef,
    pub spec_text: String,
    pub spec_range: Range<usize>,
    /// Its name is the typedef's name; its attributes apply to the typedef.
    pub declarator: Declarator,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub at: usize,
    pub message: String,
    pub help: String,
}

/// How to define an attribute macro the header uses but does not define.
fn unknown_attr_help(name: &str) -> String {
    format!(
        "if it is an attribute macro from another header, define it: add \
         `#define {name} __attribute__((...))` (or `#define {name}` when it does not change the \
         layout) to the header, give it to the compiler with `--cc 'gcc -D{name}=...'`, or use \
         `--kbuild DIR` so the compiler sees the real macro (the access file's `[defines]` and \
         `-D` hold integer constants only)"
    )
}

const GENERIC_HELP: &str = "check the C syntax here; macros in declarations are not expanded, \
                            except attributes, CACHELINE_PADDING() and __cacheline_group_*() markers";

#[derive(Clone, Debug, Default)]
pub(crate) struct Ast {
    pub records: Vec<RecordDef>,
    pub enums: Vec<EnumDef>,
    pub typedefs: Vec<TypedefDef>,
    /// Comments in active code, in order.
    pub comments: Vec<Range<usize>>,
    pub errors: Vec<SyntaxError>,
}

/// Parses `parse_text` (the preprocessed header); `attrs` are the blanked
/// attributes, sorted by position.
pub(crate) fn parse(
    parse_text: &str,
    attrs: &[AttrUse],
    unnamed_bitfields: &[usize],
    macro_members: &[MacroMember],
) -> Result<Ast, String> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_c::LANGUAGE.into())
        .map_err(|e| format!("cannot load the C grammar: {e}"))?;
    let tree = parser
        .parse(parse_text, None)
        .ok_or_else(|| "tree-sitter gave no parse tree".to_string())?;
    let mut b = Builder {
        depth: 0,
        text: parse_text,
        attrs,
        unnamed_bitfields,
        macro_members,
        ast: Ast::default(),
    };
    let root = tree.root_node();
    b.collect_errors_and_comments(root);
    b.container(root);
    b.ast.errors.sort_by_key(|e| e.at);
    Ok(b.ast)
}

/// How deeply definitions may nest before the builder stops descending.
const MAX_NESTING: usize = 64;

struct Builder<'a> {
    depth: usize,
    text: &'a str,
    attrs: &'a [AttrUse],
    /// Positions of the `_` names the preprocessor gave unnamed bit-fields.
    unnamed_bitfields: &'a [usize],
    macro_members: &'a [MacroMember],
    ast: Ast,
}

/// Syntax errors given a hint from their declaration, at most.
const MAX_HINTED: usize = 64;

fn children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut c = node.walk();
    node.children(&mut c).collect()
}

impl<'a> Builder<'a> {
    fn slice(&self, r: Range<usize>) -> &'a str {
        &self.text[r]
    }

    /// Text of `range` with comments removed and whitespace collapsed.
    fn clean(&self, range: Range<usize>) -> String {
        let mut out = String::new();
        let mut pos = range.start;
        let first = self.ast.comments.partition_point(|c| c.end <= range.start);
        for c in &self.ast.comments[first..] {
            if c.start >= range.end {
                break;
            }
            out.push_str(&self.text[pos..c.start.max(pos)]);
            out.push(' ');
            pos = c.end.min(range.end);
        }
        out.push_str(&self.text[pos.min(range.end)..range.end]);
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// Walks the whole tree (iteratively: nesting depth is unbounded)
    /// except function bodies.
    fn collect_errors_and_comments(&mut self, root: Node) {
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            if node.kind() == "comment" {
                self.ast.comments.push(node.byte_range());
                continue;
            }
            if node.kind() == "compound_statement" {
                // Function bodies: neither their comments nor their errors matter.
                continue;
            }
            if node.is_missing() {
                // An unnamed bit-field (`int : 3;`) parses with a missing name.
                let unnamed_bitfield = node.kind() == "field_identifier"
                    && node
                        .next_sibling()
                        .is_some_and(|n| n.kind() == "bitfield_clause");
                if !unnamed_bitfield {
                    let (message, help) =
                        self.hinted(node, format!("syntax error: expected `{}`", node.kind()));
                    self.ast.errors.push(SyntaxError {
                        at: node.start_byte(),
                        message,
                        help,
                    });
                }
                continue;
            }
            if node.is_error() {
                let snippet: String = self
                    .slice(node.byte_range())
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                let snippet: String = snippet.chars().take(40).collect();
                let (message, help) =
                    self.hinted(node, format!("syntax error: cannot parse `{snippet}`"));
                self.ast.errors.push(SyntaxError {
                    at: node.start_byte(),
                    message,
                    help,
                });
            }
            let mut kids = children(node);
            kids.reverse();
            stack.extend(kids);
        }
        self.ast.comments.sort_by_key(|c| c.start);
        self.ast.errors.sort_by_key(|e| e.at);
    }

    /// [`Builder::hint`] for the first [`MAX_HINTED`] errors; the rest
    /// (a file of stray tokens) keep their plain message, so that finding
    /// each one's declaration does not cost the square of their number.
    fn hinted(&self, node: Node, message: String) -> (String, String) {
        if self.ast.errors.len() < MAX_HINTED {
            return self.hint(node, message);
        }
        (message, "check the C syntax here".to_string())
    }

    /// A better message and help for a syntax error, from the declaration
    /// around it: an unexpanded macro call, or an unknown attribute macro.
    fn hint(&self, node: Node, message: String) -> (String, String) {
        let mut ctx = node;
        // At most a few levels up: each step costs the depth of the tree.
        let mut steps = 0;
        while let Some(p) = ctx.parent().filter(|_| steps < 16) {
            steps += 1;
            if matches!(
                ctx.kind(),
                "field_declaration" | "declaration" | "type_definition"
            ) || p.kind() == "translation_unit"
            {
                break;
            }
            ctx = p;
        }
        let text = self.slice(ctx.byte_range());
        let toks: Vec<&str> = tokenize(text)
            .into_iter()
            .filter(|t| t.kind != TokKind::Comment && t.kind != TokKind::Newline)
            .map(|t| &text[t.range])
            .collect();
        let is_ident = |t: &str| t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
        if let [name, "(", ..] = toks.as_slice() {
            let keyword = matches!(
                *name,
                "struct" | "union" | "enum" | "typeof" | "__typeof__" | "_Atomic" | "sizeof"
            );
            if is_ident(name) && !keyword {
                return (
                    format!("cannot read `{name}(...)` here: macros in declarations are not expanded"),
                    "write the member out by hand in a copy of the header, or lay the struct out from BTF or DWARF of a real build".into(),
                );
            }
        }
        // A word right after a declarator (`x[4] FOO;`, `x FOO;` after a
        // type) is an attribute macro; else the last `__name`.
        let idents = toks.iter().filter(|t| is_ident(t)).count();
        let mut depth = 0i32;
        let mut after_declarator = None;
        for (k, t) in toks.iter().enumerate() {
            match *t {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => depth -= 1,
                _ => {}
            }
            let (Some(prev), Some(next)) = (k.checked_sub(1).map(|p| toks[p]), toks.get(k + 1))
            else {
                continue;
            };
            if depth == 0
                && is_ident(t)
                && matches!(*next, ";" | "," | "=")
                && (matches!(prev, "]" | ")") || (is_ident(prev) && idents > 2))
            {
                after_declarator = Some(t);
                break;
            }
        }
        let unknown_attr = after_declarator.or_else(|| {
            toks.iter().rev().find(|t| {
                t.starts_with("__") && is_ident(t) && super::kernel_types::builtin_type(t).is_none()
            })
        });
        if let Some(a) = unknown_attr {
            return (
                format!("{message} (is `{a}` an attribute macro this tool does not know?)"),
                unknown_attr_help(a),
            );
        }
        (message, GENERIC_HELP.into())
    }

    /// Attribute uses that start inside `range`.
    fn attrs_in(&self, range: Range<usize>) -> &'a [AttrUse] {
        let lo = self.attrs.partition_point(|a| a.range.start < range.start);
        let hi = self.attrs.partition_point(|a| a.range.start < range.end);
        &self.attrs[lo..hi.max(lo)]
    }

    /// Declarations of the translation unit (or of an ERROR node).
    fn container(&mut self, node: Node) {
        if self.depth >= MAX_NESTING {
            return;
        }
        self.depth += 1;
        self.container_inner(node);
        self.depth -= 1;
    }

    fn container_inner(&mut self, node: Node) {
        let kids = children(node);
        let mut prev_end = node.start_byte();
        for (k, child) in kids.iter().enumerate() {
            let mut owner = prev_end..child.end_byte();
            // `struct foo { ... } __aligned(64);` at top level is a bare
            // specifier followed by a `;` sibling.
            if let Some(next) = kids.get(k + 1).filter(|n| n.kind() == ";") {
                if matches!(
                    child.kind(),
                    "struct_specifier" | "union_specifier" | "enum_specifier"
                ) {
                    owner.end = next.end_byte();
                }
            }
            match child.kind() {
                "struct_specifier" | "union_specifier" | "enum_specifier" => {
                    self.type_ref(*child, owner.clone(), None);
                }
                "declaration" => self.declaration(*child, owner.clone()),
                "type_definition" => self.typedef(*child, owner.clone()),
                "function_definition" => {
                    if let Some(t) = child.child_by_field_name("type") {
                        self.type_ref(t, owner.clone(), None);
                    }
                }
                "ERROR" | "linkage_specification" | "declaration_list" => self.container(*child),
                _ => {}
            }
            prev_end = child.end_byte();
        }
    }

    /// The type specifier of a declaration, defining any record or enum
    /// written in place. `first_decl` is where the first declarator starts:
    /// attributes of `owner` before it (outside a body) belong to the type.
    fn type_ref(&mut self, spec: Node, owner: Range<usize>, first_decl: Option<usize>) -> TypeRef {
        let text = self.slice(spec.byte_range());
        match spec.kind() {
            "primitive_type" => match text {
                "char" | "int" | "float" | "double" | "void" | "_Bool" => {
                    TypeRef::Scalar(vec![text.to_string()])
                }
                _ => TypeRef::Name(text.to_string()),
            },
            "sized_type_specifier" => {
                TypeRef::Scalar(text.split_whitespace().map(String::from).collect())
            }
            "type_identifier" => TypeRef::Name(text.to_string()),
            "struct_specifier" | "union_specifier" => {
                let kind = if spec.kind() == "struct_specifier" {
                    RecordKind::Struct
                } else {
                    RecordKind::Union
                };
                let tag = spec
                    .child_by_field_name("name")
                    .map(|n| self.slice(n.byte_range()).to_string());
                let def = spec
                    .child_by_field_name("body")
                    .map(|body| self.record(spec, body, kind, tag.clone(), owner, first_decl));
                TypeRef::Record { kind, tag, def }
            }
            "enum_specifier" => {
                let tag = spec
                    .child_by_field_name("name")
                    .map(|n| self.slice(n.byte_range()).to_string());
                let def = spec
                    .child_by_field_name("body")
                    .map(|body| self.enumeration(spec, body, tag.clone(), owner, first_decl));
                TypeRef::Enum { tag, def }
            }
            _ => TypeRef::Unsupported(text.split_whitespace().collect::<Vec<_>>().join(" ")),
        }
    }

    /// Attributes of a type defined in place: in `owner`, outside the body,
    /// before the first declarator.
    fn type_attrs(
        &self,
        body: Range<usize>,
        owner: Range<usize>,
        first_decl: Option<usize>,
    ) -> Vec<Attr> {
        let end = first_decl.unwrap_or(owner.end);
        self.attrs_in(owner.start..end)
            .iter()
            .filter(|a| a.range.start < body.start || a.range.start >= body.end)
            .flat_map(|a| a.attrs.iter().cloned())
            .collect()
    }

    fn record(
        &mut self,
        spec: Node,
        body: Node,
        kind: RecordKind,
        tag: Option<String>,
        owner: Range<usize>,
        first_decl: Option<usize>,
    ) -> usize {
        let inner =
            body.start_byte() + 1..body.end_byte().saturating_sub(1).max(body.start_byte() + 1);
        let attrs = self.type_attrs(body.byte_range(), owner, first_decl);
        let mut members = Vec::new();
        let mut prev_end = inner.start;
        let kids = if self.depth < MAX_NESTING {
            children(body)
        } else {
            self.ast.errors.push(SyntaxError {
                at: spec.start_byte(),
                message: "struct and union definitions nest too deeply".into(),
                help: "this front-end reads up to 64 levels".into(),
            });
            Vec::new()
        };
        self.depth += 1;
        for child in kids {
            if child.kind() == "field_declaration" {
                let owner = prev_end..child.end_byte();
                if let Some(f) = self.field(child, owner) {
                    members.push(f);
                }
            }
            if child.kind() != "comment" {
                prev_end = child.end_byte();
            }
        }
        self.depth -= 1;
        self.ast.records.push(RecordDef {
            kind,
            tag,
            specifier: spec.byte_range(),
            body: inner,
            members,
            attrs,
        });
        self.ast.records.len() - 1
    }

    fn enumeration(
        &mut self,
        spec: Node,
        body: Node,
        tag: Option<String>,
        owner: Range<usize>,
        first_decl: Option<usize>,
    ) -> usize {
        let attrs = self.type_attrs(body.byte_range(), owner, first_decl);
        let enumerators = children(body)
            .into_iter()
            .filter(|c| c.kind() == "enumerator")
            .filter_map(|e| {
                let name = e.child_by_field_name("name")?;
                Some(Enumerator {
                    name: self.slice(name.byte_range()).to_string(),
                    value: e.child_by_field_name("value").map(|v| v.byte_range()),
                    at: name.start_byte(),
                })
            })
            .collect();
        self.ast.enums.push(EnumDef {
            tag,
            specifier: spec.byte_range(),
            enumerators,
            attrs,
        });
        self.ast.enums.len() - 1
    }

    /// Specifier text as written: qualifiers and the type, comments removed,
    /// a body written in place shown as `{...}`.
    fn spec_text(&self, decl: Node, spec: Node, first_decl: usize) -> String {
        let mut parts = Vec::new();
        for c in children(decl) {
            if c.start_byte() >= first_decl {
                break;
            }
            if c.kind() == "type_qualifier" {
                parts.push(self.clean(c.byte_range()));
            } else if c.id() == spec.id() {
                let t = match spec.child_by_field_name("body") {
                    Some(body) => {
                        let head = self.clean(spec.start_byte()..body.start_byte());
                        if head.split_whitespace().count() > 1 {
                            head
                        } else {
                            format!("{head} {{...}}")
                        }
                    }
                    None => self.clean(spec.byte_range()),
                };
                parts.push(t);
            }
        }
        parts.join(" ")
    }

    fn declarator_nodes<'t>(node: Node<'t>) -> Vec<Node<'t>> {
        let mut c = node.walk();
        let mut out = Vec::new();
        for (i, child) in node.children(&mut c).enumerate() {
            if node.field_name_for_child(i as u32) == Some("declarator") {
                out.push(child);
            }
        }
        out
    }

    /// Splits the attributes of `owner` after the type among declarators.
    fn attach(&self, decls: &mut [Declarator], owner: Range<usize>, type_has_body: bool) {
        let Some(first) = decls.first().map(|d| d.range.start) else {
            return;
        };
        for a in self.attrs_in(owner) {
            let p = a.range.start;
            if p < first {
                if !type_has_body {
                    for d in decls.iter_mut() {
                        d.attrs.extend(a.attrs.iter().cloned());
                    }
                }
                continue;
            }
            if let Some(d) = decls.iter_mut().rev().find(|d| d.range.start <= p) {
                d.attrs.extend(a.attrs.iter().cloned());
            }
        }
    }

    fn field(&mut self, node: Node, owner: Range<usize>) -> Option<FieldDecl> {
        let spec = node.child_by_field_name("type")?;
        let decl_nodes = Self::declarator_nodes(node);
        let first_decl = decl_nodes.first().map(|d| d.start_byte());
        let ty = self.type_ref(spec, owner.clone(), first_decl);
        let mut declarators: Vec<Declarator> =
            decl_nodes.iter().map(|d| self.declarator(*d)).collect();
        self.refuse_word_after_declarator(spec, &declarators);
        // The bit-field clause follows its declarator.
        for c in children(node) {
            if c.kind() == "bitfield_clause" {
                let width = c
                    .named_children(&mut c.walk())
                    .find(|n| n.kind() != "comment")
                    .map(|n| n.byte_range());
                // `<=`: tree-sitter's empty name of `long:0;` sits right at
                // the colon.
                match declarators
                    .iter_mut()
                    .rev()
                    .find(|d| d.range.start <= c.start_byte())
                {
                    Some(d) => d.bitfield = width,
                    // An unnamed bit-field: `int : 3;`
                    None => declarators.push(Declarator {
                        name: None,
                        name_range: c.start_byte()..c.start_byte(),
                        range: c.byte_range(),
                        derived: Vec::new(),
                        bitfield: width,
                        attrs: Vec::new(),
                        abstract_text: String::new(),
                    }),
                }
            }
        }
        let has_body = spec.child_by_field_name("body").is_some();
        self.attach(&mut declarators, owner.clone(), has_body);
        let spec_end = first_decl.unwrap_or(node.end_byte());
        let mut f = FieldDecl {
            range: node.byte_range(),
            ty,
            spec_text: self.spec_text(node, spec, spec_end),
            spec_range: spec.byte_range(),
            declarators,
            macro_call_end: None,
            group: None,
        };
        self.apply_macro_member(&mut f, owner);
        Some(f)
    }

    /// `long b FOO;` with `FOO` undefined: tree-sitter reads `long b` as one
    /// type (a size modifier and a type name) and `FOO` as the member. C has
    /// no such type (`long`, `short`, `signed` and `unsigned` combine only
    /// with the basic types), so `b` is the declarator and `FOO` a word gcc
    /// refuses: an attribute macro from another header. Refused, never read
    /// as a member name.
    fn refuse_word_after_declarator(&mut self, spec: Node, declarators: &[Declarator]) {
        if spec.kind() != "sized_type_specifier" {
            return;
        }
        let Some(ty) = spec.child_by_field_name("type") else {
            return;
        };
        let member = self.slice(ty.byte_range());
        if ty.kind() != "type_identifier" || scalar_layout(&[member.to_string()]).is_some() {
            return;
        }
        let Some(d) = declarators.first() else {
            return;
        };
        let Some(word) = &d.name else {
            return;
        };
        self.ast.errors.push(SyntaxError {
            at: d.name_range.start,
            message: format!(
                "unknown identifier `{word}` after member `{member}`: it is not a member name \
                 (an attribute macro this header does not define?)"
            ),
            help: unknown_attr_help(word),
        });
    }

    /// Gives a member written as a member macro its meaning (see
    /// [`super::macro_members`]).
    fn apply_macro_member(&self, f: &mut FieldDecl, owner: Range<usize>) {
        let lo = self
            .macro_members
            .partition_point(|m| m.start < owner.start);
        let Some(m) = self.macro_members[lo..]
            .iter()
            .take_while(|m| m.start < owner.end)
            .find(|m| m.start <= f.range.start && m.after_call <= f.range.end)
        else {
            return;
        };
        f.range.start = m.start;
        f.macro_call_end = Some(m.after_call);
        match &m.kind {
            MacroMemberKind::Group { name } => f.group = Some(name.clone()),
            MacroMemberKind::Bitmap { bits, text } => {
                if let [d] = f.declarators.as_mut_slice() {
                    d.derived.push(Derived::Bitmap(bits.clone()));
                    d.abstract_text = format!("{}[BITS_TO_LONGS({text})]", d.abstract_text);
                }
            }
            MacroMemberKind::Hashtable { bits, text } => {
                if let [d] = f.declarators.as_mut_slice() {
                    d.derived.push(Derived::Hashtable(bits.clone()));
                    d.abstract_text = format!("{}[1 << ({text})]", d.abstract_text);
                }
            }
            MacroMemberKind::NetDevStat => {
                f.ty = TypeRef::Scalar(vec!["unsigned".into(), "long".into()]);
                f.spec_text = "unsigned long".into();
            }
            MacroMemberKind::FlexArray => {
                if let [d] = f.declarators.as_mut_slice() {
                    d.derived.push(Derived::Array(None));
                    d.abstract_text = format!("{}[]", d.abstract_text);
                }
            }
        }
    }

    fn declaration(&mut self, node: Node, owner: Range<usize>) {
        if let Some(spec) = node.child_by_field_name("type") {
            let first_decl = Self::declarator_nodes(node).first().map(|d| d.start_byte());
            self.type_ref(spec, owner, first_decl);
        }
    }

    fn typedef(&mut self, node: Node, owner: Range<usize>) {
        let Some(spec) = node.child_by_field_name("type") else {
            return;
        };
        let decl_nodes = Self::declarator_nodes(node);
        let first_decl = decl_nodes.first().map(|d| d.start_byte());
        let ty = self.type_ref(spec, owner.clone(), first_decl);
        let mut decls: Vec<Declarator> = decl_nodes.iter().map(|d| self.declarator(*d)).collect();
        let has_body = spec.child_by_field_name("body").is_some();
        self.attach(&mut decls, owner, has_body);
        let spec_text = self.spec_text(node, spec, first_decl.unwrap_or(node.end_byte()));
        for declarator in decls {
            self.ast.typedefs.push(TypedefDef {
                ty: ty.clone(),
                spec_text: spec_text.clone(),
                spec_range: spec.byte_range(),
                declarator,
            });
        }
    }

    fn declarator(&self, node: Node) -> Declarator {
        let mut derived = Vec::new();
        let mut cur = Some(node);
        let mut name = None;
        while let Some(n) = cur {
            cur = match n.kind() {
                "pointer_declarator" => {
                    derived.push(Derived::Pointer);
                    n.child_by_field_name("declarator")
                }
                "array_declarator" => {
                    derived.push(Derived::Array(
                        n.child_by_field_name("size").map(|s| s.byte_range()),
                    ));
                    n.child_by_field_name("declarator")
                }
                "function_declarator" => {
                    derived.push(Derived::Function);
                    n.child_by_field_name("declarator")
                }
                "parenthesized_declarator" | "attributed_declarator" => n
                    .named_children(&mut n.walk())
                    .find(|c| c.kind() != "comment" && c.kind() != "attribute_specifier"),
                "field_identifier" | "identifier" | "type_identifier" | "primitive_type" => {
                    name = Some(n);
                    None
                }
                _ => None,
            };
        }
        let range = node.byte_range();
        let written = name.map_or(range.start..range.start, |n| n.byte_range());
        // An unnamed bit-field: tree-sitter's empty identifier, or the `_`
        // the preprocessor wrote.
        let name = name.filter(|n| {
            n.end_byte() > n.start_byte() && !self.unnamed_bitfields.contains(&n.start_byte())
        });
        let name_range = name.map_or(range.start..range.start, |n| n.byte_range());
        let abstract_text = {
            let before = self.clean(range.start..written.start);
            let after = self.clean(written.end..range.end);
            let glue = if before.is_empty()
                || after.is_empty()
                || after.starts_with(')')
                || after.starts_with('[')
            {
                ""
            } else {
                " "
            };
            format!("{before}{glue}{after}")
        };
        Declarator {
            name: name.map(|n| self.slice(n.byte_range()).to_string()),
            name_range,
            range,
            derived,
            bitfield: None,
            attrs: Vec::new(),
            abstract_text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ast(text: &str) -> Ast {
        parse(text, &[], &[], &[]).unwrap()
    }

    #[test]
    fn records_members_and_declarators() {
        let a = ast("struct s {\n\tunsigned long x[2][3], *p; /* c */\n\tunion { int a; long b; };\n\tvoid (*fn)(int);\n\tint bf : 3, : 0;\n};\n");
        assert_eq!(a.records.len(), 2, "the anonymous union and s");
        let s = a
            .records
            .iter()
            .find(|r| r.tag.as_deref() == Some("s"))
            .unwrap();
        assert_eq!(s.members.len(), 4);
        let m0 = &s.members[0];
        assert_eq!(
            m0.ty,
            TypeRef::Scalar(vec!["unsigned".into(), "long".into()])
        );
        assert_eq!(m0.spec_text, "unsigned long");
        assert_eq!(m0.declarators[0].name.as_deref(), Some("x"));
        assert_eq!(m0.declarators[0].abstract_text, "[2][3]");
        assert_eq!(m0.declarators[0].derived.len(), 2);
        assert_eq!(m0.declarators[1].derived, vec![Derived::Pointer]);
        assert_eq!(m0.declarators[1].abstract_text, "*");
        assert_eq!(s.members[1].spec_text, "union {...}");
        assert!(s.members[1].declarators.is_empty());
        assert_eq!(s.members[2].declarators[0].abstract_text, "(*)(int)");
        assert_eq!(
            s.members[2].declarators[0].derived,
            vec![Derived::Function, Derived::Pointer]
        );
        let bf = &s.members[3].declarators;
        assert_eq!(bf.len(), 2);
        assert!(bf[0].bitfield.is_some() && bf[1].bitfield.is_some() && bf[1].name.is_none());
        assert_eq!(a.comments.len(), 1);
        assert!(a.errors.is_empty());
    }

    #[test]
    fn an_unnamed_bit_field_without_blanks_is_one() {
        // checkpatch's spelling of a zero-width guard: no blank before the colon.
        let a = ast("struct s {\n\tchar c;\n\tlong:0;\n\tint x:3;\n};\n");
        let s = &a.records[0];
        let guard = &s.members[1].declarators;
        assert_eq!(guard.len(), 1, "{guard:?}");
        assert!(guard[0].name.is_none() && guard[0].bitfield.is_some());
        assert!(a.errors.is_empty(), "{:?}", a.errors);
    }

    #[test]
    fn typedefs_enums_and_errors() {
        let a = ast("typedef struct { int a; } foo_t, *foo_p;\nenum e { A, B = 3 };\nstruct bad { int a b; };\nstatic int f(void) { @@@ }\n");
        assert_eq!(a.typedefs.len(), 2);
        assert_eq!(a.typedefs[0].declarator.name.as_deref(), Some("foo_t"));
        assert_eq!(a.typedefs[1].declarator.derived, vec![Derived::Pointer]);
        assert_eq!(a.enums[0].enumerators.len(), 2);
        assert!(a.enums[0].enumerators[1].value.is_some());
        assert_eq!(
            a.errors.len(),
            1,
            "function bodies do not count: {:?}",
            a.errors
        );
    }

    #[test]
    fn attributes_attach_by_position() {
        let text = "struct s {\n\tint a      , b      ;\n\tint       c;\n}     ;\n";
        let at = |needle: &str, nth: usize| text.match_indices(needle).nth(nth).unwrap().0;
        let uses = vec![
            AttrUse {
                range: at("      ,", 0)..at("      ,", 0) + 1,
                attrs: vec![Attr::Packed],
            },
            AttrUse {
                range: at("      ;", 0)..at("      ;", 0) + 1,
                attrs: vec![Attr::Aligned(None)],
            },
            AttrUse {
                range: at("int ", 1) + 4..at("int ", 1) + 5,
                attrs: vec![Attr::Packed],
            },
            AttrUse {
                range: at("}", 0) + 2..at("}", 0) + 3,
                attrs: vec![Attr::Aligned(None)],
            },
        ];
        let a = parse(text, &uses, &[], &[]).unwrap();
        let s = &a.records[0];
        assert_eq!(s.members[0].declarators[0].attrs, vec![Attr::Packed]);
        assert_eq!(s.members[0].declarators[1].attrs, vec![Attr::Aligned(None)]);
        assert_eq!(s.members[1].declarators[0].attrs, vec![Attr::Packed]);
        assert_eq!(s.attrs, vec![Attr::Aligned(None)]);
    }
}
