//! A claim's figures: each series' point found, checked readable (nothing bound a cost, a tail
//! has its samples), and read with its spread and its rounds.

use super::claim::Claim;
use super::metric::Metric;
use super::selector::Selector;
use crate::records::{PointRecord, Rounds};
use crate::vocab::Bound;

impl Claim {
    /// The figure of each series in `points`, or why it is missing. A cost is read only from a
    /// point nothing bound, in every repeat.
    pub(super) fn figures(&self, points: &[PointRecord]) -> Result<Vec<Figure>, Unmeasurable> {
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
}

/// A limit outside the paths a claim compares: the wire, the client. Points it bound on both
/// sides are a tie; a core of the host or a backend that saturated is the path's own cost.
pub(super) fn is_limit(b: Bound) -> bool {
    matches!(b, Bound::Wire | Bound::Client | Bound::ClientCore(_))
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
    // A round is bound by a limit (the wire, the client) when every repeat of it was; a cost's
    // round is bound when any repeat of it was (it is then no cost, and is left out).
    let bound = |k: usize| {
        let round = &p.repeats[k * per..(k + 1) * per];
        match m.is_cost() {
            true => round.iter().find_map(|x| x.bound_by),
            false => round[0]
                .bound_by
                .filter(|b| is_limit(*b) && round.iter().all(|x| x.bound_by == Some(*b))),
        }
    };
    let medians = each
        .chunks(per)
        .enumerate()
        .map(|(k, c)| (crate::stats::spread(c, 95).median, bound(k)))
        .collect();
    Some((r, medians))
}

/// A series' figure in one round, and the limit that bound every repeat of it, if one did.
type RoundFigure = (f64, Option<Bound>);

/// The figures round by round, where every series ran in the same rounds of one run; None
/// otherwise (the ranges are read instead). A round in which a cost's point was bound (its load
/// not carried in full) is left out: it measured no cost.
pub(super) fn by_round(f: &[Figure]) -> Option<Vec<Vec<Figure>>> {
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
    // A round a limit bound is a tie (`Claim::tie`) for a throughput; for a cost, no cost at all.
    let counted = |r: &Vec<Figure>| {
        r.iter().all(|x| match x.bound {
            None => true,
            Some(b) => is_limit(b) && !x.cost,
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
pub(super) enum Read {
    Medians,
    /// Each range's end that goes against the claim.
    Against,
    /// Each range's end that goes for it.
    For,
}

impl Read {
    /// A figure as this reading takes it: `high` names the end of its range that favours the
    /// claim when the figure stands first.
    pub(super) fn at(self, x: &Figure, high: bool) -> f64 {
        match (self, high) {
            (Read::Medians, _) => x.value,
            (Read::Against, true) | (Read::For, false) => x.high,
            (Read::Against, false) | (Read::For, true) => x.low,
        }
    }
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
pub(super) struct Figure {
    pub(super) name: String,
    pub(super) value: f64,
    pub(super) low: f64,
    pub(super) high: f64,
    /// Where its repeats came from rounds: which, and the figure in each round (the median of
    /// that round's repeats).
    pub(super) rounds: Option<(Rounds, Vec<RoundFigure>)>,
    /// What saturated while the point ran (a side, a core, the wire), if anything did: a
    /// comparison of points a client bound compares the client.
    pub(super) bound: Option<Bound>,
    /// A cost (host CPU): a round of it that anything bound, the wire too, measured no cost.
    pub(super) cost: bool,
}

impl Figure {
    /// The figure's value is the median of its repeats' where every repeat keeps the figure (the
    /// point's own comes from its median repeat by cost: a tail or a throughput from one repeat
    /// that another figure chose), else the point's; its low and high are the median's 95 %
    /// confidence interval (`stats`: the range below six repeats), the same interval every page
    /// and table shows.
    pub(super) fn of(m: Metric, p: &PointRecord, name: String) -> Option<Figure> {
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

    pub(super) fn text(&self) -> String {
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
