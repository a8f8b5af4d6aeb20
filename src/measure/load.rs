//! Interfering load beside a test (paper 3) and desktops that work (paper 1's Table III): CPU
//! burners in an endpoint's cgroup and cpuset, each guest burning a share of a core, and a paced
//! UDP flood from one endpoint to another on a port the measured flow does not use. Each load's
//! own figures (the burner's CPU, the flood's achieved rate) are reported beside the test's.

use serde::Serialize;
use std::fmt;
use std::process::Child;
use std::str::FromStr;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::error::Error;
use crate::engine::controller;
use crate::engine::spec::Spec;
use crate::lab::state::LabRecord;
use crate::records::test::TestResult;
use crate::vocab::{Role, Senders, TestKind};

/// One load asked for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Load {
    /// A burner using a whole core in the endpoint's cgroup and cpuset (`cpu@host`, `cpu@g2`).
    Cpu { at: Role },
    /// UDP from `from` to `to` at `bps` (`udp-flood@client:g1,500mbit`).
    UdpFlood { from: Role, to: Role, bps: u64 },
    /// UDP at `bps` from the other guest's client to the other guest, a guest of the same host
    /// in a lab of its own beside the measured one — its own NIC (wire), bridge and device
    /// model, the measured guest's untouched (`udp-flood@other,300mbit`; paper 3's load PC
    /// flooding Domain-U(A) through eth0 while Domain-U(B) is measured on eth1).
    OtherFlood { bps: u64 },
    /// Every guest burns `pct` % of one core (`--desktop-load PCT`).
    Desktops { pct: f64 },
    /// The movie scenario's VM network: the client sends `bytes` to each of the first `guests`
    /// guests at `bps` (each desktop buffering its video).
    Download { guests: u32, bps: u64, bytes: u64 },
}

impl Load {
    /// The lab endpoints it runs in.
    pub fn endpoints(&self) -> Vec<Role> {
        match *self {
            Load::Cpu { at } => vec![at],
            Load::UdpFlood { from, to, .. } => vec![from, to],
            Load::Desktops { .. } | Load::OtherFlood { .. } => vec![],
            Load::Download { guests, .. } => (1..=guests).map(Role::Guest).collect(),
        }
    }
}

/// The movie's time scale: `[point] time_scale`, `--time-scale`.
pub fn check_time_scale(scale: f64) -> Result<(), Error> {
    if (0.005..=1.0).contains(&scale) {
        Ok(())
    } else {
        Err(Error::Input(format!(
            "time scale {scale}: use 0.005 to 1 (1: the paper's 253 s)"
        )))
    }
}

impl fmt::Display for Load {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Load::Cpu { at } => write!(f, "cpu@{at}"),
            Load::UdpFlood { from, to, bps } => {
                write!(f, "udp-flood@{from}:{to},{}", crate::units::Rate(*bps))
            }
            Load::OtherFlood { bps } => write!(f, "udp-flood@other,{}", crate::units::Rate(*bps)),
            Load::Desktops { pct } => write!(f, "desktop-load {pct} %"),
            Load::Download { guests, bps, bytes } => write!(
                f,
                "VM-network download of {:.0} Mbit to each of {guests} guests at {}",
                *bytes as f64 * 8.0 / 1e6,
                crate::units::Rate(*bps)
            ),
        }
    }
}

