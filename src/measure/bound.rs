//! What bound a measured point: a saturated side or core, a single-threaded backend, the wire's
//! rate, or nothing. Per-Gbit costs for plans come only from points nothing bound.

pub use crate::vocab::Bound;

use super::target::Target;
use crate::engine::spec::Spec;
use crate::meter::PartKind;
use crate::records::cpu::CpuReport;
use crate::records::test::TestResult;
use crate::vocab::{Role, Senders};

/// A limit counts as reached at this share.
pub const SATURATED: f64 = 0.95;

/// What the classification reads: per-core busy % of each side, backends' cores, the delivered
/// rate and the wire's.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    pub host_cores: Vec<(usize, f64)>,
    pub client_cores: Vec<(usize, f64)>,
    pub backends: Vec<(Role, f64)>,
    pub gbps: f64,
    pub wire_bps: Option<u64>,
    /// The paced load offered (all streams), bits/s; None: as fast as it goes.
    pub offered_bps: Option<f64>,
}

fn mean(v: &[(usize, f64)]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().map(|x| x.1).sum::<f64>() / v.len() as f64)
}

/// The first limit reached, in the order: wire, host, client, one host core, one client core, a
/// backend; else None when a paced load was carried in full below every limit, and latency when
/// it was not (or nothing paced it).
pub fn classify(l: &Limits) -> Option<Bound> {
    let carried = matches!(l.offered_bps, Some(o) if l.gbps * 1e9 >= SATURATED * o);
    saturated(l).or(if carried { None } else { Some(Bound::Latency) })
}

fn saturated(l: &Limits) -> Option<Bound> {
    let pct = SATURATED * 100.0;
    if l.wire_bps
        .is_some_and(|w| l.gbps * 1e9 >= SATURATED * w as f64)
    {
        return Some(Bound::Wire);
    }
    if mean(&l.host_cores).is_some_and(|m| m >= pct) {
        return Some(Bound::Host);
    }
    if mean(&l.client_cores).is_some_and(|m| m >= pct) {
        return Some(Bound::Client);
    }
    if let Some((c, _)) = l.host_cores.iter().find(|x| x.1 >= pct) {
        return Some(Bound::HostCore(*c));
    }
    if let Some((c, _)) = l.client_cores.iter().find(|x| x.1 >= pct) {
        return Some(Bound::ClientCore(*c));
    }
    l.backends
        .iter()
        .find(|b| b.1 >= SATURATED)
        .map(|b| Bound::Backend(b.0))
}

/// What bound the point, from the meter's per-core figures, the backends, the wire (less
/// `wire_taken_bps`, what a flood took of it the same way) and the load offered (`streams` paced
/// streams at the spec's rate; VDI: the profiles' frames, carried when the frames due arrived).
pub fn bound_by(
    target: &Target,
    cpu: &CpuReport,
    spec: &Spec,
    result: &TestResult,
    wire_taken_bps: f64,
) -> Option<crate::vocab::Bound> {
    let streams = target.initiators();
    let gbps = result.throughput_gbps;
    // A core is used up by this machine's work and by what the hypervisor beneath it stole.
    let used = |c: usize| {
        cpu.per_core_busy_pct.get(&c).copied().unwrap_or(0.0)
            + cpu.per_core_steal_pct.get(&c).copied().unwrap_or(0.0)
    };
    let core = |list: &[usize]| list.iter().map(|&c| (c, used(c))).collect::<Vec<_>>();
    let limits = Limits {
        host_cores: core(&cpu.host_cores),
        client_cores: core(&cpu.client_cores),
        backends: cpu
            .parts
            .iter()
            .filter(|p| p.kind == PartKind::Backend)
            .filter_map(|p| Some((p.role?, p.cores)))
            .collect(),
        gbps,
        // Traffic between two guests stays on the host and never meets the wire's rate.
        wire_bps: match target {
            Target::Lab { rec, from, to, .. } if crosses_wire(from, *to) => {
                let share = payload_share(spec.test, rec.topology.mtu, spec.msg as u64);
                rec.topology
                    .wire
                    .rate
                    .map(|r| ((r.0 as f64 - wire_taken_bps).max(0.0) * share) as u64)
            }
            _ => None,
        },
        offered_bps: match &result.vdi {
            // Frames that arrive late (over 1 % of those due) are not a carried load either.
            Some(v) if v.total.late_pct > 1.0 => Some(f64::INFINITY),
            Some(v) if v.total.fps > 0.0 => Some(gbps * 1e9 * v.total.target_fps / v.total.fps),
            Some(_) => Some(f64::INFINITY),
            None => spec
                .rate
                .filter(|_| !spec.test.is_rr())
                .map(|r| r as f64 * (streams as u32 * spec.parallel) as f64),
        },
    };
    classify(&limits)
}

