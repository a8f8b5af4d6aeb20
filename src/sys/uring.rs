//! io_uring for the paravirtual backend, with the unsafe parts in one place: two pools of
//! provided buffers (a buffer ring each, kernel 5.19+), a multishot read per tap into its pool
//! (kernel 6.7+), writes from a pool's buffer or from an owned buffer, and one `io_uring_enter`
//! that submits what is queued and waits for completions with a timeout.

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// What finished.
#[derive(Debug)]
pub enum Done {
    /// A multishot read of `pool`'s fd: a frame of `res` bytes in buffer `bid` (None when
    /// `res` < 0); `more`: the read stays armed.
    Read {
        pool: usize,
        bid: Option<u16>,
        res: i32,
        more: bool,
    },
    /// A write of buffer `bid` of `pool` (the buffer is the caller's to recycle).
    WroteBuffer { pool: usize, bid: u16, res: i32 },
    /// A write of an owned buffer, handed back.
    WroteOwned { buf: Vec<u8>, res: i32 },
}

/// Anonymous, page-aligned memory that lives as long as the ring that points into it.
struct Mem {
    ptr: *mut u8,
    len: usize,
}

impl Mem {
    fn new(len: usize) -> io::Result<Mem> {
        // SAFETY: an anonymous private mapping of `len` bytes; no fd, no fixed address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mem { ptr: p.cast(), len })
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned; nothing uses them after this.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// A pool of `count` buffers of `size` bytes and the buffer ring that offers them to the kernel.
struct Pool {
    ring: Mem,
    bufs: Mem,
    count: u16,
    size: usize,
    tail: u16,
    /// Buffers offered to the kernel and not yet handed back in a completion.
    offered: u16,
}

impl Pool {
    fn entry(&mut self, slot: u16) -> &mut types::BufRingEntry {
        let i = (slot & (self.count - 1)) as usize;
        // SAFETY: the ring holds `count` entries (count is a power of two, i < count) and the
        // kernel only reads entries between the head it consumed and the tail we publish.
        unsafe { &mut *(self.ring.ptr as *mut types::BufRingEntry).add(i) }
    }

    /// Offers buffer `bid` to the kernel again (published at the next `publish`).
    fn give(&mut self, bid: u16) {
        let addr = self.bufs.ptr as u64 + bid as u64 * self.size as u64;
        let size = self.size as u32;
        let tail = self.tail;
        let e = self.entry(tail);
        e.set_addr(addr);
        e.set_len(size);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
        self.offered += 1;
    }

    fn publish(&mut self) {
        // SAFETY: the tail field sits in the first entry of the ring; the kernel reads it with
        // acquire semantics, so the entries written before are visible when it sees the tail.
        unsafe {
            let tail = types::BufRingEntry::tail(self.ring.ptr as *const types::BufRingEntry)
                as *const std::sync::atomic::AtomicU16;
            (*tail).store(self.tail, std::sync::atomic::Ordering::Release);
        }
    }

    fn buffer(&self, bid: u16, len: usize) -> &[u8] {
        let len = len.min(self.size);
        let bid = (bid % self.count) as usize;
        // SAFETY: the buffer lies inside `bufs`; the kernel wrote `len` bytes into it and
        // handed it back in a completion, and it is not offered again until `recycle`.
        unsafe { std::slice::from_raw_parts(self.bufs.ptr.add(bid * self.size), len) }
    }
}

/// The ring, its two pools and the owned buffers being written.
pub struct Ring {
    // Dropped first: the kernel stops using the pools' memory before it is unmapped.
    ring: IoUring,
    pools: Vec<Pool>,
    owned: Vec<Option<Vec<u8>>>,
    free_owned: Vec<usize>,
    /// Entries queued since the last `enter`.
    queued: usize,
}

const READ: u64 = 1 << 62;
const WRITE_BUF: u64 = 2 << 62;
const WRITE_OWNED: u64 = 3 << 62;
const KIND: u64 = 3 << 62;

impl Ring {
    /// A ring with `pools` pools of `count` (a power of two) buffers of `size` bytes each, or
    /// why this kernel cannot run it (no io_uring, no provided buffer rings, no multishot read).
    pub fn new(pools: usize, count: u16, size: usize) -> io::Result<Ring> {
        if !count.is_power_of_two() {
            return Err(io::Error::other("buffer count must be a power of two"));
        }
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_cqsize(4 * count as u32 * pools as u32)
            .build(64)
            .or_else(|_| IoUring::builder().build(64))?;
        let mut probe = io_uring::Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        if !probe.is_supported(opcode::ReadMulti::CODE) {
            return Err(io::Error::other(
                "this kernel's io_uring has no multishot read (Linux 6.7+)",
            ));
        }
        let mut r = Ring {
            ring,
            pools: Vec::new(),
            owned: Vec::new(),
            free_owned: Vec::new(),
            queued: 0,
        };
        for g in 0..pools {
            let page = 4096;
            let ring_len =
                (count as usize * std::mem::size_of::<types::BufRingEntry>()).div_ceil(page) * page;
            let mut p = Pool {
                ring: Mem::new(ring_len)?,
                bufs: Mem::new(count as usize * size)?,
                count,
                size,
                tail: 0,
                offered: 0,
            };
            // SAFETY: the ring memory is page-aligned, holds `count` entries and lives in `r`
            // (dropped after `r.ring`), so it outlives the registration.
            unsafe {
                r.ring.submitter().register_buf_ring_with_flags(
                    p.ring.ptr as u64,
                    count,
                    g as u16,
                    0,
                )?
            };
            for bid in 0..count {
                p.give(bid);
            }
            p.publish();
            r.pools.push(p);
        }
        Ok(r)
    }

    fn push(&mut self, e: squeue::Entry) -> io::Result<()> {
        // SAFETY: every buffer an entry points at lives in `self` (a pool's, or an owned Vec
        // kept in `owned`) until its completion is taken in `completions`.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            self.ring.submit()?;
        }
        self.queued += 1;
        Ok(())
    }

    /// Arms a multishot read of `fd` into pool `pool`'s buffers.
    pub fn read(&mut self, fd: RawFd, pool: usize) -> io::Result<()> {
        let e = opcode::ReadMulti::new(types::Fd(fd), 0, pool as u16)
            .build()
            .user_data(READ | pool as u64);
        self.push(e)
    }

    /// Buffers of `pool` the kernel can still fill.
    pub fn offered(&self, pool: usize) -> u16 {
        self.pools[pool].offered
    }

    /// The frame a read put in buffer `bid` of `pool`.
    pub fn buffer(&self, pool: usize, bid: u16, len: usize) -> &[u8] {
        self.pools[pool].buffer(bid, len)
    }

    /// Offers buffer `bid` of `pool` to the kernel again.
    pub fn recycle(&mut self, pool: usize, bid: u16) {
        self.pools[pool].give(bid);
    }

    /// Writes `len` bytes of buffer `bid` of `pool` to `fd`.
    pub fn write_buffer(&mut self, fd: RawFd, pool: usize, bid: u16, len: usize) -> io::Result<()> {
        let p = &self.pools[pool];
        let len = len.min(p.size);
        let addr = p.bufs.ptr as usize + (bid % p.count) as usize * p.size;
        let e = opcode::Write::new(types::Fd(fd), addr as *const u8, len as u32)
            .offset(u64::MAX)
            .build()
            .user_data(WRITE_BUF | (pool as u64) << 16 | bid as u64);
        self.push(e)
    }

    /// Writes all of `buf` to `fd`; the buffer comes back in its completion.
    pub fn write_owned(&mut self, fd: RawFd, buf: Vec<u8>) -> io::Result<()> {
        let (ptr, len) = (buf.as_ptr(), buf.len() as u32);
        let slot = match self.free_owned.pop() {
            Some(s) => {
                self.owned[s] = Some(buf);
                s
            }
            None => {
                self.owned.push(Some(buf));
                self.owned.len() - 1
            }
        };
        let e = opcode::Write::new(types::Fd(fd), ptr, len)
            .offset(u64::MAX)
            .build()
            .user_data(WRITE_OWNED | slot as u64);
        self.push(e)
    }

    /// Publishes recycled buffers, submits what is queued and waits until `want` completions
    /// are ready or `timeout` passes (one system call).
    pub fn enter(&mut self, want: usize, timeout: Duration) -> io::Result<()> {
        for p in &mut self.pools {
            p.publish();
        }
        self.queued = 0;
        let ts = types::Timespec::from(timeout);
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Entries queued since the last `enter`.
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Takes the completions that are ready.
    pub fn completions(&mut self, out: &mut Vec<Done>) {
        let Ring {
            ring,
            pools,
            owned,
            free_owned,
            ..
        } = self;
        for c in ring.completion() {
            let d = c.user_data();
            let res = c.result();
            match d & KIND {
                READ => {
                    let pool = (d & 0xff) as usize;
                    let bid = cqueue::buffer_select(c.flags());
                    if bid.is_some() {
                        pools[pool].offered -= 1;
                    }
                    out.push(Done::Read {
                        pool,
                        bid,
                        res,
                        more: cqueue::more(c.flags()),
                    });
                }
                WRITE_BUF => out.push(Done::WroteBuffer {
                    pool: ((d >> 16) & 0xff) as usize,
                    bid: (d & 0xffff) as u16,
                    res,
                }),
                _ => {
                    let slot = (d & 0xffff_ffff) as usize;
                    if let Some(buf) = owned.get_mut(slot).and_then(Option::take) {
                        free_owned.push(slot);
                        out.push(Done::WroteOwned { buf, res });
                    }
                }
            }
        }
    }
}
