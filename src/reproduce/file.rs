//! A paper file as written (`paper.toml`): the paper's items, what stands here for its
//! configurations, its published values, claims and figures, Table V's plan, its slips and what
//! the reproduction leaves out. Plain data: `parse` checks it, `cite` checks its citations.

use serde::{Deserialize, Serialize};

use super::claims::{Claim, Metric, Selector};
use super::{figures, table_v};

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

/// A figure, table, section or equation the paper's text prints: what `source`s cite.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Item {
    /// How the paper file cites it: "Fig. 4(c)", "Table IV", "Sec. IV-B", "Eq. (5)".
    pub id: String,
    /// Its caption or heading exactly as the text prints it.
    pub printed: String,
    /// The line of the paper's text that prints it.
    pub line: u32,
}

/// Something the paper leaves out of a reproduction, or a reproduction leaves out of the paper.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LeftOut {
    /// What is left out: one of the paper's items (cited) or a part of its setup.
    pub item: String,
    pub why: String,
}

/// A slip of the paper's own that matters to a claim: a figure that contradicts a table, a rate
/// above its own NIC's.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Slip {
    /// Where in the paper (cited).
    pub at: String,
    pub text: String,
}

/// A paper file.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Paper {
    pub paper: String,
    pub title: String,
    /// The paper's full citation: authors, title, venue, year.
    pub citation: String,
    /// Its plain text's file name among the papers' texts, and that text's SHA-256: the items
    /// below are checked against it.
    pub text: String,
    pub text_sha256: String,
    /// One line on the system the paper describes and how it measured.
    pub setup: String,
    #[serde(default, rename = "item")]
    pub items: Vec<Item>,
    #[serde(default)]
    pub mapping: Vec<Mapping>,
    /// What the reproduction leaves out, and why: every figure and table of the paper is
    /// covered by a value, claim or figure, or listed here.
    #[serde(default)]
    pub left_out: Vec<LeftOut>,
    #[serde(default, rename = "slip")]
    pub slips: Vec<Slip>,
    #[serde(default, rename = "value")]
    pub values: Vec<Value>,
    #[serde(default, rename = "claim")]
    pub claims: Vec<Claim>,
    #[serde(default, rename = "figure")]
    pub figures: Vec<figures::Figure>,
    /// Paper 1's Table V, planned with the paper's costs and with ours.
    #[serde(default)]
    pub plan: Option<table_v::PlanTable>,
}
