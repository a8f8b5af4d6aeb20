//! Sends a spool's points to the store, each once: a run the store lacks is made from its
//! spooled document (its facts, text and start kept); a point the store has (by run and
//! sequence) is left; how a run ended is written only where the store does not already know.

use std::collections::HashSet;
use std::path::Path;

use super::spool::{self, Spooled};
use super::Error;
use crate::records::PointRecord;
use crate::store::{NewRun, Store};
use crate::vocab::RunStatus;

/// What an import did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Imported {
    /// Runs read from the spool.
    pub runs: usize,
    /// Runs the store did not have and now has.
    pub made: usize,
    /// Points sent.
    pub sent: usize,
    /// Points the store already had.
    pub already: usize,
}

/// Imports every run of a spool folder.
pub fn import(root: &Path, store: &Store) -> Result<Imported, Error> {
    let mut tally = Imported::default();
    for sp in spool::read(root)? {
        let t = import_run(&sp, store)?;
        tally.runs += 1;
        tally.made += t.made;
        tally.sent += t.sent;
        tally.already += t.already;
    }
    Ok(tally)
}

/// A point's rounds say which run they were measured in: the store's id of that run.
fn renumber(p: &mut PointRecord, run: i64) {
    if let Some(r) = p.spread.as_mut().and_then(|s| s.rounds.as_mut()) {
        r.run = run;
    }
    if let Some(r) = p
        .result
        .as_mut()
        .and_then(|m| m.repeats.as_mut())
        .and_then(|s| s.rounds.as_mut())
    {
        r.run = run;
    }
}

/// Imports one spooled run.
pub fn import_run(sp: &Spooled, store: &Store) -> Result<Imported, Error> {
    let r = &sp.run;
    let mut tally = Imported::default();
    let found = match store.fleet_run(&r.fleet)? {
        Some(found) => found,
        None => {
            store.begin_run(&NewRun {
                name: &r.name,
                description: &r.description,
                text: &r.text,
                hash: &r.hash,
                facts: &r.facts,
                planned: r.planned,
                fleet: Some(&r.fleet),
                started_at: Some(&r.started_at),
            })?;
            tally.made = 1;
            store.fleet_run(&r.fleet)?.ok_or_else(|| {
                Error::Spool(format!(
                    "run {} of {} was made in the store and is not found there",
                    r.fleet.run, r.fleet.host
                ))
            })?
        }
    };
    if found.row.experiment_hash != r.hash {
        return Err(Error::Input(format!(
            "{}: run {} of host {} is in the store with another experiment: import it into another store, or run it again under a new --run-id",
            sp.dir.display(),
            r.fleet.run,
            r.fleet.host
        )));
    }
    let have: HashSet<u32> = found
        .measured
        .iter()
        .chain(&found.failed)
        .copied()
        .collect();
    for p in &sp.points {
        if have.contains(&p.seq) {
            tally.already += 1;
            continue;
        }
        let mut p = p.clone();
        renumber(&mut p, found.row.id);
        store.add_point(found.row.id, &p)?;
        tally.sent += 1;
    }
    // The store's word on how the run ended stands unless the run is still open there and no
    // process is running it (a run the store saw begin and the spool saw end).
    let open = matches!(found.row.status, RunStatus::Running | RunStatus::Incomplete);
    if open && (tally.made == 1 || found.row.status == RunStatus::Incomplete) {
        let status = sp.end.as_ref().map_or(RunStatus::Incomplete, |(s, _)| *s);
        store.finish_run(found.row.id, status)?;
    }
    Ok(tally)
}
