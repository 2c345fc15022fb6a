//! The compiler flags libclang gets for a translation unit: from the
//! compiler front-end's toolchain (Kbuild's, a compilation database's,
//! `--cc`'s), only what decides what the code means: include paths,
//! forced includes, macros, the language standard. Code generation,
//! warnings and gcc-only options are left out (libclang refuses some).

use std::path::Path;

/// Flags that take their value as the next word.
const WITH_VALUE: &[&str] = &[
    "-I",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-include",
    "-imacros",
    "-D",
    "-U",
];

/// The flags of `flags` libclang needs, relative paths made absolute from `directory`.
pub fn for_libclang(flags: &[String], directory: &Path) -> Vec<String> {
    let abs = |p: &str| -> String {
        let path = Path::new(p);
        if path.is_absolute() {
            p.to_string()
        } else {
            directory.join(path).display().to_string()
        }
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < flags.len() {
        let f = flags[i].as_str();
        if WITH_VALUE.contains(&f) {
            if let Some(v) = flags.get(i + 1) {
                let v = if matches!(f, "-D" | "-U") {
                    v.clone()
                } else {
                    abs(v)
                };
                out.push(f.to_string());
                out.push(v);
            }
            i += 2;
            continue;
        }
        if let Some(p) = f.strip_prefix("-I") {
            out.push(format!("-I{}", abs(p)));
        } else if f.starts_with("-D")
            || f.starts_with("-U")
            || f.starts_with("-std=")
            || matches!(
                f,
                "-nostdinc"
                    | "-funsigned-char"
                    | "-fsigned-char"
                    | "-fshort-wchar"
                    | "-m64"
                    | "-m32"
            )
        {
            out.push(f.to_string());
        }
        i += 1;
    }
    out.extend(["-x", "c", "-w", "-ferror-limit=1000"].map(String::from));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_decides_meaning_passes() {
        let words: Vec<String> = [
            "-Iinc",
            "-I",
            "/abs",
            "-isystem",
            "sys",
            "-DX=1",
            "-U",
            "Y",
            "-std=gnu11",
            "-O2",
            "-Xclang",
            "-load",
            "-Xclang",
            "evil.so",
            "-fplugin=evil.so",
            "-include",
            "cfg.h",
            "-MD",
            "-o",
            "x.o",
            "-c",
            "x.c",
        ]
        .map(String::from)
        .to_vec();
        let got = for_libclang(&words, Path::new("/p"));
        assert_eq!(
            got,
            [
                "-I/p/inc",
                "-I",
                "/abs",
                "-isystem",
                "/p/sys",
                "-DX=1",
                "-U",
                "Y",
                "-std=gnu11",
                "-include",
                "/p/cfg.h",
                "-x",
                "c",
                "-w",
                "-ferror-limit=1000",
            ]
        );
    }
}
