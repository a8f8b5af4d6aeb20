//! Reproducing the papers: each paper's published numbers and claims as data (a folder
//! `experiments/papers/NAME/`, see `papers`), the suites that run what it ran (quick and full),
//! the claims checked against the stored runs, and one page per paper.

pub mod cite;
pub mod claims;
pub mod error;
pub mod figures;
pub mod file;
pub mod page;
pub mod papers;
pub mod run;
pub mod table_v;

use serde::Serialize;

use crate::experiment::file::ExperimentFile;
use crate::vocab::{Mode, TestKind};
use claims::{Checked, Selector};
pub use error::Error;
use file::{Paper, Value};
pub use papers::{find, papers, BuiltIn};

/// Which guests a paper's suites run in.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Guests {
    /// Network namespaces with vnetlab's own vNIC models, and why not QEMU.
    Netns { why_not_qemu: String },
    /// QEMU guests for the vNIC datapaths (`vhost`: paravirt is qemu-vhost, else qemu-virtio).
    Qemu { accel: String, vhost: bool },
}

impl Guests {
    /// The QEMU datapath standing for one of ours (native and the kernel bridge stay).
    pub fn mode(&self, m: Mode) -> Mode {
        match (self, m) {
            (Guests::Netns { .. }, m) => m,
            (_, Mode::Emulated) => Mode::QemuE1000,
            (Guests::Qemu { vhost: true, .. }, Mode::Paravirt) => Mode::QemuVhost,
            (_, Mode::Paravirt) => Mode::QemuVirtio,
            (_, Mode::Macvlan) => Mode::QemuMacvtap,
            (_, m) => m,
        }
    }

    /// A suite with its datapaths swapped for QEMU's.
    pub fn suite(&self, mut e: ExperimentFile) -> ExperimentFile {
        e.matrix.modes = e.matrix.modes.iter().map(|&m| self.mode(m)).collect();
        for l in &mut e.matrix.labs {
            l.mode = self.mode(l.mode);
        }
        e
    }

    /// A paper with every selector's datapath swapped as its suites' are.
    pub fn paper(&self, mut p: Paper) -> Paper {
        let swap = |s: &mut Selector| {
            if let Some(m) = s.mode.as_ref().and_then(|m| m.parse::<Mode>().ok()) {
                s.mode = Some(self.mode(m).to_string());
            }
        };
        for c in &mut p.claims {
            swap(&mut c.common);
            c.series.iter_mut().for_each(swap);
        }
        for v in &mut p.values {
            v.ours.as_mut().map(swap);
        }
        for f in &mut p.figures {
            swap(&mut f.common);
            f.series.iter_mut().for_each(|s| swap(&mut s.ours));
        }
        for d in p.plan.iter_mut().flat_map(|t| t.datapaths.iter_mut()) {
            swap(&mut d.vm);
            swap(&mut d.vdi);
        }
        p
    }

    /// What stored runs ran in, read from their points' datapaths (QEMU's vhost-net if any
    /// point used it).
    pub fn of_stored(modes: &[Mode]) -> Guests {
        if !modes.iter().any(|m| m.is_qemu()) {
            return Guests::Netns {
                why_not_qemu: "the stored runs of these suites ran in network namespaces".into(),
            };
        }
        Guests::Qemu {
            accel: "the stored runs' accelerator".into(),
            vhost: modes.contains(&Mode::QemuVhost),
        }
    }

    /// As the page says it.
    pub fn text(&self) -> String {
        match self {
            Guests::Netns { why_not_qemu } => format!(
                "Guests: network namespaces with vnetlab's own vNIC models (emulated, paravirt, macvlan). QEMU guests were not used: {why_not_qemu}."
            ),
            Guests::Qemu { accel, vhost } => format!(
                "Guests: QEMU under {accel}: emulated is qemu-e1000, paravirt is {}, macvlan is qemu-macvtap; native and the kernel bridge are the host's.",
                if *vhost { "qemu-vhost" } else { "qemu-virtio" }
            ),
        }
    }
}

