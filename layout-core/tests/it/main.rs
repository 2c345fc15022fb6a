//! The integration tests of `layout-core`: front-ends against gcc, the
//! solver against exhaustive search, emitters through `patch` and gcc. One
//! test binary (each file below is a module) so the crate is linked once;
//! run one file with `cargo test -p layout-core --test it segments::`.

mod support;

mod access_file;
mod access_names;
mod btf_dwarf;
mod c_bitfield_props;
mod c_const_eval_gcc;
mod c_deep_nesting;
mod c_frontend;
mod c_gcc_oracle;
mod c_header_fuzz;
mod c_invalid_c;
mod c_line_size_breaks;
mod emit_idioms;
mod fuzz_btf_dwarf;
mod growth;
mod kernel_headers;
mod report_emit;
mod scan;
mod segments;
mod solver_breaks;
mod solver_props;
mod solver_strength;
mod tree_props;
