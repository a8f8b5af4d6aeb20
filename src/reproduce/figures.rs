//! A paper's figures as data and redrawn: each names the axis the paper drew (message size,
//! socket buffer, guests, interfering load, one bar per configuration, or time), the figure it
//! plots, its series (the paper's names, each with the points of ours that stand for it) and the
//! values the paper prints for them. Our bars carry the repeats' spread; the paper's values are
//! marked beside them, on our axis where the units agree, and where they do not, each side as a
//! ratio to its own first series.

use serde::{Deserialize, Serialize};

use super::claims::{Metric, Selector};
use super::error::Error;
use crate::experiment::file::{Interference, SockBuf};
use crate::records::PointRecord;
use crate::report::charts::{self, Bar, PaperChart};
use crate::report::html::esc;
use crate::units::parse_size;

/// What a figure's x axis is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    Message,
    Buffer,
    Guests,
    Interference,
    /// Paper 1's movie: the buffering time T_buffer, seconds.
    Buffering,
    /// One bar per series (a table's rows, a bar figure's bars).
    Series,
    /// The receiver's advertised window over the measured window (paper 2's Fig. 6).
    Time,
}

/// A value the paper prints for a series, at a place on the x axis (none on a `series` axis).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PaperPoint {
    #[serde(default)]
    pub x: String,
    pub y: f64,
}

/// One of the figure's series: the paper's name for it, the points of ours, the paper's values.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Series {
    pub name: String,
    pub ours: Selector,
    #[serde(default)]
    pub paper: Vec<PaperPoint>,
}

/// A figure of the paper, as written in its file.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    pub title: String,
    pub source: String,
    pub x: Axis,
    /// The figure drawn (none on a time axis: the window is).
    pub metric: Option<Metric>,
    #[serde(default, rename = "where")]
    pub common: Selector,
    pub series: Vec<Series>,
    /// The unit of the paper's values; a second axis when it is not ours.
    pub paper_unit: Option<String>,
    #[serde(default)]
    pub note: String,
}

impl Figure {
    pub fn check(&self) -> Result<(), Error> {
        let bad = |why: String| Err(Error::Input(format!("figure '{}': {why}", self.title)));
        if self.series.is_empty() || self.series.len() > 10 {
            return bad("give 1 to 10 series".into());
        }
        if (self.x == Axis::Time) == self.metric.is_some() {
            return bad("give a metric, except on a time axis".into());
        }
        self.common.check()?;
        for s in &self.series {
            s.ours.check()?;
            for p in &s.paper {
                if !p.y.is_finite() {
                    return bad(format!("{}: the paper's value must be a number", s.name));
                }
                if let Err(e) = self.place(&p.x) {
                    return bad(format!("{}: {e}", s.name));
                }
            }
            if !s.paper.is_empty() && self.paper_unit.is_none() {
                return bad("give paper_unit for the paper's values".into());
            }
        }
        Ok(())
    }

    /// Where a written x (`8K`, `cpu@host`, `4`) sits on this figure's axis: its order and label.
    fn place(&self, x: &str) -> Result<(u64, String), Error> {
        match self.x {
            Axis::Message => parse_size(x)
                .map(|b| (b as u64, size_label(b as u64)))
                .map_err(|e| Error::Input(e.to_string())),
            Axis::Buffer => x
                .parse::<SockBuf>()
                .map(|b| buffer_place(b.0.map(|v| v as u64)))
                .map_err(|e| Error::Input(e.to_string())),
            Axis::Guests => x
                .parse::<u32>()
                .map(|g| (u64::from(g), g.to_string()))
                .map_err(|_| Error::Input(format!("'{x}' is not a number of guests"))),
            Axis::Interference => x
                .parse::<Interference>()
                .map(|i| (0, i.to_string()))
                .map_err(|e| Error::Input(e.to_string())),
            Axis::Buffering => x
                .parse::<f64>()
                .ok()
                .filter(|t| t.is_finite() && *t > 0.0)
                .map(|t| (t as u64, format!("{t}")))
                .ok_or_else(|| Error::Input(format!("'{x}' is not a buffering time in seconds"))),
            Axis::Series | Axis::Time => Ok((0, String::new())),
        }
    }

