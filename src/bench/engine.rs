//! `vnetlab bench engine`: vnetlab's engine beside iperf3 (TCP_STREAM, 1K and 128K messages) and
//! sockperf ping-pong (TCP_RR) on loopback and across a veth pair between two lab namespaces.
//! Each tool runs as its own server and client processes; host CPU comes from /proc/stat over the
//! client's run; runs alternate and the median of the repeats is compared, as ratios.

use super::Error;
use serde::Serialize;
use std::io::{BufRead, BufReader};
use std::net::IpAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::lab::{exec, hostcmd, state::LabRecord};
use crate::vocab::Role;

#[derive(Serialize, Clone, Debug, Default)]
pub struct Measure {
    pub gbps: f64,
    pub busy_cores: f64,
    /// Host cores busy per Gb/s delivered (streams) or per 100k transactions/s (RR).
    pub cores_per_unit: f64,
    pub tps: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
}

#[derive(Serialize, Clone, Debug)]
pub struct Row {
    pub path: String,
    pub test: String,
    pub peer: String,
    pub vnetlab: Measure,
    pub peer_result: Measure,
    /// vnetlab ÷ peer: throughput (or transactions/s) and CPU per unit; latency p50 (RR).
    pub throughput_ratio: f64,
    pub cpu_per_unit_ratio: f64,
    pub p50_ratio: Option<f64>,
}

/// Where both ends run: loopback in this namespace, or a lab, from one endpoint (`host` over the
/// bare wire, `g1` through the lab's datapath) to the client. In a lab both tools run placed the
/// same way: the sender in its endpoint's cpuset on the host's cores, the server on the client's.
pub enum Path<'a> {
    Loopback,
    Lab {
        name: &'static str,
        rec: &'a LabRecord,
        from: Role,
    },
}

impl Path<'_> {
    fn name(&self) -> &'static str {
        match self {
            Path::Loopback => "loopback",
            Path::Lab { name, .. } => name,
        }
    }
    fn server_ip(&self) -> IpAddr {
        match self {
            Path::Loopback => [127, 0, 0, 1].into(),
            Path::Lab { rec, .. } => IpAddr::V4(rec.endpoint(Role::Client).unwrap().address),
        }
    }
    /// The cores whose busy time counts: the lab's host cores, or every core on loopback.
    fn host_cores(&self) -> Vec<usize> {
        match self {
            Path::Loopback => crate::sys::online_cpus(),
            Path::Lab { rec, .. } => rec.cpus.host.0.clone(),
        }
    }
    /// A command for the server (client namespace) or the sender (its endpoint).
    fn cmd(&self, server_side: bool, argv: &[String]) -> Result<Command, Error> {
        match self {
            Path::Loopback => {
                let mut c = Command::new(&argv[0]);
                c.args(&argv[1..]);
                Ok(c)
            }
            Path::Lab { rec, from, .. } => Ok(exec::command(
                rec.endpoint(if server_side { Role::Client } else { *from })?,
                argv,
            )?),
        }
    }
}

