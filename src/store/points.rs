//! Storing and reading a run's points: one row per point (its key and median figures), its
//! repeats, per-interval samples and CPU parts in their own tables.

use rusqlite::{params, types::Type, Row};

use super::error::{Error, Result};
use super::Store;
use crate::records::measured::Measured;
use crate::records::{PointKey, PointRecord, Repeat, Repeats};
use crate::vocab::PartKind;

const POINT_COLS: &str = "seq, mode, guests, direction, test, message_bytes, socket_buffer, gro, tso, mtu, wire_rate, parallel, duration_s,
   repeat, throughput_gbps, transactions_per_s, latency_p50_us, latency_p99_us, host_busy_pct, machine_busy_pct,
   normalized_pct_per_gbps, sd_host, sd_send, sd_recv, spread, lab_facts, result, error, lro,
   client_busy_pct, bound_by, leak_pct, placed, host_cpus, client_cpus, load_bps, unstable, host_steal_pct,
   vdi_profile, interference, congestion, pacing, tcp_retransmits, unmeasurable, host_foreign_pct";

fn bad<E: Into<Box<dyn std::error::Error + Send + Sync>>>(i: usize, e: E) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(i, Type::Text, e.into())
}

/// A text column parsed into one of the vocabulary's enums.
fn parsed<T: std::str::FromStr<Err = crate::vocab::Error>>(
    r: &Row,
    i: usize,
) -> rusqlite::Result<T> {
    r.get::<_, String>(i)?.parse().map_err(|e| bad(i, e))
}

/// A JSON column read back; one that does not parse is an error, never a figure gone missing.
fn json<T: serde::de::DeserializeOwned>(r: &Row, i: usize) -> rusqlite::Result<Option<T>> {
    r.get::<_, Option<String>>(i)?
        .map(|s| serde_json::from_str(&s).map_err(|e| bad(i, e)))
        .transpose()
}

fn u64_of(v: Option<i64>) -> Option<u64> {
    v.map(|x| x as u64)
}

fn key_from(r: &Row) -> rusqlite::Result<PointKey> {
    Ok(PointKey {
        mode: parsed(r, 2)?,
        guests: r.get(3)?,
        direction: parsed(r, 4)?,
        test: parsed(r, 5)?,
        message_bytes: r.get::<_, i64>(6)? as u64,
        socket_buffer: u64_of(r.get(7)?),
        gro: parsed(r, 8)?,
        tso: r.get(9)?,
        lro: r.get(29)?,
        mtu: r.get(10)?,
        wire_rate: u64_of(r.get(11)?),
        parallel: r.get(12)?,
        load_bps: u64_of(r.get(36)?),
        profile: r.get(39)?,
        interference: r.get(40)?,
    })
}

/// A point row (id first, then `POINT_COLS`), without its samples, parts and repeats.
fn point_from(r: &Row) -> rusqlite::Result<(i64, PointRecord)> {
    let bound: Option<String> = r.get(31)?;
    let p = PointRecord {
        seq: r.get(1)?,
        key: key_from(r)?,
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
        spread: json(r, 25)?,
        lab_facts: json(r, 26)?,
        result: None,
        error: r.get(28)?,
        samples: vec![],
        parts: vec![],
        client_busy_pct: r.get(30)?,
        bound_by: bound
            .map(|b| b.parse().map_err(|e| bad(31, e)))
            .transpose()?,
        leak_pct: r.get(32)?,
        placed: r.get(33)?,
        host_cpus: r.get(34)?,
        client_cpus: r.get(35)?,
        wide: r.get(37)?,
        unmeasurable: r.get(44)?,
        host_foreign_pct: r.get(45)?,
        host_steal_pct: r.get(38)?,
        congestion: r.get(41)?,
        pacing: r
            .get::<_, Option<String>>(42)?
            .map(|x| x.parse().map_err(|e| bad(42, e)))
            .transpose()?,
        tcp_retransmits: r.get::<_, Option<i64>>(43)?.map(|v| v as u64),
        repeats: vec![],
        host: None,
    };
    Ok((r.get(0)?, p))
}