/// Why a suite cannot run in QEMU guests (what it measures is vnetlab's own backend's), if so.
pub fn needs_netns(e: &ExperimentFile) -> Option<&'static str> {
    let settings = e.matrix.settings();
    let swapped = settings
        .iter()
        .any(|s| matches!(s.mode, Mode::Emulated | Mode::Paravirt | Mode::Macvlan));
    if !swapped {
        return None;
    }
    if settings.iter().any(|s| s.lro) {
        return Some("its software LRO lives in vnetlab's paravirt backend, which QEMU's virtio-net does not have");
    }
    if e.matrix.tests.contains(&TestKind::Vdi) {
        return Some("its desktops' sessions and loads run in netns guests");
    }
    None
}

/// The ids, for errors and help.
pub fn ids() -> String {
    papers().iter().map(|p| p.id).collect::<Vec<_>>().join(", ")
}

/// The built-in papers named (`all` for every one).
pub fn select(name: &str) -> Result<Vec<&'static BuiltIn>, Error> {
    if name == "all" {
        return Ok(papers().iter().collect());
    }
    find(name).map(|p| vec![p]).ok_or_else(|| {
        Error::Input(format!(
            "no paper '{}': use one of {}, or all",
            crate::text::clip(name),
            ids()
        ))
    })
}

/// Parses and checks a paper file: every value names its source, every claim its points.
pub fn parse(text: &str, file: &str) -> Result<Paper, Error> {
    let p: Paper =
        toml::from_str(text).map_err(|e| Error::Input(crate::text::toml_error(&e, text, file)))?;
    for v in &p.values {
        if v.source.trim().is_empty() || !v.value.is_finite() {
            return Err(Error::Input(format!(
                "{file}: value '{}' of {} needs its source and a number",
                v.quantity, v.series
            )));
        }
        if let Some(s) = &v.ours {
            s.check()
                .map_err(|e| Error::Input(format!("{file}: value from {}: {e}", v.source)))?;
        }
        if v.ours.is_some() != v.metric.is_some() {
            return Err(Error::Input(format!(
                "{file}: value from {}: give both ours and metric, or neither",
                v.source
            )));
        }
    }
    for c in &p.claims {
        if c.source.trim().is_empty() {
            return Err(Error::Input(format!(
                "{file}: claim '{}' needs its source",
                c.text
            )));
        }
        c.check()
            .map_err(|e| Error::Input(format!("{file}: {e}")))?;
    }
    for f in &p.figures {
        f.check()
            .map_err(|e| Error::Input(format!("{file}: {e}")))?;
    }
    if let Some(t) = &p.plan {
        t.check()
            .map_err(|e| Error::Input(format!("{file}: {e}")))?;
    }
    cite::check(&p).map_err(|e| Error::Input(format!("{file}: {e}")))?;
    Ok(p)
}

/// Our figure for a paper value, from the run's points, if the value names one.
pub fn ours(v: &Value, points: &[crate::records::PointRecord]) -> Option<f64> {
    let (sel, metric) = (v.ours.as_ref()?, v.metric?);
    let found: Vec<_> = points
        .iter()
        .filter(|p| p.error.is_none() && sel.matches(p))
        .collect();
    match found.as_slice() {
        [p] => metric.of(p),
        _ => None,
    }
}

