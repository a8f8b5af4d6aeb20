//! Reachability checks between lab endpoints: a TCP connect and echo from one namespace to
//! another, done in-process by two threads that each enter one endpoint's namespace.

use crate::lab::Error;
use serde::Serialize;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::state::{Endpoint, LabRecord};
use crate::vocab::Role;

pub const TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Serialize, Debug)]
pub struct ProbeResult {
    pub from: String,
    pub to: String,
    /// Where the connection went (behind NAT: the host's forwarded port).
    pub target: String,
    pub ok: bool,
    pub ms: f64,
    pub error: Option<String>,
}

/// Moves this thread into the namespace open as `ns` (checked by identity when opened).
fn enter(ns: &std::os::fd::OwnedFd) -> Result<(), Error> {
    crate::sys::ident::enter_netns_fd(ns)
        .map_err(|e| Error::Failed(format!("cannot enter a lab namespace: {e}")))
}

/// A probe that could not start: an endpoint's namespace is not the one its lab made.
fn refused(from: &Endpoint, to: &Endpoint, e: Error) -> ProbeResult {
    ProbeResult {
        from: from.role.to_string(),
        to: to.role.to_string(),
        target: to.address.to_string(),
        ok: false,
        ms: 0.0,
        error: Some(e.to_string()),
    }
}

/// Connects from `from` to a client on another machine: a TCP handshake with its `vnetlab serve`
/// (or its iperf3 server, without a token) is the proof it is reachable; nothing is sent.
fn to_remote(from: &Endpoint, to: &Endpoint, r: &super::topology::RemoteClient) -> ProbeResult {
    let port = if r.has_token { r.port } else { 5201 };
    let target = SocketAddr::from((r.address, port));
    let from_ns = match super::exec::netns_fd(from) {
        Ok(f) => f,
        Err(e) => return refused(from, to, e),
    };
    let t = std::thread::spawn(move || -> Result<f64, Error> {
        enter(&from_ns)?;
        let t0 = Instant::now();
        TcpStream::connect_timeout(&target, TIMEOUT)
            .map_err(|e| Error::Failed(format!("connect to {target}: {e}")))?;
        Ok(t0.elapsed().as_secs_f64() * 1e3)
    })
    .join()
    .unwrap_or_else(|_| Err(Error::Failed("probe thread panicked".into())));
    ProbeResult {
        from: from.role.to_string(),
        to: to.role.to_string(),
        target: target.to_string(),
        ok: t.is_ok(),
        ms: *t.as_ref().unwrap_or(&0.0),
        error: t.err().map(|e| e.to_string()),
    }
}

