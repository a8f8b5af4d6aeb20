//! A paper's claims as checks over stored points: which points a check reads (selectors over the
//! point's key), the figure it compares and how; the verdict is computed from the run, never
//! written down. A claim whose points were not measured is "not measurable", with why.

use serde::{Deserialize, Serialize};

use super::error::Error;
use crate::experiment::file::{Offered, Size, SockBuf, WireRate};
use crate::records::{PointRecord, Repeat, Rounds};
use crate::units::parse_size;
use crate::vocab::{Bound, Direction, Gro, Mode, TestKind};

/// A figure of a stored point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    ThroughputGbps,
    HostBusyPct,
    NormalizedPctPerGbps,
    TransactionsPerS,
    LatencyP50Us,
    LatencyP99Us,
    /// The 99.9th percentile: the robust tail where a paper speaks of worst cases (one
    /// scheduler hiccup among thousands of samples makes the maximum a coin toss).
    LatencyP999Us,
    /// The largest request/response time (of the point's median repeat).
    LatencyMaxUs,
    /// Segments merged per buffer by the backend's software LRO.
    LroRatio,
    /// Paper 1's movie: host CPU while the desktops buffer their video (and play it).
    MovieBufferingPct,
    /// Paper 1's movie: host CPU once buffered, while the sessions only play.
    MoviePlayingPct,
}

impl Metric {
    pub fn of(self, p: &PointRecord) -> Option<f64> {
        match self {
            Metric::ThroughputGbps => p.throughput_gbps,
            Metric::HostBusyPct => p.host_busy_pct,
            Metric::NormalizedPctPerGbps => p.normalized_pct_per_gbps,
            Metric::TransactionsPerS => p.transactions_per_s,
            Metric::LatencyP50Us => p.latency_p50_us,
            Metric::LatencyP99Us => p.latency_p99_us,
            Metric::LatencyP999Us => p
                .result
                .as_ref()?
                .result
                .latency_us
                .as_ref()
                .map(|l| l.p999),
            Metric::LatencyMaxUs => p.result.as_ref()?.result.latency_us.as_ref().map(|l| l.max),
            Metric::LroRatio => p
                .result
                .as_ref()?
                .vnic
                .as_ref()?
                .values()
                .filter_map(|v| v.lro.as_ref())
                .map(|l| l.lro_ratio)
                .reduce(f64::max),
            Metric::MovieBufferingPct => p.result.as_ref()?.movie.as_ref()?.buffering.host_busy_pct,
            Metric::MoviePlayingPct => p.result.as_ref()?.movie.as_ref()?.play_only.host_busy_pct,
        }
    }
    /// The figure in one repeat, where repeats keep it.
    pub fn of_repeat(self, r: &Repeat) -> Option<f64> {
        match self {
            Metric::ThroughputGbps => Some(r.throughput_gbps),
            Metric::HostBusyPct => r.host_busy_pct,
            Metric::NormalizedPctPerGbps => r.normalized_pct_per_gbps,
            Metric::TransactionsPerS => r.transactions_per_s,
            Metric::LatencyP99Us => r.latency_p99_us,
            Metric::LatencyP999Us => r.latency_p999_us,
            Metric::LatencyMaxUs => r.latency_max_us,
            Metric::MovieBufferingPct => r.movie_buffering_pct,
            Metric::MoviePlayingPct => r.movie_playing_pct,
            _ => None,
        }
    }
    /// The quantile a tail figure reads (a share of the request/response samples it lies above).
    pub fn tail_quantile(self) -> Option<f64> {
        match self {
            Metric::LatencyP99Us => Some(0.99),
            Metric::LatencyP999Us => Some(0.999),
            _ => None,
        }
    }
    /// Whether the figure is a cost (host CPU, or host CPU per Gb/s): a cost is read only from
    /// points nothing bound, as plans read theirs. A saturated point's CPU is its ceiling's.
    pub fn is_cost(self) -> bool {
        matches!(
            self,
            Metric::HostBusyPct
                | Metric::NormalizedPctPerGbps
                | Metric::MovieBufferingPct
                | Metric::MoviePlayingPct
        )
    }
    pub fn unit(self) -> &'static str {
        match self {
            Metric::ThroughputGbps => "Gb/s",
            Metric::HostBusyPct | Metric::MovieBufferingPct | Metric::MoviePlayingPct => {
                "% host CPU"
            }
            Metric::NormalizedPctPerGbps => "% host CPU per Gb/s",
            Metric::TransactionsPerS => "transactions/s",
            Metric::LatencyP50Us
            | Metric::LatencyP99Us
            | Metric::LatencyP999Us
            | Metric::LatencyMaxUs => "µs",
            Metric::LroRatio => "segments per buffer",
        }
    }
}

/// Which point a check reads: every field given must equal the point's (as written in an
/// experiment file).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    pub mode: Option<String>,
    pub test: Option<String>,
    pub direction: Option<String>,
    pub message: Option<String>,
    pub load: Option<String>,
    pub tso: Option<bool>,
    pub gro: Option<String>,
    pub lro: Option<bool>,
    pub wire: Option<String>,
    pub buffer: Option<String>,
    pub guests: Option<u32>,
    pub profile: Option<String>,
    pub interference: Option<String>,
    /// Paper 1's movie: the buffering time T_buffer (seconds) of the point's download.
    pub buffering: Option<f64>,
    pub label: Option<String>,
}

impl Selector {
    /// `self` with `base`'s fields where `self` gives none.
    pub fn over(&self, base: &Selector) -> Selector {
        fn or<T: Clone>(a: &Option<T>, b: &Option<T>) -> Option<T> {
            a.clone().or_else(|| b.clone())
        }
        Selector {
            mode: or(&self.mode, &base.mode),
            test: or(&self.test, &base.test),
            direction: or(&self.direction, &base.direction),
            message: or(&self.message, &base.message),
            load: or(&self.load, &base.load),
            tso: self.tso.or(base.tso),
            gro: or(&self.gro, &base.gro),
            lro: self.lro.or(base.lro),
            wire: or(&self.wire, &base.wire),
            buffer: or(&self.buffer, &base.buffer),
            guests: self.guests.or(base.guests),
            profile: or(&self.profile, &base.profile),
            interference: or(&self.interference, &base.interference),
            buffering: self.buffering.or(base.buffering),
            label: or(&self.label, &base.label),
        }
    }

    /// Checks every value parses as the experiment files write it.
    pub fn check(&self) -> Result<(), Error> {
        parses::<Mode>(&self.mode, "mode")?;
        parses::<TestKind>(&self.test, "test")?;
        parses::<Direction>(&self.direction, "direction")?;
        parses::<Size>(&self.message, "message")?;
        parses::<Offered>(&self.load, "load")?;
        parses::<Gro>(&self.gro, "gro")?;
        parses::<WireRate>(&self.wire, "wire")?;
        parses::<SockBuf>(&self.buffer, "buffer")
    }

    pub fn matches(&self, p: &PointRecord) -> bool {
        let k = &p.key;
        let eq = |want: &Option<String>, have: String| want.as_ref().is_none_or(|w| *w == have);
        eq(&self.mode, k.mode.to_string())
            && self
                .test
                .as_ref()
                .is_none_or(|t| t.parse::<TestKind>().ok() == Some(k.test))
            && eq(&self.direction, k.direction.name().to_string())
            && self
                .message
                .as_ref()
                .is_none_or(|m| parse_size(m).ok().map(|s| s as u64) == Some(k.message_bytes))
            && self
                .load
                .as_ref()
                .is_none_or(|l| l.parse::<Offered>().ok().map(|l| l.0) == Some(k.load_bps))
            && self.tso.is_none_or(|t| t == k.tso)
            && eq(&self.gro, k.gro.name().to_string())
            && self.lro.is_none_or(|l| l == k.lro)
            && self.wire.as_ref().is_none_or(|w| {
                w.parse::<WireRate>().ok().map(|w| w.0.map(|r| r.0)) == Some(k.wire_rate)
            })
            && self.buffer.as_ref().is_none_or(|b| {
                b.parse::<SockBuf>().ok().map(|b| b.0.map(|x| x as u64)) == Some(k.socket_buffer)
            })
            && self.guests.is_none_or(|g| g == k.guests)
            && self
                .profile
                .as_ref()
                .is_none_or(|p| Some(p) == k.profile.as_ref())
            && self.interference.as_ref().is_none_or(|i| {
                joined(i) == k.interference.as_deref().map_or("none".into(), joined)
            })
            && self
                .buffering
                .is_none_or(|t| movie_at(k.interference.as_deref(), t))
    }

    /// How the selector reads on the page: its label, else its mode and what else it names.
    pub fn name(&self) -> String {
        if let Some(l) = &self.label {
            return l.clone();
        }
        let mut parts: Vec<String> = Vec::new();
        for (k, v) in [
            ("", &self.mode),
            ("", &self.direction),
            ("", &self.message),
            ("with ", &self.interference),
        ] {
            if let Some(v) = v {
                parts.push(format!("{k}{v}"));
            }
        }
        parts.join(" ")
    }
}

/// Whether a point's loads hold paper 1's movie buffered in `t` seconds: its download is paced
/// at S_VMNET / T_buffer, as the load writes it.
fn movie_at(interference: Option<&str>, t: f64) -> bool {
    let rate = crate::units::Rate((crate::measure::load::S_VMNET_BITS / t) as u64);
    interference.is_some_and(|i| {
        i.split(" + ")
            .any(|l| l.starts_with("VM-network download") && l.ends_with(&format!(" at {rate}")))
    })
}

/// Loads together as a point's key writes them (`cpu@host+cpu@g2` is `cpu@host + cpu@g2`).
fn joined(s: &str) -> String {
    s.split('+').map(str::trim).collect::<Vec<_>>().join(" + ")
}

/// Whether a selector's field, if given, parses as a `T`.
fn parses<T: std::str::FromStr>(v: &Option<String>, what: &str) -> Result<(), Error>
where
    T::Err: std::fmt::Display,
{
    match v {
        Some(s) => s
            .parse::<T>()
            .map(|_| ())
            .map_err(|e| Error::Input(format!("{what}: {e}"))),
        None => Ok(()),
    }
}

/// How a claim compares its points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The first series has the lowest figure of all, by a factor `by` (1 unless given: `by = 2`
    /// reads "at most half of any other").
    Lowest,
    /// The first series has the highest figure of all, by a factor `by` (1 unless given).
    Highest,
    /// The first series' figure exceeds `by` times the second's.
    Greater,
    /// The first series' figure exceeds `value`.
    Above,
    /// The first series' figure is within `by` (a fraction: 0.1 is 10 %) of the second's, above
    /// or below: the paper's bound, or, where it gives none, the effect floor.
    Near,
}

