//! In-process netlink for what a lab does once per namespace (a guest's taps, its links' MTU,
//! addresses and state, and waiting for its links to come up): a thread enters the namespace,
//! opens one rtnetlink socket there, sends a batch's messages in one datagram and reads their
//! acknowledgements, in place of an `ip` or `ip -j link` process per namespace; and ethtool
//! started straight in the namespace, not through `ip netns exec` (200 guests were 800
//! processes). The commands stay typed (`IpCmd`, `Offloads`) and
//! print as the same shell lines in `--dry-run` and the lab's log.

use super::cmds::IpCmd;
use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL,
    NLM_F_REQUEST,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage, State};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use std::io;
use std::time::Duration;

/// How long the kernel may take to answer one batch.
const ANSWER: Duration = Duration::from_secs(10);
/// The largest answer read at once (a dump of a namespace's links comes in several).
const RECV: usize = 64 * 1024;
/// The most messages a dump may hold before it is refused (a lab's namespace has a few links).
const MOST_LINKS: usize = 4096;

/// Whether every command of an `ip` batch can be made here (the rest go to `ip`).
pub fn handles(cmds: &[IpCmd]) -> bool {
    cmds.iter().all(|c| {
        matches!(
            c,
            IpCmd::Up(_) | IpCmd::Mtu { .. } | IpCmd::Addr { .. } | IpCmd::Tap { .. }
        )
    })
}

/// Runs `f` in a thread inside namespace `netns` (None: this one).
fn in_netns<T: Send>(
    netns: Option<&str>,
    f: impl FnOnce() -> io::Result<T> + Send,
) -> io::Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Some(ns) = netns {
                crate::sys::enter_netns(ns).map_err(io::Error::other)?;
            }
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the netlink thread panicked")))
    })
}

/// An rtnetlink socket of the calling thread's namespace, with a receive timeout.
fn socket() -> io::Result<Socket> {
    let mut s = Socket::new(NETLINK_ROUTE)?;
    s.bind_auto()?;
    s.connect(&SocketAddr::new(0, 0))?;
    socket2::SockRef::from(&s).set_read_timeout(Some(ANSWER))?;
    Ok(s)
}

/// Runs an `ip` batch (see `handles`) in `netns`, in order; the error names the command the
/// kernel refused and why.
pub fn run_ip(netns: Option<&str>, cmds: &[IpCmd]) -> Result<(), (usize, io::Error)> {
    in_netns(netns, || Ok(run_here(cmds)))
        .map_err(|e| (0, e))
        .and_then(|r| r)
}

fn run_here(cmds: &[IpCmd]) -> Result<(), (usize, io::Error)> {
    let s = socket().map_err(|e| (0, e))?;
    let mut batch: Vec<(usize, RouteNetlinkMessage, u16)> = Vec::new();
    for (i, c) in cmds.iter().enumerate() {
        if let IpCmd::Tap { name, vnet_hdr } = c {
            send_all(&s, &std::mem::take(&mut batch))?;
            crate::sys::tap::make_persistent(name, *vnet_hdr).map_err(|e| (i, e))?;
            continue;
        }
        batch.push(message(c).map_err(|e| (i, e))?.with_index(i));
    }
    send_all(&s, &batch)
}

trait WithIndex {
    fn with_index(self, i: usize) -> (usize, RouteNetlinkMessage, u16);
}

impl WithIndex for (RouteNetlinkMessage, u16) {
    fn with_index(self, i: usize) -> (usize, RouteNetlinkMessage, u16) {
        (i, self.0, self.1)
    }
}

/// The interface index of `dev` in the calling thread's namespace.
fn index(dev: &str) -> io::Result<u32> {
    crate::sys::if_index(dev)
}

