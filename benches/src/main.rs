//! `pagebench` command line: argument parsing only; the work lives in the library.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use pagebench::app::{self, CaptureOptions, RunOptions};
use pagebench::capture::HeapWorkload;
use pagebench::measure::Order;

// Counts live heap bytes so `zram` can measure the store's metadata; two relaxed atomic
// adds per allocation, and no measured codec loop allocates.
#[global_allocator]
static HEAP: pagebench::zram::CountingAlloc = pagebench::zram::CountingAlloc;

/// Capture real memory pages and compare page compressors on them, cycle-accurately.
///
/// With no command: capture a child workload's heap, generate the pages of the 2001 paper's workloads
/// (mmap001, fillmem), and measure every codec and peer on them.
#[derive(Parser, Debug)]
#[command(name = "pagebench", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Measure codecs on page files (or the default corpus without --corpus).
    Run(RunArgs),
    /// Write a process's resident anonymous pages to a page file.
    Capture(CaptureArgs),
    /// Allocator benchmark: xvmalloc and rlsf on the compressed sizes of real pages.
    Alloc(AllocArgs),
    /// Replay a workload of the 2001 compressed-cache paper over an LRU "RAM" and a compressed page store.
    Simulate(SimulateArgs),
    /// Real pages through the page store: ratio, memory used, store+load ticks per codec.
    Store(StoreArgs),
    /// The kernel's zram against pagestore on the same pages, per kernel codec (root).
    ///
    /// Hot-adds a zram device of its own per codec (never an existing one), writes the
    /// pages with O_DIRECT, reads mm_stat, reads every page back, then resets and removes
    /// the device. Store twins: lzo-rle -> lzokit LzoRle, lzo -> lzokit's kernel LZO1X-1
    /// compressor, lz4 -> lz4_flex (pagecodec-adapters, different bytes from the kernel's
    /// C LZ4), zstd -> C zstd level 3 (pagecodec-adapters).
    Zram(ZramArgs),
    /// Run a workload of the 2001 compressed-cache paper for real over a uswap region
    /// (userfaultfd, Linux) with N MiB resident, every page checked on every read, next to
    /// simulate's prediction.
    #[cfg(target_os = "linux")]
    Swap(SwapArgs),
    /// The workload process of `swap --kernel-zram` (started by it, in its memory cgroup).
    #[cfg(target_os = "linux")]
    #[command(hide = true)]
    KernelWorkload {
        /// The workload.
        #[arg(long, value_enum)]
        workload: pagebench::simulate::Workload,
        /// The cgroup's limit, MiB (sizes the workload).
        #[arg(long)]
        ram_mb: usize,
    },
    /// The built-in heap workload the default run captures when no python3/node exists.
    #[command(hide = true)]
    HeapWorkload {
        /// File to create once the heap is built.
        ready: PathBuf,
    },
}

