//! A stock iperf3 as a `TrafficSource` (`vnetlab test --peer iperf3[:PORT]`, the benches): an
//! `iperf3 -s` at the client is the far end of a stream test, so a client machine (or a guest
//! image) with nothing but iperf3 can be measured. vnetlab runs `iperf3 -c` in the lab endpoint at
//! the other end (`-R` when the client sends), starts the server itself only in a local client's
//! namespace, and opens the meter's window over exactly the whole seconds iperf3 reports (after
//! its omitted warm-up), which the result's rate is made of.

use std::net::IpAddr;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::error::Error;
use super::source::TrafficSource;
use super::target::Target;
use crate::engine::spec::Spec;
use crate::lab::{exec, hostcmd, state::LabRecord};
use crate::records::test::{Interval, TestResult};
use crate::vocab::{Engine, Pacing, Role, Senders, TestKind};

/// iperf3's own default port.
pub const IPERF3_PORT: u16 = 5201;

/// A stock iperf3 moving the bytes; its server listens on `port` at the client.
#[derive(Clone, Debug, PartialEq)]
pub struct Iperf3 {
    pub port: u16,
}

impl Iperf3 {
    /// `iperf3` or `iperf3:PORT`.
    pub fn parse(s: &str) -> Result<Iperf3, Error> {
        let port = match s.split_once(':') {
            None if s == "iperf3" => Some(IPERF3_PORT),
            Some(("iperf3", p)) => p.parse::<u16>().ok().filter(|p| *p >= 1024),
            _ => None,
        };
        port.map(|port| Iperf3 { port }).ok_or_else(|| {
            Error::Input(format!(
                "--peer '{}': write iperf3 or iperf3:PORT (a port from 1024)",
                crate::text::clip(s)
            ))
        })
    }
}

/// An iperf3 server vnetlab started (in a local client's namespace), stopped when dropped.
struct Iperf3Server(Option<Child>);

impl Drop for Iperf3Server {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The lab end that runs `iperf3 -c`, and whether the client sends (`-R`).
fn ends(from: Senders, to: Role, test: TestKind) -> Result<(Role, bool), Error> {
    let maerts = test == TestKind::TcpMaerts;
    match (from, to) {
        (Senders::One(near), Role::Client) if near != Role::Client => Ok((near, maerts)),
        (Senders::One(Role::Client), near) => Ok((near, !maerts)),
        _ => Err(Error::Input(
            "--peer iperf3 runs between one lab endpoint and the client: use --from X --to client or --from client --to X".into(),
        )),
    }
}

/// The seconds iperf3 omits (the warm-up, at least one) and then reports (the measured window):
/// whole seconds, as iperf3 takes them.
pub fn seconds(spec: &Spec) -> (f64, f64) {
    (spec.warmup.ceil().max(1.0), spec.duration.ceil().max(1.0))
}

/// iperf3 -c's arguments for `spec`: it omits the warm-up and then runs the measured seconds
/// (`-O` comes before `-t`'s seconds, not out of them).
fn client_args(spec: &Spec, addr: IpAddr, port: u16, reverse: bool) -> Vec<String> {
    let (omit, secs) = seconds(spec);
    let mut a: Vec<String> = [
        "iperf3",
        "-c",
        &addr.to_string(),
        "-p",
        &port.to_string(),
        "-J",
        "-l",
        &spec.msg.to_string(),
        "-t",
        &format!("{secs}"),
        "-O",
        &format!("{omit}"),
        "-P",
        &spec.parallel.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if reverse {
        a.push("-R".into());
    }
    if spec.test == TestKind::UdpStream {
        a.push("-u".into());
    }
    match (spec.rate, spec.pacing) {
        (Some(r), Pacing::Kernel) => a.extend(["--fq-rate".into(), r.to_string()]),
        (Some(r), Pacing::App) => a.extend(["-b".into(), r.to_string()]),
        // iperf3 paces UDP to 1 Mb/s unless told otherwise: unpaced is as fast as it goes.
        (None, _) if spec.test == TestKind::UdpStream => a.extend(["-b".into(), "0".into()]),
        (None, _) => {}
    }
    if let Some(b) = spec.local_buf {
        a.extend(["-w".into(), b.to_string()]);
    }
    if !spec.test.is_udp() {
        a.extend(["-C".into(), spec.congestion.to_string()]);
    }
    a
}

/// What iperf3 -J says the receiver got: (Gb/s, the non-omitted intervals, UDP loss %, TCP
/// retransmits).
type Read = (f64, Vec<Interval>, Option<f64>, Option<u64>);

pub fn parse_json(json: &str, udp: bool) -> Result<Read, Error> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| Error::Failed(format!("iperf3 output: {e}")))?;
    if let Some(e) = v["error"].as_str() {
        return Err(Error::Failed(format!("iperf3: {e}")));
    }
    let end = &v["end"];
    let (bps, loss) = if udp {
        let s = &end["sum"];
        let loss = s["lost_percent"].as_f64().unwrap_or(0.0);
        let got = end["sum_received"]["bits_per_second"].as_f64().or_else(|| {
            s["bits_per_second"]
                .as_f64()
                .map(|b| b * (1.0 - loss / 100.0))
        });
        (got, Some(loss))
    } else {
        (end["sum_received"]["bits_per_second"].as_f64(), None)
    };
    let bps = bps.ok_or_else(|| Error::Failed("iperf3 reported no received rate".into()))?;
    let mut t = 0.0;
    let intervals = v["intervals"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["sum"]["omitted"] != true)
        .filter_map(|i| {
            let s = &i["sum"];
            let len = s["seconds"].as_f64()?;
            t += len;
            Some(Interval {
                t,
                gbps: s["bits_per_second"].as_f64()? / 1e9,
            })
        })
        .collect();
    let retrans = (!udp)
        .then(|| end["sum_sent"]["retransmits"].as_u64())
        .flatten();
    Ok((bps / 1e9, intervals, loss, retrans))
}