/// One claim of a paper, as written in its file.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub text: String,
    pub source: String,
    /// What the paper measured, as it says it.
    pub paper: String,
    pub metric: Metric,
    pub kind: Kind,
    /// Fields every series shares.
    #[serde(default, rename = "where")]
    pub common: Selector,
    pub series: Vec<Selector>,
    /// How far the first series must go: a factor (greater, lowest, highest) or a fraction
    /// (near: the paper's own bound). Left out, a claim that gives the paper's size is read
    /// against that size (`Claim::sized`), a near claim within the effect floor, else by 1.
    #[serde(default, rename = "by")]
    pub by_given: Option<f64>,
    pub value: Option<f64>,
    /// Why a verdict may differ here (hardware of 2026, TCG, one host), shown beside it.
    #[serde(default)]
    pub note: String,
    /// The comparison reads only points no saturated core, side, backend or wire bound (a cost
    /// always does): a request/response rate a saturated core bound is that core's capacity,
    /// not the path's latency the paper compared.
    #[serde(default)]
    pub unsaturated: bool,
    /// The paper's size of the effect, as the claim compares its series: the first over the
    /// second (greater, near), the nearest other over the first (lowest), the first over the
    /// largest other (highest); for `above`, the paper's own figure. Shown beside ours.
    #[serde(default)]
    pub paper_ratio: Option<f64>,
    /// A claim of vnetlab's own, beyond what the paper says: shown in its own section.
    #[serde(default)]
    pub beyond: bool,
    /// Which stand-ins ran and how the setup differs from the paper's, shown on the claim's row.
    #[serde(default)]
    pub stand_in: String,
}

/// A claim's verdict, written as the page and `--json` say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    #[serde(rename = "holds")]
    Holds,
    #[serde(rename = "does not hold")]
    DoesNotHold,
    /// The repeats' ranges overlap where the claim is decided: neither holds nor fails here.
    #[serde(rename = "within the spread")]
    WithinSpread,
    #[serde(rename = "not measurable")]
    NotMeasurable,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::DoesNotHold => "does not hold",
            Verdict::WithinSpread => "within the spread",
            Verdict::NotMeasurable => "not measurable",
        }
    }
}

/// How big a claim's effect is: the paper's and ours, as the claim compares its series (see
/// `Claim::paper_ratio`), ours with its spread.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EffectSize {
    pub paper: Option<f64>,
    /// Ours from the medians, and its least and greatest over the rounds (each compared within
    /// its round) or, where the points ran no rounds, over the repeats' ranges.
    pub ours: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// The wire bound both sides: the ratio is the wire's, not what the claim compares.
    pub wire_tie: bool,
    /// "×" for a ratio; for an `above` claim, the figure's unit.
    pub unit: String,
}

impl EffectSize {
    /// "paper 3.9×; here 1.3× [1.2–1.4]", as the claims table and the index show it.
    pub fn text(&self) -> String {
        let num = |x: f64| match x.abs() {
            a if a >= 100.0 => format!("{x:.0}"),
            a if a >= 10.0 => format!("{x:.1}"),
            _ => format!("{x:.2}"),
        };
        let times = if self.unit == "×" {
            "×".to_string()
        } else {
            format!(" {}", self.unit)
        };
        let paper = self.paper.map_or("paper: no size".to_string(), |p| {
            format!("paper {}{times}", num(p))
        });
        let ours = match (self.ours, self.low, self.high) {
            (None, ..) => "here: not measured".to_string(),
            (Some(o), Some(l), Some(h)) if h > l => {
                format!("here {}{times} [{}–{}]", num(o), num(l), num(h))
            }
            (Some(o), ..) => format!("here {}{times}", num(o)),
        };
        let tie = if self.wire_tie {
            " (both bound by the wire)"
        } else {
            ""
        };
        format!("{paper}; {ours}{tie}")
    }
}

/// A claim checked against a run.
#[derive(Clone, Debug, Serialize)]
pub struct Checked {
    pub claim: String,
    pub source: String,
    pub verdict: Verdict,
    /// The paper's size and ours, with its spread.
    pub size: EffectSize,
    /// Which stand-ins ran and how the setup differs from the paper's.
    pub stand_in: String,
    /// vnetlab's own claim, beyond the paper's.
    pub beyond: bool,
    /// Our figures, each series named.
    pub ours: String,
    pub paper: String,
    pub why: String,
    /// Our figure of each series, for the page's chart.
    pub figures: Vec<(String, f64)>,
    pub unit: String,
}

impl Claim {
    /// The factor (or, for `near`, the fraction) the check asks for: as given, else 1 (a claim
    /// read against the paper's size compares with `sized` instead); a `near` claim without one
    /// (the paper says "nearly the same" and puts no number on it) asks for the effect floor.
    pub fn by(&self) -> f64 {
        match (self.by_given, self.kind) {
            (Some(by), _) => by,
            (None, Kind::Near) => EFFECT_FLOOR,
            (None, _) => 1.0,
        }
    }

    /// How far a `near` claim's ratio may miss 1 before the claim fails: past the paper's bound
    /// by more than the effect floor (a smaller miss is no difference this host resolves); where
    /// the paper gives no bound, the floor is the bound and is counted once (past it this host
    /// resolves a difference: a `greater` claim on the same figures would hold).
    fn near_fails_past(&self) -> f64 {
        self.by_given.map_or(EFFECT_FLOOR, |by| by + EFFECT_FLOOR)
    }

    /// A claim that states the paper's size and asks for it (no `by` of its own): the ratio it
    /// holds above (the paper's size less the effect floor, since a gap smaller than the floor is
    /// no difference on this host; and at least the floor) and the ratio it does not hold below
    /// (less than two-thirds of the paper's effect, the effect being the ratio's logarithm, and
    /// short of the paper's size by more than the floor). In between, ours shows most of the
    /// paper's effect but not all of it: within the spread.
    pub fn sized(&self) -> Option<(f64, f64)> {
        let p = self
            .paper_ratio
            .filter(|_| self.by_given.is_none() && !self.beyond)?;
        matches!(self.kind, Kind::Greater | Kind::Lowest | Kind::Highest).then(|| {
            let hold = (p / (1.0 + EFFECT_FLOOR)).max(1.0 + EFFECT_FLOOR);
            let short = p.powf(2.0 / 3.0).min(p / (1.0 + EFFECT_FLOOR));
            (hold, short)
        })
    }

    pub fn check(&self) -> Result<(), Error> {
        let need = match self.kind {
            Kind::Lowest | Kind::Highest => 2..=16,
            Kind::Greater | Kind::Near => 2..=2,
            Kind::Above => 1..=1,
        };
        if !need.contains(&self.series.len()) {
            return Err(Error::Input(format!(
                "claim '{}': a {:?} check takes {:?} series",
                self.text, self.kind, need
            )));
        }
        if self.kind == Kind::Above && self.value.is_none() {
            return Err(Error::Input(format!("claim '{}': give value", self.text)));
        }
        if !(self.by().is_finite() && self.by() > 0.0) {
            return Err(Error::Input(format!(
                "claim '{}': by must be above 0",
                self.text
            )));
        }
        if let Some(r) = self.paper_ratio {
            if !(r.is_finite() && r > 0.0) || self.beyond {
                return Err(Error::Input(format!(
                    "claim '{}': paper_ratio is the paper's size, a number above 0, and a claim beyond the paper has none",
                    self.text
                )));
            }
        }
        if self.stand_in.trim().is_empty() {
            return Err(Error::Input(format!(
                "claim '{}': say in stand_in which stand-ins ran and how the setup differs from the paper's",
                self.text
            )));
        }
        if self.kind == Kind::Near && self.by() >= 1.0 {
            return Err(Error::Input(format!(
                "claim '{}': a near check's by is a fraction below 1 (0.1 is 10 %)",
                self.text
            )));
        }
        self.common.check()?;
        self.series.iter().try_for_each(Selector::check)
    }

    /// The figure of each series in `points`, or why it is missing. A cost is read only from a
    /// point nothing bound, in every repeat.
    fn figures(&self, points: &[PointRecord]) -> Result<Vec<Figure>, Unmeasurable> {
        self.series
            .iter()
            .map(|s| {
                let sel = s.over(&self.common);
                let found: Vec<&PointRecord> = points
                    .iter()
                    .filter(|p| p.error.is_none() && sel.matches(p))
                    .collect();
                let p = match found.as_slice() {
                    [] => return Err(Unmeasurable::NoPoint(sel.name())),
                    [p] => p,
                    many => {
                        return Err(Unmeasurable::Ambiguous {
                            count: many.len(),
                            name: sel.name(),
                        })
                    }
                };
                if self.metric.is_cost() {
                    if let Some(why) = &p.unmeasurable {
                        return Err(Unmeasurable::Meter {
                            name: sel.name(),
                            why: why.clone(),
                        });
                    }
                    unbound_rounds(self.metric, p, &sel.name())?;
                } else if self.unsaturated {
                    unsaturated(p, &sel.name())?;
                }
                let f = Figure::of(self.metric, p, s.over(&Selector::default()).name())
                    .ok_or_else(|| Unmeasurable::NoValue {
                        name: sel.name(),
                        unit: self.metric.unit(),
                    })?;
                if let Some(q) = self.metric.tail_quantile() {
                    sampled(p, q, &sel.name())?;
                }
                Ok(f)
            })
            .collect()
    }

    /// Whether the comparison holds in one reading of the figures: medians, or the repeats'
    /// ranges read against the claim (its first series' worst against the others' best) or for it.
    fn compare(&self, f: &[Figure], read: Read) -> bool {
        let (first, rest) = (&f[0], &f[1..]);
        // `high`: the end of a figure's range that favours the claim when it stands first.
        let at = |x: &Figure, high: bool| match read {
            Read::Medians => x.value,
            Read::Against => {
                if high {
                    x.high
                } else {
                    x.low
                }
            }
            Read::For => {
                if high {
                    x.low
                } else {
                    x.high
                }
            }
        };
        match self.kind {
            Kind::Lowest => rest
                .iter()
                .all(|x| self.by() * at(first, true) < at(x, false)),
            Kind::Highest => rest
                .iter()
                .all(|x| at(first, false) > self.by() * at(x, true)),
            Kind::Greater => at(first, false) > self.by() * at(&f[1], true),
            Kind::Above => at(first, false) > self.value.unwrap_or(f64::INFINITY),
            Kind::Near => {
                let (a, b) = (first, &f[1]);
                let ratios = match read {
                    Read::Medians => vec![a.value / b.value],
                    _ => vec![a.low / b.high, a.high / b.low],
                };
                let off = ratios.iter().map(|r| (r - 1.0).abs());
                match read {
                    // Against: every ratio the ranges allow is near; for: the nearest one is.
                    Read::Against => off.fold(0.0, f64::max) <= self.by(),
                    // For: the nearest one is, or misses by no more than `near_fails_past`.
                    Read::For => {
                        let straddles = ratios[0] <= 1.0 && ratios[ratios.len() - 1] >= 1.0;
                        straddles || off.fold(f64::INFINITY, f64::min) <= self.near_fails_past()
                    }
                    Read::Medians => off.fold(0.0, f64::max) <= self.by(),
                }
            }
        }
    }

