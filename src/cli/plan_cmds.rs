//! `vnetlab plan`: paper 1's capacity model for one or more datapaths, from a preset, flags, a
//! TOML file or a stored run; Table V's rows, the density the savings buy, as a table or JSON.

use clap::Args;
use serde::Deserialize;
use std::path::PathBuf;

use super::fail::{CmdResult, Fail};
use super::shared::print_json;
use crate::capacity::{farm, from_run, model, preset};
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
    /// The store for --from-run and --farm
    #[command(flatten)]
    db: super::exp_cmds::DbArgs,
    /// Plan a farm: each host's costs from its run of --run-id (hosts grouped by CPU and NICs,
    /// a host that differs from its class marked) and the farm's desktops per datapath
    #[arg(long, requires = "run_id", conflicts_with_all = ["from_run", "preset", "file", "datapaths"])]
    farm: bool,
    /// --farm: the farm's run id (`run --run-id`)
    #[arg(long, value_name = "ID", requires = "farm")]
    run_id: Option<String>,
    /// --from-run: take the points at this message size [default: 8K, else the largest]
    #[arg(long)]
    size: Option<String>,
    /// --from-run: take the points at this offered load per stream: max or a rate such as 500mbit [default: the largest paced load nothing bound, else max]
    #[arg(long)]
    load: Option<String>,
    /// --from-run: also take costs from points a saturated core, backend or the wire bound
    #[arg(long)]
    allow_bound: bool,
    /// --from-run: also take costs from points whose confidence interval is wider than their run
    /// asked (each is named, and desktops become ranges)
    #[arg(long, alias = "allow-unstable")]
    allow_wide: bool,
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
    /// One JSON document on stdout, for scripts
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

fn parse_datapath(s: &str) -> Result<model::Datapath, Fail> {
    let bad = || {
        Fail::Input(format!(
            "bad --datapath '{s}': write NAME:VDI_1G:VM_1G, e.g. SRIOV:0.22727:2.176"
        ))
    };
    let p: Vec<&str> = s.split(':').collect();
    if p.len() != 3 || p[0].is_empty() {
        return Err(bad());
    }
    let f = |x: &str| x.parse::<f64>().map_err(|_| bad());
    Ok(model::Datapath {
        name: p[0].into(),
        vdi_net_pct_per_gbps: f(p[1])?,
        vm_net_pct_per_gbps: f(p[2])?,
        ..Default::default()
    })
}

fn parse_list(s: &str) -> Result<Vec<f64>, Fail> {
    s.split(',')
        .map(|x| {
            x.trim().parse::<f64>().map_err(|_| {
                Fail::Input(format!(
                    "bad --buffer '{s}': write seconds separated by commas, e.g. 16,20,40"
                ))
            })
        })
        .collect()
}

pub fn plan(a: PlanArgs) -> CmdResult {
    if a.farm {
        return plan_farm(&a);
    }
    let file = read_file(a.file.as_deref())?;
    let (s, from) = scenario(&a, &file)?;
    let share = file.desktop_share.unwrap_or(a.desktop_share);
    let vm_rate = file.vm_rate.clone().unwrap_or(a.vm_rate.clone());
    let vm_gbps = crate::units::parse_rate(&vm_rate)? as f64 / 1e9;
    let density = model::density(&s.datapaths, share, vm_gbps, s.vdi_net_gbit / s.play_s)?;
    let rows = s.rows();
    // A saving is desktops only where both ends of it fit on the host.
    let fits = rows[0].datapaths.values().all(|c| c.fits);
    let bought = fits.then(|| model::desktops_bought(rows[0].saving_pct, share));
    if a.json {
        let out = PlanOut {
            density,
            first_row_saving_buys_desktops: bought,
            points_used: from.used,
            rows,
            scenario: s,
            source: from.source,
        };
        // Through a JSON value, so every object's keys print sorted, as they always have.
        print_json(&serde_json::to_value(out).unwrap());
        return Ok(());
    }
    crate::outln!(
        "host CPU on the networks of {} desktops ({}): {} Gbit each through the VM network in T_buffer, {} Gbit of screen over {} s",
        s.vms, from.source, s.vm_net_gbit, s.vdi_net_gbit, s.play_s
    );
    for u in &from.used {
        crate::outln!("  {u}");
    }
    crate::report::plan::rows(&s, &rows, from.host_cores);
    crate::outln!(
        "\ndensity at {share} % of the host per desktop, {vm_rate} VM network and a {:.4} Gb/s screen stream each:",
        s.vdi_net_gbit / s.play_s
    );
    crate::report::plan::density(&s, &density, &rows[0], bought, share);
    Ok(())
}

/// `plan --json`: the plan and where its costs came from.
#[derive(serde::Serialize)]
struct PlanOut {
    density: model::Density,
    first_row_saving_buys_desktops: Option<u32>,
    points_used: Vec<String>,
    rows: Vec<model::Row>,
    scenario: model::Scenario,
    source: String,
}

/// Where a plan's costs came from: a description, the stored points used, the host's cores.
struct Provenance {
    source: String,
    used: Vec<String>,
    host_cores: Option<usize>,
}

fn read_file(f: Option<&std::path::Path>) -> Result<PlanFile, Fail> {
    let Some(f) = f else {
        return Ok(PlanFile::default());
    };
    let text = crate::text::read_capped(f, crate::text::MAX_FILE)?;
    toml::from_str(&text).map_err(|e| {
        let name = crate::text::clip(&f.display().to_string());
        Fail::Input(crate::lab::topology::toml_error(&e, &text, &name))
    })
}