/// Starts `iperf3 -s -1` in a local client's namespace (a remote client runs its own).
fn server(rec: &LabRecord, port: u16) -> Result<Iperf3Server, Error> {
    let c = rec.endpoint(Role::Client)?;
    if c.remote.is_some() {
        return Ok(Iperf3Server(None));
    }
    let argv: Vec<String> = [
        "iperf3",
        "-s",
        "-1",
        "-B",
        &c.address.to_string(),
        "-p",
        &port.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut cmd = exec::command(c, &argv)?;
    crate::sys::die_with_parent(&mut cmd);
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            Error::Failed(format!(
                "cannot start iperf3 -s in the client ({e}): `make deps` installs iperf3"
            ))
        })?;
    // Listening takes a moment; iperf3 -c retries nothing.
    std::thread::sleep(Duration::from_millis(300));
    Ok(Iperf3Server(Some(child)))
}

/// How long after `iperf3 -c` starts its first second begins (the control connection and the
/// test's own set-up on a lab's link).
const STARTUP: Duration = Duration::from_millis(100);

impl TrafficSource for Iperf3 {
    fn engine(&self) -> Engine {
        Engine::Iperf3
    }

    fn check(&self, target: &Target, spec: &Spec) -> Result<(), Error> {
        let Target::Lab {
            from, to, loads, ..
        } = target
        else {
            return Err(Error::Input("--peer iperf3 runs in a lab".into()));
        };
        if !loads.is_empty() {
            return Err(Error::Input(
                "--peer iperf3 measures iperf3's stream alone: drop --load and --desktop-load"
                    .into(),
            ));
        }
        if !matches!(
            spec.test,
            TestKind::TcpStream | TestKind::TcpMaerts | TestKind::UdpStream
        ) {
            return Err(Error::Input(format!(
                "--peer iperf3 moves streams: use -t TCP_STREAM, TCP_MAERTS or UDP_STREAM, not {}",
                spec.test
            )));
        }
        if spec.bidir {
            return Err(Error::Input(
                "--bidir runs on vnetlab's engine: drop --peer iperf3 (or run -R as a second test)"
                    .into(),
            ));
        }
        ends(*from, *to, spec.test).map(|_| ())
    }

    fn run(
        &self,
        target: &Target,
        spec: &Spec,
        window: &mut dyn FnMut(Instant, Instant),
    ) -> Result<TestResult, Error> {
        let Target::Lab { rec, from, to, .. } = target else {
            return Err(Error::Input("--peer iperf3 runs in a lab".into()));
        };
        let (near, reverse) = ends(*from, *to, spec.test)?;
        let client_addr = IpAddr::V4(rec.endpoint(Role::Client)?.address);
        let _server = server(rec, self.port)?;
        let mut cmd = exec::command(
            rec.endpoint(near)?,
            &client_args(spec, client_addr, self.port, reverse),
        )?;
        let (omit, secs) = seconds(spec);
        let start = Instant::now() + STARTUP + Duration::from_secs_f64(omit);
        window(start, start + Duration::from_secs_f64(secs));
        let out = hostcmd::run_child(&mut cmd, None, Duration::from_secs_f64(omit + secs + 30.0))
            .map_err(crate::lab::Error::from)?;
        let (gbps, intervals, loss, retrans) = parse_json(&out.stdout, spec.test.is_udp())
            .map_err(|e| match out.status {
                0 => e,
                _ => Error::Failed(format!("iperf3 failed: {}", hostcmd::one_line(&out.stderr))),
            })?;
        let spec = Spec {
            duration: secs,
            ..spec.clone()
        };
        Ok(result_of(&spec, *from, *to, gbps, intervals, loss, retrans))
    }
}

