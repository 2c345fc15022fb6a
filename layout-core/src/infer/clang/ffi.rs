//! A small safe layer over libclang (clang-sys): an index, a translation
//! unit parsed from text, cursors with their children, names, locations,
//! types and pretty-printed text. Every libclang object is disposed of by
//! its owner's `Drop`.

use clang_sys::*;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_uint, c_void};
use std::path::Path;

pub struct Index(CXIndex);

impl Index {
    pub fn new() -> Index {
        // SAFETY: no precompiled headers excluded, diagnostics not printed.
        Index(unsafe { clang_createIndex(0, 0) })
    }
}

impl Drop for Index {
    fn drop(&mut self) {
        // SAFETY: created by clang_createIndex, disposed of once; units borrow it.
        unsafe { clang_disposeIndex(self.0) }
    }
}

pub struct Unit<'i> {
    tu: CXTranslationUnit,
    _index: &'i Index,
}

/// A diagnostic of severity error or fatal.
pub struct Problem {
    pub fatal: bool,
    pub text: String,
}

impl<'i> Unit<'i> {
    /// Parses `text` as the file `path` with the compiler arguments `args`.
    pub fn parse(
        index: &'i Index,
        path: &Path,
        text: &str,
        args: &[String],
    ) -> Result<Unit<'i>, String> {
        let cpath = CString::new(path.display().to_string())
            .map_err(|_| "a NUL in the path".to_string())?;
        let ctext = CString::new(text).map_err(|_| "a NUL byte in the source".to_string())?;
        let cargs: Vec<CString> = args
            .iter()
            .map(|a| CString::new(a.as_str()))
            .collect::<Result<_, _>>()
            .map_err(|_| "a NUL byte in a compiler flag".to_string())?;
        let argv: Vec<*const c_char> = cargs.iter().map(|a| a.as_ptr()).collect();
        let mut unsaved = CXUnsavedFile {
            Filename: cpath.as_ptr(),
            Contents: ctext.as_ptr(),
            Length: text.len() as _,
        };
        let mut tu: CXTranslationUnit = std::ptr::null_mut();
        let options = CXTranslationUnit_DetailedPreprocessingRecord | CXTranslationUnit_KeepGoing;
        // SAFETY: every pointer lives until the call returns; libclang copies what it keeps.
        let err = unsafe {
            clang_parseTranslationUnit2(
                index.0,
                cpath.as_ptr(),
                argv.as_ptr(),
                argv.len() as i32,
                &mut unsaved,
                1,
                options,
                &mut tu,
            )
        };
        if err != CXError_Success || tu.is_null() {
            return Err(format!("libclang could not parse it (error {err})"));
        }
        Ok(Unit { tu, _index: index })
    }

    pub fn cursor(&self) -> Cursor {
        // SAFETY: the unit is alive for as long as self.
        Cursor(unsafe { clang_getTranslationUnitCursor(self.tu) })
    }

    /// The errors of the parse, located.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        // SAFETY: indices below the count; each diagnostic disposed of once.
        unsafe {
            for i in 0..clang_getNumDiagnostics(self.tu) {
                let d = clang_getDiagnostic(self.tu, i);
                let sev = clang_getDiagnosticSeverity(d);
                if sev >= CXDiagnostic_Error {
                    let text = string(clang_formatDiagnostic(
                        d,
                        clang_defaultDiagnosticDisplayOptions(),
                    ));
                    out.push(Problem {
                        fatal: sev == CXDiagnostic_Fatal,
                        text,
                    });
                }
                clang_disposeDiagnostic(d);
            }
        }
        out
    }

    /// The spellings of the tokens of `c`'s extent: where it is spelled
    /// inside a macro's body (`&(x)` of `WRITE_ONCE`), the body's tokens;
    /// elsewhere those of the file.
    pub fn tokens(&self, c: Cursor) -> Vec<String> {
        // SAFETY: a cursor of this unit; locations of this unit; out-pointers to locals.
        unsafe {
            let extent = clang_getCursorExtent(c.0);
            let spelled = |loc: CXSourceLocation| {
                let mut file: CXFile = std::ptr::null_mut();
                let (mut l, mut col, mut off) = (0, 0, 0);
                clang_getSpellingLocation(loc, &mut file, &mut l, &mut col, &mut off);
                (file, off)
            };
            let in_file = |loc: CXSourceLocation| {
                let mut file: CXFile = std::ptr::null_mut();
                let (mut l, mut col, mut off) = (0, 0, 0);
                clang_getFileLocation(loc, &mut file, &mut l, &mut col, &mut off);
                (file, off)
            };
            let (start, end) = (clang_getRangeStart(extent), clang_getRangeEnd(extent));
            let (f1, o1) = spelled(start);
            let (f2, o2) = spelled(end);
            let in_macro = (f1, o1) != in_file(start) || (f2, o2) != in_file(end);
            if in_macro && !f1.is_null() && f1 == f2 && o1 <= o2 {
                let range = clang_getRange(
                    clang_getLocationForOffset(self.tu, f1, o1),
                    clang_getLocationForOffset(self.tu, f2, o2),
                );
                let t = self.range_tokens(range);
                if !t.is_empty() {
                    return t;
                }
            }
            self.range_tokens(extent)
        }
    }

    /// The file's tokens from where `a` starts to where `b` starts (where
    /// the code is written: a macro use counts as its name), e.g. a
    /// binary operator's left operand and operator.
    pub fn tokens_between(&self, a: Cursor, b: Cursor) -> Vec<String> {
        // SAFETY: cursors of this unit; out-pointers to locals.
        unsafe {
            let at = |c: Cursor| {
                let loc = clang_getRangeStart(clang_getCursorExtent(c.0));
                let mut file: CXFile = std::ptr::null_mut();
                let (mut l, mut col, mut off) = (0, 0, 0);
                clang_getExpansionLocation(loc, &mut file, &mut l, &mut col, &mut off);
                (file, off)
            };
            let ((f1, o1), (f2, o2)) = (at(a), at(b));
            if f1.is_null() || f1 != f2 || o1 > o2 {
                return Vec::new();
            }
            self.range_tokens(clang_getRange(
                clang_getLocationForOffset(self.tu, f1, o1),
                clang_getLocationForOffset(self.tu, f2, o2),
            ))
        }
    }

    pub fn range_tokens(&self, range: CXSourceRange) -> Vec<String> {
        let mut out = Vec::new();
        // SAFETY: tokens disposed of with the count libclang gave.
        unsafe {
            let mut toks: *mut CXToken = std::ptr::null_mut();
            let mut n: c_uint = 0;
            clang_tokenize(self.tu, range, &mut toks, &mut n);
            for i in 0..n as usize {
                out.push(string(clang_getTokenSpelling(self.tu, *toks.add(i))));
            }
            if !toks.is_null() {
                clang_disposeTokens(self.tu, toks, n);
            }
        }
        out
    }
}

