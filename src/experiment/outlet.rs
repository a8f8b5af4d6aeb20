//! Where a run's points go: the store, and before it the spool where one is asked for. A farm's
//! run (`--run-id`) is found again in the store by its name and taken up where it stopped: its
//! measured points are skipped, its failed ones dropped and measured again. A store that cannot
//! be reached, at the start or midway, leaves the run going into its spool alone.

use std::cell::RefCell;
use std::path::PathBuf;

use super::Error;
use crate::fleet::spool::{self, Spool, Spooled, SpooledRun};
use crate::records::{Fleet, HostFacts, PointRecord};
use crate::store::{NewRun, Store};
use crate::vocab::RunStatus;

/// What a run is, as its outlet begins it.
pub struct Begin<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub text: &'a str,
    pub hash: &'a str,
    pub facts: HostFacts,
    pub planned: u32,
}

/// A run's points on their way out.
pub struct Outlet<'a> {
    store: Option<&'a Store>,
    spool: Option<Spool>,
    pub fleet: Option<Fleet>,
    /// The run's id in the store (0 when the store was away from the start).
    pub run_id: i64,
    /// Points stored (or spooled) before this process began: a rerun skips them.
    pub done_before: Vec<u32>,
    /// Failed points of an earlier try, dropped to be measured again.
    pub retried: usize,
    /// Points an earlier try spooled while the store was away, sent now.
    pub sent_late: usize,
    /// Why the store went away, if it did.
    away: RefCell<Option<String>>,
}

/// How a run's points left.
pub struct Delivery {
    /// Where the spool is, if there is one.
    pub spool: Option<PathBuf>,
    /// Why the store could not take the run's points (they are in the spool).
    pub store_away: Option<String>,
}

