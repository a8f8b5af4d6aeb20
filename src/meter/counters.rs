//! Hardware counters (cycles, instructions) through perf_event_open: for the whole host (one
//! counter per CPU) and per part where the part's cgroup can be named to perf (cgroup v2). Hosts
//! without them (virtual machines, this one) get a plain "not supported" with the reason.

use super::error::Error;
use std::os::fd::OwnedFd;

use crate::records::cpu::{CounterReport, CounterValues};
use crate::sys::perf::{self, Hw, PERF_FLAG_PID_CGROUP};
use std::path::Path;

/// Whether this host counts cycles; Err names why not.
pub fn probe() -> Result<(), Error> {
    perf::open(Hw::Cycles, 0, -1, 0)
        .map(|_| ())
        .map_err(|e| Error::Unsupported(format!("perf_event_open(cycles): {e}")))
}

/// Running counters for the host and some parts.
pub struct Counters {
    host: Vec<(OwnedFd, OwnedFd)>,
    parts: Vec<(String, Vec<(OwnedFd, OwnedFd)>)>,
    notes: Vec<String>,
}

fn per_cpu(
    pid: i32,
    flags: libc::c_ulong,
    ncpu: usize,
) -> Result<Vec<(OwnedFd, OwnedFd)>, std::io::Error> {
    (0..ncpu as i32)
        .map(|c| {
            Ok((
                perf::open(Hw::Cycles, pid, c, flags)?,
                perf::open(Hw::Instructions, pid, c, flags)?,
            ))
        })
        .collect()
}

impl Counters {
    /// Starts counting; `parts` are (name, cgroup v2 folder). Err: not supported here.
    pub fn start(parts: &[(String, Option<&Path>)], ncpu: usize) -> Result<Counters, Error> {
        probe()?;
        let host = per_cpu(-1, 0, ncpu)
            .map_err(|e| Error::Unsupported(format!("system-wide counters: {e} (needs root)")))?;
        let mut out = Counters {
            host,
            parts: Vec::new(),
            notes: Vec::new(),
        };
        for (name, dir) in parts {
            let Some(dir) = dir else {
                out.notes.push(format!("{name}: no perf_event cgroup to count in (cgroup v1 without a perf_event hierarchy)"));
                continue;
            };
            let fd = match std::fs::File::open(dir) {
                Ok(f) => f,
                Err(e) => {
                    out.notes.push(format!("{name}: {e}"));
                    continue;
                }
            };
            match per_cpu(
                std::os::fd::AsRawFd::as_raw_fd(&fd),
                PERF_FLAG_PID_CGROUP,
                ncpu,
            ) {
                Ok(v) => out.parts.push((name.clone(), v)),
                Err(e) => out.notes.push(format!("{name}: {e}")),
            }
        }
        Ok(out)
    }

    pub fn read(&self) -> CounterReport {
        let sum = |v: &[(OwnedFd, OwnedFd)]| CounterValues {
            cycles: v.iter().map(|(c, _)| perf::value(c)).sum(),
            instructions: v.iter().map(|(_, i)| perf::value(i)).sum(),
        };
        CounterReport {
            host: sum(&self.host),
            parts: self
                .parts
                .iter()
                .map(|(n, v)| (n.clone(), sum(v)))
                .collect(),
            notes: self.notes.clone(),
        }
    }
}

/// Counter values over a window: later minus earlier.
pub fn delta(a: &CounterReport, b: &CounterReport) -> CounterReport {
    let d = |x: &CounterValues, y: &CounterValues| CounterValues {
        cycles: y.cycles.saturating_sub(x.cycles),
        instructions: y.instructions.saturating_sub(x.instructions),
    };
    CounterReport {
        host: d(&a.host, &b.host),
        parts: b
            .parts
            .iter()
            .map(|(n, v)| {
                (
                    n.clone(),
                    a.parts
                        .iter()
                        .find(|(m, _)| m == n)
                        .map(|(_, u)| d(u, v))
                        .unwrap_or_else(|| v.clone()),
                )
            })
            .collect(),
        notes: b.notes.clone(),
    }
}
