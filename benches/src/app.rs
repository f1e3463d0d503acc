//! The commands behind the command line: what `main.rs` calls once arguments are parsed.

use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pagecodec::testing::PageClass;
use serde::Serialize;

use crate::capture::{self, HeapWorkload};
use crate::corpus::{self, Corpus};
use crate::measure::{self, Progress};
use crate::report::{self, Summary};
use crate::timing::{self, Timer};
use crate::{codecs, peers};

/// What each codec name in the tables is, printed with every run.
pub const PEERS_LEGEND: &str = "codec names: lzo, lzo-fast, lzo-rle, lzo-kernel, wkdm* = this family's crates; \
lz4 = C LZ4 (LZ4_compress_default / LZ4_decompress_safe via lz4-sys); lz4_flex = the lz4_flex crate \
(safe Rust); lz4-page / zstd = pagecodec-adapters (lz4_flex / C zstd level 3 behind PageCodec); \
zstd-1 = C zstd level 1 (zstd crate); liblzo2 = C liblzo2 lzo1x_1 / lzo1x_decompress_safe (miniLZO \
2.10 via minilzo-rs); lzo1x-rs = the lzo1x crate (pure Rust); raw = memcpy, the floor";

/// A boxed error for command results.
pub type AnyError = Box<dyn Error + Send + Sync>;

/// Options of `run` (and of the default run).
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Page files to measure; empty means the default corpus (capture + the 2001 paper's workloads).
    pub corpus_files: Vec<PathBuf>,
    /// Codec names to keep (all when empty).
    pub codecs: Vec<String>,
    /// Print the JSON report on stdout (the human log goes to stderr).
    pub json: bool,
    /// Write the SVG plot here.
    pub plot: Option<PathBuf>,
    /// Times each page is compressed and decompressed per codec (the minimum is kept).
    pub reps: usize,
    /// Whether those times come back to back or in sweeps over the corpus.
    pub order: measure::Order,
    /// Subsample every corpus to at most this many pages (0 = no limit).
    pub max_pages: usize,
    /// In the default corpus, the child workload to capture (`None`: best available).
    pub workload: Option<HeapWorkload>,
    /// In the default corpus, skip capturing a child workload.
    pub no_capture: bool,
    /// Also measure one generated corpus per page class of `pagecodec::testing`, this many
    /// pages each (0: none).
    pub class_pages: usize,
    /// Show a progress line on a terminal.
    pub progress: bool,
    /// Measure the corpora this many times and end with each codec's median and range over
    /// the runs (1: one run, no summary; 0 counts as 1). The plot shows the first run.
    pub runs: usize,
    /// Decode into a page starting this many bytes past a 4 KiB boundary (a multiple of 64
    /// below 4096); `None`: a boxed page wherever the allocator puts it.
    pub page_offset: Option<usize>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            corpus_files: Vec::new(),
            codecs: Vec::new(),
            json: false,
            plot: None,
            reps: 5,
            order: measure::Order::BackToBack,
            max_pages: 25_000,
            workload: None,
            no_capture: false,
            class_pages: 0,
            progress: true,
            runs: 1,
            page_offset: None,
        }
    }
}

/// Where the human-readable log goes: stdout, or stderr when stdout carries JSON.
pub struct Log {
    to_stderr: bool,
}

impl Log {
    /// A log on stderr when `json`, else stdout.
    pub fn new(json: bool) -> Log {
        Log { to_stderr: json }
    }

    /// Writes `text` and a newline.
    pub fn line(&self, text: impl AsRef<str>) {
        if self.to_stderr {
            eprintln!("{}", text.as_ref());
        } else {
            println!("{}", text.as_ref());
            let _ = std::io::stdout().flush();
        }
    }
}

/// Facts about the machine and the run, printed first and kept in the JSON.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// `model name` from /proc/cpuinfo.
    pub cpu: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// UTC date and time of the run.
    pub date: String,
    /// The timer (clock, calibrated rate, overhead).
    pub timer: Timer,
    /// liblzo2 version of the C reference.
    pub liblzo2: String,
    /// Load averages when the run started.
    pub load_before: Option<[f64; 3]>,
}

impl Machine {
    /// Collects the facts (the timer must be calibrated already).
    pub fn collect(timer: &Timer) -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(str::trim)
                    .map(String::from)
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        Machine {
            cpu,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            date: utc_now(),
            timer: timer.clone(),
            liblzo2: peers::LibLzo::version(),
            load_before: timing::load_average(),
        }
    }

    /// The header lines.
    pub fn describe(&self) -> String {
        format!(
            "machine: {} ({} CPUs), {}\ntimer: {}\nload average at start: {}",
            self.cpu,
            self.cpus,
            self.date,
            self.timer.describe(),
            format_load(self.load_before)
        )
    }
}

