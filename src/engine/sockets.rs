//! Socket set-up for data connections: buffers, congestion control, TCP_NODELAY, SO_ZEROCOPY set before
//! listen/connect (so window scaling sees them), bounded connects, port ranges.

use super::Error;
use crate::vocab::Congestion;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::Duration;

pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

fn new_socket(
    addr: &SocketAddr,
    ty: Type,
    proto: Protocol,
    buf: Option<usize>,
) -> Result<Socket, Error> {
    let s = Socket::new(Domain::for_address(*addr), ty, Some(proto))
        .map_err(|e| Error::Failed(format!("socket: {e}")))?;
    set_buffers(&s, buf)?;
    Ok(s)
}

/// A TCP socket with `cc` as its congestion control, read back so a result names what ran.
/// Accepted connections inherit the listener's.
fn tcp_socket(addr: &SocketAddr, buf: Option<usize>, cc: &Congestion) -> Result<Socket, Error> {
    let s = new_socket(addr, Type::STREAM, Protocol::TCP, buf)?;
    let set = s.set_tcp_congestion(cc.name().as_bytes());
    let got = s.tcp_congestion().ok().map(|n| {
        let n = n.split(|b| *b == 0).next().unwrap_or(&[]);
        String::from_utf8_lossy(n).into_owned()
    });
    match (set, got) {
        (Ok(()), Some(g)) if g == cc.name() => Ok(s),
        (r, _) => Err(Error::Input(format!(
            "congestion control '{cc}' is not available here ({}; this kernel offers: {}): use one of those",
            r.err().map(|e| e.to_string()).unwrap_or_else(|| "it did not take".into()),
            available_congestion()
        ))),
    }
}

/// Refuses, before anything is built, a congestion control this machine's kernel cannot give a
/// socket (a throwaway one, so a module the kernel can load still counts).
pub fn check_congestion(cc: &Congestion) -> Result<(), Error> {
    tcp_socket(&SocketAddr::from(([127, 0, 0, 1], 0)), None, cc).map(|_| ())
}

/// The kernel's list of congestion controls (loaded modules and built-ins).
fn available_congestion() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| crate::text::clip(s.trim()))
        .unwrap_or_else(|_| "unreadable".into())
}

fn set_buffers(s: &Socket, buf: Option<usize>) -> Result<(), Error> {
    if let Some(b) = buf {
        s.set_send_buffer_size(b)
            .map_err(|e| Error::Failed(format!("SO_SNDBUF {b}: {e}")))?;
        s.set_recv_buffer_size(b)
            .map_err(|e| Error::Failed(format!("SO_RCVBUF {b}: {e}")))?;
    }
    Ok(())
}

/// Binds within `ports` (inclusive), or to an ephemeral port.
fn bind_in(s: &Socket, ip: IpAddr, ports: Option<[u16; 2]>) -> Result<u16, Error> {
    let candidates: Vec<u16> = match ports {
        Some([lo, hi]) => (lo..=hi).collect(),
        None => vec![0],
    };
    for p in candidates {
        if s.bind(&SockAddr::from(SocketAddr::new(ip, p))).is_ok() {
            return Ok(s
                .local_addr()
                .ok()
                .and_then(|a| a.as_socket())
                .map(|a| a.port())
                .unwrap_or(p));
        }
    }
    Err(Error::Failed(match ports {
        Some([lo, hi]) => format!("no free port in {lo}-{hi} on {ip}"),
        None => format!("cannot bind to {ip}: is it an address of this namespace?"),
    }))
}

pub fn tcp_listen(
    ip: IpAddr,
    ports: Option<[u16; 2]>,
    buf: Option<usize>,
    cc: &Congestion,
) -> Result<(TcpListener, u16), Error> {
    let s = tcp_socket(&SocketAddr::new(ip, 0), buf, cc)?;
    s.set_reuse_address(true).ok();
    let port = bind_in(&s, ip, ports)?;
    s.listen(1024)
        .map_err(|e| Error::Failed(format!("listen: {e}")))?;
    Ok((s.into(), port))
}

pub fn tcp_connect(
    to: SocketAddr,
    buf: Option<usize>,
    cc: &Congestion,
    nodelay: bool,
    zerocopy: bool,
) -> Result<TcpStream, Error> {
    let s = tcp_socket(&to, buf, cc)?;
    if zerocopy {
        crate::sys::sock::set_zerocopy(std::os::fd::AsRawFd::as_raw_fd(&s))
            .map_err(|e| Error::Failed(format!("SO_ZEROCOPY: {e}")))?;
    }
    s.connect_timeout(&to.into(), CONNECT_TIMEOUT)
        .map_err(|e| Error::Failed(format!("cannot reach {to}: {e}")))?;
    s.set_nodelay(nodelay).ok();
    Ok(s.into())
}

pub fn udp_bind(
    ip: IpAddr,
    ports: Option<[u16; 2]>,
    buf: Option<usize>,
) -> Result<(UdpSocket, u16), Error> {
    let s = new_socket(&SocketAddr::new(ip, 0), Type::DGRAM, Protocol::UDP, buf)?;
    let port = bind_in(&s, ip, ports)?;
    Ok((s.into(), port))
}

pub fn udp_connect(to: SocketAddr, buf: Option<usize>) -> Result<UdpSocket, Error> {
    let any: IpAddr = if to.is_ipv4() {
        [0, 0, 0, 0].into()
    } else {
        std::net::Ipv6Addr::UNSPECIFIED.into()
    };
    let (s, _) = udp_bind(any, None, buf)?;
    s.connect(to)
        .map_err(|e| Error::Failed(format!("cannot reach {to}: {e}")))?;
    Ok(s)
}
