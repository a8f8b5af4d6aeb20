//! Measuring one point: starts the agents (in a lab's endpoints, or against `vnetlab serve`), runs
//! the engine with the meter on over exactly the measured window, and repeats it as asked
//! (`--repeat`, `--confidence`), keeping the spread. Shared by `vnetlab test` and `vnetlab run`.

use super::Error;
use std::net::{IpAddr, SocketAddr};

use super::bound::{self, Limits};
use crate::engine::controller::{self, AgentConn, Pair, TestResult};
use crate::engine::spec::Spec;
use crate::lab::cpus::CpuPlan;
use crate::lab::state::LabRecord;
use crate::meter::report::{self, CpuReport};
use crate::meter::threads::{ThreadClass, Threads};
use crate::meter::{Meter, Part, PartKind, Setup, Side, Sides};
use crate::records::{Repeat, Repeats};
use crate::stats;
use crate::vocab::{Role, Senders};

/// A test's output: the engine's result, the meter's CPU report and, with repeats, the spread.
#[derive(serde::Serialize)]
pub struct Measured {
    #[serde(flatten)]
    pub result: TestResult,
    /// Where the client and the host ran (the lab's CPU plan); None for standalone tests.
    pub cpus: Option<CpuPlan>,
    pub cpu: Option<CpuReport>,
    /// Why there is no CPU report.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<Repeats>,
    /// Per guest with a vNIC backend: its counters over the test (frames, super-frames, LRO ratio…).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub vnic: Option<std::collections::BTreeMap<String, crate::vnic::backend::VnicDelta>>,
    /// What each interfering load did (burners' CPU, the flood's rate).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<super::load::LoadReport>,
    /// VDI's movie scenario: host CPU while buffering and while only playing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub movie: Option<super::load::MoviePhases>,
    /// `--pacing kernel`: who paced each sender (fq on its device, or TCP's internal pacing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_pacing: Option<crate::lab::pacing::KernelPacing>,
}

