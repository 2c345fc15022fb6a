// Temporarily disabled while layout-core APIs land; see /work/notes/main.rs.real
fn main() {}
