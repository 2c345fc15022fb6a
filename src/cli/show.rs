//! `cachelayout show`: the layout as declared, its lines and its conflicts.

use super::args::{ShowArgs, ShowFormat};
use super::{input, EXIT_CONFLICT, EXIT_OK};
use layout_core::{layout, report, Diagnostic};

pub fn run(a: &ShowArgs) -> Result<u8, Diagnostic> {
    let loaded = input::load(&a.input)?;
    let s = &loaded.model;
    let l = &loaded.declared;
    let conflicts = layout::reported_conflicts(s, l);
    match a.format {
        ShowFormat::Json => {
            println!("{}", serde_json::to_string_pretty(&report::layout_json(s, l)).expect("JSON values always serialise"));
        }
        ShowFormat::Table => {
            print!("{}", report::table(s, l));
            if !conflicts.is_empty() {
                let lines = report::conflict_lines(s, l);
                println!();
                print!("{}", report::diagram(s, l, &lines));
                println!(
                    "\n{} hard conflict(s): a lockless field shares a cache line with read-mostly data.\n\
                     Run `cachelayout propose` with the same arguments for a fix.",
                    conflicts.len()
                );
            }
        }
    }
    Ok(if conflicts.is_empty() { EXIT_OK } else { EXIT_CONFLICT })
}
