//! `vnetlab compare A B`: per matching point, B ÷ A of throughput (or transactions/s) and of
//! normalized CPU, marked where the difference is outside both runs' spread.

use serde::Serialize;

use crate::records::{PointRecord, RunRow};

#[derive(Serialize, Debug)]
pub struct Row {
    pub key: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
    pub ratio: Option<f64>,
    pub cpu_a: Option<f64>,
    pub cpu_b: Option<f64>,
    pub cpu_ratio: Option<f64>,
    /// Each run's throughput (or transactions/s) lies outside the other's confidence interval: a
    /// real difference. None: no interval known.
    pub significant: Option<bool>,
    /// The same for CPU per Gb/s.
    pub cpu_significant: Option<bool>,
    /// Each run's confidence interval of throughput (or transactions/s); runs stored before
    /// intervals: the repeats' [min, max].
    pub range_a: Option<[f64; 2]>,
    pub range_b: Option<[f64; 2]>,
    /// Either point's interval is wider than its run asked.
    pub wide: bool,
    /// Each run's confidence interval of CPU per Gb/s (or [min, max], as above).
    pub cpu_range_a: Option<[f64; 2]>,
    pub cpu_range_b: Option<[f64; 2]>,
}

fn value(p: &PointRecord) -> Option<f64> {
    p.transactions_per_s.or(p.throughput_gbps)
}

/// A figure's interval from its spread, else the repeats' [min, max] (None with fewer than two).
fn interval(s: Option<&crate::stats::Spread>, each: Vec<f64>) -> Option<[f64; 2]> {
    if let Some(i) = s.and_then(|s| s.interval) {
        return Some([i.lo, i.hi]);
    }
    (each.len() > 1).then(|| {
        [
            each.iter().cloned().fold(f64::MAX, f64::min),
            each.iter().cloned().fold(f64::MIN, f64::max),
        ]
    })
}

/// The interval of the point's CPU per Gb/s.
fn cpu_range(p: &PointRecord) -> Option<[f64; 2]> {
    let s = p
        .spread
        .as_ref()
        .and_then(|r| r.normalized_pct_per_gbps.as_ref());
    interval(
        s,
        p.repeats
            .iter()
            .filter_map(|r| r.normalized_pct_per_gbps)
            .collect(),
    )
}

/// The interval of the point's throughput (or transactions/s).
fn range(p: &PointRecord) -> Option<[f64; 2]> {
    let s = p.spread.as_ref().and_then(|r| match p.transactions_per_s {
        Some(_) => r.transactions_per_s.as_ref(),
        None => Some(&r.throughput_gbps),
    });
    let each = p
        .repeats
        .iter()
        .map(|r| r.transactions_per_s.unwrap_or(r.throughput_gbps))
        .collect();
    interval(s, each)
}

/// Whether each value lies outside the other's interval.
fn apart(
    ra: Option<[f64; 2]>,
    rb: Option<[f64; 2]>,
    x: Option<f64>,
    y: Option<f64>,
) -> Option<bool> {
    let ([alo, ahi], [blo, bhi], x, y) = (ra?, rb?, x?, y?);
    Some((y < alo || y > ahi) && (x < blo || x > bhi))
}

pub fn compare(a: &[PointRecord], b: &[PointRecord]) -> Vec<Row> {
    let mut out = Vec::new();
    for pa in a.iter().filter(|p| p.error.is_none()) {
        let Some(pb) = b.iter().find(|q| q.error.is_none() && q.key == pa.key) else {
            continue;
        };
        let (va, vb) = (value(pa), value(pb));
        let (ca, cb) = (pa.normalized_pct_per_gbps, pb.normalized_pct_per_gbps);
        let ratio = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) if x != 0.0 => Some(y / x),
            _ => None,
        };
        out.push(Row {
            key: pa.key.to_string(),
            a: va,
            b: vb,
            ratio: ratio(va, vb),
            cpu_a: ca,
            cpu_b: cb,
            cpu_ratio: ratio(ca, cb),
            significant: apart(range(pa), range(pb), va, vb),
            cpu_significant: apart(cpu_range(pa), cpu_range(pb), ca, cb),
            range_a: range(pa),
            range_b: range(pb),
            wide: pa.wide == Some(true) || pb.wide == Some(true),
            cpu_range_a: cpu_range(pa),
            cpu_range_b: cpu_range(pb),
        });
    }
    out
}

