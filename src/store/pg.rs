//! The results store on PostgreSQL (`--store postgresql://…`), so several hosts write one store
//! and `runs`, `report`, `compare` and `plan` read across them. Runs and points keep the columns
//! one selects by (the host that measured, the run, the point's key) beside the typed record
//! itself, serialized as it is read back; tables are prefixed `vnetlab_` to share a database.
//! A point is kept as two versioned documents (`records::measured::VERSION`), read through the
//! same reader as SQLite's: its record (`PointRecord::encode`) and its full result
//! (`Measured::encode`). The schema is numbered (`vnetlab_meta`'s `schema`); every connection
//! brings it up to date. Every statement is bounded by a server-side timeout, the connection by a
//! connect timeout.

use postgres::{Client, NoTls};
use std::cell::RefCell;

use super::error::{Error, Result};
use crate::records::{PointRecord, RunRow};
use crate::vocab::RunStatus;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS vnetlab_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vnetlab_runs (
    id BIGSERIAL PRIMARY KEY, host TEXT NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL,
    experiment_text TEXT NOT NULL, experiment_hash TEXT NOT NULL, vnetlab_version TEXT NOT NULL,
    started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL, pid BIGINT NOT NULL,
    planned_points BIGINT NOT NULL, host_facts TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vnetlab_points (
    id BIGSERIAL PRIMARY KEY, run_id BIGINT NOT NULL REFERENCES vnetlab_runs(id), seq BIGINT NOT NULL,
    host TEXT NOT NULL, mode TEXT NOT NULL, direction TEXT NOT NULL, test TEXT NOT NULL,
    message_bytes BIGINT NOT NULL, load_bps BIGINT, throughput_gbps DOUBLE PRECISION,
    normalized_pct_per_gbps DOUBLE PRECISION, record TEXT NOT NULL, result TEXT);
CREATE INDEX IF NOT EXISTS vnetlab_points_run ON vnetlab_points(run_id);
INSERT INTO vnetlab_meta (key, value) VALUES ('app', 'vnetlab'), ('schema', '1') ON CONFLICT DO NOTHING;";

/// What each schema after the first (`SCHEMA`, schema 1) changed, in order: a store's `schema`
/// is 1 + how many have run. Each runs once, in a transaction with the number's update, under
/// the lock `connect` holds.
const MIGRATIONS: &[&str] = &[
    // 2: a point's record is a versioned document.
    LABEL_OLD_RECORDS,
    // 3: a farm's run (its id, this host's label) is one run per (run, host); a point is
    // stored once per run.
    "ALTER TABLE vnetlab_runs ADD COLUMN fleet_run TEXT, ADD COLUMN fleet_host TEXT, ADD COLUMN fleet_labels TEXT;
    CREATE UNIQUE INDEX vnetlab_runs_fleet ON vnetlab_runs(fleet_run, fleet_host) WHERE fleet_run IS NOT NULL;
    CREATE UNIQUE INDEX vnetlab_points_run_seq ON vnetlab_points(run_id, seq);",
];

/// Records written before points were versioned (the point's fields alone) get the version they
/// are, 1, the document before versions, so every record says what it is; the reader reads them
/// either way. Plain SQL that both databases read alike (its test runs it on SQLite).
const LABEL_OLD_RECORDS: &str =
    "UPDATE vnetlab_points SET record = '{\"version\":1,' || substr(record, 2)
    WHERE substr(record, 1, 1) = '{' AND record <> '{}' AND record NOT LIKE '{\"version\":%';";

/// Which of `MIGRATIONS` a store at schema `found` still needs; Err: the store is at a newer
/// schema than this build knows (a newer vnetlab's), which it must not touch.
fn pending(found: usize) -> std::result::Result<std::ops::Range<usize>, usize> {
    if found > 1 + MIGRATIONS.len() {
        return Err(found);
    }
    Ok(found.saturating_sub(1)..MIGRATIONS.len())
}

/// How long one statement may run on the server.
const STATEMENT_TIMEOUT_S: u32 = 60;
/// How long connecting may take.
const CONNECT_TIMEOUT_S: u32 = 10;

pub struct Pg {
    client: RefCell<Client>,
    /// The URL without its password, for messages.
    pub shown: String,
}

/// A URL as messages show it: `postgresql://user:secret@h/db?password=x` without its
/// secrets. The authority runs to the first `/`, `?` or `#`, and its user information to its
/// last `@` (a raw `@` in a password showed the rest of it); password parameters of the query
/// (`password`, `sslpassword`) read `***`.
pub fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return crate::text::clip(&redact_query(url));
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((auth, host)) => format!("{}@{host}", auth.split(':').next().unwrap_or("")),
        None => authority.to_string(),
    };
    crate::text::clip(&format!("{scheme}://{authority}{}", redact_query(tail)))
}

