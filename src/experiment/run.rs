//! The run loop: expands an experiment, builds each lab once, runs its points with the meter on,
//! stores every point as soon as it is measured, and removes the lab. Ctrl-C (or SIGTERM) stops
//! after the point under way, keeps the finished points, marks the run interrupted and removes the lab.

use super::matrix::{self, Point};
use super::Error;
use super::{facts, file};
use crate::measure::lab::Lab;
use crate::measure::{self, Measured, Target};
use crate::records::{LabFacts, PointKey, PointRecord, Repeat, Rounds};
use crate::store::Store;
use crate::vocab::RunStatus;

pub struct Outcome {
    pub run_id: i64,
    pub status: RunStatus,
    pub points_done: usize,
    pub points_failed: usize,
}

/// The point's identity (what was asked), without figures.
fn base(p: &Point) -> PointRecord {
    PointRecord {
        seq: p.seq,
        key: key(p),
        duration_s: p.spec.duration,
        repeat: p.repeat,
        ..Default::default()
    }
}

/// What a point asked for.
pub fn key(p: &Point) -> PointKey {
    PointKey {
        mode: p.lab.mode,
        guests: p.lab.guests,
        direction: p.direction,
        test: p.spec.test,
        message_bytes: if p.spec.test.is_rr() {
            p.spec.req as u64
        } else {
            p.spec.msg as u64
        },
        socket_buffer: p.spec.local_buf.map(|b| b as u64),
        gro: p.lab.gro,
        tso: p.lab.tso,
        lro: p.lab.lro,
        mtu: p.lab.mtu,
        wire_rate: p.lab.wire_rate,
        parallel: p.spec.parallel,
        load_bps: p.spec.rate,
        profile: p.spec.vdi.as_ref().map(|v| v.profile.clone()),
        interference: (!p.loads.is_empty()).then(|| {
            p.loads
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" + ")
        }),
    }
}

fn median(v: Vec<f64>) -> Option<f64> {
    (!v.is_empty()).then(|| crate::stats::spread(&v, 95).median)
}

fn largest(v: impl Iterator<Item = f64>) -> Option<f64> {
    v.fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))))
}

/// Turns a measured point into the store's plain record: each figure is its median over the
/// repeats (min–max in the spread), every repeat is kept, and the point counts as bound if any
/// repeat was.
pub fn record(p: &Point, m: &Measured, lab_facts: &LabFacts) -> PointRecord {
    let c = m.cpu.as_ref();
    let sd = c.and_then(|c| {
        c.service_demand_us_per_kb
            .as_ref()
            .or(c.service_demand_us_per_tran.as_ref())
    });
    let r = m.repeats.as_ref();
    let each: Vec<Repeat> = r.map(|r| r.each.clone()).unwrap_or_default();
    let over = |f: fn(&Repeat) -> Option<f64>| median(each.iter().filter_map(f).collect());
    let bound_by = match r {
        Some(_) => each.iter().find_map(|x| x.bound_by),
        None => c.and_then(|c| c.bound_by),
    };
    PointRecord {
        throughput_gbps: over(|x| Some(x.throughput_gbps)).or(Some(m.result.throughput_gbps)),
        transactions_per_s: over(|x| x.transactions_per_s).or(m.result.transactions_per_s),
        latency_p50_us: m.result.latency_us.as_ref().map(|l| l.p50),
        latency_p99_us: m.result.latency_us.as_ref().map(|l| l.p99),
        host_busy_pct: over(|x| x.host_busy_pct).or(c.map(|c| c.host_busy_pct)),
        machine_busy_pct: c.map(|c| c.machine_busy_pct),
        normalized_pct_per_gbps: over(|x| x.normalized_pct_per_gbps)
            .or(c.and_then(|c| c.normalized_pct_per_gbps)),
        client_busy_pct: c.and_then(|c| c.client_busy_pct),
        bound_by,
        leak_pct: largest(each.iter().filter_map(|x| x.leak_pct)).or(c.and_then(|c| c.leak_pct)),
        placed: m.cpus.as_ref().map(|x| x.placed),
        host_cpus: m.cpus.as_ref().map(|x| x.host.to_string()),
        client_cpus: m.cpus.as_ref().map(|x| x.client.to_string()),
        unstable: r.map(|r| r.unstable),
        congestion: m.result.congestion.as_ref().map(|c| c.to_string()),
        pacing: p.spec.rate.map(|_| p.spec.pacing),
        tcp_retransmits: m.result.tcp_retransmits,
        host_steal_pct: largest(each.iter().filter_map(|x| x.host_steal_pct))
            .or(c.map(|c| c.host_steal_pct)),
        repeats: each.clone(),
        sd_host: sd.map(|d| d.host),
        sd_send: sd.map(|d| d.send),
        sd_recv: sd.map(|d| d.recv),
        spread: r.cloned(),
        lab_facts: Some(lab_facts.clone()),
        result: Some(Box::new(m.clone())),
        samples: m.result.intervals.iter().map(|i| (i.t, i.gbps)).collect(),
        parts: c
            .map(|c| {
                c.parts
                    .iter()
                    .filter(|p| p.side == crate::vocab::Side::Host)
                    .map(|p| (p.name.clone(), p.kind, p.busy_pct, p.cores))
                    .collect()
            })
            .unwrap_or_default(),
        ..base(p)
    }
}

