//! One self-contained page per paper: its verdicts tallied and its claims first (each with its
//! note, whatever its verdict), then what stands for its configurations here, the figures, its
//! published numbers beside ours, and what was left out; and an index.

use super::claims::{Checked, Origin, Verdict};
use super::file::Paper;
use crate::records::{PointRecord, RunRow};
use crate::report::html::{esc, head, tail};

fn verdict_cell(v: Verdict) -> String {
    let class = match v {
        Verdict::Holds | Verdict::Stronger => "good",
        Verdict::DoesNotHold => "bad",
        Verdict::WithinSpread => "warn",
        Verdict::Tie | Verdict::NotMeasurable => "muted",
    };
    format!("<td class=\"l {class}\">{}</td>", v.text())
}

/// Verdicts tallied by whose claim each is: the paper's, derived from its figures, or beyond it.
fn tally(checked: &[Checked]) -> String {
    let mut h = String::from("<table><tr><th class=\"l\">claims</th>");
    for v in Verdict::ALL {
        h += &format!("<th>{}</th>", v.text());
    }
    h += "</tr>";
    for o in Origin::ALL {
        let of: Vec<&Checked> = checked.iter().filter(|c| c.origin == o).collect();
        if of.is_empty() {
            continue;
        }
        h += &format!("<tr><td class=\"l\">{} ({})</td>", origin_name(o), of.len());
        for v in Verdict::ALL {
            h += &format!("<td>{}</td>", of.iter().filter(|c| c.verdict == v).count());
        }
        h += "</tr>";
    }
    h + "</table>"
}

/// How a page names whose claim it is.
fn origin_name(o: Origin) -> &'static str {
    match o {
        Origin::Paper => "the paper's text",
        Origin::Derived => "derived from its figures",
        Origin::Beyond => "beyond the paper",
    }
}

/// "Note: …" after a claim's why, when it has one.
fn why_and_note(c: &Checked) -> String {
    let mut h = esc(&crate::text::capital(&c.why));
    if !c.note.is_empty() {
        let sep = if h.is_empty() { "" } else { "<br>" };
        h += &format!("{sep}<i>Note:</i> {}", esc(&crate::text::capital(&c.note)));
    }
    h
}

fn claims_table(checked: &[&Checked]) -> String {
    let mut h = String::from("<table><tr><th class=\"l\">claim</th><th class=\"l\">source</th><th class=\"l\">verdict</th><th class=\"l\">size</th><th class=\"l\">ours</th><th class=\"l\">the paper's</th><th class=\"l\">what ran here</th><th class=\"l\">why, and a note</th></tr>");
    for c in checked {
        let derived = if c.origin == Origin::Derived {
            " <span class=\"muted\">(derived: read from a figure the text does not discuss)</span>"
        } else {
            ""
        };
        h += &format!(
            "<tr><td class=\"l\">{}{derived}</td><td class=\"l\">{}</td>{}<td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&c.claim),
            esc(&c.source),
            verdict_cell(c.verdict),
            esc(&c.size.text()),
            esc(&c.ours),
            esc(&crate::text::capital(&c.paper)),
            esc(&crate::text::capital(&c.stand_in)),
            why_and_note(c)
        );
    }
    h + "</table>"
}

/// Each measured claim's series as bars: our side of every comparison, redrawn from this host.
fn claim_figures(checked: &[&Checked]) -> String {
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
        "<h1>{}</h1><p class=\"muted\">{}</p><p>{}</p>",
        esc(&p.title),
        esc(&p.citation),
        esc(&p.setup)
    );
    h += "<p>The paper's numbers were measured in 2008–2013 on other hardware: a reproduction shows the same shape (which datapath wins, by roughly how much), not the same absolute figures.</p>";
    let (paper_claims, beyond): (Vec<&Checked>, Vec<&Checked>) =
        checked.iter().partition(|c| c.origin != Origin::Beyond);
    h += "<h2>Verdicts</h2><p>A claim holds when its medians and its rounds (or the repeats' ranges) compare as it says by more than the effect floor; <i>stronger than the paper</i> when ours is past twice the paper's effect; a <i>tie</i> when one limit (the wire, the client) bound both sides; <i>within the spread</i> when the repeats cannot tell.</p>";
    h += &tally(checked);
    h += "<h2>The paper's claims</h2><p>Each as the paper states it (or, marked derived, as its figures print it), with the paper's size beside ours (ours from the medians, its range over the rounds or the repeats), what ran here in place of the paper's setup, and what makes it hard to read here.</p>";
    h += &claims_table(&paper_claims);
    if !beyond.is_empty() {
        h += "<h2>Beyond the paper: vnetlab's own claims</h2><p>The paper does not make these; they extend it on this host's datapaths.</p>";
        h += &claims_table(&beyond);
    }
    h += "<h2>The runs</h2>";
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
            esc(&crate::text::capital(&m.paper)),
            esc(&crate::text::capital(&m.ours))
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
    h += "<h2>Each claim's series, from this host</h2>";
    h += &claim_figures(&paper_claims);
    h += &claim_figures(&beyond);
    h += "<h2>The paper's numbers beside ours</h2>";
    h += &values_table(p, points);
    h += &list(
        "The paper's own slips",
        p.slips.iter().map(|s| {
            format!(
                "<b>{}</b>: {}",
                esc(&s.at),
                esc(&crate::text::capital(&s.text))
            )
        }),
    );
    h += &list(
        "Left out",
        p.left_out.iter().map(|l| {
            format!(
                "<b>{}</b>: {}",
                esc(&l.item),
                esc(&crate::text::capital(&l.why))
            )
        }),
    );
    h += &coverage(p, checked);
    h += &items_table(p);
    h + &tail()
}

