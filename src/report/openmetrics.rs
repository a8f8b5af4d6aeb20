//! A run in the OpenMetrics text format (what Prometheus ingests), in base units: per point,
//! gauges of its throughput (bits per second), transactions per second, host busy share and
//! steal (0–1 ratios), the host CPU each bit costs (CPU-seconds per bit, with its interval), and
//! per CPU part its share of the host, part names told by role (never the lab's interface
//! names). A sample is labelled with the host and the point's conditions, never the run's id (a
//! series per host and condition, not one per run), and the host's facts are `target_info`.
//! Without timestamps a run is the host's last result (node_exporter's textfile collector reads
//! it so); with them, a stored run can be backfilled (`promtool tsdb create-blocks-from
//! openmetrics`).

use crate::records::{PointRecord, RunRow};

/// How the text is written.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Options {
    /// Every sample at the run's end (its start where it has none), for backfilling.
    pub timestamps: bool,
    /// node_exporter's textfile collector reads Prometheus' text format, which has no `info`
    /// type: `target_info` is then a gauge.
    pub textfile: bool,
}

/// One metric family: its name, unit, help and how each point gives a value.
struct Family {
    name: &'static str,
    unit: Option<&'static str>,
    help: &'static str,
    value: fn(&PointRecord) -> Option<f64>,
}

const FAMILIES: [Family; 9] = [
    Family {
        name: "vnetlab_throughput_bits_per_second",
        unit: Some("bits_per_second"),
        help: "Throughput of the point (median over its rounds).",
        value: |p| {
            p.throughput_gbps
                .filter(|_| p.transactions_per_s.is_none())
                .map(|g| g * 1e9)
        },
    },
    Family {
        name: "vnetlab_transactions_per_second",
        unit: None,
        help: "Request/response transactions per second (median over its rounds).",
        value: |p| p.transactions_per_s,
    },
    Family {
        name: "vnetlab_host_busy_ratio",
        unit: Some("ratio"),
        help: "Busy share of the host's cores while the point ran, 0 to 1.",
        value: |p| p.host_busy_pct.map(|v| v / 100.0),
    },
    Family {
        name: "vnetlab_host_cpu_seconds_per_bit",
        unit: Some("seconds_per_bit"),
        help: "Host CPU time each bit delivered cost (paper 1's normalized CPU in base units: its percent per Gb/s times the host's cores, over 1e11).",
        value: |p| per_bit(p, p.normalized_pct_per_gbps?),
    },
    Family {
        name: "vnetlab_host_cpu_ci_low_seconds_per_bit",
        unit: Some("seconds_per_bit"),
        help: "Low end of the confidence interval of the host CPU time per bit (its level in vnetlab_ci_level_ratio).",
        value: |p| per_bit(p, ci(p, |r| r.normalized_pct_per_gbps.as_ref())?.lo),
    },
    Family {
        name: "vnetlab_host_cpu_ci_high_seconds_per_bit",
        unit: Some("seconds_per_bit"),
        help: "High end of the confidence interval of the host CPU time per bit.",
        value: |p| per_bit(p, ci(p, |r| r.normalized_pct_per_gbps.as_ref())?.hi),
    },
    Family {
        name: "vnetlab_ci_level_ratio",
        unit: Some("ratio"),
        help: "The level the point's confidence intervals reach, 0 to 1 (0.95 asked; fewer than six units reach less).",
        value: |p| ci(p, |r| Some(&r.throughput_gbps)).map(|i| i.level / 100.0),
    },
    Family {
        name: "vnetlab_host_steal_ratio",
        unit: Some("ratio"),
        help: "Share of the host's cores the hypervisor beneath this machine stole, 0 to 1 (largest over the units).",
        value: |p| p.host_steal_pct.map(|v| v / 100.0),
    },
    Family {
        name: "vnetlab_point_wide",
        unit: None,
        help: "1 where throughput or CPU per bit has a confidence interval wider than the run asked.",
        value: |p| p.wide.map(|u| if u { 1.0 } else { 0.0 }),
    },
];

