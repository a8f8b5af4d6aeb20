//! The engine commands: `test` (driving side, standalone or in a lab), `serve` (netserver-like)
//! and the hidden `agent` (an agent on stdin/stdout, started by `test` inside lab namespaces).

use clap::Args;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use super::fail::{CmdResult, Fail};
use super::shared::{need_root, print_json};
use crate::engine::spec::Spec;
use crate::engine::vdi::profile::VdiSpec;
use crate::lab::folder;
use crate::lab::owned::Lab;
use crate::lab::state;
use crate::measure::desc::TestDesc;
use crate::measure::iperf3::Iperf3;
use crate::measure::load::{self, Load};
use crate::measure::source::Engine;
use crate::measure::{self, Target, TrafficSource};
use crate::meter::Meter;
use crate::stats;
use crate::units;
use crate::vocab::{Role, Senders, TestKind};

pub use crate::engine::serve::DEFAULT_PORT;

#[derive(Args)]
pub struct TestArgs {
    /// Test: TCP_STREAM, TCP_MAERTS, UDP_STREAM, TCP_RR, UDP_RR, TCP_CRR, or VDI (remote-desktop
    /// sessions between the lab's host, the protocol engine, and the client)
    #[arg(short = 't', long = "test", default_value = "TCP_STREAM")]
    test: TestKind,
    /// VDI: desktop sessions at once, one connection each [default: 1]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    desktops: Option<u32>,
    /// VDI: the session profile: idle, office, web, video-rdp, video-1080p, raw-1080p60, or one
    /// from --profiles
    #[arg(long)]
    profile: Option<String>,
    /// VDI: a TOML file of more profiles (see profiles/vdi.toml for the fields)
    #[arg(long)]
    profiles: Option<std::path::PathBuf>,
    /// Send size for streams (e.g. 64, 1K, 64K) [default: 16K]
    #[arg(short = 'm', long = "msg")]
    msg: Option<String>,
    /// Request,response sizes for RR tests [default: 1,1]
    #[arg(short = 'r', long = "rr")]
    rr: Option<String>,
    /// Socket buffer (SO_SNDBUF and SO_RCVBUF) of the initiator's sockets
    #[arg(short = 's')]
    local_buf: Option<String>,
    /// Socket buffer of the server's sockets
    #[arg(short = 'S')]
    remote_buf: Option<String>,
    /// Measured seconds (after the warm-up)
    #[arg(
        short = 'l',
        long = "len",
        default_value_t = 10.0,
        allow_negative_numbers = true
    )]
    duration: f64,
    /// Warm-up seconds, excluded from the figures
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    warmup: f64,
    /// Parallel streams (or RR connections) per sender
    #[arg(short = 'P', long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=256))]
    parallel: u32,
    /// Pace each stream to this rate in bits/s, as iperf3's -b (500K, 100M, 1G) or tc (100mbit):
    /// paper 1's per-desktop load; for RR tests, the requests' and responses' bytes together
    #[arg(short = 'b', long)]
    rate: Option<String>,
    /// RR tests: pace each connection to N transactions per second (an open load, so latency is
    /// not the connection's own back-to-back limit)
    #[arg(long, conflicts_with = "rate")]
    tps: Option<f64>,
    /// How --rate is met: app (the sender writes what is due every 1 ms tick, back to back, as
    /// iperf3 -b does: an application sending from a timer) or kernel (SO_MAX_PACING_RATE: the
    /// sender writes as fast as the socket takes and TCP's pacing, or fq on the sending device,
    /// spaces the packets: a server that sets a pacing rate)
    #[arg(long, default_value = "app")]
    pacing: crate::vocab::Pacing,
    /// TCP congestion control of every data connection, set on each socket: cubic (Linux's
    /// default, what a stock guest kernel runs), reno, bbr, or any the kernel lists in
    /// net.ipv4.tcp_available_congestion_control. Not the machine's default: a lab's guest
    /// stands for its own OS (docs/traffic.md, "Congestion control")
    #[arg(long, default_value = "cubic")]
    congestion: crate::vocab::Congestion,
    /// TCP_NODELAY on every connection (a VDI session always sets it: its input is interactive)
    #[arg(long)]
    nodelay: bool,
    /// Send streams with MSG_ZEROCOPY
    #[arg(long)]
    zerocopy: bool,
    /// Length of a reported interval, seconds
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    interval: f64,
    /// Send exactly this many bytes per stream (e.g. 256M), as netperf's -l -N; -l is then the time limit
    #[arg(long)]
    bytes: Option<String>,
    /// Send a known pattern and check it arrives intact (SHA-256 of both ends)
    #[arg(long)]
    verify: bool,
    /// Standalone: the host running `vnetlab serve` (loopback or a lab address; any with
    /// --allow-remote)
    #[arg(short = 'H', long = "host")]
    host: Option<String>,
    /// Standalone: the control port of `vnetlab serve`
    #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Standalone: the token `vnetlab serve` printed
    #[arg(long)]
    token: Option<String>,
    /// A file holding the token (its first line; not readable by others), as an alternative to
    /// --token, which other users see in `ps`; VNETLAB_TOKEN in the environment is a third way
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    token_file: Option<std::path::PathBuf>,
    /// In a lab: which lab (default: the only one)
    #[arg(long)]
    lab: Option<String>,
    /// In a lab: the initiator: g1…, client, host, or `guests` (every guest at once)
    #[arg(long)]
    from: Option<Senders>,
    /// In a lab: the server side: g1…, client or host
    #[arg(long)]
    to: Option<Role>,
    /// Run the test N times and report each figure as the median of the N with its 95 %
    /// confidence interval (the same as --iterations N,N)
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: Option<u32>,
    #[command(flatten)]
    stop: super::shared::StopArgs,
    /// In a lab: interfering load while the test runs, repeatable: cpu@ENDPOINT (a burner using a
    /// whole core in its cgroup and cpuset, e.g. cpu@host, cpu@g2) or udp-flood@FROM:TO,RATE (UDP
    /// at RATE on a port the test does not use, e.g. udp-flood@client:g1,500mbit)
    #[arg(long = "load")]
    load: Vec<String>,
    /// In a lab: every guest burns PCT % of one core in its own cgroup while the test runs
    /// (desktops that work, as in paper 1's Table III)
    #[arg(long, allow_negative_numbers = true)]
    desktop_load: Option<f64>,
    /// VDI: paper 1's movie: each desktop's guest downloads the 1.6 Gbit video from the client
    /// through the VM network within T_BUFFER seconds (16 to 253) while its session plays it for
    /// 253 s; host CPU is reported for the buffering and the play-only phases
    #[arg(long, value_name = "T_BUFFER", allow_negative_numbers = true)]
    movie: Option<f64>,
    /// With --movie: scale the paper's times (rates stay), e.g. 0.1 plays 25.3 s
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    time_scale: f64,
    /// In a lab: a stock `iperf3 -s` at the client is the far end of a TCP_STREAM, TCP_MAERTS
    /// (iperf3 -R) or UDP_STREAM (iperf3[:PORT], default port 5201): vnetlab starts it in a local client's namespace; on a
    /// client machine (`up --client`) it must be running there. The result says iperf3 moved
    /// the bytes; the meter measures the host as for any test
    #[arg(long, value_name = "iperf3[:PORT]")]
    peer: Option<String>,
    /// Reverse, as iperf3's -R: the far end sends (in a lab, --to sends to --from; with -H, a
    /// TCP_STREAM runs as TCP_MAERTS)
    #[arg(short = 'R', long)]
    reverse: bool,
    /// Both ways at once, as iperf3's --bidir: a TCP_STREAM each way on connections of its own;
    /// the result gives each sender's rate and their sum
    #[arg(long, conflicts_with = "reverse")]
    bidir: bool,
    /// With -H: the serving host may be any address, not only loopback or a lab's. Test traffic
    /// goes there only after the `vnetlab serve` at that address has taken the token; use it
    /// only towards machines you run
    #[arg(long)]
    allow_remote: bool,
    /// One JSON document on stdout: vnetlab's result
    #[arg(long)]
    json: bool,
    /// One JSON document on stdout shaped as iperf3's -J (start, intervals[].streams/sum,
    /// end.sum_sent/sum_received/cpu_utilization_percent), vnetlab's result beside it under
    /// "vnetlab"; a failed test prints {"error": …} with its start
    #[arg(short = 'J', conflicts_with = "json")]
    iperf3_json: bool,
}

