//! How busy each CPU was over a window, from every source the kernel offers, cross-checked.
//!
//! - **Awake**: the window less the CPU's idle time, in nanoseconds where the kernel keeps them
//!   (NO_HZ idle in /proc/timer_list, cpuidle residency), else /proc/stat's idle column. It holds
//!   interrupts taken while idle, and any time the hypervisor stole while the CPU was awake.
//! - **Scheduler**: tasks' run time (`sched`), which leaves out interrupts taken while idle and,
//!   on most virtual machines, stolen time.
//! - **Steal**: /proc/stat's steal column. A vCPU woken from a halt waits for the hypervisor while
//!   its kernel still counts it idle, so steal falls in idle time as well as in awake time, and
//!   subtracting all of it from awake time (what vnetlab did) read loaded cores as 0 %.
//! - **Ticks**: /proc/stat's busy columns, 10 ms samples on a tick-counting kernel: shown, never
//!   used for the figure where a finer source exists.
//!
//! The busy time lies between two bounds that only the facts allow: at most awake time less the
//! steal that idle time could not have held, at least awake time less all steal and at least the
//! scheduler's run time. The figure is the middle of the two, its uncertainty half their distance.
//! Sources that contradict each other (bounds crossed) or leave the figure wider than the
//! tolerance make a window unmeasurable, with the reason.

use super::kernel::Accounting;
use super::procstat::Snapshot;
use super::sched;
use crate::records::cpu::SideTime;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a CPU's idle time was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdleFrom {
    /// NO_HZ idle nanoseconds (/proc/timer_list).
    Nanoseconds,
    /// cpuidle residency, microseconds.
    Cpuidle,
    /// /proc/stat's idle column (10 ms units).
    Ticks,
}

/// One CPU over a window, seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CoreTime {
    /// The figure: the middle of `lo` and `hi`.
    pub busy_s: f64,
    pub lo_s: f64,
    pub hi_s: f64,
    /// The window less idle.
    pub awake_s: f64,
    pub steal_s: f64,
    /// Tasks' run time (None: the source keeps no per-CPU figure).
    pub sched_s: Option<f64>,
    /// /proc/stat's busy columns.
    pub ticks_s: f64,
    /// How far the sources contradict each other (the lower bound above the upper), else 0.
    pub conflict_s: f64,
    pub idle_from: Option<IdleFrom>,
}

/// What the sources mean on this kernel.
#[derive(Clone, Copy, Debug)]
pub struct Basis<'a> {
    pub ticks_per_s: f64,
    pub acct: &'a Accounting,
    /// Whether the scheduler source counts time stolen while tasks ran.
    pub sched_steal: bool,
}

/// One CPU's idle seconds and where they came from: NO_HZ nanoseconds unless they disagree with
/// the ticks by more than three ticks and 2 % of the window (a kernel that counts otherwise),
/// then cpuidle's microseconds where they agree with the ticks within two, else the ticks.
fn idle(
    ticks: u64,
    hz: f64,
    ns: Option<(u64, u64)>,
    us: Option<u64>,
    window_s: f64,
) -> (f64, IdleFrom) {
    let coarse = ticks as f64 / hz;
    if let Some((a, b)) = ns {
        let fine = b.saturating_sub(a) as f64 / 1e9;
        if (fine - coarse).abs() <= 3.0 / hz + 0.02 * window_s {
            return (fine, IdleFrom::Nanoseconds);
        }
    }
    match us {
        Some(us) if (us as f64 / 1e6 - coarse).abs() <= 2.0 / hz => {
            (us as f64 / 1e6, IdleFrom::Cpuidle)
        }
        _ => (coarse, IdleFrom::Ticks),
    }
}

/// The bounds of one CPU's busy time from its awake, steal and scheduler seconds.
fn bounds(
    awake: f64,
    idle: f64,
    steal: f64,
    sched_floor: Option<f64>,
    steal_in_idle: bool,
) -> (f64, f64) {
    let (lo, hi) = if steal_in_idle {
        (awake - steal, awake - (steal - idle).max(0.0))
    } else {
        (awake - steal, awake - steal)
    };
    let lo = sched_floor.map_or(lo, |s| lo.max(s)).max(0.0);
    (lo, hi.max(0.0))
}

