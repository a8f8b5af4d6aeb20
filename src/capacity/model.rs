//! Paper 1's capacity model (Eq. 1–5), generalized to any number of datapaths: the host CPU a VDI
//! server spends on its two networks when N desktops play the same video, per buffering time, and
//! what a cheaper datapath's saving buys in desktops.
//!
//! U_total = N·U_VDINET_1G·S_VDINET/T_play + N·U_VMNET_1G·S_VMNET/T_buffer      (Eq. 5)

use super::Error;
use serde::{Deserialize, Serialize};

/// Bounds on a scenario, so that every figure it yields is finite and meaningful.
pub const MAX_VMS: u32 = 1_000_000;
pub const MAX_GBIT: f64 = 1e6;
pub const MAX_SECONDS: f64 = 1e7;
pub const MAX_COST: f64 = 1e6;

/// A datapath's cost: host CPU % to move 1 Gbit per second through each network, with the
/// confidence interval each was measured to (None: a given figure, exact as far as the plan knows).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Datapath {
    pub name: String,
    /// U_VDINET_1G: the VDI protocol network (host ↔ client screen stream).
    pub vdi_net_pct_per_gbps: f64,
    /// U_VMNET_1G: the VM network (the desktop's own traffic through its vNIC).
    pub vm_net_pct_per_gbps: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vdi_net_interval: Option<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm_net_interval: Option<[f64; 2]>,
}

impl Datapath {
    /// The costs at the cheap and the dear ends of their intervals (the medians where none).
    pub fn ends(&self) -> [(f64, f64); 2] {
        let (vdi, vm) = (self.vdi_net_pct_per_gbps, self.vm_net_pct_per_gbps);
        let [vdi_lo, vdi_hi] = self.vdi_net_interval.unwrap_or([vdi, vdi]);
        let [vm_lo, vm_hi] = self.vm_net_interval.unwrap_or([vm, vm]);
        [(vdi_lo, vm_lo), (vdi_hi, vm_hi)]
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// N: desktops.
    pub vms: u32,
    /// S_VMNET: what each desktop downloads through the VM network (Gbit).
    pub vm_net_gbit: f64,
    /// S_VDINET: screen data each desktop sends through the VDI network (Gbit).
    pub vdi_net_gbit: f64,
    /// T_play: how long the video plays (s).
    pub play_s: f64,
    /// T_buffer values: how long the download takes (s).
    pub buffer_s: Vec<f64>,
    pub datapaths: Vec<Datapath>,
}

/// One datapath's share of the host at one buffering time. (Fields in the order `--json` has
/// always printed them.)
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    /// Whether both networks together fit in the host (at most 100 % of it).
    pub fits: bool,
    pub vdi_net_pct: f64,
    pub vm_net_pct: f64,
}

