//! The audit's cache of per-translation-unit analyses, so that a second
//! run over the same tree parses nothing: under
//! `$XDG_CACHE_HOME/cachelayout/audit` (or `~/.cache/...`, or `--cache-dir`),
//! one file per unit for its call graph and one per unit and struct for
//! that struct's sites.
//!
//! A unit's key is the 128-bit FNV hash of everything that decides its
//! walk: the cache format, cachelayout's version, the unit's path and
//! contents, its libclang arguments, the lock wrappers, and the
//! fingerprint of the tree the caller gives (the contents of the audited
//! headers and the `.config`): an edit to any of them is a miss. A header
//! outside the audited set that changes is not seen: pass `--no-cache`
//! after editing one.
//!
//! A unit libclang could not parse (a missing header) is an entry too, its
//! error, so a second run does not parse it again.
//!
//! Entries are immutable once published: each is written to a file
//! created exclusively (random name, mode 0600) in the cache directory and
//! renamed into place. The directory must belong to the user and be
//! writable by nobody else ([`crate::probe`]'s rule), or the cache is not
//! used. An entry that does not read back (truncated, another format) is a
//! miss.

use crate::probe::hash::Fnv128;
use serde::{de::DeserializeOwned, Serialize};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Bumped when what an entry holds changes, or what the walk finds in a
/// unit (a new fact of [`crate::infer::clang::UnitGraph`], a new rule of
/// the walk): an older entry is then a miss.
const FORMAT: &str = "cachelayout-audit-19";
/// The most bytes one entry may hold when read back.
const MAX_ENTRY: u64 = 256 << 20;

/// The default cache directory, if there is one.
pub fn default_root() -> Option<PathBuf> {
    let probes = crate::probe::cache::default_root()?;
    Some(probes.parent()?.join("audit"))
}

/// An open cache directory, or none (`--no-cache`, or one not to be trusted).
#[derive(Clone, Debug)]
pub struct Cache {
    root: Option<PathBuf>,
    /// Lookups that found an entry, and entries written, this run.
    pub hits: usize,
    pub stored: usize,
}

impl Cache {
    /// The cache at `root`, created (mode 0700) if needed; `Err` says why
    /// it is not used (the run goes on without it).
    pub fn open(root: &Path) -> Result<Cache, String> {
        crate::probe::cache::open_root(root)?;
        Ok(Cache {
            root: Some(root.to_path_buf()),
            hits: 0,
            stored: 0,
        })
    }

    /// No cache: every lookup misses, nothing is stored.
    pub fn none() -> Cache {
        Cache {
            root: None,
            hits: 0,
            stored: 0,
        }
    }

    /// Whether entries are read and written.
    pub fn is_open(&self) -> bool {
        self.root.is_some()
    }

    /// The entry named `key`, if it is there and reads back.
    pub fn get<T: DeserializeOwned>(&mut self, key: &str) -> Option<T> {
        let path = self.root.as_ref()?.join(format!("{key}.json"));
        let bytes = crate::source::bounded::read(&path, MAX_ENTRY).ok()?;
        let v = serde_json::from_slice(&bytes).ok()?;
        self.hits += 1;
        Some(v)
    }

    /// Publishes `value` as entry `key` (a failure only means no entry).
    pub fn put<T: Serialize>(&mut self, key: &str, value: &T) {
        let Some(root) = &self.root else {
            return;
        };
        let Ok(bytes) = serde_json::to_vec(value) else {
            return;
        };
        let Ok(mut tmp) = tempfile::Builder::new().prefix(".tmp-").tempfile_in(root) else {
            return;
        };
        if tmp.write_all(&bytes).and_then(|()| tmp.flush()).is_err() {
            return;
        }
        if tmp.persist(root.join(format!("{key}.json"))).is_ok() {
            self.stored += 1;
        }
    }
}

/// The key of a unit's graph: see the module docs.
pub fn unit_key(
    path: &Path,
    text: &[u8],
    args: &[String],
    wrappers: &[String],
    tree: &str,
) -> String {
    let mut h = Fnv128::default();
    h.field(FORMAT.as_bytes())
        .field(env!("CARGO_PKG_VERSION").as_bytes())
        .field(path.to_string_lossy().as_bytes())
        .field(text)
        .field(tree.as_bytes());
    h.field(&(args.len() as u64).to_le_bytes());
    for a in args {
        h.field(a.as_bytes());
    }
    h.field(&(wrappers.len() as u64).to_le_bytes());
    for w in wrappers {
        h.field(w.as_bytes());
    }
    format!("unit-{}", h.hex())
}

