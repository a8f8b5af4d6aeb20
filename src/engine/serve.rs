//! `vnetlab serve`: the netserver of vnetlab. Listens for control connections on one address and
//! runs an agent session per connection, distrusting every connection until it shows the token:
//! a bounded number of sessions at once, a deadline for the hello, capped line lengths (in the
//! session), and `--once` ends only after an authenticated session.

use super::Error;
use std::io::BufReader;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::agent::SessionEnd;

/// Idle control connections are dropped after this long.
pub const IDLE: Duration = Duration::from_secs(600);
/// A connection must show its token within this long.
pub const HELLO: Duration = Duration::from_secs(5);
/// Sessions served at once; further connections are closed at once.
pub const MAX_SESSIONS: usize = 16;
/// The shortest token `serve` accepts.
pub const MIN_TOKEN: usize = 8;

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

/// Serves until killed (or after one authenticated session with `once`).
pub fn serve(
    addr: SocketAddr,
    token: &str,
    once: bool,
    mut on_ready: impl FnMut(SocketAddr),
) -> Result<(), Error> {
    check_token(token)?;
    let l = TcpListener::bind(addr)
        .map_err(|e| Error::Failed(format!("cannot listen on {addr}: {e}")))?;
    on_ready(l.local_addr().map_err(|e| Error::Failed(e.to_string()))?);
    let live = Arc::new(AtomicUsize::new(0));
    for conn in l.incoming() {
        let Ok(s) = conn else { continue };
        if live.load(Ordering::SeqCst) >= MAX_SESSIONS {
            drop(s); // over the cap: closed before anything is read
            continue;
        }
        if once {
            if let Ok(SessionEnd::Done) = serve_one(s, token) {
                return Ok(());
            }
            continue;
        }
        live.fetch_add(1, Ordering::SeqCst);
        let (mine, token) = (Arc::clone(&live), token.to_string());
        let spawned = std::thread::Builder::new()
            .name("session".into())
            .spawn(move || {
                let _ = serve_one(s, &token);
                mine.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            // No thread for it: the connection was dropped with the closure.
            live.fetch_sub(1, Ordering::SeqCst);
        }
    }
    Ok(())
}

/// One connection: the hello within `HELLO`, then requests until it ends or idles for `IDLE`.
fn serve_one(s: TcpStream, token: &str) -> Result<SessionEnd, Error> {
    s.set_nodelay(true).ok();
    s.set_read_timeout(Some(HELLO)).ok();
    s.set_write_timeout(Some(HELLO)).ok();
    let w = s.try_clone().map_err(|e| Error::Failed(e.to_string()))?;
    let reader = Authenticated { s, idle_set: false };
    let r = super::agent::session(BufReader::new(reader), w, Some(token));
    if let Err(e) = &r {
        crate::errln!("vnetlab serve: {e}");
    }
    r
}

/// The session's input: after the first line (the hello), the read deadline becomes `IDLE`.
struct Authenticated {
    s: TcpStream,
    idle_set: bool,
}

impl std::io::Read for Authenticated {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.s.read(buf)?;
        if !self.idle_set && buf[..n].contains(&b'\n') {
            self.s.set_read_timeout(Some(IDLE)).ok();
            self.s.set_write_timeout(Some(IDLE)).ok();
            self.idle_set = true;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_checked() {
        assert!(super::check_token("").is_err());
        assert!(super::check_token("short").is_err());
        assert!(super::check_token("a token with spaces").is_err());
        super::check_token(&super::random_token()).unwrap();
    }
}