    /// The verdict over a run's points. A claim holds when its medians compare as it says and so
    /// do the repeats' ranges read against it; it does not hold when even the ranges read for it
    /// do not; in between, the difference is within the spread of the repeats.
    pub fn evaluate(&self, points: &[PointRecord]) -> Checked {
        let figures = self.figures(points);
        let size = match &figures {
            Ok(f) => self.size(f),
            Err(_) => EffectSize {
                paper: self.paper_ratio,
                unit: self.size_unit(),
                ..EffectSize::default()
            },
        };
        let (verdict, ours, why) = match &figures {
            Err(why) => (Verdict::NotMeasurable, "-".into(), why.to_string()),
            Ok(f) => {
                let ours = f.iter().map(Figure::text).collect::<Vec<_>>().join(", ");
                let (v, why) = match self.wire_tie(f) {
                    Some(why) => (Verdict::WithinSpread, why),
                    None => self.verdict(f),
                };
                (v, format!("{ours} {}", self.metric.unit()), why)
            }
        };
        Checked {
            claim: self.text.clone(),
            source: self.source.clone(),
            verdict,
            size,
            stand_in: self.stand_in.clone(),
            beyond: self.beyond,
            ours,
            paper: self.paper.clone(),
            why,
            figures: figures
                .unwrap_or_default()
                .into_iter()
                .map(|f| (f.name, f.value))
                .collect(),
            unit: self.metric.unit().to_string(),
        }
    }

    /// Holds, does not hold, or within the spread: from the medians and the repeats' ranges, or,
    /// where every series ran in the same rounds of one run, from each round on its own (the
    /// points of a round ran minutes apart in labs built in turn, so what moved the whole round,
    /// this host's minute, moves them alike and cancels). Rounds decide by count: enough of them
    /// beyond the effect floor one way that chance alone would rarely give as many (see
    /// `rounds_needed`).
    fn verdict(&self, f: &[Figure]) -> (Verdict, String) {
        let Some(rounds) = by_round(f) else {
            return self.verdict_by_ranges(f);
        };
        let (v, why) = self.verdict_by_rounds(f, &rounds);
        let total = f[0].rounds.as_ref().map_or(0, |(r, _)| r.count as usize);
        match total - rounds.len() {
            0 => (v, why),
            left => {
                let sep = if why.is_empty() { "" } else { "; " };
                let note = format!("{left} of {total} rounds left out: a point was bound in them (its load not carried in full), so they measured no cost");
                (v, format!("{why}{sep}{note}"))
            }
        }
    }

    /// The verdict from the medians and the repeats' ranges (points with no rounds to pair).
    fn verdict_by_ranges(&self, f: &[Figure]) -> (Verdict, String) {
        if let Some((hold, short)) = self.sized() {
            let (low, high) = self.ratio_range(f);
            return match () {
                _ if low > hold && self.way(f) == Some(true) => (Verdict::Holds, String::new()),
                _ if high < short && self.way(f) == Some(false) => {
                    (Verdict::DoesNotHold, self.note.clone())
                }
                _ => (Verdict::WithinSpread, self.between(hold, short)),
            };
        }
        let medians = self.compare(f, Read::Medians);
        let against = self.compare(f, Read::Against);
        let for_it = self.compare(f, Read::For);
        let compare = if medians { "compare" } else { "do not compare" };
        match (medians, against, for_it, self.way(f)) {
            (true, true, _, Some(true)) => (Verdict::Holds, String::new()),
            (_, _, false, Some(false)) => (Verdict::DoesNotHold, self.note.clone()),
            (true, true, _, _) | (_, _, false, _) => (Verdict::WithinSpread, self.small_effect(f)),
            _ => (
                Verdict::WithinSpread,
                format!(
                    "their 95 % intervals overlap: the medians {compare} as the paper says, but the difference is inside the spread"
                ),
            ),
        }
    }

    /// The verdict round by round: a sign test at the effect floor. Each round goes for the
    /// claim, against it, or neither (inside the floor, or a wire tie), and the claim holds when
    /// enough rounds go for it beyond the floor that chance alone would rarely give as many (and
    /// the medians agree); a median effect just past the floor is no verdict, since what it is
    /// moves with the day (paper 1's send offloads: 9.8 % one run, 13.8 % the next, every round
    /// of both lower with offloads).
    fn verdict_by_rounds(&self, f: &[Figure], rounds: &[Vec<Figure>]) -> (Verdict, String) {
        let ways: Vec<_> = rounds
            .iter()
            .filter(|r| self.wire_tie(r).is_none())
            .map(|r| self.way(r))
            .collect();
        let n = ways.len();
        let count = |w: bool| ways.iter().filter(|x| **x == Some(w)).count();
        let (k_for, k_against, need) = (count(true), count(false), rounds_needed(n));
        match self.way(f) {
            Some(true) if n > 0 && k_for >= need => return (Verdict::Holds, String::new()),
            Some(false) if n > 0 && k_against >= need => {
                return (Verdict::DoesNotHold, self.note.clone())
            }
            _ => {}
        }
        if let Some((hold, short)) = self.sized() {
            return (
                Verdict::WithinSpread,
                format!(
                    "{}; it reaches the paper's size in {k_for} of {n} rounds and falls short of two-thirds of it in {k_against}: a verdict needs {need} of {n} one way",
                    self.between(hold, short)
                ),
            );
        }
        let compare = if self.compare(f, Read::Medians) {
            "compare"
        } else {
            "do not compare"
        };
        let by = match self.effect(f) {
            e if e.is_infinite() => String::new(),
            e => format!(", differing by {:.1} %", (e.max(1.0 / e) - 1.0) * 100.0),
        };
        (
            Verdict::WithinSpread,
            format!(
                "it holds by more than the {:.0} % floor in {k_for} of {n} rounds and goes the other way by as much in {k_against} (each compared within its round; a round the wire bound on both sides is a tie): the medians {compare} as the paper says{by}, but a verdict needs {need} of {n} one way",
                EFFECT_FLOOR * 100.0
            ),
        )
    }

    /// Which way these figures go, sized against the effect floor: for the claim (they compare as
    /// it says by more than the floor), against it (the other way by more than the floor), or
    /// neither. A threshold claim (above a value, near another) has no effect to size: it goes
    /// the way it compares.
    fn way(&self, f: &[Figure]) -> Option<bool> {
        if self.kind == Kind::Near {
            let off = (f[0].value / f[1].value - 1.0).abs();
            return (off <= self.by())
                .then_some(true)
                .or((off > self.near_fails_past()).then_some(false));
        }
        if let Some((hold, short)) = self.sized() {
            let r = self.ratio(&f.iter().map(|x| x.value).collect::<Vec<_>>());
            return (r > hold).then_some(true).or((r < short).then_some(false));
        }
        let effect = self.effect(f);
        if self.compare(f, Read::Medians) {
            (effect > 1.0 + EFFECT_FLOOR).then_some(true)
        } else {
            (effect.is_infinite() || effect < 1.0 / (1.0 + EFFECT_FLOOR)).then_some(false)
        }
    }

    /// How far the medians go the claim's way, as a ratio (above 1 where they compare as it says):
    /// the nearest other series against the first, or the first against the second, `by` times.
    /// A threshold claim (above a value, near another) has no effect to size: infinite.
    fn effect(&self, f: &[Figure]) -> f64 {
        let (first, rest) = (f[0].value, f[1..].iter().map(|x| x.value));
        match self.kind {
            Kind::Lowest => rest.fold(f64::INFINITY, f64::min) / (self.by() * first),
            Kind::Highest => first / (self.by() * rest.fold(0.0, f64::max)),
            Kind::Greater => first / (self.by() * f[1].value),
            Kind::Above | Kind::Near => f64::INFINITY,
        }
    }

    /// The claim's ratio over one set of values, one per series, without `by`: see
    /// `paper_ratio`. For `above`, the first series' figure itself.
    fn ratio(&self, v: &[f64]) -> f64 {
        let (first, rest) = (v[0], v[1..].iter().copied());
        match self.kind {
            Kind::Lowest => rest.fold(f64::INFINITY, f64::min) / first,
            Kind::Highest => first / rest.fold(0.0, f64::max),
            Kind::Greater | Kind::Near => first / v[1],
            Kind::Above => first,
        }
    }

    /// "×", or an `above` claim's unit.
    fn size_unit(&self) -> String {
        match self.kind {
            Kind::Above => self.metric.unit().to_string(),
            _ => "×".to_string(),
        }
    }

    /// The size of the effect: the paper's, ours from the medians, and ours round by round (or
    /// from the ends of the repeats' ranges, each end the one that gives the least and the
    /// greatest ratio).
    fn size(&self, f: &[Figure]) -> EffectSize {
        let medians: Vec<f64> = f.iter().map(|x| x.value).collect();
        let (low, high) = match by_round(f) {
            Some(rounds) => rounds
                .iter()
                .map(|r| self.ratio(&r.iter().map(|x| x.value).collect::<Vec<_>>()))
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
                    (l.min(x), h.max(x))
                }),
            None => self.ratio_range(f),
        };
        let finite = |x: f64| x.is_finite().then_some(x);
        EffectSize {
            paper: self.paper_ratio,
            ours: finite(self.ratio(&medians)),
            low: finite(low),
            high: finite(high),
            wire_tie: self.wire_tie(f).is_some(),
            unit: self.size_unit(),
        }
    }

    /// The least and greatest ratio the repeats' ranges allow.
    fn ratio_range(&self, f: &[Figure]) -> (f64, f64) {
        let ends = |first_high: bool| -> Vec<f64> {
            // The ratio rises with the first series' figure for every kind but lowest.
            let up = self.kind != Kind::Lowest;
            f.iter()
                .enumerate()
                .map(|(i, x)| match (i == 0, first_high == up) {
                    (true, true) | (false, false) => x.high,
                    _ => x.low,
                })
                .collect()
        };
        let (a, b) = (self.ratio(&ends(false)), self.ratio(&ends(true)));
        (a.min(b), a.max(b))
    }

    /// What "within the spread" means for a claim read against the paper's size.
    fn between(&self, hold: f64, short: f64) -> String {
        format!(
            "read against the paper's size: it holds above {hold:.2}x (the paper's {:.2}x less the {:.0} % floor), does not hold below {short:.2}x (two-thirds of the paper's effect), and ours lies between or its rounds disagree",
            self.paper_ratio.unwrap_or(hold),
            EFFECT_FLOOR * 100.0
        )
    }

    /// Why medians whose spread agrees with them, one way or the other, are still no verdict:
    /// they differ by less than the effect floor.
    fn small_effect(&self, f: &[Figure]) -> String {
        let ratio = self.effect(f);
        let (way, by) = if ratio >= 1.0 {
            (
                "compare as the paper says and so does the spread",
                ratio - 1.0,
            )
        } else {
            (
                "compare the other way and so does the spread",
                1.0 / ratio - 1.0,
            )
        };
        format!(
            "the medians {way}, but they differ by {:.1} %, less than the {:.0} % floor: a difference this small moves from run to run on this host (the bar beyond which a point's own repeats read unstable), so it is no verdict either way",
            by * 100.0,
            EFFECT_FLOOR * 100.0
        )
    }

    /// Throughputs that the wire bound on both sides of a comparison are a tie: each carried the
    /// wire's rate, so the wire decided, not what the claim compares. The gap left between them
    /// is the shaper's jitter (a 0.001 Gb/s gap once read as "holds"), never a verdict.
    fn wire_tie(&self, f: &[Figure]) -> Option<String> {
        let wire = |x: &Figure| x.bound == Some(Bound::Wire);
        if self.metric != Metric::ThroughputGbps || !wire(&f[0]) {
            return None;
        }
        let others: &[Figure] = match self.kind {
            Kind::Greater => &f[1..2],
            Kind::Lowest | Kind::Highest => &f[1..],
            Kind::Above | Kind::Near => &[],
        };
        let tied = others.iter().find(|x| wire(x))?;
        Some(format!(
            "{} and {} both carried the wire's rate (bound by the wire): the wire decides here, not what the claim compares",
            f[0].name, tied.name
        ))
    }
}

