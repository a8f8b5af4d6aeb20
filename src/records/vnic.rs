//! A software vNIC backend's counters over a test, as the stored document keeps them (a
//! result's `vnic` object per guest): frames each way, super-frames, drops, and the LRO's ratio.
//! The backend (`vnic::backend`) counts and fills them.

use serde::{Deserialize, Serialize};

/// A backend's device model: `emulated` (one frame per read and write, no offloads) or
/// `paravirt` (virtio-net headers, offloads, GSO super-frames whole).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    Emulated,
    Paravirt,
}

/// The LRO's totals since the backend started: how many segments each buffer held, why trains
/// were flushed, segments with a bad checksum.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LroTotals {
    pub merge_hist: std::collections::BTreeMap<String, u64>,
    pub flush_reasons: std::collections::BTreeMap<String, u64>,
    pub bad_checksum: u64,
}

/// One direction's counters over a test.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct DirDelta {
    pub frames: u64,
    pub bytes: u64,
    pub gso_frames: u64,
    pub malformed_dropped: u64,
    pub oversize_dropped: u64,
    pub write_errors: u64,
}

/// LRO over a test: frames in, super-frames out, segments per buffer (paper 2's ratio).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LroDelta {
    pub frames_in: u64,
    pub superframes_out: u64,
    pub lro_ratio: f64,
    pub totals: LroTotals,
}

/// How a backend moves frames: `read(2)`/`write(2)` per frame after a level-triggered epoll
/// wake-up, or io_uring (multishot reads into provided buffers, writes submitted with the wait).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Io {
    ReadWrite,
    Uring,
}

impl std::fmt::Display for Io {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Io::ReadWrite => "read/write",
            Io::Uring => "io_uring",
        })
    }
}

/// A backend's counters over a test (its `vnic` object in a result).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct VnicDelta {
    pub model: Option<Model>,
    pub frames_in: u64,
    pub from_guest: DirDelta,
    pub to_guest: DirDelta,
    /// Times the backend woke from its wait with work to do.
    pub wakeups: u64,
    /// System calls the backend made to move frames (waits, reads, writes, ring entries).
    #[serde(default)]
    pub syscalls: u64,
    /// How it moved them (absent in documents stored before this was recorded).
    #[serde(default)]
    pub io: Option<Io>,
    pub lro: Option<LroDelta>,
}

impl VnicDelta {
    /// Frames the backend read from either tap (dropped ones too; toward the guest, before LRO
    /// merged them).
    pub fn frames_read(&self) -> u64 {
        let g = &self.from_guest;
        let to = match &self.lro {
            Some(l) => l.frames_in,
            None => self.to_guest.frames,
        };
        g.frames + g.malformed_dropped + g.oversize_dropped + to
    }

    /// Wake-ups and system calls per frame read, if any was.
    pub fn per_frame(&self) -> Option<(f64, f64)> {
        let f = self.frames_read();
        (f > 0).then(|| {
            (
                self.wakeups as f64 / f as f64,
                self.syscalls as f64 / f as f64,
            )
        })
    }
}
