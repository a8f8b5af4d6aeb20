//! One self-contained page per paper: what stands for its configurations here, its claims with
//! their verdicts, its published numbers beside ours, and what was left out; and an index.

use super::claims::{Checked, Verdict};
use super::Paper;
use crate::records::{PointRecord, RunRow};
use crate::report::html::{esc, head, tail};

fn verdict_cell(v: Verdict) -> String {
    let class = match v {
        Verdict::Holds => "good",
        Verdict::DoesNotHold => "bad",
        Verdict::WithinSpread => "warn",
        Verdict::NotMeasurable => "muted",
    };
    format!("<td class=\"l {class}\">{}</td>", v.text())
}

fn claims_table(checked: &[Checked]) -> String {
    let mut h = String::from("<table><tr><th class=\"l\">claim</th><th class=\"l\">source</th><th class=\"l\">verdict</th><th class=\"l\">ours</th><th class=\"l\">the paper's</th><th class=\"l\">why</th></tr>");
    for c in checked {
        h += &format!(
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td>{}<td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&c.claim),
            esc(&c.source),
            verdict_cell(c.verdict),
            esc(&c.ours),
            esc(&c.paper),
            esc(&c.why)
        );
    }
    h + "</table>"
}

/// Each measured claim's series as bars: our side of every comparison, redrawn from this host.
fn claim_figures(checked: &[Checked]) -> String {
    let mut h = String::from("<div class=\"figs\">");
    for c in checked.iter().filter(|c| !c.figures.is_empty()) {
        let names: Vec<String> = c.figures.iter().map(|f| f.0.clone()).collect();
        let values: Vec<f64> = c.figures.iter().map(|f| f.1).collect();
        // The claim is a sentence: it goes in the caption, where it wraps, not in the chart's
        // one-line title, where it was clipped.
        match crate::report::charts::stacked_bars(
            &format!("this host: {}", c.verdict.text()),
            &c.unit,
            &names,
            &[("ours".into(), values)],
        ) {
            Ok(svg) => {
                h += &format!(
                    "<figure data-chart=\"{0}\">{svg}<figcaption>{0} ({1})</figcaption></figure>",
                    esc(&c.claim),
                    c.verdict.text()
                )
            }
            Err(e) => h += &format!("<p class=\"bad\">{}</p>", esc(&e.to_string())),
        }
    }
    h + "</div>"
}

fn values_table(p: &Paper, points: &[PointRecord]) -> String {
    let mut h = String::from("<table><tr><th class=\"l\">source</th><th class=\"l\">series</th><th class=\"l\">quantity</th><th>the paper's</th><th class=\"l\">unit</th><th>ours</th><th class=\"l\">our point</th></tr>");
    for v in &p.values {
        let ours = super::ours(v, points);
        h += &format!(
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            esc(&v.source),
            esc(&v.series),
            esc(&v.quantity),
            v.value,
            esc(&v.unit),
            match (ours, &v.ours) {
                (Some(x), _) => format!("{x:.3}"),
                (None, Some(_)) => "not measured".into(),
                (None, None) => "–".into(),
            },
            esc(&v.ours.as_ref().map(|s| s.name()).unwrap_or_default())
        );
    }
    h + "</table>"
}

/// The page of one paper, from its checked claims and its runs' points; each run is named with a
/// link to its full report (figures, every point, host facts).
pub fn render(
    p: &Paper,
    points: &[PointRecord],
    checked: &[Checked],
    runs: &[RunRow],
    guests: &super::Guests,
) -> String {
    let mut h = head(&format!("vnetlab reproduces {}", p.title));
    h += &format!(
        "<h1>{}</h1><p class=\"muted\">{}</p>",
        esc(&p.title),
        esc(&p.citation)
    );
    h += "<p>The paper's numbers were measured in 2008–2013 on other hardware: a reproduction shows the same shape (which datapath wins, by roughly how much), not the same absolute figures.</p>";
    for r in runs {
        h += &format!(
            "<p>Measured in run {} ({}, {} of {} points, started {}) on {} ({} cores, kernel {}); its full report with every figure and point: <a href=\"run-{}.html\">run-{}.html</a>.</p>",
            r.id,
            esc(&r.name),
            r.points,
            r.planned_points,
            esc(&r.started_at),
            esc(&r.host_facts.cpu_model),
            r.host_facts.cores,
            esc(&r.host_facts.kernel),
            r.id,
            r.id
        );
    }
    if runs.is_empty() {
        h += "<p>Not measured yet.</p>";
    }
    h += "<h2>What stands for the paper's configurations</h2><table><tr><th class=\"l\">the paper</th><th class=\"l\">here</th></tr>";
    for m in &p.mapping {
        h += &format!(
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&m.paper),
            esc(&m.ours)
        );
    }
    h += "</table>";
    h += &format!("<p>{}</p>", esc(&guests.text()));
    if !p.figures.is_empty() {
        h += "<h2>The paper's figures, redrawn from this host</h2><div class=\"figs\">";
        for f in &p.figures {
            h += &super::figures::render(f, points);
        }
        h += "</div>";
    }
    if let Some(t) = &p.plan {
        h += &super::table_v::render(t, points);
    }
    h += "<h2>Claims</h2>";
    h += &claims_table(checked);
    h += &claim_figures(checked);
    h += "<h2>The paper's numbers beside ours</h2>";
    h += &values_table(p, points);
    if !p.out_of_scope.is_empty() {
        h += "<h2>Left out</h2><ul>";
        for o in &p.out_of_scope {
            h += &format!("<li>{}</li>", esc(o));
        }
        h += "</ul>";
    }
    h + &tail()
}

/// The index linking every paper's page, with its verdict counts.
pub fn index(papers: &[(String, String, Vec<Checked>)]) -> String {
    let mut h = head("vnetlab: the four papers reproduced");
    h += "<h1>The four papers, reproduced on this host</h1><table><tr><th class=\"l\">paper</th><th>holds</th><th>does not hold</th><th>within the spread</th><th>not measurable</th></tr>";
    for (id, title, checked) in papers {
        let n = |v: Verdict| checked.iter().filter(|c| c.verdict == v).count();
        h += &format!(
            "<tr><td class=\"l\"><a href=\"{}.html\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(id),
            esc(title),
            n(Verdict::Holds),
            n(Verdict::DoesNotHold),
            n(Verdict::WithinSpread),
            n(Verdict::NotMeasurable)
        );
    }
    h + "</table>" + &tail()
}
