//! Every file vnetlab writes, made so that nothing planted at its path is written through: the
//! bytes go to a new file made beside it under a random name (`O_CREAT | O_EXCL | O_NOFOLLOW`,
//! so nothing that already exists is opened), the opened file itself is checked (`fstat`: a
//! plain file of its own; `fstatfs`: not one of the kernel's control file systems), synced, then
//! renamed over the path. A rename replaces a symlink itself, never what it points to; over a
//! mount point (a procfs file bind-mounted onto the path) it fails, and in a sticky folder over
//! another user's file it fails: either way nothing but our own new file is ever written.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// File systems whose files are the machine's own controls, not files: proc, sysfs, cgroup v1
/// and v2, debugfs, securityfs, tracefs, bpf, devpts, devtmpfs is tmpfs and so not here
/// (statfs f_type, linux/magic.h).
pub const CONTROL_FS: [i64; 9] = [
    0x9fa0,
    0x6265_6572,
    super::CGROUP_MAGIC,
    super::CGROUP2_MAGIC,
    0x6462_6720,
    0x7363_6673,
    0x7472_6163,
    0xcafe_4a11,
    0x1cd1,
];

/// The file system type (statfs f_type) of an open file.
pub fn fd_magic(f: &File) -> io::Result<i64> {
    // SAFETY: statfs is plain old data; zeroed is a valid value for it.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the fd is open for the call's whole length and `st` is a statfs the kernel fills.
    if unsafe { libc::fstatfs(f.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.f_type as i64)
}

/// A lock file at `path` (made with `mode` if missing), opened without following a link and
/// checked (`check`), locked (`flock`) within `wait`: Ok(None) if another holder kept it that
/// long. `busy` is called each time it is found held (to say who holds it). The lock is let go
/// when the file is dropped, or by the kernel when the process ends however it ends.
pub fn lock_within(
    path: &std::path::Path,
    mode: u32,
    wait: std::time::Duration,
    mut busy: impl FnMut(),
) -> io::Result<Option<File>> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    check(&f)?;
    let t0 = std::time::Instant::now();
    loop {
        match f.try_lock() {
            Ok(()) => return Ok(Some(f)),
            Err(std::fs::TryLockError::WouldBlock) if t0.elapsed() < wait => {
                busy();
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// Whether an open file is one vnetlab may write: a regular file with one name, owned by us, on
/// a file system of files.
pub fn check(f: &File) -> io::Result<()> {
    let m = f.metadata()?;
    if !m.file_type().is_file() || m.nlink() != 1 {
        return Err(io::Error::other(
            "it is not a plain file of its own (a device, a link or a file with other names)",
        ));
    }
    if m.uid() != super::euid() {
        return Err(io::Error::other("it belongs to another user"));
    }
    if CONTROL_FS.contains(&fd_magic(f)?) {
        return Err(io::Error::other(
            "it is on a control file system of the kernel",
        ));
    }
    Ok(())
}

/// A name beside `path` nobody can guess.
fn temp_beside(path: &Path) -> io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let nonce: u64 = rand::random();
    Ok(dir.join(format!(".{}.vnetlab-{nonce:016x}", name.to_string_lossy())))
}

/// A new file of our own at an unguessable name beside `path`, checked.
fn create_beside(path: &Path, mode: u32) -> io::Result<(File, PathBuf)> {
    let tmp = temp_beside(path)?;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)?;
    if let Err(e) = check(&f) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok((f, tmp))
}

/// Writes `bytes` as the file at `path` (mode `mode`), replacing what was there.
pub fn replace(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let (mut f, tmp) = create_beside(path, mode)?;
    let done = (|| {
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// Writes `bytes` as the file at `path` like `replace`, without waiting for the disk: for a file
/// rewritten every moment that nothing needs after a crash (a backend's counters).
pub fn replace_volatile(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let (mut f, tmp) = create_beside(path, mode)?;
    let done = f.write_all(bytes).and_then(|_| std::fs::rename(&tmp, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// A new empty file at `path` (mode `mode`), replacing what was there, open for writing: a log.
pub fn create(path: &Path, mode: u32) -> io::Result<File> {
    let (f, tmp) = create_beside(path, mode)?;
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(f)
}

/// Whether `dir` takes new files: one made there under an unguessable name and removed again
/// (a predictable probe name would be a place to plant a link).
pub fn probe_writable(dir: &Path) -> io::Result<()> {
    let (_, tmp) = create_beside(&dir.join("probe"), 0o600)?;
    std::fs::remove_file(tmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("vl-file-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_planted_link_is_replaced_not_followed() {
        let d = folder("link");
        let victim = d.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let out = d.join("out.txt");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        replace(&out, b"new", 0o644).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        assert!(!std::fs::symlink_metadata(&out)
            .unwrap()
            .file_type()
            .is_symlink());
        // A log the same way, and a link to a procfs file is no write into it.
        let log = d.join("x.log");
        std::os::unix::fs::symlink("/proc/self/comm", &log).unwrap();
        let mut f = create(&log, 0o600).unwrap();
        f.write_all(b"line\n").unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), b"line\n");
        probe_writable(&d).unwrap();
        // Nothing left beside them.
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_control_file_is_refused() {
        let f = File::open("/proc/self/comm").unwrap();
        assert!(check(&f).is_err());
        assert!(CONTROL_FS.contains(&fd_magic(&f).unwrap()));
    }
}
