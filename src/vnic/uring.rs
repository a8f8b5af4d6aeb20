//! The paravirtual backend's io_uring loop: a multishot read per tap into a pool of provided
//! buffers, each frame written to the other tap straight from the buffer it was read into, and
//! one `io_uring_enter` per round that submits the round's writes and sleeps until the next
//! frame (or the stats timer). Where frames trickle in, that is one system call and one
//! wake-up per frame, against a wait, a read, an empty read and a write with epoll.

use super::frames::Frames;
use super::tap::Tap;
use super::Error;
use crate::sys::uring::{Done, Ring};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Buffers per tap (a power of two): frames in flight from one side at once.
const BUFFERS: u16 = 64;

/// Sides, as pool numbers: frames read from the guest's tap, and from the host's.
const GUEST: usize = 0;
const HOST: usize = 1;

/// A ring for the backend, or why this kernel cannot run one (the caller falls back to epoll).
pub fn ring() -> std::io::Result<Ring> {
    Ring::new(2, BUFFERS, super::frames::BUF)
}

/// Moves frames between the taps until a tap goes away.
pub fn run(mut ring: Ring, guest: &Tap, host: &Tap, f: &mut Frames) -> Result<(), Error> {
    let fds = [guest.as_raw_fd(), host.as_raw_fd()];
    let names = [guest.name.as_str(), host.name.as_str()];
    let failed = |what: &str, e: std::io::Error| Error::Failed(format!("io_uring {what}: {e}"));
    let mut armed = [false, false];
    let mut done = Vec::with_capacity(4 * BUFFERS as usize);
    let mut writes = 0usize;
    loop {
        for side in [GUEST, HOST] {
            if !armed[side] && ring.offered(side) > 0 {
                ring.read(fds[side], side).map_err(|e| failed("read", e))?;
                armed[side] = true;
            }
        }
        // The round's writes finish as they are submitted; then sleep until one more completes.
        let wait = Duration::from_millis(f.wait_ms() as u64);
        ring.enter(writes + 1, wait)
            .map_err(|e| failed("enter", e))?;
        f.st.syscalls += 1;
        writes = 0;
        ring.completions(&mut done);
        let mut read_any = false;
        for d in done.drain(..) {
            match d {
                Done::Read {
                    pool,
                    bid,
                    res,
                    more,
                } => {
                    armed[pool] &= more;
                    match bid {
                        Some(bid) if res > 0 => {
                            read_any = true;
                            let len = res as usize;
                            let pass = {
                                let pkt = ring.buffer(pool, bid, len);
                                match pool {
                                    GUEST => f.from_guest(pkt),
                                    _ => f.from_host(pkt),
                                }
                            };
                            if pass {
                                let to = fds[1 - pool];
                                ring.write_buffer(to, pool, bid, len)
                                    .map_err(|e| failed("write", e))?;
                                writes += 1;
                            } else {
                                ring.recycle(pool, bid);
                            }
                        }
                        Some(bid) => ring.recycle(pool, bid),
                        // Out of buffers: armed again once writes hand some back.
                        None if res == -libc::ENOBUFS => {}
                        None if res < 0 => {
                            let e = std::io::Error::from_raw_os_error(-res);
                            return Err(Error::Failed(format!(
                                "reading {}: {e} (the {} link went away)",
                                names[pool],
                                if pool == GUEST { "guest's" } else { "host's" }
                            )));
                        }
                        None => {}
                    }
                }
                Done::WroteBuffer { pool, bid, res } => {
                    if res < 0 {
                        f.write_failed(pool == GUEST);
                    }
                    ring.recycle(pool, bid);
                }
                Done::WroteOwned { buf, res } => {
                    if res < 0 {
                        f.write_failed(false);
                    }
                    f.give_back(buf);
                }
            }
        }
        if read_any {
            f.st.wakeups += 1;
        }
        // Super-frames LRO merged in this round go to the guest at its end.
        for o in f.flush_lro() {
            ring.write_owned(fds[GUEST], o)
                .map_err(|e| failed("write", e))?;
            writes += 1;
        }
        f.publish(!read_any);
    }
}
