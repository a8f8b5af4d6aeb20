//! Paper 1's Table V recomputed from measured costs: the paper's scenario (its desktops, download
//! and screen sizes, play and buffering times) planned twice with Eq. (5), once with the paper's
//! per-Gbit costs and once with ours, each cost read from the one stored point the paper file
//! names for it (a point a saturated core bound gives no cost).

use serde::{Deserialize, Serialize};

use super::claims::{Metric, Selector, Unmeasurable};
use super::error::Error;
use crate::capacity::model::{Datapath, Row, Scenario};
use crate::records::PointRecord;
use crate::report::html::esc;

/// A datapath of the table: the paper's name and the points its two costs come from.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Costed {
    pub name: String,
    /// The VM network's cost (host CPU per Gb/s of the desktop's own traffic).
    pub vm: Selector,
    /// The VDI network's cost (host CPU per Gb/s of the screen stream).
    pub vdi: Selector,
}

/// The `[plan]` section of a paper file.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PlanTable {
    pub source: String,
    /// The plan preset holding the paper's scenario and costs (`vnetlab plan --preset`).
    pub preset: String,
    /// Buffering times to show, seconds.
    pub buffers: Vec<f64>,
    /// Ours, in the preset's order (first is the cheaper, last the dearer).
    #[serde(rename = "datapath")]
    pub datapaths: Vec<Costed>,
}

impl PlanTable {
    pub fn check(&self) -> Result<(), Error> {
        let s = self.scenario().map_err(|e| Error::Input(e.to_string()))?;
        if self.datapaths.len() != s.datapaths.len() {
            return Err(Error::Input(format!(
                "plan: give {} datapaths, as the preset has",
                s.datapaths.len()
            )));
        }
        s.validate().map_err(|e| Error::Input(e.to_string()))?;
        self.datapaths
            .iter()
            .try_for_each(|d| d.vm.check().and_then(|_| d.vdi.check()))
    }

    /// The paper's scenario at the buffering times shown.
    fn scenario(&self) -> Result<Scenario, crate::capacity::Error> {
        let mut s = crate::capacity::preset::get(&self.preset)?;
        s.buffer_s = self.buffers.clone();
        Ok(s)
    }
}

/// One cost from its one point, or why there is none.
fn cost(sel: &Selector, points: &[PointRecord]) -> Result<f64, Unmeasurable> {
    let found: Vec<_> = points
        .iter()
        .filter(|p| p.error.is_none() && sel.matches(p))
        .collect();
    let name = sel.name();
    match found.as_slice() {
        [p] => match &p.bound_by {
            Some(bound) => Err(Unmeasurable::BoundCost {
                name,
                bound: *bound,
                when: String::new(),
            }),
            None => Metric::NormalizedPctPerGbps
                .of(p)
                .ok_or(Unmeasurable::NoValue {
                    name,
                    unit: Metric::NormalizedPctPerGbps.unit(),
                }),
        },
        [] => Err(Unmeasurable::NoPoint(name)),
        many => Err(Unmeasurable::Ambiguous {
            count: many.len(),
            name,
        }),
    }
}

/// Our rows, or why our costs cannot be had.
type Ours = Result<Vec<Row>, Unmeasurable>;

/// Table V twice, the paper's costs and ours, or why ours cannot be computed.
pub fn rows(t: &PlanTable, points: &[PointRecord]) -> Result<(Vec<Row>, Ours), Error> {
    let paper = t.scenario().map_err(|e| Error::Input(e.to_string()))?;
    let ours = t
        .datapaths
        .iter()
        .map(|d| {
            Ok(Datapath {
                name: d.name.clone(),
                vm_net_pct_per_gbps: cost(&d.vm, points)?,
                vdi_net_pct_per_gbps: cost(&d.vdi, points)?,
                ..Default::default()
            })
        })
        .collect::<Result<Vec<_>, Unmeasurable>>()
        .map(|datapaths| {
            Scenario {
                datapaths,
                ..paper.clone()
            }
            .rows()
        });
    Ok((paper.rows(), ours))
}

fn cells(r: &Row, names: &[String]) -> String {
    let get = |n: &String| r.datapaths.get(n).cloned();
    let mut h = String::new();
    for vm in [true, false] {
        for c in names.iter().map(get) {
            let v = c.map(|c| if vm { c.vm_net_pct } else { c.vdi_net_pct });
            h += &format!("<td>{}</td>", v.map_or("–".into(), |v| format!("{v:.2}")));
        }
    }
    h + &format!("<td>{:.2}</td>", r.saving_pct)
}

