//! The driver: talks to agents (in-process, child processes over pipes, or TCP with a token),
//! sets up each pair, starts every agent at once, gathers their reports and turns them into
//! one `TestResult`. It knows nothing of labs: callers hand it agents and addresses.

use super::Error;
use std::io::{BufReader, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use super::intervals;
use super::proto::{Reply, Request, SideReport, StreamReport};
use super::spec::Spec;
use crate::records::test::{
    Interval, Latency, PacedStreams, RemoteCpu, StreamResult, TcpSample, TestResult, Transfer,
    ZeroCopy,
};
use crate::records::vdi::ClockSync;
use crate::vocab::TestKind;

const SETUP_TIMEOUT: Duration = Duration::from_secs(20);

/// One agent and its control channel.
pub struct AgentConn {
    pub name: String,
    tx: Box<dyn Write + Send>,
    rx: Receiver<String>,
    child: Option<Child>,
    /// A QEMU guest's socket, shut when the session ends: its reader thread holds a clone, and
    /// the guest's agent serves its next session only once this connection is closed.
    unix: Option<UnixStream>,
    /// It runs on another machine (`vnetlab serve` reached over TCP): it reports that machine's
    /// CPU, and its clock is not this one's.
    remote: bool,
}

/// Reads an agent's reply lines (each at most `MAX_REPLY` bytes) onto a channel.
fn reader_thread(name: String, r: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name(format!("ctl-{name}"))
        .spawn(move || {
            let mut r = BufReader::new(r);
            while let Ok(Some(l)) = super::proto::read_line(&mut r, super::proto::MAX_REPLY) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        })
        .unwrap();
    rx
}

impl AgentConn {
    /// An agent in this process (a thread on one end of a socketpair).
    pub fn local(name: &str) -> Result<AgentConn, Error> {
        let (a, b) = UnixStream::pair()?;
        let b2 = b.try_clone()?;
        std::thread::spawn(move || {
            let _ = super::agent::session(BufReader::new(b), b2, super::agent::SessionMode::Local);
        });
        let rx = reader_thread(name.into(), a.try_clone()?);
        Ok(AgentConn {
            name: name.into(),
            tx: Box::new(a),
            rx,
            child: None,
            unix: None,
            remote: false,
        })
    }

    /// An agent started as a child (e.g. inside a lab namespace), speaking on its stdin/stdout.
    /// It runs in a process group of its own, so a terminal's Ctrl-C reaches the driver alone,
    /// which then stops it; it dies with the driver.
    pub fn spawn(name: &str, mut cmd: Command) -> Result<AgentConn, Error> {
        crate::sys::die_with_parent(&mut cmd);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| Error::Failed(format!("cannot start the agent in {name}: {e}")))?;
        let rx = reader_thread(name.into(), child.stdout.take().unwrap());
        let tx = Box::new(child.stdin.take().unwrap());
        Ok(AgentConn {
            name: name.into(),
            tx,
            rx,
            child: Some(child),
            unix: None,
            remote: false,
        })
    }

    /// An agent reached over TCP (`vnetlab serve`), authenticated with its token.
    pub fn tcp(name: &str, addr: SocketAddr, token: &str) -> Result<AgentConn, Error> {
        Self::tcp_from(name, addr, token, None)
    }

    /// The same, the connection made from inside the network namespace open as `netns` (a lab's
    /// host, whose uplink is the only way to the client machine, checked by the caller): the
    /// socket stays in that namespace.
    pub fn tcp_from(
        name: &str,
        addr: SocketAddr,
        token: &str,
        netns: Option<std::os::fd::OwnedFd>,
    ) -> Result<AgentConn, Error> {
        let in_ns = netns.is_some();
        let connect = move || -> Result<TcpStream, Error> {
            if let Some(ns) = &netns {
                crate::sys::ident::enter_netns_fd(ns)
                    .map_err(|e| Error::Failed(format!("cannot enter the lab's namespace: {e}")))?;
            }
            TcpStream::connect_timeout(&addr, Duration::from_secs(3)).map_err(|e| {
                Error::Failed(format!(
                    "cannot reach vnetlab serve at {addr}: {e} (is it running there?)"
                ))
            })
        };
        // A thread of its own enters the namespace, so this one stays where it is.
        let s = match in_ns {
            true => std::thread::spawn(connect)
                .join()
                .unwrap_or_else(|_| Err(Error::Failed("the connecting thread panicked".into())))?,
            false => connect()?,
        };
        s.set_nodelay(true).ok();
        let rx = reader_thread(name.into(), s.try_clone()?);
        let mut a = AgentConn {
            name: name.into(),
            tx: Box::new(s),
            rx,
            child: None,
            unix: None,
            remote: true,
        };
        a.call(
            &Request::Hello {
                token: token.into(),
                nonce: None,
            },
            SETUP_TIMEOUT,
        )?;
        Ok(a)
    }

    /// A QEMU guest's agent, on the unix socket QEMU binds the guest's virtio-serial port to
    /// (one session at a time; the agent serves the next when this one closes).
    pub fn unix(name: &str, path: &std::path::Path) -> Result<AgentConn, Error> {
        let s = UnixStream::connect(path).map_err(|e| {
            Error::Failed(format!(
                "cannot reach the agent of {name} at {} ({e}): is its VM still running? see `vnetlab status`",
                path.display()
            ))
        })?;
        let rx = reader_thread(name.into(), s.try_clone()?);
        let s2 = s.try_clone().ok();
        let mut a = AgentConn {
            name: name.into(),
            tx: Box::new(s),
            rx,
            child: None,
            unix: s2,
            remote: false,
        };
        let nonce = rand::random::<u64>();
        a.send(&Request::Hello {
            token: String::new(),
            nonce: Some(nonce),
        })?;
        a.welcome(nonce, SETUP_TIMEOUT)?;
        Ok(a)
    }

    fn send(&mut self, req: &Request) -> Result<(), Error> {
        let mut s = serde_json::to_string(req).unwrap();
        s.push('\n');
        self.tx
            .write_all(s.as_bytes())
            .and_then(|_| self.tx.flush())
            .map_err(|_| Error::Failed(format!("the agent in {} is gone", self.name)))
    }

    /// Reads past whatever an earlier session left queued on the channel to the welcome that
    /// echoes `nonce`, at most `timeout`.
    fn welcome(&mut self, nonce: u64, timeout: Duration) -> Result<(), Error> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(Error::Failed(format!(
                    "the agent in {} did not answer this session's hello within {}s",
                    self.name,
                    timeout.as_secs()
                )));
            }
            // Anything else is an earlier session's reply, or a line it cut short.
            if let Ok(Reply::Welcome { nonce: n }) = self.next_reply(left)? {
                if n == nonce {
                    return Ok(());
                }
            }
        }
    }

    /// Waits for the next reply, at most `timeout`, and no longer than a stop request.
    fn recv(&mut self, timeout: Duration) -> Result<Reply, Error> {
        match self.next_reply(timeout)? {
            Ok(Reply::Error { error, input }) => {
                let e = format!("{}: {}", self.name, crate::text::clip_long(&error));
                Err(if input {
                    Error::Input(e)
                } else {
                    Error::Failed(e)
                })
            }
            Ok(r) => Ok(r),
            Err(e) => Err(Error::Failed(format!(
                "{}: unreadable reply ({e})",
                self.name
            ))),
        }
    }

    /// The next line as a reply (an agent's error is a reply here), or the line's parse error;
    /// Err when none came within `timeout`, the agent died or a stop was asked.
    fn next_reply(&mut self, timeout: Duration) -> Result<Result<Reply, serde_json::Error>, Error> {
        let deadline = std::time::Instant::now() + timeout;
        let slice = Duration::from_millis(100);
        let got = loop {
            if crate::sys::signals::stop_requested() {
                return Err(Error::Interrupted);
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.rx.recv_timeout(left.min(slice)) {
                Err(RecvTimeoutError::Timeout) if !left.is_zero() => continue,
                other => break other,
            }
        };
        match got {
            Ok(line) => Ok(serde_json::from_str::<Reply>(&line)),
            Err(RecvTimeoutError::Timeout) => Err(Error::Failed(format!(
                "the agent in {} did not answer within {}s",
                self.name,
                timeout.as_secs()
            ))),
            Err(RecvTimeoutError::Disconnected) => Err(Error::Failed(format!(
                "the agent in {} died mid-test",
                self.name
            ))),
        }
    }

    pub fn call(&mut self, req: &Request, timeout: Duration) -> Result<Reply, Error> {
        self.send(req)?;
        self.recv(timeout)
    }

    /// Its clock against this process's: shared on one machine; over TCP, NTP-style exchanges
    /// (ours before, theirs, ours after), the fastest round trip giving the offset (theirs less
    /// ours at the middle of the trip) and its uncertainty (half that trip).
    pub fn clock(&mut self) -> Result<ClockSync, Error> {
        if !self.remote {
            return Ok(ClockSync {
                shared: true,
                ..Default::default()
            });
        }
        let mut best: Option<(u64, i64)> = None;
        for _ in 0..CLOCK_ROUNDS {
            let t0 = crate::sys::monotonic_ns();
            let theirs = match self.call(&Request::Time, SETUP_TIMEOUT)? {
                Reply::Time { mono_ns } => mono_ns,
                other => {
                    return Err(Error::Failed(format!(
                        "{}: no clock in its answer ({other:?}): is its vnetlab older?",
                        self.name
                    )))
                }
            };
            let t2 = crate::sys::monotonic_ns();
            let rtt = t2.saturating_sub(t0);
            let offset = theirs as i64 - (t0 / 2 + t2 / 2) as i64;
            if best.is_none_or(|(r, _)| rtt < r) {
                best = Some((rtt, offset));
            }
        }
        let (rtt, offset_ns) = best.unwrap_or_default();
        Ok(ClockSync {
            shared: false,
            offset_ns,
            uncertainty_ns: rtt / 2,
        })
    }
}

