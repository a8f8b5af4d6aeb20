//! What a chart draws from a run's points: the figures (throughput, host CPU, CPU per Gb/s), a
//! point's mark with its whisker and tip, one line per series named by what varies within the run
//! (`Labeler`), and the CPU parts folded as charts show them.

use super::charts::Mark;
use crate::records::PointRecord;

type Axis = (&'static str, fn(&PointRecord) -> String);

/// The axes besides message size that can tell two points' datapaths apart.
const AXES: [Axis; 13] = [
    ("", |q| q.key.direction.name().to_string()),
    ("", |q| q.key.test.to_string()),
    ("guests ", |q| q.key.guests.to_string()),
    ("gro ", |q| q.key.gro.name().to_string()),
    (
        "tso ",
        |q| if q.key.tso { "on".into() } else { "off".into() },
    ),
    ("lro ", |q| {
        if q.key.lro {
            "guest".into()
        } else {
            "off".into()
        }
    }),
    ("mtu ", |q| q.key.mtu.to_string()),
    ("wire ", |q| {
        q.key
            .wire_rate
            .map(|r| format!("{}M", r / 1_000_000))
            .unwrap_or("unshaped".into())
    }),
    ("buf ", |q| {
        q.key
            .socket_buffer
            .map(|b| b.to_string())
            .unwrap_or("default".into())
    }),
    ("P", |q| q.key.parallel.to_string()),
    ("at ", |q| {
        q.key
            .load_bps
            .map(|r| crate::units::Rate(r).to_string())
            .unwrap_or("max".into())
    }),
    ("", |q| q.key.profile.clone().unwrap_or_default()),
    ("with ", |q| {
        q.key.interference.clone().unwrap_or("no load".into())
    }),
];

/// Names a point's line on a chart: its mode plus the axes that vary within the run, found once.
pub struct Labeler {
    varying: Vec<Axis>,
}

impl Labeler {
    pub fn new(all: &[&PointRecord]) -> Labeler {
        let varying = AXES
            .iter()
            .filter(|(_, f)| {
                all.iter()
                    .map(|q| f(q))
                    .collect::<std::collections::BTreeSet<_>>()
                    .len()
                    > 1
            })
            .copied()
            .collect();
        Labeler { varying }
    }

    pub fn label(&self, p: &PointRecord) -> String {
        let mut label = p.key.mode.to_string();
        for (prefix, f) in &self.varying {
            label += &format!(" {prefix}{}", f(p));
        }
        label
    }
}

/// A figure a chart draws: read from a point (its median over the units), its spread (whose
/// confidence interval is the whisker) and each repeat, in its unit.
#[derive(Clone, Copy)]
pub struct Figure {
    pub point: fn(&PointRecord) -> Option<f64>,
    pub spread: fn(&crate::records::Repeats) -> Option<&crate::stats::Spread>,
    pub repeat: fn(&crate::records::Repeat) -> Option<f64>,
    pub unit: &'static str,
}

pub const THROUGHPUT: Figure = Figure {
    point: |p| p.throughput_gbps,
    spread: |r| Some(&r.throughput_gbps),
    repeat: |r| Some(r.throughput_gbps),
    unit: "Gb/s",
};
pub const HOST_CPU: Figure = Figure {
    point: |p| p.host_busy_pct,
    spread: |r| r.host_busy_pct.as_ref(),
    repeat: |r| r.host_busy_pct,
    unit: "% of the host",
};
pub const CPU_PER_GBPS: Figure = Figure {
    point: |p| p.normalized_pct_per_gbps,
    spread: |r| r.normalized_pct_per_gbps.as_ref(),
    repeat: |r| r.normalized_pct_per_gbps,
    unit: "% of the host per Gb/s",
};

/// A point's mark for `fig`: the median, its confidence interval as the whisker (the repeats'
/// range for runs stored before intervals), and a tip with the exact value and its conditions
/// (where it ran, what bound it, how far the figure may move).
pub fn mark(p: &PointRecord, fig: Figure, label: &str) -> Option<Mark> {
    let y = (fig.point)(p)?;
    let each: Vec<f64> = p.repeats.iter().filter_map(fig.repeat).collect();
    let spread = p
        .spread
        .as_ref()
        .and_then(|r| (fig.spread)(r).map(|s| (r, s)));
    let (low, high, how) = match spread.and_then(|(r, s)| Some((r, s, s.interval?))) {
        Some((r, s, i)) => (
            i.lo.min(y),
            i.hi.max(y),
            format!("{}, {} units", s.against(&r.goal()), s.n),
        ),
        None => (
            each.iter().copied().fold(y, f64::min),
            each.iter().copied().fold(y, f64::max),
            format!("range over {} repeats", each.len().max(1)),
        ),
    };
    let bound = p
        .bound_by
        .map(|b| format!("bound by {b}"))
        .unwrap_or_else(|| "bound by nothing".into());
    let cores = match (&p.host_cpus, &p.client_cpus) {
        (Some(h), Some(c)) => format!("host cores {h}, client cores {c}; "),
        _ => String::new(),
    };
    Some(Mark {
        x: p.key.message_bytes as f64,
        y,
        low,
        high,
        tip: format!(
            "{label}, {} B: {y:.3} {} [{low:.3}–{high:.3}] ({how}); {cores}{bound}",
            p.key.message_bytes, fig.unit,
        ),
    })
}

/// Lines for one figure: per series, its marks sorted by message size.
pub fn series_of(points: &[&PointRecord], fig: Figure) -> Vec<(String, Vec<Mark>)> {
    let labeler = Labeler::new(points);
    let mut out: Vec<(String, Vec<Mark>)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for p in points {
        let label = labeler.label(p);
        let Some(m) = mark(p, fig, &label) else {
            continue;
        };
        let k = *index.entry(label.clone()).or_insert_with(|| {
            out.push((label, Vec::new()));
            out.len() - 1
        });
        out[k].1.push(m);
    }
    for (_, v) in &mut out {
        v.sort_by(|a, b| a.x.total_cmp(&b.x));
    }
    out
}

/// CPU parts folded for charts: guests together, backends together, the rest by name.
pub fn part_group(name: &str, kind: crate::vocab::PartKind) -> String {
    use crate::vocab::PartKind;
    match kind {
        PartKind::Guest | PartKind::Vcpu => "guests".into(),
        PartKind::Backend => "vNIC backends".into(),
        _ => name.into(),
    }
}