impl TestArgs {
    /// The test as the flags describe it, every value parsed.
    pub fn desc(&self) -> Result<TestDesc, Fail> {
        let d = TestDesc::default();
        let size = |v: &Option<String>| v.as_deref().map(units::parse_size).transpose();
        let rr = match &self.rr {
            Some(r) => msg_sizes("-r", r, units::parse_rr(r))?,
            None => d.rr,
        };
        let msg = match &self.msg {
            Some(m) => msg_sizes("-m", m, units::parse_size(m).map(|v| (v, v)))?.0,
            None => d.msg,
        };
        Ok(TestDesc {
            test: self.test_kind()?,
            msg,
            rr,
            bufs: (size(&self.local_buf)?, size(&self.remote_buf)?),
            duration: self.duration,
            warmup: self.warmup,
            parallel: self.parallel,
            rate: match self.tps {
                Some(t) => Some(self.tps_rate(t, rr.0, rr.1)?),
                None => self.rate.as_deref().map(units::parse_rate).transpose()?,
            },
            pacing: self.pacing,
            congestion: self.congestion.clone(),
            nodelay: self.nodelay,
            zerocopy: self.zerocopy,
            interval: self.interval,
            bytes: size(&self.bytes)?.map(|b| b as u64),
            verify: self.verify,
            bidir: self.bidir,
            vdi: self.vdi()?.map(|v| (v, self.desktops.unwrap_or(1))),
            movie: self.movie()?,
            interference: self
                .load
                .iter()
                .map(|s| s.parse::<Load>())
                .collect::<Result<Vec<_>, _>>()?,
            desktop_pct: self.desktop_load,
        })
    }

