//! Builds the C test program (`tests/c/test.c`) with the system C compiler against
//! `libpagecodec.a`, and the README's example (`examples/example.c`) against
//! `libpagecodec.so`, runs both, and times the Rust calls on the pages the C program timed
//! through the ABI.
//!
//! The libraries are not linked into Rust tests, so cargo does not build them for this
//! one: it runs `cargo build -p pagecodec-capi` itself (same target folder and profile),
//! which puts them next to the test executable's `deps` folder (`target/<profile>/`).

use std::path::{Path, PathBuf};
use std::process::Command;

use pagecodec::{PAGE_SIZE, Page, PageCodec};

/// The package folder: cargo's run-time variable first (a test binary built from a copy of
/// the sources elsewhere may be reused), else the compile-time one.
fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

/// `target/<profile>/`: the folder holding `deps/`, where this test runs from.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>").to_path_buf()
}

/// A folder of our own for the C build's outputs.
fn out_dir() -> PathBuf {
    let dir = profile_dir().join("capi-c");
    std::fs::create_dir_all(&dir).expect("create the C build folder");
    dir
}

fn run(cmd: &mut Command) -> String {
    let output =
        cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e} (is a C compiler installed? see .ci/setup)"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{cmd:?} failed ({})\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    stdout
}

fn cc() -> Command {
    let mut cmd = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cmd.args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-I"])
        .arg(manifest_dir().join("include"));
    cmd
}

/// Builds the C libraries once per test process.
fn build_libraries() {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let profile = profile_dir();
        let profile = profile.file_name().and_then(|p| p.to_str()).expect("a profile folder");
        // `target/debug` holds the `test` profile's outputs when tests run in it.
        let profile = if profile == "debug" { "test" } else { profile };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        run(Command::new(cargo)
            .args(["build", "--lib", "--quiet", "--profile", profile, "--manifest-path"])
            .arg(manifest_dir().join("Cargo.toml")));
    });
}

fn library(name: &str) -> PathBuf {
    build_libraries();
    let path = profile_dir().join(name);
    assert!(path.exists(), "{} is missing: cargo builds it with the package's tests", path.display());
    path
}

#[test]
fn the_c_test_program_passes() {
    let out = out_dir();
    let exe = out.join("test");
    run(cc()
        .arg(manifest_dir().join("tests/c/test.c"))
        .arg(library("libpagecodec.a"))
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe));
    let pages_file = out.join("real.pages");
    let stdout = run(Command::new(&exe).arg(&pages_file).arg(manifest_dir().join("tests/data")));
    print!("{stdout}");
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.ends_with(" passed, 0 failed"), "{last}");
    let hostile: u64 = stdout
        .lines()
        .find_map(|l| l.strip_suffix(" hostile inputs decoded through the C ABI"))
        .and_then(|n| n.parse().ok())
        .expect("the hostile input count");
    assert!(hostile >= 20_000, "{hostile}");
    assert!(
        stdout.contains("vectors: 6 cases, 24 reference streams decoded"),
        "every reference vector in tests/data was found"
    );
    compare_with_rust(&stdout, &std::fs::read(&pages_file).expect("the pages the C program timed"));
}

/// Median over pages of each page's minimum of 5 calls, in the C program's unit.
fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `lfence` needs SSE2 and `rdtscp` RDTSCP, both on every x86_64 CPU this
        // family runs on (the C program uses the same instructions); neither touches memory.
        unsafe {
            let mut aux = 0;
            core::arch::x86_64::_mm_lfence();
            let t = core::arch::x86_64::__rdtscp(&mut aux);
            core::arch::x86_64::_mm_lfence();
            t
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();
        EPOCH.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
    }
}

