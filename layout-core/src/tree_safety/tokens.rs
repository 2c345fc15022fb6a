//! One source file as the scan sees it: its code tokens (comments, string
//! and character literals and newlines left out by [`crate::lex`]), with
//! the helpers the site finders share: matching brackets, splitting a
//! bracketed list at its top-level commas, and the line and column of a
//! token.

use crate::lex::{self, TokKind};
use std::ops::Range;

/// The code tokens of one file.
pub(crate) struct Code<'a> {
    pub text: &'a str,
    /// Byte ranges of the code tokens, in order.
    pub toks: Vec<Range<usize>>,
    /// Whether each token is an identifier.
    pub ident: Vec<bool>,
    /// Whether each token starts a logical line (a newline, not one
    /// escaped by a backslash, lies between it and the token before).
    pub line_start: Vec<bool>,
    /// Byte offset of each line's start.
    line_starts: Vec<usize>,
    /// For each opening bracket, the index of the one closing it.
    close: Vec<Option<usize>>,
}

impl<'a> Code<'a> {
    pub fn new(text: &'a str) -> Code<'a> {
        let mut toks = Vec::new();
        let mut ident = Vec::new();
        let mut line_start = Vec::new();
        let mut fresh = true;
        for t in lex::tokenize(text) {
            if t.kind == TokKind::Newline {
                fresh = true;
                continue;
            }
            if t.kind != TokKind::Comment {
                line_start.push(fresh);
                fresh = false;
            }
            match t.kind {
                TokKind::Comment | TokKind::Newline | TokKind::StrLit | TokKind::CharLit => {
                    // A literal still separates tokens: keep a placeholder
                    // so that `f("x", a)` keeps its argument count.
                    if matches!(t.kind, TokKind::StrLit | TokKind::CharLit) {
                        toks.push(t.range);
                        ident.push(false);
                    }
                }
                _ => {
                    ident.push(t.kind == TokKind::Ident);
                    toks.push(t.range);
                }
            }
        }
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        // Brackets matched once, so that every later look-up is O(1).
        let mut close = vec![None; toks.len()];
        let mut open: Vec<usize> = Vec::new();
        for (i, r) in toks.iter().enumerate() {
            match &text[r.clone()] {
                "(" | "[" | "{" => open.push(i),
                ")" | "]" | "}" => {
                    if let Some(o) = open.pop() {
                        close[o] = Some(i);
                    }
                }
                _ => {}
            }
        }
        Code {
            text,
            toks,
            ident,
            line_start,
            line_starts,
            close,
        }
    }

    pub fn len(&self) -> usize {
        self.toks.len()
    }

    /// The text of token `i` (empty past the end).
    pub fn at(&self, i: usize) -> &'a str {
        self.toks.get(i).map_or("", |r| &self.text[r.clone()])
    }

    pub fn is(&self, i: usize, s: &str) -> bool {
        self.at(i) == s
    }

    pub fn is_ident(&self, i: usize) -> bool {
        self.ident.get(i).copied().unwrap_or(false)
    }

    /// Whether token `i` starts a logical line (true past the end).
    pub fn starts_line(&self, i: usize) -> bool {
        self.line_start.get(i).copied().unwrap_or(true)
    }

    /// 1-based line and column of token `i`.
    pub fn line_col(&self, i: usize) -> (usize, usize) {
        let byte = self.toks.get(i).map_or(self.text.len(), |r| r.start);
        let line = self.line_starts.partition_point(|&s| s <= byte);
        let start = self.line_starts[line - 1];
        (line, self.text[start..byte].chars().count() + 1)
    }

    /// The index of the bracket closing the one at `open` (`(`, `[` or
    /// `{`), or `None` when the file ends first.
    pub fn closing(&self, open: usize) -> Option<usize> {
        self.close.get(open).copied().flatten()
    }

    /// The elements of the bracketed list opening at `open`: the token
    /// ranges between its top-level commas (empty elements dropped, as a
    /// trailing comma leaves one).
    pub fn elements(&self, open: usize) -> Vec<Range<usize>> {
        let Some(close) = self.closing(open) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut start = open + 1;
        let mut i = open + 1;
        while i < close {
            match self.closing(i) {
                // A nested bracket: skip it whole.
                Some(c) if c < close => i = c,
                _ if self.is(i, ",") => {
                    out.push(start..i);
                    start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        out.push(start..close);
        out.retain(|r| !r.is_empty());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_split_at_top_level_commas_only() {
        let c = Code::new("f(a, g(b, c), {d, e}, \"x,y\",)");
        let els = c.elements(1);
        let texts: Vec<String> = els
            .iter()
            .map(|r| r.clone().map(|i| c.at(i)).collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(texts, ["a", "g ( b , c )", "{ d , e }", "\"x,y\""]);
        assert_eq!(c.line_col(0), (1, 1));
    }

    #[test]
    fn comments_are_not_code_and_lines_are_counted() {
        let c = Code::new("/* struct s v = {1}; */\n  x = 1;");
        assert_eq!(c.at(0), "x");
        assert_eq!(c.line_col(0), (2, 3));
    }
}
