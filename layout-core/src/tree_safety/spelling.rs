//! How the tree spells the struct: `struct TAG`, and every typedef name
//! for it (`typedef struct TAG name;`, `typedef struct TAG { ... } name;`,
//! and typedefs of those).

use super::tokens::Code;

/// The spellings of one struct in the scanned text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spelling {
    /// The struct's tag (`tcp_sock` in `struct tcp_sock`).
    pub tag: String,
    /// Typedef names that stand for the struct itself (not pointers to it).
    pub aliases: Vec<String>,
}

impl Spelling {
    pub fn new(tag: &str) -> Spelling {
        Spelling {
            tag: tag.to_string(),
            aliases: Vec::new(),
        }
    }

    /// The words a file must contain to hold a use of the struct.
    pub fn words(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.tag.as_str()).chain(self.aliases.iter().map(String::as_str))
    }

    /// `struct tcp_sock`, then the aliases, for the summary.
    pub fn names(&self) -> Vec<String> {
        std::iter::once(format!("struct {}", self.tag))
            .chain(self.aliases.iter().cloned())
            .collect()
    }

    /// If the tokens from `i` spell the struct as a type (`struct TAG`, an
    /// alias, either after `const` or `volatile`), the index just after.
    /// `struct TAG {` (a definition) spells it too; callers look at what
    /// follows.
    pub(crate) fn at(&self, code: &Code, mut i: usize) -> Option<usize> {
        while matches!(code.at(i), "const" | "volatile") {
            i += 1;
        }
        if code.is(i, "struct") && code.is(i + 1, &self.tag) {
            return Some(i + 2);
        }
        (code.is_ident(i) && self.aliases.iter().any(|a| code.is(i, a))).then_some(i + 1)
    }

    /// Whether the tokens of `range` are exactly one spelling of the type
    /// (the first argument of `offsetof`, the operand of `sizeof`).
    pub(crate) fn is_exactly(&self, code: &Code, range: std::ops::Range<usize>) -> bool {
        self.at(code, range.start) == Some(range.end)
    }

    /// Adds the typedef names `code` declares for the struct (or for one of
    /// its aliases); returns whether it found any new one.
    pub(crate) fn learn_typedefs(&mut self, code: &Code) -> bool {
        let mut found = false;
        let mut i = 0;
        while i < code.len() {
            if !code.is(i, "typedef") {
                i += 1;
                continue;
            }
            let Some(mut j) = self.at(code, i + 1) else {
                i += 1;
                continue;
            };
            if code.is(j, "{") {
                match code.closing(j) {
                    Some(c) => j = c + 1,
                    None => break,
                }
            }
            // The declarators up to `;`: a plain name is an alias of the
            // struct; `*name`, `name[..]` and `(*name)(..)` are not.
            let mut pointer = false;
            while j < code.len() && !code.is(j, ";") {
                match code.at(j) {
                    "*" | "(" | "[" => pointer = true,
                    "," => pointer = false,
                    w if code.is_ident(j)
                        && !pointer
                        && is_declarator_end(code.at(j + 1))
                        && !self.aliases.iter().any(|a| a == w)
                        && w != self.tag =>
                    {
                        self.aliases.push(w.to_string());
                        found = true;
                    }
                    _ => {}
                }
                j += 1;
            }
            i = j;
        }
        found
    }
}

fn is_declarator_end(next: &str) -> bool {
    matches!(next, ";" | ",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typedefs_of_the_struct_and_of_its_aliases_are_spellings() {
        let mut s = Spelling::new("foo");
        let c = Code::new(
            "typedef struct foo foo_t, *foo_p;\ntypedef struct foo { int a; } foo2_t;\ntypedef struct bar bar_t;",
        );
        assert!(s.learn_typedefs(&c));
        assert_eq!(s.aliases, ["foo_t", "foo2_t"]);
        let c = Code::new("typedef foo_t foo3_t;");
        assert!(s.learn_typedefs(&c));
        assert_eq!(s.aliases.last().unwrap(), "foo3_t");
        let c = Code::new("const struct foo x; foo_t y;");
        assert_eq!(s.at(&c, 0), Some(3));
        assert_eq!(s.at(&c, 5), Some(6));
    }
}
