//! Runs every fuzz target's property on the committed inputs: the minimised seed corpus in
//! `seeds/<target>/` and the inputs that once crashed a target in `crashes/<target>/` (kept
//! after their fix, so the failure cannot come back unnoticed). Each folder must exist and
//! hold at least one input, so a target cannot lose its corpus silently.

use std::path::{Path, PathBuf};

use pagecodec_fuzz::targets;

/// A target's property on one input (panics when it does not hold).
type Property = fn(&[u8]);

/// Every target, by name, with its property.
const TARGETS: [(&str, Property); 9] = [
    ("lzo_decompress", targets::lzo_decompress::run),
    ("lzo_rle_roundtrip", targets::lzo_rle_roundtrip::run),
    ("lzo_roundtrip", targets::lzo_roundtrip::run),
    ("lzo_vs_c", targets::lzo_vs_c::run),
    ("pagestore_ops", targets::pagestore_ops::run),
    ("pagestore_sources", targets::pagestore_sources::run),
    ("wkdm_decompress", targets::wkdm_decompress::run),
    ("wkdm_roundtrip", targets::wkdm_roundtrip::run),
    ("xvmalloc_ops", targets::xvmalloc_ops::run),
];

fn inputs(folder: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(folder) {
        Ok(entries) => entries.map(|e| e.expect("a readable folder entry").path()).collect(),
        Err(e) => panic!("{}: {e}", folder.display()),
    };
    files.retain(|f| f.is_file() && f.file_name().is_some_and(|n| n != "README.md"));
    files.sort();
    files
}

fn replay(kind: &str) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(kind);
    let mut total = 0;
    for (name, run) in TARGETS {
        let folder = root.join(name);
        let files = inputs(&folder);
        assert!(!files.is_empty(), "{}: no inputs", folder.display());
        for file in &files {
            let data = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let outcome = std::panic::catch_unwind(|| run(&data));
            assert!(outcome.is_ok(), "{name}: {} fails its property", file.display());
        }
        total += files.len();
    }
    total
}

#[test]
fn the_seed_corpus_passes_every_property() {
    let n = replay("seeds");
    println!("{n} seed inputs replayed");
}

#[test]
fn inputs_that_once_crashed_stay_fixed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crashes");
    let mut n = 0;
    for (name, run) in TARGETS {
        let folder = root.join(name);
        if !folder.exists() {
            continue;
        }
        for file in inputs(&folder) {
            let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            assert!(
                std::panic::catch_unwind(|| run(&data)).is_ok(),
                "{name}: {} crashes again",
                file.display()
            );
            n += 1;
        }
    }
    assert!(n > 0, "{}: no crash inputs", root.display());
    println!("{n} crash inputs replayed");
}
