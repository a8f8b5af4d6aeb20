//! A run exported for other tools: CSV of its points (one median row each), of every repeat, or
//! of every CPU part, each row with its run and host, for pandas and spreadsheets; and the
//! OpenMetrics text format, which a fleet's Prometheus ingests.

use crate::records::{PointRecord, RunRow};

/// What `vnetlab export --format` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One row per point: medians over its repeats.
    Csv,
    /// One row per repeat of every point.
    RepeatsCsv,
    /// One row per CPU part of every point.
    PartsCsv,
    /// The OpenMetrics text format: one gauge sample per point and figure, and per part.
    Openmetrics,
}

impl std::str::FromStr for Format {
    type Err = super::error::Error;
    fn from_str(s: &str) -> Result<Format, super::error::Error> {
        match s {
            "csv" => Ok(Format::Csv),
            "repeats-csv" => Ok(Format::RepeatsCsv),
            "parts-csv" => Ok(Format::PartsCsv),
            "openmetrics" => Ok(Format::Openmetrics),
            _ => Err(super::error::Error::Failed(format!(
                "--format {}: use csv, repeats-csv, parts-csv or openmetrics",
                crate::text::clip(s)
            ))),
        }
    }
}

/// The run in `format` (`om`: how OpenMetrics is written).
pub fn export(
    format: Format,
    run: &RunRow,
    points: &[PointRecord],
    om: super::openmetrics::Options,
) -> String {
    match format {
        Format::Csv => points_csv(run, points),
        Format::RepeatsCsv => repeats_csv(run, points),
        Format::PartsCsv => parts_csv(run, points),
        Format::Openmetrics => super::openmetrics::render(run, points, om),
    }
}

/// The host a run measured (empty where the store kept none).
fn host(run: &RunRow) -> &str {
    run.host.as_deref().unwrap_or("")
}

/// A CSV text cell: one that a spreadsheet would read as a formula (starting with = + - @, a
/// tab or a carriage return) is written as text, with a leading apostrophe (OWASP's advice
/// against formula injection). Numbers never pass through here; quoting is the writer's.
fn q(t: &str) -> String {
    let formula = t.starts_with(['=', '+', '-', '@', '\t', '\r', '＝', '＋', '－', '＠']);
    if formula {
        format!("'{t}")
    } else {
        t.to_string()
    }
}

/// A CSV table: the header, then each row, quoted where a cell holds a comma, a quote or a
/// line break (RFC 4180, by the `csv` crate).
fn table(header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    // Writing to memory cannot fail; a row of another width is a bug caught by the tests.
    w.write_record(header).expect("a CSV header");
    for row in rows {
        w.write_record(&row)
            .expect("a CSV row as wide as its header");
    }
    let bytes = w.into_inner().expect("an in-memory CSV");
    String::from_utf8(bytes).expect("CSV of UTF-8 cells")
}