/// Every claim of `paper` checked against `points`.
pub fn check_all(paper: &Paper, points: &[crate::records::PointRecord]) -> Vec<Checked> {
    paper.claims.iter().map(|c| c.evaluate(points)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paper_files_parse_and_every_value_and_claim_names_its_source() {
        for b in papers() {
            let p = parse(b.file, b.id).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(p.paper, b.id);
            assert!(!p.values.is_empty() && !p.claims.is_empty(), "{}", b.id);
            assert!(p.values.iter().all(|v| !v.source.is_empty()));
            // The suites are experiment files that parse.
            for suite in b.quick.iter().chain(&b.full) {
                crate::experiment::file::parse(suite, b.id).unwrap_or_else(|e| panic!("{e}"));
            }
        }
        assert!(select("all").unwrap().len() == 4);
        assert!(select("nope").unwrap_err().to_string().contains("xen-lro"));
    }

    #[test]
    fn qemu_guests_swap_the_vnic_datapaths_in_suites_and_checks_alike() {
        let g = Guests::Qemu {
            accel: "KVM".into(),
            vhost: false,
        };
        let b = find("vmware-esx35").unwrap();
        let suite = crate::experiment::file::parse(b.quick[0], b.id).unwrap();
        assert_eq!(needs_netns(&suite), None);
        let modes = g.suite(suite).matrix.modes();
        assert_eq!(modes, [Mode::Native, Mode::QemuVirtio]);
        let p = g.paper(parse(b.file, b.id).unwrap());
        assert!(p
            .claims
            .iter()
            .any(|c| c.common.mode.as_deref() == Some("qemu-virtio")));
        assert!(p.claims.iter().all(|c| c
            .series
            .iter()
            .all(|s| s.mode.as_deref() != Some("paravirt"))));
        assert_eq!(
            Guests::Qemu {
                accel: "KVM".into(),
                vhost: true
            }
            .mode(Mode::Paravirt),
            Mode::QemuVhost
        );
        assert_eq!(g.mode(Mode::Bridge), Mode::Bridge);
        let n = Guests::Netns {
            why_not_qemu: "no KVM".into(),
        };
        assert_eq!(n.mode(Mode::Paravirt), Mode::Paravirt);
        // Backend LRO is vnetlab's own: paper 2 stays in netns guests.
        let lro = crate::experiment::file::parse(find("xen-lro").unwrap().quick[0], "x").unwrap();
        assert!(needs_netns(&lro).unwrap().contains("LRO"));
    }

    #[test]
    fn stored_runs_say_what_they_ran_in_by_their_datapaths() {
        let netns = Guests::of_stored(&[Mode::Native, Mode::Paravirt]);
        assert!(matches!(netns, Guests::Netns { .. }));
        let virtio = Guests::of_stored(&[Mode::Native, Mode::QemuVirtio, Mode::QemuE1000]);
        assert!(matches!(virtio, Guests::Qemu { vhost: false, .. }));
        let vhost = Guests::of_stored(&[Mode::QemuE1000, Mode::QemuVhost]);
        assert!(matches!(vhost, Guests::Qemu { vhost: true, .. }));
        assert!(matches!(Guests::of_stored(&[]), Guests::Netns { .. }));
    }

    #[test]
    fn bad_paper_files_are_refused_with_the_place() {
        let e = parse("paper = \"x\"\ntitle = 1\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.toml:2:"), "{e}");
        let no_source = "paper = \"x\"\ntitle = \"t\"\ncitation = \"c\"\ntext = \"x.txt\"\ntext_sha256 = \"0\"\nsetup = \"s\"\n[[value]]\nsource = \" \"\nseries = \"s\"\nquantity = \"q\"\nvalue = 1.0\nunit = \"u\"\n";
        assert!(parse(no_source, "x.toml")
            .unwrap_err()
            .to_string()
            .contains("needs its source"));
    }

    #[test]
    fn a_page_renders_from_a_run_with_missing_points() {
        let b = find("icsnc2013").unwrap();
        let p = parse(b.file, b.id).unwrap();
        let checked = check_all(&p, &[]);
        assert!(checked
            .iter()
            .all(|c| c.verdict == claims::Verdict::NotMeasurable));
        let g = Guests::Netns {
            why_not_qemu: "a test".into(),
        };
        let html = page::render(&p, &[], &checked, &[], &g);
        assert!(html.contains("not measurable") && html.contains(&p.title));
        assert!(html.contains("QEMU guests were not used: a test"));
    }
}