    /// The engine's spec for the flags, checked (the congestion control against this kernel's).
    pub fn spec(&self) -> Result<Spec, Fail> {
        let s = self.desc()?.checked_spec()?;
        if !s.test.is_udp() {
            crate::engine::sockets::check_congestion(&s.congestion)?;
        }
        Ok(s)
    }

    /// The test as asked: reversed with -R as iperf3 does (with -H a TCP_STREAM runs as
    /// TCP_MAERTS; in a lab the endpoints swap instead).
    fn test_kind(&self) -> Result<TestKind, Fail> {
        if !self.reverse || self.host.is_none() {
            return Ok(self.test);
        }
        self.test.reversed().ok_or_else(|| Fail::Input(format!(
            "-R with -H reverses TCP_STREAM (it runs as TCP_MAERTS); {} has no reverse there: run it in a lab with --from and --to swapped",
            self.test
        )))
    }

    /// In a lab, who sends to whom: as asked; VDI between the host and the client; with only
    /// `--lab` (or no lab named and no -H), g1 → client; -R swaps the two.
    fn endpoints(&self) -> Result<(Option<Senders>, Option<Role>), Fail> {
        let in_lab = self.host.is_none();
        let (from, to) = match (self.from, self.to) {
            (None, None) if in_lab && self.test == TestKind::Vdi => {
                (Some(Senders::One(Role::Host)), Some(Role::Client))
            }
            (None, None) if in_lab => (Some(Senders::One(Role::Guest(1))), Some(Role::Client)),
            ft => ft,
        };
        if !self.reverse || !in_lab {
            return Ok((from, to));
        }
        match (from, to) {
            _ if self.test == TestKind::Vdi => Err(Fail::Input(
                "-t VDI always streams the host's screens to the client: drop -R".into(),
            )),
            (Some(Senders::One(f)), Some(t)) => Ok((Some(Senders::One(t)), Some(f))),
            _ => Err(Fail::Input(
                "-R swaps --from and --to: give one sender (g1…, client or host), not guests"
                    .into(),
            )),
        }
    }

    /// A test in a lab (the one named, or the only one) between `from` and `to`.
    fn in_lab(&self, from: Option<Senders>, to: Option<Role>) -> Result<Target, Fail> {
        need_root("vnetlab test in a lab")?;
        let rec = Lab::open(self.lab.as_deref())?.record().clone();
        let from = from.ok_or(Fail::Input(
            "--to needs --from (g1…, client, host or guests)".into(),
        ))?;
        let to = to.ok_or(Fail::Input(
            "--from needs --to (g1…, client or host)".into(),
        ))?;
        if let Senders::One(r) = from {
            rec.endpoint(r)?;
        }
        rec.endpoint(to)?;
        if from == Senders::One(to) || (from == Senders::AllGuests && to.is_guest()) {
            return Err(Fail::Input(format!("--from {from} --to {to}: a test needs two different endpoints (e.g. --from g1 --to client)")));
        }
        let loads = self.loads(&rec)?;
        Ok(Target::Lab {
            rec: Box::new(rec),
            from,
            to,
            loads,
            other: None,
        })
    }

