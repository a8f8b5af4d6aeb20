//! Results as text for a terminal: a measured test (its result, vNIC counters, loads, the
//! movie's phases, where the host's CPU went, the spread over repeats), as `vnetlab test` and
//! `vnetlab meter` print them. Written to stdout line by line (a closed stdout ends quietly).

use crate::records::cpu::{CpuReport, HwCounters, PartCpu};
use crate::records::measured::{LoadReport, Measured, MoviePhases};
use crate::records::test::TestResult;
use crate::stats;

/// A measured test as text: the result, the vNIC counters, loads, the CPU and the repeats.
pub fn measured(out: &Measured, desktop_pct: Option<f64>) {
    result(&out.result);
    if let Some(v) = &out.vnic {
        for (g, x) in v {
            let extra = match &x.lro {
                None => String::new(),
                Some(l) => format!(
                    ", LRO: {} segments in, {} super-frames out, ratio {:.2}",
                    l.frames_in, l.superframes_out, l.lro_ratio
                ),
            };
            let model = match x.model {
                Some(crate::records::vnic::Model::Emulated) => "emulated",
                Some(crate::records::vnic::Model::Paravirt) => "paravirt",
                None => "?",
            };
            crate::outln!(
                "  vNIC {g} ({model}): from guest {} frames ({} GSO), to guest {} frames ({} GSO){extra}",
                x.from_guest.frames,
                x.from_guest.gso_frames,
                x.to_guest.frames,
                x.to_guest.gso_frames
            );
        }
    }
    loads(&out.loads);
    if let (Some(pct), Some(cpus)) = (desktop_pct, &out.cpus) {
        let burners = out
            .loads
            .iter()
            .filter(|l| matches!(l, LoadReport::Burner { .. }))
            .count();
        crate::outln!(
            "  desktops: {burners} guest(s) × {pct} % ask {:.2} cores of the host's {} (core(s) {}), which stand for paper 1's 16-core server",
            burners as f64 * pct / 100.0,
            cpus.host.0.len(),
            cpus.host
        );
    }
    if let Some(p) = &out.movie {
        movie(p);
    }
    if let Some(c) = &out.cpu {
        cpu(c);
    } else if let Some(e) = &out.cpu_error {
        crate::outln!("  CPU: not measured ({e})");
    }
    if let Some(r) = &out.repeats {
        repeats(r);
    }
}

/// A test's repeats: each headline figure as its median with the confidence interval, what that
/// interval reached against the goal, and the runs left out of the CPU figures.
fn repeats(r: &crate::records::Repeats) {
    let g = r.goal();
    let line = |name: &str, s: &stats::Spread, prec: usize| {
        crate::outln!("          {name} {} ({})", s.text(prec), s.against(&g));
    };
    crate::outln!(
        "  {} runs, each figure the median with its {} % confidence interval [low–high]{}:",
        r.runs,
        g.level,
        r.shown
            .map(|k| format!("; the details above are run {k}'s, the median by cost"))
            .unwrap_or_default()
    );
    match &r.transactions_per_s {
        Some(t) => line("transactions/s", t, 0),
        None => line("Gb/s", &r.throughput_gbps, 3),
    }
    if let Some(c) = &r.host_busy_pct {
        line("host CPU %", c, 2);
    }
    if let Some(c) = &r.normalized_pct_per_gbps {
        line("CPU % per Gb/s", c, 3);
    }
    if let Some(u) = &r.unmeasurable {
        crate::outln!(
            "          {} of {} runs left out of the CPU figures: {}",
            u.count,
            r.runs,
            u.why
        );
    }
    if let Some(m) = r.confidence_met {
        crate::outln!(
            "          {}",
            if m {
                format!("goal {g} reached")
            } else {
                format!("goal {g} NOT reached within the runs allowed")
            }
        );
    }
}

