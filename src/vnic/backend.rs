//! The device model process: moves frames between the guest's tap and the host's tap.
//! `emulated`: one frame per read and write, no virtio-net header, no offloads (the guest stack
//! segments to MTU and checksums, as with an emulated e1000). `paravirt`: virtio-net headers and
//! offloads (csum, TSO4, TSO6) on both taps, GSO super-frames passed through whole, each side
//! drained to EAGAIN per edge-triggered wake-up, and optional software LRO toward the guest.
//! Malformed or oversize frames from the guest are dropped and counted. Counters go to a JSON
//! file every quarter second.

use super::Error;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::frame::{
    self, VnetHdr, ETH_LEN, GSO_NONE, GSO_TCPV4, GSO_TCPV6, GSO_UDP_L4, VNET_HDR_LEN,
};
use super::lro::{Lro, LroStats};
use super::tap::{self, Tap};
use crate::records::vnic::{DirDelta, Io, LroDelta, LroTotals, Model, VnicDelta};

impl std::str::FromStr for Model {
    type Err = super::Error;
    fn from_str(s: &str) -> Result<Self, super::Error> {
        match s {
            "emulated" => Ok(Model::Emulated),
            "paravirt" => Ok(Model::Paravirt),
            _ => Err(super::Error::Input(format!(
                "unknown device model '{}': emulated or paravirt",
                crate::text::clip(s)
            ))),
        }
    }
}

pub struct Config {
    pub model: Model,
    pub guest_ns: String,
    pub guest_tap: String,
    pub host_ns: String,
    pub host_tap: String,
    pub lro: bool,
    pub mtu: usize,
    pub stats: PathBuf,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DirStats {
    pub frames: u64,
    pub bytes: u64,
    /// Frames that carried several MTU segments (GSO super-frames).
    pub gso_frames: u64,
    pub malformed: u64,
    pub oversize: u64,
    pub write_errors: u64,
}

impl DirStats {
    /// Every frame read from this side, whether passed on or dropped.
    fn seen(&self) -> u64 {
        self.frames + self.malformed + self.oversize
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Stats {
    pub model: Option<Model>,
    pub pid: u32,
    pub wakeups: u64,
    /// System calls made to move frames (waits, reads including empty ones, writes).
    #[serde(default)]
    pub syscalls: u64,
    #[serde(default)]
    pub io: Option<Io>,
    pub from_guest: DirStats,
    pub to_guest: DirStats,
    pub lro: Option<LroTotals>,
    /// frames_in, superframes_out and the LRO ratio (segments per buffer), when LRO is on.
    pub lro_frames_in: u64,
    pub lro_superframes_out: u64,
    pub lro_segments_in: u64,
    pub lro_buffers_out: u64,
}

/// The largest frame a reader can get: a 64 KB GSO super-frame with headers.
pub const BUF: usize = 65536 + 256;

/// Why a frame from the guest is dropped (each counted on its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drop {
    /// Too short for its headers, or a vnet header that contradicts the frame.
    Malformed,
    /// Longer than the MTU allows and not a GSO super-frame.
    Oversize,
}

/// Checks a frame from the guest: Ok(whether it is a GSO super-frame), or why it is dropped.
pub fn check_from_guest(pkt: &[u8], model: Model, mtu: usize) -> Result<bool, Drop> {
    let (hdr, f) = match model {
        Model::Paravirt => {
            let h = VnetHdr::parse(pkt).ok_or(Drop::Malformed)?;
            (Some(h), &pkt[VNET_HDR_LEN..])
        }
        Model::Emulated => (None, pkt),
    };
    if f.len() < ETH_LEN {
        return Err(Drop::Malformed);
    }
    let gso = match hdr {
        Some(h) => {
            if !matches!(
                h.gso_type & 0x7f,
                GSO_NONE | GSO_TCPV4 | GSO_TCPV6 | GSO_UDP_L4
            ) {
                return Err(Drop::Malformed);
            }
            if h.flags & frame::F_NEEDS_CSUM != 0
                && h.csum_start as usize + h.csum_offset as usize + 2 > f.len()
            {
                return Err(Drop::Malformed);
            }
            if h.gso_type != GSO_NONE && (h.gso_size == 0 || h.hdr_len as usize > f.len()) {
                return Err(Drop::Malformed);
            }
            h.gso_type != GSO_NONE
        }
        None => false,
    };
    // A frame without GSO is at most an MTU of IP (plus the Ethernet header and a VLAN tag).
    if !gso && f.len() > mtu + ETH_LEN + 4 {
        return Err(Drop::Oversize);
    }
    Ok(gso)
}

fn write_stats(path: &std::path::Path, s: &Stats) {
    let bytes = serde_json::to_vec(s).unwrap_or_default();
    let _ = crate::sys::file::replace_volatile(path, &bytes, 0o600);
}

pub fn forward_frames(cfg: Config) -> Result<(), Error> {
    let vnet = cfg.model == Model::Paravirt;
    crate::sys::enter_netns(&cfg.guest_ns)?;
    let guest = Tap::attach(&cfg.guest_tap, vnet)?;
    crate::sys::enter_netns(&cfg.host_ns)?;
    let host = Tap::attach(&cfg.host_tap, vnet)?;
    set_offloads(&guest, &host, vnet)?;
    let mut f = Frames::new(&cfg);
    // The paravirtual model batches like a virtqueue; the emulated one exits per frame.
    if vnet {
        match super::uring::ring() {
            Ok(ring) => {
                f.st.io = Some(Io::Uring);
                f.write_now();
                return super::uring::run(ring, &guest, &host, &mut f);
            }
            Err(e) => eprintln!("vnic: no io_uring here ({e}): frames move by read and write"),
        }
    }
    f.st.io = Some(Io::ReadWrite);
    f.write_now();
    super::rw::run(&guest, &host, &mut f)
}

/// The offloads both taps accept: none for the emulated model (the kernel segments and
/// checksums every frame for it); checksum, TSO and, where the kernel has it (6.2+), USO for the
/// paravirtual one, so a 64 KB TCP or UDP send crosses the backend as one super-frame.
fn set_offloads(guest: &Tap, host: &Tap, vnet: bool) -> Result<(), Error> {
    if !vnet {
        guest.set_offload(0)?;
        return host.set_offload(0);
    }
    let tso = tap::TUN_F_CSUM | tap::TUN_F_TSO4 | tap::TUN_F_TSO6;
    let uso = tso | tap::TUN_F_USO4 | tap::TUN_F_USO6;
    if guest
        .set_offload(uso)
        .and_then(|_| host.set_offload(uso))
        .is_ok()
    {
        return Ok(());
    }
    eprintln!("vnic: this kernel's taps take no UDP segmentation offload: TCP's only");
    guest.set_offload(tso)?;
    host.set_offload(tso)
}

/// What every way of moving frames shares: the checks, the counters, the LRO toward the guest
/// and the stats file.
pub struct Frames {
    model: Model,
    mtu: usize,
    pub st: Stats,
    lro: Option<Lro>,
    out: Vec<Vec<u8>>,
    file: StatsFile,
}

impl Frames {
    fn new(cfg: &Config) -> Frames {
        Frames {
            model: cfg.model,
            mtu: cfg.mtu,
            st: Stats {
                model: Some(cfg.model),
                pid: std::process::id(),
                ..Default::default()
            },
            lro: (cfg.lro && cfg.model == Model::Paravirt).then(Lro::default),
            out: Vec::new(),
            file: StatsFile {
                path: cfg.stats.clone(),
                at: Instant::now(),
                seen: 0,
            },
        }
    }

