//! The data loops: bulk senders and receivers (TCP and UDP) and request/response initiators and
//! responders. Each runs on its own thread against a shared clock and returns a `Piece`.

use hdrhistogram::Histogram;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::intervals::{bucket_of, window};
use super::pacer::Pacer;
use super::proto::StreamReport;
use super::spec::Spec;
use super::tcpinfo;
use crate::records::test::TcpSample;
use crate::vocab::Pacing;

/// Senders go on this long past the window so receivers see traffic up to its very end: it
/// covers the skew between the agents' starts (each starts its clock when its `run` arrives,
/// a few milliseconds apart, more where an agent is a guest under TCG) and a shaped wire's
/// queue (50 ms at most). Every test waits it out, so it is no longer than that needs.
pub const GRACE_S: f64 = 0.1;
/// Servers give up on a peer this long after the window.
pub const HARD_S: f64 = 5.0;
/// Servers of connectionless tests stop once idle this long after the window.
const IDLE_S: f64 = 0.3;
const TICK: Duration = Duration::from_millis(100);

#[derive(Clone, Copy)]
pub struct Clock {
    pub t0: Instant,
    pub warmup: f64,
    pub duration: f64,
}

impl Clock {
    pub fn now(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }
    pub fn window_end(&self) -> f64 {
        self.warmup + self.duration
    }
    pub fn send_end(&self) -> f64 {
        self.window_end() + GRACE_S
    }
    pub fn hard_end(&self) -> f64 {
        self.send_end() + HARD_S
    }
}

/// What one loop hands back.
#[derive(Default)]
pub struct Piece {
    pub report: StreamReport,
    pub buckets: Vec<u64>,
    pub hist: Option<Histogram<u64>>,
    pub samples: Vec<TcpSample>,
    pub error: Option<String>,
}

