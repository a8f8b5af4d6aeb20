//! Charts as SVG strings, drawn with plotters: line charts of a figure against message size (one
//! line per datapath), stacked bars (CPU parts per datapath, latency percentiles), a paper's
//! figure redrawn as bars with the paper's values beside them, and traces over time.

use super::error::Error;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

const W: u32 = 560;
const H: u32 = 340;

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if v <= m * p {
            return m * p;
        }
    }
    10.0 * p
}

fn size_label(x: &f64) -> String {
    let b = x.round() as u64;
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{}M", b >> 20)
    } else if b >= 1024 && b.is_multiple_of(1024) {
        format!("{}K", b >> 10)
    } else {
        b.to_string()
    }
}

/// Every chart's frame: its caption (at `size` points), margin and label areas.
fn frame<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, plotters::coord::Shift>,
    title: &'b str,
    size: u32,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, ("sans-serif", size))
        .margin(12)
        .x_label_area_size(38)
        .y_label_area_size(56);
    b
}

/// Draws a chart's legend at `pos` on a translucent white box.
fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    c: &mut ChartContext<'a, DB, CT>,
    pos: SeriesLabelPosition,
) -> Result<(), Error> {
    c.configure_series_labels()
        .position(pos)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .draw()
        .map_err(|x| Error::Failed(x.to_string()))
}

/// A point on a chart: its value, the least and greatest over its repeats (drawn as a whisker)
/// and what hovering it says (its exact value and conditions).
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    pub x: f64,
    pub y: f64,
    pub low: f64,
    pub high: f64,
    pub tip: String,
}

/// How a key entry shows its series.
#[derive(Clone, Copy)]
enum Swatch {
    Line,
    Block,
}

const KEY_ROW: i32 = 18;

/// Where each key entry sits under a chart `width` wide, and the key's height: entries left to
/// right, wrapping to a new row.
fn key_layout(names: &[String], width: u32) -> (Vec<(i32, i32)>, u32) {
    let (mut x, mut y) = (56, 6);
    let mut at = Vec::new();
    for n in names {
        let w = 30 + 7 * n.chars().count() as i32;
        if x + w > width as i32 - 8 && x > 56 {
            (x, y) = (56, y + KEY_ROW);
        }
        at.push((x, y));
        x += w + 12;
    }
    let h = if names.is_empty() { 0 } else { y + KEY_ROW + 4 };
    (at, h as u32)
}

/// Draws a chart's key in its own area under the plot, so it never covers the data.
fn draw_key<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    entries: &[(String, RGBColor, Swatch)],
    at: &[(i32, i32)],
) -> Result<(), Error> {
    let fail = |x: DrawingAreaErrorKind<DB::ErrorType>| Error::Failed(x.to_string());
    for ((name, color, swatch), &(x, y)) in entries.iter().zip(at) {
        let mid = y + KEY_ROW / 2;
        match swatch {
            Swatch::Line => area.draw(&PathElement::new(
                vec![(x, mid), (x + 18, mid)],
                color.stroke_width(2),
            )),
            Swatch::Block => area.draw(&Rectangle::new(
                [(x + 3, mid - 5), (x + 15, mid + 5)],
                color.filled(),
            )),
        }
        .map_err(fail)?;
        area.draw(&Text::new(
            name.clone(),
            (x + 24, mid - 7),
            ("sans-serif", 12).into_font(),
        ))
        .map_err(fail)?;
    }
    Ok(())
}

/// Hover targets over a drawn SVG: an invisible circle at each pixel with its `<title>`, which a
/// browser shows as a tooltip.
fn with_tips(svg: String, tips: &[((i32, i32), String)]) -> String {
    let Some(end) = svg.rfind("</svg>") else {
        return svg;
    };
    let mut out = String::with_capacity(svg.len() + tips.len() * 96);
    out.push_str(&svg[..end]);
    for ((x, y), tip) in tips {
        out.push_str(&format!(
            "<circle cx=\"{x}\" cy=\"{y}\" r=\"7\" fill=\"#000\" fill-opacity=\"0\"><title>{}</title></circle>\n",
            crate::text::esc(tip)
        ));
    }
    out.push_str(&svg[end..]);
    out
}

