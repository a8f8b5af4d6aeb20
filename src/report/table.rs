//! CLI tables: the run summary (mode × size: Gb/s, host CPU %, CPU per Gb/s) and the list of runs.

use crate::records::{PointRecord, RunRow};
use crate::stats::Spread;

/// Above this share of the host's cores stolen by the hypervisor beneath, a point warns.
pub const STEAL_WARN: f64 = 5.0;
/// From this share a point's steal is shown beside its figures in tables (two 10 ms ticks of a
/// one-second window: one tick is the counter's step, not a spell).
pub const STEAL_NOTE: f64 = 2.0;
/// Above this share of the host's cores taken by tasks that are not the lab's, a point warns.
pub const FOREIGN_WARN: f64 = 3.0;

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

/// `median [lo–hi]` of a figure over a point's units (its confidence interval), or the figure.
fn estimate(v: Option<f64>, s: Option<&Spread>, prec: usize) -> String {
    match (v, s) {
        (Some(_), Some(s)) if s.interval.is_some() => s.text(prec),
        _ => opt(v, prec),
    }
}

/// What a point's line says after its figures: what bound it, whether its interval reached what
/// was asked, the steal and the foreign work beside it, and why it has no cost.
pub fn notes(p: &PointRecord) -> String {
    let mut n: Vec<String> = vec![p
        .bound_by
        .as_ref()
        .map_or_else(|| "-".to_string(), |b| b.to_string())];
    if let Some(why) = &p.unmeasurable {
        n.push(format!("UNMEASURABLE: {why}"));
    } else if let Some(r) = p.spread.as_ref().filter(|r| r.wide) {
        let g = r.goal();
        let worst = [Some(&r.throughput_gbps), r.cost()]
            .into_iter()
            .flatten()
            .find(|s| !s.meets(&g));
        if let Some(s) = worst {
            n.push(s.against(&g));
        }
    }
    if let Some(r) = p.spread.as_ref().filter(|r| r.bound_left_out > 0) {
        n.push(format!(
            "{} of {} bound, left out of the cost",
            r.bound_left_out, r.runs
        ));
    }
    if let Some(u) = p.spread.as_ref().and_then(|r| r.unmeasurable.as_ref()) {
        if p.unmeasurable.is_none() {
            n.push(format!("{} unmeasurable, left out", u.count));
        }
    }
    if p.placed == Some(false) {
        n.push("unplaced".into());
    }
    if let Some(st) = p.host_steal_pct.filter(|s| *s >= STEAL_NOTE) {
        n.push(format!("steal {st:.1}%"));
    }
    if let Some(f) = p.host_foreign_pct.filter(|f| *f > FOREIGN_WARN) {
        n.push(format!("other tasks {f:.1}% (left out)"));
    }
    n.join("; ")
}

pub fn summary(points: &[PointRecord]) -> String {
    let refs: Vec<&PointRecord> = points.iter().collect();
    let labeler = super::series::Labeler::new(&refs);
    // The label column is as wide as the longest label, so long labels do not push the rest.
    let w = points
        .iter()
        .map(|p| labeler.label(p).chars().count())
        .max()
        .unwrap_or(0)
        .max("datapath".len());
    let mut s = format!(
        "{:<w$} {:>8} {:>22} {:>10} {:>10} {:>25} {:>9}  {}\n",
        "datapath",
        "size",
        "Gb/s [95% CI]",
        "trans/s",
        "host CPU%",
        "CPU%/Gb/s [95% CI]",
        "p50 µs",
        "bound by; notes"
    );
    for p in points {
        if let Some(e) = &p.error {
            s += &format!(
                "{:<w$} {:>8} FAILED: {}\n",
                labeler.label(p),
                p.key.message_bytes,
                e
            );
            continue;
        }
        let r = p.spread.as_ref();
        s += &format!(
            "{:<w$} {:>8} {:>22} {:>10} {:>10} {:>25} {:>9}  {}\n",
            labeler.label(p),
            p.key.message_bytes,
            if p.transactions_per_s.is_some() {
                "-".into()
            } else {
                estimate(p.throughput_gbps, r.map(|r| &r.throughput_gbps), 3)
            },
            estimate(
                p.transactions_per_s,
                r.and_then(|r| r.transactions_per_s.as_ref()),
                0
            ),
            opt(p.host_busy_pct, 2),
            estimate(
                p.normalized_pct_per_gbps,
                r.and_then(|r| r.normalized_pct_per_gbps.as_ref()),
                3
            ),
            opt(p.latency_p50_us, 1),
            notes(p),
        );
    }
    s
}

pub fn runs(rows: &[RunRow]) -> String {
    let mut s = format!(
        "{:>4}  {:<14} {:<16} {:<12} {:>7}  {:<21} {}\n",
        "run", "name", "host", "status", "points", "started", "description"
    );
    for r in rows {
        // A farm's run says its run id beside its host's label.
        let host = match &r.fleet {
            Some(f) => format!("{} ({})", f.host, f.run),
            None => r.host.clone().unwrap_or_else(|| "-".into()),
        };
        s += &format!(
            "{:>4}  {:<14} {:<16} {:<12} {:>3}/{:<3}  {:<21} {}\n",
            r.id, r.name, host, r.status, r.points, r.planned_points, r.started_at, r.description
        );
    }
    s
}
