//! The measuring core, between the lab, the engine and the meter below and the experiments,
//! tests, benches and paper reproductions above: a lab's life (`lab::Lab`, removed when dropped),
//! where a test runs (`Target`), what moves its bytes (`TrafficSource`: vnetlab's engine or a stock
//! iperf3), the loads beside it, what bound it, and one measured point (`Measured`) from a run of
//! the source with the meter on over exactly the measured window, repeated as asked with the
//! spread kept.

pub mod agents;
pub mod bound;
pub mod desc;
pub mod iperf3;
pub mod lab;
pub mod load;
pub mod source;
pub mod target;

use crate::engine::spec::Spec;
use crate::meter::account;
use crate::meter::{Meter, PartKind, Side};
use crate::records::cpu::CpuReport;
use crate::records::test::TestResult;
use crate::records::{Repeat, Repeats};
use crate::stats;
use crate::vocab::Role;

pub use crate::records::measured::Measured;
pub use agents::lab_agents;
pub use source::TrafficSource;
pub use target::{place_driver, Target};

/// Why a point could not be measured. Its `Display` is the one line users see; the stages it
/// drives keep their own errors inside.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The test as asked is wrong: nothing was measured.
    #[error("{0}")]
    Input(String),
    /// Measuring failed on the host.
    #[error("{0}")]
    Failed(String),
    #[error(transparent)]
    Lab(#[from] crate::lab::Error),
    #[error(transparent)]
    Engine(#[from] crate::engine::Error),
    #[error(transparent)]
    Meter(#[from] crate::meter::Error),
}

/// One repeat's headline figures, from its measured result.
pub fn repeat_of(m: &Measured) -> Repeat {
    let c = m.cpu.as_ref();
    Repeat {
        throughput_gbps: m.result.throughput_gbps,
        transactions_per_s: m.result.transactions_per_s,
        host_busy_pct: c.map(|c| c.host_busy_pct),
        normalized_pct_per_gbps: c.and_then(|c| c.normalized_pct_per_gbps),
        bound_by: c.and_then(|c| c.bound_by),
        leak_pct: c.and_then(|c| c.leak_pct),
        host_steal_pct: c.map(|c| c.host_steal_pct),
        host_foreign_pct: c.map(|c| c.foreign_pct),
        host_meter_pm: c.map(|c| c.check.host_sources.half_width_pct()),
        unmeasurable: c.and_then(|c| c.unmeasurable.clone()),
        latency_p99_us: m.result.latency_us.as_ref().map(|l| l.p99),
        latency_p999_us: m.result.latency_us.as_ref().map(|l| l.p999),
        latency_max_us: m.result.latency_us.as_ref().map(|l| l.max),
        movie_buffering_pct: m.movie.as_ref().and_then(|v| v.buffering.host_busy_pct),
        movie_playing_pct: m.movie.as_ref().and_then(|v| v.play_only.host_busy_pct),
    }
}

/// The effect floor the papers' verdicts use: a difference below this share of a median is no
/// verdict either way on this host.
pub const EFFECT_FLOOR: f64 = 0.10;

/// The vNIC backends' counters now, per guest the test uses.
fn vnic_counters(target: &Target) -> Vec<(String, Option<crate::vnic::backend::Stats>)> {
    target
        .backends()
        .into_iter()
        .map(|(g, p, _)| (g, target::read_vnic(&p)))
        .collect()
}

/// What each backend's counters moved since `before` (backends publish within ~0.1 s of going
/// idle: the test's tail is waited for). None without backends.
fn vnic_delta(
    target: &Target,
    before: &[(String, Option<crate::vnic::backend::Stats>)],
) -> Option<std::collections::BTreeMap<String, crate::records::vnic::VnicDelta>> {
    if before.is_empty() {
        return None;
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    Some(
        before
            .iter()
            .zip(target.backends())
            .filter_map(|((g, b), (_, path, _))| {
                let after = target::read_vnic(&path)?;
                Some((
                    g.clone(),
                    crate::vnic::backend::delta(&b.clone().unwrap_or_default(), &after),
                ))
            })
            .collect(),
    )
}

/// Runs one test with the meter on: `source` moves the bytes between the target's endpoints, the
/// target's loads run beside it, and the meter measures the window the source says its figures
/// cover. Every caller — a test, a run's point, a bench, a paper's suite — measures through here.
pub fn measure(
    target: &Target,
    spec: &Spec,
    source: &dyn TrafficSource,
) -> Result<Measured, Error> {
    source.check(target, spec)?;
    if let Some(e) = target.dead_backends().into_iter().next() {
        return Err(Error::Failed(e));
    }
    let vnic_before = vnic_counters(target);
    place_driver(target.cpus());
    let fq = target.kernel_pacing(spec)?;
    // A movie's download among the loads: its buffering phase is split off the window's series.
    let movie = target.loads().iter().find_map(load::Movie::of);
    let meter = Meter::start(target.setup()?);
    let loads = load::start_for(target, spec.warmup + spec.duration + 0.5)?;
    let r = source.run(target, spec, &mut |a, b| meter.window(a, b));
    let kernel_pacing = fq.as_ref().map(|g| g.report.clone());
    drop(fq);
    let data = meter.stop();
    let loads = loads.map(load::stop).transpose()?.unwrap_or_default();
    let dead = target.dead_backends();
    if !dead.is_empty() {
        return Err(Error::Failed(dead.join("; ")));
    }
    let result = r?;
    let vnic = vnic_delta(target, &vnic_before);
    // A flood across the wire the stream's way leaves the stream only the rest of the wire.
    let taken = load::wire_taken_bps(target.loads(), &loads, target.sending_side());
    let (cpu, cpu_error) = cpu_of(target, spec, &data, &result, taken);
    // Split the host's CPU at the end of the movie's buffering.
    let movie = movie
        .zip(cpu.as_ref())
        .map(|(m, c)| load::phases(m, &c.series));
    Ok(Measured {
        version: crate::records::measured::VERSION,
        result,
        cpus: target.cpus().cloned(),
        cpu,
        cpu_error,
        repeats: None,
        vnic,
        loads,
        movie,
        kernel_pacing,
    })
}

/// The host's CPU over a test's window, split into parts per side, with what bound the point
/// (or why there is no report).
pub fn cpu_of(
    target: &Target,
    spec: &Spec,
    data: &crate::meter::MeterData,
    result: &TestResult,
    wire_taken_bps: f64,
) -> (Option<CpuReport>, Option<String>) {
    let (send, recv) = target.sides(spec);
    let traffic = account::Traffic {
        gbps: Some(result.throughput_gbps),
        transactions_per_s: result.transactions_per_s,
        send_parts: &send,
        recv_parts: &recv,
    };
    match account::build(data, &traffic) {
        Ok(mut c) => {
            c.bound_by = bound::bound_by(target, &c, spec, result, wire_taken_bps);
            add_remote_client(target, &mut c, result);
            (Some(c), None)
        }
        Err(e) => (None, Some(e.to_string())),
    }
}

/// A client on another machine: its serve measured that machine's CPU over the window. It
/// becomes the client's figures and a part on the client's side (never the host's), and a
/// saturated client machine is what bound the point.
fn add_remote_client(target: &Target, c: &mut CpuReport, result: &TestResult) {
    let Target::Lab { rec, .. } = target else {
        return;
    };
    if !rec.cpus.remote_client() {
        return;
    }
    let Some(r) = result
        .remote_cpu
        .iter()
        .find(|r| r.agent == Role::Client.to_string())
    else {
        return;
    };
    let m = &r.cpu;
    c.client_busy_pct = Some(m.busy_pct);
    c.client_busy_cores = Some(m.busy_cores);
    c.parts.push(crate::records::cpu::PartCpu {
        name: format!("client (another machine, {} cores)", m.ncpu),
        kind: PartKind::Client,
        side: Side::Client,
        role: Some(Role::Client),
        busy_pct: m.busy_pct,
        cores: m.busy_cores,
        task_clock_ms: m.busy_cores * m.window_s * 1e3,
    });
    let pct = bound::SATURATED * 100.0;
    if matches!(c.bound_by, None | Some(crate::vocab::Bound::Latency))
        && (m.busy_pct >= pct || m.max_core_pct >= pct)
    {
        c.bound_by = Some(crate::vocab::Bound::Client);
    }
}

/// How many units a point takes and when it may stop: at least `iterations.min`, at most
/// `iterations.max`, stopping once its headline figures reach `goal` (None: always the most).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stopping {
    pub goal: Option<stats::Goal>,
    pub iterations: stats::Iterations,
}

impl Stopping {
    /// Exactly `n` units, held to the default goal only when read.
    pub fn fixed(n: u32) -> Stopping {
        Stopping {
            goal: None,
            iterations: stats::Iterations {
                min: n.max(1),
                max: n.max(1),
            },
        }
    }

    /// The units a goal takes by default: at least enough to reach its level, at most 30.
    pub fn default_iterations(g: stats::Goal) -> stats::Iterations {
        stats::Iterations {
            min: stats::units_for(g.level) as u32,
            max: 30,
        }
    }

    /// Whether a point with these units may stop now: at its most, or past its least with its
    /// figures within the goal.
    pub fn done(&self, runs: &[Repeat]) -> bool {
        let n = runs.len() as u32;
        n >= self.iterations.max
            || (n >= self.iterations.min && self.goal.is_some_and(|g| met(runs, g)))
    }
}

/// A point's headline figures over its units: throughput (or transactions/s) and its cost.
struct Headline {
    rate: stats::Spread,
    cost: Option<stats::Spread>,
}

impl Headline {
    fn met(&self, g: &stats::Goal) -> bool {
        self.rate.meets(g) && self.cost.as_ref().is_none_or(|c| c.meets(g))
    }
}

/// Whether the units' headline figures reach `goal`.
pub fn met(units: &[Repeat], goal: stats::Goal) -> bool {
    headline(units, goal.level as u32).met(&goal)
}

/// The units a cost is read from: those the meter could read and, where at least three and more
/// than half of them were bound by nothing, only those (a bound unit's CPU per Gb/s is a
/// ceiling's, not a cost; `reproduce` leaves them out by the same rule). The bool: whether bound
/// units were left out.
pub fn cost_units(units: &[Repeat]) -> (Vec<&Repeat>, bool) {
    let read: Vec<&Repeat> = units.iter().filter(|r| r.unmeasurable.is_none()).collect();
    let free: Vec<&Repeat> = read
        .iter()
        .copied()
        .filter(|r| r.bound_by.is_none())
        .collect();
    match free.len() >= 3 && 2 * free.len() > units.len() {
        true => {
            let left = free.len() < read.len();
            (free, left)
        }
        false => (read, false),
    }
}

/// The units' headline spreads at `level` (the cost from `cost_units`).
fn headline(runs: &[Repeat], level: u32) -> Headline {
    let rate: Vec<f64> = runs
        .iter()
        .map(|r| r.transactions_per_s.unwrap_or(r.throughput_gbps))
        .collect();
    let cost: Vec<f64> = cost_units(runs)
        .0
        .iter()
        .filter_map(|r| r.normalized_pct_per_gbps.or(r.host_busy_pct))
        .collect();
    Headline {
        rate: stats::spread(&rate, level),
        cost: (!cost.is_empty()).then(|| stats::spread(&cost, level)),
    }
}

/// Runs a point as `stop` says and returns the median run with the spread of all of them.
pub fn repeated(
    target: &Target,
    spec: &Spec,
    source: &dyn TrafficSource,
    stop: &Stopping,
    progress: &dyn Fn(u32, u32),
) -> Result<Measured, Error> {
    let (runs, met) = repeats(target, spec, source, stop, progress)?;
    combined(runs, stop.goal, met, 1).ok_or_else(|| Error::Failed("the point ran no repeat".into()))
}

/// The runs of a point, each as measured, as many as `stop` says (and whether its goal was met).
pub fn repeats(
    target: &Target,
    spec: &Spec,
    source: &dyn TrafficSource,
    stop: &Stopping,
    progress: &dyn Fn(u32, u32),
) -> Result<(Vec<Measured>, Option<bool>), Error> {
    let mut runs: Vec<Measured> = Vec::new();
    let mut each: Vec<Repeat> = Vec::new();
    while !stop.done(&each) {
        if crate::sys::signals::stop_requested() {
            return Err(crate::engine::Error::Interrupted.into());
        }
        progress(runs.len() as u32 + 1, stop.iterations.max);
        let m = measure(target, spec, source)?;
        each.push(repeat_of(&m));
        runs.push(m);
    }
    let met = stop.goal.map(|g| met(&each, g));
    Ok((runs, met))
}

/// The spread of one figure over the units that have it (all of them, or None).
fn spread_of(
    each: &[Repeat],
    level: u32,
    f: impl Fn(&Repeat) -> Option<f64>,
) -> Option<stats::Spread> {
    let v: Vec<f64> = each.iter().filter_map(f).collect();
    (v.len() == each.len() && !v.is_empty()).then(|| stats::spread(&v, level))
}

/// The spread of a CPU figure over the units its cost is read from (`cost_units`).
fn cpu_spread(
    each: &[Repeat],
    level: u32,
    f: impl Fn(&Repeat) -> Option<f64>,
) -> Option<stats::Spread> {
    let read: Vec<Repeat> = cost_units(each).0.into_iter().cloned().collect();
    spread_of(&read, level, f)
}

/// What the repeats of a point say over its units, at the goal's level.
fn repeats_record(each: Vec<Repeat>, goal: Option<stats::Goal>, met: Option<bool>) -> Repeats {
    let g = goal.unwrap_or_default();
    let level = g.level as u32;
    let h = headline(&each, level);
    let wide = !h.rate.meets(&g) || h.cost.as_ref().is_some_and(|c| !c.meets(&g));
    let lost: Vec<&Repeat> = each.iter().filter(|r| r.unmeasurable.is_some()).collect();
    let bound_left_out = match cost_units(&each) {
        (kept, true) => each.len() - lost.len() - kept.len(),
        (_, false) => 0,
    };
    Repeats {
        bound_left_out,
        runs: each.len(),
        confidence_level: level,
        confidence_met: met,
        goal,
        throughput_gbps: h.rate,
        transactions_per_s: spread_of(&each, level, |r| r.transactions_per_s),
        host_busy_pct: cpu_spread(&each, level, |r| r.host_busy_pct),
        normalized_pct_per_gbps: cpu_spread(&each, level, |r| r.normalized_pct_per_gbps),
        wide,
        unmeasurable: lost.first().map(|r| crate::records::Unmeasured {
            count: lost.len(),
            why: r.unmeasurable.clone().unwrap_or_default(),
        }),
        shown: None,
        each,
        rounds: None,
    }
}

/// The index of the run whose cost (CPU per Gb/s, else host CPU, else rate) is the median of the
/// runs the meter could read: the run a point's details come from.
fn median_run(runs: &[Measured]) -> usize {
    let key = |m: &Measured| {
        let c = m.cpu.as_ref().filter(|c| c.unmeasurable.is_none());
        c.and_then(|c| c.normalized_pct_per_gbps.or(Some(c.host_busy_pct)))
    };
    let mut read: Vec<(usize, f64)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, m)| Some((i, key(m)?)))
        .collect();
    if read.is_empty() {
        read = runs
            .iter()
            .enumerate()
            .map(|(i, m)| {
                (
                    i,
                    m.result
                        .transactions_per_s
                        .unwrap_or(m.result.throughput_gbps),
                )
            })
            .collect();
    }
    read.sort_by(|x, y| x.1.total_cmp(&y.1));
    read[(read.len() - 1) / 2].0
}