fn sv(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A peer tool's server (iperf3 -s, sockperf sr, netserver), killed when dropped.
struct PeerServer(Child);
impl Drop for PeerServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(mut c: Command, wait_line: Option<&str>) -> Result<PeerServer, Error> {
    crate::sys::die_with_parent(&mut c);
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    let mut child = c
        .stdout(Stdio::null())
        .stderr(if wait_line.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .spawn()
        .map_err(|e| Error::Failed(format!("cannot start {:?}: {e}", c.get_program())))?;
    match wait_line {
        Some(w) => {
            let mut line = String::new();
            let mut r = BufReader::new(child.stderr.take().unwrap());
            r.read_line(&mut line)
                .map_err(|e| Error::Failed(e.to_string()))?;
            if !line.contains(w) {
                let _ = child.kill();
                return Err(Error::Failed(format!("server did not start: {line}")));
            }
        }
        None => std::thread::sleep(Duration::from_millis(400)),
    }
    Ok(PeerServer(child))
}

/// Runs the client to its end; host CPU is sampled only while traffic is steady — from a quarter
/// second after the warm-up to a quarter second before the end — so neither tool's start-up or
/// exit (sockperf lingers ~1.5 s after its run) dilutes or inflates its figure.
/// Busy cores are those of `host` (the lab's host cores; every core on loopback), by the meter's
/// definition: the window less the cores' idle.
fn measured(mut c: Command, secs: f64, host: Vec<usize>) -> Result<(String, f64), Error> {
    let (tx, rx) = std::sync::mpsc::channel();
    let sampler = std::thread::spawn(move || -> Result<f64, Error> {
        std::thread::sleep(Duration::from_secs_f64(WARMUP_S + 0.25));
        let probe = crate::meter::Probe::start()?;
        // Stop early if the client already ended (its figure would be unusable anyway).
        if rx.recv_timeout(Duration::from_secs_f64(secs - 0.5)).is_ok() {
            return Err(Error::Failed(
                "the client ended before its run was over".into(),
            ));
        }
        let (wall, t) = probe.finish()?;
        Ok(host
            .iter()
            .filter_map(|c| t.get(c))
            .map(|t| t.busy_s)
            .sum::<f64>()
            / wall)
    });
    let out = hostcmd::run_child(
        &mut c,
        None,
        Duration::from_secs_f64(secs + WARMUP_S + 30.0),
    );
    let _ = tx.send(());
    let cores = sampler
        .join()
        .unwrap_or_else(|_| Err(Error::Failed("sampler panicked".into())));
    let out = out?;
    if out.status != 0 {
        return Err(Error::Failed(format!(
            "{:?} failed: {}",
            c.get_program(),
            hostcmd::one_line(&out.stderr)
        )));
    }
    Ok((out.stdout, cores?))
}

const PORT_OURS: u16 = 15211;
const PORT_IPERF: u16 = 15212;
const PORT_SOCKPERF: u16 = 15213;
/// Warm-up both tools leave out (iperf3 -O takes whole seconds).
const WARMUP_S: f64 = 1.0;

fn ours_stream(path: &Path, size: &str, secs: f64, rr: bool) -> Result<Measure, Error> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::Failed(e.to_string()))?
        .display()
        .to_string();
    let ip = path.server_ip().to_string();
    let token = crate::engine::serve::random_token();
    let port = PORT_OURS.to_string();
    let _srv = start_server(
        path.cmd(
            true,
            &sv(&[
                &exe, "serve", "--bind", &ip, "--port", &port, "--token", &token, "--allow", &ip,
            ]),
        )?,
        Some("listening"),
    )?;
    let l = format!("{secs}");
    let w = format!("{WARMUP_S}");
    let mut args = sv(&[
        &exe, "test", "-H", &ip, "-p", &port, "--token", &token, "-l", &l, "--warmup", &w, "--json",
    ]);
    if rr {
        args.extend(sv(&["-t", "TCP_RR", "-r", "14,14"]));
    } else {
        args.extend(sv(&["-m", size]));
    }
    let (out, cores) = measured(path.cmd(false, &args)?, secs, path.host_cores())?;
    let m: crate::records::measured::Measured = serde_json::from_str(&out)
        .map_err(|e| Error::Failed(format!("vnetlab test output: {e}")))?;
    let r = &m.result;
    let lat = r.latency_us.as_ref();
    Ok(measure(
        r.throughput_gbps,
        cores,
        r.transactions_per_s,
        lat.map(|l| l.p50),
        lat.map(|l| l.p99),
    ))
}

fn measure(gbps: f64, cores: f64, tps: Option<f64>, p50: Option<f64>, p99: Option<f64>) -> Measure {
    let per = match tps {
        Some(t) if t > 0.0 => cores / (t / 1e5),
        Some(_) => 0.0,
        None if gbps > 0.0 => cores / gbps,
        None => 0.0,
    };
    Measure {
        gbps,
        busy_cores: cores,
        cores_per_unit: per,
        tps,
        p50_us: p50,
        p99_us: p99,
    }
}

