//! A claim as its paper file writes it, what checking one yields, and the rules that read only
//! the claim's own fields: its bound, its shape, the paper's size read on both sides.

use serde::{Deserialize, Serialize};

use super::super::error::Error;
use super::metric::Metric;
use super::selector::Selector;

/// The least difference a comparison must show to hold: the medians must differ by more than
/// this share, the bar beyond which a point's own repeats read unstable. Smaller differences
/// (paper 1's send offloads at 8 KB: 2 to 9 % over nine runs) move from run to run on one host,
/// and a verdict that rests on one would flip with the day.
pub const EFFECT_FLOOR: f64 = crate::measure::EFFECT_FLOOR;

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

/// Whose finding a claim is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The paper's text states it.
    #[default]
    Paper,
    /// Read from a figure or table the paper's text does not discuss.
    Derived,
    /// vnetlab's own, beyond what the paper measured.
    Beyond,
}

impl Origin {
    pub const ALL: [Origin; 3] = [Origin::Paper, Origin::Derived, Origin::Beyond];

    pub fn text(self) -> &'static str {
        match self {
            Origin::Paper => "paper",
            Origin::Derived => "derived",
            Origin::Beyond => "beyond",
        }
    }
}

/// Where the paper says what a claim reads: an excerpt of its text, verbatim, from `line` on
/// (`quote::found` checks it is there, and that the claim's numbers and kind come from it).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Quote {
    pub line: u32,
    pub text: String,
    /// Our reading where the text is OCR-damaged: its numbers must be the excerpt's digits.
    #[serde(default)]
    pub reads: Option<String>,
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
    /// (near: the paper's own bound, from the sentence the claim quotes). Left out, a claim that
    /// gives the paper's size is read against that size (`Claim::sized`), a near claim within
    /// the effect floor, else by 1.
    #[serde(default, rename = "by")]
    pub by_given: Option<f64>,
    pub value: Option<f64>,
    /// What makes this claim hard to read here (hardware of 2026, TCG, one host, a limit both
    /// sides share), shown beside every verdict.
    #[serde(default)]
    pub note: String,
    /// The comparison reads only points no saturated core, side, backend or wire bound (a cost
    /// always does): a request/response rate a saturated core bound is that core's capacity,
    /// not the path's latency the paper compared.
    #[serde(default)]
    pub unsaturated: bool,
    /// The paper's size of the effect, as a greater or near claim compares its series: the
    /// first over the second; for `above`, the paper's own figure. Shown beside ours.
    #[serde(default)]
    pub paper_ratio: Option<f64>,
    /// A lowest or highest claim's sizes, one per series after the first, each the paper's
    /// ratio on that pair (lowest: that series over the first; highest: the first over it):
    /// each pair is checked against its own size.
    #[serde(default)]
    pub sizes: Option<Vec<f64>>,
    #[serde(default)]
    pub origin: Origin,
    /// The paper's sentence (or printed figure) the claim reads; none for a claim beyond it.
    #[serde(default)]
    pub quote: Vec<Quote>,
    /// Which stand-ins ran and how the setup differs from the paper's, shown on the claim's row.
    #[serde(default)]
    pub stand_in: String,
}

/// A claim's verdict, written as the page and `--json` say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    #[serde(rename = "holds")]
    Holds,
    /// Holds, and ours is past twice the paper's effect: counted apart from a plain hold.
    #[serde(rename = "holds, stronger than the paper")]
    Stronger,
    /// Both sides were bound by the same limit (the wire, the client): the limit decided, not
    /// what the claim compares.
    #[serde(rename = "tie")]
    Tie,
    #[serde(rename = "does not hold")]
    DoesNotHold,
    /// The repeats' ranges overlap where the claim is decided: neither holds nor fails here.
    #[serde(rename = "within the spread")]
    WithinSpread,
    #[serde(rename = "not measurable")]
    NotMeasurable,
}

impl Verdict {
    /// Every verdict, in the order pages tally them.
    pub const ALL: [Verdict; 6] = [
        Verdict::Holds,
        Verdict::Stronger,
        Verdict::Tie,
        Verdict::WithinSpread,
        Verdict::DoesNotHold,
        Verdict::NotMeasurable,
    ];

    pub fn text(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Stronger => "holds, stronger than the paper",
            Verdict::Tie => "tie",
            Verdict::DoesNotHold => "does not hold",
            Verdict::WithinSpread => "within the spread",
            Verdict::NotMeasurable => "not measurable",
        }
    }

    /// Of several pairs' verdicts, the claim's: the weakest reading wins (a claim holds only
    /// where every pair does; it is stronger than the paper only where every pair is).
    pub(super) fn weakest(self, other: Verdict) -> Verdict {
        let rank = |v: Verdict| match v {
            Verdict::Stronger => 0,
            Verdict::Holds => 1,
            Verdict::Tie => 2,
            Verdict::WithinSpread => 3,
            Verdict::DoesNotHold => 4,
            Verdict::NotMeasurable => 5,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

/// How big a claim's effect is: the paper's and ours, as the claim compares its series (see
/// `Claim::paper_ratio`), ours with its spread; or, for a claim sized per pair, each pair's.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EffectSize {
    pub paper: Option<f64>,
    /// Ours from the medians, and its least and greatest over the rounds (each compared within
    /// its round) or, where the points ran no rounds, over the repeats' ranges.
    pub ours: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// The limit that bound both sides (the wire, the client): the ratio is that limit's, not
    /// what the claim compares.
    pub tie: Option<String>,
    /// "×" for a ratio; for an `above` claim, the figure's unit.
    pub unit: String,
    /// A claim sized per pair: each pair's size, against the series named.
    pub pairs: Vec<PairSize>,
}

/// One pair's size in a claim sized per pair.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PairSize {
    pub against: String,
    pub size: EffectSize,
}

