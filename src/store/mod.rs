//! The results store: SQLite, embedded. Runs, their points (with every repeat), per-interval
//! samples, CPU parts, host facts, the experiment's text and hash and the vnetlab version, as the
//! typed records of `crate::records`. Schema migrations are numbered; each point is its own
//! transaction (WAL), so a killed run leaves a database that opens with its finished points; runs
//! whose process died read as incomplete. A file that is not a vnetlab database is refused and
//! never written; readers open the store read-only and never write.

pub mod error;
mod fleet;
pub mod pg;
mod points;
mod schema;

pub use fleet::FleetRun;

pub use error::{Error, Result};

use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

use crate::records::{Fleet, HostFacts, Label, RunRef, RunRow};
use crate::vocab::RunStatus;
use schema::MIGRATIONS;

const APP: &str = "vnetlab";

/// The first complaint of `PRAGMA quick_check`, or None if the database is sound.
fn quick_check(conn: &Connection) -> Option<String> {
    let mut st = match conn.prepare("PRAGMA quick_check(1)") {
        Ok(st) => st,
        Err(e) => return Some(e.to_string()),
    };
    let first: rusqlite::Result<String> = st.query_row([], |r| r.get(0));
    match first {
        Ok(s) if s == "ok" => None,
        Ok(s) => Some(crate::text::clip(&s)),
        Err(e) => Some(e.to_string()),
    }
}

/// Whether SQLite said the file is not (or no longer) a well-formed database.
fn is_corrupt(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

/// A run to begin: what its row holds.
pub struct NewRun<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub text: &'a str,
    pub hash: &'a str,
    pub facts: &'a HostFacts,
    pub planned: u32,
    /// The farm's run id and this host's label, when a fleet engine runs it.
    pub fleet: Option<&'a Fleet>,
    /// When it began (an imported run keeps its spooled start); None: now.
    pub started_at: Option<&'a str>,
}

impl<'a> NewRun<'a> {
    /// A run of this host alone, begun now.
    pub fn plain(
        name: &'a str,
        description: &'a str,
        text: &'a str,
        hash: &'a str,
        facts: &'a HostFacts,
        planned: u32,
    ) -> NewRun<'a> {
        NewRun {
            name,
            description,
            text,
            hash,
            facts,
            planned,
            fleet: None,
            started_at: None,
        }
    }
}

/// A fleet identity as the runs table's columns: run id, host label, labels (a typed list).
fn fleet_columns(f: Option<&Fleet>) -> (Option<String>, Option<String>, Option<String>) {
    match f {
        Some(f) => (
            Some(f.run.clone()),
            Some(f.host.clone()),
            Some(serde_json::to_string(&f.labels).unwrap_or_default()),
        ),
        None => (None, None, None),
    }
}

/// The fleet identity back from its columns (labels that do not parse read as none).
fn fleet_of(run: Option<String>, host: Option<String>, labels: Option<String>) -> Option<Fleet> {
    let labels: Vec<Label> = labels
        .and_then(|l| serde_json::from_str(&l).ok())
        .unwrap_or_default();
    Some(Fleet {
        run: run?,
        host: host?,
        labels,
    })
}

pub struct Store {
    db: Db,
    /// The SQLite file, or the PostgreSQL URL as messages show it.
    pub path: PathBuf,
}

/// Where the store lives: an SQLite file (the embedded default) or a PostgreSQL database that
/// several hosts write.
enum Db {
    Sqlite(Connection),
    Pg(Box<pg::Pg>),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// Now, in UTC, as the store keeps times: ISO 8601 to the second.
fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn shown(path: &Path) -> String {
    crate::text::clip(&path.display().to_string())
}

/// An empty file another vnetlab has just made and is turning into a store becomes one within a
/// moment; one that stays empty (a `touch`) is not a store.
fn becomes_a_store(path: &Path) -> bool {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < std::time::Duration::from_millis(1500) {
        if std::fs::metadata(path).is_ok_and(|m| m.len() > 0) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

/// What a path given as `--db` is: missing or empty (false), an SQLite file (true), or refused.
fn check_path(path: &Path) -> Result<bool> {
    let name = shown(path);
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(source) => return Err(Error::Io { path: name, source }),
    };
    if meta.is_dir() {
        return Err(Error::Folder(name));
    }
    if !meta.is_file() {
        return Err(Error::NotAFile(name));
    }
    if meta.len() == 0 {
        return Ok(false);
    }
    let mut head = [0u8; 16];
    use std::io::Read;
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|source| Error::Io {
            path: name.clone(),
            source,
        })?;
    if n < 16 || &head != b"SQLite format 3\0" {
        return Err(Error::NotOurs(name));
    }
    Ok(true)
}

impl Store {
    /// The SQLite connection: SQLite statements run only after a method has sent a PostgreSQL
    /// store to its own code.
    fn conn(&self) -> &Connection {
        match &self.db {
            Db::Sqlite(c) => c,
            Db::Pg(_) => unreachable!("a PostgreSQL store never runs SQLite statements"),
        }
    }

