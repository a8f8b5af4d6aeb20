//! The typed commands the lab planner emits (`IpCmd`, `TcCmd`, `NftCmd`, `Offloads`) and the one
//! place they become iproute2, tc, nft and ethtool text.

use std::fmt;
use std::net::Ipv4Addr;

use crate::lab::addr::Subnet;

/// One iproute2 command (a line of `ip -batch`).
#[derive(Clone, Debug, PartialEq)]
pub enum IpCmd {
    NetnsAdd(String),
    NetnsDel(String),
    /// A veth pair made straight in two namespaces, with interface indices of its own: `index`
    /// for `name`, the next for `peer`. Each end's index must differ from its peer's, or the
    /// kernel's linkwatch takes the pair for a non-stacked device and brings its operational state
    /// (and its qdisc) up only at its next once-a-second run: two ends made first in two fresh
    /// namespaces both get index 2, and every lab build waited up to a second for its wire.
    Veth {
        name: String,
        netns: String,
        index: u32,
        peer: String,
        peer_netns: String,
    },
    Bridge(String),
    Tap {
        name: String,
        vnet_hdr: bool,
    },
    /// A macvlan in bridge mode on `link`.
    Macvlan {
        name: String,
        link: String,
    },
    /// A macvtap in bridge mode on `link` with MAC `mac` (a QEMU guest's NIC answers to it).
    Macvtap {
        name: String,
        link: String,
        mac: String,
    },
    Mtu {
        dev: String,
        mtu: u32,
    },
    Master {
        dev: String,
        master: String,
    },
    Up(String),
    /// Moves `dev` into `netns`.
    ToNetns {
        dev: String,
        netns: String,
    },
    /// Moves `dev` into `netns` (a name, or "1" for the root namespace) under a new name.
    MoveRename {
        dev: String,
        netns: String,
        name: String,
    },
    Addr {
        addr: Ipv4Addr,
        len: u8,
        dev: String,
    },
    Route {
        to: Subnet,
        via: Ipv4Addr,
    },
}

impl fmt::Display for IpCmd {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            IpCmd::NetnsAdd(n) => write!(f, "netns add {n}"),
            IpCmd::NetnsDel(n) => write!(f, "netns del {n}"),
            IpCmd::Veth {
                name,
                netns,
                index,
                peer,
                peer_netns,
            } => write!(
                f,
                "link add {name} netns {netns} index {index} type veth peer name {peer} netns {peer_netns} index {}",
                index + 1
            ),
            IpCmd::Bridge(n) => write!(f, "link add {n} type bridge"),
            IpCmd::Tap { name, vnet_hdr } => {
                let h = if *vnet_hdr { " vnet_hdr" } else { "" };
                write!(f, "tuntap add dev {name} mode tap{h}")
            }
            IpCmd::Macvlan { name, link } => {
                write!(f, "link add {name} link {link} type macvlan mode bridge")
            }
            IpCmd::Macvtap { name, link, mac } => write!(
                f,
                "link add {name} link {link} address {mac} type macvtap mode bridge"
            ),
            IpCmd::Mtu { dev, mtu } => write!(f, "link set {dev} mtu {mtu}"),
            IpCmd::Master { dev, master } => write!(f, "link set {dev} master {master}"),
            IpCmd::Up(dev) => write!(f, "link set {dev} up"),
            IpCmd::ToNetns { dev, netns } => write!(f, "link set {dev} netns {netns}"),
            IpCmd::MoveRename { dev, netns, name } => {
                write!(f, "link set dev {dev} netns {netns} name {name}")
            }
            IpCmd::Addr { addr, len, dev } => write!(f, "addr add {addr}/{len} dev {dev}"),
            IpCmd::Route { to, via } => write!(f, "route add {to} via {via}"),
        }
    }
}

/// One tc command (a line of `tc -batch`): the root qdisc of a wire end.
#[derive(Clone, Debug, PartialEq)]
pub enum TcCmd {
    /// A plain queue (a NIC's txqueuelen).
    Pfifo { dev: String, limit: u32 },
    /// Delay and loss at the root.
    Netem {
        dev: String,
        limit: u32,
        delay_us: Option<u64>,
        loss_pct: Option<f64>,
    },
    /// A rate, at the root or below a netem (`under_netem`).
    Tbf {
        dev: String,
        under_netem: bool,
        rate_bit: u64,
        burst: u64,
        latency_ms: u32,
    },
    /// Fair queueing at the root, replacing what was there (the kernel's pacing, per flow).
    FqReplace { dev: String },
    /// A plain queue at the root, replacing what was there (to put a wire end's back).
    PfifoReplace { dev: String, limit: u32 },
    /// Removes the root qdisc: the device gets its default back.
    DelRoot { dev: String },
}