impl Drop for Unit<'_> {
    fn drop(&mut self) {
        // SAFETY: parsed by clang_parseTranslationUnit2, disposed of once.
        unsafe { clang_disposeTranslationUnit(self.tu) }
    }
}

fn string(s: CXString) -> String {
    // SAFETY: the CXString is valid and disposed of after copying.
    unsafe {
        let p = clang_getCString(s);
        let out = if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        };
        clang_disposeString(s);
        out
    }
}

#[derive(Clone, Copy)]
pub struct Cursor(pub CXCursor);

/// A place in a file: libclang's file location (a macro argument where it
/// is written, a macro body's token where the macro is used).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    pub file: String,
    pub line: u32,
    pub offset: u32,
}

extern "C" fn collect(c: CXCursor, _parent: CXCursor, data: CXClientData) -> CXChildVisitResult {
    // SAFETY: data is the Vec passed by `children`.
    let v = unsafe { &mut *(data as *mut Vec<Cursor>) };
    v.push(Cursor(c));
    CXChildVisit_Continue
}

impl Cursor {
    pub fn kind(self) -> CXCursorKind {
        // SAFETY: a cursor of a live unit.
        unsafe { clang_getCursorKind(self.0) }
    }

    pub fn children(self) -> Vec<Cursor> {
        let mut v: Vec<Cursor> = Vec::new();
        // SAFETY: the visitor only pushes into `v`, which outlives the call.
        unsafe {
            clang_visitChildren(self.0, collect, &mut v as *mut Vec<Cursor> as *mut c_void);
        }
        v
    }

    pub fn spelling(self) -> String {
        // SAFETY: a cursor of a live unit.
        string(unsafe { clang_getCursorSpelling(self.0) })
    }

    pub fn referenced(self) -> Option<Cursor> {
        // SAFETY: a cursor of a live unit; a null cursor is checked.
        let r = unsafe { clang_getCursorReferenced(self.0) };
        (unsafe { clang_Cursor_isNull(r) } == 0).then_some(Cursor(r))
    }

    pub fn semantic_parent(self) -> Option<Cursor> {
        // SAFETY: as above.
        let r = unsafe { clang_getCursorSemanticParent(self.0) };
        (unsafe { clang_Cursor_isNull(r) } == 0).then_some(Cursor(r))
    }

    pub fn is_anonymous(self) -> bool {
        // SAFETY: a record declaration cursor.
        unsafe { clang_Cursor_isAnonymous(self.0) != 0 }
    }

