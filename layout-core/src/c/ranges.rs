//! Whole-line byte ranges of struct members, so that a member moves with
//! its leading comment block and its trailing comment.

use std::ops::Range;

pub(crate) struct LineRanges<'a> {
    pub text: &'a str,
    /// Comments in active code, sorted.
    pub comments: &'a [Range<usize>],
}

impl LineRanges<'_> {
    fn line_start(&self, at: usize) -> usize {
        self.text[..at].rfind('\n').map_or(0, |p| p + 1)
    }

    fn comment_containing(&self, byte: usize) -> Option<&Range<usize>> {
        let k = self.comments.partition_point(|c| c.end <= byte);
        self.comments.get(k).filter(|c| c.start <= byte)
    }

    fn comment_starting_at(&self, byte: usize) -> Option<&Range<usize>> {
        let k = self.comments.partition_point(|c| c.start < byte);
        self.comments.get(k).filter(|c| c.start == byte)
    }

    /// Leading whitespace of the line holding `at`.
    pub fn indent(&self, at: usize) -> String {
        let start = self.line_start(at);
        self.text[start..]
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect()
    }

    /// From the first line of the comment block directly above `decl` (no
    /// blank line between, not above the body's `{` line) through the end of
    /// the line of `decl`'s end, with a trailing comment and the newline.
    ///
    /// A member that shares a line with other code (`struct s { int a; int b; };`)
    /// gets only its own bytes on that side, so that no two members' ranges
    /// overlap and each can move alone.
    pub fn member_lines(&self, decl: Range<usize>, body: Range<usize>) -> Range<usize> {
        let line_start = self.line_start(decl.start);
        let alone_at_start = self.text[line_start..decl.start].trim().is_empty();
        let start = if alone_at_start {
            self.block_start(decl.start, body.start)
        } else {
            decl.start
        };
        let end = self.line_end_after(decl.end);
        let end = if self.has_code(decl.end..end) {
            decl.end
        } else {
            end
        };
        start..end
    }

    /// Whether `range` holds anything but blanks and comments.
    fn has_code(&self, range: Range<usize>) -> bool {
        let bytes = self.text.as_bytes();
        let mut p = range.start;
        while p < range.end {
            if bytes[p].is_ascii_whitespace() {
                p += 1;
            } else if let Some(c) = self.comment_starting_at(p) {
                p = c.end;
            } else {
                return true;
            }
        }
        false
    }

    fn block_start(&self, decl_start: usize, body_start: usize) -> usize {
        let mut start = self.line_start(decl_start);
        while start > 0 {
            let prev_start = self.line_start(start - 1);
            if prev_start < body_start {
                break;
            }
            match self.comment_chain_start(prev_start, start - 1) {
                Some(s) if s >= body_start => start = self.line_start(s),
                _ => break,
            }
        }
        start
    }

    /// If the line `[line_start, line_end)` holds only comments (the first of
    /// which may start on an earlier line), the start of the first comment.
    fn comment_chain_start(&self, line_start: usize, line_end: usize) -> Option<usize> {
        let bytes = self.text.as_bytes();
        let (mut p, mut ls) = (line_end, line_start);
        let mut first = None;
        loop {
            while p > ls && bytes[p - 1].is_ascii_whitespace() {
                p -= 1;
            }
            if p == ls {
                return first;
            }
            let c = self.comment_containing(p - 1)?;
            if c.end != p {
                return None;
            }
            first = Some(c.start);
            p = c.start;
            ls = self.line_start(c.start);
        }
    }

    /// After `end` (the byte after a `;`): skip blanks and comments to the
    /// newline and return the byte after it; if code follows on the line,
    /// the end of that line.
    pub fn line_end_after(&self, end: usize) -> usize {
        let bytes = self.text.as_bytes();
        let mut p = end;
        loop {
            while p < bytes.len() && matches!(bytes[p], b' ' | b'\t' | b'\r') {
                p += 1;
            }
            if p >= bytes.len() {
                return bytes.len();
            }
            if bytes[p] == b'\n' {
                return p + 1;
            }
            match self.comment_starting_at(p) {
                Some(c) => p = c.end,
                None => return self.text[p..].find('\n').map_or(bytes.len(), |q| p + q + 1),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comments(text: &str) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        let mut i = 0;
        while let Some(p) = text[i..].find("/*") {
            let s = i + p;
            let e = s + text[s..].find("*/").unwrap() + 2;
            out.push(s..e);
            i = e;
        }
        out
    }

    fn lines_of<'a>(text: &'a str, decl: &str) -> &'a str {
        let c = comments(text);
        let r = LineRanges { text, comments: &c };
        let s = text.find(decl).unwrap();
        let body = text.find('{').unwrap() + 1..text.rfind('}').unwrap();
        &text[r.member_lines(s..s + decl.len(), body)]
    }

    #[test]
    fn leading_block_and_trailing_comment_travel() {
        let text = "struct s { /* not this */\n\t/* one */\n\t/*\n\t * two\n\t */\n\tint a; /* trail */\n\n\t/* three */\n\tint b;\tint c;\n\tint d; /* x\n\t   y */\n\tint e;\n};\n";
        assert_eq!(
            lines_of(text, "int a;"),
            "\t/* one */\n\t/*\n\t * two\n\t */\n\tint a; /* trail */\n"
        );
        assert_eq!(lines_of(text, "int b;"), "\t/* three */\n\tint b;");
        assert_eq!(lines_of(text, "int c;"), "int c;\n");
        assert_eq!(lines_of(text, "int d;"), "\tint d; /* x\n\t   y */\n");
        assert_eq!(
            lines_of(text, "int e;"),
            "\tint e;\n",
            "a trailing comment of d is not e's"
        );
    }

    #[test]
    fn first_member_on_the_brace_line_and_no_newline_at_eof() {
        let text = "struct s { int a; };";
        assert_eq!(lines_of(text, "int a;"), "int a;");
        let text = "struct s {\n\tint a; /* c */ /* d */";
        let c = comments(text);
        let r = LineRanges { text, comments: &c };
        let s = text.find("int a;").unwrap();
        assert_eq!(r.line_end_after(s + 6), text.len());
        assert_eq!(r.indent(s), "\t");
    }
}
