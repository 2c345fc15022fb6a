// `optimize` would move `limit` before `hits`; serde writes fields in
// declaration order, so bytes written before the change would decode into
// the wrong fields. Refused unless the author opts in.
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicU64;

#[cachelayout::optimize]
#[derive(Serialize, serde::Deserialize)]
pub struct Record {
    pub name: u64,
    pub hits: AtomicU64,
    pub limit: u64,
}

#[cachelayout::optimize]
#[derive(Debug, Deserialize)]
pub struct Plain {
    pub name: u64,
    pub hits: AtomicU64,
}

fn main() {}
