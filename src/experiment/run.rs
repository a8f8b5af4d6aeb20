//! The run loop: expands an experiment, builds each lab once, runs its points with the meter on,
//! stores every point as soon as it is measured, and removes the lab. Ctrl-C (or SIGTERM) stops
//! after the point under way, keeps the finished points, marks the run interrupted and removes the lab.

use super::matrix::{self, Point};
use super::outlet::{Begin, Delivery, Outlet};
use super::Error;
use super::{facts, file};
use crate::lab::owned::Lab;
use crate::measure::{self, Measured, Target};
use crate::records::{Fleet, LabFacts, PointKey, PointRecord, Repeat, Rounds};
use crate::store::Store;
use crate::vocab::RunStatus;

pub struct Outcome {
    pub run_id: i64,
    pub status: RunStatus,
    pub points_done: usize,
    pub points_failed: usize,
    /// Points an earlier try of this farm run had stored: skipped.
    pub points_skipped: usize,
    /// Failed points of an earlier try, measured again.
    pub points_retried: usize,
    /// Where the points went besides the store, and whether the store took them.
    pub delivery: Delivery,
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

fn largest(v: impl Iterator<Item = f64>) -> Option<f64> {
    v.fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))))
}

/// Why a measured point has no host CPU figure: every unit unmeasurable (its reason), or None.
fn unmeasured(m: &Measured) -> Option<String> {
    match &m.repeats {
        Some(r) => r
            .unmeasurable
            .as_ref()
            .filter(|u| r.cost().is_none() && u.count > 0)
            .map(|u| format!("{} of {} units: {}", u.count, r.runs, u.why)),
        None => m.cpu.as_ref().and_then(|c| c.unmeasurable.clone()),
    }
}

/// Turns a measured point into the store's plain record: each figure is its median over the
/// units with its interval in the spread, every repeat is kept, and the point counts as bound if
/// any repeat was. The CPU parts and details are the median run's (`Repeats::shown`).
pub fn record(p: &Point, m: &Measured, lab_facts: &LabFacts) -> PointRecord {
    let c = m.cpu.as_ref();
    let sd = c.and_then(|c| {
        c.service_demand_us_per_kb
            .as_ref()
            .or(c.service_demand_us_per_tran.as_ref())
    });
    let r = m.repeats.as_ref();
    let each: Vec<Repeat> = r.map(|r| r.each.clone()).unwrap_or_default();
    let med = |s: Option<&crate::stats::Spread>| s.map(|s| s.median);
    let cpu_or = |from_units: Option<f64>, single: Option<f64>| match r {
        Some(_) => from_units,
        None => single,
    };
    // Bound as a point only where its cost could not leave the bound units out (`cost_units`).
    let bound_by = match r {
        Some(r) if r.bound_left_out > 0 => None,
        Some(_) => each.iter().find_map(|x| x.bound_by),
        None => c.and_then(|c| c.bound_by),
    };
    let why = unmeasured(m);
    PointRecord {
        throughput_gbps: r
            .map(|r| r.throughput_gbps.median)
            .or(Some(m.result.throughput_gbps)),
        transactions_per_s: med(r.and_then(|r| r.transactions_per_s.as_ref()))
            .or(m.result.transactions_per_s),
        latency_p50_us: m.result.latency_us.as_ref().map(|l| l.p50),
        latency_p99_us: m.result.latency_us.as_ref().map(|l| l.p99),
        host_busy_pct: cpu_or(
            med(r.and_then(|r| r.host_busy_pct.as_ref())),
            c.filter(|_| why.is_none()).map(|c| c.host_busy_pct),
        ),
        machine_busy_pct: c.map(|c| c.machine_busy_pct),
        normalized_pct_per_gbps: cpu_or(
            med(r.and_then(|r| r.normalized_pct_per_gbps.as_ref())),
            c.and_then(|c| c.normalized_pct_per_gbps),
        ),
        client_busy_pct: c.and_then(|c| c.client_busy_pct),
        bound_by,
        leak_pct: largest(each.iter().filter_map(|x| x.leak_pct)).or(c.and_then(|c| c.leak_pct)),
        placed: m.cpus.as_ref().map(|x| x.placed),
        host_cpus: m.cpus.as_ref().map(|x| x.host.to_string()),
        client_cpus: m.cpus.as_ref().map(|x| x.client.to_string()),
        wide: r.map(|r| r.wide),
        unmeasurable: why,
        host_foreign_pct: largest(each.iter().filter_map(|x| x.host_foreign_pct))
            .or(c.map(|c| c.foreign_pct)),
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
    /// How many rounds each point takes and when it stops (the file's, or the command line's).
    pub stop: measure::Stopping,
    /// Seconds the run may take past every point's least rounds.
    pub budget_s: Option<f64>,
}

impl Loaded {
    /// A parsed experiment, its rounds as its file says (the file was checked when parsed).
    pub fn new(text: String, file: file::ExperimentFile, points: Vec<Point>) -> Loaded {
        let stop = file
            .point
            .stopping()
            .unwrap_or(measure::Stopping::fixed(file.point.rounds));
        let budget_s = file.point.budget;
        Loaded {
            text,
            file,
            points,
            site: None,
            stop,
            budget_s,
        }
    }
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

/// The labs of a run: each range is a run of points that share one lab configuration. Every
/// round goes through all of them in turn (A B C, A B C, …), so a point's units come from spells
/// spread over the run and a disturbed spell lands on different points.
pub fn lab_groups(points: &[Point]) -> Vec<std::ops::Range<usize>> {
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
    groups
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
    /// By an earlier try of the same farm run.
    Before,
}

/// The run's progress: point-rounds done, the most there can be, and the time they took.
struct Pace {
    done: usize,
    most: usize,
    started: std::time::Instant,
    /// Seconds per point-round so far (None before the first).
    per: Option<f64>,
    guess: f64,
}

impl Pace {
    /// Seconds left if every point takes its most rounds.
    fn left(&self) -> f64 {
        self.per.unwrap_or(self.guess) * (self.most.saturating_sub(self.done)) as f64
    }
    fn step(&mut self) {
        self.done += 1;
        self.per = Some(self.started.elapsed().as_secs_f64() / self.done as f64);
    }
}

/// Begins a run: its row in the store (or, for a farm's run the store has, the row taken up
/// again) and its spool.
pub fn begin<'a>(
    exp: &Loaded,
    store: Result<&'a Store, String>,
    spool: Option<std::path::PathBuf>,
    fleet: Option<Fleet>,
) -> Result<Outlet<'a>, Error> {
    Outlet::begin(
        Begin {
            name: &exp.file.name,
            description: &exp.file.description,
            text: &exp.text,
            hash: &sha256_hex(exp.text.as_bytes()),
            facts: facts::host(),
            planned: exp.points.len() as u32,
        },
        store,
        spool,
        fleet,
    )
}

