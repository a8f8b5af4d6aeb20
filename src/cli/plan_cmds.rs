//! `vnetlab plan`: paper 1's capacity model for one or more datapaths, from a preset, flags, a
//! TOML file or a stored run; Table V's rows, the density the savings buy, as a table or JSON.

use clap::Args;
use serde::Deserialize;
use std::path::PathBuf;

use super::{input, print_json, CmdResult, Fail};
use crate::plan::{from_run, model, preset};
use crate::records::PointRecord;

#[derive(Args)]
pub struct PlanArgs {
    /// Load a paper's parameters: icsnc2013 (paper 1, Table V)
    #[arg(long)]
    preset: Option<String>,
    /// The same settings as TOML (keys: vms, vm_net_gbit, vdi_net_gbit, play_s, buffer_s, desktop_share, vm_rate, [[datapath]] name/vdi_1g/vm_1g)
    #[arg(long, short = 'f')]
    file: Option<PathBuf>,
    /// Per-Gbit costs from a stored run (its id, or latest): VM network per mode, VDI network from host → client
    #[arg(long)]
    from_run: Option<crate::records::RunRef>,
    /// The store for --from-run
    #[arg(long, default_value = "vnetlab.sqlite")]
    db: PathBuf,
    /// --from-run: take the points at this message size [default: 8K, else the largest]
    #[arg(long)]
    size: Option<String>,
    /// --from-run: take the points at this offered load per stream: max or a rate such as 500mbit [default: the largest paced load nothing bound, else max]
    #[arg(long)]
    load: Option<String>,
    /// --from-run: also take costs from points a saturated core, backend or the wire bound
    #[arg(long)]
    allow_bound: bool,
    /// --from-run: the VDI network's cost with offloads on (the TOE stand-in) or off
    #[arg(long, default_value = "on", value_parser = crate::units::parse_on_off, action = clap::ArgAction::Set)]
    vdi_offload: bool,
    /// A datapath's costs: NAME:VDI_1G:VM_1G (host CPU % per Gb/s through each network); repeatable
    #[arg(long = "datapath")]
    datapaths: Vec<String>,
    /// Buffering times T_buffer in seconds, e.g. 16,20,40
    #[arg(long, allow_hyphen_values = true)]
    buffer: Option<String>,
    /// N: desktops
    #[arg(long)]
    vms: Option<u32>,
    /// S_VMNET: Gbit each desktop downloads through its VM network
    #[arg(long, allow_hyphen_values = true)]
    vm_net_gbit: Option<f64>,
    /// S_VDINET: Gbit of screen data per desktop through the VDI network
    #[arg(long, allow_hyphen_values = true)]
    vdi_net_gbit: Option<f64>,
    /// T_play: seconds the video plays
    #[arg(long, allow_hyphen_values = true)]
    play_s: Option<f64>,
    /// Host CPU % one desktop's own work takes (paper: 100 % / 40 = 2.5)
    #[arg(long, default_value_t = 2.5, allow_hyphen_values = true)]
    desktop_share: f64,
    /// Per-desktop VM network traffic for the density table, e.g. 100mbit
    #[arg(long, default_value = "100mbit")]
    vm_rate: String,
    #[arg(long)]
    json: bool,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    preset: Option<String>,
    vms: Option<u32>,
    vm_net_gbit: Option<f64>,
    vdi_net_gbit: Option<f64>,
    play_s: Option<f64>,
    buffer_s: Option<Vec<f64>>,
    desktop_share: Option<f64>,
    vm_rate: Option<String>,
    #[serde(default)]
    datapath: Vec<FileDatapath>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDatapath {
    name: String,
    vdi_1g: f64,
    vm_1g: f64,
}

fn parse_datapath(s: &str) -> Result<model::Datapath, String> {
    let bad = || format!("bad --datapath '{s}': write NAME:VDI_1G:VM_1G, e.g. SRIOV:0.22727:2.176");
    let p: Vec<&str> = s.split(':').collect();
    if p.len() != 3 || p[0].is_empty() {
        return Err(bad());
    }
    let f = |x: &str| x.parse::<f64>().map_err(|_| bad());
    Ok(model::Datapath {
        name: p[0].into(),
        vdi_net_pct_per_gbps: f(p[1])?,
        vm_net_pct_per_gbps: f(p[2])?,
    })
}

/// A table cell of host CPU %: over 100 % is not a share of this host, so it says so.
fn cell(v: f64, w: usize) -> String {
    if v > 100.0 {
        format!("{:>w$}", "no fit")
    } else {
        format!("{v:>w$.2}")
    }
}

fn parse_list(s: &str) -> Result<Vec<f64>, String> {
    s.split(',')
        .map(|x| {
            x.trim().parse::<f64>().map_err(|_| {
                format!("bad --buffer '{s}': write seconds separated by commas, e.g. 16,20,40")
            })
        })
        .collect()
}

pub fn plan(a: PlanArgs) -> CmdResult {
    let file: PlanFile = match &a.file {
        Some(f) => {
            let text = input(crate::text::read_capped(f, crate::text::MAX_FILE))?;
            toml::from_str(&text).map_err(|e| {
                Fail::Input(crate::lab::topology::toml_error(
                    &e,
                    &text,
                    &crate::text::clip(&f.display().to_string()),
                ))
            })?
        }
        None => PlanFile::default(),
    };
    let preset_name = a.preset.clone().or(file.preset.clone());
    // Start from the preset (or paper 1's scenario without datapaths), then apply the file and the flags.
    let mut s = match &preset_name {
        Some(p) => input(preset::get(p))?,
        None => model::Scenario {
            datapaths: vec![],
            ..preset::get("icsnc2013").unwrap()
        },
    };
    let mut source = preset_name
        .as_ref()
        .map(|p| format!("preset {p}"))
        .unwrap_or_else(|| "paper 1's scenario".into());
    let mut used: Vec<String> = Vec::new();
    let mut host_cores: Option<usize> = None;
    if let Some(v) = file.vms {
        s.vms = v;
    }
    if let Some(v) = file.vm_net_gbit {
        s.vm_net_gbit = v;
    }
    if let Some(v) = file.vdi_net_gbit {
        s.vdi_net_gbit = v;
    }
    if let Some(v) = file.play_s {
        s.play_s = v;
    }
    if let Some(v) = file.buffer_s.clone() {
        s.buffer_s = v;
    }
    if !file.datapath.is_empty() {
        s.datapaths = file
            .datapath
            .iter()
            .map(|d| model::Datapath {
                name: d.name.clone(),
                vdi_net_pct_per_gbps: d.vdi_1g,
                vm_net_pct_per_gbps: d.vm_1g,
            })
            .collect();
    }
    if let Some(run) = &a.from_run {
        let store = super::exp_cmds::existing(&a.db)?;
        let r = store.find_run(*run)?;
        let pts: Vec<PointRecord> = store.points(r.id)?.into_iter().map(|(_, p)| p).collect();
        let size = a
            .size
            .as_deref()
            .map(crate::units::parse_size)
            .transpose()
            .map_err(Fail::Input)?
            .map(|v| v as u64);
        let load = match a.load.as_deref() {
            None => None,
            Some("max") => Some(None),
            Some(r) => Some(Some(
                crate::units::parse_rate(r)
                    .map_err(|e| Fail::Input(format!("--load: {e}, or max")))?,
            )),
        };
        let pick = from_run::Pick {
            size,
            load,
            allow_bound: a.allow_bound,
        };
        let c = input(from_run::costs(&r, &pts, pick, a.vdi_offload, true))?;
        s.datapaths = c.datapaths;
        host_cores = c.host_cores;
        source = format!("run {} ({})", r.id, r.name);
        used = c.used.into_iter().chain(c.notes).collect();
    }
    if !a.datapaths.is_empty() {
        s.datapaths = a
            .datapaths
            .iter()
            .map(|d| parse_datapath(d))
            .collect::<Result<_, _>>()
            .map_err(Fail::Input)?;
        source = "the command line".into();
    }
    if let Some(v) = a.vms {
        s.vms = v;
    }
    if let Some(v) = a.vm_net_gbit {
        s.vm_net_gbit = v;
    }
    if let Some(v) = a.vdi_net_gbit {
        s.vdi_net_gbit = v;
    }
    if let Some(v) = a.play_s {
        s.play_s = v;
    }
    if let Some(b) = &a.buffer {
        s.buffer_s = input(parse_list(b))?;
    }
    input(s.validate())?;
    let share = file.desktop_share.unwrap_or(a.desktop_share);
    let vm_rate = file.vm_rate.clone().unwrap_or(a.vm_rate.clone());
    let vm_gbps = input(crate::units::parse_rate(&vm_rate))? as f64 / 1e9;
    let density = input(model::density(
        &s.datapaths,
        share,
        vm_gbps,
        s.vdi_net_gbit / s.play_s,
    ))?;
    let rows = s.rows();
    let first = s.datapaths[0].name.clone();
    let last = s.datapaths[s.datapaths.len() - 1].name.clone();
    // A saving is desktops only where both ends of it fit on the host.
    let fits = rows[0].datapaths.values().all(|c| c["fits"] != false);
    let bought = fits.then(|| model::desktops_bought(rows[0].saving_pct, share));
    if a.json {
        print_json(
            &serde_json::json!({"source": source, "points_used": used, "scenario": s, "rows": rows, "density": density,
            "first_row_saving_buys_desktops": bought}),
        );
        return Ok(());
    }
    crate::outln!(
        "host CPU on the networks of {} desktops ({source}): {} Gbit each through the VM network in T_buffer, {} Gbit of screen over {} s",
        s.vms, s.vm_net_gbit, s.vdi_net_gbit, s.play_s
    );
    for u in &used {
        crate::outln!("  {u}");
    }
    let names: Vec<&str> = s.datapaths.iter().map(|d| d.name.as_str()).collect();
    let w = names.iter().map(|n| n.len()).max().unwrap_or(6).max(7);
    let mut head = format!("{:>8} |", "T_buffer");
    for part in ["VM network", "VDI network"] {
        for n in &names {
            head += &format!(" {:>w$}", format!("{n}"));
        }
        head += &format!(" {:>7} |", "diff");
        let _ = part;
    }
    head += "  saving";
    crate::outln!(
        "{:>8} | {:^vm$} | {:^vd$} |",
        "",
        "VM network (%)",
        "VDI network (%)",
        vm = (w + 1) * names.len() + 7,
        vd = (w + 1) * names.len() + 7
    );
    crate::outln!("{head}");
    for r in &rows {
        let mut line = format!("{:>8} |", r.t_buffer_s);
        if names.len() == 2 {
            // As the paper prints it: cells rounded, differences of the rounded cells.
            let p = model::paper_rounding(r, &first, &last);
            let (a, b, c, d) = (cell(p[0], w), cell(p[1], w), cell(p[3], w), cell(p[4], w));
            line += &format!(
                " {a} {b} {:>7.2} | {c} {d} {:>7.2} | {:>7.2}",
                p[2], p[5], p[6]
            );
        } else {
            for key in ["vm_net_pct", "vdi_net_pct"] {
                for n in &names {
                    line += &format!(" {}", cell(r.datapaths[*n][key].as_f64().unwrap_or(0.0), w));
                }
                line += &format!(
                    " {:>7.2} |",
                    if key == "vm_net_pct" {
                        r.vm_net_diff_pct
                    } else {
                        r.vdi_net_diff_pct
                    }
                );
            }
            line += &format!(" {:>7.2}", r.saving_pct);
        }
        crate::outln!("{line}");
    }
    if names.len() == 2 {
        crate::outln!("(differences as the paper prints them: between the rounded cells; --json has the exact values)");
    }
    // Percentages over 100 are not shares of this host: say how much host it would take.
    for n in &names {
        let worst = rows.iter().filter_map(|r| {
            let c = &r.datapaths[*n];
            let total =
                c["vm_net_pct"].as_f64().unwrap_or(0.0) + c["vdi_net_pct"].as_f64().unwrap_or(0.0);
            (c["fits"] == false).then_some((r.t_buffer_s, total))
        });
        if let Some((t, total)) = worst.into_iter().next() {
            crate::outln!(
                "{n} at T_buffer {t} s: {} (network CPU {:.0} % of the host)",
                model::does_not_fit(total, host_cores),
                total
            );
        }
    }
    crate::outln!(
        "\ndensity at {share} % of the host per desktop, {vm_rate} VM network and a {:.4} Gb/s screen stream each:",
        s.vdi_net_gbit / s.play_s
    );
    for d in &density.datapaths {
        crate::outln!(
            "  {:<w$} {:>3} desktops ({:.3} % network CPU each){}",
            d.name,
            d.max_desktops,
            d.network_pct_per_desktop,
            if d.more_than_last > 0 {
                format!(", {} more than {last}", d.more_than_last)
            } else {
                String::new()
            }
        );
    }
    match bought {
        Some(n) => crate::outln!("  the saving at T_buffer {} s ({:.2} %) buys {n} more desktops at {share} % each", rows[0].t_buffer_s, rows[0].saving_pct),
        None => crate::outln!("  the saving at T_buffer {} s cannot be spent as desktops here: {last} does not fit on this host at these costs", rows[0].t_buffer_s),
    }
    Ok(())
}
