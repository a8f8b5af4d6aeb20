//! One test as asked, whichever door it came in by: `vnetlab test`'s flags and an experiment's
//! point both fill a `TestDesc` from values already parsed, and this is the one place a test
//! becomes the engine's `Spec` and the loads beside it (VDI's desktops as its sessions, the movie's
//! play time and its downloads, the desktops' own load).

use crate::engine::spec::Spec;
use crate::engine::vdi::profile::VdiSpec;
use crate::vocab::{Congestion, Pacing, TestKind};

use super::load::{Load, Movie};

/// A test as asked: what runs, how long, how paced, and what runs beside it.
#[derive(Clone, Debug)]
pub struct TestDesc {
    pub test: TestKind,
    /// Send size for streams.
    pub msg: usize,
    /// Request and response sizes for RR tests (and VDI's request size).
    pub rr: (usize, usize),
    /// Socket buffers of the initiator's and of the server's sockets.
    pub bufs: (Option<usize>, Option<usize>),
    pub duration: f64,
    pub warmup: f64,
    /// Streams (or RR connections) per initiator; VDI runs one session per desktop instead.
    pub parallel: u32,
    /// Pacing per stream, bits/s, and how it is met.
    pub rate: Option<u64>,
    pub pacing: Pacing,
    pub congestion: Congestion,
    pub nodelay: bool,
    pub zerocopy: bool,
    /// Length of a reported interval, seconds.
    pub interval: f64,
    /// Send exactly this many bytes per stream (then `duration` is the time limit).
    pub bytes: Option<u64>,
    pub verify: bool,
    /// Both ways at once (iperf3's --bidir).
    pub bidir: bool,
    /// VDI: the session profile and the desktops, one session each.
    pub vdi: Option<(VdiSpec, u32)>,
    /// VDI: paper 1's movie, downloaded by each desktop's guest while its session plays.
    pub movie: Option<Movie>,
    /// Interfering load beside the test.
    pub interference: Vec<Load>,
    /// Every guest's own load, % of one core.
    pub desktop_pct: Option<f64>,
}

impl Default for TestDesc {
    fn default() -> Self {
        let s = Spec::default();
        TestDesc {
            test: s.test,
            msg: s.msg,
            rr: (s.req, s.resp),
            bufs: (None, None),
            duration: s.duration,
            warmup: s.warmup,
            parallel: s.parallel,
            rate: None,
            pacing: s.pacing,
            congestion: s.congestion,
            nodelay: false,
            zerocopy: false,
            interval: s.interval,
            bytes: None,
            verify: false,
            bidir: false,
            vdi: None,
            movie: None,
            interference: vec![],
            desktop_pct: None,
        }
    }
}

impl TestDesc {
    /// The desktops (sessions) of a VDI test; 1 otherwise.
    pub fn desktops(&self) -> u32 {
        self.vdi.as_ref().map_or(1, |v| v.1)
    }

    /// The engine's spec: a VDI test runs one session per desktop, and the movie plays its scaled
    /// 253 s from the first frame (no warm-up to leave out). Not yet validated (`checked_spec`).
    pub fn spec(&self) -> Spec {
        let (duration, warmup) = match &self.movie {
            Some(m) => (m.play_s(), 0.0),
            None => (self.duration, self.warmup),
        };
        Spec {
            test: self.test,
            msg: self.msg,
            req: self.rr.0,
            resp: self.rr.1,
            local_buf: self.bufs.0,
            remote_buf: self.bufs.1,
            duration,
            warmup,
            parallel: match &self.vdi {
                Some((_, desktops)) => *desktops,
                None => self.parallel,
            },
            rate: self.rate,
            pacing: self.pacing,
            congestion: self.congestion.clone(),
            nodelay: self.nodelay,
            zerocopy: self.zerocopy,
            interval: self.interval,
            bytes: self.bytes,
            verify: self.verify,
            bidir: self.bidir,
            vdi: self.vdi.as_ref().map(|v| v.0.clone()),
            report_cpu: false,
            clock_offset_ns: 0,
            key: 0,
        }
    }

    /// The spec, checked as the engine will check it.
    pub fn checked_spec(&self) -> Result<Spec, crate::engine::Error> {
        let s = self.spec();
        s.validate()?;
        Ok(s)
    }

    /// What runs beside the test: the interference, the desktops' own load, the movie's downloads
    /// (one per desktop).
    pub fn loads(&self) -> Vec<Load> {
        let mut loads = self.interference.clone();
        if let Some(pct) = self.desktop_pct {
            loads.push(Load::Desktops { pct });
        }
        if let Some(m) = &self.movie {
            loads.push(m.download(self.desktops()));
        }
        loads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vdi_test_runs_a_session_per_desktop_and_the_movie_plays_from_its_first_frame() {
        let office = crate::engine::vdi::profile::find("office", None).unwrap();
        let d = TestDesc {
            test: TestKind::Vdi,
            vdi: Some((office, 4)),
            movie: Some(Movie {
                t_buffer_s: 16.0,
                time_scale: 0.1,
            }),
            desktop_pct: Some(20.0),
            ..TestDesc::default()
        };
        let s = d.checked_spec().unwrap();
        assert_eq!(s.parallel, 4);
        assert!((s.duration - 25.3).abs() < 1e-9 && s.warmup == 0.0);
        let loads = d.loads();
        assert_eq!(loads.len(), 2);
        assert!(matches!(loads[0], Load::Desktops { pct } if pct == 20.0));
        assert!(matches!(loads[1], Load::Download { guests: 4, .. }));
        let plain = TestDesc::default();
        assert_eq!(plain.spec().parallel, 1);
        assert!(plain.loads().is_empty());
    }
}
