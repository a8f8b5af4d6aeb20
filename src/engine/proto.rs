//! The control protocol between the driver and its agents: one JSON object per line, over a
//! pipe (agents started in namespaces), a socketpair (in-process) or TCP with a token.

use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};

use super::spec::Spec;
use crate::records::test::{MachineCpu, TcpSample};

#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// First line of a session: a TCP control connection's (with its token), a QEMU guest's.
    Hello {
        token: String,
        /// A number the agent echoes in `Reply::Welcome`. A QEMU guest's virtio-serial port
        /// outlives its sessions, and replies an earlier session never read (a readiness probe
        /// that gave up waiting) are still queued on it: the driver reads past them to its own.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nonce: Option<u64>,
    },
    /// Become the server side of a test: listen on `bind` (within `ports` if given) for `streams`.
    Listen {
        spec: Spec,
        bind: IpAddr,
        ports: Option<[u16; 2]>,
        streams: u32,
        first_id: u32,
    },
    /// Become the initiator: connect `streams` streams to `to` (one address per stream for UDP).
    Connect {
        spec: Spec,
        to: Vec<SocketAddr>,
        first_id: u32,
    },
    /// Run everything prepared, now; reply with the report when done.
    Run,
    /// The agent's CLOCK_MONOTONIC, for the driver to measure the offset between two machines.
    Time,
    Quit,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    Ok,
    /// The answer to a hello that carried a nonce.
    Welcome {
        nonce: u64,
    },
    Listening {
        ports: Vec<u16>,
    },
    Report {
        report: SideReport,
    },
    Time {
        mono_ns: u64,
    },
    Error {
        error: String,
        /// The request itself is at fault (it can never be served as asked): the client
        /// refuses it as bad input (exit 2), not as a failure to try again.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        input: bool,
    },
}

impl Reply {
    /// A failure on the serving side.
    pub fn error(error: impl Into<String>) -> Reply {
        Reply::Error {
            error: error.into(),
            input: false,
        }
    }

    /// A refusal of the request as asked.
    pub fn refusal(error: impl Into<String>) -> Reply {
        Reply::Error {
            error: error.into(),
            input: true,
        }
    }
}

/// What one stream did, as one agent saw it.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct StreamReport {
    pub id: u32,
    /// Whether this side received the bulk data (its bytes are the ones that count).
    pub receiver: bool,
    /// Bytes received inside the measured window (receivers).
    pub window_bytes: u64,
    /// All bytes sent or received.
    pub total_bytes: u64,
    /// UDP datagrams sent or received.
    pub datagrams: u64,
    /// Sender's TCP retransmissions.
    pub retrans: u64,
    /// RR: transactions completed inside the window, and lost (UDP_RR timeouts).
    pub transactions: u64,
    pub lost: u64,
    /// MSG_ZEROCOPY sends completed, and how many of them the kernel copied after all.
    pub zc_completed: u64,
    pub zc_copied: u64,
    /// --verify: SHA-256 of every byte sent (sender) or received (receiver).
    pub sha256: Option<String>,
    /// Seconds from the first byte to the end of the stream (receivers).
    pub active_s: f64,
    /// VDI: what this side of a desktop's session saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vdi: Option<VdiReport>,
}

/// One side of a desktop's VDI session, inside the measured window.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct VdiReport {
    pub target_fps: f64,
    /// Frames sent (engine) or arrived whole (client).
    pub frames: u64,
    /// Engine: changes of the desktop's own that got no update of their own (one was due and held
    /// back by acknowledgements, or the engine was busy sending).
    pub skipped: u64,
    /// Engine: updates the session asked for in the window (those sent and those skipped).
    #[serde(default)]
    pub due: u64,
    /// Client: frames whose delay exceeded one frame interval.
    pub late: u64,
    pub bytes_screen: u64,
    /// Input events and acknowledgements, client to engine.
    pub bytes_input: u64,
    /// USB bytes this side received and sent.
    pub usb_in: u64,
    pub usb_out: u64,
    /// Client: frame delay and input-to-screen latency, ns, as (value, count) pairs.
    pub frame_delay_ns: Vec<(u64, u64)>,
    pub input_latency_ns: Vec<(u64, u64)>,
    /// Client: input events dropped unanswered from a full log.
    pub inputs_unanswered: u64,
    /// Engine: its session threads' own CPU seconds (vnetlab's work: pacing, headers) and the
    /// kernel's on their behalf (the sends and receives), over `session_s` seconds.
    #[serde(default)]
    pub engine_user_s: f64,
    #[serde(default)]
    pub engine_sys_s: f64,
    #[serde(default)]
    pub session_s: f64,
}

