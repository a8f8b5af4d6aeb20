//! The traffic engine: netperf-class tests (TCP_STREAM, TCP_MAERTS, UDP_STREAM, TCP_RR, UDP_RR,
//! TCP_CRR) between agents. It knows nothing of labs: callers start agents (in-process, as child
//! processes, or over TCP) and say which addresses connect.

pub mod agent;
pub mod controller;
pub mod flows;
pub mod intervals;
pub mod pacer;
pub mod proto;
pub mod serve;
pub mod sockets;
pub mod spec;
pub mod tcpinfo;