/// Clock exchanges with an agent on another machine (the fastest is kept).
const CLOCK_ROUNDS: usize = 16;

impl Drop for AgentConn {
    fn drop(&mut self) {
        let _ = self.send(&Request::Quit);
        if let Some(s) = &self.unix {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        if let Some(c) = &mut self.child {
            // A second Ctrl-C skips the wait.
            let waits = if crate::sys::signals::signals() >= 2 {
                0
            } else {
                100
            };
            for _ in 0..waits {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One initiator → server pair: who, and at which addresses.
#[derive(Clone, Debug)]
pub struct Pair {
    /// Indexes into the agents.
    pub initiator: usize,
    pub server: usize,
    /// Where the server listens, where the initiator connects, and the ports it may use (NAT).
    pub listen_on: IpAddr,
    pub connect_to: IpAddr,
    pub ports: Option<[u16; 2]>,
    /// Names for the report, e.g. "g1" and "client".
    pub from: String,
    pub to: String,
    /// This pair runs the test reversed (--bidir's second direction): the server sends a
    /// TCP_STREAM, the initiator a TCP_MAERTS.
    pub reverse: bool,
}

impl Pair {
    /// The test this pair runs.
    fn test(&self, spec: &Spec) -> TestKind {
        match self.reverse {
            true => spec.test.reversed().unwrap_or(spec.test),
            false => spec.test,
        }
    }
}

/// The pairs a test runs: as given, and with --bidir each once more reversed, on connections of
/// its own.
fn both_ways(spec: &Spec, pairs: &[Pair]) -> Vec<Pair> {
    let back = pairs.iter().filter(|_| spec.bidir).map(|p| Pair {
        reverse: !p.reverse,
        ..p.clone()
    });
    pairs.iter().cloned().chain(back).collect()
}

/// Stream ids: pair k's streams are k*1000, k*1000+1, …
const IDS_PER_PAIR: u32 = 1000;

/// Runs one test over the pairs and returns the combined result. `on_start` is called with the
/// instant every agent was told to run (the meter's window starts a warm-up after it).
pub fn run_test(
    spec: &Spec,
    agents: &mut [AgentConn],
    pairs: &[Pair],
    on_start: &mut dyn FnMut(std::time::Instant),
) -> Result<TestResult, Error> {
    spec.validate()?;
    if pairs.is_empty() {
        return Err(Error::Failed("nothing to test: no pairs".into()));
    }
    let pairs = &both_ways(spec, pairs)[..];
    let clocks = clocks(spec, agents)?;
    prepare(spec, agents, pairs, &clocks)?;
    let order = start_order(pairs);
    start(agents, &order, on_start)?;
    let reports = collect(spec, agents, pairs, &order)?;
    no_errors(agents, &reports)?;
    let mut r = combine(spec, pairs, &reports);
    r.remote_cpu = remote_cpu(agents, &reports);
    if let Some(v) = r.vdi.as_mut() {
        v.clock = least_certain(&clocks);
    }
    transfer_matches(&r)?;
    Ok(r)
}

/// Each agent's clock against this process's, for a VDI test (none otherwise).
fn clocks(spec: &Spec, agents: &mut [AgentConn]) -> Result<Vec<ClockSync>, Error> {
    // VDI frame delays are one-way: an agent on another machine has a clock of its own.
    Ok(if spec.vdi.is_some() {
        agents
            .iter_mut()
            .map(AgentConn::clock)
            .collect::<Result<_, _>>()?
    } else {
        vec![]
    })
}

/// Each agent's copy of the spec for a pair: one on another machine reports that machine's
/// CPU; a reversed pair runs its test the other way.
fn spec_for(spec: &Spec, key: u64, a: &AgentConn, p: &Pair) -> Spec {
    Spec {
        report_cpu: a.remote,
        test: p.test(spec),
        key,
        ..spec.clone()
    }
}

/// The protocol's first step: servers listen, initiators connect, pair by pair.
fn prepare(
    spec: &Spec,
    agents: &mut [AgentConn],
    pairs: &[Pair],
    clocks: &[ClockSync],
) -> Result<(), Error> {
    // One data key per test, which every data connection shows (`Spec::key`).
    let key: u64 = rand::random::<u64>() | 1;
    for (k, p) in pairs.iter().enumerate() {
        let first_id = k as u32 * IDS_PER_PAIR;
        let to = listen(spec, key, agents, p, clocks, first_id)?;
        let initiator_spec = spec_for(spec, key, &agents[p.initiator], p);
        agents[p.initiator].call(
            &Request::Connect {
                spec: initiator_spec,
                to,
                first_id,
            },
            SETUP_TIMEOUT,
        )?;
    }
    Ok(())
}

/// A pair's server told to listen (its clock against the initiator's, where there are clocks);
/// the addresses its initiator is to connect to.
fn listen(
    spec: &Spec,
    key: u64,
    agents: &mut [AgentConn],
    p: &Pair,
    clocks: &[ClockSync],
    first_id: u32,
) -> Result<Vec<SocketAddr>, Error> {
    let mut server_spec = spec_for(spec, key, &agents[p.server], p);
    if let (Some(s), Some(i)) = (clocks.get(p.server), clocks.get(p.initiator)) {
        // The engine initiates, the client serves: its clock less the engine's.
        server_spec.clock_offset_ns = s.offset_ns - i.offset_ns;
    }
    let reply = agents[p.server].call(
        &Request::Listen {
            spec: server_spec,
            bind: p.listen_on,
            ports: p.ports,
            streams: spec.parallel,
            first_id,
        },
        SETUP_TIMEOUT,
    )?;
    let ports = match reply {
        Reply::Listening { ports } => ports,
        other => {
            return Err(Error::Failed(format!(
                "unexpected reply from {}: {other:?}",
                agents[p.server].name
            )))
        }
    };
    Ok(ports
        .iter()
        .map(|&port| SocketAddr::new(p.connect_to, port))
        .collect())
}

/// The order agents are started and heard in: servers first, then initiators, each once.
fn start_order(pairs: &[Pair]) -> Vec<usize> {
    let mut order: Vec<usize> = Vec::new();
    for p in pairs {
        if !order.contains(&p.server) {
            order.push(p.server);
        }
    }
    for p in pairs {
        if !order.contains(&p.initiator) {
            order.push(p.initiator);
        }
    }
    order
}

/// Starts every agent at once, in `order`, and tells `on_start` when.
fn start(
    agents: &mut [AgentConn],
    order: &[usize],
    on_start: &mut dyn FnMut(std::time::Instant),
) -> Result<(), Error> {
    let started = std::time::Instant::now();
    for &i in order {
        agents[i].send(&Request::Run)?;
    }
    on_start(started);
    Ok(())
}

/// Every agent's report, in `order`, each checked before it is used; waits as long as the test
/// can run and stop.
fn collect(
    spec: &Spec,
    agents: &mut [AgentConn],
    pairs: &[Pair],
    order: &[usize],
) -> Result<Vec<(usize, SideReport)>, Error> {
    let wait = Duration::from_secs_f64(
        spec.warmup + spec.duration + super::flows::GRACE_S + super::flows::HARD_S + 10.0,
    );
    let mut reports: Vec<(usize, SideReport)> = Vec::new();
    for &i in order {
        match agents[i].recv(wait)? {
            Reply::Report { report } => {
                checked(&report, spec, pairs).map_err(|why| {
                    Error::Failed(format!(
                        "{}: its report is impossible ({why}): not used",
                        agents[i].name
                    ))
                })?;
                reports.push((i, report));
            }
            other => {
                return Err(Error::Failed(format!(
                    "unexpected reply from {}: {other:?}",
                    agents[i].name
                )))
            }
        }
    }
    Ok(reports)
}

/// The errors the agents reported, each under its agent's name, as one failure.
fn no_errors(agents: &[AgentConn], reports: &[(usize, SideReport)]) -> Result<(), Error> {
    let errors: Vec<String> = reports
        .iter()
        .flat_map(|(i, r)| r.errors.iter().map(|e| format!("{}: {e}", agents[*i].name)))
        .collect();
    if !errors.is_empty() {
        return Err(Error::Failed(errors.join("; ")));
    }
    Ok(())
}

/// The CPU of each agent's machine that reported it (agents on other machines).
fn remote_cpu(agents: &[AgentConn], reports: &[(usize, SideReport)]) -> Vec<RemoteCpu> {
    reports
        .iter()
        .filter_map(|(i, rep)| {
            Some(RemoteCpu {
                agent: agents[*i].name.clone(),
                cpu: rep.machine_cpu.clone()?,
            })
        })
        .collect()
}

/// The least certain clock of any agent, where one is on another machine.
fn least_certain(clocks: &[ClockSync]) -> Option<ClockSync> {
    clocks
        .iter()
        .filter(|c| !c.shared)
        .max_by_key(|c| c.uncertainty_ns)
        .cloned()
}

/// A failure where the receiver got other bytes than were sent (--verify, a fixed transfer).
fn transfer_matches(r: &TestResult) -> Result<(), Error> {
    if let Some(t) = r.transfer.as_ref().filter(|t| !t.matches) {
        return Err(Error::Failed(format!(
            "verify: the receiver got other bytes than were sent ({} sent, {} received; sha256 {} ≠ {})",
            t.bytes_sent,
            t.bytes_received,
            t.sent_sha256.as_deref().unwrap_or("-"),
            t.received_sha256.as_deref().unwrap_or("-")
        )));
    }
    Ok(())
}

/// A side's report checked as any input from another machine is: stream ids only those the
/// pairs were given, each once; lists no longer than the test can fill; every machine figure
/// possible. Why not, if it is not.
fn checked(r: &SideReport, spec: &Spec, pairs: &[Pair]) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for s in &r.streams {
        let (pair, k) = (s.id / IDS_PER_PAIR, s.id % IDS_PER_PAIR);
        if pair as usize >= pairs.len() || k >= 2 * spec.parallel.max(1) {
            return Err(format!("stream id {} was never assigned", s.id));
        }
        if !seen.insert((s.id, s.receiver)) {
            return Err(format!("stream {} reported twice", s.id));
        }
        if !s.active_s.is_finite() || s.active_s < 0.0 {
            return Err(format!("stream {} active {} s", s.id, s.active_s));
        }
    }
    let buckets = ((spec.warmup + spec.duration) / intervals::BUCKET_S).ceil() as usize + 100;
    let long = [
        ("buckets", r.buckets.len(), buckets),
        ("latency histogram", r.latency_ns.len(), 1 << 20),
        ("TCP samples", r.tcp_info.len(), 1 << 20),
        ("errors", r.errors.len(), 1000),
    ];
    if let Some((what, n, most)) = long.iter().find(|(_, n, most)| n > most) {
        return Err(format!("{n} {what}, at most {most} possible"));
    }
    if let Some(m) = &r.machine_cpu {
        let pct = |v: f64| v.is_finite() && (0.0..=100.0 + 1e-6).contains(&v);
        let ok = (1..=65536).contains(&m.ncpu)
            && pct(m.busy_pct)
            && pct(m.max_core_pct)
            && m.busy_cores.is_finite()
            && (0.0..=m.ncpu as f64 + 1e-6).contains(&m.busy_cores)
            && m.window_s.is_finite()
            && m.window_s > 0.0
            && m.window_s <= spec.duration + spec.warmup + 60.0;
        if !ok {
            return Err(format!(
                "its machine's CPU reads {:.3} % of {} cores ({:.3} cores, busiest core {:.3} %, over {:.3} s)",
                m.busy_pct, m.ncpu, m.busy_cores, m.max_core_pct, m.window_s
            ));
        }
    }
    Ok(())
}

/// Every side's report combined into the test's result.
fn combine(spec: &Spec, pairs: &[Pair], reports: &[(usize, SideReport)]) -> TestResult {
    let secs = spec.duration;
    let t = Totals::gather(spec, pairs, reports);
    let total_bytes: u64 = t.streams.iter().map(|s| s.bytes).sum();
    let per_source = per_source(&t.streams);
    let is_rr = spec.test.is_rr();
    let starved = starved(spec, &per_source);
    let tps = is_rr.then(|| t.transactions as f64 / secs);
    let latency = latency(spec, &t.hist);
    let throughput = throughput(spec, reports, tps, total_bytes);
    let udp_loss = t.udp_loss(spec);
    let zerocopy = spec.zerocopy.then(|| t.zerocopy());
    TestResult {
        engine: crate::vocab::Engine::Vnetlab,
        test: spec.test,
        bidir: spec.bidir,
        from: unique(pairs.iter().map(|p| p.from.as_str())),
        to: unique(pairs.iter().map(|p| p.to.as_str())),
        message_bytes: if is_rr { spec.req } else { spec.msg },
        duration_s: secs,
        warmup_s: spec.warmup,
        parallel: spec.parallel,
        pacing: pacing(spec),
        congestion: (!spec.test.is_udp()).then(|| spec.congestion.clone()),
        throughput_gbps: throughput,
        streams: t.streams,
        per_source_gbps: per_source.into_iter().collect(),
        intervals: intervals_of(spec, &t.bucket_sets),
        transactions_per_s: tps,
        latency_us: latency,
        udp_loss_pct: udp_loss,
        tcp_retransmits: (!spec.test.is_udp()).then_some(t.retrans),
        tcp_info: t.tcp_info,
        transfer: (spec.bytes.is_some() || spec.verify).then(|| transfer(reports)),
        vdi: spec
            .vdi
            .as_ref()
            .map(|v| vdi_sides(&v.profile, reports, secs)),
        starved,
        remote_cpu: vec![],
        zerocopy,
    }
}

/// What the sides' reports add up to, gathered in one pass over them: the receivers' streams,
/// every side's buckets, the counters, the latency histogram and TCP samples.
struct Totals {
    streams: Vec<StreamResult>,
    bucket_sets: Vec<Vec<u64>>,
    sent_dgrams: u64,
    recv_dgrams: u64,
    retrans: u64,
    transactions: u64,
    lost: u64,
    zc_done: u64,
    zc_copied: u64,
    hist: hdrhistogram::Histogram<u64>,
    tcp_info: Vec<TcpSample>,
}

impl Totals {
    /// Every side's report added up: its buckets, its latency merged into one histogram, the
    /// first TCP samples any side has, and each of its streams; the streams in id order.
    fn gather(spec: &Spec, pairs: &[Pair], reports: &[(usize, SideReport)]) -> Totals {
        let mut t = Totals {
            streams: Vec::new(),
            bucket_sets: Vec::new(),
            sent_dgrams: 0,
            recv_dgrams: 0,
            retrans: 0,
            transactions: 0,
            lost: 0,
            zc_done: 0,
            zc_copied: 0,
            hist: hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap(),
            tcp_info: Vec::new(),
        };
        for (_, r) in reports {
            t.bucket_sets.push(r.buckets.clone());
            for &(v, c) in &r.latency_ns {
                let _ = t.hist.record_n(v, c);
            }
            if t.tcp_info.is_empty() {
                t.tcp_info = r.tcp_info.clone();
            }
            for s in &r.streams {
                t.add_stream(spec, &pairs[(s.id / IDS_PER_PAIR) as usize], s);
            }
        }
        t.streams.sort_by_key(|s| s.id);
        t
    }

    /// One stream of a side's report: at the receiver, a stream of the result named the way its
    /// pair's test sends; at the sender, its counters.
    fn add_stream(&mut self, spec: &Spec, p: &Pair, s: &StreamReport) {
        if s.receiver {
            self.recv_dgrams += s.datagrams;
            let (from, to) = match p.test(spec).initiator_sends() {
                true => (&p.from, &p.to),
                false => (&p.to, &p.from),
            };
            self.streams.push(StreamResult {
                id: s.id,
                from: from.clone(),
                to: to.clone(),
                gbps: intervals::gbps(s.window_bytes, spec.duration),
                bytes: s.window_bytes,
            });
        } else {
            self.sent_dgrams += s.datagrams;
            self.retrans += s.retrans;
            self.zc_done += s.zc_completed;
            self.zc_copied += s.zc_copied;
        }
        // RR transactions are counted only where they are timed: at the initiator.
        self.transactions += s.transactions;
        self.lost += s.lost;
    }

    /// The share lost: a UDP stream's datagrams, a UDP RR test's transactions.
    fn udp_loss(&self, spec: &Spec) -> Option<f64> {
        match spec.test {
            TestKind::UdpStream if self.sent_dgrams > 0 => Some(
                100.0 * self.sent_dgrams.saturating_sub(self.recv_dgrams) as f64
                    / self.sent_dgrams as f64,
            ),
            TestKind::UdpRr if self.transactions + self.lost > 0 => {
                Some(100.0 * self.lost as f64 / (self.transactions + self.lost) as f64)
            }
            _ => None,
        }
    }

    /// How the zero-copy sends completed: how many, and the share the kernel copied after all.
    fn zerocopy(&self) -> ZeroCopy {
        ZeroCopy {
            sends_completed: self.zc_done,
            copied_pct: if self.zc_done > 0 {
                100.0 * self.zc_copied as f64 / self.zc_done as f64
            } else {
                0.0
            },
        }
    }
}

/// Each source's Gb/s, summed over its streams, the sources in the order of their first stream.
fn per_source(streams: &[StreamResult]) -> Vec<(String, f64)> {
    let mut per_source: Vec<(String, f64)> = Vec::new();
    for s in streams {
        match per_source.iter_mut().find(|(n, _)| *n == s.from) {
            Some((_, g)) => *g += s.gbps,
            None => per_source.push((s.from.clone(), s.gbps)),
        }
    }
    per_source
}

/// The sources whose streams moved nothing (an RR test or a fixed transfer has none).
fn starved(spec: &Spec, per_source: &[(String, f64)]) -> Vec<String> {
    if spec.test.is_rr() || spec.bytes.is_some() {
        vec![]
    } else {
        per_source
            .iter()
            .filter(|(_, g)| *g == 0.0)
            .map(|(n, _)| n.clone())
            .collect()
    }
}

/// An RR test's latency percentiles from the merged histogram, in µs (none if nothing was timed).
fn latency(spec: &Spec, hist: &hdrhistogram::Histogram<u64>) -> Option<Latency> {
    (spec.test.is_rr() && !hist.is_empty()).then(|| {
        let us = |q: f64| hist.value_at_quantile(q) as f64 / 1e3;
        Latency {
            p50: us(0.5),
            p90: us(0.9),
            p99: us(0.99),
            p999: us(0.999),
            max: hist.max() as f64 / 1e3,
            mean: hist.mean() / 1e3,
        }
    })
}

/// The test's Gb/s: an RR test's transactions with their request and response, a fixed
/// transfer's bytes over its receivers' time, else the receivers' bytes over the window.
fn throughput(
    spec: &Spec,
    reports: &[(usize, SideReport)],
    tps: Option<f64>,
    total_bytes: u64,
) -> f64 {
    if spec.test.is_rr() {
        tps.unwrap_or(0.0) * (spec.req + spec.resp) as f64 * 8.0 / 1e9
    } else if spec.bytes.is_some() {
        // A fixed transfer: all bytes over the receivers' time from first byte to end.
        let all: u64 = reports
            .iter()
            .flat_map(|(_, r)| r.streams.iter())
            .filter(|s| s.receiver)
            .map(|s| s.total_bytes)
            .sum();
        let active = reports
            .iter()
            .flat_map(|(_, r)| r.streams.iter())
            .filter(|s| s.receiver)
            .map(|s| s.active_s)
            .fold(0.0, f64::max);
        intervals::gbps(all, active)
    } else {
        intervals::gbps(total_bytes, spec.duration)
    }
}

/// The pacing the streams were held to, if any (none for an RR or a VDI test).
fn pacing(spec: &Spec) -> Option<PacedStreams> {
    spec.rate
        .filter(|_| !spec.test.is_rr() && spec.vdi.is_none())
        .map(|rate_bps| PacedStreams {
            rate_bps,
            mode: spec.pacing,
        })
}

/// A stream test's Gb/s per interval, the sides' buckets summed (an RR test or a fixed transfer
/// has none).
fn intervals_of(spec: &Spec, bucket_sets: &[Vec<u64>]) -> Vec<Interval> {
    if spec.test.is_rr() || spec.bytes.is_some() {
        vec![]
    } else {
        intervals::fold(&intervals::sum(bucket_sets), spec.interval)
    }
}

/// Each desktop's (client, engine) reports, matched by stream id, combined.
fn vdi_sides(
    profile: &str,
    reports: &[(usize, SideReport)],
    secs: f64,
) -> crate::records::vdi::VdiResult {
    use std::collections::BTreeMap;
    let mut by_id: BTreeMap<u32, (super::proto::VdiReport, super::proto::VdiReport)> =
        BTreeMap::new();
    for s in reports.iter().flat_map(|(_, r)| r.streams.iter()) {
        let Some(v) = &s.vdi else { continue };
        let e = by_id.entry(s.id).or_default();
        match s.receiver {
            true => e.0 = v.clone(),
            false => e.1 = v.clone(),
        }
    }
    let sides: Vec<_> = by_id.into_values().collect();
    super::vdi_result::combine(profile, &sides, secs)
}

fn unique<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut v: Vec<&str> = Vec::new();
    for n in names {
        if !v.contains(&n) {
            v.push(n);
        }
    }
    v.join(",")
}

/// Sent and received bytes and hashes, per stream id (one stream per id on each side).
fn transfer(reports: &[(usize, SideReport)]) -> Transfer {
    let mut sent: Vec<(u32, u64, Option<String>)> = Vec::new();
    let mut got: Vec<(u32, u64, Option<String>)> = Vec::new();
    for (_, r) in reports {
        for s in &r.streams {
            let v = (s.id, s.total_bytes, s.sha256.clone());
            if s.receiver {
                got.push(v)
            } else {
                sent.push(v)
            }
        }
    }
    sent.sort_by_key(|v| v.0);
    got.sort_by_key(|v| v.0);
    let total = |v: &[(u32, u64, Option<String>)]| v.iter().map(|x| x.1).sum::<u64>();
    let hashes = |v: &[(u32, u64, Option<String>)]| {
        v.iter()
            .map(|x| x.2.clone().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",")
    };
    let (hs, hr) = (hashes(&sent), hashes(&got));
    let verified = sent.iter().all(|x| x.2.is_some());
    let same_bytes = total(&sent) == total(&got);
    Transfer {
        bytes_sent: total(&sent),
        bytes_received: total(&got),
        matches: same_bytes && (!verified || hs == hr),
        sent_sha256: verified.then_some(hs),
        received_sha256: verified.then_some(hr),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::proto::StreamReport;
    use crate::records::test::MachineCpu;

    fn pair(k: &str) -> Pair {
        Pair {
            initiator: 1,
            server: 0,
            listen_on: [127, 0, 0, 1].into(),
            connect_to: [127, 0, 0, 1].into(),
            ports: None,
            from: k.into(),
            to: "client".into(),
            reverse: false,
        }
    }

    /// A hostile serve's report is input: a stream id no pair was given (it panicked the client
    /// at 200 000), a stream twice, lists past what the test can fill, impossible CPU figures.
    #[test]
    fn an_impossible_report_is_refused_before_it_is_read() {
        let spec = Spec {
            duration: 1.0,
            warmup: 0.5,
            parallel: 2,
            ..Default::default()
        };
        let pairs = [pair("g1")];
        let stream = |id| StreamReport {
            id,
            receiver: true,
            ..Default::default()
        };
        let good = SideReport {
            streams: vec![stream(0), stream(1)],
            buckets: vec![0; 150],
            ..Default::default()
        };
        assert!(checked(&good, &spec, &pairs).is_ok());
        let far = SideReport {
            streams: vec![stream(200_000)],
            ..Default::default()
        };
        assert!(checked(&far, &spec, &pairs)
            .unwrap_err()
            .contains("never assigned"));
        let twice = SideReport {
            streams: vec![stream(1), stream(1)],
            ..Default::default()
        };
        assert!(checked(&twice, &spec, &pairs)
            .unwrap_err()
            .contains("twice"));
        let long = SideReport {
            buckets: vec![0; 100_000],
            ..Default::default()
        };
        assert!(checked(&long, &spec, &pairs).is_err());
        for (busy, cores) in [(-1e308, 0.5), (250.0, 1.0), (50.0, f64::NAN), (50.0, 9.0)] {
            let r = SideReport {
                machine_cpu: Some(MachineCpu {
                    ncpu: 2,
                    busy_pct: busy,
                    busy_cores: cores,
                    max_core_pct: 60.0,
                    window_s: 1.0,
                }),
                ..Default::default()
            };
            assert!(checked(&r, &spec, &pairs).is_err(), "{busy} {cores}");
        }
    }

    /// A QEMU guest's port as a unix socket: what an earlier session left queued comes first
    /// (a probe's unread "ok", an error, a line cut short), then the agent itself answers.
    #[test]
    fn a_guest_session_reads_past_an_earlier_sessions_replies() {
        use std::io::{BufReader, Write};
        let dir = std::env::temp_dir().join(format!("vl-welcome-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("agent.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let agent = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let mut w = s.try_clone().unwrap();
            w.write_all(b"{\"reply\":\"ok\"}\n{\"reply\":\"error\",\"error\":\"old\"}\n{\"rep\n")
                .unwrap();
            let end = crate::engine::agent::session(
                BufReader::new(s),
                w,
                crate::engine::agent::SessionMode::Local,
            );
            assert_eq!(end.unwrap(), crate::engine::agent::SessionEnd::Done);
        });
        let mut a = AgentConn::unix("g1", &path).unwrap();
        let r = a.call(&Request::Time, SETUP_TIMEOUT).unwrap();
        assert!(matches!(r, Reply::Time { .. }), "{r:?}");
        drop(a);
        agent.join().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bidir_runs_each_pair_once_more_reversed_and_names_each_way() {
        let spec = Spec {
            bidir: true,
            ..Default::default()
        };
        let pairs = both_ways(&spec, &[pair("g1")]);
        assert_eq!(pairs.len(), 2);
        assert_eq!(pairs[1].test(&spec), TestKind::TcpMaerts);
        let rep = |id: u32, bytes: u64| StreamReport {
            id,
            receiver: true,
            window_bytes: bytes,
            ..Default::default()
        };
        let reports = vec![(
            0,
            SideReport {
                streams: vec![rep(0, 125_000_000), rep(1000, 250_000_000)],
                ..Default::default()
            },
        )];
        let r = combine(&spec, &pairs, &reports);
        assert!(r.bidir);
        let ways: Vec<_> = r
            .streams
            .iter()
            .map(|s| (s.from.as_str(), s.to.as_str()))
            .collect();
        assert_eq!(ways, [("g1", "client"), ("client", "g1")]);
        // 375 MB over the default 10 s window.
        assert!(
            (r.throughput_gbps - 0.3).abs() < 1e-9,
            "{}",
            r.throughput_gbps
        );
        assert_eq!(both_ways(&Spec::default(), &pairs[..1]).len(), 1);
    }

    #[test]
    fn latency_histograms_from_several_agents_merge_into_percentiles() {
        // Two initiators: one saw 900 transactions at 10 µs, the other 100 at 1 ms.
        let spec = Spec {
            test: TestKind::TcpRr,
            duration: 1.0,
            ..Default::default()
        };
        let rep = |id: u32, ns: u64, n: u64| SideReport {
            streams: vec![StreamReport {
                id,
                transactions: n,
                ..Default::default()
            }],
            latency_ns: vec![(ns, n)],
            ..Default::default()
        };
        let r = combine(
            &spec,
            &[pair("g1"), pair("g2")],
            &[(1, rep(0, 10_000, 900)), (2, rep(1000, 1_000_000, 100))],
        );
        assert_eq!(r.transactions_per_s, Some(1000.0));
        let l = r.latency_us.unwrap();
        assert!((l.p50 - 10.0).abs() < 0.1, "{l:?}");
        assert!((l.p90 - 10.0).abs() < 0.1, "{l:?}");
        assert!((l.p99 - 1000.0).abs() / 1000.0 < 0.01, "{l:?}");
        assert!((l.max - 1000.0).abs() / 1000.0 < 0.01);
        assert!((l.mean - (0.9 * 10.0 + 0.1 * 1000.0)).abs() < 1.0);
        assert!(r.intervals.is_empty() && r.udp_loss_pct.is_none());
    }

    #[test]
    fn streams_count_at_the_receiver_per_source() {
        let spec = Spec {
            duration: 2.0,
            ..Default::default()
        };
        let recv = SideReport {
            streams: vec![
                StreamReport {
                    id: 0,
                    receiver: true,
                    window_bytes: 250_000_000,
                    ..Default::default()
                },
                StreamReport {
                    id: 1000,
                    receiver: true,
                    window_bytes: 500_000_000,
                    ..Default::default()
                },
            ],
            buckets: vec![3_750_000; 200],
            ..Default::default()
        };
        let send = SideReport {
            streams: vec![StreamReport {
                id: 0,
                retrans: 3,
                ..Default::default()
            }],
            ..Default::default()
        };
        let r = combine(&spec, &[pair("g1"), pair("g2")], &[(0, recv), (1, send)]);
        assert!((r.throughput_gbps - 3.0).abs() < 1e-9);
        assert_eq!(r.per_source_gbps["g1"], 1.0);
        assert_eq!(r.per_source_gbps["g2"], 2.0);
        assert_eq!(r.tcp_retransmits, Some(3));
        assert_eq!(r.intervals.len(), 2);
        assert!((r.intervals[0].gbps - 3.0).abs() < 1e-9);
    }
}
