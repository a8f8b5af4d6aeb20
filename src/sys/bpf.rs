//! The bpf(2) calls the meter's softirq tracer needs: make a map, load a raw-tracepoint program
//! (with the verifier's log on refusal), attach it by tracepoint name, and read a map's keys and
//! values. `bpf_attr` is a union the kernel reads by command; each call fills the head of a
//! zeroed 128-byte buffer at the offsets linux/bpf.h gives that command's fields.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const MAP_CREATE: i32 = 0;
const MAP_LOOKUP_ELEM: i32 = 1;
const MAP_GET_NEXT_KEY: i32 = 4;
const PROG_LOAD: i32 = 5;
const RAW_TRACEPOINT_OPEN: i32 = 17;

/// BPF_PROG_TYPE_RAW_TRACEPOINT.
const PROG_RAW_TRACEPOINT: u32 = 17;

/// The map kinds the tracer uses (BPF_MAP_TYPE_*).
#[derive(Clone, Copy, Debug)]
pub enum MapKind {
    PercpuHash = 5,
    PercpuArray = 6,
}

/// A zeroed `union bpf_attr` (the kernel takes trailing zeroes as "not set").
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 128])
    }
    fn u32(&mut self, at: usize, v: u32) -> &mut Attr {
        self.0[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, at: usize, v: u64) -> &mut Attr {
        self.0[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
}

/// bpf(cmd, attr): the call's non-negative result.
fn call(cmd: i32, attr: &mut Attr) -> io::Result<i64> {
    // Every pointer the callers in this module store in `attr` points at memory that outlives
    // the call and is as large as the kernel will touch: `Map` checks each key and value buffer
    // against the sizes it created the map with; `prog_load` passes its instructions with their
    // count and its log buffer with its length; names are NUL-terminated.
    // SAFETY: `attr` is a 128-byte buffer that outlives the call, its size passed; see above.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.0.as_mut_ptr(), attr.0.len()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r)
}

fn owned(fd: i64) -> OwnedFd {
    // SAFETY: bpf(2) just returned this fd and nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

/// A map: its fd (which closes it), and the sizes every call on it is checked against.
pub struct Map {
    fd: OwnedFd,
    key: usize,
    /// Bytes of one value as user space reads it: per-CPU maps give one 8-aligned slot per
    /// possible CPU.
    read: usize,
}

impl Map {
    /// A new per-CPU map of `entries` keys of `key` bytes and values of `value` bytes, on a
    /// kernel with `possible` possible CPUs.
    pub fn create(
        kind: MapKind,
        key: u32,
        value: u32,
        entries: u32,
        possible: usize,
    ) -> io::Result<Map> {
        let mut a = Attr::new();
        a.u32(0, kind as u32)
            .u32(4, key)
            .u32(8, value)
            .u32(12, entries);
        let fd = call(MAP_CREATE, &mut a).map(owned)?;
        Ok(Map {
            fd,
            key: key as usize,
            read: (value as usize).div_ceil(8) * 8 * possible,
        })
    }

    /// The map's fd, for a program's `ld_imm64` map reference.
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Bytes `lookup` writes: every possible CPU's slot.
    pub fn value_len(&self) -> usize {
        self.read
    }

    fn check(&self, key: &[u8], out: &[u8], out_len: usize) -> io::Result<()> {
        if key.len() != self.key || out.len() < out_len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a bpf map buffer of the wrong size",
            ));
        }
        Ok(())
    }

    /// The value under `key` into `value` (at least `value_len()` bytes): false if the key is
    /// not there.
    pub fn lookup(&self, key: &[u8], value: &mut [u8]) -> io::Result<bool> {
        self.check(key, value, self.read)?;
        let mut a = Attr::new();
        a.u32(0, self.fd.as_raw_fd() as u32)
            .u64(8, key.as_ptr() as u64)
            .u64(16, value.as_mut_ptr() as u64);
        absent_is_false(call(MAP_LOOKUP_ELEM, &mut a))
    }

    /// The key after `key` (None: the first) into `next` (a key's size): false past the last.
    pub fn next_key(&self, key: Option<&[u8]>, next: &mut [u8]) -> io::Result<bool> {
        self.check(key.unwrap_or(next), next, self.key)?;
        let mut a = Attr::new();
        a.u32(0, self.fd.as_raw_fd() as u32)
            .u64(8, key.map_or(0, |k| k.as_ptr() as u64))
            .u64(16, next.as_mut_ptr() as u64);
        absent_is_false(call(MAP_GET_NEXT_KEY, &mut a))
    }
}

/// ENOENT (no such key, or past the last) as false.
fn absent_is_false(r: io::Result<i64>) -> io::Result<bool> {
    match r {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Loads a raw-tracepoint program (`insns`, 8 bytes each). A refusal carries the verifier's log.
pub fn prog_load(name: &str, insns: &[u64]) -> io::Result<OwnedFd> {
    let license = c"GPL";
    let mut log = vec![0u8; 1 << 16];
    let mut a = Attr::new();
    a.u32(0, PROG_RAW_TRACEPOINT)
        .u32(4, insns.len() as u32)
        .u64(8, insns.as_ptr() as u64)
        .u64(16, license.as_ptr() as u64)
        .u32(24, 1)
        .u32(28, log.len() as u32)
        .u64(32, log.as_mut_ptr() as u64);
    let n = name.as_bytes();
    let n = &n[..n.len().min(15)];
    a.0[48..48 + n.len()].copy_from_slice(n);
    call(PROG_LOAD, &mut a).map(owned).map_err(|e| {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        let text = String::from_utf8_lossy(&log[..end]);
        let tail: Vec<&str> = text.lines().rev().take(3).collect();
        io::Error::new(e.kind(), format!("{e}: {}", tail.join(" / ")))
    })
}

/// Attaches `prog` to the raw tracepoint `tp` (e.g. "softirq_entry"); the fd holds it there.
pub fn raw_tracepoint_open(tp: &str, prog: &OwnedFd) -> io::Result<OwnedFd> {
    let name = std::ffi::CString::new(tp).map_err(|_| io::ErrorKind::InvalidInput)?;
    let mut a = Attr::new();
    a.u64(0, name.as_ptr() as u64)
        .u32(8, prog.as_raw_fd() as u32);
    call(RAW_TRACEPOINT_OPEN, &mut a).map(owned)
}