impl Store {
    /// Stores one point with its repeats, samples and CPU parts, in one transaction.
    pub fn add_point(&self, run: i64, p: &PointRecord) -> Result<i64> {
        if let Some(pg) = self.pg() {
            return pg.add_point(run, p);
        }
        let e = self.sql();
        let tx = rusqlite::Transaction::new_unchecked(
            self.conn(),
            rusqlite::TransactionBehavior::Immediate,
        )
        .map_err(&e)?;
        // The repeats have a table of their own: the spread column holds only the summary.
        let spread = p.spread.as_ref().map(|s| {
            serde_json::to_string(&Repeats {
                each: vec![],
                ..s.clone()
            })
            .unwrap_or_default()
        });
        let lab_facts = p
            .lab_facts
            .as_ref()
            .map(|f| serde_json::to_string(f).unwrap_or_default());
        let k = &p.key;
        let placeholders: Vec<String> = (1..=46).map(|i| format!("?{i}")).collect();
        tx.execute(
            &format!(
                "INSERT INTO points (run_id, {POINT_COLS}) VALUES ({})",
                placeholders.join(", ")
            ),
            params![
                run,
                p.seq,
                k.mode.to_string(),
                k.guests,
                k.direction.name(),
                k.test.to_string(),
                k.message_bytes as i64,
                k.socket_buffer.map(|v| v as i64),
                k.gro.name(),
                k.tso,
                k.mtu,
                k.wire_rate.map(|v| v as i64),
                k.parallel,
                p.duration_s,
                p.repeat,
                p.throughput_gbps,
                p.transactions_per_s,
                p.latency_p50_us,
                p.latency_p99_us,
                p.host_busy_pct,
                p.machine_busy_pct,
                p.normalized_pct_per_gbps,
                p.sd_host,
                p.sd_send,
                p.sd_recv,
                spread,
                lab_facts,
                p.result.as_ref().map(|m| m.encode()),
                p.error,
                k.lro,
                p.client_busy_pct,
                p.bound_by.as_ref().map(|b| b.to_string()),
                p.leak_pct,
                p.placed,
                p.host_cpus,
                p.client_cpus,
                k.load_bps.map(|v| v as i64),
                p.wide,
                p.host_steal_pct,
                k.profile,
                k.interference,
                p.congestion,
                p.pacing.map(|x| x.to_string()),
                p.tcp_retransmits.map(|v| v as i64),
                p.unmeasurable,
                p.host_foreign_pct
            ],
        )
        .map_err(&e)?;
        let id = tx.last_insert_rowid();
        Self::add_point_rows(&tx, id, p).map_err(&e)?;
        tx.commit().map_err(&e)?;
        Ok(id)
    }

    /// A point's repeats, samples and CPU parts, inside the point's transaction.
    fn add_point_rows(
        tx: &rusqlite::Transaction,
        id: i64,
        p: &PointRecord,
    ) -> rusqlite::Result<()> {
        let mut st = tx
.prepare_cached(
                "INSERT INTO repeats (point_id, rep, throughput_gbps, transactions_per_s, host_busy_pct, normalized_pct_per_gbps, bound_by, leak_pct, host_steal_pct, latency_p99_us, latency_p999_us, latency_max_us, movie_buffering_pct, movie_playing_pct, host_foreign_pct, host_meter_pm, unmeasurable)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        )?;
        for (n, r) in p.repeats.iter().enumerate() {
            let bound = r.bound_by.as_ref().map(|b| b.to_string());
            st.execute(params![
                id,
                n as i64 + 1,
                r.throughput_gbps,
                r.transactions_per_s,
                r.host_busy_pct,
                r.normalized_pct_per_gbps,
                bound,
                r.leak_pct,
                r.host_steal_pct,
                r.latency_p99_us,
                r.latency_p999_us,
                r.latency_max_us,
                r.movie_buffering_pct,
                r.movie_playing_pct,
                r.host_foreign_pct,
                r.host_meter_pm,
                r.unmeasurable
            ])?;
        }
        let mut st =
            tx.prepare_cached("INSERT INTO samples (point_id, t, gbps) VALUES (?1, ?2, ?3)")?;
        for (t, g) in &p.samples {
            st.execute(params![id, t, g])?;
        }
        let mut st = tx.prepare_cached("INSERT INTO cpu_parts (point_id, name, kind, busy_pct, cores) VALUES (?1, ?2, ?3, ?4, ?5)")?;
        for (n, kind, b, c) in &p.parts {
            st.execute(params![
                id,
                n,
                serde_json::to_value(kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string)),
                b,
                c
            ])?;
        }
        Ok(())
    }