fn result_of(
    spec: &Spec,
    from: Senders,
    to: Role,
    gbps: f64,
    intervals: Vec<Interval>,
    loss: Option<f64>,
    retrans: Option<u64>,
) -> TestResult {
    let sender = if spec.test.initiator_sends() {
        from.to_string()
    } else {
        to.to_string()
    };
    TestResult {
        engine: Engine::Iperf3,
        test: spec.test,
        bidir: false,
        from: from.to_string(),
        to: to.to_string(),
        message_bytes: spec.msg,
        duration_s: spec.duration,
        warmup_s: spec.warmup,
        parallel: spec.parallel,
        pacing: spec
            .rate
            .map(|rate_bps| crate::records::test::PacedStreams {
                rate_bps,
                mode: spec.pacing,
            }),
        congestion: (!spec.test.is_udp()).then(|| spec.congestion.clone()),
        throughput_gbps: gbps,
        streams: vec![],
        per_source_gbps: [(sender, gbps)].into_iter().collect(),
        intervals,
        transactions_per_s: None,
        latency_us: None,
        udp_loss_pct: loss,
        tcp_retransmits: retrans,
        tcp_info: vec![],
        zerocopy: None,
        transfer: None,
        remote_cpu: vec![],
        starved: vec![],
        vdi: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_and_ends_are_read() {
        assert_eq!(Iperf3::parse("iperf3").unwrap().port, 5201);
        assert_eq!(Iperf3::parse("iperf3:5301").unwrap().port, 5301);
        for bad in ["iperf", "iperf3:80", "iperf3:x", "netperf:5201"] {
            assert!(Iperf3::parse(bad).is_err(), "{bad}");
        }
        let g1 = Senders::One(Role::Guest(1));
        assert_eq!(
            ends(g1, Role::Client, TestKind::TcpStream).unwrap(),
            (Role::Guest(1), false)
        );
        assert_eq!(
            ends(g1, Role::Client, TestKind::TcpMaerts).unwrap(),
            (Role::Guest(1), true)
        );
        assert_eq!(
            ends(
                Senders::One(Role::Client),
                Role::Guest(1),
                TestKind::TcpStream
            )
            .unwrap(),
            (Role::Guest(1), true)
        );
        assert!(ends(g1, Role::Guest(2), TestKind::TcpStream).is_err());
        assert!(ends(Senders::AllGuests, Role::Client, TestKind::TcpStream).is_err());
    }

    #[test]
    fn iperf3_json_is_read_without_its_omitted_seconds() {
        let j = r#"{"intervals":[{"sum":{"seconds":1.0,"bits_per_second":5e8,"omitted":true}},
            {"sum":{"seconds":1.0,"bits_per_second":9.4e8,"omitted":false}},
            {"sum":{"seconds":1.0,"bits_per_second":9.5e8,"omitted":false}}],
            "end":{"sum_sent":{"retransmits":3},"sum_received":{"bits_per_second":9.45e8}}}"#;
        let (g, iv, loss, re) = parse_json(j, false).unwrap();
        assert!((g - 0.945).abs() < 1e-12);
        assert_eq!(iv.len(), 2);
        assert!((iv[1].t - 2.0).abs() < 1e-12 && (iv[0].gbps - 0.94).abs() < 1e-12);
        assert_eq!((loss, re), (None, Some(3)));
        let u = r#"{"intervals":[],"end":{"sum":{"bits_per_second":1e8,"lost_percent":10.0}}}"#;
        let (g, _, loss, re) = parse_json(u, true).unwrap();
        assert!((g - 0.09).abs() < 1e-12);
        assert_eq!((loss, re), (Some(10.0), None));
        assert!(parse_json(r#"{"error":"unable to connect"}"#, false)
            .unwrap_err()
            .to_string()
            .contains("unable to connect"));
        assert!(parse_json("not json", false).is_err());
    }

    #[test]
    fn client_arguments_follow_the_spec() {
        let spec = Spec {
            msg: 65536,
            rate: Some(500_000_000),
            warmup: 0.5,
            duration: 2.0,
            ..Default::default()
        };
        let a = client_args(&spec, "10.213.0.2".parse().unwrap(), 5201, false).join(" ");
        // One second omitted, then the two measured seconds: the window the meter measures.
        assert!(
            a.starts_with("iperf3 -c 10.213.0.2 -p 5201 -J -l 65536 -t 2 -O 1 -P 1"),
            "{a}"
        );
        assert!(a.ends_with("-b 500000000 -C cubic"), "{a}");
        let reno = Spec {
            congestion: "reno".parse().unwrap(),
            ..spec
        };
        let a = client_args(&reno, "10.213.0.2".parse().unwrap(), 5201, false).join(" ");
        assert!(a.ends_with("-C reno"), "{a}");
        let udp = Spec {
            test: TestKind::UdpStream,
            msg: 1400,
            ..Default::default()
        };
        let a = client_args(&udp, "10.213.0.2".parse().unwrap(), 5201, true).join(" ");
        assert!(a.contains(" -R -u -b 0") && !a.contains("-C"), "{a}");
    }
}
