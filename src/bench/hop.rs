//! The host's price of one more hop: the host core's CPU when an event that arrives from the
//! client's core passes through one more task on the host's core before it is answered. A
//! userspace device model's backend is such a task (the bridge has none), so at a paced rate,
//! where the host core sleeps between frames, its wake-ups times this price are what it must
//! cost over the bridge however lean its loop. `bench vnic` measures the price on the cores a
//! lab gives the host and the client, and prints the bridge plus that much beside the paced
//! ratios.
//!
//! One ping is a byte from a driver thread on the client's core, answered by an echo thread on
//! the host's core, either directly or through a relay thread on the host's core; pings are paced
//! `gap` apart so the host core sleeps between them, as it does between paced frames. Each host
//! thread's CPU comes from its own clock (`CLOCK_THREAD_CPUTIME_ID`, nanoseconds), so the figure
//! leaves out the core's wake from idle, which both ways pay: the hop is the relay's CPU and the
//! echo's change between the two ways, a lower bound on what one more task costs.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use crate::stats::{spread, Spread};

/// Every read and write of a ping waits at most this long: a lost thread fails the probe.
const TIMEOUT: Duration = Duration::from_secs(2);
/// Pings each thread answers before its CPU clock is read: thread start and first faults.
const WARM: u32 = 20;

/// Why the probe failed. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The probe's settings cannot make a measurement.
    #[error("{0}")]
    Input(String),
    /// A socket, a thread or pinning refused, or a ping came back wrong or late.
    #[error("the hop probe failed: {0}")]
    Failed(String),
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Failed(e.to_string())
    }
}

/// Where and how the probe ran.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Setup {
    pub host_cpu: usize,
    pub client_cpu: usize,
    /// Microseconds between pings.
    pub gap_us: f64,
    /// Pings per way and round (after `WARM`).
    pub pings: u32,
    pub rounds: u32,
}

/// What one more task on the host's core costs per event, in microseconds of its CPU.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HopCost {
    pub setup: Setup,
    /// The echo's CPU per ping when it answers directly.
    pub direct_us: Spread,
    /// The relay's and the echo's CPU per ping together, through the relay.
    pub relayed_us: Spread,
    /// Per round, relayed less direct: the hop.
    pub hop_us: Spread,
}

/// Measures the hop: `rounds` rounds, each the direct way then the relayed way, `pings` pings
/// `gap` apart.
pub fn measure(setup: Setup) -> Result<HopCost, Error> {
    if setup.pings == 0 || setup.rounds == 0 || setup.host_cpu == setup.client_cpu {
        return Err(Error::Input(
            "the hop probe needs pings, rounds, and a host core apart from the client's".into(),
        ));
    }
    let (mut direct, mut relayed, mut hop) = (vec![], vec![], vec![]);
    for _ in 0..setup.rounds {
        let d = one_way(&setup, 1)?;
        let r = one_way(&setup, 2)?;
        direct.push(d);
        relayed.push(r);
        hop.push(r - d);
    }
    Ok(HopCost {
        setup,
        direct_us: spread(&direct, 95),
        relayed_us: spread(&relayed, 95),
        hop_us: spread(&hop, 95),
    })
}

/// The host threads' CPU per ping, µs, when the ping passes `stages` host threads (1: the echo
/// alone; 2: a relay, then the echo).
fn one_way(setup: &Setup, stages: usize) -> Result<f64, Error> {
    // Sockets in a chain: driver → stage 1 → … → stage n → driver.
    let mut links = Vec::with_capacity(stages + 1);
    for _ in 0..=stages {
        let (a, b) = UnixStream::pair()?;
        for s in [&a, &b] {
            s.set_read_timeout(Some(TIMEOUT))?;
            s.set_write_timeout(Some(TIMEOUT))?;
        }
        links.push((a, b));
    }
    let total = setup.pings + WARM;
    let host = setup.host_cpu;
    let mut ends = links.into_iter();
    let (mut to_first, mut from_driver) = ends.next().expect("stages + 1 links");
    let mut handles = Vec::with_capacity(stages);
    for (tx, rx) in ends {
        let input = std::mem::replace(&mut from_driver, rx);
        handles.push(std::thread::spawn(move || stage(host, total, input, tx)));
    }
    let mut from_last = from_driver;
    let driven = drive(setup, total, &mut to_first, &mut from_last);
    drop((to_first, from_last));
    let mut cpu_s = 0.0;
    for h in handles {
        cpu_s += h
            .join()
            .map_err(|_| Error::Failed("a probe thread panicked".into()))??;
    }
    driven?;
    Ok(cpu_s * 1e6 / f64::from(setup.pings))
}