    /// A run's points by sequence, each with its repeats, samples and CPU parts.
    pub fn points(&self, run: i64) -> Result<Vec<(i64, PointRecord)>> {
        if let Some(pg) = self.pg() {
            return pg.points(run);
        }
        let e = self.sql();
        let mut st = self
            .conn()
            .prepare(&format!(
                "SELECT id, {POINT_COLS} FROM points WHERE run_id = ?1 ORDER BY seq"
            ))
            .map_err(&e)?;
        let mut pts: Vec<(i64, PointRecord)> = st
            .query_map([run], point_from)
            .map_err(&e)?
            .collect::<rusqlite::Result<_>>()
            .map_err(&e)?;
        let index: std::collections::HashMap<i64, usize> = pts
            .iter()
            .enumerate()
            .map(|(i, (id, _))| (*id, i))
            .collect();
        // Parts, samples and repeats in one query each for the whole run, not one per point.
        let mut st = self
            .conn()
            .prepare("SELECT c.point_id, c.name, c.kind, c.busy_pct, c.cores FROM cpu_parts c JOIN points p ON p.id = c.point_id WHERE p.run_id = ?1")
            .map_err(&e)?;
        let parts = st.query_map([run], |r| {
            let kind: PartKind = serde_json::from_value(serde_json::Value::String(r.get(2)?))
                .map_err(|x| bad(2, x.to_string()))?;
            Ok((r.get::<_, i64>(0)?, (r.get(1)?, kind, r.get(3)?, r.get(4)?)))
        });
        for (id, part) in parts.map_err(&e)?.flatten() {
            if let Some(&i) = index.get(&id) {
                pts[i].1.parts.push(part);
            }
        }
        let mut st = self
            .conn()
            .prepare("SELECT s.point_id, s.t, s.gbps FROM samples s JOIN points p ON p.id = s.point_id WHERE p.run_id = ?1 ORDER BY s.rowid")
            .map_err(&e)?;
        for (id, t, g) in st
            .query_map([run], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, f64>(1)?,
                    r.get::<_, f64>(2)?,
                ))
            })
            .map_err(&e)?
            .flatten()
        {
            if let Some(&i) = index.get(&id) {
                pts[i].1.samples.push((t, g));
            }
        }
        for (id, rep) in self.repeats(run)? {
            if let Some(&i) = index.get(&id) {
                pts[i].1.repeats.push(rep);
            }
        }
        // Every point names the machine that measured it: its run's.
        let host: Option<String> = self
            .conn()
            .query_row("SELECT host FROM runs WHERE id = ?1", [run], |r| r.get(0))
            .map_err(&e)?;
        for (_, p) in &mut pts {
            p.host.clone_from(&host);
        }
        Ok(pts)
    }

    fn repeats(&self, run: i64) -> Result<Vec<(i64, Repeat)>> {
        let e = self.sql();
        let mut st = self
            .conn()
            .prepare(
                "SELECT r.point_id, r.throughput_gbps, r.transactions_per_s, r.host_busy_pct, r.normalized_pct_per_gbps, r.bound_by, r.leak_pct, r.host_steal_pct, r.latency_p99_us, r.latency_p999_us, r.latency_max_us, r.movie_buffering_pct, r.movie_playing_pct, r.host_foreign_pct, r.host_meter_pm, r.unmeasurable
                 FROM repeats r JOIN points p ON p.id = r.point_id WHERE p.run_id = ?1 ORDER BY r.point_id, r.rep",
            )
            .map_err(&e)?;
        let rows = st.query_map([run], |r| {
            let bound: Option<String> = r.get(5)?;
            Ok((
                r.get::<_, i64>(0)?,
                Repeat {
                    throughput_gbps: r.get(1)?,
                    transactions_per_s: r.get(2)?,
                    host_busy_pct: r.get(3)?,
                    normalized_pct_per_gbps: r.get(4)?,
                    bound_by: bound
                        .map(|b| b.parse().map_err(|x| bad(5, x)))
                        .transpose()?,
                    leak_pct: r.get(6)?,
                    host_steal_pct: r.get(7)?,
                    latency_p99_us: r.get(8)?,
                    latency_p999_us: r.get(9)?,
                    latency_max_us: r.get(10)?,
                    movie_buffering_pct: r.get(11)?,
                    movie_playing_pct: r.get(12)?,
                    host_foreign_pct: r.get(13)?,
                    host_meter_pm: r.get(14)?,
                    unmeasurable: r.get(15)?,
                },
            ))
        });
        let rows: rusqlite::Result<Vec<_>> = rows.map_err(&e)?.collect();
        rows.map_err(e)
    }

    /// A run's points by sequence, each with its whole stored result (for pages that draw a
    /// point across its window).
    pub fn points_whole(&self, run: i64) -> Result<Vec<PointRecord>> {
        self.points(run)?
            .into_iter()
            .map(|(id, mut p)| {
                p.result = self.point_result(id)?.map(Box::new);
                Ok(p)
            })
            .collect()
    }

    /// The stored full result of one point (the test's --json), read back as the one type it was
    /// written as; a document this build cannot read is an error naming the point.
    pub fn point_result(&self, point_id: i64) -> Result<Option<Measured>> {
        let (run, seq, text) = match self.pg() {
            Some(pg) => pg.point_result(point_id)?,
            None => self
                .conn()
                .query_row(
                    "SELECT run_id, seq, result FROM points WHERE id = ?1",
                    [point_id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, Option<String>>(2)?)),
                )
                .map_err(self.sql())?,
        };
        text.map(|t| Measured::decode(&t))
            .transpose()
            .map_err(|source| Error::BadResult {
                path: super::shown(&self.path),
                run,
                seq,
                source,
            })
    }
}