fn failed_record(p: &Point, error: &str) -> PointRecord {
    PointRecord {
        error: Some(error.to_string()),
        ..base(p)
    }
}

/// The most names a run tries before giving up on finding a free one.
/// Builds the lab for `cfg` under the first free name `x1`, `x2`, … (over the run's site, when
/// it has one) and, where the matrix names one, the other guest's lab beside it.
fn build_labs(cfg: &matrix::LabConfig, site: Option<&Site>) -> Result<Lab, crate::lab::Error> {
    Lab::build_free("x", |name| {
        let mut t = cfg.topology(name);
        if let Some(site) = site {
            t.uplink = Some(site.uplink.clone());
            t.client = Some(site.client.clone());
            t.force_uplink = site.force_uplink;
        }
        t
    })?
    .with_other(|name| cfg.other_topology(name))
}

/// A parsed experiment: its text (stored with the run), the file and its points.
pub struct Loaded {
    pub text: String,
    pub file: file::ExperimentFile,
    pub points: Vec<Point>,
    /// Two machines: every lab of the run takes this uplink and reaches this client machine.
    pub site: Option<Site>,
}

/// Where a run's client is when it is another machine: the interface that is the wire's host
/// end and the `vnetlab serve` beyond it (`run`/`reproduce --uplink … --client …`).
#[derive(Clone, Debug)]
pub struct Site {
    pub uplink: String,
    pub client: crate::lab::topology::RemoteClient,
    pub force_uplink: bool,
}

impl Site {
    /// Where the client was, as the stored run's description ends and its text begins.
    pub fn describe(&self) -> String {
        format!(
            "over uplink {} to the client machine {}:{}",
            self.uplink, self.client.address, self.client.port
        )
    }

    /// Marks a loaded experiment as run over this site: its stored text and description say so.
    pub fn mark(&self, loaded: &mut Loaded) {
        let d = self.describe();
        loaded.text = format!("# run {d}\n{}", loaded.text);
        loaded.file.description = match loaded.file.description.as_str() {
            "" => format!("run {d}"),
            was => format!("{was} (run {d})"),
        };
    }
}

/// The labs of a run in the order they are built: each range is a run of points that share one
/// lab configuration, and the whole list is gone through `rounds` times (A B C, A B C, …), every
/// time in a lab built anew, so a point's repeats come from `rounds` labs spread over the run.
pub fn schedule(points: &[Point], rounds: u32) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let n = points[i..]
            .iter()
            .take_while(|p| p.lab == points[i].lab)
            .count();
        groups.push(i..i + n);
        i += n;
    }
    let rounds = rounds.max(1) as usize;
    groups
        .iter()
        .cycle()
        .take(groups.len() * rounds)
        .cloned()
        .collect()
}

/// What a run holds of each point between its rounds: the runs measured so far, the facts of the
/// last lab it ran in, and whether it is stored yet.
#[derive(Default)]
struct Gathered {
    runs: Vec<Measured>,
    facts: Option<LabFacts>,
    stored: Option<Stored>,
}

/// How a point was stored.
#[derive(Clone, Copy, PartialEq)]
enum Stored {
    Measured,
    Failed,
}

/// The run's progress: measurements done of all, and the ETA scaled by how long they took.
struct Pace {
    estimates: Vec<f64>,
    done: usize,
    est_done: f64,
    spent: f64,
}

impl Pace {
    fn left(&self) -> f64 {
        let left: f64 = self.estimates[self.done.min(self.estimates.len())..]
            .iter()
            .sum();
        if self.est_done > 0.0 {
            left * self.spent / self.est_done
        } else {
            left
        }
    }
    fn step(&mut self, took: Option<f64>) {
        if let Some(t) = took {
            self.est_done += self.estimates.get(self.done).copied().unwrap_or(0.0);
            self.spent += t;
        }
        self.done += 1;
    }
}