    /// Whether the function has internal linkage (`static`, `static
    /// inline` of a header): every caller is in the translation units that see it.
    pub fn is_internal(self) -> bool {
        // SAFETY: a cursor of a live unit.
        unsafe { clang_getCursorLinkage(self.0) == CXLinkage_Internal }
    }

    /// The tokens from the start of this cursor to the start of `end` (a
    /// function's header: `static noinline bool __init f(...) __must_hold(l)`).
    pub fn tokens_until(self, unit: &Unit, end: Cursor) -> Vec<String> {
        // SAFETY: cursors of a live unit.
        let range = unsafe {
            clang_getRange(
                clang_getRangeStart(clang_getCursorExtent(self.0)),
                clang_getRangeStart(clang_getCursorExtent(end.0)),
            )
        };
        unit.range_tokens(range)
    }

    /// A field's offset in its record, in bits (negative when unknown).
    pub fn field_bit_offset(self) -> i64 {
        // SAFETY: a field declaration cursor.
        unsafe { clang_Cursor_getOffsetOfField(self.0) }
    }

    pub fn is_bit_field(self) -> bool {
        // SAFETY: a field declaration cursor.
        unsafe { clang_Cursor_isBitField(self.0) != 0 }
    }

    /// The size and alignment of this cursor's type in bytes (0 when incomplete).
    pub fn type_size_align(self) -> (u64, u64) {
        // SAFETY: a cursor of a live unit.
        unsafe {
            let t = clang_getCursorType(self.0);
            (
                clang_Type_getSizeOf(t).max(0) as u64,
                clang_Type_getAlignOf(t).max(1) as u64,
            )
        }
    }

    pub fn type_name(self) -> String {
        // SAFETY: a cursor of a live unit.
        unsafe { string(clang_getTypeSpelling(clang_getCursorType(self.0))) }
    }

    /// The declaration of this cursor's type (a record's).
    pub fn type_declaration(self) -> Option<Cursor> {
        // SAFETY: a cursor of a live unit; a null cursor is checked.
        let d = unsafe { clang_getTypeDeclaration(clang_getCursorType(self.0)) };
        (unsafe { clang_Cursor_isNull(d) } == 0).then_some(Cursor(d))
    }

    /// The definition of the struct or union this cursor's type is, an
    /// array's elements are, or its pointer points to (through typedefs).
    pub fn record_of_type(self) -> Option<Cursor> {
        // SAFETY: a cursor of a live unit; a null cursor is checked.
        unsafe {
            let mut t = clang_getCanonicalType(clang_getCursorType(self.0));
            for _ in 0..4 {
                t = match t.kind {
                    CXType_ConstantArray | CXType_IncompleteArray | CXType_VariableArray => {
                        clang_getCanonicalType(clang_getArrayElementType(t))
                    }
                    CXType_Pointer => clang_getCanonicalType(clang_getPointeeType(t)),
                    _ => break,
                };
            }
            if t.kind != CXType_Record {
                return None;
            }
            let d = clang_getTypeDeclaration(t);
            if clang_Cursor_isNull(d) != 0 {
                return None;
            }
            let def = clang_getCursorDefinition(d);
            Some(Cursor(if clang_Cursor_isNull(def) != 0 {
                d
            } else {
                def
            }))
        }
    }

    /// Whether the cursor is in the main file (not in a header it includes).
    pub fn in_main_file(self) -> bool {
        // SAFETY: a cursor of a live unit.
        unsafe { clang_Location_isFromMainFile(clang_getCursorLocation(self.0)) != 0 }
    }

    pub fn is_definition(self) -> bool {
        // SAFETY: a cursor of a live unit.
        unsafe { clang_isCursorDefinition(self.0) != 0 }
    }

    /// The canonical spelling of this expression's type, and of what it points to.
    pub fn type_keys(self) -> (String, Option<String>) {
        // SAFETY: a cursor of a live unit.
        unsafe {
            let t = clang_getCanonicalType(clang_getCursorType(self.0));
            let pointee = (t.kind == CXType_Pointer).then(|| {
                string(clang_getTypeSpelling(clang_getCanonicalType(
                    clang_getPointeeType(t),
                )))
            });
            (string(clang_getTypeSpelling(t)), pointee)
        }
    }

    pub fn type_is_pointer(self) -> bool {
        // SAFETY: a cursor of a live unit.
        unsafe { clang_getCanonicalType(clang_getCursorType(self.0)).kind == CXType_Pointer }
    }

    /// Whether its type is a pointer to a function.
    pub fn type_is_function_pointer(self) -> bool {
        // SAFETY: a cursor of a live unit.
        unsafe {
            let t = clang_getCanonicalType(clang_getCursorType(self.0));
            t.kind == CXType_Pointer
                && matches!(
                    clang_getCanonicalType(clang_getPointeeType(t)).kind,
                    CXType_FunctionProto | CXType_FunctionNoProto
                )
        }
    }

