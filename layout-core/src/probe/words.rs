//! Splitting a command line into words as a POSIX shell would (quotes and
//! backslashes; no expansions): for `--cc 'CMD …'` and the `command` of a
//! `compile_commands.json` entry.

/// The words of `line`, or `None` when a quote is not closed.
pub fn split(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => word.push(c),
                            '\n' => {}
                            c => {
                                word.push('\\');
                                word.push(c);
                            }
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') | None => {}
                    Some(c) => word.push(c),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(
            split(r#"gcc -DX=\"a\" -D'Y=b c' "-DZ=\"q\"" -I inc  x.c"#).unwrap(),
            [
                "gcc",
                "-DX=\"a\"",
                "-DY=b c",
                "-DZ=\"q\"",
                "-I",
                "inc",
                "x.c"
            ]
        );
        assert_eq!(split("  ").unwrap(), Vec::<String>::new());
        assert_eq!(split("a ''").unwrap(), ["a", ""]);
        assert!(split("gcc 'open").is_none());
    }
}