/// The message for one command and its extra header flags.
fn message(c: &IpCmd) -> io::Result<(RouteNetlinkMessage, u16)> {
    let link = |dev: &str| -> io::Result<LinkMessage> {
        let mut m = LinkMessage::default();
        m.header.index = index(dev)?;
        Ok(m)
    };
    Ok(match c {
        IpCmd::Up(dev) => {
            let mut m = link(dev)?;
            m.header.flags = LinkFlags::Up;
            m.header.change_mask = LinkFlags::Up;
            (RouteNetlinkMessage::SetLink(m), 0)
        }
        IpCmd::Mtu { dev, mtu } => {
            let mut m = link(dev)?;
            m.attributes.push(LinkAttribute::Mtu(*mtu));
            (RouteNetlinkMessage::SetLink(m), 0)
        }
        IpCmd::Addr { addr, len, dev } => {
            let mut m = AddressMessage::default();
            m.header.family = AddressFamily::Inet;
            m.header.prefix_len = *len;
            m.header.index = index(dev)?;
            m.attributes.push(AddressAttribute::Local((*addr).into()));
            m.attributes.push(AddressAttribute::Address((*addr).into()));
            (
                RouteNetlinkMessage::NewAddress(m),
                NLM_F_CREATE | NLM_F_EXCL,
            )
        }
        _ => return Err(io::Error::other("not a command made over netlink here")),
    })
}

/// Sends the batch in one datagram and reads an acknowledgement per message.
fn send_all(
    s: &Socket,
    batch: &[(usize, RouteNetlinkMessage, u16)],
) -> Result<(), (usize, io::Error)> {
    if batch.is_empty() {
        return Ok(());
    }
    let mut buf = Vec::new();
    for (seq, (_, m, flags)) in batch.iter().enumerate() {
        let mut h = NetlinkHeader::default();
        h.flags = NLM_F_REQUEST | NLM_F_ACK | flags;
        h.sequence_number = seq as u32 + 1;
        let mut nl = NetlinkMessage::new(h, NetlinkPayload::from(m.clone()));
        nl.finalize();
        let at = buf.len();
        buf.resize(at + nl.buffer_len(), 0);
        nl.serialize(&mut buf[at..]);
    }
    s.send(&buf, 0).map_err(|e| (batch[0].0, e))?;
    let mut acked = 0;
    let mut rx = vec![0u8; RECV];
    while acked < batch.len() {
        let n = recv(s, &mut rx).map_err(|e| (batch[acked].0, e))?;
        for (seq, err) in acks(&rx[..n]).map_err(|e| (batch[acked].0, e))? {
            let i = (seq as usize).saturating_sub(1).min(batch.len() - 1);
            if let Some(code) = err {
                return Err((batch[i].0, io::Error::from_raw_os_error(-code)));
            }
            acked += 1;
        }
    }
    Ok(())
}

fn recv(s: &Socket, rx: &mut Vec<u8>) -> io::Result<usize> {
    rx.clear();
    rx.reserve(RECV);
    let n = s.recv(rx, 0)?;
    Ok(n.min(rx.len()))
}

/// The acknowledgements in a datagram: (sequence number, Some(negative errno) on a refusal).
pub fn acks(mut b: &[u8]) -> io::Result<Vec<(u32, Option<i32>)>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let (m, len) = one(b)?;
        if let NetlinkPayload::Error(e) = m.payload {
            out.push((m.header.sequence_number, e.code.map(|c| c.get())));
        }
        b = &b[len.min(b.len())..];
    }
    Ok(out)
}

/// One message at the head of `b` and its aligned length.
fn one(b: &[u8]) -> io::Result<(NetlinkMessage<RouteNetlinkMessage>, usize)> {
    if b.len() < 16 {
        return Err(io::Error::other("a netlink answer shorter than its header"));
    }
    let len = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize;
    if len < 16 || len > b.len() {
        return Err(io::Error::other("a netlink answer with a bad length"));
    }
    let m = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&b[..len])
        .map_err(|e| io::Error::other(format!("a netlink answer that does not parse: {e}")))?;
    Ok((m, len.div_ceil(4) * 4))
}

/// Turns IPv6 off in `netns` for the links it has and will have.
pub fn ipv6_off(netns: &str) -> io::Result<()> {
    in_netns(Some(netns), || {
        for scope in ["all", "default"] {
            let p = format!("/proc/sys/net/ipv6/conf/{scope}/disable_ipv6");
            match std::fs::write(&p, "1") {
                // A kernel without IPv6 has nothing to turn off.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                r => r?,
            }
        }
        Ok(())
    })
}

