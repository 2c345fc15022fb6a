//! The `cachelayout` command line: `show` a struct's layout, `propose` a better one,
//! `growth` of the structs that embed it, `scan` a whole program (see `cli`).

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::run()
}
