//! Experiment files (TOML): a name, a description and a matrix — modes × guest counts × tests ×
//! message sizes × socket buffers × offloads × MTUs × wire rates × directions — with the
//! duration and repetitions of each point. Every value is checked, with file:line:column and the
//! allowed values, before anything is built.

use super::Error;
use serde::de::{self, Deserializer};
use serde::Deserialize;
use std::str::FromStr;

use crate::engine::spec;
use crate::lab::plan::datapath;
use crate::lab::topology;
use crate::units;
use crate::units::Rate;
use crate::vocab::{Direction, TestKind};
use crate::vocab::{Gro, Mode};

fn de_list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: std::fmt::Display,
{
    let v: Vec<String> = Vec::deserialize(d)?;
    if v.is_empty() {
        return Err(de::Error::custom(
            "an empty list makes an empty matrix: give at least one value",
        ));
    }
    v.iter()
        .map(|s| s.parse::<T>().map_err(de::Error::custom))
        .collect()
}

fn de_nonempty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let v: Vec<T> = Vec::deserialize(d)?;
    if v.is_empty() {
        return Err(de::Error::custom(
            "an empty list makes an empty matrix: give at least one value",
        ));
    }
    Ok(v)
}

/// A message size, written like netperf's -m: `64`, `1K`, `64K`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Size(pub usize);
impl FromStr for Size {
    type Err = crate::units::Error;
    fn from_str(s: &str) -> Result<Self, crate::units::Error> {
        units::parse_size(s).map(Size)
    }
}

/// A socket buffer size, or `default` (the kernel's autotuning).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SockBuf(pub Option<usize>);
impl FromStr for SockBuf {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        if s == "default" {
            return Ok(SockBuf(None));
        }
        units::parse_size(s)
            .map(|v| SockBuf(Some(v)))
            .map_err(|e| Error::Input(format!("{e}, or default")))
    }
}

/// A wire rate, or `unshaped`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WireRate(pub Option<Rate>);
impl FromStr for WireRate {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        if s == "unshaped" {
            return Ok(WireRate(None));
        }
        s.parse::<Rate>()
            .map(|r| WireRate(Some(r)))
            .map_err(|e| Error::Input(format!("{e}, or unshaped")))
    }
}

/// An offered load per stream: `max` (as fast as it goes) or a paced rate such as `500mbit`.
/// Per-Gbit costs for plans come from paced points nothing bound (paper 1's Table IV).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Offered(pub Option<u64>);
impl FromStr for Offered {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        if s == "max" {
            return Ok(Offered(None));
        }
        units::parse_rate(s)
            .map(|r| Offered(Some(r)))
            .map_err(|e| Error::Input(format!("{e}, or max")))
    }
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub matrix: Matrix,
    #[serde(default)]
    pub point: PointSettings,
}

/// Deserializes a value from its text, as the matrix's lists are read.
fn de_str<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: std::fmt::Display,
{
    String::deserialize(d)?.parse().map_err(de::Error::custom)
}

fn de_opt_str<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: std::fmt::Display,
{
    de_str(d).map(Some)
}

/// A lab given whole in `[[matrix.labs]]`, instead of the crossing of modes, gro, tso, lro, mtu
/// and wire rates: a paper's configurations, each a datapath with offloads and a wire of its own
/// (paper 1's GNIC_Bridge is paravirt on a 1 Gb/s wire, its CHELSIO_SRIOV macvlan on the
/// unshaped one). A field it leaves out takes the matrix's value, which must then be one.
#[derive(Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LabEntry {
    #[serde(deserialize_with = "de_str")]
    pub mode: Mode,
    #[serde(default, deserialize_with = "de_opt_str")]
    pub gro: Option<Gro>,
    #[serde(default)]
    pub tso: Option<bool>,
    #[serde(default)]
    pub lro: Option<bool>,
    #[serde(default)]
    pub mtu: Option<u32>,
    #[serde(default, deserialize_with = "de_opt_str")]
    pub wire: Option<WireRate>,
}

/// One lab's settings, resolved from `labs` or from the crossing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LabSetting {
    pub mode: Mode,
    pub gro: Gro,
    pub tso: bool,
    pub lro: bool,
    pub mtu: u32,
    pub wire: WireRate,
}

