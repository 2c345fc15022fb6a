//! The command line as a whole (clap derive): the global flags and one
//! variant per subcommand. Each subcommand's arguments live in its own
//! module, beside its run; the help texts are the manual.

use clap::{Parser, Subcommand};

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
    Show(crate::show::ShowArgs),
    /// Propose the cheapest layout free of false sharing, as a unified diff (or table/JSON).
    ///
    /// The diff changes only the struct body and applies with `patch -p1` from the
    /// directory the header path is relative to. Without --offset the layout holds
    /// wherever the struct is placed; with --offset it exploits the known phase and
    /// prints the assertion that pins it.
    Propose(crate::propose::ProposeArgs),
    /// Report how a struct's new size spreads to every struct that embeds it, and what
    /// it costs the allocator (kmalloc size classes).
    ///
    /// Either compare two versions of the headers (--before OLD.h --after NEW.h), or
    /// give the struct a new --size (and --align) in BTF, DWARF or a header and lay out
    /// every embedder again, transitively: directly, in arrays, nested several levels.
    Growth(crate::growth::GrowthArgs),
    /// Scan every struct of a BTF file, a DWARF file, or the headers of a kernel tree
    /// (--kbuild): with --packable, those that reordering alone makes smaller (like
    /// `pahole -P`); without it, those whose lockless fields share cache lines with other
    /// data, most exposed first (a heuristic ranking).
    Scan(crate::scan::ScanArgs),
    /// Infer the access classes of a struct's members from perf profiles and the C
    /// sources, and print them as an access file to review (each member with its
    /// evidence and a confidence, the ambiguous first) for `propose --access`.
    Infer(crate::infer::InferArgs),
    /// Audit a tree: every struct of the given headers ranked by what its fast paths'
    /// avoidable cache misses cost (false sharing, and hot paths spread past the fewest
    /// lines the rule allows, weighed by how the struct lives: per object, a singleton,
    /// one CPU's), from the member types, then the sources of each subsystem (its hot
    /// roots from a TOML file), with the evidence; `--series N` writes the first N as a
    /// patch series.
    #[cfg(feature = "infer-clang")]
    Audit(crate::audit::AuditArgs),
}
