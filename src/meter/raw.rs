//! What the kernel said at one instant, as the texts it said it in (/proc/stat, /proc/timer_list,
//! cpuidle residencies, the scheduler's run time), parsed into the meter's snapshot only after.
//! Two of them a window apart, with the kernel's accounting facts, make a *recording*: what
//! `vnetlab meter --record FILE` writes and the meter's tests replay, so a kernel vnetlab runs on
//! once (tick or precise accounting, cgroup v1 or v2, with or without cpuidle, schedstat, steal)
//! stays a test case for good.

use super::error::Error;
use super::fs::Fs;
use super::kernel::Accounting;
use super::sched::{self, Source};
use super::{busy, procstat};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One instant's texts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawEdge {
    pub stat: String,
    pub timer_list: Option<String>,
    /// (CPU, microseconds in idle states) where the kernel has cpuidle.
    pub cpuidle: Vec<(usize, u64)>,
    /// The scheduler source's text (None: no source).
    pub sched: Option<String>,
}

/// A recording's files are kernel texts of a few KB; a larger one is not a recording.
const MAX_TEXT: usize = 4 << 20;

impl RawEdge {
    /// Reads everything now: /proc/stat, the timer list (where `idle` is empty and
    /// `timer_list`), cpuidle (of `cores`, or every CPU where empty), the source.
    pub fn read(
        fs: &Fs,
        source: Option<&Source>,
        (idle, timer_list): (&procstat::Cpuidle, bool),
        cores: &[usize],
    ) -> Result<RawEdge, Error> {
        let stat = fs
            .read("/proc/stat")
            .ok_or_else(|| Error::Unreadable("/proc/stat cannot be read".into()))?;
        let timer_list = (timer_list && idle.is_empty())
            .then(|| fs.read("/proc/timer_list"))
            .flatten();
        let ids = procstat::parse(&stat)?.ids;
        let cpuidle = ids
            .iter()
            .filter(|c| cores.is_empty() || cores.contains(c))
            .filter_map(|&c| Some((c, idle.us(fs, c)?)))
            .collect();
        Ok(RawEdge {
            stat,
            timer_list,
            cpuidle,
            sched: source.and_then(|s| s.text(fs)),
        })
    }

    /// The snapshot and the scheduler's reading these texts give.
    pub fn parse(
        &self,
        source: Option<&Source>,
    ) -> Result<(procstat::Snapshot, sched::Reading), Error> {
        let mut s = procstat::parse(&self.stat)?;
        let idle: BTreeMap<usize, u64> = self.cpuidle.iter().copied().collect();
        s.idle_us = s.ids.iter().map(|c| idle.get(c).copied()).collect();
        if let Some(t) = &self.timer_list {
            let tl = procstat::timer_list_idle_ns(t);
            s.idle_ns = s.ids.iter().map(|c| tl.get(c).copied()).collect();
        }
        let r = match (source, &self.sched) {
            (Some(src), Some(t)) => src.parse(t),
            _ => sched::Reading::default(),
        };
        Ok((s, r))
    }
}

/// Two instants a window apart on one kernel, and what the meter should make of them.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    /// What was running (one line).
    pub note: String,
    pub window_s: f64,
    pub ticks_per_s: f64,
    pub kernel: Accounting,
    pub source: Option<Source>,
    pub a: RawEdge,
    pub b: RawEdge,
}

const KINDS: [&str; 4] = ["stat", "timer_list", "cpuidle", "sched"];

impl Recording {
    /// Each CPU's time over the recorded window, as the meter reads it.
    pub fn cores(&self) -> Result<BTreeMap<usize, busy::CoreTime>, Error> {
        let src = self.source.as_ref();
        let (sa, ra) = self.a.parse(src)?;
        let (sb, rb) = self.b.parse(src)?;
        let basis = busy::Basis {
            ticks_per_s: self.ticks_per_s,
            acct: &self.kernel,
            sched_steal: src.is_some_and(|s| s.includes_steal(self.kernel.steal_in_task_clock())),
        };
        Ok(busy::cores((&sa, &ra), (&sb, &rb), self.window_s, basis))
    }

