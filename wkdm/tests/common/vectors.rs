//! The reference vectors in `tests/data/` (see its README).

use std::path::{Path, PathBuf};

use pagecodec::Page;

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

/// Every case (`<case>.page`) with its page, sorted by name; fails unless all [`CASES`]
/// are there.
pub fn pages() -> Vec<(String, Page)> {
    let dir = data_dir();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading folder {}: {e}", dir.display()));
    let mut cases: Vec<(String, Page)> = entries
        .map(|e| e.unwrap_or_else(|e| panic!("listing {}: {e}", dir.display())).path())
        .filter(|p| p.extension().is_some_and(|e| e == "page"))
        .map(|p| {
            let name = p.file_stem().expect("a .page file has a stem").to_string_lossy().into_owned();
            let bytes: [u8; 4096] = read(&format!("{name}.page"))
                .try_into()
                .unwrap_or_else(|_| panic!("{}: a page file holds 4096 bytes", p.display()));
            (name, Page::from(bytes))
        })
        .collect();
    cases.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(cases.len(), CASES, "{} holds {CASES} cases (see its README)", dir.display());
    cases
}

/// What XNU made of a case: `None` when it refused the page, else its stream (empty when
/// the page is one repeated value).
pub fn xnu_stream(case: &str) -> Option<Vec<u8>> {
    if data_dir().join(format!("{case}.xnu-wkdm.refused")).exists() {
        None
    } else {
        Some(read(&format!("{case}.xnu-wkdm")))
    }
}
