//! Quantities as people write them and the kernel takes them: link rates (`1gbit`), delays
//! (`5ms`), loss (`0.1%`), byte sizes (`64K`), request/response pairs (`1,1`), on/off switches
//! and CPU lists (`0-3,6`). Parsing and printing only; every stage may use them.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Why a quantity did not parse. Its `Display` is the one line users see.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// Not written as the quantity is written: `hint` says how.
    #[error("bad {what} '{value}': {hint}")]
    Malformed {
        what: &'static str,
        value: String,
        hint: &'static str,
    },
    /// Well written but outside what the kernel or vnetlab takes.
    #[error("{what} '{value}' is out of range: use {range}")]
    OutOfRange {
        what: &'static str,
        value: String,
        range: &'static str,
    },
}

fn malformed(what: &'static str, value: &str, hint: &'static str) -> Error {
    Error::Malformed {
        what,
        value: crate::text::clip(value),
        hint,
    }
}

fn out_of_range(what: &'static str, value: &str, range: &'static str) -> Error {
    Error::OutOfRange {
        what,
        value: crate::text::clip(value),
        range,
    }
}

/// An on/off switch written as `on`/`off` (flags) or a TOML boolean.
pub fn parse_on_off(s: &str) -> Result<bool, Error> {
    match s {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        _ => Err(malformed("switch", s, "write on or off")),
    }
}

/// A network written as `10.213.0.0/16`, `fd00::/8`, or one address (`10.0.0.7`: /32, `::1`:
/// /128): what `serve --allow` lets a session reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    pub base: std::net::IpAddr,
    pub len: u8,
}

impl Cidr {
    /// Whether `ip` lies in the network (IPv4-mapped IPv6 addresses count as IPv4).
    pub fn contains(&self, ip: std::net::IpAddr) -> bool {
        use std::net::IpAddr::{V4, V6};
        let bits = |a: u128, b: u128, width: u32| {
            let shift = width - self.len as u32;
            self.len == 0 || (a >> shift) == (b >> shift)
        };
        match (self.base, ip.to_canonical()) {
            (V4(n), V4(a)) => bits(u32::from(n) as u128, u32::from(a) as u128, 32),
            (V6(n), V6(a)) => bits(u128::from(n), u128::from(a), 128),
            _ => false,
        }
    }
}

impl FromStr for Cidr {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || {
            malformed(
                "network",
                s,
                "write an address or a CIDR, e.g. 10.213.0.0/16 or ::1",
            )
        };
        let (addr, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let base: std::net::IpAddr = addr.parse().map_err(|_| bad())?;
        let width = if base.is_ipv4() { 32 } else { 128 };
        let len = match len {
            None => width,
            Some(l) if !l.is_empty() && l.len() <= 3 && l.bytes().all(|b| b.is_ascii_digit()) => {
                l.parse::<u8>().map_err(|_| bad())?
            }
            Some(_) => return Err(bad()),
        };
        if len > width {
            return Err(out_of_range(
                "prefix length",
                s,
                "/0 to /32 for IPv4, /0 to /128 for IPv6",
            ));
        }
        Ok(Cidr { base, len })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}/{}", self.base, self.len)
    }
}

/// A link rate in bits per second, written as tc writes it: `100mbit`, `1gbit`, `2.5gbit`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rate(pub u64);

impl FromStr for Rate {
    type Err = Error;
    /// As tc writes rates (`100mbit`, `1gbit`) or as iperf3's `-b` does (`500K`, `100M`, `1G`, or
    /// a bare number: bits per second, powers of 1000). `MB`, `mbps` and the like are refused: tc
    /// reads `mbps` as megabytes.
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || {
            malformed(
                "rate",
                s,
                "write bits per second as iperf3 does (500K, 100M, 1G) or as tc does (100mbit, 1gbit)",
            )
        };
        let (num, unit) = match split_unit(s) {
            Some(x) => x,
            None => (
                s.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(bad)?,
                "",
            ),
        };
        // As tc reads them: `500Mbit` is `500mbit`; as iperf3 reads them: `100m` is `100M`.
        let mult = match unit.to_ascii_lowercase().as_str() {
            "" | "bit" => 1.0,
            "k" | "kbit" => 1e3,
            "m" | "mbit" => 1e6,
            "g" | "gbit" => 1e9,
            "t" | "tbit" => 1e12,
            _ => return Err(bad()),
        };
        let bps = num * mult;
        if !(1000.0..=1e13).contains(&bps) {
            return Err(out_of_range(
                "rate",
                s,
                "1K to 10T bits/s (1kbit to 10tbit)",
            ));
        }
        Ok(Rate(bps as u64))
    }
}

impl fmt::Display for Rate {
    /// As tc writes rates, in the largest unit that keeps it short: `500mbit`, `2.5gbit`.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let v = self.0 as f64;
        let (n, unit) = [(1e12, "tbit"), (1e9, "gbit"), (1e6, "mbit"), (1e3, "kbit")]
            .into_iter()
            .find(|(m, _)| v >= *m)
            .unwrap_or((1.0, "bit"));
        let x = ((v / n) * 1000.0).round() / 1000.0;
        write!(f, "{x}{unit}")
    }
}

