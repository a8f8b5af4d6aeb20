//! The planner's answer as text: Table V per buffering time and desktops per datapath.

use crate::capacity::model;

/// A table cell of host CPU %: over 100 % is not a share of this host, so it says so.
fn cell(v: f64, w: usize) -> String {
    if v > 100.0 {
        format!("{:>w$}", "no fit")
    } else {
        format!("{v:>w$.2}")
    }
}

/// Table V: per buffering time, each datapath's share of the host on both networks.
pub fn rows(s: &model::Scenario, rows: &[model::Row], host_cores: Option<usize>) {
    let names: Vec<&str> = s.datapaths.iter().map(|d| d.name.as_str()).collect();
    let w = names.iter().map(|n| n.len()).max().unwrap_or(6).max(7);
    let mut head = format!("{:>8} |", "T_buffer");
    for _network in ["VM network", "VDI network"] {
        for n in &names {
            head += &format!(" {n:>w$}");
        }
        head += &format!(" {:>7} |", "diff");
    }
    head += "  saving";
    let span = (w + 1) * names.len() + 7;
    crate::outln!(
        "{:>8} | {:^span$} | {:^span$} |",
        "",
        "VM network (%)",
        "VDI network (%)"
    );
    crate::outln!("{head}");
    for r in rows {
        crate::outln!("{}", row_line(r, &names, w));
    }
    if names.len() == 2 {
        crate::outln!("(differences as the paper prints them: between the rounded cells; --json has the exact values)");
    }
    // Percentages over 100 are not shares of this host: say how much host it would take.
    for n in &names {
        let worst = rows.iter().find_map(|r| {
            let c = &r.datapaths[*n];
            (!c.fits).then_some((r.t_buffer_s, c.vm_net_pct + c.vdi_net_pct))
        });
        if let Some((t, total)) = worst {
            crate::outln!(
                "{n} at T_buffer {t} s: {} (network CPU {:.0} % of the host)",
                model::does_not_fit(total, host_cores),
                total
            );
        }
    }
}

/// One row of Table V; with two datapaths, rounded as the paper prints it.
fn row_line(r: &model::Row, names: &[&str], w: usize) -> String {
    let mut line = format!("{:>8} |", r.t_buffer_s);
    if names.len() == 2 {
        // As the paper prints it: cells rounded, differences of the rounded cells.
        let p = model::paper_rounding(r, names[0], names[1]);
        let (a, b, c, d) = (cell(p[0], w), cell(p[1], w), cell(p[3], w), cell(p[4], w));
        line += &format!(
            " {a} {b} {:>7.2} | {c} {d} {:>7.2} | {:>7.2}",
            p[2], p[5], p[6]
        );
        return line;
    }
    for n in names {
        line += &format!(" {}", cell(r.datapaths[*n].vm_net_pct, w));
    }
    line += &format!(" {:>7.2} |", r.vm_net_diff_pct);
    for n in names {
        line += &format!(" {}", cell(r.datapaths[*n].vdi_net_pct, w));
    }
    line += &format!(" {:>7.2} |", r.vdi_net_diff_pct);
    line + &format!(" {:>7.2}", r.saving_pct)
}

/// How many desktops fit per datapath, and what the first row's saving buys.
pub fn density(
    s: &model::Scenario,
    density: &model::Density,
    first: &model::Row,
    bought: Option<u32>,
    share: f64,
) {
    let w = s
        .datapaths
        .iter()
        .map(|d| d.name.len())
        .max()
        .unwrap_or(6)
        .max(7);
    let last = &s.datapaths[s.datapaths.len() - 1].name;
    for d in &density.datapaths {
        let more = if d.more_than_last > 0 {
            format!(", {} more than {last}", d.more_than_last)
        } else {
            String::new()
        };
        crate::outln!(
            "  {:<w$} {:>5} desktops ({:.3} % network CPU each){more}",
            d.name,
            model::desktops_text(d),
            d.network_pct_per_desktop
        );
    }
    let t = first.t_buffer_s;
    match bought {
        Some(n) => {
            crate::outln!(
                "  the saving at T_buffer {t} s ({:.2} %) buys {n} more desktops at {share} % each",
                first.saving_pct
            );
            crate::outln!("  (the saving over a desktop's own share, as the paper's Sec. IV-E reckons Table IV's 15.36 %; the \"more than {last}\" above also charges each desktop its own network CPU on its datapath, so the two may differ by a desktop or more)");
        }
        None => crate::outln!("  the saving at T_buffer {t} s cannot be spent as desktops here: {last} does not fit on this host at these costs"),
    }
}

/// A cost with its interval, as the farm's table shows it.
fn with_interval(v: f64, iv: Option<[f64; 2]>) -> String {
    match iv {
        Some([lo, hi]) => format!("{v:.2} [{lo:.2}, {hi:.2}]"),
        None => format!("{v:.2}"),
    }
}

/// The farm's plan: its classes, each host's cost and desktops per datapath (a `*` where the
/// host differs from its class), and the farm's desktops per datapath.
pub fn farm(f: &crate::capacity::farm::Farm) {
    let n = |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
    crate::outln!(
        "farm run {}: {} in {}",
        f.run,
        n(f.hosts.len(), "host", "hosts"),
        n(f.classes.len(), "class", "classes")
    );
    for (i, c) in f.classes.iter().enumerate() {
        crate::outln!("  class {}: {} — {}", i + 1, c.class, c.hosts.join(", "));
    }
    crate::outln!(
        "\n{:<16} {:>5}  {:<12} {:>28} {:>24} {:>9}",
        "host",
        "class",
        "datapath",
        "VM net %/Gb/s [95% CI]",
        "VDI net %/Gb/s [95% CI]",
        "desktops"
    );
    for h in &f.hosts {
        let class = f.class_number(h);
        for c in &h.cells {
            let desktops = c.desktops_text();
            crate::outln!(
                "{:<16} {:>5}  {:<12} {:>28} {:>24} {:>9}{}",
                h.host,
                class,
                c.datapath,
                with_interval(c.cost.vm_net_pct_per_gbps, c.cost.vm_net_interval),
                with_interval(c.cost.vdi_net_pct_per_gbps, c.cost.vdi_net_interval),
                desktops,
                if c.differs {
                    "  * differs from its class"
                } else {
                    ""
                }
            );
        }
    }
    crate::outln!("\nthe farm's desktops per datapath:");
    for t in &f.totals {
        let range = t
            .desktops_range
            .map(|[a, b]| format!(" ({a}–{b} within the intervals)"))
            .unwrap_or_default();
        crate::outln!(
            "  {:<12} {} desktops on {}{range}",
            t.datapath,
            t.desktops,
            n(t.hosts, "host", "hosts")
        );
    }
    for l in &f.left_out {
        crate::outln!("left out: {l}");
    }
    for h in f.hosts.iter().filter(|h| !h.notes.is_empty()) {
        for n in &h.notes {
            crate::outln!("note, {}: {n}", h.host);
        }
    }
}
