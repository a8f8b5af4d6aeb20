//! The results store: SQLite, embedded. Runs, their points, per-interval samples, CPU parts, host
//! facts, the experiment's text and hash and the vnetlab version. Schema migrations are numbered;
//! each point is its own transaction (WAL), so a killed run leaves a database that opens with its
//! finished points intact; runs whose process died are marked incomplete. A file that is not a
//! vnetlab database is refused and never written.

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const APP: &str = "vnetlab";

/// Migrations, in order; the schema version is how many have run.
const MIGRATIONS: &[&str] = &[
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        experiment_text TEXT NOT NULL,
        experiment_hash TEXT NOT NULL,
        vnetlab_version TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        status TEXT NOT NULL,
        pid INTEGER NOT NULL,
        planned_points INTEGER NOT NULL,
        host_facts TEXT NOT NULL
    );
    CREATE TABLE points (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        seq INTEGER NOT NULL,
        mode TEXT NOT NULL,
        guests INTEGER NOT NULL,
        direction TEXT NOT NULL,
        test TEXT NOT NULL,
        message_bytes INTEGER NOT NULL,
        socket_buffer INTEGER,
        gro TEXT NOT NULL,
        tso INTEGER NOT NULL,
        mtu INTEGER NOT NULL,
        wire_rate INTEGER,
        parallel INTEGER NOT NULL,
        duration_s REAL NOT NULL,
        repeat INTEGER NOT NULL,
        throughput_gbps REAL,
        transactions_per_s REAL,
        latency_p50_us REAL,
        latency_p99_us REAL,
        host_busy_pct REAL,
        machine_busy_pct REAL,
        normalized_pct_per_gbps REAL,
        sd_host REAL,
        sd_send REAL,
        sd_recv REAL,
        spread TEXT,
        lab_facts TEXT,
        result TEXT,
        error TEXT
    );
    CREATE INDEX points_run ON points(run_id, seq);
    CREATE TABLE samples (point_id INTEGER NOT NULL REFERENCES points(id), t REAL NOT NULL, gbps REAL NOT NULL);
    CREATE INDEX samples_point ON samples(point_id);
    CREATE TABLE cpu_parts (point_id INTEGER NOT NULL REFERENCES points(id), name TEXT NOT NULL, kind TEXT NOT NULL, busy_pct REAL NOT NULL, cores REAL NOT NULL);
    CREATE INDEX parts_point ON cpu_parts(point_id);",
    "ALTER TABLE points ADD COLUMN lro INTEGER NOT NULL DEFAULT 0;",
    "ALTER TABLE points ADD COLUMN client_busy_pct REAL;
    ALTER TABLE points ADD COLUMN bound_by TEXT;
    ALTER TABLE points ADD COLUMN leak_pct REAL;
    ALTER TABLE points ADD COLUMN placed INTEGER;
    ALTER TABLE points ADD COLUMN host_cpus TEXT;
    ALTER TABLE points ADD COLUMN client_cpus TEXT;
    ALTER TABLE points ADD COLUMN load_bps INTEGER;
    ALTER TABLE points ADD COLUMN unstable INTEGER;
    ALTER TABLE points ADD COLUMN host_steal_pct REAL;
    CREATE TABLE repeats (point_id INTEGER NOT NULL REFERENCES points(id), rep INTEGER NOT NULL, throughput_gbps REAL NOT NULL,
        transactions_per_s REAL, host_busy_pct REAL, normalized_pct_per_gbps REAL, bound_by TEXT, leak_pct REAL);
    CREATE INDEX repeats_point ON repeats(point_id);",
];