#[derive(Args, Debug, Clone)]
struct RunArgs {
    /// Flat page files (4096-byte pages back to back) to measure instead of the default corpus.
    #[arg(long, num_args = 1.., value_name = "FILE")]
    corpus: Vec<PathBuf>,
    /// Only these codecs (repeat or comma-separate). Ours: wkdm (and wkdm-<isa>), lzo, lzo-fast,
    /// lzo-rle, lzo-kernel, hybrid, lz4-page, zstd (pagecodec-adapters). Peers: lz4 = C LZ4
    /// via lz4-sys, lz4_flex = the lz4_flex crate, zstd-1 = C zstd level 1, liblzo2 = C
    /// liblzo2 (miniLZO 2.10), lzo1x-rs = the pure-Rust lzo1x crate, raw = memcpy.
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    codec: Vec<String>,
    /// Print the JSON report on stdout (the human log goes to stderr).
    #[arg(long)]
    json: bool,
    /// Write an SVG plot: compression ratio vs compress/decompress throughput.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Compressions and decompressions per page per codec; the minimum is kept.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    reps: u32,
    /// Repeat in sweeps over the whole corpus instead of each page back to back, so no
    /// codec sees the same page twice in a row (cold branch predictors, as in service).
    #[arg(long)]
    sweep: bool,
    /// Subsample each corpus to at most this many pages, evenly spaced (0: all).
    #[arg(long, default_value_t = 25_000)]
    max_pages: usize,
    /// Default corpus: the child workload to capture (default: python3, else node, else built-in).
    #[arg(long, value_enum)]
    workload: Option<WorkloadArg>,
    /// Default corpus: skip capturing a child workload.
    #[arg(long)]
    no_capture: bool,
    /// Also measure one generated corpus per page class (zero, same-filled, ramp, sparse,
    /// pointers, text, random, ...), N pages each.
    #[arg(long, value_name = "N", default_value_t = 0)]
    classes: usize,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
    /// Measure the corpora N times (the pages are captured or read once), then print each
    /// codec's median and range over the runs of its median ticks and of its ratios to C
    /// liblzo2 and C LZ4 in the same run.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100), conflicts_with = "plot")]
    runs: u32,
    /// Decode into a page starting this many bytes past a 4 KiB boundary (a multiple of 64
    /// below 4096) instead of wherever the allocator puts it: where the output page lies
    /// against a codec's own buffers can move a decoder's time.
    #[arg(long, value_name = "BYTES", value_parser = parse_page_offset)]
    page_offset: Option<usize>,
}

