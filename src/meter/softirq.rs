//! Softirq time per CPU, and which device's packets it went to: three small eBPF programs on the
//! kernel's raw tracepoints. `softirq_entry`/`softirq_exit` time every softirq per CPU and
//! vector to the nanosecond; inside NET_RX, `netif_receive_skb` (one event per packet, or per
//! GRO-merged packet) closes the span since the previous packet and charges it to that packet's
//! device, keyed by the task the softirq ran on top of (0: the idle task). The device's network
//! namespace (its inode) and name are copied once, when it is first seen. The meter reads the
//! maps at the window's edges: what went to devices outside the lab's namespaces is other
//! tenants' kernel work on the lab's cores.
//!
//! Field offsets come from the running kernel's BTF; a kernel without BTF, BPF or these
//! tracepoints gives a one-line reason and the meter carries on without the split.

use std::collections::BTreeMap;

use super::bpfasm::{Asm, Cond, Helper, R, W};
use super::btf::Btf;
use super::error::Error;
use crate::sys::bpf::{prog_load, raw_tracepoint_open, Map, MapKind};

/// NET_RX_SOFTIRQ's vector number.
pub const NET_RX_VECTOR: usize = 3;
const NET_RX: i32 = NET_RX_VECTOR as i32;
/// Vectors timed (NR_SOFTIRQS).
pub const VECTORS: usize = 10;
/// The softirq vectors' names, in their numbers' order (as /proc/softirqs lists them).
pub const VECTOR_NAMES: [&str; VECTORS] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

// The per-CPU state (one entry): where the current span began, the device it goes to, the task
// the softirq runs on, whether NET_RX is running, when the softirq began, NET_RX time no packet
// took, each vector's nanoseconds, and time whose device found no room in the map.
const S_MARK: i16 = 0;
const S_CUR: i16 = 8;
const S_TGID: i16 = 16;
const S_IN_RX: i16 = 20;
const S_ENTRY: i16 = 24;
const S_NODEV: i16 = 32;
const S_VEC: i16 = 40;
const S_LOST: i16 = 120;
const STATE_BYTES: u32 = 128;

/// The device map: key {device pointer, task's tgid, 0}; value {ns, netns inode, 0, name[16]}.
const KEY_BYTES: u32 = 16;
const VALUE_BYTES: u32 = 32;
const MAX_DEVICES: u32 = 4096;

/// Where the programs read inside the kernel's structs (bytes).
#[derive(Clone, Copy, Debug)]
struct Offsets {
    skb_dev: i32,
    dev_name: i32,
    dev_net: i32,
    net_inum: i32,
}

impl Offsets {
    fn of(btf: &Btf) -> Result<Offsets, Error> {
        let i = |v: u32| v as i32;
        Ok(Offsets {
            skb_dev: i(btf.offset("sk_buff", &["dev"])?),
            dev_name: i(btf.offset("net_device", &["name"])?),
            dev_net: i(btf.offset("net_device", &["nd_net", "net"])?),
            net_inum: i(btf.offset("net", &["ns", "inum"])?),
        })
    }
}

/// The running kernel's offsets, read from its BTF once per process.
fn offsets() -> Result<Offsets, Error> {
    static ONCE: std::sync::OnceLock<Result<Offsets, String>> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        Btf::this_kernel()
            .and_then(|b| Offsets::of(&b))
            .map_err(|e| e.to_string())
    })
    .clone()
    .map_err(Error::Unsupported)
}

/// r7 = this CPU's state, or return.
fn state(a: &mut Asm, st: i32) {
    a.store_imm(W::U32, R::R10, -4, 0)
        .load_map(R::R1, st)
        .mov(R::R2, R::R10)
        .add_imm(R::R2, -4)
        .call(Helper::MapLookup)
        .jump_if(Cond::Eq, R::R0, 0, "out")
        .mov(R::R7, R::R0);
}

