//! Benchmark tables for a terminal: each row vnetlab's figure beside its named peer's, as a ratio.
//! They live with the benches, not in report/: `bench store` times report/'s page, so report/
//! cannot look back at the benches' rows.

use super::engine::{self, Row};
use super::paced::{PacedRow, TARGET_RATIO};
use super::vnic::{self, VnicRow};

/// `bench vnic` / `bench qemu`: each datapath's rate, host CPU per Gb/s and parts, then the
/// ratios (`hop`: the host's price of one more hop, added per wake-up at paced loads).
pub fn vnic_table(rows: &[VnicRow], qemu: bool, hop: Option<&super::hop::HopCost>) {
    crate::outln!(
        "{:<34} {:<8} {:<12} {:>7} {:>11} {:>12} {:>9} {:>7} {:>7} {:>7} {:>6} {:>6} {:>6}  bound by",
        "datapath",
        "load",
        "direction",
        "Gb/s",
        "host %/Gb/s",
        "guest %/Gb/s",
        "backend %",
        "LRO",
        "vCPU %",
        "emul. %",
        "KB/fr",
        "wake/fr",
        "sys/fr"
    );
    for r in rows {
        let o = |v: Option<f64>, p: usize| v.map(|x| format!("{x:.p$}")).unwrap_or("-".into());
        crate::outln!(
            "{:<34} {:<8} {:<12} {:>7.2} {:>11.3} {:>12} {:>9} {:>7} {:>7} {:>7} {:>6} {:>6} {:>6}  {}",
            r.lab,
            r.test,
            r.direction,
            r.gbps,
            r.host_pct_per_gbps,
            o(r.guest_pct_per_gbps, 3),
            o(r.backend_pct, 1),
            o(r.lro_ratio, 1),
            o(r.vcpu_pct, 1),
            o(r.emulation_pct, 1),
            o(r.bytes_per_frame.map(|b| b / 1024.0), 1),
            o(r.wakeups_per_frame, 2),
            o(r.syscalls_per_frame, 2),
            r.bound
                .as_ref()
                .map(|b| b.to_string())
                .unwrap_or("nothing".into())
        );
    }
    if let Some(io) = rows.iter().find(|r| r.lab == "paravirt").and_then(|r| r.io) {
        crate::outln!("(the paravirt backend moved frames with {io})");
    }
    crate::outln!();
    let lines = if qemu {
        vnic::qemu_ratios(rows)
    } else {
        vnic::ratios(rows, hop)
    };
    for line in lines {
        crate::outln!("{line}");
    }
    if let Some(h) = hop {
        let s = &h.setup;
        crate::outln!(
            "one more hop on this host: {} µs of host core {} per event (an event from core {} answered on core {} directly: {} µs; through one more task there: {} µs; {} rounds of {} events {} µs apart)",
            h.hop_us.text(1),
            s.host_cpu,
            s.client_cpu,
            s.host_cpu,
            h.direct_us.text(1),
            h.relayed_us.text(1),
            s.rounds,
            s.pings,
            s.gap_us
        );
    }
    if qemu {
        crate::outln!("QEMU guests run under the acceleration `vnetlab status` names; under TCG the guest's CPU is emulated, so QEMU rows bound by the host core are bound by emulation (device and host-side costs are still real)");
    }
}

/// `bench engine`: vnetlab beside iperf3 and sockperf on each path.
pub fn engine_table(rows: &[Row]) {
    crate::outln!(
        "{:<9} {:<16} {:<12} {:>14} {:>14} {:>9} {:>12}",
        "path",
        "test",
        "peer",
        "vnetlab",
        "peer",
        "ratio",
        "CPU/unit ×"
    );
    for r in rows {
        let fmt = |m: &engine::Measure| match m.tps {
            Some(t) => format!("{:.0} tps", t),
            None => format!("{:.2} Gb/s", m.gbps),
        };
        crate::outln!(
            "{:<9} {:<16} {:<12} {:>14} {:>14} {:>8.2}× {:>11.2}×{}",
            r.path,
            r.test,
            r.peer,
            fmt(&r.vnetlab),
            fmt(&r.peer_result),
            r.throughput_ratio,
            r.cpu_per_unit_ratio,
            r.p50_ratio
                .map(|x| format!("   p50 latency {x:.2}×"))
                .unwrap_or_default()
        );
    }
    crate::outln!("ratio = vnetlab ÷ peer (throughput or transactions/s); CPU/unit = host cores per Gb/s (per 100k tps for RR), vnetlab ÷ peer");
}

/// `bench engine --paced`: host CPU per Gb/s of both tools at the same rate.
pub fn paced_table(rows: &[PacedRow], repeat: u32) {
    use crate::stats::Spread;
    let s = |x: &Spread, p: usize| format!("{:.p$} ({:.p$}–{:.p$})", x.median, x.min, x.max);
    crate::outln!(
        "{:<8} {:>4} {:>8} {:<7} {:>22} {:>22} {:>7}  {:>16}  {:>17}  {:>15}",
        "path",
        "msg",
        "rate",
        "pacing",
        "vnetlab %/Gb/s",
        "iperf3 %/Gb/s",
        "ratio",
        "NAPI % ours/iperf3",
        "sender % ours/iperf3",
        "Gb/s ours/iperf3"
    );
    for r in rows {
        crate::outln!(
            "{:<8} {:>4} {:>8} {:<7} {:>22} {:>22} {:>6.2}×{}  {:>7.1} / {:<7.1}  {:>8.1} / {:<7.1}  {:>6.3} / {:<6.3}{}",
            r.path,
            r.message,
            crate::units::Rate(r.rate_bps).to_string(),
            r.pacing.name(),
            s(&r.vnetlab.pct_per_gbps, 1),
            s(&r.iperf3.pct_per_gbps, 1),
            r.ratio,
            if r.within_target { " " } else { "!" },
            r.vnetlab.napi_pct.median,
            r.iperf3.napi_pct.median,
            r.vnetlab.sender_pct.median,
            r.iperf3.sender_pct.median,
            r.vnetlab.gbps.median,
            r.iperf3.gbps.median,
            match (r.vnetlab.at_rate, r.iperf3.at_rate) {
                (true, true) => "",
                (false, _) => "  vnetlab short of the rate",
                (_, false) => "  iperf3 short of the rate",
            }
        );
    }
    let ok = rows.iter().filter(|r| r.within_target).count();
    crate::outln!(
        "host CPU per Gb/s (median of {repeat}, min–max): ratio = vnetlab ÷ iperf3, target ≤ {:.2}× at the same delivered rate: {ok} of {} rows within (! marks the others)",
        TARGET_RATIO,
        rows.len()
    );
    crate::outln!("both tools: sender in g1's cgroup on the host's cores, receiver in the client's; NAPI = the host end of the wire (the client's ACKs arriving); sender = g1's cgroup (the sending process and its system calls)");
}