/// `--page-offset`: a byte count [`pagebench::measure::check_page_offset`] accepts.
fn parse_page_offset(text: &str) -> Result<usize, String> {
    let offset: usize = text.parse().map_err(|e| format!("{text:?} is not a byte count: {e}"))?;
    pagebench::measure::check_page_offset(offset)
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum WorkloadArg {
    Python,
    Node,
    Builtin,
}

#[derive(Args, Debug)]
struct CaptureArgs {
    /// Output page file.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Capture this running process (it is stopped while read).
    #[arg(long, conflicts_with = "command")]
    pid: Option<i32>,
    /// Wait until the command's resident size holds still this long (ms).
    #[arg(long, default_value_t = 700)]
    settle_ms: u64,
    /// Capture anyway after this many seconds.
    #[arg(long, default_value_t = 60)]
    max_wait_secs: u64,
    /// Start this command with a cleared environment and capture it once its heap is built.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

#[derive(Args, Debug)]
struct AllocArgs {
    /// Page files whose LZO and WKdm stream sizes become the object sizes (default: capture
    /// a child workload).
    #[arg(long, num_args = 1.., value_name = "FILE")]
    corpus: Vec<PathBuf>,
    /// Payload MiB live when the pool is full (the cold set).
    #[arg(long, default_value_t = 100)]
    cold_mb: usize,
    /// Alloc+free pairs timed, hot and cold.
    #[arg(long, default_value_t = 20_000)]
    pairs: usize,
    /// JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct SimulateArgs {
    /// The workload of the 2001 paper to replay.
    #[arg(long, value_enum)]
    workload: pagebench::simulate::Workload,
    /// Simulated RAM in MiB.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=65536))]
    ram_mb: u32,
    /// The store's codec: hybrid, or any codec of `run` (default lzo-rle, zram's).
    #[arg(long, default_value = "lzo-rle")]
    codec: String,
    /// JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Write idle pages back to this file (created, removed at the end): after every RAM's
    /// worth of evictions, pages not stored or loaded since the last pass go to the file.
    #[arg(long, value_name = "FILE")]
    writeback: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct StoreArgs {
    /// Page files (default: capture a child workload).
    #[arg(long, num_args = 1.., value_name = "FILE")]
    corpus: Vec<PathBuf>,
    /// Codecs to store with (repeat or comma-separate).
    #[arg(long, value_delimiter = ',', default_value = "wkdm,lzo-rle,hybrid")]
    codec: Vec<String>,
    /// Subsample to at most this many pages (0: all).
    #[arg(long, default_value_t = 0)]
    max_pages: usize,
    /// JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Instead of comparing codecs: mark every page idle and recompress the huge, then the
    /// idle pages with these secondary codecs (slots 1-3 in order): zstd, zstd-N (level),
    /// lz4-page, lzo, lzo-rle, lzo-kernel, lzo-999, wkdm, hybrid.
    #[arg(long, value_delimiter = ',', value_name = "CODEC")]
    recompress: Vec<String>,
    /// Instead of comparing codecs (after any --recompress): write every page back to this
    /// file (created, removed at the end) and load each from it.
    #[arg(long, value_name = "FILE")]
    writeback: Option<PathBuf>,
    /// Open the writeback file with O_DIRECT.
    #[arg(long, requires = "writeback")]
    direct: bool,
    /// Pages per writeback batch (one flush each).
    #[arg(long, default_value_t = 64, requires = "writeback")]
    batch: usize,
    /// fdatasync the file at every batch.
    #[arg(long, requires = "writeback")]
    sync: bool,
    /// Write decompressed pages instead of compressed streams.
    #[arg(long, requires = "writeback")]
    write_pages: bool,
}

impl StoreArgs {
    fn tiers(&self) -> Option<pagebench::tiers::TierOptions> {
        (!self.recompress.is_empty() || self.writeback.is_some()).then(|| pagebench::tiers::TierOptions {
            recompress: self.recompress.clone(),
            writeback: self.writeback.clone(),
            direct: self.direct,
            batch: self.batch,
            sync: self.sync,
            write_pages: self.write_pages,
        })
    }
}

#[derive(Args, Debug)]
#[cfg(target_os = "linux")]
struct SwapArgs {
    /// The workload (or --threads for random pages from several threads).
    #[arg(long, value_enum, required_unless_present = "threads")]
    workload: Option<pagebench::simulate::Workload>,
    /// Instead of a workload: this many threads reading and writing random pages of a region
    /// twice the resident limit, every read checked.
    #[arg(long, conflicts_with_all = ["workload", "kernel_zram"])]
    threads: Option<usize>,
    /// Resident MiB: the region's resident limit, as simulate's RAM.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=65536))]
    ram_mb: u32,
    /// The store's codec: wkdm, lzo-rle, lzo, lz4-page or hybrid (with --kernel-zram: a
    /// codec the kernel's zram offers, such as lzo-rle or lz4).
    #[arg(long, default_value = "lzo-rle")]
    codec: String,
    /// Run the workload in a child process in a memory cgroup of --ram-mb MiB with swap on a
    /// zram device of its own (root): the kernel as the reference.
    #[arg(long)]
    kernel_zram: bool,
    /// Most pages one fault brings in when it continues a sequential scan (1: no
    /// readahead, as the kernel's zram swap).
    #[arg(long, default_value_t = uswap::RegionConfig::DEFAULT_READAHEAD, conflicts_with = "kernel_zram")]
    readahead: usize,
    /// JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct ZramArgs {
    /// Page files (default: capture a child workload).
    #[arg(long, num_args = 1.., value_name = "FILE")]
    corpus: Vec<PathBuf>,
    /// Kernel codecs to compare (default: every one of lzo-rle, lzo, lz4, zstd the kernel offers).
    #[arg(long, value_delimiter = ',')]
    codec: Vec<String>,
    /// Scales: `captured` (the corpus as is), or a page count (`32k` = 32 Ki pages), the
    /// corpus repeated to it.
    #[arg(long, value_delimiter = ',', default_value = "captured", value_parser = pagebench::zram::Scale::parse)]
    scale: Vec<pagebench::zram::Scale>,
    /// JSON on stdout.
    #[arg(long)]
    json: bool,
}

impl RunArgs {
    fn options(&self) -> RunOptions {
        RunOptions {
            corpus_files: self.corpus.clone(),
            codecs: self.codec.clone(),
            json: self.json,
            plot: self.plot.clone(),
            reps: self.reps as usize,
            order: if self.sweep { Order::Sweep } else { Order::BackToBack },
            max_pages: self.max_pages,
            workload: self.workload.map(|w| match w {
                WorkloadArg::Python => HeapWorkload::Python,
                WorkloadArg::Node => HeapWorkload::Node,
                WorkloadArg::Builtin => HeapWorkload::BuiltIn,
            }),
            no_capture: self.no_capture,
            class_pages: self.classes,
            progress: !self.quiet,
            runs: self.runs as usize,
            page_offset: self.page_offset,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => app::run(&cli.run.options()).map(drop),
        Some(Command::Run(args)) => app::run(&args.options()).map(drop),
        Some(Command::Capture(args)) => app::capture(&CaptureOptions {
            output: args.output,
            pid: args.pid,
            command: args.command,
            settle: Duration::from_millis(args.settle_ms),
            max_wait: Duration::from_secs(args.max_wait_secs),
        })
        .map(drop),
        Some(Command::Alloc(a)) => app::alloc(&app::AllocOptions {
            corpus_files: a.corpus,
            cold_mb: a.cold_mb,
            pairs: a.pairs,
            json: a.json,
        })
        .map(drop),
        Some(Command::Simulate(a)) => app::simulate(&app::SimulateOptions {
            workload: a.workload,
            ram_mb: a.ram_mb as usize,
            codec: a.codec,
            json: a.json,
            writeback: a.writeback,
        })
        .map(drop),
        Some(Command::Store(a)) => app::store(&app::StoreOptions {
            tiers: a.tiers(),
            corpus_files: a.corpus,
            codecs: a.codec,
            max_pages: a.max_pages,
            json: a.json,
        })
        .map(drop),
        Some(Command::Zram(a)) => app::zram(&app::ZramOptions {
            corpus_files: a.corpus,
            codecs: a.codec,
            scales: a.scale,
            json: a.json,
        })
        .map(drop),
        #[cfg(target_os = "linux")]
        Some(Command::Swap(a)) => swap(a),
        #[cfg(target_os = "linux")]
        Some(Command::KernelWorkload { workload, ram_mb }) => {
            pagebench::kswap::child(workload, ram_mb).map_err(|e| e.into())
        }
        Some(Command::HeapWorkload { ready }) => {
            pagebench::capture::run_heap_workload(&ready).map_err(|e| Box::new(e) as app::AnyError)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pagebench: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `swap`: a workload over uswap, the same under the kernel's zram (`--kernel-zram`), or
/// random pages from several threads (`--threads`).
#[cfg(target_os = "linux")]
fn swap(a: SwapArgs) -> Result<(), app::AnyError> {
    use pagebench::{kswap, swap, zram};
    fn emit<T: serde::Serialize>(json: bool, report: &T, text: String) {
        if json {
            println!("{}", serde_json::to_string_pretty(report).unwrap_or_default());
        } else {
            print!("{text}");
        }
    }
    let ram_mb = a.ram_mb as usize;
    match (a.threads, a.workload) {
        (Some(threads), _) => {
            let report = swap::random(threads, ram_mb, &a.codec, a.readahead)?;
            emit(a.json, &report, report.render());
        }
        (None, None) => return Err("swap needs --workload or --threads".into()),
        (None, Some(workload)) if a.kernel_zram => {
            let cgroups = std::path::Path::new(kswap::CGROUP_MEMORY);
            let report =
                kswap::kernel_swap(&zram::ZramPaths::default(), cgroups, workload, ram_mb, &a.codec)?;
            emit(a.json, &report, report.render());
        }
        (None, Some(workload)) => {
            let report = swap::swap(workload, ram_mb, &a.codec, a.readahead)?;
            emit(a.json, &report, report.render());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("pagebench").chain(args.iter().copied()))
    }

    #[test]
    fn page_offsets_must_keep_the_page_alignment() {
        let cli = parse(&["run", "--page-offset", "192"]).unwrap();
        let Some(Command::Run(args)) = cli.command else { panic!("not a run") };
        assert_eq!(args.options().page_offset, Some(192));
        for bad in ["100", "4096", "x"] {
            let err = parse(&["run", "--page-offset", bad]).unwrap_err().to_string();
            assert!(err.contains(bad), "{bad}: {err}");
        }
        assert_eq!(parse(&["run"]).map(|c| c.run.options().page_offset).unwrap(), None);
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn no_arguments_is_the_default_run() {
        let cli = parse(&[]).unwrap();
        assert!(cli.command.is_none());
        let o = cli.run.options();
        assert!(o.corpus_files.is_empty() && o.codecs.is_empty() && !o.json && o.reps == 5);
        assert_eq!(o.order, Order::BackToBack);
    }

    #[test]
    fn run_flags_parse() {
        let cli = parse(&[
            "run", "--corpus", "a.pages", "b.pages", "--codec", "lz4,raw", "--codec", "zstd-1", "--json",
            "--plot", "x.svg", "--reps", "3", "--sweep",
        ])
        .unwrap();
        let Some(Command::Run(args)) = cli.command else { panic!("not run") };
        let o = args.options();
        assert_eq!(o.corpus_files, [PathBuf::from("a.pages"), PathBuf::from("b.pages")]);
        assert_eq!(o.codecs, ["lz4", "raw", "zstd-1"]);
        assert!(o.json);
        assert_eq!(o.plot, Some(PathBuf::from("x.svg")));
        assert_eq!((o.reps, o.order), (3, Order::Sweep));
        // Top-level flags work without the subcommand too.
        assert!(parse(&["--json", "--codec", "lz4"]).unwrap().run.json);
        assert!(parse(&["--reps", "0"]).is_err());
        assert_eq!(o.runs, 1, "one run unless asked");
    }

    #[test]
    fn runs_parse_and_exclude_the_plot() {
        let cli = parse(&["run", "--corpus", "a.pages", "--runs", "8"]).unwrap();
        let Some(Command::Run(args)) = cli.command else { panic!("not run") };
        assert_eq!(args.options().runs, 8);
        assert!(parse(&["--runs", "0"]).is_err());
        assert!(parse(&["--runs", "2", "--plot", "x.svg"]).is_err(), "the plot shows one run");
    }

    #[test]
    fn simulate_store_and_alloc_parse() {
        let cli = parse(&["simulate", "--workload", "fillmem", "--ram-mb", "16"]).unwrap();
        let Some(Command::Simulate(a)) = cli.command else { panic!() };
        assert_eq!(
            (a.workload, a.ram_mb, a.codec.as_str()),
            (pagebench::simulate::Workload::Fillmem, 16, "lzo-rle")
        );
        assert!(parse(&["simulate", "--workload", "nope", "--ram-mb", "16"]).is_err());
        assert!(parse(&["simulate", "--workload", "memload", "--ram-mb", "0"]).is_err());
        let cli = parse(&["store", "--corpus", "x.pages"]).unwrap();
        let Some(Command::Store(a)) = cli.command else { panic!() };
        assert_eq!(a.codec, ["wkdm", "lzo-rle", "hybrid"]);
        assert!(a.tiers().is_none());
        let cli =
            parse(&["store", "--recompress", "zstd-19,lz4-page", "--writeback", "f", "--direct"]).unwrap();
        let Some(Command::Store(a)) = cli.command else { panic!() };
        let t = a.tiers().unwrap();
        assert_eq!((t.recompress.len(), t.direct, t.batch), (2, true, 64));
        assert!(parse(&["store", "--direct"]).is_err(), "--direct needs --writeback");
        let cli = parse(&["alloc", "--cold-mb", "10"]).unwrap();
        let Some(Command::Alloc(a)) = cli.command else { panic!() };
        assert_eq!((a.cold_mb, a.pairs), (10, 20_000));
    }

    #[test]
    fn capture_takes_a_pid_or_a_command() {
        let cli = parse(&["capture", "-o", "out.pages", "--pid", "42"]).unwrap();
        let Some(Command::Capture(c)) = cli.command else { panic!() };
        assert_eq!((c.pid, c.output), (Some(42), PathBuf::from("out.pages")));
        let cli = parse(&["capture", "-o", "o", "--", "python3", "-c", "print(1)"]).unwrap();
        let Some(Command::Capture(c)) = cli.command else { panic!() };
        assert_eq!(c.command, ["python3", "-c", "print(1)"]);
        assert!(parse(&["capture", "-o", "o", "--pid", "1", "--", "x"]).is_err());
        assert!(parse(&["capture", "--pid", "1"]).is_err(), "output is required");
    }
}