/// An optional number as a cell (empty for none).
fn f(v: Option<f64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// The cells that name a point in the per-repeat and per-part tables.
const KEY_COLS: [&str; 9] = [
    "run",
    "host",
    "seq",
    "mode",
    "guests",
    "direction",
    "test",
    "message_bytes",
    "load_bps",
];

fn key_cells(run: &RunRow, p: &PointRecord) -> Vec<String> {
    vec![
        run.id.to_string(),
        q(host(run)),
        p.seq.to_string(),
        q(&p.key.mode.to_string()),
        p.key.guests.to_string(),
        q(p.key.direction.name()),
        q(&p.key.test.to_string()),
        p.key.message_bytes.to_string(),
        p.key.load_bps.map(|v| v.to_string()).unwrap_or_default(),
    ]
}

/// One row per repeat: what each window measured, in the order they ran.
fn repeats_csv(run: &RunRow, points: &[PointRecord]) -> String {
    let cols = [
        "repeat",
        "throughput_gbps",
        "transactions_per_s",
        "host_busy_pct",
        "normalized_pct_per_gbps",
        "bound_by",
        "leak_pct",
        "host_steal_pct",
        "latency_p99_us",
    ];
    let mut rows = Vec::new();
    for p in points {
        for (i, r) in p.repeats.iter().enumerate() {
            let mut row = key_cells(run, p);
            row.extend([
                (i + 1).to_string(),
                r.throughput_gbps.to_string(),
                f(r.transactions_per_s),
                f(r.host_busy_pct),
                f(r.normalized_pct_per_gbps),
                q(&r.bound_by.map(|b| b.to_string()).unwrap_or_default()),
                f(r.leak_pct),
                f(r.host_steal_pct),
                f(r.latency_p99_us),
            ]);
            rows.push(row);
        }
    }
    table(&[&KEY_COLS[..], &cols[..]].concat(), rows)
}

/// One row per CPU part of each point: the split of the host in its median round (the round
/// whose CPU per Gb/s is the median), which adds up to that round's host CPU.
fn parts_csv(run: &RunRow, points: &[PointRecord]) -> String {
    let cols = ["part", "kind", "busy_pct", "cores"];
    let mut rows = Vec::new();
    for p in points {
        for (name, kind, busy, cores) in &p.parts {
            let mut row = key_cells(run, p);
            row.extend([
                q(name),
                q(&serde_json::to_value(kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()),
                busy.to_string(),
                cores.to_string(),
            ]);
            rows.push(row);
        }
    }
    table(&[&KEY_COLS[..], &cols[..]].concat(), rows)
}

/// CSV of a run's points, for pandas and spreadsheets: the key cells of the other tables first,
/// then the point's settings and medians.
fn points_csv(run: &RunRow, points: &[PointRecord]) -> String {
    let cols = [
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
        "sd_host_us_per_kb",
        "sd_send_us_per_kb",
        "sd_recv_us_per_kb",
        "sd_host_us_per_tran",
        "sd_send_us_per_tran",
        "sd_recv_us_per_tran",
        "error",
        "client_busy_pct",
        "bound_by",
        "leak_pct",
        "placed",
        "host_cpus",
        "client_cpus",
        "wide",
        "congestion",
        "pacing",
        "tcp_retransmits",
        "ci_level_pct",
        "throughput_ci_low",
        "throughput_ci_high",
        "host_busy_ci_low",
        "host_busy_ci_high",
        "normalized_ci_low",
        "normalized_ci_high",
        "units",
        "unmeasurable",
        "host_steal_pct",
        "host_foreign_pct",
    ];
    let mut rows = Vec::new();
    let text = |v: Option<String>| v.unwrap_or_default();
    for p in points {
        let mut row = key_cells(run, p);
        row.extend([
            text(p.key.socket_buffer.map(|v| v.to_string())),
            q(p.key.gro.name()),
            p.key.tso.to_string(),
            p.key.lro.to_string(),
            p.key.mtu.to_string(),
            text(p.key.wire_rate.map(|v| v.to_string())),
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
        ]);
        row.extend(demand_cells(p));
        row.extend([
            q(p.error.as_deref().unwrap_or("")),
            f(p.client_busy_pct),
            q(&text(p.bound_by.map(|b| b.to_string()))),
            f(p.leak_pct),
            text(p.placed.map(|v| v.to_string())),
            q(p.host_cpus.as_deref().unwrap_or("")),
            q(p.client_cpus.as_deref().unwrap_or("")),
            text(p.wide.map(|v| v.to_string())),
            q(p.congestion.as_deref().unwrap_or("")),
            text(p.pacing.map(|v| v.to_string())),
            text(p.tcp_retransmits.map(|v| v.to_string())),
        ]);
        row.extend(interval_cells(p));
        row.extend([
            q(p.unmeasurable.as_deref().unwrap_or("")),
            f(p.host_steal_pct),
            f(p.host_foreign_pct),
        ]);
        rows.push(row);
    }
    table(&[&KEY_COLS[..], &cols[..]].concat(), rows)
}

/// The service demands, one unit a column: µs of host CPU per KB for a stream, per transaction
/// for a test that counts transactions (the meter gives one or the other); empty where none.
fn demand_cells(p: &PointRecord) -> Vec<String> {
    let per_tran = p.transactions_per_s.is_some_and(|t| t > 0.0);
    let each = [p.sd_host, p.sd_send, p.sd_recv];
    let of = |tran: bool| each.map(|d| f(d.filter(|_| per_tran == tran)));
    of(false).into_iter().chain(of(true)).collect()
}

/// The point's confidence intervals: level, then low and high of throughput (or transactions/s),
/// host CPU and CPU per Gb/s, then the number of units; empty cells where there are none.
fn interval_cells(p: &PointRecord) -> Vec<String> {
    let r = p.spread.as_ref();
    let ends = |s: Option<&crate::stats::Spread>| match s.and_then(|s| s.interval) {
        Some(i) => [i.lo.to_string(), i.hi.to_string()],
        None => [String::new(), String::new()],
    };
    let rate = r.map(|r| match &r.transactions_per_s {
        Some(t) => t,
        None => &r.throughput_gbps,
    });
    let level = rate
        .and_then(|s| s.interval)
        .map(|i| i.level.to_string())
        .unwrap_or_default();
    let mut v = vec![level];
    v.extend(ends(rate));
    v.extend(ends(r.and_then(|r| r.host_busy_pct.as_ref())));
    v.extend(ends(r.and_then(|r| r.normalized_pct_per_gbps.as_ref())));
    v.push(rate.map(|s| s.n.to_string()).unwrap_or_default());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_and_has_a_header() {
        let run = RunRow::sample(3, "q", None);
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
        let c = export(Format::Csv, &run, &[p], Default::default());
        let lines: Vec<&str> = c.lines().collect();
        assert!(lines[0].starts_with("run,host,seq,mode"));
        assert!(lines[1].starts_with("3,,1,bridge,"));
        assert!(lines[1].contains(",\"a, \"\"b\"\"\","), "{}", lines[1]);
        assert_eq!(lines[0].split(',').count(), 53);
        assert!(lines[0].contains(",normalized_ci_low,normalized_ci_high,units,"));
    }

    #[test]
    fn a_service_demand_sits_in_the_column_of_its_unit() {
        let run = RunRow::sample(3, "q", None);
        let stream = PointRecord {
            sd_host: Some(2.5),
            ..Default::default()
        };
        let rr = PointRecord {
            transactions_per_s: Some(9000.0),
            sd_host: Some(40.0),
            ..stream.clone()
        };
        let c = export(Format::Csv, &run, &[stream, rr], Default::default());
        let lines: Vec<Vec<&str>> = c.lines().map(|l| l.split(',').collect()).collect();
        let col = |name: &str| lines[0].iter().position(|h| *h == name).unwrap();
        let (kb, tran) = (col("sd_host_us_per_kb"), col("sd_host_us_per_tran"));
        assert_eq!((lines[1][kb], lines[1][tran]), ("2.5", ""));
        assert_eq!((lines[2][kb], lines[2][tran]), ("", "40"));
    }

    /// A text cell a spreadsheet would run as a formula is written as text; numbers never are.
    #[test]
    fn a_cell_that_reads_as_a_formula_is_written_as_text() {
        let row = |cell: &str| table(&["a", "b"], [vec![q(cell), f(Some(-1.5))]]);
        assert_eq!(
            row("=HYPERLINK(\"http://x\")"),
            "a,b\n\"'=HYPERLINK(\"\"http://x\"\")\",-1.5\n"
        );
        for c in ["+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx", "＝1"] {
            let cell = row(c)
                .lines()
                .nth(1)
                .unwrap()
                .trim_start_matches('"')
                .to_string();
            assert!(cell.starts_with('\''), "{c}: {cell}");
        }
        assert_eq!(row("bridge"), "a,b\nbridge,-1.5\n");
        assert_eq!(row("a\rb"), "a,b\n\"a\rb\",-1.5\n");
    }

    #[test]
    fn repeats_and_parts_have_a_row_each_with_run_and_host() {
        let run = RunRow::sample(7, "q", Some("hostA"));
        let p = PointRecord {
            seq: 2,
            repeats: vec![Default::default(), Default::default(), Default::default()],
            parts: vec![
                ("g1".into(), crate::vocab::PartKind::Guest, 4.0, 0.04),
                ("NAPI".into(), crate::vocab::PartKind::Napi, 1.0, 0.01),
            ],
            ..Default::default()
        };
        let r = export(
            Format::RepeatsCsv,
            &run,
            std::slice::from_ref(&p),
            Default::default(),
        );
        assert_eq!(r.lines().count(), 4, "{r}");
        assert!(r.lines().nth(3).unwrap().starts_with("7,hostA,2,"));
        let c = export(Format::PartsCsv, &run, &[p], Default::default());
        assert_eq!(c.lines().count(), 3, "{c}");
        assert!(c.contains(",g1,guest,4,0.04"), "{c}");
    }
}