fn iperf3(path: &Path, size: &str, secs: f64) -> Result<Measure, Error> {
    let ip = path.server_ip().to_string();
    let port = PORT_IPERF.to_string();
    let _srv = start_server(
        path.cmd(true, &sv(&["iperf3", "-s", "-1", "-B", &ip, "-p", &port]))?,
        None,
    )?;
    let t = format!("{}", (secs + WARMUP_S).round() as u64);
    let o = format!("{}", WARMUP_S as u64);
    // The congestion control vnetlab's engine sets on its own sockets by default.
    let cc = crate::vocab::Congestion::default();
    let (out, cores) = measured(
        path.cmd(
            false,
            &sv(&[
                "iperf3",
                "-c",
                &ip,
                "-p",
                &port,
                "-t",
                &t,
                "-O",
                &o,
                "-l",
                size,
                "-J",
                "-C",
                cc.name(),
            ]),
        )?,
        secs,
        path.host_cores(),
    )?;
    let bps = iperf3_received(&out)?;
    Ok(measure(bps / 1e9, cores, None, None, None))
}

/// What vnetlab reads of `iperf3 -J`: the receiver's rate over the test.
#[derive(serde::Deserialize)]
struct IperfReport {
    end: IperfEnd,
}

#[derive(serde::Deserialize)]
struct IperfEnd {
    sum_received: Option<IperfSum>,
}

#[derive(serde::Deserialize)]
struct IperfSum {
    bits_per_second: f64,
}

/// The received rate in `iperf3 -J`'s report.
fn iperf3_received(json: &str) -> Result<f64, Error> {
    let r: IperfReport =
        serde_json::from_str(json).map_err(|e| Error::Failed(format!("iperf3 output: {e}")))?;
    r.end
        .sum_received
        .map(|s| s.bits_per_second)
        .ok_or_else(|| Error::Failed("iperf3 reported no received rate".into()))
}

fn sockperf(path: &Path, secs: f64) -> Result<Measure, Error> {
    let ip = path.server_ip().to_string();
    let port = PORT_SOCKPERF.to_string();
    let _srv = start_server(
        path.cmd(
            true,
            &sv(&["sockperf", "sr", "--tcp", "-i", &ip, "-p", &port]),
        )?,
        None,
    )?;
    let t = format!("{}", (secs + WARMUP_S).round() as u64);
    let (out, cores) = measured(
        path.cmd(
            false,
            &sv(&[
                "sockperf",
                "pp",
                "--tcp",
                "-i",
                &ip,
                "-p",
                &port,
                "-t",
                &t,
                "-m",
                "14",
                "--full-rtt",
            ]),
        )?,
        secs,
        path.host_cores(),
    )?;
    let (tps, p50, p99) = parse_sockperf(&out)?;
    Ok(measure(
        tps * 28.0 * 8.0 / 1e9,
        cores,
        Some(tps),
        Some(p50),
        Some(p99),
    ))
}

/// transactions/s, p50 and p99 RTT (µs) from `sockperf pp --full-rtt` output.
pub fn parse_sockperf(out: &str) -> Result<(f64, f64, f64), Error> {
    let mut tps = None;
    let (mut p50, mut p99) = (None, None);
    for line in out.lines() {
        if line.contains("[Valid Duration]") {
            let rt = line
                .split("RunTime=")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .and_then(|s| s.parse::<f64>().ok());
            let rx = line
                .split("ReceivedMessages=")
                .nth(1)
                .and_then(|s| s.trim().parse::<f64>().ok());
            if let (Some(rt), Some(rx)) = (rt, rx) {
                tps = Some(rx / rt);
            }
        }
        let pct = |p: &str| {
            line.contains(&format!("percentile {p} ="))
                .then(|| {
                    line.rsplit('=')
                        .next()
                        .and_then(|s| s.trim().parse::<f64>().ok())
                })
                .flatten()
        };
        p50 = p50.or_else(|| pct("50.000"));
        p99 = p99.or_else(|| pct("99.000"));
    }
    match (tps, p50, p99) {
        (Some(t), Some(a), Some(b)) => Ok((t, a, b)),
        _ => Err(Error::Failed("could not read sockperf's results".into())),
    }
}

fn median(mut v: Vec<Measure>, key: fn(&Measure) -> f64) -> Measure {
    v.sort_by(|a, b| key(a).total_cmp(&key(b)));
    v[v.len() / 2].clone()
}

