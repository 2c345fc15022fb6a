//! `cachelayout show`: the layout as declared, its lines and its conflicts.

use super::args::{ShowArgs, ShowFormat};
use super::{input, EXIT_CONFLICT, EXIT_OK};
use layout_core::{layout, report, Diagnostic};
use std::fmt::Write as _;

pub fn run(a: &ShowArgs) -> Result<u8, Diagnostic> {
    let loaded = input::load(&a.input)?;
    let s = &loaded.model;
    let l = &loaded.declared;
    let conflicts = layout::reported_conflicts(s, l);
    let mut out = String::new();
    match a.format {
        ShowFormat::Json => {
            out = serde_json::to_string_pretty(&report::layout_json(s, l))
                .expect("JSON values always serialise");
            out.push('\n');
        }
        ShowFormat::Table => {
            out.push_str(&report::table(s, l));
            out.push_str(&report::path_lines_text(s, l, None));
            if !conflicts.is_empty() {
                let lines = report::conflict_lines(s, l);
                let _ = write!(
                    out,
                    "\n{}\n{} hard conflict(s): a lockless field shares a cache line with read-mostly data.\n\
                     Run `cachelayout propose` with the same arguments for a fix.\n",
                    report::diagram(s, l, &lines),
                    conflicts.len()
                );
            }
        }
    }
    super::print_stdout(&out)?;
    Ok(if conflicts.is_empty() {
        EXIT_OK
    } else {
        EXIT_CONFLICT
    })
}
