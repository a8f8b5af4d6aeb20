//! Presets: a paper's parameters, so its tables can be printed and checked.

use super::model::{Datapath, Scenario};
use super::Error;

pub const PRESETS: &str = "icsnc2013";

/// Paper 1 (ICSNC 2013), Table V: 40 desktops playing a 253 s video (1.6 Gbit download,
/// 11.1 Gbit of screen data), CHELSIO_SRIOV (SR-IOV + TOE) against GNIC (1 G NIC, bridged).
pub fn get(name: &str) -> Result<Scenario, Error> {
    match name {
        "icsnc2013" => Ok(Scenario {
            vms: 40,
            vm_net_gbit: 1.6,
            vdi_net_gbit: 11.1,
            play_s: 253.0,
            buffer_s: vec![
                16.0, 20.0, 40.0, 60.0, 80.0, 100.0, 120.0, 140.0, 160.0, 180.0, 200.0, 220.0,
                240.0, 253.0,
            ],
            datapaths: vec![
                Datapath {
                    name: "CHELSIO_SRIOV".into(),
                    vdi_net_pct_per_gbps: 0.22727,
                    vm_net_pct_per_gbps: 2.176,
                    ..Default::default()
                },
                Datapath {
                    name: "GNIC".into(),
                    vdi_net_pct_per_gbps: 0.54701,
                    vm_net_pct_per_gbps: 6.017,
                    ..Default::default()
                },
            ],
        }),
        _ => Err(Error::Input(format!(
            "unknown preset '{name}': use {PRESETS}"
        ))),
    }
}
