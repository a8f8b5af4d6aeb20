//! The farm's commands and `run`'s farm steps: the names a fleet engine gives a run, the checks
//! before it (the host's datapaths, its lock, the labs an interrupted try left), what it says
//! when the store was away, and `import`, which sends a spool to the store.

use clap::Args;
use std::path::PathBuf;

use super::fail::{CmdResult, Fail};
use super::shared::DbArgs;
use crate::experiment::outlet::Outlet;
use crate::experiment::run as erun;
use crate::records::Fleet;

/// Where a PostgreSQL store's farm runs spool unless told otherwise: it outlives a reboot.
pub const DEFAULT_SPOOL: &str = "/var/lib/vnetlab/spool";

/// A farm's run: the names a fleet engine (Ansible, a Kubernetes Job) gives it, and its spool.
#[derive(Args, Clone, Debug, Default)]
pub struct FarmArgs {
    /// The farm's run id, the same on every host (e.g. from the inventory). The run becomes
    /// idempotent: run again, it skips the points stored under (this id, this host), measures
    /// the failed and missing ones, and removes labs an interrupted try left. Exit codes: 0
    /// done, 1 failed, 2 usage, 3 some points failed, 4 host skipped (it lacks a datapath the
    /// experiment needs), 5 store unreachable (points in the spool), 6 another run holds this
    /// host, 130 interrupted
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// This host's name in the farm [default: the machine's hostname]
    #[arg(long, value_name = "NAME", requires = "run_id")]
    pub host_label: Option<String>,
    /// A label of this host's run, KEY=VALUE (repeatable, e.g. --label rack=r12)
    #[arg(long, value_name = "KEY=VALUE", requires = "run_id")]
    pub label: Vec<String>,
    /// Write each finished point to this folder, atomically, before it is sent to the store;
    /// a store that drops out leaves the run going into it (`vnetlab import DIR` sends it later)
    /// [default with --store and --run-id: /var/lib/vnetlab/spool]
    #[arg(long, value_name = "DIR", requires = "run_id")]
    pub spool: Option<PathBuf>,
    /// No spool, even for a PostgreSQL store
    #[arg(long, conflicts_with = "spool", requires = "run_id")]
    pub no_spool: bool,
    /// Wait up to this many seconds for another measurement that holds this machine (one at a
    /// time per machine, whatever its state folder; VNETLAB_LOCK_WAIT does the same for every
    /// measuring command) [default: 0, refused at once with exit 6]
    #[arg(long, value_name = "SECONDS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub wait: u64,
}

impl FarmArgs {
    /// The farm identity asked for, checked; None for a plain run.
    pub fn fleet(&self) -> Result<Option<Fleet>, Fail> {
        let Some(run) = &self.run_id else {
            return Ok(None);
        };
        let host = self
            .host_label
            .clone()
            .unwrap_or_else(crate::store::pg::hostname);
        Ok(Some(crate::fleet::fleet(run, &host, &self.label)?))
    }

    /// Where the run spools: `--spool`, else the default for a PostgreSQL store's farm run.
    pub fn spool_root(&self, db: &DbArgs) -> Option<PathBuf> {
        if self.run_id.is_none() || self.no_spool {
            return None;
        }
        self.spool
            .clone()
            .or_else(|| db.store.as_ref().map(|_| PathBuf::from(DEFAULT_SPOOL)))
    }
}

/// Before a farm's run (which holds the machine lock): the host has every datapath the
/// experiment builds (else it is skipped), and the labs an interrupted try left are removed.
pub fn prepare(loaded: &erun::Loaded, f: &Fleet) -> Result<(), Fail> {
    let mut modes: Vec<crate::vocab::Mode> = loaded
        .points
        .iter()
        .flat_map(|p| [Some(p.lab.mode), p.lab.other])
        .flatten()
        .collect();
    modes.sort_by_key(|m| m.to_string());
    modes.dedup();
    if let Some(why) = modes.iter().find_map(|m| crate::lab::lacks(*m)) {
        return Err(Fail::Skipped(format!(
            "host {} skipped, nothing run: {why}",
            f.host
        )));
    }
    let (removed, errors) = crate::lab::owned::remove_abandoned();
    for lab in removed {
        crate::errln!("vnetlab: removed lab {lab}, left by an interrupted run");
    }
    if !errors.is_empty() {
        return Err(Fail::Run(format!(
            "labs an interrupted run left could not be removed: {}; see `vnetlab cleanup --dry-run`",
            errors.join("; ")
        )));
    }
    Ok(())
}

/// Says what a farm's run takes up from an earlier try.
pub fn say_taken_up(o: &Outlet, json: bool) {
    if json || o.fleet.is_none() {
        return;
    }
    if !o.done_before.is_empty() || o.retried > 0 || o.sent_late > 0 {
        crate::errln!(
            "vnetlab: taking up run {}: {} points done before are skipped, {} failed ones measured again, {} spooled ones sent now",
            o.run_id,
            o.done_before.len(),
            o.retried,
            o.sent_late
        );
    }
}

/// A run that ended while its store was away: where its points are and how to send them.
pub fn store_away(o: &erun::Outcome, why: Option<&str>, db: &DbArgs) -> Fail {
    let spool = o
        .delivery
        .spool
        .as_ref()
        .and_then(|d| d.parent())
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    Fail::StoreAway(format!(
        "the store {} was away ({}): the run ended {} with its {} points kept in the spool {spool}; send them with `vnetlab import {spool} --store URL`",
        db.shown(),
        crate::text::clip(why.unwrap_or("unreachable")),
        o.status,
        o.points_done
    ))
}

#[derive(Args)]
pub struct ImportArgs {
    /// The spool folder a farm's run wrote (`run --spool DIR`, /var/lib/vnetlab/spool by default)
    dir: PathBuf,
    #[command(flatten)]
    db: DbArgs,
    /// Make the store in --db even if it is an existing empty file
    #[arg(long)]
    create: bool,
}

/// `vnetlab import DIR`: sends what a spool holds and the store does not, each point once.
pub fn import(a: ImportArgs) -> CmdResult {
    let spooled = crate::fleet::spool::read(&a.dir)?;
    if spooled.is_empty() {
        return Err(Fail::Input(format!(
            "{} holds no spooled run (a folder with run.json): give the folder `run --spool` wrote",
            a.dir.display()
        )));
    }
    let store = a.db.write(a.create)?;
    let mut total = crate::fleet::import::Imported::default();
    for sp in &spooled {
        let t = crate::fleet::import::import_run(sp, &store)?;
        crate::outln!(
            "{} on {}: {} points sent, {} already stored{}",
            sp.run.fleet.run,
            sp.run.fleet.host,
            t.sent,
            t.already,
            if t.made == 1 {
                " (run made in the store)"
            } else {
                ""
            }
        );
        total.sent += t.sent;
        total.already += t.already;
    }
    crate::outln!(
        "imported {} runs into {}: {} points sent, {} already there",
        spooled.len(),
        a.db.shown(),
        total.sent,
        total.already
    );
    Ok(())
}

/// Every host's run of a farm run id, with its points.
pub fn farm_runs(
    store: &crate::store::Store,
    run: &str,
) -> Result<Vec<(crate::records::RunRow, Vec<crate::records::PointRecord>)>, Fail> {
    crate::fleet::fleet(run, "h", &[])?;
    let mut runs = Vec::new();
    for r in store.farm_runs(run)? {
        let pts = store.points(r.id)?.into_iter().map(|(_, p)| p).collect();
        runs.push((r, pts));
    }
    Ok(runs)
}
