//! One measured point: the source run with the meter on over exactly the measured window, its
//! CPU attributed to the lab's parts (with a client on another machine read from its agent), and
//! its vNIC backends' counters over the window.

use super::error::Error;
use super::source::TrafficSource;
use super::target::{self, place_driver, Target};
use super::{bound, load};
use crate::engine::spec::Spec;
use crate::meter::account;
use crate::meter::{Meter, PartKind, Side};
use crate::records::cpu::CpuReport;
use crate::records::measured::Measured;
use crate::records::test::TestResult;
use crate::records::Repeat;
use crate::vocab::Role;

/// How much longer than the test's warm-up and window the loads run: they start a few
/// milliseconds before the test does (its agents are made after theirs), and a flood's senders
/// go on for their own grace after that, so its end is not waited for longer than needed.
const LOAD_MARGIN_S: f64 = 0.1;

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

/// The vNIC backends' counters now, per guest the test uses.
fn vnic_counters(target: &Target) -> Vec<(String, Option<crate::vnic::backend::Stats>)> {
    target
        .backends()
        .into_iter()
        .map(|(g, p, _)| (g, target::read_vnic(&p)))
        .collect()
}

/// What each backend's counters moved since `before`, read once they count every frame of the
/// test that ended at `ended` (its agents gone). A backend publishes within 100 ms of its last
/// frame (`vnic::frames`), so the counters are read once every backend's file was written
/// after `ended`, or once that much has passed since (a backend whose last frame came earlier
/// published it before). None without backends.
fn vnic_delta(
    target: &Target,
    before: &[(String, Option<crate::vnic::backend::Stats>)],
    ended: std::time::SystemTime,
) -> Option<std::collections::BTreeMap<String, crate::records::vnic::VnicDelta>> {
    if before.is_empty() {
        return None;
    }
    let written = || -> Vec<Option<std::time::SystemTime>> {
        target
            .backends()
            .iter()
            .map(|(_, p, _)| std::fs::metadata(p).and_then(|m| m.modified()).ok())
            .collect()
    };
    while !counted(std::time::SystemTime::now(), ended, &written()) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
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

/// Whether backends whose stats files were last `written` then count every frame up to `ended`.
fn counted(
    now: std::time::SystemTime,
    ended: std::time::SystemTime,
    written: &[Option<std::time::SystemTime>],
) -> bool {
    now >= ended + crate::vnic::backend::PUBLISHED_WITHIN
        || written.iter().all(|w| w.is_some_and(|t| t >= ended))
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
    let loads = start_loads(target, spec.warmup + spec.duration + LOAD_MARGIN_S)?;
    let r = source.run(target, spec, &mut |a, b| meter.window(a, b));
    let ended = std::time::SystemTime::now();
    let kernel_pacing = fq.as_ref().map(|g| g.report.clone());
    drop(fq);
    let data = meter.stop();
    let loads = loads.map(load::stop).transpose()?.unwrap_or_default();
    let dead = target.dead_backends();
    if !dead.is_empty() {
        return Err(Error::Failed(dead.join("; ")));
    }
    let result = r?;
    let vnic = vnic_delta(target, &vnic_before, ended);
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

/// Starts the target's loads for a test lasting `secs` (None: it has none).
fn start_loads(target: &Target, secs: f64) -> Result<Option<load::Running>, Error> {
    match target {
        Target::Lab {
            rec, loads, other, ..
        } if !loads.is_empty() => load::start(rec, other.as_deref(), loads, secs).map(Some),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn counters_are_read_once_written_after_the_test_or_once_published_for_sure() {
        let ended = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let ms = |m: u64| ended + Duration::from_millis(m);
        let before = ended - Duration::from_millis(20);
        assert!(counted(ms(10), ended, &[Some(ms(5)), Some(ms(1))]));
        assert!(!counted(ms(10), ended, &[Some(ms(5)), Some(before)]));
        assert!(!counted(ms(10), ended, &[Some(ms(5)), None]));
        assert!(counted(ms(150), ended, &[Some(before), None]));
        assert!(!counted(ms(149), ended, &[Some(before)]));
    }
}