/// The most labs one experiment's settings may name (crossed or listed).
pub const MAX_LABS: usize = 4096;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    /// The datapaths, crossed with gro, tso, lro, mtu and wire rates (or give `labs`).
    #[serde(default, deserialize_with = "de_list")]
    pub modes: Vec<Mode>,
    #[serde(default)]
    pub labs: Vec<LabEntry>,
    #[serde(default = "one_guest", deserialize_with = "de_nonempty")]
    pub guests: Vec<u32>,
    #[serde(default = "stream", deserialize_with = "de_list")]
    pub tests: Vec<TestKind>,
    #[serde(default = "msg_default", deserialize_with = "de_list")]
    pub messages: Vec<Size>,
    #[serde(default = "buf_default", deserialize_with = "de_list")]
    pub socket_buffers: Vec<SockBuf>,
    #[serde(default = "gro_default", deserialize_with = "de_list")]
    pub gro: Vec<Gro>,
    #[serde(default = "tso_default", deserialize_with = "de_nonempty")]
    pub tso: Vec<bool>,
    /// Software LRO toward the guest (paravirt only; other modes take `false` alone).
    #[serde(default = "lro_default", deserialize_with = "de_nonempty")]
    pub lro: Vec<bool>,
    #[serde(default = "mtu_default", deserialize_with = "de_nonempty")]
    pub mtu: Vec<u32>,
    #[serde(default = "rate_default", deserialize_with = "de_list")]
    pub wire_rates: Vec<WireRate>,
    #[serde(default = "dir_default", deserialize_with = "de_list")]
    pub directions: Vec<Direction>,
    /// Offered loads per stream: `max` and/or paced rates (default: [point] rate, else max).
    #[serde(default, deserialize_with = "de_opt_list")]
    pub loads: Option<Vec<Offered>>,
    /// VDI tests: the session profiles (built-in names), a point each.
    #[serde(default, deserialize_with = "de_opt_list")]
    pub profiles: Option<Vec<Profile>>,
    /// VDI tests: desktops (sessions) per point.
    #[serde(default = "one_guest", deserialize_with = "de_nonempty")]
    pub desktops: Vec<u32>,
    /// Interfering load per point: `none`, `cpu@host`, `cpu@host+cpu@g2`,
    /// `udp-flood@client:g1,500mbit` (paper 3).
    #[serde(default = "no_interference", deserialize_with = "de_list")]
    pub interference: Vec<Interference>,
    /// The other guest's datapath (`paravirt`): a guest of the same host in a lab of its own,
    /// built beside every lab of the matrix, with a wire of its own; `udp-flood@other,RATE`
    /// floods it (paper 3's Domain-U(A), always on the virtual driver).
    #[serde(default, deserialize_with = "de_opt_str")]
    pub other: Option<Mode>,
    /// Every guest's own load, % of one core (0: none; paper 1's Table III).
    #[serde(default = "no_desktop_load", deserialize_with = "de_nonempty")]
    pub desktop_load: Vec<u32>,
    /// VDI tests: paper 1's movie, a point per buffering time T_buffer (seconds, 16 to 253):
    /// each desktop's guest downloads the video while its session plays ([point] time_scale).
    #[serde(default)]
    pub movie: Vec<f64>,
}

/// Request and response sizes, written as netperf's -r: `1,1`, `64,1K`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rr(pub usize, pub usize);

impl FromStr for Rr {
    type Err = units::Error;
    fn from_str(s: &str) -> Result<Self, units::Error> {
        units::parse_rr(s).map(|(a, b)| Rr(a, b))
    }
}

/// A VDI session profile named in the matrix, found among the built-in ones when the file is read.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile(pub crate::engine::vdi::profile::VdiSpec);

impl FromStr for Profile {
    type Err = crate::engine::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::engine::vdi::profile::find(s, None).map(Profile)
    }
}

/// Interfering loads run together (`cpu@host+cpu@g2`), or `none`.
#[derive(Clone, Debug, PartialEq)]
pub struct Interference(pub Vec<crate::measure::load::Load>);
impl FromStr for Interference {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        if s.trim() == "none" {
            return Ok(Interference(Vec::new()));
        }
        let loads = s
            .split('+')
            .map(|l| l.trim().parse())
            .collect::<Result<Vec<_>, _>>()?;
        if loads.len() > 4 {
            return Err(Error::Input(format!(
                "interference '{}': at most 4 loads together",
                crate::text::clip(s)
            )));
        }
        Ok(Interference(loads))
    }
}