/// A one-way delay in microseconds, written `5ms`, `200us`, `1s`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delay(pub u64);

impl FromStr for Delay {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || malformed("delay", s, "write a number and a unit, e.g. 200us, 5ms, 1s");
        let (num, unit) = split_unit(s).ok_or_else(bad)?;
        let mult = match unit {
            "us" => 1.0,
            "ms" => 1e3,
            "s" => 1e6,
            _ => return Err(bad()),
        };
        let us = num * mult;
        if !(0.0..=60e6).contains(&us) {
            return Err(out_of_range("delay", s, "0 to 60s"));
        }
        Ok(Delay(us as u64))
    }
}

impl fmt::Display for Delay {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}us", self.0)
    }
}

/// A packet loss probability in percent, written `0.1%`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Loss(pub f64);

impl FromStr for Loss {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || malformed("loss", s, "write a percentage from 0% to 100%, e.g. 0.1%");
        let num = s.strip_suffix('%').ok_or_else(bad)?;
        let v: f64 = num.parse().map_err(|_| bad())?;
        if !(0.0..=100.0).contains(&v) || !v.is_finite() {
            return Err(bad());
        }
        Ok(Loss(v))
    }
}

impl fmt::Display for Loss {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}%", self.0)
    }
}

fn split_unit(s: &str) -> Option<(f64, &str)> {
    let i = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(i);
    if num.is_empty() || num.starts_with('+') {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    v.is_finite().then_some((v, unit))
}

pub const MAX_SIZE: u64 = 1 << 30;
/// A byte size: `64`, `1K`, `128K`, `1M` (powers of 1024, as netperf's -m 1K); 1 B to 1 GiB.
pub fn parse_size(s: &str) -> Result<usize, Error> {
    let bad = || {
        malformed(
            "size",
            s,
            "write bytes, or a number with K, M or G (e.g. 64, 1K, 128K)",
        )
    };
    let t = s.trim();
    let (num, mult) = match t
        .char_indices()
        .last()
        .map(|(i, c)| (i, c.to_ascii_uppercase()))
    {
        Some((i, 'K')) => (&t[..i], 1u64 << 10),
        Some((i, 'M')) => (&t[..i], 1 << 20),
        Some((i, 'G')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    let v = n.checked_mul(mult).ok_or_else(bad)?;
    if v == 0 || v > MAX_SIZE {
        return Err(out_of_range("size", s, "1 byte to 1G"));
    }
    Ok(v as usize)
}

/// `-r 1,1`: request and response sizes.
pub fn parse_rr(s: &str) -> Result<(usize, usize), Error> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| malformed("-r", s, "write REQUEST,RESPONSE sizes, e.g. 1,1"))?;
    Ok((parse_size(a)?, parse_size(b)?))
}

/// A pacing rate in bits/s: `100mbit`, `1gbit` (as the lab's wire rate).
pub fn parse_rate(s: &str) -> Result<u64, Error> {
    s.parse::<crate::units::Rate>().map(|r| r.0)
}

/// The highest CPU number a list may name (the kernel's CPU_SETSIZE).
pub const MAX_CPU: usize = 1023;

/// A set of CPUs, written as the kernel writes it: `0`, `0-3`, `0,2,4-7`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CpuList(pub Vec<usize>);

impl CpuList {
    pub fn contains(&self, c: usize) -> bool {
        self.0.contains(&c)
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// A hexadecimal mask as sysfs takes it (rps_cpus, xps_cpus): 32-bit groups joined by commas.
    pub fn mask(&self) -> String {
        let top = self.0.iter().copied().max().unwrap_or(0);
        let mut words = vec![0u32; top / 32 + 1];
        for &c in &self.0 {
            words[c / 32] |= 1 << (c % 32);
        }
        words
            .iter()
            .rev()
            .map(|w| format!("{w:08x}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl FromStr for CpuList {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || {
            malformed(
                "CPU list",
                s,
                "write CPU numbers and ranges, e.g. 1 or 0-3,6",
            )
        };
        if s.is_empty() || s.len() > 4096 {
            return Err(bad());
        }
        let mut v = Vec::new();
        for part in s.split(',') {
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a, b),
                None => (part, part),
            };
            let a: usize = a.trim().parse().map_err(|_| bad())?;
            let b: usize = b.trim().parse().map_err(|_| bad())?;
            if a > b || b > MAX_CPU {
                return Err(bad());
            }
            v.extend(a..=b);
        }
        v.sort_unstable();
        v.dedup();
        Ok(CpuList(v))
    }
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let mut parts = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            let mut j = i;
            while j + 1 < self.0.len() && self.0[j + 1] == self.0[j] + 1 {
                j += 1;
            }
            parts.push(if i == j {
                self.0[i].to_string()
            } else {
                format!("{}-{}", self.0[i], self.0[j])
            });
            i = j + 1;
        }
        f.write_str(&parts.join(","))
    }
}

