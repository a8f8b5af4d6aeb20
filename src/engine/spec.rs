//! What a test asks for: netperf's test names, sizes, duration, parallelism and pacing, parsed
//! and checked. Plain data shared by the driver and the agents.

use super::Error;
use serde::{Deserialize, Serialize};

use crate::vocab::{Congestion, Pacing, TestKind};

/// The largest message, request or response: a buffer of it is allocated per stream.
pub const MAX_MSG: usize = 64 << 20;
/// The most buffer memory one side's streams may ask for (message size × parallel streams).
pub const MAX_BUFFERS: usize = 256 << 20;
/// The smallest socket buffer a test may ask for (-s, -S); the kernel's own floor is about 4 KB.
pub const MIN_SOCKBUF: usize = 1024;
/// The slowest and fastest pace a stream or connection may ask for, bits/s (docs/traffic.md: 1 kbit/s to
/// 10 Tbit/s).
pub const MIN_RATE: u64 = 1_000;
pub const MAX_RATE: u64 = 10_000_000_000_000;
/// The most bytes `--bytes` may send per stream.
pub const MAX_BYTES: u64 = 1 << 40;

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
    /// How a paced stream meets its rate: the application's 1 ms ticks, or the kernel's pacing.
    #[serde(default)]
    pub pacing: Pacing,
    /// TCP congestion control of every data connection (set per socket; default cubic).
    #[serde(default)]
    pub congestion: Congestion,
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
    /// Both ways at once (iperf3's --bidir): every pair also runs its stream reversed, on
    /// connections of its own.
    #[serde(default)]
    pub bidir: bool,
    /// VDI: each desktop's session workload (one stream per desktop, `parallel` desktops).
    #[serde(default)]
    pub vdi: Option<super::vdi::profile::VdiSpec>,
    /// The agent reports its machine's CPU over the window (the driver asks agents on other
    /// machines).
    #[serde(default)]
    pub report_cpu: bool,
    /// VDI: this agent's clock less the engine's, ns (0 on one machine): a frame's delay is its
    /// arrival less this less its send time.
    #[serde(default)]
    pub clock_offset_ns: i64,
    /// The test's data key: every data connection opens with it (TCP streams in their preamble,
    /// TCP_CRR before each request, UDP in each datagram), so a stranger that reaches a data
    /// port is dropped, not counted. Set by the driver per test; 0 in a request from an older
    /// driver.
    #[serde(default)]
    pub key: u64,
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
            pacing: Pacing::App,
            congestion: Congestion::default(),
            nodelay: false,
            zerocopy: false,
            interval: 1.0,
            bytes: None,
            verify: false,
            bidir: false,
            vdi: None,
            report_cpu: false,
            clock_offset_ns: 0,
            key: 0,
        }
    }
}

