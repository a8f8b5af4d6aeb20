//! What a test asks for: netperf's test names, sizes, duration, parallelism and pacing, parsed
//! and checked. Plain data shared by the driver and the agents.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TestKind {
    #[serde(rename = "TCP_STREAM")]
    TcpStream,
    #[serde(rename = "TCP_MAERTS")]
    TcpMaerts,
    #[serde(rename = "UDP_STREAM")]
    UdpStream,
    #[serde(rename = "TCP_RR")]
    TcpRr,
    #[serde(rename = "UDP_RR")]
    UdpRr,
    #[serde(rename = "TCP_CRR")]
    TcpCrr,
}

pub const TEST_NAMES: &str = "TCP_STREAM, TCP_MAERTS, UDP_STREAM, TCP_RR, UDP_RR, TCP_CRR";

impl TestKind {
    pub fn is_rr(self) -> bool {
        matches!(self, TestKind::TcpRr | TestKind::UdpRr | TestKind::TcpCrr)
    }
    pub fn is_udp(self) -> bool {
        matches!(self, TestKind::UdpStream | TestKind::UdpRr)
    }
    /// Whether the initiator (the side that connects, `--from`) is the one sending bulk data.
    pub fn initiator_sends(self) -> bool {
        !matches!(self, TestKind::TcpMaerts)
    }
}

impl FromStr for TestKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        serde_json::from_value(serde_json::Value::String(s.to_ascii_uppercase()))
            .map_err(|_| format!("unknown test '{s}': use one of {TEST_NAMES}"))
    }
}

impl fmt::Display for TestKind {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(serde_json::to_value(self).unwrap().as_str().unwrap())
    }
}

pub const MAX_SIZE: u64 = 1 << 30;
/// The largest message, request or response: a buffer of it is allocated per stream.
pub const MAX_MSG: usize = 64 << 20;
/// The most buffer memory one side's streams may ask for (message size × parallel streams).
pub const MAX_BUFFERS: usize = 256 << 20;
/// The most bytes `--bytes` may send per stream.
pub const MAX_BYTES: u64 = 1 << 40;

/// A byte size: `64`, `1K`, `128K`, `1M` (powers of 1024, as netperf's -m 1K); 1 B to 1 GiB.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let bad = || format!("bad size '{s}': write bytes, or a number with K, M or G (e.g. 64, 1K, 128K)");
    let t = s.trim();
    let (num, mult) = match t.char_indices().last().map(|(i, c)| (i, c.to_ascii_uppercase())) {
        Some((i, 'K')) => (&t[..i], 1u64 << 10),
        Some((i, 'M')) => (&t[..i], 1 << 20),
        Some((i, 'G')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    let v = n.checked_mul(mult).ok_or_else(bad)?;
    if v == 0 || v > MAX_SIZE {
        return Err(format!("size '{s}' is out of range: use 1 byte to 1G"));
    }
    Ok(v as usize)
}

/// `-r 1,1`: request and response sizes.
pub fn parse_rr(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s.split_once(',').ok_or_else(|| format!("bad -r '{s}': write REQUEST,RESPONSE sizes, e.g. 1,1"))?;
    Ok((parse_size(a)?, parse_size(b)?))
}

/// A pacing rate in bits/s: `100mbit`, `1gbit` (as the lab's wire rate).
pub fn parse_rate(s: &str) -> Result<u64, String> {
    s.parse::<crate::lab::topology::Rate>().map(|r| r.0)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    pub test: TestKind,
    /// Send size for streams.
    pub msg: usize,
    /// Request and response sizes for RR tests.
    pub req: usize,
    pub resp: usize,
    /// -s: socket buffers of the initiator's sockets; -S: of the server's.
    pub local_buf: Option<usize>,
    pub remote_buf: Option<usize>,
    /// Measured seconds (after the warm-up).
    pub duration: f64,
    pub warmup: f64,
    /// Streams (or RR connections) per initiator.
    pub parallel: u32,
    /// Pacing per stream, bits/s.
    pub rate: Option<u64>,
    pub nodelay: bool,
    pub zerocopy: bool,
    /// Length of a reported interval, seconds.
    pub interval: f64,
    /// Send exactly this many bytes (streams), then stop; `duration` becomes the time limit.
    #[serde(default)]
    pub bytes: Option<u64>,
    /// Send a known pattern and compare SHA-256 hashes of what was sent and what arrived.
    #[serde(default)]
    pub verify: bool,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            test: TestKind::TcpStream,
            msg: 16384,
            req: 1,
            resp: 1,
            local_buf: None,
            remote_buf: None,
            duration: 10.0,
            warmup: 0.5,
            parallel: 1,
            rate: None,
            nodelay: false,
            zerocopy: false,
            interval: 1.0,
            bytes: None,
            verify: false,
        }
    }
}