impl Serialize for CpuList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for CpuList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            List(Vec<usize>),
            Text(String),
        }
        match Form::deserialize(d)? {
            Form::List(mut v) => {
                if v.iter().any(|&c| c > MAX_CPU) {
                    return Err(serde::de::Error::custom(format!(
                        "a CPU number is above {MAX_CPU}"
                    )));
                }
                v.sort_unstable();
                v.dedup();
                Ok(CpuList(v))
            }
            Form::Text(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_parse_and_contain_their_addresses() {
        let n: Cidr = "10.213.0.0/16".parse().unwrap();
        assert!(n.contains("10.213.7.9".parse().unwrap()));
        assert!(!n.contains("10.214.0.1".parse().unwrap()));
        assert!(
            n.contains("::ffff:10.213.0.1".parse().unwrap()),
            "IPv4-mapped"
        );
        assert!(!n.contains("::1".parse().unwrap()));
        let one: Cidr = "192.0.2.5".parse().unwrap();
        assert_eq!(one.len, 32);
        assert!(
            one.contains("192.0.2.5".parse().unwrap())
                && !one.contains("192.0.2.6".parse().unwrap())
        );
        let v6: Cidr = "fd00::/8".parse().unwrap();
        assert!(
            v6.contains("fd12::1".parse().unwrap()) && !v6.contains("fe80::1".parse().unwrap())
        );
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
        for bad in [
            "",
            "10.0.0.0/",
            "10.0.0.0/33",
            "::/129",
            "10.0.0/8",
            "x/8",
            "10.0.0.0/+8",
            "10.0.0.0/0008",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
        assert_eq!(n.to_string(), "10.213.0.0/16");
    }

    fn l(s: &str) -> CpuList {
        s.parse().unwrap()
    }

    #[test]
    fn sizes_parse_like_netperf() {
        assert_eq!(parse_size("64").unwrap(), 64);
        assert_eq!(parse_size("1K").unwrap(), 1024);
        assert_eq!(parse_size("128k").unwrap(), 131072);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        for bad in [
            "0",
            "2G",
            "-1",
            "",
            "K",
            "1.5K",
            "99999999999999999999",
            "1T",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_rr("1,1").unwrap(), (1, 1));
        assert_eq!(parse_rr("64,1K").unwrap(), (64, 1024));
        assert!(parse_rr("1").is_err());
    }

    #[test]
    fn rates_parse_like_tc() {
        assert_eq!("1gbit".parse::<Rate>().unwrap().0, 1_000_000_000);
        assert_eq!("2.5gbit".parse::<Rate>().unwrap().0, 2_500_000_000);
        assert_eq!("100mbit".parse::<Rate>().unwrap().0, 100_000_000);
        for (r, text) in [
            (500_000_000, "500mbit"),
            (2_500_000_000, "2.5gbit"),
            (1_000_000_000, "1gbit"),
            (1500, "1.5kbit"),
        ] {
            assert_eq!(Rate(r).to_string(), text);
            assert_eq!(text.parse::<Rate>().unwrap(), Rate(r));
        }
        // iperf3's -b: K, M, G, T as bits/s in powers of 1000, or a bare number of bits/s.
        for (text, bps) in [
            ("500K", 500_000),
            ("100M", 100_000_000),
            ("1G", 1_000_000_000),
            ("2.5g", 2_500_000_000),
            ("1000000", 1_000_000),
        ] {
            assert_eq!(text.parse::<Rate>().unwrap().0, bps, "{text}");
        }
        for bad in [
            "", "gbit", "1", "1gb", "-1gbit", "1 gbit", "nangbit", "1e30gbit", "0bit", "100MB",
            "100mbps", "inf", "NaN", "-5M", "1e30",
        ] {
            assert!(bad.parse::<Rate>().is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn delay_and_loss_parse() {
        assert_eq!("5ms".parse::<Delay>().unwrap().0, 5000);
        assert_eq!("200us".parse::<Delay>().unwrap().0, 200);
        assert!("5".parse::<Delay>().is_err());
        assert!("5min".parse::<Delay>().is_err());
        assert_eq!("0.1%".parse::<Loss>().unwrap().0, 0.1);
        assert!("0.1".parse::<Loss>().is_err());
        assert!("101%".parse::<Loss>().is_err());
        assert!("-1%".parse::<Loss>().is_err());
    }

    #[test]
    fn lists_parse_and_print_like_the_kernel() {
        assert_eq!(l("0-3,6").0, vec![0, 1, 2, 3, 6]);
        assert_eq!(l("3,1,1").0, vec![1, 3]);
        assert_eq!(l("0-3,6").to_string(), "0-3,6");
        assert_eq!(l("5").to_string(), "5");
        for bad in ["", "a", "3-1", "1,", "-1", "1-", "0-99999", "1.5"] {
            assert!(bad.parse::<CpuList>().is_err(), "{bad}");
        }
        assert_eq!(l("0").mask(), "00000001");
        assert_eq!(l("1,3").mask(), "0000000a");
        assert_eq!(l("0,33").mask(), "00000002,00000001");
    }
}
