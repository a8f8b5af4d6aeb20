//! `vnetlab serve`: the netserver of vnetlab. Listens for control connections on one address and
//! distrusts every connection until it shows the token. One thread, the gate, waits in epoll on
//! the listener and on every connection that has not shown its token yet: each is read as soon as
//! it is accepted (a client sends its hello with its first write), must send its whole hello line
//! (at most `MAX_HELLO` bytes) within `HELLO`, at most `MAX_PENDING` wait at once (a newcomer
//! closes first one that has sent nothing or no hello, else the oldest), and none of them holds a
//! session slot. A wrong token is answered at once while they are rare; past `BAD_PER_S` a
//! second, each is held until its `HELLO` is up before it is refused (a guesser gets a few answers
//! a second, not thousands), and they are logged at most once a second. A connection that shows
//! the token gets one of `MAX_SESSIONS` session threads, whose listens and connects reach only
//! loopback and the networks `--allow` names (`reach`). `--once` ends after one authenticated
//! session.

use super::Error;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::agent::{self, SessionEnd, SessionMode};
use super::proto::{Reply, Request};
use super::reach::Reach;

/// The control port `serve` listens on and `test -H` reaches by default.
pub const DEFAULT_PORT: u16 = 12866;
/// Idle control connections are dropped after this long.
pub const IDLE: Duration = Duration::from_secs(600);
/// A connection must send its whole hello within this long of being accepted.
pub const HELLO: Duration = Duration::from_secs(5);
/// Sessions served at once; an authenticated client beyond them is told so and closed.
pub const MAX_SESSIONS: usize = 16;
/// Connections waiting to show their token; a newcomer beyond them closes one that cannot be a
/// client (silent, or not a hello), else the oldest.
pub const MAX_PENDING: usize = 256;
/// Wrong tokens a second answered at once; beyond them each is held until its hello time is up.
pub const BAD_PER_S: usize = 5;
/// Wrong-token connections held at once (beyond them a wrong token is closed unanswered).
pub const MAX_HELD: usize = 256;
/// The longest hello line (a hello with a 256-character token is about 300 bytes).
pub const MAX_HELLO: usize = 4096;
/// The shortest token `serve` accepts (its own are 32 hex digits).
pub const MIN_TOKEN: usize = 16;

pub fn random_token() -> String {
    use rand::Rng;
    let mut r = rand::thread_rng();
    (0..16).map(|_| format!("{:02x}", r.gen::<u8>())).collect()
}

/// Checks a token given with --token.
pub fn check_token(t: &str) -> Result<(), Error> {
    if t.len() < MIN_TOKEN || t.len() > 256 || !t.chars().all(|c| c.is_ascii_graphic()) {
        return Err(Error::Input(format!("--token: give {MIN_TOKEN} to 256 printable characters (or leave it out for a random one)")));
    }
    Ok(())
}

/// What `serve` was told.
#[derive(Clone, Debug)]
pub struct Config {
    pub addr: SocketAddr,
    pub token: String,
    pub once: bool,
    pub reach: Reach,
    /// The bytes of buffers all its sessions may hold at once (`agent::Budget`).
    pub budget: u64,
}

/// A connection that has not shown its token yet.
struct Pending {
    s: TcpStream,
    got: Vec<u8>,
    deadline: Instant,
    /// Accept order: the smallest is the oldest.
    seq: u64,
}

/// What a pending connection's bytes so far amount to.
#[derive(Debug, PartialEq)]
pub enum Hello {
    /// No whole line yet.
    Incomplete,
    /// A hello with the right token; the bytes after its line.
    Good(Vec<u8>),
    /// Anything else: a wrong token, not a hello, a line too long.
    Bad,
}

/// Reads a pending connection's first line against the token.
pub fn judge(got: &[u8], token: &str) -> Hello {
    let Some(end) = got.iter().position(|&b| b == b'\n') else {
        return if got.len() > MAX_HELLO {
            Hello::Bad
        } else {
            Hello::Incomplete
        };
    };
    if end > MAX_HELLO {
        return Hello::Bad;
    }
    match serde_json::from_slice::<Request>(&got[..end]) {
        Ok(Request::Hello { token: t, .. })
            if !token.is_empty()
                && super::proto::constant_time_eq(t.as_bytes(), token.as_bytes()) =>
        {
            Hello::Good(got[end + 1..].to_vec())
        }
        _ => Hello::Bad,
    }
}