/// Charges the time since the mark (r9 = now) to the current device and task, or to NET_RX time
/// no packet took; moves the mark to now. Uses r8 and the frame's top 16 bytes.
fn charge(a: &mut Asm, devs: i32) {
    a.load(W::U64, R::R1, R::R7, S_MARK)
        .mov(R::R8, R::R9)
        .sub(R::R8, R::R1)
        .store(W::U64, R::R7, S_MARK, R::R9)
        .load(W::U64, R::R1, R::R7, S_CUR)
        .jump_if(Cond::Eq, R::R1, 0, "nodev")
        .store(W::U64, R::R10, -16, R::R1)
        .load(W::U32, R::R2, R::R7, S_TGID)
        .store(W::U64, R::R10, -8, R::R2)
        .load_map(R::R1, devs)
        .mov(R::R2, R::R10)
        .add_imm(R::R2, -16)
        .call(Helper::MapLookup)
        .jump_if(Cond::Eq, R::R0, 0, "lost")
        .load(W::U64, R::R1, R::R0, 0)
        .add(R::R1, R::R8)
        .store(W::U64, R::R0, 0, R::R1)
        .jump("charged")
        .label("nodev");
    add_to(a, S_NODEV);
    a.jump("charged").label("lost");
    add_to(a, S_LOST);
    a.label("charged");
}

/// state[at] += r8.
fn add_to(a: &mut Asm, at: i16) {
    a.load(W::U64, R::R1, R::R7, at)
        .add(R::R1, R::R8)
        .store(W::U64, R::R7, at, R::R1);
}

/// softirq_entry(vec): the softirq and its first span begin now; NET_RX notes the task.
fn entry_prog(st: i32) -> Result<Vec<u64>, String> {
    let mut a = Asm::default();
    a.load(W::U64, R::R8, R::R1, 0);
    state(&mut a, st);
    a.call(Helper::KtimeNs)
        .store(W::U64, R::R7, S_ENTRY, R::R0)
        .store(W::U64, R::R7, S_MARK, R::R0)
        .store_imm(W::U64, R::R7, S_CUR, 0)
        .store_imm(W::U32, R::R7, S_IN_RX, 0)
        .jump_if(Cond::Ne, R::R8, NET_RX, "out")
        .store_imm(W::U32, R::R7, S_IN_RX, 1)
        .call(Helper::CurrentPidTgid)
        .rsh_imm(R::R0, 32)
        .store(W::U32, R::R7, S_TGID, R::R0)
        .label("out")
        .exit0();
    a.finish()
}

/// softirq_exit(vec): the vector's time; NET_RX's last span to the last packet's device.
fn exit_prog(st: i32, devs: i32) -> Result<Vec<u64>, String> {
    let mut a = Asm::default();
    a.load(W::U64, R::R8, R::R1, 0);
    state(&mut a, st);
    a.call(Helper::KtimeNs)
        .mov(R::R9, R::R0)
        .jump_if(Cond::Ge, R::R8, VECTORS as i32, "rx")
        .load(W::U64, R::R1, R::R7, S_ENTRY)
        .jump_if(Cond::Eq, R::R1, 0, "rx")
        .mov(R::R2, R::R9)
        .sub(R::R2, R::R1)
        .mov(R::R3, R::R8)
        .lsh_imm(R::R3, 3)
        .add(R::R3, R::R7)
        .load(W::U64, R::R1, R::R3, S_VEC)
        .add(R::R1, R::R2)
        .store(W::U64, R::R3, S_VEC, R::R1)
        .label("rx")
        .store_imm(W::U64, R::R7, S_ENTRY, 0)
        .load(W::U32, R::R1, R::R7, S_IN_RX)
        .jump_if(Cond::Eq, R::R1, 0, "out")
        .jump_if(Cond::Ne, R::R8, NET_RX, "out");
    charge(&mut a, devs);
    a.store_imm(W::U32, R::R7, S_IN_RX, 0).label("out").exit0();
    a.finish()
}

