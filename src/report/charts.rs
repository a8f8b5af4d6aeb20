//! Charts as SVG strings, drawn with plotters: line charts of a figure against message size (one
//! line per datapath) and stacked bars (CPU parts per datapath, latency percentiles).

use super::Error;
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

/// One figure against message size (log scale), one line per series.
pub fn lines(
    title: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<String, Error> {
    let e = |e: &dyn std::fmt::Display| Error::Failed(format!("chart '{title}': {e}"));
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.0))
        .collect();
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.1))
        .filter(|y| y.is_finite())
        .collect();
    let (xmin, xmax) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let (xmin, xmax) = if xs.is_empty() {
        (1.0, 2.0)
    } else if xmin == xmax {
        (xmin / 2.0, xmax * 2.0)
    } else {
        (xmin / 1.3, xmax * 1.3)
    };
    let ymax = nice_max(ys.iter().cloned().fold(0.0, f64::max) * 1.05);
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut c = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(38)
            .y_label_area_size(56)
            .build_cartesian_2d((xmin.max(0.5)..xmax).log_scale().base(2.0), 0f64..ymax)
            .map_err(|x| e(&x))?;
        c.configure_mesh()
            .x_desc("message size (bytes)")
            .y_desc(y_desc)
            .x_label_formatter(&size_label)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|x| e(&x))?;
        for (i, (name, pts)) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let pts: Vec<(f64, f64)> = pts.iter().copied().filter(|p| p.1.is_finite()).collect();
            c.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(|x| e(&x))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            c.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(|x| e(&x))?;
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .draw()
            .map_err(|x| e(&x))?;
        root.present().map_err(|x| e(&x))?;
    }
    Ok(s)
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
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut c = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(38)
            .y_label_area_size(56)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..ymax)
            .map_err(|x| e(&x))?;
        let cats = categories.to_vec();
        c.configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&move |x: &f64| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    cats.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(y_desc)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|x| e(&x))?;
        let mut base = vec![0.0; n];
        for (k, (name, vals)) in stacks.iter().enumerate() {
            let color = PALETTE[k % PALETTE.len()];
            let rects: Vec<Rectangle<(f64, f64)>> = (0..n)
                .map(|i| {
                    let v = vals.get(i).copied().unwrap_or(0.0).max(0.0);
                    let r = Rectangle::new(
                        [(i as f64 - 0.32, base[i]), (i as f64 + 0.32, base[i] + v)],
                        color.filled(),
                    );
                    base[i] += v;
                    r
                })
                .collect();
            c.draw_series(rects)
                .map_err(|x| e(&x))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .draw()
            .map_err(|x| e(&x))?;
        root.present().map_err(|x| e(&x))?;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg_with_their_series() {
        let s = lines(
            "Bandwidth",
            "Gb/s",
            &[
                ("bridge".into(), vec![(64.0, 0.5), (65536.0, 9.0)]),
                ("nat".into(), vec![(64.0, 0.4)]),
            ],
        )
        .unwrap();
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
}
