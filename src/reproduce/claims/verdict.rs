//! From figures to a verdict: rounds by sign test, else medians and ranges read against the
//! claim and for it; a tie where one limit bound both sides; a size read on both sides of the
//! paper's (short of it, at it, or past twice its effect: stronger than the paper).

use super::claim::{Claim, EffectSize, Kind, Verdict, EFFECT_FLOOR};
use super::figure::{by_round, is_limit, Figure, Read};
use super::ordered;
use crate::vocab::Bound;

/// How many of `n` rounds must compare one way for a verdict that way: the fewest that chance
/// alone (each round a coin toss) reaches at most one time in eight. Three rounds need all three,
/// as five do; six need five (one round a disturbed lab moved is outweighed), nine need seven.
/// Below three rounds every round must agree: so few cannot be weighed.
pub(super) fn rounds_needed(n: usize) -> usize {
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

impl Claim {
    /// Holds (or stronger than the paper), does not hold, or within the spread: from the medians
    /// and the repeats' ranges, or, where every series ran in the same rounds of one run, from
    /// each round on its own (the points of a round ran minutes apart in labs built in turn, so
    /// what moved the whole round, this host's minute, moves them alike and cancels). Rounds
    /// decide by count: enough of them beyond the effect floor one way that chance alone would
    /// rarely give as many (see `rounds_needed`).
    pub(super) fn verdict(&self, f: &[Figure]) -> (Verdict, String) {
        let (v, why) = match by_round(f) {
            None => self.verdict_by_ranges(f),
            Some(rounds) => {
                let (v, why) = self.verdict_by_rounds(f, &rounds);
                let total = f[0].rounds.as_ref().map_or(0, |(r, _)| r.count as usize);
                match total - rounds.len() {
                    0 => (v, why),
                    left => (v, join(&why, &format!("{left} of {total} rounds left out: a point was bound in them (its load not carried in full), so they measured no cost"))),
                }
            }
        };
        match (v, self.stronger(f)) {
            (Verdict::Holds, Some(past)) => (Verdict::Stronger, join(&past, &why)),
            _ => (v, why),
        }
    }

    /// The verdict from the medians and the repeats' ranges (points with no rounds to pair).
    fn verdict_by_ranges(&self, f: &[Figure]) -> (Verdict, String) {
        if let Some((hold, short)) = self.sized() {
            let (low, high) = self.ratio_range(f);
            return match () {
                _ if low > hold && self.way(f) == Some(true) => (Verdict::Holds, String::new()),
                _ if high < short && self.way(f) == Some(false) => {
                    (Verdict::DoesNotHold, self.short_of(f, short))
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
            (_, _, false, Some(false)) => (
                Verdict::DoesNotHold,
                "even the ends of the repeats' ranges that favour the claim do not compare as it says".into(),
            ),
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
    /// claim, against it, or neither (inside the floor, or a tie), and the claim holds when
    /// enough rounds go for it beyond the floor that chance alone would rarely give as many (and
    /// the medians agree); a median effect just past the floor is no verdict, since what it is
    /// moves with the day (paper 1's send offloads: 9.8 % one run, 13.8 % the next, every round
    /// of both lower with offloads).
    fn verdict_by_rounds(&self, f: &[Figure], rounds: &[Vec<Figure>]) -> (Verdict, String) {
        let ways: Vec<_> = rounds
            .iter()
            .filter(|r| self.tie(r).is_none())
            .map(|r| self.way(r))
            .collect();
        let n = ways.len();
        let count = |w: bool| ways.iter().filter(|x| **x == Some(w)).count();
        let (k_for, k_against, need) = (count(true), count(false), rounds_needed(n));
        match self.way(f) {
            Some(true) if n > 0 && k_for >= need => return (Verdict::Holds, String::new()),
            Some(false) if n > 0 && k_against >= need => {
                return (
                    Verdict::DoesNotHold,
                    format!("it goes the other way by more than the {:.0} % floor in {k_against} of {n} rounds (each compared within its round)", EFFECT_FLOOR * 100.0),
                )
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
                "it holds by more than the {:.0} % floor in {k_for} of {n} rounds and goes the other way by as much in {k_against} (each compared within its round; a round one limit bound on both sides is a tie): the medians {compare} as the paper says{by}, but a verdict needs {need} of {n} one way",
                EFFECT_FLOOR * 100.0
            ),
        )
    }

    /// "3.26x vs 1.21x" (ours against the paper's), where ours is past `stronger_above` by the
    /// same count of rounds a hold needs (`rounds_needed`, tied rounds left out), or, without
    /// rounds, at the least the repeats' ranges allow: a median just past it is no stronger
    /// claim than a hold, since what it is moves with the day.
    fn stronger(&self, f: &[Figure]) -> Option<String> {
        if self.kind == Kind::Above {
            return self.stronger_threshold(f);
        }
        let (above, p) = (self.stronger_above()?, self.paper_ratio?);
        let size = self.size(f);
        let ours = size.ours.filter(|o| *o > above)?;
        let Some(rounds) = by_round(f).filter(|r| !r.is_empty()) else {
            let least = size.low.unwrap_or(ours);
            return (least > above).then(|| {
                format!("{ours:.2}x vs {p:.2}x (at least {least:.2}x, past {above:.2}x: twice the paper's effect)")
            });
        };
        let each: Vec<f64> = rounds
            .iter()
            .filter(|r| self.tie(r).is_none())
            .map(|r| self.ratio(&r.iter().map(|x| x.value).collect::<Vec<_>>()))
            .collect();
        let (n, k) = (each.len(), each.iter().filter(|x| **x > above).count());
        (n > 0 && k >= rounds_needed(n)).then(|| {
            format!("{ours:.2}x vs {p:.2}x (past {above:.2}x, twice the paper's effect, in {k} of {n} rounds)")
        })
    }

    /// An `above` claim ("exceeds 2.5 Gb/s") past twice the paper's value, by the same count of
    /// rounds a hold needs, or, without rounds, at the least of its range.
    fn stronger_threshold(&self, f: &[Figure]) -> Option<String> {
        let v = self.value.filter(|v| *v > 0.0)?;
        let (twice, ours, unit) = (2.0 * v, f[0].value, self.metric.unit());
        if ours <= twice {
            return None;
        }
        let past = match by_round(f).filter(|r| !r.is_empty()) {
            Some(rounds) => {
                let (n, k) = (
                    rounds.len(),
                    rounds.iter().filter(|r| r[0].value > twice).count(),
                );
                (k >= rounds_needed(n)).then(|| format!("in {k} of {n} rounds"))
            }
            None => (f[0].low > twice).then(|| format!("at least {:.3}", f[0].low)),
        }?;
        Some(format!(
            "{ours:.3} {unit} vs the paper's {v} {unit} (past twice it, {past})"
        ))
    }

    /// How far the medians go the claim's way, as a ratio; a threshold claim (above a value,
    /// near another) has no effect to size: infinite.
    pub(super) fn effect(&self, f: &[Figure]) -> f64 {
        match self.kind {
            Kind::Near | Kind::Above => f64::INFINITY,
            _ => ordered::effect(self, f),
        }
    }

    /// The size of the effect: the paper's, ours from the medians, and ours round by round (or
    /// from the ends of the repeats' ranges, each end the one that gives the least and the
    /// greatest ratio), and the limit both sides shared, if one did.
    pub(super) fn size(&self, f: &[Figure]) -> EffectSize {
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
            tie: self.tied(f).map(|t| t.bound.to_string()),
            ..EffectSize::default()
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

    /// Why a sized claim does not hold: ours against two-thirds of the paper's effect.
    fn short_of(&self, f: &[Figure], short: f64) -> String {
        let ours = self.ratio(&f.iter().map(|x| x.value).collect::<Vec<_>>());
        format!(
            "ours {ours:.2}x, and every ratio its ranges allow, is short of {short:.2}x, two-thirds of the paper's {:.2}x effect",
            self.paper_ratio.unwrap_or(short)
        )
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

    /// The series a claim weighs its first against: the second (greater, near), every other
    /// (lowest, highest), none (above).
    fn weighed<'a>(&self, f: &'a [Figure]) -> &'a [Figure] {
        match self.kind {
            Kind::Greater | Kind::Near => &f[1..2],
            Kind::Lowest | Kind::Highest => &f[1..],
            Kind::Above => &[],
        }
    }

    /// The other series and the limit it shared with the first, where one limit outside the
    /// paths (the wire, the client) bound both: each carried that limit's rate, so the limit
    /// decided, not what the claim compares. Where every series ran in the same rounds, only a
    /// majority of rounds bound by the same limit on both sides make the claim a tie (a point is
    /// stored as bound when one repeat was; one bound round of three is left out of the sign
    /// test instead, `verdict_by_rounds`). A cost is never read from a bound point.
    fn tied<'a>(&self, f: &'a [Figure]) -> Option<Tied<'a>> {
        if self.metric.is_cost() {
            return None;
        }
        let Some(rounds) = by_round(f).filter(|r| !r.is_empty()) else {
            return self.tied_here(f).map(|(other, bound)| Tied {
                other,
                bound,
                rounds: None,
            });
        };
        let mut by: Vec<(Bound, usize)> = Vec::new();
        for b in rounds.iter().filter_map(|r| self.tied_here(r).map(|t| t.1)) {
            match by.iter_mut().find(|(x, _)| *x == b) {
                Some((_, k)) => *k += 1,
                None => by.push((b, 1)),
            }
        }
        let (bound, k) = by.into_iter().max_by_key(|(_, k)| *k)?;
        let n = f[0]
            .rounds
            .as_ref()
            .map_or(rounds.len(), |(r, _)| r.count as usize);
        (2 * k > n).then(|| Tied {
            other: &self.weighed(f)[0],
            bound,
            rounds: Some((k, n)),
        })
    }

    /// `tied` on figures of one reading (a point, or one round): the other series the first's
    /// limit also bound.
    fn tied_here<'a>(&self, f: &'a [Figure]) -> Option<(&'a Figure, Bound)> {
        let b = f[0].bound.filter(|b| is_limit(*b))?;
        self.weighed(f)
            .iter()
            .find(|x| x.bound == Some(b))
            .map(|x| (x, b))
    }

    /// Why a comparison is a tie (see `tied`): the gap left between two wire-bound throughputs
    /// is the shaper's jitter (a 0.001 Gb/s gap once read as "holds"), never a verdict.
    pub(super) fn tie(&self, f: &[Figure]) -> Option<String> {
        let t = self.tied(f)?;
        let b = t.bound;
        let when = t
            .rounds
            .map_or(String::new(), |(k, n)| format!(" in {k} of {n} rounds"));
        Some(format!(
            "{} and {} were both bound by the {b}{when}: the {b} decides here, not what the claim compares",
            f[0].name, t.other.name
        ))
    }
}

/// A tie: the other series bound with the first, the limit, and (over rounds) in how many of
/// how many rounds.
struct Tied<'a> {
    other: &'a Figure,
    bound: Bound,
    rounds: Option<(usize, usize)>,
}

/// Two explanations as one: "a; b", or whichever is not empty.
fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}; {b}"),
    }
}
