//! The state folder: where each lab's journal, record, command log and its guests' and backends'
//! files live, and the rule that makes it safe to act on them (a folder only this user can
//! write). Paths only: what is in the files is the journal's and the record's business.

use crate::lab::Error;
use std::path::PathBuf;

/// `$VNETLAB_STATE_DIR`, else /run/vnetlab (a tmpfs: labs do not outlive a reboot, nor do netns).
pub fn dir() -> PathBuf {
    std::env::var_os("VNETLAB_STATE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/vnetlab"))
}

/// The state folder, ready for a new journal: /run/vnetlab is made when missing; a
/// `VNETLAB_STATE_DIR` must exist (a typo is not silently made into a new folder). Either must be
/// trusted (`check_trusted`).
pub fn ensure_dir() -> Result<PathBuf, Error> {
    let d = dir();
    match std::env::var_os("VNETLAB_STATE_DIR") {
        Some(_) if !d.is_dir() => {
            return Err(Error::Input(format!(
                "VNETLAB_STATE_DIR={} is not a folder: make it (mkdir -p {0}) or unset it to use /run/vnetlab",
                d.display()
            )))
        }
        Some(_) => {}
        None => std::fs::create_dir_all(&d)
            .map_err(|e| Error::Failed(format!("cannot make {}: {e}", d.display())))?,
    }
    check_trusted(&d)?;
    Ok(d)
}

/// A state folder others can write could hold a planted journal that aims `down` at anything:
/// it must belong to this user and be writable by nobody else.
pub fn check_trusted(d: &std::path::Path) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::metadata(d) else {
        return Ok(());
    };
    let me = crate::sys::euid();
    if m.uid() != me || m.mode() & 0o022 != 0 {
        return Err(Error::Input(format!(
            "the state folder {} is writable by others (owner {}, mode {:o}): a journal planted there could aim vnetlab at anything; use a folder only you can write",
            d.display(),
            m.uid(),
            m.mode() & 0o7777
        )));
    }
    Ok(())
}

pub fn journal_path(lab: &str) -> PathBuf {
    dir().join(format!("{lab}.journal"))
}

pub fn record_path(lab: &str) -> PathBuf {
    dir().join(format!("{lab}.json"))
}

pub fn log_path(lab: &str) -> PathBuf {
    dir().join(format!("{lab}.commands.log"))
}

/// The client machine's serve token, where the lab has one (0600: records are not secrets).
pub fn token_path(lab: &str) -> PathBuf {
    dir().join(format!("{lab}.token"))
}

/// A QEMU guest's folder: `<state dir>/<lab>.vm-<guest>`.
pub fn vm_dir(lab: &str, guest: &str) -> PathBuf {
    dir().join(format!("{lab}.vm-{guest}"))
}

pub fn vnic_stats_path(lab: &str, guest: &str) -> PathBuf {
    dir().join(format!("{lab}.vnic-{guest}.json"))
}

pub fn vnic_log_path(lab: &str, guest: &str) -> PathBuf {
    dir().join(format!("{lab}.vnic-{guest}.log"))
}

/// Names of the labs that have a journal.
pub fn labs() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".journal")
                .map(str::to_string)
        })
        .collect();
    v.sort();
    v
}