fn format_load(load: Option<[f64; 3]>) -> String {
    load.map_or_else(
        || "unavailable".into(),
        |l| format!("{:.2} {:.2} {:.2} (1, 5, 15 min)", l[0], l[1], l[2]),
    )
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm, proleptic Gregorian).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Corpus description in the JSON report.
#[derive(Clone, Debug, Serialize)]
pub struct CorpusInfo {
    /// Name used in the results.
    pub name: String,
    /// Where the pages came from.
    pub origin: String,
    /// Pages measured.
    pub pages: usize,
}

/// The whole JSON report of a run.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// Tool name and version.
    pub tool: String,
    /// Machine and timer.
    pub machine: Machine,
    /// Repetitions per page per codec (minimum kept).
    pub reps: usize,
    /// "back-to-back" (each page `reps` times in a row) or "sweep" (`reps` passes over
    /// the corpus).
    pub order: &'static str,
    /// Streams longer than this count as incompressible.
    pub incompressible_above_bytes: usize,
    /// The corpora.
    pub corpora: Vec<CorpusInfo>,
    /// How many times the corpora were measured.
    pub runs: usize,
    /// One entry per codec per corpus per run (`Summary::run`), run after run.
    pub results: Vec<Summary>,
    /// The core's throughput while each corpus was measured, run after run.
    pub core_rates: Vec<CoreRate>,
    /// Load averages when the run ended.
    pub load_after: Option<[f64; 3]>,
    /// Wall time of the measuring, seconds.
    pub seconds: f64,
}

/// The core's throughput ([`timing::core_rate`]) while one corpus was measured, one reading
/// per page: whether the figures come from a core of its own or one shared with another
/// hardware thread.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoreRate {
    /// Which run (1-based, see `--runs`).
    pub run: usize,
    /// Which corpus.
    pub corpus: String,
    /// Readings taken (0 without the TSC).
    pub readings: usize,
    /// Their median, 10th and 90th percentile (nearest rank), in independent additions per
    /// tick; `None` without readings.
    pub median: Option<f64>,
    /// See `median`.
    pub p10: Option<f64>,
    /// See `median`.
    pub p90: Option<f64>,
}

impl CoreRate {
    /// Summarises `readings` of run `run` on `corpus`.
    pub fn over(run: usize, corpus: &str, mut readings: Vec<f64>) -> CoreRate {
        readings.sort_by(f64::total_cmp);
        CoreRate {
            run,
            corpus: corpus.to_string(),
            readings: readings.len(),
            median: timing::nearest_rank(&readings, 0.5),
            p10: timing::nearest_rank(&readings, 0.1),
            p90: timing::nearest_rank(&readings, 0.9),
        }
    }

    /// The line printed under the corpus's table.
    pub fn describe(&self) -> String {
        match (self.median, self.p10, self.p90) {
            (Some(median), Some(p10), Some(p90)) => format!(
                "core throughput while measuring: median {median:.2}, {p10:.2}-{p90:.2} from the 10th to \
                 the 90th percentile of {} readings (one per page: additions per TSC tick of a probe \
                 loop whose additions do not depend on each other; it falls when another hardware \
                 thread shares the core)",
                self.readings
            ),
            _ => "core throughput: not measured (no TSC)".into(),
        }
    }
}

/// The share of the highest core throughput seen in a `--runs` measurement that a corpus's
/// run must reach to count as measured on a core of its own: the phases seen with another
/// tenant on the core read a third to a half below the others (docs/perf/pagebench.md).
pub const FULL_RATE_SHARE: f64 = 0.9;

/// The runs measured at the core's full throughput, when some were not: the (run, corpus)
/// pairs whose core throughput (median) reached [`FULL_RATE_SHARE`] of the highest seen in
/// any run on any corpus, with a heading that gives that rate and how many runs each corpus
/// kept. `None` when every run qualifies (or none was measured with the TSC): the table
/// over all runs says it all.
///
/// The highest rate is relative: when another hardware thread shared the core in every run,
/// the kept runs are only the least shared ones, which the rate in the heading shows.
pub fn full_rate_runs(rates: &[CoreRate]) -> Option<(String, Vec<(usize, String)>)> {
    let highest = rates.iter().filter_map(|r| r.median).max_by(f64::total_cmp)?;
    let full = |r: &&CoreRate| r.median.is_some_and(|m| m >= FULL_RATE_SHARE * highest);
    let kept: Vec<(usize, String)> = rates.iter().filter(full).map(|r| (r.run, r.corpus.clone())).collect();
    if kept.len() == rates.len() {
        return None;
    }
    let mut corpora: Vec<&str> = Vec::new();
    for r in rates {
        if !corpora.contains(&r.corpus.as_str()) {
            corpora.push(&r.corpus);
        }
    }
    let counts: Vec<String> = corpora
        .iter()
        .map(|&c| {
            let of = rates.iter().filter(|r| r.corpus == c);
            format!("{c} {} of {}", of.clone().filter(full).count(), of.count())
        })
        .collect();
    let heading = format!(
        "== over the runs at the core's full throughput (at least {:.0}% of the highest median seen, \
         {highest:.2}; runs kept: {}): each codec's median ticks and its ratios to C in the same run ==",
        100.0 * FULL_RATE_SHARE,
        counts.join(", ")
    );
    Some((heading, kept))
}

