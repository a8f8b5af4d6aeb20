//! Socket calls the standard library and socket2 lack: TCP_INFO, MSG_ZEROCOPY sends and their
//! completions from the error queue, and a one-fd poll.

use std::io;
use std::os::fd::RawFd;

/// struct tcp_info of linux/tcp.h up to `tcpi_rcv_wnd` (Linux 6.2+); older kernels fill less.
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub struct TcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub flags: u8,
    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    pub rtt: u32,
    pub rttvar: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    pub delivery_rate: u64,
    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,
    pub rcv_ooopack: u32,
    pub snd_wnd: u32,
    pub rcv_wnd: u32,
}

/// TCP_INFO of a TCP socket, and whether the kernel filled it up to `rcv_wnd`.
pub fn tcp_info(fd: RawFd) -> Option<(TcpInfo, bool)> {
    let mut ti = TcpInfo::default();
    let mut len = std::mem::size_of::<TcpInfo>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes (the struct's size) into `ti`, which outlives the call, and says in `len` how many.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut ti as *mut TcpInfo).cast(),
            &mut len,
        )
    };
    (r == 0).then_some((ti, len as usize >= std::mem::size_of::<TcpInfo>()))
}

/// Sets SO_ZEROCOPY on a socket.
pub fn set_zerocopy(fd: RawFd) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: `one` is a c_int that outlives the call and the length passed is its size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ZEROCOPY,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as u32,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// SO_MAX_PACING_RATE (asm-generic/socket.h; the same on every architecture Linux runs vnetlab on
/// but alpha, mips, parisc and sparc, which vnetlab does not target).
const SO_MAX_PACING_RATE: libc::c_int = 47;

/// Caps the socket's pacing rate at `bytes_per_s` (SO_MAX_PACING_RATE, 64-bit since Linux 4.20):
/// TCP paces with its internal timer, or the fq qdisc paces where the sending device has one.
pub fn set_max_pacing_rate(fd: RawFd, bytes_per_s: u64) -> io::Result<()> {
    let v: u64 = bytes_per_s;
    // SAFETY: `v` is a u64 that outlives the call and the length passed is its size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            SO_MAX_PACING_RATE,
            (&v as *const u64).cast(),
            std::mem::size_of::<u64>() as u32,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// send(2) with MSG_ZEROCOPY: the kernel pins `buf`'s pages until it reports the send complete
/// on the error queue (`zerocopy_completions`); the caller keeps `buf` alive until then.
pub fn send_zerocopy(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a live slice and the length passed is its length; the caller keeps it alive until its completion is read.
    let r = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_ZEROCOPY) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// From linux/errqueue.h.
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;

/// One report of completed zero-copy sends: how many, and whether the kernel copied them anyway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub sends: u64,
    pub copied: bool,
}

/// Reads one message from the socket's error queue without blocking: its zero-copy completions,
/// or None when the queue is empty.
pub fn zerocopy_completions(fd: RawFd) -> Option<Vec<Completion>> {
    let mut control = [0u8; 128];
    // SAFETY: msghdr is plain data; all zeroes is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = control.len();
    // SAFETY: `msg` points at `control`, which lives across the call and whose length is msg_controllen.
    let r = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
    if r < 0 {
        return None;
    }
    let mut out = Vec::new();
    let need = std::mem::size_of::<libc::sock_extended_err>();
    // SAFETY: the CMSG_* macros walk only the control bytes the kernel filled (msg_controllen); a header is read as sock_extended_err only when its length covers one, with an unaligned read.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_len as usize >= libc::CMSG_LEN(need as u32) as usize {
                let ee: libc::sock_extended_err =
                    std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                if ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY {
                    out.push(Completion {
                        sends: ee.ee_data.wrapping_sub(ee.ee_info) as u64 + 1,
                        copied: ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0,
                    });
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Some(out)
}

/// Waits up to `timeout_ms` for `fd` to become readable.
pub fn poll_readable(fd: RawFd, timeout_ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `pfd` is one valid pollfd that outlives the call, and the count passed is 1.
    unsafe { libc::poll(&mut pfd, 1, timeout_ms) > 0 }
}
