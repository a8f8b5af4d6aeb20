//! The store's schema: numbered migrations; the schema version is how many have run.

/// Migrations, in order.
pub const MIGRATIONS: &[&str] = &[
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
        transactions_per_s REAL, host_busy_pct REAL, normalized_pct_per_gbps REAL, bound_by TEXT, leak_pct REAL, host_steal_pct REAL);
    CREATE INDEX repeats_point ON repeats(point_id);",
    "ALTER TABLE points ADD COLUMN vdi_profile TEXT;
    ALTER TABLE points ADD COLUMN interference TEXT;",
    "ALTER TABLE repeats ADD COLUMN latency_p99_us REAL;
    ALTER TABLE repeats ADD COLUMN latency_p999_us REAL;
    ALTER TABLE repeats ADD COLUMN latency_max_us REAL;",
    "ALTER TABLE runs ADD COLUMN host TEXT;",
    "ALTER TABLE repeats ADD COLUMN movie_buffering_pct REAL;
    ALTER TABLE repeats ADD COLUMN movie_playing_pct REAL;",
    "ALTER TABLE points ADD COLUMN congestion TEXT;
    ALTER TABLE points ADD COLUMN pacing TEXT;
    ALTER TABLE points ADD COLUMN tcp_retransmits INTEGER;",
    // Intervals and the meter's cross-check: why a point or a repeat has no cost, the foreign
    // work taken out of it, the meter's own ± (the `unstable` column now means "interval wider
    // than asked").
    "ALTER TABLE points ADD COLUMN unmeasurable TEXT;
    ALTER TABLE points ADD COLUMN host_foreign_pct REAL;
    ALTER TABLE repeats ADD COLUMN host_foreign_pct REAL;
    ALTER TABLE repeats ADD COLUMN host_meter_pm REAL;
    ALTER TABLE repeats ADD COLUMN unmeasurable TEXT;",
    // Farms: a run a fleet engine names (its run id and this host's label) is one run per
    // (run, host); a point is stored once per run.
    "ALTER TABLE runs ADD COLUMN fleet_run TEXT;
    ALTER TABLE runs ADD COLUMN fleet_host TEXT;
    ALTER TABLE runs ADD COLUMN fleet_labels TEXT;
    CREATE UNIQUE INDEX runs_fleet ON runs(fleet_run, fleet_host) WHERE fleet_run IS NOT NULL;
    CREATE UNIQUE INDEX points_run_seq ON points(run_id, seq);",
];