/// The least difference a comparison must show to hold: the medians must differ by more than
/// this share, the bar beyond which a point's own repeats read unstable. Smaller differences
/// (paper 1's send offloads at 8 KB: 2 to 9 % over nine runs) move from run to run on one host,
/// and a verdict that rests on one would flip with the day.
pub const EFFECT_FLOOR: f64 = crate::measure::EFFECT_FLOOR;

/// How many of `n` rounds must compare one way for a verdict that way: the fewest that chance
/// alone (each round a coin toss) reaches at most one time in eight. Three rounds need all three,
/// as five do; six need five (one round a disturbed lab moved is outweighed), nine need seven.
/// Below three rounds every round must agree: so few cannot be weighed.
fn rounds_needed(n: usize) -> usize {
    if n < 3 {
        return n;
    }
    let tail =
        |k: usize| -> f64 { (k..=n).map(|j| choose(n, j)).sum::<f64>() / 2f64.powi(n as i32) };
    (1..=n).find(|&k| tail(k) <= 0.125).unwrap_or(n)
}

/// The binomial coefficient, as a float (n is at most a hundred rounds).
fn choose(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |c, j| c * (n - j) as f64 / (j + 1) as f64)
}

/// The figure of a point in each of its rounds, where its repeats came from rounds and each
/// repeat keeps the figure.
fn per_round(m: Metric, p: &PointRecord) -> Option<(Rounds, Vec<RoundFigure>)> {
    let r = p.spread.as_ref()?.rounds?;
    let each: Vec<f64> = p
        .repeats
        .iter()
        .map(|x| m.of_repeat(x))
        .collect::<Option<_>>()?;
    let n = r.count as usize;
    if n < 2 || each.is_empty() || !each.len().is_multiple_of(n) {
        return None;
    }
    let per = each.len() / n;
    // A round is wire-bound when every repeat of it was; a cost's round is bound when any repeat
    // of it was (it is then no cost, and is left out).
    let wire = |k: usize| {
        let round = &p.repeats[k * per..(k + 1) * per];
        match m.is_cost() {
            true => round.iter().find_map(|x| x.bound_by),
            false => round
                .iter()
                .all(|x| x.bound_by == Some(Bound::Wire))
                .then_some(Bound::Wire),
        }
    };
    let medians = each
        .chunks(per)
        .enumerate()
        .map(|(k, c)| (crate::stats::spread(c, 95).median, wire(k)))
        .collect();
    Some((r, medians))
}

/// A series' figure in one round, and whether the wire bound every repeat of that round.
type RoundFigure = (f64, Option<Bound>);

/// The figures round by round, where every series ran in the same rounds of one run; None
/// otherwise (the ranges are read instead). A round in which a cost's point was bound (its load
/// not carried in full) is left out: it measured no cost.
fn by_round(f: &[Figure]) -> Option<Vec<Vec<Figure>>> {
    let (r0, _) = f[0].rounds.as_ref()?;
    if !f
        .iter()
        .all(|x| x.rounds.as_ref().is_some_and(|(r, _)| r == r0))
    {
        return None;
    }
    let at = |x: &Figure, k: usize| {
        let (v, bound) = x.rounds.as_ref().map_or((x.value, None), |(_, v)| v[k]);
        Figure {
            value: v,
            low: v,
            high: v,
            rounds: None,
            bound,
            ..x.clone()
        }
    };
    // A wire-bound round of a throughput is a tie (`wire_tie`); of a cost, no cost at all.
    let counted = |r: &Vec<Figure>| {
        r.iter().all(|x| match x.bound {
            None => true,
            Some(b) => b == Bound::Wire && !x.cost,
        })
    };
    Some(
        (0..r0.count as usize)
            .map(|k| f.iter().map(|x| at(x, k)).collect())
            .filter(counted)
            .collect(),
    )
}

/// How a comparison reads the figures.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Read {
    Medians,
    /// Each range's end that goes against the claim.
    Against,
    /// Each range's end that goes for it.
    For,
}

/// Why a figure cannot be read from a run's points. Its `Display` is the page's "why".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unmeasurable {
    #[error("no measured point for {0}")]
    NoPoint(String),
    #[error("{count} points match {name}: the check must name one")]
    Ambiguous { count: usize, name: String },
    #[error("{name} has no {unit}")]
    NoValue { name: String, unit: &'static str },
    #[error("{name} did not carry its offered load in full{when}: a cost compares only points nothing bound (a paced load carried in full)")]
    ShortLoad { name: String, when: String },
    #[error("{name} was bound by {bound}{when}: a cost compares only points nothing bound (a paced load carried in full)")]
    BoundCost {
        name: String,
        bound: Bound,
        when: String,
    },
    #[error("{name} was bound by {bound}: this claim compares only points no saturated core, side or wire bound (a saturated core's rate is its capacity, not the path's)")]
    Saturated { name: String, bound: Bound },
    #[error("{name}'s host CPU could not be told on this host: {why}")]
    Meter { name: String, why: String },
    #[error("{name} held {fewest:.0} request/response samples in a {window_s:.1} s window: its {} percentile is {}, not a tail; a tail needs {need:.0} samples ({TAIL_BEYOND:.0} beyond it), a window of {:.0} s or more at its rate", percentile_name(*q), largest(*q, *fewest), (need / (fewest / window_s).max(1e-9)).ceil())]
    FewSamples {
        name: String,
        q: f64,
        fewest: f64,
        window_s: f64,
        need: f64,
    },
}

/// A cost's point must be one nothing bound (a paced load carried in full): in every repeat, or,
/// where it ran in rounds, in most of them (at least three, and more than half): a round that
/// was bound is then left out of the cost and of the verdict (`by_round`), as a wire-bound
/// round is a tie. A saturated point's CPU per Gb/s is its ceiling's, and a load that fell short
/// was not carried.
fn unbound_rounds(m: Metric, p: &PointRecord, name: &str) -> Result<(), Unmeasurable> {
    let Some((_, rounds)) = per_round(m, p) else {
        return unbound(p, name, String::new());
    };
    let kept = rounds.iter().filter(|(_, b)| b.is_none()).count();
    match kept >= 3 && 2 * kept > rounds.len() {
        true => Ok(()),
        false => {
            let when = format!(" in {} of {} rounds", rounds.len() - kept, rounds.len());
            unbound(p, name, when)
        }
    }
}

/// A cost's point must be one nothing bound, in every repeat. `when` says in which rounds it
/// was not; a short load also says how much of it was carried.
fn unbound(p: &PointRecord, name: &str, when: String) -> Result<(), Unmeasurable> {
    let name = name.to_string();
    match p.bound_in_any_run() {
        None => Ok(()),
        Some(Bound::Latency) => Err(Unmeasurable::ShortLoad {
            name,
            when: format!("{when}{}", carried(p)),
        }),
        Some(bound) => Err(Unmeasurable::BoundCost { name, bound, when }),
    }
}

/// " (the slowest repeat carried 0.171 Gb/s, paced at 0.200 Gb/s a stream)", where the point
/// had a paced load.
fn carried(p: &PointRecord) -> String {
    let slowest = p
        .repeats
        .iter()
        .map(|r| r.throughput_gbps)
        .fold(p.throughput_gbps.unwrap_or(f64::INFINITY), f64::min);
    match p.key.load_bps {
        Some(o) if slowest.is_finite() => format!(
            " (the slowest repeat carried {slowest:.3} Gb/s, paced at {:.3} Gb/s a stream)",
            o as f64 / 1e9
        ),
        _ => String::new(),
    }
}

/// Samples a tail percentile must have beyond it in each window to be read: with fewer, the
/// "percentile" is one of the window's few largest samples, a maximum by another name.
pub const TAIL_BEYOND: f64 = 5.0;

/// A tail figure is read only from windows that held enough request/response samples for it:
/// `TAIL_BEYOND` beyond the quantile (5,000 for the 99.9th percentile, 500 for the 99th).
fn sampled(p: &PointRecord, q: f64, name: &str) -> Result<(), Unmeasurable> {
    let need = TAIL_BEYOND / (1.0 - q);
    // Each repeat's window, or the point's where it keeps no repeats.
    let rates: Vec<_> = match p.repeats.as_slice() {
        [] => vec![p.transactions_per_s],
        each => each.iter().map(|r| r.transactions_per_s).collect(),
    };
    let fewest = rates
        .iter()
        .map(|t| t.unwrap_or(0.0) * p.duration_s)
        .fold(f64::INFINITY, f64::min);
    if fewest + 0.5 >= need {
        return Ok(());
    }
    Err(Unmeasurable::FewSamples {
        name: name.to_string(),
        q,
        fewest,
        window_s: p.duration_s,
        need,
    })
}

/// What a window's `q` percentile is when it holds only `fewest` samples.
fn largest(q: f64, fewest: f64) -> String {
    match ((1.0 - q) * fewest).ceil() {
        b if b <= 1.0 => "its largest sample".to_string(),
        b => format!("one of its {b:.0} largest samples"),
    }
}

/// "99.9th", "99th".
fn percentile_name(q: f64) -> String {
    let pct = format!("{}", (q * 1000.0).round() / 10.0);
    format!("{pct}th")
}

/// A claim that compares what a path does, not what a core can: no saturated core, side,
/// backend or wire may have bound the point in any repeat.
fn unsaturated(p: &PointRecord, name: &str) -> Result<(), Unmeasurable> {
    let bound = std::iter::once(&p.bound_by)
        .chain(p.repeats.iter().map(|r| &r.bound_by))
        .flatten()
        .find(|b| **b != Bound::Latency);
    match bound {
        None => Ok(()),
        Some(b) => Err(Unmeasurable::Saturated {
            name: name.to_string(),
            bound: *b,
        }),
    }
}

/// A series' figure in a claim: the point's value and the least and greatest over its repeats.
#[derive(Clone)]
struct Figure {
    name: String,
    value: f64,
    low: f64,
    high: f64,
    /// Where its repeats came from rounds: which, and the figure in each round (the median of
    /// that round's repeats).
    rounds: Option<(Rounds, Vec<RoundFigure>)>,
    /// What saturated while the point ran (a side, a core, the wire), if anything did: a
    /// comparison of points a client bound compares the client.
    bound: Option<Bound>,
    /// A cost (host CPU): a round of it that anything bound, the wire too, measured no cost.
    cost: bool,
}