/// As a point's key writes it: the loads joined by ` + `, or `none`.
impl std::fmt::Display for Interference {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        let each: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        f.write_str(&each.join(" + "))
    }
}

impl Matrix {
    /// How many labs the settings name, counted without making them.
    fn labs_count(&self) -> u128 {
        if !self.labs.is_empty() {
            return self.labs.len() as u128;
        }
        let lros = |m: &Mode| {
            self.lro
                .iter()
                .filter(|&&l| !l || datapath::of(*m).lro())
                .count() as u128
        };
        let per_mode =
            (self.gro.len() * self.tso.len() * self.mtu.len() * self.wire_rates.len()) as u128;
        self.modes.iter().map(|m| lros(m) * per_mode).sum()
    }

    /// Every lab's settings: the listed labs, or the crossing of modes, gro, tso, lro (paravirt
    /// only: other modes run without LRO, once), mtu and wire rates. `parse` has checked there
    /// are at most `MAX_LABS`.
    pub fn settings(&self) -> Vec<LabSetting> {
        if !self.labs.is_empty() {
            return self.labs.iter().map(|l| self.resolve(l)).collect();
        }
        let mut out = Vec::new();
        for &mode in &self.modes {
            for &gro in &self.gro {
                for &tso in &self.tso {
                    for &lro in self.lro.iter().filter(|&&l| !l || datapath::of(mode).lro()) {
                        for &mtu in &self.mtu {
                            out.extend(self.wire_rates.iter().map(|&wire| LabSetting {
                                mode,
                                gro,
                                tso,
                                lro,
                                mtu,
                                wire,
                            }));
                        }
                    }
                }
            }
        }
        out
    }

    /// A listed lab with the matrix's (single) values where it gives none.
    fn resolve(&self, l: &LabEntry) -> LabSetting {
        LabSetting {
            mode: l.mode,
            gro: l.gro.unwrap_or(self.gro[0]),
            tso: l.tso.unwrap_or(self.tso[0]),
            lro: l.lro.unwrap_or(self.lro[0]),
            mtu: l.mtu.unwrap_or(self.mtu[0]),
            wire: l.wire.unwrap_or(self.wire_rates[0]),
        }
    }

    /// The datapaths the labs run, each once, in order.
    pub fn modes(&self) -> Vec<Mode> {
        let mut v: Vec<Mode> = Vec::new();
        for s in self.settings() {
            if !v.contains(&s.mode) {
                v.push(s.mode);
            }
        }
        v
    }
}

/// `modes` or `labs`, one of them; a field each listed lab leaves out has one value to take.
fn labs_checks(m: &Matrix, at: &dyn Fn(&str) -> String) -> Result<(), Error> {
    if m.modes.is_empty() == m.labs.is_empty() {
        return Err(Error::Input(format!(
            "{}: give modes (crossed with gro, tso, lro, mtu and wire_rates) or [[matrix.labs]] (each lab whole), one of them",
            at("[matrix]")
        )));
    }
    if m.labs_count() > MAX_LABS as u128 {
        return Err(Error::Input(format!(
            "{}: the matrix names {} labs: at most {MAX_LABS}",
            at("modes"),
            m.labs_count()
        )));
    }
    let lists = [
        ("gro", m.gro.len(), m.labs.iter().any(|l| l.gro.is_none())),
        ("tso", m.tso.len(), m.labs.iter().any(|l| l.tso.is_none())),
        ("lro", m.lro.len(), m.labs.iter().any(|l| l.lro.is_none())),
        ("mtu", m.mtu.len(), m.labs.iter().any(|l| l.mtu.is_none())),
        (
            "wire_rates",
            m.wire_rates.len(),
            m.labs.iter().any(|l| l.wire.is_none()),
        ),
    ];
    for (key, n, taken) in lists {
        if !m.labs.is_empty() && n > 1 && taken {
            return Err(Error::Input(format!(
                "{}: {key} lists {n} values to cross, but [[matrix.labs]] gives each lab whole: name {key} in every lab, or give one value",
                at(key)
            )));
        }
    }
    Ok(())
}

fn no_interference() -> Vec<Interference> {
    vec![Interference(Vec::new())]
}
fn no_desktop_load() -> Vec<u32> {
    vec![0]
}

fn de_opt_list<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: std::fmt::Display,
{
    de_list(d).map(Some)
}