    /// Where one of our points sits on the axis (`series` is the name on a series axis).
    fn place_of(&self, p: &PointRecord, series: &str) -> (u64, String) {
        let k = &p.key;
        match self.x {
            Axis::Message => (k.message_bytes, size_label(k.message_bytes)),
            Axis::Buffer => buffer_place(k.socket_buffer),
            Axis::Guests => (u64::from(k.guests), k.guests.to_string()),
            Axis::Interference => (0, k.interference.clone().unwrap_or("none".into())),
            Axis::Buffering => {
                p.result
                    .as_ref()
                    .and_then(|r| r.movie.as_ref())
                    .map_or((0, "?".into()), |m| {
                        (
                            m.movie.t_buffer_s.round() as u64,
                            format!("{}", m.movie.t_buffer_s.round()),
                        )
                    })
            }
            Axis::Series | Axis::Time => (0, series.to_string()),
        }
    }

    fn x_desc(&self) -> &'static str {
        match self.x {
            Axis::Message => "message size (bytes)",
            Axis::Buffer => "socket buffer (bytes)",
            Axis::Guests => "guests",
            Axis::Interference => "interfering load",
            Axis::Buffering => "T_buffer: the movie's buffering time (s)",
            Axis::Series => "",
            Axis::Time => "seconds",
        }
    }
}

fn buffer_place(b: Option<u64>) -> (u64, String) {
    match b {
        None => (u64::MAX, "default".into()),
        Some(v) => (v, size_label(v)),
    }
}

fn size_label(b: u64) -> String {
    if b >= 1024 && b.is_multiple_of(1024) {
        format!("{}K", b >> 10)
    } else {
        b.to_string()
    }
}

/// A figure's data: the categories along x and, per series, our bar and the paper's value in
/// each; and what could not be drawn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Drawn {
    pub categories: Vec<String>,
    pub ours: Vec<(String, Vec<Option<Bar>>)>,
    pub paper: Vec<Vec<Option<f64>>>,
    pub missing: Vec<String>,
}

/// Our bar of a point: the metric, with the least and greatest over its repeats where it has them.
fn bar(m: Metric, p: &PointRecord) -> Option<Bar> {
    let value = m.of(p)?;
    let each: Vec<f64> = p.repeats.iter().filter_map(|r| m.of_repeat(r)).collect();
    let low = each.iter().copied().fold(value, f64::min);
    let high = each.iter().copied().fold(value, f64::max);
    Some(Bar { value, low, high })
}

/// The figure's data from the run's points (never a time figure).
pub fn data(f: &Figure, points: &[PointRecord]) -> Drawn {
    let Some(metric) = f.metric else {
        return Drawn::default();
    };
    let mut places: Vec<(u64, String)> = Vec::new();
    let mut add = |pl: (u64, String)| {
        if !places.iter().any(|q| q.1 == pl.1) {
            places.push(pl);
        }
    };
    let mut found = Vec::new();
    for s in &f.series {
        let sel = s.ours.over(&f.common);
        // Each point's place is found once (on the buffering axis it reads the stored result).
        let mine: Vec<(&PointRecord, (u64, String))> = points
            .iter()
            .filter(|p| p.error.is_none() && sel.matches(p))
            .map(|p| (p, f.place_of(p, &s.name)))
            .collect();
        mine.iter().for_each(|(_, pl)| add(pl.clone()));
        if f.x == Axis::Series {
            add((0, s.name.clone()));
        } else {
            s.paper
                .iter()
                .filter_map(|p| f.place(&p.x).ok())
                .for_each(&mut add);
        }
        found.push((s, sel, mine));
    }
    places.sort_by_key(|p| p.0);
    let mut d = Drawn {
        categories: places.iter().map(|p| p.1.clone()).collect(),
        ..Drawn::default()
    };
    for (s, sel, mine) in found {
        let mut bars = Vec::new();
        for cat in &d.categories {
            let here: Vec<_> = mine
                .iter()
                .filter(|(_, pl)| pl.1 == *cat)
                .map(|(p, _)| *p)
                .collect();
            bars.push(match here.as_slice() {
                [p] => bar(metric, p),
                [] => None,
                many => {
                    d.missing.push(format!(
                        "{} points match {} at {cat}",
                        many.len(),
                        sel.name()
                    ));
                    None
                }
            });
        }
        if mine.is_empty() {
            d.missing.push(format!("{}: not measured", s.name));
        }
        let paper = d
            .categories
            .iter()
            .map(|cat| {
                s.paper
                    .iter()
                    .find(|p| {
                        f.x == Axis::Series || f.place(&p.x).ok().map(|q| q.1) == Some(cat.clone())
                    })
                    .filter(|_| f.x != Axis::Series || *cat == s.name)
                    .map(|p| p.y)
            })
            .collect();
        d.ours.push((s.name.clone(), bars));
        d.paper.push(paper);
    }
    d
}