/// The default corpus: a captured child workload, mmap001 and fillmem.
pub fn default_corpora(opts: &RunOptions, log: &Log) -> Vec<Corpus> {
    let mut corpora = Vec::new();
    if !opts.no_capture {
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("pagebench"));
        let first = opts.workload.unwrap_or_else(HeapWorkload::best_available);
        let mut attempts = vec![first];
        if first != HeapWorkload::BuiltIn {
            attempts.push(HeapWorkload::BuiltIn);
        }
        for workload in attempts {
            let started = Instant::now();
            match capture::capture_workload(workload, &exe) {
                Ok((cap, description)) => {
                    corpora.push(Corpus {
                        name: workload.name().to_string(),
                        origin: format!(
                            "captured: {description}; {} in {:.1} s",
                            cap.describe(),
                            started.elapsed().as_secs_f64()
                        ),
                        pages: cap.pages,
                    });
                    break;
                }
                Err(e) => log.line(format!("note: capturing the {} workload failed: {e}", workload.name())),
            }
        }
    }
    corpora.push(corpus::mmap001(1024));
    corpora.push(corpus::fillmem(4));
    corpora
}

/// `run`: measure every selected codec on every corpus and report.
///
/// # Errors
///
/// Unknown codecs, unreadable corpus files, round-trip failures (loud, never a number),
/// unwritable plot files.
pub fn run(opts: &RunOptions) -> Result<RunReport, AnyError> {
    let log = Log::new(opts.json);
    let mut codecs = codecs::select(&opts.codecs)?;
    // The plot file is created now, so that a bad path fails before minutes of measuring.
    if let Some(path) = &opts.plot {
        std::fs::write(path, b"").map_err(|e| format!("plot file {}: {e}", path.display()))?;
    }
    let timer = Timer::new();
    let machine = Machine::collect(&timer);
    log.line(format!("pagebench {}", env!("CARGO_PKG_VERSION")));
    log.line(machine.describe());

    let mut corpora = if opts.corpus_files.is_empty() {
        default_corpora(opts, &log)
    } else {
        opts.corpus_files.iter().map(|p| corpus::read_corpus(p)).collect::<Result<Vec<_>, _>>()?
    };
    if opts.class_pages > 0 {
        corpora.extend(PageClass::ALL.into_iter().map(|class| corpus::page_class(class, opts.class_pages)));
    }
    log.line("corpora (where every page came from):");
    for c in &mut corpora {
        c.subsample(opts.max_pages);
        log.line(format!("  {:<10} {:>6} pages  {}", c.name, c.pages.len(), c.origin));
    }
    log.line(format!(
        "codecs: {} -- each page: every codec in turn (the first codec changes from page to page), \
         {} compressions and {} decompressions each {}, minimum kept, every round trip verified",
        codecs.iter().map(|c| c.name()).collect::<Vec<_>>().join(", "),
        opts.reps,
        opts.reps,
        match opts.order {
            measure::Order::BackToBack => "back to back (warm: predictors have just seen the page)",
            measure::Order::Sweep => "in sweeps over the corpus (cold: never the same page twice in a row)",
        }
    ));

    log.line(format!(
        "wkdm = the dispatched path ({}); wkdm-<path> = WKdm pinned to another path; hybrid = WKdm, then \
         LZO when WKdm refuses or reaches {} bytes",
        wkdm::Isa::best().name(),
        codecs::HYBRID_THRESHOLD
    ));
    log.line(PEERS_LEGEND);
    if let Some(offset) = opts.page_offset {
        log.line(format!("decoding into a page {offset} bytes past a 4 KiB boundary"));
    }
    let started = Instant::now();
    let mut progress = Progress::new(opts.progress);
    let run_count = opts.runs.max(1);
    let mut per_run: Vec<Vec<Summary>> = Vec::new();
    let mut core_rates = Vec::new();
    for run in 1..=run_count {
        if run_count > 1 {
            log.line("");
            log.line(format!("==== run {run} of {run_count}, {} ====", utc_now()));
        }
        let mut results = Vec::new();
        for c in &corpora {
            let measured = measure::run_corpus_placed(
                &timer,
                c,
                &mut codecs,
                opts.reps,
                opts.order,
                opts.page_offset,
                &mut progress,
            )?;
            let rate = CoreRate::over(run, &c.name, measured.core_rates);
            let summaries = report::summarize(&timer, &measured.codecs, run);
            log.line("");
            log.line(format!("== {}: {} pages ==", c.name, c.pages.len()));
            log.line(report::table(&summaries));
            log.line(rate.describe());
            results.extend(summaries);
            core_rates.push(rate);
        }
        per_run.push(results);
    }
    if run_count > 1 {
        log.line("");
        log.line(format!(
            "== over the {run_count} runs: each codec's median ticks and its ratios to C in the same run =="
        ));
        log.line(report::runs_table(&per_run));
        if let Some((heading, full)) = full_rate_runs(&core_rates) {
            log.line("");
            log.line(heading);
            let kept = |s: &Summary| full.iter().any(|(run, corpus)| *run == s.run && *corpus == s.corpus);
            log.line(report::runs_table_over(&per_run, kept, "median over those runs (min-max)"));
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let load_after = timing::load_average();
    log.line(format!(
        "measured in {seconds:.1} s; load average at end: {}; ticks are TSC ticks (not core cycles), \
         overhead subtracted; 'incompr' = refused or > {} bytes",
        format_load(load_after),
        measure::INCOMPRESSIBLE_ABOVE
    ));

    let report = RunReport {
        tool: format!("pagebench {}", env!("CARGO_PKG_VERSION")),
        machine,
        reps: opts.reps,
        order: match opts.order {
            measure::Order::BackToBack => "back-to-back",
            measure::Order::Sweep => "sweep",
        },
        incompressible_above_bytes: measure::INCOMPRESSIBLE_ABOVE,
        corpora: corpora
            .iter()
            .map(|c| CorpusInfo { name: c.name.clone(), origin: c.origin.clone(), pages: c.pages.len() })
            .collect(),
        runs: run_count,
        results: per_run.concat(),
        core_rates,
        load_after,
        seconds,
    };
    if let Some(path) = &opts.plot {
        let title =
            format!("pagebench: ratio vs throughput, {} ({})", report.machine.cpu, report.machine.date);
        std::fs::write(path, report::plot_svg(&per_run[0], &title))
            .map_err(|e| format!("plot file {}: {e}", path.display()))?;
        log.line(format!("plot written to {}", path.display()));
    }
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(report)
}

/// Options of `capture`.
#[derive(Clone, Debug)]
pub struct CaptureOptions {
    /// Output page file.
    pub output: PathBuf,
    /// Capture this running process.
    pub pid: Option<i32>,
    /// Or start this command (with a cleared environment) and capture it once settled.
    pub command: Vec<String>,
    /// How long the resident size must hold still before the capture.
    pub settle: Duration,
    /// Capture anyway after this long.
    pub max_wait: Duration,
}

/// `capture`: write a process's resident anonymous pages to a page file.
///
/// # Errors
///
/// Neither or both of pid and command, a command that cannot start or exits early, no
/// access to the process, an unwritable output.
pub fn capture(opts: &CaptureOptions) -> Result<capture::Capture, AnyError> {
    let cap = match (opts.pid, opts.command.split_first()) {
        (Some(pid), None) => capture::capture_pid(pid)?,
        (None, Some((program, args))) => {
            let path = capture::find_program(program).ok_or_else(|| format!("{program}: not found"))?;
            let mut child = capture::spawn_clean(&path, args, true)?;
            eprintln!(
                "started {} (pid {}) with a cleared environment; waiting for its heap",
                child.description,
                child.pid()
            );
            capture::wait_until_settled(&mut child, opts.settle, opts.max_wait)?;
            capture::capture_pid(child.pid())?
        }
        _ => return Err("give either --pid PID or -- COMMAND ARGS...".into()),
    };
    corpus::write_pages(&opts.output, &cap.pages)?;
    println!("{}", cap.describe());
    println!("{} pages written to {}", cap.pages.len(), opts.output.display());
    Ok(cap)
}

/// The real pages commands other than `run` work on: the given files, or a freshly
/// captured child workload (falling back to the built-in one).
///
/// # Errors
///
/// Unreadable files, or no workload could be captured.
pub fn real_pages(files: &[PathBuf], log: &Log) -> Result<Vec<Corpus>, AnyError> {
    if !files.is_empty() {
        return read_corpora(files);
    }
    let opts = RunOptions::default();
    let mut corpora = default_corpora(&opts, log);
    corpora.retain(|c| c.origin.starts_with("captured"));
    if corpora.is_empty() {
        return Err("no real pages: capturing a child workload failed; pass --corpus FILE".into());
    }
    Ok(corpora)
}

/// Options of `alloc`.
#[derive(Clone, Debug)]
pub struct AllocOptions {
    /// Page files whose compressed sizes to use (empty: capture a child workload).
    pub corpus_files: Vec<PathBuf>,
    /// Payload MiB when the pool is full (the cold set).
    pub cold_mb: usize,
    /// Alloc+free pairs timed, hot and cold.
    pub pairs: usize,
    /// JSON on stdout.
    pub json: bool,
}

/// `alloc`: xvmalloc and rlsf on the compressed sizes of real pages (LZO and WKdm).
///
/// # Errors
///
/// No real pages could be read or captured.
pub fn alloc(opts: &AllocOptions) -> Result<Vec<crate::alloc::AllocReport>, AnyError> {
    let log = Log::new(opts.json);
    let timer = Timer::new();
    let machine = Machine::collect(&timer);
    log.line(machine.describe());
    let corpora = real_pages(&opts.corpus_files, &log)?;
    let pages: Vec<_> = corpora.iter().flat_map(|c| c.pages.iter().cloned()).collect();
    for c in &corpora {
        log.line(format!("pages: {} ({} pages) {}", c.name, c.pages.len(), c.origin));
    }
    log.line(format!(
        "object sizes: stream lengths of those pages, same-filled and > {} B pages left out (zram keeps them \
         as a value / raw); hot = 1000 live objects, cold = {} MiB payload live; {} pairs timed each",
        measure::INCOMPRESSIBLE_ABOVE,
        opts.cold_mb,
        opts.pairs
    ));
    let mut reports = Vec::new();
    let size_sets: [(&str, Box<dyn pagecodec::PageCodec>); 2] =
        [("lzo", Box::new(lzokit::Lzo1x::default())), ("wkdm", Box::new(wkdm::Wkdm::default()))];
    for (name, mut codec) in size_sets {
        let sizes = crate::alloc::object_sizes(codec.as_mut(), &pages);
        if sizes.is_empty() {
            return Err(format!("no compressible pages for {name}").into());
        }
        reports.extend(crate::alloc::bench_both(&timer, name, &sizes, opts.cold_mb, opts.pairs));
    }
    log.line("");
    log.line(crate::alloc::table(&reports));
    log.line(format!(
        "efficiency = payload / bytes held from the page source; pair = free a random live object + \
         allocate the next size (fenced TSC, overhead subtracted); load average at end: {}",
        format_load(timing::load_average())
    ));
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    }
    Ok(reports)
}

/// Options of `simulate`.
#[derive(Clone, Debug)]
pub struct SimulateOptions {
    /// The workload.
    pub workload: crate::simulate::Workload,
    /// Simulated RAM in MiB.
    pub ram_mb: usize,
    /// The store's codec (`hybrid` or any codec name).
    pub codec: String,
    /// JSON on stdout.
    pub json: bool,
    /// A backing file for idle pages.
    pub writeback: Option<PathBuf>,
}

/// `simulate`: replay a workload of the 2001 compressed-cache paper over an LRU "RAM" and a compressed page store.
///
/// # Errors
///
/// An unknown codec, or a page the store lost or corrupted.
pub fn simulate(opts: &SimulateOptions) -> Result<crate::simulate::SimReport, AnyError> {
    use crate::simulate::simulate_with as simulate;
    let log = Log::new(opts.json);
    let timer = Timer::new();
    log.line(Machine::collect(&timer).describe());
    if opts.ram_mb == 0 {
        return Err("--ram-mb must be at least 1".into());
    }
    let started = Instant::now();
    let report = if opts.codec == "hybrid" {
        simulate(codecs::hybrid(), opts.workload, opts.ram_mb, &timer, opts.writeback.as_deref())
    } else {
        let codec = codecs::by_name(&opts.codec).ok_or_else(|| {
            format!("unknown codec {:?}; known: hybrid, {}", opts.codec, codecs::names().join(", "))
        })?;
        simulate(codec, opts.workload, opts.ram_mb, &timer, opts.writeback.as_deref())
    }?;
    log.line(report.render());
    log.line(format!(
        "replayed in {:.2} s (simulated RAM is an LRU of {} pages; store/load ticks are fenced TSC around the calls)",
        started.elapsed().as_secs_f64(),
        opts.ram_mb * 256
    ));
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(report)
}

/// Options of `store`.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Page files (empty: capture a child workload).
    pub corpus_files: Vec<PathBuf>,
    /// Codecs (`hybrid` or any codec name).
    pub codecs: Vec<String>,
    /// Subsample to at most this many pages (0: all).
    pub max_pages: usize,
    /// JSON on stdout.
    pub json: bool,
    /// Recompression and writeback instead of the codec comparison.
    pub tiers: Option<crate::tiers::TierOptions>,
}