/// Each online CPU's time between two readings `window_s` apart.
pub fn cores(
    a: (&Snapshot, &sched::Reading),
    b: (&Snapshot, &sched::Reading),
    window_s: f64,
    basis: Basis,
) -> BTreeMap<usize, CoreTime> {
    let hz = basis.ticks_per_s;
    b.0.ids
        .iter()
        .zip(&b.0.cores)
        .enumerate()
        .filter_map(|(k, (&id, y))| {
            let ka = a.0.ids.iter().position(|&i| i == id)?;
            let d = y.delta(&a.0.cores[ka]);
            let pair = |x: Option<u64>, z: Option<u64>| x.zip(z);
            let ns = pair(
                a.0.idle_ns.get(ka).copied().flatten(),
                b.0.idle_ns.get(k).copied().flatten(),
            );
            let us = pair(
                a.0.idle_us.get(ka).copied().flatten(),
                b.0.idle_us.get(k).copied().flatten(),
            )
            .map(|(x, z)| z.saturating_sub(x));
            let (idle_s, from) = idle(d.idle + d.iowait, hz, ns, us, window_s);
            let idle_s = idle_s.clamp(0.0, window_s);
            let awake = window_s - idle_s;
            let steal = (d.steal as f64 / hz).min(window_s);
            // A tick-counting kernel without NO_HZ counts idle in ticks with steal taken out.
            let steal_in_idle = !(from == IdleFrom::Ticks && basis.acct.nohz == Some(false));
            let sched_s = sched_delta(a.1, b.1, id);
            let irq = (basis.acct.irq_time == Some(true)).then(|| (d.irq + d.softirq) as f64 / hz);
            let floor = sched_s
                .map(|s| s - if basis.sched_steal { steal } else { 0.0 } + irq.unwrap_or(0.0));
            let (lo, hi) = bounds(awake, idle_s, steal, floor, steal_in_idle);
            Some((
                id,
                CoreTime {
                    busy_s: ((lo + hi) / 2.0).clamp(0.0, window_s),
                    lo_s: lo.min(window_s),
                    hi_s: hi.min(window_s),
                    awake_s: awake,
                    steal_s: steal,
                    sched_s,
                    ticks_s: (d.busy() - d.steal) as f64 / hz,
                    conflict_s: (lo - hi).max(0.0),
                    idle_from: Some(from),
                },
            ))
        })
        .collect()
}

fn sched_delta(a: &sched::Reading, b: &sched::Reading, cpu: usize) -> Option<f64> {
    let x = a.per_cpu.as_ref()?.get(cpu)?;
    let y = b.per_cpu.as_ref()?.get(cpu)?;
    Some((y - x).max(0.0))
}

/// The tolerance of a side's figures, percentage points of its cores: one point, or a tenth of
/// its busy share where that is larger. Bounds further apart than twice this, sources further
/// apart than this, or parts adding up past the total by more than this make it unmeasurable.
pub fn tolerance_pct(busy_pct: f64) -> f64 {
    (0.1 * busy_pct).max(1.0)
}

impl SideTime {
    /// Sums `cores` of `times`.
    pub fn of(times: &BTreeMap<usize, CoreTime>, cores: &[usize], window_s: f64) -> SideTime {
        let cap = window_s * cores.len().max(1) as f64 / 100.0;
        let got: Vec<&CoreTime> = cores.iter().filter_map(|c| times.get(c)).collect();
        let sum = |f: fn(&CoreTime) -> f64| got.iter().map(|t| f(t)).sum::<f64>() / cap;
        let sched: Option<f64> = got.iter().map(|t| t.sched_s).sum();
        SideTime {
            busy_pct: sum(|t| t.busy_s),
            lo_pct: sum(|t| t.lo_s),
            hi_pct: sum(|t| t.hi_s),
            awake_pct: sum(|t| t.awake_s),
            steal_pct: sum(|t| t.steal_s),
            sched_pct: sched.map(|s| s / cap),
            ticks_pct: sum(|t| t.ticks_s),
            conflict_pct: sum(|t| t.conflict_s),
        }
    }

    /// The figure's half-width, points.
    pub fn half_width_pct(&self) -> f64 {
        (self.hi_pct - self.lo_pct).max(0.0) / 2.0
    }