/// One host thread: pinned to `cpu`, passes `total` one-byte pings from `input` to `output`, and
/// returns its CPU seconds over the pings after the warm ones.
fn stage(
    cpu: usize,
    total: u32,
    mut input: UnixStream,
    mut output: UnixStream,
) -> Result<f64, Error> {
    crate::sys::set_affinity(0, &[cpu])?;
    let mut b = [0u8; 1];
    let mut start = 0.0;
    for i in 0..total {
        if i == WARM {
            start = crate::sys::thread_cpu_s();
        }
        input.read_exact(&mut b)?;
        output.write_all(&b)?;
    }
    Ok(crate::sys::thread_cpu_s() - start)
}

/// The driver: on the client's core, sends `total` pings `gap` apart, each numbered, and checks
/// each comes back with its number before the next.
fn drive(
    setup: &Setup,
    total: u32,
    out: &mut UnixStream,
    back: &mut UnixStream,
) -> Result<(), Error> {
    let pinned = crate::sys::affinity(0)?;
    crate::sys::set_affinity(0, &[setup.client_cpu])?;
    let gap = Duration::from_secs_f64(setup.gap_us / 1e6);
    let t0 = Instant::now();
    let mut result = Ok(());
    for i in 0..total {
        let n = [(i % 251) as u8];
        let mut b = [0u8; 1];
        if let Err(e) = out.write_all(&n).and_then(|_| back.read_exact(&mut b)) {
            result = Err(e.into());
            break;
        }
        if b != n {
            result = Err(Error::Failed(format!(
                "ping {i} came back as {} instead of {}",
                b[0], n[0]
            )));
            break;
        }
        let due = gap * (i + 1);
        if let Some(wait) = due.checked_sub(t0.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    crate::sys::set_affinity(0, &pinned)?;
    result
}

/// The extra host CPU per Gb/s, % of a core, that `wakeups_per_gbit` wake-ups of a backend cost
/// at `hop_us` each: what a device model that wakes that often adds to the bridge at least.
pub fn extra_pct_per_gbps(wakeups_per_gbit: f64, hop_us: f64) -> f64 {
    wakeups_per_gbit * hop_us.max(0.0) * 1e-6 * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_cores() -> Option<(usize, usize)> {
        let c = crate::sys::affinity(0).ok()?;
        (c.len() >= 2).then(|| (c[0], c[1]))
    }

    #[test]
    fn every_ping_returns_through_the_relay_and_both_ways_cost_cpu() {
        let Some((host, client)) = two_cores() else {
            return;
        };
        let setup = Setup {
            host_cpu: host,
            client_cpu: client,
            gap_us: 200.0,
            pings: 100,
            rounds: 2,
        };
        let before = crate::sys::affinity(0).unwrap();
        let h = measure(setup).unwrap();
        assert_eq!(h.hop_us.n, 2);
        assert!(h.direct_us.min > 0.0 && h.relayed_us.min > 0.0, "{h:?}");
        // The driver put its own affinity back.
        assert_eq!(crate::sys::affinity(0).unwrap(), before);
    }

    #[test]
    fn a_probe_on_one_core_or_without_pings_is_refused() {
        let s = |host, pings| Setup {
            host_cpu: host,
            client_cpu: 0,
            gap_us: 100.0,
            pings,
            rounds: 1,
        };
        assert!(matches!(measure(s(0, 10)), Err(Error::Input(_))));
        assert!(matches!(measure(s(1, 0)), Err(Error::Input(_))));
    }

    #[test]
    fn the_extra_is_wakeups_times_the_hop() {
        // 10,000 wake-ups per Gbit at 5 µs: 0.05 s of a core per Gbit = 5 % per Gb/s.
        assert!((extra_pct_per_gbps(10_000.0, 5.0) - 5.0).abs() < 1e-9);
        assert_eq!(extra_pct_per_gbps(10_000.0, -1.0), 0.0);
    }
}