/// `store`: real pages through `pagestore` per codec.
///
/// # Errors
///
/// No pages, an unknown codec, a lost or corrupted page.
pub fn store(opts: &StoreOptions) -> Result<Vec<crate::storebench::StoreRow>, AnyError> {
    let log = Log::new(opts.json);
    let timer = Timer::new();
    log.line(Machine::collect(&timer).describe());
    let mut rows = Vec::new();
    for mut corpus in real_pages(&opts.corpus_files, &log)? {
        corpus.subsample(opts.max_pages);
        log.line(format!("pages: {} ({} pages) {}", corpus.name, corpus.pages.len(), corpus.origin));
        if let Some(tiers) = &opts.tiers {
            let mut reports = Vec::new();
            for codec in &opts.codecs {
                let report = crate::tiers::bench_tiers(&timer, codec, &corpus.pages, tiers)?;
                log.line(report.render());
                reports.push(report);
            }
            log.line(
                "used/orig = mem_used_total (after compaction) / orig_data_size; phases: stored (primary codec), \
                 recompressed huge / idle (per secondary codec, slot order: huge pages first, then every idle \
                 page a lower slot wrote), written back (every page not same-filled, to the file); ticks/page = \
                 TSC ticks per page tried (decode + compress); load from the file = TSC ticks per load call \
                 (read, checksum, decode), every page verified after every phase",
            );
            if opts.json {
                println!("{}", serde_json::to_string_pretty(&reports)?);
            }
            continue;
        }
        let r = crate::storebench::bench_stores(&timer, &opts.codecs, &corpus.pages)?;
        log.line(crate::storebench::table(&r, &timer));
        rows.extend(r);
    }
    if opts.tiers.is_some() {
        return Ok(rows);
    }
    log.line(format!(
        "ratio = input / output over the pages the codec saw; used/orig = mem_used_total / orig_data_size; \
         store/load = TSC ticks per call (median, p99, max), every page verified; codec c+d = the bare codec's \
         compress (store's budget) + decompress medians on the same pages in the same loops; ovh med = median over \
         pairs of consecutive pages of (store + load) - (compress + decompress), halved, ovh% = its share of the \
         median compress + decompress \
         (ovh mean, mean%: the same with means); load average: {}",
        format_load(timing::load_average())
    ));
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    }
    Ok(rows)
}

