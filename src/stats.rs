//! Repetition statistics: every figure over repeats is an estimate, the median of its
//! independent units (rounds in fresh labs, or repeats of a test), with a distribution-free
//! confidence interval from the order statistics (the interval `[x(k), x(n+1-k)]` holds the true
//! median with probability `1 - 2 P(Bin(n, 1/2) < k)`, whatever the distribution). Below six units
//! no pair of order statistics reaches 95 %: the interval is then the range, and the level it does
//! reach is said (three rounds: 75 %). netperf's stopping rule (`-i max,min -I level,width`) and
//! vnetlab's (`--iterations min,max --confidence level,half-width`) read here.

use serde::{Deserialize, Serialize};

/// The spread of a figure over its units, and its median's confidence interval.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Spread {
    pub n: usize,
    pub min: f64,
    pub median: f64,
    pub max: f64,
    pub mean: f64,
    /// The median's confidence interval from the order statistics (None for one unit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
}

/// A confidence interval of a median and the level it reaches (at most the level asked).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
    /// Percent: the probability the interval holds the true median.
    pub level: f64,
}

impl Spread {
    /// The interval's half-width in percent of the median (its larger side): the "±x %" shown.
    pub fn half_width_pct(&self) -> Option<f64> {
        let i = self.interval?;
        (self.median != 0.0)
            .then(|| 100.0 * (self.median - i.lo).max(i.hi - self.median) / self.median.abs())
    }

    /// How the estimate reads: `median [lo–hi]` with `prec` decimals.
    pub fn text(&self, prec: usize) -> String {
        match self.interval {
            Some(i) => format!("{:.prec$} [{:.prec$}–{:.prec$}]", self.median, i.lo, i.hi),
            None => format!("{:.prec$}", self.median),
        }
    }

    /// Whether the estimate reaches `goal`: its interval at the level asked, within the width.
    pub fn meets(&self, goal: &Goal) -> bool {
        match (self.interval, self.half_width_pct()) {
            (Some(i), Some(w)) => i.level + 1e-9 >= goal.level && w <= goal.half_width_pct,
            // A figure that is zero in every unit is known exactly.
            _ => self.n >= 2 && self.min == self.max,
        }
    }

    /// What the interval says against `goal`, in words: "±3.1 % at 96.9 %", or why it falls short.
    pub fn against(&self, goal: &Goal) -> String {
        let Some(i) = self.interval else {
            return "one unit: no interval".into();
        };
        let w = self.half_width_pct().unwrap_or(f64::INFINITY);
        let mut s = format!("±{w:.1} % at {:.1} %", i.level);
        if i.level + 1e-9 < goal.level {
            s += &format!(
                ", short of the {} % asked ({} units reach it: {} here)",
                goal.level,
                units_for(goal.level),
                self.n
            );
        } else if w > goal.half_width_pct {
            s += &format!(", wider than the {} % asked", goal.half_width_pct);
        }
        s
    }
}

/// The coverage of `[x(k), x(n+1-k)]` (1-based) for the median of `n` units, percent.
pub fn coverage(n: usize, k: usize) -> f64 {
    if k == 0 || 2 * k > n + 1 {
        return 0.0;
    }
    // P(Bin(n, 1/2) <= k - 1), summed in f64 (n is at most a few thousand).
    let mut term = 0.5f64.powi(n as i32);
    let mut below = 0.0;
    for j in 0..k {
        below += term;
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    100.0 * (1.0 - 2.0 * below).max(0.0)
}

/// The fewest units whose range holds the median at `level` percent.
pub fn units_for(level: f64) -> usize {
    (2..=64).find(|&n| coverage(n, 1) >= level).unwrap_or(64)
}

/// The median's interval at `level` percent from sorted units: the narrowest symmetric pair of
/// order statistics that reaches it, else the range with the level it reaches.
fn median_interval(v: &[f64], level: f64) -> Option<Interval> {
    let n = v.len();
    if n < 2 {
        return None;
    }
    let k = (1..=n.div_ceil(2))
        .rev()
        .find(|&k| coverage(n, k) + 1e-9 >= level)
        .unwrap_or(1);
    Some(Interval {
        lo: v[k - 1],
        hi: v[n - k],
        level: coverage(n, k),
    })
}

/// The spread of `xs` with the median's interval at `level` percent (95 or 99).
pub fn spread(xs: &[f64], level: u32) -> Spread {
    assert!(!xs.is_empty());
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let mean = v.iter().sum::<f64>() / n as f64;
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Spread {
        n,
        min: v[0],
        median,
        max: v[n - 1],
        mean,
        interval: median_interval(&v, level as f64),
    }
}

/// Why a statistics option did not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("bad --confidence '{0}': write LEVEL,HALF-WIDTH with LEVEL 90, 95 or 99 and the half-width in percent of the median, e.g. 95,5")]
    Confidence(String),
    #[error("bad -I '{0}': write LEVEL,WIDTH as netperf does (LEVEL 90, 95 or 99, WIDTH the whole interval in percent), e.g. -I 95,10")]
    NetperfConfidence(String),
    #[error("bad --iterations '{0}': write MIN,MAX with 1 <= MIN <= MAX <= 100, e.g. 6,30 (or one number for both)")]
    Iterations(String),
    #[error(
        "bad -i '{0}': write MAX,MIN as netperf does, with 1 <= MIN <= MAX <= 100, e.g. -i 30,6"
    )]
    NetperfIterations(String),
}

