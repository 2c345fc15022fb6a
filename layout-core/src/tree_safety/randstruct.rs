//! `__randomize_layout`: the author's word that no code depends on the
//! member order (randstruct insists on designated initializers), so any
//! order is allowed. With `CONFIG_RANDSTRUCT` the compiler shuffles the
//! members anyway; a proposal holds for builds without it. [`note`] says
//! so, for the summary, the changelog and the JSON, naming what the
//! configuration read chose.

use crate::files::{self, Input};
use crate::source::StructSource;
use std::path::Path;

/// The options that turn randstruct on (6.1's, and the GCC plugin's of
/// older trees).
const RANDSTRUCT_ON: &[&str] = &[
    "CONFIG_RANDSTRUCT_FULL",
    "CONFIG_RANDSTRUCT_PERFORMANCE",
    "CONFIG_GCC_PLUGIN_RANDSTRUCT",
];

/// The note of struct `strukt`, defined in `src`, when its definition is
/// marked `__randomize_layout` or `randomized_struct_fields_start`;
/// `configuration`: the `.config` the struct was read in.
pub fn note(src: &StructSource, strukt: &str, configuration: Option<&str>) -> Option<String> {
    let fact = super::definition::facts(src)
        .into_iter()
        .find(|f| f.kind == super::SiteKind::RandomizedLayout)?;
    let marker = if src.text[fact.byte..].starts_with("randomized_struct_fields_start") {
        "randomized_struct_fields_start"
    } else {
        "__randomize_layout"
    };
    // The configuration is named where the constraints are (its path is
    // the reader's machine's, no part of a mail).
    let builds = match configuration.and_then(|c| enabled(Path::new(c))) {
        Some(None) => "for builds without it, such as the configuration read".to_string(),
        Some(Some(on)) => format!(
            "for builds without it; the configuration read sets {on}=y, and there the \
             compiler's order stands"
        ),
        None => "for builds without it".to_string(),
    };
    Some(format!(
        "struct {strukt} is marked {marker}: no code may depend on its member order, so any \
         order is allowed; a CONFIG_RANDSTRUCT build shuffles the members whatever the order, \
         and the proposal holds {builds}"
    ))
}

/// Which randstruct option the configuration at `path` sets (`Some(None)`:
/// none); `None` when it cannot be read.
fn enabled(path: &Path) -> Option<Option<&'static str>> {
    let bytes = files::read(path, Input::Config).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    Some(RANDSTRUCT_ON.iter().copied().find(|on| {
        text.lines()
            .any(|l| l.trim().strip_prefix(on).is_some_and(|v| v.trim() == "=y"))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::StructSource;

    fn source(text: &str) -> StructSource {
        StructSource::of_text("include/linux/s.h", text)
    }

    #[test]
    fn the_note_names_the_marker_and_what_the_configuration_chose() {
        let src = source("struct s {\n\tint a;\n\tlong b;\n} __randomize_layout;\n");
        let dir = tempfile::tempdir().unwrap();
        let none = dir.path().join("none.config");
        std::fs::write(&none, "CONFIG_RANDSTRUCT_NONE=y\n").unwrap();
        let full = dir.path().join("full.config");
        std::fs::write(&full, "# c\nCONFIG_RANDSTRUCT_FULL=y\n").unwrap();
        let n = note(&src, "s", none.to_str()).unwrap();
        assert!(
            n.starts_with("struct s is marked __randomize_layout: "),
            "{n}"
        );
        assert!(n.ends_with("such as the configuration read"), "{n}");
        let n = note(&src, "s", full.to_str()).unwrap();
        assert!(n.contains("sets CONFIG_RANDSTRUCT_FULL=y"), "{n}");
        let n = note(&src, "s", None).unwrap();
        assert!(n.ends_with("holds for builds without it"), "{n}");
        let plain = source("struct s {\n\tint a;\n};\n");
        assert_eq!(note(&plain, "s", None), None);
        let fields = source("struct s {\n\trandomized_struct_fields_start\n\tint a;\n\trandomized_struct_fields_end\n};\n");
        let n = note(&fields, "s", None).unwrap();
        assert!(n.contains("marked randomized_struct_fields_start"), "{n}");
    }
}
