//! How the store fails, each failure saying what to do in one line; below the SQLite and
//! PostgreSQL stores that return it.

use crate::records::RunRef;

/// How the store failed. Each says what to do, in one line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0} is not a vnetlab database: pick another --db (vnetlab never overwrites it)")]
    NotOurs(String),
    #[error("--db {0} is a folder: give the store's file, e.g. {0}/vnetlab.sqlite")]
    Folder(String),
    #[error("--db {0} is not a regular file: give the store's file, e.g. vnetlab.sqlite")]
    NotAFile(String),
    #[error("{0} holds no store yet: `vnetlab run` makes one")]
    Empty(String),
    #[error(
        "{0} is an empty file, not a store: remove it, or pass --create to make a store in it"
    )]
    EmptyFile(String),
    #[error("cannot write {0} (a read-only file, folder or file system): write to another --db; `runs` and `report` can still read it")]
    ReadOnly(String),
    #[error("--db {path}: the folder {folder} does not exist (vnetlab makes no folder you did not ask for): make it, or give a --db in a folder that exists")]
    NoFolder { path: String, folder: String },
    #[error("{path} is damaged ({why}): vnetlab will not write to it; `vnetlab export` and `report` read what is left")]
    Damaged { path: String, why: String },
    #[error("{path} was written by an older vnetlab (schema {found} of {known}): `vnetlab migrate --db {path}` brings it up to date")]
    Older {
        path: String,
        found: usize,
        known: usize,
    },
    #[error("{path} was written by a newer vnetlab (schema {found}, this one knows {known}): use that vnetlab")]
    Newer {
        path: String,
        found: usize,
        known: usize,
    },
    #[error("{0}")]
    BadRunRef(String),
    #[error("{0} holds no runs yet: `vnetlab run experiments/quick.toml` makes one")]
    NoRuns(String),
    #[error("no run '{which}' in {path} (it holds runs {first}…{last}; see `vnetlab runs`)")]
    NoSuchRun {
        which: RunRef,
        path: String,
        first: i64,
        last: i64,
    },
    #[error("--db {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Sql {
        path: String,
        source: rusqlite::Error,
    },
    #[error("{url}: {message}")]
    Pg { url: String, message: String },
    #[error("{0}")]
    Input(String),
    /// A point's stored result that this build cannot read: named, never skipped.
    #[error("{path}: run {run}, point {seq}: {source}")]
    BadResult {
        path: String,
        run: i64,
        seq: u32,
        source: crate::records::measured::DocError,
    },
}

impl Error {
    /// Whether the user named something wrong (exit 2) rather than the work failing.
    pub fn is_bad_input(&self) -> bool {
        !matches!(
            self,
            Error::Sql { .. } | Error::Damaged { .. } | Error::Pg { .. } | Error::BadResult { .. }
        )
    }
}

pub type Result<T> = std::result::Result<T, Error>;