/// One repeat's headline figures, from its measured result.
fn repeat_of(m: &Measured) -> Repeat {
    let c = m.cpu.as_ref();
    Repeat {
        throughput_gbps: m.result.throughput_gbps,
        transactions_per_s: m.result.transactions_per_s,
        host_busy_pct: c.map(|c| c.host_busy_pct),
        normalized_pct_per_gbps: c.and_then(|c| c.normalized_pct_per_gbps),
        bound_by: c.and_then(|c| c.bound_by.clone()),
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

/// Where a test runs: a lab (agents started in its endpoints) or standalone against `serve`.
pub enum Target {
    Lab {
        rec: Box<LabRecord>,
        from: Senders,
        to: Role,
        /// Interfering load beside the test, and the desktops' own load.
        loads: Vec<super::load::Load>,
        /// `--peer iperf3[:PORT]`: a stock iperf3 server at the client moves the bytes.
        peer: Option<super::peer::Peer>,
        /// The other guest's lab, beside this one (`udp-flood@other`).
        other: Option<Box<LabRecord>>,
    },
    Remote {
        host: String,
        ip: IpAddr,
        port: u16,
        token: String,
    },
}

impl Target {
    pub fn agents(&self) -> Result<(Vec<AgentConn>, Vec<Pair>), Error> {
        match self {
            Target::Lab { rec, from, to, .. } => lab_agents(rec, *from, *to),
            Target::Remote {
                host,
                ip,
                port,
                token,
            } => {
                let remote = AgentConn::tcp(host, SocketAddr::new(*ip, *port), token)?;
                let local = AgentConn::local("local")?;
                let pair = Pair {
                    initiator: 0,
                    server: 1,
                    listen_on: *ip,
                    connect_to: *ip,
                    ports: None,
                    from: "local".into(),
                    to: host.clone(),
                };
                Ok((vec![local, remote], vec![pair]))
            }
        }
    }

    /// What the meter measures: the lab's cgroups on their sides, the wire ends' NAPI threads,
    /// and this process (the driver and any local agent), with the two sides' cores.
    pub fn setup(&self) -> Result<Setup, Error> {
        let mut parts = Vec::new();
        let rec = match self {
            Target::Lab { rec, .. } => rec,
            Target::Remote { .. } => {
                parts.push(Part {
                    pid: Some(std::process::id()),
                    ..part("vnetlab driver", PartKind::Driver, Side::Host)
                });
                return Ok(Setup {
                    parts,
                    sides: None,
                    root: None,
                    fine_series: false,
                });
            }
        };
        for e in &rec.endpoints {
            // A client on another machine is measured there, by its serve (`remote_cpu`).
            if e.remote.is_some() {
                continue;
            }
            if e.vm.is_some() {
                parts.extend(vm_parts(e)?);
                continue;
            }
            let kind = match e.role {
                Role::Host => PartKind::Host,
                Role::Client => PartKind::Client,
                Role::Guest(_) => PartKind::Guest,
            };
            parts.push(Part {
                cgroups: e.cgroups.clone(),
                ..part(&e.role.to_string(), kind, e.role.side())
            });
            if let Some(vn) = &e.vnic {
                parts.push(Part {
                    cgroups: vn.cgroups.clone(),
                    ..part(
                        &format!("vNIC backend {}", e.role),
                        PartKind::Backend,
                        Side::Host,
                    )
                });
            }
        }
        for t in crate::lab::steer::ensure_placed(rec)? {
            let side = t.side;
            let name = format!("NAPI {} ({} end of the wire)", t.iface, side.name());
            parts.push(Part {
                pid: Some(t.pid as u32),
                ..part(&name, PartKind::Kernel, side)
            });
        }
        let placed = rec.cpus.placed;
        let driver_side = if placed && !rec.cpus.remote_client() {
            Side::Client
        } else {
            Side::Host
        };
        parts.push(Part {
            pid: Some(std::process::id()),
            ..part("vnetlab driver", PartKind::Driver, driver_side)
        });
        let sides = placed.then(|| Sides {
            host: rec.cpus.host.0.clone(),
            client: rec.cpus.client.0.clone(),
        });
        Ok(Setup {
            parts,
            sides,
            root: accounting_root(rec),
            fine_series: false,
        })
    }

    /// The lab's CPU plan (None standalone).
    pub fn cpus(&self) -> Option<&CpuPlan> {
        match self {
            Target::Lab { rec, .. } => Some(&rec.cpus),
            Target::Remote { .. } => None,
        }
    }

    /// The parts on the sending and on the receiving side of the bulk data.
    pub fn sides(&self, spec: &Spec) -> (Vec<String>, Vec<String>) {
        let (from, to): (Vec<String>, Vec<String>) = match self {
            Target::Lab { rec, from, to, .. } => {
                let f = match from {
                    Senders::AllGuests => rec.guests().map(|g| g.role.to_string()).collect(),
                    Senders::One(r) => vec![r.to_string()],
                };
                (f, vec![to.to_string()])
            }
            Target::Remote { .. } => (vec!["vnetlab driver".into()], vec![]),
        };
        if spec.test.initiator_sends() {
            (from, to)
        } else {
            (to, from)
        }
    }
}

/// A part with nothing measured yet (the caller sets its cgroups, pid or threads).
fn part(name: &str, kind: PartKind, side: Side) -> Part {
    Part {
        name: name.to_string(),
        kind,
        side,
        cgroups: vec![],
        pid: None,
        threads: None,
    }
}

/// A QEMU guest's parts: its vCPU threads (named as the guest, its own CPU), its device
/// emulation and, with vhost-net, its vhost workers.
fn vm_parts(e: &crate::lab::state::Endpoint) -> Result<Vec<Part>, Error> {
    let (pid, vcpus, vhost) = crate::lab::vms::threads(e)?;
    let g = e.role.to_string();
    let threads = |class| {
        Some(Threads {
            pid,
            class,
            vcpus: vcpus.clone(),
            cgroups: e.cgroups.clone(),
        })
    };
    let mut v = vec![
        Part {
            threads: threads(ThreadClass::Vcpu),
            ..part(&g, PartKind::Vcpu, Side::Host)
        },
        Part {
            threads: threads(ThreadClass::Emulation),
            ..part(&format!("{g} emulation"), PartKind::Emulation, Side::Host)
        },
    ];
    if vhost {
        v.push(Part {
            threads: threads(ThreadClass::Vhost),
            ..part(&format!("{g} vhost"), PartKind::Vhost, Side::Host)
        });
    }
    Ok(v)
}

impl Target {
    /// The vNIC backends of the endpoints this test uses: (guest, counters file, log).
    fn backends(&self) -> Vec<(String, std::path::PathBuf, std::path::PathBuf)> {
        match self {
            Target::Lab { rec, from, to, .. } => rec
                .endpoints
                .iter()
                .filter(|e| {
                    Senders::One(e.role) == *from || e.role == *to || *from == Senders::AllGuests
                })
                .filter_map(|e| {
                    e.vnic
                        .as_ref()
                        .map(|v| (e.role.to_string(), v.stats.clone(), v.log.clone()))
                })
                .collect(),
            Target::Remote { .. } => vec![],
        }
    }
}

fn read_vnic(path: &std::path::Path) -> Option<crate::vnic::backend::Stats> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The root of the lab's per-CPU accounting hierarchy (cgroup v1 cpuacct): three folders above a
/// part's (`<root>/vnetlab/vl<lab>/<part>`), if it offers `cpuacct.usage_percpu`.
fn accounting_root(rec: &LabRecord) -> Option<std::path::PathBuf> {
    let host = rec.endpoint(Role::Host).ok()?;
    host.cgroups
        .iter()
        .filter_map(|d| d.ancestors().nth(3).map(|p| p.to_path_buf()))
        .find(|root| root.join("cpuacct.usage_percpu").exists())
}

/// The driver (this process's threads made from here on: the meter, the agents' readers) runs on
/// the client's cores, the measuring station, so the host's cores hold only the datapath.
pub fn place_driver(cpus: Option<&CpuPlan>) {
    let all = crate::sys::online_cpus();
    let want = match cpus {
        Some(p) if p.placed && !p.client.is_empty() => &p.client.0,
        _ => &all,
    };
    let _ = crate::sys::set_affinity(0, want);
}

/// What bound the point, from the meter's per-core figures, the backends, the wire (less
/// `wire_taken_bps`, what a flood took of it the same way) and the load offered (`streams` paced
/// streams at the spec's rate; VDI: the profiles' frames, carried when the frames due arrived).
pub(super) fn bound_by(
    target: &Target,
    cpu: &CpuReport,
    spec: &Spec,
    streams: usize,
    result: &TestResult,
    wire_taken_bps: f64,
) -> Option<crate::vocab::Bound> {
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
            .map(|p| {
                (
                    p.name.trim_start_matches("vNIC backend ").to_string(),
                    p.cores,
                )
            })
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
    bound::classify(&limits)
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
    sending_side(from) != to.side()
}

/// The side of the wire the senders stand on.
fn sending_side(from: &Senders) -> crate::vocab::Side {
    match from {
        Senders::One(r) => r.side(),
        Senders::AllGuests => Role::Guest(1).side(),
    }
}

/// A backend whose process is gone has taken its guest's link down with it.
/// The lab's guest devices that are gone: vNIC backends and QEMU VMs, each a line saying so.
fn dead_backends(target: &Target) -> Vec<String> {
    let mut dead = dead_vms(target);
    dead.extend(dead_vnic_backends(target));
    dead
}

fn dead_vms(target: &Target) -> Vec<String> {
    let Target::Lab { rec, .. } = target else {
        return vec![];
    };
    rec.endpoints
        .iter()
        .filter(|e| crate::lab::vms::vm_running(e) == Some(false))
        .map(|e| {
            format!(
                "{}'s QEMU VM is gone (it died or was killed); its console ended: {}; `vnetlab down {}` removes the lab",
                e.role,
                crate::lab::vms::console_tail(e),
                rec.topology.name
            )
        })
        .collect()
}

fn dead_vnic_backends(target: &Target) -> Vec<String> {
    target
        .backends()
        .into_iter()
        .filter(|(_, stats, _)| read_vnic(stats).map(|s| !crate::sys::alive(s.pid, None)).unwrap_or(true))
        .map(|(g, _, log)| {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            let last = tail.lines().last().unwrap_or("no log").to_string();
            format!("the vNIC backend of {g} died, taking its link down ({last}); `vnetlab down` removes the lab")
        })
        .collect()
}

/// Runs one test with the meter on (with `--peer iperf3`, iperf3 moves the bytes).
pub fn measured_run(target: &Target, spec: &Spec) -> Result<Measured, Error> {
    if let Target::Lab {
        peer: Some(p),
        loads,
        ..
    } = target
    {
        if !loads.is_empty() {
            return Err(Error::Input(
                "--peer iperf3 measures iperf3's stream alone: drop --load and --desktop-load"
                    .into(),
            ));
        }
        return super::peer::measured_run(target, spec, p);
    }
    if let Some(e) = dead_backends(target).into_iter().next() {
        return Err(Error::Failed(e));
    }
    let vnic_before: Vec<(String, Option<crate::vnic::backend::Stats>)> = target
        .backends()
        .into_iter()
        .map(|(g, p, _)| (g, read_vnic(&p)))
        .collect();
    place_driver(target.cpus());
    let fq = kernel_pacing(target, spec)?;
    // A movie's download among the loads: its buffering phase is split off the window's series.
    let movie = match target {
        Target::Lab { loads, .. } => loads.iter().find_map(super::load::Movie::of),
        _ => None,
    };
    let setup = Setup {
        fine_series: movie.is_some(),
        ..target.setup()?
    };
    let (mut agents, pairs) = target.agents()?;
    let meter = Meter::start(setup);
    let mut on_start = |t: std::time::Instant| {
        let a = t + std::time::Duration::from_secs_f64(spec.warmup);
        meter.window(a, a + std::time::Duration::from_secs_f64(spec.duration));
    };
    let loads = match target {
        Target::Lab {
            rec, loads, other, ..
        } if !loads.is_empty() => Some(super::load::start(
            rec,
            other.as_deref(),
            loads,
            spec.warmup + spec.duration + 0.5,
        )?),
        _ => None,
    };
    let r = controller::run_test(spec, &mut agents, &pairs, &mut on_start);
    drop(agents);
    let kernel_pacing = fq.as_ref().map(|g| g.report.clone());
    drop(fq);
    let data = meter.stop();
    let loads = loads
        .map(super::load::stop)
        .transpose()?
        .unwrap_or_default();
    let dead = dead_backends(target);
    if !dead.is_empty() {
        return Err(Error::Failed(dead.join("; ")));
    }
    let result = r?;
    // Backends publish their counters within ~0.1 s of going idle: wait for that write so the
    // test's tail is in. Without backends there is nothing to wait for.
    if !vnic_before.is_empty() {
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let vnic = (!vnic_before.is_empty()).then(|| {
        vnic_before
            .iter()
            .zip(target.backends())
            .filter_map(|((g, before), (_, path, _))| {
                let after = read_vnic(&path)?;
                Some((
                    g.clone(),
                    crate::vnic::backend::delta(&before.clone().unwrap_or_default(), &after),
                ))
            })
            .collect()
    });
    // A flood across the wire the stream's way leaves the stream only the rest of the wire.
    let taken = match target {
        Target::Lab { loads: l, from, .. } => {
            super::load::wire_taken_bps(l, &loads, sending_side(from))
        }
        _ => 0.0,
    };
    let (cpu, cpu_error) = cpu_of(target, spec, pairs.len(), &data, &result, taken);
    // Split the host's CPU at the end of the movie's buffering.
    let movie = movie
        .zip(cpu.as_ref())
        .map(|(m, c)| super::load::phases(m, &c.series));
    Ok(Measured {
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
pub(super) fn cpu_of(
    target: &Target,
    spec: &Spec,
    streams: usize,
    data: &crate::meter::MeterData,
    result: &TestResult,
    wire_taken_bps: f64,
) -> (Option<CpuReport>, Option<String>) {
    let (send, recv) = target.sides(spec);
    let traffic = report::Traffic {
        gbps: Some(result.throughput_gbps),
        transactions_per_s: result.transactions_per_s,
        send_parts: &send,
        recv_parts: &recv,
    };
    match report::build(data, &traffic) {
        Ok(mut c) => {
            c.bound_by = bound_by(target, &c, spec, streams, result, wire_taken_bps);
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
    c.parts.push(crate::meter::report::PartCpu {
        name: format!("client (another machine, {} cores)", m.ncpu),
        kind: PartKind::Client,
        side: Side::Client,
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

/// `--pacing kernel` in a lab: fq on the devices that send the paced streams, for the test.
fn kernel_pacing(
    target: &Target,
    spec: &Spec,
) -> Result<Option<crate::lab::pacing::FqGuard>, Error> {
    if spec.pacing != crate::vocab::Pacing::Kernel || spec.rate.is_none() {
        return Ok(None);
    }
    match target {
        Target::Lab { rec, from, to, .. } => {
            let senders: Vec<Role> = match (spec.test.initiator_sends(), from) {
                (false, _) => vec![*to],
                (true, Senders::AllGuests) => rec.guests().map(|g| g.role).collect(),
                (true, Senders::One(r)) => vec![*r],
            };
            Ok(Some(crate::lab::pacing::fq_on_senders(
                rec,
                &senders,
                spec.test.is_udp(),
            )?))
        }
        Target::Remote { .. } if spec.test.is_udp() => Err(Error::Input(
            "--pacing kernel paces UDP only through fq on the sending device, which vnetlab sets only in a lab: use --pacing app".into(),
        )),
        Target::Remote { .. } => Ok(None),
    }
}

/// The agent of an endpoint on another machine: the `vnetlab serve` there.
fn remote_agent(
    rec: &LabRecord,
    role: Role,
    r: &crate::lab::topology::RemoteClient,
) -> Result<AgentConn, Error> {
    let token = r.token.as_deref().ok_or_else(|| {
        Error::Input(format!(
            "the {role} machine {} runs no `vnetlab serve` this lab knows of (no --token): make the lab with --token, or test it with --peer iperf3",
            r.address
        ))
    })?;
    let addr = SocketAddr::new(IpAddr::V4(r.address), r.port);
    // The client machine is reached through the lab's uplink, from the lab's host namespace.
    let host_ns = crate::lab::exec::netns_fd(rec.endpoint(Role::Host)?)?;
    Ok(AgentConn::tcp_from(
        &role.to_string(),
        addr,
        token,
        Some(host_ns),
    )?)
}

/// Starts an agent in each named endpoint (through the lab's exec) and pairs them.
pub fn lab_agents(
    rec: &LabRecord,
    from: Senders,
    to: Role,
) -> Result<(Vec<AgentConn>, Vec<Pair>), Error> {
    let to_ep = rec.endpoint(to)?;
    let froms: Vec<Role> = match from {
        Senders::AllGuests => rec.guests().map(|g| g.role).collect(),
        Senders::One(r) => {
            rec.endpoint(r)?;
            vec![r]
        }
    };
    if froms.contains(&to) {
        return Err(Error::Input(format!(
            "--from and --to both name {to}: pick two different endpoints"
        )));
    }
    let exe = std::env::current_exe().map_err(|e| Error::Failed(e.to_string()))?;
    let start = |role: Role| -> Result<AgentConn, Error> {
        let ep = rec.endpoint(role)?;
        if let Some(r) = &ep.remote {
            return remote_agent(rec, role, r);
        }
        if let Some(vm) = &ep.vm {
            return Ok(AgentConn::unix(&role.to_string(), &vm.files().agent())?);
        }
        let cmd = crate::lab::exec::command(ep, &[exe.display().to_string(), "agent".into()])?;
        Ok(AgentConn::spawn(&role.to_string(), cmd)?)
    };
    let mut agents = vec![start(to)?];
    let mut pairs = Vec::new();
    for (k, &f) in froms.iter().enumerate() {
        agents.push(start(f)?);
        let via_nat = f == Role::Client && to_ep.reach_from_client.is_some();
        let (connect_to, ports) = match (&to_ep.reach_from_client, via_nat) {
            (Some(r), true) => (IpAddr::V4(r.address), Some(r.ports)),
            _ => (IpAddr::V4(to_ep.address), None),
        };
        pairs.push(Pair {
            initiator: k + 1,
            server: 0,
            listen_on: IpAddr::V4(to_ep.address),
            connect_to,
            ports,
            from: f.to_string(),
            to: to.to_string(),
        });
    }
    Ok((agents, pairs))
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
    repeat: u32,
    confidence: Option<(u32, f64)>,
    progress: &dyn Fn(u32, u32),
) -> Result<Measured, Error> {
    let (runs, met) = repeats(target, spec, repeat, confidence, progress)?;
    combined(runs, confidence.map_or(95, |c| c.0), met)
        .ok_or_else(|| Error::Failed("the point ran no repeat".into()))
}

/// The runs of a point, each as measured: up to `repeat` of them, fewer once `confidence` (level,
/// width %) is met after at least 3 (and whether it was).
pub fn repeats(
    target: &Target,
    spec: &Spec,
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
        runs.push(measured_run(target, spec)?);
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(bound::classify(&at(0.6615)), Some(Bound::Wire));
        assert_eq!(bound::classify(&at(0.55)), Some(Bound::Latency));
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