    /// The text form: a header of `key: value` lines, then `--- EDGE KIND` sections.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let k = serde_json::to_string(&self.kernel).unwrap_or_default();
        let src = match &self.source {
            Some(Source::CpuacctV1(d)) => format!("cpuacct-v1 {}", d.display()),
            Some(Source::Schedstat) => "schedstat".into(),
            Some(Source::V2Sum(d)) => format!("v2-sum {}", d.display()),
            None => "none".into(),
        };
        let _ = write!(
            o,
            "# vnetlab meter recording\nnote: {}\nwindow_s: {}\nticks_per_s: {}\nkernel: {k}\nsched: {src}\n",
            self.note.replace('\n', " "),
            self.window_s,
            self.ticks_per_s
        );
        for (name, e) in [("a", &self.a), ("b", &self.b)] {
            let idle: String = e
                .cpuidle
                .iter()
                .map(|(c, us)| format!("{c} {us}\n"))
                .collect();
            let texts = [
                Some(e.stat.clone()),
                e.timer_list.clone(),
                (!e.cpuidle.is_empty()).then_some(idle),
                e.sched.clone(),
            ];
            for (kind, t) in KINDS.iter().zip(texts) {
                if let Some(t) = t {
                    let _ = write!(o, "--- {name} {kind}\n{}", t);
                    if !t.ends_with('\n') {
                        o.push('\n');
                    }
                }
            }
        }
        o
    }

    /// Reads the text form back; anything malformed is an error naming the line.
    pub fn parse(text: &str) -> Result<Recording, Error> {
        if text.len() > MAX_TEXT {
            return Err(bad("larger than 4 MiB"));
        }
        let mut head: BTreeMap<&str, &str> = BTreeMap::new();
        let mut sections: BTreeMap<(String, String), String> = BTreeMap::new();
        let mut cur: Option<(String, String)> = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("--- ") {
                let (e, k) = rest
                    .split_once(' ')
                    .filter(|(e, k)| ["a", "b"].contains(e) && KINDS.contains(k))
                    .ok_or_else(|| {
                        bad(&format!("unknown section '{}'", crate::text::clip(line)))
                    })?;
                cur = Some((e.into(), k.into()));
                sections.entry((e.into(), k.into())).or_default();
            } else if let Some(key) = &cur {
                let s = sections.get_mut(key).expect("section made above");
                s.push_str(line);
                s.push('\n');
            } else if let Some((k, v)) = line.split_once(": ") {
                head.insert(k, v);
            }
        }
        let num = |k: &str| -> Result<f64, Error> {
            head.get(k)
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or_else(|| bad(&format!("no positive '{k}'")))
        };
        let kernel: Accounting = serde_json::from_str(head.get("kernel").copied().unwrap_or(""))
            .map_err(|e| bad(&format!("kernel: {e}")))?;
        let source = match head
            .get("sched")
            .map(|s| s.split_once(' ').unwrap_or((s, "")))
        {
            Some(("cpuacct-v1", d)) => Some(Source::CpuacctV1(d.into())),
            Some(("schedstat", _)) => Some(Source::Schedstat),
            Some(("v2-sum", d)) => Some(Source::V2Sum(d.into())),
            _ => None,
        };
        let edge = |e: &str| -> Result<RawEdge, Error> {
            let get = |k: &str| sections.get(&(e.to_string(), k.to_string())).cloned();
            let cpuidle = get("cpuidle")
                .unwrap_or_default()
                .lines()
                .map(|l| {
                    let (c, us) = l.split_once(' ')?;
                    Some((c.parse().ok()?, us.trim().parse().ok()?))
                })
                .collect::<Option<Vec<(usize, u64)>>>()
                .ok_or_else(|| bad("a cpuidle line is not 'CPU MICROSECONDS'"))?;
            Ok(RawEdge {
                stat: get("stat").ok_or_else(|| bad(&format!("no '--- {e} stat' section")))?,
                timer_list: get("timer_list"),
                cpuidle,
                sched: get("sched"),
            })
        };
        Ok(Recording {
            note: head.get("note").unwrap_or(&"").to_string(),
            window_s: num("window_s")?,
            ticks_per_s: num("ticks_per_s")?,
            kernel,
            source,
            a: edge("a")?,
            b: edge("b")?,
        })
    }
}