    /// Why this side's figure cannot be told from its sources, if it cannot.
    pub fn unmeasurable(&self, side: &str) -> Option<String> {
        let tol = tolerance_pct(self.busy_pct);
        if self.conflict_pct > tol {
            return Some(format!(
                "the {side}'s sources disagree by {:.1} points of its cores (awake {:.1} %, scheduler {}, steal {:.1} %), more than the {tol:.1}-point tolerance",
                self.conflict_pct,
                self.awake_pct,
                self.sched_pct.map_or("-".into(), |s| format!("{s:.1} %")),
                self.steal_pct
            ));
        }
        if self.half_width_pct() > tol {
            return Some(format!(
                "steal {:.1} % of the {side}'s cores: its busy time lies anywhere in {:.1}–{:.1} %, and the figure cannot be separated from the steal here (tolerance ±{tol:.1} points)",
                self.steal_pct, self.lo_pct, self.hi_pct
            ));
        }
        None
    }
}

/// A machine-wide scheduler total (cgroup v2) against the CPUs' bounds: the sources disagree
/// when tasks ran longer than the CPUs were awake (beyond the tolerance). Seconds in, a reason out.
pub fn machine_check(
    times: &BTreeMap<usize, CoreTime>,
    a: &sched::Reading,
    b: &sched::Reading,
    window_s: f64,
    sched_steal: bool,
) -> Option<String> {
    let run = b.total? - a.total?;
    let cap = window_s * times.len().max(1) as f64 / 100.0;
    let hi: f64 = times.values().map(|t| t.hi_s).sum();
    let steal: f64 = times.values().map(|t| t.steal_s).sum();
    let run = run - if sched_steal { steal } else { 0.0 };
    let (run_pct, hi_pct) = (run / cap, hi / cap);
    let tol = tolerance_pct(hi_pct);
    (run_pct > hi_pct + tol).then(|| {
        format!(
            "the scheduler counts {run_pct:.1} % of the machine run by tasks, more than the {hi_pct:.1} % its CPUs were awake (tolerance {tol:.1} points)"
        )
    })
}