/// netif_receive_skb(skb), inside NET_RX: the span since the last mark to the last device; this
/// packet's device is current from now, entered in the map (its name and netns) when new.
fn packet_prog(st: i32, devs: i32, o: Offsets) -> Result<Vec<u64>, String> {
    let mut a = Asm::default();
    a.load(W::U64, R::R6, R::R1, 0);
    state(&mut a, st);
    a.load(W::U32, R::R1, R::R7, S_IN_RX)
        .jump_if(Cond::Eq, R::R1, 0, "out")
        .call(Helper::KtimeNs)
        .mov(R::R9, R::R0);
    charge(&mut a, devs);
    probe(&mut a, -8, 8, R::R6, o.skb_dev);
    a.load(W::U64, R::R8, R::R10, -8)
        .store(W::U64, R::R7, S_CUR, R::R8)
        .jump_if(Cond::Eq, R::R8, 0, "out")
        .store(W::U64, R::R10, -24, R::R8)
        .load(W::U32, R::R2, R::R7, S_TGID)
        .store(W::U64, R::R10, -16, R::R2)
        .load_map(R::R1, devs)
        .mov(R::R2, R::R10)
        .add_imm(R::R2, -24)
        .call(Helper::MapLookup)
        .jump_if(Cond::Ne, R::R0, 0, "out");
    for at in [-56, -48, -40, -32] {
        a.store_imm(W::U64, R::R10, at, 0);
    }
    probe(&mut a, -40, 16, R::R8, o.dev_name);
    probe(&mut a, -8, 8, R::R8, o.dev_net);
    a.load(W::U64, R::R3, R::R10, -8)
        .jump_if(Cond::Eq, R::R3, 0, "insert");
    probe(&mut a, -48, 4, R::R3, o.net_inum);
    a.label("insert")
        .load_map(R::R1, devs)
        .mov(R::R2, R::R10)
        .add_imm(R::R2, -24)
        .mov(R::R3, R::R10)
        .add_imm(R::R3, -56)
        .mov_imm(R::R4, 1) // BPF_NOEXIST
        .call(Helper::MapUpdate)
        .label("out")
        .exit0();
    a.finish()
}

/// frame[at..at+len] = *(base + off), read safely (zeroes where the kernel address is bad).
fn probe(a: &mut Asm, at: i32, len: i32, base: R, off: i32) {
    a.mov(R::R1, R::R10)
        .add_imm(R::R1, at)
        .mov_imm(R::R2, len)
        .mov(R::R3, base)
        .add_imm(R::R3, off)
        .call(Helper::ProbeReadKernel);
}

/// The attached programs and their maps; dropping it detaches them.
pub struct Tracer {
    state: Map,
    devs: Map,
    possible: usize,
    _links: Vec<std::os::fd::OwnedFd>,
}

/// One device's NET_RX time under one task, per CPU (ns).
#[derive(Clone, Debug, PartialEq)]
pub struct DevTime {
    pub name: String,
    pub netns: u32,
    /// The task the softirq ran on top of (0: the idle task).
    pub tgid: u32,
    pub per_cpu_ns: Vec<u64>,
}

/// The tracer's counts so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reading {
    /// Per CPU, nanoseconds in each vector.
    pub vectors_ns: Vec<[u64; VECTORS]>,
    /// Per CPU, NET_RX nanoseconds no packet took (before the first, or no device).
    pub nodev_ns: Vec<u64>,
    /// Per CPU, nanoseconds whose device found the map full.
    pub lost_ns: Vec<u64>,
    pub devices: Vec<DevTime>,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |s| u64::from_ne_bytes(s.try_into().unwrap()))
}

fn possible_cpus() -> Result<usize, Error> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .map_err(|e| Error::Unsupported(format!("/sys/devices/system/cpu/possible: {e}")))?;
    crate::sys::parse_cpu_list(s.trim())
        .and_then(|v| v.iter().max().map(|m| m + 1))
        .filter(|&n| n <= 8192)
        .ok_or_else(|| Error::Unsupported(format!("possible CPUs '{}' unreadable", s.trim())))
}

