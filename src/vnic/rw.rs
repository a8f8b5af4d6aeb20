//! The read/write loop: a level-triggered epoll over both taps, and per wake-up a budget of
//! frames read from each ready tap and written to the other, one system call each (the emulated
//! model's way always, the paravirtual model's where the kernel has no io_uring for it). Level-
//! triggered, a tap need not be read until it is empty: each side's budget is what its last turn
//! found (one frame while frames trickle in, doubling while turns end with frames still queued,
//! up to 64), so the read that would find the tap empty (EAGAIN) is left to the next wait, which
//! reports the tap again only if it has frames.

use super::frames::{Frames, BUF};
use super::tap::Tap;
use super::Error;
use std::os::fd::AsRawFd;

/// The most frames read from one tap per wake-up before the other gets its turn.
const BUDGET: usize = 64;

/// Moves frames between the taps until a tap goes away.
pub fn run(guest: &Tap, host: &Tap, f: &mut Frames) -> Result<(), Error> {
    let ep = crate::sys::Epoll::new().map_err(|e| Error::Failed(format!("epoll: {e}")))?;
    for (i, t) in [guest, host].iter().enumerate() {
        ep.add_input_level(t.as_raw_fd(), i as u64)
            .map_err(|e| Error::Failed(format!("epoll_ctl: {e}")))?;
    }
    let mut buf = vec![0u8; BUF];
    let mut tags = Vec::with_capacity(8);
    let mut budget = [1usize, 1];
    loop {
        ep.wait(f.wait_ms(), &mut tags)
            .map_err(|e| Error::Failed(format!("epoll_wait: {e}")))?;
        f.st.syscalls += 1;
        if !tags.is_empty() {
            f.st.wakeups += 1;
        }
        for &t in &tags {
            let (from, to) = if t == 0 { (guest, host) } else { (host, guest) };
            let b = &mut budget[t as usize & 1];
            *b = drain(from, to, t == 0, *b, &mut buf, f).map_err(|e| {
                Error::Failed(format!("reading {}: {e} (its link went away)", from.name))
            })?;
        }
        for o in f.flush_lro() {
            f.st.syscalls += 1;
            if guest.write(&o).is_err() {
                f.write_failed(false);
            }
            f.give_back(o);
        }
        f.publish(tags.is_empty());
    }
}

/// Moves up to `budget` frames from `from` to `to` and returns the next turn's budget. The
/// first read cannot find the tap empty (the wait said it had a frame); a later one may, and
/// ends the turn.
fn drain(
    from: &Tap,
    to: &Tap,
    guest: bool,
    budget: usize,
    buf: &mut [u8],
    f: &mut Frames,
) -> std::io::Result<usize> {
    for i in 0..budget {
        f.st.syscalls += 1;
        let Some(n) = from.read(buf)? else {
            return Ok(i.max(1));
        };
        let pkt = &buf[..n];
        let pass = if guest {
            f.from_guest(pkt)
        } else {
            f.from_host(pkt)
        };
        if pass {
            f.st.syscalls += 1;
            if to.write(pkt).is_err() {
                f.write_failed(guest);
            }
        }
    }
    Ok((budget * 2).min(BUDGET))
}
