//! What every way of moving frames shares: the checks on a frame from the guest, the
//! counters per direction, the LRO toward the guest, and the stats file the counters are
//! published to (written only when they changed: every 250 ms while frames move, within 50 ms of
//! going idle).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::frame::{
    self, VnetHdr, ETH_LEN, GSO_NONE, GSO_TCPV4, GSO_TCPV6, GSO_UDP_L4, VNET_HDR_LEN,
};
use super::lro::{Lro, LroStats};
use crate::records::vnic::{Io, LroTotals, Model};

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
    /// The frames of a `model` backend with this MTU, LRO toward the guest if `lro` (paravirt
    /// only), its counters published to `stats`.
    pub fn new(model: Model, mtu: usize, lro: bool, stats: PathBuf) -> Frames {
        Frames {
            model,
            mtu,
            st: Stats {
                model: Some(model),
                pid: std::process::id(),
                ..Default::default()
            },
            lro: (lro && model == Model::Paravirt).then(Lro::default),
            out: Vec::new(),
            file: StatsFile {
                path: stats,
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

/// How long an idle backend with unpublished frames sleeps before it publishes them.
const SETTLE: Duration = Duration::from_millis(50);

/// How often a busy backend publishes.
const PERIOD: Duration = Duration::from_millis(250);

/// Within how long of its last frame a backend has published it: a wait of `SETTLE`, a second
/// one where the previous publish was too recent, and room for the wake-up on a busy host.
pub const PUBLISHED_WITHIN: Duration = Duration::from_millis(150);

/// Publishes the counters to the stats file: every `PERIOD` while frames move, and within
/// `SETTLE` of the backend going idle after frames were counted (two where it published just
/// before), so a reader that waits for a burst to be counted sees it once the burst has been
/// read, not a period later. An idle backend with nothing new writes nothing (200 idle guests
/// cost the host nothing).
struct StatsFile {
    path: PathBuf,
    at: Instant,
    seen: u64,
}

impl StatsFile {
    /// How long the idle backend may sleep: briefly while counted frames are still unpublished.
    fn wait_ms(&self, st: &Stats) -> i32 {
        if Self::seen(st) != self.seen {
            SETTLE.as_millis() as i32
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
        let settled = idle && new && since >= SETTLE;
        if settled || (new && since >= PERIOD) {
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