/// Runs an experiment into the store. `progress` gets (measurements done, total, seconds left,
/// what). With `rounds` above 1 every lab is built that many times, in turn, and a point is stored
/// once its last round is measured. SIGINT/SIGTERM (or a closed output) stop it after the point
/// under way (at once on a second Ctrl-C): the points measured so far are kept (with the rounds
/// they had), the run is marked interrupted and the lab removed.
pub fn run_experiment(
    exp: &Loaded,
    store: &Store,
    progress: &mut dyn FnMut(usize, usize, f64, &str),
) -> Result<Outcome, Error> {
    let points = &exp.points;
    let hash = sha256_hex(exp.text.as_bytes());
    crate::sys::signals::install();
    let stopping = crate::sys::signals::stop_requested;
    let run_id = store
        .begin_run(
            &exp.file.name,
            &exp.file.description,
            &exp.text,
            &hash,
            &facts::host(),
            points.len() as u32,
        )
        .map_err(|e| Error::Failed(e.to_string()))?;
    let rounds = exp.file.point.rounds.max(1);
    let plan = schedule(points, rounds);
    let mut pace = Pace {
        estimates: plan
            .iter()
            .flat_map(|g| points[g.clone()].iter().map(matrix::estimate_round_s))
            .collect(),
        done: 0,
        est_done: 0.0,
        spent: 0.0,
    };
    let total = pace.estimates.len();
    let mut got: Vec<Gathered> = points.iter().map(|_| Gathered::default()).collect();
    let mut result: Result<(), Error> = Ok(());
    for (k, g) in plan.iter().enumerate() {
        if stopping() {
            break;
        }
        let last_round = k >= plan.len() - plan.len() / rounds as usize;
        let mut lab = LabRound {
            exp,
            store,
            run_id,
            points: &points[g.clone()],
            got: &mut got[g.clone()],
            last_round,
        };
        match lab.run(&mut pace, progress, total) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    // Interrupted between rounds: what was measured is kept, with the rounds it had.
    for (p, g) in points.iter().zip(got.iter_mut()) {
        if g.stored.is_none() && !g.runs.is_empty() {
            store_gathered(store, run_id, p, g)?;
        }
    }
    let status = if result.is_err() {
        RunStatus::Failed
    } else if stopping() {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    store
        .finish_run(run_id, status)
        .map_err(|e| Error::Failed(e.to_string()))?;
    progress(pace.done, total, 0.0, status.name());
    result.map(|_| Outcome {
        run_id,
        status,
        points_done: got.iter().filter(|g| g.stored.is_some()).count(),
        points_failed: got
            .iter()
            .filter(|g| g.stored == Some(Stored::Failed))
            .count(),
    })
}

/// Stores a point from all its rounds' runs: one record, every repeat kept.
fn store_gathered(store: &Store, run_id: i64, p: &Point, g: &mut Gathered) -> Result<(), Error> {
    let n = g.runs.len() as u32;
    let Some(mut m) = measure::combined(std::mem::take(&mut g.runs), 95, None) else {
        return Ok(());
    };
    // Every round gave its repeats (a point cut short between rounds has fewer: no pairing).
    if let Some(r) = m.repeats.as_mut() {
        let count = p.rounds.max(1);
        r.rounds = (count > 1 && n == count * p.repeat).then_some(Rounds { count, run: run_id });
    }
    let facts = g.facts.clone().unwrap_or_default();
    let rec = PointRecord {
        repeat: n,
        ..record(p, &m, &facts)
    };
    store.add_point(run_id, &rec)?;
    g.stored = Some(Stored::Measured);
    Ok(())
}

/// One lab of one round: built, its points measured, removed.
struct LabRound<'a> {
    exp: &'a Loaded,
    store: &'a Store,
    run_id: i64,
    points: &'a [Point],
    got: &'a mut [Gathered],
    last_round: bool,
}

impl LabRound<'_> {
    /// Ok(false) when the run stops (interrupted during the build or a point).
    fn run(
        &mut self,
        pace: &mut Pace,
        progress: &mut dyn FnMut(usize, usize, f64, &str),
        total: usize,
    ) -> Result<bool, Error> {
        let cfg = &self.points[0].lab;
        progress(
            pace.done,
            total,
            pace.left(),
            &format!("building {} lab", cfg.mode),
        );
        let built = match build_labs(cfg, self.exp.site.as_ref()) {
            Ok(x) => x,
            Err(crate::lab::Error::Interrupted(_)) => return Ok(false),
            // The build removed what it made: its points fail with its reason, the rest go on
            // (one datapath the host cannot build does not cost the others their measurements).
            Err(e) => {
                let why = format!("building the {} lab failed: {e}", cfg.mode);
                for (p, g) in self.points.iter().zip(self.got.iter_mut()) {
                    fail(self.store, self.run_id, p, g, &why)?;
                    pace.step(None);
                }
                return Ok(true);
            }
        };
        let went_on = self.measure(&built, pace, progress, total);
        built.remove()?;
        went_on
    }

    fn measure(
        &mut self,
        built: &Lab,
        pace: &mut Pace,
        progress: &mut dyn FnMut(usize, usize, f64, &str),
        total: usize,
    ) -> Result<bool, Error> {
        let lab_facts = facts::lab(built.name());
        for (p, g) in self.points.iter().zip(self.got.iter_mut()) {
            if crate::sys::signals::stop_requested() {
                return Ok(false);
            }
            if g.stored.is_some() {
                pace.step(None);
                continue;
            }
            progress(pace.done, total, pace.left(), &matrix::describe(p));
            let (from, to) = p.direction.endpoints();
            let target = Target::Lab {
                rec: Box::new(built.record().clone()),
                from,
                to,
                loads: p.loads.clone(),
                other: built.other().map(|o| Box::new(o.clone())),
            };
            let t0 = std::time::Instant::now();
            match measure::repeats(
                &target,
                &p.spec,
                &measure::source::Engine,
                p.repeat,
                None,
                &|_, _| {},
            ) {
                Ok((runs, _)) => {
                    g.runs.extend(runs);
                    g.facts = Some(lab_facts.clone());
                    if self.last_round {
                        store_gathered(self.store, self.run_id, p, g)?;
                    }
                }
                // An interrupted point is not a failed one: it is not stored (its earlier
                // rounds are).
                Err(_) if crate::sys::signals::stop_requested() => return Ok(false),
                Err(e) => fail(self.store, self.run_id, p, g, &e.to_string())?,
            }
            pace.step(Some(t0.elapsed().as_secs_f64()));
        }
        Ok(true)
    }
}