    fn pg(&self) -> Option<&pg::Pg> {
        match &self.db {
            Db::Pg(p) => Some(p),
            Db::Sqlite(_) => None,
        }
    }

    /// A PostgreSQL store (`--store postgresql://…`), its tables made if missing.
    pub fn open_pg(url: &str) -> Result<Store> {
        let p = pg::Pg::connect(url)?;
        Ok(Store {
            path: PathBuf::from(&p.shown),
            db: Db::Pg(Box::new(p)),
        })
    }

    /// A failed statement as the store's error: a store that became read-only under a writer
    /// is the user's to fix (another --db), any other failure the store's.
    fn sql(&self) -> impl Fn(rusqlite::Error) -> Error + '_ {
        move |source| match source.sqlite_error_code() {
            Some(rusqlite::ErrorCode::ReadOnly) => Error::ReadOnly(shown(&self.path)),
            _ => Error::Sql {
                path: shown(&self.path),
                source,
            },
        }
    }

    /// Opens (or creates) a store for writing, migrating it. A file that exists but is not a
    /// vnetlab database is refused and never written; so is an empty file (unless `create`),
    /// a store vnetlab cannot write, and a damaged one.
    pub fn open(path: &Path, create: bool) -> Result<Store> {
        let exists = check_path(path)?;
        if let Some(d) = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty() && !d.is_dir())
        {
            return Err(Error::NoFolder {
                path: shown(path),
                folder: shown(d),
            });
        }
        if !crate::sys::writable(path) {
            return Err(Error::ReadOnly(shown(path)));
        }
        if !exists && path.exists() && !create && !becomes_a_store(path) {
            return Err(Error::EmptyFile(shown(path)));
        }
        let sql = |source| Error::Sql {
            path: shown(path),
            source,
        };
        // A store path that is a planted link is refused, not written through.
        let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(path, flags).map_err(sql)?;
        if exists {
            if let Some(why) = quick_check(&conn) {
                return Err(Error::Damaged {
                    path: shown(path),
                    why,
                });
            }
        }
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(sql)?;
        let s = Store {
            db: Db::Sqlite(conn),
            path: path.to_path_buf(),
        };
        // A database with no tables holds nothing (another vnetlab may have just made the file
        // and be migrating it): it is adopted; anything else must be ours.
        if exists && !s.is_blank() && s.app().as_deref() != Some(APP) {
            return Err(Error::NotOurs(shown(path)));
        }
        // Another vnetlab opening the same new store at once may hold it while it switches it to
        // WAL or migrates; SQLite answers that busy without waiting, so wait here (bounded).
        let t0 = std::time::Instant::now();
        loop {
            match s.prepare_for_writing() {
                Err(Error::Sql { source, .. })
                    if is_busy(&source) && t0.elapsed() < std::time::Duration::from_secs(30) =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                r => return r.map(|()| s),
            }
        }
    }

    /// WAL mode, the schema up to date, and runs whose process died marked as such.
    fn prepare_for_writing(&self) -> Result<()> {
        self.conn()
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
            )
            .map_err(self.sql())?;
        self.migrate()?;
        self.mark_dead_runs()
    }

    /// Opens an existing store for reading only: nothing is written (no migration, no marking, no
    /// -wal or -shm file left beside it), so a read-only file, folder or user can read it. A
    /// damaged store is read with a warning on stderr: what is left may be incomplete.
    pub fn open_read(path: &Path) -> Result<Store> {
        if !check_path(path)? {
            return Err(Error::Empty(shown(path)));
        }
        use rusqlite::OpenFlags;
        let ro = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        // No writer has it open (it left no WAL index): read the file as it is, making nothing.
        let shm = PathBuf::from(format!("{}-shm", path.display()));
        let quiet = !shm.exists();
        let try_open = |c: Connection| -> std::result::Result<Store, rusqlite::Error> {
            c.busy_timeout(std::time::Duration::from_secs(30))?;
            let s = Store {
                db: Db::Sqlite(c),
                path: path.to_path_buf(),
            };
            s.conn()
                .query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| {
                    r.get::<_, i64>(0)
                })?;
            Ok(s)
        };
        // Without write access to the folder, SQLite cannot share the WAL index: read the file as
        // it is (immutable) instead.
        let immutable = || {
            let uri = format!("file:{}?immutable=1", path.display());
            Connection::open_with_flags(uri, ro | OpenFlags::SQLITE_OPEN_URI).and_then(try_open)
        };
        let opened = if quiet {
            immutable()
        } else {
            Connection::open_with_flags(path, ro)
                .and_then(try_open)
                .or_else(|_| immutable())
        };
        let s = opened.map_err(|source| match is_corrupt(&source) {
            true => Error::Damaged {
                path: shown(path),
                why: source.to_string(),
            },
            false => Error::Sql {
                path: shown(path),
                source,
            },
        })?;
        if let Some(why) = quick_check(s.conn()) {
            crate::errln!(
                "vnetlab: warning: {} is damaged ({why}): what follows may be incomplete",
                shown(path)
            );
        }
        if s.app().as_deref() != Some(APP) {
            return Err(Error::NotOurs(shown(path)));
        }
        let (found, known) = (s.schema_version()?, MIGRATIONS.len());
        match found.cmp(&known) {
            std::cmp::Ordering::Less => Err(Error::Older {
                path: shown(path),
                found,
                known,
            }),
            std::cmp::Ordering::Greater => Err(Error::Newer {
                path: shown(path),
                found,
                known,
            }),
            std::cmp::Ordering::Equal => Ok(s),
        }
    }

    /// Whether the database has no tables at all (a new or zero-length file).
    fn is_blank(&self) -> bool {
        self.conn()
            .query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n == 0)
            .unwrap_or(false)
    }

    fn app(&self) -> Option<String> {
        self.conn()
            .query_row("SELECT value FROM meta WHERE key = 'app'", [], |r| r.get(0))
            .optional()
            .unwrap_or(None)
    }

    fn schema_version(&self) -> Result<usize> {
        let v: Option<String> = self
            .conn()
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(self.sql())?;
        Ok(v.and_then(|v| v.parse().ok()).unwrap_or(0))
    }

    /// Brings the schema up to date. Each step runs in an IMMEDIATE transaction that re-reads the
    /// version first, so two processes opening a new store at once wait for each other instead of
    /// failing with "database is locked" or migrating twice.
    fn migrate(&self) -> Result<()> {
        let e = self.sql();
        loop {
            let tx = rusqlite::Transaction::new_unchecked(
                self.conn(),
                rusqlite::TransactionBehavior::Immediate,
            )
            .map_err(&e)?;
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
            )
            .map_err(&e)?;
            tx.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('app', ?1)",
                [APP],
            )
            .map_err(&e)?;
            let (found, known) = (self.schema_version()?, MIGRATIONS.len());
            if found > known {
                return Err(Error::Newer {
                    path: shown(&self.path),
                    found,
                    known,
                });
            }
            if found == known {
                return tx.commit().map_err(&e);
            }
            tx.execute_batch(MIGRATIONS[found]).map_err(&e)?;
            tx.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?1)",
                [(found + 1).to_string()],
            )
            .map_err(&e)?;
            tx.commit().map_err(&e)?;
        }
    }

    /// Runs whose process is gone while they say "running" were killed: mark them incomplete.
    fn mark_dead_runs(&self) -> Result<()> {
        let e = self.sql();
        let mut st = self
            .conn()
            .prepare("SELECT id, pid FROM runs WHERE status = 'running'")
            .map_err(&e)?;
        let dead: Vec<i64> = st
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
            .map_err(&e)?
            .flatten()
            .filter(|(_, pid)| !pg::alive(*pid))
            .map(|(id, _)| id)
            .collect();
        for id in dead {
            self.conn()
                .execute(
                    "UPDATE runs SET status = ?1 WHERE id = ?2",
                    params![RunStatus::Incomplete.name(), id],
                )
                .map_err(&e)?;
        }
        Ok(())
    }

    /// Begins a run: its row says running, by this process.
    pub fn begin_run(&self, r: &NewRun) -> Result<i64> {
        let started = r.started_at.map_or_else(now, str::to_string);
        if let Some(p) = self.pg() {
            return p.begin_run(r, &started);
        }
        let facts = serde_json::to_string(r.facts).unwrap_or_default();
        let (fleet_run, fleet_host, labels) = fleet_columns(r.fleet);
        self.conn()
            .execute(
                "INSERT INTO runs (name, description, experiment_text, experiment_hash, vnetlab_version, started_at, status, pid, planned_points, host_facts, host, fleet_run, fleet_host, fleet_labels)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                params![r.name, r.description, r.text, r.hash, env!("CARGO_PKG_VERSION"), started, RunStatus::Running.name(), std::process::id(), r.planned, facts, pg::hostname(), fleet_run, fleet_host, labels],
            )
            .map_err(self.sql())?;
        Ok(self.conn().last_insert_rowid())
    }

    pub fn finish_run(&self, run: i64, status: RunStatus) -> Result<()> {
        if let Some(p) = self.pg() {
            return p.finish_run(run, status, &now());
        }
        self.conn()
            .execute(
                "UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3",
                params![status.name(), now(), run],
            )
            .map_err(self.sql())?;
        Ok(())
    }

    fn run_from(r: &rusqlite::Row) -> rusqlite::Result<RunRow> {
        let text = |i: usize, e: crate::vocab::Error| {
            rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, e.into())
        };
        // A run whose process is gone while it says "running" was killed (a reader sees it so
        // without writing; a writer records it).
        let status: RunStatus = r.get::<_, String>(7)?.parse().map_err(|e| text(7, e))?;
        let status = if status == RunStatus::Running && !pg::alive(r.get(12)?) {
            RunStatus::Incomplete
        } else {
            status
        };
        Ok(RunRow {
            id: r.get(0)?,
            name: r.get(1)?,
            description: r.get(2)?,
            experiment_hash: r.get(3)?,
            vnetlab_version: r.get(4)?,
            started_at: r.get(5)?,
            finished_at: r.get(6)?,
            status,
            planned_points: r.get(8)?,
            // A run's host facts that do not parse are a damaged store, said, not emptied.
            host_facts: serde_json::from_str(&r.get::<_, String>(9)?).map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(9, rusqlite::types::Type::Text, e.into())
            })?,
            points: r.get(10)?,
            experiment_text: r.get(11)?,
            host: r.get(13)?,
            fleet: fleet_of(r.get(14)?, r.get(15)?, r.get(16)?),
        })
    }

    const RUN_COLS: &'static str = "r.id, r.name, r.description, r.experiment_hash, r.vnetlab_version, r.started_at, r.finished_at, r.status,
        r.planned_points, r.host_facts, (SELECT COUNT(*) FROM points p WHERE p.run_id = r.id), r.experiment_text, r.pid, r.host,
        r.fleet_run, r.fleet_host, r.fleet_labels";

    pub fn runs(&self) -> Result<Vec<RunRow>> {
        if let Some(p) = self.pg() {
            return p.runs();
        }
        let mut st = self
            .conn()
            .prepare(&format!(
                "SELECT {} FROM runs r ORDER BY r.id",
                Self::RUN_COLS
            ))
            .map_err(self.sql())?;
        let rows = st.query_map([], Self::run_from).map_err(self.sql())?;
        rows.collect::<std::result::Result<_, _>>()
            .map_err(self.sql())
    }

    /// A run by id, or the latest.
    pub fn find_run(&self, which: RunRef) -> Result<RunRow> {
        let runs = self.runs()?;
        let found = match which {
            RunRef::Latest => runs.last().cloned(),
            RunRef::Id(id) => runs.iter().find(|r| r.id == id).cloned(),
        };
        found.ok_or_else(|| match runs.as_slice() {
            [] => Error::NoRuns(shown(&self.path)),
            [first, .., last] | [first @ last] => Error::NoSuchRun {
                which,
                path: shown(&self.path),
                first: first.id,
                last: last.id,
            },
        })
    }
}

#[cfg(test)]
mod tests;

/// Whether SQLite refused because another connection holds the database.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}