/// The page's section: the paper's rows and ours side by side per buffering time.
pub fn render(t: &PlanTable, points: &[PointRecord]) -> String {
    let (paper, ours) = match rows(t, points) {
        Ok(x) => x,
        Err(e) => return format!("<p class=\"bad\">{}</p>", esc(&e.to_string())),
    };
    let names: Vec<String> = t.datapaths.iter().map(|d| d.name.clone()).collect();
    let mut h = format!(
        "<h2>{}: host CPU of the movie scenario, the paper's costs and ours</h2><p>Eq. (5) over the paper's scenario (its desktops, 1.6 Gbit download and 11.1 Gbit of screen each, 253 s of video) with the paper's per-Gbit costs (% of its 16-core server) and with ours (% of this host's one host core, from the paced 8 KB points); above 100 the scenario does not fit.</p>",
        esc(&t.source)
    );
    let head: String = ["VM network", "VDI network"]
        .iter()
        .flat_map(|net| {
            names
                .iter()
                .map(move |n| format!("<th>{net} {}</th>", esc(n)))
        })
        .collect();
    h += &format!(
        "<table><tr><th>T_buffer (s)</th><th class=\"l\">costs</th>{head}<th>saving</th></tr>"
    );
    for (i, p) in paper.iter().enumerate() {
        h += &format!(
            "<tr><td>{}</td><td class=\"l\">the paper's</td>{}</tr>",
            p.t_buffer_s,
            cells(p, &names)
        );
        if let Ok(o) = &ours {
            h += &format!(
                "<tr><td></td><td class=\"l\">ours</td>{}</tr>",
                cells(&o[i], &names)
            );
        }
    }
    h += "</table>";
    if let Err(why) = ours {
        h += &format!(
            "<p class=\"muted\">Our costs are not measurable: {}.</p>",
            esc(&why.to_string())
        );
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::PointKey;
    use crate::vocab::Mode;

    fn table() -> PlanTable {
        let sel = |mode: &str| Selector {
            mode: Some(mode.into()),
            ..Selector::default()
        };
        PlanTable {
            source: "Table V".into(),
            preset: "icsnc2013".into(),
            buffers: vec![16.0, 253.0],
            datapaths: vec![
                Costed {
                    name: "CHELSIO_SRIOV".into(),
                    vm: sel("macvlan"),
                    vdi: sel("bridge"),
                },
                Costed {
                    name: "GNIC".into(),
                    vm: sel("paravirt"),
                    vdi: sel("nat"),
                },
            ],
        }
    }

    fn point(mode: Mode, cost: f64) -> PointRecord {
        PointRecord {
            key: PointKey {
                mode,
                ..PointKey::default()
            },
            normalized_pct_per_gbps: Some(cost),
            ..PointRecord::default()
        }
    }

    #[test]
    fn table_v_is_planned_with_the_papers_costs_and_with_ours() {
        let t = table();
        t.check().unwrap();
        let pts = [
            point(Mode::Macvlan, 2.0),
            point(Mode::Paravirt, 6.0),
            point(Mode::Bridge, 0.2),
            point(Mode::Nat, 0.5),
        ];
        let (paper, ours) = rows(&t, &pts).unwrap();
        let ours = ours.unwrap();
        // The paper's Table V at 16 s: (24.07 + 0.96) − (8.70 + 0.40) ≈ 15.93 % saved.
        assert!(
            (paper[0].saving_pct - 15.93).abs() < 0.01,
            "{}",
            paper[0].saving_pct
        );
        // Ours at 16 s: 40 × (6 − 2) × 1.6 / 16 + 40 × (0.5 − 0.2) × 11.1 / 253.
        let want = 40.0 * 4.0 * 1.6 / 16.0 + 40.0 * 0.3 * 11.1 / 253.0;
        assert!((ours[0].saving_pct - want).abs() < 1e-9);
        // A missing cost says which point, and the page still renders the paper's rows.
        let (_, missing) = rows(&t, &pts[..3]).unwrap();
        assert!(missing.unwrap_err() == Unmeasurable::NoPoint("nat".into()));
        let html = render(&t, &pts[..3]);
        assert!(html.contains("the paper&#39;s") || html.contains("the paper's"));
        assert!(html.contains("not measurable"));
    }
}
