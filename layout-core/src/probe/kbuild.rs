//! A configured kernel tree (`--kbuild DIR`): where its sources and its
//! build outputs are, which architecture its `.config` selects, and the
//! compiler flags Kbuild would pass to a file of the tree.
//!
//! `DIR` is the object tree: a source tree built in place, an `O=` build
//! directory, or a distribution headers package
//! (`/usr/src/linux-headers-$(uname -r)`). Its source tree is `DIR` itself
//! when `DIR/include/linux/kernel.h` exists; otherwise the tree its
//! `Makefile` includes (`include /path/to/src/Makefile`, as `O=` builds and
//! Debian's packages write it), its `source` link, or a Debian `-common`
//! sibling.

use crate::files;
use crate::source::bounded;
use crate::Diagnostic;
use std::path::{Path, PathBuf};

/// The flags Kbuild gives every C file that matter to a type's layout or to
/// compiling a header at all.
#[derive(Debug, Clone)]
pub struct KbuildTree {
    pub srctree: PathBuf,
    pub objtree: PathBuf,
    /// `SRCARCH`: the directory under `arch/`.
    pub srcarch: &'static str,
    /// `.config` of the tree.
    pub config: PathBuf,
    config_text: String,
}

impl KbuildTree {
    /// Finds the source and object trees of `dir` and reads its `.config`.
    pub fn locate(dir: &Path) -> Result<KbuildTree, Diagnostic> {
        let objtree = dir.canonicalize().map_err(|e| {
            Diagnostic::new(format!("cannot open the kernel tree: {e}"))
                .in_file(dir)
                .help("pass a configured kernel tree: a build directory or /usr/src/linux-headers-$(uname -r)")
        })?;
        let config = objtree.join(".config");
        if std::fs::symlink_metadata(&config).is_err() {
            return Err(Diagnostic::new("not a configured kernel tree: it has no .config")
                .in_file(dir)
                .help("run `make defconfig` (or pass the O= build directory, or /usr/src/linux-headers-$(uname -r))"));
        }
        let config_text = files::text(&config, files::Input::Config)?;
        let srctree = find_srctree(&objtree).ok_or_else(|| {
            Diagnostic::new("cannot find the kernel sources of this tree: no include/linux/kernel.h here, and no `include .../Makefile` in its Makefile")
                .in_file(dir)
                .help("pass the source tree or its O= build directory; for a Debian headers package install the -common package too")
        })?;
        if !objtree.join("include/generated/autoconf.h").is_file() {
            return Err(Diagnostic::new(
                "the kernel tree is configured but not prepared: include/generated/autoconf.h is missing",
            )
            .in_file(dir)
            .help("run `make modules_prepare` in the tree"));
        }
        let srcarch = srcarch(&config_text).ok_or_else(|| {
            Diagnostic::new(
                "cannot tell the architecture from .config (no CONFIG_X86, CONFIG_ARM64, ...)",
            )
            .in_file(&config)
            .help("pass a .config written by `make *config`")
        })?;
        Ok(KbuildTree {
            srctree,
            objtree,
            srcarch,
            config,
            config_text,
        })
    }

    fn enabled(&self, option: &str) -> bool {
        config_enabled(&self.config_text, option)
    }

    /// The flags of a C file of the tree, as Kbuild's top Makefile, the
    /// architecture Makefile and `scripts/Makefile.lib` put them together
    /// (warnings, optimisation, instrumentation and code generation that do
    /// not change a type are left out). `cc_include` is the compiler's own
    /// include directory (`cc -print-file-name=include`).
    pub fn flags(&self, cc_include: Option<&Path>) -> Vec<String> {
        let s = |p: &str| self.srctree.join(p).display().to_string();
        let o = |p: &str| self.objtree.join(p).display().to_string();
        let arch = self.srcarch;
        let mut f: Vec<String> = vec!["-nostdinc".into()];
        if let Some(inc) = cc_include {
            f.push("-isystem".into());
            f.push(inc.display().to_string());
        }
        // LINUXINCLUDE and USERINCLUDE.
        f.push(format!("-I{}", s(&format!("arch/{arch}/include"))));
        f.push(format!(
            "-I{}",
            o(&format!("arch/{arch}/include/generated"))
        ));
        if self.srctree != self.objtree {
            f.push(format!("-I{}", s("include")));
        }
        f.push(format!("-I{}", o("include")));
        f.push(format!("-I{}", s(&format!("arch/{arch}/include/uapi"))));
        f.push(format!(
            "-I{}",
            o(&format!("arch/{arch}/include/generated/uapi"))
        ));
        f.push(format!("-I{}", s("include/uapi")));
        f.push(format!("-I{}", o("include/generated/uapi")));
        for forced in [
            "include/linux/compiler-version.h",
            "include/linux/kconfig.h",
            "include/linux/compiler_types.h",
        ] {
            if self.srctree.join(forced).is_file() {
                f.push("-include".into());
                f.push(s(forced));
            }
        }
        // KBUILD_CPPFLAGS and KBUILD_CFLAGS.
        f.extend(
            [
                "-D__KERNEL__",
                "-std=gnu11",
                "-fno-strict-aliasing",
                "-fno-common",
                "-fshort-wchar",
                "-fno-PIE",
            ]
            .map(String::from),
        );
        if self.top_makefile_says("-funsigned-char") {
            f.push("-funsigned-char".into());
        }
        f.extend(self.arch_flags().iter().map(|s| s.to_string()));
        // CC_FLAGS_USING: what headers test to know how functions are traced.
        if self.enabled("CONFIG_FUNCTION_TRACER") {
            let nop_mcount = self.enabled("CONFIG_FTRACE_MCOUNT_USE_OBJTOOL")
                || self.enabled("CONFIG_FTRACE_MCOUNT_USE_CC")
                    && self.enabled("CONFIG_HAVE_NOP_MCOUNT");
            if nop_mcount {
                f.push("-DCC_USING_NOP_MCOUNT".into());
            }
            if self.enabled("CONFIG_HAVE_FENTRY") {
                f.push("-DCC_USING_FENTRY".into());
            }
        }
        // modname_flags / basename_flags.
        f.push("-DKBUILD_MODNAME=\"cachelayout_probe\"".into());
        f.push("-DKBUILD_BASENAME=\"cachelayout_probe\"".into());
        f
    }

