//! End-to-end checks of the `pagebench` binary: JSON on stdout parses, the plot is written,
//! `capture -- CMD` produces a corpus `run --corpus` reads, `simulate` prints its counters.

use std::path::PathBuf;
use std::process::Command;

fn pagebench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pagebench"))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pagebench-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn small_corpus(dir: &std::path::Path) -> PathBuf {
    let pages: Vec<_> =
        pagecodec::testing::PageClass::ALL.iter().map(|&c| pagecodec::testing::generate(c, 4)).collect();
    let path = dir.join("classes.pages");
    pagebench::corpus::write_pages(&path, &pages).unwrap();
    path
}

#[test]
fn run_json_goes_to_stdout_and_parses() {
    let dir = temp_dir("json");
    let corpus = small_corpus(&dir);
    let plot = dir.join("plot.svg");
    let out = pagebench()
        .args(["run", "--quiet", "--reps", "1", "--json", "--codec", "lz4,wkdm,lzo-rle", "--plot"])
        .arg(&plot)
        .arg("--corpus")
        .arg(&corpus)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r["pages"] == 12 && r["compress"]["ticks"]["median"].is_u64()));
    assert!(json["machine"]["timer"]["ticks_per_sec"].as_f64().unwrap() > 0.0);
    // The human log went to stderr.
    assert!(String::from_utf8_lossy(&out.stderr).contains("== classes: 12 pages =="));
    assert!(std::fs::read_to_string(&plot).unwrap().contains("</svg>"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unknown_codecs_and_bad_files_fail_loudly() {
    let dir = temp_dir("bad");
    let out =
        pagebench().args(["run", "--codec", "nope", "--corpus", "/nonexistent.pages"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown codec \"nope\""));
    let partial = dir.join("partial.pages");
    std::fs::write(&partial, [0u8; 5000]).unwrap();
    let out = pagebench().arg("run").arg("--corpus").arg(&partial).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a whole number"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn file_errors_name_the_file_and_come_before_measuring() {
    let dir = temp_dir("files");
    let corpus = small_corpus(&dir);
    // A missing corpus file is named.
    let missing = dir.join("missing.pages");
    let out = pagebench().args(["run", "--quiet", "--corpus"]).arg(&missing).output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("missing.pages"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // An empty corpus is an error naming the file.
    let empty = dir.join("empty.pages");
    std::fs::write(&empty, []).unwrap();
    let out = pagebench().args(["run", "--quiet", "--corpus"]).arg(&empty).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("empty.pages") && stderr.contains("empty"), "{stderr}");
    // A plot into a missing folder fails before anything is measured: no table printed.
    let plot = dir.join("no-such-folder").join("p.svg");
    let out = pagebench()
        .args(["run", "--reps", "1", "--plot"])
        .arg(&plot)
        .arg("--corpus")
        .arg(&corpus)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no-such-folder"), "{stderr}");
    assert!(!stderr.contains("=="), "measured before failing: {stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn capture_of_a_command_feeds_run() {
    assert!(
        pagebench::capture::find_program("python3").is_some(),
        "this test captures a python3 process: install python3 (`bash .ci/setup` does)"
    );
    let dir = temp_dir("capture");
    let file = dir.join("py.pages");
    let out = pagebench()
        .args(["capture", "--settle-ms", "300", "-o"])
        .arg(&file)
        .args([
            "--",
            "python3",
            "-c",
            "d = {i: str(i) * 4 for i in range(100000)}; import time; time.sleep(30)",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "capture failed (reading a child's memory needs ptrace rights): {stderr}");
    let pages = std::fs::metadata(&file).unwrap().len() / 4096;
    assert!(pages > 1000, "{pages} pages");
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{pages} pages written")));
    let out = pagebench()
        .args(["run", "--quiet", "--reps", "1", "--max-pages", "300", "--codec", "lz4", "--corpus"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("== py: 300 pages =="));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn simulate_prints_counters_and_the_table() {
    let out = pagebench().args(["simulate", "--workload", "fillmem", "--ram-mb", "2"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["pswpout", "pgpgin", "compressed cache (lzo-rle)", "mm_stat: orig_data_size"] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}