impl fmt::Display for TcCmd {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            TcCmd::Pfifo { dev, limit } => {
                write!(f, "qdisc add dev {dev} root handle 1: pfifo limit {limit}")
            }
            TcCmd::FqReplace { dev } => write!(f, "qdisc replace dev {dev} root fq"),
            TcCmd::PfifoReplace { dev, limit } => {
                write!(
                    f,
                    "qdisc replace dev {dev} root handle 1: pfifo limit {limit}"
                )
            }
            TcCmd::DelRoot { dev } => write!(f, "qdisc del dev {dev} root"),
            TcCmd::Netem {
                dev,
                limit,
                delay_us,
                loss_pct,
            } => {
                write!(f, "qdisc add dev {dev} root handle 1: netem limit {limit}")?;
                if let Some(d) = delay_us {
                    write!(f, " delay {d}us")?;
                }
                if let Some(l) = loss_pct {
                    write!(f, " loss {l}%")?;
                }
                Ok(())
            }
            TcCmd::Tbf {
                dev,
                under_netem,
                rate_bit,
                burst,
                latency_ms,
            } => {
                let parent = if *under_netem {
                    "parent 1: handle 2:"
                } else {
                    "root handle 1:"
                };
                write!(
                    f,
                    "qdisc add dev {dev} {parent} tbf rate {rate_bit}bit burst {burst} latency {latency_ms}ms"
                )
            }
        }
    }
}

/// An nft table: masquerade of the guests' network out of the wire, and a block of ports on the
/// host's wire address forwarded to each guest.
#[derive(Clone, Debug, PartialEq)]
pub struct NftCmd {
    pub table: String,
    pub guest_net: Subnet,
    pub wire: String,
    pub host: Ipv4Addr,
    /// Per guest: the forwarded port range and the guest's address.
    pub forwards: Vec<([u16; 2], Ipv4Addr)>,
}

impl fmt::Display for NftCmd {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let NftCmd {
            table,
            guest_net,
            wire,
            host,
            forwards,
        } = self;
        writeln!(f, "table ip {table} {{\n  chain post {{\n    type nat hook postrouting priority srcnat; policy accept;")?;
        writeln!(
            f,
            "    ip saddr {guest_net} oifname \"{wire}\" masquerade\n  }}"
        )?;
        writeln!(
            f,
            "  chain pre {{\n    type nat hook prerouting priority dstnat; policy accept;"
        )?;
        for ([lo, hi], to) in forwards {
            writeln!(f, "    iifname \"{wire}\" ip daddr {host} meta l4proto {{ tcp, udp }} th dport {lo}-{hi} dnat to {to}")?;
        }
        writeln!(f, "  }}\n}}")
    }
}

/// An interface's offloads: GRO, and TSO with GSO.
#[derive(Clone, Debug, PartialEq)]
pub struct Offloads {
    pub dev: String,
    pub gro: bool,
    pub tso: bool,
}

impl Offloads {
    /// ethtool's arguments.
    pub fn args(&self) -> Vec<String> {
        let onoff = |b: bool| if b { "on" } else { "off" };
        let (g, t) = (onoff(self.gro), onoff(self.tso));
        ["-K", &self.dev, "gro", g, "tso", t, "gso", t]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_read_as_iproute2_tc_and_nft_write_them() {
        let v = IpCmd::Veth {
            name: "a".into(),
            netns: "n1".into(),
            index: 100,
            peer: "b".into(),
            peer_netns: "n2".into(),
        };
        assert_eq!(
            v.to_string(),
            "link add a netns n1 index 100 type veth peer name b netns n2 index 101"
        );
        let t = IpCmd::Tap {
            name: "t".into(),
            vnet_hdr: true,
        };
        assert_eq!(t.to_string(), "tuntap add dev t mode tap vnet_hdr");
        let n = TcCmd::Netem {
            dev: "w".into(),
            limit: 100000,
            delay_us: Some(5000),
            loss_pct: Some(0.1),
        };
        assert_eq!(
            n.to_string(),
            "qdisc add dev w root handle 1: netem limit 100000 delay 5000us loss 0.1%"
        );
        let nft = NftCmd {
            table: "vlx".into(),
            guest_net: "10.0.128.0/17".parse().unwrap(),
            wire: "vlxw".into(),
            host: "10.0.0.1".parse().unwrap(),
            forwards: vec![([20000, 20099], "10.0.128.3".parse().unwrap())],
        };
        let s = nft.to_string();
        assert!(
            s.starts_with("table ip vlx {\n") && s.ends_with("  }\n}\n"),
            "{s}"
        );
        assert!(s.contains("th dport 20000-20099 dnat to 10.0.128.3\n"));
        let o = Offloads {
            dev: "d".into(),
            gro: false,
            tso: true,
        };
        assert_eq!(o.args().join(" "), "-K d gro off tso on gso on");
    }
}