    /// A standalone test against the `vnetlab serve` at `host`.
    fn remote(&self, host: &str) -> Result<Target, Fail> {
        if !self.load.is_empty() || self.desktop_load.is_some() {
            return Err(Fail::Input(
                "--load and --desktop-load run in a lab: use --from/--to instead of -H".into(),
            ));
        }
        let ip = resolve_host(host)?;
        if !self.allow_remote {
            check_allowed(ip)?;
        }
        if ip.is_unspecified() || ip.is_multicast() {
            return Err(Fail::Input(format!(
                "-H {ip}: give the address of one host running `vnetlab serve`"
            )));
        }
        let token = super::shared::resolve_token(&self.token, &self.token_file)?.ok_or(Fail::Input(
            "-H needs --token: pass the token `vnetlab serve` printed (or --token-file, or VNETLAB_TOKEN)".into(),
        ))?;
        Ok(Target::Remote {
            host: host.to_string(),
            ip,
            port: self.port,
            token,
        })
    }

    /// `--tps N` as the bit rate of N transactions of `req` + `resp` bytes per second.
    fn tps_rate(&self, tps: f64, req: usize, resp: usize) -> Result<u64, Fail> {
        if !self.test.is_rr() || self.test == TestKind::TcpCrr {
            return Err(Fail::Input(
                "--tps paces TCP_RR and UDP_RR: use --rate for streams".into(),
            ));
        }
        if !(1.0..=10_000_000.0).contains(&tps) {
            return Err(Fail::Input(format!(
                "--tps {tps}: use 1 to 10000000 transactions per second"
            )));
        }
        Ok(((tps * (req + resp) as f64 * 8.0) as u64).max(8))
    }

    /// The movie scenario asked for (VDI only).
    fn movie(&self) -> Result<Option<load::Movie>, Fail> {
        let Some(t_buffer_s) = self.movie else {
            return Ok(None);
        };
        if self.test != TestKind::Vdi {
            return Err(Fail::Input(
                "--movie is a VDI scenario: add -t VDI --profile video-1080p".into(),
            ));
        }
        let m = load::Movie {
            t_buffer_s,
            time_scale: self.time_scale,
        };
        m.check()?;
        Ok(Some(m))
    }

    /// The loads asked for, checked against the lab's endpoints.
    fn loads(&self, rec: &state::LabRecord) -> Result<Vec<Load>, Fail> {
        let desc = self.desc()?;
        if let Some(pct) = desc.desktop_pct {
            load::check_desktop_pct(pct)?;
            if rec.guests().next().is_none() {
                return Err(Fail::Input(
                    "--desktop-load: this lab has no guests (desktops): make one with --guests N"
                        .into(),
                ));
            }
        }
        let (guests, desktops) = (rec.guests().count() as u32, desc.desktops());
        if desc.movie.is_some() && guests < desktops {
            return Err(Fail::Input(format!("--movie: each desktop's guest downloads its video, and this lab has {guests} guests for {desktops} desktops: make the lab with --guests {desktops}")));
        }
        let loads = desc.loads();
        for l in &loads {
            for r in l.endpoints() {
                rec.endpoint(r)?;
            }
        }
        if loads
            .iter()
            .filter(|l| matches!(l, Load::UdpFlood { .. }))
            .count()
            > 1
        {
            return Err(Fail::Input("--load: one udp-flood at a time".into()));
        }
        Ok(loads)
    }

    /// The VDI profile asked for (with -t VDI), from the built-in and the user's profiles.
    fn vdi(&self) -> Result<Option<VdiSpec>, Fail> {
        if self.test != TestKind::Vdi {
            if self.profile.is_some() || self.desktops.is_some() || self.profiles.is_some() {
                return Err(Fail::Input(
                    "--profile, --profiles and --desktops are for -t VDI".into(),
                ));
            }
            return Ok(None);
        }
        if self.parallel != 1 {
            return Err(Fail::Input(
                "-t VDI runs one session per desktop: use --desktops N instead of -P".into(),
            ));
        }
        let movie_default = self.movie.is_some().then_some("video-1080p");
        let name = self
            .profile
            .as_deref()
            .or(movie_default)
            .ok_or(Fail::Input(
            "-t VDI needs --profile NAME (idle, office, web, video-rdp, video-1080p, raw-1080p60)"
                .into(),
        ))?;
        let user = match &self.profiles {
            Some(p) => Some((read_bounded(p)?, p.display().to_string())),
            None => None,
        };
        let user = user.as_ref().map(|(t, f)| (t.as_str(), f.as_str()));
        Ok(Some(crate::engine::vdi::profile::find(name, user)?))
    }
}

