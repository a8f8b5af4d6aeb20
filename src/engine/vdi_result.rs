//! A VDI test's result per desktop and in total, from both sides' reports: the client's frames,
//! delays and latencies, the engine's skipped ticks, the bytes each way. The result's types are
//! the stored document's (`records::vdi`).

use hdrhistogram::Histogram;

use super::proto::VdiReport;
use crate::records::vdi::{Desktop, Percentiles, Total, VdiResult};

fn hist(pairs: &[(u64, u64)]) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
    for &(v, c) in pairs {
        let _ = h.record_n(v.max(1), c);
    }
    h
}

fn percentiles(h: &Histogram<u64>) -> Option<Percentiles> {
    (!h.is_empty()).then(|| Percentiles {
        p50: h.value_at_quantile(0.5) as f64 / 1e3,
        p99: h.value_at_quantile(0.99) as f64 / 1e3,
        max: h.max() as f64 / 1e3,
    })
}

/// One desktop from its client's and its engine's reports (desktop `k`, from 0).
fn desktop(k: usize, client: &VdiReport, engine: &VdiReport, secs: f64) -> Desktop {
    Desktop {
        name: format!("desktop{}", k + 1),
        // The updates the session asked for (its changes, capped), where the engine counted
        // them; else the profile's mean.
        target_fps: if engine.due > 0 && secs > 0.0 {
            engine.due as f64 / secs
        } else {
            client.target_fps
        },
        fps: client.frames as f64 / secs,
        frame_delay_us: percentiles(&hist(&client.frame_delay_ns)),
        input_latency_us: percentiles(&hist(&client.input_latency_ns)),
        late_frames: client.late,
        skipped_frames: engine.skipped,
        bytes_screen: client.bytes_screen,
        bytes_input: engine.bytes_input.max(client.bytes_input),
        usb_gbps: (client.usb_in + engine.usb_in) as f64 * 8.0 / secs / 1e9,
        engine_own_pct: pct_of_core(engine.engine_user_s, engine.session_s),
        engine_kernel_pct: pct_of_core(engine.engine_sys_s, engine.session_s),
    }
}

fn pct_of_core(cpu_s: f64, wall_s: f64) -> f64 {
    if wall_s > 0.0 {
        100.0 * cpu_s / wall_s
    } else {
        0.0
    }
}

/// The result from each desktop's (client report, engine report), in desktop order.
pub fn combine(profile: &str, sides: &[(VdiReport, VdiReport)], secs: f64) -> VdiResult {
    let desktops: Vec<Desktop> = sides
        .iter()
        .enumerate()
        .map(|(k, (c, e))| desktop(k, c, e, secs))
        .collect();
    let (mut delay, mut input) = (hist(&[]), hist(&[]));
    for (c, _) in sides {
        let _ = delay.add(hist(&c.frame_delay_ns));
        let _ = input.add(hist(&c.input_latency_ns));
    }
    let sum = |f: fn(&Desktop) -> f64| desktops.iter().map(f).sum::<f64>();
    let late: u64 = desktops.iter().map(|d| d.late_frames).sum();
    let due = sum(|d| d.target_fps) * secs;
    let bytes_screen: u64 = desktops.iter().map(|d| d.bytes_screen).sum();
    let total = Total {
        desktops: desktops.len(),
        target_fps: sum(|d| d.target_fps),
        fps: sum(|d| d.fps),
        frame_delay_us: percentiles(&delay),
        input_latency_us: percentiles(&input),
        late_frames: late,
        late_pct: if due > 0.0 {
            100.0 * late as f64 / due
        } else {
            0.0
        },
        skipped_frames: desktops.iter().map(|d| d.skipped_frames).sum(),
        bytes_screen,
        bytes_input: desktops.iter().map(|d| d.bytes_input).sum(),
        screen_gbps: bytes_screen as f64 * 8.0 / secs / 1e9,
        usb_gbps: sum(|d| d.usb_gbps),
        engine_own_pct: sum(|d| d.engine_own_pct),
        engine_kernel_pct: sum(|d| d.engine_kernel_pct),
    };
    VdiResult {
        profile: profile.to_string(),
        desktops,
        total,
        clock: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desktops_and_totals_come_from_both_sides() {
        let client = VdiReport {
            target_fps: 30.0,
            frames: 290,
            late: 3,
            bytes_screen: 1_000_000,
            bytes_input: 500,
            usb_in: 125_000_000,
            frame_delay_ns: vec![(1_000_000, 99), (9_000_000, 1)],
            input_latency_ns: vec![(20_000_000, 10)],
            ..Default::default()
        };
        let engine = VdiReport {
            target_fps: 30.0,
            frames: 295,
            skipped: 5,
            bytes_input: 520,
            usb_in: 125_000_000,
            engine_user_s: 0.1,
            engine_sys_s: 0.4,
            session_s: 10.0,
            ..Default::default()
        };
        let r = combine(
            "video-rdp",
            &[(client.clone(), engine.clone()), (client, engine)],
            10.0,
        );
        let d = &r.desktops[1];
        assert_eq!(d.name, "desktop2");
        assert!((d.fps - 29.0).abs() < 1e-9);
        assert_eq!(
            (d.late_frames, d.skipped_frames, d.bytes_input),
            (3, 5, 520)
        );
        assert!((d.usb_gbps - 0.2).abs() < 1e-9);
        let fd = d.frame_delay_us.as_ref().unwrap();
        assert!(
            (fd.p50 - 1000.0).abs() < 2.0 && (fd.max - 9000.0).abs() < 10.0,
            "{fd:?}"
        );
        let t = &r.total;
        assert_eq!((t.desktops, t.late_frames), (2, 6));
        assert!((t.fps - 58.0).abs() < 1e-9 && (t.target_fps - 60.0).abs() < 1e-9);
        assert!((t.late_pct - 1.0).abs() < 1e-9);
        assert!(t.input_latency_us.is_some());
        assert!((d.engine_own_pct - 1.0).abs() < 1e-9 && (t.engine_kernel_pct - 8.0).abs() < 1e-9);
        let quiet = combine("idle", &[(VdiReport::default(), VdiReport::default())], 1.0);
        assert!(quiet.total.input_latency_us.is_none());
    }
}
