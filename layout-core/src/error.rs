//! Errors a user sees: one line, with the file and line where they apply and
//! what to add or change.

use std::fmt;
use std::path::{Path, PathBuf};

/// A user-facing error: `FILE:LINE:COL: error: MESSAGE; help: HINT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: Option<PathBuf>,
    /// 1-based; 0 when the error applies to the whole file.
    pub line: usize,
    /// 1-based; 0 when unknown.
    pub column: usize,
    pub message: String,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn new(message: impl Into<String>) -> Self {
        Diagnostic {
            file: None,
            line: 0,
            column: 0,
            message: message.into(),
            help: None,
        }
    }

    pub fn in_file(mut self, file: impl AsRef<Path>) -> Self {
        self.file = Some(file.as_ref().to_path_buf());
        self
    }

    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.line = line;
        self.column = column;
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}", file.display())?;
            if self.line > 0 {
                write!(f, ":{}", self.line)?;
                if self.column > 0 {
                    write!(f, ":{}", self.column)?;
                }
            }
            write!(f, ": ")?;
        }
        write!(f, "error: {}", OneLine(&self.message))?;
        if let Some(h) = &self.help {
            write!(f, "; help: {}", OneLine(h))?;
        }
        Ok(())
    }
}

/// A message as one line: a control character other than a tab (a newline
/// or an escape in a name that came from the input) is written escaped, as
/// `\n`.
struct OneLine<'a>(&'a str);

impl fmt::Display for OneLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if c.is_control() && c != '\t' {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

/// 1-based line and column of a byte offset in `text`.
pub fn line_col(text: &str, byte: usize) -> (usize, usize) {
    let byte = byte.min(text.len());
    let before = &text[..byte];
    let line = before.matches('\n').count() + 1;
    let col = byte - before.rfind('\n').map(|p| p + 1).unwrap_or(0) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_a_newline_from_the_input_stays_on_one_line() {
        let d = Diagnostic::new("struct arrays: member `counters\nint` ends past it")
            .help("check the\x1b[2J input");
        let text = d.to_string();
        assert!(!text.contains('\n') && !text.contains('\x1b'), "{text}");
        assert!(text.contains("`counters\\nint`"), "{text}");
    }
}
