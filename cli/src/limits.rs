//! The limits of each translation unit's parse (`infer --source`,
//! `audit`), and the hidden entry that makes this program one unit's
//! parser: libclang runs in a child process of this same executable, with
//! an address-space and a CPU limit (layout-core's `infer::clang::isolate`).

use clap::Args;
use layout_core::infer::clang::isolate::{self, Isolation, Limits};
use layout_core::Diagnostic;
use std::process::ExitCode;

/// The flags of the per-unit limits (flattened into infer's and audit's).
#[derive(Args, Debug, Clone)]
pub struct UnitLimitArgs {
    /// The address space each translation unit's parse may use, in MiB (libclang runs
    /// in a child process; a unit past it is an error naming it).
    #[arg(long, default_value_t = Limits::default().memory_mb, value_name = "MB",
          value_parser = clap::value_parser!(u64).range(256..=1 << 24))]
    pub unit_memory_mb: u64,
    /// The CPU seconds each translation unit's parse and walk may take.
    #[arg(long, default_value_t = Limits::default().cpu_seconds, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub unit_seconds: u64,
}

impl UnitLimitArgs {
    /// The isolation of each unit: this program as the child, with these limits.
    pub fn isolation(&self) -> Result<Isolation, Diagnostic> {
        let exe = std::env::current_exe().map_err(|e| {
            Diagnostic::new(format!("cannot find this program's own executable: {e}")).help(
                "run cachelayout by a path that exists (its units are parsed by a copy of it)",
            )
        })?;
        Ok(Isolation {
            exe,
            limits: Limits {
                memory_mb: self.unit_memory_mb,
                cpu_seconds: self.unit_seconds,
            },
        })
    }
}

/// When this process is a unit's parser (the hidden first argument), its
/// exit status; `None` for a normal run.
pub fn child_entry() -> Option<ExitCode> {
    let first = std::env::args_os().nth(1)?;
    (first == isolate::CHILD_ARG).then(|| ExitCode::from(isolate::child_main()))
}