/// Options of `zram`.
#[derive(Clone, Debug)]
pub struct ZramOptions {
    /// Page files (default: capture a child workload).
    pub corpus_files: Vec<PathBuf>,
    /// Kernel codec names to compare (all the kernel offers when empty).
    pub codecs: Vec<String>,
    /// Scales to run, in order.
    pub scales: Vec<crate::zram::Scale>,
    /// JSON on stdout.
    pub json: bool,
}

/// `zram`: the kernel's zram and `pagestore` on the same pages, per codec and scale.
///
/// # Errors
///
/// No root, no zram, a kernel refusing a codec or size, an unknown codec, a page read
/// back wrong, Ctrl-C; every device created is reset and removed first.
pub fn zram(opts: &ZramOptions) -> Result<Vec<crate::zram::ScaleReport>, AnyError> {
    use crate::zram::{self as z, ZramError, ZramPaths};
    let log = Log::new(opts.json);
    let timer = Timer::new();
    log.line(Machine::collect(&timer).describe());
    let paths = ZramPaths::default();
    z::check_environment(&paths)?;
    if let Some(bad) = opts.codecs.iter().find(|c| !z::KERNEL_CODECS.contains(&c.as_str())) {
        return Err(format!("unknown zram codec {bad:?}; known: {}", z::KERNEL_CODECS.join(", ")).into());
    }
    z::install_interrupt_handler();
    let offered = z::offered_codecs(&paths)?;
    let wanted: Vec<String> = if opts.codecs.is_empty() {
        z::KERNEL_CODECS.iter().map(|s| s.to_string()).collect()
    } else {
        opts.codecs.clone()
    };
    let selected: Vec<String> = wanted.iter().filter(|c| offered.contains(c)).cloned().collect();
    log.line(format!(
        "kernel {} offers: {}; comparing: {}",
        kernel_release(),
        offered.join(" "),
        selected.join(" ")
    ));
    for missing in wanted.iter().filter(|c| !offered.contains(c)) {
        log.line(format!("note: the kernel does not offer {missing}; skipped"));
    }
    if selected.is_empty() {
        return Err(ZramError::NoCodec { offered, wanted }.into());
    }
    let huge = z::zsmalloc_huge_class_size(z::ZSMALLOC_CHAIN_SIZE);
    if offered.iter().any(|c| c == "lzo-rle") {
        z::probe_huge_threshold(&paths, huge)?;
        log.line(format!(
            "huge threshold: zsmalloc (chain {}) gives huge_class_size {huge}; confirmed on this kernel \
             (a {}-byte lzo-rle stream is not huge, a {huge}-byte one is); the store keeps streams of <= {} bytes",
            z::ZSMALLOC_CHAIN_SIZE,
            huge - 1,
            huge - 1
        ));
    } else {
        log.line(format!(
            "huge threshold: {huge} from zsmalloc's rules (no lzo-rle to confirm it on this kernel)"
        ));
    }
    let mut pages = Vec::new();
    for corpus in real_pages(&opts.corpus_files, &log)? {
        log.line(format!("pages: {} ({} pages) {}", corpus.name, corpus.pages.len(), corpus.origin));
        pages.extend(corpus.pages);
    }
    if pages.is_empty() {
        return Err("the corpus has no pages".into());
    }
    let mut reports = Vec::new();
    for scale in &opts.scales {
        let count = scale.count(pages.len());
        let mut rows = Vec::new();
        for codec in &selected {
            rows.push(z::run_zram(&paths, codec, &pages, count)?);
            rows.push(z::run_store(codec, &pages, count, huge)?);
        }
        let report = z::ScaleReport { scale: scale.name(), pages: count, huge_class_size: huge, rows };
        log.line(format!(
            "scale {}: {count} pages ({} MiB), every page read back and compared",
            report.scale,
            count / 256
        ));
        log.line(z::table(&report));
        reports.push(report);
    }
    log.line(
        "used/orig = mem_used_total / orig_data_size; meta B/pg = bytes per stored page outside mem_used_total \
         (zram: its 16-byte table entry; pagestore: heap growth while storing minus mem_used_total); \
         times per 4 KiB page: zram = pwrite/pread O_DIRECT syscall, pagestore = store/load call",
    );
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    }
    Ok(reports)
}

