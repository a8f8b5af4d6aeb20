//! The report's capacity section: the planner's density for this run's per-Gbit costs, drawn.
//! The report reads the plan's data; the planner knows nothing of HTML.

use super::html::Section;
use crate::records::{PointRecord, RunRow};

/// The report's capacity section: desktops per server per datapath with this run's costs and
/// paper 1's per-desktop load (2.5 % of the host each, 100 Mb/s VM network plus the screen stream).
pub fn sections(run: &RunRow, points: &[PointRecord]) -> Vec<Section> {
    let title = "Capacity: desktops per server".to_string();
    let c = match crate::capacity::from_run::costs(
        run,
        points,
        // The report plans as `plan --from-run` does: a cost whose interval is wider than its
        // run asked is refused, and the section says so.
        crate::capacity::from_run::Pick::default(),
        true,
        false,
    ) {
        Ok(c) => c,
        // A run with VM network points but none to take costs from says why, rather than nothing.
        Err(e)
            if points
                .iter()
                .any(|p| p.key.direction == crate::vocab::Direction::GuestToClient) =>
        {
            return vec![(
                title,
                format!(
                    "<p class=\"muted\">No plan from this run: {}</p>",
                    e.to_string().replace('<', "&lt;")
                ),
            )];
        }
        Err(_) => return Vec::new(),
    };
    let Ok(d) =
        crate::capacity::model::density(&c.datapaths, 2.5, 0.1, crate::capacity::SCREEN_GBPS)
    else {
        return Vec::new();
    };
    let cats: Vec<String> = d.datapaths.iter().map(|r| r.name.clone()).collect();
    let vals: Vec<f64> = d.datapaths.iter().map(|r| r.max_desktops as f64).collect();
    let chart = super::charts::stacked_bars(
        "Desktops per server",
        "desktops",
        &cats,
        &[("max desktops".into(), vals)],
    )
    .unwrap_or_default();
    let mut h = String::from("<div class=\"figs\"><figure data-chart=\"Desktops per server\">");
    h += &chart;
    h += "</figure></div><p class=\"muted\">Paper 1's per-desktop load: 2.5 % of the host for the desktop itself, 100 Mb/s through \
          its VM network and an 11.1 Gbit screen stream over 253 s through the VDI network, at this run's per-Gbit costs. \
          A desktop costs its share and its own network CPU, so \"more than the dearest\" can be fewer than the paper's \
          reckoning (Sec. IV-E: the saving over the 2.5 % share alone, 15.36 % → 6 desktops) that <code>plan</code> prints too. \
          Run <code>vnetlab plan --from-run</code> for Table V with them.</p><table><tr><th class=\"l\">datapath</th>\
          <th>VM network % per Gb/s</th><th>VDI network % per Gb/s</th><th>network % per desktop</th><th>max desktops</th><th>more than the dearest</th></tr>";
    let cost = |v: f64, i: Option<[f64; 2]>| match i {
        Some([lo, hi]) => format!("{v:.3} [{lo:.3}–{hi:.3}]"),
        None => format!("{v:.3}"),
    };
    for (r, dp) in d.datapaths.iter().zip(&c.datapaths) {
        h += &format!(
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{}</td><td>{}</td></tr>",
            r.name,
            cost(dp.vm_net_pct_per_gbps, dp.vm_net_interval),
            cost(dp.vdi_net_pct_per_gbps, dp.vdi_net_interval),
            r.network_pct_per_desktop,
            crate::capacity::model::desktops_text(r),
            r.more_than_last
        );
    }
    h += "</table>";
    for n in c.notes.iter().chain(c.used.iter()) {
        h += &format!("<p class=\"muted\">{n}</p>");
    }
    vec![(title, h)]
}