/// A connection string's password parameters replaced by `***` (query `k=v&…` or libpq's
/// `k=v k=v`).
fn redact_query(s: &str) -> String {
    let secret = |k: &str| {
        let k = k.trim_start_matches(['?', '&', ' ']).to_ascii_lowercase();
        k == "password" || k == "sslpassword"
    };
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        let (key, after) = rest.split_at(i);
        out.push_str(key);
        out.push('=');
        let after = &after[1..];
        let stop = after.find(['&', ' ', '#']).unwrap_or(after.len());
        out.push_str(
            if secret(key.rsplit(['&', ' ', '?']).next().unwrap_or(key)) {
                "***"
            } else {
                &after[..stop]
            },
        );
        rest = &after[stop..];
    }
    out.push_str(rest);
    out
}

/// This machine's name, as runs and points record who measured them.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Whether a run's process still lives on this machine (a pid a run recorded).
pub fn alive(pid: i64) -> bool {
    u32::try_from(pid).is_ok_and(|p| p > 0 && crate::sys::alive(p, None))
}

impl Pg {
    fn err(&self) -> impl Fn(postgres::Error) -> Error + '_ {
        move |e| Error::Pg {
            url: self.shown.clone(),
            message: with_causes(&e),
        }
    }

    /// Connects, bounds every statement, and makes the tables if they are missing and brings
    /// their schema up to date (once, under an advisory lock, so hosts starting together do not
    /// race). A database whose vnetlab tables say another app is refused, and so is one of a
    /// newer schema.
    pub fn connect(url: &str) -> Result<Pg> {
        let shown = shown(url);
        if !url.starts_with("postgresql://") && !url.starts_with("postgres://") {
            return Err(Error::Input(format!(
                "--store {shown}: give a PostgreSQL URL, postgresql://USER@HOST[:PORT]/DB (SQLite is --db FILE)"
            )));
        }
        let mut cfg: postgres::Config = url.parse().map_err(|e| {
            Error::Input(format!(
                "--store {shown}: {e}: write postgresql://USER@HOST[:PORT]/DB"
            ))
        })?;
        cfg.connect_timeout(std::time::Duration::from_secs(CONNECT_TIMEOUT_S as u64));
        // A server that vanished without a word (its host lost, a link gone) is found within a
        // minute rather than waited for for good: keep-alive probes, and sent data left
        // unacknowledged, end the connection. A long statement is not cut (its server still
        // answers the probes); statement_timeout bounds that.
        cfg.keepalives(true)
            .keepalives_idle(std::time::Duration::from_secs(10))
            .keepalives_interval(std::time::Duration::from_secs(5))
            .keepalives_retries(4)
            .tcp_user_timeout(std::time::Duration::from_secs(30));
        let client = cfg.connect(NoTls).map_err(|e| Error::Pg {
            url: shown.clone(),
            message: format!("cannot connect: {}", with_causes(&e)),
        })?;
        let pg = Pg {
            client: RefCell::new(client),
            shown,
        };
        pg.client
            .borrow_mut()
            .batch_execute(&format!(
                "SET statement_timeout = '{STATEMENT_TIMEOUT_S}s'; SELECT pg_advisory_lock(7642731);"
            ))
            .map_err(pg.err())?;
        let made = pg.prepare();
        let _ = pg
            .client
            .borrow_mut()
            .batch_execute("SELECT pg_advisory_unlock(7642731);");
        made?;
        Ok(pg)
    }

    /// The tables made if missing, refused if another app's, and migrated (under the lock).
    fn prepare(&self) -> Result<()> {
        let mut c = self.client.borrow_mut();
        c.batch_execute(SCHEMA).map_err(self.err())?;
        let meta = |c: &mut Client, key: &str| -> Result<Option<String>> {
            Ok(
                c.query_opt("SELECT value FROM vnetlab_meta WHERE key = $1", &[&key])
                    .map_err(self.err())?
                    .map(|r| r.get(0)),
            )
        };
        if meta(&mut c, "app")?.as_deref() != Some("vnetlab") {
            return Err(Error::NotOurs(self.shown.clone()));
        }
        let schema = meta(&mut c, "schema")?.unwrap_or_default();
        let found: usize = schema.parse().map_err(|_| Error::Pg {
            url: self.shown.clone(),
            message: format!(
                "vnetlab_meta says schema '{}', not a number: the store is damaged",
                crate::text::clip(&schema)
            ),
        })?;
        let todo = pending(found).map_err(|found| Error::Newer {
            path: self.shown.clone(),
            found,
            known: 1 + MIGRATIONS.len(),
        })?;
        for i in todo {
            let mut tx = c.transaction().map_err(self.err())?;
            tx.batch_execute(MIGRATIONS[i]).map_err(self.err())?;
            tx.execute(
                "UPDATE vnetlab_meta SET value = $1 WHERE key = 'schema'",
                &[&(i + 2).to_string()],
            )
            .map_err(self.err())?;
            tx.commit().map_err(self.err())?;
        }
        Ok(())
    }

    pub fn begin_run(&self, r: &super::NewRun, started_at: &str) -> Result<i64> {
        let facts = serde_json::to_string(r.facts).unwrap_or_default();
        let (fleet_run, fleet_host, labels) = super::fleet_columns(r.fleet);
        let row = self
            .client
            .borrow_mut()
            .query_one(
                "INSERT INTO vnetlab_runs (host, name, description, experiment_text, experiment_hash, vnetlab_version, started_at, status, pid, planned_points, host_facts, fleet_run, fleet_host, fleet_labels)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id",
                &[&hostname(), &r.name, &r.description, &r.text, &r.hash, &env!("CARGO_PKG_VERSION"), &started_at,
                  &RunStatus::Running.name(), &(std::process::id() as i64), &(r.planned as i64), &facts,
                  &fleet_run, &fleet_host, &labels],
            )
            .map_err(self.err())?;
        Ok(row.get(0))
    }

    pub fn finish_run(&self, run: i64, status: RunStatus, at: &str) -> Result<()> {
        self.client
            .borrow_mut()
            .execute(
                "UPDATE vnetlab_runs SET status = $1, finished_at = $2 WHERE id = $3",
                &[&status.name(), &at, &run],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// Takes a run up again: running, by this process, not finished.
    pub fn resume_run(&self, run: i64) -> Result<()> {
        self.client
            .borrow_mut()
            .execute(
                "UPDATE vnetlab_runs SET status = $1, pid = $2, finished_at = NULL, host = $3 WHERE id = $4",
                &[&RunStatus::Running.name(), &(std::process::id() as i64), &hostname(), &run],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// Removes these points of a run; how many.
    pub fn delete_points(&self, run: i64, ids: &[i64]) -> Result<usize> {
        let n = self
            .client
            .borrow_mut()
            .execute(
                "DELETE FROM vnetlab_points WHERE run_id = $1 AND id = ANY($2)",
                &[&run, &ids],
            )
            .map_err(self.err())?;
        Ok(n as usize)
    }

    /// Every host's runs, oldest first. A run still "running" whose process on this host is gone
    /// reads as incomplete; another host's is taken at its word.
    pub fn runs(&self) -> Result<Vec<RunRow>> {
        let me = hostname();
        let rows = self
            .client
            .borrow_mut()
            .query(
                "SELECT r.id, r.name, r.description, r.experiment_hash, r.vnetlab_version, r.started_at, r.finished_at,
                        r.status, r.planned_points, r.host_facts,
                        (SELECT COUNT(*) FROM vnetlab_points p WHERE p.run_id = r.id), r.experiment_text, r.pid, r.host,
                        r.fleet_run, r.fleet_host, r.fleet_labels
                 FROM vnetlab_runs r ORDER BY r.id",
                &[],
            )
            .map_err(self.err())?;
        rows.iter()
            .map(|r| {
                let status: String = r.get(7);
                let status: RunStatus =
                    status.parse().map_err(|e: crate::vocab::Error| Error::Pg {
                        url: self.shown.clone(),
                        message: e.to_string(),
                    })?;
                let host: String = r.get(13);
                let pid: i64 = r.get(12);
                let dead = host == me && !alive(pid);
                Ok(RunRow {
                    id: r.get(0),
                    name: r.get(1),
                    description: r.get(2),
                    experiment_hash: r.get(3),
                    vnetlab_version: r.get(4),
                    started_at: r.get(5),
                    finished_at: r.get(6),
                    status: if status == RunStatus::Running && dead {
                        RunStatus::Incomplete
                    } else {
                        status
                    },
                    planned_points: r.get::<_, i64>(8) as u32,
                    host_facts: serde_json::from_str(r.get(9)).map_err(|e| Error::Pg {
                        url: self.shown.clone(),
                        message: format!("run {}'s host facts: {e}", r.get::<_, i64>(0)),
                    })?,
                    points: r.get::<_, i64>(10) as u32,
                    experiment_text: r.get(11),
                    host: Some(host),
                    fleet: super::fleet_of(r.get(14), r.get(15), r.get(16)),
                })
            })
            .collect()
    }

    /// Stores one point: the columns one selects by, and its two versioned documents.
    pub fn add_point(&self, run: i64, p: &PointRecord) -> Result<i64> {
        let record = p.encode();
        let k = &p.key;
        let row = self
            .client
            .borrow_mut()
            .query_one(
                "INSERT INTO vnetlab_points (run_id, seq, host, mode, direction, test, message_bytes, load_bps, throughput_gbps, normalized_pct_per_gbps, record, result)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
                &[&run, &(p.seq as i64), &hostname(), &k.mode.to_string(), &k.direction.name(), &k.test.to_string(),
                  &(k.message_bytes as i64), &k.load_bps.map(|b| b as i64), &p.throughput_gbps,
                  &p.normalized_pct_per_gbps, &record, &p.result.as_ref().map(|m| m.encode())],
            )
            .map_err(self.err())?;
        Ok(row.get(0))
    }

    /// A run's points by sequence (without their full results; `point_result` reads one), each
    /// record read through the versioned reader: one this build cannot read is an error naming
    /// the point.
    pub fn points(&self, run: i64) -> Result<Vec<(i64, PointRecord)>> {
        let rows = self
            .client
            .borrow_mut()
            .query(
                "SELECT id, record, host, seq FROM vnetlab_points WHERE run_id = $1 ORDER BY seq",
                &[&run],
            )
            .map_err(self.err())?;
        rows.iter()
            .map(|r| {
                let mut p = PointRecord::decode(r.get(1)).map_err(|source| Error::BadResult {
                    path: self.shown.clone(),
                    run,
                    seq: r.get::<_, i64>(3) as u32,
                    source,
                })?;
                p.host = Some(r.get(2));
                Ok((r.get(0), p))
            })
            .collect()
    }

    /// A point's run, sequence number and stored result document.
    pub fn point_result(&self, id: i64) -> Result<(i64, u32, Option<String>)> {
        let row = self
            .client
            .borrow_mut()
            .query_one(
                "SELECT run_id, seq, result FROM vnetlab_points WHERE id = $1",
                &[&id],
            )
            .map_err(self.err())?;
        Ok((row.get(0), row.get::<_, i64>(1) as u32, row.get(2)))
    }
}

/// An error with every cause under it ("error connecting to server: Connection refused (os
/// error 111)"): the postgres crate's own text names only the outermost.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let c_text = c.to_string();
        if !text.contains(&c_text) {
            text = format!("{text}: {c_text}");
        }
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use crate::records::{measured, PointRecord};

    #[test]
    fn a_store_is_migrated_from_its_schema_and_a_newer_one_left_alone() {
        let known = 1 + super::MIGRATIONS.len();
        assert_eq!(super::pending(1), Ok(0..super::MIGRATIONS.len()));
        assert_eq!(
            super::pending(known),
            Ok(super::MIGRATIONS.len()..super::MIGRATIONS.len())
        );
        assert_eq!(super::pending(known + 1), Err(known + 1));
    }

    /// The migration labels a record from before versions as version 1 and leaves a versioned one
    /// as it is (twice run, once done); both read back through the versioned reader.
    #[test]
    fn old_records_are_labelled_and_still_read() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE TABLE vnetlab_points (id INTEGER PRIMARY KEY, record TEXT NOT NULL);",
        )
        .unwrap();
        let old_point = PointRecord {
            seq: 1,
            throughput_gbps: Some(2.5),
            ..Default::default()
        };
        let old = serde_json::to_string(&old_point).unwrap();
        let new = PointRecord {
            seq: 2,
            ..Default::default()
        }
        .encode();
        for r in [&old, &new] {
            db.execute("INSERT INTO vnetlab_points (record) VALUES (?1)", [r])
                .unwrap();
        }
        for _ in 0..2 {
            db.execute_batch(super::LABEL_OLD_RECORDS).unwrap();
        }
        let rows: Vec<String> = db
            .prepare("SELECT record FROM vnetlab_points ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows[0], format!("{{\"version\":1,{}", &old[1..]));
        assert_eq!(rows[1], new);
        let (v, p) = measured::read_versioned::<PointRecord>(&rows[0]).unwrap();
        assert_eq!((v, p.seq, p.throughput_gbps), (1, 1, Some(2.5)));
        let (v, p) = measured::read_versioned::<PointRecord>(&rows[1]).unwrap();
        assert_eq!((v, p.seq), (measured::VERSION, 2));
    }

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(
            super::shown("postgresql://vl:s3cret@db.example:5432/lab"),
            "postgresql://vl@db.example:5432/lab"
        );
        assert_eq!(super::shown("postgresql://h/db"), "postgresql://h/db");
        // A raw @ in the password, a password in the query, and libpq's key=value form.
        assert_eq!(
            super::shown("postgresql://vl:p@ss@w0rd@db:5432/lab"),
            "postgresql://vl@db:5432/lab"
        );
        assert_eq!(
            super::shown("postgresql://vl@db/lab?sslmode=require&password=s3cret&x=1"),
            "postgresql://vl@db/lab?sslmode=require&password=***&x=1"
        );
        assert_eq!(
            super::shown("host=db user=vl password=s3cret dbname=lab"),
            "host=db user=vl password=*** dbname=lab"
        );
        assert_eq!(
            super::shown("postgresql://vl@db/lab?PASSWORD=x"),
            "postgresql://vl@db/lab?PASSWORD=***"
        );
    }

    #[test]
    fn an_error_says_its_causes() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("error connecting to server")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        assert_eq!(
            super::with_causes(&Outer(io)),
            "error connecting to server: Connection refused"
        );
    }
}