/// One figure against message size (log scale), one line per series, each point with its
/// repeats' whisker and a hover tip; the key under the plot.
pub fn lines(title: &str, y_desc: &str, series: &[(String, Vec<Mark>)]) -> Result<String, Error> {
    let e = |e: &dyn std::fmt::Display| Error::Failed(format!("chart '{title}': {e}"));
    let marks = || series.iter().flat_map(|(_, v)| v.iter());
    let (xmin, xmax) = marks().fold((f64::MAX, f64::MIN), |(a, b), m| (a.min(m.x), b.max(m.x)));
    let (xmin, xmax) = if xmin > xmax {
        (1.0, 2.0)
    } else if xmin == xmax {
        (xmin / 2.0, xmax * 2.0)
    } else {
        (xmin / 1.3, xmax * 1.3)
    };
    let ymax = nice_max(finite_max(marks().map(|m| m.high.max(m.y))) * 1.05);
    let names: Vec<String> = series.iter().map(|(n, _)| n.clone()).collect();
    let (at, key_h) = key_layout(&names, W);
    let mut tips = Vec::new();
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (W, H + key_h)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let (plot, keys) = root.split_vertically(H);
        let mut c = frame(&plot, title, 17)
            .build_cartesian_2d((xmin.max(0.5)..xmax).log_scale().base(2.0), 0f64..ymax)
            .map_err(|x| e(&x))?;
        c.configure_mesh()
            .x_desc("message size (bytes)")
            .y_desc(y_desc)
            .x_label_formatter(&size_label)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|x| e(&x))?;
        let mut entries = Vec::new();
        for (i, (name, v)) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let v: Vec<&Mark> = v.iter().filter(|m| m.y.is_finite()).collect();
            c.draw_series(LineSeries::new(
                v.iter().map(|m| (m.x, m.y)),
                color.stroke_width(2),
            ))
            .map_err(|x| e(&x))?;
            c.draw_series(v.iter().map(|m| {
                PathElement::new(vec![(m.x, m.low), (m.x, m.high)], color.stroke_width(1))
            }))
            .map_err(|x| e(&x))?;
            c.draw_series(v.iter().map(|m| Circle::new((m.x, m.y), 3, color.filled())))
                .map_err(|x| e(&x))?;
            tips.extend(
                v.iter()
                    .map(|m| (c.backend_coord(&(m.x, m.y)), m.tip.clone())),
            );
            entries.push((name.clone(), color, Swatch::Line));
        }
        draw_key(&keys, &entries, &at)?;
        root.present().map_err(|x| e(&x))?;
    }
    Ok(with_tips(s, &tips))
}

/// One bar per category (an axis with one value: one bar per datapath), each with its repeats'
/// whisker and a hover tip.
pub fn bars(title: &str, y_desc: &str, bars: &[(String, Mark)]) -> Result<String, Error> {
    let e = |x: &dyn std::fmt::Display| Error::Failed(format!("chart '{title}': {x}"));
    let n = bars.len().max(1);
    let ymax = nice_max(finite_max(bars.iter().map(|(_, m)| m.high.max(m.y))) * 1.05);
    let mut tips = Vec::new();
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut c = frame(&root, title, 17)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..ymax)
            .map_err(|x| e(&x))?;
        let cats: Vec<String> = bars.iter().map(|(l, _)| l.clone()).collect();
        category_mesh(&mut c, cats, None, y_desc).map_err(|x| e(&x))?;
        for (i, (_, m)) in bars.iter().enumerate() {
            let (x, color) = (i as f64, PALETTE[i % PALETTE.len()]);
            c.draw_series([Rectangle::new(
                [(x - 0.32, 0.0), (x + 0.32, m.y)],
                color.filled(),
            )])
            .map_err(|x| e(&x))?;
            c.draw_series([
                PathElement::new(vec![(x, m.low), (x, m.high)], BLACK.stroke_width(1)),
                PathElement::new(
                    vec![(x - 0.08, m.low), (x + 0.08, m.low)],
                    BLACK.stroke_width(1),
                ),
                PathElement::new(
                    vec![(x - 0.08, m.high), (x + 0.08, m.high)],
                    BLACK.stroke_width(1),
                ),
            ])
            .map_err(|x| e(&x))?;
            tips.push((c.backend_coord(&(x, m.y)), m.tip.clone()));
        }
        root.present().map_err(|x| e(&x))?;
    }
    Ok(with_tips(s, &tips))
}

