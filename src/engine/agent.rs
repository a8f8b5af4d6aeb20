//! An agent: one end of a test. It answers control requests (listen, connect, run) on one
//! channel, runs every stream it prepared on its own thread against one clock, and reports.

use super::Error;
use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::flows::{self, Clock, Piece};
use super::intervals;
use super::proto::{self, Reply, Request, SideReport};
use super::reach::Reach;
use super::sockets;
use super::spec::Spec;
use super::vdi_session;
use crate::records::test::MachineCpu;
use crate::vocab::TestKind;

/// How long the server side waits for the initiator's connections.
const ACCEPT_TIMEOUT: Duration = Duration::from_secs(10);

enum Prepared {
    /// A listener whose data connections wait in its backlog until the run accepts them.
    TcpServer {
        spec: Spec,
        listener: TcpListener,
        streams: u32,
    },
    CrrServer {
        spec: Spec,
        listener: TcpListener,
        first_id: u32,
    },
    UdpServer {
        spec: Spec,
        sockets: Vec<(u32, UdpSocket)>,
    },
    TcpClient {
        spec: Spec,
        conns: Vec<(u32, TcpStream)>,
    },
    CrrClient {
        spec: Spec,
        to: SocketAddr,
        first_id: u32,
    },
    UdpClient {
        spec: Spec,
        sockets: Vec<(u32, UdpSocket)>,
    },
}

/// One memory budget for every session a `serve` serves: each listen or connect reserves what its
/// streams' buffers will take (the largest message, request or response, and the socket buffers
/// it asks for, per stream) until its session runs it or ends; one that would exceed the budget
/// is refused with why. Per request the engine allows `MAX_BUFFERS`; this bounds the sum.
#[derive(Debug)]
pub struct Budget {
    limit: u64,
    used: std::sync::atomic::AtomicU64,
}

/// A `serve`'s memory budget unless told otherwise (`serve --memory`): 512 MiB, two requests of
/// the largest buffers at once.
pub const SERVE_BUDGET: u64 = 512 << 20;

