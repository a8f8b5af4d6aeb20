//! Expands an experiment's matrix into points, grouped so each lab (mode, guests, offloads, MTU,
//! wire rate) is built once and every point that uses it runs before it is removed.

use serde::Serialize;

use super::file::ExperimentFile;
use crate::engine::spec::Spec;
use crate::engine::vdi::profile::VdiSpec;
use crate::lab::topology::{Topology, Wire};
use crate::measure::desc::TestDesc;
use crate::measure::load::Movie;
use crate::vocab::{Direction, Gro, Mode, TestKind};

/// One lab the run builds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LabConfig {
    pub mode: Mode,
    pub guests: u32,
    pub gro: Gro,
    pub tso: bool,
    pub lro: bool,
    pub mtu: u32,
    /// bits/s, None = unshaped.
    pub wire_rate: Option<u64>,
    /// The other guest's datapath, in a lab of its own beside this one (`udp-flood@other`).
    pub other: Option<Mode>,
}

impl LabConfig {
    pub fn topology(&self, lab_name: &str) -> Topology {
        Topology {
            name: lab_name.into(),
            mode: self.mode,
            guests: self.guests,
            gro: self.gro,
            tso: self.tso,
            lro: self.lro,
            mtu: self.mtu,
            wire: Wire {
                rate: self.wire_rate.map(crate::units::Rate),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// The other guest's lab beside this one: one guest on the other datapath, a wire of its
    /// own at the same rate, the same offloads and MTU.
    pub fn other_topology(&self, lab_name: &str) -> Option<Topology> {
        let mode = self.other?;
        Some(Topology {
            mode,
            guests: 1,
            lro: false,
            ..self.topology(lab_name)
        })
    }
}

/// One measured point.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// 1-based position in the run.
    pub seq: u32,
    pub lab: LabConfig,
    pub direction: Direction,
    pub spec: Spec,
    /// Repetitions of the point in each of its labs.
    pub repeat: u32,
    /// Fresh labs the point runs in (the run's rounds): `repeat` × `rounds` repeats in all.
    pub rounds: u32,
    /// Interfering load and the desktops' own load beside the test.
    pub loads: Vec<crate::measure::load::Load>,
}

/// Every point of an experiment, grouped by lab: each lab's settings (listed, or crossed) with
/// each guest count, and in each lab every direction, test, message size, offered load and
/// socket buffer; then each VDI point per profile and desktop count, and every point per load.
pub fn expand(e: &ExperimentFile) -> Vec<Point> {
    let m = &e.matrix;
    let mut drafts = Vec::new();
    for s in m.settings() {
        for &guests in &m.guests {
            let lab = LabConfig {
                mode: s.mode,
                guests,
                gro: s.gro,
                tso: s.tso,
                lro: s.lro,
                mtu: s.mtu,
                wire_rate: s.wire.0.map(|r| r.0),
                other: m.other,
            };
            drafts.extend(in_lab(e, &lab));
        }
    }
    widen(drafts, m, e.point.time_scale)
        .into_iter()
        .enumerate()
        .map(|(i, d)| Point {
            seq: i as u32 + 1,
            lab: d.lab,
            direction: d.direction,
            spec: d.desc.spec(),
            repeat: e.point.repeat,
            rounds: e.point.rounds,
            loads: d.desc.loads(),
        })
        .collect()
}

/// A point before it is numbered: its lab, direction and test as described.
struct Draft {
    lab: LabConfig,
    direction: Direction,
    desc: TestDesc,
}

/// The offered loads per stream: the matrix's, else `[point] rate` (None: as fast as it goes).
fn offered(e: &ExperimentFile) -> Vec<Option<u64>> {
    match &e.matrix.loads {
        Some(l) => l.iter().map(|x| x.0).collect(),
        None => vec![e.point.rate.map(|r| r.0)],
    }
}

/// One lab's points: directions (guest-to-guest where it has two guests) × tests × message sizes
/// (one request/response size for RR and VDI) × offered loads × socket buffers.
fn in_lab(e: &ExperimentFile, lab: &LabConfig) -> Vec<Draft> {
    let (m, p) = (&e.matrix, &e.point);
    let mut out = Vec::new();
    for &direction in &m.directions {
        if direction == Direction::GuestToGuest && lab.guests < 2 {
            continue;
        }
        for &test in &m.tests {
            let sizes: Vec<usize> = if test.is_rr() || test == TestKind::Vdi {
                vec![p.rr.0]
            } else {
                m.messages.iter().map(|s| s.0).collect()
            };
            for msg in sizes {
                for rate in offered(e) {
                    for b in &m.socket_buffers {
                        out.push(Draft {
                            lab: lab.clone(),
                            direction,
                            desc: desc_of(p, test, msg, rate, b.0),
                        });
                    }
                }
            }
        }
    }
    out
}

/// A point's test from the file's point settings.
fn desc_of(
    p: &super::file::PointSettings,
    test: TestKind,
    msg: usize,
    rate: Option<u64>,
    buf: Option<usize>,
) -> TestDesc {
    TestDesc {
        test,
        msg,
        rr: (p.rr.0, p.rr.1),
        bufs: (buf, buf),
        duration: p.duration,
        warmup: p.warmup,
        parallel: p.parallel,
        rate,
        // [point] pacing is for the paced streams of the matrix; RR and unpaced points have
        // nothing to pace.
        pacing: match (rate, test) {
            (Some(_), TestKind::TcpStream | TestKind::TcpMaerts | TestKind::UdpStream) => p.pacing,
            _ => Default::default(),
        },
        congestion: p.congestion.clone(),
        nodelay: p.nodelay,
        interval: (p.duration / 10.0).clamp(0.1, 1.0),
        ..TestDesc::default()
    }
}

/// Each VDI point once per profile and desktop count (host-to-client only), then every point once
/// per movie, interfering load and desktop load.
fn widen(drafts: Vec<Draft>, m: &super::file::Matrix, scale: f64) -> Vec<Draft> {
    let mut out = Vec::new();
    for d in drafts {
        let sessions: Vec<Option<(VdiSpec, u32)>> = match (d.desc.test, &m.profiles) {
            (TestKind::Vdi, _) if d.direction != Direction::HostToClient => continue,
            (TestKind::Vdi, Some(profiles)) => profiles
                .iter()
                .flat_map(|v| m.desktops.iter().map(move |&n| Some((v.0.clone(), n))))
                .collect(),
            _ => vec![None],
        };
        for vdi in sessions {
            for movie in movies(d.desc.test, m, scale) {
                for i in &m.interference {
                    for &dl in &m.desktop_load {
                        out.push(Draft {
                            lab: d.lab.clone(),
                            direction: d.direction,
                            desc: TestDesc {
                                vdi: vdi.clone(),
                                movie,
                                interference: i.0.clone(),
                                desktop_pct: (dl > 0).then_some(f64::from(dl)),
                                ..d.desc.clone()
                            },
                        });
                    }
                }
            }
        }
    }
    out
}

/// A VDI point's movies (one per buffering time; none without), other tests' none.
fn movies(test: TestKind, m: &super::file::Matrix, scale: f64) -> Vec<Option<Movie>> {
    if test != TestKind::Vdi || m.movie.is_empty() {
        return vec![None];
    }
    m.movie
        .iter()
        .map(|&t| {
            Some(Movie {
                t_buffer_s: t,
                time_scale: scale,
            })
        })
        .collect()
}

/// Above this many points a run needs `--force`; above `HARD_MAX` it is refused outright.
pub const MAX_POINTS: u128 = 100_000;
pub const HARD_MAX: u128 = 10_000_000;

/// How many points `expand` would make, counted without making them (a matrix of 10^9 points
/// must be refused before anything is allocated).
pub fn count(e: &ExperimentFile) -> u128 {
    let m = &e.matrix;
    let n = |v: usize| v as u128;
    let loads = m.loads.as_ref().map_or(1, |l| n(l.len()));
    let sessions =
        n(m.profiles.as_ref().map_or(0, Vec::len)) * n(m.desktops.len()) * n(m.movie.len().max(1));
    let per_test = |t: &TestKind, d: Direction| match t {
        TestKind::Vdi if d == Direction::HostToClient => sessions,
        TestKind::Vdi => 0,
        t if t.is_rr() => 1,
        _ => n(m.messages.len()),
    };
    let widen = n(m.interference.len()) * n(m.desktop_load.len());
    let per_lab = loads * n(m.socket_buffers.len()) * widen;
    let mut total: u128 = 0;
    for &g in &m.guests {
        let tests: u128 = m
            .directions
            .iter()
            .filter(|&&d| d != Direction::GuestToGuest || g >= 2)
            .map(|&d| m.tests.iter().map(|t| per_test(t, d)).sum::<u128>())
            .sum();
        total = total.saturating_add(tests * per_lab);
    }
    total.saturating_mul(m.settings().len() as u128)
}

/// Seconds a point takes in one lab, roughly (for the ETA before any point has run).
pub fn estimate_round_s(p: &Point) -> f64 {
    (p.spec.warmup + p.spec.duration + 0.8) * p.repeat as f64
}

/// Seconds a point takes over all its rounds, roughly.
pub fn estimate_s(p: &Point) -> f64 {
    estimate_round_s(p) * p.rounds.max(1) as f64
}

pub fn describe(p: &Point) -> String {
    let size = if p.spec.test.is_rr() {
        format!("{},{}", p.spec.req, p.spec.resp)
    } else {
        p.spec.msg.to_string()
    };
    let buf = p
        .spec
        .local_buf
        .map(|b| format!(" buf {b}"))
        .unwrap_or_default();
    let rate = p
        .lab
        .wire_rate
        .map(|r| format!(" wire {}", crate::units::Rate(r)))
        .unwrap_or_default();
    let load = p
        .spec
        .rate
        .map(|r| format!(" at {}", crate::units::Rate(r)))
        .unwrap_or_default();
    format!(
        "{:>3}  {:<8} {:>2} guest(s) {:<17} {:<10} {:>7} B{}{load} gro {:?} tso {}{} mtu {}{}",
        p.seq,
        p.lab.mode.to_string(),
        p.lab.guests,
        p.direction.name(),
        p.spec.test.to_string(),
        size,
        buf,
        p.lab.gro,
        if p.lab.tso { "on" } else { "off" },
        if p.lab.lro { " lro guest" } else { "" },
        p.lab.mtu,
        rate
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::TestKind;

    #[test]
    fn matrix_expands_grouped_by_lab() {
        let text = "name = \"m\"\n[matrix]\nmodes = [\"bridge\", \"nat\"]\nmessages = [\"64\", \"1K\", \"8K\"]\ntests = [\"TCP_STREAM\", \"TCP_RR\"]\ndirections = [\"guest-to-client\", \"client-to-guest\"]\n";
        let e = super::super::file::parse(text, "m.toml").unwrap();
        let pts = expand(&e);
        // Per mode: 2 directions × (3 stream sizes + 1 RR) = 8.
        assert_eq!(pts.len(), 16);
        assert!(pts[..8].iter().all(|p| p.lab.mode == Mode::Bridge));
        assert_eq!(
            pts.iter().map(|p| p.seq).collect::<Vec<_>>(),
            (1..=16).collect::<Vec<_>>()
        );
        assert_eq!(
            pts.iter()
                .filter(|p| p.spec.test == TestKind::TcpRr)
                .count(),
            4
        );
        assert!(describe(&pts[0]).contains("guest-to-client"));
    }

    #[test]
    fn lro_applies_to_paravirt_only() {
        let text =
            "name = \"m\"\n[matrix]\nmodes = [\"native\", \"paravirt\"]\nlro = [false, true]\n";
        let e = super::super::file::parse(text, "m.toml").unwrap();
        let pts = expand(&e);
        assert_eq!(pts.len(), 3);
        assert!(pts
            .iter()
            .filter(|p| p.lab.lro)
            .all(|p| p.lab.mode == Mode::Paravirt));
        let bad = "name = \"m\"\n[matrix]\nmodes = [\"bridge\"]\nlro = [true]\n";
        assert!(super::super::file::parse(bad, "m.toml")
            .unwrap_err()
            .to_string()
            .contains("paravirt"));
    }

    #[test]
    fn labs_given_whole_each_keep_their_own_wire_and_offloads() {
        let text = r#"
name = "p1"
[matrix]
labs = [
  { mode = "macvlan", wire = "unshaped" },
  { mode = "emulated" },
  { mode = "paravirt", wire = "1gbit", tso = false, gro = "off", lro = true },
]
messages = ["64", "8K"]
"#;
        let e = super::super::file::parse(text, "p1.toml").unwrap();
        let pts = expand(&e);
        assert_eq!(pts.len(), 6);
        assert_eq!(count(&e), 6);
        let labs: Vec<&LabConfig> = pts.iter().step_by(2).map(|p| &p.lab).collect();
        assert_eq!(
            labs.iter().map(|l| l.mode).collect::<Vec<_>>(),
            [Mode::Macvlan, Mode::Emulated, Mode::Paravirt]
        );
        // Not crossed: the 1 Gb/s wire and the offloads belong to the paravirt lab alone.
        assert_eq!(labs[0].wire_rate, None);
        assert_eq!(labs[1].wire_rate, None);
        assert_eq!(labs[2].wire_rate, Some(1_000_000_000));
        assert!(labs[0].tso && !labs[2].tso && labs[2].lro);
        assert_eq!((labs[1].gro, labs[2].gro), (Gro::Both, Gro::Off));
        assert_eq!(
            e.matrix.modes(),
            [Mode::Macvlan, Mode::Emulated, Mode::Paravirt]
        );
        let refused = |extra: &str, says: &str| {
            let t = text.replace("messages", &format!("{extra}\nmessages"));
            let err = super::super::file::parse(&t, "p1.toml")
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{extra}: {err}");
        };
        refused("modes = [\"bridge\"]", "one of them");
        // A list to cross beside labs that leave the field out: which value would they take?
        refused("gro = [\"off\", \"host\"]", "name gro in every lab");
        let lro_macvlan = text.replace("mode = \"emulated\"", "mode = \"emulated\", lro = true");
        let err = super::super::file::parse(&lro_macvlan, "p1.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("software LRO lives in the paravirt backend"),
            "{err}"
        );
        let none = "name = \"n\"\n[matrix]\nmessages = [\"64\"]\n";
        assert!(super::super::file::parse(none, "n.toml").is_err());
    }

    #[test]
    fn the_other_guests_flood_builds_its_lab_beside_every_lab() {
        let text = "name = \"p3\"\n[matrix]\nmodes = [\"macvlan\", \"paravirt\"]\nother = \"paravirt\"\ninterference = [\"none\", \"udp-flood@other,300mbit\"]\nwire_rates = [\"1gbit\"]\n";
        let e = super::super::file::parse(text, "p3.toml").unwrap();
        let pts = expand(&e);
        assert_eq!(pts.len(), 4);
        // The load-free point runs in the same labs as the flooded one.
        assert!(pts.iter().all(|p| p.lab.other == Some(Mode::Paravirt)));
        let t = pts[0].lab.other_topology("x1o").unwrap();
        assert_eq!(
            (t.mode, t.guests, t.name.as_str()),
            (Mode::Paravirt, 1, "x1o")
        );
        assert_eq!(t.wire.rate, Some(crate::units::Rate(1_000_000_000)));
        assert_eq!(pts[1].loads[0].to_string(), "udp-flood@other,300mbit");
        let bad = |t: &str, says: &str| {
            let err = super::super::file::parse(t, "p3.toml")
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{err}");
        };
        bad(
            &text.replace("other = \"paravirt\"\n", ""),
            "name its datapath",
        );
        bad(
            &text.replace(", \"udp-flood@other,300mbit\"", ""),
            "which no interference names",
        );
        bad(
            &text.replace("other = \"paravirt\"", "other = \"native\""),
            "a virtual datapath",
        );
    }

    #[test]
    fn points_are_counted_without_being_made() {
        let text = "name = \"m\"\n[matrix]\nmodes = [\"bridge\", \"paravirt\"]\nguests = [2, 3]\nlro = [false, true]\ntests = [\"TCP_STREAM\", \"TCP_RR\"]\nmessages = [\"1K\", \"8K\"]\ndirections = [\"guest-to-client\", \"guest-to-guest\"]\nloads = [\"max\", \"1gbit\"]\n";
        let e = super::super::file::parse(text, "m.toml").unwrap();
        assert_eq!(count(&e), expand(&e).len() as u128);
        // 10 values on each of 9 axes: 10^9 points, counted at once.
        let ten = |f: &dyn Fn(usize) -> String| {
            (0..10)
                .map(|i| format!("\"{}\"", f(i)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let big = format!(
            "name = \"b\"\n[matrix]\nmodes = [\"bridge\"]\nguests = [{}]\nmessages = [{}]\nsocket_buffers = [{}]\nmtu = [{}]\nwire_rates = [{}]\nloads = [{}]\ntso = [true, false]\ngro = [\"off\", \"host\", \"guest\", \"both\"]\n",
            (1..=10).map(|g| g.to_string()).collect::<Vec<_>>().join(", "),
            ten(&|i| format!("{}K", i + 1)),
            ten(&|i| format!("{}K", i + 64)),
            (0..10).map(|i| (1500 + i).to_string()).collect::<Vec<_>>().join(", "),
            ten(&|i| format!("{}mbit", i + 100)),
            ten(&|i| format!("{}mbit", i + 10)),
        );
        let e = super::super::file::parse(&big, "b.toml").unwrap();
        assert_eq!(count(&e), 10u128.pow(6) * 8);
    }

    #[test]
    fn a_movie_is_a_vdi_point_per_buffering_time_that_plays_from_its_first_frame() {
        let text = "name = \"m\"\n[matrix]\nmodes = [\"macvlan\"]\nguests = [2]\ntests = [\"VDI\", \"TCP_STREAM\"]\nprofiles = [\"video-1080p\"]\ndesktops = [2]\ndirections = [\"host-to-client\"]\nmovie = [16, 60]\n[point]\ntime_scale = 0.05\n";
        let e = super::super::file::parse(text, "m.toml").unwrap();
        let pts = expand(&e);
        assert_eq!(count(&e), pts.len() as u128);
        let movies: Vec<&Point> = pts
            .iter()
            .filter(|p| p.spec.test == TestKind::Vdi)
            .collect();
        assert_eq!(movies.len(), 2);
        for (p, t) in movies.iter().zip([16.0, 60.0]) {
            assert!((p.spec.duration - 253.0 * 0.05).abs() < 1e-9 && p.spec.warmup == 0.0);
            let m = p.loads.iter().find_map(Movie::of).unwrap();
            assert!(m.t_buffer_s == t && (m.time_scale - 0.05).abs() < 1e-9);
        }
        // The stream gets no movie.
        assert!(pts
            .iter()
            .any(|p| p.spec.test == TestKind::TcpStream && p.loads.is_empty()));
        for (bad, says) in [
            (text.replace("[16, 60]", "[5]"), "16 s"),
            (
                text.replace("\"VDI\", ", "")
                    .replace("profiles = [\"video-1080p\"]\n", ""),
                "VDI scenario",
            ),
        ] {
            let e = super::super::file::parse(&bad, "m.toml")
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn vdi_points_are_one_per_profile_and_desktop_count_times_each_load() {
        let text = "name = \"v\"\n[matrix]\nmodes = [\"bridge\", \"macvlan\"]\nguests = [2]\ntests = [\"VDI\", \"TCP_RR\"]\nmessages = [\"1K\", \"8K\"]\nprofiles = [\"office\", \"video-1080p\"]\ndesktops = [1, 4]\ndirections = [\"host-to-client\", \"guest-to-client\"]\ninterference = [\"none\", \"cpu@host\", \"udp-flood@client:g1,500mbit\"]\ndesktop_load = [0, 20]\n";
        let e = super::super::file::parse(text, "v.toml").unwrap();
        let pts = expand(&e);
        assert_eq!(count(&e), pts.len() as u128);
        let vdi: Vec<&Point> = pts
            .iter()
            .filter(|p| p.spec.test == TestKind::Vdi)
            .collect();
        // 2 modes × 2 profiles × 2 desktop counts × 3 interferences × 2 desktop loads.
        assert_eq!(vdi.len(), 2 * 2 * 2 * 3 * 2);
        assert!(vdi.iter().all(|p| p.direction == Direction::HostToClient));
        assert!(vdi.iter().all(|p| p.spec.validate().is_ok()));
        let keys: std::collections::HashSet<String> = pts
            .iter()
            .map(|p| super::super::run::key(p).to_string())
            .collect();
        assert_eq!(keys.len(), pts.len(), "every point has its own key");
        let heavy = vdi
            .iter()
            .find(|p| p.spec.parallel == 4 && p.loads.len() == 2)
            .unwrap();
        let k = super::super::run::key(heavy);
        assert!(k.profile.is_some());
        assert!(k.interference.unwrap().contains(" + desktop-load 20 %"));
        for (bad, says) in [
            (
                "tests = [\"VDI\"]\ndirections = [\"host-to-client\"]\n",
                "give profiles",
            ),
            (
                "tests = [\"VDI\"]\nprofiles = [\"office\"]\n",
                "host-to-client",
            ),
            ("profiles = [\"office\"]\n", "add \"VDI\""),
            (
                "tests = [\"VDI\"]\nprofiles = [\"nope\"]\ndirections = [\"host-to-client\"]\n",
                "no VDI profile",
            ),
            ("interference = [\"disk@host\"]\n", "unknown load"),
            ("desktop_load = [150]\n", "0 to 100"),
        ] {
            let t = format!("name = \"v\"\n[matrix]\nmodes = [\"bridge\"]\n{bad}");
            let err = super::super::file::parse(&t, "v.toml")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(says) && err.starts_with("v.toml:"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn loads_are_an_axis() {
        let text = "name = \"m\"\n[matrix]\nmodes = [\"bridge\"]\nmessages = [\"1K\", \"8K\"]\nloads = [\"max\", \"500mbit\"]\n";
        let pts = expand(&super::super::file::parse(text, "m.toml").unwrap());
        assert_eq!(
            pts.iter().map(|p| p.spec.rate).collect::<Vec<_>>(),
            vec![None, Some(500_000_000), None, Some(500_000_000)]
        );
        assert!(describe(&pts[1]).contains("at 500mbit"));
        let both = "name = \"m\"\n[matrix]\nmodes = [\"bridge\"]\nloads = [\"max\"]\n[point]\nrate = \"1gbit\"\n";
        assert!(super::super::file::parse(both, "m.toml")
            .unwrap_err()
            .to_string()
            .contains("not both"));
        let bad = "name = \"m\"\n[matrix]\nmodes = [\"bridge\"]\nloads = [\"fast\"]\n";
        assert!(super::super::file::parse(bad, "m.toml")
            .unwrap_err()
            .to_string()
            .contains("or max"));
    }

    #[test]
    fn guest_to_guest_needs_two_guests() {
        let text = "name = \"m\"\n[matrix]\nmodes = [\"bridge\"]\nguests = [2, 4]\ndirections = [\"guest-to-guest\"]\n";
        let e = super::super::file::parse(text, "m.toml").unwrap();
        assert_eq!(expand(&e).len(), 2);
    }
}