/// Serves until killed (or after one authenticated session with `once`).
pub fn serve(cfg: Config, mut on_ready: impl FnMut(SocketAddr)) -> Result<(), Error> {
    check_token(&cfg.token)?;
    let cfg_budget = cfg.budget;
    let fail = |what: &str, e: std::io::Error| Error::Failed(format!("{what}: {e}"));
    let l = TcpListener::bind(cfg.addr)
        .map_err(|e| Error::Failed(format!("cannot listen on {}: {e}", cfg.addr)))?;
    l.set_nonblocking(true).map_err(|e| fail("listener", e))?;
    let ep = crate::sys::Epoll::new().map_err(|e| fail("epoll", e))?;
    ep.add_input(l.as_raw_fd(), LISTENER)
        .map_err(|e| fail("epoll", e))?;
    on_ready(l.local_addr().map_err(|e| fail("listener", e))?);
    let mut gate = Gate {
        cfg,
        pending: BTreeMap::new(),
        held: Vec::new(),
        bad: std::collections::VecDeque::new(),
        logged: None,
        done: false,
        next: LISTENER + 1,
        live: Arc::new(AtomicUsize::new(0)),
        budget: Arc::new(agent::Budget::new(cfg_budget)),
    };
    let mut ready = Vec::new();
    loop {
        ep.wait(gate.timeout_ms(), &mut ready)
            .map_err(|e| fail("epoll", e))?;
        for &tag in &ready {
            if tag == LISTENER {
                gate.accept_all(&l, &ep);
            } else if let Some(SessionEnd::Done) = gate.read(tag) {
                return Ok(());
            }
            if gate.done {
                return Ok(());
            }
        }
        gate.expire();
    }
}

const LISTENER: u64 = 0;

struct Gate {
    cfg: Config,
    pending: BTreeMap<u64, Pending>,
    /// Wrong-token connections held until their time is up, then refused.
    held: Vec<(TcpStream, Instant)>,
    /// When the last wrong tokens came (the last second's).
    bad: std::collections::VecDeque<Instant>,
    /// When a wrong token was last logged, and how many since.
    logged: Option<(Instant, usize)>,
    /// A `--once` session ended inside `accept_all`: the serve is done.
    done: bool,
    next: u64,
    live: Arc<AtomicUsize>,
    budget: Arc<agent::Budget>,
}

impl Gate {
    /// Until the nearest hello deadline (none pending: wait for the listener).
    fn timeout_ms(&self) -> i32 {
        self.pending
            .values()
            .map(|p| p.deadline)
            .chain(self.held.iter().map(|h| h.1))
            .map(|d| d.saturating_duration_since(Instant::now()))
            .min()
            .map(|d| d.as_millis().min(60_000) as i32 + 1)
            .unwrap_or(-1)
    }

    /// Accepts everything the listener holds; each waits for its hello under a tag of its own.
    fn accept_all(&mut self, l: &TcpListener, ep: &crate::sys::Epoll) {
        while let Ok((s, _)) = l.accept() {
            if s.set_nonblocking(true).is_err() {
                continue;
            }
            if self.pending.len() >= MAX_PENDING {
                self.evict();
            }
            let tag = self.next;
            self.next += 1;
            if ep.add_input(s.as_raw_fd(), tag).is_ok() {
                self.pending.insert(
                    tag,
                    Pending {
                        s,
                        got: Vec::new(),
                        deadline: Instant::now() + HELLO,
                        seq: tag,
                    },
                );
                // A client's hello is usually there already: judge it now, before a flood of
                // newcomers could push it out.
                if let Some(SessionEnd::Done) = self.read(tag) {
                    self.done = true;
                }
            }
        }
    }

    /// Makes room for a newcomer: the oldest of those that cannot be a client (sent nothing
    /// yet, or bytes that do not begin a hello) goes first, else the oldest of all.
    fn evict(&mut self) {
        let hopeless = |p: &Pending| p.got.is_empty() || !p.got.starts_with(b"{");
        let victim = self
            .pending
            .iter()
            .filter(|(_, p)| hopeless(p))
            .min_by_key(|(_, p)| p.seq)
            .or_else(|| self.pending.iter().min_by_key(|(_, p)| p.seq))
            .map(|(t, _)| *t);
        if let Some(t) = victim {
            self.pending.remove(&t);
        }
    }

    /// A wrong token: answered at once while they are rare, else held until its hello time is
    /// up; logged at most once a second with how many came.
    fn wrong_token(&mut self, s: TcpStream, deadline: Instant) {
        let now = Instant::now();
        while self
            .bad
            .front()
            .is_some_and(|t| now.duration_since(*t) > Duration::from_secs(1))
        {
            self.bad.pop_front();
        }
        self.bad.push_back(now);
        let peer = s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
        match self.logged {
            Some((at, n)) if now.duration_since(at) < Duration::from_secs(1) => {
                self.logged = Some((at, n + 1))
            }
            Some((_, n)) => {
                crate::errln!(
                    "vnetlab serve: wrong token from {peer} ({} more since the last report)",
                    n
                );
                self.logged = Some((now, 0));
            }
            None => {
                crate::errln!("vnetlab serve: wrong token from {peer}");
                self.logged = Some((now, 0));
            }
        }
        if self.bad.len() <= BAD_PER_S {
            refuse(s, WRONG_TOKEN);
        } else if self.held.len() < MAX_HELD {
            self.held.push((s, deadline));
        }
    }