impl Budget {
    pub fn new(limit: u64) -> Budget {
        Budget {
            limit,
            used: std::sync::atomic::AtomicU64::new(0),
        }
    }
    /// Reserves `n` bytes if they fit.
    fn take(&self, n: u64) -> bool {
        use std::sync::atomic::Ordering;
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                (u.saturating_add(n) <= self.limit).then_some(u + n)
            })
            .is_ok()
    }
    fn give(&self, n: u64) {
        self.used.fetch_sub(n, std::sync::atomic::Ordering::AcqRel);
    }
    /// Bytes reserved now.
    pub fn used(&self) -> u64 {
        self.used.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// What a request's streams will hold in memory, per stream: its message buffer (a request and
/// a response together for request/response tests, which hold both; at least a receiver's
/// 256 KiB), its per-interval counters (8 bytes per 10 ms of the test), its latency histogram
/// (only the initiating side of a request/response test keeps one), and the socket buffers it
/// asks for, which the kernel doubles.
pub fn cost(spec: &Spec, initiates: bool) -> u64 {
    const RECV_BUF: u64 = 256 << 10;
    let histogram: u64 = if initiates && spec.test.is_rr() {
        256 << 10
    } else {
        0
    };
    let buffer = (spec.msg as u64)
        .max(spec.req as u64 + spec.resp as u64)
        .max(RECV_BUF);
    let buckets = ((spec.warmup + spec.duration).max(0.0) / 0.01).ceil() as u64 * 8 + 8;
    let sockets = 2 * (spec.local_buf.unwrap_or(0) as u64 + spec.remote_buf.unwrap_or(0) as u64);
    (buffer + buckets + histogram + sockets).saturating_mul(u64::from(spec.parallel.max(1)))
}

pub struct Agent {
    prepared: Vec<Prepared>,
    max_prepared: usize,
    /// A served session's share of its serve's budget, and what it holds reserved now.
    budget: Option<(std::sync::Arc<Budget>, u64)>,
    /// Where a served session may aim its traffic (None: the driver's own agents).
    reach: Option<Reach>,
}

/// Whom a control channel serves.
pub enum SessionMode {
    /// vnetlab's own driver (an agent it started in a lab endpoint, in-process or in a guest).
    Local,
    /// A `vnetlab serve` client that has shown the token: at most `MAX_PREPARED` listens and
    /// connects before a run, their buffers within the serve's one `Budget`, and traffic only
    /// where `Reach` allows.
    Served(Reach, std::sync::Arc<Budget>),
}

/// The most listens and connects one `serve` session may prepare before it runs them (an agent a
/// lab test starts serves its own driver, one pair per guest, and has no such cap).
pub const MAX_PREPARED: usize = 64;

/// How a session ended.
#[derive(Debug, PartialEq)]
pub enum SessionEnd {
    /// The peer said quit or closed the channel, after authenticating (if a token was asked).
    Done,
    /// The first line was not a hello with the right token: nothing was served.
    Refused,
}

/// Serves sessions on a QEMU guest's virtio-serial port for as long as the guest runs: the port
/// is opened once (it admits one opener); when the host's side disconnects, reads return end of
/// file until it connects again, so the next session starts after a short pause. Returns only
/// if the port cannot be opened.
pub fn serve_serial(dev: &std::path::Path) -> Error {
    let port = match std::fs::OpenOptions::new().read(true).write(true).open(dev) {
        Ok(f) => f,
        Err(e) => return Error::Failed(format!("cannot open {}: {e}", dev.display())),
    };
    loop {
        let (Ok(r), Ok(w)) = (port.try_clone(), port.try_clone()) else {
            return Error::Failed(format!("cannot use {}", dev.display()));
        };
        let _ = session(std::io::BufReader::new(r), w, SessionMode::Local);
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Serves one control channel until it closes or says quit (a served client's token was checked
/// before: see `serve`). Every line is read within `MAX_REQUEST` bytes.
pub fn session(
    mut input: impl BufRead,
    mut out: impl Write,
    mode: SessionMode,
) -> Result<SessionEnd, Error> {
    let mut agent = match mode {
        SessionMode::Local => Agent {
            prepared: Vec::new(),
            max_prepared: usize::MAX,
            budget: None,
            reach: None,
        },
        SessionMode::Served(reach, budget) => Agent {
            prepared: Vec::new(),
            max_prepared: MAX_PREPARED,
            budget: Some((budget, 0)),
            reach: Some(reach),
        },
    };
    loop {
        let line = match proto::read_line(&mut input, proto::MAX_REQUEST) {
            Ok(Some(l)) => l,
            Ok(None) => return Ok(SessionEnd::Done),
            Err(e) => {
                let _ = send(&mut out, &Reply::error(format!("control channel: {e}")));
                return Err(Error::Failed(format!("control channel: {e}")));
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Request>(&line) {
            Ok(Request::Quit) => return Ok(SessionEnd::Done),
            Ok(req) => agent.handle(req),
            Err(e) => Reply::error(format!(
                "bad request: {}",
                crate::text::clip(&e.to_string())
            )),
        };
        send(&mut out, &reply)?;
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.release();
    }
}

pub(super) fn send(out: &mut impl Write, r: &Reply) -> Result<(), Error> {
    let mut s = serde_json::to_string(r).unwrap();
    s.push('\n');
    out.write_all(s.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| Error::Failed(format!("control channel: {e}")))
}

impl Agent {
    pub fn handle(&mut self, req: Request) -> Reply {
        if matches!(req, Request::Listen { .. } | Request::Connect { .. })
            && self.prepared.len() >= self.max_prepared
        {
            return Reply::error(format!(
                "at most {} listens and connects per run",
                self.max_prepared
            ));
        }
        // A spec out of bounds is refused for that by the request itself; one within them
        // reserves its buffers first.
        if let (Request::Listen { spec, .. } | Request::Connect { spec, .. }, Some((b, held))) =
            (&req, &mut self.budget)
        {
            if spec.validate().is_err() {
                return self.prepare(req);
            }
            let n = cost(spec, matches!(req, Request::Connect { .. }));
            if n > b.limit {
                return Reply::refusal(format!(
                    "this request asks {} MiB of buffers, more than this serve's whole --memory budget of {} MiB: it can never be served here; ask for smaller messages, buffers or fewer streams",
                    n.div_ceil(1 << 20),
                    b.limit >> 20
                ));
            }
            if !b.take(n) {
                return Reply::error(format!(
                    "this serve's memory budget is spent ({} of {} MiB reserved by its sessions; this request asks {} MiB): try again once they end, or ask for smaller messages or fewer streams",
                    b.used() >> 20,
                    b.limit >> 20,
                    n.div_ceil(1 << 20)
                ));
            }
            *held += n;
        }
        self.prepare(req)
    }

    /// Carries a request out (its budget, if any, already reserved).
    fn prepare(&mut self, req: Request) -> Reply {
        let r = match req {
            Request::Hello { nonce, .. } => {
                Ok(nonce.map_or(Reply::Ok, |nonce| Reply::Welcome { nonce }))
            }
            Request::Listen {
                spec,
                bind,
                ports,
                streams,
                first_id,
            } => self.listen(spec, bind, ports, streams, first_id),
            Request::Connect { spec, to, first_id } => self.connect(spec, to, first_id),
            Request::Run => {
                let report = self.run_streams();
                self.release();
                Ok(Reply::Report { report })
            }
            Request::Time => Ok(Reply::Time {
                mono_ns: crate::sys::monotonic_ns(),
            }),
            Request::Quit => Ok(Reply::Ok),
        };
        r.unwrap_or_else(|e| Reply::error(e.to_string()))
    }

    /// Gives back what this session reserved of its serve's budget.
    fn release(&mut self) {
        if let Some((b, held)) = &mut self.budget {
            b.give(*held);
            *held = 0;
        }
    }

    fn listen(
        &mut self,
        spec: Spec,
        bind: std::net::IpAddr,
        ports: Option<[u16; 2]>,
        streams: u32,
        first_id: u32,
    ) -> Result<Reply, Error> {
        spec.validate()?;
        if let Some(r) = &self.reach {
            r.check_listen(bind, ports)?;
        }
        if streams != spec.parallel {
            return Err(Error::Failed(format!(
                "listen for {streams} streams with -P {}: they must match",
                spec.parallel
            )));
        }
        let buf = spec.remote_buf;
        match spec.test {
            TestKind::UdpStream | TestKind::UdpRr => {
                let mut socks = Vec::new();
                let mut got = Vec::new();
                let mut range = ports;
                for k in 0..streams {
                    let (s, port) = sockets::udp_bind(bind, range, buf)?;
                    if let Some([_, hi]) = range {
                        range = Some([port.saturating_add(1), hi]);
                    }
                    got.push(port);
                    socks.push((first_id + k, s));
                }
                self.prepared.push(Prepared::UdpServer {
                    spec,
                    sockets: socks,
                });
                Ok(Reply::Listening { ports: got })
            }
            TestKind::TcpCrr => {
                let (l, port) = sockets::tcp_listen(bind, ports, buf, &spec.congestion)?;
                l.set_nonblocking(true)?;
                self.prepared.push(Prepared::CrrServer {
                    spec,
                    listener: l,
                    first_id,
                });
                Ok(Reply::Listening { ports: vec![port] })
            }
            _ => {
                // The initiator's connections wait in the listener's backlog until the run
                // accepts them: no thread per listen.
                let (l, port) = sockets::tcp_listen(bind, ports, buf, &spec.congestion)?;
                self.prepared.push(Prepared::TcpServer {
                    spec,
                    listener: l,
                    streams,
                });
                Ok(Reply::Listening { ports: vec![port] })
            }
        }
    }

    fn connect(&mut self, spec: Spec, to: Vec<SocketAddr>, first_id: u32) -> Result<Reply, Error> {
        spec.validate()?;
        if let Some(r) = &self.reach {
            r.check_connect(&to)?;
        }
        if to.len() > spec.parallel as usize {
            return Err(Error::Failed(format!(
                "{} addresses for -P {}: at most one per stream",
                to.len(),
                spec.parallel
            )));
        }
        let n = spec.parallel;
        let addr = |k: u32| {
            to.get(k as usize)
                .or(to.first())
                .copied()
                .ok_or_else(|| Error::Input("no address to connect to".into()))
        };
        match spec.test {
            TestKind::UdpStream | TestKind::UdpRr => {
                let mut socks = Vec::new();
                for k in 0..n {
                    socks.push((
                        first_id + k,
                        sockets::udp_connect(addr(k)?, spec.local_buf)?,
                    ));
                }
                self.prepared.push(Prepared::UdpClient {
                    spec,
                    sockets: socks,
                });
            }
            TestKind::TcpCrr => {
                let to = addr(0)?;
                self.prepared
                    .push(Prepared::CrrClient { spec, to, first_id });
            }
            _ => {
                let mut conns = Vec::new();
                for k in 0..n {
                    let mut s = sockets::tcp_connect(
                        addr(k)?,
                        spec.local_buf,
                        &spec.congestion,
                        spec.nodelay,
                        spec.zerocopy && spec.test.initiator_sends(),
                    )?;
                    s.write_all(&proto::preamble(first_id + k, spec.key))?;
                    conns.push((first_id + k, s));
                }
                self.prepared.push(Prepared::TcpClient { spec, conns });
            }
        }
        Ok(Reply::Ok)
    }

    /// Runs everything prepared against one clock, then reports.
    // Long on purpose: every stream starts against one clock here; one spawn loop keeps the
    // start skew between streams in one place.
    /// Starts every prepared stream on its own thread, waits for them all, and sums what they
    /// saw into this side's report (with the machine's CPU where the spec asks for it).
    fn run_streams(&mut self) -> SideReport {
        let t0 = Instant::now();
        let mut report = SideReport::default();
        let window = self.prepared.iter().find_map(|p| {
            let s = p.spec();
            s.report_cpu.then_some((s.warmup, s.duration))
        });
        let cpu = window.map(|(warmup, duration)| machine_cpu(t0, warmup, duration));
        let mut handles: Vec<JoinHandle<Piece>> = Vec::new();
        let mut first_receiver = true;
        for prep in self.prepared.drain(..) {
            match prep.start(t0, &mut first_receiver) {
                Ok(h) => handles.extend(h),
                Err(e) => report.errors.push(e),
            }
        }
        collect(handles, &mut report);
        report.machine_cpu = cpu.and_then(|h| h.join().ok().flatten());
        report
    }
}

/// Joins every stream's thread into `report`: errors, streams, the receivers' interval
/// buckets summed, the latency histograms merged, the first stream's TCP samples.
fn collect(handles: Vec<JoinHandle<Piece>>, report: &mut SideReport) {
    let mut bucket_sets = Vec::new();
    let mut hist: Option<hdrhistogram::Histogram<u64>> = None;
    for h in handles {
        let p = h.join().unwrap_or_else(|_| Piece {
            error: Some("a stream thread panicked".into()),
            ..Default::default()
        });
        if let Some(e) = p.error {
            report.errors.push(e);
        }
        if p.report.receiver {
            bucket_sets.push(p.buckets);
        }
        if let Some(hp) = p.hist {
            match &mut hist {
                Some(acc) => {
                    let _ = acc.add(&hp);
                }
                None => hist = Some(hp),
            }
        }
        if report.tcp_info.is_empty() {
            report.tcp_info = p.samples;
        }
        report.streams.push(p.report);
    }
    report.buckets = intervals::sum(&bucket_sets);
    if let Some(h) = hist {
        report.latency_ns = h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
    }
    report.streams.sort_by_key(|s| s.id);
}

impl Clock {
    /// The test's clock, started at `t0`.
    fn of(spec: &Spec, t0: Instant) -> Clock {
        Clock {
            t0,
            warmup: spec.warmup,
            duration: spec.duration,
        }
    }
}

/// A thread per stream, running `f` on it.
fn spawn_each<S: Send + 'static>(
    items: Vec<(u32, S)>,
    spec: &Spec,
    mut f: impl FnMut(S, u32, Spec) -> JoinHandle<Piece>,
) -> Vec<JoinHandle<Piece>> {
    items
        .into_iter()
        .map(|(id, s)| f(s, id, spec.clone()))
        .collect()
}

impl Prepared {
    /// Starts this side's streams, each on its own thread; the first receiver of a TCP stream
    /// samples TCP_INFO. Err: the peer's connections never came.
    fn start(
        self,
        t0: Instant,
        first_receiver: &mut bool,
    ) -> Result<Vec<JoinHandle<Piece>>, String> {
        let clock = Clock::of(self.spec(), t0);
        Ok(match self {
            Prepared::TcpServer {
                spec,
                listener,
                streams,
            } => {
                let conns = accept_streams(listener, streams, &spec).map_err(|e| e.to_string())?;
                spawn_each(conns, &spec, |s, id, spec| {
                    let sample = spec.test == TestKind::TcpStream && std::mem::take(first_receiver);
                    std::thread::spawn(move || match spec.test {
                        TestKind::TcpStream => flows::tcp_recv(s, id, &spec, clock, sample),
                        TestKind::TcpMaerts => flows::tcp_send(s, id, &spec, clock),
                        TestKind::Vdi => vdi_session::client(s, id, &spec, clock),
                        _ => flows::tcp_rr_respond(s, id, &spec, clock),
                    })
                })
            }
            Prepared::CrrServer {
                spec,
                listener,
                first_id,
            } => {
                let l = std::sync::Arc::new(listener);
                (0..spec.parallel.clamp(1, 8))
                    .map(|k| {
                        let (spec, l) = (spec.clone(), l.clone());
                        std::thread::spawn(move || {
                            flows::tcp_crr_respond(&l, first_id + k, &spec, clock)
                        })
                    })
                    .collect()
            }
            Prepared::UdpServer { spec, sockets } => spawn_each(sockets, &spec, |s, id, spec| {
                std::thread::spawn(move || match spec.test {
                    TestKind::UdpStream => flows::udp_recv(s, id, &spec, clock),
                    _ => flows::udp_rr_respond(s, id, &spec, clock),
                })
            }),
            Prepared::TcpClient { spec, conns } => spawn_each(conns, &spec, |s, id, spec| {
                let sample = spec.test == TestKind::TcpMaerts && std::mem::take(first_receiver);
                std::thread::spawn(move || match spec.test {
                    TestKind::TcpStream => flows::tcp_send(s, id, &spec, clock),
                    TestKind::TcpMaerts => flows::tcp_recv(s, id, &spec, clock, sample),
                    TestKind::Vdi => vdi_session::engine(s, id, &spec, clock),
                    _ => flows::tcp_rr_initiate(s, id, &spec, clock),
                })
            }),
            Prepared::CrrClient { spec, to, first_id } => (0..spec.parallel)
                .map(|k| {
                    let spec = spec.clone();
                    std::thread::spawn(move || {
                        flows::tcp_crr_initiate(to, first_id + k, &spec, clock)
                    })
                })
                .collect(),
            Prepared::UdpClient { spec, sockets } => spawn_each(sockets, &spec, |s, id, spec| {
                std::thread::spawn(move || match spec.test {
                    TestKind::UdpStream => flows::udp_send(s, id, &spec, clock),
                    _ => flows::udp_rr_initiate(s, id, &spec, clock),
                })
            }),
        })
    }

    fn spec(&self) -> &Spec {
        match self {
            Prepared::TcpServer { spec, .. }
            | Prepared::CrrServer { spec, .. }
            | Prepared::UdpServer { spec, .. }
            | Prepared::TcpClient { spec, .. }
            | Prepared::CrrClient { spec, .. }
            | Prepared::UdpClient { spec, .. } => spec,
        }
    }
}

/// This machine's CPU over the measured window [t0 + warmup, + duration], on a thread of its own:
/// what a `vnetlab serve` on the client machine reports, so the client's work is measured where
/// it runs.
fn machine_cpu(t0: Instant, warmup: f64, duration: f64) -> JoinHandle<Option<MachineCpu>> {
    std::thread::spawn(move || {
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        std::thread::sleep(at(warmup).saturating_duration_since(Instant::now()));
        let probe = crate::meter::Probe::start().ok()?;
        std::thread::sleep(at(warmup + duration).saturating_duration_since(Instant::now()));
        let (w, t) = probe.finish().ok()?;
        let pct: Vec<f64> = t.values().map(|c| c.busy_s / w * 100.0).collect();
        let busy_cores: f64 = t.values().map(|c| c.busy_s / w).sum();
        Some(MachineCpu {
            ncpu: pct.len(),
            busy_pct: busy_cores / pct.len().max(1) as f64 * 100.0,
            busy_cores,
            max_core_pct: pct.iter().copied().fold(0.0, f64::max),
            window_s: w,
        })
    })
}

/// A data connection accepted, its preamble not all read yet.
struct Arriving {
    s: TcpStream,
    got: Vec<u8>,
    deadline: Instant,
}

/// How long an accepted data connection has to send its preamble (a guest under emulation may
/// take a while); strangers that send nothing hold no one up meanwhile, all wait together.
const PREAMBLE_WAIT: Duration = Duration::from_secs(3);

/// Accepts `n` data connections, each opening with the preamble (the magic, an id this test
/// gave, each once, and the test's key); strangers are dropped, and a silent one holds up no one.
/// Waits in poll(2), up to `ACCEPT_TIMEOUT` in all.
fn accept_streams(l: TcpListener, n: u32, spec: &Spec) -> Result<Vec<(u32, TcpStream)>, Error> {
    use std::os::fd::AsRawFd;
    l.set_nonblocking(true)?;
    let start = Instant::now();
    let mut out: Vec<(u32, TcpStream)> = Vec::new();
    let mut arriving: Vec<Arriving> = Vec::new();
    while out.len() < n as usize {
        let left = ACCEPT_TIMEOUT.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Err(Error::Failed(format!(
                "only {} of {n} data connections arrived within {}s",
                out.len(),
                ACCEPT_TIMEOUT.as_secs()
            )));
        }
        loop {
            match l.accept() {
                Ok((s, _)) if arriving.len() < 256 && s.set_nonblocking(true).is_ok() => arriving
                    .push(Arriving {
                        s,
                        got: Vec::new(),
                        deadline: Instant::now() + PREAMBLE_WAIT,
                    }),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(Error::Failed(format!("accept: {e}"))),
            }
        }
        let mut still = Vec::new();
        for mut a in arriving.drain(..) {
            let mut buf = [0u8; proto::PREAMBLE];
            let want = proto::PREAMBLE - a.got.len();
            let closed = match a.s.read(&mut buf[..want]) {
                Ok(0) => true,
                Ok(k) => {
                    a.got.extend_from_slice(&buf[..k]);
                    false
                }
                Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
            };
            if a.got.len() == proto::PREAMBLE {
                let pre: [u8; proto::PREAMBLE] = a.got[..].try_into().expect("a whole preamble");
                if let Some(id) = proto::parse_preamble(&pre, spec.key) {
                    if !out.iter().any(|(x, _)| *x == id) {
                        a.s.set_nonblocking(false).ok();
                        a.s.set_nodelay(spec.nodelay).ok();
                        out.push((id, a.s));
                    }
                }
            } else if !closed && a.deadline > Instant::now() {
                still.push(a);
            }
        }
        arriving = still;
        if out.len() < n as usize {
            crate::sys::sock::poll_readable(
                l.as_raw_fd(),
                if arriving.is_empty() {
                    left.as_millis().min(1000) as i32
                } else {
                    5
                },
            );
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Request/response tests hold a request and a response per stream: the budget counts both
    /// (it counted the larger only, and one session inside 512 MiB reached 1 GB).
    #[test]
    fn a_streams_cost_counts_what_it_holds() {
        let rr = Spec {
            test: TestKind::TcpRr,
            req: 200 << 20,
            resp: 200 << 20,
            duration: 1.0,
            ..Default::default()
        };
        assert!(cost(&rr, false) >= 400 << 20);
        // The side that times transactions also holds their histogram; a stream's sides do not.
        assert!(cost(&rr, true) >= cost(&rr, false) + (256 << 10));
        let bufs = Spec {
            msg: 1 << 20,
            local_buf: Some(8 << 20),
            remote_buf: Some(8 << 20),
            parallel: 4,
            duration: 1.0,
            ..Default::default()
        };
        // The kernel doubles each socket buffer.
        assert!(cost(&bufs, true) >= 4 * ((1 << 20) + 32 * (1 << 20)));
        assert_eq!(cost(&bufs, true), cost(&bufs, false));
    }

    /// A stranger on a data port is dropped without holding anyone up: one silent, one with the
    /// magic but not the test's key, then the test's own.
    #[test]
    fn a_stranger_on_a_data_port_is_not_a_stream() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let spec = Spec {
            key: 0x5eed,
            ..Default::default()
        };
        let _silent = TcpStream::connect(addr).unwrap();
        let mut wrong = TcpStream::connect(addr).unwrap();
        wrong.write_all(&proto::preamble(7, 0xbad)).unwrap();
        let mut good = TcpStream::connect(addr).unwrap();
        good.write_all(&proto::preamble(7, 0x5eed)).unwrap();
        let t0 = Instant::now();
        let got = accept_streams(l, 1, &spec).unwrap();
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), vec![7]);
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    }
}