/// Runs `ethtool ARGS` in `netns` without `ip netns exec` (whose private mount namespace and
/// sysfs remount cost more than ethtool itself): started from a thread inside the namespace,
/// ethtool is born in it. Its exit status and complaint come back as from `run_child`.
pub fn ethtool_in(netns: &str, args: &[String]) -> io::Result<super::Output> {
    in_netns(Some(netns), || {
        let mut c = std::process::Command::new("ethtool");
        c.args(args);
        super::run_child(&mut c, None, super::TIMEOUT).map_err(io::Error::other)
    })
}

/// The first link of `netns` that is set up and not yet reported up by the kernel (name and
/// state), if any.
pub fn pending_link(netns: &str) -> io::Result<Option<(String, String)>> {
    in_netns(Some(netns), || {
        let s = socket()?;
        let mut h = NetlinkHeader::default();
        h.flags = NLM_F_REQUEST | NLM_F_DUMP;
        h.sequence_number = 1;
        let get = RouteNetlinkMessage::GetLink(LinkMessage::default());
        let mut nl = NetlinkMessage::new(h, NetlinkPayload::from(get));
        nl.finalize();
        let mut buf = vec![0u8; nl.buffer_len()];
        nl.serialize(&mut buf);
        s.send(&buf, 0)?;
        let mut rx = vec![0u8; RECV];
        let mut seen = 0;
        let mut pending = None;
        loop {
            let n = recv(&s, &mut rx)?;
            let mut b = &rx[..n];
            while !b.is_empty() {
                let (m, len) = one(b)?;
                b = &b[len.min(b.len())..];
                match m.payload {
                    NetlinkPayload::Done(_) => return Ok(pending),
                    NetlinkPayload::Error(e) => {
                        let code = e.code.map(|c| c.get()).unwrap_or(-libc::EIO);
                        return Err(io::Error::from_raw_os_error(-code));
                    }
                    NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(l)) => {
                        seen += 1;
                        if seen > MOST_LINKS {
                            return Err(io::Error::other("too many links in one namespace"));
                        }
                        if pending.is_none() {
                            pending = not_up(&l);
                        }
                    }
                    _ => {}
                }
            }
        }
    })
}

/// A link set up whose operational state is neither up nor unknown (loopback aside).
fn not_up(l: &LinkMessage) -> Option<(String, String)> {
    if !l.header.flags.contains(LinkFlags::Up) || l.header.flags.contains(LinkFlags::Loopback) {
        return None;
    }
    let name = l.attributes.iter().find_map(|a| match a {
        LinkAttribute::IfName(n) => Some(n.clone()),
        _ => None,
    })?;
    let state = l.attributes.iter().find_map(|a| match a {
        LinkAttribute::OperState(s) => Some(*s),
        _ => None,
    })?;
    (!matches!(state, State::Up | State::Unknown))
        .then(|| (name, format!("{state:?}").to_uppercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_per_namespace_link_commands_are_made_here() {
        let up = IpCmd::Up("a".into());
        let addr = IpCmd::Addr {
            addr: "10.0.0.1".parse().unwrap(),
            len: 24,
            dev: "a".into(),
        };
        assert!(handles(&[up.clone(), addr]));
        assert!(!handles(&[up, IpCmd::Bridge("b".into())]));
        assert!(handles(&[]));
    }

    #[test]
    fn acknowledgements_are_read_and_refusals_named() {
        // Two acks: seq 1 accepted, seq 2 refused with EEXIST.
        let ack = |seq: u32, code: i32| {
            let mut b = Vec::new();
            b.extend_from_slice(&36u32.to_ne_bytes());
            b.extend_from_slice(&2u16.to_ne_bytes()); // NLMSG_ERROR
            b.extend_from_slice(&0u16.to_ne_bytes());
            b.extend_from_slice(&seq.to_ne_bytes());
            b.extend_from_slice(&0u32.to_ne_bytes());
            b.extend_from_slice(&code.to_ne_bytes());
            b.extend_from_slice(&[0u8; 16]); // the request's header
            b
        };
        let mut d = ack(1, 0);
        d.extend(ack(2, -libc::EEXIST));
        assert_eq!(acks(&d).unwrap(), vec![(1, None), (2, Some(-libc::EEXIST))]);
        assert!(acks(&d[..20]).is_err(), "cut short");
        let mut bad = ack(1, 0);
        bad[0] = 200;
        assert!(acks(&bad).is_err(), "longer than the datagram");
    }
}
