//! The farm's plan: each host's cost per datapath from its run of the farm's run id, hosts
//! grouped in classes by CPU model, cores and NIC drivers, a host marked where its cost differs
//! from its class's (the class's median outside the host's interval), and the farm's desktops
//! per datapath summed over its hosts, as ranges where a host's intervals straddle a desktop.

use serde::Serialize;

use super::from_run::{self, Pick};
use super::model::{self, Datapath};
use super::Error;
use crate::records::{PointRecord, RunRow};

/// Past this ratio to its class's median, a host without an interval differs from its class.
const DIFFERS_WITHOUT_INTERVAL: f64 = 0.10;

/// One host's answer for one datapath.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Cell {
    pub datapath: String,
    pub cost: Datapath,
    /// Desktops that fit on this host, and the range its intervals allow where it is one.
    pub desktops: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desktops_range: Option<[u32; 2]>,
    /// Whether its VM network cost differs from its class's (the class's median outside this
    /// host's interval, or more than 10 % off where it has none).
    pub differs: bool,
}

impl Cell {
    /// Desktops as a number, or the range its intervals allow.
    pub fn desktops_text(&self) -> String {
        match self.desktops_range {
            Some([fewest, most]) => format!("{fewest}–{most}"),
            None => self.desktops.to_string(),
        }
    }
}

/// One host of the farm.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Host {
    pub host: String,
    pub class: String,
    /// The run in the store.
    pub run: i64,
    pub cells: Vec<Cell>,
    /// Points passed over, and what else the reader should know.
    pub notes: Vec<String>,
}

/// The farm's desktops on one datapath.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Total {
    pub datapath: String,
    pub hosts: usize,
    pub desktops: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desktops_range: Option<[u32; 2]>,
}

/// A class of hosts alike in CPU and NICs: its hosts and its median cost per datapath.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Class {
    pub class: String,
    pub hosts: Vec<String>,
    /// (datapath, median VM network cost) over the class's hosts.
    pub median_vm_net_pct_per_gbps: Vec<(String, f64)>,
}

/// The farm's plan.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Farm {
    pub run: String,
    pub hosts: Vec<Host>,
    pub classes: Vec<Class>,
    pub totals: Vec<Total>,
    /// Hosts of the run the plan has no costs for, with why.
    pub left_out: Vec<String>,
}

impl Farm {
    /// A host's class as the tables number them (from 1).
    pub fn class_number(&self, h: &Host) -> usize {
        self.classes
            .iter()
            .position(|c| c.class == h.class)
            .map_or(0, |i| i + 1)
    }
}

/// How a farm is planned: which points, and what a desktop costs besides its networks.
#[derive(Clone, Copy, Debug)]
pub struct Ask {
    pub pick: Pick,
    pub vdi_offload: bool,
    pub desktop_share_pct: f64,
    pub vm_gbps: f64,
    pub vdi_gbps: f64,
}

impl Ask {
    /// Paper 1's scenario for a farm: its desktop share (2.5 % of the host), 100 Mb/s of VM
    /// network and its screen stream per desktop, points picked as `plan --from-run` picks them.
    pub fn paper1() -> Ask {
        Ask {
            pick: Pick::default(),
            vdi_offload: true,
            desktop_share_pct: 2.5,
            vm_gbps: 0.1,
            vdi_gbps: super::SCREEN_GBPS,
        }
    }
}

