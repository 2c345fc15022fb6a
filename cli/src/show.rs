//! `cachelayout show`: the layout as declared, its lines and its conflicts.

use crate::exit::{EXIT_CONFLICT, EXIT_OK};
use crate::input;
use crate::input_args::InputArgs;
use clap::{Args, ValueEnum};
use layout_core::report::LayoutView;
use layout_core::Diagnostic;
use std::fmt::Write as _;

#[derive(Args, Debug)]
pub struct ShowArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[arg(long, value_enum, default_value_t = ShowFormat::Table)]
    pub format: ShowFormat,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShowFormat {
    Table,
    Json,
}

pub fn run(a: &ShowArgs) -> Result<u8, Diagnostic> {
    let loaded = input::load(&a.input)?;
    let s = &loaded.model;
    let l = &loaded.declared;
    let view = LayoutView::new(s, l);
    let conflicts = &view.conflicts;
    let mut out = String::new();
    match a.format {
        ShowFormat::Json => out = view.json().to_pretty(),
        ShowFormat::Table => {
            out.push_str(&view.table());
            out.push_str(&LayoutView::paths_text(&view, None));
            if !conflicts.is_empty() {
                let _ = write!(
                    out,
                    "\n{}\n{} hard conflict(s): a lockless field or lock word shares a cache line with read-mostly data.\n\
                     Run `cachelayout propose` with the same arguments for a fix.\n",
                    view.diagram(&view.conflict_lines()),
                    conflicts.len()
                );
            }
            // Where the types embed the struct, and which phases were checked.
            if !l.placement.offsets().is_empty() {
                out.push_str(&layout_core::containers::placement_note(
                    loaded.embedders.as_deref(),
                    &l.placement,
                    l.line,
                    &[],
                    false,
                ));
            }
        }
    }
    crate::output::print_stdout(&out)?;
    if let Some(d) = &loaded.type_defaults {
        eprintln!("{}", d.note());
    }
    Ok(if conflicts.is_empty() {
        EXIT_OK
    } else {
        EXIT_CONFLICT
    })
}