impl Piece {
    /// An empty piece for stream `id` on its sending (or initiating) side.
    fn sending(id: u32) -> Piece {
        Piece {
            report: StreamReport {
                id,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// An empty piece for request/response stream `id` on its initiating side, with a latency
    /// histogram.
    fn initiating(id: u32) -> Piece {
        Piece {
            hist: Some(hist()),
            ..Piece::sending(id)
        }
    }

    /// An empty piece for stream `id` on its receiving (or responding) side.
    fn receiving(id: u32) -> Piece {
        Piece {
            report: StreamReport {
                id,
                receiver: true,
                ..Default::default()
            },
            ..Default::default()
        }
    }
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).unwrap()
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

// ---------------- bulk streams ----------------

/// The bytes --verify sends: 1 MiB of xorshift output, repeated; byte n of the stream is
/// pattern[n % len].
pub fn pattern() -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// A paced stream's pacer: the application's ticks, or none where the kernel paces (its
/// SO_MAX_PACING_RATE is set on `fd` here).
fn stream_pacer(fd: i32, spec: &Spec) -> std::io::Result<Option<Pacer>> {
    match (spec.rate, spec.pacing) {
        (None, _) => Ok(None),
        (Some(r), Pacing::App) => Ok(Some(Pacer::ticks(r, super::pacer::DEFAULT_TICK))),
        (Some(r), Pacing::Kernel) => crate::sys::sock::set_max_pacing_rate(fd, r / 8).map(|_| None),
    }
}

pub fn tcp_send(mut s: TcpStream, id: u32, spec: &Spec, clock: Clock) -> Piece {
    use sha2::Digest;
    let mut p = Piece::sending(id);
    let pat = (spec.verify || spec.bytes.is_some()).then(pattern);
    let mut hasher = spec.verify.then(sha2::Sha256::new);
    let buf = vec![0x5au8; spec.msg];
    s.set_write_timeout(Some(TICK)).ok();
    let fd = s.as_raw_fd();
    let mut pacer = match stream_pacer(fd, spec) {
        Ok(pc) => pc,
        Err(e) => {
            p.error = Some(format!("stream {id}: {e}"));
            return p;
        }
    };
    let mut zc = spec.zerocopy.then(ZeroCopy::default);
    let mut sent = 0u64;
    loop {
        let now = clock.now();
        if now >= clock.send_end() || spec.bytes.is_some_and(|b| sent >= b) {
            break;
        }
        if let Some(pc) = &mut pacer {
            let w = pc.wait(sent, clock.t0.elapsed());
            if !w.is_zero() {
                std::thread::sleep(w.min(Duration::from_secs_f64(clock.send_end() - now)));
                continue;
            }
        }
        let chunk: &[u8] = match &pat {
            Some(pt) => {
                let off = (sent % pt.len() as u64) as usize;
                let mut n = spec.msg.min(pt.len() - off);
                if let Some(b) = spec.bytes {
                    n = n.min((b - sent) as usize);
                }
                &pt[off..off + n]
            }
            None => &buf,
        };
        let r = match &mut zc {
            Some(z) => z.send(fd, chunk),
            None => s.write(chunk),
        };
        match r {
            Ok(n) => {
                if let Some(h) = &mut hasher {
                    h.update(&chunk[..n]);
                }
                sent += n as u64
            }
            Err(e) if timed_out(&e) => continue,
            Err(e) => {
                p.error = Some(format!("stream {id}: the receiver went away ({e})"));
                break;
            }
        }
    }
    if let Some(z) = &mut zc {
        z.drain(fd, true);
        p.report.zc_completed = z.completed;
        p.report.zc_copied = z.copied;
    }
    let _ = s.shutdown(std::net::Shutdown::Write);
    p.report.total_bytes = sent;
    p.report.sha256 = hasher.map(|h| hex(&h.finalize()));
    if spec.bytes.is_some_and(|b| sent < b) && p.error.is_none() {
        p.error = Some(format!(
            "stream {id}: only {sent} of {} bytes were sent within {:.0} s",
            spec.bytes.unwrap(),
            clock.send_end()
        ));
    }
    p.report.retrans = tcpinfo::read(fd)
        .map(|i| i.total_retrans as u64)
        .unwrap_or(0);
    // Wait for the receiver to finish reading (its EOF) so the retransmit count is final.
    s.set_read_timeout(Some(Duration::from_secs(2))).ok();
    let mut sink = [0u8; 64];
    let _ = s.read(&mut sink);
    p
}

/// MSG_ZEROCOPY sending: completions are read from the error queue so the socket's
/// option memory never runs out; `copied` counts sends the kernel copied anyway (loopback, veth).
#[derive(Default)]
struct ZeroCopy {
    pending: u32,
    copied: u64,
    completed: u64,
}

impl ZeroCopy {
    fn send(&mut self, fd: i32, buf: &[u8]) -> std::io::Result<usize> {
        loop {
            match crate::sys::sock::send_zerocopy(fd, buf) {
                Ok(n) => {
                    self.pending += 1;
                    if self.pending >= 64 {
                        self.drain(fd, false);
                    }
                    return Ok(n);
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    self.drain(fd, false);
                    std::thread::sleep(Duration::from_micros(50));
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn drain(&mut self, fd: i32, wait: bool) {
        let deadline = Instant::now() + Duration::from_millis(if wait { 500 } else { 0 });
        loop {
            let Some(done) = crate::sys::sock::zerocopy_completions(fd) else {
                if wait && self.pending > 0 && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
                return;
            };
            for c in done {
                self.completed += c.sends;
                self.pending = self.pending.saturating_sub(c.sends as u32);
                if c.copied {
                    self.copied += c.sends;
                }
            }
        }
    }
}

pub fn tcp_recv(mut s: TcpStream, id: u32, spec: &Spec, clock: Clock, sample: bool) -> Piece {
    use sha2::Digest;
    let mut p = Piece::receiving(id);
    let mut hasher = spec.verify.then(sha2::Sha256::new);
    let (mut first_at, mut last_at): (Option<f64>, f64) = (None, 0.0);
    let (first, last) = window(spec.warmup, spec.duration);
    p.buckets = vec![0; last - first];
    s.set_read_timeout(Some(TICK)).ok();
    let fd = s.as_raw_fd();
    let mut buf = vec![0u8; 256 * 1024];
    let mut next_sample = 0.0;
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let now = clock.now();
                first_at.get_or_insert(now);
                last_at = now;
                if let Some(h) = &mut hasher {
                    h.update(&buf[..n]);
                }
                p.report.total_bytes += n as u64;
                let b = bucket_of(now);
                if (first..last).contains(&b) {
                    p.buckets[b - first] += n as u64;
                    p.report.window_bytes += n as u64;
                }
                if sample && now >= next_sample && now < clock.window_end() {
                    if let Some(i) = tcpinfo::read(fd) {
                        p.samples.push(TcpSample {
                            t: now - clock.warmup,
                            cwnd: i.cwnd,
                            rcv_wnd: i.rcv_wnd,
                            rtt_us: i.rtt_us,
                        });
                    }
                    next_sample = now + 0.01;
                }
            }
            Err(e) if timed_out(&e) => {
                if clock.now() > clock.hard_end() {
                    p.error = Some(format!("stream {id}: the sender did not finish"));
                    break;
                }
            }
            Err(e) => {
                p.error = Some(format!("stream {id}: the sender went away ({e})"));
                break;
            }
        }
    }
    p.report.sha256 = hasher.map(|h| hex(&h.finalize()));
    p.report.active_s = first_at.map(|f| last_at - f).unwrap_or(0.0);
    p
}

pub fn udp_send(s: UdpSocket, id: u32, spec: &Spec, clock: Clock) -> Piece {
    let mut p = Piece::sending(id);
    let mut buf = vec![0x5au8; spec.msg];
    let mut pacer = match stream_pacer(s.as_raw_fd(), spec) {
        Ok(pc) => pc,
        Err(e) => {
            p.error = Some(format!("stream {id}: {e}"));
            return p;
        }
    };
    s.set_write_timeout(Some(TICK)).ok();
    let (mut seq, mut sent) = (0u64, 0u64);
    while clock.now() < clock.send_end() {
        if let Some(pc) = &mut pacer {
            let w = pc.wait(sent, clock.t0.elapsed());
            if !w.is_zero() {
                std::thread::sleep(w);
                continue;
            }
        }
        buf[..8].copy_from_slice(&seq.to_be_bytes());
        if buf.len() >= 16 {
            buf[8..16].copy_from_slice(&spec.key.to_be_bytes());
        }
        match s.send(&buf) {
            Ok(n) => {
                sent += n as u64;
                seq += 1;
            }
            // A full queue or no listener yet (ICMP): the datagram is lost, as on a wire.
            Err(e) if timed_out(&e) || e.kind() == ErrorKind::ConnectionRefused => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
            Err(e) => {
                p.error = Some(format!("stream {id}: {e}"));
                break;
            }
        }
    }
    p.report.total_bytes = sent;
    p.report.datagrams = seq;
    p
}

pub fn udp_recv(s: UdpSocket, id: u32, spec: &Spec, clock: Clock) -> Piece {
    let mut p = Piece::receiving(id);
    let (first, last) = window(spec.warmup, spec.duration);
    p.buckets = vec![0; last - first];
    s.set_read_timeout(Some(Duration::from_millis(20))).ok();
    let mut buf = vec![0u8; 65536];
    let mut last_rx = 0.0;
    let key = spec.key.to_be_bytes();
    let mut bound = false;
    loop {
        match s.recv_from(&mut buf) {
            // A datagram that carries the test's key (every one of 16 bytes or more does) binds
            // the socket to its sender: the kernel drops anyone else's from then on. Until then
            // a keyless one (a stranger's) is not counted.
            Ok((n, _)) if !bound && n >= 16 && buf[8..16] != key => {}
            Ok((n, from)) => {
                if !bound && (n < 16 || buf[8..16] == key) {
                    bound = s.connect(from).is_ok();
                }
                let now = clock.now();
                last_rx = now;
                p.report.total_bytes += n as u64;
                p.report.datagrams += 1;
                let b = bucket_of(now);
                if (first..last).contains(&b) {
                    p.buckets[b - first] += n as u64;
                    p.report.window_bytes += n as u64;
                }
            }
            Err(e) if timed_out(&e) || e.kind() == ErrorKind::ConnectionRefused => {}
            Err(e) => {
                p.error = Some(format!("stream {id}: {e}"));
                break;
            }
        }
        let now = clock.now();
        if (now > clock.send_end() && now - last_rx > IDLE_S) || now > clock.hard_end() {
            break;
        }
    }
    p
}

// ---------------- request/response ----------------

/// Reads exactly `buf.len()` bytes, riding out read timeouts until `give_up` (seconds on the
/// clock). Ok(false) means the peer closed before the first byte.
fn read_full(
    s: &mut TcpStream,
    buf: &mut [u8],
    clock: &Clock,
    give_up: f64,
) -> std::io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if timed_out(&e) => {
                if clock.now() > give_up {
                    return Err(ErrorKind::TimedOut.into());
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Paced request/response (`--rate`/`--tps`): waits until transaction `done` is due, the rate
/// counting each transaction's request and response bytes. False once the window has ended.
fn rr_pace(pacer: &mut Option<Pacer>, done: u64, spec: &Spec, clock: &Clock) -> bool {
    if let Some(pc) = pacer.as_mut() {
        let bytes = done * (spec.req + spec.resp) as u64;
        let w = pc.wait(bytes, clock.t0.elapsed());
        if !w.is_zero() {
            std::thread::sleep(w.min(Duration::from_secs_f64(
                (clock.window_end() - clock.now()).max(0.0),
            )));
        }
    }
    clock.now() < clock.window_end()
}

fn rr_pacer(spec: &Spec) -> Option<Pacer> {
    spec.rate.map(Pacer::spaced)
}

pub fn tcp_rr_initiate(mut s: TcpStream, id: u32, spec: &Spec, clock: Clock) -> Piece {
    let mut p = Piece::initiating(id);
    let req = vec![0x5au8; spec.req];
    let mut resp = vec![0u8; spec.resp];
    s.set_read_timeout(Some(TICK)).ok();
    let mut pacer = rr_pacer(spec);
    let mut done = 0u64;
    while rr_pace(&mut pacer, done, spec, &clock) {
        done += 1;
        let t = Instant::now();
        let started = clock.now();
        let r = s
            .write_all(&req)
            .and_then(|_| read_full(&mut s, &mut resp, &clock, clock.hard_end()).map(|_| ()));
        if let Err(e) = r {
            p.error = Some(format!("connection {id}: the server went away ({e})"));
            break;
        }
        if started >= clock.warmup {
            p.report.transactions += 1;
            let _ = p
                .hist
                .as_mut()
                .unwrap()
                .record(t.elapsed().as_nanos().max(1) as u64);
        }
    }
    let _ = s.shutdown(std::net::Shutdown::Write);
    p
}

pub fn tcp_rr_respond(mut s: TcpStream, id: u32, spec: &Spec, clock: Clock) -> Piece {
    let mut p = Piece::sending(id);
    let mut req = vec![0u8; spec.req];
    let resp = vec![0xa5u8; spec.resp];
    s.set_read_timeout(Some(TICK)).ok();
    loop {
        match read_full(&mut s, &mut req, &clock, clock.hard_end()) {
            Ok(true) => {
                if let Err(e) = s.write_all(&resp) {
                    p.error = Some(format!("connection {id}: {e}"));
                    break;
                }
            }
            Ok(false) => break,
            Err(e) => {
                p.error = Some(format!("connection {id}: the initiator went away ({e})"));
                break;
            }
        }
    }
    p
}

pub fn tcp_crr_initiate(to: SocketAddr, id: u32, spec: &Spec, clock: Clock) -> Piece {
    let mut p = Piece::initiating(id);
    let req = vec![0x5au8; spec.req];
    let mut resp = vec![0u8; spec.resp];
    while clock.now() < clock.window_end() {
        let t = Instant::now();
        let started = clock.now();
        let r =
            super::sockets::tcp_connect(to, spec.local_buf, &spec.congestion, spec.nodelay, false)
                .and_then(|mut s| {
                    s.set_read_timeout(Some(TICK)).ok();
                    // The test's key first: the responder answers no one else.
                    s.write_all(&spec.key.to_be_bytes())
                        .and_then(|_| s.write_all(&req))?;
                    read_full(&mut s, &mut resp, &clock, clock.hard_end())?;
                    Ok(())
                });
        if let Err(e) = r {
            p.error = Some(format!("connection {id}: {e}"));
            break;
        }
        if started >= clock.warmup {
            p.report.transactions += 1;
            let _ = p
                .hist
                .as_mut()
                .unwrap()
                .record(t.elapsed().as_nanos().max(1) as u64);
        }
    }
    p
}

/// One of several threads answering TCP_CRR connections on a shared listener.
pub fn tcp_crr_respond(l: &TcpListener, id: u32, spec: &Spec, clock: Clock) -> Piece {
    let p = Piece {
        report: StreamReport {
            id,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut req = vec![0u8; spec.req];
    let resp = vec![0xa5u8; spec.resp];
    let mut last = 0.0;
    loop {
        let ready = crate::sys::sock::poll_readable(l.as_raw_fd(), 20);
        let now = clock.now();
        if ready {
            if let Ok((mut s, _)) = l.accept() {
                s.set_nonblocking(false).ok();
                s.set_nodelay(spec.nodelay).ok();
                s.set_read_timeout(Some(TICK)).ok();
                let mut key = [0u8; 8];
                let keyed = matches!(
                    read_full(&mut s, &mut key, &clock, clock.now() + 3.0),
                    Ok(true)
                ) && super::proto::constant_time_eq(&key, &spec.key.to_be_bytes());
                if keyed {
                    if let Ok(true) = read_full(&mut s, &mut req, &clock, clock.hard_end()) {
                        let _ = s.write_all(&resp);
                    }
                }
                last = clock.now();
            }
        }
        if (now > clock.window_end() && now - last > IDLE_S) || now > clock.hard_end() {
            break;
        }
    }
    p
}

pub fn udp_rr_initiate(s: UdpSocket, id: u32, spec: &Spec, clock: Clock) -> Piece {
    let mut p = Piece::initiating(id);
    let req = vec![0x5au8; spec.req];
    let mut resp = vec![0u8; spec.resp.max(1)];
    s.set_read_timeout(Some(Duration::from_millis(50))).ok();
    let mut pacer = rr_pacer(spec);
    let mut done = 0u64;
    while rr_pace(&mut pacer, done, spec, &clock) {
        done += 1;
        let t = Instant::now();
        let started = clock.now();
        if s.send(&req).is_err() {
            p.report.lost += 1;
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        match s.recv(&mut resp) {
            Ok(_) => {
                if started >= clock.warmup {
                    p.report.transactions += 1;
                    let _ = p
                        .hist
                        .as_mut()
                        .unwrap()
                        .record(t.elapsed().as_nanos().max(1) as u64);
                }
            }
            Err(_) => p.report.lost += 1,
        }
    }
    p
}

pub fn udp_rr_respond(s: UdpSocket, id: u32, spec: &Spec, clock: Clock) -> Piece {
    let p = Piece {
        report: StreamReport {
            id,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut req = vec![0u8; 65536];
    let resp = vec![0xa5u8; spec.resp];
    s.set_read_timeout(Some(Duration::from_millis(20))).ok();
    let mut last = 0.0;
    let mut bound = false;
    loop {
        if let Ok((_, from)) = s.recv_from(&mut req) {
            // Bound to the first asker: the kernel drops anyone else's requests from then on.
            if !bound {
                bound = s.connect(from).is_ok();
            }
            let _ = s.send_to(&resp, from);
            last = clock.now();
        }
        let now = clock.now();
        if (now > clock.window_end() && now - last > IDLE_S) || now > clock.hard_end() {
            break;
        }
    }
    p
}
