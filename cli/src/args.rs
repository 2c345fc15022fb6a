//! Arguments of every subcommand (clap derive). The help texts are the manual.

use clap::{Args, Parser, Subcommand, ValueEnum};
use layout_core::emit::CStyle;
use layout_core::solve::Preset;
use layout_core::Target;
use std::path::PathBuf;

/// `--line`: a cache line size the tool supports.
pub fn line_size(s: &str) -> Result<Target, String> {
    let bytes: u64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of bytes: use 32, 64, 128 or 256"))?;
    Target::new(bytes)
}

#[derive(Parser, Debug)]
#[command(
    name = "cachelayout",
    version,
    about = "Lay out structs so that no lockless-written field shares a cache line with read-mostly data",
    long_about = "cachelayout reads a struct from a C header (or exactly, from BTF or DWARF), takes \
the access class of each field from an access file (read_mostly, locked_write, lockless_atomic, \
cold), and reports or fixes false sharing: `show` draws the layout as it is, `propose` finds the \
smallest layout in which no cache line holds a lockless field and a read-mostly one, proves it, \
and prints it as a patch; `growth` says what a size change costs every embedding struct and the \
allocator; `scan` looks at every struct of a kernel.",
    after_help = "Examples:\n  \
cachelayout show include/linux/mmzone.h --struct lru_gen_folio --access lrugen.toml --offset 304\n  \
cachelayout propose include/linux/mmzone.h --struct lru_gen_folio --access lrugen.toml > fix.patch\n  \
cachelayout growth --btf /sys/kernel/btf/vmlinux --struct page_counter --size 256\n  \
cachelayout scan --btf /sys/kernel/btf/vmlinux --packable\n\n\
Exit status: 0 success, 1 `show` found a hard conflict, 2 bad input."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Largest input file read, in bytes (default: 16 MiB for headers, access files
    /// and .config files, 1 GiB for BTF and DWARF). Only regular files are read.
    #[arg(long, global = true, value_name = "BYTES")]
    pub max_input_bytes: Option<u64>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Show a struct's layout as declared: offsets, cache lines, access classes, conflicts.
    ///
    /// Exits 1 when a cache line holds a lockless field and a read-mostly one
    /// (at the given --offset, or at any placement the struct's alignment allows).
    Show(ShowArgs),
    /// Propose the cheapest layout free of false sharing, as a unified diff (or table/JSON).
    ///
    /// The diff changes only the struct body and applies with `patch -p1` from the
    /// directory the header path is relative to. Without --offset the layout holds
    /// wherever the struct is placed; with --offset it exploits the known phase and
    /// prints the assertion that pins it.
    Propose(ProposeArgs),
    /// Report how a struct's new size spreads to every struct that embeds it, and what
    /// it costs the allocator (kmalloc size classes).
    ///
    /// Either compare two versions of the headers (--before OLD.h --after NEW.h), or
    /// give the struct a new --size (and --align) in BTF, DWARF or a header and lay out
    /// every embedder again, transitively: directly, in arrays, nested several levels.
    Growth(GrowthArgs),
    /// Scan every struct of a BTF file, a DWARF file, or the headers of a kernel tree
    /// (--kbuild): with --packable, those that reordering alone makes smaller (like
    /// `pahole -P`); without it, those whose lockless fields share cache lines with other
    /// data, most exposed first (a heuristic ranking).
    Scan(super::scan::ScanArgs),
    /// Infer the access classes of a struct's members from perf profiles and the C
    /// sources, and print them as an access file to review (each member with its
    /// evidence and a confidence, the ambiguous first) for `propose --access`.
    Infer(super::infer::InferArgs),
    /// Audit a tree: every struct of the given headers ranked by false-sharing risk, from
    /// the member types, then the sources of each subsystem (its hot roots from a TOML
    /// file), with the evidence; `--series N` writes the first N as a patch series.
    #[cfg(feature = "infer-clang")]
    Audit(super::audit::AuditArgs),
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
    pub probe: super::probe::ProbeArgs,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[arg(long, value_enum, default_value_t = ShowFormat::Table)]
    pub format: ShowFormat,
}