/// A percent of the host per Gb/s as CPU-seconds per bit: the host's cores are what the percent
/// is of (None where the point does not say them).
fn per_bit(p: &PointRecord, pct_per_gbps: f64) -> Option<f64> {
    let cores = p
        .host_cpus
        .as_deref()?
        .parse::<crate::units::CpuList>()
        .ok()?
        .len();
    (cores > 0).then(|| pct_per_gbps / 100.0 * cores as f64 / 1e9)
}

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

fn pairs(pairs: &[(&str, String)]) -> String {
    pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}=\"{}\"", esc(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// The labels that say which point a sample is: the host and every condition the point was
/// asked for (bounded by the experiment's matrix), not the run.
fn labels(run: &RunRow, p: &PointRecord) -> String {
    let k = &p.key;
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    pairs(&[
        ("host", run.host_label()),
        ("experiment", run.name.clone()),
        ("mode", k.mode.to_string()),
        ("test", k.test.to_string()),
        ("direction", k.direction.name().to_string()),
        ("guests", k.guests.to_string()),
        ("message_bytes", k.message_bytes.to_string()),
        (
            "load",
            k.load_bps
                .map(|r| crate::units::Rate(r).to_string())
                .unwrap_or_else(|| "max".into()),
        ),
        ("parallel", k.parallel.to_string()),
        ("gro", k.gro.name().to_string()),
        ("tso", k.tso.to_string()),
        ("lro", k.lro.to_string()),
        ("mtu", k.mtu.to_string()),
        ("socket_buffer", opt(k.socket_buffer)),
        ("wire_rate", opt(k.wire_rate)),
        ("profile", k.profile.clone().unwrap_or_default()),
        ("interference", k.interference.clone().unwrap_or_default()),
    ])
}

/// A number as OpenMetrics writes it: infinities as `+Inf`/`-Inf` (NaN never reaches here).
fn num(v: f64) -> String {
    match v {
        f64::INFINITY => "+Inf".into(),
        f64::NEG_INFINITY => "-Inf".into(),
        // CPU-seconds per bit are around 1e-10: an exponent reads better than ten zeros.
        v if v != 0.0 && v.abs() < 1e-4 => format!("{v:e}"),
        v => format!("{v}"),
    }
}

/// The run's time as Unix seconds: its end, else its start.
fn timestamp(run: &RunRow) -> Option<i64> {
    let at = run.finished_at.as_deref().unwrap_or(&run.started_at);
    at.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// `target_info`: the host the run measured, as its facts say (an `info` family named `target`
/// in OpenMetrics; a gauge named `target_info` in node_exporter's text format).
fn target_info(run: &RunRow, o: Options, at: &str) -> String {
    let f = &run.host_facts;
    let nics: Vec<String> = f.nics.iter().map(|n| n.describe()).collect();
    let (family, kind) = match o.textfile {
        true => ("target_info", "gauge"),
        false => ("target", "info"),
    };
    format!(
        "# TYPE {family} {kind}\n# HELP {family} The host that measured: its facts.\ntarget_info{{{}}} 1{at}\n",
        pairs(&[
            ("host", run.host_label()),
            ("vnetlab_version", run.vnetlab_version.clone()),
            ("kernel", f.kernel.clone()),
            ("cpu_model", f.cpu_model.clone()),
            ("cores", f.cores.to_string()),
            ("nics", nics.join(", ")),
            ("virtualization", f.virtualization.clone()),
        ])
    )
}

/// The run's points as OpenMetrics text, ending with `# EOF`.
pub fn render(run: &RunRow, points: &[PointRecord], o: Options) -> String {
    let ok: Vec<&PointRecord> = points.iter().filter(|p| p.error.is_none()).collect();
    let at = match (o.timestamps && !o.textfile)
        .then(|| timestamp(run))
        .flatten()
    {
        Some(t) => format!(" {t}"),
        None => String::new(),
    };
    let mut s = target_info(run, o, &at);
    for f in &FAMILIES {
        s += &format!("# TYPE {} gauge\n", f.name);
        if let Some(u) = f.unit {
            s += &format!("# UNIT {} {u}\n", f.name);
        }
        s += &format!("# HELP {} {}\n", f.name, f.help);
        for p in &ok {
            if let Some(v) = (f.value)(p).filter(|v| !v.is_nan()) {
                s += &format!("{}{{{}}} {}{at}\n", f.name, labels(run, p), num(v));
            }
        }
    }
    let part = "vnetlab_part_busy_ratio";
    s += &format!("# TYPE {part} gauge\n# UNIT {part} ratio\n# HELP {part} The host's CPU one part spent in the point's median round (its CPU per Gb/s the median), 0 to 1 of the host.\n");
    for p in &ok {
        for (name, kind, busy, _) in p.parts.iter().filter(|x| !x.2.is_nan()) {
            let kind = serde_json::to_value(kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            s += &format!(
                "{part}{{{},part=\"{}\",kind=\"{}\"}} {}{at}\n",
                labels(run, p),
                esc(&crate::vocab::by_role(name)),
                esc(&kind),
                num(*busy / 100.0)
            );
        }
    }
    s + "# EOF\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_in_base_units_labelled_by_host_and_condition_and_end_with_eof() {
        let run = RunRow::sample(4, "q", Some("a\"b"));
        let p = PointRecord {
            seq: 1,
            throughput_gbps: Some(0.3),
            host_busy_pct: Some(f64::NAN),
            normalized_pct_per_gbps: Some(50.0),
            host_cpus: Some("1".into()),
            parts: vec![("NAPI vlx1w".into(), crate::vocab::PartKind::Napi, 3.0, 0.03)],
            ..Default::default()
        };
        let t = render(&run, std::slice::from_ref(&p), Options::default());
        assert!(t.ends_with("# EOF\n"));
        assert!(t.starts_with("# TYPE target info\n"), "{t}");
        assert!(
            t.contains("vnetlab_throughput_bits_per_second{host=\"a\\\"b\",experiment=\"q\""),
            "{t}"
        );
        assert!(t.contains("} 300000000\n"), "{t}");
        assert!(!t.contains("run=") && !t.contains("seq="), "{t}");
        assert!(t.contains("# UNIT vnetlab_host_cpu_seconds_per_bit seconds_per_bit\n"));
        // 50 % of one core per Gb/s: half a CPU-second per Gbit.
        assert!(
            t.contains("vnetlab_host_cpu_seconds_per_bit{") && t.contains("} 5e-10\n"),
            "{t}"
        );
        assert!(
            !t.contains("NaN"),
            "a figure that is not a number is left out"
        );
        assert!(
            t.contains("part=\"NAPI wire host end\",kind=\"napi\"} 0.03\n"),
            "{t}"
        );
        // A raw carriage return (or any control character) in a label cannot be escaped in the
        // format: it becomes U+FFFD, and the text stays one sample a line.
        let run = RunRow::sample(5, "q", Some("a\rb\u{7}c"));
        let t = render(&run, std::slice::from_ref(&p), Options::default());
        assert!(!t.contains('\r') && !t.contains('\u{7}'), "{t:?}");
        assert!(t.contains("host=\"a\u{fffd}b\u{fffd}c\""), "{t}");
        // Backfill: every sample at the run's time; a textfile has none, and a gauge target_info.
        let mut run = RunRow::sample(6, "q", Some("h"));
        run.started_at = "2026-11-27T00:00:00Z".into();
        let t = render(
            &run,
            std::slice::from_ref(&p),
            Options {
                timestamps: true,
                textfile: false,
            },
        );
        assert!(t.contains("} 300000000 1795737600\n"), "{t}");
        let t = render(
            &run,
            &[p],
            Options {
                timestamps: true,
                textfile: true,
            },
        );
        assert!(t.starts_with("# TYPE target_info gauge\n"), "{t}");
        assert!(!t.contains("1795737600"), "{t}");
        assert_eq!(num(f64::INFINITY), "+Inf");
    }
}
