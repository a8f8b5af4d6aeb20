//! What the shield reads and writes on a host: files under /proc, /sys and the cgroup tree, and
//! tasks' affinities. The real host, or a made one in the unit tests.

use super::Error;
use std::path::{Path, PathBuf};

/// The most bytes the shield reads of one file (a cgroup's task list on a busy host).
pub const MAX_READ: u64 = 8 << 20;

/// A host the shield works on.
pub trait Host {
    fn read(&self, path: &Path) -> Result<String, Error>;
    fn write(&self, path: &Path, value: &str) -> Result<(), Error>;
    /// The folders in `dir` (names only), sorted.
    fn folders(&self, dir: &Path) -> Vec<String>;
    fn exists(&self, path: &Path) -> bool;
    fn affinity(&self, tid: u32) -> Option<Vec<usize>>;
    fn set_affinity(&self, tid: u32, cpus: &[usize]) -> Result<(), Error>;
    fn start_time(&self, tid: u32) -> Option<u64>;
    /// Whether `tid` is a kernel thread (PF_KTHREAD in /proc/TID/stat's flags).
    fn kernel_thread(&self, tid: u32) -> bool;
}

/// This machine, seen from `root` ("/" in use; a made tree in tests).
pub struct RealHost {
    pub root: PathBuf,
}

impl RealHost {
    pub fn new() -> RealHost {
        RealHost { root: "/".into() }
    }
    fn at(&self, p: &Path) -> PathBuf {
        self.root.join(p.strip_prefix("/").unwrap_or(p))
    }
    fn stat(&self, tid: u32) -> Option<Vec<u64>> {
        let s = self.read(Path::new(&format!("/proc/{tid}/stat"))).ok()?;
        let rest = &s[s.rfind(')')? + 1..];
        Some(
            rest.split_whitespace()
                .map(|f| f.parse().unwrap_or(0))
                .collect(),
        )
    }
}

impl Default for RealHost {
    fn default() -> Self {
        RealHost::new()
    }
}

/// PF_KTHREAD in a task's flags.
const PF_KTHREAD: u64 = 0x0020_0000;

impl Host for RealHost {
    fn read(&self, path: &Path) -> Result<String, Error> {
        use std::io::Read;
        let mut s = String::new();
        std::fs::File::open(self.at(path))
            .and_then(|f| f.take(MAX_READ).read_to_string(&mut s))
            .map_err(|e| Error::Failed(format!("cannot read {}: {e}", path.display())))?;
        Ok(s)
    }
    fn write(&self, path: &Path, value: &str) -> Result<(), Error> {
        // One write(2) of the whole value, as the kernel's files want it, to a file that exists.
        use std::io::Write;
        std::fs::OpenOptions::new()
            .write(true)
            .open(self.at(path))
            .and_then(|mut f| f.write_all(value.as_bytes()))
            .map_err(|e| Error::Failed(format!("cannot write {value} to {}: {e}", path.display())))
    }
    fn folders(&self, dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.at(dir))
            .into_iter()
            .flatten()
            .flatten()
            // /sys/class/net holds links to the devices' folders: followed.
            .filter(|e| std::fs::metadata(e.path()).is_ok_and(|m| m.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
    fn exists(&self, path: &Path) -> bool {
        self.at(path).exists()
    }
    fn affinity(&self, tid: u32) -> Option<Vec<usize>> {
        crate::sys::affinity(i32::try_from(tid).ok()?).ok()
    }
    fn set_affinity(&self, tid: u32, cpus: &[usize]) -> Result<(), Error> {
        let t = i32::try_from(tid).map_err(|_| Error::Failed(format!("no task {tid}")))?;
        crate::sys::set_affinity(t, cpus)
            .map_err(|e| Error::Failed(format!("cannot give task {tid} its CPUs back: {e}")))
    }
    fn start_time(&self, tid: u32) -> Option<u64> {
        self.stat(tid)?.get(19).copied()
    }
    fn kernel_thread(&self, tid: u32) -> bool {
        self.stat(tid)
            .and_then(|f| f.get(6).copied())
            .is_some_and(|flags| flags & PF_KTHREAD != 0)
    }
}
