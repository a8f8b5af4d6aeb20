//! Per-Gbit costs from a stored run instead of the paper's: the VM network per mode (guest →
//! client TCP_STREAM), the VDI network from host → client streams with offloads on (TSO/GSO, the
//! stand-in for paper 1's TOE) or off.

use super::model::Datapath;
use crate::store::{PointRecord, RunRow};

pub struct Costs {
    pub datapaths: Vec<Datapath>,
    /// Which points the costs came from.
    pub used: Vec<String>,
    pub notes: Vec<String>,
}

/// The point of a series to take: the requested size, else 8 KB (paper 1's), else the largest.
fn pick<'a>(pts: &[&'a PointRecord], size: Option<u64>) -> Option<&'a PointRecord> {
    if let Some(s) = size {
        return pts.iter().copied().find(|p| p.message_bytes == s);
    }
    pts.iter().copied().find(|p| p.message_bytes == 8192).or_else(|| pts.iter().copied().max_by_key(|p| p.message_bytes))
}

fn usable(p: &PointRecord) -> bool {
    p.error.is_none() && p.test == "TCP_STREAM" && p.normalized_pct_per_gbps.is_some_and(|v| v > 0.0)
}

/// `vdi_required`: fail without host → client points (plan), or leave the VDI cost at 0 (report).
pub fn costs(run: &RunRow, points: &[PointRecord], size: Option<u64>, vdi_offload: bool, vdi_required: bool) -> Result<Costs, String> {
    let vm: Vec<&PointRecord> = points.iter().filter(|p| usable(p) && matches!(p.direction.as_str(), "guest-to-client" | "guests-to-client")).collect();
    if vm.is_empty() {
        return Err(format!("run {} has no guest-to-client TCP_STREAM points (the VM network): run an experiment with that direction, e.g. experiments/icsnc2013.toml", run.id));
    }
    let host: Vec<&PointRecord> = points.iter().filter(|p| usable(p) && p.direction == "host-to-client" && p.tso == vdi_offload).collect();
    let mut used = Vec::new();
    let mut notes = Vec::new();
    let vdi = match pick(&host, size) {
        Some(p) => {
            used.push(format!("VDI network: point {} ({} host → client, {} B, offloads {}): {:.4} % per Gb/s", p.seq, p.mode, p.message_bytes, if p.tso { "on" } else { "off" }, p.normalized_pct_per_gbps.unwrap()));
            p.normalized_pct_per_gbps.unwrap()
        }
        None if vdi_required => {
            return Err(format!(
                "run {} has no host-to-client TCP_STREAM points with offloads {} (the VDI network){}: add direction host-to-client (and tso = [true, false]) to the experiment",
                run.id,
                if vdi_offload { "on" } else { "off" },
                size.map(|s| format!(" at {s} B")).unwrap_or_default()
            ))
        }
        None => {
            notes.push("no host → client points in this run: the VDI network's cost is left at 0".into());
            0.0
        }
    };
    let mut modes: Vec<String> = Vec::new();
    for p in &vm {
        if !modes.contains(&p.mode) {
            modes.push(p.mode.clone());
        }
    }
    let mut datapaths = Vec::new();
    for m in modes {
        let series: Vec<&PointRecord> = vm.iter().copied().filter(|p| p.mode == m).collect();
        let Some(p) = pick(&series, size) else {
            notes.push(format!("{m}: no point at {} B", size.unwrap_or(0)));
            continue;
        };
        used.push(format!("VM network {m}: point {} ({} B): {:.4} % per Gb/s", p.seq, p.message_bytes, p.normalized_pct_per_gbps.unwrap()));
        datapaths.push(Datapath { name: m, vdi_net_pct_per_gbps: vdi, vm_net_pct_per_gbps: p.normalized_pct_per_gbps.unwrap() });
    }
    if datapaths.is_empty() {
        return Err(format!("run {} has no VM network point at {} B", run.id, size.unwrap_or(0)));
    }
    // Cheapest first: the rows' differences are then what it saves against the dearest.
    datapaths.sort_by(|a, b| a.vm_net_pct_per_gbps.total_cmp(&b.vm_net_pct_per_gbps));
    Ok(Costs { datapaths, used, notes })
}
