//! TCP_INFO from a socket: congestion window, RTT, retransmits and the advertised receive window
//! (paper 2's window trace). The struct mirrors the kernel's up to `tcpi_rcv_wnd` (Linux 6.2+);
//! older kernels return less, and the window then falls back to `rcv_space`.

use serde::{Deserialize, Serialize};
use std::os::fd::RawFd;

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

pub struct Info {
    pub cwnd: u32,
    pub rcv_wnd: u32,
    pub rtt_us: u32,
    pub total_retrans: u32,
}

pub fn read(fd: RawFd) -> Option<Info> {
    let (ti, has_rcv_wnd) = crate::sys::sock::tcp_info(fd)?;
    Some(Info {
        cwnd: ti.snd_cwnd,
        rcv_wnd: if has_rcv_wnd {
            ti.rcv_wnd
        } else {
            ti.rcv_space
        },
        rtt_us: ti.rtt,
        total_retrans: ti.total_retrans,
    })
}