/// The meter's report of a test: where the host ran and how busy it was, what bound the point,
/// the service demand, each side's parts, softirqs and the meter's own cost.
pub fn cpu(c: &CpuReport) {
    cpu_headline(c);
    let mut line = String::from("  ");
    if let Some(n) = c.normalized_pct_per_gbps {
        line += &format!(
            "{n:.3} % per Gb/s ({:.4} cores per Gb/s); ",
            c.cores_per_gbps.unwrap_or(0.0)
        );
    }
    line += &match &c.bound_by {
        Some(b) => format!("bound by {b}"),
        None => "bound by nothing (below every limit)".into(),
    };
    if let Some(l) = c.leak_pct {
        line += &format!(
            "; leak across the boundary {l:.2} % of host busy{}",
            if l < 2.0 { "" } else { " (OVER 2 %)" }
        );
    }
    crate::outln!("{line}");
    meter_sources(c);
    if let Some(d) = &c.service_demand_us_per_kb {
        crate::outln!(
            "  service demand µs/KB: host {:.3}  send side {:.3}  receive side {:.3}",
            d.host,
            d.send,
            d.recv
        );
    }
    if let Some(d) = &c.service_demand_us_per_tran {
        crate::outln!(
            "  service demand µs/transaction: host {:.2}  initiator {:.2}  server {:.2}",
            d.host,
            d.send,
            d.recv
        );
    }
    for side in [crate::meter::Side::Host, crate::meter::Side::Client] {
        cpu_parts(c, side);
    }
    let net: Vec<String> = ["NET_RX", "NET_TX"]
        .iter()
        .filter_map(|k| c.softirq_per_s.get(*k).map(|v| format!("{k} {v:.0}/s")))
        .collect();
    crate::outln!(
        "  softirqs {}; interrupts {:.0}/s",
        net.join(", "),
        c.interrupts_per_s
    );
    match &c.counters {
        HwCounters::Missing(s) => crate::outln!("  hardware counters: {s}"),
        HwCounters::Read(r) => {
            crate::outln!(
                "  hardware counters: host {} cycles, {} instructions",
                r.host.cycles,
                r.host.instructions
            )
        }
    }
    crate::outln!(
        "  meter: {:.2} % of one core at {} Hz",
        c.meter.own_cpu_pct_of_core,
        c.meter.hz
    );
}

/// Where the host (and the client) ran and how busy each was: the datapath's share, with the
/// meter's bounds where steal left them apart and the steal beside.
fn cpu_headline(c: &CpuReport) {
    let cores = |v: &[usize]| crate::units::CpuList(v.to_vec()).to_string();
    let src = &c.check.host_sources;
    let pm = src.half_width_pct();
    let pm = if pm >= 0.005 {
        format!(" ±{pm:.2}")
    } else {
        String::new()
    };
    let steal = if c.host_steal_pct >= 0.05 {
        format!(", steal {:.1} % beside", c.host_steal_pct)
    } else {
        String::new()
    };
    if c.placed {
        let client = c
            .client_busy_pct
            .map(|p| format!("; client {p:.2} % of core(s) {}", cores(&c.client_cores)))
            .unwrap_or_default();
        crate::outln!(
            "  host CPU {:.2}{pm} % of core(s) {} ({:.3} cores{steal}){client}",
            c.host_busy_pct,
            cores(&c.host_cores),
            c.host_busy_cores
        );
    } else {
        crate::outln!(
            "  host CPU {:.2}{pm} % ({:.3} cores{steal}; machine {:.2} % with the client) — UNPLACED: the client's work may be counted as the host's",
            c.host_busy_pct, c.host_busy_cores, c.machine_busy_pct
        );
    }
    if c.foreign_pct >= 0.05 {
        crate::outln!(
            "  left out: {:.2} % of the host's cores ran tasks that are not the lab's{}",
            c.foreign_pct,
            if c.foreign_pct > crate::report::table::FOREIGN_WARN {
                " (WARNING: another workload shares the host's cores; its cache and wake-ups may still cost the datapath)"
            } else {
                ""
            }
        );
    }
    if let Some(why) = &c.unmeasurable {
        crate::outln!("  UNMEASURABLE: {why}; this test has no cost figure");
    }
}

/// The host's busy share by each source the meter read, and the tolerance they were held to.
fn meter_sources(c: &CpuReport) {
    let s = &c.check.host_sources;
    let sched = s.sched_pct.map_or("-".into(), |v| format!("{v:.2} %"));
    crate::outln!(
        "  sources (host cores): awake {:.2} %, scheduler {sched}, steal {:.2} %, ticks {:.2} %; busy lies in {:.2}–{:.2} % (tolerance {:.1} points)",
        s.awake_pct,
        s.steal_pct,
        s.ticks_pct,
        s.lo_pct,
        s.hi_pct,
        c.check.tolerance_pct
    );
    if c.host_steal_pct > crate::report::table::STEAL_WARN && c.unmeasurable.is_none() {
        crate::outln!(
            "  steal: the hypervisor beneath this machine took {:.1} % of the host's cores; the figure above stays within its bounds",
            c.host_steal_pct
        );
    }
}

