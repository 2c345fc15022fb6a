//! The C tokenizer every scan of C text uses: it keeps byte ranges, and is
//! enough for the C front-end's preprocessor (which lines are directives,
//! where attribute macros sit) and constant expressions, and for the
//! emitters' searches of a header (attributes, braces) that must skip
//! comments and literals. It never fails: bytes it does not know become
//! `Other` tokens.

use std::ops::Range;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokKind {
    Ident,
    /// A preprocessing number: `4`, `0x10UL`, `1e3`.
    Number,
    CharLit,
    StrLit,
    Punct,
    /// `/* ... */` or `// ...` (without the newline).
    Comment,
    /// A newline that ends a logical line (not one inside a block comment,
    /// not one escaped with a backslash).
    Newline,
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tok {
    pub kind: TokKind,
    pub range: Range<usize>,
}

impl Tok {
    pub fn text<'a>(&self, src: &'a str) -> &'a str {
        &src[self.range.clone()]
    }
}

/// Punctuators, longest first so that the first match is the longest.
const PUNCTS: &[&str] = &[
    "<<=", ">>=", "...", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "##", "++", "--", "->",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "+", "-", "*", "/", "%", "<", ">", "=", "!",
    "~", "&", "|", "^", "?", ":", ",", "(", ")", "[", "]", "{", "}", ";", ".", "#",
];

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Splits `src` into tokens. Whitespace and backslash-newlines are skipped.
pub(crate) fn tokenize(src: &str) -> Vec<Tok> {
    let bytes = src.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let start = i;
        let kind = match b {
            b'\n' => {
                i += 1;
                TokKind::Newline
            }
            b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c' => {
                i += 1;
                continue;
            }
            b'\\' if bytes.get(i + 1) == Some(&b'\n') => {
                i += 2;
                continue;
            }
            b'\\' if bytes.get(i + 1) == Some(&b'\r') && bytes.get(i + 2) == Some(&b'\n') => {
                i += 3;
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = match src[i + 2..].find("*/") {
                    Some(p) => i + 2 + p + 2,
                    None => bytes.len(),
                };
                TokKind::Comment
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = line_comment_end(bytes, i);
                TokKind::Comment
            }
            b'"' | b'\'' => {
                i = quoted_end(bytes, i);
                if b == b'"' {
                    TokKind::StrLit
                } else {
                    TokKind::CharLit
                }
            }
            _ if is_ident_start(b) => {
                while i < bytes.len() && is_ident_continue(bytes[i]) {
                    i += 1;
                }
                TokKind::Ident
            }
            _ if b.is_ascii_digit()
                || (b == b'.' && bytes.get(i + 1).is_some_and(|c| c.is_ascii_digit())) =>
            {
                i = number_end(bytes, i);
                TokKind::Number
            }
            _ => match PUNCTS.iter().find(|p| src[i..].starts_with(**p)) {
                Some(p) => {
                    i += p.len();
                    TokKind::Punct
                }
                None => {
                    // One whole UTF-8 character.
                    i += src[i..].chars().next().map_or(1, char::len_utf8);
                    TokKind::Other
                }
            },
        };
        toks.push(Tok {
            kind,
            range: start..i,
        });
    }
    toks
}

/// End of a `//` comment: before the newline, following backslash-newlines.
fn line_comment_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i] != b'\n' {
        if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'\n') {
            i += 2;
        } else {
            i += 1;
        }
    }
    i
}

/// End of a string or character literal starting at `i` (exclusive); stops
/// at an unescaped newline when the literal is not closed.
fn quoted_end(bytes: &[u8], i: usize) -> usize {
    let quote = bytes[i];
    let mut j = i + 1;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b'\n' => return j,
            c if c == quote => return j + 1,
            _ => j += 1,
        }
    }
    bytes.len()
}

fn number_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() {
        let c = bytes[i];
        let exponent_sign =
            matches!(c, b'+' | b'-') && matches!(bytes[i - 1], b'e' | b'E' | b'p' | b'P');
        if exponent_sign || is_ident_continue(c) || c == b'.' {
            i += 1;
        } else {
            break;
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(TokKind, &str)> {
        tokenize(src)
            .into_iter()
            .map(|t| (t.kind, &src[t.range]))
            .collect()
    }

    #[test]
    fn splits_code_comments_and_newlines() {
        let src = "int a; /* x\n y */ // z\n#define N (1<<3)\\\n+2\n";
        let k = kinds(src);
        assert_eq!(k[0], (TokKind::Ident, "int"));
        assert_eq!(k[3], (TokKind::Comment, "/* x\n y */"));
        assert_eq!(k[4], (TokKind::Comment, "// z"));
        assert_eq!(k[5], (TokKind::Newline, "\n"));
        assert_eq!(k[6], (TokKind::Punct, "#"));
        let shift = k.iter().position(|t| t.1 == "<<").unwrap();
        assert_eq!(k[shift + 1], (TokKind::Number, "3"));
        // the escaped newline is not a token; the last one is
        let newlines = k.iter().filter(|t| t.0 == TokKind::Newline).count();
        assert_eq!(newlines, 2);
    }

    #[test]
    fn numbers_literals_and_unknown_bytes() {
        let k = kinds("0x1fUL 1e+3 'a' \"s\\\"t\" @ é");
        assert_eq!(k[0], (TokKind::Number, "0x1fUL"));
        assert_eq!(k[1], (TokKind::Number, "1e+3"));
        assert_eq!(k[2], (TokKind::CharLit, "'a'"));
        assert_eq!(k[3], (TokKind::StrLit, "\"s\\\"t\""));
        assert_eq!(k[4], (TokKind::Other, "@"));
        assert_eq!(k[5], (TokKind::Other, "é"));
    }

    #[test]
    fn unterminated_things_end_at_eof_or_line() {
        assert_eq!(kinds("/* open")[0], (TokKind::Comment, "/* open"));
        assert_eq!(kinds("'ab\nx")[0], (TokKind::CharLit, "'ab"));
    }
}
