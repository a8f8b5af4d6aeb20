//! TCP_INFO from a socket: congestion window, RTT, retransmits and the advertised receive window
//! (paper 2's window trace). The struct mirrors the kernel's up to `tcpi_rcv_wnd` (Linux 6.2+);
//! older kernels return less, and the window then falls back to `rcv_space`.

use std::os::fd::RawFd;

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