    fn top_makefile_says(&self, flag: &str) -> bool {
        makefile(&self.srctree).is_some_and(|t| {
            t.lines()
                .any(|l| !l.trim_start().starts_with('#') && l.contains(flag))
        })
    }

    /// The architecture Makefile's flags that decide the ABI.
    fn arch_flags(&self) -> &'static [&'static str] {
        match self.srcarch {
            "x86" if self.enabled("CONFIG_X86_64") => &[
                "-m64",
                "-mno-red-zone",
                "-mcmodel=kernel",
                "-mno-sse",
                "-mno-mmx",
                "-mno-sse2",
                "-mno-3dnow",
                "-mno-avx",
            ],
            "x86" => &[
                "-m32",
                "-msoft-float",
                "-mregparm=3",
                "-freg-struct-return",
                "-mno-sse",
                "-mno-mmx",
            ],
            "arm64" => &["-mgeneral-regs-only"],
            _ => &[],
        }
    }
}

/// `CONFIG_X=y` (or `=m`) in a `.config`'s text.
fn config_enabled(text: &str, option: &str) -> bool {
    text.lines().any(|l| {
        l.strip_prefix(option)
            .and_then(|rest| rest.strip_prefix('='))
            .is_some_and(|v| v == "y" || v == "m")
    })
}

/// `SRCARCH` from the options only one architecture sets.
fn srcarch(config: &str) -> Option<&'static str> {
    const ARCHES: [(&str, &str); 12] = [
        ("CONFIG_X86", "x86"),
        ("CONFIG_ARM64", "arm64"),
        ("CONFIG_ARM", "arm"),
        ("CONFIG_RISCV", "riscv"),
        ("CONFIG_PPC", "powerpc"),
        ("CONFIG_S390", "s390"),
        ("CONFIG_MIPS", "mips"),
        ("CONFIG_LOONGARCH", "loongarch"),
        ("CONFIG_SPARC", "sparc"),
        ("CONFIG_PARISC", "parisc"),
        ("CONFIG_SUPERH", "sh"),
        ("CONFIG_UML", "um"),
    ];
    ARCHES
        .iter()
        .find(|(option, _)| config_enabled(config, option))
        .map(|&(_, arch)| arch)
}

/// The text of `DIR/Makefile`: a regular file, within the text limit.
fn makefile(dir: &Path) -> Option<String> {
    let path = dir.join("Makefile");
    let bytes = bounded::read(&path, bounded::TEXT_LIMIT).ok()?;
    files::note_input(&path);
    String::from_utf8(bytes).ok()
}

fn find_srctree(objtree: &Path) -> Option<PathBuf> {
    let is_src = |p: &Path| p.join("include/linux/kernel.h").is_file();
    if is_src(objtree) {
        return Some(objtree.to_path_buf());
    }
    let from_makefile = makefile(objtree).and_then(|text| {
        text.lines().find_map(|l| {
            let target = l.trim().strip_prefix("include ")?.trim();
            let dir = target.strip_suffix("/Makefile")?;
            Some(PathBuf::from(dir))
        })
    });
    let link = objtree.join("source");
    let sibling = objtree.file_name().and_then(|n| {
        let n = n.to_str()?;
        let (stem, _flavour) = n.rsplit_once('-')?;
        Some(objtree.with_file_name(format!("{stem}-common")))
    });
    [from_makefile, Some(link), sibling]
        .into_iter()
        .flatten()
        .map(|p| if p.is_relative() { objtree.join(p) } else { p })
        .find(|p| is_src(p))
        .and_then(|p| p.canonicalize().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srcarch_follows_the_config() {
        assert_eq!(srcarch("CONFIG_X86_64=y\nCONFIG_X86=y\n"), Some("x86"));
        assert_eq!(
            srcarch("# CONFIG_X86 is not set\nCONFIG_ARM64=y\n"),
            Some("arm64")
        );
        assert_eq!(srcarch("CONFIG_64BIT=y\n"), None);
    }

    #[test]
    fn config_enabled_reads_y_and_m_only() {
        let c = "CONFIG_A=y\nCONFIG_AB=m\n# CONFIG_C is not set\nCONFIG_D=\"x\"\n";
        assert!(config_enabled(c, "CONFIG_A"));
        assert!(config_enabled(c, "CONFIG_AB"));
        assert!(!config_enabled(c, "CONFIG_C"));
        assert!(!config_enabled(c, "CONFIG_D"));
        assert!(!config_enabled(c, "CONFIG_"));
    }

    #[test]
    fn a_source_tree_is_its_own_srctree_and_an_o_build_names_it() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        std::fs::create_dir_all(src.join("include/linux")).unwrap();
        std::fs::write(src.join("include/linux/kernel.h"), "").unwrap();
        let build = d.path().join("build");
        std::fs::create_dir_all(&build).unwrap();
        std::fs::write(
            build.join("Makefile"),
            format!("# generated\ninclude {}/Makefile\n", src.display()),
        )
        .unwrap();
        let src = src.canonicalize().unwrap();
        assert_eq!(find_srctree(&src), Some(src.clone()));
        assert_eq!(find_srctree(&build), Some(src));
        assert_eq!(find_srctree(d.path()), None);
    }
}