/// The scenario: the preset (or paper 1's scenario without datapaths), then the file, then a
/// stored run's costs, then the flags.
fn scenario(a: &PlanArgs, file: &PlanFile) -> Result<(model::Scenario, Provenance), Fail> {
    let preset_name = a.preset.clone().or(file.preset.clone());
    let mut s = match &preset_name {
        Some(p) => preset::get(p)?,
        None => model::Scenario {
            datapaths: vec![],
            ..preset::get("icsnc2013").unwrap()
        },
    };
    let mut from = Provenance {
        source: preset_name
            .as_ref()
            .map(|p| format!("preset {p}"))
            .unwrap_or_else(|| "paper 1's scenario".into()),
        used: Vec::new(),
        host_cores: None,
    };
    apply(
        &mut s,
        file.vms,
        file.vm_net_gbit,
        file.vdi_net_gbit,
        file.play_s,
    );
    if let Some(v) = file.buffer_s.clone() {
        s.buffer_s = v;
    }
    if !file.datapath.is_empty() {
        s.datapaths = file.datapath.iter().map(FileDatapath::to_model).collect();
    }
    if let Some(run) = &a.from_run {
        from = costs_from_run(a, *run, &mut s)?;
    }
    if !a.datapaths.is_empty() {
        let parsed: Result<_, _> = a.datapaths.iter().map(|d| parse_datapath(d)).collect();
        s.datapaths = parsed?;
        from.source = "the command line".into();
    }
    apply(&mut s, a.vms, a.vm_net_gbit, a.vdi_net_gbit, a.play_s);
    if let Some(b) = &a.buffer {
        s.buffer_s = parse_list(b)?;
    }
    s.validate()?;
    Ok((s, from))
}

/// Sets the scenario's numbers that are given.
fn apply(
    s: &mut model::Scenario,
    vms: Option<u32>,
    vm_net_gbit: Option<f64>,
    vdi_net_gbit: Option<f64>,
    play_s: Option<f64>,
) {
    s.vms = vms.unwrap_or(s.vms);
    s.vm_net_gbit = vm_net_gbit.unwrap_or(s.vm_net_gbit);
    s.vdi_net_gbit = vdi_net_gbit.unwrap_or(s.vdi_net_gbit);
    s.play_s = play_s.unwrap_or(s.play_s);
}

impl FileDatapath {
    fn to_model(&self) -> model::Datapath {
        model::Datapath {
            name: self.name.clone(),
            vdi_net_pct_per_gbps: self.vdi_1g,
            vm_net_pct_per_gbps: self.vm_1g,
            ..Default::default()
        }
    }
}

/// `--from-run`: the datapaths' per-Gbit costs from a stored run's points.
fn costs_from_run(
    a: &PlanArgs,
    run: crate::records::RunRef,
    s: &mut model::Scenario,
) -> Result<Provenance, Fail> {
    let store = a.db.read()?;
    let r = store.find_run(run)?;
    let pts: Vec<PointRecord> = store.points(r.id)?.into_iter().map(|(_, p)| p).collect();
    let pick = pick(a)?;
    let c = from_run::costs(&r, &pts, pick, a.vdi_offload, true)?;
    s.datapaths = c.datapaths;
    Ok(Provenance {
        source: format!("run {} ({})", r.id, r.name),
        used: c.used.into_iter().chain(c.notes).collect(),
        host_cores: c.host_cores,
    })
}

/// `--farm`: every host's run of the farm's run id, planned together.
fn plan_farm(a: &PlanArgs) -> CmdResult {
    let run = a.run_id.clone().unwrap_or_default();
    let runs = super::farm_cmds::farm_runs(&a.db.read()?, &run)?;
    let s = preset::get("icsnc2013")?;
    let vdi_gbps = a.vdi_net_gbit.unwrap_or(s.vdi_net_gbit) / a.play_s.unwrap_or(s.play_s);
    let ask = farm::Ask {
        pick: pick(a)?,
        vdi_offload: a.vdi_offload,
        desktop_share_pct: a.desktop_share,
        vm_gbps: crate::units::parse_rate(&a.vm_rate)? as f64 / 1e9,
        vdi_gbps,
    };
    let f = farm::plan(&run, &runs, ask)?;
    if a.json {
        print_json(&f);
        return Ok(());
    }
    crate::outln!(
        "desktops at {} % of the host each for their own work, {} VM network and a {:.4} Gb/s screen stream each",
        a.desktop_share, a.vm_rate, vdi_gbps
    );
    crate::report::plan::farm(&f);
    Ok(())
}

/// Which points a plan from stored runs takes (`--size`, `--load`, `--allow-bound`, `--allow-wide`).
fn pick(a: &PlanArgs) -> Result<from_run::Pick, Fail> {
    let size = a
        .size
        .as_deref()
        .map(crate::units::parse_size)
        .transpose()?;
    let load = match a.load.as_deref() {
        None => None,
        Some("max") => Some(None),
        Some(r) => Some(Some(
            crate::units::parse_rate(r).map_err(|e| Fail::Input(format!("--load: {e}, or max")))?,
        )),
    };
    Ok(from_run::Pick {
        size: size.map(|v| v as u64),
        load,
        allow_bound: a.allow_bound,
        allow_wide: a.allow_wide,
    })
}