impl Tracer {
    /// Whether tracing was asked for (`VNETLAB_SOFTIRQ_TRACE=on`): it costs the lab's cores
    /// time per packet (docs/meter.md), so it is off unless asked.
    pub fn asked() -> bool {
        std::env::var("VNETLAB_SOFTIRQ_TRACE").is_ok_and(|v| v == "on")
    }

    /// Loads and attaches the programs (root; a kernel with BPF, BTF and the tracepoints).
    pub fn start() -> Result<Tracer, Error> {
        let o = offsets()?;
        let possible = possible_cpus()?;
        let no = |what: &str, e: std::io::Error| {
            Error::Unsupported(format!("softirq tracing: {what}: {e}"))
        };
        let state = Map::create(MapKind::PercpuArray, 4, STATE_BYTES, 1, possible)
            .map_err(|e| no("a BPF map", e))?;
        let devs = Map::create(
            MapKind::PercpuHash,
            KEY_BYTES,
            VALUE_BYTES,
            MAX_DEVICES,
            possible,
        )
        .map_err(|e| no("a BPF map", e))?;
        let (st, dv) = (state.raw_fd(), devs.raw_fd());
        let progs = [
            ("softirq_entry", entry_prog(st)),
            ("softirq_exit", exit_prog(st, dv)),
            ("netif_receive_skb", packet_prog(st, dv, o)),
        ];
        let mut links = Vec::new();
        for (tp, insns) in progs {
            let insns = insns.map_err(|e| Error::Unsupported(format!("softirq tracing: {e}")))?;
            let fd = prog_load(&format!("vl_{}", &tp[..tp.len().min(12)]), &insns)
                .map_err(|e| no(tp, e))?;
            links.push(raw_tracepoint_open(tp, &fd).map_err(|e| no(tp, e))?);
        }
        Ok(Tracer {
            state,
            devs,
            possible,
            _links: links,
        })
    }

    /// The counts so far: every CPU's vectors and every device seen.
    pub fn read(&self) -> Result<Reading, Error> {
        let io = |e: std::io::Error| Error::Unreadable(format!("softirq tracing: {e}"));
        let mut v = vec![0u8; self.state.value_len()];
        self.state.lookup(&0u32.to_ne_bytes(), &mut v).map_err(io)?;
        let slot = |c: usize| &v[c * STATE_BYTES as usize..(c + 1) * STATE_BYTES as usize];
        let mut r = Reading::default();
        for c in 0..self.possible {
            let s = slot(c);
            r.vectors_ns
                .push(std::array::from_fn(|i| u64_at(s, S_VEC as usize + 8 * i)));
            r.nodev_ns.push(u64_at(s, S_NODEV as usize));
            r.lost_ns.push(u64_at(s, S_LOST as usize));
        }
        r.devices = self.devices().map_err(io)?;
        Ok(r)
    }

    fn devices(&self) -> std::io::Result<Vec<DevTime>> {
        let mut out = Vec::new();
        let (mut key, mut next) = ([0u8; KEY_BYTES as usize], [0u8; KEY_BYTES as usize]);
        let mut v = vec![0u8; self.devs.value_len()];
        let mut first = true;
        // Bounded: the map holds at most MAX_DEVICES keys.
        for _ in 0..MAX_DEVICES {
            let prev = (!first).then_some(&key[..]);
            if !self.devs.next_key(prev, &mut next)? {
                break;
            }
            first = false;
            key = next;
            if !self.devs.lookup(&key, &mut v)? {
                continue;
            }
            out.push(dev_time(&key, &v, self.possible));
        }
        Ok(out)
    }
}