/// One side's parts on one line; many guests fold into their sum and the busiest.
fn cpu_parts(c: &CpuReport, side: crate::meter::Side) {
    let mine: Vec<&PartCpu> = c.parts.iter().filter(|p| p.side == side).collect();
    let guests: Vec<&&PartCpu> = mine
        .iter()
        .filter(|p| p.kind == crate::vocab::PartKind::Guest)
        .collect();
    // Many guests fold into one line: their sum, and the busiest.
    let fold = guests.len() > 8;
    let mut parts: Vec<String> = Vec::new();
    if fold {
        let sum: f64 = guests.iter().map(|p| p.busy_pct).sum();
        let top = guests
            .iter()
            .max_by(|a, b| a.busy_pct.total_cmp(&b.busy_pct))
            .unwrap();
        parts.push(format!(
            "{} guests {sum:.2} % (busiest {} {:.2} %)",
            guests.len(),
            top.name,
            top.busy_pct
        ));
    }
    parts.extend(
        mine.iter()
            .filter(|p| {
                !(fold && p.kind == crate::vocab::PartKind::Guest) && p.busy_pct.abs() >= 0.05
            })
            .map(|p| format!("{} {:.2} %", p.name, p.busy_pct)),
    );
    if !parts.is_empty() {
        crate::outln!(
            "  {} parts: {}",
            if side == crate::meter::Side::Host {
                "host"
            } else {
                "client"
            },
            parts.join(", ")
        );
    }
}

/// A stream's rate: the total, each sender's, senders that moved nothing, and the intervals.
fn stream(r: &TestResult) {
    crate::outln!("  throughput {:.3} Gb/s", r.throughput_gbps);
    if r.per_source_gbps.len() > 1 {
        for (src, g) in &r.per_source_gbps {
            crate::outln!("    {src:<8} {g:.3} Gb/s");
        }
    }
    if !r.starved.is_empty() {
        let names: Vec<&str> = r.starved.iter().take(12).map(String::as_str).collect();
        crate::outln!(
            "  WARNING: {} of {} senders moved nothing in the measured window ({}{}): the host could not drive them all; use fewer guests, a longer -l or --rate",
            r.starved.len(),
            r.per_source_gbps.len(),
            names.join(", "),
            if r.starved.len() > names.len() { ", …" } else { "" }
        );
    }
    let iv: Vec<String> = r
        .intervals
        .iter()
        .map(|i| format!("{:.2}", i.gbps))
        .collect();
    if !iv.is_empty() {
        crate::outln!("  per {:.1} s: {}", r.intervals[0].t, iv.join(" "));
    }
}

/// The movie's host CPU in its two phases.
fn movie(p: &MoviePhases) {
    let pct = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.2} %"));
    crate::outln!(
        "  movie (T_buffer {:.0} s, times × {}): host CPU {} while buffering (0–{:.1} s), {} playing only ({:.1}–{:.1} s)",
        p.movie.t_buffer_s,
        p.movie.time_scale,
        pct(p.buffering.host_busy_pct),
        p.buffering.to_s,
        pct(p.play_only.host_busy_pct),
        p.play_only.from_s,
        p.play_only.to_s
    );
}

/// What each interfering load did.
fn loads(loads: &[LoadReport]) {
    for l in loads {
        match l {
            LoadReport::Burner {
                load,
                at,
                target_pct,
                cpu_pct,
            } => crate::outln!("  load {load}: burner in {at} used {cpu_pct:.1} % of a core (asked {target_pct:.0} %)"),
            LoadReport::Download {
                load,
                bytes_asked,
                bytes_arrived,
                achieved_gbps,
                ..
            } => crate::outln!(
                "  load {load}: {:.1} of {:.1} Mbit arrived at {:.1} Mb/s in all",
                *bytes_arrived as f64 * 8.0 / 1e6,
                *bytes_asked as f64 * 8.0 / 1e6,
                achieved_gbps * 1e3
            ),
            LoadReport::Flood {
                load,
                offered_gbps,
                arrived_gbps,
                loss_pct,
                measured_guest_udp_in,
            } => crate::outln!(
                "  load {load}: {:.1} of {:.1} Mb/s arrived{}{}",
                arrived_gbps * 1e3,
                offered_gbps * 1e3,
                loss_pct.map(|l| format!(" ({l:.2} % lost)")).unwrap_or_default(),
                measured_guest_udp_in
                    .map(|n| format!("; the measured guest received {n} UDP datagrams"))
                    .unwrap_or_default()
            ),
        }
    }
}