/// The label of the category at `x` on a bar chart's axis (none between categories).
fn category(cats: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 {
        cats.get(i as usize).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

/// The mesh of a bar chart whose x axis names `cats`, one at each whole x, with `y_desc` (and
/// `x_desc`, where the axis has a name of its own).
fn category_mesh<DB: DrawingBackend>(
    c: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    cats: Vec<String>,
    x_desc: Option<&str>,
    y_desc: &str,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (n, label) = (cats.len().max(1), move |x: &f64| category(&cats, *x));
    let mut mesh = c.configure_mesh();
    mesh.disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&label)
        .y_desc(y_desc)
        .light_line_style(RGBColor(235, 235, 235));
    if let Some(d) = x_desc {
        mesh.x_desc(d);
    }
    mesh.draw()
}

/// Stacked bars: one bar per category, one colour per stack (e.g. CPU part).
pub fn stacked_bars(
    title: &str,
    y_desc: &str,
    categories: &[String],
    stacks: &[(String, Vec<f64>)],
) -> Result<String, Error> {
    let e = |e: &dyn std::fmt::Display| Error::Failed(format!("chart '{title}': {e}"));
    let n = categories.len().max(1);
    let totals: Vec<f64> = (0..n)
        .map(|i| {
            stacks
                .iter()
                .map(|(_, v)| v.get(i).copied().unwrap_or(0.0).max(0.0))
                .sum()
        })
        .collect();
    let ymax = nice_max(totals.iter().cloned().fold(0.0, f64::max) * 1.05);
    let names: Vec<String> = stacks.iter().map(|(n, _)| n.clone()).collect();
    let (at, key_h) = key_layout(&names, W);
    let mut tips = Vec::new();
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (W, H + key_h)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let (plot, keys) = root.split_vertically(H);
        let mut c = frame(&plot, title, 17)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..ymax)
            .map_err(|x| e(&x))?;
        category_mesh(&mut c, categories.to_vec(), None, y_desc).map_err(|x| e(&x))?;
        let mut base = vec![0.0; n];
        let mut entries = Vec::new();
        for (k, (name, vals)) in stacks.iter().enumerate() {
            let color = PALETTE[k % PALETTE.len()];
            let mut rects = Vec::new();
            for (i, below) in base.iter_mut().enumerate() {
                let v = vals.get(i).copied().unwrap_or(0.0).max(0.0);
                let (x, y) = (i as f64, *below);
                rects.push(Rectangle::new(
                    [(x - 0.32, y), (x + 0.32, y + v)],
                    color.filled(),
                ));
                if v > 0.0 {
                    let cat = categories.get(i).map(String::as_str).unwrap_or("");
                    tips.push((
                        c.backend_coord(&(x, y + v / 2.0)),
                        format!("{cat}: {name} {v:.3} {y_desc}"),
                    ));
                }
                *below += v;
            }
            c.draw_series(rects).map_err(|x| e(&x))?;
            entries.push((name.clone(), color, Swatch::Block));
        }
        draw_key(&keys, &entries, &at)?;
        root.present().map_err(|x| e(&x))?;
    }
    Ok(with_tips(s, &tips))
}

/// One bar of ours: the median over the repeats and their least and greatest.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bar {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// A paper's figure redrawn: in each category one bar per series (ours, with the repeats' spread
/// as a whisker), and the paper's published value of that series as a black triangle over it, on
/// a right-hand axis of its own when the paper's unit differs from ours.
pub struct PaperChart<'a> {
    pub title: &'a str,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    /// The paper's axis; None when its values share ours.
    pub y2_desc: Option<&'a str>,
    pub categories: &'a [String],
    /// Each category belongs to one series (a bar per configuration): bars sit centred.
    pub one_per_category: bool,
    /// Per series: its name and its bar in each category.
    pub ours: &'a [(String, Vec<Option<Bar>>)],
    /// Per series (as `ours`): the paper's value in each category.
    pub paper: &'a [Vec<Option<f64>>],
}

fn finite_max(v: impl Iterator<Item = f64>) -> f64 {
    v.filter(|x| x.is_finite()).fold(0.0, f64::max)
}

/// Where series `i` of `k` sits in category `j`, and half a bar's width.
fn slot(j: usize, i: usize, k: usize) -> (f64, f64) {
    let w = 0.8 / k.max(1) as f64;
    (j as f64 - 0.4 + (i as f64 + 0.5) * w, w * 0.42)
}

