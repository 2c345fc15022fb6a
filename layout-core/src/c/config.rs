//! Kernel configuration files (`.config`, as `make oldconfig` writes them)
//! as [`Defines`]: what Kbuild's generated `autoconf.h` would define.
//!
//! - `CONFIG_X=y` → `CONFIG_X` = 1;
//! - `CONFIG_X=m` → `CONFIG_X_MODULE` = 1 only, as Kbuild's `autoconf.h`
//!   has it: `IS_ENABLED(CONFIG_X)` is true, `#ifdef CONFIG_X` is not (a
//!   header that tests `#ifdef` of a tristate option means "built in", and
//!   the kernel proper is compiled that way);
//! - `CONFIG_X=123`, `CONFIG_X=-5`, `CONFIG_X=0x1000000` → the number;
//! - `CONFIG_X="text"` → 1 (defined; strings have no integer value);
//! - `# CONFIG_X is not set`, other comments and blank lines → nothing.
//!
//! A configuration also means a kernel build, so `__KERNEL__` is defined
//! (Kbuild passes `-D__KERNEL__` to every file).

use super::Defines;
use crate::error::Diagnostic;
use std::path::Path;

/// Reads a kernel `.config` file ([`parse_kernel_config`]).
pub fn load_kernel_config(path: &Path) -> Result<Defines, Diagnostic> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Diagnostic::new(format!("cannot read kernel config: {e}"))
            .in_file(path)
            .help("pass the .config of the kernel build (e.g. /usr/src/linux-headers-VERSION/.config)")
    })?;
    parse_kernel_config(path, &text)
}

/// Parses the text of a kernel `.config`; `path` is used in errors.
pub fn parse_kernel_config(path: &Path, text: &str) -> Result<Defines, Diagnostic> {
    let mut defines = Defines::default();
    defines.insert("__KERNEL__", 1);
    for (k, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |what: &str| {
            Diagnostic::new(format!("{what}: `{line}`"))
                .in_file(path)
                .at(k + 1, raw.len() - raw.trim_start().len() + 1)
                .help("a kernel config line is CONFIG_NAME=y, =m, =NUMBER, =\"text\" or `# CONFIG_NAME is not set`")
        };
        let Some((name, value)) = line.split_once('=') else {
            return Err(bad("not a config assignment"));
        };
        let name = name.trim();
        let valid_name = name.starts_with("CONFIG_")
            && name.len() > "CONFIG_".len()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_name {
            return Err(bad("not a CONFIG_ option name"));
        }
        let value = value.trim();
        match value {
            "y" => defines.insert(name, 1),
            "m" => defines.insert(format!("{name}_MODULE"), 1),
            "n" => {}
            _ if value.len() >= 2 && value.starts_with('"') && value.ends_with('"') => {
                defines.insert(name, 1)
            }
            _ => match parse_number(value) {
                Some(v) => defines.insert(name, v),
                None => return Err(bad("bad config value")),
            },
        }
    }
    Ok(defines)
}

/// A decimal (optionally negative) or `0x` hexadecimal number.
fn parse_number(s: &str) -> Option<i64> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let v = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16).ok().map(|v| v as i64)?,
        None if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            digits.parse::<i64>().ok()?
        }
        None => return None,
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Defines, Diagnostic> {
        parse_kernel_config(Path::new(".config"), text)
    }

    #[test]
    fn values() {
        let d = parse(
            "#\n# Automatically generated file; DO NOT EDIT.\n#\nCONFIG_SMP=y\nCONFIG_EXT4_FS=m\n\
             # CONFIG_CMA is not set\nCONFIG_NR_CPUS=8192\nCONFIG_PHYSICAL_START=0x1000000\n\
             CONFIG_LOCALVERSION=\"\"\nCONFIG_X=\"a=b\"\nCONFIG_NEG=-3\n\n",
        )
        .unwrap();
        assert_eq!(d.get("CONFIG_SMP"), Some(1));
        assert_eq!(d.get("CONFIG_EXT4_FS"), None, "as in autoconf.h");
        assert_eq!(d.get("CONFIG_EXT4_FS_MODULE"), Some(1));
        assert_eq!(d.get("CONFIG_SMP_MODULE"), None);
        assert_eq!(d.get("CONFIG_CMA"), None);
        assert_eq!(d.get("CONFIG_NR_CPUS"), Some(8192));
        assert_eq!(d.get("CONFIG_PHYSICAL_START"), Some(0x100_0000));
        assert_eq!(d.get("CONFIG_LOCALVERSION"), Some(1));
        assert_eq!(d.get("CONFIG_X"), Some(1));
        assert_eq!(d.get("CONFIG_NEG"), Some(-3));
        assert_eq!(d.get("__KERNEL__"), Some(1));
        assert_eq!(d.len(), 8);
    }

    #[test]
    fn bad_lines_have_their_line() {
        for (text, line) in [
            ("CONFIG_A=y\nCONFIG_B\n", 2),
            ("CONFIG_A=y\n\nFOO=y\n", 3),
            ("CONFIG_A=maybe\n", 1),
            ("CONFIG_A=12abc\n", 1),
            ("CONFIG_=1\n", 1),
            ("CONFIG_A-B=y\n", 1),
            ("CONFIG_A=\"open\n", 1),
        ] {
            let e = parse(text).expect_err(text);
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.to_string().starts_with(".config:"), "{e}");
        }
    }
}
