//! Per-Gbit costs from a stored run instead of the paper's: the VM network per mode (guest →
//! client TCP_STREAM), the VDI network from host → client streams with offloads on (TSO/GSO, the
//! stand-in for paper 1's TOE) or off. A cost comes only from a point nothing bound (a paced load
//! below every limit, as paper 1's Table IV), unless the caller allows bound points; every point
//! used, and every point skipped with its reason, is named.

use super::model::Datapath;
use super::Error;
use crate::records::{PointRecord, RunRow};
use crate::vocab::{Direction, Mode, TestKind};

#[derive(Debug)]
pub struct Costs {
    pub datapaths: Vec<Datapath>,
    /// Which points the costs came from.
    pub used: Vec<String>,
    /// Points passed over and why, and what else the reader should know.
    pub notes: Vec<String>,
    /// The host's cores in the lab the costs were measured on (when the run recorded them).
    pub host_cores: Option<usize>,
}

/// How points are chosen.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pick {
    /// Message size, bytes (default: 8 KB, else the largest).
    pub size: Option<u64>,
    /// Offered load per stream: Some(None) full speed, Some(Some(bits/s)) paced; None: the largest
    /// paced load nothing bound, else full speed.
    pub load: Option<Option<u64>>,
    /// Take points a saturated core, backend or the wire bound (their CPU per Gb/s is a ceiling's).
    pub allow_bound: bool,
    /// Take costs from points whose confidence interval is wider than their run asked (or short
    /// of its level); they are then named in the notes. Without it a plan from one is refused.
    pub allow_wide: bool,
}

fn describe(p: &PointRecord) -> String {
    let load = p
        .key
        .load_bps
        .map(|r| format!(" at {}", crate::units::Rate(r)))
        .unwrap_or_else(|| " at max".into());
    format!(
        "point {} ({} {}, {} B{load})",
        p.seq, p.key.mode, p.key.direction, p.key.message_bytes
    )
}

/// The point of one series to take, with the reasons others were passed over.
fn pick<'a>(
    pts: &[&'a PointRecord],
    how: Pick,
    skipped: &mut Vec<String>,
) -> Option<&'a PointRecord> {
    let mut ok: Vec<&PointRecord> = Vec::new();
    for &p in pts {
        match &p.cost_bound() {
            Some(b) if !how.allow_bound => skipped.push(format!(
                "skipped {}: bound by {b} (pass --allow-bound to use it)",
                describe(p)
            )),
            _ => ok.push(p),
        }
    }
    if let Some(l) = how.load {
        ok.retain(|p| p.key.load_bps == l);
    } else if ok.iter().any(|p| p.key.load_bps.is_some()) {
        // Paced points: the largest load nothing bound.
        let top = ok.iter().filter_map(|p| p.key.load_bps).max();
        ok.retain(|p| p.key.load_bps == top);
    }
    match how.size {
        Some(s) => ok.into_iter().find(|p| p.key.message_bytes == s),
        None => ok
            .iter()
            .copied()
            .find(|p| p.key.message_bytes == 8192)
            .or_else(|| ok.iter().copied().max_by_key(|p| p.key.message_bytes)),
    }
}

fn usable(p: &PointRecord) -> bool {
    p.error.is_none()
        && p.key.test == TestKind::TcpStream
        && p.normalized_pct_per_gbps.is_some_and(|v| v > 0.0)
}

fn cost(p: &PointRecord) -> f64 {
    p.normalized_pct_per_gbps.unwrap_or(0.0)
}

/// " [lo–hi] (±x % at L %)": the cost's interval as the plan carries it, or nothing.
fn shown(p: &PointRecord) -> String {
    p.spread
        .as_ref()
        .and_then(|r| Some((r, r.normalized_pct_per_gbps.as_ref()?)))
        .filter(|(_, s)| s.interval.is_some())
        .map(|(r, s)| {
            let i = s.interval.expect("filtered above");
            format!(" [{:.4}–{:.4}] ({})", i.lo, i.hi, s.against(&r.goal()))
        })
        .unwrap_or_default()
}