/// A paper's bar figure with ours beside the paper's values, one group per category.
// Long on purpose: the chart's drawing calls in the order they paint (axes, bars, marks, legend).
pub fn paper_bars(f: &PaperChart) -> Result<String, Error> {
    let e = |x: &dyn std::fmt::Display| Error::Failed(format!("chart '{}': {x}", f.title));
    let n = f.categories.len().max(1);
    let k = f.ours.len();
    let at = |j: usize, i: usize| match f.one_per_category {
        true => slot(j, 0, 1),
        false => slot(j, i, k),
    };
    let bars = f.ours.iter().flat_map(|(_, v)| v.iter().flatten());
    let paper = f.paper.iter().flat_map(|v| v.iter().flatten().copied());
    // Without the paper's values there is nothing to tell ours from.
    let has_paper = paper.clone().next().is_some();
    let ours_max = finite_max(bars.map(|b| b.high.max(b.value)));
    let (ymax, y2max) = match f.y2_desc {
        Some(_) => (nice_max(ours_max * 1.7), nice_max(finite_max(paper) * 1.7)),
        None => {
            let m = nice_max(ours_max.max(finite_max(paper)) * 1.7);
            (m, m)
        }
    };
    let xr = -0.5f64..(n as f64 - 0.5);
    // Wide enough that each category's label (about 7 px a character) fits under its bars.
    let longest = f
        .categories
        .iter()
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let per = 140.max(8 * longest + 24);
    let width = W.max(per * n as u32 + 150).min(1600);
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (width, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut c = frame(&root, f.title, 15)
            .right_y_label_area_size(if f.y2_desc.is_some() { 56 } else { 0 })
            .build_cartesian_2d(xr.clone(), 0f64..ymax)
            .map_err(|x| e(&x))?
            .set_secondary_coord(xr, 0f64..y2max);
        category_mesh(&mut c, f.categories.to_vec(), Some(f.x_desc), f.y_desc)
            .map_err(|x| e(&x))?;
        if let Some(d) = f.y2_desc {
            c.configure_secondary_axes()
                .y_desc(d)
                .draw()
                .map_err(|x| e(&x))?;
        }
        for (i, (name, vals)) in f.ours.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let cells: Vec<(usize, Bar)> = vals
                .iter()
                .enumerate()
                .filter_map(|(j, b)| b.filter(|b| b.value.is_finite()).map(|b| (j, b)))
                .collect();
            c.draw_series(cells.iter().map(|&(j, b)| {
                let (x, h) = at(j, i);
                Rectangle::new([(x - h, 0.0), (x + h, b.value)], color.filled())
            }))
            .map_err(|x| e(&x))?
            .label(if has_paper {
                format!("{name} (ours)")
            } else {
                name.clone()
            })
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
            c.draw_series(cells.iter().filter(|(_, b)| b.high > b.low).map(|&(j, b)| {
                let (x, h) = at(j, i);
                let (l, r) = (x - h / 2.0, x + h / 2.0);
                PathElement::new(
                    vec![
                        (l, b.low),
                        (r, b.low),
                        (x, b.low),
                        (x, b.high),
                        (l, b.high),
                        (r, b.high),
                    ],
                    BLACK.stroke_width(1),
                )
            }))
            .map_err(|x| e(&x))?;
        }
        let marks: Vec<(f64, f64)> = f
            .paper
            .iter()
            .enumerate()
            .flat_map(|(i, v)| {
                v.iter()
                    .enumerate()
                    .filter_map(move |(j, y)| y.map(|y| (at(j, i).0, y)))
            })
            .filter(|p| p.1.is_finite())
            .collect();
        if !marks.is_empty() {
            c.draw_secondary_series(
                marks
                    .iter()
                    .map(|&p| TriangleMarker::new(p, 6, BLACK.filled())),
            )
            .map_err(|x| e(&x))?
            .label(match f.y2_desc {
                Some(_) => "the paper's (right axis)",
                None => "the paper's",
            })
            .legend(|(x, y)| TriangleMarker::new((x + 6, y), 6, BLACK.filled()));
        }
        legend(&mut c, SeriesLabelPosition::UpperRight).map_err(|x| e(&x))?;
        root.present().map_err(|x| e(&x))?;
    }
    Ok(s)
}

