//! `pagebench swap --kernel-zram`: the same workload code as `swap`, in a child process
//! confined to a memory cgroup (v1) of N MiB and swapping to a zram device of its own, so
//! the kernel's own compressed swap is the reference. Root only. The device, the swap area
//! and the cgroup are this run's alone and are removed on every exit path (errors and
//! Ctrl-C included); nothing else is touched.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;

use crate::simulate::{Workload, region_pages, replay};
use crate::swap::{Anonymous, Checked};
use crate::zram::{Device, KernelMmStat, ZramPaths, install_interrupt_handler};

/// Where the cgroup v1 memory controller is mounted.
pub const CGROUP_MEMORY: &str = "/sys/fs/cgroup/memory";

/// A memory cgroup made for this run; removed when dropped (once its processes are gone).
pub struct Cgroup {
    path: PathBuf,
}

impl Cgroup {
    /// Makes `<root>/<name>`.
    ///
    /// # Errors
    ///
    /// The folder cannot be made (named in the message).
    pub fn create(root: &Path, name: &str) -> Result<Cgroup, String> {
        let path = root.join(name);
        std::fs::create_dir(&path)
            .map_err(|e| format!("making the memory cgroup {}: {e}", path.display()))?;
        Ok(Cgroup { path })
    }

    /// Writes `value` to the control file `file`.
    ///
    /// # Errors
    ///
    /// The write fails (named in the message).
    pub fn set(&self, file: &str, value: &str) -> Result<(), String> {
        let path = self.path.join(file);
        std::fs::write(&path, value).map_err(|e| format!("writing {value:?} to {}: {e}", path.display()))
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // The kernel refuses while the cgroup is still being emptied: try for a moment.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.path).is_ok() || !self.path.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!("pagebench: warning: could not remove the cgroup {}", self.path.display());
    }
}

/// A zram device in use as swap; `swapoff` when dropped.
pub struct SwapArea {
    node: PathBuf,
}

impl SwapArea {
    /// `mkswap` and `swapon` (highest priority) on `node`.
    ///
    /// # Errors
    ///
    /// Either command fails or is missing.
    pub fn enable(node: &Path) -> Result<SwapArea, String> {
        run("mkswap", &[node.as_os_str()])?;
        run("swapon", &["-p".as_ref(), "32767".as_ref(), node.as_os_str()])?;
        Ok(SwapArea { node: node.to_path_buf() })
    }
}

impl Drop for SwapArea {
    fn drop(&mut self) {
        if let Err(e) = run("swapoff", &[self.node.as_os_str()]) {
            eprintln!("pagebench: warning: {e}");
        }
    }
}

