//! Finds whether the compiler has the AVX-512 intrinsics and target features the AVX-512
//! path uses (stable since Rust 1.89). Older compilers, down to the crate's minimum (1.85,
//! the oldest Linux builds its Rust code with), build every other path and report the
//! AVX-512 path as unavailable.

use std::env;
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(wkdm_avx512)");
    println!("cargo::rerun-if-env-changed=RUSTC");
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| minor_version(&text));
    // Unknown versions (an unusual `rustc --version`) leave the path out: it is never
    // wrong to build without it.
    if version.is_some_and(|minor| minor >= 89) {
        println!("cargo::rustc-cfg=wkdm_avx512");
    }
}

/// The minor version of a Rust 1.x compiler from `rustc 1.89.0 (... )`.
fn minor_version(text: &str) -> Option<u32> {
    let release = text.split_whitespace().nth(1)?;
    let mut parts = release.split('.');
    if parts.next()? != "1" {
        return None;
    }
    parts.next()?.parse().ok()
}
