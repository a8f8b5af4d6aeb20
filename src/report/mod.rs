//! Reports: one self-contained HTML page per run (paper 1's panels, latency, CPU parts, every
//! point with its spread, host facts), CLI tables, CSV export and run comparison. Reads only the
//! store's plain records.

pub mod charts;
pub mod compare;
pub mod html;
pub mod table;

use crate::store::PointRecord;

type Axis = (&'static str, fn(&PointRecord) -> String);

/// The axes besides message size that can tell two points' datapaths apart.
const AXES: [Axis; 11] = [
    ("", |q| q.direction.clone()),
    ("", |q| q.test.clone()),
    ("guests ", |q| q.guests.to_string()),
    ("gro ", |q| q.gro.clone()),
    ("tso ", |q| if q.tso { "on".into() } else { "off".into() }),
    ("lro ", |q| if q.lro { "guest".into() } else { "off".into() }),
    ("mtu ", |q| q.mtu.to_string()),
    ("wire ", |q| q.wire_rate.map(|r| format!("{}M", r / 1_000_000)).unwrap_or("unshaped".into())),
    ("buf ", |q| q.socket_buffer.map(|b| b.to_string()).unwrap_or("default".into())),
    ("P", |q| q.parallel.to_string()),
    ("at ", |q| q.load_bps.map(|r| crate::lab::topology::Rate(r).to_string()).unwrap_or("max".into())),
];

/// Names a point's line on a chart: its mode plus the axes that vary within the run, found once.
pub struct Labeler {
    varying: Vec<Axis>,
}

impl Labeler {
    pub fn new(all: &[&PointRecord]) -> Labeler {
        let varying = AXES
            .iter()
            .filter(|(_, f)| all.iter().map(|q| f(q)).collect::<std::collections::BTreeSet<_>>().len() > 1)
            .copied()
            .collect();
        Labeler { varying }
    }

    pub fn label(&self, p: &PointRecord) -> String {
        let mut label = p.mode.clone();
        for (prefix, f) in &self.varying {
            label += &format!(" {prefix}{}", f(p));
        }
        label
    }
}

/// Lines for one figure: per series, (message size, value) sorted by size.
pub fn series_of(points: &[&PointRecord], value: impl Fn(&PointRecord) -> Option<f64>) -> Vec<(String, Vec<(f64, f64)>)> {
    let labeler = Labeler::new(points);
    let mut out: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for p in points {
        let Some(v) = value(p) else { continue };
        let label = labeler.label(p);
        let k = *index.entry(label.clone()).or_insert_with(|| {
            out.push((label, Vec::new()));
            out.len() - 1
        });
        out[k].1.push((p.message_bytes as f64, v));
    }
    for (_, v) in &mut out {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// CPU part names folded for charts: guests together, backends together.
pub fn part_group(name: &str) -> String {
    if crate::lab::names::parse_guest(name).is_some() {
        "guests".into()
    } else if name.starts_with("vNIC backend") {
        "vNIC backends".into()
    } else {
        name.into()
    }
}
