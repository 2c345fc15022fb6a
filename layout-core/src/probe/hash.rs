//! A 128-bit FNV-1a hash: the cache's keys and the fingerprints of the files
//! a probe read. Fixed by its definition, so a key means the same on every
//! machine and with every Rust version.

const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

#[derive(Clone, Copy, Debug)]
pub struct Fnv128(u128);

impl Default for Fnv128 {
    fn default() -> Self {
        Fnv128(OFFSET)
    }
}

impl Fnv128 {
    pub fn bytes(&mut self, data: &[u8]) -> &mut Self {
        for &b in data {
            self.0 ^= u128::from(b);
            self.0 = self.0.wrapping_mul(PRIME);
        }
        self
    }

    /// A length-prefixed field, so that ("ab", "c") and ("a", "bc") differ.
    pub fn field(&mut self, data: &[u8]) -> &mut Self {
        self.bytes(&(data.len() as u64).to_le_bytes()).bytes(data)
    }

    pub fn hex(&self) -> String {
        format!("{:032x}", self.0)
    }
}

/// The most bytes hashed of one file (a header is far smaller).
const MAX_FILE_BYTES: u64 = 64 << 20;

/// The hash of a file's bytes, or `None` when it cannot be read. A file is
/// read once per run: the probes of a tree share most of their headers.
pub fn file(path: &std::path::Path) -> Option<String> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static SEEN: OnceLock<Mutex<HashMap<std::path::PathBuf, Option<String>>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    if let Some(h) = seen.lock().ok().and_then(|m| m.get(path).cloned()) {
        return h;
    }
    // Regular files only, within a bound: a listed file is never a device.
    let h = crate::source::bounded::read(path, MAX_FILE_BYTES)
        .ok()
        .map(|bytes| Fnv128::default().field(&bytes).hex());
    if let Ok(mut m) = seen.lock() {
        m.insert(path.to_path_buf(), h.clone());
    }
    h
}

#[cfg(test)]
mod tests {
    use super::Fnv128;

    #[test]
    fn known_values_and_field_boundaries() {
        // FNV-1a 128 of the empty string is its offset basis.
        assert_eq!(Fnv128::default().hex(), "6c62272e07bb014262b821756295c58d");
        assert_eq!(
            Fnv128::default().bytes(b"a").hex(),
            "d228cb696f1a8caf78912b704e4a8964"
        );
        let ab_c = Fnv128::default().field(b"ab").field(b"c").hex();
        let a_bc = Fnv128::default().field(b"a").field(b"bc").hex();
        assert_ne!(ab_c, a_bc);
    }
}
