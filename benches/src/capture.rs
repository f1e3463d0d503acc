//! Capturing real pages: a process's resident anonymous memory (Linux).
//!
//! The process is stopped (SIGSTOP, then we wait until the kernel reports it stopped) so
//! its memory holds still; `/proc/PID/maps` names its mappings and we keep the anonymous
//! ones, `[heap]` and `[stack]`; `/proc/PID/pagemap` bit 63 says which of their pages are
//! present in RAM (without this filter never-touched pages read back as zeros and inflate
//! every ratio); those pages are read from `/proc/PID/mem`; SIGCONT lets it go on, also on
//! every error path. Workloads we start ourselves run with a cleared environment so that no
//! environment variable lands in a captured page. Needs ptrace rights over the process
//! (our own children, or root).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pagecodec::{PAGE_SIZE, Page, same_filled};

/// What a capture read, and what it skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CaptureStats {
    /// Mappings listed in `/proc/PID/maps`.
    pub mappings: usize,
    /// Mappings kept (readable anonymous, `[heap]`, `[stack]`).
    pub kept_mappings: usize,
    /// Pages spanned by the kept mappings.
    pub mapped_pages: u64,
    /// Of those, pages present in RAM (pagemap bit 63).
    pub present_pages: u64,
    /// Present pages that could not be read (e.g. guard pages); skipped.
    pub unreadable_pages: u64,
    /// Captured pages that are all zero.
    pub zero_pages: u64,
    /// Captured pages that are same-filled (zero included).
    pub same_filled_pages: u64,
}

/// Pages read from a process.
#[derive(Clone, Debug)]
pub struct Capture {
    /// The process id.
    pub pid: i32,
    /// The pages, in address order.
    pub pages: Vec<Page>,
    /// Counts.
    pub stats: CaptureStats,
}

impl Capture {
    /// One line on what was captured.
    pub fn describe(&self) -> String {
        let s = &self.stats;
        format!(
            "pid {}: {} resident anonymous pages of {} mapped in {} of {} mappings ({} zero, {} same-filled, \
             {} unreadable skipped)",
            self.pid,
            self.pages.len(),
            s.mapped_pages,
            s.kept_mappings,
            s.mappings,
            s.zero_pages,
            s.same_filled_pages,
            s.unreadable_pages
        )
    }
}

/// One line of `/proc/PID/maps` we keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
}

