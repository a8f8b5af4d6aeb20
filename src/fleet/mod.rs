//! A farm of hosts driven by a fleet engine (Ansible, a Kubernetes Job): the names a farm's run
//! goes by (`--run-id`, `--host-label`, `--label`), the per-host lock that keeps two runs off
//! one host, the spool that keeps every finished point on the host's disk before it is sent, and
//! the import that sends a spool's points to the store, each once.

pub mod import;
pub mod lock;
pub mod spool;

use crate::records::{Fleet, Label};

/// Why a farm's step could not be done. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A name or a folder as given is wrong: nothing was done.
    #[error("{0}")]
    Input(String),
    /// Another run holds this host.
    #[error("{0}")]
    Busy(String),
    /// The spool could not be written or read.
    #[error("{0}")]
    Spool(String),
    #[error(transparent)]
    Store(#[from] crate::store::Error),
}

/// The longest run id, host label, label key or value.
pub const MAX_NAME: usize = 64;
/// The most labels a run carries.
pub const MAX_LABELS: usize = 32;

/// Whether a name is one a farm may give: 1 to 64 of letters, digits, `.`, `_`, `-`, not
/// starting with `.` or `-` (it names a spool folder, so it can never climb out of it).
fn check_name(what: &str, s: &str) -> Result<(), Error> {
    let ok = !s.is_empty()
        && s.len() <= MAX_NAME
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        && !s.starts_with(['.', '-']);
    match ok {
        true => Ok(()),
        false => Err(Error::Input(format!(
            "{what} '{}': use 1 to {MAX_NAME} letters, digits, '.', '_' or '-', not starting with '.' or '-' (e.g. 2026-11-27a)",
            crate::text::clip(s)
        ))),
    }
}

/// A farm run's identity from the command line: the run id, this host's label, `k=v` labels.
pub fn fleet(run: &str, host: &str, labels: &[String]) -> Result<Fleet, Error> {
    check_name("--run-id", run)?;
    check_name("--host-label", host)?;
    if labels.len() > MAX_LABELS {
        return Err(Error::Input(format!(
            "{} --label flags: give at most {MAX_LABELS}",
            labels.len()
        )));
    }
    let labels = labels
        .iter()
        .map(|l| {
            let (k, v) = l.split_once('=').ok_or_else(|| {
                Error::Input(format!(
                    "--label '{}': write KEY=VALUE, e.g. --label rack=r12",
                    crate::text::clip(l)
                ))
            })?;
            check_name("--label key", k)?;
            check_name("--label value", v)?;
            Ok(Label {
                key: k.into(),
                value: v.into(),
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(Fleet {
        run: run.into(),
        host: host.into(),
        labels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_farm_name_cannot_leave_its_folder_or_grow_without_bound() {
        let f = fleet("2026-11-27a", "host-3.rack2", &["rack=r12".into()]).unwrap();
        assert_eq!(f.labels[0].value, "r12");
        for bad in ["", "..", ".hidden", "-x", "a/b", "a b", &"x".repeat(65)] {
            assert!(fleet(bad, "h", &[]).is_err(), "{bad:?}");
            assert!(fleet("r", bad, &[]).is_err(), "{bad:?}");
        }
        assert!(fleet("r", "h", &["novalue".into()]).is_err());
        assert!(fleet("r", "h", &["k=../x".into()]).is_err());
        let many: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
        assert!(fleet("r", "h", &many).is_err());
    }
}