/// What a plan that does not fit says: how much host it would need at these costs.
pub fn does_not_fit(total_pct: f64, host_cores: Option<usize>) -> String {
    match host_cores {
        Some(n) => format!(
            "does not fit on this host: needs {:.1} cores at these costs (this host has {n})",
            total_pct / 100.0 * n as f64
        ),
        None => format!(
            "does not fit on this host: needs {:.2}× its CPU at these costs",
            total_pct / 100.0
        ),
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub t_buffer_s: f64,
    /// Per datapath, by name.
    pub datapaths: std::collections::BTreeMap<String, Cell>,
    /// Last datapath minus first (the paper: GNIC − CHELSIO_SRIOV).
    pub vm_net_diff_pct: f64,
    pub vdi_net_diff_pct: f64,
    /// What the first datapath saves against the last, both networks together.
    pub saving_pct: f64,
}

impl Scenario {
    pub fn validate(&self) -> Result<(), Error> {
        if self.datapaths.is_empty() {
            return Err(Error::Input(
                "no datapaths to plan: give --datapath NAME:VDI_1G:VM_1G, a --preset or --from-run"
                    .into(),
            ));
        }
        if !(1..=MAX_VMS).contains(&self.vms) {
            return Err(Error::Input(format!(
                "--vms {}: plan for 1 to {MAX_VMS} desktops",
                self.vms
            )));
        }
        for (v, what) in [
            (self.vm_net_gbit, "--vm-net-gbit"),
            (self.vdi_net_gbit, "--vdi-net-gbit"),
        ] {
            if !(0.0..=MAX_GBIT).contains(&v) {
                return Err(Error::Input(format!(
                    "{what} {v:?}: a size in Gbit, 0 to {MAX_GBIT}"
                )));
            }
        }
        if !(self.play_s > 0.0 && self.play_s <= MAX_SECONDS) {
            return Err(Error::Input(format!("--play-s {:?}: the play time must be more than 0 and at most {MAX_SECONDS} seconds", self.play_s)));
        }
        if self.buffer_s.is_empty() || self.buffer_s.len() > 1000 {
            return Err(Error::Input(
                "--buffer: give 1 to 1000 buffering times".into(),
            ));
        }
        if let Some(b) = self
            .buffer_s
            .iter()
            .find(|b| !(**b > 0.0 && **b <= MAX_SECONDS))
        {
            return Err(Error::Input(format!(
                "--buffer {b:?}: buffering takes more than 0 and at most {MAX_SECONDS} seconds"
            )));
        }
        if self.datapaths.len() > 100 {
            return Err(Error::Input("at most 100 datapaths in one plan".into()));
        }
        for d in &self.datapaths {
            if !((0.0..=MAX_COST).contains(&d.vdi_net_pct_per_gbps)
                && (0.0..=MAX_COST).contains(&d.vm_net_pct_per_gbps))
            {
                return Err(Error::Input(format!(
                    "datapath {}: per-Gbit costs must be 0 to {MAX_COST} % per Gb/s",
                    crate::text::clip(&d.name)
                )));
            }
        }
        Ok(())
    }

    /// Eq. (5), split in its two terms, for one datapath and buffering time.
    pub fn cell(&self, d: &Datapath, t_buffer: f64) -> Cell {
        let n = self.vms as f64;
        let vm_net_pct = n * d.vm_net_pct_per_gbps * self.vm_net_gbit / t_buffer;
        let vdi_net_pct = n * d.vdi_net_pct_per_gbps * self.vdi_net_gbit / self.play_s;
        Cell {
            vm_net_pct,
            vdi_net_pct,
            fits: vm_net_pct + vdi_net_pct <= 100.0,
        }
    }

    pub fn rows(&self) -> Vec<Row> {
        self.buffer_s
            .iter()
            .map(|&t| {
                let cells: Vec<Cell> = self.datapaths.iter().map(|d| self.cell(d, t)).collect();
                let (first, last) = (&cells[0], &cells[cells.len() - 1]);
                Row {
                    t_buffer_s: t,
                    datapaths: self
                        .datapaths
                        .iter()
                        .zip(&cells)
                        .map(|(d, c)| (d.name.clone(), c.clone()))
                        .collect(),
                    vm_net_diff_pct: last.vm_net_pct - first.vm_net_pct,
                    vdi_net_diff_pct: last.vdi_net_pct - first.vdi_net_pct,
                    saving_pct: (last.vm_net_pct + last.vdi_net_pct)
                        - (first.vm_net_pct + first.vdi_net_pct),
                }
            })
            .collect()
    }
}

fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A row as the paper prints it: cells rounded to 0.01, differences taken between the rounded
/// cells, and the saving the sum of the rounded differences (so 24.07 − 8.70 = 15.37).
pub fn paper_rounding(r: &Row, first: &str, last: &str) -> [f64; 7] {
    let (a, b) = (&r.datapaths[first], &r.datapaths[last]);
    let (vm_a, vm_b, vdi_a, vdi_b) = (
        r2(a.vm_net_pct),
        r2(b.vm_net_pct),
        r2(a.vdi_net_pct),
        r2(b.vdi_net_pct),
    );
    let (dvm, dvdi) = (r2(vm_b - vm_a), r2(vdi_b - vdi_a));
    [vm_a, vm_b, dvm, vdi_a, vdi_b, dvdi, r2(dvm + dvdi)]
}

/// Density: what a CPU saving buys, and how many desktops fit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Density {
    /// Host CPU % one desktop's own work takes (paper: 100 % / 40 = 2.5 %).
    pub desktop_share_pct: f64,
    pub vm_net_gbps_per_desktop: f64,
    pub vdi_net_gbps_per_desktop: f64,
    pub datapaths: Vec<DensityRow>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DensityRow {
    pub name: String,
    /// Network CPU one desktop costs on this datapath (% of the host).
    pub network_pct_per_desktop: f64,
    /// Desktops that fit in 100 % of the host.
    pub max_desktops: u32,
    /// Desktops more than the last datapath allows.
    pub more_than_last: i64,
    /// Desktops that fit at the dear and the cheap ends of the costs' intervals, where those
    /// differ (the answer is then a range: the intervals straddle a desktop).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desktops_range: Option<[u32; 2]>,
}

/// Desktops per server as a number, or a range where the costs' intervals straddle a desktop.
pub fn desktops_text(r: &DensityRow) -> String {
    match r.desktops_range {
        Some([fewest, most]) => format!("{fewest}–{most}"),
        None => r.max_desktops.to_string(),
    }
}

/// How many more desktops a CPU saving buys at a given share per desktop (Table IV: 15.36 % at
/// 2.5 % → 6).
pub fn desktops_bought(saving_pct: f64, desktop_share_pct: f64) -> u32 {
    if desktop_share_pct <= 0.0 || saving_pct <= 0.0 {
        return 0;
    }
    (saving_pct / desktop_share_pct + 1e-9).floor() as u32
}

pub fn density(
    datapaths: &[Datapath],
    desktop_share_pct: f64,
    vm_gbps: f64,
    vdi_gbps: f64,
) -> Result<Density, Error> {
    if !(0.01..=100.0).contains(&desktop_share_pct) {
        return Err(Error::Input(format!(
            "--desktop-share {desktop_share_pct:?}: a desktop's own host CPU share, 0.01 to 100 %"
        )));
    }
    if !((0.0..=MAX_GBIT).contains(&vm_gbps) && (0.0..=MAX_GBIT).contains(&vdi_gbps)) {
        return Err(Error::Input(format!(
            "per-desktop traffic must be 0 to {MAX_GBIT} Gb/s"
        )));
    }
    let fit = |vdi_cost: f64, vm_cost: f64| {
        let net = vm_cost * vm_gbps + vdi_cost * vdi_gbps;
        (
            net,
            (100.0 / (desktop_share_pct + net) + 1e-9).floor() as u32,
        )
    };
    let rows: Vec<(String, f64, u32, Option<[u32; 2]>)> = datapaths
        .iter()
        .map(|d| {
            let (net, max) = fit(d.vdi_net_pct_per_gbps, d.vm_net_pct_per_gbps);
            let [(a, b), (c, e)] = d.ends();
            let (most, fewest) = (fit(a, b).1, fit(c, e).1);
            (
                d.name.clone(),
                net,
                max,
                (most != fewest).then_some([fewest, most]),
            )
        })
        .collect();
    let last = rows.last().map(|r| r.2).unwrap_or(0) as i64;
    Ok(Density {
        desktop_share_pct,
        vm_net_gbps_per_desktop: vm_gbps,
        vdi_net_gbps_per_desktop: vdi_gbps,
        datapaths: rows
            .into_iter()
            .map(|(name, net, max, range)| DensityRow {
                name,
                network_pct_per_desktop: net,
                max_desktops: max,
                more_than_last: max as i64 - last,
                desktops_range: range,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::preset;

    /// Table V of the paper, as printed: VM SRIOV, VM GNIC, diff, VDI SRIOV, VDI GNIC, diff, sum.
    const TABLE_V: [(f64, [f64; 7]); 14] = [
        (16.0, [8.7, 24.07, 15.37, 0.4, 0.96, 0.56, 15.93]),
        (20.0, [6.96, 19.25, 12.29, 0.4, 0.96, 0.56, 12.85]),
        (40.0, [3.48, 9.63, 6.15, 0.4, 0.96, 0.56, 6.71]),
        (60.0, [2.32, 6.42, 4.1, 0.4, 0.96, 0.56, 4.66]),
        (80.0, [1.74, 4.81, 3.07, 0.4, 0.96, 0.56, 3.63]),
        (100.0, [1.39, 3.85, 2.46, 0.4, 0.96, 0.56, 3.02]),
        (120.0, [1.16, 3.21, 2.05, 0.4, 0.96, 0.56, 2.61]),
        (140.0, [0.99, 2.75, 1.76, 0.4, 0.96, 0.56, 2.32]),
        (160.0, [0.87, 2.41, 1.54, 0.4, 0.96, 0.56, 2.1]),
        (180.0, [0.77, 2.14, 1.37, 0.4, 0.96, 0.56, 1.93]),
        (200.0, [0.7, 1.93, 1.23, 0.4, 0.96, 0.56, 1.79]),
        (220.0, [0.63, 1.75, 1.12, 0.4, 0.96, 0.56, 1.68]),
        (240.0, [0.58, 1.6, 1.02, 0.4, 0.96, 0.56, 1.58]),
        (253.0, [0.55, 1.52, 0.97, 0.4, 0.96, 0.56, 1.53]),
    ];

    /// A cost measured to an interval carries through Eq. (5): desktops per server become a range
    /// where the interval straddles a desktop, and stay a number where it does not.
    #[test]
    fn desktops_are_a_range_where_a_costs_interval_straddles_one() {
        let d = |name: &str, vm: f64, interval: Option<[f64; 2]>| Datapath {
            name: name.into(),
            vdi_net_pct_per_gbps: 0.0,
            vm_net_pct_per_gbps: vm,
            vm_net_interval: interval,
            ..Default::default()
        };
        // 2.5 % per desktop plus 0.1 Gb/s at the cost: 100 / (2.5 + 0.1 c).
        let rows = density(
            &[
                d("wide", 25.0, Some([22.0, 30.0])),
                d("narrow", 20.0, Some([19.9, 20.1])),
                d("given", 25.0, None),
            ],
            2.5,
            0.1,
            0.0,
        )
        .unwrap();
        let r = &rows.datapaths;
        // 100 / 4.7 = 21.3 … 100 / 5.5 = 18.2: 18 to 21 desktops; the median's 20.
        assert_eq!(
            (r[0].max_desktops, r[0].desktops_range),
            (20, Some([18, 21]))
        );
        assert_eq!(desktops_text(&r[0]), "18–21");
        assert_eq!(r[1].desktops_range, None);
        assert_eq!(desktops_text(&r[2]), "20");
    }

    #[test]
    fn table_v_is_reproduced_row_by_row() {
        let s = preset::get("icsnc2013").unwrap();
        let rows = s.rows();
        assert_eq!(rows.len(), TABLE_V.len());
        for (r, (t, want)) in rows.iter().zip(TABLE_V.iter()) {
            assert_eq!(r.t_buffer_s, *t);
            let got = paper_rounding(r, "CHELSIO_SRIOV", "GNIC");
            for (g, w) in got.iter().zip(want) {
                assert!(
                    (g - w).abs() < 1e-9,
                    "T_buffer {t}: {got:?} vs the paper's {want:?}"
                );
            }
        }
    }

    #[test]
    fn invariants_hold() {
        let s = preset::get("icsnc2013").unwrap();
        // Linear in N.
        let mut s2 = s.clone();
        s2.vms = 80;
        for (a, b) in s.rows().iter().zip(s2.rows()) {
            assert!((b.saving_pct - 2.0 * a.saving_pct).abs() < 1e-9);
        }
        // The saving falls as buffering takes longer.
        let r = s.rows();
        assert!(r.windows(2).all(|w| w[1].saving_pct < w[0].saving_pct));
        // No traffic costs nothing.
        let mut z = s.clone();
        z.vm_net_gbit = 0.0;
        z.vdi_net_gbit = 0.0;
        assert!(z
            .rows()
            .iter()
            .all(|r| r.saving_pct == 0.0 && r.datapaths.values().all(|c| c.vm_net_pct == 0.0)));
    }

    #[test]
    fn table_iv_saving_buys_six_desktops_and_density_follows() {
        // Table IV: 8.68 % vs 24.04 % for 4 Gb/s: 15.36 % saved at 2.5 % per desktop.
        assert_eq!(desktops_bought(24.04 - 8.68, 2.5), 6);
        assert_eq!(desktops_bought(0.0, 2.5), 0);
        let s = preset::get("icsnc2013").unwrap();
        let d = density(&s.datapaths, 2.5, 0.1, 11.1 / 253.0).unwrap();
        assert_eq!(d.datapaths[0].max_desktops, 36);
        assert_eq!(d.datapaths[1].max_desktops, 31);
        assert_eq!(d.datapaths[0].more_than_last, 5);
        // With no network traffic, only the desktops' own share counts: 100 / 2.5 = 40.
        let d = density(&s.datapaths, 2.5, 0.0, 0.0).unwrap();
        assert!(d.datapaths.iter().all(|r| r.max_desktops == 40));
        assert!(density(&s.datapaths, 0.0, 0.1, 0.0).is_err());
        assert!(density(&s.datapaths, 1e-300, 0.1, 0.0).is_err());
    }

    #[test]
    fn bad_scenarios_are_refused() {
        let s = preset::get("icsnc2013").unwrap();
        let bad = |f: &dyn Fn(&mut Scenario)| {
            let mut x = s.clone();
            f(&mut x);
            x.validate().unwrap_err().to_string()
        };
        assert!(bad(&|x| x.buffer_s = vec![0.0]).contains("more than 0"));
        assert!(bad(&|x| x.vm_net_gbit = -1.0).contains("0 to"));
        assert!(bad(&|x| x.play_s = 0.0).contains("play"));
        assert!(bad(&|x| x.vms = 0).contains("1 to"));
        assert!(bad(&|x| x.datapaths.clear()).contains("no datapaths"));
        assert!(bad(&|x| x.datapaths[0].vm_net_pct_per_gbps = f64::NAN).contains("costs"));
        assert!(bad(&|x| x.vm_net_gbit = 1e308).contains("0 to"));
        assert!(bad(&|x| x.buffer_s = vec![f64::INFINITY]).contains("at most"));
    }
}
