//! `test -J`: a test's result shaped as iperf3's JSON (`start`, `intervals[].streams`/`sum`,
//! `end.sum_sent`/`sum_received`/`cpu_utilization_percent`, or an `error` document), so the
//! tools a farm already feeds iperf3's output read vnetlab's; vnetlab's own document sits
//! beside it under `vnetlab`. vnetlab measures the streams' sum per interval, not each stream's:
//! an interval lists its one stream where there is one, none where there are several.

use serde::Serialize;

use crate::records::measured::Measured;

/// The document.
#[derive(Serialize)]
pub struct Doc<'a> {
    pub start: Start,
    pub intervals: Vec<Interval>,
    pub end: End,
    /// vnetlab's own result, whole.
    pub vnetlab: &'a Measured,
}

/// What ran, where and when.
#[derive(Serialize, Clone)]
pub struct Start {
    pub version: String,
    pub system_info: String,
    pub timestamp: Timestamp,
    pub connecting_to: Connecting,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_start: Option<TestStart>,
}

#[derive(Serialize, Clone)]
pub struct Timestamp {
    pub time: String,
    pub timesecs: i64,
}

/// The far end: the `-H` address and port, or the lab's endpoint.
#[derive(Serialize, Clone)]
pub struct Connecting {
    pub host: String,
    pub port: u16,
}

#[derive(Serialize, Clone)]
pub struct TestStart {
    pub protocol: &'static str,
    pub num_streams: u32,
    pub blksize: usize,
    pub omit: f64,
    pub duration: f64,
    pub bytes: u64,
    pub blocks: u64,
    pub reverse: u8,
}

/// One span of the window: its streams and their sum.
#[derive(Serialize)]
pub struct Interval {
    pub streams: Vec<Span>,
    pub sum: Span,
}

/// Bytes over a span of time, as iperf3 reports a stream or a sum.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Span {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket: Option<u32>,
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    pub omitted: bool,
    pub sender: bool,
}

#[derive(Serialize)]
pub struct End {
    pub streams: Vec<EndStream>,
    pub sum_sent: Span,
    pub sum_received: Span,
    pub cpu_utilization_percent: Cpu,
}

#[derive(Serialize)]
pub struct EndStream {
    pub receiver: Span,
}

/// CPU, % : `host` is this machine (where vnetlab ran), `remote` the far end (a `vnetlab
/// serve`'s machine, or the lab's client cores); a share vnetlab did not measure is null.
#[derive(Serialize, Default)]
pub struct Cpu {
    pub host_total: Option<f64>,
    pub host_user: Option<f64>,
    pub host_system: Option<f64>,
    pub remote_total: Option<f64>,
    pub remote_user: Option<f64>,
    pub remote_system: Option<f64>,
}

/// The document of a test that failed.
#[derive(Serialize)]
pub struct ErrorDoc {
    pub start: Start,
    pub intervals: Vec<Interval>,
    pub end: EmptyEnd,
    pub error: String,
}

#[derive(Serialize, Default)]
pub struct EmptyEnd {}

/// What ran, from the command line, before the test.
pub fn start(host: &str, port: u16) -> Start {
    let now = jiff::Timestamp::now();
    let read = |k: &str| {
        crate::text::read_capped(std::path::Path::new(&format!("/proc/sys/kernel/{k}")), 512)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    Start {
        version: format!("vnetlab {}", env!("CARGO_PKG_VERSION")),
        system_info: format!(
            "{} {} {} {} {}",
            read("ostype"),
            read("hostname"),
            read("osrelease"),
            read("version"),
            std::env::consts::ARCH
        ),
        timestamp: Timestamp {
            time: now.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string(),
            timesecs: now.as_second(),
        },
        connecting_to: Connecting {
            host: host.into(),
            port,
        },
        test_start: None,
    }
}

fn span(start: f64, end: f64, gbps: f64, sender: bool) -> Span {
    let seconds = (end - start).max(0.0);
    Span {
        socket: None,
        start,
        end,
        seconds,
        bytes: (gbps * 1e9 * seconds / 8.0).round() as u64,
        bits_per_second: gbps * 1e9,
        retransmits: None,
        omitted: false,
        sender,
    }
}

/// The result as iperf3 shapes it, vnetlab's own beside.
pub fn document(m: &Measured, start: Start) -> Doc<'_> {
    let r = &m.result;
    let one = (r.streams.len() == 1).then(|| r.streams[0].id);
    let mut t0 = 0.0;
    let intervals = r
        .intervals
        .iter()
        .map(|i| {
            let sum = span(t0, i.t, i.gbps, true);
            t0 = i.t;
            let streams = one
                .map(|id| Span {
                    socket: Some(id),
                    ..sum.clone()
                })
                .into_iter()
                .collect();
            Interval { streams, sum }
        })
        .collect();
    let received = Span {
        bytes: r.streams.iter().map(|s| s.bytes).sum(),
        ..span(0.0, r.duration_s, r.throughput_gbps, false)
    };
    let sent = Span {
        bytes: r.transfer.as_ref().map_or(received.bytes, |t| t.bytes_sent),
        retransmits: r.tcp_retransmits,
        sender: true,
        ..received.clone()
    };
    let streams = r
        .streams
        .iter()
        .map(|s| EndStream {
            receiver: Span {
                socket: Some(s.id),
                bytes: s.bytes,
                ..span(0.0, r.duration_s, s.gbps, false)
            },
        })
        .collect();
    Doc {
        start: Start {
            test_start: Some(TestStart {
                protocol: if r.test.is_udp() { "UDP" } else { "TCP" },
                num_streams: r.parallel,
                blksize: r.message_bytes,
                omit: r.warmup_s,
                duration: r.duration_s,
                bytes: 0,
                blocks: 0,
                reverse: 0,
            }),
            ..start
        },
        intervals,
        end: End {
            streams,
            sum_sent: sent,
            sum_received: received,
            cpu_utilization_percent: cpu(m),
        },
        vnetlab: m,
    }
}

/// This machine's CPU and the far end's, as far as vnetlab measured them.
fn cpu(m: &Measured) -> Cpu {
    let mut c = Cpu::default();
    if let Some(r) = &m.cpu {
        c.host_total = Some(r.machine_busy_pct);
        c.host_user = r.split_pct.get("user").copied();
        c.host_system = r.split_pct.get("system").copied();
        c.remote_total = r.client_busy_pct;
    }
    if let Some(remote) = m.result.remote_cpu.first() {
        c.remote_total = Some(remote.cpu.busy_pct);
    }
    c
}

/// A failed test's document.
pub fn error(start: Start, why: &str) -> ErrorDoc {
    ErrorDoc {
        start,
        intervals: vec![],
        end: EmptyEnd {},
        error: why.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_and_sums_carry_bytes_and_bits_per_second() {
        let s = span(1.0, 1.5, 8.0, true);
        assert_eq!(
            (s.seconds, s.bytes, s.bits_per_second),
            (0.5, 500_000_000, 8e9)
        );
        let e = error(start("127.0.0.1", 12866), "no serve");
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["error"], "no serve");
        assert!(v["start"]["timestamp"]["timesecs"].as_i64().unwrap() > 1_700_000_000);
        assert_eq!(v["end"], serde_json::json!({}));
    }
}