    /// Reads what a pending connection sent; a whole hello starts its session (or refuses it).
    fn read(&mut self, tag: u64) -> Option<SessionEnd> {
        let p = self.pending.get_mut(&tag)?;
        let mut buf = [0u8; 1024];
        let closed = loop {
            match p.s.read(&mut buf) {
                Ok(0) => break true,
                Ok(n) => {
                    p.got.extend_from_slice(&buf[..n]);
                    if p.got.len() > MAX_HELLO + 1024 {
                        break false;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break false,
                Err(_) => break true,
            }
        };
        match judge(&p.got, &self.cfg.token) {
            Hello::Incomplete if !closed => None,
            Hello::Incomplete => {
                self.pending.remove(&tag);
                None
            }
            Hello::Bad => {
                let p = self.pending.remove(&tag)?;
                self.wrong_token(p.s, p.deadline);
                None
            }
            Hello::Good(rest) => {
                let p = self.pending.remove(&tag)?;
                self.start(p.s, rest)
            }
        }
    }

    /// Closes the connections whose hello did not arrive in time, and refuses the wrong tokens
    /// held until now.
    fn expire(&mut self) {
        let now = Instant::now();
        self.pending.retain(|_, p| p.deadline > now);
        let (due, keep): (Vec<_>, Vec<_>) = self.held.drain(..).partition(|h| h.1 <= now);
        self.held = keep;
        for (s, _) in due {
            refuse(s, WRONG_TOKEN);
        }
    }

    /// An authenticated connection: a session thread of its own (inline with --once), or, with
    /// every slot taken, a reply saying so.
    fn start(&mut self, s: TcpStream, rest: Vec<u8>) -> Option<SessionEnd> {
        if self.live.load(Ordering::SeqCst) >= MAX_SESSIONS {
            refuse(
                s,
                &format!("busy: {MAX_SESSIONS} sessions are running; try again when one ends"),
            );
            return None;
        }
        let reach = self.cfg.reach.clone();
        let budget = Arc::clone(&self.budget);
        if self.cfg.once {
            return session(s, rest, reach, budget).ok();
        }
        self.live.fetch_add(1, Ordering::SeqCst);
        let live = Arc::clone(&self.live);
        let spawned = std::thread::Builder::new()
            .name("session".into())
            .spawn(move || {
                let _ = session(s, rest, reach, budget);
                live.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            self.live.fetch_sub(1, Ordering::SeqCst);
        }
        None
    }
}

const WRONG_TOKEN: &str = "wrong token: pass the token `vnetlab serve` printed with --token";

/// Tells a connection why it is refused (best effort, never blocking) and closes it.
fn refuse(mut s: TcpStream, why: &str) {
    let _ = agent::send(&mut s, &Reply::error(why));
}

/// An authenticated client's session: it is told its hello was good, then served.
fn session(
    s: TcpStream,
    rest: Vec<u8>,
    reach: Reach,
    budget: Arc<agent::Budget>,
) -> Result<SessionEnd, Error> {
    s.set_nonblocking(false).ok();
    s.set_nodelay(true).ok();
    s.set_read_timeout(Some(IDLE)).ok();
    s.set_write_timeout(Some(IDLE)).ok();
    let mut w = s.try_clone()?;
    agent::send(&mut w, &Reply::Ok)?;
    let input: Box<dyn BufRead> = Box::new(BufReader::new(std::io::Cursor::new(rest).chain(s)));
    let r = agent::session(input, w, SessionMode::Served(reach, budget));
    if let Err(e) = &r {
        crate::errln!("vnetlab serve: {e}");
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked() {
        assert!(check_token("").is_err());
        assert!(check_token("short").is_err());
        assert!(check_token("a token with spaces").is_err());
        check_token(&random_token()).unwrap();
    }

    #[test]
    fn a_hello_is_judged_whole_and_bounded() {
        let tok = "sekret-token";
        let hello = |t: &str| format!("{{\"op\":\"hello\",\"token\":\"{t}\"}}\n");
        assert_eq!(judge(b"{\"op\":\"hel", tok), Hello::Incomplete);
        assert_eq!(judge(hello(tok).as_bytes(), tok), Hello::Good(vec![]));
        let more = hello(tok) + "{\"op\":\"run\"}\n";
        assert_eq!(
            judge(more.as_bytes(), tok),
            Hello::Good(b"{\"op\":\"run\"}\n".to_vec())
        );
        assert_eq!(judge(hello("other-token").as_bytes(), tok), Hello::Bad);
        assert_eq!(judge(b"{\"op\":\"run\"}\n", tok), Hello::Bad);
        assert_eq!(judge(b"\n", tok), Hello::Bad);
        // A line that never ends is refused once it outgrows a hello.
        assert_eq!(judge(&vec![b'x'; MAX_HELLO + 1], tok), Hello::Bad);
        assert_eq!(judge(&vec![b' '; MAX_HELLO], tok), Hello::Incomplete);
        // An empty configured token never matches.
        assert_eq!(judge(hello("").as_bytes(), ""), Hello::Bad);
    }
}