    /// The cursor of its definition (a global's, with its initializer).
    pub fn definition(self) -> Option<Cursor> {
        // SAFETY: a cursor of a live unit; a null cursor is checked.
        let d = unsafe { clang_getCursorDefinition(self.0) };
        (unsafe { clang_Cursor_isNull(d) } == 0).then_some(Cursor(d))
    }

    /// Of a function the unit defines: its `index`-th parameter and its
    /// body.
    pub fn param_and_body(self, index: u32) -> Option<(Cursor, Cursor)> {
        let kids = self.definition()?.children();
        let param = kids
            .iter()
            .filter(|c| c.kind() == CXCursor_ParmDecl)
            .nth(index as usize)
            .copied()?;
        let body = kids
            .iter()
            .find(|c| c.kind() == CXCursor_CompoundStmt)
            .copied()?;
        Some((param, body))
    }

    pub fn type_is_array(self) -> bool {
        // SAFETY: a cursor of a live unit.
        let k = unsafe { clang_getCanonicalType(clang_getCursorType(self.0)).kind };
        matches!(
            k,
            CXType_ConstantArray | CXType_IncompleteArray | CXType_VariableArray
        )
    }

    /// Whether the `i`-th parameter of this function declaration points to
    /// `const` data (the function only reads what it is given).
    pub fn param_points_to_const(self, i: u32) -> bool {
        // SAFETY: a cursor of a live unit; an out-of-range argument is a null cursor.
        unsafe {
            if clang_Cursor_getNumArguments(self.0) <= i as i32 {
                return false;
            }
            let p = clang_Cursor_getArgument(self.0, i);
            if clang_Cursor_isNull(p) != 0 {
                return false;
            }
            let t = clang_getCanonicalType(clang_getCursorType(p));
            t.kind == CXType_Pointer && clang_isConstQualifiedType(clang_getPointeeType(t)) != 0
        }
    }

    /// Whether this expression's type points to volatile data (`READ_ONCE`'s cast).
    pub fn points_to_volatile(self) -> bool {
        // SAFETY: a cursor of a live unit.
        unsafe {
            let t = clang_getCursorType(self.0);
            t.kind == CXType_Pointer && clang_isVolatileQualifiedType(clang_getPointeeType(t)) != 0
        }
    }

    /// The integer value of a constant expression.
    pub fn eval_int(self) -> Option<i64> {
        // SAFETY: the result is disposed of after reading.
        unsafe {
            let r = clang_Cursor_Evaluate(self.0);
            if r.is_null() {
                return None;
            }
            let v = (clang_EvalResult_getKind(r) == CXEval_Int)
                .then(|| clang_EvalResult_getAsLongLong(r));
            clang_EvalResult_dispose(r);
            v
        }
    }

    fn location(loc: CXSourceLocation) -> Place {
        let mut file: CXFile = std::ptr::null_mut();
        let (mut line, mut col, mut off) = (0, 0, 0);
        // SAFETY: out-pointers to locals.
        unsafe { clang_getFileLocation(loc, &mut file, &mut line, &mut col, &mut off) };
        let name = if file.is_null() {
            String::new()
        } else {
            // SAFETY: a file of a live unit.
            string(unsafe { clang_getFileName(file) })
        };
        Place {
            file: name,
            line,
            offset: off,
        }
    }

    pub fn place(self) -> Place {
        // SAFETY: a cursor of a live unit.
        Cursor::location(unsafe { clang_getCursorLocation(self.0) })
    }

    /// The start and end of the extent (file locations).
    pub fn extent(self) -> (Place, Place) {
        // SAFETY: a cursor of a live unit.
        unsafe {
            let r = clang_getCursorExtent(self.0);
            (
                Cursor::location(clang_getRangeStart(r)),
                Cursor::location(clang_getRangeEnd(r)),
            )
        }
    }
}

impl Cursor {
    pub fn same(self, other: Cursor) -> bool {
        // SAFETY: cursors of a live unit.
        unsafe { clang_equalCursors(self.0, other.0) != 0 }
    }

    /// The offset in bits of the member `name` (found through anonymous
    /// members) in this record declaration's type.
    pub fn member_bit_offset(self, name: &str) -> Option<i64> {
        let c = CString::new(name).ok()?;
        // SAFETY: a record cursor of a live unit; `c` outlives the call.
        let v = unsafe { clang_Type_getOffsetOf(clang_getCursorType(self.0), c.as_ptr()) };
        (v >= 0).then_some(v)
    }
}