/// Runs an experiment into the store. `progress` gets (point-rounds done, the most there can be,
/// seconds left at most, what). Round by round every lab's unfinished points are measured (each
/// lab built once and kept between rounds, see `Kept`); a point is stored once it is done (its interval within the goal past its least
/// rounds, or its most rounds, or the budget spent). SIGINT/SIGTERM (or a closed output) stop it
/// after the point under way (at once on a second Ctrl-C): the points measured so far are kept
/// (with the rounds they had; a farm's run keeps only finished points, its rerun measures the
/// rest whole), the run is marked interrupted and the lab removed. Points the outlet says an
/// earlier try stored are skipped.
pub fn run_experiment(
    exp: &Loaded,
    out: &Outlet,
    progress: &mut dyn FnMut(usize, usize, f64, &str),
) -> Result<Outcome, Error> {
    let points = &exp.points;
    crate::sys::signals::install();
    let stopping = crate::sys::signals::stop_requested;
    let run_id = out.run_id;
    let groups = lab_groups(points);
    let it = exp.stop.iterations;
    let mut got: Vec<Gathered> = points
        .iter()
        .map(|p| Gathered {
            stored: out.done_before.contains(&p.seq).then_some(Stored::Before),
            ..Default::default()
        })
        .collect();
    let skipped = got.iter().filter(|g| g.stored.is_some()).count();
    let mut pace = Pace {
        done: 0,
        most: (points.len() - skipped) * it.max as usize,
        started: std::time::Instant::now(),
        per: None,
        guess: points.iter().map(matrix::estimate_round_s).sum::<f64>()
            / points.len().max(1) as f64,
    };
    let mut result: Result<(), Error> = Ok(());
    let mut kept = Kept::default();
    'rounds: for round in 1..=it.max {
        let open: Vec<_> = groups
            .iter()
            .filter(|g| got[(*g).clone()].iter().any(|x| x.stored.is_none()))
            .cloned()
            .collect();
        let pass_s =
            open.iter().map(|g| g.len()).sum::<usize>() as f64 * pace.per.unwrap_or(pace.guess);
        let spent = pace.started.elapsed().as_secs_f64();
        if open.is_empty() || (round > it.min && exp.budget_s.is_some_and(|b| spent + pass_s > b)) {
            break;
        }
        for g in open {
            if stopping() {
                break 'rounds;
            }
            let mut lab = LabRound {
                exp,
                out,
                run_id,
                points: &points[g.clone()],
                got: &mut got[g.clone()],
                kept: &mut kept,
            };
            match lab.run(&mut pace, progress) {
                Ok(true) => {}
                Ok(false) => break 'rounds,
                Err(e) => {
                    result = Err(e);
                    break 'rounds;
                }
            }
        }
    }
    let removed = kept.remove_all();
    if result.is_ok() {
        result = removed;
    }
    // Done, out of rounds or budget, or interrupted between rounds: what was measured is kept,
    // with the rounds it had (a farm's interrupted run keeps only what finished).
    let cut_short = stopping() && out.fleet.is_some();
    for (p, g) in points.iter().zip(got.iter_mut()) {
        if g.stored.is_none() && !g.runs.is_empty() && !cut_short {
            store_gathered(out, run_id, p, g, &exp.stop)?;
        }
    }
    let status = if result.is_err() {
        RunStatus::Failed
    } else if stopping() {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    let delivery = out.finish(status)?;
    progress(pace.done, pace.done, 0.0, status.name());
    result.map(|_| Outcome {
        run_id,
        status,
        points_done: got.iter().filter(|g| g.stored.is_some()).count(),
        points_failed: got
            .iter()
            .filter(|g| g.stored == Some(Stored::Failed))
            .count(),
        points_skipped: skipped,
        points_retried: out.retried,
        delivery,
    })
}