/// The VDI network's points: the host streaming to the client, or, in a run without those, the
/// `native` guest's stream to the client: a process on the host with the host's address sending
/// through the host's own stack and the wire, the path the protocol engine's screens take.
fn vdi_points<'a>(
    points: &'a [PointRecord],
    offload: bool,
    notes: &mut Vec<String>,
) -> Vec<&'a PointRecord> {
    let of = |d: Direction, m: Option<Mode>| -> Vec<&'a PointRecord> {
        points
            .iter()
            .filter(|p| usable(p) && p.key.direction == d && p.key.tso == offload)
            .filter(|p| m.is_none_or(|m| p.key.mode == m))
            .collect()
    };
    let host = of(Direction::HostToClient, None);
    if !host.is_empty() {
        return host;
    }
    let native = of(Direction::GuestToClient, Some(Mode::Native));
    if !native.is_empty() {
        notes.push("no host → client point: the VDI network's cost is native guest → client's (a process on the host sending through the host's own stack, as the protocol engine does)".into());
    }
    native
}

/// Why each host → client stream could give no cost (it failed, or measured no host CPU per
/// Gb/s), as " (…; …)"; empty when none was passed over for that.
fn passed_over(points: &[PointRecord], dirs: &[Direction]) -> String {
    let why: Vec<String> = points
        .iter()
        .filter(|p| dirs.contains(&p.key.direction) && p.key.test == TestKind::TcpStream)
        .filter(|p| !usable(p))
        .map(|p| match (&p.error, &p.unmeasurable) {
            (Some(e), _) => format!("{} failed: {}", describe(p), crate::text::clip(e)),
            (None, Some(u)) => format!("{}'s host CPU could not be told: {u}", describe(p)),
            (None, None) => format!("{} measured no host CPU per Gb/s", describe(p)),
        })
        .collect();
    match why.is_empty() {
        true => String::new(),
        false => format!(" ({})", why.join("; ")),
    }
}

/// A cost from a point whose interval is wider than asked is refused unless allowed, naming
/// each such point and what its interval reached; allowed, each is named in the notes.
fn wide_costs(
    run: &RunRow,
    used: &[&PointRecord],
    allow: bool,
    notes: &mut Vec<String>,
) -> Result<(), Error> {
    let mut seen = std::collections::BTreeSet::new();
    // A point may give two costs (the native guest's stream stands for the VDI network too).
    let wide: Vec<String> = used
        .iter()
        .filter(|p| p.wide == Some(true) && seen.insert(p.seq))
        .map(|p| {
            let how = p
                .spread
                .as_ref()
                .and_then(|r| Some((r, r.normalized_pct_per_gbps.as_ref()?)))
                .map(|(r, s)| format!(": CPU per Gb/s {} ({})", s.text(2), s.against(&r.goal())))
                .unwrap_or_default();
            format!("{}{how}", describe(p))
        })
        .collect();
    if wide.is_empty() {
        return Ok(());
    }
    if !allow {
        return Err(Error::NoData(format!(
            "run {}: costs from points whose confidence interval is wider than asked: {}; measure them again with more rounds (--iterations, --confidence), or pass --allow-wide to plan with them as ranges",
            run.id,
            wide.join("; ")
        )));
    }
    notes.extend(wide.into_iter().map(|s| format!("wide cost used: {s}")));
    Ok(())
}

/// The points that have no cost because the meter could not tell their host CPU, by name.
fn unmeasurable(points: &[PointRecord], notes: &mut Vec<String>) {
    for p in points.iter().filter(|p| p.error.is_none()) {
        if let Some(why) = &p.unmeasurable {
            notes.push(format!("skipped {}: unmeasurable ({why})", describe(p)));
        }
    }
}

/// A point's cost interval (its CPU per Gb/s), where its units gave one.
fn interval(p: &PointRecord) -> Option<[f64; 2]> {
    let i = p
        .spread
        .as_ref()?
        .normalized_pct_per_gbps
        .as_ref()?
        .interval?;
    Some([i.lo, i.hi])
}