/// /proc/stat's CPU lines as idle-tick-only snapshots, for tests elsewhere in the meter.
#[cfg(test)]
pub fn snapshot(text: &str, idle_ns: &[Option<u64>]) -> Snapshot {
    let mut s = super::procstat::parse(text).unwrap();
    s.idle_ns = idle_ns.to_vec();
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick_kernel() -> Accounting {
        Accounting::parse(
            "CONFIG_NO_HZ_COMMON=y\nCONFIG_TICK_CPU_ACCOUNTING=y\n# CONFIG_IRQ_TIME_ACCOUNTING is not set\nCONFIG_PARAVIRT_TIME_ACCOUNTING=y\nCONFIG_HZ=250\n",
            "",
            "test",
        )
    }

    fn one(
        a: (&str, Option<u64>, Option<f64>),
        b: (&str, Option<u64>, Option<f64>),
        w: f64,
        acct: &Accounting,
    ) -> CoreTime {
        let r = |s: Option<f64>| sched::Reading {
            per_cpu: s.map(|x| vec![x]),
            total: None,
        };
        let (sa, sb) = (snapshot(a.0, &[a.1]), snapshot(b.0, &[b.1]));
        let basis = Basis {
            ticks_per_s: 100.0,
            acct,
            sched_steal: false,
        };
        cores((&sa, &r(a.2)), (&sb, &r(b.2)), w, basis)[&0]
    }

    const Z: &str = "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0\n";

    /// The case: 2.5 s, awake 6 % (150 ms) by NO_HZ idle, the scheduler ran 5.5 %, steal
    /// 12 % (30 ticks) mostly while idle. The old rule read 6 - 12 = 0 %.
    #[test]
    fn steal_in_idle_time_no_longer_reads_a_loaded_core_as_idle() {
        let acct = tick_kernel();
        let b = "cpu  0 0 1 235 0 0 0 30 0 0\ncpu0 0 0 1 235 0 0 0 30\n";
        let t = one(
            (Z, Some(0), Some(0.0)),
            (b, Some(2_350_000_000), Some(0.1375)),
            2.5,
            &acct,
        );
        assert!((t.awake_s - 0.15).abs() < 1e-9);
        // At most awake (idle could hold all 0.3 s of steal); at least the scheduler's 0.1375 s.
        assert!(
            (t.hi_s - 0.15).abs() < 1e-9 && (t.lo_s - 0.1375).abs() < 1e-9,
            "{t:?}"
        );
        assert!((t.busy_s - 0.14375).abs() < 1e-9);
        assert_eq!(t.conflict_s, 0.0);
        let s = SideTime::of(&[(0, t)].into_iter().collect(), &[0], 2.5);
        assert!((s.busy_pct - 5.75).abs() < 1e-9 && s.half_width_pct() < 0.3);
        assert_eq!(s.unmeasurable("host"), None);
    }

    /// A saturated core has no idle to hide steal in: all of it was taken while awake.
    #[test]
    fn a_busy_core_loses_its_steal_exactly() {
        let acct = tick_kernel();
        let b = "cpu  80 0 0 0 0 0 0 20 0 0\ncpu0 80 0 0 0 0 0 0 20\n";
        let t = one((Z, Some(0), Some(0.0)), (b, Some(0), Some(0.8)), 1.0, &acct);
        assert!(
            (t.lo_s - 0.8).abs() < 1e-9 && (t.hi_s - 0.8).abs() < 1e-9,
            "{t:?}"
        );
    }

    /// Without a scheduler source, heavy steal on a lightly loaded core leaves it unknowable.
    #[test]
    fn steal_without_a_scheduler_source_is_said_to_be_unmeasurable() {
        let acct = tick_kernel();
        let b = "cpu  0 0 1 225 0 0 0 25 0 0\ncpu0 0 0 1 225 0 0 0 25\n";
        let t = one(
            (Z, Some(0), None),
            (b, Some(2_250_000_000), None),
            2.5,
            &acct,
        );
        let s = SideTime::of(&[(0, t)].into_iter().collect(), &[0], 2.5);
        assert_eq!(s.lo_pct, 0.0);
        let why = s.unmeasurable("host").unwrap();
        assert!(why.starts_with("steal 10.0 % of the host's cores"), "{why}");
    }

    /// A kernel whose idle ticks exclude steal (no NO_HZ): the old subtraction is exact.
    #[test]
    fn periodic_tick_idle_holds_no_steal() {
        let acct = Accounting::parse("# CONFIG_NO_HZ_COMMON is not set\n", "", "t");
        let b = "cpu  30 0 0 50 0 0 0 20 0 0\ncpu0 30 0 0 50 0 0 0 20\n";
        let t = one((Z, None, None), (b, None, None), 1.0, &acct);
        assert!((t.busy_s - 0.3).abs() < 1e-9 && t.lo_s == t.hi_s);
    }

    /// A scheduler that counts more than the core was awake contradicts it.
    #[test]
    fn sources_that_contradict_are_caught() {
        let acct = tick_kernel();
        let b = "cpu  10 0 0 90 0 0 0 0 0 0\ncpu0 10 0 0 90 0 0 0 0\n";
        let t = one(
            (Z, Some(0), Some(0.0)),
            (b, Some(900_000_000), Some(0.3)),
            1.0,
            &acct,
        );
        assert!((t.conflict_s - 0.2).abs() < 1e-9, "{t:?}");
        let s = SideTime::of(&[(0, t)].into_iter().collect(), &[0], 1.0);
        assert!(s
            .unmeasurable("host")
            .unwrap()
            .contains("disagree by 20.0 points"));
    }

    #[test]
    fn idle_nanoseconds_are_kept_only_where_they_agree_with_the_ticks() {
        assert_eq!(
            idle(100, 100.0, Some((0, 1_004_321_000)), None, 2.0),
            (1.004321, IdleFrom::Nanoseconds)
        );
        assert_eq!(
            idle(10, 100.0, Some((0, 500_000_000)), None, 1.0),
            (0.1, IdleFrom::Ticks)
        );
        assert_eq!(
            idle(100, 100.0, None, Some(1_004_321), 2.0),
            (1.004321, IdleFrom::Cpuidle)
        );
        assert_eq!(
            idle(100, 100.0, None, Some(600_000), 2.0),
            (1.0, IdleFrom::Ticks)
        );
    }

    #[test]
    fn a_v2_total_beyond_the_cpus_awake_time_is_a_disagreement() {
        let t = CoreTime {
            hi_s: 0.2,
            ..Default::default()
        };
        let times: BTreeMap<usize, CoreTime> = [(0, t), (1, t)].into_iter().collect();
        let r = |x: f64| sched::Reading {
            per_cpu: None,
            total: Some(x),
        };
        assert_eq!(machine_check(&times, &r(0.0), &r(0.41), 1.0, false), None);
        assert!(machine_check(&times, &r(0.0), &r(0.9), 1.0, false).is_some());
    }
}