impl EffectSize {
    /// "paper 3.9×; here 1.3× [1.2–1.4]", as the claims table and the index show it; a claim
    /// sized per pair shows each pair's.
    pub fn text(&self) -> String {
        if !self.pairs.is_empty() {
            let each: Vec<String> = self
                .pairs
                .iter()
                .map(|p| format!("against {}: {}", p.against, p.size.text()))
                .collect();
            return each.join("; ");
        }
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
        let tie = self
            .tie
            .as_ref()
            .map_or(String::new(), |t| format!(" (both bound by the {t})"));
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
    /// The paper's finding, one read from its figures, or vnetlab's own.
    pub origin: Origin,
    /// Our figures, each series named.
    pub ours: String,
    pub paper: String,
    /// Why the verdict reads as it does (empty where the comparison speaks for itself).
    pub why: String,
    /// What makes the claim hard to read here, whatever its verdict.
    pub note: String,
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

    /// Refuses a claim its kind cannot read: `Error::Input` naming the claim and the fix.
    pub fn check(&self) -> Result<(), Error> {
        let fail = |why: &str| Err(Error::Input(format!("claim '{}': {why}", self.text)));
        let need = match self.kind {
            Kind::Lowest | Kind::Highest => 2..=16,
            Kind::Greater | Kind::Near => 2..=2,
            Kind::Above => 1..=1,
        };
        if !need.contains(&self.series.len()) {
            return fail(&format!("a {:?} check takes {:?} series", self.kind, need));
        }
        if self.kind == Kind::Above && self.value.is_none() {
            return fail("give value");
        }
        if !(self.by().is_finite() && self.by() > 0.0) {
            return fail("by must be above 0");
        }
        let beyond = self.origin == Origin::Beyond;
        let sizes = self.paper_ratio.iter().chain(self.sizes.iter().flatten());
        if sizes.clone().any(|r| !(r.is_finite() && *r > 0.0)) || beyond && sizes.count() > 0 {
            return fail("paper_ratio and sizes are the paper's sizes, numbers above 0, and a claim beyond the paper has none");
        }
        self.check_sizes()?;
        if beyond != self.quote.is_empty() {
            return fail("quote the paper's sentence (or printed figure) a paper or derived claim reads, as [[claim.quote]] line and text; a claim beyond the paper quotes none");
        }
        if self.stand_in.trim().is_empty() {
            return fail(
                "say in stand_in which stand-ins ran and how the setup differs from the paper's",
            );
        }
        if self.note.trim().is_empty() {
            return fail(
                "say in note what a verdict here means on this host and what of it the stand-in decides",
            );
        }
        if self.kind == Kind::Near && self.by() >= 1.0 {
            return fail("a near check's by is a fraction below 1 (0.1 is 10 %)");
        }
        self.common.check()?;
        self.series.iter().try_for_each(Selector::check)
    }

    /// A lowest or highest claim gives its sizes per pair; the other kinds one ratio.
    fn check_sizes(&self) -> Result<(), Error> {
        let fail = |why: String| Err(Error::Input(format!("claim '{}': {why}", self.text)));
        let ranked = matches!(self.kind, Kind::Lowest | Kind::Highest);
        match (&self.sizes, self.paper_ratio) {
            (Some(_), _) if !ranked => fail(format!(
                "sizes are for lowest and highest claims; a {:?} claim gives paper_ratio",
                self.kind
            )),
            (_, Some(_)) if ranked => fail(
                "a lowest or highest claim gives sizes = [...], the paper's ratio on each pair, one per series after the first".into(),
            ),
            (Some(s), _) if s.len() + 1 != self.series.len() => fail(format!(
                "sizes holds {} ratios for {} series: give one per series after the first",
                s.len(),
                self.series.len()
            )),
            _ => Ok(()),
        }
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
            .filter(|_| self.by_given.is_none() && self.origin != Origin::Beyond)?;
        matches!(self.kind, Kind::Greater | Kind::Lowest | Kind::Highest).then(|| {
            let hold = (p / (1.0 + EFFECT_FLOOR)).max(1.0 + EFFECT_FLOOR);
            let short = p.powf(2.0 / 3.0).min(p / (1.0 + EFFECT_FLOOR));
            (hold, short)
        })
    }

    /// The ratio past which ours is stronger than the paper: twice the paper's effect (the
    /// effect being the ratio's logarithm: the paper's ratio squared), and past the paper's own
    /// by more than the floor. Only a claim that orders its series and gives the paper's size.
    pub fn stronger_above(&self) -> Option<f64> {
        let p = self.paper_ratio.filter(|p| *p > 1.0)?;
        matches!(self.kind, Kind::Greater | Kind::Lowest | Kind::Highest)
            .then(|| (p * p).max(p * (1.0 + EFFECT_FLOOR)))
    }

    /// "×", or an `above` claim's unit.
    pub(super) fn size_unit(&self) -> String {
        match self.kind {
            Kind::Above => self.metric.unit().to_string(),
            _ => "×".to_string(),
        }
    }
}