impl Spec {
    /// Checks every field, whether it came from the command line or a control connection: each
    /// size, count and rate within its bounds before anything is allocated.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_MSG).contains(&self.msg) || !(1..=MAX_MSG).contains(&self.req) || !(1..=MAX_MSG).contains(&self.resp) {
            return Err(format!("-m and -r sizes: use 1 byte to {}M", MAX_MSG >> 20));
        }
        if (1..=256).contains(&self.parallel) && self.msg.max(self.req).max(self.resp) * self.parallel as usize > MAX_BUFFERS {
            return Err(format!("-m × -P asks for more than {}M of buffers: use smaller messages or fewer streams", MAX_BUFFERS >> 20));
        }
        if let Some(r) = self.rate {
            if !(1000..=10_000_000_000_000).contains(&r) {
                return Err(format!("--rate {r} bit/s: use 1kbit to 10tbit"));
            }
        }
        if self.bytes.is_some_and(|b| b > MAX_BYTES) {
            return Err("--bytes: at most 1T per stream".into());
        }
        if !(0.1..=3600.0).contains(&self.duration) || !self.duration.is_finite() {
            return Err(format!("-l {}: use 0.1 to 3600 seconds", self.duration));
        }
        if !(0.0..=60.0).contains(&self.warmup) {
            return Err(format!("--warmup {}: use 0 to 60 seconds", self.warmup));
        }
        if !(1..=256).contains(&self.parallel) {
            return Err(format!("-P {}: use 1 to 256 parallel streams", self.parallel));
        }
        if !(0.01..=60.0).contains(&self.interval) {
            return Err(format!("--interval {}: use 0.01 to 60 seconds", self.interval));
        }
        if self.test.is_udp() && (self.msg > 65507 || self.req > 65507 || self.resp > 65507) {
            return Err("UDP messages hold at most 65507 bytes: use a smaller -m / -r".into());
        }
        if self.test == TestKind::UdpStream && self.msg < 8 {
            return Err("UDP_STREAM needs -m of at least 8 bytes (each datagram carries its sequence number)".into());
        }
        if (self.bytes.is_some() || self.verify) && !matches!(self.test, TestKind::TcpStream | TestKind::TcpMaerts) {
            return Err("--bytes and --verify are for TCP_STREAM and TCP_MAERTS".into());
        }
        if self.bytes == Some(0) {
            return Err("--bytes 0: send at least one byte".into());
        }
        if self.zerocopy && self.test.is_rr() {
            return Err("--zerocopy is for stream tests".into());
        }
        for b in [self.local_buf, self.remote_buf].into_iter().flatten() {
            if b > (1 << 30) {
                return Err("socket buffers hold at most 1G".into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_like_netperf() {
        assert_eq!(parse_size("64").unwrap(), 64);
        assert_eq!(parse_size("1K").unwrap(), 1024);
        assert_eq!(parse_size("128k").unwrap(), 131072);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        for bad in ["0", "2G", "-1", "", "K", "1.5K", "99999999999999999999", "1T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_rr("1,1").unwrap(), (1, 1));
        assert_eq!(parse_rr("64,1K").unwrap(), (64, 1024));
        assert!(parse_rr("1").is_err());
    }

    #[test]
    fn test_names_parse_and_print() {
        assert_eq!("tcp_rr".parse::<TestKind>().unwrap(), TestKind::TcpRr);
        assert_eq!(TestKind::TcpMaerts.to_string(), "TCP_MAERTS");
        assert!("TCP_SENDFILE".parse::<TestKind>().unwrap_err().contains("TCP_STREAM"));
        assert!(!TestKind::TcpMaerts.initiator_sends());
    }

    #[test]
    fn specs_are_checked() {
        Spec::default().validate().unwrap();
        assert!(Spec { duration: 0.0, ..Default::default() }.validate().is_err());
        assert!(Spec { test: TestKind::UdpStream, msg: 70000, ..Default::default() }.validate().is_err());
        assert!(Spec { parallel: 0, ..Default::default() }.validate().is_err());
        assert!(Spec { test: TestKind::TcpRr, zerocopy: true, ..Default::default() }.validate().is_err());
        // What a control connection could ask: absurd sizes, zero-byte RR, rate 0.
        for bad in [
            Spec { msg: 1 << 62, ..Default::default() },
            Spec { test: TestKind::TcpRr, req: 1 << 40, ..Default::default() },
            Spec { test: TestKind::TcpRr, req: 0, resp: 0, ..Default::default() },
            Spec { rate: Some(0), ..Default::default() },
            Spec { msg: 16 << 20, parallel: 256, ..Default::default() },
            Spec { duration: f64::NAN, ..Default::default() },
            Spec { bytes: Some(u64::MAX), ..Default::default() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
