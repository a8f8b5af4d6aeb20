//! A point's repeats: each repeat's headline figures (`Repeat`), their spread over the repeats
//! with what was asked of it (`Repeats`), the repeats the meter could not read, and the rounds of
//! fresh labs they ran in. Both the point's record and the measured document carry them.

use serde::{Deserialize, Serialize};

use crate::stats::Spread;
use crate::vocab::Bound;

/// One repeat's headline figures.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Repeat {
    pub throughput_gbps: f64,
    pub transactions_per_s: Option<f64>,
    pub host_busy_pct: Option<f64>,
    pub normalized_pct_per_gbps: Option<f64>,
    pub bound_by: Option<Bound>,
    pub leak_pct: Option<f64>,
    #[serde(default)]
    pub host_steal_pct: Option<f64>,
    /// Work of tasks that are not the lab's on the host's cores, % (taken out of the figures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_foreign_pct: Option<f64>,
    /// The meter's own uncertainty of this repeat's host CPU, ± points (what steal left open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_meter_pm: Option<f64>,
    /// Why this repeat's host CPU could not be told (it then has no cost and is left out of the
    /// point's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmeasurable: Option<String>,
    /// Request/response tests: this repeat's latency tail, µs.
    #[serde(default)]
    pub latency_p99_us: Option<f64>,
    #[serde(default)]
    pub latency_p999_us: Option<f64>,
    #[serde(default)]
    pub latency_max_us: Option<f64>,
    /// Paper 1's movie: this repeat's host CPU while the desktops buffer, and once they only play.
    #[serde(default)]
    pub movie_buffering_pct: Option<f64>,
    #[serde(default)]
    pub movie_playing_pct: Option<f64>,
}

/// The spread of a point's figures over its repeats: each figure the median of its units with
/// the median's confidence interval (`stats`), and what was asked of it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Repeats {
    pub runs: usize,
    pub confidence_level: u32,
    /// Whether every headline figure reached the goal (None: nothing was asked).
    pub confidence_met: Option<bool>,
    /// What was asked: the interval's level and half-width (None: a fixed number of units, held
    /// to the default ±5 % at 95 % when read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<crate::stats::Goal>,
    /// Throughput, or transactions/s for request/response tests.
    pub throughput_gbps: Spread,
    pub transactions_per_s: Option<Spread>,
    pub host_busy_pct: Option<Spread>,
    pub normalized_pct_per_gbps: Option<Spread>,
    /// Throughput (or transactions/s) or CPU per Gb/s has an interval wider than the goal (or
    /// short of its level). Stored runs before intervals: varied by more than 10 %.
    #[serde(default, alias = "unstable")]
    pub wide: bool,
    /// Units something bound (a paced load not carried in full, a saturated core), left out of
    /// the CPU figures because at least three and more than half were bound by nothing.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bound_left_out: usize,
    /// Repeats whose host CPU could not be told, left out of the CPU figures (with one reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmeasurable: Option<Unmeasured>,
    /// Which repeat the point's details (its CPU parts, series, latency) come from: the one whose
    /// cost is the median (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown: Option<usize>,
    /// Every repeat's figures, in the order they ran (the store keeps them in their own table).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub each: Vec<Repeat>,
    /// Where the repeats came from fresh labs taken in turn (`rounds`): how many, and in which run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<Rounds>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How many of a point's repeats the meter could not read, and why (the first reason).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Unmeasured {
    pub count: usize,
    pub why: String,
}

impl Repeats {
    /// The goal its intervals are held to (the default where none was asked).
    pub fn goal(&self) -> crate::stats::Goal {
        self.goal.unwrap_or_default()
    }

    /// The headline cost's spread: CPU per Gb/s, else host CPU (request/response).
    pub fn cost(&self) -> Option<&Spread> {
        self.normalized_pct_per_gbps
            .as_ref()
            .or(self.host_busy_pct.as_ref())
    }

    /// "±3.1 % at 96.9 %" for the cost, or why it falls short of the goal.
    pub fn cost_interval_text(&self) -> Option<String> {
        self.cost().map(|s| s.against(&self.goal()))
    }
}

/// The rounds of a point's repeats: `count` labs, built in turn with the other labs of run `run`,
/// the repeats split evenly among them in the order they ran. Points of one run with the same
/// count ran each round minutes apart, so they compare round by round.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rounds {
    pub count: u32,
    pub run: i64,
}
