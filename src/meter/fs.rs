//! Where the meter reads the kernel's files: the machine's own `/`, or a recorded tree of `/proc`
//! and `/sys` (a fixture) laid under another folder. Every read is bounded and counted, so a test
//! can hold the meter's cost to reads whose number does not grow with the host's tasks.

use std::cell::Cell;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A kernel text is a few KB; /proc/interrupts on a large host some hundreds: more is not one.
const MAX_TEXT: u64 = 4 << 20;

/// The file tree the meter reads, and how many reads it has made.
#[derive(Debug)]
pub struct Fs {
    root: PathBuf,
    reads: Cell<u64>,
}

impl Default for Fs {
    fn default() -> Fs {
        Fs::real()
    }
}

impl Fs {
    /// The machine's own files.
    pub fn real() -> Fs {
        Fs::at(Path::new("/"))
    }

    /// A recorded tree: `/proc/stat` is read from `root/proc/stat`.
    pub fn at(root: &Path) -> Fs {
        Fs {
            root: root.to_path_buf(),
            reads: Cell::new(0),
        }
    }

    /// Where an absolute path of the machine's lies in this tree.
    pub fn path(&self, p: &Path) -> PathBuf {
        self.root.join(p.strip_prefix("/").unwrap_or(p))
    }

    /// A file's text (at most 4 MiB), or None where it cannot be read.
    pub fn read(&self, p: impl AsRef<Path>) -> Option<String> {
        self.reads.set(self.reads.get() + 1);
        let mut s = String::new();
        std::fs::File::open(self.path(p.as_ref()))
            .ok()?
            .take(MAX_TEXT)
            .read_to_string(&mut s)
            .ok()?;
        Some(s)
    }

    /// The names in a folder (one read), or none.
    pub fn names(&self, p: impl AsRef<Path>) -> Vec<String> {
        self.reads.set(self.reads.get() + 1);
        std::fs::read_dir(self.path(p.as_ref()))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect()
    }

    /// Where a symbolic link points (one read), as `/proc/PID/ns/net` says `net:[INODE]`.
    pub fn link(&self, p: impl AsRef<Path>) -> Option<String> {
        self.reads.set(self.reads.get() + 1);
        let t = std::fs::read_link(self.path(p.as_ref())).ok()?;
        t.into_os_string().into_string().ok()
    }

    /// Whether a file is there (not a read).
    pub fn exists(&self, p: impl AsRef<Path>) -> bool {
        self.path(p.as_ref()).exists()
    }

    /// The reads made so far.
    pub fn reads(&self) -> u64 {
        self.reads.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_tree_is_read_under_its_root_and_every_read_counts() {
        let d = std::env::temp_dir().join(format!("vl-fs-{}", std::process::id()));
        std::fs::create_dir_all(d.join("proc")).unwrap();
        std::fs::write(d.join("proc/stat"), "cpu 1 2 3\n").unwrap();
        let fs = Fs::at(&d);
        assert_eq!(fs.read("/proc/stat").as_deref(), Some("cpu 1 2 3\n"));
        assert_eq!(fs.read("/proc/missing"), None);
        assert_eq!(fs.names("/proc"), vec!["stat".to_string()]);
        assert_eq!(fs.reads(), 3);
        let _ = std::fs::remove_dir_all(&d);
    }
}