/// `uname -r`.
fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_or_else(|_| "(unknown)".into(), |s| s.trim().into())
}

/// Reads page files into corpora (helper for commands that take `--corpus`).
///
/// # Errors
///
/// The first file that cannot be read.
pub fn read_corpora(files: &[PathBuf]) -> Result<Vec<Corpus>, AnyError> {
    Ok(files.iter().map(|p: &PathBuf| corpus::read_corpus(Path::new(p))).collect::<Result<Vec<_>, _>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_rate_takes_median_and_deciles_of_the_readings() {
        // Ten readings, out of order: nearest ranks 5, 1 and 9 of the sorted values.
        let readings = vec![4.6, 2.0, 2.2, 4.7, 2.1, 2.4, 2.3, 4.5, 2.5, 1.9];
        let rate = CoreRate::over(2, "node", readings);
        assert_eq!((rate.run, rate.corpus.as_str(), rate.readings), (2, "node", 10));
        assert_eq!((rate.median, rate.p10, rate.p90), (Some(2.3), Some(1.9), Some(4.6)));
        assert!(rate.describe().contains("median 2.30"), "{}", rate.describe());
        let none = CoreRate::over(1, "node", Vec::new());
        assert_eq!((none.readings, none.median, none.p10, none.p90), (0, None, None, None));
        assert!(none.describe().contains("not measured"));
    }

    #[test]
    fn full_rate_runs_keep_the_corpora_measured_at_the_highest_rates() {
        let timer = timing::Timer::with_clock(timing::Clock::Instant);
        let codec_run = |codec: &str, corpus: &str, ticks: u64| measure::CodecRun {
            codec: codec.into(),
            corpus: corpus.into(),
            sizes: vec![Some(100)],
            compress_ticks: vec![ticks],
            decompress_ticks: vec![ticks],
        };
        // Two corpora, three runs; wkdm takes 100 ticks against C LZ4's 200, except on a
        // shared core (run 2 on both corpora, run 3 on b), where it takes 300.
        let shared = |run: usize, corpus: &str| run == 2 || (run == 3 && corpus == "b");
        let mut per_run = Vec::new();
        let mut rates = Vec::new();
        for run in 1..=3 {
            let mut codecs = Vec::new();
            for corpus in ["a", "b"] {
                let ticks = if shared(run, corpus) { 300 } else { 100 };
                codecs.push(codec_run("wkdm", corpus, ticks));
                codecs.push(codec_run("lz4", corpus, 200));
                let rate = if shared(run, corpus) { 2.4 } else { 4.8 - 0.1 * run as f64 };
                rates.push(CoreRate::over(run, corpus, vec![rate]));
            }
            per_run.push(report::summarize(&timer, &codecs, run));
        }
        let (heading, kept) = full_rate_runs(&rates).expect("some runs were shared");
        assert!(heading.contains("4.70") && heading.contains("a 2 of 3, b 1 of 3"), "{heading}");
        assert_eq!(kept, [(1, "a".to_string()), (1, "b".to_string()), (3, "a".to_string())]);
        let table = report::runs_table_over(
            &per_run,
            |s| kept.iter().any(|(run, corpus)| *run == s.run && *corpus == s.corpus),
            "over those runs",
        );
        let row = |corpus: &str| {
            table.lines().find(|l| l.starts_with(corpus) && l.contains("wkdm") && l.contains("comp")).unwrap()
        };
        assert!(row("a").contains("0.500x (0.500x-0.500x)"), "{table}");
        assert!(row("b").contains("0.500x (0.500x-0.500x)"), "{table}");
        // Every run at the full rate (or none measured): no second table.
        let all_full: Vec<CoreRate> =
            rates.iter().map(|r| CoreRate { median: Some(4.8), ..r.clone() }).collect();
        assert!(full_rate_runs(&all_full).is_none());
        let unmeasured: Vec<CoreRate> =
            rates.iter().map(|r| CoreRate::over(r.run, &r.corpus, Vec::new())).collect();
        assert!(full_rate_runs(&unmeasured).is_none());
    }

    #[test]
    fn utc_dates_are_formatted() {
        let now = utc_now();
        assert_eq!(now.len(), "2026-01-01 00:00:00 UTC".len(), "{now}");
        assert!(now.starts_with("20"));
    }

    #[test]
    fn run_on_a_corpus_file_reports_every_codec() {
        let dir = std::env::temp_dir().join(format!("pagebench-run-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mixed.pages");
        let pages: Vec<_> =
            pagecodec::testing::PageClass::ALL.iter().map(|&c| pagecodec::testing::generate(c, 1)).collect();
        corpus::write_pages(&path, &pages).unwrap();
        let plot = dir.join("p.svg");
        let opts = RunOptions {
            corpus_files: vec![path],
            reps: 1,
            plot: Some(plot.clone()),
            progress: false,
            ..RunOptions::default()
        };
        let report = run(&opts).unwrap();
        assert_eq!(report.results.len(), codecs::names().len());
        assert!(report.results.iter().all(|r| r.pages == pages.len() && r.corpus == "mixed"));
        let json = serde_json::to_string(&report).unwrap();
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["corpora"][0]["pages"], pages.len());
        assert!(std::fs::read_to_string(&plot).unwrap().contains("</svg>"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn several_runs_report_every_codec_once_per_run() {
        let dir = std::env::temp_dir().join(format!("pagebench-runs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("few.pages");
        let pages = [pagecodec::testing::generate(pagecodec::testing::PageClass::Text, 2)];
        corpus::write_pages(&path, &pages).unwrap();
        let codecs = ["lzo", "liblzo2", "lz4"].map(String::from).to_vec();
        let opts = RunOptions {
            corpus_files: vec![path],
            codecs,
            reps: 1,
            progress: false,
            runs: 3,
            ..RunOptions::default()
        };
        let report = run(&opts).unwrap();
        assert_eq!(report.runs, 3);
        assert_eq!(report.results.len(), 9);
        for (i, r) in report.results.iter().enumerate() {
            assert_eq!(r.run, 1 + i / 3, "run after run");
        }
        let lzo = report.results.iter().find(|r| r.codec == "lzo").unwrap();
        assert!(lzo.compress.vs_liblzo2.is_some() && lzo.decompress.vs_lz4.is_some());
        // One core summary per corpus per run, in run order, of one reading per page when
        // the clock is the TSC.
        let runs: Vec<usize> = report.core_rates.iter().map(|r| r.run).collect();
        assert_eq!(runs, [1, 2, 3]);
        for rate in &report.core_rates {
            assert_eq!(rate.corpus, report.corpora[0].name);
            let tsc = timing::core_rate(&report.machine.timer).is_some();
            assert_eq!(rate.readings, usize::from(tsc));
            assert_eq!(rate.median.is_some(), tsc);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
