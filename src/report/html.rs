//! The HTML report of one run: self-contained (inline CSS and SVG, no fetches, works from
//! file://). Paper 1's three panels (bandwidth, host CPU, host CPU per Gb/s against message size),
//! RR latency, CPU parts per datapath, every point with its spread, and host facts.

use super::charts;
use super::error::Error;
use super::series::{self, part_group, series_of, Labeler};
use crate::records::{IfaceFacts, PointRecord, RunRow};
use crate::vocab::PartKind;

pub use crate::text::esc;

fn f(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "–".into())
}

/// Extra sections (e.g. the capacity plan) a caller adds to the page: (title, HTML).
pub type Section = (String, String);

/// The page's head and style, shared by every vnetlab page.
pub fn head(title: &str) -> String {
    let mut h = String::from("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">");
    h += &format!("<title>{}</title>", esc(title));
    h += "<style>body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1240px}h1{font-size:22px}h2{font-size:17px;margin-top:28px}\
          .figs{display:flex;flex-wrap:wrap;gap:12px}figure{margin:0;border:1px solid #ddd;padding:4px;background:#fff}\
          table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}\
          th{background:#f3f3f3}td.l,th.l{text-align:left}.bad{color:#b00}.good{color:#060}.warn{color:#a60}.muted{color:#777}</style></head><body>";
    h
}

/// The script that marks how many charts rendered (the browser test reads it), and the end.
pub fn tail() -> String {
    "<script>window.addEventListener('load',function(){var s=document.querySelectorAll('figure svg'),n=0;\
     for(var i=0;i<s.length;i++){var b=s[i].getBBox();if(b.width>0&&b.height>0&&s[i].querySelectorAll('polyline,rect,circle').length>1)n++;}\
     document.body.setAttribute('data-charts',String(s.length));document.body.setAttribute('data-charts-rendered',String(n));});</script>\
     </body></html>\n"
        .into()
}

pub fn page(run: &RunRow, points: &[PointRecord], extra: &[Section]) -> Result<String, Error> {
    let ok: Vec<&PointRecord> = points.iter().filter(|p| p.error.is_none()).collect();
    let figures = figures(&ok)?;
    let mut h = head(&format!("vnetlab run {} — {}", run.id, run.name));
    h += &intro(run, &ok);
    h += "<h2>Figures</h2><div class=\"figs\">";
    for (title, svg) in &figures {
        h += &format!("<figure data-chart=\"{}\">{svg}</figure>", esc(title));
    }
    if figures.is_empty() {
        h += "<p>No successful points to draw.</p>";
    }
    h += "</div>";
    for (title, html) in extra {
        h += &format!("<h2>{}</h2>{html}", esc(title));
    }
    h += &points_table(points);
    h += &host_table(run);
    h += &interfaces_table(&ok);
    h += &tail();
    Ok(h)
}

fn intro(run: &RunRow, ok: &[&PointRecord]) -> String {
    let mut h = format!(
        "<h1>vnetlab run {} — {}</h1><p>{}</p><p class=\"muted\">status <b>{}</b> · {} of {} points · started {} · finished {} · vnetlab {} · experiment sha256 {}</p>",
        run.id,
        esc(&run.name),
        esc(&run.description),
        run.status,
        run.points,
        run.planned_points,
        esc(&run.started_at),
        esc(run.finished_at.as_deref().unwrap_or("–")),
        esc(&run.vnetlab_version),
        esc(&run.experiment_hash[..run.experiment_hash.len().min(12)])
    );
    let placed: Vec<&&PointRecord> = ok.iter().filter(|p| p.placed == Some(true)).collect();
    let cpus = placed.first().map(|p| {
        format!(
            "host cores {}, client cores {}",
            p.host_cpus.as_deref().unwrap_or("?"),
            p.client_cpus.as_deref().unwrap_or("?")
        )
    });
    h += &format!(
        "<p class=\"muted\">Host CPU is the busy time of the host's cores{} (the client's cores stand for another machine; receive \
          processing on each end of the wire is steered to its side's cores). Normalized CPU is host CPU % per Gb/s delivered, as in \
          paper 1. <b>bound by</b> names what limited a point (a saturated side or core, a backend, the wire); per-Gbit costs for plans \
          come only from points nothing bound. Figures are medians over the rounds with their 95 % confidence intervals \
          (the whiskers); a point's CPU by part is its median round's (the round whose CPU per Gb/s is the median), so its \
          parts add up to that round's host CPU. Work of tasks that are not the lab's is left out of the host's figure.{}</p>",
        cpus.map(|c| format!(" ({c})")).unwrap_or_default(),
        if placed.len() < ok.len() { " <span class=\"bad\">Some points ran unplaced: their host CPU may include the client's work.</span>" } else { "" }
    );
    h
}

/// The run's charts: paper 1's three panels, RR latency and the host's CPU by part.
fn figures(ok: &[&PointRecord]) -> Result<Vec<(String, String)>, Error> {
    let streams: Vec<&PointRecord> = ok
        .iter()
        .copied()
        .filter(|p| p.transactions_per_s.is_none())
        .collect();
    let rrs: Vec<&PointRecord> = ok
        .iter()
        .copied()
        .filter(|p| p.transactions_per_s.is_some())
        .collect();
    let mut figures: Vec<(String, String)> = Vec::new();
    if !streams.is_empty() {
        for (name, fig, what) in [
            ("Bandwidth", series::THROUGHPUT, "Gb/s"),
            ("Host CPU", series::HOST_CPU, "host CPU %"),
            (
                "Host CPU per Gb/s",
                series::CPU_PER_GBPS,
                "host CPU % per Gb/s",
            ),
        ] {
            figures.push((name.into(), size_figure(name, what, &streams, fig)?));
        }
        figures.extend(over_time(&streams)?);
    }
    if !rrs.is_empty() {
        let rl = Labeler::new(&rrs);
        let cats: Vec<String> = rrs
            .iter()
            .map(|p| format!("{} {}B", rl.label(p), p.key.message_bytes))
            .collect();
        let p50: Vec<f64> = rrs
            .iter()
            .map(|p| p.latency_p50_us.unwrap_or(0.0))
            .collect();
        let tail: Vec<f64> = rrs
            .iter()
            .map(|p| (p.latency_p99_us.unwrap_or(0.0) - p.latency_p50_us.unwrap_or(0.0)).max(0.0))
            .collect();
        figures.push((
            "RR latency".into(),
            charts::stacked_bars(
                "Request/response latency",
                "µs",
                &cats,
                &[("p50".into(), p50), ("p50 → p99".into(), tail)],
            )?,
        ));
    }
    if let Some(parts) = parts_chart(ok)? {
        figures.push(("CPU parts".into(), parts));
    }
    Ok(figures)
}

/// One figure of the stream points against message size: lines where the run has several sizes,
/// one bar per series where it has one (a line of one point is a dot).
fn size_figure(
    name: &str,
    what: &str,
    streams: &[&PointRecord],
    fig: series::Figure,
) -> Result<String, Error> {
    let series = series_of(streams, fig);
    let sizes: std::collections::BTreeSet<u64> =
        streams.iter().map(|p| p.key.message_bytes).collect();
    if let [size] = sizes.into_iter().collect::<Vec<_>>().as_slice() {
        let bars: Vec<(String, charts::Mark)> = series
            .into_iter()
            .filter_map(|(l, mut m)| Some((l, m.pop()?)))
            .collect();
        return charts::bars(&format!("{name} at {size} B messages"), what, &bars);
    }
    charts::lines(&format!("{name} vs message size"), what, &series)
}

/// Each stream point across its measured window: its throughput per interval and the host's
/// CPU at 10 Hz (from the stored result, where the point has one).
fn over_time(streams: &[&PointRecord]) -> Result<Vec<(String, String)>, Error> {
    let l = Labeler::new(streams);
    let name = |p: &PointRecord| format!("{} {} B", l.label(p), p.key.message_bytes);
    let rate: Vec<(String, Vec<(f64, f64)>)> = streams
        .iter()
        .filter(|p| !p.samples.is_empty())
        .map(|p| (name(p), p.samples.clone()))
        .collect();
    let cpu: Vec<(String, Vec<(f64, f64)>)> = streams
        .iter()
        .filter_map(|p| {
            let c = p.result.as_ref()?.cpu.as_ref()?;
            (!c.series.is_empty()).then(|| (name(p), c.series.clone()))
        })
        .collect();
    let mut out = Vec::new();
    if !rate.is_empty() {
        let svg = charts::trace("Throughput across each point's window", "Gb/s", &rate)?;
        out.push(("Throughput over time".into(), svg));
    }
    if !cpu.is_empty() {
        let svg = charts::trace("Host CPU across each point's window", "% of the host", &cpu)?;
        out.push(("Host CPU over time".into(), svg));
    }
    Ok(out)
}

/// The host's CPU by part per datapath, at each series' largest message size (or its RR point).
fn parts_chart(ok: &[&PointRecord]) -> Result<Option<String>, Error> {
    let okl = Labeler::new(ok);
    let mut pick: Vec<(String, &PointRecord)> = Vec::new();
    for p in ok {
        let label = okl.label(p);
        match pick.iter_mut().find(|(l, _)| *l == label) {
            Some(slot) if p.key.message_bytes > slot.1.key.message_bytes => slot.1 = p,
            Some(_) => {}
            None => pick.push((label, p)),
        }
    }
    if !pick.iter().any(|(_, p)| !p.parts.is_empty()) {
        return Ok(None);
    }
    let cats: Vec<String> = pick
        .iter()
        .map(|(l, p)| format!("{l} {}B", p.key.message_bytes))
        .collect();
    let mut groups: Vec<String> = Vec::new();
    for (n, kind, _, _) in pick.iter().flat_map(|(_, p)| &p.parts) {
        let g = part_group(n, *kind);
        if *kind != PartKind::Client && !groups.contains(&g) {
            groups.push(g);
        }
    }
    let stacks: Vec<(String, Vec<f64>)> = groups
        .iter()
        .map(|g| {
            let vals = pick
                .iter()
                .map(|(_, p)| {
                    p.parts
                        .iter()
                        .filter(|(n, k, _, _)| *k != PartKind::Client && part_group(n, *k) == *g)
                        .map(|x| x.2)
                        .sum()
                })
                .collect();
            (g.clone(), vals)
        })
        .collect();
    charts::stacked_bars(
        "Host CPU by part (client excluded)",
        "% of the host",
        &cats,
        &stacks,
    )
    .map(Some)
}

/// A figure's confidence interval with its level and units ("0.29–0.31 (±3 % at 96.9 %, n=6)");
/// runs stored before intervals give the repeats' range.
fn interval(
    s: Option<&crate::stats::Spread>,
    each: &[f64],
    goal: crate::stats::Goal,
    prec: usize,
) -> Option<String> {
    if let Some(s) = s.filter(|s| s.interval.is_some()) {
        let i = s.interval.expect("filtered above");
        return Some(format!(
            "{:.prec$}–{:.prec$} ({}, n={})",
            i.lo,
            i.hi,
            s.against(&goal),
            s.n
        ));
    }
    let (lo, hi) = (
        each.iter().cloned().reduce(f64::min)?,
        each.iter().cloned().reduce(f64::max)?,
    );
    (each.len() > 1).then(|| format!("{lo:.prec$}–{hi:.prec$} (range, n={})", each.len()))
}

/// What bound a point, and its notes (an interval wider than asked, unmeasurable, unplaced,
/// steal, foreign work), as HTML.
fn bound_cell(p: &PointRecord) -> String {
    let notes = super::table::notes(p);
    let mut parts = notes.split("; ");
    let bound = parts.next().filter(|b| *b != "-").unwrap_or("nothing");
    let mut h = esc(bound);
    for n in parts {
        h += &format!(" <span class=\"bad\">{}</span>", esc(n));
    }
    h
}

fn points_table(points: &[PointRecord]) -> String {
    let mut h = String::from(
        "<h2>Points</h2><table><tr><th>#</th><th class=\"l\">datapath</th><th class=\"l\">direction</th><th class=\"l\">test</th><th>size B</th>\
          <th class=\"l\">load</th><th>Gb/s</th><th>Gb/s 95 % CI</th><th>trans/s</th><th>p50 µs</th><th>p99 µs</th><th>host CPU %</th><th>CPU %/Gb/s</th>\
          <th>CPU %/Gb/s 95 % CI</th><th class=\"l\">bound by</th><th>SD µs/KB host</th><th>send</th><th>recv</th></tr>",
    );
    let all: Vec<&PointRecord> = points.iter().collect();
    let labels = Labeler::new(&all);
    for p in points {
        let lead = format!(
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td>",
            p.seq,
            esc(&labels.label(p)),
            p.key.direction,
            p.key.test,
            p.key.message_bytes
        );
        if let Some(e) = &p.error {
            h += &format!(
                "{lead}<td class=\"l bad\" colspan=\"13\">failed: {}</td></tr>",
                esc(e)
            );
            continue;
        }
        let (gbps, norm) = p.repeat_figures();
        let r = p.spread.as_ref();
        let goal = r.map(|r| r.goal()).unwrap_or_default();
        let cells = [
            p.key
                .load_bps
                .map(|r| crate::units::Rate(r).to_string())
                .unwrap_or_else(|| "max".into()),
            if p.transactions_per_s.is_some() {
                "–".into()
            } else {
                f(p.throughput_gbps, 3)
            },
            interval(r.map(|r| &r.throughput_gbps), &gbps, goal, 3)
                .unwrap_or_else(|| "one run".into()),
            f(p.transactions_per_s, 0),
            f(p.latency_p50_us, 1),
            f(p.latency_p99_us, 1),
            f(p.host_busy_pct, 2),
            f(p.normalized_pct_per_gbps, 3),
            interval(
                r.and_then(|r| r.normalized_pct_per_gbps.as_ref()),
                &norm,
                goal,
                3,
            )
            .unwrap_or_else(|| "–".into()),
            bound_cell(p),
            f(p.sd_host, 3),
            f(p.sd_send, 3),
            f(p.sd_recv, 3),
        ];
        let left = [0, 9];
        let tds: String = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if left.contains(&i) {
                    format!("<td class=\"l\">{c}</td>")
                } else {
                    format!("<td>{c}</td>")
                }
            })
            .collect();
        h += &format!("{lead}{tds}</tr>");
    }
    h + "</table>"
}

