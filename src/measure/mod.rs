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

use crate::engine::controller::TestResult;
use crate::engine::spec::Spec;
use crate::meter::account::{self, CpuReport};
use crate::meter::{Meter, PartKind, Setup, Side};
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
fn repeat_of(m: &Measured) -> Repeat {
    let c = m.cpu.as_ref();
    Repeat {
        throughput_gbps: m.result.throughput_gbps,
        transactions_per_s: m.result.transactions_per_s,
        host_busy_pct: c.map(|c| c.host_busy_pct),
        normalized_pct_per_gbps: c.and_then(|c| c.normalized_pct_per_gbps),
        bound_by: c.and_then(|c| c.bound_by),
        leak_pct: c.and_then(|c| c.leak_pct),
        host_steal_pct: c.map(|c| c.host_steal_pct),
        latency_p99_us: m.result.latency_us.as_ref().map(|l| l.p99),
        latency_p999_us: m.result.latency_us.as_ref().map(|l| l.p999),
        latency_max_us: m.result.latency_us.as_ref().map(|l| l.max),
        movie_buffering_pct: m.movie.as_ref().and_then(|v| v.buffering.host_busy_pct),
        movie_playing_pct: m.movie.as_ref().and_then(|v| v.play_only.host_busy_pct),
    }
}

/// A spread wider than this share of its median marks a point unstable.
pub const UNSTABLE: f64 = 0.10;

fn unstable(s: &stats::Spread) -> bool {
    s.median.abs() > 0.0 && (s.max - s.min) / s.median.abs() > UNSTABLE
}

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
) -> Option<std::collections::BTreeMap<String, crate::vnic::backend::VnicDelta>> {
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
    let setup = Setup {
        fine_series: movie.is_some(),
        ..target.setup()?
    };
    let meter = Meter::start(setup);
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
    c.parts.push(crate::meter::account::PartCpu {
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

fn spreads(runs: &[Measured], level: u32) -> (stats::Spread, Option<stats::Spread>) {
    let t: Vec<f64> = runs
        .iter()
        .map(|r| {
            r.result
                .transactions_per_s
                .unwrap_or(r.result.throughput_gbps)
        })
        .collect();
    let c: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.cpu.as_ref().map(|c| c.host_busy_pct))
        .collect();
    (
        stats::spread(&t, level),
        (c.len() == runs.len()).then(|| stats::spread(&c, level)),
    )
}

/// Runs a point up to `repeat` times (stopping early once `confidence` is met, after at least 3
/// runs) and returns the median run with the spread of all of them.
pub fn repeated(
    target: &Target,
    spec: &Spec,
    source: &dyn TrafficSource,
    repeat: u32,
    confidence: Option<(u32, f64)>,
    progress: &dyn Fn(u32, u32),
) -> Result<Measured, Error> {
    let (runs, met) = repeats(target, spec, source, repeat, confidence, progress)?;
    combined(runs, confidence.map_or(95, |c| c.0), met)
        .ok_or_else(|| Error::Failed("the point ran no repeat".into()))
}

/// The runs of a point, each as measured: up to `repeat` of them, fewer once `confidence` (level,
/// width %) is met after at least 3 (and whether it was).
pub fn repeats(
    target: &Target,
    spec: &Spec,
    source: &dyn TrafficSource,
    repeat: u32,
    confidence: Option<(u32, f64)>,
    progress: &dyn Fn(u32, u32),
) -> Result<(Vec<Measured>, Option<bool>), Error> {
    let (level, width) = confidence.unwrap_or((95, 5.0));
    let mut runs: Vec<Measured> = Vec::new();
    let mut met = None;
    for i in 0..repeat.max(1) {
        if crate::sys::signals::stop_requested() {
            return Err(crate::engine::Error::Interrupted.into());
        }
        progress(i + 1, repeat);
        runs.push(measure(target, spec, source)?);
        if confidence.is_some() && runs.len() >= 3 {
            let (t, c) = spreads(&runs, level);
            let ok = stats::confident(&t, width)
                && c.as_ref().is_none_or(|c| stats::confident(c, width));
            met = Some(ok);
            if ok {
                break;
            }
        }
    }
    Ok((runs, met))
}

/// One measurement of a point from its runs (from one lab or several): the median run, carrying
/// the spread of all of them at `level` % when there are two or more. None without a run.
pub fn combined(mut runs: Vec<Measured>, level: u32, met: Option<bool>) -> Option<Measured> {
    if runs.is_empty() {
        return None;
    }
    let repeats = (runs.len() > 1).then(|| {
        let (t, c) = spreads(&runs, level);
        let tps: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.result.transactions_per_s)
            .collect();
        let norm: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.cpu.as_ref().and_then(|c| c.normalized_pct_per_gbps))
            .collect();
        let norm = (norm.len() == runs.len()).then(|| stats::spread(&norm, level));
        Repeats {
            runs: runs.len(),
            confidence_level: level,
            confidence_met: met,
            unstable: unstable(&t) || norm.as_ref().is_some_and(unstable),
            throughput_gbps: t,
            transactions_per_s: (tps.len() == runs.len()).then(|| stats::spread(&tps, level)),
            host_busy_pct: c,
            normalized_pct_per_gbps: norm,
            each: runs.iter().map(repeat_of).collect(),
            rounds: None,
        }
    });
    let key = |m: &Measured| {
        m.result
            .transactions_per_s
            .unwrap_or(m.result.throughput_gbps)
    };
    runs.sort_by(|x, y| key(x).total_cmp(&key(y)));
    let mid = runs.len() / 2;
    let mut out = runs.swap_remove(mid);
    out.repeats = repeats;
    Some(out)
}