impl<'a> Outlet<'a> {
    /// Begins (or, for a farm's run the store has, takes up) the run. `store` is Err with why
    /// when it could not be reached; that is an error unless there is a spool.
    pub fn begin(
        b: Begin,
        store: Result<&'a Store, String>,
        spool_root: Option<PathBuf>,
        fleet: Option<Fleet>,
    ) -> Result<Outlet<'a>, Error> {
        let (store, away) = match store {
            Ok(s) => (Some(s), None),
            Err(why) if spool_root.is_some() && fleet.is_some() => (None, Some(why)),
            Err(why) => return Err(Error::Failed(why)),
        };
        // The spool, and what an earlier try of the run left in it (read once).
        let (spool, earlier) = match (&spool_root, &fleet) {
            (Some(root), Some(f)) => {
                let (s, earlier) = open_spool(root, f, &b)?;
                (Some(s), earlier)
            }
            _ => (None, None),
        };
        let mut o = Outlet {
            store,
            spool,
            fleet,
            run_id: 0,
            done_before: vec![],
            retried: 0,
            sent_late: 0,
            away: RefCell::new(away),
        };
        if let Some(earlier) = &earlier {
            // What an earlier try spooled is done, whether or not the store has it.
            o.done_before = earlier
                .points
                .iter()
                .filter(|p| p.error.is_none())
                .map(|p| p.seq)
                .collect();
        }
        if let Some(store) = o.store {
            if let Err(e) = o.begin_in(store, &b, earlier.as_ref()) {
                o.went_away(e)?;
            }
        }
        o.done_before.sort_unstable();
        o.done_before.dedup();
        Ok(o)
    }

    /// The run's row in the store: a farm's run found again (its spooled points sent, its failed
    /// ones dropped), else a new one.
    fn begin_in(
        &mut self,
        store: &Store,
        b: &Begin,
        earlier: Option<&Spooled>,
    ) -> Result<(), Error> {
        let new = NewRun {
            name: b.name,
            description: b.description,
            text: b.text,
            hash: b.hash,
            facts: &b.facts,
            planned: b.planned,
            fleet: self.fleet.as_ref(),
            started_at: None,
        };
        let Some(f) = self.fleet.clone() else {
            self.run_id = store.begin_run(&new)?;
            return Ok(());
        };
        if let Some(earlier) = earlier {
            self.sent_late = crate::fleet::import::import_run(earlier, store)
                .map_err(fleet_err)?
                .sent;
        }
        match store.fleet_run(&f)? {
            Some(found) => {
                if found.row.experiment_hash != b.hash {
                    return Err(Error::Input(format!(
                        "run {} of host {} is in the store with another experiment (run {}): give this experiment a new --run-id",
                        f.run, f.host, found.row.id
                    )));
                }
                self.run_id = found.row.id;
                self.retried = store.drop_failed_points(found.row.id)?;
                store.resume_run(found.row.id)?;
                self.done_before.extend(found.measured);
            }
            None => self.run_id = store.begin_run(&new)?,
        }
        Ok(())
    }

    /// The store failed: with a spool the run goes on into it; without one it stops. A wrong
    /// input is never taken for an absent store.
    fn went_away(&self, e: Error) -> Result<(), Error> {
        match e {
            Error::Input(_) => Err(e),
            Error::Store(s) if s.is_bad_input() => Err(Error::Store(s)),
            e if self.spool.is_some() => {
                crate::errln!(
                    "vnetlab: the store is away ({e}): the run goes on into its spool {}",
                    self.spool
                        .as_ref()
                        .map(|s| s.dir.display().to_string())
                        .unwrap_or_default()
                );
                *self.away.borrow_mut() = Some(e.to_string());
                Ok(())
            }
            e => Err(e),
        }
    }

    /// Whether the store still takes points.
    fn store_here(&self) -> Option<&Store> {
        self.store.filter(|_| self.away.borrow().is_none())
    }

    /// Keeps a finished point: in the spool first, then in the store.
    pub fn add(&self, p: &PointRecord) -> Result<(), Error> {
        if let Some(s) = &self.spool {
            s.point(p).map_err(fleet_err)?;
        }
        if let Some(store) = self.store_here() {
            if let Err(e) = store.add_point(self.run_id, p) {
                self.went_away(e.into())?;
            }
        }
        Ok(())
    }

    /// Ends the run: its status in the spool and the store.
    pub fn finish(&self, status: RunStatus) -> Result<Delivery, Error> {
        if let Some(s) = &self.spool {
            let at = jiff::Timestamp::now()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string();
            s.end(status, &at).map_err(fleet_err)?;
        }
        if let Some(store) = self.store_here() {
            if let Err(e) = store.finish_run(self.run_id, status) {
                self.went_away(e.into())?;
            }
        }
        Ok(Delivery {
            spool: self.spool.as_ref().map(|s| s.dir.clone()),
            store_away: self.away.borrow().clone(),
        })
    }
}

fn fleet_err(e: crate::fleet::Error) -> Error {
    match e {
        crate::fleet::Error::Input(m) => Error::Input(m),
        crate::fleet::Error::Store(s) => Error::Store(s),
        e => Error::Failed(e.to_string()),
    }
}

/// The run's spool folder, its run document written, and what an earlier try left in it.
fn open_spool(
    root: &std::path::Path,
    f: &Fleet,
    b: &Begin,
) -> Result<(Spool, Option<Spooled>), Error> {
    let doc = SpooledRun {
        version: spool::VERSION,
        fleet: f.clone(),
        name: b.name.into(),
        description: b.description.into(),
        text: b.text.into(),
        hash: b.hash.into(),
        facts: b.facts.clone(),
        planned: b.planned,
        started_at: jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string(),
    };
    let dir = spool::run_dir(root, f);
    if dir.join("run.json").is_file() {
        let earlier = spool::read_run(&dir).map_err(fleet_err)?;
        let was = &earlier.run;
        if was.hash != doc.hash {
            return Err(Error::Input(format!(
                "{} holds run {} of host {} with another experiment: give this experiment a new --run-id",
                dir.display(),
                f.run,
                f.host
            )));
        }
        // Taken up again: the run keeps its first start.
        let spool = Spool::open(
            root,
            &SpooledRun {
                started_at: was.started_at.clone(),
                ..doc
            },
        )
        .map_err(fleet_err)?;
        return Ok((spool, Some(earlier)));
    }
    Ok((Spool::open(root, &doc).map_err(fleet_err)?, None))
}
