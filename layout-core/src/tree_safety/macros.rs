//! Build assertions wrapped in a macro the tree defines
//! (`#define FOLIO_MATCH(pg, fl) static_assert(offsetof(struct page, pg)
//! == offsetof(struct folio, fl))`, then `FOLIO_MATCH(flags, flags);`):
//! the function-like macros whose body asserts at build time, read from
//! the `#define`s of the files scanned and the struct's header, and each
//! use expanded one level, by tokens (the parameters replaced by the
//! arguments' text), for the assertion finder to read as if written out.

use super::tokens::Code;
use std::collections::HashMap;

/// Most parameters a macro this pass expands takes.
const MAX_PARAMS: usize = 16;
/// Most tokens of a body this pass keeps (a longer one is no assertion
/// wrapper).
const MAX_BODY_TOKENS: usize = 512;
/// Most bytes one expansion grows to.
const MAX_EXPANSION: usize = 16 << 10;

/// One definition: where (file, token of `#`), its parameters, its body's
/// tokens.
#[derive(Clone, Debug)]
struct Definition {
    file: usize,
    at: usize,
    /// The token after the body.
    end: usize,
    params: Vec<String>,
    body: Vec<String>,
}

/// The assertion macros of the files read, by name.
#[derive(Clone, Debug, Default)]
pub(crate) struct AssertMacros {
    by_name: HashMap<String, Vec<Definition>>,
}

impl AssertMacros {
    /// Learns the function-like macros of `code` (file `file`) whose body
    /// names one of `asserts`.
    pub fn learn(&mut self, code: &Code, file: usize, asserts: &[&str]) {
        for i in 0..code.len() {
            if !(code.is(i, "#") && code.starts_line(i) && code.is(i + 1, "define")) {
                continue;
            }
            let name = i + 2;
            // Function-like: `(` right after the name, no space between.
            let open = name + 1;
            if !code.is_ident(name)
                || !code.is(open, "(")
                || code.toks[open].start != code.toks[name].end
                || code.starts_line(open)
            {
                continue;
            }
            let Some(close) = code.closing(open) else {
                continue;
            };
            let params: Vec<String> = code
                .elements(open)
                .iter()
                .map(|p| code.at(p.start).to_string())
                .collect();
            if params.len() > MAX_PARAMS || (open + 1..close).any(|t| code.starts_line(t)) {
                continue;
            }
            let end = (close + 1..code.len())
                .find(|&t| code.starts_line(t))
                .unwrap_or(code.len());
            if end - close - 1 > MAX_BODY_TOKENS {
                continue;
            }
            let body: Vec<String> = (close + 1..end).map(|t| code.at(t).to_string()).collect();
            if !body.iter().any(|w| asserts.contains(&w.as_str())) {
                continue;
            }
            // The assertion macros themselves are read by name.
            if asserts.contains(&code.at(name)) {
                continue;
            }
            self.by_name
                .entry(code.at(name).to_string())
                .or_default()
                .push(Definition {
                    file,
                    at: i,
                    end,
                    params,
                    body,
                });
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The tokens of the definitions in file `file` (read at their uses,
    /// not where they are defined).
    pub fn definitions(&self, file: usize) -> Vec<std::ops::Range<usize>> {
        self.by_name
            .values()
            .flatten()
            .filter(|d| d.file == file)
            .map(|d| d.at..d.end)
            .collect()
    }

    /// The macros' names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    /// The expansion of a use of a macro at token `i` of `code` (file
    /// `file`): the definition in effect there (the last one before it in
    /// the same file, else the last one read elsewhere), its parameters
    /// replaced by the arguments' text. `None`: no macro of ours, or its
    /// definition.
    pub fn expand(&self, code: &Code, file: usize, i: usize) -> Option<String> {
        let defs = self.by_name.get(code.at(i))?;
        if !code.is(i + 1, "(") || (i >= 1 && code.is(i - 1, "define")) {
            return None;
        }
        let def = defs
            .iter()
            .rev()
            .find(|d| d.file == file && d.at < i)
            .or_else(|| defs.iter().rev().find(|d| d.file != file))?;
        let args = code.elements(i + 1);
        if args.len() != def.params.len() {
            return None;
        }
        let text = |r: &std::ops::Range<usize>| -> &str {
            let (a, b) = (code.toks[r.start].start, code.toks[r.end - 1].end);
            &code.text[a..b]
        };
        let mut out = String::new();
        for w in &def.body {
            match def.params.iter().position(|p| p == w) {
                Some(k) => out.push_str(text(&args[k])),
                None => out.push_str(w),
            }
            out.push(' ');
            if out.len() > MAX_EXPANSION {
                return None;
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uses_expand_with_the_definition_in_effect() {
        let src = "#define M(a, b) \\\n\tstatic_assert(offsetof(struct s, a) == b)\nM(x, 8);\n\
                   #undef M\n#define M(a, b) static_assert(offsetof(struct s, b) == a)\nM(16, y);\n\
                   #define N (x) static_assert(1)\n#define P(x) f(x)\n";
        let code = Code::new(src);
        let mut m = AssertMacros::default();
        m.learn(&code, 0, &["static_assert"]);
        // `N ` is object-like, `P` asserts nothing.
        assert_eq!(m.names().collect::<Vec<_>>(), ["M"]);
        let uses: Vec<usize> = (0..code.len())
            .filter(|&i| code.is(i, "M") && !code.is(i - 1, "define"))
            .filter(|&i| !code.is(i - 1, "undef"))
            .collect();
        let got: Vec<String> = uses.iter().filter_map(|&i| m.expand(&code, 0, i)).collect();
        assert_eq!(
            got,
            [
                "static_assert ( offsetof ( struct s , x ) == 8 ) ",
                "static_assert ( offsetof ( struct s , y ) == 16 ) ",
            ]
        );
        // Another file sees the last definition read.
        let other = Code::new("M(32, z);\n");
        assert_eq!(
            m.expand(&other, 1, 0).as_deref(),
            Some("static_assert ( offsetof ( struct s , z ) == 32 ) ")
        );
    }
}
