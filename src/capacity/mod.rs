//! The capacity planner: paper 1's model (Eq. 1–5, Tables IV and V), generalized to any number of
//! datapaths, with per-Gbit costs from a paper preset, the command line, a file, or a stored run.

pub mod farm;
pub mod from_run;
pub mod model;
pub mod preset;

/// Why a capacity plan could not be made. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A scenario, preset or cost is missing or out of range.
    #[error("{0}")]
    Input(String),
    /// A stored run holds no point the plan can use.
    #[error("{0}")]
    NoData(String),
}

/// The screen stream of paper 1's scenario, per desktop: 11.1 Gbit over 253 s.
pub const SCREEN_GBPS: f64 = 11.1 / 253.0;
