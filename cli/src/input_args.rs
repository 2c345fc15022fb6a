//! The arguments every struct-reading subcommand shares (`show`, `propose`,
//! `infer`; `growth` and `configs` build them too): where the struct comes
//! from, its access file, defines, the cache line and the compiler
//! front-end. It imports nothing of the subcommands, which all import it.

use clap::Args;
use layout_core::Target;
use std::path::PathBuf;

/// `--line`: a cache line size the tool supports.
pub fn line_size(s: &str) -> Result<Target, String> {
    let bytes: u64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of bytes: use 32, 64, 128 or 256"))?;
    Target::new(bytes)
}

/// Where the struct comes from and how fields are accessed.
#[derive(Args, Debug, Clone)]
pub struct InputArgs {
    /// The C header that defines the struct. Optional with --btf or --dwarf, which give
    /// the exact layout; `propose` needs it to write the diff; --kbuild, --compile-commands
    /// and --cc compile it.
    pub header: Option<PathBuf>,
    /// The struct to lay out (without the `struct` keyword), or a typedef name.
    #[arg(long = "struct", value_name = "NAME")]
    pub struct_name: String,
    /// TOML access file: [struct.NAME] read_mostly / locked_write.LOCK / lockless_atomic /
    /// cold / pinned lists, [struct.NAME.paths] hot paths (tx = [...]), plus [types] sizes
    /// and [defines] constants. Unlisted fields are cold. Names, the same in every
    /// front-end (header, --btf, --dwarf, --kbuild/--cc): fields; members of anonymous
    /// unions/structs and struct_groups (snd_nxt); each bit-field by its own name
    /// (is_cwnd_limited); dotted sub-members (rx_opt.rcv_tsval); and the names show --btf /
    /// --dwarf print for a bit-field run (save_syn:syn_data:syn_fastopen) and an anonymous
    /// union or struct (anon_union@1304).
    #[arg(long, value_name = "FILE")]
    pub access: Option<PathBuf>,
    /// Define a constant or config option: -D MAX_NR_ZONES=5, -D CONFIG_LRU_GEN (=1).
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    pub defines: Vec<String>,
    /// A kernel .config: `CONFIG_X=y` defines CONFIG_X for the `#ifdef` blocks in struct
    /// bodies (e.g. /usr/src/linux-headers-$(uname -r)/.config). -D and [defines] win.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Cache line size in bytes: 32, 64, 128 or 256.
    #[arg(long, default_value = "64", value_name = "BYTES", value_parser = line_size)]
    pub line: Target,
    /// Take sizes, alignments and offsets from BTF as the compiler laid them out
    /// (/sys/kernel/btf/vmlinux, or an object built with `gcc -gbtf`). BTF records no
    /// alignment: it is inferred as pahole does.
    #[arg(long, value_name = "PATH", conflicts_with = "dwarf")]
    pub btf: Option<PathBuf>,
    /// Take sizes, alignments and offsets from the DWARF of an object or binary built
    /// with `gcc -g`.
    #[arg(long, value_name = "FILE")]
    pub dwarf: Option<PathBuf>,
    /// Offset of the struct inside a line-aligned container (e.g. 304 for lrugen inside
    /// mem_cgroup_per_node). Lines are then numbered from the (first) container's start.
    /// Repeatable, one per container (--offset 136 --offset 172112): the layout is solved
    /// and checked at every container's phase. Overrides `offset` in the access file.
    #[arg(long, value_name = "BYTES")]
    pub offset: Vec<u64>,
    /// Where the struct sits: CONTAINER.MEMBER.PATH, e.g. mem_cgroup_per_node.lruvec.lrugen
    /// (array steps as name[N]). Repeatable, one per container; the N-th goes with the N-th
    /// --offset. With --btf, --dwarf or a compiler probe the offsets come from the types
    /// (--offset may be left out); propose writes one static_assert per container.
    #[arg(long, value_name = "PATH")]
    pub container: Vec<String>,
    #[command(flatten)]
    pub probe: layout_core::probe::ProbeArgs,
}