/// The share of a wire's rate (frames, as its shaper counts them) that a test's payload can be:
/// TCP's segment (the MTU less IPv4 20, TCP 20 and timestamps 12) per frame (the MTU and
/// Ethernet's 14), a UDP datagram per its frame. TCP fills a 1 Gb/s wire at 0.956 Gb/s of payload
/// at MTU 1500: the wire bound a stream at 95 % of that, not at 95 % of the raw rate, which left
/// the verdict to a 0.6 % margin (a stream beside a flood read 0.6615 against 0.6608 needed).
fn payload_share(test: crate::vocab::TestKind, mtu: u32, msg: u64) -> f64 {
    let mtu = mtu.max(576) as f64;
    if test.is_udp() {
        // The frame's extra less Ethernet's 14 is what the datagram's IP packet adds.
        let extra = super::load::UDP_FRAME_EXTRA as f64;
        let d = (msg as f64).clamp(1.0, mtu - (extra - 14.0));
        d / (d + extra)
    } else {
        (mtu - 52.0) / (mtu + 14.0)
    }
}

/// Whether traffic from `from` to `to` crosses the wire between the host and the client.
fn crosses_wire(from: &Senders, to: Role) -> bool {
    from.side() != to.side()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim(host: &[f64], client: &[f64]) -> Limits {
        Limits {
            host_cores: host.iter().enumerate().map(|(i, &v)| (i, v)).collect(),
            client_cores: client
                .iter()
                .enumerate()
                .map(|(i, &v)| (i + host.len(), v))
                .collect(),
            gbps: 1.0,
            offered_bps: Some(1e9),
            ..Default::default()
        }
    }

    #[test]
    fn a_paced_point_below_every_limit_is_unbound() {
        assert_eq!(classify(&lim(&[40.0], &[30.0])), None);
        assert_eq!(
            classify(&Limits {
                wire_bps: Some(10_000_000_000),
                ..lim(&[40.0], &[30.0])
            }),
            None
        );
    }

    #[test]
    fn a_load_not_carried_in_full_without_a_saturated_core_is_latency_bound() {
        assert_eq!(
            classify(&Limits {
                offered_bps: None,
                ..lim(&[94.0], &[60.0])
            }),
            Some(Bound::Latency)
        );
        assert_eq!(
            classify(&Limits {
                gbps: 0.5,
                ..lim(&[40.0], &[30.0])
            }),
            Some(Bound::Latency)
        );
        assert_eq!(
            classify(&Limits {
                offered_bps: None,
                ..lim(&[99.0], &[60.0])
            }),
            Some(Bound::Host)
        );
    }

    #[test]
    fn the_first_limit_reached_is_named() {
        assert_eq!(classify(&lim(&[99.0], &[60.0])), Some(Bound::Host));
        assert_eq!(classify(&lim(&[60.0], &[97.0])), Some(Bound::Client));
        assert_eq!(
            classify(&lim(&[99.0, 20.0], &[60.0])),
            Some(Bound::HostCore(0))
        );
        assert_eq!(
            classify(&lim(&[50.0, 50.0], &[96.0, 10.0])),
            Some(Bound::ClientCore(2))
        );
        let wire = Limits {
            wire_bps: Some(1_000_000_000),
            gbps: 0.96,
            ..lim(&[99.0], &[99.0])
        };
        assert_eq!(classify(&wire), Some(Bound::Wire));
        let be = Limits {
            backends: vec![(Role::Guest(1), 0.97)],
            ..lim(&[80.0, 60.0], &[20.0])
        };
        assert_eq!(classify(&be).unwrap().to_string(), "backend g1");
        assert_eq!(Bound::HostCore(3).to_string(), "host core 3");
    }

    #[test]
    fn a_stream_fills_a_wire_at_its_payload_share_of_the_frames() {
        use crate::vocab::{Bound, TestKind};
        let tcp = payload_share(TestKind::TcpStream, 1500, 65536);
        assert!((tcp - 1448.0 / 1514.0).abs() < 1e-12);
        let udp = payload_share(TestKind::UdpStream, 1500, 1472);
        assert!((udp - 1472.0 / 1514.0).abs() < 1e-12);
        // A 1 Gb/s wire beside a 0.3 Gb/s flood (its frames) leaves 0.69 Gb/s of frames: a stream
        // at 0.6615 Gb/s of payload filled it.
        let left = 1e9 - 0.3e9 * 1514.0 / 1472.0;
        let at = |gbps: f64| Limits {
            gbps,
            wire_bps: Some((left * tcp) as u64),
            ..Default::default()
        };
        assert_eq!(classify(&at(0.6615)), Some(Bound::Wire));
        assert_eq!(classify(&at(0.55)), Some(Bound::Latency));
    }

    #[test]
    fn only_traffic_between_the_host_side_and_the_client_crosses_the_wire() {
        let g = |n| Senders::One(Role::Guest(n));
        assert!(crosses_wire(&g(1), Role::Client));
        assert!(crosses_wire(&Senders::One(Role::Client), Role::Guest(1)));
        assert!(crosses_wire(&Senders::AllGuests, Role::Client));
        assert!(crosses_wire(&Senders::One(Role::Host), Role::Client));
        assert!(!crosses_wire(&g(1), Role::Guest(2)));
        assert!(!crosses_wire(&g(2), Role::Host));
    }
}