/// `vdi_required`: fail without host → client points (plan), or leave the VDI cost at 0 (report).
pub fn costs(
    run: &RunRow,
    points: &[PointRecord],
    how: Pick,
    vdi_offload: bool,
    vdi_required: bool,
) -> Result<Costs, Error> {
    let vm: Vec<&PointRecord> = points
        .iter()
        .filter(|p| {
            usable(p)
                && matches!(
                    p.key.direction,
                    Direction::GuestToClient | Direction::GuestsToClient
                )
        })
        .collect();
    if vm.is_empty() {
        return Err(Error::NoData(format!("run {} has no guest-to-client TCP_STREAM points with a cost (the VM network){}: run an experiment with that direction, e.g. experiments/papers/icsnc2013/full.toml", run.id, passed_over(points, &[Direction::GuestToClient, Direction::GuestsToClient]))));
    }
    let mut used = Vec::new();
    let mut notes = Vec::new();
    unmeasurable(points, &mut notes);
    let host = vdi_points(points, vdi_offload, &mut notes);
    let unbound = if how.allow_bound {
        ""
    } else {
        " nothing bound"
    };
    let mut used_points: Vec<&PointRecord> = Vec::new();
    let vdi = match pick(&host, how, &mut notes) {
        Some(p) => {
            used_points.push(p);
            used.push(format!("VDI network: {}, offloads {}: {:.4} % per Gb/s{}", describe(p), if p.key.tso { "on" } else { "off" }, cost(p), shown(p)));
            (cost(p), interval(p))
        }
        None if vdi_required => {
            return Err(Error::NoData(format!(
                "run {} has no host-to-client TCP_STREAM point{unbound} with offloads {} (the VDI network){}{}: add direction host-to-client with a paced load (loads = [\"500mbit\"]), or pass --allow-bound",
                run.id,
                if vdi_offload { "on" } else { "off" },
                how.size.map(|s| format!(" at {s} B")).unwrap_or_default(),
                passed_over(points, &[Direction::HostToClient])
            )))
        }
        None => {
            notes.push(format!("no host → client point{unbound} in this run: the VDI network's cost is left at 0"));
            (0.0, None)
        }
    };
    let mut modes: Vec<Mode> = Vec::new();
    for p in &vm {
        if !modes.contains(&p.key.mode) {
            modes.push(p.key.mode);
        }
    }
    let mut datapaths = Vec::new();
    for m in modes {
        let series: Vec<&PointRecord> = vm.iter().copied().filter(|p| p.key.mode == m).collect();
        let Some(p) = pick(&series, how, &mut notes) else {
            notes.push(format!(
                "{m}: no VM network point{unbound} to take a cost from"
            ));
            continue;
        };
        used_points.push(p);
        used.push(format!(
            "VM network {m}: {}: {:.4} % per Gb/s{}",
            describe(p),
            cost(p),
            shown(p)
        ));
        if p.placed == Some(false) {
            notes.push(format!(
                "{m}: {} ran unplaced: the client's receive work may be counted as host CPU",
                describe(p)
            ));
        }
        datapaths.push(Datapath {
            name: m.to_string(),
            vdi_net_pct_per_gbps: vdi.0,
            vm_net_pct_per_gbps: cost(p),
            vdi_net_interval: vdi.1,
            vm_net_interval: interval(p),
        });
    }
    wide_costs(run, &used_points, how.allow_wide, &mut notes)?;
    if datapaths.is_empty() {
        return Err(Error::NoData(format!(
            "run {} has no VM network point{unbound} to take costs from ({}): measure paced loads (loads = [\"500mbit\"] in the experiment) or pass --allow-bound",
            run.id,
            notes.first().cloned().unwrap_or_default()
        )));
    }
    // Cheapest first: the rows' differences are then what it saves against the dearest.
    datapaths.sort_by(|a, b| a.vm_net_pct_per_gbps.total_cmp(&b.vm_net_pct_per_gbps));
    let host_cores = vm.iter().find_map(|p| {
        p.host_cpus
            .as_deref()
            .and_then(|c| c.parse::<crate::units::CpuList>().ok())
            .map(|l| l.len())
    });
    Ok(Costs {
        datapaths,
        used,
        notes,
        host_cores,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::PointKey;

    fn sample_run() -> RunRow {
        RunRow::sample(1, "r", None)
    }

    fn pt(
        seq: u32,
        mode: &str,
        dir: &str,
        load: Option<u64>,
        cost: f64,
        bound: Option<&str>,
    ) -> PointRecord {
        PointRecord {
            seq,
            key: PointKey {
                mode: mode.parse().unwrap(),
                direction: dir.parse().unwrap(),
                message_bytes: 8192,
                load_bps: load,
                ..Default::default()
            },
            normalized_pct_per_gbps: Some(cost),
            bound_by: bound.map(|b| b.parse().unwrap()),
            host_cpus: Some("0".into()),
            placed: Some(true),
            ..Default::default()
        }
    }

    /// A point paced at `mbit` Mb/s that nothing bound: a cost.
    fn paced(seq: u32, mode: &str, dir: &str, mbit: u64, cost: f64) -> PointRecord {
        pt(seq, mode, dir, Some(mbit * 1_000_000), cost, None)
    }

    #[test]
    fn a_missing_vdi_cost_names_the_host_streams_passed_over_and_why() {
        let failed = PointRecord {
            error: Some("the agent in host died mid-test".into()),
            ..paced(4, "bridge", "host-to-client", 500, 0.0)
        };
        let pts = vec![paced(2, "bridge", "guest-to-client", 500, 14.0), failed];
        let e = costs(&sample_run(), &pts, Pick::default(), true, true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("(point 4 (bridge host-to-client")
                && e.contains("failed: the agent in host died mid-test)"),
            "{e}"
        );
        let mut zero = pts;
        zero[1].error = None;
        let e = costs(&sample_run(), &zero, Pick::default(), true, true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("measured no host CPU per Gb/s"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }

    #[test]
    fn a_run_whose_vm_streams_have_no_cost_is_refused_with_the_meters_reason() {
        let steal = "4 of 4 units: steal 3.0 % of the host's cores";
        let unmeasured = PointRecord {
            normalized_pct_per_gbps: None,
            unmeasurable: Some(steal.into()),
            ..paced(2, "bridge", "guest-to-client", 500, 0.0)
        };
        let pts = vec![unmeasured, paced(4, "bridge", "host-to-client", 500, 6.0)];
        let e = costs(&sample_run(), &pts, Pick::default(), true, true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no guest-to-client TCP_STREAM points with a cost")
                && e.contains(&format!("host CPU could not be told: {steal}")),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
    }

    #[test]
    fn only_points_nothing_bound_give_costs_unless_allowed() {
        let pts = vec![
            pt(1, "bridge", "guest-to-client", None, 10.0, Some("host")),
            paced(2, "bridge", "guest-to-client", 500, 14.0),
            pt(3, "macvlan", "guest-to-client", None, 8.0, Some("host")),
            paced(4, "bridge", "host-to-client", 500, 6.0),
        ];
        let c = costs(&sample_run(), &pts, Pick::default(), true, true).unwrap();
        assert_eq!(c.datapaths.len(), 1, "macvlan has only a bound point");
        assert_eq!(
            (
                c.datapaths[0].name.as_str(),
                c.datapaths[0].vm_net_pct_per_gbps,
                c.datapaths[0].vdi_net_pct_per_gbps
            ),
            ("bridge", 14.0, 6.0)
        );
        assert!(
            c.used
                .iter()
                .any(|u| u.contains("point 2") && u.contains("500mbit")),
            "{:?}",
            c.used
        );
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("skipped point 1") && n.contains("bound by host")),
            "{:?}",
            c.notes
        );
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("macvlan: no VM network point nothing bound")),
            "{:?}",
            c.notes
        );
        assert_eq!(c.host_cores, Some(1));
        let all = costs(
            &sample_run(),
            &pts,
            Pick {
                allow_bound: true,
                ..Pick::default()
            },
            true,
            true,
        )
        .unwrap();
        assert_eq!(all.datapaths.len(), 2);
        // Only bound points: refused, naming the way out.
        let e = costs(&sample_run(), &pts[..1], Pick::default(), true, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--allow-bound"), "{e}");
    }

    #[test]
    fn without_a_host_stream_the_vdi_cost_is_the_native_guests() {
        let pts = vec![
            paced(1, "native", "guest-to-client", 300, 40.0),
            paced(2, "macvlan", "guest-to-client", 300, 42.0),
        ];
        let c = costs(&sample_run(), &pts, Pick::default(), true, true).unwrap();
        assert!(c.datapaths.iter().all(|d| d.vdi_net_pct_per_gbps == 40.0));
        assert!(
            c.notes.iter().any(|n| n.contains("native guest → client")),
            "{:?}",
            c.notes
        );
        // A host stream, where there is one, is the VDI network's.
        let mut with_host = pts.clone();
        with_host.push(paced(3, "bridge", "host-to-client", 300, 38.0));
        let c = costs(&sample_run(), &with_host, Pick::default(), true, true).unwrap();
        assert!(c.datapaths.iter().all(|d| d.vdi_net_pct_per_gbps == 38.0));
        // Neither: refused, naming the way out.
        let e = costs(&sample_run(), &pts[1..], Pick::default(), true, true).unwrap_err();
        assert!(e.to_string().contains("host-to-client"), "{e}");
    }

    #[test]
    fn the_largest_paced_load_is_preferred_or_the_one_asked_for() {
        let pts = vec![
            paced(1, "bridge", "guest-to-client", 100, 20.0),
            paced(2, "bridge", "guest-to-client", 500, 14.0),
            pt(3, "bridge", "guest-to-client", None, 10.0, None),
        ];
        let c = costs(&sample_run(), &pts, Pick::default(), true, false).unwrap();
        assert_eq!(c.datapaths[0].vm_net_pct_per_gbps, 14.0);
        let c = costs(
            &sample_run(),
            &pts,
            Pick {
                load: Some(Some(100_000_000)),
                ..Default::default()
            },
            true,
            false,
        )
        .unwrap();
        assert_eq!(c.datapaths[0].vm_net_pct_per_gbps, 20.0);
        let c = costs(
            &sample_run(),
            &pts,
            Pick {
                load: Some(None),
                ..Default::default()
            },
            true,
            false,
        )
        .unwrap();
        assert_eq!(c.datapaths[0].vm_net_pct_per_gbps, 10.0);
    }

    /// A point whose cost was measured to `[lo, hi]` over six units, reaching the goal or not.
    fn with_interval(mut p: PointRecord, lo: f64, hi: f64) -> PointRecord {
        let c = p.normalized_pct_per_gbps.unwrap();
        let units = [lo, c, c, c, c, hi];
        let s = crate::stats::spread(&units, 95);
        let goal = crate::stats::Goal::default();
        p.wide = Some(!s.meets(&goal));
        p.spread = Some(crate::records::Repeats {
            runs: 6,
            confidence_level: 95,
            confidence_met: None,
            goal: None,
            throughput_gbps: crate::stats::spread(&[0.3; 6], 95),
            transactions_per_s: None,
            host_busy_pct: None,
            normalized_pct_per_gbps: Some(s),
            wide: p.wide == Some(true),
            bound_left_out: 0,
            unmeasurable: None,
            shown: None,
            each: vec![],
            rounds: None,
        });
        p
    }

    #[test]
    fn a_cost_whose_interval_is_wider_than_asked_is_refused_unless_allowed() {
        let pts = vec![
            with_interval(paced(1, "bridge", "guest-to-client", 300, 44.0), 43.0, 45.0),
            with_interval(paced(2, "nat", "guest-to-client", 300, 48.0), 40.0, 56.0),
            paced(3, "native", "host-to-client", 300, 34.0),
        ];
        let e = costs(&sample_run(), &pts, Pick::default(), true, true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("wider than asked") && e.contains("point 2 (nat"),
            "{e}"
        );
        assert!(e.contains("±16.7 % at 96.9 %"), "{e}");
        assert!(e.contains("--allow-wide") && !e.contains("point 1 "), "{e}");
        let how = Pick {
            allow_wide: true,
            ..Pick::default()
        };
        let c = costs(&sample_run(), &pts, how, true, true).unwrap();
        assert_eq!(c.datapaths.len(), 2);
        assert!(c
            .notes
            .iter()
            .any(|n| n.contains("wide cost used: point 2")));
        // The plan carries each interval.
        let nat = c.datapaths.iter().find(|d| d.name == "nat").unwrap();
        assert_eq!(nat.vm_net_interval, Some([40.0, 56.0]));
    }

    #[test]
    fn an_unmeasurable_point_is_named_and_gives_no_cost() {
        let mut lost = paced(2, "nat", "guest-to-client", 300, 48.0);
        lost.normalized_pct_per_gbps = None;
        lost.unmeasurable = Some("steal 12.0 % of the host's cores".into());
        let pts = vec![
            paced(1, "bridge", "guest-to-client", 300, 44.0),
            lost,
            paced(3, "native", "host-to-client", 300, 34.0),
        ];
        let c = costs(&sample_run(), &pts, Pick::default(), true, true).unwrap();
        assert_eq!(c.datapaths.len(), 1);
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("skipped point 2 (nat")
                    && n.contains("unmeasurable (steal 12.0 %")),
            "{:?}",
            c.notes
        );
    }
}