fn rust_ticks(codec: &mut dyn PageCodec, pages: &[u8]) -> (usize, u64, u64) {
    let mut out = vec![0u8; codec.max_compressed_len()];
    let (mut ct, mut dt) = (Vec::new(), Vec::new());
    let mut back = Page::zeroed();
    for bytes in pages.chunks_exact(PAGE_SIZE) {
        let page = Page::from(<&[u8; PAGE_SIZE]>::try_from(bytes).unwrap());
        let (mut best_c, mut best_d) = (u64::MAX, u64::MAX);
        let mut ok = true;
        for _ in 0..5 {
            let t0 = ticks();
            let r = codec.compress(std::hint::black_box(&page), &mut out);
            let t1 = ticks();
            let Ok(n) = r else {
                ok = false;
                break;
            };
            let d = codec.decompress(std::hint::black_box(&out[..n]), &mut back);
            let t2 = ticks();
            ok &= d.is_ok();
            best_c = best_c.min(t1 - t0);
            best_d = best_d.min(t2 - t1);
        }
        if ok {
            ct.push(best_c);
            dt.push(best_d);
        }
    }
    ct.sort_unstable();
    dt.sort_unstable();
    (ct.len(), ct[ct.len() / 2], dt[dt.len() / 2])
}

/// Prints ticks per page through the C ABI next to the Rust call, same pages, same run.
fn compare_with_rust(stdout: &str, pages: &[u8]) {
    assert!(pages.len() >= 200 * PAGE_SIZE, "{} bytes of pages", pages.len());
    let unit = if cfg!(target_arch = "x86_64") { "TSC ticks" } else { "ns" };
    println!("median {unit} per page, each page's minimum of 5 (compress / decompress):");
    println!("{:<8} {:>6} {:>16} {:>16} {:>9}", "codec", "pages", "C ABI", "Rust call", "C - Rust");
    for line in stdout.lines().filter_map(|l| l.strip_prefix("ABI ")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (name, abi_c, abi_d): (&str, u64, u64) = (f[0], f[4].parse().unwrap(), f[6].parse().unwrap());
        let mut codec: Box<dyn PageCodec> = match name {
            "wkdm" => Box::new(wkdm::Wkdm::new()),
            "lzo" => Box::new(lzokit::Lzo1x::default()),
            "lzo-fast" => Box::new(lzokit::Lzo1xFast::default()),
            "lzo-rle" => Box::new(lzokit::LzoRle::default()),
            #[cfg(feature = "lz4")]
            "lz4-page" => Box::new(pagecodec_adapters::Lz4::new()),
            #[cfg(feature = "zstd")]
            "zstd" => Box::new(pagecodec_adapters::Zstd::new().unwrap()),
            other => panic!("no Rust codec for {other}"),
        };
        let (n, rc, rd) = rust_ticks(&mut *codec, pages);
        println!(
            "{name:<8} {n:>6} {:>16} {:>16} {:>9}",
            format!("{abi_c} / {abi_d}"),
            format!("{rc} / {rd}"),
            format!("{} / {}", abi_c as i64 - rc as i64, abi_d as i64 - rd as i64)
        );
    }
}

#[test]
fn the_readme_example_compiles_runs_and_is_the_readmes() {
    let example = manifest_dir().join("examples/example.c");
    let source = std::fs::read_to_string(&example).unwrap();
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).unwrap();
    assert!(readme.contains(&source), "README.md must show examples/example.c verbatim");
    let exe = out_dir().join("example");
    let lib = library("libpagecodec.so");
    let lib_dir = lib.parent().unwrap();
    run(cc()
        .arg(&example)
        .arg("-L")
        .arg(lib_dir)
        .arg("-lpagecodec")
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-o")
        .arg(&exe));
    let stdout = run(&mut Command::new(&exe));
    print!("{stdout}");
    assert!(stdout.contains("round trip ok"), "{stdout}");
}

#[test]
fn the_shared_library_exports_only_pc_symbols() {
    let lib = library("libpagecodec.so");
    let stdout = run(Command::new("nm").args(["-D", "--defined-only"]).arg(&lib));
    let symbols: Vec<&str> = stdout.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    let header = std::fs::read_to_string(manifest_dir().join("include/pagecodec.h")).unwrap();
    assert!(symbols.len() >= 20, "{symbols:?}");
    for symbol in &symbols {
        assert!(symbol.starts_with("pc_"), "exported symbol without the prefix: {symbol}");
        assert!(
            header.contains(&format!("{symbol}(")),
            "{symbol} is exported but not declared in the header"
        );
    }
}
