//! Reproducing the four papers: each paper's published numbers and claims as data
//! (`experiments/papers/*.toml`), the suites that run what it ran (quick and full), the claims
//! checked against the stored runs, and one page per paper.

pub mod claims;
pub mod page;

use serde::{Deserialize, Serialize};

use claims::{Checked, Claim, Metric, Selector};

/// Why a paper file could not be used. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Input(String),
}

/// One of the paper's configurations and what stands for it here.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Mapping {
    pub paper: String,
    pub ours: String,
}

/// A number the paper prints, where it prints it, and the point of ours that stands beside it.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Value {
    pub source: String,
    pub series: String,
    pub quantity: String,
    pub value: f64,
    pub unit: String,
    pub metric: Option<Metric>,
    pub ours: Option<Selector>,
}

/// A paper file.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Paper {
    pub paper: String,
    pub title: String,
    pub citation: String,
    #[serde(default)]
    pub mapping: Vec<Mapping>,
    /// What the reproduction leaves out, and why.
    #[serde(default)]
    pub out_of_scope: Vec<String>,
    #[serde(default, rename = "value")]
    pub values: Vec<Value>,
    #[serde(default, rename = "claim")]
    pub claims: Vec<Claim>,
}

/// A built-in paper: its id, its file, and its suites (quick, full) as experiment files; its
/// claims are checked over the points of all of a grid's runs together.
#[derive(Debug)]
pub struct BuiltIn {
    pub id: &'static str,
    pub file: &'static str,
    pub quick: &'static [&'static str],
    pub full: &'static [&'static str],
}

pub const PAPERS: [BuiltIn; 4] = [
    BuiltIn {
        id: "icsnc2013",
        file: include_str!("../../experiments/papers/icsnc2013.toml"),
        quick: &[
            include_str!("../../experiments/papers/icsnc2013-quick.toml"),
            include_str!("../../experiments/papers/icsnc2013-desktops.toml"),
            include_str!("../../experiments/papers/icsnc2013-tableiv.toml"),
        ],
        full: &[
            include_str!("../../experiments/icsnc2013.toml"),
            include_str!("../../experiments/papers/icsnc2013-desktops.toml"),
            include_str!("../../experiments/papers/icsnc2013-tableiv.toml"),
        ],
    },
    BuiltIn {
        id: "xen-lro",
        file: include_str!("../../experiments/papers/xen-lro.toml"),
        quick: &[include_str!("../../experiments/papers/xen-lro-quick.toml")],
        full: &[include_str!("../../experiments/xen-lro.toml")],
    },
    BuiltIn {
        id: "xen-passthrough",
        file: include_str!("../../experiments/papers/xen-passthrough.toml"),
        quick: &[include_str!(
            "../../experiments/papers/xen-passthrough-quick.toml"
        )],
        full: &[include_str!("../../experiments/xen-passthrough.toml")],
    },
    BuiltIn {
        id: "vmware-esx35",
        file: include_str!("../../experiments/papers/vmware-esx35.toml"),
        quick: &[include_str!(
            "../../experiments/papers/vmware-esx35-quick.toml"
        )],
        full: &[include_str!("../../experiments/vmware-esx35.toml")],
    },
];

/// The ids, for errors and help.
pub fn ids() -> String {
    PAPERS.iter().map(|p| p.id).collect::<Vec<_>>().join(", ")
}

/// The built-in papers named (`all` for every one).
pub fn select(name: &str) -> Result<Vec<&'static BuiltIn>, Error> {
    if name == "all" {
        return Ok(PAPERS.iter().collect());
    }
    PAPERS
        .iter()
        .find(|p| p.id == name)
        .map(|p| vec![p])
        .ok_or_else(|| {
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
        for b in &PAPERS {
            let p = parse(b.file, b.id).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(p.paper, b.id);
            assert!(!p.values.is_empty() && !p.claims.is_empty(), "{}", b.id);
            assert!(p.values.iter().all(|v| !v.source.is_empty()));
            // The suites are experiment files that parse.
            for suite in b.quick.iter().chain(b.full) {
                crate::experiment::file::parse(suite, b.id).unwrap_or_else(|e| panic!("{e}"));
            }
        }
        assert!(select("all").unwrap().len() == 4);
        assert!(select("nope").unwrap_err().to_string().contains("xen-lro"));
    }

    #[test]
    fn bad_paper_files_are_refused_with_the_place() {
        let e = parse("paper = \"x\"\ntitle = 1\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.toml:2:"), "{e}");
        let no_source = "paper = \"x\"\ntitle = \"t\"\ncitation = \"c\"\n[[value]]\nsource = \" \"\nseries = \"s\"\nquantity = \"q\"\nvalue = 1.0\nunit = \"u\"\n";
        assert!(parse(no_source, "x.toml")
            .unwrap_err()
            .to_string()
            .contains("needs its source"));
    }

    #[test]
    fn a_page_renders_from_a_run_with_missing_points() {
        let b = &PAPERS[0];
        let p = parse(b.file, b.id).unwrap();
        let checked = check_all(&p, &[]);
        assert!(checked
            .iter()
            .all(|c| c.verdict == claims::Verdict::NotMeasurable));
        let html = page::render(&p, &[], &checked, &[]);
        assert!(html.contains("not measurable") && html.contains(&p.title));
    }
}
