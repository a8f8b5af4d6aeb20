//! `vnetlab compare A B`: per matching point, B ÷ A of throughput (or transactions/s) and of
//! normalized CPU, marked where the difference is outside both runs' spread.

use serde::Serialize;

use crate::records::PointRecord;

#[derive(Serialize, Debug)]
pub struct Row {
    pub key: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
    pub ratio: Option<f64>,
    pub cpu_a: Option<f64>,
    pub cpu_b: Option<f64>,
    pub cpu_ratio: Option<f64>,
    /// Each value lies outside the other run's [min, max]: a real difference. None: no spread known.
    pub significant: Option<bool>,
    /// [min, max] over each run's repeats (throughput or transactions/s).
    pub range_a: Option<[f64; 2]>,
    pub range_b: Option<[f64; 2]>,
    /// Either point varied by more than 10 % across its repeats.
    pub unstable: bool,
}

fn value(p: &PointRecord) -> Option<f64> {
    p.transactions_per_s.or(p.throughput_gbps)
}

/// [min, max] of the point's throughput (or tps) over its repetitions.
fn range(p: &PointRecord) -> Option<[f64; 2]> {
    if p.repeats.len() > 1 {
        let v: Vec<f64> = p
            .repeats
            .iter()
            .map(|r| r.transactions_per_s.unwrap_or(r.throughput_gbps))
            .collect();
        return Some([
            v.iter().cloned().fold(f64::MAX, f64::min),
            v.iter().cloned().fold(f64::MIN, f64::max),
        ]);
    }
    let s = p.spread.as_ref()?;
    let t = if p.transactions_per_s.is_some() {
        s.transactions_per_s.as_ref()?
    } else {
        &s.throughput_gbps
    };
    Some([t.min, t.max])
}

pub fn compare(a: &[PointRecord], b: &[PointRecord]) -> Vec<Row> {
    let mut out = Vec::new();
    for pa in a.iter().filter(|p| p.error.is_none()) {
        let Some(pb) = b.iter().find(|q| q.error.is_none() && q.key == pa.key) else {
            continue;
        };
        let (va, vb) = (value(pa), value(pb));
        let significant = match (range(pa), range(pb), va, vb) {
            (Some([alo, ahi]), Some([blo, bhi]), Some(x), Some(y)) => {
                Some((y < alo || y > ahi) && (x < blo || x > bhi))
            }
            _ => None,
        };
        let ratio = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) if x != 0.0 => Some(y / x),
            _ => None,
        };
        out.push(Row {
            key: pa.key.to_string(),
            a: va,
            b: vb,
            ratio: ratio(va, vb),
            cpu_a: pa.normalized_pct_per_gbps,
            cpu_b: pb.normalized_pct_per_gbps,
            cpu_ratio: ratio(pa.normalized_pct_per_gbps, pb.normalized_pct_per_gbps),
            significant,
            range_a: range(pa),
            range_b: range(pb),
            unstable: pa.unstable == Some(true) || pb.unstable == Some(true),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(g: f64, lo: f64, hi: f64) -> PointRecord {
        use crate::records::{PointKey, Repeat};
        PointRecord {
            key: PointKey {
                message_bytes: 1024,
                ..Default::default()
            },
            throughput_gbps: Some(g),
            normalized_pct_per_gbps: Some(10.0),
            repeats: [lo, g, hi]
                .iter()
                .map(|&t| Repeat {
                    throughput_gbps: t,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn ratios_and_significance() {
        let r = compare(&[pt(10.0, 9.5, 10.5)], &[pt(12.0, 11.8, 12.2)]);
        assert_eq!(r.len(), 1);
        assert!((r[0].ratio.unwrap() - 1.2).abs() < 1e-12);
        assert_eq!(r[0].significant, Some(true));
        let r = compare(&[pt(10.0, 9.0, 11.0)], &[pt(10.5, 9.8, 11.2)]);
        assert_eq!(r[0].significant, Some(false));
        let mut other = pt(10.0, 9.0, 11.0);
        other.key.mode = crate::vocab::Mode::Nat;
        assert!(compare(&[pt(10.0, 9.0, 11.0)], &[other]).is_empty());
    }
}