/// Whether `source` cites `item` or one of its sub-figures.
fn cites_item(source: &str, item: &str) -> bool {
    super::cite::cites(source)
        .unwrap_or_default()
        .iter()
        .any(|c| c == item || c.split('(').next() == Some(item))
}

/// The coverage table: each of the paper's items a value, claim, figure or left-out entry cites,
/// with what covers it here — its claims with verdict and size, and how the setup differs — or
/// why it is left out.
fn coverage(p: &Paper, checked: &[Checked]) -> String {
    let mut h = String::from("<h2>Coverage: the paper's items and what reproduces them</h2><table><tr><th class=\"l\">the paper's item</th><th class=\"l\">claims here: verdict and size</th><th class=\"l\">figures and values</th><th class=\"l\">how the setup differs, or why it is left out</th></tr>");
    for i in &p.items {
        // A claim beyond the paper names the paper's nearest item without reproducing it.
        let claims: Vec<&Checked> = checked
            .iter()
            .filter(|c| c.origin != Origin::Beyond && cites_item(&c.source, &i.id))
            .collect();
        let figures: Vec<&str> = p
            .figures
            .iter()
            .filter(|f| cites_item(&f.source, &i.id) || cites_item(&f.title, &i.id))
            .map(|f| f.title.as_str())
            .collect();
        let values = p
            .values
            .iter()
            .filter(|v| cites_item(&v.source, &i.id))
            .count();
        let left: Vec<&str> = p
            .left_out
            .iter()
            .filter(|l| cites_item(&l.item, &i.id))
            .map(|l| l.why.as_str())
            .collect();
        if claims.is_empty() && figures.is_empty() && values == 0 && left.is_empty() {
            continue;
        }
        let claim_cell: Vec<String> = claims
            .iter()
            .map(|c| {
                format!(
                    "{} <b>{}</b> ({})",
                    esc(&c.claim),
                    c.verdict.text(),
                    esc(&c.size.text())
                )
            })
            .collect();
        let mut shown: Vec<String> = figures.iter().map(|f| esc(f)).collect();
        if values > 0 {
            shown.push(format!("{values} of its numbers beside ours"));
        }
        let mut differs: Vec<String> = Vec::new();
        for c in &claims {
            if !c.stand_in.is_empty() && !differs.contains(&esc(&c.stand_in)) {
                differs.push(esc(&c.stand_in));
            }
        }
        differs.extend(left.iter().map(|w| format!("left out: {}", esc(w))));
        h += &format!(
            "<tr><td class=\"l\"><b>{}</b> {}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&i.id),
            esc(&i.printed),
            claim_cell.join("<br>"),
            shown.join("<br>"),
            differs.join("<br>")
        );
    }
    h + "</table>"
}

/// A titled list (nothing when empty); items are HTML already.
fn list(title: &str, items: impl Iterator<Item = String>) -> String {
    let li: String = items.map(|i| format!("<li>{i}</li>")).collect();
    if li.is_empty() {
        return String::new();
    }
    format!("<h2>{}</h2><ul>{li}</ul>", esc(title))
}

/// The paper's figures, tables, sections and equations this page cites, as its text prints them.
fn items_table(p: &Paper) -> String {
    if p.items.is_empty() {
        return String::new();
    }
    let mut h = String::from("<h2>What this page cites</h2><table><tr><th class=\"l\">item</th><th class=\"l\">as the paper prints it</th><th>line of its text</th></tr>");
    for i in &p.items {
        h += &format!(
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td></tr>",
            esc(&i.id),
            esc(&i.printed),
            i.line
        );
    }
    h + "</table>"
}

/// The index linking every paper's page: every claim of every paper on one screen, its verdict
/// and size, and each paper's counts.
pub fn index(papers: &[(String, String, Vec<Checked>)]) -> String {
    let n = super::papers::count_word();
    let mut h = head(&format!("vnetlab: the {n} papers reproduced"));
    h += &format!("<h1>The {n} papers, reproduced on this host</h1>");
    for (id, title, checked) in papers {
        h += &format!("<h2><a href=\"{}.html\">{}</a></h2>", esc(id), esc(title));
        h += &tally(checked);
    }
    h += "<h2>Every claim</h2><table><tr><th class=\"l\">paper</th><th class=\"l\">claim</th><th class=\"l\">verdict</th><th class=\"l\">size</th></tr>";
    for (id, _, checked) in papers {
        for c in checked {
            let claim = match c.origin {
                Origin::Paper => c.claim.clone(),
                o => format!("{} ({})", c.claim, o.text()),
            };
            h += &format!(
                "<tr><td class=\"l\"><a href=\"{0}.html\">{0}</a></td><td class=\"l\">{1}</td>{2}<td class=\"l\">{3}</td></tr>",
                esc(id),
                esc(&claim),
                verdict_cell(c.verdict),
                esc(&c.size.text())
            );
        }
    }
    h + "</table>" + &tail()
}

/// The checked claims of one paper as text, for the terminal.
pub fn claims_text(title: &str, checked: &[Checked]) {
    crate::outln!("{title}");
    for c in checked {
        crate::outln!(
            "  [{}] {} ({}; {})",
            c.verdict.text(),
            c.claim,
            c.origin.text(),
            c.source
        );
        crate::outln!("      size: {}", c.size.text());
        crate::outln!("      ours: {}; the paper's: {}", c.ours, c.paper);
        crate::outln!("      here: {}", c.stand_in);
        if !c.why.is_empty() {
            crate::outln!("      why: {}", c.why);
        }
        if !c.note.is_empty() {
            crate::outln!("      note: {}", c.note);
        }
    }
}