/// A VDI test: each desktop (at most 16 lines, then the rest folded) and the total.
fn vdi(v: &crate::records::vdi::VdiResult, secs: f64) {
    use crate::records::vdi::Percentiles;
    let ms = |p: &Option<Percentiles>| match p {
        Some(p) => format!(
            "p50 {:.1} p99 {:.1} max {:.1} ms",
            p.p50 / 1e3,
            p.p99 / 1e3,
            p.max / 1e3
        ),
        None => "none".into(),
    };
    let t = &v.total;
    crate::outln!(
        "VDI {} × {} desktop(s), {secs:.1} s measured: {:.1} of {:.1} frames/s delivered, screen {:.3} Gb/s, late frames {} ({:.2} %), skipped {}",
        v.profile, t.desktops, t.fps, t.target_fps, t.screen_gbps, t.late_frames, t.late_pct, t.skipped_frames
    );
    crate::outln!(
        "  frame delay {}; input-to-screen {}",
        ms(&t.frame_delay_us),
        ms(&t.input_latency_us)
    );
    if let Some(c) = &v.clock {
        crate::outln!(
            "  frame delays cross two machines: their clocks were set against each other to within ±{:.3} ms (input-to-screen is timed on the client's clock alone)",
            c.uncertainty_ns as f64 / 1e6
        );
    }
    if t.usb_gbps > 0.0 {
        crate::outln!("  USB {:.3} Gb/s", t.usb_gbps);
    }
    crate::outln!(
        "  engine: its own work {:.2} % of a core ({:.3} % per desktop), the kernel's sends and receives for it {:.2} %",
        t.engine_own_pct,
        t.engine_own_pct / t.desktops.max(1) as f64,
        t.engine_kernel_pct
    );
    for d in v.desktops.iter().take(16) {
        crate::outln!(
            "    {:<10} {:>6.1}/{:<5.1} fps  delay {}  input {}  late {}",
            d.name,
            d.fps,
            d.target_fps,
            ms(&d.frame_delay_us),
            ms(&d.input_latency_us),
            d.late_frames
        );
    }
    if v.desktops.len() > 16 {
        crate::outln!(
            "    … and {} more desktops (see --json)",
            v.desktops.len() - 16
        );
    }
}

pub fn result(r: &TestResult) {
    for m in &r.remote_cpu {
        crate::outln!(
            "  {} (another machine, measured by its serve): {:.1} % of its {} cores busy, busiest core {:.1} %",
            m.agent,
            m.cpu.busy_pct,
            m.cpu.ncpu,
            m.cpu.max_core_pct
        );
    }
    if r.engine == crate::vocab::Engine::Iperf3 {
        crate::outln!("  the bytes were moved by a stock iperf3 (--peer), not vnetlab's engine");
    }
    if let Some(v) = &r.vdi {
        return vdi(v, r.duration_s);
    }
    let cc = r
        .congestion
        .as_ref()
        .map(|c| format!(", TCP {c}"))
        .unwrap_or_default();
    // --bidir: one stream each way, TCP_STREAM named for the first.
    let arrow = if r.bidir { "⇄" } else { "→" };
    let each = if r.bidir { " each way" } else { "" };
    if r.transfer.is_some() && !r.intervals.is_empty() || r.transfer.is_none() {
        crate::outln!(
            "{} {} {arrow} {}: {} B messages, {} stream(s){each}{cc}, {:.1} s measured after a {:.1} s warm-up",
            r.test,
            r.from,
            r.to,
            r.message_bytes,
            r.parallel,
            r.duration_s,
            r.warmup_s
        );
    } else {
        crate::outln!(
            "{} {} {arrow} {}: {} B messages, {} stream(s){each}{cc}, a fixed transfer",
            r.test,
            r.from,
            r.to,
            r.message_bytes,
            r.parallel
        );
    }
    match (&r.transactions_per_s, &r.latency_us) {
        (Some(tps), Some(l)) => {
            crate::outln!("  {:.0} transactions/s   latency µs: p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}", tps, l.p50, l.p90, l.p99, l.p999, l.max);
        }
        (Some(tps), None) => {
            crate::outln!("  {:.0} transactions/s (none completed in the window)", tps)
        }
        _ => stream(r),
    }
    if let Some(x) = r.tcp_retransmits {
        crate::outln!("  TCP retransmissions: {x}");
    }
    if let Some(l) = r.udp_loss_pct {
        crate::outln!("  UDP loss: {l:.2} %");
    }
    if let Some(t) = &r.transfer {
        let verdict = match (t.matches, &t.sent_sha256) {
            (true, Some(_)) => ", SHA-256 matches",
            (true, None) => "",
            (false, _) => ", MISMATCH",
        };
        crate::outln!(
            "  transfer: {} bytes sent, {} received{verdict}",
            t.bytes_sent,
            t.bytes_received
        );
    }
    if let Some(z) = &r.zerocopy {
        crate::outln!(
            "  MSG_ZEROCOPY: {} sends completed, {:.0} % copied by the kernel anyway",
            z.sends_completed,
            z.copied_pct
        );
    }
}
