//! The traffic engine: netperf-class tests (TCP_STREAM, TCP_MAERTS, UDP_STREAM, TCP_RR, UDP_RR,
//! TCP_CRR) and VDI sessions between agents. It knows nothing of labs: callers start agents (in-process, as child
//! processes, or over TCP) and say which addresses connect.

pub mod agent;
pub mod controller;
pub mod flows;
pub mod intervals;
pub mod pacer;
pub mod proto;
pub mod reach;
pub mod serve;
pub mod sockets;
pub mod spec;
pub mod tcpinfo;
pub mod vdi;
pub mod vdi_result;
pub mod vdi_session;

/// Why the engine could not run a test. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The test as asked cannot run (a bad spec, token or address): nothing was sent.
    #[error("{0}")]
    Input(String),
    /// An agent, a socket or the peer failed while the test ran, or did not answer in time.
    #[error("{0}")]
    Failed(String),
    /// A socket or pipe of the engine's own failed (its kind kept for the caller to read).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// SIGINT/SIGTERM stopped the test.
    #[error("interrupted")]
    Interrupted,
}
