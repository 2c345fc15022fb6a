//! `#[layout(crate = "..")]`: the macros used through a re-export (a facade
//! crate's `pub use cachelayout;`) or a `use .. as` name, with every kind
//! of generated item (checks, hints, pins, markers, padding, constructor,
//! `Default`, `Debug`, a generic struct's per-instantiation check).

/// What a facade crate re-exports.
pub mod facade {
    pub use cachelayout;
}

mod renamed_use {
    use cachelayout as renamed;
    use renamed::CacheLayout;
    use std::sync::atomic::AtomicU64;

    #[allow(dead_code)]
    pub struct Histogram([u64; 3]);

    #[derive(renamed::CacheLayout)]
    #[layout(crate = "renamed")]
    pub struct Checked {
        pub config: u64,
        #[layout(size = 24, align = 8)]
        pub latency: Histogram,
    }

    #[renamed::optimize(crate = "renamed")]
    #[derive(Default, Debug)]
    pub struct Optimized {
        #[layout(pinned)]
        pub magic: u8,
        pub config: u64,
        pub hits: AtomicU64,
    }

    #[test]
    fn through_a_use_as_name() {
        assert_eq!(Checked::__INFO.fields.len(), 2);
        let o = Optimized::new(1, 2, AtomicU64::new(3));
        assert_eq!((o.magic, o.config), (1, 2));
        assert!(format!("{:?}", Optimized::default()).contains("hits"));
        assert!(Optimized::layout_report().contains("asserted at compile time"));
    }
}

mod through_facade {
    use crate::macro_crate_path::facade::cachelayout::CacheLayout;
    use std::sync::atomic::AtomicU64;
    use std::sync::Mutex;

    #[crate::macro_crate_path::facade::cachelayout::optimize]
    #[layout(crate = "crate::macro_crate_path::facade::cachelayout")]
    pub struct Optimized {
        pub config: u64,
        pub hits: AtomicU64,
        pub lock: Mutex<u8>,
    }

    #[derive(crate::macro_crate_path::facade::cachelayout::CacheLayout)]
    #[layout(crate = "crate::macro_crate_path::facade::cachelayout")]
    #[repr(C, align(64))]
    pub struct Generic<T> {
        pub a: T,
        // Proven for every `T` at the definition: `hits` starts a line.
        pub _line: [crate::macro_crate_path::facade::cachelayout::align::Align64; 0],
        pub hits: AtomicU64,
    }

    #[test]
    fn through_a_facade_path() {
        let o = Optimized::new(2, AtomicU64::new(0), Mutex::new(0));
        assert_eq!(o.config, 2);
        assert_ne!(
            std::mem::offset_of!(Optimized, hits) / 64,
            std::mem::offset_of!(Optimized, config) / 64
        );
        const _: () =
            crate::macro_crate_path::facade::cachelayout::assert_layout::<Generic<[u8; 128]>>();
        assert!(<Generic<[u8; 128]>>::layout_report().contains("hits"));
    }
}

/// A crate that renames the dependency in its `Cargo.toml`
/// (`cl = { package = "cachelayout" }`) uses both macros with no
/// `crate = ".."`: the macros find the name Cargo gives it. Built as a
/// project of its own (offline, with this workspace's lock file), in the
/// test target directory so the dependencies are compiled once.
#[test]
fn a_dependency_renamed_in_cargo_toml_needs_no_crate_attribute() {
    // A cargo build of its own (every dependency compiled again, about a
    // minute on two cores): CACHELAYOUT_SWEEPS=full only.
    if !crate::sweep::full() {
        println!("CACHELAYOUT_SWEEPS=full builds the crate that renames cachelayout");
        return;
    }
    use std::path::Path;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("renamed_dependency");
    let project = base.join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(
        project.join("Cargo.toml"),
        format!(
            "[package]\nname = \"renamed-user\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\ncl = {{ package = \"cachelayout\", path = {:?}, default-features = false }}\n\n\
             [workspace]\n",
            repo.display().to_string()
        ),
    )
    .unwrap();
    std::fs::copy(repo.join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    std::fs::write(
        project.join("src/lib.rs"),
        "use std::sync::atomic::AtomicU64;\n\n\
         #[derive(cl::CacheLayout)]\n#[repr(C)]\npub struct Checked {\n    pub limit: u64,\n    \
         pub _line: [cl::align::Align64; 0],\n    pub hits: AtomicU64,\n}\n\n\
         #[cl::optimize]\npub struct Optimized {\n    pub limit: u64,\n    pub hits: AtomicU64,\n}\n\n\
         pub fn size() -> usize {\n    let _ = Optimized::new(1, AtomicU64::new(0));\n    \
         core::mem::size_of::<Optimized>() + <Checked as cl::CacheLayout>::LINE_SIZE\n}\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO"))
        .current_dir(&project)
        .env("CARGO_TARGET_DIR", base.join("target"))
        .args(["build", "--offline", "--quiet"])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "a crate that renames cachelayout does not build:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