/// Runs the comparison on one path; `progress` says what runs.
pub fn compare(
    path: &Path,
    secs: f64,
    repeat: u32,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Row>, Error> {
    let mut rows = Vec::new();
    for size in ["1K", "128K"] {
        let (mut ours, mut peer) = (Vec::new(), Vec::new());
        for i in 0..repeat {
            progress(&format!(
                "{} TCP_STREAM {size}: run {}/{repeat}",
                path.name(),
                i + 1
            ));
            ours.push(ours_stream(path, size, secs, false)?);
            peer.push(iperf3(path, size, secs)?);
        }
        let (o, p) = (median(ours, |m| m.gbps), median(peer, |m| m.gbps));
        rows.push(Row {
            path: path.name().into(),
            test: format!("TCP_STREAM {size}"),
            peer: "iperf3".into(),
            throughput_ratio: o.gbps / p.gbps,
            cpu_per_unit_ratio: o.cores_per_unit / p.cores_per_unit,
            p50_ratio: None,
            vnetlab: o,
            peer_result: p,
        });
    }
    let (mut ours, mut peer) = (Vec::new(), Vec::new());
    for i in 0..repeat {
        progress(&format!(
            "{} TCP_RR 14 B: run {}/{repeat}",
            path.name(),
            i + 1
        ));
        ours.push(ours_stream(path, "14", secs, true)?);
        peer.push(sockperf(path, secs)?);
    }
    let key = |m: &Measure| m.tps.unwrap_or(0.0);
    let (o, p) = (median(ours, key), median(peer, key));
    rows.push(Row {
        path: path.name().into(),
        test: "TCP_RR 14 B".into(),
        peer: "sockperf pp".into(),
        throughput_ratio: o.tps.unwrap_or(0.0) / p.tps.unwrap_or(1.0),
        cpu_per_unit_ratio: o.cores_per_unit / p.cores_per_unit,
        p50_ratio: Some(o.p50_us.unwrap_or(0.0) / p.p50_us.unwrap_or(1.0)),
        vnetlab: o,
        peer_result: p,
    });
    Ok(rows)
}

/// The lab paths asked for, each in a lab of its own under a free name: the bare wire (`veth`,
/// host → client) and through a bridge (`bridge`, g1 → client); each lab removed after.
pub fn lab_paths(
    paths: &[&str],
    seconds: f64,
    repeat: u32,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Row>, Error> {
    use crate::vocab::{Mode, Role};
    let mut rows = Vec::new();
    for (name, mode, from) in [
        ("veth", Mode::Native, Role::Host),
        ("bridge", Mode::Bridge, Role::Guest(1)),
    ] {
        if !paths.contains(&name) {
            continue;
        }
        let lab = super::one_guest_lab(mode)?;
        crate::measure::place_driver(Some(&lab.record().cpus));
        let path = Path::Lab {
            name,
            rec: lab.record(),
            from,
        };
        let r = compare(&path, seconds, repeat, progress);
        let down = lab.remove();
        rows.extend(r?);
        down?;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iperf3s_received_rate_is_read_and_its_absence_named() {
        let j = r#"{"start":{},"end":{"sum_sent":{"bits_per_second":2e9},"sum_received":{"bits_per_second":1.5e9}}}"#;
        assert_eq!(iperf3_received(j).unwrap(), 1.5e9);
        let e = iperf3_received(r#"{"end":{}}"#).unwrap_err().to_string();
        assert!(e.contains("no received rate"), "{e}");
        assert!(iperf3_received("not json").is_err());
    }

    #[test]
    fn sockperf_output_is_read() {
        let out = "sockperf: [Valid Duration] RunTime=1.550 sec; SentMessages=26464; ReceivedMessages=26464\n\
                   sockperf: ---> percentile 99.000 =   86.959\nsockperf: ---> percentile 50.000 =   55.642\n";
        let (tps, p50, p99) = super::parse_sockperf(out).unwrap();
        assert!((tps - 26464.0 / 1.55).abs() < 1e-6);
        assert_eq!((p50, p99), (55.642, 86.959));
        assert!(super::parse_sockperf("nothing").is_err());
    }
}
