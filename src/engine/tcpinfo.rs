//! TCP_INFO from a socket: congestion window, RTT, retransmits and the advertised receive window
//! (paper 2's window trace). The struct mirrors the kernel's up to `tcpi_rcv_wnd` (Linux 6.2+);
//! older kernels return less, and the window then falls back to `rcv_space`.

use serde::{Deserialize, Serialize};
use std::os::fd::RawFd;

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct KernelTcpInfo {
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    flags: u8,
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    busy_time: u64,
    rwnd_limited: u64,
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
    dsack_dups: u32,
    reord_seen: u32,
    rcv_ooopack: u32,
    snd_wnd: u32,
    rcv_wnd: u32,
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

pub struct Info {
    pub cwnd: u32,
    pub rcv_wnd: u32,
    pub rtt_us: u32,
    pub total_retrans: u32,
}

pub fn read(fd: RawFd) -> Option<Info> {
    let mut ti = KernelTcpInfo::default();
    let mut len = std::mem::size_of::<KernelTcpInfo>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes (the struct's size) into `ti` and says in `len` how many.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut ti as *mut KernelTcpInfo).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return None;
    }
    let has_rcv_wnd = len as usize >= std::mem::size_of::<KernelTcpInfo>();
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