/// Figures over time on linear axes, one line per series (a window trace).
pub fn trace(
    title: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<String, Error> {
    let e = |x: &dyn std::fmt::Display| Error::Failed(format!("chart '{title}': {x}"));
    let pts = series.iter().flat_map(|(_, v)| v.iter());
    let xmax = nice_max(finite_max(pts.clone().map(|p| p.0)));
    let ymax = nice_max(finite_max(pts.map(|p| p.1)) * 1.1);
    let names: Vec<String> = series.iter().map(|(n, _)| n.clone()).collect();
    let (at, key_h) = key_layout(&names, W);
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (W, H + key_h)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let (plot, keys) = root.split_vertically(H);
        let mut c = frame(&plot, title, 15)
            .build_cartesian_2d(0f64..xmax, 0f64..ymax)
            .map_err(|x| e(&x))?;
        c.configure_mesh()
            .x_desc("seconds into the measured window")
            .y_desc(y_desc)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|x| e(&x))?;
        let mut entries = Vec::new();
        for (i, (name, v)) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let v: Vec<(f64, f64)> = v.iter().copied().filter(|p| p.0 >= 0.0).collect();
            c.draw_series(LineSeries::new(v, color.stroke_width(2)))
                .map_err(|x| e(&x))?;
            entries.push((name.clone(), color, Swatch::Line));
        }
        draw_key(&keys, &entries, &at)?;
        root.present().map_err(|x| e(&x))?;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg_with_their_series() {
        let m = |x: f64, y: f64| Mark {
            x,
            y,
            low: y * 0.9,
            high: y * 1.1,
            tip: format!("{x} B: {y} Gb/s"),
        };
        let s = lines(
            "Bandwidth",
            "Gb/s",
            &[
                ("bridge".into(), vec![m(64.0, 0.5), m(65536.0, 9.0)]),
                ("nat".into(), vec![m(64.0, 0.4)]),
            ],
        )
        .unwrap();
        // Each point hovers its exact value; the key sits under the plot.
        assert!(s.contains("<title>65536 B: 9 Gb/s</title>"), "{s}");
        let one = bars("CPU per Gb/s", "%", &[("bridge".into(), m(8192.0, 44.0))]).unwrap();
        assert!(one.contains("<rect") && one.contains("<title>8192 B: 44 Gb/s</title>"));
        assert!(
            s.starts_with("<svg")
                && s.contains("bridge")
                && s.contains("nat")
                && s.contains("<polyline")
        );
        assert!(s.contains(">64K<") || s.contains("64K"));
        let b = stacked_bars(
            "CPU",
            "%",
            &["bridge".into(), "nat".into()],
            &[
                ("g1".into(), vec![10.0, 12.0]),
                ("kernel".into(), vec![5.0, 6.0]),
            ],
        )
        .unwrap();
        assert!(b.contains("<rect") && b.contains("kernel"));
        assert_eq!(nice_max(7.3), 8.0);
        assert_eq!(size_label(&1024.0), "1K");
    }

    #[test]
    fn a_paper_chart_draws_our_bars_and_the_papers_marks_on_its_own_axis() {
        let bar = |v: f64| {
            Some(Bar {
                value: v,
                low: v * 0.9,
                high: v * 1.1,
            })
        };
        let cats = vec!["256".to_string(), "8K".to_string()];
        let ours = vec![
            ("SRIOV".to_string(), vec![bar(3.0), bar(9.0)]),
            ("Bridge".to_string(), vec![None, bar(1.0)]),
        ];
        let paper = vec![vec![None, Some(5.12)], vec![None, Some(2.0)]];
        let f = PaperChart {
            title: "Fig. 4(a)",
            x_desc: "message",
            y_desc: "Gb/s (ours)",
            y2_desc: Some("Mb/s (the paper's)"),
            categories: &cats,
            one_per_category: false,
            ours: &ours,
            paper: &paper,
        };
        let s = paper_bars(&f).unwrap();
        assert!(s.contains("SRIOV (ours)") && s.contains("the paper&apos;s (right axis)"));
        assert!(s.contains("Mb/s (the paper&apos;s)") && s.contains("<rect"));
        // Without the paper's values there is no mark and no second axis.
        let none = vec![vec![None, None], vec![None, None]];
        let s = paper_bars(&PaperChart {
            y2_desc: None,
            paper: &none,
            ..f
        })
        .unwrap();
        assert!(!s.contains("the paper&apos;s"));
        let t = trace(
            "window",
            "KB",
            &[("guest0".into(), vec![(0.0, 10.0), (1.0, 64.0)])],
        )
        .unwrap();
        assert!(t.contains("guest0") && t.contains("<polyline"));
    }

    #[test]
    fn the_key_wraps_under_the_plot() {
        let short: Vec<String> = vec!["a".into(), "b".into()];
        let (at, h) = key_layout(&short, W);
        assert_eq!(at[0].1, at[1].1, "two short entries share a row");
        assert!(h > 0 && h < 40);
        let long: Vec<String> = (0..12)
            .map(|i| format!("bridge guests {i} at 300M"))
            .collect();
        let (at, h2) = key_layout(&long, W);
        assert!(
            at.iter().all(|&(x, _)| x < W as i32),
            "every entry starts inside the chart"
        );
        assert!(
            h2 > h && at.last().unwrap().1 > at[0].1,
            "many entries wrap to rows"
        );
        assert_eq!(key_layout(&[], W).1, 0);
    }
}
