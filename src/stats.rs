//! Repetition statistics: min, median, max, mean and a Student-t confidence interval, and
//! netperf's rule for when repeating may stop (`--confidence 95,5`: the interval's width is within
//! 5 % of the mean, i.e. ±2.5 %).

use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Spread {
    pub n: usize,
    pub min: f64,
    pub median: f64,
    pub max: f64,
    pub mean: f64,
    /// The confidence interval of the mean (None for one sample).
    pub ci: Option<[f64; 2]>,
}

/// Two-sided Student t quantile for a confidence level of 95 or 99 percent.
pub fn t_quantile(level: u32, df: usize) -> f64 {
    const T95: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    const T99: [f64; 30] = [
        63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055, 3.012,
        2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797, 2.787, 2.779,
        2.771, 2.763, 2.756, 2.750,
    ];
    let (table, inf) = if level >= 99 {
        (&T99, 2.576)
    } else {
        (&T95, 1.960)
    };
    if df == 0 {
        f64::INFINITY
    } else if df <= 30 {
        table[df - 1]
    } else {
        inf
    }
}

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
    let ci = (n > 1).then(|| {
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let h = t_quantile(level, n - 1) * (var / n as f64).sqrt();
        [mean - h, mean + h]
    });
    Spread {
        n,
        min: v[0],
        median,
        max: v[n - 1],
        mean,
        ci,
    }
}

/// Why a statistics option did not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("bad --confidence '{0}': write LEVEL,WIDTH with LEVEL 95 or 99 and WIDTH in percent, e.g. 95,5")]
    Confidence(String),
}

/// `--confidence LEVEL,WIDTH`: e.g. `95,5`.
pub fn parse_confidence(s: &str) -> Result<(u32, f64), Error> {
    let bad = || Error::Confidence(crate::text::clip(s));
    let (l, w) = s.split_once(',').ok_or_else(bad)?;
    let l: u32 = l.trim().parse().map_err(|_| bad())?;
    let w: f64 = w.trim().parse().map_err(|_| bad())?;
    if !(l == 95 || l == 99) || !(0.1..=100.0).contains(&w) {
        return Err(bad());
    }
    Ok((l, w))
}

/// Whether the interval is within ±width/2 % of the mean.
pub fn confident(s: &Spread, width_pct: f64) -> bool {
    match s.ci {
        Some([lo, hi]) if s.mean != 0.0 => (hi - lo) / 2.0 <= s.mean.abs() * width_pct / 200.0,
        Some(_) => true,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_and_interval() {
        let s = spread(&[10.0, 12.0, 11.0], 95);
        assert_eq!((s.min, s.median, s.max, s.mean), (10.0, 11.0, 12.0, 11.0));
        // sd = 1, n = 3: half-width = 4.303 / sqrt(3).
        let [lo, hi] = s.ci.unwrap();
        assert!(
            (hi - 11.0 - 4.303 / 3f64.sqrt()).abs() < 1e-9
                && (11.0 - lo - 4.303 / 3f64.sqrt()).abs() < 1e-9
        );
        assert!(!confident(&s, 5.0));
        let tight = spread(&[100.0, 100.1, 99.9, 100.0], 95);
        assert!(confident(&tight, 5.0));
        assert_eq!(spread(&[3.0], 95).ci, None);
        assert_eq!(spread(&[1.0, 2.0, 3.0, 4.0], 95).median, 2.5);
        assert_eq!(t_quantile(99, 1), 63.657);
        assert_eq!(t_quantile(95, 100), 1.96);
    }

    #[test]
    fn confidence_flag_parses() {
        assert_eq!(parse_confidence("95,5").unwrap(), (95, 5.0));
        for bad in ["95", "90,5", "95,0", "x,y", "95,500"] {
            assert!(parse_confidence(bad).is_err(), "{bad}");
        }
    }
}