/// A point's independent units from its repeats in order: with `per_unit` repeats in each lab (a
/// round), the round's median figures (its repeats share the lab, so they are one unit, unmeasured
/// if most of them were); one repeat per lab is its own unit.
pub fn units(each: &[Repeat], per_unit: usize) -> Vec<Repeat> {
    if per_unit <= 1 {
        return each.to_vec();
    }
    let med = |v: Vec<f64>| (!v.is_empty()).then(|| stats::spread(&v, 95).median);
    each.chunks(per_unit)
        .map(|c| {
            let read: Vec<&Repeat> = c.iter().filter(|r| r.unmeasurable.is_none()).collect();
            let over =
                |f: fn(&Repeat) -> Option<f64>| med(read.iter().filter_map(|r| f(r)).collect());
            Repeat {
                throughput_gbps: med(c.iter().map(|r| r.throughput_gbps).collect()).unwrap_or(0.0),
                transactions_per_s: med(c.iter().filter_map(|r| r.transactions_per_s).collect()),
                host_busy_pct: over(|r| r.host_busy_pct),
                normalized_pct_per_gbps: over(|r| r.normalized_pct_per_gbps),
                unmeasurable: (2 * read.len() <= c.len())
                    .then(|| c.iter().find_map(|r| r.unmeasurable.clone()))
                    .flatten(),
                bound_by: c.iter().find_map(|r| r.bound_by),
                ..Repeat::default()
            }
        })
        .collect()
}