#[derive(Debug)]
pub struct Store {
    conn: Connection,
    pub path: PathBuf,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct PointRecord {
    pub seq: u32,
    pub mode: String,
    pub guests: u32,
    pub direction: String,
    pub test: String,
    pub message_bytes: u64,
    pub socket_buffer: Option<u64>,
    pub gro: String,
    pub tso: bool,
    /// Software LRO toward the guest (paravirt).
    pub lro: bool,
    pub mtu: u32,
    pub wire_rate: Option<u64>,
    pub parallel: u32,
    pub duration_s: f64,
    pub repeat: u32,
    pub throughput_gbps: Option<f64>,
    pub transactions_per_s: Option<f64>,
    pub latency_p50_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    pub host_busy_pct: Option<f64>,
    pub machine_busy_pct: Option<f64>,
    pub normalized_pct_per_gbps: Option<f64>,
    pub sd_host: Option<f64>,
    pub sd_send: Option<f64>,
    pub sd_recv: Option<f64>,
    /// min/median/max/CI of throughput and host CPU over the repetitions.
    pub spread: Option<serde_json::Value>,
    /// Offloads and MTU read back from the kernel for this point's lab.
    pub lab_facts: Option<serde_json::Value>,
    /// The whole measured result (the test's --json).
    pub result: Option<serde_json::Value>,
    pub error: Option<String>,
    pub samples: Vec<(f64, f64)>,
    /// (name, kind, busy %, cores)
    pub parts: Vec<(String, String, f64, f64)>,
    /// The client's busy share of its own cores.
    #[serde(default)]
    pub client_busy_pct: Option<f64>,
    /// What bound the point (a side, a core, a backend, the wire), None when nothing did.
    #[serde(default)]
    pub bound_by: Option<String>,
    /// CPU the kernel charged across the host/client boundary, % of host busy.
    #[serde(default)]
    pub leak_pct: Option<f64>,
    /// Whether the lab's processes were confined to their side's cores (None: stored before).
    #[serde(default)]
    pub placed: Option<bool>,
    #[serde(default)]
    pub host_cpus: Option<String>,
    #[serde(default)]
    pub client_cpus: Option<String>,
    /// The offered load per stream (paced), bits/s; None: as fast as it goes.
    #[serde(default)]
    pub load_bps: Option<u64>,
    /// Throughput or CPU per Gb/s varied by more than 10 % across the repeats.
    #[serde(default)]
    pub unstable: Option<bool>,
    /// CPU the hypervisor beneath this machine stole from the host's cores, % (the largest over
    /// the repeats): above a few percent the figures are unreliable.
    #[serde(default)]
    pub host_steal_pct: Option<f64>,
    /// Every repeat's figures.
    #[serde(default)]
    pub repeats: Vec<RepeatRecord>,
}

/// One repeat of a point.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct RepeatRecord {
    pub throughput_gbps: f64,
    pub transactions_per_s: Option<f64>,
    pub host_busy_pct: Option<f64>,
    pub normalized_pct_per_gbps: Option<f64>,
    pub bound_by: Option<String>,
    pub leak_pct: Option<f64>,
}

#[derive(Serialize, Clone, Debug)]
pub struct RunRow {
    pub id: i64,
    pub name: String,
    pub description: String,
    pub experiment_hash: String,
    pub vnetlab_version: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub status: String,
    pub planned_points: u32,
    pub points: u32,
    pub host_facts: serde_json::Value,
    #[serde(skip)]
    pub experiment_text: String,
}

fn now() -> String {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs() as i64;
    // UTC, ISO 8601, without a date crate.
    let (days, secs) = (t.div_euclid(86400), t.rem_euclid(86400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs / 60 % 60, secs % 60)
}

/// Days since 1970-01-01 to a calendar date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + if m <= 2 { 1 } else { 0 }, m, d)
}

fn alive(pid: i64) -> bool {
    u32::try_from(pid).is_ok_and(|p| p > 0 && crate::sys::alive(p, None))
}

/// What a path given as `--db` is: missing, an SQLite file (worth opening), or refused.
fn check_path(path: &Path) -> Result<bool, String> {
    let name = crate::text::clip(&path.display().to_string());
    let not_ours = || format!("{name} is not a vnetlab database: pick another --db (vnetlab never overwrites it)");
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("--db {name}: {e}")),
    };
    if meta.is_dir() {
        return Err(format!("--db {name} is a folder: give the store's file, e.g. {name}/vnetlab.sqlite"));
    }
    if !meta.is_file() {
        return Err(format!("--db {name} is not a regular file: give the store's file, e.g. vnetlab.sqlite"));
    }
    if meta.len() == 0 {
        return Ok(false);
    }
    let mut head = [0u8; 16];
    use std::io::Read;
    let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)).map_err(|e| format!("--db {name}: {e}"))?;
    if n < 16 || &head != b"SQLite format 3\0" {
        return Err(not_ours());
    }
    Ok(true)
}

