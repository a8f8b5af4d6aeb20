//! What several commands share: the root check, JSON on stdout, the flags that say when a point
//! stops (`StopArgs`), the serve token, and the store's flags (`DbArgs`).

use clap::Args;
use std::path::PathBuf;

use super::fail::{CmdResult, Fail};
use crate::store::Store;

/// Refuses early when not root, naming the fix.
pub fn need_root(what: &str) -> CmdResult {
    if !crate::sys::is_root() {
        return Err(Fail::Input(format!(
            "{what} needs root (CAP_NET_ADMIN): run it as root, e.g. with sudo"
        )));
    }
    Ok(())
}

/// The machine lock for a measuring command (`what` names it to whoever waits), taken as root:
/// one measurement at a time on a machine, waiting `wait` or `VNETLAB_LOCK_WAIT` seconds.
pub fn hold_machine(
    what: &str,
    wait: std::time::Duration,
) -> Result<Option<crate::fleet::lock::HostLock>, Fail> {
    if !crate::sys::is_root() {
        return Ok(None);
    }
    Ok(crate::fleet::lock::measuring(what, wait)?)
}

/// Root and a state folder labs can be journaled in, for a command that builds labs as it goes:
/// a bad `VNETLAB_STATE_DIR` is refused before anything runs, not point by point.
pub fn need_lab_root(what: &str) -> CmdResult {
    need_root(what)?;
    crate::lab::folder::ensure_dir()?;
    crate::vnic::backend::io_wanted()?;
    Ok(())
}

/// A JSON document on stdout. serde_json leaves DEL and the C1 controls raw in strings: they are
/// written as `\u00XX` escapes, so the document stays valid and a terminal obeys none of them.
pub fn print_json<T: serde::Serialize>(v: &T) {
    let text = serde_json::to_string_pretty(v).unwrap();
    let text: String = text
        .chars()
        .map(|c| match c as u32 {
            0x7f..=0x9f => format!("\\u{:04x}", c as u32),
            _ => c.to_string(),
        })
        .collect();
    crate::outln!("{text}");
}

/// How many units a point takes and when it stops: vnetlab's --confidence/--iterations and
/// netperf's -I/-i (shared by `test` and `run`).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct StopArgs {
    /// Repeat until the median's LEVEL % confidence interval of throughput and of host CPU is
    /// within ±HALF-WIDTH % of it, e.g. 95,5 (between --iterations' least and most; alone: at
    /// least the units that reach the level, 6 at 95 %, at most 30)
    #[arg(long, value_name = "LEVEL,HALF-WIDTH")]
    pub confidence: Option<String>,
    /// netperf's -I LEVEL,WIDTH: as --confidence with the whole interval WIDTH % wide (±WIDTH/2)
    #[arg(short = 'I', value_name = "LEVEL,WIDTH", conflicts_with = "confidence")]
    pub netperf_confidence: Option<String>,
    /// Units (runs, or rounds in fresh labs) as MIN,MAX, or one number for both: with a
    /// confidence goal, a point stops between them once it is met
    #[arg(long, value_name = "MIN,MAX")]
    pub iterations: Option<String>,
    /// netperf's -i MAX,MIN: as --iterations, most first
    #[arg(short = 'i', value_name = "MAX,MIN", conflicts_with = "iterations")]
    pub netperf_iterations: Option<String>,
}

impl StopArgs {
    /// Whether any of these was given.
    pub fn given(&self) -> bool {
        self.confidence.is_some()
            || self.netperf_confidence.is_some()
            || self.iterations.is_some()
            || self.netperf_iterations.is_some()
    }

    /// The stopping rule these flags give; `fixed` where they give no count and no goal.
    pub fn stopping(
        &self,
        fixed: crate::stats::Iterations,
    ) -> Result<crate::measure::Stopping, Fail> {
        use crate::stats;
        let goal = match (&self.confidence, &self.netperf_confidence) {
            (Some(c), _) => Some(stats::parse_confidence(c)?),
            (None, Some(c)) => Some(stats::parse_netperf_confidence(c)?),
            (None, None) => None,
        };
        let iterations = match (&self.iterations, &self.netperf_iterations, goal) {
            (Some(i), _, _) => stats::parse_iterations(i)?,
            (None, Some(i), _) => stats::parse_netperf_iterations(i)?,
            (None, None, Some(g)) if fixed.max <= 1 => {
                crate::measure::Stopping::default_iterations(g)
            }
            (None, None, _) => fixed,
        };
        Ok(crate::measure::Stopping { goal, iterations })
    }
}