/// Message sizes as parsed, held to the engine's one range and said so whichever bound was
/// crossed (a size parses up to 1G; a message is at most `MAX_MSG`).
fn msg_sizes(
    flag: &str,
    text: &str,
    parsed: Result<(usize, usize), units::Error>,
) -> Result<(usize, usize), Fail> {
    let max = crate::engine::spec::MAX_MSG;
    let out = || {
        Fail::Input(format!(
            "{flag} {}: out of range: use 1 byte to {}M",
            crate::text::clip(text),
            max >> 20
        ))
    };
    match parsed {
        Ok((a, b)) if (1..=max).contains(&a) && (1..=max).contains(&b) => Ok((a, b)),
        Ok(_) | Err(units::Error::OutOfRange { .. }) => Err(out()),
        Err(e) => Err(e.into()),
    }
}

/// The largest profiles file read.
const MAX_PROFILES_BYTES: u64 = 1 << 20;

/// A user's file: a regular file of at most `MAX_PROFILES_BYTES`, refused before it is read.
fn read_bounded(p: &std::path::Path) -> Result<String, Fail> {
    crate::text::read_capped(p, MAX_PROFILES_BYTES)
        .map_err(|e| Fail::Input(format!("--profiles: {e}")))
}

impl TestArgs {
    /// How many runs and when to stop, from --repeat, --iterations/-i and --confidence/-I.
    fn stopping(&self) -> Result<measure::Stopping, Fail> {
        let fixed = self.repeat.map(|n| stats::Iterations { min: n, max: n });
        let s = self
            .stop
            .stopping(fixed.unwrap_or(stats::Iterations { min: 1, max: 1 }))?;
        // --repeat N with a goal: at most N runs, stopping once the goal is met.
        Ok(
            match (
                self.repeat,
                s.goal,
                &self.stop.iterations,
                &self.stop.netperf_iterations,
            ) {
                (Some(n), Some(_), None, None) => measure::Stopping {
                    iterations: stats::Iterations {
                        min: (stats::units_for(95.0) as u32).min(n),
                        max: n,
                    },
                    ..s
                },
                _ => s,
            },
        )
    }
}

/// `vnetlab test`: one test, measured through the measuring core, printed, as vnetlab's JSON or
/// as iperf3's (`-J`, an error document on failure).
pub fn test(a: TestArgs) -> CmdResult {
    if !a.iperf3_json {
        return measured(&a).map(|out| match a.json {
            true => print_json(&out),
            false => crate::report::text::measured(&out, a.desktop_load),
        });
    }
    let far = match &a.host {
        Some(h) => h.clone(),
        None => format!(
            "{} in lab {}",
            a.to.map(|r| r.to_string()).unwrap_or_default(),
            a.lab.clone().unwrap_or_default()
        ),
    };
    let start = crate::report::iperf3::start(&far, a.port);
    match measured(&a) {
        Ok(out) => {
            print_json(&crate::report::iperf3::document(&out, start));
            Ok(())
        }
        Err(e) => {
            print_json(&crate::report::iperf3::error(start, &e.to_string()));
            Err(e)
        }
    }
}