impl Figure {
    /// The figure's value is the median of its repeats' where every repeat keeps the figure (the
    /// point's own comes from its median repeat by cost: a tail or a throughput from one repeat
    /// that another figure chose), else the point's; its low and high are the median's 95 %
    /// confidence interval (`stats`: the range below six repeats), the same interval every page
    /// and table shows.
    fn of(m: Metric, p: &PointRecord, name: String) -> Option<Figure> {
        // A cost reads only the repeats nothing bound (`unbound_rounds` let the others pass) and
        // the meter could read.
        let cost = m.is_cost();
        let kept = p
            .repeats
            .iter()
            .filter(|r| !cost || (r.bound_by.is_none() && r.unmeasurable.is_none()));
        let each: Vec<f64> = kept.clone().filter_map(|r| m.of_repeat(r)).collect();
        let (value, low, high) = match each.len() {
            n if n >= 2 && n == kept.count() => {
                let s = crate::stats::spread(&each, 95);
                let i = s.interval.expect("two or more repeats have an interval");
                (s.median, i.lo, i.hi)
            }
            _ => {
                let v = m.of(p)?;
                each.iter()
                    .fold((v, v, v), |(v, l, h), &x| (v, l.min(x), h.max(x)))
            }
        };
        let bound = p.bound_by.filter(|b| *b != Bound::Latency && !cost);
        Some(Figure {
            name,
            value,
            low,
            high,
            bound,
            rounds: per_round(m, p),
            cost,
        })
    }

