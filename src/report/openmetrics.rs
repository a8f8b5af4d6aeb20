//! A run in the OpenMetrics text format (what Prometheus ingests): per point, gauges of its
//! throughput, transactions, host CPU and CPU per Gb/s (medians over its repeats), and per CPU
//! part its share of the host, each sample labelled with the run, the host and the point's
//! conditions. Values are gauges at no timestamp: a run is a measurement, not a live series.

use crate::records::{PointRecord, RunRow};

/// One metric family: its name, help and how each point gives a value.
struct Family {
    name: &'static str,
    help: &'static str,
    value: fn(&PointRecord) -> Option<f64>,
}

const FAMILIES: [Family; 9] = [
    Family {
        name: "vnetlab_throughput_gbps",
        help: "Throughput of the point, Gb/s (median over its rounds).",
        value: |p| p.throughput_gbps.filter(|_| p.transactions_per_s.is_none()),
    },
    Family {
        name: "vnetlab_transactions_per_second",
        help: "Request/response transactions per second (median over its rounds).",
        value: |p| p.transactions_per_s,
    },
    Family {
        name: "vnetlab_host_busy_percent",
        help: "Busy share of the host's cores while the point ran, percent.",
        value: |p| p.host_busy_pct,
    },
    Family {
        name: "vnetlab_host_cpu_percent_per_gbps",
        help: "Host CPU percent per Gb/s delivered (paper 1's normalized CPU).",
        value: |p| p.normalized_pct_per_gbps,
    },
    Family {
        name: "vnetlab_host_cpu_percent_per_gbps_ci_low",
        help: "Low end of the confidence interval of host CPU percent per Gb/s (its level in vnetlab_ci_level_percent).",
        value: |p| ci(p, |r| r.normalized_pct_per_gbps.as_ref()).map(|i| i.lo),
    },
    Family {
        name: "vnetlab_host_cpu_percent_per_gbps_ci_high",
        help: "High end of the confidence interval of host CPU percent per Gb/s.",
        value: |p| ci(p, |r| r.normalized_pct_per_gbps.as_ref()).map(|i| i.hi),
    },
    Family {
        name: "vnetlab_ci_level_percent",
        help: "The level the point's confidence intervals reach, percent (95 asked; fewer than six units reach less).",
        value: |p| ci(p, |r| Some(&r.throughput_gbps)).map(|i| i.level),
    },
    Family {
        name: "vnetlab_host_steal_percent",
        help: "Share of the host's cores the hypervisor beneath this machine stole, percent (largest over the units).",
        value: |p| p.host_steal_pct,
    },
    Family {
        name: "vnetlab_point_wide",
        help: "1 where throughput or CPU per Gb/s has a confidence interval wider than the run asked.",
        value: |p| p.wide.map(|u| if u { 1.0 } else { 0.0 }),
    },
];

/// One of a point's intervals.
fn ci(
    p: &PointRecord,
    f: fn(&crate::records::Repeats) -> Option<&crate::stats::Spread>,
) -> Option<crate::stats::Interval> {
    f(p.spread.as_ref()?)?.interval
}

/// A label value escaped as OpenMetrics asks: backslash, double quote and line feed; any other
/// control character (a carriage return made the export invalid), which the format cannot
/// escape, becomes U+FFFD.
fn esc(v: &str) -> String {
    let v: String = v
        .chars()
        .map(|c| {
            if c.is_control() && c != '\n' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect();
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The labels that say which point a sample is.
fn labels(run: &RunRow, p: &PointRecord) -> String {
    let load = p
        .key
        .load_bps
        .map(|r| crate::units::Rate(r).to_string())
        .unwrap_or_else(|| "max".into());
    let pairs = [
        ("run", run.id.to_string()),
        ("host", run.host.clone().unwrap_or_default()),
        ("seq", p.seq.to_string()),
        ("mode", p.key.mode.to_string()),
        ("test", p.key.test.to_string()),
        ("direction", p.key.direction.name().to_string()),
        ("guests", p.key.guests.to_string()),
        ("message_bytes", p.key.message_bytes.to_string()),
        ("load", load),
    ];
    pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", esc(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// A number as OpenMetrics writes it (finite values only reach here).
fn num(v: f64) -> String {
    format!("{v}")
}

/// The run's points as OpenMetrics text, ending with `# EOF`.
pub fn render(run: &RunRow, points: &[PointRecord]) -> String {
    let ok: Vec<&PointRecord> = points.iter().filter(|p| p.error.is_none()).collect();
    let mut s = String::new();
    for f in &FAMILIES {
        s += &format!("# TYPE {} gauge\n# HELP {} {}\n", f.name, f.name, f.help);
        for p in &ok {
            if let Some(v) = (f.value)(p).filter(|v| v.is_finite()) {
                s += &format!("{}{{{}}} {}\n", f.name, labels(run, p), num(v));
            }
        }
    }
    let part = "vnetlab_part_busy_percent";
    s += &format!("# TYPE {part} gauge\n# HELP {part} The host's CPU spent by one part in the point's median round (its CPU per Gb/s the median), percent of the host.\n");
    for p in &ok {
        for (name, kind, busy, _) in p.parts.iter().filter(|x| x.2.is_finite()) {
            let kind = serde_json::to_value(kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            s += &format!(
                "{part}{{{},part=\"{}\",kind=\"{}\"}} {}\n",
                labels(run, p),
                esc(name),
                esc(&kind),
                num(*busy)
            );
        }
    }
    s + "# EOF\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_is_labelled_escaped_and_the_text_ends_with_eof() {
        let run = RunRow::sample(4, "q", Some("a\"b"));
        let p = PointRecord {
            seq: 1,
            throughput_gbps: Some(0.3),
            host_busy_pct: Some(f64::NAN),
            parts: vec![("NAPI vlx1w".into(), crate::vocab::PartKind::Napi, 3.0, 0.03)],
            ..Default::default()
        };
        let t = render(&run, &[p]);
        assert!(t.ends_with("# EOF\n"));
        assert!(
            t.contains("vnetlab_throughput_gbps{run=\"4\",host=\"a\\\"b\",seq=\"1\""),
            "{t}"
        );
        assert!(
            !t.contains("NaN"),
            "a figure that is not a number is left out"
        );
        assert!(t.contains("part=\"NAPI vlx1w\",kind=\"napi\"} 3\n"), "{t}");
        // A raw carriage return (or any control character) in a label cannot be escaped in the
        // format: it becomes U+FFFD, and the text stays one sample a line.
        let run = RunRow::sample(5, "q", Some("a\rb\u{7}c"));
        let p = PointRecord {
            throughput_gbps: Some(0.3),
            ..Default::default()
        };
        let t = render(&run, &[p]);
        assert!(!t.contains('\r') && !t.contains('\u{7}'), "{t:?}");
        assert!(t.contains("host=\"a\u{fffd}b\u{fffd}c\""), "{t}");
    }
}