/// One measurement of a point from its runs (from one lab or several, `per_unit` to a lab): the
/// run whose cost is the median (its CPU parts, series and latency are the point's details,
/// labelled as that run's), carrying every run's figures and their units' intervals when there
/// are two or more. None without a run.
pub fn combined(
    mut runs: Vec<Measured>,
    goal: Option<stats::Goal>,
    met: Option<bool>,
    per_unit: usize,
) -> Option<Measured> {
    if runs.is_empty() {
        return None;
    }
    let mid = median_run(&runs);
    let each: Vec<Repeat> = runs.iter().map(repeat_of).collect();
    let repeats = (runs.len() > 1).then(|| Repeats {
        shown: Some(mid + 1),
        runs: each.len(),
        each: each.clone(),
        ..repeats_record(units(&each, per_unit), goal, met)
    });
    let mut out = runs.swap_remove(mid);
    out.repeats = repeats;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(gbps: f64, cost: f64) -> Repeat {
        Repeat {
            throughput_gbps: gbps,
            normalized_pct_per_gbps: Some(cost),
            host_busy_pct: Some(cost * gbps),
            ..Repeat::default()
        }
    }

    fn goal(half: f64) -> Stopping {
        Stopping {
            goal: Some(stats::Goal {
                level: 95.0,
                half_width_pct: half,
            }),
            iterations: stats::Iterations { min: 6, max: 12 },
        }
    }

    #[test]
    fn a_point_stops_once_its_interval_is_narrow_enough_or_at_its_most() {
        let tight: Vec<Repeat> = [30.0, 30.5, 29.8, 30.2, 30.1, 29.9]
            .iter()
            .map(|&c| unit(0.3, c))
            .collect();
        let stop = goal(5.0);
        // Never before the least: five units do not reach 95 %.
        assert!(!stop.done(&tight[..5]));
        assert!(stop.done(&tight));
        // Wide: one more round, up to the most.
        let wide: Vec<Repeat> = [30.0, 36.0, 25.0, 31.0, 29.0, 40.0]
            .iter()
            .map(|&c| unit(0.3, c))
            .collect();
        assert!(!stop.done(&wide));
        let twelve: Vec<Repeat> = wide.iter().cycle().take(12).cloned().collect();
        assert!(stop.done(&twelve));
        // Without a goal: exactly the count.
        assert!(!Stopping::fixed(3).done(&tight[..2]) && Stopping::fixed(3).done(&tight[..3]));
        // The throughput must be within the goal too.
        let shaky: Vec<Repeat> = [0.3, 0.2, 0.3, 0.25, 0.3, 0.1]
            .iter()
            .map(|&g| unit(g, 30.0))
            .collect();
        assert!(!stop.done(&shaky));
    }

    #[test]
    fn a_cost_leaves_out_bound_and_unmeasurable_units_while_most_are_free() {
        let mut u: Vec<Repeat> = [30.0, 31.0, 29.0, 30.5, 90.0, 45.0]
            .iter()
            .map(|&c| unit(0.3, c))
            .collect();
        u[4].bound_by = Some(crate::vocab::Bound::Latency);
        u[5].unmeasurable = Some("steal".into());
        let (kept, left) = cost_units(&u);
        assert!(left && kept.len() == 4);
        let r = repeats_record(u.clone(), None, None);
        assert_eq!(
            (r.bound_left_out, r.unmeasurable.as_ref().unwrap().count),
            (1, 1)
        );
        assert_eq!(r.normalized_pct_per_gbps.unwrap().max, 31.0);
        // Bound in half the units: the cost cannot leave them out, and the point stays bound.
        for x in &mut u[..2] {
            x.bound_by = Some(crate::vocab::Bound::Latency);
        }
        assert!(!cost_units(&u).1);
    }

    #[test]
    fn a_rounds_repeats_make_one_unit() {
        let each: Vec<Repeat> = [10.0, 12.0, 11.0, 20.0, 22.0, 21.0]
            .iter()
            .map(|&c| unit(0.3, c))
            .collect();
        let u = units(&each, 3);
        assert_eq!(u.len(), 2);
        assert_eq!(
            (u[0].normalized_pct_per_gbps, u[1].normalized_pct_per_gbps),
            (Some(11.0), Some(21.0))
        );
        assert_eq!(units(&each, 1).len(), 6);
    }
}