#[derive(Args, Debug)]
pub struct ProposeArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[arg(long, value_enum, default_value_t = ProposeFormat::Diff)]
    pub format: ProposeFormat,
    /// A safety stop: the search is counted in work, not time, so the answer is the
    /// same on every machine; when this many seconds pass first, the best verified
    /// layout found is returned with its proven bound, and the summary says the answer
    /// may differ with a larger limit.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub time_limit: f64,
    /// What matters most, then next (the goals compare in order). Default: min-diff for a
    /// struct whose author laid out its lines (a CACHELINE_PADDING(), a line-aligned member,
    /// a cache-line group), saying what balanced would buy on top; balanced otherwise.
    #[arg(long, value_enum, value_name = "PRESET")]
    pub objective: Option<Preset>,
    /// Also keep lockless fields off the lines of locked fields (the soft cost), even when
    /// that costs bytes. Without it, the price of doing so is reported.
    #[arg(long)]
    pub separate_locked: bool,
    /// Write the output to this new file instead of stdout (refuses to overwrite).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Allow --output to overwrite an existing file.
    #[arg(long)]
    pub force: bool,
    /// How the diff spells a line break. Markers and attributes already in the header
    /// are reused or removed, never duplicated.
    #[arg(long, value_enum, default_value_t = CStyle::Aligned, value_name = "STYLE")]
    pub style: CStyle,
    /// Print a commit-message paragraph (what shared which line, the line tables before
    /// and after, the size change and its proof): before the diff, separated by `---` as
    /// `git am` reads it; after the table; as "changelog" in JSON.
    #[arg(long)]
    pub changelog: bool,
    /// Also report how the new size spreads to the structs that embed this one (from the
    /// same header, BTF or DWARF): on stderr with a diff, appended to a table, or as
    /// "growth" in JSON.
    #[arg(long)]
    pub growth: bool,
    /// Rebuild the cache-line groups: drop the author's groups and CACHELINE_PADDING()
    /// lines (members may then cross them) and, with --style groups, write new groups
    /// named from the classes and hot paths. The summary lists what was dissolved.
    #[arg(long)]
    pub regroup: bool,
    /// Let the first member leave offset 0 (by default it stays first: code casts the
    /// struct to it, like tcp_sk()).
    #[arg(long)]
    pub move_first: bool,
    /// Check the declared layout and the proposal in every configuration that changes the
    /// struct: the one read, and each CONFIG_ option of the struct's #if lines flipped
    /// (compiled again with the compiler front-end: --kbuild, --compile-commands or --cc).
    /// Size and hard conflicts per configuration go in the summary, the changelog and the
    /// JSON ("configurations").
    #[arg(long)]
    pub check_configs: bool,
    /// With --format patch: end the changelog with `Signed-off-by:` from git's
    /// user.name and user.email.
    #[arg(long)]
    pub signoff: bool,
    /// Before proposing, read the tree's code that uses the struct (C files,
    /// directories walked for their .c and .h files, or a compile_commands.json for the
    /// units it names; repeatable: --safety-scan net/ipv4 --safety-scan net/core/skbuff.c)
    /// and keep what depends on the member order:
    /// positional initializers keep their members first and in order, offset ranges
    /// keep theirs together, offsets asserted at build time stay; BPF access by offset,
    /// include/uapi/, __packed and __randomize_layout refuse a reorder at the site.
    #[arg(long = "safety-scan", value_name = "PATH")]
    pub safety_scan: Vec<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShowFormat {
    Table,
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProposeFormat {
    Diff,
    Table,
    Json,
    /// A mail as `git format-patch` writes it (From, Subject, the changelog,
    /// the diffstat and the diff, paths relative to the tree root), for `git am`.
    Patch,
}

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
cachelayout growth --before mmzone.h.orig --after mmzone.h --struct lru_gen_folio\n  \
cachelayout growth --btf /sys/kernel/btf/vmlinux --struct page_counter --size 256\n  \
cachelayout growth --header lru_gen.h --struct lru_gen_folio --size 1408 --align 64 \\\n    \
--instances 'mem_cgroup_per_node=4:per memcg, 4 nodes'")]
pub struct GrowthArgs {
    /// The struct that changes (without the `struct` keyword), or a typedef name.
    #[arg(long = "struct", value_name = "NAME")]
    pub struct_name: String,
    /// The header before the change (with --after): every size comes from the headers.
    #[arg(long, value_name = "OLD.h")]
    pub before: Option<PathBuf>,
    /// The header after the change (with --before).
    #[arg(long, value_name = "NEW.h")]
    pub after: Option<PathBuf>,
    /// The struct's new size in bytes; the embedders are laid out again with C's rules.
    #[arg(long, value_name = "BYTES")]
    pub size: Option<u64>,
    /// The struct's new alignment (with --size; default: the current one).
    #[arg(long, value_name = "BYTES")]
    pub align: Option<u64>,
    /// Types from BTF (/sys/kernel/btf/vmlinux, a -gbtf object), for --size.
    #[arg(long, value_name = "PATH")]
    pub btf: Option<PathBuf>,
    /// Types from DWARF (an object built with -g), for --size.
    #[arg(long, value_name = "FILE")]
    pub dwarf: Option<PathBuf>,
    /// Types from a C header, for --size (with --kbuild, --compile-commands or --cc: the
    /// header the probe compiles, whose every reachable struct is an embedder candidate).
    #[arg(long, value_name = "FILE.h")]
    pub header: Option<PathBuf>,
    #[command(flatten)]
    pub probe: super::probe::ProbeArgs,
    /// COUNT objects of struct NAME are allocated with kmalloc: multiply its real bytes
    /// per object (size class change) by COUNT. NOTE says what the count is, e.g.
    /// --instances 'mem_cgroup_per_node=4:per memcg, 4 nodes'. Repeatable.
    #[arg(long = "instances", value_name = "NAME=COUNT[:NOTE]")]
    pub instances: Vec<String>,
    /// Define a constant or config option for the headers: -D MAX_NR_ZONES=5.
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    pub defines: Vec<String>,
    /// Access file whose [types] and [defines] the headers need.
    #[arg(long, value_name = "FILE")]
    pub access: Option<PathBuf>,
    /// text: one line per struct, ready for a changelog; table; json.
    #[arg(long, value_enum, default_value_t = GrowthFormat::Text)]
    pub format: GrowthFormat,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrowthFormat {
    Text,
    Table,
    Json,
}