fn host_table(run: &RunRow) -> String {
    let mut h = String::from("<h2>Host</h2><table>");
    for (k, v) in run.host_facts.rows() {
        h += &format!(
            "<tr><th class=\"l\">{k}</th><td class=\"l\">{}</td></tr>",
            esc(&v)
        );
    }
    h + "</table>"
}

/// Offloads and MTU read back from the kernel, per datapath.
fn interfaces_table(ok: &[&PointRecord]) -> String {
    let mut h = String::from(
        "<h2>Interfaces read back from the kernel</h2><table><tr><th class=\"l\">datapath</th><th class=\"l\">interface</th><th>mtu</th>\
         <th class=\"l\">gro</th><th class=\"l\">tso</th><th class=\"l\">gso</th><th class=\"l\">qdisc</th></tr>",
    );
    let labels = Labeler::new(ok);
    let mut seen = std::collections::BTreeSet::new();
    for p in ok {
        let label = labels.label(p);
        let Some(lf) = &p.lab_facts else { continue };
        if !seen.insert(label.clone()) {
            continue;
        }
        let mut ifaces: Vec<&IfaceFacts> = lf.host_interfaces.iter().collect();
        for e in lf.endpoints.values() {
            ifaces.extend(e.interface.iter().chain(e.host_port.iter()));
        }
        let mut names = std::collections::BTreeSet::new();
        for i in ifaces.into_iter().filter(|i| names.insert(i.name.clone())) {
            let o = |k: &str| esc(i.offloads.get(k).map(String::as_str).unwrap_or("–"));
            h += &format!(
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                esc(&label),
                esc(&i.name),
                i.mtu,
                o("gro"),
                o("tso"),
                o("gso"),
                esc(i.qdisc.as_deref().unwrap_or("–"))
            );
        }
    }
    h + "</table>"
}
