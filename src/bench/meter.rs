//! The meter's own cost beside a crowd of host tasks, against its cost on the quiet host: the
//! named peer is the same meter with nothing beside it. For each crowd (half the tasks asleep on
//! a timer, half blocked without one) the meter runs its 10 Hz samples and two window edges as a
//! lab's test would, on the lab's sides, and its own thread's CPU clock says what it cost. Beside
//! it, what the meter no longer reads is timed on the same host: one read of /proc/timer_list
//! and one scan of every /proc/PID/stat.

use super::crowd::{Crowd, Spec};
use super::Error;
use crate::meter::{Meter, Setup, Sides};
use serde::Serialize;
use std::time::{Duration, Instant};

/// One crowd's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Tasks the bench started (0: the quiet host) and the processes /proc listed.
    pub crowd_tasks: usize,
    pub host_processes: usize,
    /// The meter's own CPU, % of one core, per repeat and their median.
    pub own_pct: Vec<f64>,
    pub own_pct_median: f64,
    /// The median over the quiet host's.
    pub ratio_to_quiet: f64,
    pub reads_per_sample: u64,
    pub reads_per_edge: u64,
    /// What the meter no longer reads, timed once each: ms.
    pub timer_list_read_ms: f64,
    pub proc_scan_ms: f64,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    pub tasks: Vec<usize>,
    pub seconds: f64,
    pub repeat: usize,
}

/// The lab's sides the meter is set up with: one core for the host and the rest for the client
/// (a one-core host is all host).
fn sides() -> Sides {
    let cpus = crate::sys::online_cpus();
    match cpus.split_first() {
        Some((h, rest)) if !rest.is_empty() => Sides {
            host: vec![*h],
            client: rest.to_vec(),
        },
        _ => Sides {
            host: cpus,
            client: vec![],
        },
    }
}

/// One window of the meter: its own CPU, % of a core, and its reads.
fn once(seconds: f64) -> (f64, u64, u64) {
    let m = Meter::start(Setup {
        parts: vec![],
        sides: Some(sides()),
    });
    let start = Instant::now() + Duration::from_millis(100);
    let end = start + Duration::from_secs_f64(seconds);
    m.window(start, end);
    std::thread::sleep(end.saturating_duration_since(Instant::now()) + Duration::from_millis(150));
    let d = m.stop();
    let own = 100.0 * d.own_cpu_s / d.own_wall_s.max(1e-9);
    (own, d.reads_per_sample, d.reads_per_edge)
}

/// Milliseconds `f` takes once.
fn timed(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e3
}

/// The processes /proc lists.
fn processes() -> usize {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .count()
}

/// One scan of every /proc/PID/stat, as the meter made at each window edge before.
fn scan_proc() {
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if e.file_name()
            .to_str()
            .is_some_and(|n| n.parse::<u32>().is_ok())
        {
            let _ = std::fs::read_to_string(e.path().join("stat"));
        }
    }
}

/// The figures of one crowd.
fn row(tasks: usize, plan: &Plan, progress: &dyn Fn(&str)) -> Result<Row, Error> {
    progress(&format!("starting a crowd of {tasks} tasks"));
    let crowd = Crowd::start(&Spec {
        tasks,
        ..Default::default()
    })?;
    std::thread::sleep(Duration::from_millis(500));
    let mut own = Vec::new();
    let (mut rs, mut re) = (0, 0);
    for r in 0..plan.repeat {
        progress(&format!("{tasks} tasks: window {}/{}", r + 1, plan.repeat));
        let (o, s, e) = once(plan.seconds);
        own.push(o);
        (rs, re) = (rs.max(s), re.max(e));
    }
    let row = Row {
        crowd_tasks: tasks,
        host_processes: processes(),
        own_pct_median: super::labs::median(&own),
        own_pct: own,
        ratio_to_quiet: 1.0,
        reads_per_sample: rs,
        reads_per_edge: re,
        timer_list_read_ms: timed(|| {
            let _ = std::fs::read_to_string("/proc/timer_list");
        }),
        proc_scan_ms: timed(scan_proc),
    };
    drop(crowd);
    Ok(row)
}

/// Runs the plan: the quiet host first, then each crowd; ratios to the quiet host.
pub fn run(plan: &Plan, progress: &dyn Fn(&str)) -> Result<Vec<Row>, Error> {
    if plan.tasks.iter().any(|&t| t > super::crowd::MAX_TASKS) {
        return Err(Error::Input(format!(
            "--tasks: at most {} a crowd",
            super::crowd::MAX_TASKS
        )));
    }
    let mut rows = vec![row(0, plan, progress)?];
    for &t in plan.tasks.iter().filter(|&&t| t > 0) {
        rows.push(row(t, plan, progress)?);
    }
    let quiet = rows[0].own_pct_median.max(1e-9);
    for r in &mut rows {
        r.ratio_to_quiet = r.own_pct_median / quiet;
    }
    Ok(rows)
}

/// The table users read.
pub fn table(rows: &[Row], plan: &Plan) -> String {
    let mut o = format!(
        "the meter's own CPU beside a crowd of host tasks (half asleep on a timer, half blocked), {} windows of {} s each, 10 Hz samples; the peer is the quiet host\n",
        plan.repeat, plan.seconds
    );
    o += "crowd    processes  meter CPU % of a core [min–max]  × quiet  reads/sample  reads/edge  | no longer read: timer_list ms  /proc scan ms\n";
    for r in rows {
        let lo = r.own_pct.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = r.own_pct.iter().copied().fold(0.0, f64::max);
        let name = match r.crowd_tasks {
            0 => "quiet".to_string(),
            n => n.to_string(),
        };
        o += &format!(
            "{name:<8} {:>9}  {:>8.3} [{lo:.3}–{hi:.3}]          {:>6.2}  {:>12}  {:>10}  | {:>29.2}  {:>13.1}\n",
            r.host_processes, r.own_pct_median, r.ratio_to_quiet, r.reads_per_sample, r.reads_per_edge, r.timer_list_read_ms, r.proc_scan_ms
        );
    }
    o
}
