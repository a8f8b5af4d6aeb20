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

/// CSV of a run's points, for pandas and spreadsheets.
pub fn csv(run: &RunRow, points: &[PointRecord]) -> String {
    let cols = [
        "run",
        "seq",
        "mode",
        "guests",
        "direction",
        "test",
        "message_bytes",
        "socket_buffer",
        "gro",
        "tso",
        "lro",
        "mtu",
        "wire_rate_bps",
        "parallel",
        "duration_s",
        "repeat",
        "throughput_gbps",
        "transactions_per_s",
        "latency_p50_us",
        "latency_p99_us",
        "host_busy_pct",
        "machine_busy_pct",
        "normalized_pct_per_gbps",
        "sd_host",
        "sd_send",
        "sd_recv",
        "error",
        "load_bps",
        "client_busy_pct",
        "bound_by",
        "leak_pct",
        "placed",
        "host_cpus",
        "client_cpus",
        "unstable",
    ];
    let mut s = cols.join(",") + "\n";
    let f = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    let q = |t: &str| {
        if t.contains([',', '"', '\n']) {
            format!("\"{}\"", t.replace('"', "\"\""))
        } else {
            t.to_string()
        }
    };
    for p in points {
        let row = [
            run.id.to_string(),
            p.seq.to_string(),
            q(&p.key.mode.to_string()),
            p.key.guests.to_string(),
            q(p.key.direction.name()),
            q(&p.key.test.to_string()),
            p.key.message_bytes.to_string(),
            p.key
                .socket_buffer
                .map(|v| v.to_string())
                .unwrap_or_default(),
            q(p.key.gro.name()),
            p.key.tso.to_string(),
            p.key.lro.to_string(),
            p.key.mtu.to_string(),
            p.key.wire_rate.map(|v| v.to_string()).unwrap_or_default(),
            p.key.parallel.to_string(),
            p.duration_s.to_string(),
            p.repeat.to_string(),
            f(p.throughput_gbps),
            f(p.transactions_per_s),
            f(p.latency_p50_us),
            f(p.latency_p99_us),
            f(p.host_busy_pct),
            f(p.machine_busy_pct),
            f(p.normalized_pct_per_gbps),
            f(p.sd_host),
            f(p.sd_send),
            f(p.sd_recv),
            q(p.error.as_deref().unwrap_or("")),
            p.key.load_bps.map(|v| v.to_string()).unwrap_or_default(),
            f(p.client_busy_pct),
            q(&p.bound_by
                .as_ref()
                .map(|b| b.to_string())
                .unwrap_or_default()),
            f(p.leak_pct),
            p.placed.map(|v| v.to_string()).unwrap_or_default(),
            q(p.host_cpus.as_deref().unwrap_or("")),
            q(p.client_cpus.as_deref().unwrap_or("")),
            p.unstable.map(|v| v.to_string()).unwrap_or_default(),
        ];
        s += &(row.join(",") + "\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_and_has_a_header() {
        let run = RunRow {
            id: 3,
            name: "q".into(),
            description: String::new(),
            experiment_hash: String::new(),
            vnetlab_version: String::new(),
            started_at: String::new(),
            finished_at: None,
            status: crate::vocab::RunStatus::Complete,
            host: None,
            planned_points: 1,
            points: 1,
            host_facts: Default::default(),
            experiment_text: String::new(),
        };
        let p = PointRecord {
            seq: 1,
            key: crate::records::PointKey {
                mode: crate::vocab::Mode::Bridge,
                ..Default::default()
            },
            throughput_gbps: Some(1.5),
            error: Some("a, \"b\"".into()),
            ..Default::default()
        };
        let c = csv(&run, &[p]);
        let lines: Vec<&str> = c.lines().collect();
        assert!(lines[0].starts_with("run,seq,mode"));
        assert!(lines[1].starts_with("3,1,bridge,"));
        assert!(lines[1].contains(",\"a, \"\"b\"\"\","), "{}", lines[1]);
        assert_eq!(lines[0].split(',').count(), 35);
    }
}
