//! The per-host lock: one farm run at a time on a host. An advisory lock (`flock`) on
//! `run.lock` in the host's state folder, held for the run's whole life and let go by the kernel
//! when the process ends however it ends, so a killed run never leaves the host locked.

use std::fs::{File, TryLockError};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::Error;

/// The lock, held while this lives.
#[derive(Debug)]
pub struct HostLock {
    _file: File,
    pub path: PathBuf,
}

/// Takes the host's lock in `dir`, or says who holds it. The file is opened without following a
/// link and checked to be a plain file of our own before anything is written to it.
pub fn take(dir: &Path, what: &str) -> Result<HostLock, Error> {
    let path = dir.join("run.lock");
    let shown = path.display().to_string();
    let io = |e: std::io::Error| Error::Spool(format!("cannot open the host's lock {shown}: {e}"));
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(io)?;
    crate::sys::file::check(&f).map_err(io)?;
    match f.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let holder = crate::text::read_capped(&path, 4096).unwrap_or_default();
            return Err(Error::Busy(format!(
                "another vnetlab run holds this host ({}): wait for it to end, or give the other run's host another VNETLAB_STATE_DIR",
                match holder.trim() {
                    "" => "its lock is {shown}".replace("{shown}", &shown),
                    h => crate::text::clip(h),
                }
            )));
        }
        Err(TryLockError::Error(e)) => return Err(io(e)),
    }
    f.set_len(0).map_err(io)?;
    writeln!(f, "pid {}: {what}", std::process::id()).map_err(io)?;
    Ok(HostLock { _file: f, path })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_second_taker_is_told_who_holds_the_host() {
        let d = std::env::temp_dir().join(format!("vl-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let held = super::take(&d, "run r1 on h1").unwrap();
        let e = super::take(&d, "run r2").unwrap_err().to_string();
        assert!(e.contains("run r1 on h1"), "{e}");
        drop(held);
        assert!(super::take(&d, "run r2").is_ok());
        let _ = std::fs::remove_dir_all(&d);
    }
}