/// One device map entry as read: every CPU's slot holds its own ns; the name and netns are in
/// the slot of the CPU that first saw the device (the others' are zero).
fn dev_time(key: &[u8], v: &[u8], possible: usize) -> DevTime {
    let slot = |c: usize| &v[c * VALUE_BYTES as usize..(c + 1) * VALUE_BYTES as usize];
    let named = (0..possible).map(slot).find(|s| s[16] != 0);
    let name = named.map_or(String::new(), |s| {
        let n = &s[16..32];
        String::from_utf8_lossy(&n[..n.iter().position(|&b| b == 0).unwrap_or(16)]).into_owned()
    });
    DevTime {
        name,
        netns: named.map_or(0, |s| u32::from_ne_bytes(s[8..12].try_into().unwrap())),
        tgid: u32::from_ne_bytes(key[8..12].try_into().unwrap()),
        per_cpu_ns: (0..possible).map(|c| u64_at(slot(c), 0)).collect(),
    }
}

/// NET_RX nanoseconds per CPU between two readings that went to devices outside `lab_netns`,
/// under tasks `pick` accepts (by tgid; 0 is the idle task).
pub fn foreign_ns(
    a: &Reading,
    b: &Reading,
    lab_netns: &[u64],
    pick: impl Fn(u32) -> bool,
) -> BTreeMap<usize, u64> {
    let before: BTreeMap<(u32, u32, &str), &DevTime> = a
        .devices
        .iter()
        .map(|d| ((d.netns, d.tgid, d.name.as_str()), d))
        .collect();
    let mut out = BTreeMap::new();
    for d in &b.devices {
        if lab_netns.contains(&(d.netns as u64)) || !pick(d.tgid) {
            continue;
        }
        let was = before.get(&(d.netns, d.tgid, d.name.as_str()));
        for (c, ns) in d.per_cpu_ns.iter().enumerate() {
            let w = was.and_then(|w| w.per_cpu_ns.get(c)).copied().unwrap_or(0);
            *out.entry(c).or_insert(0) += ns.saturating_sub(w);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loopback datagrams to this process: the kernel receives each in NET_RX softirq on `lo`.
    fn loopback_traffic(n: usize) {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let to = rx.local_addr().unwrap();
        let mut buf = [0u8; 64];
        for _ in 0..n {
            tx.send_to(&[7u8; 32], to).unwrap();
            let _ = rx.recv(&mut buf);
        }
    }

    #[test]
    fn the_tracer_times_softirqs_and_names_the_device_that_took_them() {
        if !crate::sys::is_root() {
            return;
        }
        let t = match Tracer::start() {
            Ok(t) => t,
            // A kernel without BPF, BTF or these tracepoints says why in one line.
            Err(e) => {
                let e = e.to_string();
                assert!(e.lines().count() == 1 && !e.is_empty(), "{e}");
                return;
            }
        };
        let a = t.read().unwrap();
        loopback_traffic(2000);
        let b = t.read().unwrap();
        let rx = |r: &Reading| r.vectors_ns.iter().map(|v| v[NET_RX_VECTOR]).sum::<u64>();
        assert!(rx(&b) > rx(&a), "NET_RX time grew: {} → {}", rx(&a), rx(&b));
        let lo = b
            .devices
            .iter()
            .filter(|d| d.name == "lo")
            .collect::<Vec<_>>();
        assert!(!lo.is_empty(), "lo was seen: {:?}", b.devices);
        // lo is this (the host's) namespace's device: outside a lab's namespaces it is foreign,
        // inside them it is the lab's.
        let host_ns =
            std::fs::metadata("/proc/self/ns/net").map(|m| std::os::unix::fs::MetadataExt::ino(&m));
        let host_ns = host_ns.unwrap();
        assert!(lo.iter().all(|d| d.netns as u64 == host_ns), "{lo:?}");
        let all = foreign_ns(&a, &b, &[], |_| true).values().sum::<u64>();
        let none = foreign_ns(&a, &b, &[host_ns], |_| true)
            .values()
            .sum::<u64>();
        assert!(all > 0, "lo's time is foreign to a lab elsewhere");
        assert!(none <= all, "{none} {all}");
    }
}