fn bad(why: &str) -> Error {
    Error::Unreadable(format!("not a vnetlab meter recording: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::cpu::SideTime;

    fn load(name: &str) -> Recording {
        let p = format!("{}/tests/fixtures/meter/{name}", env!("CARGO_MANIFEST_DIR"));
        let t = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
        Recording::parse(&t).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    fn host(r: &Recording, cores: &[usize]) -> SideTime {
        SideTime::of(&r.cores().unwrap(), cores, r.window_s)
    }

    #[test]
    fn a_recording_reads_back_as_it_was_written() {
        for name in [
            "tick-v1-idle.rec",
            "tick-v1-paced.rec",
            "tick-v2-idle.rec",
            "generic-schedstat-v2.rec",
            "generic-v2.rec",
        ] {
            let r = load(name);
            assert_eq!(Recording::parse(&r.to_text()).unwrap(), r, "{name}");
        }
        assert!(Recording::parse("note: x\n--- c stat\n").is_err());
        assert!(Recording::parse("window_s: 1\nticks_per_s: 100\nkernel: {}\n").is_err());
        assert!(Recording::parse(&"x".repeat(5 << 20)).is_err());
    }

    /// This host (tick accounting, cgroup v1, cpuidle) with a paced 8 KB stream through a bridge
    /// on core 0: /proc/stat's busy ticks read 98.8 % of a core 10 % busy (the 1 ms pacer beats
    /// with the 250 Hz tick); NO_HZ idle and the scheduler agree within a point, no steal.
    #[test]
    fn a_tick_kernel_under_a_paced_stream_reads_from_nanoseconds() {
        let r = load("tick-v1-paced.rec");
        let h = host(&r, &[0]);
        assert!(
            h.ticks_pct > 90.0,
            "the ticks are this host's aliasing: {h:?}"
        );
        assert!(
            (h.busy_pct - 10.01).abs() < 0.01 && h.half_width_pct() < 1e-9,
            "{h:?}"
        );
        let sched = h.sched_pct.unwrap();
        assert!(sched <= h.busy_pct && h.busy_pct - sched < 1.0, "{h:?}");
        assert_eq!(h.unmeasurable("host"), None);
    }

    /// The same host idle, read through cgroup v1 and through cgroup v2's machine-wide sum.
    #[test]
    fn an_idle_host_reads_near_zero_from_either_hierarchy() {
        for name in ["tick-v1-idle.rec", "tick-v2-idle.rec"] {
            let r = load(name);
            let times = r.cores().unwrap();
            let all: Vec<usize> = times.keys().copied().collect();
            let h = SideTime::of(&times, &all, r.window_s);
            assert!(
                h.busy_pct < 2.0 && h.unmeasurable("machine").is_none(),
                "{name}: {h:?}"
            );
            let (sa, ra) = r.a.parse(r.source.as_ref()).unwrap();
            let (_, rb) = r.b.parse(r.source.as_ref()).unwrap();
            assert!(
                sa.idle_us.iter().all(Option::is_some),
                "{name}: cpuidle recorded"
            );
            let steal = r.source.as_ref().is_some_and(|s| s.includes_steal(false));
            assert_eq!(
                busy::machine_check(&times, &ra, &rb, r.window_s, steal),
                None,
                "{name}"
            );
        }
        assert!(load("tick-v2-idle.rec")
            .cores()
            .unwrap()
            .values()
            .all(|t| t.sched_s.is_none()));
    }

    /// Debian's generic kernel under QEMU (scripts/record-meter-guest.sh): CPU 1 `nohz_full`
    /// (exact virt-gen accounting), CPU 0 counting ticks, one shell loop spinning and one waking
    /// every 3 ms; no kernel configuration to read, /proc/schedstat or cgroup v2 only, no steal.
    /// The scheduler's run time never exceeds the awake time. On CPU 0 it falls short of it only
    /// by the interrupts taken while idle (a few points under TCG); on the tickless CPU 1 the
    /// spinning loop never left the CPU, so /proc/schedstat (charged when a task is switched out)
    /// had charged nothing yet: the scheduler is a lower bound only, the figure the awake time.
    #[test]
    fn a_generic_kernel_with_schedstat_or_v2_agrees_with_its_awake_time() {
        for name in ["generic-schedstat-v2.rec", "generic-v2.rec"] {
            let r = load(name);
            assert_eq!(r.kernel.from, "not found");
            let times = r.cores().unwrap();
            for (c, t) in &times {
                let one = SideTime::of(&times, &[*c], r.window_s);
                assert_eq!(one.unmeasurable("CPU"), None, "{name} CPU {c}: {one:?}");
                if let Some(s) = one.sched_pct {
                    let gap = one.awake_pct - s;
                    assert!(
                        gap > -1.0 && (*c == 1 || gap < 5.0),
                        "{name} CPU {c}: {one:?}"
                    );
                }
                assert_eq!(t.steal_s, 0.0);
            }
            let all = SideTime::of(&times, &[0, 1], r.window_s);
            assert!(
                all.busy_pct > 50.0,
                "{name}: the spinning loop holds a CPU: {all:?}"
            );
        }
    }
}
