//! Command-line interface. Each subcommand lives in its own module; they share
//! the input loading in [`input`].

mod args;
mod blocks;
mod growth;
mod input;
mod probe;
mod propose;
mod scan;
mod show;

use clap::Parser;
use std::process::ExitCode;

/// Exit status when a command succeeded.
pub const EXIT_OK: u8 = 0;
/// Exit status when `show` finds a hard conflict (so it can gate CI).
pub const EXIT_CONFLICT: u8 = 1;
/// Exit status for bad input.
pub const EXIT_BAD_INPUT: u8 = 2;

pub fn run() -> ExitCode {
    let cli = args::Cli::parse();
    let result = match &cli.command {
        args::Command::Show(a) => show::run(a),
        args::Command::Propose(a) => propose::run(a),
        args::Command::Growth(a) => growth::run(a),
        args::Command::Scan(a) => scan::run(a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// Write a command's output to stdout. A closed pipe (`cachelayout show ... | head`)
/// ends the output quietly; any other failure is an error.
pub fn print_stdout(text: &str) -> Result<(), layout_core::Diagnostic> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(layout_core::Diagnostic::new(
            format!("cannot write to stdout: {e}"),
        )),
        _ => Ok(()),
    }
}
