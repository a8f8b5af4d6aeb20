//! The device model process: moves frames between the guest's tap and the host's tap.
//! `emulated`: one frame per read and write, no virtio-net header, no offloads (the guest stack
//! segments to MTU and checksums, as with an emulated e1000). `paravirt`: virtio-net headers and
//! offloads (csum, TSO4, TSO6) on both taps, GSO super-frames passed through whole, each side
//! drained to EAGAIN per edge-triggered wake-up, and optional software LRO toward the guest.
//! Malformed or oversize frames from the guest are dropped and counted. Counters go to a JSON
//! file every quarter second.

use super::Error;
use serde::{Deserialize, Serialize};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::frame::{self, VnetHdr, ETH_LEN, GSO_NONE, GSO_TCPV4, GSO_TCPV6, VNET_HDR_LEN};
use super::lro::{Lro, LroStats};
use super::tap::{self, Tap};
use crate::records::vnic::{DirDelta, LroDelta, LroTotals, Model, VnicDelta};

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
const BUF: usize = 65536 + 256;
/// Frames moved per direction before the other side gets a turn.
const BATCH: usize = 256;

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
            if !matches!(h.gso_type & 0x7f, GSO_NONE | GSO_TCPV4 | GSO_TCPV6) {
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
    let _ = crate::sys::file::replace(path, &serde_json::to_vec(s).unwrap_or_default(), 0o600);
}

pub fn forward_frames(cfg: Config) -> Result<(), Error> {
    let vnet = cfg.model == Model::Paravirt;
    crate::sys::enter_netns(&cfg.guest_ns)?;
    let guest = Tap::attach(&cfg.guest_tap, vnet)?;
    crate::sys::enter_netns(&cfg.host_ns)?;
    let host = Tap::attach(&cfg.host_tap, vnet)?;
    let offload = if vnet {
        tap::TUN_F_CSUM | tap::TUN_F_TSO4 | tap::TUN_F_TSO6
    } else {
        0
    };
    guest.set_offload(offload)?;
    host.set_offload(offload)?;
    let ep = crate::sys::Epoll::new().map_err(|e| Error::Failed(format!("epoll: {e}")))?;
    for (i, t) in [&guest, &host].iter().enumerate() {
        ep.add_input(t.as_raw_fd(), i as u64)
            .map_err(|e| Error::Failed(format!("epoll_ctl: {e}")))?;
    }
    let mut st = Stats {
        model: Some(cfg.model),
        pid: std::process::id(),
        ..Default::default()
    };
    let mut lro = (cfg.lro && vnet).then(Lro::default);
    write_stats(&cfg.stats, &st);
    let mut stats_out = StatsFile {
        path: cfg.stats.clone(),
        at: Instant::now(),
        seen: 0,
    };
    let mut buf = vec![0u8; BUF];
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(BATCH);
    // Pending work per side: edge-triggered, so a side stays "ready" until read to EAGAIN.
    let mut ready = [true, true];
    let mut tags = Vec::with_capacity(8);
    loop {
        if !ready[0] && !ready[1] {
            ep.wait(stats_out.wait_ms(&st), &mut tags)
                .map_err(|e| Error::Failed(format!("epoll_wait: {e}")))?;
            st.wakeups += 1;
            for &t in &tags {
                ready[t as usize] = true;
            }
        }
        // Guest → host.
        if ready[0] {
            ready[0] = drain(&guest, &mut buf, |pkt| {
                match check_from_guest(pkt, cfg.model, cfg.mtu) {
                    Ok(gso) => {
                        st.from_guest.frames += 1;
                        st.from_guest.bytes += pkt.len() as u64;
                        st.from_guest.gso_frames += gso as u64;
                        if host.write(pkt).is_err() {
                            st.from_guest.write_errors += 1;
                        }
                    }
                    Err(Drop::Oversize) => st.from_guest.oversize += 1,
                    Err(Drop::Malformed) => st.from_guest.malformed += 1,
                }
            })
            .map_err(|e| {
                Error::Failed(format!(
                    "reading {}: {e} (the guest's link went away)",
                    cfg.guest_tap
                ))
            })?;
        }
        // Host → guest (through LRO when on), written at the end of each batch.
        if ready[1] {
            ready[1] = drain(&host, &mut buf, |pkt| {
                st.to_guest.bytes += pkt.len() as u64;
                match &mut lro {
                    Some(l) => l.push(pkt, &mut out),
                    None => to_guest(&guest, &mut st.to_guest, pkt, vnet),
                }
            })
            .map_err(|e| Error::Failed(format!("reading {}: {e}", cfg.host_tap)))?;
            if let Some(l) = &mut lro {
                l.flush_all(&mut out);
                for o in out.drain(..) {
                    to_guest(&guest, &mut st.to_guest, &o, vnet);
                    l.recycle(o);
                }
            }
        }
        stats_out.publish(&mut st, lro.as_ref(), !ready[0] && !ready[1]);
    }
}

/// Publishes the counters to the stats file: every 250 ms while busy, and within 50 ms of the
/// backend going idle after frames were counted, so a reader that waits for a burst to be counted
/// sees it once the burst has been read, not a period later.
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
            250
        }
    }

    fn seen(st: &Stats) -> u64 {
        st.from_guest.seen() + st.to_guest.seen()
    }

    fn publish(&mut self, st: &mut Stats, lro: Option<&Lro>, idle: bool) {
        let seen = Self::seen(st);
        let since = self.at.elapsed();
        let settled = idle && seen != self.seen && since >= Duration::from_millis(50);
        if settled || since >= Duration::from_millis(250) {
            if let Some(l) = lro {
                fill_lro(st, &l.stats);
            }
            write_stats(&self.path, st);
            self.at = Instant::now();
            self.seen = seen;
        }
    }
}

/// Reads frames from a tap until it is empty (Ok(false): wait for the next edge) or a batch is
/// done (Ok(true): still ready, so the other side gets its turn first), handing each to `each`.
fn drain(tap: &Tap, buf: &mut [u8], mut each: impl FnMut(&[u8])) -> std::io::Result<bool> {
    for _ in 0..BATCH {
        match tap.read(buf)? {
            Some(n) => each(&buf[..n]),
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// Writes one frame to the guest's tap, counting it (and whether it is a GSO super-frame).
fn to_guest(guest: &Tap, st: &mut DirStats, pkt: &[u8], vnet: bool) {
    st.frames += 1;
    if vnet && pkt.len() > 1 && pkt[1] != GSO_NONE {
        st.gso_frames += 1;
    }
    if guest.write(pkt).is_err() {
        st.write_errors += 1;
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
