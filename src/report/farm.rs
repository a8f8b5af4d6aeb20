//! The farm's page (`report --run-id ID --html`): per datapath, the hosts side by side (their
//! host CPU per Gb/s on the VM network with its interval as a whisker, a host that differs from
//! its class marked), the desktops each host takes per datapath, and the tables behind them.

use super::charts::{self, Bar, Mark, PaperChart};
use super::error::Error;
use super::html::esc;
use crate::capacity::farm::{Cell, Farm};

fn interval(v: f64, iv: Option<[f64; 2]>) -> String {
    match iv {
        Some([lo, hi]) => format!("{v:.2} [{lo:.2}–{hi:.2}]"),
        None => format!("{v:.2}"),
    }
}

/// The datapaths in the order the farm's totals list them.
fn datapaths(f: &Farm) -> Vec<String> {
    f.totals.iter().map(|t| t.datapath.clone()).collect()
}

/// One chart per datapath: its cost on every host that measured it.
fn cost_charts(f: &Farm) -> Result<String, Error> {
    let mut h = String::from("<div class=\"figs\">");
    for dp in datapaths(f) {
        let bars: Vec<(String, Mark)> = f
            .hosts
            .iter()
            .filter_map(|host| {
                let c = host.cells.iter().find(|c| c.datapath == dp)?;
                let (v, iv) = (c.cost.vm_net_pct_per_gbps, c.cost.vm_net_interval);
                let [lo, hi] = iv.unwrap_or([v, v]);
                let mark = if c.differs { " *" } else { "" };
                Some((
                    format!("{}{mark}", host.host),
                    Mark {
                        x: 0.0,
                        y: v,
                        low: lo,
                        high: hi,
                        tip: format!(
                            "{} on {}: {} % per Gb/s{}",
                            dp,
                            host.host,
                            interval(v, iv),
                            if c.differs {
                                ", differs from its class"
                            } else {
                                ""
                            }
                        ),
                    },
                ))
            })
            .collect();
        let svg = charts::bars(
            &format!("{dp}: host CPU per Gb/s, host by host"),
            "% of the host per Gb/s (VM network)",
            &bars,
        )?;
        h += &format!("<figure data-chart=\"cost-{}\">{svg}</figure>", esc(&dp));
    }
    Ok(h + "</div>")
}

/// Desktops per server: hosts side by side in each datapath's group.
fn desktop_chart(f: &Farm) -> Result<String, Error> {
    let cats = datapaths(f);
    let ours: Vec<(String, Vec<Option<Bar>>)> = f
        .hosts
        .iter()
        .map(|host| {
            let bars = cats
                .iter()
                .map(|dp| {
                    let c = host.cells.iter().find(|c| &c.datapath == dp)?;
                    let [lo, hi] = c.desktops_range.unwrap_or([c.desktops, c.desktops]);
                    Some(Bar {
                        value: c.desktops as f64,
                        low: lo as f64,
                        high: hi as f64,
                    })
                })
                .collect();
            (host.host.clone(), bars)
        })
        .collect();
    let paper = vec![vec![None; cats.len()]; ours.len()];
    let svg = charts::paper_bars(&PaperChart {
        title: "Desktops per server, hosts side by side",
        x_desc: "datapath",
        y_desc: "desktops",
        y2_desc: None,
        categories: &cats,
        one_per_category: false,
        ours: &ours,
        paper: &paper,
    })?;
    Ok(format!(
        "<div class=\"figs\"><figure data-chart=\"desktops\">{svg}</figure></div>"
    ))
}

fn row(host: &str, class: usize, c: &Cell) -> String {
    let desktops = c.desktops_text();
    format!(
        "<tr><td class=\"l\">{}</td><td>{class}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{desktops}</td><td class=\"l{}\">{}</td></tr>",
        esc(host),
        esc(&c.datapath),
        interval(c.cost.vm_net_pct_per_gbps, c.cost.vm_net_interval),
        interval(c.cost.vdi_net_pct_per_gbps, c.cost.vdi_net_interval),
        if c.differs { " warn" } else { "" },
        if c.differs { "differs from its class" } else { "" }
    )
}

/// The farm's page.
pub fn page(f: &Farm) -> Result<String, Error> {
    let mut h = super::html::head(&format!("vnetlab: farm run {}", f.run));
    h += &format!(
        "<h1>Farm run {}: {} hosts, {} {}</h1><p class=\"muted\">Each host's cost from its own run of this run id: the median host CPU per Gb/s with its confidence interval (whiskers). <b>*</b> marks a host whose interval misses its class's median (hosts alike in CPU model, cores and NIC drivers; a class of three hosts or more). Desktops at paper 1's 2.5 % of the host each, 100 Mb/s of VM network and its screen stream.</p>",
        esc(&f.run),
        f.hosts.len(),
        f.classes.len(),
        if f.classes.len() == 1 { "class" } else { "classes" }
    );
    h += "<h2>Host CPU per Gb/s, per datapath</h2>";
    h += &cost_charts(f)?;
    h += "<h2>Desktops per server</h2>";
    h += &desktop_chart(f)?;
    h += "<h2>The farm</h2><table><tr><th class=\"l\">datapath</th><th>hosts</th><th>desktops</th></tr>";
    for t in &f.totals {
        let range = t
            .desktops_range
            .map(|[a, b]| format!(" ({a}–{b})"))
            .unwrap_or_default();
        h += &format!(
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}{range}</td></tr>",
            esc(&t.datapath),
            t.hosts,
            t.desktops
        );
    }
    h += "</table><h2>Classes</h2><table><tr><th>class</th><th class=\"l\">CPU and NICs</th><th class=\"l\">hosts</th></tr>";
    for (i, c) in f.classes.iter().enumerate() {
        h += &format!(
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            i + 1,
            esc(&c.class),
            esc(&c.hosts.join(", "))
        );
    }
    h += "</table><h2>Hosts</h2><table><tr><th class=\"l\">host</th><th>class</th><th class=\"l\">datapath</th><th>VM net %/Gb/s [CI]</th><th>VDI net %/Gb/s [CI]</th><th>desktops</th><th class=\"l\"></th></tr>";
    for host in &f.hosts {
        let class = f.class_number(host);
        for c in &host.cells {
            h += &row(&host.host, class, c);
        }
    }
    h += "</table>";
    for l in &f.left_out {
        h += &format!("<p class=\"bad\">Left out: {}</p>", esc(l));
    }
    Ok(h + &super::html::tail())
}
