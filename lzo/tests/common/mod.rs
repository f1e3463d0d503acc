//! The reference vectors in `tests/data/` (see its README), shared by the integration tests
//! (included with `mod common;`).
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

/// How many cases `tests/data/README.md` lists.
pub const CASES: usize = 21;

/// The folder of reference vectors, inside the crate.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("data")
}

/// The bytes of one vector file; a missing or unreadable file fails naming its path.
pub fn read(name: &str) -> Vec<u8> {
    let path = data_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading test vector {}: {e}", path.display()))
}

/// Every case (`<case>.page`) with its 4096 page bytes, sorted by name; fails unless all
/// [`CASES`] are there.
pub fn pages() -> Vec<(String, Vec<u8>)> {
    let dir = data_dir();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading folder {}: {e}", dir.display()));
    let mut cases: Vec<(String, Vec<u8>)> = entries
        .map(|e| e.unwrap_or_else(|e| panic!("listing {}: {e}", dir.display())).path())
        .filter(|p| p.extension().is_some_and(|e| e == "page"))
        .map(|p| {
            let name = p.file_stem().expect("a .page file has a stem").to_string_lossy().into_owned();
            let bytes = read(&format!("{name}.page"));
            assert_eq!(bytes.len(), 4096, "{}: a page file holds 4096 bytes", p.display());
            (name, bytes)
        })
        .collect();
    cases.sort();
    assert_eq!(cases.len(), CASES, "{} holds {CASES} cases (see its README)", dir.display());
    cases
}
