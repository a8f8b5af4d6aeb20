//! A test's result as the engine returns it and the stored document keeps it: the streams, the
//! throughput per interval, latency, TCP samples, what an agent on another machine measured of its
//! machine's CPU, and (VDI) each desktop's session. Plain records: the engine fills them
//! (`engine::controller`), the report and the store read them.

use serde::{Deserialize, Serialize};

use super::vdi::VdiResult;
use crate::vocab::TestKind;

/// One stream of a test: who sent to whom, its rate over the window and the bytes it moved.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct StreamResult {
    pub id: u32,
    pub from: String,
    pub to: String,
    pub gbps: f64,
    pub bytes: u64,
}

/// A request/response test's transaction latency, microseconds.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

/// MSG_ZEROCOPY: sends completed, and the share the kernel copied anyway (loopback, veth).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ZeroCopy {
    pub sends_completed: u64,
    pub copied_pct: f64,
}

/// --bytes/--verify: bytes each way and, with --verify, the SHA-256 of each stream's bytes at
/// both ends (comma-separated, by stream id).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Transfer {
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub sent_sha256: Option<String>,
    pub received_sha256: Option<String>,
    /// Every byte sent arrived (and, verified, the hashes agree).
    #[serde(rename = "match")]
    pub matches: bool,
}

/// A test's result: what ran, the throughput and its streams and intervals, latency, loss, TCP's
/// samples (the body of a `Measured`, flattened into it).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct TestResult {
    /// What moved the bytes: vnetlab's engine, or a stock iperf3 (`test --peer iperf3`).
    #[serde(default)]
    pub engine: crate::vocab::Engine,
    pub test: TestKind,
    /// --bidir: the test ran both ways at once; `streams` and `per_source_gbps` give each way,
    /// `throughput_gbps` their sum.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub bidir: bool,
    pub from: String,
    pub to: String,
    pub message_bytes: usize,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub parallel: u32,
    /// Paced streams (`--rate`): each stream's rate, bits/s, and how it was met.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pacing: Option<PacedStreams>,
    /// TCP tests: the congestion control every data connection ran (set and read back on each
    /// socket).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub congestion: Option<crate::vocab::Congestion>,
    pub throughput_gbps: f64,
    pub streams: Vec<StreamResult>,
    /// Per sender (e.g. per guest with --from guests): summed Gb/s.
    pub per_source_gbps: std::collections::BTreeMap<String, f64>,
    pub intervals: Vec<Interval>,
    pub transactions_per_s: Option<f64>,
    pub latency_us: Option<Latency>,
    pub udp_loss_pct: Option<f64>,
    pub tcp_retransmits: Option<u64>,
    pub tcp_info: Vec<TcpSample>,
    /// MSG_ZEROCOPY: sends completed and the share the kernel copied anyway.
    pub zerocopy: Option<ZeroCopy>,
    /// --bytes/--verify: what was sent and received, and whether the hashes match.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub transfer: Option<Transfer>,
    /// Agents on other machines (`vnetlab serve`): each one's machine's CPU over the window.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub remote_cpu: Vec<RemoteCpu>,
    /// Senders whose streams moved nothing in the measured window (the host could not drive
    /// them all): named, never averaged away.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub starved: Vec<String>,
    /// VDI: each desktop's session and their total.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub vdi: Option<VdiResult>,
}

/// Paced streams: each stream's rate, bits/s, and how it was met.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PacedStreams {
    pub rate_bps: u64,
    pub mode: crate::vocab::Pacing,
}

/// An agent on another machine and its machine's CPU over the window.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct RemoteCpu {
    pub agent: String,
    #[serde(flatten)]
    pub cpu: MachineCpu,
}

/// The busy time of the machine an agent runs on, over the measured window (a `vnetlab serve`
/// on the client machine measures its own, so the client's CPU is never the host's).
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct MachineCpu {
    pub ncpu: usize,
    /// Busy share of all its cores, %, and in cores.
    pub busy_pct: f64,
    pub busy_cores: f64,
    /// Its busiest core, % (a single-threaded receiver saturates one core of many).
    pub max_core_pct: f64,
    pub window_s: f64,
}

/// One interval of the measured window: its end and the throughput inside it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Interval {
    /// End of the interval, seconds after the warm-up.
    pub t: f64,
    pub gbps: f64,
}

/// One sample, as reported in a test's `tcp_info`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TcpSample {
    /// Seconds after the warm-up (negative inside it).
    pub t: f64,
    pub cwnd: u32,
    /// The receiver's advertised window in bytes (rcv_space where the kernel lacks rcv_wnd).
    pub rcv_wnd: u32,
    pub rtt_us: u32,
}