impl Spec {
    // Long on purpose: one bound per field, in the field order of `Spec`.
    /// Checks every field, whether it came from the command line or a control connection: each
    /// size, count and rate within its bounds before anything is allocated.
    pub fn validate(&self) -> Result<(), Error> {
        if !(1..=MAX_MSG).contains(&self.msg)
            || !(1..=MAX_MSG).contains(&self.req)
            || !(1..=MAX_MSG).contains(&self.resp)
        {
            return Err(Error::Input(format!(
                "-m and -r sizes: use 1 byte to {}M",
                MAX_MSG >> 20
            )));
        }
        if (1..=256).contains(&self.parallel)
            && self.msg.max(self.req).max(self.resp) * self.parallel as usize > MAX_BUFFERS
        {
            return Err(Error::Input(format!(
                "-m × -P asks for more than {}M of buffers: use smaller messages or fewer streams",
                MAX_BUFFERS >> 20
            )));
        }
        if let Some(r) = self.rate {
            // A paced RR test's rate is its transactions' bytes (--tps 1 of 1-byte requests and
            // responses is 16 bit/s); a stream's is a rate as `--rate` takes it.
            let min = if self.test.is_rr() { 8 } else { MIN_RATE };
            if !(min..=MAX_RATE).contains(&r) {
                return Err(Error::Input(format!(
                    "--rate {r} bit/s: use 1kbit to 10tbit (RR tests: --tps 1 or more)"
                )));
            }
        }
        if self.pacing == Pacing::Kernel
            && (self.rate.is_none()
                || !matches!(
                    self.test,
                    TestKind::TcpStream | TestKind::TcpMaerts | TestKind::UdpStream
                ))
        {
            return Err(Error::Input(
                "--pacing kernel paces streams: use it with --rate and TCP_STREAM, TCP_MAERTS or UDP_STREAM".into(),
            ));
        }
        if self.bytes.is_some_and(|b| b > MAX_BYTES) {
            return Err(Error::Input("--bytes: at most 1T per stream".into()));
        }
        if !(0.1..=3600.0).contains(&self.duration) || !self.duration.is_finite() {
            return Err(Error::Input(format!(
                "-l {}: use 0.1 to 3600 seconds",
                self.duration
            )));
        }
        if !(0.0..=60.0).contains(&self.warmup) {
            return Err(Error::Input(format!(
                "--warmup {}: use 0 to 60 seconds",
                self.warmup
            )));
        }
        if !(1..=256).contains(&self.parallel) {
            return Err(Error::Input(format!(
                "-P {}: use 1 to 256 parallel streams",
                self.parallel
            )));
        }
        if !(0.01..=60.0).contains(&self.interval) {
            return Err(Error::Input(format!(
                "--interval {}: use 0.01 to 60 seconds",
                self.interval
            )));
        }
        if self.test.is_udp() && (self.msg > 65507 || self.req > 65507 || self.resp > 65507) {
            return Err(Error::Input(
                "UDP messages hold at most 65507 bytes: use a smaller -m / -r".into(),
            ));
        }
        if self.test == TestKind::UdpStream && self.msg < 8 {
            return Err(Error::Input("UDP_STREAM needs -m of at least 8 bytes (each datagram carries its sequence number)".into()));
        }
        if (self.bytes.is_some() || self.verify)
            && !matches!(self.test, TestKind::TcpStream | TestKind::TcpMaerts)
        {
            return Err(Error::Input(
                "--bytes and --verify are for TCP_STREAM and TCP_MAERTS".into(),
            ));
        }
        if self.bidir && self.test.reversed().is_none() {
            return Err(Error::Input(
                "--bidir runs a stream both ways: use it with TCP_STREAM or TCP_MAERTS".into(),
            ));
        }
        if self.bytes == Some(0) {
            return Err(Error::Input("--bytes 0: send at least one byte".into()));
        }
        if self.zerocopy && self.test.is_rr() {
            return Err(Error::Input("--zerocopy is for stream tests".into()));
        }
        match (&self.vdi, self.test == TestKind::Vdi) {
            (Some(v), true) => v.validate()?,
            (None, true) => return Err(Error::Input("-t VDI needs a --profile".into())),
            (Some(_), false) => {
                return Err(Error::Input("--profile is for -t VDI".into()));
            }
            (None, false) => {}
        }
        for b in [self.local_buf, self.remote_buf].into_iter().flatten() {
            if !(MIN_SOCKBUF..=(1 << 30)).contains(&b) {
                return Err(Error::Input(format!(
                    "socket buffer of {b} bytes: use 1K to 1G (-s, -S)"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_checked() {
        Spec::default().validate().unwrap();
        Spec {
            bidir: true,
            ..Default::default()
        }
        .validate()
        .unwrap();
        assert!(Spec {
            bidir: true,
            test: TestKind::TcpRr,
            ..Default::default()
        }
        .validate()
        .is_err());
        assert!(Spec {
            duration: 0.0,
            ..Default::default()
        }
        .validate()
        .is_err());
        assert!(Spec {
            test: TestKind::UdpStream,
            msg: 70000,
            ..Default::default()
        }
        .validate()
        .is_err());
        assert!(Spec {
            parallel: 0,
            ..Default::default()
        }
        .validate()
        .is_err());
        assert!(Spec {
            test: TestKind::TcpRr,
            zerocopy: true,
            ..Default::default()
        }
        .validate()
        .is_err());
        // What a control connection could ask: absurd sizes, zero-byte RR, rate 0.
        for bad in [
            Spec {
                msg: 1 << 62,
                ..Default::default()
            },
            Spec {
                test: TestKind::TcpRr,
                req: 1 << 40,
                ..Default::default()
            },
            Spec {
                test: TestKind::TcpRr,
                req: 0,
                resp: 0,
                ..Default::default()
            },
            Spec {
                rate: Some(0),
                ..Default::default()
            },
            Spec {
                msg: 16 << 20,
                parallel: 256,
                ..Default::default()
            },
            Spec {
                duration: f64::NAN,
                ..Default::default()
            },
            Spec {
                bytes: Some(u64::MAX),
                ..Default::default()
            },
            Spec {
                remote_buf: Some(0),
                ..Default::default()
            },
            Spec {
                rate: Some(8),
                ..Default::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
