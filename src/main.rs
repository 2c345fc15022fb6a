//! The `cachelayout` command line: `show` a struct's layout, `propose` a better one.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::run()
}
