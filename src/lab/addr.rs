//! Lab addresses: the private IPv4 range a lab lives in, who gets which address in each mode,
//! and the check that the range overlaps none of the host's routes.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// Why a range (a `--subnet`, a topology's) or the host's routes could not be read. Its `Display`
/// is the one line users see; the lab takes it as what was asked (`lab::Error::Input`). It is not
/// the lab's error because that one wraps the host commands', and host commands carry ranges.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Error(String);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subnet {
    pub base: Ipv4Addr,
    pub len: u8,
}

impl Serialize for Subnet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Subnet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Subnet {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}/{}", self.base, self.len)
    }
}

impl FromStr for Subnet {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || {
            Error(format!(
                "bad subnet '{s}': write a private IPv4 range such as 10.213.0.0/16"
            ))
        };
        let (a, l) = s.split_once('/').ok_or_else(bad)?;
        let base: Ipv4Addr = a.parse().map_err(|_| bad())?;
        let len: u8 = l.parse().map_err(|_| bad())?;
        if len > 32 {
            return Err(bad());
        }
        let net = Subnet { base, len };
        if net.network() != base {
            return Err(Error(format!(
                "bad subnet '{s}': host bits are set; did you mean {}/{len}?",
                net.network()
            )));
        }
        if !(8..=28).contains(&len) {
            return Err(Error(format!(
                "subnet '{s}': use a prefix length from /8 to /28"
            )));
        }
        if !base.is_private() {
            return Err(Error(format!("subnet '{s}' is not a private range: use one inside 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16")));
        }
        Ok(net)
    }
}

impl Subnet {
    fn mask(&self) -> u32 {
        if self.len == 0 {
            0
        } else {
            u32::MAX << (32 - self.len)
        }
    }
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.base) & self.mask())
    }
    pub fn size(&self) -> u64 {
        1u64 << (32 - self.len)
    }
    /// The n-th address of the range (0 is the network address).
    pub fn nth(&self, n: u64) -> Ipv4Addr {
        assert!(n < self.size(), "address {n} outside {self}");
        Ipv4Addr::from(u32::from(self.network()) + n as u32)
    }
    #[cfg(test)]
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        u32::from(a) & self.mask() == u32::from(self.network())
    }
    pub fn overlaps(&self, other: &Subnet) -> bool {
        let m = self.mask() & other.mask();
        u32::from(self.base) & m == u32::from(other.base) & m
    }
    /// The lower and upper halves.
    pub fn halves(&self) -> (Subnet, Subnet) {
        let lo = Subnet {
            base: self.network(),
            len: self.len + 1,
        };
        let hi = Subnet {
            base: lo.nth(lo.size() - 1).next(),
            len: self.len + 1,
        };
        (lo, hi)
    }
}

trait Next {
    fn next(self) -> Ipv4Addr;
}
impl Next for Ipv4Addr {
    fn next(self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self) + 1)
    }
}

/// In mode `nat` the client reaches guest i through the host's wire address, on a block of
/// ports forwarded to the guest (the same port numbers on the guest).
pub const NAT_PORT_BASE: u16 = 20000;
pub const NAT_PORTS_PER_GUEST: u16 = 100;
pub const NAT_MAX_GUESTS: u32 = 400;

/// Who has which address.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Addressing {
    /// The wire's segment (host end ↔ client).
    pub wire: Subnet,
    /// The guests' segment: the wire's in L2 modes, a private inner network behind NAT in `nat`.
    pub guest_net: Subnet,
    pub host: Ipv4Addr,
    /// The host's address on the guests' inner network (mode `nat` only).
    pub host_inner: Option<Ipv4Addr>,
    pub client: Ipv4Addr,
    pub guests: Vec<Ipv4Addr>,
}

/// How many guests `net` holds: on the wire's segment, or (`routed`, behind NAT) on its inner half.
pub fn max_guests(routed: bool, net: &Subnet) -> u32 {
    let n = match routed {
        true => (net.halves().1.size() - 3).min(NAT_MAX_GUESTS as u64),
        false => net.size() - 4,
    };
    n.min(u32::MAX as u64) as u32
}

/// Allocates addresses: host .1, client .2, guests from .3 (or, `routed` behind NAT, from inner .2).
pub fn allocate(routed: bool, net: &Subnet, guests: u32) -> Addressing {
    assert!(guests <= max_guests(routed, net));
    match routed {
        true => {
            let (wire, inner) = net.halves();
            Addressing {
                wire,
                guest_net: inner,
                host: wire.nth(1),
                host_inner: Some(inner.nth(1)),
                client: wire.nth(2),
                guests: (0..guests as u64).map(|i| inner.nth(2 + i)).collect(),
            }
        }
        false => Addressing {
            wire: *net,
            guest_net: *net,
            host: net.nth(1),
            host_inner: None,
            client: net.nth(2),
            guests: (0..guests as u64).map(|i| net.nth(3 + i)).collect(),
        },
    }
}