    /// A frame read from the guest, counted: whether it goes on to the host.
    pub fn from_guest(&mut self, pkt: &[u8]) -> bool {
        let d = &mut self.st.from_guest;
        match check_from_guest(pkt, self.model, self.mtu) {
            Ok(gso) => {
                d.frames += 1;
                d.bytes += pkt.len() as u64;
                d.gso_frames += gso as u64;
                true
            }
            Err(Drop::Oversize) => {
                d.oversize += 1;
                false
            }
            Err(Drop::Malformed) => {
                d.malformed += 1;
                false
            }
        }
    }

    /// A frame read from the host: whether it goes to the guest as it is (counted as written),
    /// or (false) LRO took it, to come out of `flush_lro`.
    pub fn from_host(&mut self, pkt: &[u8]) -> bool {
        self.st.to_guest.bytes += pkt.len() as u64;
        match &mut self.lro {
            Some(l) => {
                l.push(pkt, &mut self.out);
                false
            }
            None => {
                self.count_to_guest(pkt);
                true
            }
        }
    }

    /// Counts a frame written to the guest (and whether it is a GSO super-frame).
    fn count_to_guest(&mut self, pkt: &[u8]) {
        self.st.to_guest.frames += 1;
        if self.model == Model::Paravirt && pkt.len() > 1 && pkt[1] != GSO_NONE {
            self.st.to_guest.gso_frames += 1;
        }
    }

    /// The super-frames LRO holds, flushed at the end of a batch, each counted as written.
    pub fn flush_lro(&mut self) -> Vec<Vec<u8>> {
        let Some(l) = &mut self.lro else {
            return Vec::new();
        };
        l.flush_all(&mut self.out);
        let out = std::mem::take(&mut self.out);
        for o in &out {
            self.count_to_guest(o);
        }
        out
    }

    /// A buffer `flush_lro` gave out, written: LRO reuses it.
    pub fn give_back(&mut self, buf: Vec<u8>) {
        if let Some(l) = &mut self.lro {
            l.recycle(buf);
        }
    }

    pub fn write_failed(&mut self, from_guest: bool) {
        match from_guest {
            true => self.st.from_guest.write_errors += 1,
            false => self.st.to_guest.write_errors += 1,
        }
    }

    /// How long an idle backend may sleep before the stats file is due.
    pub fn wait_ms(&self) -> i32 {
        self.file.wait_ms(&self.st)
    }

    /// Writes the counters now (`up` waits for the first write: the taps are attached).
    pub fn write_now(&mut self) {
        write_stats(&self.file.path, &self.st);
        self.file.at = Instant::now();
    }

