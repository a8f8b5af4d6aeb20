//! The device model process: attaches the guest's tap and the host's tap, sets their offloads,
//! and moves frames between them until one goes away. `emulated`: no virtio-net header and no
//! offloads (the guest stack segments to MTU and checksums, as with an emulated e1000), a read
//! and a write per frame (`rw`). `paravirt`: virtio-net headers and offloads (csum, TSO, USO) on
//! both taps, GSO super-frames passed through whole, io_uring (`uring`; `rw` where the kernel
//! has none), optional software LRO toward the guest. What both share is in `frames`.

use super::Error;
use std::path::PathBuf;

pub use super::frames::{check_from_guest, DirStats, Drop, Frames, Stats, BUF, PUBLISHED_WITHIN};
use super::tap::{self, Tap};
use crate::records::vnic::{DirDelta, Io, LroDelta, Model, VnicDelta};

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

/// The environment variable that picks the paravirtual backend's I/O loop: `uring` (the default
/// where the kernel has io_uring) or `rw` (a read and a write per frame, what a kernel without
/// io_uring gets), to compare the two or to run the fallback on a host that has both.
pub const IO_ENV: &str = "VNETLAB_VNIC_IO";

/// The I/O loop `VNETLAB_VNIC_IO` asks for (None: unset, the best the kernel has).
pub fn io_wanted() -> Result<Option<Io>, Error> {
    match std::env::var(IO_ENV) {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Ok(v) => parse_io(&v),
        Err(_) => parse_io("(not UTF-8)"),
    }
}

/// A value of `VNETLAB_VNIC_IO`.
fn parse_io(v: &str) -> Result<Option<Io>, Error> {
    match v {
        "uring" => Ok(Some(Io::Uring)),
        "rw" => Ok(Some(Io::ReadWrite)),
        _ => Err(Error::Input(format!(
            "{IO_ENV}={}: use uring or rw, or leave it unset",
            crate::text::clip(v)
        ))),
    }
}

pub fn forward_frames(cfg: Config) -> Result<(), Error> {
    let vnet = cfg.model == Model::Paravirt;
    let wanted = io_wanted()?;
    crate::sys::enter_netns(&cfg.guest_ns)?;
    let guest = Tap::attach(&cfg.guest_tap, vnet)?;
    crate::sys::enter_netns(&cfg.host_ns)?;
    let host = Tap::attach(&cfg.host_tap, vnet)?;
    set_offloads(&guest, &host, vnet)?;
    let mut f = Frames::new(cfg.model, cfg.mtu, cfg.lro, cfg.stats.clone());
    // The paravirtual model batches like a virtqueue; the emulated one exits per frame.
    if vnet && wanted != Some(Io::ReadWrite) {
        match super::uring::ring() {
            Ok(ring) => {
                f.st.io = Some(Io::Uring);
                f.write_now();
                return super::uring::run(ring, &guest, &host, &mut f);
            }
            Err(e) if wanted == Some(Io::Uring) => {
                return Err(Error::Failed(format!(
                    "{IO_ENV}=uring, but this kernel runs no io_uring here: {e}"
                )))
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
    fn the_io_loop_is_uring_or_rw_and_anything_else_is_named() {
        assert_eq!(parse_io("uring").unwrap(), Some(Io::Uring));
        assert_eq!(parse_io("rw").unwrap(), Some(Io::ReadWrite));
        for bad in ["", "RW", "epoll", "uring "] {
            let e = parse_io(bad).unwrap_err().to_string();
            assert!(
                e.starts_with("VNETLAB_VNIC_IO=") && e.contains("use uring or rw"),
                "{e}"
            );
        }
    }
}
