//! The `cachelayout` command line: `show` a struct's layout, `propose` a
//! better one, `growth` of the structs that embed it, `scan` a whole program.
//!
//! Each subcommand lives in its own module, its arguments beside its run;
//! [`command`] gathers them into the command line. They share the input
//! arguments of [`input_args`] and the input loading of [`input`].
//! Everything they decide comes from layout-core: this crate is the
//! arguments and the output.

#[cfg(feature = "infer-clang")]
mod audit;
mod command;
mod configs;
mod exit;
mod growth;
mod infer;
#[cfg(feature = "infer-clang")]
mod infer_clang;
mod input;
mod input_args;
#[cfg(feature = "infer-clang")]
mod limits;
mod mail;
mod output;
mod propose;
mod scan;
mod show;

use clap::Parser;
use command::{Cli, Command};
use exit::EXIT_BAD_INPUT;
use layout_core::files;
use std::process::ExitCode;

fn main() -> ExitCode {
    #[cfg(feature = "infer-clang")]
    if let Some(code) = limits::child_entry() {
        return code;
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version print to stdout and exit 0.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            eprintln!("{}", one_line(&usage_error(&e)));
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    files::set_limit(cli.max_input_bytes);
    let result = match &cli.command {
        Command::Show(a) => show::run(a),
        Command::Propose(a) => propose::run(a),
        Command::Growth(a) => growth::run(a),
        Command::Scan(a) => scan::run(a),
        Command::Infer(a) => infer::run(a),
        #[cfg(feature = "infer-clang")]
        Command::Audit(a) => audit::run(a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("{}", one_line(&e.to_string()));
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// A command-line error from clap (an unknown flag, a bad value, a missing
/// argument) as one line, like every other error: `error: ...; help: ...`,
/// with clap's usage line and its pointer to `--help` as the help.
fn usage_error(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let mut what = Vec::new();
    let mut usage = None;
    for line in rendered.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(u) = line.strip_prefix("Usage: ") {
            usage = Some(u.to_string());
        } else if !line.starts_with("For more information, try") {
            what.push(line);
        }
    }
    let help = match usage {
        Some(u) => format!("usage: {u}; see --help"),
        None => "see --help".to_string(),
    };
    format!("{}; help: {help}", what.join(" "))
}

/// Longest word of an error message shown in full; longer ones (a 10 MB
/// value or name echoed from the input) are cut in the middle.
const MAX_WORD: usize = 120;

/// An error as one line: control characters (line breaks of echoed input)
/// become spaces, and words longer than [`MAX_WORD`] bytes are shortened,
/// saying how long they were.
fn one_line(message: &str) -> String {
    let flat: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut out = String::with_capacity(flat.len().min(4 * MAX_WORD));
    for (i, word) in flat.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if word.len() <= MAX_WORD {
            out.push_str(word);
            continue;
        }
        let head_end = (0..=MAX_WORD / 2)
            .rev()
            .find(|&b| word.is_char_boundary(b))
            .unwrap_or(0);
        let tail_start = (word.len() - MAX_WORD / 4..word.len())
            .find(|&b| word.is_char_boundary(b))
            .unwrap_or(word.len());
        out.push_str(&word[..head_end]);
        out.push_str(&format!("…[{} bytes]…", word.len()));
        out.push_str(&word[tail_start..]);
    }
    out
}