/// Two runs side by side as one page: their CPU per Gb/s per shared point as bars with the
/// repeats' whiskers, and the table of medians, spreads and ratios.
pub fn page(a: &RunRow, b: &RunRow, rows: &[Row]) -> Result<String, super::error::Error> {
    use super::html::esc;
    let name = |r: &RunRow| {
        let on = r
            .host
            .as_deref()
            .map(|h| format!(" on {h}"))
            .unwrap_or_default();
        format!("run {} ({}{on})", r.id, r.name)
    };
    let (na, nb) = (name(a), name(b));
    let mut h = super::html::head(&format!("vnetlab: {nb} against {na}"));
    h += &format!(
        "<h1>{} against {}</h1><p class=\"muted\">B = {}, A = {}: the points both runs measured (same mode, test, size, direction, offloads, wire). Medians over the units with their confidence intervals [low–high]; ratio = B ÷ A; <b>*</b> where each run's median lies outside the other's interval.</p>",
        esc(&nb), esc(&na), esc(&nb), esc(&na)
    );
    if rows.is_empty() {
        h += "<p>The two runs share no points.</p>";
        return Ok(h + &super::html::tail());
    }
    let cats: Vec<String> = (1..=rows.len()).map(|i| format!("#{i}")).collect();
    let bar = |v: Option<f64>, r: Option<[f64; 2]>| {
        v.map(|value| super::charts::Bar {
            value,
            low: r.map_or(value, |r| r[0]),
            high: r.map_or(value, |r| r[1]),
        })
    };
    let ours = vec![
        (
            format!("A: run {}", a.id),
            rows.iter().map(|r| bar(r.cpu_a, r.cpu_range_a)).collect(),
        ),
        (
            format!("B: run {}", b.id),
            rows.iter().map(|r| bar(r.cpu_b, r.cpu_range_b)).collect(),
        ),
    ];
    let paper = vec![vec![None; rows.len()]; 2];
    let svg = super::charts::paper_bars(&super::charts::PaperChart {
        title: "Host CPU per Gb/s, point by point",
        x_desc: "point (# in the table below)",
        y_desc: "% of the host per Gb/s",
        y2_desc: None,
        categories: &cats,
        one_per_category: false,
        ours: &ours,
        paper: &paper,
    })?;
    h += &format!("<div class=\"figs\"><figure data-chart=\"compare\">{svg}</figure></div>");
    h += &table(rows);
    Ok(h + &super::html::tail())
}

/// The comparison's table: each shared point with both runs' figures and the ratios.
fn table(rows: &[Row]) -> String {
    let f = |v: Option<f64>, r: Option<[f64; 2]>| {
        let v = v.map_or("–".into(), |x| format!("{x:.3}"));
        match r {
            Some([lo, hi]) => format!("{v} <span class=\"muted\">[{lo:.3}–{hi:.3}]</span>"),
            None => v,
        }
    };
    let mut h = String::from("<h2>Points</h2><table><tr><th>#</th><th class=\"l\">point</th><th>A</th><th>B</th><th>B ÷ A</th><th>A CPU/Gb/s</th><th>B CPU/Gb/s</th><th>CPU B ÷ A</th><th class=\"l\">note</th></tr>");
    for (i, r) in rows.iter().enumerate() {
        let mark = if r.significant == Some(true) {
            " *"
        } else {
            ""
        };
        let cpu_mark = if r.cpu_significant == Some(true) {
            " *"
        } else {
            ""
        };
        let note = if r.wide {
            "interval wider than asked"
        } else {
            ""
        };
        h += &format!(
            "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}{mark}</td><td>{}</td><td>{}</td><td>{}{cpu_mark}</td><td class=\"l warn\">{note}</td></tr>",
            i + 1,
            super::html::esc(&r.key),
            f(r.a, r.range_a),
            f(r.b, r.range_b),
            r.ratio.map_or("–".into(), |x| format!("{x:.3}")),
            f(r.cpu_a, r.cpu_range_a),
            f(r.cpu_b, r.cpu_range_b),
            r.cpu_ratio.map_or("–".into(), |x| format!("{x:.3}")),
        );
    }
    h + "</table>"
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

    #[test]
    fn the_compare_page_puts_two_runs_side_by_side() {
        let run = |id| RunRow::sample(id, &format!("r{id}"), None);
        let rows = compare(&[pt(10.0, 9.5, 10.5)], &[pt(12.0, 11.8, 12.2)]);
        let h = page(&run(1), &run(2), &rows).unwrap();
        assert!(h.contains("run 2 (r2) against run 1 (r1)") && h.contains("<svg"));
        assert!(
            h.contains("1.200 *"),
            "the ratio, marked outside both spreads"
        );
        assert!(page(&run(1), &run(2), &[])
            .unwrap()
            .contains("share no points"));
    }
}