impl Store {
    /// Opens (or creates) a store for writing, migrating it. A file that exists but is not a
    /// vnetlab database is refused and never written.
    pub fn open(path: &Path) -> Result<Store, String> {
        let exists = check_path(path)?;
        let name = crate::text::clip(&path.display().to_string());
        let conn = Connection::open(path).map_err(|e| format!("cannot open {name}: {e}"))?;
        conn.busy_timeout(std::time::Duration::from_secs(30)).map_err(|e| e.to_string())?;
        let s = Store { conn, path: path.to_path_buf() };
        if exists && s.app().as_deref() != Some(APP) {
            return Err(format!("{name} is not a vnetlab database: pick another --db (vnetlab never overwrites it)"));
        }
        s.conn
            .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(|e| format!("{name}: {e}"))?;
        s.migrate()?;
        s.mark_dead_runs()?;
        Ok(s)
    }

    /// Opens an existing store for reading only: nothing is written (no migration, no marking), so
    /// a read-only file, folder or user can read it.
    pub fn open_read(path: &Path) -> Result<Store, String> {
        let name = crate::text::clip(&path.display().to_string());
        if !check_path(path)? {
            return Err(format!("{name} holds no store yet: `vnetlab run` makes one"));
        }
        use rusqlite::OpenFlags;
        let ro = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let try_open = |c: Connection| -> Result<Store, rusqlite::Error> {
            c.busy_timeout(std::time::Duration::from_secs(30))?;
            let s = Store { conn: c, path: path.to_path_buf() };
            s.conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0))?;
            Ok(s)
        };
        // Without write access to the folder, SQLite cannot share the WAL index: read the file as
        // it is (immutable) instead.
        let s = Connection::open_with_flags(path, ro)
            .and_then(try_open)
            .or_else(|_| {
                let uri = format!("file:{}?immutable=1", path.display());
                Connection::open_with_flags(uri, ro | OpenFlags::SQLITE_OPEN_URI).and_then(try_open)
            })
            .map_err(|e| format!("cannot read {name}: {e}"))?;
        if s.app().as_deref() != Some(APP) {
            return Err(format!("{name} is not a vnetlab database: pick another --db"));
        }
        let v = s.schema_version()?;
        if v < MIGRATIONS.len() {
            return Err(format!("{name} was written by an older vnetlab (schema {v} of {}): `vnetlab migrate --db {name}` brings it up to date", MIGRATIONS.len()));
        }
        if v > MIGRATIONS.len() {
            return Err(format!("{name} was written by a newer vnetlab (schema {v}, this one knows {}): use that vnetlab", MIGRATIONS.len()));
        }
        Ok(s)
    }

    fn app(&self) -> Option<String> {
        self.conn.query_row("SELECT value FROM meta WHERE key = 'app'", [], |r| r.get(0)).optional().unwrap_or(None)
    }

    fn schema_version(&self) -> Result<usize, String> {
        let v: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))
            .optional()
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        Ok(v.and_then(|v| v.parse().ok()).unwrap_or(0))
    }

    /// Brings the schema up to date. Each step runs in an IMMEDIATE transaction that re-reads the
    /// version first, so two processes opening a new store at once wait for each other instead of
    /// failing with "database is locked" or migrating twice.
    fn migrate(&self) -> Result<(), String> {
        let e = |e: rusqlite::Error| format!("{}: {e}", self.path.display());
        loop {
            let tx = rusqlite::Transaction::new_unchecked(&self.conn, rusqlite::TransactionBehavior::Immediate).map_err(e)?;
            tx.execute_batch("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);").map_err(e)?;
            tx.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('app', ?1)", [APP]).map_err(e)?;
            let version = self.schema_version()?;
            if version > MIGRATIONS.len() {
                return Err(format!(
                    "{} was written by a newer vnetlab (schema {version}, this one knows {}): use that vnetlab",
                    self.path.display(),
                    MIGRATIONS.len()
                ));
            }
            if version == MIGRATIONS.len() {
                return tx.commit().map_err(e);
            }
            tx.execute_batch(MIGRATIONS[version]).map_err(e)?;
            tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?1)", [(version + 1).to_string()]).map_err(e)?;
            tx.commit().map_err(e)?;
        }
    }

    /// Runs whose process is gone while they say "running" were killed: mark them incomplete.
    fn mark_dead_runs(&self) -> Result<(), String> {
        let mut st = self.conn.prepare("SELECT id, pid FROM runs WHERE status = 'running'").map_err(|e| e.to_string())?;
        let dead: Vec<i64> = st
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
            .map_err(|e| e.to_string())?
            .flatten()
            .filter(|(_, pid)| !alive(*pid))
            .map(|(id, _)| id)
            .collect();
        for id in dead {
            self.conn.execute("UPDATE runs SET status = 'incomplete' WHERE id = ?1", [id]).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    pub fn begin_run(&self, name: &str, description: &str, text: &str, hash: &str, facts: &serde_json::Value, planned: u32) -> Result<i64, String> {
        self.conn
            .execute(
                "INSERT INTO runs (name, description, experiment_text, experiment_hash, vnetlab_version, started_at, status, pid, planned_points, host_facts)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?8, ?9)",
                params![name, description, text, hash, env!("CARGO_PKG_VERSION"), now(), std::process::id(), planned, facts.to_string()],
            )
            .map_err(|e| e.to_string())?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Stores one point with its samples and CPU parts, in one transaction.
    pub fn add_point(&self, run: i64, p: &PointRecord) -> Result<i64, String> {
        let e = |e: rusqlite::Error| format!("storing point {}: {e}", p.seq);
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, rusqlite::TransactionBehavior::Immediate).map_err(e)?;
        let js = |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string());
        tx.execute(
            "INSERT INTO points (run_id, seq, mode, guests, direction, test, message_bytes, socket_buffer, gro, tso, mtu, wire_rate,
               parallel, duration_s, repeat, throughput_gbps, transactions_per_s, latency_p50_us, latency_p99_us, host_busy_pct,
               machine_busy_pct, normalized_pct_per_gbps, sd_host, sd_send, sd_recv, spread, lab_facts, result, error, lro,
               client_busy_pct, bound_by, leak_pct, placed, host_cpus, client_cpus, load_bps, unstable, host_steal_pct)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25,
               ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, ?37, ?38, ?39)",
            params![
                run, p.seq, p.mode, p.guests, p.direction, p.test, p.message_bytes as i64, p.socket_buffer.map(|v| v as i64), p.gro, p.tso,
                p.mtu, p.wire_rate.map(|v| v as i64), p.parallel, p.duration_s, p.repeat, p.throughput_gbps, p.transactions_per_s,
                p.latency_p50_us, p.latency_p99_us, p.host_busy_pct, p.machine_busy_pct, p.normalized_pct_per_gbps, p.sd_host,
                p.sd_send, p.sd_recv, js(&p.spread), js(&p.lab_facts), js(&p.result), p.error, p.lro,
                p.client_busy_pct, p.bound_by, p.leak_pct, p.placed, p.host_cpus, p.client_cpus, p.load_bps.map(|v| v as i64), p.unstable,
                p.host_steal_pct
            ],
        )
        .map_err(e)?;
        let id = tx.last_insert_rowid();
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT INTO repeats (point_id, rep, throughput_gbps, transactions_per_s, host_busy_pct, normalized_pct_per_gbps, bound_by, leak_pct)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .map_err(e)?;
            for (k, r) in p.repeats.iter().enumerate() {
                st.execute(params![id, k as i64 + 1, r.throughput_gbps, r.transactions_per_s, r.host_busy_pct, r.normalized_pct_per_gbps, r.bound_by, r.leak_pct])
                    .map_err(e)?;
            }
            let mut st = tx.prepare_cached("INSERT INTO samples (point_id, t, gbps) VALUES (?1, ?2, ?3)").map_err(e)?;
            for (t, g) in &p.samples {
                st.execute(params![id, t, g]).map_err(e)?;
            }
            let mut st = tx.prepare_cached("INSERT INTO cpu_parts (point_id, name, kind, busy_pct, cores) VALUES (?1, ?2, ?3, ?4, ?5)").map_err(e)?;
            for (n, k, b, c) in &p.parts {
                st.execute(params![id, n, k, b, c]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)?;
        Ok(id)
    }

    pub fn finish_run(&self, run: i64, status: &str) -> Result<(), String> {
        self.conn
            .execute("UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3", params![status, now(), run])
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    fn run_from(r: &rusqlite::Row) -> rusqlite::Result<RunRow> {
        Ok(RunRow {
            id: r.get(0)?,
            name: r.get(1)?,
            description: r.get(2)?,
            experiment_hash: r.get(3)?,
            vnetlab_version: r.get(4)?,
            started_at: r.get(5)?,
            finished_at: r.get(6)?,
            // A run whose process is gone while it says "running" was killed (a reader sees it so
            // without writing; a writer records it).
            status: match (r.get::<_, String>(7)?, r.get::<_, i64>(12)?) {
                (s, pid) if s == "running" && !alive(pid) => "incomplete".into(),
                (s, _) => s,
            },
            planned_points: r.get(8)?,
            host_facts: serde_json::from_str(&r.get::<_, String>(9)?).unwrap_or_default(),
            points: r.get(10)?,
            experiment_text: r.get(11)?,
        })
    }

    const RUN_COLS: &'static str = "r.id, r.name, r.description, r.experiment_hash, r.vnetlab_version, r.started_at, r.finished_at, r.status,
        r.planned_points, r.host_facts, (SELECT COUNT(*) FROM points p WHERE p.run_id = r.id), r.experiment_text, r.pid";

    pub fn runs(&self) -> Result<Vec<RunRow>, String> {
        let mut st = self.conn.prepare(&format!("SELECT {} FROM runs r ORDER BY r.id", Self::RUN_COLS)).map_err(|e| e.to_string())?;
        let rows = st.query_map([], Self::run_from).map_err(|e| e.to_string())?;
        rows.collect::<Result<_, _>>().map_err(|e| e.to_string())
    }

    /// A run by id or `latest`.
    pub fn run(&self, which: &str) -> Result<RunRow, String> {
        let runs = self.runs()?;
        let found = if which == "latest" {
            runs.last().cloned()
        } else {
            let id: i64 = which.parse().map_err(|_| format!("bad run '{which}': give a run id (see `vnetlab runs`) or latest"))?;
            runs.iter().find(|r| r.id == id).cloned()
        };
        found.ok_or_else(|| match runs.len() {
            0 => format!("{} holds no runs yet: `vnetlab run experiments/quick.toml` makes one", self.path.display()),
            n => format!("no run '{which}' in {} (it holds runs {}…{}; see `vnetlab runs`)", self.path.display(), runs[0].id, runs[n - 1].id),
        })
    }

    pub fn points(&self, run: i64) -> Result<Vec<(i64, PointRecord)>, String> {
        let mut st = self
            .conn
            .prepare(
                "SELECT id, seq, mode, guests, direction, test, message_bytes, socket_buffer, gro, tso, mtu, wire_rate, parallel, duration_s,
                   repeat, throughput_gbps, transactions_per_s, latency_p50_us, latency_p99_us, host_busy_pct, machine_busy_pct,
                   normalized_pct_per_gbps, sd_host, sd_send, sd_recv, spread, lab_facts, error, lro,
                   client_busy_pct, bound_by, leak_pct, placed, host_cpus, client_cpus, load_bps, unstable, host_steal_pct
                 FROM points WHERE run_id = ?1 ORDER BY seq",
            )
            .map_err(|e| e.to_string())?;
        let json = |s: Option<String>| s.and_then(|s| serde_json::from_str(&s).ok());
        let rows = st
            .query_map([run], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    PointRecord {
                        seq: r.get(1)?,
                        mode: r.get(2)?,
                        guests: r.get(3)?,
                        direction: r.get(4)?,
                        test: r.get(5)?,
                        message_bytes: r.get::<_, i64>(6)? as u64,
                        socket_buffer: r.get::<_, Option<i64>>(7)?.map(|v| v as u64),
                        gro: r.get(8)?,
                        tso: r.get(9)?,
                        mtu: r.get(10)?,
                        wire_rate: r.get::<_, Option<i64>>(11)?.map(|v| v as u64),
                        parallel: r.get(12)?,
                        duration_s: r.get(13)?,
                        repeat: r.get(14)?,
                        throughput_gbps: r.get(15)?,
                        transactions_per_s: r.get(16)?,
                        latency_p50_us: r.get(17)?,
                        latency_p99_us: r.get(18)?,
                        host_busy_pct: r.get(19)?,
                        machine_busy_pct: r.get(20)?,
                        normalized_pct_per_gbps: r.get(21)?,
                        sd_host: r.get(22)?,
                        sd_send: r.get(23)?,
                        sd_recv: r.get(24)?,
                        spread: json(r.get(25)?),
                        lab_facts: json(r.get(26)?),
                        result: None,
                        error: r.get(27)?,
                        lro: r.get(28)?,
                        samples: vec![],
                        parts: vec![],
                        client_busy_pct: r.get(29)?,
                        bound_by: r.get(30)?,
                        leak_pct: r.get(31)?,
                        placed: r.get(32)?,
                        host_cpus: r.get(33)?,
                        client_cpus: r.get(34)?,
                        load_bps: r.get::<_, Option<i64>>(35)?.map(|v| v as u64),
                        unstable: r.get(36)?,
                        host_steal_pct: r.get(37)?,
                        repeats: vec![],
                    },
                ))
            })
            .map_err(|e| e.to_string())?;
        let mut pts: Vec<(i64, PointRecord)> = rows.collect::<Result<_, _>>().map_err(|e| e.to_string())?;
        // Parts and samples in two queries for the whole run, not two per point.
        let mut st = self
            .conn
            .prepare("SELECT c.point_id, c.name, c.kind, c.busy_pct, c.cores FROM cpu_parts c JOIN points p ON p.id = c.point_id WHERE p.run_id = ?1")
            .map_err(|e| e.to_string())?;
        let parts = st
            .query_map([run], |r| Ok((r.get::<_, i64>(0)?, (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))))
            .map_err(|e| e.to_string())?;
        let index: std::collections::HashMap<i64, usize> = pts.iter().enumerate().map(|(i, (id, _))| (*id, i)).collect();
        for p in parts.flatten() {
            if let Some(&i) = index.get(&p.0) {
                pts[i].1.parts.push(p.1);
            }
        }
        let mut st = self
            .conn
            .prepare("SELECT s.point_id, s.t, s.gbps FROM samples s JOIN points p ON p.id = s.point_id WHERE p.run_id = ?1 ORDER BY s.rowid")
            .map_err(|e| e.to_string())?;
        let samples = st.query_map([run], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?, r.get::<_, f64>(2)?))).map_err(|e| e.to_string())?;
        for (id, t, g) in samples.flatten() {
            if let Some(&i) = index.get(&id) {
                pts[i].1.samples.push((t, g));
            }
        }
        let mut st = self
            .conn
            .prepare(
                "SELECT r.point_id, r.throughput_gbps, r.transactions_per_s, r.host_busy_pct, r.normalized_pct_per_gbps, r.bound_by, r.leak_pct
                 FROM repeats r JOIN points p ON p.id = r.point_id WHERE p.run_id = ?1 ORDER BY r.point_id, r.rep",
            )
            .map_err(|e| e.to_string())?;
        let reps = st
            .query_map([run], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    RepeatRecord {
                        throughput_gbps: r.get(1)?,
                        transactions_per_s: r.get(2)?,
                        host_busy_pct: r.get(3)?,
                        normalized_pct_per_gbps: r.get(4)?,
                        bound_by: r.get(5)?,
                        leak_pct: r.get(6)?,
                    },
                ))
            })
            .map_err(|e| e.to_string())?;
        for (id, rep) in reps.flatten() {
            if let Some(&i) = index.get(&id) {
                pts[i].1.repeats.push(rep);
            }
        }
        Ok(pts)
    }

    /// The stored full result of one point (the test's --json).
    pub fn point_result(&self, point_id: i64) -> Result<Option<serde_json::Value>, String> {
        let s: Option<String> = self
            .conn
            .query_row("SELECT result FROM points WHERE id = ?1", [point_id], |r| r.get(0))
            .map_err(|e| e.to_string())?;
        Ok(s.and_then(|s| serde_json::from_str(&s).ok()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("vnetlab-store-{name}-{}.sqlite", std::process::id()));
        for s in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{s}", p.display()));
        }
        p
    }

    #[test]
    fn round_trip_of_runs_points_samples_and_parts() {
        let p = tmp("rt");
        let s = Store::open(&p).unwrap();
        let run = s.begin_run("quick", "d", "name = \"quick\"", "abc", &serde_json::json!({"kernel": "6"}), 2).unwrap();
        let pt = PointRecord {
            seq: 1,
            mode: "bridge".into(),
            test: "TCP_STREAM".into(),
            throughput_gbps: Some(9.5),
            samples: vec![(0.5, 9.4), (1.0, 9.6)],
            parts: vec![("g1".into(), "guest".into(), 20.0, 0.4)],
            ..Default::default()
        };
        s.add_point(run, &pt).unwrap();
        s.finish_run(run, "complete").unwrap();
        drop(s);
        let s = Store::open(&p).unwrap();
        let r = s.run("latest").unwrap();
        assert_eq!((r.name.as_str(), r.status.as_str(), r.points), ("quick", "complete", 1));
        assert!(r.finished_at.unwrap().ends_with('Z'));
        let pts = s.points(run).unwrap();
        assert_eq!(pts[0].1.samples, vec![(0.5, 9.4), (1.0, 9.6)]);
        assert_eq!(pts[0].1.parts[0].0, "g1");
        assert!(s.run("99").unwrap_err().contains("no run '99'"));
        assert!(s.run("x").unwrap_err().contains("bad run"));
    }

    #[test]
    fn a_foreign_file_is_refused_and_left_alone() {
        let p = tmp("foreign");
        std::fs::write(&p, b"hello, not a database").unwrap();
        assert!(Store::open(&p).unwrap_err().contains("not a vnetlab database"));
        assert_eq!(std::fs::read(&p).unwrap(), b"hello, not a database");
        // An SQLite file of someone else's is refused too.
        let q = tmp("other-sqlite");
        {
            let c = Connection::open(&q).unwrap();
            c.execute_batch("CREATE TABLE x (a); INSERT INTO x VALUES (1);").unwrap();
        }
        let before = std::fs::read(&q).unwrap();
        assert!(Store::open(&q).unwrap_err().contains("not a vnetlab database"));
        assert_eq!(std::fs::read(&q).unwrap(), before);
    }

    #[test]
    fn a_run_whose_process_died_is_incomplete() {
        let p = tmp("dead");
        let s = Store::open(&p).unwrap();
        let run = s.begin_run("q", "", "", "", &serde_json::json!({}), 3).unwrap();
        s.conn.execute("UPDATE runs SET pid = 999999999 WHERE id = ?1", [run]).unwrap();
        drop(s);
        let s = Store::open(&p).unwrap();
        assert_eq!(s.run("latest").unwrap().status, "incomplete");
    }

    #[test]
    fn an_older_store_is_migrated_with_its_points() {
        let p = tmp("migrate");
        {
            // A store as the first schema left it, holding one point.
            let c = Connection::open(&p).unwrap();
            c.execute_batch("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('app', 'vnetlab'), ('schema_version', '1');").unwrap();
            c.execute_batch(MIGRATIONS[0]).unwrap();
            c.execute_batch("INSERT INTO runs (name, description, experiment_text, experiment_hash, vnetlab_version, started_at, status, pid, planned_points, host_facts)
                             VALUES ('old', '', '', '', '0.0.1', 'then', 'complete', 1, 1, '{}');
                             INSERT INTO points (run_id, seq, mode, guests, direction, test, message_bytes, gro, tso, mtu, parallel, duration_s, repeat, throughput_gbps)
                             VALUES (1, 1, 'bridge', 1, 'guest-to-client', 'TCP_STREAM', 1024, 'both', 1, 1500, 1, 1.0, 1, 3.5);").unwrap();
        }
        let s = Store::open(&p).unwrap();
        let v: String = s.conn.query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0)).unwrap();
        assert_eq!(v, MIGRATIONS.len().to_string());
        let pts = s.points(1).unwrap();
        assert_eq!((pts[0].1.throughput_gbps, pts[0].1.lro), (Some(3.5), false));
        // A store from a newer vnetlab is refused, not downgraded.
        s.conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'", []).unwrap();
        drop(s);
        assert!(Store::open(&p).unwrap_err().contains("newer vnetlab"));
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_414), (2025, 11, 22));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