/// One test, measured through the measuring core.
// Long on purpose: the command's steps in order (refusals, target, repeats).
fn measured(a: &TestArgs) -> Result<crate::records::measured::Measured, Fail> {
    let spec = a.spec()?;
    let stop = a.stopping()?;
    let (from, to) = a.endpoints()?;
    if a.test == TestKind::Vdi
        && a.host.is_none()
        && (from, to) != (Some(Senders::One(Role::Host)), Some(Role::Client))
    {
        return Err(Fail::Input("-t VDI runs between the lab's host (the protocol engine) and the client: drop --from/--to".into()));
    }
    let target = match &a.host {
        Some(h) if a.from.is_some() || a.to.is_some() => {
            return Err(Fail::Input(format!(
                "use either -H {} (standalone) or --from/--to (in a lab), not both",
                crate::text::clip(h)
            )))
        }
        Some(h) => a.remote(h)?,
        None => a.in_lab(from, to)?,
    };
    let _machine = super::shared::hold_machine("vnetlab test", std::time::Duration::ZERO)?;
    let progress = |i: u32, n: u32| {
        if n > 1 && !a.json && !a.iperf3_json {
            crate::errln!("run {i}/{n}");
        }
    };
    crate::sys::signals::install();
    let iperf3 = a.peer.as_deref().map(Iperf3::parse).transpose()?;
    let source: &dyn TrafficSource = match &iperf3 {
        Some(p) => p,
        None => &Engine,
    };
    let out = match measure::repeated(&target, &spec, source, &stop, &progress) {
        Ok(o) => o,
        Err(_) if crate::sys::signals::stop_requested() => {
            return Err(Fail::Interrupted("interrupted: the test was stopped and its agents ended; no result (the lab is untouched)".into()))
        }
        Err(e) => {
            // An agent that died because `down` is removing the lab: give the removal a moment.
            let t0 = std::time::Instant::now();
            while lab_gone(&target).is_none() && t0.elapsed() < std::time::Duration::from_secs(3) && matches!(target, Target::Lab { .. }) {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            return Err(match lab_gone(&target) {
                Some(gone) => Fail::Run(gone),
                None => e.into(),
            });
        }
    };
    Ok(out)
}

/// When a test in a lab fails because the lab went away under it (`vnetlab down`), says so.
fn lab_gone(target: &Target) -> Option<String> {
    let Target::Lab { rec, .. } = target else {
        return None;
    };
    let lab = &rec.topology.name;
    let ns = std::path::Path::new("/run/netns").join(crate::lab::names::Names::new(lab).host_ns());
    (!folder::journal_path(lab).exists() || !ns.exists())
        .then(|| format!("lab {lab} was removed while the test ran (`vnetlab down`?): no result"))
}

fn resolve_host(h: &str) -> Result<IpAddr, Fail> {
    if let Ok(ip) = h.parse::<IpAddr>() {
        return Ok(ip);
    }
    (h, 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map(|a| a.ip())
        .ok_or_else(|| Fail::Input(format!("cannot resolve host '{h}': give an address")))
}

/// Unless told (`--allow-remote`), vnetlab sends test traffic only on loopback or inside a lab's
/// own range.
fn check_allowed(ip: IpAddr) -> Result<(), Fail> {
    if ip.is_loopback() {
        return Ok(());
    }
    let in_lab = folder::labs()
        .iter()
        .filter_map(|l| state::load(l).ok())
        .any(|r| match ip {
            IpAddr::V4(v4) => {
                let n = r.topology.subnet;
                let mask = if n.len == 0 {
                    0
                } else {
                    u32::MAX << (32 - n.len)
                };
                u32::from(v4) & mask == u32::from(n.base) & mask
            }
            _ => false,
        });
    if in_lab {
        Ok(())
    } else {
        Err(Fail::Input(format!("{ip} is neither loopback nor a lab address: to test against a `vnetlab serve` you run there, add --allow-remote (or use --from/--to in a lab)")))
    }
}

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on for control connections (0.0.0.0 or :: only with --bind-any)
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Listen on every address (--bind 0.0.0.0 or ::): control connections from anywhere may try
    /// the token
    #[arg(long)]
    bind_any: bool,
    /// A network sessions may send test traffic to and listen on, besides loopback (repeatable),
    /// e.g. the lab's subnet 10.213.0.0/16
    #[arg(long = "allow", value_name = "CIDR")]
    allow: Vec<String>,
    /// Control port
    #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Token clients must present (default: a random one, printed)
    #[arg(long)]
    token: Option<String>,
    /// A file holding the token (its first line; not readable by others), as an alternative to
    /// --token, which other users see in `ps`; VNETLAB_TOKEN in the environment is a third way
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    token_file: Option<std::path::PathBuf>,
    /// Exit after one authenticated test session
    #[arg(long)]
    once: bool,
    /// Buffer memory all sessions together may hold (512M to 1G): a listen or connect that
    /// would exceed it is refused with why
    #[arg(long, default_value = "512M")]
    memory: String,
}

pub fn serve(a: ServeArgs) -> CmdResult {
    let budget = units::parse_size(&a.memory)
        .map_err(|e| Fail::Input(format!("--memory: {e} (e.g. 512M or 1G)")))?;
    if budget < crate::engine::spec::MAX_MSG {
        return Err(Fail::Input(format!(
            "--memory {}: give a size of at least {}M (the largest message), e.g. 512M or 1G",
            crate::text::clip(&a.memory),
            crate::engine::spec::MAX_MSG >> 20
        )));
    }
    let given = super::shared::resolve_token(&a.token, &a.token_file)?;
    if let Some(t) = &given {
        crate::engine::serve::check_token(t)?;
    }
    if a.bind.is_unspecified() && !a.bind_any {
        return Err(Fail::Input(format!(
            "--bind {} listens on every address: add --bind-any if that is meant, or bind one address",
            a.bind
        )));
    }
    let allow = a
        .allow
        .iter()
        .map(|c| c.parse::<units::Cidr>())
        .collect::<Result<Vec<_>, _>>()?;
    let token = given
        .clone()
        .unwrap_or_else(crate::engine::serve::random_token);
    let reach = crate::engine::reach::Reach { allow };
    let cfg = crate::engine::serve::Config {
        addr: SocketAddr::new(a.bind, a.port),
        token: token.clone(),
        once: a.once,
        reach,
        budget: budget as u64,
    };
    Ok(crate::engine::serve::serve(cfg, |addr| {
        // A token it was given is not echoed; one it made up is its only copy.
        let shown = match &given {
            Some(_) => "the one given".to_string(),
            None => token.clone(),
        };
        crate::errln!(
            "vnetlab serve: listening on {addr}; token {shown} (pass it to vnetlab test --token, --token-file or VNETLAB_TOKEN); buffers of all sessions within {} MiB",
            budget >> 20
        );
    })?)
}

#[derive(Args)]
pub struct MeterArgs {
    /// The lab (default: the only one)
    #[arg(long, conflicts_with = "machine")]
    lab: Option<String>,
    /// No lab: every core of the machine, no parts (per-core figures in --json's per_core_busy_pct)
    #[arg(long)]
    machine: bool,
    /// Also write what the kernel said at the window's two edges (/proc/stat, /proc/timer_list,
    /// cpuidle, the scheduler's run time, the kernel's accounting) to FILE: a recording the meter's
    /// tests replay, or to attach to a report of a figure that looks wrong
    #[arg(long, value_name = "FILE")]
    record: Option<std::path::PathBuf>,
    /// Seconds to measure
    #[arg(
        short = 'l',
        long = "len",
        default_value_t = 5.0,
        allow_negative_numbers = true
    )]
    seconds: f64,
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    json: bool,
}