/// The serve token, from --token, else --token-file (its first line, refused if others may read
/// it), else VNETLAB_TOKEN; None where none is given.
pub fn resolve_token(
    token: &Option<String>,
    file: &Option<std::path::PathBuf>,
) -> Result<Option<String>, Fail> {
    use std::os::unix::fs::MetadataExt;
    if let Some(t) = token {
        return Ok(Some(t.clone()));
    }
    if let Some(f) = file {
        let name = crate::text::clip(&f.display().to_string());
        let text = crate::text::read_capped(f, 4096)?;
        let mode = std::fs::metadata(f).map(|m| m.mode()).unwrap_or(0);
        if mode & 0o077 != 0 {
            return Err(Fail::Input(format!(
                "--token-file {name} may be read by others (mode {:o}): `chmod 600 {name}` first",
                mode & 0o777
            )));
        }
        let t = text.lines().next().unwrap_or("").trim().to_string();
        return Ok(Some(t));
    }
    Ok(std::env::var("VNETLAB_TOKEN")
        .ok()
        .filter(|t| !t.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::Fail;

    /// A token from a file others may read is refused; one from the file's first line is taken.
    #[test]
    fn a_token_comes_from_the_flag_a_private_file_or_the_environment() {
        use std::os::unix::fs::PermissionsExt;
        let f = std::env::temp_dir().join(format!("vnetlab-token-{}", std::process::id()));
        std::fs::write(&f, "0123456789abcdef0123\nrest\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = super::resolve_token(&None, &Some(f.clone())).unwrap_err();
        assert!(matches!(e, Fail::Input(ref m) if m.contains("chmod 600")));
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            super::resolve_token(&None, &Some(f.clone()))
                .unwrap()
                .as_deref(),
            Some("0123456789abcdef0123")
        );
        assert_eq!(
            super::resolve_token(&Some("given-on-the-line".into()), &None)
                .unwrap()
                .as_deref(),
            Some("given-on-the-line")
        );
        std::fs::remove_file(&f).unwrap();
    }
}

/// The SQLite store a command reads or writes unless told otherwise.
pub const DEFAULT_DB: &str = "vnetlab.sqlite";

/// Where results are stored: an SQLite file (`--db`, the default) or a PostgreSQL database that
/// several hosts share (`--store postgresql://…`).
#[derive(Args, Clone, Debug)]
pub struct DbArgs {
    /// The results store (SQLite)
    #[arg(long, default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// A PostgreSQL store instead, shared by several hosts: postgresql://USER@HOST[:PORT]/DB
    /// (every run and point records the host that measured it)
    #[arg(long, value_name = "URL", conflicts_with = "db")]
    pub store: Option<String>,
}

impl DbArgs {
    /// The store to read: it must exist.
    pub fn read(&self) -> Result<Store, Fail> {
        match &self.store {
            Some(url) => Ok(Store::open_pg(url)?),
            None => existing(&self.db),
        }
    }
    /// The store to write: made if missing (an empty SQLite file only with `create`).
    pub fn write(&self, create: bool) -> Result<Store, Fail> {
        match &self.store {
            Some(url) => Ok(Store::open_pg(url)?),
            None => Ok(Store::open(&self.db, create)?),
        }
    }
    /// As messages name it.
    pub fn shown(&self) -> String {
        match &self.store {
            Some(url) => crate::store::pg::shown(url),
            None => crate::text::clip(&self.db.display().to_string()),
        }
    }
}

/// Opens an existing store for reading only; never makes one, never writes.
pub fn existing(db: &std::path::Path) -> Result<Store, Fail> {
    let name = crate::text::clip(&db.display().to_string());
    if !db.exists() {
        return Err(Fail::Input(format!("no store at {name}: run an experiment first (`vnetlab run experiments/quick.toml`) or pass --db")));
    }
    Ok(Store::open_read(db)?)
}