/// The key of one struct's sites in the unit of `unit_key`.
pub fn sites_key(unit_key: &str, struct_name: &str) -> String {
    let mut h = Fnv128::default();
    h.field(unit_key.as_bytes()).field(struct_name.as_bytes());
    format!("sites-{}", h.hex())
}

/// A fingerprint of files (the audited headers, the `.config`): their
/// paths and contents, in the order given; an unreadable file counts by
/// its path alone.
pub fn fingerprint(files: &[PathBuf]) -> String {
    let mut h = Fnv128::default();
    for f in files {
        h.field(f.to_string_lossy().as_bytes());
        match crate::source::bounded::read(f, MAX_ENTRY) {
            Ok(b) => h.field(&b),
            Err(_) => h.field(b"<unreadable>"),
        };
    }
    h.hex()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_keys_change_with_content() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("c");
        let mut c = Cache::open(&root).unwrap();
        let k = unit_key(Path::new("a.c"), b"int x;", &["-I.".into()], &[], "t");
        assert_ne!(
            k,
            unit_key(Path::new("a.c"), b"int y;", &["-I.".into()], &[], "t")
        );
        assert_ne!(
            k,
            unit_key(Path::new("a.c"), b"int x;", &["-Ix".into()], &[], "t")
        );
        assert_ne!(
            k,
            unit_key(Path::new("a.c"), b"int x;", &["-I.".into()], &[], "u")
        );
        assert_eq!(c.get::<Vec<u32>>(&k), None);
        c.put(&k, &vec![1u32, 2]);
        assert_eq!(c.get::<Vec<u32>>(&k), Some(vec![1, 2]));
        assert_eq!((c.hits, c.stored), (1, 1));
        // A damaged entry is a miss.
        std::fs::write(root.join(format!("{k}.json")), b"[1,").unwrap();
        assert_eq!(c.get::<Vec<u32>>(&k), None);
        assert_eq!(Cache::none().get::<Vec<u32>>(&k), None);
    }

    #[test]
    fn entries_that_are_links_devices_fifos_or_directories_are_misses() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("c");
        let mut c = Cache::open(&root).unwrap();
        let k = |n: &str| unit_key(Path::new(n), b"", &[], &[], "t");
        std::os::unix::fs::symlink("/dev/zero", root.join(format!("{}.json", k("zero")))).unwrap();
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        std::os::unix::fs::symlink(root.join("loop"), root.join(format!("{}.json", k("loop"))))
            .unwrap();
        std::fs::create_dir(root.join(format!("{}.json", k("dir")))).unwrap();
        let fifo = std::ffi::CString::new(
            root.join(format!("{}.json", k("fifo")))
                .display()
                .to_string(),
        )
        .unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        for n in ["zero", "loop", "dir", "fifo"] {
            assert_eq!(c.get::<Vec<u32>>(&k(n)), None, "{n}");
        }
        // Publishing over a link replaces the link, never writes through it.
        let target = d.path().join("victim");
        std::fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, root.join(format!("{}.json", k("victim")))).unwrap();
        c.put(&k("victim"), &vec![7u32]);
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert_eq!(c.get::<Vec<u32>>(&k("victim")), Some(vec![7]));
        assert_eq!(c.hits, 1);
    }

    #[test]
    fn two_writers_of_one_entry_leave_a_whole_one() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("c");
        let c = Cache::open(&root).unwrap();
        let k = unit_key(Path::new("a.c"), b"", &[], &[], "t");
        let writers: Vec<_> = (0..4u32)
            .map(|w| {
                let (mut c, k) = (c.clone(), k.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        c.put(&k, &vec![w; 4096]);
                    }
                })
            })
            .collect();
        let mut reader = c.clone();
        for _ in 0..200 {
            if let Some(v) = reader.get::<Vec<u32>>(&k) {
                assert!(v.len() == 4096 && v.iter().all(|x| *x == v[0]));
            }
        }
        for w in writers {
            w.join().unwrap();
        }
        let v = reader.get::<Vec<u32>>(&k).unwrap();
        assert!(v.len() == 4096 && v.iter().all(|x| *x == v[0]));
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp-"))
            .collect();
        assert!(left.is_empty());
    }
}