fn one_guest() -> Vec<u32> {
    vec![1]
}
fn stream() -> Vec<TestKind> {
    vec![TestKind::TcpStream]
}
fn msg_default() -> Vec<Size> {
    vec![Size(16384)]
}
fn buf_default() -> Vec<SockBuf> {
    vec![SockBuf(None)]
}
fn gro_default() -> Vec<Gro> {
    vec![Gro::Both]
}
fn tso_default() -> Vec<bool> {
    vec![true]
}
fn lro_default() -> Vec<bool> {
    vec![false]
}
fn mtu_default() -> Vec<u32> {
    vec![1500]
}
fn rate_default() -> Vec<WireRate> {
    vec![WireRate(None)]
}
fn dir_default() -> Vec<Direction> {
    vec![Direction::GuestToClient]
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct PointSettings {
    /// Measured seconds per point.
    #[serde(default = "dur_default")]
    pub duration: f64,
    #[serde(default = "warm_default")]
    pub warmup: f64,
    /// Repetitions per point (the spread is stored).
    #[serde(default = "rep_default")]
    pub repeat: u32,
    /// Fresh labs per point: the run goes through every lab of the matrix this many times, each
    /// time in a lab built anew, and each point's repeats of all rounds make its one spread. A
    /// shift that comes with a lab (or with the minute) then lands in the spread, not between
    /// two runs' medians.
    #[serde(default = "rep_default")]
    pub rounds: u32,
    /// Rounds until each point's confidence interval is this narrow: "95,5" is ±5 % of its
    /// median at 95 % (with `iterations`; without, at least the rounds that reach the level and
    /// at most 30).
    #[serde(default)]
    pub confidence: Option<String>,
    /// Rounds per point as "MIN,MAX" (with `confidence`, which stops a point between them);
    /// `rounds` alone is both.
    #[serde(default)]
    pub iterations: Option<String>,
    /// Seconds the run may take: past every point's least rounds, no round starts that would
    /// end after it, and each point says what its interval reached.
    #[serde(default)]
    pub budget: Option<f64>,
    #[serde(default = "par_default")]
    pub parallel: u32,
    /// Per-stream pacing, e.g. "100mbit".
    #[serde(default, deserialize_with = "de_opt_str")]
    pub rate: Option<Rate>,
    /// Request,response sizes for RR tests.
    #[serde(default = "rr_default", deserialize_with = "de_str")]
    pub rr: Rr,
    #[serde(default)]
    pub nodelay: bool,
    /// How paced streams meet their rate: "app" (1 ms ticks, as iperf3 -b) or "kernel"
    /// (SO_MAX_PACING_RATE).
    #[serde(default)]
    pub pacing: crate::vocab::Pacing,
    /// TCP congestion control of every data connection (default "cubic"; docs/traffic.md, "Congestion
    /// control").
    #[serde(default)]
    pub congestion: crate::vocab::Congestion,
    /// The movie's time scale (1: the paper's 253 s; rates stay, sizes shrink).
    #[serde(default = "scale_default")]
    pub time_scale: f64,
}

impl PointSettings {
    /// How many rounds each point takes and when it stops, from `rounds`, `iterations` and
    /// `confidence`; the message says what is wrong.
    pub fn stopping(&self) -> Result<crate::measure::Stopping, String> {
        use crate::stats;
        let goal = self
            .confidence
            .as_deref()
            .map(stats::parse_confidence)
            .transpose()
            .map_err(|e| e.to_string())?;
        let iterations = match (&self.iterations, goal) {
            (Some(i), _) => stats::parse_iterations(i).map_err(|e| e.to_string())?,
            (None, Some(g)) => crate::measure::Stopping::default_iterations(g),
            (None, None) => return Ok(crate::measure::Stopping::fixed(self.rounds)),
        };
        if iterations.max * self.repeat > 100 {
            return Err(format!(
                "iterations up to {} rounds of {} repeats: at most 100 repeats in all",
                iterations.max, self.repeat
            ));
        }
        Ok(crate::measure::Stopping { goal, iterations })
    }
}

fn scale_default() -> f64 {
    0.1
}

fn dur_default() -> f64 {
    2.0
}
fn warm_default() -> f64 {
    0.5
}
fn rep_default() -> u32 {
    1
}
fn par_default() -> u32 {
    1
}
fn rr_default() -> Rr {
    Rr(1, 1)
}

impl Default for PointSettings {
    fn default() -> Self {
        PointSettings {
            duration: 2.0,
            warmup: 0.5,
            repeat: 1,
            rounds: 1,
            confidence: None,
            iterations: None,
            budget: None,
            parallel: 1,
            rate: None,
            rr: rr_default(),
            nodelay: false,
            pacing: crate::vocab::Pacing::App,
            congestion: Default::default(),
            time_scale: 0.1,
        }
    }
}

/// The VDI and load dimensions: profiles that exist, sane counts, VDI's host-to-client direction.
/// Every load of every interference runs in endpoints each point's lab has: `cpu@g2` needs two
/// guests in every lab of the matrix.
fn interference_checks(m: &Matrix, at: &dyn Fn(&str) -> String) -> Result<(), Error> {
    let fewest = m.guests.iter().copied().min().unwrap_or(1);
    let floods_other = m
        .interference
        .iter()
        .flat_map(|i| &i.0)
        .any(|l| matches!(l, crate::measure::load::Load::OtherFlood { .. }));
    match (floods_other, m.other) {
        (true, None) => {
            return Err(Error::Input(format!(
                "{}: udp-flood@other floods the other guest: name its datapath, other = \"paravirt\"",
                at("interference")
            )))
        }
        (false, Some(_)) => {
            return Err(Error::Input(format!(
                "{}: other builds the other guest's lab for udp-flood@other, which no interference names",
                at("other")
            )))
        }
        (_, Some(Mode::Native | Mode::Sriov)) => {
            return Err(Error::Input(format!(
                "{}: the other guest is a guest: give it a virtual datapath (paravirt)",
                at("other")
            )))
        }
        _ => {}
    }
    for i in &m.interference {
        for l in &i.0 {
            let most = l
                .endpoints()
                .iter()
                .filter_map(|r| match r {
                    crate::vocab::Role::Guest(k) => Some(*k),
                    _ => None,
                })
                .max()
                .unwrap_or(0);
            if most > fewest {
                return Err(Error::Input(format!(
                    "{}: interference '{l}' runs in g{most}, and the labs of guests = {:?} have only {fewest}: name g1 to g{fewest}, or give every point {most} guests",
                    at("interference"),
                    m.guests
                )));
            }
        }
    }
    Ok(())
}

fn vdi_checks(m: &Matrix, scale: f64, at: &dyn Fn(&str) -> String) -> Result<(), Error> {
    let vdi = m.tests.contains(&TestKind::Vdi);
    match (&m.profiles, vdi) {
        (None, true) => {
            return Err(Error::Input(format!(
                "{}: tests include VDI: give profiles = [\"office\", …] (see profiles/vdi.toml)",
                at("tests")
            )))
        }
        (Some(_), false) => {
            return Err(Error::Input(format!(
                "{}: profiles are for VDI tests: add \"VDI\" to tests",
                at("profiles")
            )))
        }
        (Some(_), true) => {
            if !m.directions.contains(&Direction::HostToClient) {
                return Err(Error::Input(format!("{}: VDI sessions run host-to-client (the protocol engine to the client): add it to directions", at("directions"))));
            }
        }
        (None, false) => {}
    }
    if m.desktops.iter().any(|d| !(1..=256).contains(d)) {
        return Err(Error::Input(format!(
            "{}: desktops: use 1 to 256",
            at("desktops")
        )));
    }
    if !m.movie.is_empty() && !vdi {
        return Err(Error::Input(format!(
            "{}: movie is a VDI scenario: add \"VDI\" to tests",
            at("movie")
        )));
    }
    if m.movie.len() > 16 {
        return Err(Error::Input(format!(
            "{}: movie: at most 16 buffering times",
            at("movie")
        )));
    }
    for &t in &m.movie {
        let movie = crate::measure::load::Movie {
            t_buffer_s: t,
            time_scale: scale,
        };
        movie
            .check()
            .map_err(|x| Error::Input(format!("{}: {x}", at("movie"))))?;
    }
    if m.desktop_load.iter().any(|&d| d > 100) {
        return Err(Error::Input(format!(
            "{}: desktop_load: a share of one core, 0 to 100 (%)",
            at("desktop_load")
        )));
    }
    Ok(())
}

// Long on purpose: each section's checks in the file's order, each naming its line.
/// Parses and checks an experiment; errors read `FILE:LINE:COL: message`.
pub fn parse(text: &str, file: &str) -> Result<ExperimentFile, Error> {
    let e: ExperimentFile =
        toml::from_str(text).map_err(|e| Error::Input(topology::toml_error(&e, text, file)))?;
    let at = |key: &str| -> String {
        // Point at the key's line for checks made after parsing.
        let (line, col) = text
            .lines()
            .enumerate()
            .find(|(_, l)| l.trim_start().starts_with(key))
            .map(|(i, l)| (i + 1, l.len() - l.trim_start().len() + 1))
            .unwrap_or((1, 1));
        format!("{file}:{line}:{col}")
    };
    let name_ok = !e.name.is_empty()
        && e.name.len() <= 40
        && e.name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !name_ok {
        return Err(Error::Input(format!(
            "{}: bad experiment name '{}': use 1 to 40 letters, digits, '-' or '_'",
            at("name"),
            e.name
        )));
    }
    let p = &e.point;
    let s = spec::Spec {
        duration: p.duration,
        warmup: p.warmup,
        parallel: p.parallel,
        rate: p.rate.map(|r| r.0),
        ..Default::default()
    };
    s.validate()
        .map_err(|m| Error::Input(format!("{}: {m}", at("duration"))))?;
    crate::engine::sockets::check_congestion(&p.congestion)
        .map_err(|m| Error::Input(format!("{}: {m}", at("congestion"))))?;
    if e.matrix.loads.is_some() && p.rate.is_some() {
        return Err(Error::Input(format!(
            "{}: give the offered load either as [point] rate or as [matrix] loads, not both",
            at("rate")
        )));
    }
    if !(1..=100).contains(&p.repeat) {
        return Err(Error::Input(format!(
            "{}: repeat {}: use 1 to 100",
            at("repeat"),
            p.repeat
        )));
    }
    p.stopping()
        .map_err(|m| Error::Input(format!("{}: {m}", at("confidence"))))?;
    if p.budget
        .is_some_and(|b| !(1.0..=7.0 * 86400.0).contains(&b))
    {
        return Err(Error::Input(format!(
            "{}: budget: give the run's seconds, 1 to 604800",
            at("budget")
        )));
    }
    if !(1..=10).contains(&p.rounds) || p.rounds * p.repeat > 100 {
        return Err(Error::Input(format!(
            "{}: rounds {} of {} repeats: use 1 to 10 rounds, at most 100 repeats in all",
            at("rounds"),
            p.rounds,
            p.repeat
        )));
    }
    let m = &e.matrix;
    for &g in &m.guests {
        if !(1..=400).contains(&g) {
            return Err(Error::Input(format!(
                "{}: guests {g}: use 1 to 400",
                at("guests")
            )));
        }
    }
    labs_checks(m, &at)?;
    let settings = m.settings();
    for s in &settings {
        if datapath::of(s.mode).pf_stand_in().is_some() {
            return Err(Error::Input(format!("{}: mode {} needs a PF named per host: run it with `vnetlab up --mode {} --pf …` and `vnetlab test`", at("modes"), s.mode, s.mode)));
        }
        if !(576..=9000).contains(&s.mtu) {
            return Err(Error::Input(format!(
                "{}: mtu {}: use 576 to 9000",
                at("mtu"),
                s.mtu
            )));
        }
    }
    let lro_wanted = m.lro.contains(&true) || m.labs.iter().any(|l| l.lro == Some(true));
    if lro_wanted && !settings.iter().any(|s| s.lro) {
        return Err(Error::Input(format!(
            "{}: lro = true is software LRO in the paravirt backend: add mode paravirt",
            at("lro")
        )));
    }
    if let Some(s) = settings
        .iter()
        .find(|s| s.lro && !datapath::of(s.mode).lro())
    {
        return Err(Error::Input(format!(
            "{}: a {} lab with lro = true: software LRO lives in the paravirt backend",
            at("labs"),
            s.mode
        )));
    }
    vdi_checks(m, e.point.time_scale, &at)?;
    crate::measure::load::check_time_scale(e.point.time_scale)
        .map_err(|x| Error::Input(format!("{}: {x}", at("time_scale"))))?;
    interference_checks(m, &at)?;
    if m.directions.contains(&Direction::GuestToGuest) && m.guests.iter().any(|&g| g < 2) {
        return Err(Error::Input(format!(
            "{}: direction guest-to-guest needs guests of 2 or more",
            at("directions")
        )));
    }
    for t in &m.tests {
        if t.is_udp() && m.messages.iter().any(|s| s.0 > 65507) {
            return Err(Error::Input(format!(
                "{}: UDP tests carry at most 65507-byte messages",
                at("messages")
            )));
        }
        if *t == TestKind::UdpStream && m.messages.iter().any(|s| s.0 < 8) {
            return Err(Error::Input(format!(
                "{}: UDP_STREAM needs messages of at least 8 bytes",
                at("messages")
            )));
        }
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUICK: &str = r#"
name = "quick"
description = "demo"
[matrix]
modes = ["native", "bridge"]
messages = ["64", "1K"]
[point]
duration = 1.0
"#;

    #[test]
    fn parses_with_defaults() {
        let e = parse(QUICK, "q.toml").unwrap();
        assert_eq!(e.matrix.modes, vec![Mode::Native, Mode::Bridge]);
        assert_eq!(e.matrix.messages, vec![Size(64), Size(1024)]);
        assert_eq!(e.matrix.directions, vec![Direction::GuestToClient]);
        assert_eq!(e.point.duration, 1.0);
        assert_eq!(e.point.repeat, 1);
    }

    #[test]
    fn rounds_are_bounded_with_their_repeats() {
        assert_eq!(parse(QUICK, "q.toml").unwrap().point.rounds, 1);
        let with = |r: &str| parse(&format!("{QUICK}{r}\n"), "q.toml");
        assert_eq!(with("rounds = 3").unwrap().point.rounds, 3);
        for bad in ["rounds = 0", "rounds = 11", "rounds = 10\nrepeat = 11"] {
            let e = with(bad).unwrap_err().to_string();
            assert!(e.contains("rounds"), "{bad}: {e}");
        }
    }

    #[test]
    fn loads_together_read_as_the_point_key_writes_them() {
        let i: Interference = "cpu@host+ cpu@g2".parse().unwrap();
        assert_eq!(i.0.len(), 2);
        assert_eq!(i.to_string(), "cpu@host + cpu@g2");
        assert_eq!("none".parse::<Interference>().unwrap().to_string(), "none");
        assert!("cpu@host+disk@g2".parse::<Interference>().is_err());
        assert!(["cpu@host"; 5].join("+").parse::<Interference>().is_err());
    }

    #[test]
    fn errors_name_the_place_and_the_allowed_values() {
        let cases = [
            (
                "name = \"q\"\n[matrix]\nmodes = [\"hub\"]\n",
                "q.toml:3:9:",
                "native, bridge",
            ),
            (
                "name = \"q\"\n[matrix]\nmodes = [\"bridge\"]\nmesages = [\"1K\"]\n",
                "q.toml:4:1:",
                "unknown field",
            ),
            (
                "name = \"q\"\n[matrix]\nmodes = []\n",
                "q.toml:3:9:",
                "empty matrix",
            ),
            (
                "name = \"q\"\n[matrix]\nmodes = [\"bridge\"]\nguests = \"two\"\n",
                "q.toml:4:10:",
                "invalid type",
            ),
            (
                "name = \"q\"\n[matrix]\nmodes = [\"bridge\"]\ndirections = [\"up\"]\n",
                "q.toml:4:",
                "guest-to-client",
            ),
            (
                "name = \"q\"\n[matrix]\nmodes = [\"bridge\"]\nmessages = [\"0\"]\n",
                "q.toml:4:",
                "out of range",
            ),
            (
                "name = \"q\"\n[matrix]\nmodes = [\"bridge\"]\n[point]\nduration = 0.0\n",
                "q.toml:5:1:",
                "-l 0",
            ),
            (
                "name = \"q\"\n[matrix]\nmodes = [\"bridge\"]\ndirections = [\"guest-to-guest\"]\n",
                "q.toml:4:1:",
                "2 or more",
            ),
            (
                "name = \"Q!\"\n[matrix]\nmodes = [\"bridge\"]\n",
                "q.toml:1:1:",
                "bad experiment name",
            ),
            ("name = \"q\"\n", "q.toml:", "missing field `matrix`"),
        ];
        for (text, at, says) in cases {
            let e = parse(text, "q.toml").unwrap_err().to_string();
            assert!(e.starts_with(at) && e.contains(says), "{text:?} → {e}");
        }
    }
}