/// Finds a host route that overlaps `net`, from `ip -j -4 route show table all` output.
/// The default route is ignored (it covers everything and is where the lab never sends).
pub fn overlapping_route(routes_json: &str, net: &Subnet) -> Result<Option<String>, Error> {
    let v: serde_json::Value = serde_json::from_str(routes_json)
        .map_err(|e| Error(format!("cannot read the host's routes: {e}")))?;
    for r in v.as_array().into_iter().flatten() {
        let dst = r.get("dst").and_then(|d| d.as_str()).unwrap_or("");
        if dst == "default" || dst.is_empty() {
            continue;
        }
        let (a, l) = dst.split_once('/').unwrap_or((dst, "32"));
        let (Ok(a), Ok(l)) = (a.parse::<Ipv4Addr>(), l.parse::<u8>()) else {
            continue;
        };
        let route = Subnet {
            base: a,
            len: l.min(32),
        };
        if route.overlaps(net) {
            let dev = r.get("dev").and_then(|d| d.as_str()).unwrap_or("?");
            return Ok(Some(format!("{dst} dev {dev}")));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnet_parsing_refuses_bad_ranges() {
        let n: Subnet = "10.213.0.0/16".parse().unwrap();
        assert_eq!(n.size(), 65536);
        assert!("10.213.0.1/16"
            .parse::<Subnet>()
            .unwrap_err()
            .to_string()
            .contains("10.213.0.0/16"));
        assert!("8.8.0.0/16"
            .parse::<Subnet>()
            .unwrap_err()
            .to_string()
            .contains("not a private"));
        assert!("10.0.0.0/30".parse::<Subnet>().is_err());
        assert!("10.0.0.0".parse::<Subnet>().is_err());
        assert!("10.0.0.0/33".parse::<Subnet>().is_err());
        assert!("300.0.0.0/8".parse::<Subnet>().is_err());
    }

    #[test]
    fn bridge_allocation_is_dense_and_unique() {
        let n: Subnet = "10.213.0.0/24".parse().unwrap();
        let a = allocate(false, &n, 3);
        assert_eq!(a.host, "10.213.0.1".parse::<Ipv4Addr>().unwrap());
        assert_eq!(a.client, "10.213.0.2".parse::<Ipv4Addr>().unwrap());
        assert_eq!(a.guests[2], "10.213.0.5".parse::<Ipv4Addr>().unwrap());
        assert_eq!(max_guests(false, &n), 252);
        let a = allocate(false, &n, 252);
        assert_eq!(
            *a.guests.last().unwrap(),
            "10.213.0.254".parse::<Ipv4Addr>().unwrap()
        );
        let mut all: Vec<_> = a.guests.clone();
        all.extend([a.host, a.client]);
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 254);
    }

    #[test]
    fn nat_puts_guests_behind_the_host() {
        let n: Subnet = "10.213.0.0/16".parse().unwrap();
        let a = allocate(true, &n, 2);
        assert_eq!(a.wire.to_string(), "10.213.0.0/17");
        assert_eq!(a.guest_net.to_string(), "10.213.128.0/17");
        assert_eq!(a.host_inner, Some("10.213.128.1".parse().unwrap()));
        assert_eq!(a.guests[0], "10.213.128.2".parse::<Ipv4Addr>().unwrap());
        assert!(!a.wire.contains(a.guests[1]));
        assert_eq!(max_guests(true, &n), NAT_MAX_GUESTS);
        let small: Subnet = "10.1.0.0/28".parse().unwrap();
        assert_eq!(max_guests(true, &small), 5);
    }

    #[test]
    fn overlap_with_host_routes_is_found() {
        let n: Subnet = "10.213.0.0/16".parse().unwrap();
        let routes = r#"[{"dst":"default","gateway":"10.0.0.1","dev":"eth0"},
                        {"dst":"10.0.0.0/24","dev":"eth0"},{"type":"local","dst":"10.0.0.5","dev":"eth0"}]"#;
        assert_eq!(overlapping_route(routes, &n).unwrap(), None);
        let routes = r#"[{"dst":"10.0.0.0/8","dev":"eth0"}]"#;
        assert_eq!(
            overlapping_route(routes, &n).unwrap().unwrap(),
            "10.0.0.0/8 dev eth0"
        );
        let routes = r#"[{"dst":"10.213.7.9","dev":"wg0"}]"#;
        assert!(overlapping_route(routes, &n).unwrap().is_some());
        assert!(overlapping_route("not json", &n).is_err());
    }
}
