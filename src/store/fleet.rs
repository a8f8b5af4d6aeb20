//! A farm's runs in the store: a run a fleet engine names (`--run-id`, `--host-label`) is found
//! again by that name, taken up by the rerun where it stopped, and its failed points dropped so
//! the rerun measures them again. A point is stored once per run (a unique index on both
//! databases), so a rerun or an import never stores one twice.

use rusqlite::params;

use super::{Result, Store};
use crate::records::{Fleet, RunRow};
use crate::vocab::RunStatus;

/// A farm's run as the store holds it for one host: which points are stored and which failed.
#[derive(Clone, Debug)]
pub struct FleetRun {
    pub row: RunRow,
    /// Points stored with figures, by sequence number.
    pub measured: Vec<u32>,
    /// Points stored as failed, by sequence number.
    pub failed: Vec<u32>,
}

impl Store {
    /// The run of this farm run id on this host, if the store has it.
    pub fn fleet_run(&self, f: &Fleet) -> Result<Option<FleetRun>> {
        let Some(row) = self.runs()?.into_iter().find(|r| {
            r.fleet
                .as_ref()
                .is_some_and(|x| x.run == f.run && x.host == f.host)
        }) else {
            return Ok(None);
        };
        let (mut measured, mut failed) = (Vec::new(), Vec::new());
        for (_, p) in self.points(row.id)? {
            match p.error {
                Some(_) => failed.push(p.seq),
                None => measured.push(p.seq),
            }
        }
        Ok(Some(FleetRun {
            row,
            measured,
            failed,
        }))
    }

    /// Every host's run of one farm run id, by host label.
    pub fn farm_runs(&self, run: &str) -> Result<Vec<RunRow>> {
        let mut rows: Vec<RunRow> = self
            .runs()?
            .into_iter()
            .filter(|r| r.fleet.as_ref().is_some_and(|f| f.run == run))
            .collect();
        rows.sort_by_key(|r| r.host_label());
        Ok(rows)
    }

    /// Takes a run up again: running, by this process, not finished.
    pub fn resume_run(&self, run: i64) -> Result<()> {
        if let Some(p) = self.pg() {
            return p.resume_run(run);
        }
        self.conn()
            .execute(
                "UPDATE runs SET status = ?1, pid = ?2, finished_at = NULL WHERE id = ?3",
                params![RunStatus::Running.name(), std::process::id(), run],
            )
            .map_err(self.sql())?;
        Ok(())
    }

    /// Removes a run's failed points (with the rows that hang off them), so a rerun measures
    /// them again; how many.
    pub fn drop_failed_points(&self, run: i64) -> Result<usize> {
        let ids: Vec<i64> = self
            .points(run)?
            .into_iter()
            .filter(|(_, p)| p.error.is_some())
            .map(|(id, _)| id)
            .collect();
        if ids.is_empty() {
            return Ok(0);
        }
        if let Some(p) = self.pg() {
            return p.delete_points(run, &ids);
        }
        let e = self.sql();
        let tx = rusqlite::Transaction::new_unchecked(
            self.conn(),
            rusqlite::TransactionBehavior::Immediate,
        )
        .map_err(&e)?;
        let mut n = 0;
        for id in ids {
            for table in ["samples", "cpu_parts", "repeats"] {
                tx.execute(&format!("DELETE FROM {table} WHERE point_id = ?1"), [id])
                    .map_err(&e)?;
            }
            n += tx
                .execute(
                    "DELETE FROM points WHERE run_id = ?1 AND id = ?2",
                    [run, id],
                )
                .map_err(&e)?;
        }
        tx.commit().map_err(&e)?;
        Ok(n)
    }
}