/// `vnetlab meter`: where the host's CPU goes over a window, with whatever runs in the lab.
pub fn meter(a: MeterArgs) -> CmdResult {
    if !(0.2..=3600.0).contains(&a.seconds) {
        return Err(Fail::Input(format!(
            "-l {}: use 0.2 to 3600 seconds",
            a.seconds
        )));
    }
    if let Some(f) = &a.record {
        super::exp_cmds::output_file(f, "--record")?;
    }
    let (lab, setup) = match a.machine {
        true => (
            "(none: the machine)".to_string(),
            crate::meter::Setup {
                parts: vec![],
                sides: None,
            },
        ),
        false => {
            let opened = Lab::open(a.lab.as_deref())?;
            let target = Target::Lab {
                rec: Box::new(opened.record().clone()),
                from: Senders::One(Role::Host),
                to: Role::Client,
                loads: vec![],
                other: None,
            };
            measure::place_driver(target.cpus());
            (opened.name().to_string(), target.setup()?)
        }
    };
    let _machine = super::shared::hold_machine("vnetlab meter", std::time::Duration::ZERO)?;
    let m = Meter::start(setup);
    let start = std::time::Instant::now() + std::time::Duration::from_millis(100);
    let end = start + std::time::Duration::from_secs_f64(a.seconds);
    m.window(start, end);
    crate::sys::signals::install();
    while std::time::Instant::now() < end + std::time::Duration::from_millis(50) {
        if crate::sys::signals::stop_requested() {
            m.stop();
            return Err(Fail::Interrupted("interrupted: no measurement".into()));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let data = m.stop();
    let c = crate::meter::account::build(
        &data,
        &crate::meter::account::Traffic {
            gbps: None,
            transactions_per_s: None,
            send_parts: &[],
            recv_parts: &[],
        },
    )?;
    if let Some(f) = &a.record {
        record(f, &data, &c, &lab)?;
    }
    if a.json {
        print_json(&serde_json::json!({ "lab": lab, "cpu": c }));
    } else {
        crate::outln!("lab {lab}, {:.1} s:", c.window_s);
        crate::report::text::cpu(&c);
    }
    Ok(())
}

/// Writes the window's recording: the kernel's texts at its edges and what the meter made of them.
fn record(
    f: &std::path::Path,
    data: &crate::meter::MeterData,
    c: &crate::records::cpu::CpuReport,
    lab: &str,
) -> CmdResult {
    let [ra, rb] = match data.raw.as_slice() {
        [x, y, ..] => [x.clone(), y.clone()],
        _ => {
            return Err(Fail::Run(
                "the meter kept no readings of the window's edges".into(),
            ))
        }
    };
    let s = &c.check.host_sources;
    let rec = crate::meter::raw::Recording {
        note: format!(
            "lab {lab}; host cores {:?}: busy {:.2} % in {:.2}–{:.2}, awake {:.2} %, steal {:.2} %",
            c.host_cores, c.host_busy_pct, s.lo_pct, s.hi_pct, s.awake_pct, s.steal_pct
        ),
        window_s: c.window_s,
        ticks_per_s: data.ticks_per_s,
        kernel: data.acct.clone(),
        source: data.source.clone(),
        a: ra,
        b: rb,
    };
    crate::sys::file::replace(f, rec.to_text().as_bytes(), 0o644).map_err(|e| {
        Fail::Run(format!(
            "cannot write {}: {e}",
            crate::text::clip(&f.display().to_string())
        ))
    })?;
    crate::errln!("recording: {}", f.display());
    Ok(())
}

#[derive(Args)]
pub struct VnicArgs {
    #[arg(long)]
    model: crate::records::vnic::Model,
    #[arg(long)]
    guest_ns: String,
    #[arg(long)]
    guest_tap: String,
    #[arg(long)]
    host_ns: String,
    #[arg(long)]
    host_tap: String,
    #[arg(long, default_value_t = 1500)]
    mtu: usize,
    #[arg(long)]
    lro: bool,
    #[arg(long)]
    stats: std::path::PathBuf,
}

/// The vNIC backend process the lab starts per guest in modes emulated and paravirt.
pub fn vnic(a: VnicArgs) -> CmdResult {
    Ok(crate::vnic::backend::forward_frames(
        crate::vnic::backend::Config {
            model: a.model,
            guest_ns: a.guest_ns,
            guest_tap: a.guest_tap,
            host_ns: a.host_ns,
            host_tap: a.host_tap,
            lro: a.lro,
            mtu: a.mtu,
            stats: a.stats,
        },
    )?)
}

#[derive(clap::Args)]
pub struct BurnArgs {
    /// Share of one core to use, %
    #[arg(long)]
    pct: f64,
    /// How long, seconds
    #[arg(long)]
    seconds: f64,
}

/// A CPU burner started by `test --load cpu@…` or `--desktop-load` inside an endpoint.
pub fn burn(a: BurnArgs) -> CmdResult {
    if !(a.pct > 0.0 && a.pct <= 100.0 && a.seconds > 0.0 && a.seconds <= 86_400.0) {
        return Err(Fail::Input(
            "burn: --pct 0 to 100 and --seconds up to 86400".into(),
        ));
    }
    load::burn(a.pct, a.seconds);
    Ok(())
}

#[derive(clap::Args)]
pub struct AgentArgs {
    /// Serve session after session on this character device (a QEMU guest's virtio-serial port)
    #[arg(long, value_name = "DEV")]
    serial: Option<std::path::PathBuf>,
}

/// The agent started inside a lab endpoint: a session on stdin/stdout, or sessions on a serial
/// port until the guest powers off.
pub fn agent(a: AgentArgs) -> CmdResult {
    if let Some(dev) = a.serial {
        return Err(crate::engine::agent::serve_serial(&dev).into());
    }
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    crate::engine::agent::session(
        stdin.lock(),
        stdout.lock(),
        crate::engine::agent::SessionMode::Local,
    )?;
    Ok(())
}