/// A load is written as its text (`cpu@host`, `desktop-load 20 %`).
impl Serialize for Load {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

const FORMS: &str = "cpu@ENDPOINT (e.g. cpu@host, cpu@g2), udp-flood@FROM:TO,RATE (e.g. udp-flood@client:g1,500mbit) or udp-flood@other,RATE (the other guest, in a lab of its own)";

impl FromStr for Load {
    type Err = Error;
    fn from_str(s: &str) -> Result<Load, Error> {
        let bad = |why: String| Error::Input(format!("--load {}: {why}", crate::text::clip(s)));
        let (kind, rest) = s
            .split_once('@')
            .ok_or_else(|| bad(format!("write {FORMS}")))?;
        let role = |r: &str| r.parse::<Role>().map_err(|e| bad(e.to_string()));
        match kind {
            "cpu" => Ok(Load::Cpu { at: role(rest)? }),
            "udp-flood" => {
                let (ends, rate) = rest.split_once(',').ok_or_else(|| {
                    bad("give the rate after a comma: udp-flood@client:g1,500mbit".into())
                })?;
                if ends == "other" {
                    let bps = crate::units::parse_rate(rate).map_err(|e| bad(e.to_string()))?;
                    return Ok(Load::OtherFlood { bps });
                }
                let (from, to) = ends
                    .split_once(':')
                    .ok_or_else(|| bad("name both ends: udp-flood@FROM:TO,RATE".into()))?;
                let (from, to) = (role(from)?, role(to)?);
                if from == to {
                    return Err(bad("a flood needs two different endpoints".into()));
                }
                let bps = crate::units::parse_rate(rate).map_err(|e| bad(e.to_string()))?;
                Ok(Load::UdpFlood { from, to, bps })
            }
            other => Err(bad(format!(
                "unknown load '{}': write {FORMS}",
                crate::text::clip(other)
            ))),
        }
    }
}

/// The largest share of one core a desktop may burn.
pub fn check_desktop_pct(pct: f64) -> Result<(), Error> {
    if (0.0..=100.0).contains(&pct) && pct > 0.0 {
        Ok(())
    } else {
        Err(Error::Input(format!(
            "--desktop-load {pct}: give a share of one core, above 0 and at most 100 (%)"
        )))
    }
}

/// A started burner.
struct Burner {
    load: String,
    at: Role,
    target_pct: f64,
    child: Child,
    cpu0: f64,
    t0: Instant,
}

/// A started flood: its paced UDP_STREAM's driver thread.
struct Flood {
    load: String,
    bps: u64,
    driver: JoinHandle<Result<TestResult, Error>>,
    /// A flood of the other guest: the measured guest and the UDP datagrams its namespace had
    /// received before the flood began.
    measured: Option<(crate::lab::state::Endpoint, u64)>,
}

/// Started downloads, one driver per guest.
struct Downloads {
    load: String,
    bps: u64,
    bytes: u64,
    drivers: Vec<JoinHandle<Result<TestResult, Error>>>,
}

/// The loads running beside one test.
pub struct Running {
    burners: Vec<Burner>,
    flood: Option<Flood>,
    downloads: Option<Downloads>,
}

/// Starts every load for a test lasting `secs` (warm-up included); each ends by itself shortly
/// after, and with the driver if it dies. `other` is the other guest's lab, for its flood.
pub fn start(
    rec: &LabRecord,
    other: Option<&LabRecord>,
    loads: &[Load],
    secs: f64,
) -> Result<Running, Error> {
    let mut r = Running {
        burners: vec![],
        flood: None,
        downloads: None,
    };
    for l in loads {
        match *l {
            Load::Cpu { at } => r.burners.push(burner(rec, at, 100.0, l, secs)?),
            Load::Desktops { pct } => {
                for g in rec.guests() {
                    r.burners.push(burner(rec, g.role, pct, l, secs)?);
                }
            }
            Load::Download { guests, bps, bytes } => {
                let spec = Spec {
                    test: TestKind::TcpStream,
                    msg: 64 << 10,
                    rate: Some(bps),
                    bytes: Some(bytes),
                    duration: secs,
                    warmup: 0.0,
                    ..Spec::default()
                };
                let drivers = (1..=guests)
                    .map(|g| side_flow(rec, Role::Client, Role::Guest(g), &spec))
                    .collect::<Result<_, _>>()?;
                r.downloads = Some(Downloads {
                    load: l.to_string(),
                    bps,
                    bytes,
                    drivers,
                });
            }
            Load::UdpFlood { from, to, bps } => {
                r.flood = Some(Flood {
                    load: l.to_string(),
                    bps,
                    driver: flood(rec, from, to, bps, secs)?,
                    measured: None,
                });
            }
            Load::OtherFlood { bps } => {
                let other = other.ok_or_else(|| {
                    Error::Input(format!(
                        "{l}: the other guest has no lab here: an experiment names its datapath in [matrix] other"
                    ))
                })?;
                let ep = rec.endpoint(Role::Guest(1))?;
                let before = udp_in(ep)?;
                r.flood = Some(Flood {
                    load: l.to_string(),
                    bps,
                    driver: flood(other, Role::Client, Role::Guest(1), bps, secs)?,
                    measured: Some((ep.clone(), before)),
                });
            }
        }
    }
    Ok(r)
}

/// The UDP datagrams `ep`'s namespace has received (`Udp: InDatagrams` of its /proc/net/snmp),
/// read from a thread that enters it (the namespace checked by identity).
fn udp_in(ep: &crate::lab::state::Endpoint) -> Result<u64, Error> {
    let ns = crate::lab::exec::netns_fd(ep)?;
    let failed =
        |e: &dyn std::fmt::Display| Error::Failed(format!("the measured guest's UDP counter: {e}"));
    let read = std::thread::spawn(move || -> Result<String, Error> {
        crate::sys::ident::enter_netns_fd(&ns).map_err(|e| failed(&e))?;
        crate::text::read_capped(std::path::Path::new("/proc/thread-self/net/snmp"), 64 << 10)
            .map_err(|e| failed(&e))
    });
    let text = read
        .join()
        .map_err(|_| Error::Failed("reading a namespace's UDP counter panicked".into()))??;
    udp_in_datagrams(&text).ok_or_else(|| {
        Error::Failed("the measured guest's /proc/net/snmp has no Udp InDatagrams".into())
    })
}

/// `Udp: InDatagrams` from the text of /proc/net/snmp (a header line of names, then one of
/// values, per protocol).
pub fn udp_in_datagrams(snmp: &str) -> Option<u64> {
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp: "));
    let (names, values) = (udp.next()?, udp.next()?);
    let at = names.split_whitespace().position(|n| n == "InDatagrams")?;
    values.split_whitespace().nth(at)?.parse().ok()
}

fn ticks() -> f64 {
    crate::sys::clock_ticks_per_s()
}

fn cpu_s(pid: u32) -> f64 {
    crate::meter::procs::read(pid, ticks()).map_or(0.0, |t| t.cpu_s)
}

/// A `vnetlab burn` in `at`'s cgroups (and cpuset) — for a QEMU guest, in its VM's cgroup on the
/// host, where it competes with the VM's vCPUs.
fn burner(rec: &LabRecord, at: Role, pct: f64, l: &Load, secs: f64) -> Result<Burner, Error> {
    let ep = rec.endpoint(at)?;
    if let Some(r) = &ep.remote {
        return Err(Error::Input(format!(
            "{l}: {at} is another machine ({}): load it there, not from this lab",
            r.address
        )));
    }
    let exe = std::env::current_exe().map_err(|e| Error::Failed(e.to_string()))?;
    let argv = vec![
        exe.display().to_string(),
        "burn".into(),
        "--pct".into(),
        format!("{pct}"),
        "--seconds".into(),
        format!("{:.1}", secs + 2.0),
    ];
    let mut cmd = crate::lab::exec::command_in(ep, &argv)?;
    crate::sys::die_with_parent(&mut cmd);
    let child = cmd
        .stdin(std::process::Stdio::null())
        .spawn()
        .map_err(|e| Error::Failed(format!("cannot start a CPU burner in {at}: {e}")))?;
    Ok(Burner {
        load: l.to_string(),
        at,
        target_pct: pct,
        cpu0: cpu_s(child.id()),
        t0: Instant::now(),
        child,
    })
}

/// The flood's datagram: a full 1500-byte IPv4 packet.
const FLOOD_DATAGRAM: u64 = 1472;
/// What a UDP datagram adds on the wire, which a shaper counts: UDP 8, IPv4 20, Ethernet 14.
pub const UDP_FRAME_EXTRA: u64 = 42;

/// The wire's rate (bits/s of frames) that the loads' UDP flood took in one direction: a flood
/// across the wire from the `from` side leaves a test sent the same way only the rest of the
/// wire. 0 without such a flood.
pub fn wire_taken_bps(loads: &[Load], reports: &[LoadReport], from: crate::vocab::Side) -> f64 {
    let crosses_from = loads.iter().any(|l| {
        matches!(l, Load::UdpFlood { from: f, to, .. } if f.side() == from && to.side() != from)
    });
    if !crosses_from {
        return 0.0;
    }
    let per_frame = (FLOOD_DATAGRAM + UDP_FRAME_EXTRA) as f64 / FLOOD_DATAGRAM as f64;
    reports
        .iter()
        .map(|r| match r {
            LoadReport::Flood { arrived_gbps, .. } => arrived_gbps * 1e9 * per_frame,
            _ => 0.0,
        })
        .sum()
}

/// A paced UDP_STREAM of 1472-byte datagrams from `from` to `to`, on agents of its own.
fn flood(
    rec: &LabRecord,
    from: Role,
    to: Role,
    bps: u64,
    secs: f64,
) -> Result<JoinHandle<Result<TestResult, Error>>, Error> {
    let spec = Spec {
        test: TestKind::UdpStream,
        msg: FLOOD_DATAGRAM as usize,
        rate: Some(bps),
        duration: secs,
        warmup: 0.0,
        ..Spec::default()
    };
    side_flow(rec, from, to, &spec)
}

/// A test beside the measured one, on agents of its own, driven from a thread.
fn side_flow(
    rec: &LabRecord,
    from: Role,
    to: Role,
    spec: &Spec,
) -> Result<JoinHandle<Result<TestResult, Error>>, Error> {
    spec.validate()?;
    let (mut agents, pairs) = super::agents::lab_agents(rec, Senders::One(from), to)?;
    let spec = spec.clone();
    Ok(std::thread::spawn(move || {
        Ok(controller::run_test(
            &spec,
            &mut agents,
            &pairs,
            &mut |_| {},
        )?)
    }))
}

/// Stops the burners (the flood ends by itself) and reports each load.
pub fn stop(r: Running) -> Result<Vec<LoadReport>, Error> {
    let mut out = Vec::new();
    for mut b in r.burners {
        let used = cpu_s(b.child.id()) - b.cpu0;
        let wall = b.t0.elapsed().as_secs_f64().max(1e-3);
        let _ = b.child.kill();
        let _ = b.child.wait();
        out.push(LoadReport::Burner {
            load: b.load,
            at: b.at,
            target_pct: b.target_pct,
            cpu_pct: 100.0 * used / wall,
        });
    }
    if let Some(d) = r.downloads {
        out.push(downloaded(d)?);
    }
    if let Some(f) = r.flood {
        let res = f
            .driver
            .join()
            .map_err(|_| Error::Failed("the UDP flood's driver panicked".into()))?
            .map_err(|e| Error::Failed(format!("{}: {e}", f.load)))?;
        let measured_guest_udp_in = match f.measured {
            Some((ep, before)) => Some(udp_in(&ep)?.saturating_sub(before)),
            None => None,
        };
        out.push(LoadReport::Flood {
            load: f.load,
            offered_gbps: f.bps as f64 / 1e9,
            arrived_gbps: res.throughput_gbps,
            loss_pct: res.udp_loss_pct,
            measured_guest_udp_in,
        });
    }
    Ok(out)
}

fn downloaded(d: Downloads) -> Result<LoadReport, Error> {
    let n = d.drivers.len() as u64;
    let (mut arrived, mut slowest) = (0u64, 0f64);
    for h in d.drivers {
        let res = h
            .join()
            .map_err(|_| Error::Failed("a download's driver panicked".into()))?
            .map_err(|e| Error::Failed(format!("{}: {e}", d.load)))?;
        let got = res.transfer.map_or(0, |t| t.bytes_received);
        arrived += got;
        if res.throughput_gbps > 0.0 {
            slowest = slowest.max(got as f64 * 8.0 / (res.throughput_gbps * 1e9));
        }
    }
    Ok(LoadReport::Download {
        load: d.load,
        bytes_asked: d.bytes * n,
        bytes_arrived: arrived,
        offered_gbps_each: d.bps as f64 / 1e9,
        achieved_gbps: if slowest > 0.0 {
            arrived as f64 * 8.0 / slowest / 1e9
        } else {
            0.0
        },
    })
}

pub use crate::records::measured::{LoadReport, Movie, MoviePhases, Phase, S_VMNET_BITS, T_PLAY_S};

impl Movie {
    pub fn check(&self) -> Result<(), Error> {
        if !(16.0..=T_PLAY_S).contains(&self.t_buffer_s) {
            return Err(Error::Input(format!(
                "--movie {}: buffering takes 16 s (100 Mb/s) to 253 s (the play time) in paper 1",
                self.t_buffer_s
            )));
        }
        check_time_scale(self.time_scale)
    }
    /// The movie a download load stands for (its rate gives T_buffer, its size the scale).
    pub fn of(load: &Load) -> Option<Movie> {
        match *load {
            // The rate was rounded to whole bits/s: T_buffer back to the millisecond it was.
            Load::Download { bps, bytes, .. } if bps > 0 => Some(Movie {
                t_buffer_s: (S_VMNET_BITS / bps as f64 * 1000.0).round() / 1000.0,
                time_scale: bytes as f64 * 8.0 / S_VMNET_BITS,
            }),
            _ => None,
        }
    }
    /// Each desktop's download: S_VMNET / T_buffer, the scaled video's bytes.
    pub fn download(&self, guests: u32) -> Load {
        Load::Download {
            guests,
            bps: (S_VMNET_BITS / self.t_buffer_s) as u64,
            bytes: (S_VMNET_BITS * self.time_scale / 8.0) as u64,
        }
    }
}

/// Splits the meter's host-busy series ((seconds into the window, %) pairs) into the buffering
/// and the play-only phases.
pub fn phases(m: Movie, series: &[(f64, f64)]) -> MoviePhases {
    let phase = |from: f64, to: f64| {
        let v: Vec<f64> = series
            .iter()
            .filter(|(t, _)| *t > from && *t <= to)
            .map(|x| x.1)
            .collect();
        Phase {
            from_s: from,
            to_s: to,
            host_busy_pct: (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64),
            samples: v.len(),
        }
    };
    MoviePhases {
        movie: m,
        buffering: phase(0.0, m.buffer_s()),
        play_only: phase(m.buffer_s(), m.play_s()),
    }
}

/// `vnetlab burn`: uses `pct` % of one core for `seconds`, in 10 ms periods (busy, then asleep),
/// so a desktop's load never starves its own networking for long.
pub fn burn(pct: f64, seconds: f64) {
    let period = Duration::from_millis(10);
    let busy = period.mul_f64((pct / 100.0).clamp(0.0, 1.0));
    let end = Instant::now() + Duration::from_secs_f64(seconds.clamp(0.0, 86_400.0));
    let mut x = 1u64;
    while Instant::now() < end {
        let t = Instant::now();
        while t.elapsed() < busy {
            for _ in 0..1000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            std::hint::black_box(x);
        }
        if let Some(rest) = period.checked_sub(t.elapsed()) {
            std::thread::sleep(rest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_datagrams_are_read_from_snmp_by_their_column() {
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\nUdp: InDatagrams NoPorts InErrors\nUdp: 417 3 0\nUdpLite: InDatagrams NoPorts\nUdpLite: 9 9\n";
        assert_eq!(udp_in_datagrams(snmp), Some(417));
        assert_eq!(udp_in_datagrams("Udp: NoPorts\nUdp: 1\n"), None);
        assert_eq!(udp_in_datagrams("Udp: InDatagrams\n"), None);
        assert_eq!(udp_in_datagrams("Udp: InDatagrams\nUdp: x\n"), None);
        assert_eq!(udp_in_datagrams(""), None);
    }

    #[test]
    fn the_other_guests_flood_is_a_load_of_its_own_text() {
        let l: Load = "udp-flood@other,300mbit".parse().unwrap();
        assert_eq!(l, Load::OtherFlood { bps: 300_000_000 });
        assert_eq!(l.to_string(), "udp-flood@other,300mbit");
        assert!(l.endpoints().is_empty());
        assert!("udp-flood@other".parse::<Load>().is_err());
        assert!("udp-flood@other,fast".parse::<Load>().is_err());
    }

    #[test]
    fn a_flood_across_the_wire_the_same_way_takes_its_frames_of_the_wire() {
        use crate::vocab::Side;
        let loads: Vec<Load> = vec!["udp-flood@client:g1,300mbit".parse().unwrap()];
        let arrived = |g: f64| LoadReport::Flood {
            load: "f".into(),
            offered_gbps: 0.3,
            arrived_gbps: g,
            loss_pct: None,
            measured_guest_udp_in: None,
        };
        // 0.3 Gb/s of 1472-byte datagrams is 0.3 * 1514 / 1472 Gb/s of frames on the wire.
        let taken = wire_taken_bps(&loads, &[arrived(0.3)], Side::Client);
        assert!((taken - 0.3e9 * 1514.0 / 1472.0).abs() < 1.0, "{taken}");
        // A stream the other way, or no flood, has the whole wire.
        assert_eq!(wire_taken_bps(&loads, &[arrived(0.3)], Side::Host), 0.0);
        assert_eq!(wire_taken_bps(&[], &[], Side::Client), 0.0);
        // The other guest's flood crosses a wire of its own.
        let other: Vec<Load> = vec!["udp-flood@other,300mbit".parse().unwrap()];
        assert_eq!(wire_taken_bps(&other, &[arrived(0.3)], Side::Client), 0.0);
        // A flood between two guests never meets the wire.
        let inside: Vec<Load> = vec!["udp-flood@g2:g1,300mbit".parse().unwrap()];
        assert_eq!(wire_taken_bps(&inside, &[arrived(0.3)], Side::Host), 0.0);
    }

    #[test]
    fn loads_parse_and_errors_name_the_form() {
        assert_eq!(
            "cpu@host".parse::<Load>().unwrap(),
            Load::Cpu { at: Role::Host }
        );
        assert_eq!(
            "cpu@g2".parse::<Load>().unwrap(),
            Load::Cpu { at: Role::Guest(2) }
        );
        assert_eq!(
            "udp-flood@client:g1,500mbit".parse::<Load>().unwrap(),
            Load::UdpFlood {
                from: Role::Client,
                to: Role::Guest(1),
                bps: 500_000_000
            }
        );
        let l: Load = "udp-flood@client:g1,500mbit".parse().unwrap();
        assert_eq!(l.to_string().parse::<Load>().unwrap(), l);
        for (bad, says) in [
            ("cpu", "cpu@ENDPOINT"),
            ("cpu@g0", "endpoint"),
            ("disk@host", "unknown load 'disk'"),
            ("udp-flood@client:g1", "after a comma"),
            ("udp-flood@client,1gbit", "both ends"),
            ("udp-flood@g1:g1,1gbit", "two different"),
            ("udp-flood@client:g1,fast", "--load"),
        ] {
            let e = bad.parse::<Load>().unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(e.starts_with("--load "), "{e}");
        }
        assert!(check_desktop_pct(50.0).is_ok());
        for p in [0.0, -1.0, 101.0, f64::NAN] {
            assert!(check_desktop_pct(p).is_err(), "{p}");
        }
    }

    #[test]
    fn the_movie_scales_time_not_rates_and_splits_its_series_at_the_buffering_end() {
        let m = Movie {
            t_buffer_s: 16.0,
            time_scale: 0.1,
        };
        m.check().unwrap();
        assert!((m.play_s() - 25.3).abs() < 1e-9 && (m.buffer_s() - 1.6).abs() < 1e-9);
        assert_eq!(
            m.download(4),
            Load::Download {
                guests: 4,
                bps: 100_000_000,
                bytes: 20_000_000
            }
        );
        let series: Vec<(f64, f64)> = (1..=253)
            .map(|i| (i as f64 / 10.0, if i <= 16 { 30.0 } else { 10.0 }))
            .collect();
        let p = phases(m, &series);
        assert_eq!((p.buffering.samples, p.play_only.samples), (16, 237));
        assert_eq!(p.buffering.host_busy_pct, Some(30.0));
        assert_eq!(p.play_only.host_busy_pct, Some(10.0));
        let early = Movie {
            t_buffer_s: 10.0,
            time_scale: 0.1,
        };
        assert!(early.check().is_err());
        let never = Movie {
            t_buffer_s: 60.0,
            time_scale: 0.0,
        };
        assert!(never.check().is_err());
    }

    #[test]
    fn a_burner_uses_its_share_of_a_core() {
        let t0 = crate::sys::thread_cpu_s();
        let w0 = Instant::now();
        burn(30.0, 0.5);
        let used = (crate::sys::thread_cpu_s() - t0) / w0.elapsed().as_secs_f64();
        // The share asked, less what a busy test host takes from it.
        assert!((0.05..=0.40).contains(&used), "{used}");
    }
}