/// A named line of (x, y) points.
type Line = (String, Vec<(f64, f64)>);

/// The receiver's advertised window of each series' one point, KB over seconds.
fn windows(f: &Figure, points: &[PointRecord]) -> (Vec<Line>, Vec<String>) {
    let (mut lines, mut missing) = (Vec::new(), Vec::new());
    for s in &f.series {
        let sel = s.ours.over(&f.common);
        let mine: Vec<_> = points
            .iter()
            .filter(|p| p.error.is_none() && sel.matches(p))
            .collect();
        let trace = match mine.as_slice() {
            [p] => p
                .result
                .as_ref()
                .map(|r| r.result.tcp_info.clone())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        if trace.is_empty() {
            missing.push(format!(
                "{}: no window trace ({} points match)",
                s.name,
                mine.len()
            ));
            continue;
        }
        let pts = trace
            .iter()
            .map(|t| (t.t, f64::from(t.rcv_wnd) / 1024.0))
            .collect();
        lines.push((s.name.clone(), pts));
    }
    (lines, missing)
}

/// The factor that puts a value in the paper's unit into ours, where the two measure the same
/// quantity (Mb/s and Gb/s; a buffer's packets and its segments); None where they do not.
fn same_quantity(theirs: &str, ours: &str) -> Option<f64> {
    match (theirs, ours) {
        ("Mb/s", "Gb/s") => Some(1e-3),
        ("packets per buffer", "segments per buffer") => Some(1.0),
        _ => None,
    }
}

/// Our bars and the paper's values as ratios to the first series, each side to its own, in each
/// category (or, one bar per category, to the first series' one bar).
fn as_ratios(d: Drawn, one_per_category: bool) -> Drawn {
    let reference = |row: Vec<Option<f64>>| -> Vec<Option<f64>> {
        let only = row.iter().flatten().next().copied();
        row.iter()
            .map(|v| if one_per_category { only } else { *v })
            .map(|v| v.filter(|x| *x > 0.0))
            .collect()
    };
    let ours_ref = d
        .ours
        .first()
        .map(|(_, bars)| reference(bars.iter().map(|b| b.map(|b| b.value)).collect()))
        .unwrap_or_default();
    let paper_ref = d.paper.first().cloned().map(reference).unwrap_or_default();
    let over = |v: f64, r: Option<&Option<f64>>| r.copied().flatten().map(|r| v / r);
    Drawn {
        ours: d
            .ours
            .into_iter()
            .map(|(name, bars)| {
                let each = bars.iter().enumerate().map(|(j, b)| {
                    let r = ours_ref.get(j);
                    b.and_then(|b| {
                        Some(Bar {
                            value: over(b.value, r)?,
                            low: over(b.low, r)?,
                            high: over(b.high, r)?,
                        })
                    })
                });
                (name, each.collect())
            })
            .collect(),
        paper: d
            .paper
            .iter()
            .map(|row| {
                let each = row.iter().enumerate();
                each.map(|(j, v)| v.and_then(|v| over(v, paper_ref.get(j))))
                    .collect()
            })
            .collect(),
        ..d
    }
}

/// The figure as a page's `<figure>`: the chart and a caption saying where the paper drew it,
/// what the marks are, and what was not measured.
pub fn render(f: &Figure, points: &[PointRecord]) -> String {
    let (mut ratios, mut whiskers) = (None, false);
    let (svg, missing) = if f.x == Axis::Time {
        let (lines, missing) = windows(f, points);
        (
            charts::trace(&f.title, "advertised window (KB)", &lines),
            missing,
        )
    } else {
        let mut d = data(f, points);
        let unit = f.metric.map(Metric::unit).unwrap_or_default();
        let mut y_desc = format!("{unit} (ours)");
        // Units that differ are not drawn side by side on two axes, whose heights a reader
        // would compare: each side becomes a ratio to its own first series, on one axis.
        let theirs = f.paper_unit.as_deref().filter(|u| *u != unit);
        if let Some(k) = theirs.and_then(|u| same_quantity(u, unit)) {
            for v in d.paper.iter_mut().flatten().flatten() {
                *v *= k;
            }
        } else if let Some(theirs) = theirs {
            let to = &f.series[0].name;
            d = as_ratios(d, f.x == Axis::Series);
            y_desc = format!("ratio to {to}");
            ratios = Some(format!(
                "The units differ (ours: {unit}; the paper's: {theirs}): each side is drawn as a ratio to its own {to}, on one axis. "
            ));
        }
        whiskers = d
            .ours
            .iter()
            .flat_map(|(_, bars)| bars.iter().flatten())
            .any(|b| b.high > b.low);
        let chart = PaperChart {
            title: &f.title,
            x_desc: f.x_desc(),
            y_desc: &y_desc,
            y2_desc: None,
            categories: &d.categories,
            one_per_category: f.x == Axis::Series,
            ours: &d.ours,
            paper: &d.paper,
        };
        (charts::paper_bars(&chart), d.missing)
    };
    let mut cap = format!("{}. ", esc(&f.source));
    if f.series.iter().any(|s| !s.paper.is_empty()) {
        cap += "Triangles: the paper's published values (measured 2008–2013 on other hardware). ";
    }
    if let Some(r) = ratios {
        cap += &esc(&r);
    }
    if whiskers {
        cap += "Whiskers: least and greatest over the repeats. ";
    }
    if !f.note.is_empty() {
        cap += &format!("{}. ", esc(&crate::text::capital(&f.note)));
    }
    if !missing.is_empty() {
        cap += &format!(
            "<span class=\"muted\">Not measured here: {}.</span>",
            esc(&missing.join("; "))
        );
    }
    match svg {
        Ok(svg) => format!(
            "<figure data-chart=\"{}\">{svg}<figcaption>{cap}</figcaption></figure>",
            esc(&f.title)
        ),
        Err(e) => format!("<p class=\"bad\">{}</p>", esc(&e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::PointKey;
    use crate::vocab::Mode;

    fn point(mode: Mode, msg: u64, gbps: f64) -> PointRecord {
        PointRecord {
            key: PointKey {
                mode,
                message_bytes: msg,
                ..PointKey::default()
            },
            throughput_gbps: Some(gbps),
            ..PointRecord::default()
        }
    }

    fn fig(x: Axis) -> Figure {
        let text = format!(
            "title = \"Fig. 4(a)\"\nsource = \"Fig. 4(a)\"\nx = \"{}\"\nmetric = \"throughput_gbps\"\npaper_unit = \"Gb/s\"\n[[series]]\nname = \"SRIOV\"\nours = {{ mode = \"macvlan\" }}\npaper = [{{ x = \"64K\", y = 5.12 }}]\n[[series]]\nname = \"Bridge\"\nours = {{ mode = \"emulated\" }}\n",
            if x == Axis::Message { "message" } else { "series" }
        );
        let f: Figure = toml::from_str(&text).unwrap();
        f.check().unwrap();
        f
    }

    #[test]
    fn a_figure_lines_up_our_points_and_the_papers_values_by_message() {
        let f = fig(Axis::Message);
        let pts = [
            point(Mode::Macvlan, 8192, 9.0),
            point(Mode::Emulated, 8192, 1.0),
            point(Mode::Emulated, 65536, 1.2),
        ];
        let d = data(&f, &pts);
        assert_eq!(d.categories, ["8K", "64K"]);
        assert_eq!(d.ours[0].1[0].unwrap().value, 9.0);
        assert_eq!(d.ours[0].1[1], None);
        assert_eq!(d.paper[0], [None, Some(5.12)]);
        assert_eq!(d.paper[1], [None, None]);
        assert!(d.missing.is_empty());
        // Two points in one place are reported, not guessed between.
        let twice = [
            point(Mode::Macvlan, 8192, 9.0),
            point(Mode::Macvlan, 8192, 8.0),
        ];
        let d = data(&f, &twice);
        assert!(
            d.missing.iter().any(|m| m.contains("2 points match")),
            "{:?}",
            d.missing
        );
        assert!(d.missing.iter().any(|m| m.contains("Bridge: not measured")));
    }

    #[test]
    fn a_series_axis_has_a_bar_per_series_and_a_page_renders_with_nothing_measured() {
        let mut f = fig(Axis::Series);
        f.series[0].paper[0].x.clear();
        let d = data(&f, &[point(Mode::Emulated, 8192, 1.0)]);
        assert_eq!(d.categories, ["SRIOV", "Bridge"]);
        assert_eq!(d.paper[0], [Some(5.12), None]);
        assert_eq!(
            d.ours[1].1,
            [
                None,
                Some(Bar {
                    value: 1.0,
                    low: 1.0,
                    high: 1.0
                })
            ]
        );
        let html = render(&f, &[]);
        assert!(html.contains("<svg") && html.contains("Not measured here"));
    }

    #[test]
    fn bad_figures_are_refused() {
        let mut f = fig(Axis::Message);
        f.series[0].paper[0].x = "huge".into();
        assert!(f.check().is_err());
        let mut f = fig(Axis::Message);
        f.metric = None;
        assert!(f.check().unwrap_err().to_string().contains("metric"));
        let mut f = fig(Axis::Message);
        f.paper_unit = None;
        assert!(f.check().unwrap_err().to_string().contains("paper_unit"));
    }

    #[test]
    fn units_that_differ_draw_each_side_as_a_ratio_to_its_first_series_on_one_axis() {
        let bar = |v: f64| {
            Some(Bar {
                value: v,
                low: v * 0.5,
                high: v * 2.0,
            })
        };
        let d = Drawn {
            categories: vec!["8K".into(), "64K".into()],
            ours: vec![
                ("SRIOV".into(), vec![bar(2.0), None]),
                ("Bridge".into(), vec![bar(6.0), bar(3.0)]),
            ],
            paper: vec![vec![Some(0.5), None], vec![Some(2.0), Some(1.0)]],
            missing: vec![],
        };
        let r = as_ratios(d.clone(), false);
        assert_eq!(
            r.ours[1].1[0],
            Some(Bar {
                value: 3.0,
                low: 1.5,
                high: 6.0
            })
        );
        assert_eq!(r.paper[1][0], Some(4.0));
        // No reference in a category: nothing drawn there rather than a ratio to nothing.
        assert_eq!((r.ours[1].1[1], r.paper[1][1]), (None, None));
        // One bar per category: every bar against the first series' one bar.
        let r = as_ratios(d, true);
        assert_eq!(r.ours[1].1[1].map(|b| b.value), Some(1.5));
        // The page says so, and draws no second axis.
        let mut f = fig(Axis::Message);
        f.paper_unit = Some("% of 16 cores".into());
        let html = render(
            &f,
            &[
                point(Mode::Macvlan, 8192, 9.0),
                point(Mode::Emulated, 8192, 3.0),
            ],
        );
        assert!(
            html.contains("each side is drawn as a ratio to its own SRIOV"),
            "{html}"
        );
        assert!(!html.contains("right axis") && !html.contains("Whiskers"));
        // Mb/s is our Gb/s by a thousand: the paper's values join our axis.
        assert_eq!(same_quantity("Mb/s", "Gb/s"), Some(1e-3));
        assert_eq!(
            same_quantity("clock cycles (Xenoprof)", "% host CPU per Gb/s"),
            None
        );
    }
}