    fn text(&self) -> String {
        let mut t = format!("{} {:.3}", self.name, self.value);
        if self.high > self.low {
            t += &format!(" [{:.3}–{:.3}]", self.low, self.high);
        }
        if let Some(b) = &self.bound {
            t += &format!(" [bound by {b}]");
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::PointKey;

    fn point(mode: Mode, msg: u64, cpu_per_gbps: f64, gbps: f64) -> PointRecord {
        PointRecord {
            key: PointKey {
                mode,
                message_bytes: msg,
                ..Default::default()
            },
            throughput_gbps: Some(gbps),
            normalized_pct_per_gbps: Some(cpu_per_gbps),
            ..Default::default()
        }
    }

    fn sel(mode: &str) -> Selector {
        Selector {
            mode: Some(mode.into()),
            ..Default::default()
        }
    }

    fn claim(kind: Kind, metric: Metric, series: Vec<Selector>, value: Option<f64>) -> Claim {
        Claim {
            text: "t".into(),
            source: "Fig. 4(c)".into(),
            paper: "p".into(),
            metric,
            kind,
            common: Selector {
                message: Some("8K".into()),
                ..Default::default()
            },
            series,
            by_given: None,
            value,
            note: "why not".into(),
            unsaturated: false,
            paper_ratio: None,
            beyond: false,
            stand_in: "s".into(),
        }
    }

    #[test]
    fn a_selector_finds_the_movie_by_its_buffering_time() {
        let mut p = point(Mode::Macvlan, 0, 1.0, 1.0);
        let m = crate::measure::load::Movie {
            t_buffer_s: 60.0,
            time_scale: 0.05,
        };
        p.key.interference = Some(format!("cpu@host + {}", m.download(2)));
        let at = |t: f64| Selector {
            buffering: Some(t),
            ..Selector::default()
        };
        assert!(at(60.0).matches(&p) && !at(16.0).matches(&p));
        p.key.interference = None;
        assert!(!at(60.0).matches(&p));
    }

    /// A movie point: its median repeat's host CPU while buffering, and every repeat's.
    fn movie(mode: Mode, median: f64, each: [f64; 3]) -> PointRecord {
        use crate::measure::load::{Movie, MoviePhases, Phase};
        let phase = |v: f64| Phase {
            from_s: 0.0,
            to_s: 0.64,
            host_busy_pct: Some(v),
            samples: 6,
        };
        let phases = MoviePhases {
            movie: Movie {
                t_buffer_s: 16.0,
                time_scale: 0.04,
            },
            buffering: phase(median),
            play_only: phase(2.0),
        };
        PointRecord {
            result: Some(Box::new(crate::records::measured::Measured {
                movie: Some(phases),
                ..crate::records::measured::sample()
            })),
            repeats: each
                .iter()
                .map(|&v| crate::records::Repeat {
                    movie_buffering_pct: Some(v),
                    ..Default::default()
                })
                .collect(),
            ..point(mode, 8192, 1.0, 1.0)
        }
    }

    #[test]
    fn a_movie_claim_reads_the_spread_of_every_repeats_buffering_cpu() {
        let c = claim(
            Kind::Lowest,
            Metric::MovieBufferingPct,
            vec![sel("macvlan"), sel("paravirt")],
            None,
        );
        // Medians a hair apart, ranges overlapping: within the spread (it read "does not hold"
        // when only the medians were kept).
        let close = [
            movie(Mode::Macvlan, 7.75, [6.9, 7.75, 8.4]),
            movie(Mode::Paravirt, 7.43, [7.1, 7.43, 15.8]),
        ];
        let r = c.evaluate(&close);
        assert_eq!(r.verdict, Verdict::WithinSpread, "{} {}", r.ours, r.why);
        assert!(r.ours.contains("[6.900–8.400]"), "{}", r.ours);
        let apart = [
            movie(Mode::Macvlan, 7.0, [6.9, 7.0, 7.2]),
            movie(Mode::Paravirt, 15.8, [14.0, 15.8, 16.1]),
        ];
        assert_eq!(c.evaluate(&apart).verdict, Verdict::Holds);
    }

    /// Six or more repeats: a figure's low and high are its median's 95 % interval, so one
    /// stray repeat no longer decides (the range read "within the spread"), and the page shows
    /// the interval.
    #[test]
    fn with_six_repeats_a_verdict_reads_the_medians_interval_not_the_range() {
        let c = claim(
            Kind::Greater,
            Metric::ThroughputGbps,
            vec![sel("macvlan"), sel("bridge")],
            None,
        );
        let six = |mode, v: [f64; 6]| {
            let mut p = with(
                mode,
                crate::stats::spread(&v, 95).median,
                [v[0], v[1], v[2]],
            );
            p.repeats = v
                .iter()
                .map(|&t| crate::records::Repeat {
                    throughput_gbps: t,
                    ..Default::default()
                })
                .collect();
            p
        };
        let nine = |mode, v: [f64; 9]| {
            let mut p = six(mode, [v[0], v[1], v[2], v[3], v[4], v[5]]);
            p.repeats = v
                .iter()
                .map(|&t| crate::records::Repeat {
                    throughput_gbps: t,
                    ..Default::default()
                })
                .collect();
            p
        };
        // Nine repeats each, one stray low repeat of macvlan's inside bridge's range.
        let pts = [
            nine(Mode::Macvlan, [5.0, 5.1, 4.9, 5.2, 1.0, 5.0, 4.8, 5.1, 5.0]),
            nine(Mode::Bridge, [2.0, 2.1, 1.9, 2.0, 2.2, 1.8, 2.0, 2.1, 1.9]),
        ];
        let r = c.evaluate(&pts);
        assert_eq!(r.verdict, Verdict::Holds, "{} {}", r.ours, r.why);
        assert!(r.ours.contains("macvlan 5.000 [4.800–5.100]"), "{}", r.ours);
        // Six repeats: the interval is still the range, and the stray repeat keeps it open.
        let pts = [
            six(Mode::Macvlan, [5.0, 5.1, 4.9, 5.2, 1.0, 5.0]),
            six(Mode::Bridge, [2.0, 2.1, 1.9, 2.0, 2.2, 1.8]),
        ];
        assert_eq!(c.evaluate(&pts).verdict, Verdict::WithinSpread);
    }

    #[test]
    fn a_difference_inside_the_repeats_spread_is_within_the_spread() {
        let c = claim(
            Kind::Greater,
            Metric::ThroughputGbps,
            vec![sel("macvlan"), sel("bridge")],
            None,
        );
        let apart = [
            with(Mode::Macvlan, 5.0, [4.8, 5.0, 5.2]),
            with(Mode::Bridge, 2.0, [1.9, 2.0, 2.1]),
        ];
        let r = c.evaluate(&apart);
        assert_eq!(r.verdict, Verdict::Holds);
        assert!(r.ours.contains("macvlan 5.000 [4.800–5.200]"), "{}", r.ours);
        let overlap = [
            with(Mode::Macvlan, 5.0, [3.0, 5.0, 5.2]),
            with(Mode::Bridge, 4.0, [3.9, 4.0, 4.1]),
        ];
        let r = c.evaluate(&overlap);
        assert_eq!(r.verdict, Verdict::WithinSpread);
        assert!(r.why.contains("inside the spread"), "{}", r.why);
        // Reversed medians whose ranges still overlap: within the spread too, never a flip to
        // "does not hold" on one run and "holds" on the next.
        let reversed = [
            with(Mode::Macvlan, 3.9, [3.0, 3.9, 5.2]),
            with(Mode::Bridge, 4.0, [3.9, 4.0, 4.1]),
        ];
        assert_eq!(c.evaluate(&reversed).verdict, Verdict::WithinSpread);
        // Apart the wrong way: does not hold.
        let wrong = [
            with(Mode::Macvlan, 2.0, [1.9, 2.0, 2.1]),
            with(Mode::Bridge, 4.0, [3.9, 4.0, 4.1]),
        ];
        assert_eq!(c.evaluate(&wrong).verdict, Verdict::DoesNotHold);
    }

    /// A point at 8 KB with a throughput median and three repeats.
    fn with(mode: Mode, median: f64, each: [f64; 3]) -> PointRecord {
        PointRecord {
            repeats: each
                .iter()
                .map(|&g| crate::records::Repeat {
                    throughput_gbps: g,
                    ..Default::default()
                })
                .collect(),
            ..point(mode, 8192, 1.0, median)
        }
    }

    /// A point at 8 KB whose CPU-per-Gb/s repeats came one from each round of run `run`.
    fn rounds(mode: Mode, each: &[f64], run: i64) -> PointRecord {
        let spread = crate::stats::spread(each, 95);
        PointRecord {
            repeats: each
                .iter()
                .map(|&c| crate::records::Repeat {
                    throughput_gbps: 0.2,
                    normalized_pct_per_gbps: Some(c),
                    ..Default::default()
                })
                .collect(),
            spread: Some(crate::records::Repeats {
                runs: each.len(),
                confidence_level: 95,
                confidence_met: None,
                throughput_gbps: crate::stats::spread(&[0.2], 95),
                transactions_per_s: None,
                host_busy_pct: None,
                normalized_pct_per_gbps: Some(spread.clone()),
                wide: false,
                bound_left_out: 0,
                goal: None,
                unmeasurable: None,
                shown: None,
                each: vec![],
                rounds: Some(Rounds {
                    count: each.len() as u32,
                    run,
                }),
            }),
            ..point(mode, 8192, spread.median, 0.2)
        }
    }

    #[test]
    fn a_claims_size_is_ours_beside_the_papers_with_its_spread() {
        let mut c = claim(
            Kind::Lowest,
            Metric::NormalizedPctPerGbps,
            vec![sel("macvlan"), sel("emulated"), sel("paravirt")],
            None,
        );
        c.paper_ratio = Some(3.91);
        // Round by round: emulated is the nearest other, 1.2-1.5x macvlan's cost in its rounds.
        let pts = [
            rounds(Mode::Macvlan, &[10.0, 20.0, 30.0], 7),
            rounds(Mode::Emulated, &[15.0, 24.0, 36.0], 7),
            rounds(Mode::Paravirt, &[30.0, 40.0, 50.0], 7),
        ];
        let r = c.evaluate(&pts);
        assert_eq!(r.size.paper, Some(3.91));
        assert!((r.size.ours.unwrap() - 1.2).abs() < 1e-9, "{:?}", r.size);
        assert!((r.size.low.unwrap() - 1.2).abs() < 1e-9, "{:?}", r.size);
        assert!((r.size.high.unwrap() - 1.5).abs() < 1e-9, "{:?}", r.size);
        assert_eq!(r.size.text(), "paper 3.91×; here 1.20× [1.20–1.50]");
        // Without rounds the ratio's range comes from the repeats' ranges, each end taken the
        // way that moves the ratio most.
        let mut g = claim(
            Kind::Greater,
            Metric::NormalizedPctPerGbps,
            vec![sel("emulated"), sel("macvlan")],
            None,
        );
        g.paper_ratio = Some(2.0);
        let mut e = point(Mode::Emulated, 8192, 4.0, 0.2);
        e.repeats = [3.0, 4.0, 6.0]
            .iter()
            .map(|&v| crate::records::Repeat {
                normalized_pct_per_gbps: Some(v),
                ..Default::default()
            })
            .collect();
        let mut m = point(Mode::Macvlan, 8192, 2.0, 0.2);
        m.repeats = [1.5, 2.0, 3.0]
            .iter()
            .map(|&v| crate::records::Repeat {
                normalized_pct_per_gbps: Some(v),
                ..Default::default()
            })
            .collect();
        let r = g.evaluate(&[e, m]);
        assert_eq!(
            (r.size.ours, r.size.low, r.size.high),
            (Some(2.0), Some(1.0), Some(4.0))
        );
        // Not measured: the paper's size and nothing of ours.
        let none = g.evaluate(&[]);
        assert_eq!(none.size.text(), "paper 2.00×; here: not measured");
        // An `above` claim's size is the figure itself, in its unit.
        let mut a = claim(
            Kind::Above,
            Metric::ThroughputGbps,
            vec![sel("paravirt")],
            Some(2.5),
        );
        a.common = Selector::default();
        a.paper_ratio = Some(2.5);
        let r = a.evaluate(&[point(Mode::Paravirt, 0, 1.0, 3.1)]);
        assert_eq!(r.size.text(), "paper 2.50 Gb/s; here 3.10 Gb/s");
    }

    #[test]
    fn a_claim_of_the_papers_size_holds_within_the_floor_of_it_and_fails_below_two_thirds() {
        let mut c = claim(
            Kind::Greater,
            Metric::NormalizedPctPerGbps,
            vec![sel("emulated"), sel("macvlan")],
            None,
        );
        c.paper_ratio = Some(3.91);
        let (hold, short) = c.sized().unwrap();
        // The paper's size less the floor: a smaller gap is no difference on this host.
        assert!((hold - 3.91 / 1.1).abs() < 1e-9);
        // Two-thirds of the effect: 3.91^(2/3).
        assert!((short - 3.91f64.powf(2.0 / 3.0)).abs() < 1e-9 && short < 2.49);
        let run = |c: &Claim, emulated: &[f64]| {
            c.evaluate(&[
                rounds(Mode::Emulated, emulated, 7),
                rounds(Mode::Macvlan, &[10.0; 6], 7),
            ])
        };
        // Ours 4.2-4.9x: at least the paper's size in every round.
        assert_eq!(
            run(&c, &[42.0, 45.0, 49.0, 44.0, 46.0, 43.0]).verdict,
            Verdict::Holds
        );
        // Ours 3.6-3.9x: short of the paper's 3.91x, but by less than the floor: holds.
        assert_eq!(
            run(&c, &[36.0, 38.0, 39.0, 37.0, 36.5, 38.5]).verdict,
            Verdict::Holds
        );
        // Ours 1.5-2.0x: short of two-thirds of the paper's effect in every round.
        assert_eq!(
            run(&c, &[15.0, 16.0, 20.0, 17.0, 18.0, 16.0]).verdict,
            Verdict::DoesNotHold
        );
        // Ours about 2.7x with a wide spread: most of the effect, not all: within, saying so.
        let r = run(&c, &[27.0, 25.0, 30.0, 24.5, 33.0, 43.0]);
        assert_eq!(r.verdict, Verdict::WithinSpread, "{}", r.why);
        assert!(
            r.why.contains("two-thirds of the paper's effect"),
            "{}",
            r.why
        );
        // A paper effect below the floor (3 %) cannot hold on a tie, nor fail on one.
        c.paper_ratio = Some(1.03);
        let (hold, short) = c.sized().unwrap();
        assert!(hold >= 1.1 && short < 1.0, "{hold} {short}");
        assert_eq!(run(&c, &[10.0; 6]).verdict, Verdict::WithinSpread);
        // Asking less than the paper's size (by given) is the plain comparison again.
        c.by_given = Some(2.0);
        assert!(c.sized().is_none());
    }

    #[test]
    fn a_cost_round_that_did_not_carry_its_load_is_left_out() {
        let c = claim(
            Kind::Greater,
            Metric::NormalizedPctPerGbps,
            vec![sel("paravirt"), sel("macvlan")],
            None,
        );
        let short = |mut p: PointRecord, k: usize| {
            p.repeats[k].bound_by = Some(Bound::Latency);
            p.bound_by = Some(Bound::Latency);
            p
        };
        // Round 5 of 6 fell short (paper 1's GNIC at 256 B, once): the five others still
        // compare, each far beyond the floor; the cost is the median of those five.
        let paravirt = short(
            rounds(
                Mode::Paravirt,
                &[218.0, 202.0, 204.0, 205.0, 180.0, 178.0],
                7,
            ),
            4,
        );
        let macvlan = rounds(Mode::Macvlan, &[94.0, 85.0, 84.0, 93.0, 87.0, 72.0], 7);
        let r = c.evaluate(&[paravirt.clone(), macvlan.clone()]);
        assert_eq!(r.verdict, Verdict::Holds, "{}", r.why);
        assert!(r.why.contains("1 of 6 rounds left out"), "{}", r.why);
        assert_eq!(r.figures[0].1, 204.0);
        // Half the rounds short: no cost, and the page says in how many and how short.
        let mut half = short(short(paravirt, 0), 1);
        half.key.load_bps = Some(200_000_000);
        half.repeats[1].throughput_gbps = 0.171;
        let r = c.evaluate(&[half, macvlan.clone()]);
        assert_eq!(r.verdict, Verdict::NotMeasurable, "{}", r.why);
        assert!(
            r.why.contains("did not carry its offered load in full in 3 of 6 rounds (the slowest repeat carried 0.171 Gb/s, paced at 0.200 Gb/s a stream)"),
            "{}",
            r.why
        );
        // Without rounds, one short repeat still leaves no cost.
        let plain = PointRecord {
            bound_by: Some(Bound::Latency),
            ..point(Mode::Paravirt, 8192, 200.0, 0.2)
        };
        let r = c.evaluate(&[plain, macvlan]);
        assert_eq!(r.verdict, Verdict::NotMeasurable);
    }

    #[test]
    fn a_wire_bound_tie_shows_its_size_and_says_the_wire_bound_it() {
        let mut c = claim(
            Kind::Greater,
            Metric::ThroughputGbps,
            vec![sel("macvlan"), sel("paravirt")],
            None,
        );
        c.paper_ratio = Some(1.06);
        let wired = |m: Mode, gbps: f64| PointRecord {
            bound_by: Some(Bound::Wire),
            ..point(m, 8192, 1.0, gbps)
        };
        let r = c.evaluate(&[wired(Mode::Macvlan, 0.951), wired(Mode::Paravirt, 0.950)]);
        assert_eq!(r.verdict, Verdict::WithinSpread);
        assert!(r.size.wire_tie);
        assert!(
            r.size.text().ends_with("(both bound by the wire)"),
            "{}",
            r.size.text()
        );
        assert!((r.size.ours.unwrap() - 0.951 / 0.950).abs() < 1e-9);
    }

    #[test]
    fn points_of_one_run_in_rounds_compare_round_by_round() {
        let c = claim(
            Kind::Lowest,
            Metric::NormalizedPctPerGbps,
            vec![sel("macvlan"), sel("bridge")],
            None,
        );
        let bridge = [36.0, 46.0, 57.0];
        // The whole host drifts from round to round; macvlan is cheaper by more than the floor
        // in every round, though the ranges overlap: the drift cancels within a round, and the
        // claim holds.
        let drift = [
            rounds(Mode::Macvlan, &[30.0, 40.0, 50.0], 7),
            rounds(Mode::Bridge, &bridge, 7),
        ];
        assert_eq!(c.evaluate(&drift).verdict, Verdict::Holds);
        // The same figures from two runs do not pair: their ranges overlap, within the spread.
        let apart = [
            rounds(Mode::Macvlan, &[30.0, 40.0, 50.0], 7),
            rounds(Mode::Bridge, &bridge, 8),
        ];
        let r = c.evaluate(&apart);
        assert_eq!(r.verdict, Verdict::WithinSpread);
        assert!(r.why.contains("intervals overlap"), "{}", r.why);
        // Cheaper beyond the floor in two rounds of three, dearer in one: within the spread.
        let mixed = [
            rounds(Mode::Macvlan, &[30.0, 47.0, 50.0], 7),
            rounds(Mode::Bridge, &bridge, 7),
        ];
        let r = c.evaluate(&mixed);
        assert_eq!(r.verdict, Verdict::WithinSpread);
        assert!(r.why.contains("in 2 of 3 rounds"), "{}", r.why);
        assert!(r.why.contains("needs 3 of 3"), "{}", r.why);
        // Dearer by a fifth in every round: does not hold.
        let wrong = [
            rounds(Mode::Macvlan, &[44.0, 56.0, 69.0], 7),
            rounds(Mode::Bridge, &bridge, 7),
        ];
        assert_eq!(c.evaluate(&wrong).verdict, Verdict::DoesNotHold);
        // Dearer in every round by 2-3 %, under the floor: no verdict either way, saying so.
        let close = [
            rounds(Mode::Macvlan, &[37.0, 47.0, 58.0], 7),
            rounds(Mode::Bridge, &bridge, 7),
        ];
        let r = c.evaluate(&close);
        assert_eq!(r.verdict, Verdict::WithinSpread);
        assert!(
            r.why.contains("do not compare as the paper says"),
            "{}",
            r.why
        );
        assert!(r.why.contains("in 0 of 3 rounds"), "{}", r.why);
        assert!(r.why.contains("by as much in 0"), "{}", r.why);
    }

    #[test]
    fn a_round_counts_only_beyond_the_floor_so_an_effect_at_it_is_no_verdict() {
        let c = claim(
            Kind::Lowest,
            Metric::NormalizedPctPerGbps,
            vec![sel("macvlan"), sel("bridge")],
            None,
        );
        // Cheaper in all nine rounds, by 3 to 20 %, a median of 11 %: the medians clear the
        // floor, but only five rounds do, and what the median is moves with the day (paper 1's
        // send offloads: 9.8 % one run, 13.8 % the next). No verdict, saying how many cleared it.
        let bridge = [50.0; 9];
        let macvlan = [48.5, 47.0, 46.0, 45.5, 45.0, 43.5, 42.5, 42.0, 41.5];
        let at_floor = [
            rounds(Mode::Macvlan, &macvlan, 7),
            rounds(Mode::Bridge, &bridge, 7),
        ];
        let r = c.evaluate(&at_floor);
        assert_eq!(r.verdict, Verdict::WithinSpread, "{}", r.why);
        assert!(r.why.contains("floor in 5 of 9 rounds"), "{}", r.why);
        assert!(r.why.contains("differing by 11.1 %"), "{}", r.why);
        assert!(r.why.contains("needs 7 of 9"), "{}", r.why);
        // Two more rounds beyond it (seven of nine): holds.
        let mut more = macvlan;
        (more[2], more[3]) = (44.0, 44.5);
        let beyond = [
            rounds(Mode::Macvlan, &more, 7),
            rounds(Mode::Bridge, &bridge, 7),
        ];
        assert_eq!(c.evaluate(&beyond).verdict, Verdict::Holds);
        // A factor: at most half the bridge's cost. 42-48 against 50 is nowhere near: every round
        // goes the other way beyond the floor, and the claim does not hold.
        let half = Claim {
            by_given: Some(2.0),
            ..c
        };
        assert_eq!(half.evaluate(&beyond).verdict, Verdict::DoesNotHold);
        let quarter = [
            rounds(Mode::Macvlan, &[20.0; 9], 7),
            rounds(Mode::Bridge, &bridge, 7),
        ];
        assert_eq!(half.evaluate(&quarter).verdict, Verdict::Holds);
    }

    #[test]
    fn a_verdict_over_rounds_needs_as_many_as_chance_rarely_gives() {
        let need: Vec<usize> = (0..=10).map(rounds_needed).collect();
        assert_eq!(need, [0, 1, 2, 3, 4, 5, 5, 6, 7, 7, 8]);
        let c = claim(
            Kind::Lowest,
            Metric::NormalizedPctPerGbps,
            vec![sel("macvlan"), sel("bridge")],
            None,
        );
        let bridge = [35.0, 45.0, 55.0, 40.0, 50.0, 45.0];
        // Six rounds, one of them the other way (a disturbed lab): five of six hold.
        let one_off = [
            rounds(Mode::Macvlan, &[30.0, 40.0, 49.0, 36.0, 52.0, 40.0], 7),
            rounds(Mode::Bridge, &bridge, 7),
        ];
        let r = c.evaluate(&one_off);
        assert_eq!(r.verdict, Verdict::Holds, "{}", r.why);
        // Two of six the other way: within the spread, saying what a verdict needs.
        let two_off = [
            rounds(Mode::Macvlan, &[30.0, 46.0, 49.0, 36.0, 52.0, 40.0], 7),
            rounds(Mode::Bridge, &bridge, 7),
        ];
        let r = c.evaluate(&two_off);
        assert_eq!(r.verdict, Verdict::WithinSpread);
        assert!(r.why.contains("in 4 of 6 rounds"), "{}", r.why);
        assert!(r.why.contains("needs 5 of 6"), "{}", r.why);
        // One of six holds: five the other way (by more than the floor), the claim does not hold.
        let against = [
            rounds(Mode::Macvlan, &[30.0, 55.0, 66.0, 49.0, 60.0, 54.0], 7),
            rounds(Mode::Bridge, &bridge, 7),
        ];
        assert_eq!(c.evaluate(&against).verdict, Verdict::DoesNotHold);
    }

    #[test]
    fn an_unsaturated_claim_refuses_a_point_a_core_bound_but_not_one_latency_bound() {
        let mut c = claim(
            Kind::Greater,
            Metric::TransactionsPerS,
            vec![sel("macvlan"), sel("bridge")],
            None,
        );
        let rr = |m, tps: f64, b: Bound| PointRecord {
            transactions_per_s: Some(tps),
            bound_by: Some(b),
            ..point(m, 8192, 1.0, 0.0)
        };
        let pts = [
            rr(Mode::Macvlan, 16000.0, Bound::Host),
            rr(Mode::Bridge, 20000.0, Bound::Latency),
        ];
        assert_eq!(c.evaluate(&pts).verdict, Verdict::DoesNotHold);
        c.unsaturated = true;
        let r = c.evaluate(&pts);
        assert_eq!(r.verdict, Verdict::NotMeasurable);
        assert!(r.why.contains("macvlan 8K was bound by host"), "{}", r.why);
        // Waiting on the other side (latency) is what a request/response test measures: fine.
        let both = [
            rr(Mode::Macvlan, 21000.0, Bound::Latency),
            rr(Mode::Bridge, 20000.0, Bound::Latency),
        ];
        assert_ne!(c.evaluate(&both).verdict, Verdict::NotMeasurable);
    }

    #[test]
    fn a_round_the_wire_bound_on_both_sides_counts_neither_way() {
        let c = claim(
            Kind::Greater,
            Metric::ThroughputGbps,
            vec![sel("macvlan"), sel("bridge")],
            None,
        );
        let tp = |m, each: [(f64, bool); 3]| {
            let mut p = rounds(m, &[1.0, 1.0, 1.0], 7);
            for (r, (g, wire)) in p.repeats.iter_mut().zip(each) {
                r.throughput_gbps = g;
                r.bound_by = wire.then_some(Bound::Wire);
            }
            p.throughput_gbps = Some(crate::stats::spread(&each.map(|x| x.0), 95).median);
            p
        };
        // The big buffer fills the wire in every round; the small one falls short in two and
        // fills it too in the third, a hair above: that round is a tie, the claim holds.
        let pts = [
            tp(Mode::Macvlan, [(0.956, true), (0.956, true), (0.954, true)]),
            tp(Mode::Bridge, [(0.735, false), (0.84, false), (0.956, true)]),
        ];
        let r = c.evaluate(&pts);
        assert_eq!(r.verdict, Verdict::Holds, "{}", r.why);
        // Counted as a round, it would have been "within the spread".
        let untied = [
            tp(Mode::Macvlan, [(0.956, true), (0.956, true), (0.954, true)]),
            tp(
                Mode::Bridge,
                [(0.735, false), (0.84, false), (0.956, false)],
            ),
        ];
        assert_eq!(c.evaluate(&untied).verdict, Verdict::WithinSpread);
    }

    #[test]
    fn throughputs_the_wire_bound_on_both_sides_are_a_tie() {
        let c = claim(
            Kind::Greater,
            Metric::ThroughputGbps,
            vec![sel("macvlan"), sel("bridge")],
            None,
        );
        let wire = |m, v, r| PointRecord {
            bound_by: Some(Bound::Wire),
            ..with(m, v, r)
        };
        // Ranges a hair apart, both at the wire's rate: the wire decided, not the datapaths.
        let tie = [
            wire(Mode::Macvlan, 0.957, [0.957, 0.957, 0.958]),
            wire(Mode::Bridge, 0.955, [0.955, 0.956, 0.956]),
        ];
        let r = c.evaluate(&tie);
        assert_eq!(r.verdict, Verdict::WithinSpread);
        assert!(r.why.contains("both carried the wire's rate"), "{}", r.why);
        // Only the first at the wire's rate: a real difference, it holds.
        let apart = [
            wire(Mode::Macvlan, 0.957, [0.957, 0.957, 0.958]),
            with(Mode::Bridge, 0.5, [0.49, 0.5, 0.51]),
        ];
        assert_eq!(c.evaluate(&apart).verdict, Verdict::Holds);
        // A cost is no throughput: the tie rule does not apply to it.
        let cost = claim(
            Kind::Greater,
            Metric::NormalizedPctPerGbps,
            vec![sel("macvlan"), sel("bridge")],
            None,
        );
        assert_ne!(
            cost.evaluate(&tie).why,
            r.why,
            "the tie is a throughput rule"
        );
    }

    #[test]
    fn a_cost_is_compared_only_between_points_nothing_bound() {
        let c = claim(
            Kind::Greater,
            Metric::NormalizedPctPerGbps,
            vec![sel("emulated"), sel("macvlan")],
            None,
        );
        let mut pts = vec![
            point(Mode::Emulated, 8192, 190.0, 0.5),
            point(Mode::Macvlan, 8192, 90.0, 0.5),
        ];
        assert_eq!(c.evaluate(&pts).verdict, Verdict::Holds);
        pts[0].bound_by = Some(Bound::Host);
        let r = c.evaluate(&pts);
        assert_eq!(r.verdict, Verdict::NotMeasurable);
        assert!(
            r.why.contains(
                "emulated 8K was bound by host: a cost compares only points nothing bound"
            ),
            "{}",
            r.why
        );
        // One bound repeat is enough: its CPU is in the spread.
        pts[0].bound_by = None;
        pts[1].repeats = vec![
            crate::records::Repeat::default(),
            crate::records::Repeat {
                bound_by: Some(Bound::Latency),
                ..Default::default()
            },
        ];
        let r = c.evaluate(&pts);
        assert_eq!(r.verdict, Verdict::NotMeasurable);
        assert!(
            r.why.contains("did not carry its offered load"),
            "{}",
            r.why
        );
        // Throughput claims read bound points and say what bound them.
        let t = claim(
            Kind::Greater,
            Metric::ThroughputGbps,
            vec![sel("macvlan"), sel("emulated")],
            None,
        );
        pts[0].bound_by = Some(Bound::Host);
        pts[0].throughput_gbps = Some(0.2);
        pts[1].repeats.clear();
        let r = t.evaluate(&pts);
        assert_eq!(r.verdict, Verdict::Holds);
        assert!(r.ours.contains("[bound by host]"), "{}", r.ours);
    }

    #[test]
    fn a_latency_tail_compares_with_its_repeats_ranges() {
        let rr = |mode, p999: [f64; 3]| {
            let mut p = point(mode, 8192, 1.0, 1.0);
            let mut m = crate::records::measured::sample();
            m.result.latency_us = Some(crate::records::test::Latency {
                p50: 1.0,
                p90: 1.0,
                p99: 1.0,
                p999: p999[1],
                max: 1.0,
                mean: 1.0,
            });
            p.result = Some(Box::new(m));
            p.repeats = p999
                .iter()
                .map(|&v| crate::records::Repeat {
                    latency_p999_us: Some(v),
                    transactions_per_s: Some(10_000.0),
                    ..Default::default()
                })
                .collect();
            p.transactions_per_s = Some(10_000.0);
            p.duration_s = 1.0;
            p
        };
        let c = claim(
            Kind::Greater,
            Metric::LatencyP999Us,
            vec![sel("paravirt"), sel("macvlan")],
            None,
        );
        let apart = [
            rr(Mode::Paravirt, [900.0, 1000.0, 1100.0]),
            rr(Mode::Macvlan, [200.0, 300.0, 400.0]),
        ];
        assert_eq!(c.evaluate(&apart).verdict, Verdict::Holds);
        let close = [
            rr(Mode::Paravirt, [300.0, 1000.0, 1100.0]),
            rr(Mode::Macvlan, [200.0, 300.0, 400.0]),
        ];
        assert_eq!(c.evaluate(&close).verdict, Verdict::WithinSpread);
        // 4,999 samples a window: the 99.9th percentile would be among the five largest.
        let mut short = apart.clone();
        short[0].repeats[2].transactions_per_s = Some(4_999.0);
        let r = c.evaluate(&short);
        assert_eq!(r.verdict, Verdict::NotMeasurable);
        assert!(
            r.why.contains("held 4999 request/response samples"),
            "{}",
            r.why
        );
        assert!(r.why.contains("one of its 5 largest samples"), "{}", r.why);
        assert!(r.why.contains("a tail needs 5000 samples"), "{}", r.why);
        // The 99th percentile needs 500: the same windows hold enough for it.
        let p99 = Claim {
            metric: Metric::LatencyP99Us,
            ..c.clone()
        };
        for p in short.iter_mut() {
            p.repeats
                .iter_mut()
                .for_each(|r| r.latency_p99_us = Some(1.0));
        }
        assert_ne!(p99.evaluate(&short).verdict, Verdict::NotMeasurable);
    }

    #[test]
    fn a_difference_below_the_floor_is_no_verdict() {
        let c = claim(
            Kind::Lowest,
            Metric::NormalizedPctPerGbps,
            vec![sel("macvlan"), sel("bridge")],
            None,
        );
        let at = |bridge: f64| {
            vec![
                point(Mode::Macvlan, 8192, 50.0, 0.2),
                point(Mode::Bridge, 8192, bridge, 0.2),
            ]
        };
        // 12 % apart holds; 8 % apart, with nothing else against it, is within the spread.
        assert_eq!(c.evaluate(&at(56.0)).verdict, Verdict::Holds);
        let r = c.evaluate(&at(54.0));
        assert_eq!(r.verdict, Verdict::WithinSpread, "{}", r.why);
        assert!(
            r.why.contains("differ by 8.0 %, less than the 10 % floor"),
            "{}",
            r.why
        );
        // Reversed by as little, no verdict either: the floor holds both ways. Reversed by 12 %,
        // it does not hold.
        let r = c.evaluate(&at(46.0));
        assert_eq!(r.verdict, Verdict::WithinSpread, "{}", r.why);
        assert!(r.why.contains("the other way"), "{}", r.why);
        assert_eq!(c.evaluate(&at(44.0)).verdict, Verdict::DoesNotHold);
        // A greater-by claim needs its factor and the floor on top.
        let g = Claim {
            by_given: Some(2.0),
            ..claim(
                Kind::Greater,
                Metric::NormalizedPctPerGbps,
                vec![sel("bridge"), sel("macvlan")],
                None,
            )
        };
        assert_eq!(g.evaluate(&at(105.0)).verdict, Verdict::WithinSpread);
        assert_eq!(g.evaluate(&at(111.0)).verdict, Verdict::Holds);
    }

    #[test]
    fn every_kind_of_verdict_flips_when_its_data_is_reversed() {
        let good = vec![
            point(Mode::Macvlan, 8192, 0.5, 5.0),
            point(Mode::Bridge, 8192, 2.0, 2.0),
            point(Mode::Emulated, 8192, 3.0, 1.0),
            point(Mode::Macvlan, 65536, 9.0, 0.1),
        ];
        let reversed: Vec<PointRecord> = good
            .iter()
            .map(|p| PointRecord {
                normalized_pct_per_gbps: p.normalized_pct_per_gbps.map(|v| 10.0 - v),
                throughput_gbps: p.throughput_gbps.map(|g| 6.0 - g),
                ..p.clone()
            })
            .collect();
        let three = || vec![sel("macvlan"), sel("bridge"), sel("emulated")];
        for c in [
            claim(Kind::Lowest, Metric::NormalizedPctPerGbps, three(), None),
            claim(Kind::Highest, Metric::ThroughputGbps, three(), None),
            claim(
                Kind::Greater,
                Metric::ThroughputGbps,
                vec![sel("macvlan"), sel("bridge")],
                None,
            ),
            claim(
                Kind::Above,
                Metric::ThroughputGbps,
                vec![sel("macvlan")],
                Some(3.0),
            ),
        ] {
            c.check().unwrap();
            assert_eq!(c.evaluate(&good).verdict, Verdict::Holds, "{:?}", c.kind);
            let r = c.evaluate(&reversed);
            assert_eq!(r.verdict, Verdict::DoesNotHold, "{:?}", c.kind);
            assert_eq!(r.why, "why not");
        }
        let ok = claim(Kind::Lowest, Metric::NormalizedPctPerGbps, three(), None).evaluate(&good);
        assert!(
            ok.ours.contains("macvlan 0.500") && ok.ours.contains("emulated 3.000"),
            "{}",
            ok.ours
        );
    }

    #[test]
    fn a_near_check_fails_above_as_well_as_below_and_names_what_bound_the_points() {
        let c = Claim {
            by_given: Some(0.1),
            ..claim(
                Kind::Near,
                Metric::ThroughputGbps,
                vec![sel("macvlan"), sel("native")],
                None,
            )
        };
        c.check().unwrap();
        let pair = |first: f64| {
            let mut p = [
                point(Mode::Macvlan, 8192, 1.0, first),
                point(Mode::Native, 8192, 1.0, 5.0),
            ];
            p[0].bound_by = Some(Bound::Client);
            p[1].bound_by = Some(Bound::Latency);
            c.evaluate(&p)
        };
        let near = pair(5.4);
        assert_eq!(near.verdict, Verdict::Holds);
        assert_eq!(
            near.ours, "macvlan 5.400 [bound by client], native 5.000 Gb/s",
            "a latency bound is no saturation and is not named"
        );
        // Missing its bound by less than the effect floor is no verdict; beyond it, a failure.
        assert_eq!(pair(4.4).verdict, Verdict::WithinSpread, "below by 12 %");
        assert_eq!(pair(5.6).verdict, Verdict::WithinSpread, "above by 12 %");
        assert_eq!(pair(3.9).verdict, Verdict::DoesNotHold, "below by 22 %");
        assert_eq!(pair(6.1).verdict, Verdict::DoesNotHold, "above by 22 %");
        let wide = Claim {
            by_given: Some(1.0),
            ..c
        };
        assert!(wide.check().is_err(), "a near check's by is a fraction");
    }

    #[test]
    fn a_near_check_without_the_papers_bound_asks_for_the_floor_and_counts_it_once() {
        let series = || vec![sel("macvlan"), sel("native")];
        let near = claim(Kind::Near, Metric::ThroughputGbps, series(), None);
        near.check().unwrap();
        let greater = claim(Kind::Greater, Metric::ThroughputGbps, series(), None);
        let pair = |c: &Claim, first: f64| {
            c.evaluate(&[
                point(Mode::Macvlan, 8192, 1.0, first),
                point(Mode::Native, 8192, 1.0, 5.0),
            ])
            .verdict
        };
        assert_eq!(pair(&near, 5.45), Verdict::Holds, "9 % is within the floor");
        assert_eq!(pair(&near, 4.6), Verdict::Holds, "8 % below");
        // Past the floor this host resolves a difference: where a greater claim on the same
        // figures holds, "nearly the same" does not.
        assert_eq!(pair(&greater, 5.6), Verdict::Holds);
        assert_eq!(pair(&near, 5.6), Verdict::DoesNotHold, "above by 12 %");
        assert_eq!(pair(&near, 4.4), Verdict::DoesNotHold, "below by 12 %");
        // The paper's own bound keeps the floor beyond it (see the test above).
        let bounded = Claim {
            by_given: Some(0.04),
            ..near
        };
        assert_eq!(
            pair(&bounded, 5.6),
            Verdict::WithinSpread,
            "12 %: past 4 %, not 14 %"
        );
        assert_eq!(pair(&bounded, 4.2), Verdict::DoesNotHold, "16 % below");
    }

    #[test]
    fn verdicts_read_as_the_page_says_them() {
        for v in [Verdict::Holds, Verdict::DoesNotHold, Verdict::NotMeasurable] {
            assert_eq!(serde_json::to_value(v).unwrap(), v.text());
        }
    }

    /// A cost claim on a point the meter could not read refuses it by name, with the meter's
    /// reason, rather than compare a figure steal made up.
    #[test]
    fn a_cost_claim_on_an_unmeasurable_point_says_why() {
        let c = claim(
            Kind::Lowest,
            Metric::NormalizedPctPerGbps,
            vec![sel("macvlan"), sel("bridge")],
            None,
        );
        let lost = PointRecord {
            normalized_pct_per_gbps: None,
            unmeasurable: Some("steal 12.0 % of the host's cores".into()),
            ..point(Mode::Bridge, 8192, 1.0, 0.3)
        };
        let r = c.evaluate(&[point(Mode::Macvlan, 8192, 20.0, 0.3), lost]);
        assert_eq!(r.verdict, Verdict::NotMeasurable);
        assert!(
            r.why
                .contains("bridge 8K's host CPU could not be told on this host: steal 12.0 %"),
            "{}",
            r.why
        );
    }

    #[test]
    fn missing_failed_or_ambiguous_points_are_not_measurable() {
        let c = claim(
            Kind::Greater,
            Metric::ThroughputGbps,
            vec![sel("macvlan"), sel("bridge")],
            None,
        );
        let only_one = vec![point(Mode::Macvlan, 8192, 0.5, 5.0)];
        let r = c.evaluate(&only_one);
        assert_eq!(r.verdict, Verdict::NotMeasurable);
        assert!(r.why.contains("no measured point for bridge"), "{}", r.why);
        let mut failed = only_one.clone();
        failed.push(PointRecord {
            error: Some("lab failed".into()),
            ..point(Mode::Bridge, 8192, 1.0, 1.0)
        });
        assert_eq!(c.evaluate(&failed).verdict, Verdict::NotMeasurable);
        let mut twice = only_one.clone();
        twice.push(point(Mode::Bridge, 8192, 1.0, 1.0));
        twice.push(PointRecord {
            key: PointKey {
                tso: false,
                ..twice[1].key.clone()
            },
            ..twice[1].clone()
        });
        let r = c.evaluate(&twice);
        assert!(r.why.contains("2 points match"), "{}", r.why);
        let lat = claim(
            Kind::Above,
            Metric::LatencyP99Us,
            vec![sel("macvlan")],
            Some(1.0),
        );
        assert!(lat.evaluate(&only_one).why.contains("has no µs"));
    }

    #[test]
    fn claims_with_the_wrong_shape_or_values_are_refused() {
        assert!(claim(
            Kind::Greater,
            Metric::ThroughputGbps,
            vec![sel("bridge")],
            None
        )
        .check()
        .is_err());
        assert!(claim(
            Kind::Above,
            Metric::ThroughputGbps,
            vec![sel("bridge")],
            None
        )
        .check()
        .is_err());
        assert!(claim(
            Kind::Lowest,
            Metric::ThroughputGbps,
            vec![sel("bridge"), sel("warp")],
            None
        )
        .check()
        .is_err());
    }
}