/// Parses `/proc/PID/maps` text: returns the total count and the readable anonymous,
/// `[heap]` and `[stack]` mappings.
pub fn anonymous_mappings(maps: &str) -> (usize, Vec<Mapping>) {
    let mut total = 0;
    let mut kept = Vec::new();
    for line in maps.lines() {
        total += 1;
        let mut fields = line.splitn(6, ' ');
        let (Some(range), Some(perms), Some(_offset), Some(_dev), Some(inode)) =
            (fields.next(), fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let path = fields.next().unwrap_or("").trim();
        let anonymous = (path.is_empty() && inode == "0")
            || path == "[heap]"
            || path == "[stack]"
            || path.starts_with("[anon:");
        if !anonymous || !perms.starts_with('r') {
            continue;
        }
        let Some((lo, hi)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) else {
            continue;
        };
        if end > start {
            kept.push(Mapping { start, end });
        }
    }
    (total, kept)
}

/// Sends `signal` to `pid`.
fn send_signal(pid: i32, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: `kill` takes plain integers and has no memory effects on this process.
    if unsafe { libc::kill(pid, signal) } == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// The state letter of `/proc/PID/stat` (after the parenthesised command name).
fn process_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Keeps a process stopped while alive; SIGCONT on drop, whatever happened.
struct Stopped(i32);

impl Stopped {
    fn new(pid: i32) -> io::Result<Stopped> {
        send_signal(pid, libc::SIGSTOP)?;
        let guard = Stopped(pid);
        let deadline = Instant::now() + Duration::from_secs(5);
        // SIGSTOP is asynchronous: wait until the kernel has actually stopped it.
        while !matches!(process_state(pid), Some('T' | 't')) {
            if Instant::now() > deadline {
                return Err(io::Error::new(io::ErrorKind::TimedOut, format!("pid {pid} did not stop")));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(guard)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = send_signal(self.0, libc::SIGCONT);
    }
}

/// Captures the resident anonymous pages of process `pid`, stopping it meanwhile.
///
/// # Errors
///
/// When the process does not exist or its `/proc` files cannot be opened (no ptrace rights).
pub fn capture_pid(pid: i32) -> io::Result<Capture> {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let context = |what: &str| {
        let p = proc_dir.join(what);
        move |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", p.display()))
    };
    let mem = File::open(proc_dir.join("mem")).map_err(context("mem"))?;
    let pagemap = File::open(proc_dir.join("pagemap")).map_err(context("pagemap"))?;
    let _stopped = Stopped::new(pid)?;
    let maps = std::fs::read_to_string(proc_dir.join("maps")).map_err(context("maps"))?;
    let (total, mappings) = anonymous_mappings(&maps);
    let mut stats = CaptureStats { mappings: total, kept_mappings: mappings.len(), ..Default::default() };
    let mut pages = Vec::new();
    let mut page = Page::zeroed();
    let mut entries = vec![0u8; 8 * 65536];
    for m in &mappings {
        let first = m.start / PAGE_SIZE as u64;
        let count = (m.end - m.start) / PAGE_SIZE as u64;
        stats.mapped_pages += count;
        let mut done = 0u64;
        while done < count {
            let chunk = (count - done).min(65536);
            let buf = &mut entries[..chunk as usize * 8];
            if pagemap.read_exact_at(buf, (first + done) * 8).is_err() {
                break;
            }
            for (i, entry) in buf.chunks_exact(8).enumerate() {
                let entry = u64::from_le_bytes(entry.try_into().expect("8 bytes"));
                if entry >> 63 == 0 {
                    continue;
                }
                stats.present_pages += 1;
                let addr = (first + done + i as u64) * PAGE_SIZE as u64;
                if mem.read_exact_at(page.as_bytes_mut(), addr).is_err() {
                    stats.unreadable_pages += 1;
                    continue;
                }
                match same_filled(&page) {
                    Some(0) => {
                        stats.zero_pages += 1;
                        stats.same_filled_pages += 1;
                    }
                    Some(_) => stats.same_filled_pages += 1,
                    None => {}
                }
                pages.push(page.clone());
            }
            done += chunk;
        }
    }
    Ok(Capture { pid, pages, stats })
}

/// Finds `name` as an executable: `/usr/bin`, `/usr/local/bin`, `/bin` first (real
/// binaries rather than version-manager shims), then `$PATH`. Names with a `/` are kept.
pub fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    ["/usr/bin", "/usr/local/bin", "/bin"]
        .iter()
        .map(PathBuf::from)
        .chain(std::env::split_paths(&path))
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A child process killed (and reaped) when dropped.
pub struct Workload {
    child: Child,
    /// What is running, for the record.
    pub description: String,
}

impl Workload {
    /// The child's pid.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `program args...` with a cleared environment, stdin closed, output discarded
/// unless `show_stderr`.
pub fn spawn_clean(program: &Path, args: &[String], show_stderr: bool) -> io::Result<Workload> {
    let child = Command::new(program)
        .args(args)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(if show_stderr { Stdio::inherit() } else { Stdio::null() })
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot start {}: {e}", program.display())))?;
    let description = format!("{} {}", program.display(), args.join(" "));
    Ok(Workload { child, description })
}

/// Waits until `path` exists (the workload's "heap is built" signal).
pub fn wait_for_file(workload: &mut Workload, path: &Path, limit: Duration) -> io::Result<()> {
    let deadline = Instant::now() + limit;
    while !path.exists() {
        if let Some(status) = workload.child.try_wait()? {
            return Err(io::Error::other(format!("workload exited early ({status})")));
        }
        if Instant::now() > deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "workload did not get ready in time"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Resident pages of `pid` (second field of `/proc/PID/statm`).
fn resident_pages(pid: i32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?.split_whitespace().nth(1)?.parse().ok()
}

/// Waits until the workload's resident size has stopped growing for `settle` and it is not
/// running (it has built its heap and sleeps or waits), or `limit` has passed. Fails if it exits first: a command to capture must stay
/// alive (e.g. end with a sleep).
pub fn wait_until_settled(workload: &mut Workload, settle: Duration, limit: Duration) -> io::Result<()> {
    let start = Instant::now();
    let mut last = 0;
    let mut stable_since = Instant::now();
    loop {
        if let Some(status) = workload.child.try_wait()? {
            return Err(io::Error::other(format!(
                "{} exited ({status}) before its pages were captured: keep it alive, e.g. end with a sleep",
                workload.description
            )));
        }
        let rss = resident_pages(workload.pid()).unwrap_or(0);
        if rss != last {
            last = rss;
            stable_since = Instant::now();
        } else if stable_since.elapsed() >= settle
            && start.elapsed() >= settle
            && process_state(workload.pid()) != Some('R')
        {
            // Unchanged for `settle` *and* not running or waiting for a CPU: on a loaded
            // machine a starting process can sit runnable, its size still, for a long time.
            return Ok(());
        }
        if start.elapsed() >= limit {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The language workloads the default run prefers, with their heap-building script. Each
/// builds the kind of heap an application keeps (records, strings, numbers, an index, a
/// text buffer), then writes the ready file named by its last argument and sleeps.
const PYTHON_HEAP: &str = r#"
import sys, time, random, json
random.seed(7)
cities = ['Lisbon', 'Oslo', 'Kyoto', 'Lima', 'Cairo', 'Perth', 'Quito', 'Tunis']
orders = []
for n in range(150000):
    orders.append({'order': n, 'customer': 'customer-%06d' % random.randrange(40000),
                   'city': random.choice(cities), 'amount': round(random.uniform(1, 500), 2),
                   'items': [random.randrange(1000) for _ in range(random.randrange(1, 5))],
                   'paid': n % 3 != 0})
by_customer = {}
for o in orders:
    by_customer.setdefault(o['customer'], []).append(o['order'])
report = json.dumps(orders[:15000], indent=1)
totals = sorted(((sum(orders[i]['amount'] for i in ids), c) for c, ids in by_customer.items()), reverse=True)
open(sys.argv[-1], 'w').write('ready')
time.sleep(300)
"#;

const NODE_HEAP: &str = r#"
const cities = ['Lisbon', 'Oslo', 'Kyoto', 'Lima', 'Cairo', 'Perth', 'Quito', 'Tunis'];
let seed = 7; const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const orders = [];
for (let n = 0; n < 150000; n++) orders.push({ order: n, customer: 'customer-' + Math.floor(rnd() * 40000),
  city: cities[n % 8], amount: Math.round(rnd() * 50000) / 100, items: [n % 1000, (n * 7) % 1000], paid: n % 3 !== 0 });
const byCustomer = new Map();
for (const o of orders) { if (!byCustomer.has(o.customer)) byCustomer.set(o.customer, []); byCustomer.get(o.customer).push(o.order); }
const report = JSON.stringify(orders.slice(0, 15000), null, 1);
require('fs').writeFileSync(process.argv[process.argv.length - 1], 'ready');
setTimeout(() => {}, 300000);
"#;

/// Which child workload the default run captures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapWorkload {
    /// A python3 heap (records, dicts, JSON text).
    Python,
    /// The same in node.
    Node,
    /// This binary's own `heap-workload` subcommand (no interpreter needed).
    BuiltIn,
}

impl HeapWorkload {
    /// python3 if present, else node, else the built-in one.
    pub fn best_available() -> HeapWorkload {
        if find_program("python3").is_some() {
            HeapWorkload::Python
        } else if find_program("node").is_some() {
            HeapWorkload::Node
        } else {
            HeapWorkload::BuiltIn
        }
    }

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            HeapWorkload::Python => "python",
            HeapWorkload::Node => "node",
            HeapWorkload::BuiltIn => "rust-heap",
        }
    }
}

/// Starts `workload` with a cleared environment, waits until it has built its heap, and
/// captures its pages. `self_exe` is the binary holding the `heap-workload` subcommand.
///
/// # Errors
///
/// If the workload cannot start, exits early, or cannot be read.
pub fn capture_workload(workload: HeapWorkload, self_exe: &Path) -> io::Result<(Capture, String)> {
    let dir = std::env::temp_dir().join(format!("pagebench-{}-{}", std::process::id(), workload.name()));
    std::fs::create_dir_all(&dir)?;
    let ready = dir.join("ready");
    let _ = std::fs::remove_file(&ready);
    let ready_arg = ready.to_string_lossy().into_owned();
    let (program, args) = match workload {
        HeapWorkload::Python => {
            (find_program("python3"), vec!["-c".to_string(), PYTHON_HEAP.to_string(), ready_arg])
        }
        HeapWorkload::Node => {
            (find_program("node"), vec!["-e".to_string(), NODE_HEAP.to_string(), ready_arg])
        }
        HeapWorkload::BuiltIn => (Some(self_exe.to_path_buf()), vec!["heap-workload".to_string(), ready_arg]),
    };
    let program = program.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "interpreter not found"))?;
    let mut child = spawn_clean(&program, &args, false)?;
    let result =
        wait_for_file(&mut child, &ready, Duration::from_secs(60)).and_then(|()| capture_pid(child.pid()));
    let description = format!(
        "{} heap workload ({} with a cleared environment, captured once its heap was built)",
        workload.name(),
        program.display()
    );
    drop(child);
    let _ = std::fs::remove_dir_all(&dir);
    Ok((result?, description))
}

/// The built-in heap workload: builds an application-like heap (records with strings,
/// an index, numbers, a text buffer), writes `ready`, and sleeps until killed.
pub fn run_heap_workload(ready: &Path) -> io::Result<()> {
    use std::collections::HashMap;
    struct Order {
        id: u64,
        customer: String,
        city: &'static str,
        amount: f64,
        items: Vec<u32>,
        paid: bool,
    }
    let cities = ["Lisbon", "Oslo", "Kyoto", "Lima", "Cairo", "Perth", "Quito", "Tunis"];
    let mut rng = pagecodec::testing::Rng::new(7);
    let orders: Vec<Box<Order>> = (0..150_000u64)
        .map(|id| {
            Box::new(Order {
                id,
                customer: format!("customer-{:06}", rng.below(40_000)),
                city: cities[rng.below(8) as usize],
                amount: (rng.below(50_000) as f64) / 100.0,
                items: (0..1 + rng.below(4)).map(|_| rng.below(1000) as u32).collect(),
                paid: id % 3 != 0,
            })
        })
        .collect();
    let mut by_customer: HashMap<&str, Vec<u64>> = HashMap::new();
    for o in &orders {
        by_customer.entry(&o.customer).or_default().push(o.id);
    }
    let mut report = String::new();
    for o in orders.iter().take(15_000) {
        use std::fmt::Write;
        let _ = writeln!(
            report,
            "{{\"order\": {}, \"customer\": \"{}\", \"city\": \"{}\", \"amount\": {:.2}, \"items\": {:?}, \"paid\": {}}}",
            o.id, o.customer, o.city, o.amount, o.items, o.paid
        );
    }
    std::fs::write(ready, "ready")?;
    std::hint::black_box((&orders, &by_customer, &report));
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_parsing_keeps_anonymous_heap_and_stack() {
        let maps = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234 /usr/bin/python3.11
55d0c1000000-55d0c1400000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000100000 rw-p 00000000 00:00 0 
7f0000100000-7f0000101000 ---p 00000000 00:00 0 
7f0000200000-7f0000300000 rw-s 00000000 00:05 99 /dev/zero (deleted)
7f0000400000-7f0000401000 rw-p 00000000 00:00 0 [anon:scudo]
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
7ffd00100000-7ffd00102000 r--p 00000000 00:00 0                          [vvar]
7ffd00102000-7ffd00104000 r-xp 00000000 00:00 0                          [vdso]
";
        let (total, kept) = anonymous_mappings(maps);
        assert_eq!(total, 9);
        let starts: Vec<u64> = kept.iter().map(|m| m.start).collect();
        assert_eq!(starts, [0x55d0c1000000, 0x7f0000000000, 0x7f0000400000, 0x7ffd00000000]);
        assert_eq!(kept[0].end - kept[0].start, 0x400000);
    }

    #[test]
    fn programs_are_found_on_the_path() {
        assert!(find_program("sh").is_some());
        assert!(find_program("no-such-program-pagebench").is_none());
        assert_eq!(find_program("/x/y"), Some(PathBuf::from("/x/y")));
    }

    /// Captures a child that fills its memory with a known pattern; skips where ptrace or
    /// /proc access is denied (containers, non-Linux).
    #[test]
    fn captures_a_child_process() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let Some(sh) = find_program("sleep") else { return };
        let mut child = match spawn_clean(&sh, &["30".to_string()], false) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipped: cannot start a child: {e}");
                return;
            }
        };
        std::thread::sleep(Duration::from_millis(100));
        let capture = match capture_pid(child.pid()) {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                eprintln!("skipped: /proc access denied: {e}");
                return;
            }
            Err(e) => panic!("capture failed: {e}"),
        };
        // `sleep` has a stack and usually a heap: some pages, all of them present and readable.
        assert!(!capture.pages.is_empty(), "{}", capture.describe());
        assert!(capture.stats.present_pages >= capture.pages.len() as u64);
        assert!(capture.stats.mapped_pages >= capture.stats.present_pages);
        // The child runs again afterwards (SIGCONT was sent).
        std::thread::sleep(Duration::from_millis(20));
        assert!(!matches!(process_state(child.pid()), Some('T')), "child left stopped");
        assert!(child.child.try_wait().unwrap().is_none());
    }

    /// A python child that maps 64 MiB, touches 1 MiB of it with 0xAB and sleeps: the
    /// capture holds those pages, and the pagemap filter leaves the untouched 63 MiB out.
    #[test]
    fn captures_the_pages_a_child_wrote_and_only_present_ones() {
        let Some(python) = find_program("python3") else {
            eprintln!("skipped: no python3");
            return;
        };
        let script = "import mmap, time\nm = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\nm[:1 << 20] = b'\\xab' * (1 << 20)\n\
                      open('/dev/null', 'w').write('x')\ntime.sleep(30)\n";
        let mut child = spawn_clean(&python, &["-c".to_string(), script.to_string()], true).unwrap();
        wait_until_settled(&mut child, Duration::from_millis(300), Duration::from_secs(20)).unwrap();
        let capture = match capture_pid(child.pid()) {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                eprintln!("skipped: /proc access denied: {e}");
                return;
            }
            Err(e) => panic!("capture failed: {e}"),
        };
        let marked = capture.pages.iter().filter(|p| p.as_bytes().iter().all(|&b| b == 0xAB)).count();
        assert_eq!(marked, 256, "{}", capture.describe());
        assert_eq!(
            capture.stats.same_filled_pages as usize,
            capture.pages.iter().filter(|p| same_filled(p).is_some()).count()
        );
        // 16384 pages of the mapping were never touched: not present, not captured.
        assert!(capture.stats.mapped_pages >= capture.stats.present_pages + 16_000, "{}", capture.describe());
        assert!(capture.pages.len() < 16_000, "{}", capture.describe());
    }

    #[test]
    fn a_command_that_exits_early_is_reported() {
        let Some(t) = find_program("true") else { return };
        let mut w = spawn_clean(&t, &[], false).unwrap();
        let err = wait_until_settled(&mut w, Duration::from_millis(200), Duration::from_secs(5)).unwrap_err();
        assert!(err.to_string().contains("before its pages were captured"), "{err}");
    }

    #[test]
    fn capture_of_a_missing_process_is_an_error() {
        assert!(capture_pid(i32::MAX).is_err());
    }
}
