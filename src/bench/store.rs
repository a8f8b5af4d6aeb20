//! `vnetlab bench store`: what storing a point and reporting a run cost, against the length of
//! the shortest point vnetlab measures by default.

use std::time::Instant;

use super::Error;
use crate::records::{HostFacts, PointKey, PointRecord, RunRef};
use crate::store::Store;
use crate::vocab::{Direction, Gro, Mode, PartKind, TestKind};

/// What storing and reporting cost.
#[derive(serde::Serialize, Debug)]
pub struct StoreBench {
    pub points: u32,
    pub store_ms_per_point: f64,
    /// The store's time per point as a share of a default 2.5 s point.
    pub store_pct_of_default_point: f64,
    /// Reading the run back and rendering its HTML page, seconds.
    pub report_s: f64,
    pub report_bytes: usize,
}

/// Stores `points` synthetic points (load for timing only, in a temporary database that is
/// removed) the way a run does, one transaction each, then reads them back and renders the HTML
/// report.
pub fn measure(points: u32) -> Result<StoreBench, Error> {
    let path =
        std::env::temp_dir().join(format!("vnetlab-bench-store-{}.sqlite", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&path, false)?;
    let run = store.begin_run(&crate::store::NewRun {
        name: "bench",
        description: "synthetic points for timing",
        text: "",
        hash: "",
        facts: &HostFacts::default(),
        planned: points,
        fleet: None,
        started_at: None,
    })?;
    let modes = [
        Mode::Native,
        Mode::Bridge,
        Mode::Nat,
        Mode::Macvlan,
        Mode::Emulated,
        Mode::Paravirt,
    ];
    let sizes = [64u64, 256, 1024, 4096, 8192, 16384, 32768, 65536];
    // Each point carries a real stored result (a paravirt stream's, from a quick run): the
    // document's size is part of what storing costs.
    let measured = crate::records::measured::Measured::decode(include_str!(
        "../../tests/fixtures/measured-v1/stream-paravirt.json"
    ))
    .map_err(|e| Error::Failed(e.to_string()))?;
    let t0 = Instant::now();
    for i in 0..points {
        let p = PointRecord {
            seq: i + 1,
            key: PointKey {
                mode: modes[i as usize % modes.len()],
                guests: 1 + i / 48,
                direction: Direction::GuestToClient,
                test: TestKind::TcpStream,
                message_bytes: sizes[(i as usize / modes.len()) % sizes.len()],
                gro: Gro::Both,
                ..Default::default()
            },
            duration_s: 1.0,
            repeat: 1,
            throughput_gbps: Some(1.0 + (i % 17) as f64 / 3.0),
            host_busy_pct: Some(20.0 + (i % 13) as f64),
            normalized_pct_per_gbps: Some(5.0 + (i % 11) as f64),
            sd_host: Some(1.0),
            sd_send: Some(0.5),
            sd_recv: Some(0.4),
            samples: (1..=10).map(|k| (k as f64 * 0.1, 1.0)).collect(),
            parts: [
                "g1",
                "client",
                "host",
                "vnetlab driver",
                "other processes",
                "kernel threads",
                "kernel (unattributed)",
            ]
            .iter()
            .map(|n| (n.to_string(), PartKind::Guest, 5.0, 0.1))
            .collect(),
            result: Some(Box::new(measured.clone())),
            ..Default::default()
        };
        store.add_point(run, &p)?;
    }
    let store_s = t0.elapsed().as_secs_f64();
    let r = store.find_run(RunRef::Id(run))?;
    let t1 = Instant::now();
    let pts: Vec<PointRecord> = store.points(run)?.into_iter().map(|(_, p)| p).collect();
    let html = crate::report::html::page(&r, &pts, &crate::report::capacity::sections(&r, &pts))?;
    let report_s = t1.elapsed().as_secs_f64();
    drop(store);
    for s in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{s}", path.display()));
    }
    let per_point_ms = store_s * 1e3 / points as f64;
    Ok(StoreBench {
        points,
        store_ms_per_point: per_point_ms,
        // The shortest point vnetlab runs by default: 0.5 s warm-up + 2 s.
        store_pct_of_default_point: per_point_ms / 2500.0 * 100.0,
        report_s,
        report_bytes: html.len(),
    })
}
