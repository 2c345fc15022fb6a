//! The exit statuses of the command line.

/// Exit status when a command succeeded.
pub const EXIT_OK: u8 = 0;
/// Exit status when `show` finds a hard conflict (so it can gate CI).
pub const EXIT_CONFLICT: u8 = 1;
/// Exit status for bad input.
pub const EXIT_BAD_INPUT: u8 = 2;