/// A host's class: its CPU model, cores and NIC drivers.
pub fn class_of(r: &RunRow) -> String {
    let f = &r.host_facts;
    let nics: Vec<String> = f.nics.iter().map(|n| n.describe()).collect();
    format!(
        "{} × {} cores, {}",
        f.cpu_model,
        f.cores,
        match nics.is_empty() {
            true => "no NIC".to_string(),
            false => nics.join(" + "),
        }
    )
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n % 2 {
        1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Plans the farm from every host's run and points.
pub fn plan(run: &str, runs: &[(RunRow, Vec<PointRecord>)], ask: Ask) -> Result<Farm, Error> {
    let mut hosts = Vec::new();
    let mut left_out = Vec::new();
    for (r, pts) in runs {
        match host(r, pts, ask) {
            Ok(h) => hosts.push(h),
            Err(e) => left_out.push(format!("{}: {e}", r.host_label())),
        }
    }
    if hosts.is_empty() {
        return Err(Error::NoData(format!(
            "no host of farm run {run} has costs to plan from{}",
            match left_out.is_empty() {
                true => " (the store holds no run of that id: `vnetlab runs` lists them)".into(),
                false => format!(": {}", left_out.join("; ")),
            }
        )));
    }
    let classes = mark(&mut hosts);
    let totals = totals(&hosts);
    Ok(Farm {
        run: run.into(),
        hosts,
        classes,
        totals,
        left_out,
    })
}

/// One host's costs and desktops.
fn host(r: &RunRow, pts: &[PointRecord], ask: Ask) -> Result<Host, Error> {
    let c = from_run::costs(r, pts, ask.pick, ask.vdi_offload, false)?;
    let d = model::density(
        &c.datapaths,
        ask.desktop_share_pct,
        ask.vm_gbps,
        ask.vdi_gbps,
    )?;
    let mut cells: Vec<Cell> = c
        .datapaths
        .iter()
        .zip(&d.datapaths)
        .map(|(cost, row)| Cell {
            datapath: cost.name.clone(),
            cost: cost.clone(),
            desktops: row.max_desktops,
            desktops_range: row.desktops_range,
            differs: false,
        })
        .collect();
    cells.sort_by(|a, b| a.datapath.cmp(&b.datapath));
    Ok(Host {
        host: r.host_label(),
        class: class_of(r),
        run: r.id,
        cells,
        notes: c.notes,
    })
}

/// Groups the hosts in classes and marks each host's datapaths that differ from its class.
fn mark(hosts: &mut [Host]) -> Vec<Class> {
    let mut names: Vec<String> = hosts.iter().map(|h| h.class.clone()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|class| {
            let members: Vec<usize> = (0..hosts.len())
                .filter(|&i| hosts[i].class == class)
                .collect();
            let mut datapaths: Vec<String> = members
                .iter()
                .flat_map(|&i| hosts[i].cells.iter().map(|c| c.datapath.clone()))
                .collect();
            datapaths.sort();
            datapaths.dedup();
            let mut medians = Vec::new();
            for dp in datapaths {
                let mut costs: Vec<f64> = members
                    .iter()
                    .filter_map(|&i| hosts[i].cells.iter().find(|c| c.datapath == dp))
                    .map(|c| c.cost.vm_net_pct_per_gbps)
                    .collect();
                let m = median(&mut costs);
                // Of two hosts neither can be told the odd one: marking needs three.
                if costs.len() >= 3 {
                    for &i in &members {
                        if let Some(c) = hosts[i].cells.iter_mut().find(|c| c.datapath == dp) {
                            c.differs = differs(&c.cost, m);
                        }
                    }
                }
                medians.push((dp, m));
            }
            Class {
                class,
                hosts: members.iter().map(|&i| hosts[i].host.clone()).collect(),
                median_vm_net_pct_per_gbps: medians,
            }
        })
        .collect()
}

/// Whether a host's VM network cost differs from its class's median (of three hosts or more).
fn differs(cost: &Datapath, class_median: f64) -> bool {
    match cost.vm_net_interval {
        Some([lo, hi]) => !(lo..=hi).contains(&class_median),
        None => {
            (cost.vm_net_pct_per_gbps / class_median.max(f64::MIN_POSITIVE) - 1.0).abs()
                > DIFFERS_WITHOUT_INTERVAL
        }
    }
}

/// The farm's desktops per datapath, over the hosts that measured it.
fn totals(hosts: &[Host]) -> Vec<Total> {
    let mut names: Vec<String> = Vec::new();
    for c in hosts.iter().flat_map(|h| &h.cells) {
        if !names.contains(&c.datapath) {
            names.push(c.datapath.clone());
        }
    }
    names
        .into_iter()
        .map(|dp| {
            let cells: Vec<&Cell> = hosts
                .iter()
                .filter_map(|h| h.cells.iter().find(|c| c.datapath == dp))
                .collect();
            let sum = |f: &dyn Fn(&Cell) -> u32| cells.iter().map(|c| f(c)).sum::<u32>();
            let fewest = sum(&|c| c.desktops_range.map_or(c.desktops, |r| r[0]));
            let most = sum(&|c| c.desktops_range.map_or(c.desktops, |r| r[1]));
            Total {
                datapath: dp,
                hosts: cells.len(),
                desktops: sum(&|c| c.desktops),
                desktops_range: (fewest != most).then_some([fewest, most]),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, class: &str, cells: &[(&str, f64, Option<[f64; 2]>, u32)]) -> Host {
        Host {
            host: name.into(),
            class: class.into(),
            run: 1,
            cells: cells
                .iter()
                .map(|&(dp, cost, iv, n)| Cell {
                    datapath: dp.into(),
                    cost: Datapath {
                        name: dp.into(),
                        vm_net_pct_per_gbps: cost,
                        vm_net_interval: iv,
                        ..Default::default()
                    },
                    desktops: n,
                    desktops_range: None,
                    differs: false,
                })
                .collect(),
            notes: vec![],
        }
    }

    #[test]
    fn a_host_whose_interval_misses_its_class_median_is_marked() {
        let mut hosts = vec![
            host("a", "x", &[("bridge", 50.0, Some([45.0, 55.0]), 30)]),
            host("b", "x", &[("bridge", 52.0, Some([48.0, 56.0]), 30)]),
            host("c", "x", &[("bridge", 80.0, Some([75.0, 85.0]), 25)]),
            host("d", "y", &[("bridge", 90.0, None, 20)]),
        ];
        let classes = mark(&mut hosts);
        let marked: Vec<bool> = hosts.iter().map(|h| h.cells[0].differs).collect();
        // Class x's median is 52: a and b hold it, c does not; d is alone in y.
        assert_eq!(marked, [false, false, true, false]);
        assert_eq!(classes.len(), 2);
        assert_eq!(classes[0].median_vm_net_pct_per_gbps[0].1, 52.0);
    }

    #[test]
    fn the_farm_sums_desktops_and_their_ranges_per_datapath() {
        let mut hosts = vec![
            host(
                "a",
                "x",
                &[("bridge", 50.0, None, 30), ("macvlan", 40.0, None, 33)],
            ),
            host("b", "x", &[("bridge", 50.0, None, 31)]),
        ];
        hosts[1].cells[0].desktops_range = Some([29, 31]);
        let t = totals(&hosts);
        assert_eq!(
            (t[0].desktops, t[0].hosts, t[0].desktops_range),
            (61, 2, Some([59, 61]))
        );
        assert_eq!(
            (t[1].desktops, t[1].hosts, t[1].desktops_range),
            (33, 1, None)
        );
    }

    #[test]
    fn no_host_with_costs_is_an_error_naming_each_host() {
        let e = plan(
            "r9",
            &[],
            Ask {
                pick: Pick::default(),
                vdi_offload: true,
                desktop_share_pct: 2.5,
                vm_gbps: 0.1,
                vdi_gbps: 0.04,
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("r9") && e.contains("vnetlab runs"), "{e}");
    }
}