/// What an estimate must reach: its interval at `level` %, no wider than ±`half_width_pct` %.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Goal {
    pub level: f64,
    pub half_width_pct: f64,
}

impl Default for Goal {
    fn default() -> Self {
        Goal {
            level: 95.0,
            half_width_pct: 5.0,
        }
    }
}

impl std::fmt::Display for Goal {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "±{} % at {} %", self.half_width_pct, self.level)
    }
}

/// How many units a point may take: at least `min`, at most `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Iterations {
    pub min: u32,
    pub max: u32,
}

fn pair(s: &str) -> Option<(f64, f64)> {
    let (a, b) = s.split_once(',')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

fn goal(level: f64, half: f64) -> Option<Goal> {
    ([90.0, 95.0, 99.0].contains(&level) && (0.1..=100.0).contains(&half)).then_some(Goal {
        level,
        half_width_pct: half,
    })
}

/// `--confidence LEVEL,HALF-WIDTH`: e.g. `95,5` (±5 % at 95 %).
pub fn parse_confidence(s: &str) -> Result<Goal, Error> {
    pair(s)
        .and_then(|(l, w)| goal(l, w))
        .ok_or_else(|| Error::Confidence(crate::text::clip(s)))
}

/// netperf's `-I LEVEL,WIDTH`: the whole interval `WIDTH` % wide, i.e. ±WIDTH/2 %.
pub fn parse_netperf_confidence(s: &str) -> Result<Goal, Error> {
    pair(s)
        .and_then(|(l, w)| goal(l, w / 2.0))
        .ok_or_else(|| Error::NetperfConfidence(crate::text::clip(s)))
}

fn iterations(min: f64, max: f64) -> Option<Iterations> {
    let ok = |x: f64| x.fract() == 0.0 && (1.0..=100.0).contains(&x);
    (ok(min) && ok(max) && min <= max).then_some(Iterations {
        min: min as u32,
        max: max as u32,
    })
}

/// `--iterations MIN,MAX` (or one number for both).
pub fn parse_iterations(s: &str) -> Result<Iterations, Error> {
    let bad = || Error::Iterations(crate::text::clip(s));
    match pair(s) {
        Some((a, b)) => iterations(a, b).ok_or_else(bad),
        None => {
            let n: f64 = s.trim().parse().map_err(|_| bad())?;
            iterations(n, n).ok_or_else(bad)
        }
    }
}

/// netperf's `-i MAX,MIN` (or one number: at most that many, at least 3 as netperf does).
pub fn parse_netperf_iterations(s: &str) -> Result<Iterations, Error> {
    let bad = || Error::NetperfIterations(crate::text::clip(s));
    match pair(s) {
        Some((max, min)) => iterations(min, max).ok_or_else(bad),
        None => {
            let n: f64 = s.trim().parse().map_err(|_| bad())?;
            iterations(n.min(3.0), n).ok_or_else(bad)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift64*) for the coverage tests.
    struct Rng(u64);
    impl Rng {
        fn unit(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            ((self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            let (a, b) = (self.unit(), self.unit());
            (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
        }
    }

    #[test]
    fn coverage_is_the_binomial_tail() {
        // The range of n units misses the median only when all fall on one side: 2 / 2^n.
        assert_eq!(coverage(3, 1), 75.0);
        assert_eq!(coverage(5, 1), 93.75);
        assert_eq!(coverage(6, 1), 96.875);
        // Nine units: [x(2), x(8)] holds it with 1 - 2 (1 + 9) / 512.
        assert!((coverage(9, 2) - 100.0 * (1.0 - 20.0 / 512.0)).abs() < 1e-9);
        assert_eq!(coverage(4, 3), 0.0);
        assert_eq!(units_for(95.0), 6);
        assert_eq!(units_for(99.0), 8);
        assert_eq!(units_for(90.0), 5);
    }

    #[test]
    fn the_interval_narrows_to_the_order_statistics_that_reach_the_level() {
        let s = spread(&[10.0, 12.0, 11.0], 95);
        assert_eq!((s.min, s.median, s.max, s.mean), (10.0, 11.0, 12.0, 11.0));
        // Three units: the range, at the 75 % it reaches.
        let i = s.interval.unwrap();
        assert_eq!((i.lo, i.hi, i.level), (10.0, 12.0, 75.0));
        let goal = Goal::default();
        assert!(!s.meets(&goal));
        assert!(s
            .against(&goal)
            .contains("short of the 95 % asked (6 units"));
        // Twelve units 1..=12: 95 % needs [x(3), x(10)] (98.1 %); [x(4), x(9)] reaches 85.4 %.
        let v: Vec<f64> = (1..=12).map(f64::from).collect();
        let i = spread(&v, 95).interval.unwrap();
        assert_eq!((i.lo, i.hi), (3.0, 10.0));
        assert!((i.level - coverage(12, 3)).abs() < 1e-12 && i.level >= 95.0);
        let tight = spread(&[100.0, 100.1, 99.9, 100.0, 100.2, 99.8], 95);
        assert!(tight.meets(&goal), "{}", tight.against(&goal));
        assert!((tight.half_width_pct().unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(spread(&[3.0], 95).interval, None);
        assert_eq!(spread(&[1.0, 2.0, 3.0, 4.0], 95).median, 2.5);
        // An interval never leaves what was measured (a t-interval on three gave negative CPU).
        let wide = spread(&[0.5, 30.0, 31.0, 29.0, 28.0, 60.0], 95);
        let i = wide.interval.unwrap();
        assert!(i.lo >= 0.5 && i.hi <= 60.0);
    }

    /// Against known distributions: the 95 % interval holds the true median at least 95 % of the
    /// time (the binomial level it reports), for symmetric, skewed and heavy-tailed units.
    #[test]
    fn the_interval_holds_the_true_median_as_often_as_it_says() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        type Draw = fn(&mut Rng) -> f64;
        let cases: [(&str, Draw, f64); 3] = [
            ("normal", |r| 20.0 + 2.0 * r.normal(), 20.0),
            ("exponential", |r| -r.unit().ln(), std::f64::consts::LN_2),
            (
                "cauchy",
                |r| (std::f64::consts::PI * (r.unit() - 0.5)).tan(),
                0.0,
            ),
        ];
        for (name, draw, truth) in cases {
            for n in [6usize, 9, 15, 30] {
                let trials = 4000;
                let mut held = 0;
                let mut level = 0.0;
                for _ in 0..trials {
                    let xs: Vec<f64> = (0..n).map(|_| draw(&mut rng)).collect();
                    let i = spread(&xs, 95).interval.unwrap();
                    level = i.level;
                    held += usize::from(i.lo <= truth && truth <= i.hi);
                }
                let got = 100.0 * held as f64 / trials as f64;
                // Three standard errors of a 95 % proportion over 4000 trials: 1.0 point.
                assert!(
                    got >= level - 1.0,
                    "{name}, n = {n}: held {got:.1} % < {level:.1} %"
                );
                assert!(level >= 95.0);
            }
        }
    }

    #[test]
    fn options_parse_as_vnetlab_and_netperf_write_them() {
        let g = parse_confidence("95,5").unwrap();
        assert_eq!((g.level, g.half_width_pct), (95.0, 5.0));
        // netperf's -I gives the whole width: 99,5 is ±2.5 %.
        let g = parse_netperf_confidence("99,5").unwrap();
        assert_eq!((g.level, g.half_width_pct), (99.0, 2.5));
        for bad in ["95", "80,5", "95,0", "x,y", "95,500"] {
            assert!(parse_confidence(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_iterations("3,30").unwrap(),
            Iterations { min: 3, max: 30 }
        );
        assert_eq!(
            parse_iterations("8").unwrap(),
            Iterations { min: 8, max: 8 }
        );
        // netperf's -i is max first.
        assert_eq!(
            parse_netperf_iterations("30,6").unwrap(),
            Iterations { min: 6, max: 30 }
        );
        assert_eq!(
            parse_netperf_iterations("10").unwrap(),
            Iterations { min: 3, max: 10 }
        );
        for bad in ["0,3", "5,3", "3,101", "2.5", "x"] {
            assert!(parse_iterations(bad).is_err(), "{bad}");
        }
        assert!(parse_netperf_iterations("3,30").is_err());
    }
}