fn run(program: &str, args: &[&std::ffi::OsStr]) -> Result<(), String> {
    let out = Command::new(program).args(args).output().map_err(|e| format!("running {program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{program} failed: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// `pswpin` and `pswpout` from `/proc/vmstat` text.
pub fn parse_vmstat(text: &str) -> (u64, u64) {
    let get = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (get("pswpin"), get("pswpout"))
}

fn vmstat() -> Result<(u64, u64), String> {
    std::fs::read_to_string("/proc/vmstat")
        .map(|t| parse_vmstat(&t))
        .map_err(|e| format!("/proc/vmstat: {e}"))
}

/// What the kernel did with the workload.
#[derive(Clone, Debug, Serialize)]
pub struct KernelSwapReport {
    /// The workload.
    pub workload: Workload,
    /// The cgroup's memory limit, MiB.
    pub ram_mb: usize,
    /// zram's codec.
    pub codec: String,
    /// The workload's wall time in the child, seconds.
    pub seconds: f64,
    /// `pswpin` during the run (the whole machine's; nothing else swaps here).
    pub swap_ins: u64,
    /// `pswpout` during the run.
    pub swap_outs: u64,
    /// zram's `mm_stat` at the end of the workload.
    pub mm: KernelMmStat,
}

impl KernelSwapReport {
    /// The report as lines.
    pub fn render(&self) -> String {
        format!(
            "{:?} in a {} MiB memory cgroup, zram swap with {}: {:.3} s, every page read checked\n\
             pswpin {}, pswpout {}; zram mm_stat at the end: compr_data_size {} mem_used_total {} \
             same_pages {} huge_pages {}\n",
            self.workload,
            self.ram_mb,
            self.codec,
            self.seconds,
            self.swap_ins,
            self.swap_outs,
            self.mm.compr_data_size,
            self.mm.mem_used_total,
            self.mm.same_pages,
            self.mm.huge_pages
        )
    }
}

/// Runs `workload` in a child process limited to `ram_mb` MiB with zram swap using `codec`.
///
/// # Errors
///
/// Not root, no zram or memory cgroup, a kernel that refuses the codec, the child failing
/// (a page that came back wrong included), Ctrl-C.
pub fn kernel_swap(
    zram: &ZramPaths,
    cgroups: &Path,
    workload: Workload,
    ram_mb: usize,
    codec: &str,
) -> Result<KernelSwapReport, String> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Err(format!(
            "--kernel-zram needs root (running as uid {euid}): it makes a zram swap device and a memory cgroup"
        ));
    }
    if !zram.control().exists() {
        return Err(format!("--kernel-zram needs zram: {} does not exist", zram.control().display()));
    }
    if !cgroups.join("memory.limit_in_bytes").exists() {
        return Err(format!("--kernel-zram needs the cgroup v1 memory controller at {}", cgroups.display()));
    }
    install_interrupt_handler();
    let ram_pages = ram_mb * 256;
    let pages = 4 * region_pages(workload, ram_pages);
    // Guards in creation order; they are dropped in reverse: cgroup, swap area, device.
    let device = Device::hot_add(zram).map_err(|e| e.to_string())?;
    device.write("comp_algorithm", codec).map_err(|e| e.to_string())?;
    device.write("disksize", &(pages * 4096 + (64 << 20)).to_string()).map_err(|e| e.to_string())?;
    let _swap = SwapArea::enable(&zram.node(device.id()))?;
    let cgroup = Cgroup::create(cgroups, &format!("pagebench-swap-{}", std::process::id()))?;
    cgroup.set("memory.limit_in_bytes", &(ram_mb << 20).to_string())?;
    let exe = std::env::current_exe().map_err(|e| format!("finding pagebench's own path: {e}"))?;
    let (in_before, out_before) = vmstat()?;
    let mut child = Command::new(exe)
        .args(["kernel-workload", "--workload", &format!("{workload:?}").to_lowercase(), "--ram-mb"])
        .arg(ram_mb.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting the workload process: {e}"))?;
    // The child waits for a line on stdin, so it joins the cgroup before it allocates, and
    // for another after its report, so that its pages are still swapped out when zram's
    // mm_stat is read.
    let joined = cgroup.set("cgroup.procs", &child.id().to_string());
    let mut stdin = child.stdin.take().ok_or("no pipe to the workload process")?;
    let _ = stdin.write_all(if joined.is_ok() { b"go\n" } else { b"stop\n" });
    let mut report = String::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = std::io::BufReader::new(stdout).read_line(&mut report);
    }
    let (in_after, out_after) = vmstat()?;
    let mm = device.mm_stat().map_err(|e| e.to_string());
    let _ = stdin.write_all(b"exit\n");
    drop(stdin);
    let status = child.wait().map_err(|e| format!("waiting for the workload process: {e}"))?;
    joined?;
    let mm = mm?;
    if !status.success() {
        return Err(format!("the workload process failed ({status}): {}", report.trim()));
    }
    let seconds = report
        .strip_prefix("seconds ")
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("the workload process said {:?}", report.trim()))?;
    drop(cgroup);
    Ok(KernelSwapReport {
        workload,
        ram_mb,
        codec: codec.into(),
        seconds,
        swap_ins: in_after.saturating_sub(in_before),
        swap_outs: out_after.saturating_sub(out_before),
        mm,
    })
}

/// The child's side: waits for "go", runs the workload over plain memory with every read
/// checked, prints `seconds <wall time>`, and waits for one more line before exiting.
///
/// # Errors
///
/// Told to stop, or a page that came back wrong.
pub fn child(workload: Workload, ram_mb: usize) -> Result<(), String> {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).map_err(|e| e.to_string())?;
    if line.trim() != "go" {
        return Err("not started".into());
    }
    let ram_pages = ram_mb * 256;
    let per_region = region_pages(workload, ram_pages);
    let mut memory = Checked::new(Anonymous::new(4 * per_region * 4096), per_region);
    let start = std::time::Instant::now();
    replay(&mut memory, workload, ram_pages)?;
    println!("seconds {}", start.elapsed().as_secs_f64());
    // Keep the pages until the parent has read zram's statistics.
    line.clear();
    let _ = std::io::stdin().lock().read_line(&mut line);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmstat_counters_are_read_by_name() {
        let text = "pgpgin 10\npswpin 42\npswpout 7\npswpin_zero 3\n";
        assert_eq!(parse_vmstat(text), (42, 7));
        assert_eq!(parse_vmstat(""), (0, 0));
    }

    #[test]
    fn missing_zram_or_cgroup_is_said_before_anything_is_made() {
        let dir = std::env::temp_dir().join(format!("pagebench-kswap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let paths = ZramPaths { sys: dir.join("sys"), dev: dir.join("dev") };
        let err = kernel_swap(&paths, &dir.join("cg"), Workload::Fillmem, 1, "lzo-rle").unwrap_err();
        assert!(err.contains("root") || err.contains("zram"), "{err}");
        // Nothing was created under the fake roots.
        assert!(!dir.join("sys").exists() && !dir.join("cg").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_cgroup_folder_is_removed_when_dropped() {
        let dir = std::env::temp_dir().join(format!("pagebench-cg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cg = Cgroup::create(&dir, "run").unwrap();
        assert!(dir.join("run").is_dir());
        assert!(Cgroup::create(&dir, "run").is_err(), "an existing cgroup is never taken over");
        drop(cg);
        assert!(!dir.join("run").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
