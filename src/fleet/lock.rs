//! The machine lock: one measuring command at a time on a machine (`test` in a lab, `meter`,
//! `run`, `reproduce`, `bench`; readers of the store, `up` and `status` take none). An advisory
//! lock (`flock`) on `/run/vnetlab/run.lock`, whatever state folder a command uses (two
//! measurements on one kernel share its cores, so their figures would be each other's), held
//! for the command's whole life and let go by the kernel when the process ends however it ends,
//! so a killed run never leaves the host locked. A command waits for it up to `--wait` or
//! `VNETLAB_LOCK_WAIT` seconds, else is refused at once (exit 6); a command started by the one
//! that holds it (a bench's `vnetlab test`) goes ahead under its parent's lock.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Error;

/// The machine's lock folder (the default state folder, a tmpfs).
pub const HOST_DIR: &str = "/run/vnetlab";

/// The machine's lock folder, made if missing; it must be a real folder of root's.
pub fn host_dir() -> Result<PathBuf, Error> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let d = PathBuf::from(HOST_DIR);
    match std::fs::symlink_metadata(&d) {
        Ok(m) if m.is_dir() && m.uid() == 0 => Ok(d),
        Ok(_) => Err(Error::Spool(format!(
            "{HOST_DIR} is not a folder of root's: remove what is there"
        ))),
        Err(_) => {
            std::fs::DirBuilder::new()
                .mode(0o755)
                .create(&d)
                .or_else(|e| if d.is_dir() { Ok(()) } else { Err(e) })
                .map_err(|e| Error::Spool(format!("cannot make {HOST_DIR}: {e}")))?;
            Ok(d)
        }
    }
}

/// The lock, held while this lives.
#[derive(Debug)]
pub struct HostLock {
    _file: File,
    pub path: PathBuf,
}

/// Takes the host's lock in `dir`, waiting up to `wait` for the run that holds it, or says who
/// holds it. The file is opened without following a link and checked to be a plain file of our
/// own before anything is written to it.
pub fn take(dir: &Path, what: &str, wait: Duration) -> Result<HostLock, Error> {
    let path = dir.join("run.lock");
    let shown = path.display().to_string();
    let io = |e: std::io::Error| Error::Spool(format!("cannot open the host's lock {shown}: {e}"));
    let holder = || match crate::text::read_capped(&path, 4096)
        .unwrap_or_default()
        .trim()
    {
        "" => format!("its lock is {shown}"),
        h => crate::text::clip(h),
    };
    let mut said = false;
    let got = crate::sys::file::lock_within(&path, 0o600, wait, || {
        if !said {
            crate::errln!(
                "vnetlab: waiting for the run that holds this host ({})",
                holder()
            );
            said = true;
        }
    })
    .map_err(io)?;
    let Some(mut f) = got else {
        return Err(Error::Busy(format!(
            "another vnetlab measurement holds this machine ({}): wait for it to end, or let this one wait with VNETLAB_LOCK_WAIT=SECONDS (or run's --wait)",
            holder()
        )));
    };
    f.set_len(0).map_err(io)?;
    writeln!(f, "pid {}: {what}", std::process::id()).map_err(io)?;
    Ok(HostLock { _file: f, path })
}

/// The longest wait `VNETLAB_LOCK_WAIT` may ask for (a day).
const MAX_WAIT_S: u64 = 86_400;

/// How long a measuring command waits for the machine: `wait`, or `VNETLAB_LOCK_WAIT` seconds
/// where that is longer.
pub fn wait_for(wait: Duration) -> Result<Duration, Error> {
    match std::env::var("VNETLAB_LOCK_WAIT") {
        Err(_) => Ok(wait),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(s) if s <= MAX_WAIT_S => Ok(wait.max(Duration::from_secs(s))),
            _ => Err(Error::Input(format!(
                "VNETLAB_LOCK_WAIT={}: give whole seconds, 0 to {MAX_WAIT_S}",
                crate::text::clip(&v)
            ))),
        },
    }
}

/// Whether the holder named in the lock file is one of this process's ancestors.
fn held_by_ancestor(path: &Path) -> bool {
    let text = crate::text::read_capped(path, 4096).unwrap_or_default();
    let Some(holder) = text
        .strip_prefix("pid ")
        .and_then(|r| r.split(':').next())
        .and_then(|p| p.trim().parse::<u32>().ok())
    else {
        return false;
    };
    let mut p = std::process::id();
    for _ in 0..64 {
        match crate::sys::parent_of(p) {
            Some(q) if q == holder => return true,
            Some(q) if q > 1 => p = q,
            _ => return false,
        }
    }
    false
}

/// The machine lock for a measuring command (`what` says which, to a waiter), waiting as
/// `wait_for` says; None where an ancestor holds it.
pub fn measuring(what: &str, wait: Duration) -> Result<Option<HostLock>, Error> {
    let wait = wait_for(wait)?;
    let dir = host_dir()?;
    if held_by_ancestor(&dir.join("run.lock")) {
        return Ok(None);
    }
    take(&dir, what, wait).map(Some)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_second_taker_is_told_who_holds_the_host() {
        let d = std::env::temp_dir().join(format!("vl-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let none = std::time::Duration::ZERO;
        let held = super::take(&d, "run r1 on h1", none).unwrap();
        let e = super::take(&d, "run r2", none).unwrap_err().to_string();
        assert!(e.contains("run r1 on h1"), "{e}");
        // A waiter gets it once the holder lets go.
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            drop(held);
        });
        assert!(super::take(&d, "run r2", std::time::Duration::from_secs(10)).is_ok());
        t.join().unwrap();
        let _ = std::fs::remove_dir_all(&d);
    }
}