#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct SideReport {
    pub streams: Vec<StreamReport>,
    /// Received bytes per 10 ms bucket inside the window, summed over this side's streams.
    pub buckets: Vec<u64>,
    /// RR latency histogram (ns) as (value, count) pairs, for merging.
    pub latency_ns: Vec<(u64, u64)>,
    pub tcp_info: Vec<TcpSample>,
    pub errors: Vec<String>,
    /// The agent's machine's CPU over the window, when the driver asked (`Spec::report_cpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_cpu: Option<MachineCpu>,
}

/// The longest request line an agent reads (requests are small: a spec and some addresses).
pub const MAX_REQUEST: usize = 1 << 20;
/// The longest reply line the driver reads (a report with its histogram and TCP_INFO samples).
pub const MAX_REPLY: usize = 64 << 20;

/// Reads one line of at most `max` bytes (without the newline). A longer line is an error: its
/// bytes are never all held. Ok(None) at the end of input.
pub fn read_line(r: &mut impl std::io::BufRead, max: usize) -> std::io::Result<Option<String>> {
    let mut line = Vec::new();
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok((!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned()));
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (buf.len(), false),
        };
        if line.len() + take > max {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a control line longer than {max} bytes"),
            ));
        }
        line.extend_from_slice(&buf[..take]);
        r.consume(if done { take + 1 } else { take });
        if done {
            return Ok(Some(String::from_utf8_lossy(&line).into_owned()));
        }
    }
}

/// The 8 bytes that open every TCP data connection: magic and stream id.
pub const MAGIC: u32 = 0x766e_6c31; // "vnl1"

/// What a TCP data connection sends first: the magic, its stream id and the test's key.
pub const PREAMBLE: usize = 16;

pub fn preamble(id: u32, key: u64) -> [u8; PREAMBLE] {
    let mut b = [0u8; PREAMBLE];
    b[..4].copy_from_slice(&MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&id.to_be_bytes());
    b[8..].copy_from_slice(&key.to_be_bytes());
    b
}

/// The stream id of a preamble with the magic and this test's key (compared in constant time).
pub fn parse_preamble(b: &[u8; PREAMBLE], key: u64) -> Option<u32> {
    let magic = u32::from_be_bytes(b[..4].try_into().unwrap()) == MAGIC;
    let keyed = constant_time_eq(&b[8..], &key.to_be_bytes());
    (magic & keyed).then(|| u32::from_be_bytes(b[4..8].try_into().unwrap()))
}

/// Whether two tokens are equal, in time that does not depend on where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preamble_round_trips_and_rejects_strangers() {
        assert_eq!(parse_preamble(&preamble(42, 7), 7), Some(42));
        assert_eq!(parse_preamble(b"GET / HTTP/1.1\r\n", 7), None);
        // The magic without the test's key is a stranger's.
        assert_eq!(parse_preamble(&preamble(42, 8), 7), None);
    }

    #[test]
    fn lines_are_read_within_a_bound() {
        let mut r = std::io::BufReader::with_capacity(4, &b"ab\ncdefgh\nij"[..]);
        assert_eq!(read_line(&mut r, 10).unwrap().as_deref(), Some("ab"));
        assert_eq!(read_line(&mut r, 10).unwrap().as_deref(), Some("cdefgh"));
        assert_eq!(read_line(&mut r, 10).unwrap().as_deref(), Some("ij"));
        assert_eq!(read_line(&mut r, 10).unwrap(), None);
        // An endless line is refused once it passes the bound, without holding it all.
        let mut z = std::io::BufReader::new(std::io::Read::take(std::io::repeat(b'x'), 1 << 30));
        assert!(read_line(&mut z, 1 << 16).is_err());
    }

    #[test]
    fn requests_are_json_lines() {
        let r = Request::Run;
        assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"op":"run"}"#);
        let back: Request = serde_json::from_str(r#"{"op":"hello","token":"x"}"#).unwrap();
        assert!(matches!(back, Request::Hello { token, nonce: None } if token == "x"));
    }
}