/// Whether a point's units are enough: its interval within the goal past its least rounds, or
/// its most rounds.
fn done(stop: &measure::Stopping, p: &Point, g: &Gathered) -> bool {
    let each: Vec<Repeat> = g.runs.iter().map(measure::repeat_of).collect();
    stop.done(&measure::units(&each, p.repeat.max(1) as usize))
}

/// Stores a point from all its rounds' runs: one record, every repeat kept.
fn store_gathered(
    out: &Outlet,
    run_id: i64,
    p: &Point,
    g: &mut Gathered,
    stop: &measure::Stopping,
) -> Result<(), Error> {
    let n = g.runs.len() as u32;
    let per = p.repeat.max(1);
    let runs = std::mem::take(&mut g.runs);
    let units = measure::units(
        &runs.iter().map(measure::repeat_of).collect::<Vec<_>>(),
        per as usize,
    );
    let met = stop.goal.map(|goal| measure::met(&units, goal));
    let Some(mut m) = measure::combined(runs, stop.goal, met, per as usize) else {
        return Ok(());
    };
    // Every round gave its repeats (a point cut short mid-round has fewer: no pairing).
    if let Some(r) = m.repeats.as_mut() {
        let count = n / per;
        r.rounds = (count > 1 && n == count * per).then_some(Rounds { count, run: run_id });
    }
    let facts = g.facts.clone().unwrap_or_default();
    let rec = PointRecord {
        repeat: n,
        ..record(p, &m, &facts)
    };
    out.add(&rec)?;
    g.stored = Some(Stored::Measured);
    Ok(())
}

/// The labs a run keeps between its rounds: each configuration of namespaces is built once
/// and measured in round after round (the rounds still go A B C, A B C over the run, so a
/// disturbed spell lands on different points). A QEMU lab is built anew each round (its idle
/// guests' emulated CPUs would run beside the other labs' points), as is a lab over an uplink
/// (the uplink is one lab's at a time) and one whose point failed. Dropped labs are removed.
#[derive(Default)]
struct Kept(Vec<(matrix::LabConfig, Lab)>);

impl Kept {
    fn take(&mut self, cfg: &matrix::LabConfig) -> Option<Lab> {
        let i = self.0.iter().position(|(c, _)| c == cfg)?;
        Some(self.0.swap_remove(i).1)
    }

    /// Keeps `lab` for the next round if it may be, else removes it.
    fn give_back(
        &mut self,
        cfg: &matrix::LabConfig,
        lab: Lab,
        site: bool,
        failed: bool,
    ) -> Result<(), Error> {
        let vm = cfg.mode.is_qemu() || cfg.other.is_some_and(|m| m.is_qemu());
        if vm || site || failed {
            lab.remove()?;
        } else {
            self.0.push((cfg.clone(), lab));
        }
        Ok(())
    }

    /// Removes every kept lab, reporting the first failure.
    fn remove_all(&mut self) -> Result<(), Error> {
        let mut first = Ok(());
        for (_, lab) in self.0.drain(..) {
            if let Err(e) = lab.remove() {
                first = first.and(Err(e.into()));
            }
        }
        first
    }
}

/// One lab of one round: built (or kept from an earlier round), its unfinished points
/// measured, then kept or removed.
struct LabRound<'a> {
    exp: &'a Loaded,
    out: &'a Outlet<'a>,
    run_id: i64,
    points: &'a [Point],
    got: &'a mut [Gathered],
    kept: &'a mut Kept,
}

