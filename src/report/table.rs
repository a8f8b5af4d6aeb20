//! CLI tables: the run summary (mode × size: Gb/s, host CPU %, CPU per Gb/s) and the list of runs.

use crate::records::{PointRecord, RunRow};

/// Above this share of the host's cores stolen by the hypervisor beneath, a point says so.
pub const STEAL_WARN: f64 = 5.0;

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

/// `median (min–max)` of a figure over a point's repeats, or the figure alone.
fn with_range(v: Option<f64>, reps: &[f64], prec: usize) -> String {
    match (
        v,
        reps.iter().cloned().reduce(f64::min),
        reps.iter().cloned().reduce(f64::max),
    ) {
        (Some(x), Some(lo), Some(hi)) if reps.len() > 1 => {
            format!("{x:.prec$} ({lo:.prec$}–{hi:.prec$})")
        }
        _ => opt(v, prec),
    }
}

pub fn summary(points: &[PointRecord]) -> String {
    let refs: Vec<&PointRecord> = points.iter().collect();
    let labeler = super::Labeler::new(&refs);
    // The label column is as wide as the longest label, so long labels do not push the rest.
    let w = points
        .iter()
        .map(|p| labeler.label(p).chars().count())
        .max()
        .unwrap_or(0)
        .max("datapath".len());
    let mut s = format!(
        "{:<w$} {:>8} {:>22} {:>10} {:>10} {:>24} {:>9}  {}\n",
        "datapath",
        "size",
        "Gb/s (min–max)",
        "trans/s",
        "host CPU%",
        "CPU%/Gb/s (min–max)",
        "p50 µs",
        "bound by"
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
        let (gbps, norm) = p.repeat_figures();
        let mut bound = p
            .bound_by
            .as_ref()
            .map_or_else(|| "-".to_string(), |b| b.to_string());
        if p.unstable == Some(true) {
            bound += " UNSTABLE";
        }
        if p.placed == Some(false) {
            bound += " unplaced";
        }
        if let Some(st) = p.host_steal_pct.filter(|s| *s > STEAL_WARN) {
            bound += &format!(" steal {st:.0}%");
        }
        s += &format!(
            "{:<w$} {:>8} {:>22} {:>10} {:>10} {:>24} {:>9}  {}\n",
            labeler.label(p),
            p.key.message_bytes,
            if p.transactions_per_s.is_some() {
                "-".into()
            } else {
                with_range(p.throughput_gbps, &gbps, 3)
            },
            opt(p.transactions_per_s, 0),
            opt(p.host_busy_pct, 2),
            with_range(p.normalized_pct_per_gbps, &norm, 3),
            opt(p.latency_p50_us, 1),
            bound,
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
        s += &format!(
            "{:>4}  {:<14} {:<16} {:<12} {:>3}/{:<3}  {:<21} {}\n",
            r.id,
            r.name,
            r.host.as_deref().unwrap_or("-"),
            r.status,
            r.points,
            r.planned_points,
            r.started_at,
            r.description
        );
    }
    s
}