    /// Publishes the counters when due (`idle`: the last wait found nothing to move).
    pub fn publish(&mut self, idle: bool) {
        self.file.publish(&mut self.st, self.lro.as_ref(), idle);
    }
}

/// Publishes the counters to the stats file: every 250 ms while frames move, and within 50 ms of
/// the backend going idle after frames were counted, so a reader that waits for a burst to be
/// counted sees it once the burst has been read, not a period later. An idle backend with nothing
/// new writes nothing (200 idle guests cost the host nothing).
struct StatsFile {
    path: PathBuf,
    at: Instant,
    seen: u64,
}

impl StatsFile {
    /// How long the idle backend may sleep: briefly while counted frames are still unpublished.
    fn wait_ms(&self, st: &Stats) -> i32 {
        if Self::seen(st) != self.seen {
            50
        } else {
            1000
        }
    }

    fn seen(st: &Stats) -> u64 {
        st.from_guest.seen() + st.to_guest.seen()
    }

    fn publish(&mut self, st: &mut Stats, lro: Option<&Lro>, idle: bool) {
        let seen = Self::seen(st);
        let since = self.at.elapsed();
        let new = seen != self.seen;
        let settled = idle && new && since >= Duration::from_millis(50);
        if settled || (new && since >= Duration::from_millis(250)) {
            if let Some(l) = lro {
                fill_lro(st, &l.stats);
            }
            write_stats(&self.path, st);
            self.at = Instant::now();
            self.seen = seen;
        }
    }
}

fn fill_lro(st: &mut Stats, l: &LroStats) {
    st.lro_frames_in = l.frames_in;
    st.lro_superframes_out = l.superframes_out;
    st.lro_segments_in = l.segments_in;
    st.lro_buffers_out = l.buffers_out;
    st.lro = Some(LroTotals {
        merge_hist: l.merge_hist_named(),
        flush_reasons: l
            .flush_reasons
            .iter()
            .map(|(k, v)| (k.name().to_string(), *v))
            .collect(),
        bad_checksum: l.bad_checksum,
    });
}

/// Counters over a test: later minus earlier, with the LRO ratio of that span.
pub fn delta(a: &Stats, b: &Stats) -> VnicDelta {
    let d = |x: u64, y: u64| y.saturating_sub(x);
    let dir = |x: &DirStats, y: &DirStats| DirDelta {
        frames: d(x.frames, y.frames),
        bytes: d(x.bytes, y.bytes),
        gso_frames: d(x.gso_frames, y.gso_frames),
        malformed_dropped: d(x.malformed, y.malformed),
        oversize_dropped: d(x.oversize, y.oversize),
        write_errors: d(x.write_errors, y.write_errors),
    };
    let seg = d(a.lro_segments_in, b.lro_segments_in);
    let bufs = d(a.lro_buffers_out, b.lro_buffers_out);
    VnicDelta {
        model: b.model,
        frames_in: d(
            a.from_guest.frames + a.to_guest.frames,
            b.from_guest.frames + b.to_guest.frames,
        ),
        from_guest: dir(&a.from_guest, &b.from_guest),
        to_guest: dir(&a.to_guest, &b.to_guest),
        wakeups: d(a.wakeups, b.wakeups),
        syscalls: d(a.syscalls, b.syscalls),
        io: b.io,
        lro: b.lro.as_ref().map(|l| LroDelta {
            frames_in: d(a.lro_frames_in, b.lro_frames_in),
            superframes_out: d(a.lro_superframes_out, b.lro_superframes_out),
            lro_ratio: if bufs > 0 {
                seg as f64 / bufs as f64
            } else {
                0.0
            },
            totals: l.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_frames_are_checked() {
        assert_eq!(
            check_from_guest(&[0u8; 10], Model::Emulated, 1500),
            Err(Drop::Malformed)
        );
        assert_eq!(
            check_from_guest(&vec![0u8; 1514], Model::Emulated, 1500),
            Ok(false)
        );
        assert_eq!(
            check_from_guest(&vec![0u8; 1600], Model::Emulated, 1500),
            Err(Drop::Oversize)
        );
        let mut p = vec![0u8; VNET_HDR_LEN + 60000];
        VnetHdr {
            gso_type: GSO_TCPV4,
            gso_size: 1448,
            hdr_len: 54,
            ..Default::default()
        }
        .write(&mut p);
        assert_eq!(check_from_guest(&p, Model::Paravirt, 1500), Ok(true));
        VnetHdr {
            gso_type: 9,
            ..Default::default()
        }
        .write(&mut p);
        assert_eq!(
            check_from_guest(&p, Model::Paravirt, 1500),
            Err(Drop::Malformed)
        );
        VnetHdr {
            flags: frame::F_NEEDS_CSUM,
            csum_start: 60000,
            csum_offset: 16,
            ..Default::default()
        }
        .write(&mut p);
        assert_eq!(
            check_from_guest(&p, Model::Paravirt, 1500),
            Err(Drop::Malformed)
        );
        assert_eq!(
            check_from_guest(&p[..5], Model::Paravirt, 1500),
            Err(Drop::Malformed)
        );
    }
}