// Long on purpose: each way the probe can fail is reported in place, in the order it happens.
/// Connects from `from` to `to` over TCP and checks an echo.
pub fn tcp(lab: &LabRecord, from: &Endpoint, to: &Endpoint) -> ProbeResult {
    if let Some(r) = &to.remote {
        return to_remote(from, to, r);
    }
    if from.remote.is_some() {
        return ProbeResult {
            from: from.role.to_string(),
            to: to.role.to_string(),
            target: to.address.to_string(),
            ok: false,
            ms: 0.0,
            error: Some(format!(
                "{} is another machine: `vnetlab test --from {} --to {}` checks this way",
                from.role, from.role, to.role
            )),
        };
    }
    let via_nat = from.role == Role::Client && to.reach_from_client.is_some();
    let (listen_ns, from_ns) = match (super::exec::netns_fd(to), super::exec::netns_fd(from)) {
        (Ok(t), Ok(f)) => (t, f),
        (Err(e), _) | (_, Err(e)) => return refused(from, to, e),
    };
    let to_addr = to.address;
    let port_range = to
        .reach_from_client
        .as_ref()
        .filter(|_| via_nat)
        .map(|r| r.ports);
    let (tx, rx) = mpsc::channel::<Option<u16>>();
    let server = std::thread::spawn(move || -> Result<(), Error> {
        let bind = || -> Result<TcpListener, Error> {
            enter(&listen_ns)?;
            let ports: Vec<u16> = match port_range {
                Some([lo, hi]) => (lo..=hi).collect(),
                None => vec![0],
            };
            ports
                .iter()
                .find_map(|&p| TcpListener::bind(SocketAddr::from((to_addr, p))).ok())
                .ok_or_else(|| Error::Failed(format!("cannot listen on {to_addr}")))
        };
        let l = bind().inspect_err(|_| {
            let _ = tx.send(None);
        })?;
        let _ = tx.send(Some(l.local_addr().unwrap().port()));
        l.set_nonblocking(true).unwrap();
        let start = Instant::now();
        let (mut s, _) = loop {
            match l.accept() {
                Ok(c) => break c,
                Err(_) if start.elapsed() < TIMEOUT => std::thread::sleep(Duration::from_millis(1)),
                Err(_) => return Err(Error::Failed("nothing arrived".into())),
            }
        };
        s.set_nonblocking(false).unwrap();
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut buf = [0u8; 8];
        let echo = |e| Error::Failed(format!("echo: {e}"));
        s.read_exact(&mut buf).map_err(echo)?;
        s.write_all(&buf).map_err(echo)
    });
    let target_addr = if via_nat {
        to.reach_from_client.as_ref().unwrap().address
    } else {
        to.address
    };
    let mut result = ProbeResult {
        from: from.role.to_string(),
        to: to.role.to_string(),
        target: String::new(),
        ok: false,
        ms: 0.0,
        error: None,
    };
    let port = rx.recv_timeout(TIMEOUT).ok().flatten();
    let client = port
        .ok_or_else(|| Error::Failed("the listener did not start".into()))
        .and_then(|port| {
            let target = SocketAddr::from((target_addr, port));
            result.target = target.to_string();
            std::thread::spawn(move || -> Result<f64, Error> {
                enter(&from_ns)?;
                let t0 = Instant::now();
                let mut s = TcpStream::connect_timeout(&target, TIMEOUT)
                    .map_err(|e| Error::Failed(format!("connect to {target}: {e}")))?;
                s.set_read_timeout(Some(TIMEOUT)).unwrap();
                s.write_all(b"vnetlab!")
                    .map_err(|e| Error::Failed(format!("send to {target}: {e}")))?;
                let mut buf = [0u8; 8];
                s.read_exact(&mut buf)
                    .map_err(|e| Error::Failed(format!("no echo from {target}: {e}")))?;
                if &buf != b"vnetlab!" {
                    return Err(Error::Failed("the echo came back changed".into()));
                }
                Ok(t0.elapsed().as_secs_f64() * 1e3)
            })
            .join()
            .unwrap_or_else(|_| Err(Error::Failed("probe thread panicked".into())))
        });
    let served = server
        .join()
        .unwrap_or_else(|_| Err(Error::Failed("listener thread panicked".into())));
    match (client, served) {
        (Ok(ms), Ok(())) => {
            result.ok = true;
            result.ms = ms;
        }
        // A listener that never started explains the client's failure best.
        (_, Err(e)) if port.is_none() => result.error = Some(e.to_string()),
        (Err(e), _) | (Ok(_), Err(e)) => result.error = Some(e.to_string()),
    }
    let _ = lab;
    result
}

/// The pairs a mode should connect: every guest ↔ client, and g1 ↔ g2 where there are two.
pub fn default_pairs(lab: &LabRecord) -> Vec<(Role, Role)> {
    let guests: Vec<Role> = lab.guests().map(|g| g.role).collect();
    let remote = lab.endpoint(Role::Client).is_ok_and(|c| c.remote.is_some());
    let mut v = Vec::new();
    for &g in &guests {
        v.push((g, Role::Client));
        // A client on another machine is reached, not probed from (that is a test's job).
        if !remote {
            v.push((Role::Client, g));
        }
    }
    if guests.len() >= 2 {
        v.push((guests[0], guests[1]));
        v.push((guests[1], guests[0]));
    }
    v
}
