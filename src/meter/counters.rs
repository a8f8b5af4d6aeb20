//! Hardware counters (cycles, instructions) through perf_event_open: for the whole host (one
//! counter per CPU) and per part where the part's cgroup can be named to perf (cgroup v2). Hosts
//! without them (virtual machines, this one) get a plain "not supported" with the reason.

use serde::{Deserialize, Serialize};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;

#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_HARDWARE: u32 = 0;
const CYCLES: u64 = 0;
const INSTRUCTIONS: u64 = 1;
const PERF_FLAG_PID_CGROUP: libc::c_ulong = 1 << 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

fn open(config: u64, pid: i32, cpu: i32, flags: libc::c_ulong) -> Result<OwnedFd, std::io::Error> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_HARDWARE,
        size: 64,
        config,
        ..Default::default()
    };
    // SAFETY: `attr` is a perf_event_attr of the size it declares that outlives the call; the kernel only reads it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            pid,
            cpu,
            -1,
            flags | PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: perf_event_open just returned this fd and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn value(fd: &OwnedFd) -> u64 {
    let mut v = 0u64;
    // SAFETY: `v` is a u64: the kernel writes at most the 8 bytes asked for.
    let r = unsafe {
        libc::read(
            std::os::fd::AsRawFd::as_raw_fd(fd),
            (&mut v as *mut u64).cast(),
            8,
        )
    };
    if r == 8 {
        v
    } else {
        0
    }
}

/// Whether this host counts cycles; Err names why not.
pub fn probe() -> Result<(), String> {
    open(CYCLES, 0, -1, 0)
        .map(|_| ())
        .map_err(|e| format!("perf_event_open(cycles): {e}"))
}

/// Running counters for the host and some parts.
pub struct Counters {
    host: Vec<(OwnedFd, OwnedFd)>,
    parts: Vec<(String, Vec<(OwnedFd, OwnedFd)>)>,
    notes: Vec<String>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct CounterValues {
    pub cycles: u64,
    pub instructions: u64,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct CounterReport {
    pub host: CounterValues,
    pub parts: Vec<(String, CounterValues)>,
    pub notes: Vec<String>,
}

fn per_cpu(
    pid: i32,
    flags: libc::c_ulong,
    ncpu: usize,
) -> Result<Vec<(OwnedFd, OwnedFd)>, std::io::Error> {
    (0..ncpu as i32)
        .map(|c| {
            Ok((
                open(CYCLES, pid, c, flags)?,
                open(INSTRUCTIONS, pid, c, flags)?,
            ))
        })
        .collect()
}

impl Counters {
    /// Starts counting; `parts` are (name, cgroup v2 folder). Err: not supported here.
    pub fn start(parts: &[(String, Option<&Path>)], ncpu: usize) -> Result<Counters, String> {
        probe()?;
        let host =
            per_cpu(-1, 0, ncpu).map_err(|e| format!("system-wide counters: {e} (needs root)"))?;
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
            cycles: v.iter().map(|(c, _)| value(c)).sum(),
            instructions: v.iter().map(|(_, i)| value(i)).sum(),
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