/// A point that failed in any round failed: stored with why, its other rounds dropped.
fn fail(store: &Store, run_id: i64, p: &Point, g: &mut Gathered, why: &str) -> Result<(), Error> {
    if g.stored.is_none() {
        store.add_point(run_id, &failed_record(p, why))?;
        (g.runs, g.stored) = (Vec::new(), Some(Stored::Failed));
    }
    Ok(())
}

/// SHA-256 of the experiment text (so runs of the same file can be matched).
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(rounds: u32) -> Vec<Point> {
        let text = format!(
            "name = \"r\"\ndescription = \"d\"\n[matrix]\nmodes = [\"bridge\", \"macvlan\"]\nmessages = [\"1K\", \"8K\"]\n[point]\nrepeat = 2\nrounds = {rounds}\n"
        );
        let f = file::parse(&text, "r.toml").unwrap();
        let mut pts = matrix::expand(&f);
        for (i, p) in pts.iter_mut().enumerate() {
            p.seq = i as u32 + 1;
        }
        pts
    }

    #[test]
    fn rounds_go_through_every_lab_in_turn_each_in_a_fresh_build() {
        let pts = points(3);
        let plan = schedule(&pts, 3);
        // Two labs (bridge, macvlan) of two points each, three times over: A B A B A B.
        assert_eq!(plan, vec![0..2, 2..4, 0..2, 2..4, 0..2, 2..4]);
        let modes: Vec<_> = plan.iter().map(|g| pts[g.start].lab.mode).collect();
        assert_ne!(modes[0], modes[1]);
        assert_eq!(modes[0], modes[2]);
        assert!(plan
            .iter()
            .all(|g| pts[g.clone()].iter().all(|p| p.lab == pts[g.start].lab)));
        // One round is the run as it always was: each lab once.
        assert_eq!(schedule(&pts, 1), vec![0..2, 2..4]);
        assert!(schedule(&[], 3).is_empty());
    }

    #[test]
    fn a_point_estimate_counts_its_rounds() {
        let one = matrix::estimate_s(&points(1)[0]);
        let three = matrix::estimate_s(&points(3)[0]);
        assert!((three - 3.0 * one).abs() < 1e-9, "{one} {three}");
    }
}