impl LabRound<'_> {
    /// Ok(false) when the run stops (interrupted during the build or a point).
    fn run(
        &mut self,
        pace: &mut Pace,
        progress: &mut dyn FnMut(usize, usize, f64, &str),
    ) -> Result<bool, Error> {
        let cfg = &self.points[0].lab;
        if let Some(built) = self.kept.take(cfg) {
            return self.measure_then_keep(built, pace, progress);
        }
        progress(
            pace.done,
            pace.most,
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
                    if g.stored.is_none() {
                        fail(self.out, p, g, &why)?;
                        pace.step();
                    }
                }
                return Ok(true);
            }
        };
        self.measure_then_keep(built, pace, progress)
    }

    /// Measures the round's points in `built`, then keeps the lab for the next round or
    /// removes it.
    fn measure_then_keep(
        &mut self,
        built: Lab,
        pace: &mut Pace,
        progress: &mut dyn FnMut(usize, usize, f64, &str),
    ) -> Result<bool, Error> {
        let failed_before = self.failed();
        let went_on = self.measure(&built, pace, progress);
        let failed = self.failed() > failed_before || !matches!(went_on, Ok(true));
        let cfg = &self.points[0].lab;
        self.kept
            .give_back(cfg, built, self.exp.site.is_some(), failed)?;
        went_on
    }

    fn failed(&self) -> usize {
        self.got
            .iter()
            .filter(|g| g.stored == Some(Stored::Failed))
            .count()
    }

    fn measure(
        &mut self,
        built: &Lab,
        pace: &mut Pace,
        progress: &mut dyn FnMut(usize, usize, f64, &str),
    ) -> Result<bool, Error> {
        let lab_facts = facts::lab(built.name());
        for (p, g) in self.points.iter().zip(self.got.iter_mut()) {
            if crate::sys::signals::stop_requested() {
                return Ok(false);
            }
            if g.stored.is_some() {
                continue;
            }
            progress(pace.done, pace.most, pace.left(), &matrix::describe(p));
            let (from, to) = p.direction.endpoints();
            let target = Target::Lab {
                rec: Box::new(built.record().clone()),
                from,
                to,
                loads: p.loads.clone(),
                other: built.other().map(|o| Box::new(o.clone())),
            };
            let fixed = measure::Stopping::fixed(p.repeat);
            match measure::repeats(
                &target,
                &p.spec,
                &measure::source::Engine,
                &fixed,
                &|_, _| {},
            ) {
                Ok((runs, _)) => {
                    g.runs.extend(runs);
                    g.facts = Some(lab_facts.clone());
                    // Stored as soon as it is done: a run killed later keeps it.
                    if done(&self.exp.stop, p, g) {
                        store_gathered(self.out, self.run_id, p, g, &self.exp.stop)?;
                    }
                }
                // An interrupted point is not a failed one: it is not stored (its earlier
                // rounds are).
                Err(_) if crate::sys::signals::stop_requested() => return Ok(false),
                Err(e) => fail(self.out, p, g, &e.to_string())?,
            }
            pace.step();
        }
        Ok(true)
    }
}

/// A point that failed in any round failed: stored with why, its other rounds dropped.
fn fail(out: &Outlet, p: &Point, g: &mut Gathered, why: &str) -> Result<(), Error> {
    if g.stored.is_none() {
        out.add(&failed_record(p, why))?;
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
    fn a_round_goes_through_every_lab_once() {
        let pts = points(3);
        // Two labs (bridge, macvlan) of two points each: every round builds A then B.
        let groups = lab_groups(&pts);
        assert_eq!(groups, vec![0..2, 2..4]);
        assert_ne!(pts[groups[0].start].lab.mode, pts[groups[1].start].lab.mode);
        assert!(groups
            .iter()
            .all(|g| pts[g.clone()].iter().all(|p| p.lab == pts[g.start].lab)));
        assert!(lab_groups(&[]).is_empty());
    }

    #[test]
    fn a_file_says_how_many_rounds_and_when_to_stop() {
        let f = |extra: &str| {
            let text = format!("name = \"r\"\ndescription = \"d\"\n[matrix]\nmodes = [\"bridge\"]\n[point]\n{extra}\n");
            file::parse(&text, "r.toml").map(|f| f.point.stopping().unwrap())
        };
        let fixed = f("rounds = 3").unwrap();
        assert_eq!(fixed, measure::Stopping::fixed(3));
        let goal = f("confidence = \"95,5\"").unwrap();
        assert_eq!((goal.iterations.min, goal.iterations.max), (6, 30));
        let both = f("confidence = \"95,5\"\niterations = \"8,12\"").unwrap();
        assert_eq!((both.iterations.min, both.iterations.max), (8, 12));
        for bad in [
            "confidence = \"80,5\"",
            "iterations = \"9,3\"",
            "budget = 0",
        ] {
            assert!(f(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_point_estimate_counts_its_rounds() {
        let one = matrix::estimate_s(&points(1)[0]);
        let three = matrix::estimate_s(&points(3)[0]);
        assert!((three - 3.0 * one).abs() < 1e-9, "{one} {three}");
    }
}
